"""A pipeline's outputs stay its own when the project is copied or moved as a whole.

A project folder (the pipeline file, its catalog, data and ``save.output_dir``) copied
(``cp -r``) or moved (``mv``) to another disk runs again from there: the run resumes from its
own checkpoint and replaces its own outputs.  What a run never takes as its own, moved or
not: (a) a model the user saved by hand into the output folder, (b) the outputs of a pipeline
with another name, (c) outputs of a pipeline of the same name copied into the output folder
of another project.  Outputs that record no pipeline (an ooc_kernels version that recorded
none) are taken as the pipeline's own only when the user asks for it by name
(``--adopt-outputs``, ``adopt_outputs=True``).
"""

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from sklearn.metrics import accuracy_score

import ooc_kernels as ok
from ooc_kernels.cli import main
from ooc_kernels.exceptions import ForeignPathError, ModelPathError
from ooc_kernels.pipeline import run_pipeline
from test_attacks_pipeline_outputs import _digest, _pipeline, _users_model

_OUTPUTS = ["checkpoint.zarr", "metrics.json", "model.zarr", "predictions.zarr"]
_ID_FILE = ".ooc_kernels_output_folder.json"


def _run(path, **kwargs):
    return run_pipeline(path, scheduler="sync", progress=False, **kwargs)


def _test_set(project: Path):
    """The test set of the project's catalog as NumPy (an independent reference)."""
    ds = ok.open_dataset(project / "cat.yaml", "nb_test")
    return np.asarray(ds["X"]), np.asarray(ds["y"])


def _project(tmp_path, name="tiny", **fit) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    _pipeline(project, name=name, **fit)
    return project


def _check_own_run(project: Path, first: dict, again: dict, name="tiny"):
    """``again``, the run in ``project`` after it was copied or moved, replaced its own
    outputs there: the fit resumed to the model of ``first`` (the same predictions), and
    the test accuracy is what scikit-learn computes for that model on the test set."""
    out = project / "out"
    assert sorted(os.listdir(out)) == sorted([_ID_FILE, *_OUTPUTS])
    folder_id = json.loads((out / _ID_FILE).read_text())["id"]
    X, y = _test_set(project)
    model = ok.load(out / "model.zarr")
    assert again["test_accuracy"] == first["test_accuracy"]
    assert again["test_accuracy"] == pytest.approx(accuracy_score(y, model.predict(X)))
    assert again["outputs"]["model"] == str(out / "model.zarr")
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["test_accuracy"] == again["test_accuracy"]
    assert metrics["ooc_kernels_owner"] == {"pipeline": name, "output_folder": folder_id}
    for store in ("checkpoint.zarr", "model.zarr", "predictions.zarr"):
        attrs = json.loads((out / store / "zarr.json").read_text())["attributes"]
        assert attrs["ooc_kernels_owner"] == metrics["ooc_kernels_owner"], store
    return model


def test_a_copied_project_resumes_and_replaces_its_own_outputs(tmp_path, resumed_at):
    project = _project(tmp_path)
    first = _run(project / "tiny.yaml")
    before = ok.load(project / "out" / "model.zarr")
    copy = tmp_path / "scratch" / "project"
    shutil.copytree(project, copy, symlinks=True)
    assert resumed_at == []
    again = _run(copy / "tiny.yaml")
    assert resumed_at == [(2, 0)]       # from the copied checkpoint, at the end of the fit
    model = _check_own_run(copy, first, again)
    X, _ = _test_set(copy)
    np.testing.assert_array_equal(model.predict(X), before.predict(X))
    # the original still runs in place, and the copy again
    assert _run(project / "tiny.yaml")["test_accuracy"] == first["test_accuracy"]
    assert _run(copy / "tiny.yaml")["test_accuracy"] == first["test_accuracy"]


def test_a_moved_project_resumes_and_replaces_its_own_outputs(tmp_path, resumed_at):
    project = _project(tmp_path)
    first = _run(project / "tiny.yaml")
    X, _ = _test_set(project)
    expected = ok.load(project / "out" / "model.zarr").predict(X)
    moved = tmp_path / "scratch" / "moved"
    moved.parent.mkdir()
    shutil.move(project, moved)
    assert not project.exists()
    again = _run(moved / "tiny.yaml")
    assert resumed_at == [(2, 0)]
    model = _check_own_run(moved, first, again)
    np.testing.assert_array_equal(model.predict(X), expected)


