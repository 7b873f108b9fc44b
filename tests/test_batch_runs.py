"""Batch runs: what a pipeline run without a terminal writes to its log, what its final JSON
names, which sets it scores, and the chunk-by-chunk scoring and predictions it relies on."""

import json
import logging

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from sklearn.metrics import (accuracy_score, log_loss, mean_absolute_error,
                             mean_squared_error, r2_score)

import ooc_kernels as ok
from ooc_kernels.cli import main
from ooc_kernels.exceptions import PipelineConfigError
from ooc_kernels.pipeline import load_pipeline


def _pipeline(tmp_path, evaluate=None):
    from ooc_kernels.data.catalog import register_dataset

    spec = {
        "name": "tiny",
        "data": {"catalog": "cat.yaml", "train": "nb", "test": "nb_test", "generate": {
            "nb": {"generator": "nonlinear_binary", "n_samples": 600, "chunk_size": 100,
                   "params": {"n_features": 4}},
            "nb_test": {"generator": "nonlinear_binary", "n_samples": 200, "split": "test",
                        "random_state": 1, "chunk_size": 50, "params": {"n_features": 4}}}},
        "model": {"estimator": "DSGClassifier",
                  "params": {"n_features": 256, "max_iter": 3, "tol": None,
                             "random_state": 0}},
        "save": {"output_dir": "out"},
    }
    if evaluate is not None:
        spec["evaluate"] = evaluate
    register_dataset(tmp_path / "cat.yaml", "nb", tmp_path / "data" / "nb.zarr")
    register_dataset(tmp_path / "cat.yaml", "nb_test", tmp_path / "data" / "nb_test.zarr")
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _lines(text):
    return [line for line in text.splitlines() if " ooc-kernels: " in line]


def test_a_run_without_a_terminal_logs_stages_and_epochs_and_names_its_outputs(
        tmp_path, monkeypatch):
    monkeypatch.delenv("OOC_KERNELS_PROGRESS", raising=False)
    path = _pipeline(tmp_path)
    r = CliRunner().invoke(main, ["run", str(path), "--scheduler", "sync"])
    assert r.exit_code == 0, r.output
    lines = _lines(r.stderr)
    # one timestamped line per stage and per epoch, in order, on standard error only
    expected = ["pipeline tiny: data stage", "pipeline tiny: train set 'nb': 600 rows",
                "pipeline tiny: test set 'nb_test': 200 rows",
                "pipeline tiny: fit stage, DSGClassifier(max_iter=3, n_features=256",
                "DSGClassifier: fit started, 3 epochs of 6 chunks",
                "DSGClassifier: epoch 1/3 done (6 chunks", "DSGClassifier: epoch 2/3 done",
                "DSGClassifier: epoch 3/3 done", "pipeline tiny: fit done in",
                "pipeline tiny: saved the model to", "pipeline tiny: evaluate stage, scoring "
                "the test set", "score test: 4/4 chunks (100%)",
                "predictions test: 4/4 chunks (100%)",
                "pipeline tiny: saved the test set's predictions to",
                "pipeline tiny: saved the metrics to"]
    found = iter(lines)
    for part in expected:
        assert any(part in line for line in found), (part, lines)
    assert all(line[:4].isdigit() and line[4] == "-" for line in lines)
    assert not _lines(r.stdout) and len(r.stdout.strip().splitlines()) == 1
    assert sum(": epoch " in line for line in lines) == 3
    # the final JSON names what was written; the training set is not scored unless asked
    metrics = json.loads(r.stdout)
    out = (tmp_path / "out").resolve()
    assert metrics["outputs"] == {"model": str(out / "model.zarr"),
                                  "metrics": str(out / "metrics.json"),
                                  "predictions": str(out / "predictions.zarr")}
    assert all((out / name).exists() for name in ("model.zarr", "metrics.json",
                                                  "predictions.zarr"))
    assert not any(key.startswith("train_") for key in metrics)
    assert json.loads((out / "metrics.json").read_text())["outputs"] == metrics["outputs"]


