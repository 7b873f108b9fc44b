"""An output folder replaced by a symbolic link while a run writes into it (a pipeline's
``save.output_dir``, the folder of ``ooc-kernels train --out`` or ``--checkpoint``, the
folder of a Python ``fit(checkpoint=...)``) is never
written through: the run's next write (a checkpoint during the fit, the model after it, a
write whose folder is swapped between its start and its final rename) is refused with
``ForeignPathError`` (``ModelPathError`` for the model), naming the folder and the link, and
the place the link points to stays as it was.  The run's files up to the swap are in the
folder where it began (moved aside by the swap)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import ooc_kernels as ok
import ooc_kernels._atomic as atomic
import ooc_kernels.pipeline as pipeline_module
from ooc_kernels.cli import main
from ooc_kernels.exceptions import ForeignPathError, ModelPathError
from ooc_kernels.pipeline import run_pipeline

sys.path.insert(0, str(Path(__file__).parent))
from test_attacks_pipeline_outputs import _digest, _pipeline  # noqa: E402
from test_attacks_write_races import _train_args  # noqa: E402


def _swap_for_a_link(folder: Path, elsewhere: Path) -> None:
    """What an attacker (or a careless ``mv``/``ln -s``) does: the folder moved aside, a
    link to ``elsewhere`` put at its path."""
    os.rename(folder, folder.with_name(folder.name + "_moved"))
    os.symlink(elsewhere, folder, target_is_directory=True)


def _elsewhere(tmp_path: Path) -> tuple[Path, dict]:
    """A folder of someone else's, with a file in it; and its content."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "theirs.txt").write_text("not yours")
    return elsewhere, _digest(elsewhere)


def _swapping_fit(monkeypatch, folder, elsewhere, when):
    """Make the pipeline's estimator swap ``folder`` for a link as its fit begins
    (``"fit-start"``: its checkpoints go there) or once it ended (``"fit-end"``)."""
    build = pipeline_module._build_estimator

    def built(spec, **kwargs):
        est = build(spec, **kwargs)
        if est is None:
            return est
        fit = est.fit

        def fit_and_swap(*args, **kw):
            if when == "fit-start":
                _swap_for_a_link(folder, elsewhere)
            out = fit(*args, **kw)
            if when == "fit-end":
                _swap_for_a_link(folder, elsewhere)
            return out

        est.fit = fit_and_swap
        return est

    monkeypatch.setattr(pipeline_module, "_build_estimator", built)


@pytest.mark.parametrize("when, error, output", [
    ("fit-start", ForeignPathError, "checkpoint.zarr"),
    ("fit-end", ModelPathError, "model.zarr")])
def test_a_pipeline_output_folder_swapped_for_a_link_is_never_written_through(
        tmp_path, monkeypatch, when, error, output):
    path = _pipeline(tmp_path)
    elsewhere, before = _elsewhere(tmp_path)
    out = tmp_path / "out"
    _swapping_fit(monkeypatch, out, elsewhere, when)
    with pytest.raises(error, match=rf"refusing to write '{out / output}': the folder "
                                    rf"'{out}' is no longer the folder it was when the run "
                                    rf"began \(it is now a symbolic link to '{elsewhere}'\)"):
        run_pipeline(path, scheduler="sync", progress=False)
    assert _digest(elsewhere) == before
    assert sorted(os.listdir(elsewhere)) == ["theirs.txt"]
    # what the run wrote before the swap is in the folder it began in
    moved = set(os.listdir(tmp_path / "out_moved"))
    assert moved == {".ooc_kernels_output_folder.json"} | (
        {"checkpoint.zarr"} if when == "fit-end" else set())


def test_a_folder_swapped_between_a_writes_start_and_its_rename_is_not_written_through(
        tmp_path, monkeypatch):
    """The check runs again right before the final rename: a swap while a checkpoint is
    being written (here once its files are on the disk) leaves the link's folder alone."""
    path = _pipeline(tmp_path)
    elsewhere, before = _elsewhere(tmp_path)
    out = tmp_path / "out"
    fsync_tree = atomic._fsync_tree

    def synced_then_swapped(folder):
        fsync_tree(folder)
        if not out.is_symlink():
            _swap_for_a_link(out, elsewhere)

    monkeypatch.setattr(atomic, "_fsync_tree", synced_then_swapped)
    with pytest.raises(ForeignPathError, match=rf"the folder '{out}' is no longer the folder "
                                               "it was when the run began"):
        run_pipeline(path, scheduler="sync", progress=False)
    assert _digest(elsewhere) == before
    assert sorted(os.listdir(elsewhere)) == ["theirs.txt"]


def test_a_link_put_below_the_output_folder_is_not_written_through(tmp_path, monkeypatch):
    """A save file in a subfolder of the output folder (``save.model: models/m.zarr``): the
    library creates that subfolder; a link there is someone else's and is refused."""
    import yaml

    path = _pipeline(tmp_path)
    spec = yaml.safe_load(path.read_text())
    spec["save"]["model"] = "models/m.zarr"
    path.write_text(yaml.safe_dump(spec))
    elsewhere, before = _elsewhere(tmp_path)
    build = pipeline_module._build_estimator

    def built(spec, **kwargs):
        est = build(spec, **kwargs)
        if est is not None:
            fit = est.fit

            def fit_then_link(*args, **kw):
                out = fit(*args, **kw)
                os.symlink(elsewhere, tmp_path / "out" / "models")
                return out

            est.fit = fit_then_link
        return est

    monkeypatch.setattr(pipeline_module, "_build_estimator", built)
    models = tmp_path / "out" / "models"
    with pytest.raises(ModelPathError, match=rf"the folder '{models}' is no longer .* a "
                                             rf"symbolic link to '{elsewhere}'"):
        run_pipeline(path, scheduler="sync", progress=False)
    assert _digest(elsewhere) == before


