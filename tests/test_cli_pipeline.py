"""The command line and pipeline files on tiny data."""

import json

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

import ooc_kernels as ok
from ooc_kernels.cli import main
from ooc_kernels.exceptions import PipelineConfigError
from ooc_kernels.pipeline import load_pipeline


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
                             "n_epochs": 3, "random_state": 0}},
        "fit": {"scheduler": "sync"},
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
    result = CliRunner().invoke(main, ["run", str(path), "--quiet"])
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.output.strip().splitlines()[-1])
    assert metrics["n_train"] == 600 and metrics["n_test"] == 200
    assert metrics["test_accuracy"] > 0.7
    on_disk = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert on_disk == metrics
    model = ok.load(tmp_path / "out" / "model.zarr")
    test = ok.open_dataset(tmp_path / "cat.yaml", "nb_test")
    assert model.score(test) == pytest.approx(metrics["test_accuracy"])
    import xarray as xr

    preds = xr.open_zarr(tmp_path / "out" / "predictions.zarr")
    np.testing.assert_array_equal(preds["prediction"].values,
                                  model.predict(test["X"].values))
    # a second run reuses the generated data and gives the same model
    again = CliRunner().invoke(main, ["run", str(path), "--quiet"])
    assert json.loads(again.output.strip().splitlines()[-1])["test_accuracy"] == \
        metrics["test_accuracy"]


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
                             "-p", "n_features=256", "-p", "random_state=0", "--out",
                             str(model), "--scheduler", "sync", "--quiet"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, ["evaluate", str(model), "--catalog", str(cat), "--entry",
                             "synthetic_krr_2d", "--out", str(tmp_path / "m.json"), "-q"])
    assert r.exit_code == 0, r.output
    metrics = json.loads(r.output.strip().splitlines()[-1])
    assert set(metrics) >= {"r2", "rmse", "mae"}
    assert json.loads((tmp_path / "m.json").read_text()) == metrics
    r = runner.invoke(main, ["predict", str(model), "--catalog", str(cat), "--entry",
                             "synthetic_krr_2d", "--out", str(tmp_path / "p.zarr"), "-q"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "p.zarr").exists()


@pytest.mark.parametrize("mutate, match", [
    (lambda s: s.update(fitt={}), r"unknown key 'fitt'"),
    (lambda s: s["model"].update(estimator="SVC"), r"key 'model.estimator'"),
    (lambda s: s["model"]["params"].update(n_featurez=3), r"model.params.n_featurez"),
    (lambda s: s["model"]["params"].update(batch_size=0), r"batch_size must be >= 1"),
    (lambda s: s["data"]["generate"]["nb"].update(n_samples="many"),
     r"data.generate.nb.n_samples"),
    (lambda s: s.pop("save"), r"missing key 'save'"),
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
            "-p", "random_state=0", "-p", "chunks_per_round=2", "-q"]
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
        run_pipeline(path)
    assert not (tmp_path.parent / "elsewhere").exists()