def test_quiet_and_a_terminal_write_no_log_lines(tmp_path, monkeypatch):
    monkeypatch.delenv("OOC_KERNELS_PROGRESS", raising=False)
    path = _pipeline(tmp_path)
    r = CliRunner().invoke(main, ["run", str(path), "--scheduler", "sync", "--quiet"])
    assert r.exit_code == 0, r.output
    assert r.stderr == "" and "outputs" in json.loads(r.stdout)
    # progress bars shown (as on a terminal): bars, not log lines
    monkeypatch.setenv("OOC_KERNELS_PROGRESS", "1")
    r = CliRunner().invoke(main, ["run", str(path), "--scheduler", "sync"])
    assert r.exit_code == 0, r.output
    assert not _lines(r.stderr)
    assert not logging.getLogger("ooc_kernels").handlers  # the command removed its handler


def test_evaluate_train_scores_the_training_set_only_when_asked(tmp_path):
    path = _pipeline(tmp_path, evaluate={"train": True, "predictions": False})
    r = CliRunner().invoke(main, ["run", str(path), "--scheduler", "sync", "--quiet"])
    assert r.exit_code == 0, r.output
    metrics = json.loads(r.stdout)
    model = ok.load(tmp_path / "out" / "model.zarr")
    train = ok.open_dataset(tmp_path / "cat.yaml", "nb")
    X, y = train["X"].values, train["y"].values
    assert metrics["train_accuracy"] == pytest.approx(accuracy_score(y, model.predict(X)),
                                                      abs=1e-12)
    assert metrics["train_log_loss"] == pytest.approx(log_loss(y, model.predict_proba(X)),
                                                      rel=1e-9)
    assert "predictions" not in metrics["outputs"]
    assert not (tmp_path / "out" / "predictions.zarr").exists()


@pytest.mark.parametrize("evaluate, match", [
    ({"train": "sometimes"}, r"key 'evaluate\.train': Input should be a valid boolean"),
    ({"trian": True}, r"unknown key 'evaluate\.trian': remove it or check its spelling"),
])
def test_evaluate_train_is_validated(tmp_path, evaluate, match):
    path = _pipeline(tmp_path, evaluate=evaluate)
    with pytest.raises(PipelineConfigError, match=match):
        load_pipeline(path)


def _fitted(kind, chunk_size=70):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3)).astype("float32")
    if kind == "classifier":
        y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, "yes", "no")
        est = ok.DSGClassifier(n_features=256, max_iter=2, tol=None, chunk_size=chunk_size,
                               random_state=0, scheduler="sync")
    else:
        y = 3.0 * X[:, 0] + np.sin(X[:, 1]) + 1e4  # a large offset: r2 about the mean
        est = ok.DSGRegressor(n_features=256, max_iter=2, tol=None, chunk_size=chunk_size,
                              random_state=0, scheduler="sync")
    return est.fit(X, y), X, y


@pytest.mark.parametrize("scheduler", ["sync", "threads"])
def test_chunked_scores_match_scikit_learn_and_log_their_progress(scheduler, caplog):
    from ooc_kernels.evaluation import evaluate

    clf, X, y = _fitted("classifier")
    clf.set_params(scheduler=scheduler)
    with caplog.at_level(logging.INFO, logger="ooc_kernels"):
        got = evaluate(clf, X, y, progress=None, desc="score demo")
    assert got["accuracy"] == pytest.approx(accuracy_score(y, clf.predict(X)), abs=1e-12)
    assert got["log_loss"] == pytest.approx(log_loss(y, clf.predict_proba(X)), rel=1e-9)
    progress = [r.getMessage() for r in caplog.records if "score demo" in r.getMessage()]
    assert progress and progress[-1] == "score demo: 8/8 chunks (100%)"
    assert len(progress) <= 8

    reg, X, y = _fitted("regressor")
    got = evaluate(reg, X, y, progress=False)
    pred = reg.predict(X).astype(np.float64)
    assert got["r2"] == pytest.approx(r2_score(y, pred), rel=1e-9)
    assert got["rmse"] == pytest.approx(np.sqrt(mean_squared_error(y, pred)), rel=1e-9)
    assert got["mae"] == pytest.approx(mean_absolute_error(y, pred), rel=1e-9)