def test_a_moved_project_refuses_a_model_saved_by_hand(tmp_path):
    """(a): a model the user saved into the moved project's output folder is refused."""
    project = _project(tmp_path)
    _run(project / "tiny.yaml")
    moved = tmp_path / "moved"
    shutil.move(project, moved)
    mine = moved / "out" / "model.zarr"
    shutil.rmtree(mine)
    _users_model(mine)
    before = _digest(moved / "out")
    with pytest.raises(ModelPathError, match="no record of a pipeline") as info:
        _run(moved / "tiny.yaml")
    assert f"refusing to replace {str(mine)!r}" in str(info.value)
    assert _digest(moved / "out") == before


def test_a_moved_project_refuses_another_pipelines_outputs(tmp_path):
    """(b): a pipeline of another name with the same output folder, after the move."""
    project = _project(tmp_path, name="one")
    _run(project / "one.yaml")
    moved = tmp_path / "moved"
    shutil.move(project, moved)
    before = _digest(moved / "out")
    with pytest.raises(ForeignPathError, match="by the pipeline 'one'"):
        _run(_pipeline(moved, name="two"))
    assert _digest(moved / "out") == before


@pytest.mark.parametrize("ran", [False, True])
@pytest.mark.parametrize("name", _OUTPUTS)
def test_outputs_copied_into_another_project_of_the_same_name_are_refused(tmp_path, name,
                                                                          ran):
    """(c): project B has a pipeline of the same name and layout as project A; an output of
    A copied into B's output folder is A's, not B's (whether B ran before or not)."""
    a = _project(tmp_path)
    _run(a / "tiny.yaml")
    b = tmp_path / "b"
    b.mkdir()
    _pipeline(b)
    if ran:
        _run(b / "tiny.yaml")
        (shutil.rmtree if name.endswith(".zarr") else os.unlink)(b / "out" / name)
    (b / "out").mkdir(exist_ok=True)
    (shutil.copytree if name.endswith(".zarr") else shutil.copy2)(a / "out" / name,
                                                                  b / "out" / name)
    before = _digest(b / "out")
    with pytest.raises(ForeignPathError, match="another output folder") as info:
        _run(b / "tiny.yaml")
    assert str(b / "out" / name) in str(info.value)
    assert _digest(b / "out") == before


def test_outputs_copied_between_output_folders_of_one_project_are_refused(tmp_path):
    """(c) inside one project: the same pipeline name, two output folders."""
    project = _project(tmp_path)
    _run(project / "tiny.yaml")
    spec = yaml.safe_load((project / "tiny.yaml").read_text())
    spec["save"]["output_dir"] = "out2"
    other = project / "other.yaml"
    other.write_text(yaml.safe_dump(spec))
    (project / "out2").mkdir()
    shutil.copytree(project / "out" / "model.zarr", project / "out2" / "model.zarr")
    with pytest.raises(ModelPathError, match="another output folder"):
        _run(other)
    assert os.listdir(project / "out2") == ["model.zarr"]


def _earlier_version_outputs(project: Path) -> None:
    """What an ooc_kernels version that records no pipeline wrote in ``out``: the same
    model, checkpoint, predictions and metrics, with no owner record."""
    from ooc_kernels._atomic import write_json_atomic
    from ooc_kernels.evaluation import write_predictions

    _run(project / "tiny.yaml")
    out = project / "out"
    spec = yaml.safe_load((project / "tiny.yaml").read_text())
    train = ok.open_dataset(project / "cat.yaml", "nb")
    test = ok.open_dataset(project / "cat.yaml", "nb_test")
    metrics = json.loads((out / "metrics.json").read_text())
    for name in _OUTPUTS:
        (shutil.rmtree if name.endswith(".zarr") else os.unlink)(out / name)
    est = ok.DSGClassifier(**spec["model"]["params"], scheduler="sync", progress=False)
    est.fit(train, checkpoint=out / "checkpoint.zarr", checkpoint_every=1)
    est.save(out / "model.zarr")
    write_predictions(est, test, out / "predictions.zarr", progress=False)
    del metrics["ooc_kernels_owner"], metrics["ooc_kernels_file"]
    write_json_atomic(out / "metrics.json", metrics, kind="metrics")


