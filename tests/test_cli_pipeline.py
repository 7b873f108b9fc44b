"""The command line and pipeline files on tiny data."""

import json
import shutil
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

import ooc_kernels as ok
from ooc_kernels.cli import main
from ooc_kernels.exceptions import PipelineConfigError
from ooc_kernels.pipeline import load_pipeline

QUICKSTART = Path(__file__).parents[1] / "pipelines" / "quickstart.yaml"


def _pipeline(tmp_path, **overrides):
    spec = {
        "name": "tiny",
        "data": {
            "catalog": "cat.yaml", "train": "nb", "test": "nb_test",
            "generate": {
                "nb": {"generator": "nonlinear_binary", "n_samples": 600, "chunk_size": 200,
                       "params": {"n_features": 4}},
                "nb_test": {"generator": "nonlinear_binary", "n_samples": 200, "split": "test",
                            "random_state": 1, "chunk_size": 100, "params": {"n_features": 4}},
            },
        },
        "model": {"estimator": "DSGClassifier",
                  "params": {"n_features": 512, "block_size": 64, "batch_size": 16,
                             "max_iter": 3, "tol": None, "random_state": 0}},
        "save": {"output_dir": "out"},
    }
    for key, value in overrides.items():
        spec[key] = value
    from ooc_kernels.data.catalog import register_dataset

    register_dataset(tmp_path / "cat.yaml", "nb", tmp_path / "data" / "nb.zarr")
    register_dataset(tmp_path / "cat.yaml", "nb_test", tmp_path / "data" / "nb_test.zarr")
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_run_tiny_pipeline(tmp_path):
    path = _pipeline(tmp_path)
    result = CliRunner().invoke(main, ["run", str(path), "--quiet", "--scheduler", "sync"])
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.output.strip().splitlines()[-1])
    assert metrics["n_train"] == 600 and metrics["n_test"] == 200
    assert metrics["test_accuracy"] > 0.7
    on_disk = json.loads((tmp_path / "out" / "metrics.json").read_text())
    folder_id = json.loads((tmp_path / "out" / ".ooc_kernels_output_folder.json").read_text())
    owner = {"pipeline": "tiny", "output_folder": folder_id["id"]}
    assert on_disk == {"ooc_kernels_file": "metrics", "ooc_kernels_owner": owner, **metrics}
    model = ok.load(tmp_path / "out" / "model.zarr")
    test = ok.open_dataset(tmp_path / "cat.yaml", "nb_test")
    assert model.score(test) == pytest.approx(metrics["test_accuracy"])
    import xarray as xr

    preds = xr.open_zarr(tmp_path / "out" / "predictions.zarr")
    np.testing.assert_array_equal(preds["prediction"].values,
                                  model.predict(test["X"].values))
    # a second run reuses the generated data and gives the same model
    again = CliRunner().invoke(main, ["run", str(path), "--quiet", "--scheduler", "sync"])
    assert json.loads(again.output.strip().splitlines()[-1])["test_accuracy"] == \
        metrics["test_accuracy"]


@pytest.mark.parametrize("change", [dict(n_samples=400), dict(random_state=7),
                                    dict(params={"n_features": 4, "flip": 0.2})],
                         ids=["size", "seed", "parameters"])
def test_a_generated_store_that_the_pipeline_no_longer_describes_is_refused(tmp_path, change):
    """``data.generate`` keeps an existing store only when it is the dataset its entry
    describes; another is refused before the fit, never used nor replaced."""
    path = _pipeline(tmp_path)
    from ooc_kernels.pipeline import run_pipeline

    run_pipeline(path, scheduler="sync", progress=False)
    store = tmp_path / "data" / "nb.zarr"
    before = sorted(p.name for p in store.rglob("*"))
    spec = yaml.safe_load(path.read_text())
    spec["data"]["generate"]["nb"].update(change)
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(PipelineConfigError, match=r"'data.generate.nb' describes a dataset "
                                                  r"that the store .*nb.zarr' does not hold "
                                                  r"\(.*\); a pipeline never replaces a "
                                                  r"dataset"):
        run_pipeline(path, scheduler="sync", progress=False)
    assert sorted(p.name for p in store.rglob("*")) == before


def test_two_writers_of_one_missing_dataset_with_exist_ok_both_succeed(tmp_path, monkeypatch):
    """Two pipelines that generate one missing store at once: the one that finishes second
    keeps the first one's store, the same dataset, instead of failing after its work."""
    from ooc_kernels.data import generators

    target = tmp_path / "d.zarr"
    real = generators.write_chunks

    def other_writer_first(path, *args, **kwargs):
        monkeypatch.setattr(generators, "write_chunks", real)
        ok.make_dataset("nonlinear_binary", target, 300, chunk_size=100, n_features=4,
                        progress=False)               # finishes while this one writes
        return real(path, *args, **kwargs)

    monkeypatch.setattr(generators, "write_chunks", other_writer_first)
    got = ok.make_dataset("nonlinear_binary", target, 300, chunk_size=100, n_features=4,
                          progress=False, exist_ok=True)
    assert got == target and sorted(os.listdir(tmp_path)) == ["d.zarr"]
    with pytest.raises(ok.exceptions.DatasetExistsError, match=r"holds other data"):
        _other_dataset_first(monkeypatch, generators, real, tmp_path)


def _other_dataset_first(monkeypatch, generators, real, tmp_path):
    """A writer of another dataset finishes while an ``exist_ok`` write runs."""
    target = tmp_path / "e.zarr"

    def other_writer_first(path, *args, **kwargs):
        monkeypatch.setattr(generators, "write_chunks", real)
        ok.make_dataset("nonlinear_binary", target, 300, chunk_size=100, n_features=4,
                        random_state=5, progress=False)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(generators, "write_chunks", other_writer_first)
    return ok.make_dataset("nonlinear_binary", target, 300, chunk_size=100, n_features=4,
                           progress=False, exist_ok=True)