def test_predictions_are_written_group_by_group_with_progress(tmp_path, caplog):
    import xarray as xr

    from ooc_kernels.evaluation import write_predictions

    clf, X, _ = _fitted("classifier", chunk_size=30)
    ds = xr.Dataset({"X": (("time", "feature"), X)},
                    coords={"time": np.arange(500) * 10}).chunk({"time": 30})
    with caplog.at_level(logging.INFO, logger="ooc_kernels"):
        out = write_predictions(clf, ds, tmp_path / "p.zarr", desc="predictions demo")
    progress = [r.getMessage() for r in caplog.records if "predictions demo" in r.getMessage()]
    assert progress[-1] == "predictions demo: 17/17 chunks (100%)" and len(progress) <= 10
    got = xr.open_zarr(out)
    np.testing.assert_array_equal(got["prediction"].values, clf.predict(X))
    np.testing.assert_array_equal(got["proba"].values, clf.predict_proba(X))
    np.testing.assert_array_equal(got["time"].values, np.arange(500) * 10)
    assert list(got["class"].values) == ["no", "yes"]
    assert got["prediction"].encoding["chunks"] == (30,)


# --------------------------------------------------------------- train's default estimator
def _plain_store(tmp_path, name, y):
    """A store written with plain xarray (no task attribute), registered in cat.yaml."""
    import xarray as xr

    from ooc_kernels.data.catalog import register_dataset

    X = np.random.default_rng(0).normal(size=(len(y), 2)).astype("float32")
    store = tmp_path / f"{name}.zarr"
    xr.Dataset({"X": (("sample", "feature"), X), "y": (("sample",), y)}).chunk(
        {"sample": 100}).to_zarr(store)
    register_dataset(tmp_path / "cat.yaml", name, store)
    return X


def _train(tmp_path, entry, out, *extra):
    return CliRunner().invoke(main, ["train", "--catalog", str(tmp_path / "cat.yaml"),
                                     "--entry", entry, "-p", "n_features=256", "-p",
                                     "max_iter=2", "-p", "random_state=0", "--out",
                                     str(tmp_path / out), "--scheduler", "sync", "--quiet",
                                     *extra])


def test_train_picks_the_regressor_for_an_entry_whose_task_is_regression(tmp_path):
    from ooc_kernels.data.catalog import register_dataset

    store = ok.make_dataset("synthetic_krr_2d", tmp_path / "krr.zarr", 400, chunk_size=100,
                            progress=False)
    register_dataset(tmp_path / "cat.yaml", "krr", store)
    assert ok.open_dataset(tmp_path / "cat.yaml", "krr").attrs["task"] == "regression"
    r = _train(tmp_path, "krr", "default.zarr")
    assert r.exit_code == 0, r.output
    r = _train(tmp_path, "krr", "explicit.zarr", "--estimator", "DSGRegressor")
    assert r.exit_code == 0, r.output
    default, explicit = ok.load(tmp_path / "default.zarr"), ok.load(tmp_path / "explicit.zarr")
    assert type(default) is ok.DSGRegressor
    X = ok.open_dataset(tmp_path / "cat.yaml", "krr")["X"].values
    np.testing.assert_array_equal(default.predict(X), explicit.predict(X))


def test_train_without_a_task_asks_for_the_estimator_when_targets_are_floats(tmp_path):
    _plain_store(tmp_path, "floats", np.linspace(0.0, 1.0, 300))
    r = _train(tmp_path, "floats", "m.zarr")
    assert r.exit_code == 1
    assert "ValidationError: entry 'floats' declares no task and its targets y are floating " \
        "point (float64)" in r.output
    assert "pass --estimator DSGRegressor for regression" in r.output
    assert f"ooc-kernels catalog declare {tmp_path / 'cat.yaml'} floats --task regression" \
        in " ".join(r.output.split())
    assert not (tmp_path / "m.zarr").exists()
    # declaring the task, as the message says, picks the regressor
    r = CliRunner().invoke(main, ["catalog", "declare", str(tmp_path / "cat.yaml"), "floats",
                                  "--task", "regression"])
    assert r.exit_code == 0, r.output
    r = _train(tmp_path, "floats", "m.zarr")
    assert r.exit_code == 0, r.output
    assert type(ok.load(tmp_path / "m.zarr")) is ok.DSGRegressor
    # integer labels without a task: the classifier, as before
    _plain_store(tmp_path, "labels", np.arange(300) % 2)
    r = _train(tmp_path, "labels", "c.zarr")
    assert r.exit_code == 0, r.output
    model = ok.load(tmp_path / "c.zarr")
    assert type(model) is ok.DSGClassifier and list(model.classes_) == [0, 1]