@pytest.mark.parametrize("what", ["out", "checkpoint"])
def test_train_never_writes_through_its_out_folder_swapped_for_a_link(tmp_path, monkeypatch,
                                                                      what):
    run = tmp_path / "run"
    run.mkdir()
    elsewhere, before = _elsewhere(tmp_path)
    args = _train_args(tmp_path, "--out", str(run / "m.zarr"),
                       *(["--checkpoint", str(run / "ck.zarr")] if what == "checkpoint"
                         else []))
    fit = ok.DSGRegressor.fit

    def fit_and_swap(self, *a, **kw):
        if what == "checkpoint":
            _swap_for_a_link(run, elsewhere)   # before its first checkpoint
        out = fit(self, *a, **kw)
        if what == "out":
            _swap_for_a_link(run, elsewhere)   # before the model is saved
        return out

    monkeypatch.setattr(ok.DSGRegressor, "fit", fit_and_swap)
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 1, r.output
    name = "m.zarr" if what == "out" else "ck.zarr"
    assert f"refusing to write '{run / name}': the folder '{run}' is no longer" in r.output
    assert _digest(elsewhere) == before
    assert sorted(os.listdir(elsewhere)) == ["theirs.txt"]


def test_train_writes_through_a_link_the_user_named(tmp_path):
    """A folder that is a link when the run begins is the place the user named: the model
    is saved through it."""
    target = tmp_path / "scratch"
    target.mkdir()
    (tmp_path / "run").symlink_to(target, target_is_directory=True)
    r = CliRunner().invoke(main, _train_args(tmp_path, "--out", str(tmp_path / "run" /
                                                                    "m.zarr")))
    assert r.exit_code == 0, r.output
    assert sorted(os.listdir(target)) == ["m.zarr"]
    assert ok.load(target / "m.zarr").n_features_in_ == 2


@pytest.mark.parametrize("swap", ["dangling-link", "removed"])
def test_a_pipeline_output_folder_gone_after_the_fit_is_a_library_error(tmp_path, monkeypatch,
                                                                       swap):
    """The output folder replaced by a link to nothing, or removed, while the model is fit:
    the save says so (``ModelPathError``), and nothing is created in its place."""
    path = _pipeline(tmp_path)
    out = tmp_path / "out"
    build = pipeline_module._build_estimator

    def built(spec, **kwargs):
        est = build(spec, **kwargs)
        if est is not None:
            fit = est.fit

            def fit_then_swap(*args, **kw):
                result = fit(*args, **kw)
                os.rename(out, tmp_path / "out_moved")
                if swap == "dangling-link":
                    os.symlink(tmp_path / "nowhere", out)
                return result

            est.fit = fit_then_swap
        return est

    monkeypatch.setattr(pipeline_module, "_build_estimator", built)
    with pytest.raises(ModelPathError, match=rf"'{out / 'model.zarr'}'"):
        run_pipeline(path, scheduler="sync", progress=False)
    assert not (tmp_path / "nowhere").exists()
    assert out.is_symlink() if swap == "dangling-link" else not os.path.lexists(out)


def test_an_api_fit_never_writes_its_checkpoint_through_its_folder_swapped_for_a_link(
        tmp_path, monkeypatch):
    """``fit(checkpoint=...)`` from Python: the checkpoint's folder moved aside and replaced
    by a link after the first checkpoint; the next checkpoint is refused, the link's target
    stays as it was, and the first checkpoint is in the folder moved aside."""
    import numpy as np

    from ooc_kernels.estimators._checkpointing import CheckpointWriter
    from ooc_kernels.parallel.checkpoint import read_checkpoint

    out = tmp_path / "out"
    ck = out / "ck.zarr"
    elsewhere, before = _elsewhere(tmp_path)
    real, writes = CheckpointWriter.write, []

    def write_then_swap(self, state, position):
        real(self, state, position)
        writes.append(tuple(position))
        if len(writes) == 1:
            _swap_for_a_link(out, elsewhere)

    monkeypatch.setattr(CheckpointWriter, "write", write_then_swap)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    est = ok.DSGClassifier(n_features=64, block_size=32, batch_size=16, chunk_size=50,
                           max_iter=2, tol=None, random_state=0, progress=False,
                           scheduler="sync")
    with pytest.raises(ForeignPathError, match=rf"refusing to write '{ck}': the folder "
                                               rf"'{out}' is no longer the folder it was "
                                               "when the run began .*symbolic link.*"
                                               r"checkpoint=\.\.\. and resume=True"):
        est.fit(X, y, checkpoint=str(ck))
    assert len(writes) == 1
    assert _digest(elsewhere) == before
    moved = read_checkpoint(tmp_path / "out_moved" / "ck.zarr")
    assert moved.meta["position"] == dict(zip(("epoch", "round"), writes[0]))