def test_train_evaluate_predict_commands(tmp_path):
    runner = CliRunner()
    cat = tmp_path / "c.yaml"
    r = runner.invoke(main, ["data", "make", "synthetic_krr_2d", "--n", "500", "--out",
                             str(tmp_path / "d"), "--chunk-size", "100", "--catalog", str(cat),
                             "--quiet"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, ["catalog", "list", str(cat)])
    assert r.exit_code == 0 and "synthetic_krr_2d" in r.output and "exists=yes" in r.output
    model = tmp_path / "m.zarr"
    r = runner.invoke(main, ["train", "--catalog", str(cat), "--entry", "synthetic_krr_2d",
                             "--estimator", "DSGRegressor", "-p", "batch_size=8",
                             "-p", "n_features=256", "-p", "random_state=0",
                             "-p", "max_iter=3", "--out",
                             str(model), "--scheduler", "sync", "--quiet"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, ["evaluate", str(model), "--catalog", str(cat), "--entry",
                             "synthetic_krr_2d", "--out", str(tmp_path / "m.json"), "-q"])
    assert r.exit_code == 0, r.output
    metrics = json.loads(r.output.strip().splitlines()[-1])
    assert set(metrics) >= {"r2", "rmse", "mae"}
    on_disk = json.loads((tmp_path / "m.json").read_text())
    assert on_disk == {"ooc_kernels_file": "metrics", **metrics}
    r = runner.invoke(main, ["predict", str(model), "--catalog", str(cat), "--entry",
                             "synthetic_krr_2d", "--out", str(tmp_path / "p.zarr"), "-q"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "p.zarr").exists()


@pytest.mark.parametrize("mutate, match", [
    (lambda s: s.update(fitt={}), r"unknown key 'fitt'"),
    (lambda s: s["model"].update(estimator="SVC"), r"key 'model.estimator'"),
    (lambda s: s["model"]["params"].update(n_featurez=3), r"model.params.n_featurez"),
    (lambda s: s["model"]["params"].update(batch_size=0),
     r"model.params: The .batch_size. parameter of DSGClassifier must be an int in the range"),
    (lambda s: s["data"]["generate"]["nb"].update(n_samples="many"),
     r"data.generate.nb.n_samples"),
    (lambda s: s.pop("save"), r"missing key 'save'"),
    (lambda s: s["model"].update(estimator="DSGOneClassSVM", params={"max_iter": 2}),
     r"model.estimator: evaluate scores classifiers .* DSGOneClassSVM is a novelty "
     r"detector.*drop data.test"),
    (lambda s: s["model"].update(estimator="DSGDensityRatio", params={"max_iter": 2}),
     r"model.estimator DSGDensityRatio learns from two samples, fit\(X_p, X_q\)"),
])
def test_invalid_pipeline_is_refused_before_any_work(tmp_path, mutate, match):
    path = _pipeline(tmp_path)
    spec = yaml.safe_load(path.read_text())
    mutate(spec)
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(PipelineConfigError, match=match):
        load_pipeline(path)
    result = CliRunner().invoke(main, ["run", str(path)])
    assert result.exit_code != 0
    assert "PipelineConfigError" in result.output
    assert not (tmp_path / "data").exists()  # nothing was generated


def test_cli_errors_are_one_line(tmp_path):
    result = CliRunner().invoke(main, ["catalog", "list", str(tmp_path / "missing.yaml")])
    assert result.exit_code == 1
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.slow
def test_train_on_a_remote_scheduler_address(tmp_path):
    """--scheduler tcp://...: the command connects a Client to that scheduler."""
    distributed = pytest.importorskip("distributed")
    from ooc_kernels.data.catalog import register_dataset

    store = ok.make_dataset("nonlinear_binary", tmp_path / "nb.zarr", 300, chunk_size=100,
                            n_features=3, progress=False)
    register_dataset(tmp_path / "c.yaml", "nb", store)
    args = ["train", "--catalog", str(tmp_path / "c.yaml"), "--entry", "nb",
            "-p", "n_features=256", "-p", "block_size=32", "-p", "batch_size=16",
            "-p", "random_state=0", "-p", "chunks_per_round=2", "-p", "max_iter=3", "-q"]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        r = CliRunner().invoke(main, args + ["--out", str(tmp_path / "remote.zarr"),
                                             "--scheduler", cluster.scheduler_address])
        assert r.exit_code == 0, r.output
        executed = sum(w.state.executed_count for w in cluster.workers.values())
        assert executed > 0                             # the tasks ran on that cluster
    r = CliRunner().invoke(main, args + ["--out", str(tmp_path / "local.zarr"),
                                         "--scheduler", "sync"])
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(ok.load(tmp_path / "remote.zarr").coef_,
                                  ok.load(tmp_path / "local.zarr").coef_)


def test_pipeline_paths_may_not_leave_base_dir(tmp_path):
    from ooc_kernels.pipeline import run_pipeline

    path = _pipeline(tmp_path, save={"output_dir": "../elsewhere"})
    with pytest.raises(PipelineConfigError, match=r"'save.output_dir' = '../elsewhere' "
                                                  r"resolves to .* outside base_dir"):
        run_pipeline(path, scheduler="sync")
    assert not (tmp_path.parent / "elsewhere").exists()


VICTIM = "precious: do not overwrite\n"


@pytest.mark.parametrize("key", ["model", "metrics", "predictions", "checkpoint"])
@pytest.mark.parametrize("how", ["dot-dot", "absolute", "the output folder itself",
                                 "symbolic link"])
def test_save_paths_stay_below_the_output_folder(tmp_path, key, how):
    """Every file a pipeline writes goes through the same check as output_dir: nothing
    outside it (or the folder itself) is replaced, and nothing is computed first."""
    from ooc_kernels.pipeline import run_pipeline

    (tmp_path / "p").mkdir()
    victim = tmp_path / "victim"
    victim.write_text(VICTIM)
    value = {"dot-dot": "../../victim", "absolute": str(victim),
             "the output folder itself": ".", "symbolic link": "link"}[how]
    path = _pipeline(tmp_path / "p", save={"output_dir": "out", key: value})
    if how == "symbolic link":
        (tmp_path / "p" / "out").mkdir()
        (tmp_path / "p" / "out" / "link").symlink_to(victim)
    where = "equal to" if how == "the output folder itself" else "outside"
    match = (rf"pipeline key 'save.{key}' = .* resolves to .*, {where} save.output_dir "
             r".*--data-root .* or --allow-outside")
    if how == "symbolic link":  # wherever it leads: never followed
        match = rf"pipeline key 'save.{key}' = 'link' is a symbolic link \(to .*victim'\)"
    with pytest.raises(PipelineConfigError, match=match):
        run_pipeline(path, scheduler="sync", progress=False)
    assert victim.read_text() == VICTIM
    assert not (tmp_path / "p" / "data").exists()  # refused before any work


def test_save_paths_must_differ(tmp_path):
    from ooc_kernels.pipeline import run_pipeline

    path = _pipeline(tmp_path, save={"output_dir": "out", "metrics": "model.zarr"})
    with pytest.raises(PipelineConfigError, match=r"'save.model' .* and 'save.metrics' .* "
                                                  r"are the same path or nested"):
        run_pipeline(path, scheduler="sync", progress=False)
    path = _pipeline(tmp_path, save={"output_dir": "out", "predictions": "model.zarr/p"})
    with pytest.raises(PipelineConfigError, match=r"'save.model' .* and 'save.predictions' "
                                                  r".* nested in one another"):
        run_pipeline(path, scheduler="sync", progress=False)


@pytest.mark.parametrize("base_dir", ["/", "..", "../.."])
def test_base_dir_outside_the_pipeline_folder_needs_the_caller(tmp_path, base_dir):
    """The file cannot decide what 'inside' means: a base_dir outside its own folder is
    refused unless the person running it allows that folder or any folder."""
    from ooc_kernels.pipeline import run_pipeline

    (tmp_path / "p").mkdir()
    path = _pipeline(tmp_path / "p", base_dir=base_dir)
    with pytest.raises(PipelineConfigError,
                       match=r"pipeline key 'base_dir' = .* outside the pipeline file's "
                             r"folder .*--allow-outside"):
        run_pipeline(path, scheduler="sync", progress=False)
    r = CliRunner().invoke(main, ["run", str(path), "-q", "--scheduler", "sync"])
    assert r.exit_code == 1 and "outside the pipeline file's folder" in r.output
    assert not (tmp_path / "p" / "data").exists()


def test_base_dir_allowed_by_the_caller(tmp_path):
    """With --data-root naming the folder above, base_dir '..' works, and the pipeline's
    paths are then resolved (and checked) against it."""
    (tmp_path / "p").mkdir()
    spec = yaml.safe_load(_pipeline(tmp_path).read_text())   # its catalog: tmp_path/cat.yaml
    spec["base_dir"] = ".."
    spec["data"]["catalog"] = "cat.yaml"
    spec["save"]["output_dir"] = "p/out"
    moved = tmp_path / "p" / "p.yaml"
    moved.write_text(yaml.safe_dump(spec))
    run = ["run", str(moved), "-q", "--scheduler", "sync"]
    r = CliRunner().invoke(main, run)
    assert r.exit_code == 1 and "'base_dir' = '..'" in r.output
    r = CliRunner().invoke(main, run + ["--data-root", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "p" / "out" / "model.zarr").exists()
    assert (tmp_path / "data" / "nb.zarr").exists()


# --------------------------------------------------------------- YAML others may write
def _alias_bomb(levels: int) -> str:
    lines = ["x0: &x0 [ab, ab, ab, ab, ab, ab, ab, ab, ab, ab]"]
    for i in range(1, levels + 1):
        lines.append(f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * 10) + "]")
    return "\n".join(lines)


def test_pipeline_aliases_are_refused_with_the_line(tmp_path):
    """A few hundred bytes of nested aliases expand to 10^8 strings: the file is refused
    when parsed, naming the line, and the message stays short."""
    bomb = "name: " + _alias_bomb(7).replace("x0: ", "\n  x0: ").replace("\nx", "\n  x")
    bomb = bomb.replace("name: \n", "name:\n") + "\n" + "data: *x7\n"
    assert len(bomb) < 600
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb)
    with pytest.raises(PipelineConfigError,
                       match=r"uses the YAML alias '\*x0' at line 3, column 12; anchors and "
                             r"aliases are not accepted") as err:
        load_pipeline(path)
    assert len(str(err.value)) < 1000
    r = CliRunner().invoke(main, ["run", str(path), "-q"])
    assert r.exit_code == 1 and "YAML alias" in r.output and len(r.output) < 1500


def test_deeply_nested_pipeline_is_a_clear_error(tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text("name: " + "[" * 2000 + "]" * 2000 + "\n")
    with pytest.raises(PipelineConfigError, match=r"nests mappings and lists more than 100 "
                                                   r"levels deep \(line 1, column 106\)"):
        load_pipeline(path)


def test_long_values_are_quoted_briefly_in_pipeline_errors(tmp_path):
    path = _pipeline(tmp_path)
    spec = yaml.safe_load(path.read_text())
    # values 10 times the messages' bound (a value quoted whole fails the bounds below)
    spec["name"] = ["n" * 100] * 100                          # 10 kB where a string is expected
    spec["fit"] = {"checkpoint_every": "x" * 10_000}
    spec["model"]["params"]["scheduler"] = "tcp://" + "h" * 10_000
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(PipelineConfigError, match=r"'model.params.scheduler' \(= 'tcp://hhh.*"
                                                  r"characters in all\)\) cannot be set") as err:
        load_pipeline(path)
    assert len(str(err.value)) < 1000
    spec["model"]["params"].pop("scheduler")
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(PipelineConfigError, match=r"key 'name': .*characters in all\).*"
                                                  r"key 'fit.checkpoint_every'") as err:
        load_pipeline(path)
    assert len(str(err.value)) < 2000


# --------------------------------------------------------------- trust comes from the command
@pytest.mark.parametrize("key, set_it, flag", [
    ("data.trusted", lambda s: s["data"].update(trusted=True), "--trusted"),
    ("data.allow_outside", lambda s: s["data"].update(allow_outside=True), "--allow-outside"),
    ("allow_outside", lambda s: s.update(allow_outside=True), "--allow-outside"),
    ("fit.scheduler", lambda s: s.setdefault("fit", {}).update(scheduler="threads"),
     "--scheduler"),
    ("model.params.scheduler",
     lambda s: s["model"]["params"].update(scheduler="tcp://198.51.100.7:8786"), "--scheduler"),
    ("model.params.progress", lambda s: s["model"]["params"].update(progress=True), "--quiet"),
    ("scheduler", lambda s: s.update(scheduler="tcp://198.51.100.7:8786"), "--scheduler"),
    ("data.generate.nb.params.scheduler",
     lambda s: s["data"]["generate"]["nb"]["params"].update(scheduler="processes"),
     "--scheduler"),
    ("evaluate.scheduler_file", lambda s: s.setdefault("evaluate", {}).update(
        scheduler_file="/shared/sched.json"), "--scheduler-file"),
    ("data.allow_env", lambda s: s["data"].update(allow_env=["HOME"]), "--allow-env"),
    ("save.data_root", lambda s: s["save"].update(data_root="/"), "--data-root"),
])
def test_pipeline_files_cannot_set_trust_or_the_scheduler(tmp_path, key, set_it, flag):
    path = _pipeline(tmp_path)
    spec = yaml.safe_load(path.read_text())
    set_it(spec)
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(PipelineConfigError,
                       match=rf"key '{key}' \(= .*\) cannot be set in a pipeline file: trust"
                             rf".* pass {flag}"):
        load_pipeline(path)
    result = CliRunner().invoke(main, ["run", str(path), "-q", "--scheduler", "sync"])
    assert result.exit_code == 1
    assert "cannot be set in a pipeline file" in result.output
    assert not (tmp_path / "data").exists()  # refused before any work


_READER_MODULE = """
import pathlib
from intake.readers.readers import XArrayDatasetReader

class Reader(XArrayDatasetReader):
    def read(self, *args, **kwargs):
        pathlib.Path({marker!r}).write_text("ran")
        return super().read(*args, **kwargs)
"""


def test_trusted_comes_from_the_command_line(tmp_path, monkeypatch):
    """A catalog with a reader outside the allow-list opens only with ``run --trusted``."""
    name = f"ooc_reader_{tmp_path.name.replace('-', '_')}"
    marker = tmp_path / "READER_RAN"
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / f"{name}.py").write_text(_READER_MODULE.format(marker=str(marker)))
    monkeypatch.syspath_prepend(str(tmp_path / "mods"))
    path = _pipeline(tmp_path)
    cat = yaml.safe_load((tmp_path / "cat.yaml").read_text())
    cat["entries"]["nb"]["reader"] = f"{name}:Reader"
    (tmp_path / "cat.yaml").write_text(yaml.safe_dump(cat))
    refused = CliRunner().invoke(main, ["run", str(path), "-q", "--scheduler", "sync"])
    assert refused.exit_code == 1
    assert "UntrustedCatalogError" in refused.output and f"{name}:Reader" in refused.output
    assert not marker.exists()
    accepted = CliRunner().invoke(main, ["run", str(path), "-q", "--scheduler", "sync",
                                         "--trusted"])
    assert accepted.exit_code == 0, accepted.output
    assert marker.read_text() == "ran"            # the catalog's own reader opened the data
    sys.modules.pop(name, None)


def test_allow_outside_comes_from_the_caller(tmp_path):
    """Data outside the catalog's folder and an output_dir outside base_dir need the
    caller's allow_outside (flag or argument), never a key of the file."""
    from ooc_kernels.data.catalog import PathEscapeError, register_dataset
    from ooc_kernels.pipeline import run_pipeline

    (tmp_path / "p").mkdir()
    path = _pipeline(tmp_path / "p", save={"output_dir": "../outside_out"})
    register_dataset(tmp_path / "p" / "cat.yaml", "nb", tmp_path / "shared" / "nb.zarr",
                     allow_outside=True)
    with pytest.raises(PipelineConfigError, match=r"outside base_dir .*pass --data-root .* or "
                                                  r"--allow-outside"):
        run_pipeline(path, scheduler="sync")
    r = CliRunner().invoke(main, ["run", str(path), "-q", "--scheduler", "sync"])
    assert r.exit_code == 1 and "outside base_dir" in r.output
    spec = yaml.safe_load(path.read_text())
    spec["save"]["output_dir"] = "out"
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(PathEscapeError, match=r"entry 'nb' .*outside the catalog's folder"):
        run_pipeline(path, scheduler="sync")
    assert not (tmp_path / "shared").exists()
    r = CliRunner().invoke(main, ["run", str(path), "-q", "--scheduler", "sync",
                                  "--allow-outside"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "shared" / "nb.zarr").exists()
    # the argument accepts folders too, like the catalog functions
    metrics = run_pipeline(path, scheduler="sync", progress=False,
                           allow_outside=[tmp_path / "shared"])
    assert metrics["n_train"] == 600


def test_run_takes_data_roots_and_environment_names_from_the_command(tmp_path, monkeypatch):
    """``ooc-kernels run`` has the catalog options of the other commands: --data-root lets
    the catalog's data lie in another folder, --allow-env lets {env(NAME)} read NAME."""
    from ooc_kernels.data.catalog import register_dataset

    (tmp_path / "p").mkdir()
    path = _pipeline(tmp_path / "p")
    register_dataset(tmp_path / "p" / "cat.yaml", "nb", tmp_path / "disk" / "nb.zarr",
                     allow_outside=True)
    run = ["run", str(path), "-q", "--scheduler", "sync"]
    r = CliRunner().invoke(main, run)
    assert r.exit_code == 1 and "PathEscapeError" in r.output
    r = CliRunner().invoke(main, run + ["--data-root", str(tmp_path / "disk")])
    assert r.exit_code == 0, r.output
    # the test split read through an environment variable
    cat = tmp_path / "p" / "cat.yaml"
    spec = yaml.safe_load(cat.read_text())
    for data in spec["data"].values():
        data["kwargs"]["url"] = data["kwargs"]["url"].replace("{CATALOG_DIR}",
                                                              "{env(OOC_PIPE_ROOT)}")
    cat.write_text(yaml.safe_dump(spec))
    shutil.rmtree(tmp_path / "p" / "out")       # a new run, not a resume of the first
    monkeypatch.setenv("OOC_PIPE_ROOT", str(tmp_path / "p"))
    r = CliRunner().invoke(main, run + ["--data-root", str(tmp_path / "disk")])
    assert r.exit_code == 1 and "OOC_PIPE_ROOT" in r.output and "--allow-env" in r.output
    r = CliRunner().invoke(main, run + ["--data-root", str(tmp_path / "disk"),
                                        "--allow-env", "OOC_PIPE_ROOT"])
    assert r.exit_code == 0, r.output


def test_quickstart_pipeline_sets_no_scheduler_and_no_trust():
    spec, _ = load_pipeline(QUICKSTART)
    raw = yaml.safe_load(Path(QUICKSTART).read_text())
    assert "scheduler" not in raw.get("fit", {})
    assert "allow_outside" not in raw and not {"trusted", "allow_outside"} & set(raw["data"])
    assert spec.fit.resume is True


# ------------------------------------------------------------------ numbers as users write them
@pytest.mark.parametrize("text, expected", [
    ("2e5", 200000), ("1E+3", 1000), ("1e-3", 0.001), (".5", 0.5), ("-.5e-2", -0.005),
    ("1_000", 1000), ("2.0e5", 200000.0), ("3.", 3.0), ("+7", 7), ("0.25", 0.25),
    ("median", "median"), ("logistic", "logistic"), ("1e", "1e"), ("e5", "e5"),
    ("1e3.5", "1e3.5"), ("nan", "nan"), ("inf", "inf"), ("1e400", float("inf")),
    ("1e1000000000", float("inf")),                     # no billion-digit int
])
def test_numbers_are_read_as_written(text, expected):
    """Reference values as Python reads the literal (ints when written without a point)."""
    from ooc_kernels._params import coerce_number, parse_param_value

    for got in (coerce_number(text), parse_param_value(text)):
        assert got == expected and type(got) is type(expected), (text, got)
    if not isinstance(expected, str):
        assert coerce_number(f"  {text} ") == expected       # blanks around are ignored


@pytest.mark.filterwarnings(
    "ignore::ooc_kernels.exceptions.StepSizeWarning")  # the numbers, not the steps, are tested
def test_cli_param_in_exponent_notation(tmp_path):
    store = ok.make_dataset("nonlinear_binary", tmp_path / "data" / "nb.zarr", 300,
                            chunk_size=100, n_features=3, progress=False)
    from ooc_kernels.data.catalog import register_dataset

    register_dataset(tmp_path / "c.yaml", "nb", store)
    r = CliRunner().invoke(main, [
        "train", "--catalog", str(tmp_path / "c.yaml"), "--entry", "nb", "-p", "eta0=2e5",
        "-p", "learning_rate=inverse", "-p", "t0=1E+3", "-p", "alpha=1e-6", "-p", "n_features=1e3", "-p", "block_size=8",
        "-p", "batch_size=16", "-p", "bandwidth=median", "-p", "random_state=0",
        "-p", "max_iter=3", "-p", "tol=null", "--out", str(tmp_path / "m.zarr"),
        "--scheduler", "sync", "-q"])
    assert r.exit_code == 0, r.output
    model = ok.load(tmp_path / "m.zarr")
    params = model.get_params()
    assert (params["eta0"], params["t0"], params["alpha"]) == (200000, 1000, 1e-6)
    assert params["n_features"] == 1000 and isinstance(params["n_features"], int)
    assert params["bandwidth"] == "median" and params["max_iter"] == 3
    # 3 epochs (the default runs 27 here): the values parsed, not convergence, are tested
    reference = ok.DSGClassifier(learning_rate="inverse", eta0=200000.0, t0=1000.0,
                                 alpha=0.000001, n_features=1000, block_size=8,
                                 batch_size=16, bandwidth="median", random_state=0,
                                 max_iter=3, tol=None, scheduler="sync", progress=False)
    reference.fit(ok.open_dataset(tmp_path / "c.yaml", "nb"))
    np.testing.assert_array_equal(model.coef_, reference.coef_)
    # generator parameters too
    r = CliRunner().invoke(main, ["data", "make", "synthetic_krr_2d", "--n", "50", "--out",
                                  str(tmp_path / "k.zarr"), "-p", "noise=5e-2", "-q"])
    assert r.exit_code == 0, r.output
    import xarray as xr

    assert xr.open_zarr(tmp_path / "k.zarr").attrs["generator_params"] == {"noise": 0.05}


@pytest.mark.filterwarnings(
    "ignore::ooc_kernels.exceptions.StepSizeWarning")  # the numbers, not the steps, are tested
def test_pipeline_yaml_numbers_in_exponent_notation(tmp_path):
    path = _pipeline(tmp_path)
    text = path.read_text()
    spec = yaml.safe_load(text)
    spec["model"]["params"].update(eta0="@ETA0@", t0="@T0@", loss="logistic",
                                   learning_rate="inverse")
    spec["data"]["generate"]["nb"]["params"]["flip"] = "@FLIP@"
    spec["data"]["generate"]["nb"]["n_samples"] = "@N@"
    text = yaml.safe_dump(spec)
    for mark, value in {"@ETA0@": "1e3", "@T0@": "1E+2", "@FLIP@": "5e-2", "@N@": "6e2"}.items():
        text = text.replace(f"'{mark}'", value)      # unquoted, as a user writes it
    assert "eta0: 1e3" in text and "flip: 5e-2" in text
    assert yaml.safe_load(text)["model"]["params"]["eta0"] == "1e3"   # YAML 1.1: a string
    path.write_text(text)
    loaded, _ = load_pipeline(path)
    assert loaded.model.params["eta0"] == 1000 and loaded.model.params["t0"] == 100
    assert loaded.model.params["loss"] == "logistic"
    assert loaded.data.generate["nb"].params == {"n_features": 4, "flip": 0.05}
    assert loaded.data.generate["nb"].n_samples == 600
    r = CliRunner().invoke(main, ["run", str(path), "-q", "--scheduler", "sync"])
    assert r.exit_code == 0, r.output
    import xarray as xr

    assert xr.open_zarr(tmp_path / "data" / "nb.zarr").attrs["generator_params"]["flip"] \
        == 0.05
    assert ok.load(tmp_path / "out" / "model.zarr").get_params()["eta0"] == 1000


# ------------------------------------------------------------------------- train like run
def _train_args(tmp_path, *extra):
    from ooc_kernels.data.catalog import register_dataset

    cat = tmp_path / "c.yaml"
    if not cat.exists():
        store = ok.make_dataset("nonlinear_binary", tmp_path / "data" / "nb.zarr", 1200,
                                chunk_size=100, n_features=3, progress=False)
        register_dataset(cat, "nb", store)
    return ["train", "--catalog", str(cat), "--entry", "nb", "-p", "n_features=256",
            "-p", "block_size=32", "-p", "batch_size=16", "-p", "random_state=0",
            "-p", "max_iter=3", "-p", "tol=null", "--scheduler", "sync", "-q", *extra]


def test_train_unknown_param_lists_the_valid_keys_like_the_pipeline(tmp_path):
    r = CliRunner().invoke(main, _train_args(tmp_path, "-p", "n_feature=1024", "--out",
                                             str(tmp_path / "m.zarr")))
    assert r.exit_code == 1
    assert "TypeError" not in r.output
    valid = ", ".join(sorted(ok.DSGClassifier().get_params()))
    assert "n_features, " in valid and "alpha, " in valid
    assert r.output.strip() == (
        "Error: ValidationError: unknown hyperparameter '-p n_feature' for DSGClassifier; "
        f"did you mean 'n_features'? valid keys: {valid}.")
    path = _pipeline(tmp_path)
    spec = yaml.safe_load(path.read_text())
    spec["model"]["params"]["n_feature"] = 1024
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(PipelineConfigError, match=r"unknown key 'model.params.n_feature' for "
                                                  r"DSGClassifier; did you mean 'n_features'\? "
                                                  r"valid keys: alpha, average, bandwidth, "):
        load_pipeline(path)


def test_train_refuses_an_existing_output_unless_overwrite(tmp_path):
    out = tmp_path / "m.zarr"
    assert CliRunner().invoke(main, _train_args(tmp_path, "--out", str(out))).exit_code == 0
    first = ok.load(out).coef_.copy()
    r = CliRunner().invoke(main, _train_args(tmp_path, "-p", "eta0=5", "--out", str(out)))
    assert r.exit_code == 1
    assert "already exists; pass --overwrite" in r.output
    np.testing.assert_array_equal(ok.load(out).coef_, first)          # untouched
    r = CliRunner().invoke(main, _train_args(tmp_path, "-p", "eta0=5", "--out", str(out),
                                             "--overwrite"))
    assert r.exit_code == 0, r.output
    assert ok.load(out).get_params()["eta0"] == 5
    assert not np.array_equal(ok.load(out).coef_, first)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml", "data", "m.zarr"]


def test_train_no_resume_never_replaces_a_folder_that_is_not_a_checkpoint(tmp_path):
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "notes.txt").write_text("keep me")
    r = CliRunner().invoke(main, _train_args(tmp_path, "--out", str(tmp_path / "m.zarr"),
                                             "--checkpoint", str(ck), "--no-resume"))
    assert r.exit_code == 1
    assert r.output.strip() == (
        f"Error: ForeignPathError: refusing to replace '{ck}': it is a folder that is not a "
        "Zarr store written by ooc_kernels, not an ooc_kernels checkpoint, and ooc_kernels "
        "only ever replaces its own. Choose another path, or move or remove what is there "
        "yourself if it is no longer needed.")
    assert os.listdir(ck) == ["notes.txt"] and (ck / "notes.txt").read_text() == "keep me"
    assert not (tmp_path / "m.zarr").exists()


def test_predict_refuses_an_existing_output_unless_overwrite_and_then_only_its_own(tmp_path):
    import xarray as xr

    model = tmp_path / "m.zarr"
    assert CliRunner().invoke(main, _train_args(tmp_path, "--out", str(model))).exit_code == 0
    predict = ["predict", str(model), "--catalog", str(tmp_path / "c.yaml"), "--entry", "nb",
               "--scheduler", "sync", "-q", "--out"]
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    (tmp_path / "file.txt").write_text("keep me too")
    for out in (mine, tmp_path / "file.txt", model):
        r = CliRunner().invoke(main, predict + [str(out)])
        assert r.exit_code == 1
        assert f"Error: DatasetExistsError: the output '{out}' already exists; pass " \
               "--overwrite to replace it" in r.output
        r = CliRunner().invoke(main, predict + [str(out), "--overwrite"])
        assert r.exit_code == 1
        assert f"Error: ForeignPathError: refusing to replace '{out}'" in r.output
        assert "not an ooc_kernels prediction store" in r.output
    assert os.listdir(mine) == ["notes.txt"] and (mine / "notes.txt").read_text() == "keep me"
    assert (tmp_path / "file.txt").read_text() == "keep me too"
    assert ok.load(model).n_features_in_ == 3                       # the model is intact
    preds = tmp_path / "p.zarr"
    assert CliRunner().invoke(main, predict + [str(preds)]).exit_code == 0
    assert CliRunner().invoke(main, predict + [str(preds)]).exit_code == 1
    r = CliRunner().invoke(main, predict + [str(preds), "--overwrite"])
    assert r.exit_code == 0, r.output                               # its own: replaced
    with xr.open_zarr(preds) as ds:
        assert ds.prediction.shape == (1200,)


@pytest.mark.parametrize("key, name", [("model", "model.zarr"),
                                       ("prediction store", "predictions.zarr")])
def test_pipeline_never_replaces_a_users_folder_at_its_outputs(tmp_path, key, name):
    path = _pipeline(tmp_path)
    mine = tmp_path / "out" / name
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("keep me")
    r = CliRunner().invoke(main, ["run", str(path), "--scheduler", "sync", "-q"])
    assert r.exit_code == 1
    assert f"refusing to replace '{mine}': it is a folder that is not a Zarr store written " \
           f"by ooc_kernels, not an ooc_kernels {key}" in r.output
    assert os.listdir(mine) == ["notes.txt"] and (mine / "notes.txt").read_text() == "keep me"
    assert sorted(os.listdir(tmp_path / "out")) == [name]       # refused before the fit


def test_pipeline_never_replaces_a_users_file_at_its_metrics_path(tmp_path):
    path = _pipeline(tmp_path)
    mine = tmp_path / "out" / "metrics.json"
    mine.parent.mkdir()
    mine.write_text('{"my": "results"}')
    r = CliRunner().invoke(main, ["run", str(path), "--scheduler", "sync", "-q"])
    assert r.exit_code == 1
    assert f"refusing to replace '{mine}': it is a file that is not an ooc_kernels metrics " \
           "file" in r.output
    assert mine.read_text() == '{"my": "results"}'
    assert sorted(os.listdir(tmp_path / "out")) == ["metrics.json"]   # refused before the fit


def test_evaluate_out_refuses_an_existing_file_unless_overwrite_and_then_only_its_own(
        tmp_path):
    model = tmp_path / "m.zarr"
    assert CliRunner().invoke(main, _train_args(tmp_path, "--out", str(model))).exit_code == 0
    evaluate = ["evaluate", str(model), "--catalog", str(tmp_path / "c.yaml"), "--entry", "nb",
                "--scheduler", "sync", "-q", "--out"]
    mine = tmp_path / "notes.json"
    mine.write_text('{"my": "results"}')
    folder = tmp_path / "folder"
    folder.mkdir()
    link = tmp_path / "link.json"
    link.symlink_to(mine)
    for out, what in ((mine, "a file that is not an ooc_kernels metrics file"),
                      (folder, "a folder"), (link, "a symbolic link")):
        r = CliRunner().invoke(main, evaluate + [str(out)])
        assert r.exit_code == 1
        assert f"Error: DatasetExistsError: '{out}' already exists; pass overwrite=True " \
               "(--overwrite) to replace it" in r.output
        r = CliRunner().invoke(main, evaluate + [str(out), "--overwrite"])
        assert r.exit_code == 1
        assert f"Error: ForeignPathError: refusing to replace '{out}': it is {what}" in r.output
    assert mine.read_text() == '{"my": "results"}' and link.is_symlink()
    assert os.listdir(folder) == []
    own = tmp_path / "metrics.json"
    assert CliRunner().invoke(main, evaluate + [str(own)]).exit_code == 0
    first = json.loads(own.read_text())
    assert first["ooc_kernels_file"] == "metrics" and "accuracy" in first
    assert CliRunner().invoke(main, evaluate + [str(own)]).exit_code == 1
    own.write_text(json.dumps({**first, "accuracy": -1.0}))
    r = CliRunner().invoke(main, evaluate + [str(own), "--overwrite"])
    assert r.exit_code == 0, r.output                                # its own: replaced
    assert json.loads(own.read_text()) == first


def test_train_resume_needs_checkpoint(tmp_path):
    r = CliRunner().invoke(main, _train_args(tmp_path, "--out", str(tmp_path / "m.zarr"),
                                             "--resume"))
    assert r.exit_code == 2 and "--resume needs --checkpoint PATH" in r.output
    assert not (tmp_path / "m.zarr").exists()


@pytest.mark.parametrize("out, checkpoint", [("same.zarr", "same.zarr"),
                                              ("m.zarr", "m.zarr/ck.zarr"),
                                              ("ck.zarr/m.zarr", "ck.zarr"),
                                              ("m.zarr", "./sub/../m.zarr")])
def test_train_refuses_a_checkpoint_at_or_inside_the_output_before_the_fit(tmp_path, out,
                                                                          checkpoint,
                                                                          monkeypatch):
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(main, _train_args(tmp_path, "--out", out, "--checkpoint",
                                             checkpoint))
    assert r.exit_code == 2 and "are the same path or one lies inside the other" in r.output
    assert sorted(os.listdir(tmp_path)) == ["c.yaml", "data", "sub"]  # nothing written


def _interrupt_after_rounds(monkeypatch, n_rounds):
    """Ctrl-C between two rounds of the fit, right after round ``n_rounds`` (the fits below
    have at least one round per epoch, 3 epochs: round 3 comes before the final write)."""
    from ooc_kernels.estimators._checkpointing import CheckpointWriter

    real = CheckpointWriter.__call__

    def interrupted(self, state, info):
        real(self, state, info)
        if self.rounds == n_rounds:
            raise KeyboardInterrupt

    monkeypatch.setattr(CheckpointWriter, "__call__", interrupted)


def test_train_interrupted_then_same_command_resumes(tmp_path, monkeypatch):
    out, ck = tmp_path / "m.zarr", tmp_path / "ck.zarr"
    args = _train_args(tmp_path, "--out", str(out), "--checkpoint", str(ck),
                       "--checkpoint-every", "2")
    _interrupt_after_rounds(monkeypatch, 3)              # last checkpoint: after round 2
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 130
    assert r.stderr.strip() == ("interrupted: re-running the same command resumes from the "
                                f"last checkpoint, {str(ck)!r}")
    assert "Aborted!" not in r.output and not out.exists()
    from ooc_kernels.parallel.checkpoint import read_checkpoint

    position = read_checkpoint(ck).meta["position"]        # a checkpoint part way
    assert (0, 0) < (position["epoch"], position["round"]) < (3, 0)
    monkeypatch.undo()
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    straight = tmp_path / "straight.zarr"
    assert CliRunner().invoke(main, _train_args(tmp_path, "--out", str(straight))
                              ).exit_code == 0
    np.testing.assert_array_equal(ok.load(out).coef_, ok.load(straight).coef_)


def test_train_interrupted_without_checkpoint_says_so(tmp_path, monkeypatch):
    def boom(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ok.DSGClassifier, "fit", boom)
    r = CliRunner().invoke(main, _train_args(tmp_path, "--out", str(tmp_path / "m.zarr")))
    assert r.exit_code == 130
    assert "no --checkpoint was given" in r.stderr and "--checkpoint PATH" in r.stderr


def test_run_interrupted_then_same_command_resumes(tmp_path, monkeypatch):
    path = _pipeline(tmp_path)
    args = ["run", str(path), "-q", "--scheduler", "sync"]
    spec = yaml.safe_load(path.read_text())
    spec["fit"] = {"checkpoint_every": 1}
    path.write_text(yaml.safe_dump(spec))
    _interrupt_after_rounds(monkeypatch, 2)
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 130
    ck = tmp_path / "out" / "checkpoint.zarr"
    assert r.stderr.strip() == ("interrupted: re-running the same command resumes from the "
                                f"last checkpoint, {str(ck)!r}")
    assert not (tmp_path / "out" / "model.zarr").exists()
    monkeypatch.undo()
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    resumed = ok.load(tmp_path / "out" / "model.zarr")
    spec["save"]["output_dir"] = "straight"
    path.write_text(yaml.safe_dump(spec))
    assert CliRunner().invoke(main, args).exit_code == 0
    np.testing.assert_array_equal(resumed.coef_,
                                  ok.load(tmp_path / "straight" / "model.zarr").coef_)


def test_run_interrupted_by_a_real_sigint(tmp_path):
    """Ctrl-C (SIGINT) in a real process: one line on stderr, exit status 130."""
    import signal
    import subprocess

    path = _pipeline(tmp_path)
    spec = yaml.safe_load(path.read_text())
    spec["data"]["generate"]["nb"].update(n_samples=6000, chunk_size=100)
    # far longer than the test waits (300 epochs take 97 s), so the signal lands mid-fit
    spec["model"]["params"].update(n_features=1024, max_iter=100_000, tol=None)
    spec["fit"] = {"checkpoint_every": 1}
    path.write_text(yaml.safe_dump(spec))
    env = dict(os.environ, OOC_KERNELS_PROGRESS="0")
    # A shell without job control starts background commands with SIGINT ignored, and
    # the child inherits that (CI started as `cmd &` did: the run never saw the signal);
    # Ctrl-C is what is tested, so the child gets the default disposition Python needs.
    proc = subprocess.Popen([sys.executable, "-m", "ooc_kernels.cli", "run", str(path), "-q",
                             "--scheduler", "sync"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        _interrupt_and_check(proc, tmp_path / "out" / "checkpoint.zarr")
    finally:  # never leave the fit running past a failed assertion
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _interrupt_and_check(proc, ck):
    import signal
    import time

    from ooc_kernels.parallel.checkpoint import read_checkpoint

    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        try:
            if ck.exists() and read_checkpoint(ck) is not None:
                break
        except Exception:                                      # being swapped in right now
            pass
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == (
        f"interrupted: re-running the same command resumes from the last checkpoint, "
        f"{str(ck)!r}")
    assert "Traceback" not in err and "Aborted!" not in err


def _small_entry(tmp_path):
    cat = tmp_path / "c.yaml"
    r = CliRunner().invoke(main, ["data", "make", "synthetic_krr_2d", "--n", "200", "--out",
                                  str(tmp_path / "d"), "--chunk-size", "100", "--catalog",
                                  str(cat), "--quiet"])
    assert r.exit_code == 0, r.output
    return cat, "synthetic_krr_2d"


def test_evaluate_refuses_the_estimators_it_has_no_metrics_for(tmp_path):
    from ooc_kernels.evaluation import evaluate
    from ooc_kernels.exceptions import ValidationError

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int)
    small = dict(n_features=256, max_iter=2, tol=None, random_state=0, scheduler="sync",
                 progress=False)
    det = ok.DSGOneClassSVM(**small).fit(X)
    with pytest.raises(ValidationError, match=r"evaluate scores classifiers \(accuracy.*\) "
                                              r"and regressors \(r2, rmse, mae\); "
                                              r"DSGOneClassSVM is a novelty detector"):
        evaluate(det, X, y)
    ratio = ok.DSGDensityRatio(**small).fit(X, X + 1.0)
    with pytest.raises(ValidationError, match=r"DSGDensityRatio is a density-ratio estimator"):
        evaluate(ratio, X, y)
    # the command: one line, exit status 1, no metrics
    cat, entry = _small_entry(tmp_path)
    det.save(tmp_path / "det.zarr")
    r = CliRunner().invoke(main, ["evaluate", str(tmp_path / "det.zarr"), "--catalog",
                                  str(cat), "--entry", entry, "-q"])
    assert r.exit_code == 1
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.output
    assert "ValidationError: evaluate scores classifiers" in lines[0]
    assert "DSGOneClassSVM is a novelty detector" in lines[0]


def test_train_refuses_a_two_sample_estimator_before_any_work(tmp_path):
    cat, entry = _small_entry(tmp_path)
    r = CliRunner().invoke(main, ["train", "--catalog", str(cat), "--entry", entry,
                                  "--estimator", "DSGDensityRatio", "-p", "max_iter=2",
                                  "--out", str(tmp_path / "m.zarr"), "-q"])
    assert r.exit_code == 1
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.output
    assert ("ValidationError: DSGDensityRatio learns from two samples, fit(X_p, X_q), and "
            "train fits one catalog entry") in lines[0]
    assert not (tmp_path / "m.zarr").exists()