def test_data_make_without_a_terminal_logs_every_tenth_of_the_writing(tmp_path,
                                                                      monkeypatch):
    monkeypatch.delenv("OOC_KERNELS_PROGRESS", raising=False)
    args = ["data", "make", "nonlinear_binary", "--n", "1000", "--chunk-size", "100",
            "--out", str(tmp_path / "d.zarr"), "-p", "n_features=3"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    lines = _lines(r.stderr)
    assert [line.split(": ", 1)[1] for line in lines] == [
        f"nonlinear_binary (train): {k}/10 chunks ({10 * k}%)" for k in range(1, 11)]
    assert r.stdout.strip() == str(tmp_path / "d.zarr")
    r = CliRunner().invoke(main, args[:-4] + ["--out", str(tmp_path / "e.zarr"),
                                              "-p", "n_features=3", "--quiet"])
    assert r.exit_code == 0 and r.stderr == ""


def test_a_resumed_fit_says_where_it_resumed(tmp_path, monkeypatch):
    """A run that resumes from its checkpoint logs where it resumed, not a fresh start."""
    from ooc_kernels.estimators._checkpointing import CheckpointWriter

    monkeypatch.delenv("OOC_KERNELS_PROGRESS", raising=False)
    path = _pipeline(tmp_path)
    spec = yaml.safe_load(path.read_text())
    spec["fit"] = {"checkpoint_every": 1}
    path.write_text(yaml.safe_dump(spec))
    real = CheckpointWriter.__call__

    def interrupted(self, state, info):  # Ctrl-C right after the first round's checkpoint
        real(self, state, info)
        if self.rounds == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(CheckpointWriter, "__call__", interrupted)
    r = CliRunner().invoke(main, ["run", str(path), "--scheduler", "sync"])
    assert r.exit_code == 130, r.output
    monkeypatch.setattr(CheckpointWriter, "__call__", real)
    r = CliRunner().invoke(main, ["run", str(path), "--scheduler", "sync"])
    assert r.exit_code == 0, r.output
    lines = _lines(r.stderr)
    assert any("DSGClassifier: fit resumed from its checkpoint at the start of epoch 2/3 "
               "(6 chunks an epoch)" in line for line in lines), lines
    assert not any("fit started" in line for line in lines)
    assert sum(": epoch " in line for line in lines) == 2  # epochs 2 and 3


def test_a_fit_resumed_within_an_epoch_says_after_which_round(caplog):
    from ooc_kernels.parallel.engine import _epoch_lines

    with caplog.at_level(logging.INFO, logger="ooc_kernels"):
        _epoch_lines(None, "DSPDCRegressor", 4, 10, None, (2, 3))
        _epoch_lines(None, "DSPDCRegressor", 4, 10, "http://dash")
    assert [r.getMessage() for r in caplog.records] == [
        "DSPDCRegressor: fit resumed from its checkpoint in epoch 3/4, after 3 of its rounds "
        "(10 chunks an epoch)",
        "DSPDCRegressor: fit started, 4 epochs of 10 chunks (dashboard: http://dash)"]


def test_the_start_line_counts_in_the_singular_and_says_when_nothing_is_left(caplog):
    from ooc_kernels.parallel.engine import _epoch_lines

    with caplog.at_level(logging.INFO, logger="ooc_kernels"):
        _epoch_lines(None, "DSGClassifier", 1, 1, None)
        _epoch_lines(None, "DSGClassifier", 3, 2, None, (3, 0))   # a finished checkpoint
        _epoch_lines(None, "DSGClassifier", 2, 1, None, (1, 0))
    assert [r.getMessage() for r in caplog.records] == [
        "DSGClassifier: fit started, 1 epoch of 1 chunk",
        "DSGClassifier: fit resumed from its checkpoint, which holds all 3 epochs: nothing "
        "left to run",
        "DSGClassifier: fit resumed from its checkpoint at the start of epoch 2/2 "
        "(1 chunk an epoch)"]