def test_outputs_that_record_no_pipeline_are_adopted_only_when_asked(tmp_path):
    project = _project(tmp_path)
    _earlier_version_outputs(project)
    out = project / "out"
    before = _digest(out)
    with pytest.raises(ForeignPathError) as info:
        _run(project / "tiny.yaml")
    message = str(info.value)
    assert "no record of a pipeline" in message and "--adopt-outputs" in message
    assert "adopt_outputs=True" in message and str(out) in message
    assert _digest(out) == before
    X, y = _test_set(project)
    expected = ok.load(out / "model.zarr").predict(X)
    adopted = _run(project / "tiny.yaml", adopt_outputs=True)
    model = _check_own_run(project, {"test_accuracy": adopted["test_accuracy"]}, adopted)
    assert adopted["test_accuracy"] == accuracy_score(y, expected)
    np.testing.assert_array_equal(model.predict(X), expected)   # resumed: the same model
    # adopted once: its own outputs from then on, without the flag
    assert _run(project / "tiny.yaml")["test_accuracy"] == adopted["test_accuracy"]


def test_adopt_outputs_never_takes_another_pipelines_outputs(tmp_path):
    project = _project(tmp_path, name="one")
    _run(project / "one.yaml")
    before = _digest(project / "out")
    with pytest.raises(ForeignPathError, match="by the pipeline 'one'"):
        _run(_pipeline(project, name="two"), adopt_outputs=True)
    assert _digest(project / "out") == before


def test_the_command_adopts_outputs_with_the_flag_only(tmp_path):
    project = _project(tmp_path)
    _earlier_version_outputs(project)
    args = ["run", str(project / "tiny.yaml"), "--quiet", "--scheduler", "sync"]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code != 0
    assert "--adopt-outputs" in refused.output
    adopted = CliRunner().invoke(main, args + ["--adopt-outputs"])
    assert adopted.exit_code == 0, adopted.output
    metrics = json.loads(adopted.output.strip().splitlines()[-1])
    X, y = _test_set(project)
    model = ok.load(project / "out" / "model.zarr")
    assert metrics["test_accuracy"] == pytest.approx(accuracy_score(y, model.predict(X)))
    assert CliRunner().invoke(main, args).exit_code == 0


def _record_by_path(out: Path) -> dict:
    """Make every output in ``out`` record its owner by the folder's absolute path, as
    versions without folder ids wrote it; returns that record."""
    owner = {"pipeline": "tiny", "output_dir": str(out.resolve())}
    for name in _OUTPUTS:
        meta = out / name / "zarr.json" if name.endswith(".zarr") else out / name
        doc = json.loads(meta.read_text())
        if name.endswith(".zarr"):
            doc["attributes"]["ooc_kernels_owner"] = owner
        else:
            doc["ooc_kernels_owner"] = owner
        meta.write_text(json.dumps(doc))
    (out / _ID_FILE).unlink()
    return owner


def test_a_record_naming_the_folder_by_path_is_its_own_in_place_only(tmp_path):
    project = _project(tmp_path)
    first = _run(project / "tiny.yaml")
    _record_by_path(project / "out")
    again = _run(project / "tiny.yaml")                     # in place: its own
    _check_own_run(project, first, again)
    _record_by_path(project / "out")
    moved = tmp_path / "moved"
    shutil.move(project, moved)
    before = _digest(moved / "out")
    with pytest.raises(ForeignPathError, match=r"by the pipeline 'tiny' into the output "
                       r"folder '[^']*' \(a record of an ooc_kernels version that names the "
                       r"folder by its absolute path\)") as info:
        _run(moved / "tiny.yaml")
    assert "--adopt-outputs" in str(info.value)
    assert _digest(moved / "out") == before
    _check_own_run(moved, first, _run(moved / "tiny.yaml", adopt_outputs=True))


@pytest.mark.parametrize("what", ["link", "folder", "other file"])
def test_an_output_folder_id_file_it_did_not_write_is_refused(tmp_path, what):
    project = _project(tmp_path)
    _run(project / "tiny.yaml")
    id_file = project / "out" / _ID_FILE
    if what == "link":
        (tmp_path / "elsewhere.json").write_text(id_file.read_text())
        id_file.unlink()
        id_file.symlink_to(tmp_path / "elsewhere.json")
    elif what == "folder":
        id_file.unlink()
        id_file.mkdir()
    else:
        id_file.write_text('{"id": "not an id"}')
    before = _digest(project / "out")
    with pytest.raises(ForeignPathError, match="as the id of a pipeline's output folder") \
            as info:
        _run(project / "tiny.yaml")
    assert str(id_file) in str(info.value)
    assert _digest(project / "out") == before


@pytest.mark.parametrize("kind", ["file", "link"])
def test_a_users_file_at_the_folder_id_path_before_any_run_is_kept(tmp_path, kind):
    """A first run finds the user's own file (or link) where the output folder's id file
    goes: it is neither replaced nor followed; the run is refused before any output and
    the folder, the file and the link's target are left byte for byte."""
    project = _project(tmp_path)
    out = project / "out"
    out.mkdir()
    target = tmp_path / "users_notes.json"
    target.write_text('{"mine": true}\n')
    if kind == "file":
        (out / _ID_FILE).write_text(target.read_text())
    else:
        (out / _ID_FILE).symlink_to(target)
    before = _digest(out)
    with pytest.raises(ForeignPathError, match="as the id of a pipeline's output folder"):
        _run(project / "tiny.yaml")
    assert _digest(out) == before
    assert target.read_text() == '{"mine": true}\n'
    assert (out / _ID_FILE).is_symlink() == (kind == "link")
    assert sorted(p.name for p in out.iterdir()) == [_ID_FILE]


def test_an_output_at_the_folder_id_file_is_refused(tmp_path):
    from ooc_kernels.exceptions import PipelineConfigError

    project = _project(tmp_path)
    spec = yaml.safe_load((project / "tiny.yaml").read_text())
    spec["save"]["metrics"] = _ID_FILE
    (project / "tiny.yaml").write_text(yaml.safe_dump(spec))
    with pytest.raises(PipelineConfigError, match="holds the output folder's id"):
        _run(project / "tiny.yaml")
    assert not (project / "out").exists()


@pytest.mark.parametrize("race", [True, False])
@pytest.mark.parametrize("links", [True, False])
def test_two_first_runs_share_the_folder_id_written_first(tmp_path, monkeypatch, links,
                                                          race):
    """A run that finds no id file and then loses the race to write it (another first run
    wrote it meanwhile) keeps that id and records it, on a file system with or without
    hard links; the file is never replaced.  Without the race, its own id is written."""
    from ooc_kernels import _output_owner as oo

    folder = tmp_path / "out"
    folder.mkdir()
    theirs = "0" * 32
    real_folder_id, calls = oo.folder_id, []

    def late_writer(where):
        calls.append(where)
        if len(calls) == 1 and race:  # ours finds none; then another run writes its id
            (folder / _ID_FILE).write_text(json.dumps(
                {"ooc_kernels_file": "output-folder", "id": theirs}))
            return None
        return real_folder_id(where)

    monkeypatch.setattr(oo, "folder_id", late_writer)
    if not links:
        def no_links(*args):
            raise PermissionError("no hard links here")
        monkeypatch.setattr(oo.os, "link", no_links)
    if not race:
        theirs = "f" * 32
    with oo.owned_by(oo.pipeline_owner("tiny", "f" * 32), [folder / "model.zarr"],
                     folder=folder) as record:
        assert oo.claim_folder(folder) == theirs
        assert record == oo.owner_for(folder / "model.zarr") == {
            "pipeline": "tiny", "output_folder": theirs}
    assert json.loads((folder / _ID_FILE).read_text())["id"] == theirs
    assert sorted(os.listdir(folder)) == [_ID_FILE]    # no temporary left


def _set_max_iter(path: Path, max_iter: int) -> Path:
    spec = yaml.safe_load(path.read_text())
    spec["model"]["params"]["max_iter"] = max_iter
    path.write_text(yaml.safe_dump(spec))
    return path


def test_a_copied_project_continues_a_fit_where_it_stopped(tmp_path, resumed_at):
    """One epoch run in place, the project copied, the fit continued to two epochs in the
    copy: the model of a two-epoch run of a fresh project (exact resume)."""
    project = _project(tmp_path)
    _run(_set_max_iter(project / "tiny.yaml", 1))
    copy = tmp_path / "scratch" / "project"
    shutil.copytree(project, copy)
    continued = _run(_set_max_iter(copy / "tiny.yaml", 2))
    assert resumed_at == [(1, 0)]
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    whole = _run(_pipeline(fresh))                      # max_iter 2, no checkpoint yet
    assert resumed_at == [(1, 0)]
    model = _check_own_run(copy, whole, continued)
    X, _ = _test_set(copy)
    np.testing.assert_array_equal(model.predict_proba(X),
                                  ok.load(fresh / "out" / "model.zarr").predict_proba(X))
