"""Saving and loading models: Zarr + JSON (no pickle), identical predictions, atomic."""

import json

import numpy as np
import pytest
import zarr

import ooc_kernels as ok
from ooc_kernels.estimators.persistence import FORMAT_VERSION
from ooc_kernels.exceptions import ModelFormatError

SMALL = dict(n_features=256, block_size=32, batch_size=8, max_iter=2, tol=None, random_state=3,
             scheduler="sync")


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(120, 3))
    return X, np.where(X[:, 0] * X[:, 2] > 0, "yes", "no")


@pytest.mark.parametrize("make", [
    lambda: ok.DSGClassifier(**SMALL),
    lambda: ok.DSGClassifier(loss="softmax", **SMALL),
    lambda: ok.DSGRegressor(**SMALL),
])
def test_round_trip_gives_identical_predictions(tmp_path, make):
    X, labels = _data()
    y = labels if isinstance(make(), ok.DSGClassifier) else X[:, 0] ** 2
    est = make().fit(X, y)
    est.save(tmp_path / "m.zarr")
    loaded = ok.load(tmp_path / "m.zarr")
    assert type(loaded) is type(est)
    runtime = ("scheduler", "progress")        # where a model runs is not saved with it
    assert {k: v for k, v in loaded.get_params().items() if k not in runtime} == \
        {k: v for k, v in est.get_params().items() if k not in runtime}
    assert loaded.scheduler is None
    Xt = np.random.default_rng(5).normal(size=(40, 3))
    np.testing.assert_array_equal(loaded.predict(Xt), est.predict(Xt))
    if hasattr(est, "decision_function"):
        np.testing.assert_array_equal(loaded.decision_function(Xt), est.decision_function(Xt))
    # training can continue from a loaded model exactly as from the original
    est.partial_fit(X, y)
    loaded.partial_fit(X, y)
    np.testing.assert_array_equal(loaded.coef_, est.coef_)


def test_saved_layout_is_zarr_and_json_without_pickle(tmp_path):
    X, y = _data()
    ok.DSGClassifier(**SMALL).fit(X, y).save(tmp_path / "m.zarr")
    group = zarr.open_group(str(tmp_path / "m.zarr"), mode="r")
    meta = group.attrs["ooc_kernels"]
    json.dumps(meta)                                        # plain JSON
    assert meta["format_version"] == FORMAT_VERSION
    assert meta["library_version"] == ok.__version__
    assert meta["estimator"] == "DSGClassifier"                # its registered name
    assert meta["base"]["classes"]["values"] == ["no", "yes"]
    assert "scheduler" not in meta["params"] and "progress" not in meta["params"]
    assert set(group.array_keys()) == {"coef"}
    blobs = b"".join(p.read_bytes() for p in (tmp_path / "m.zarr").rglob("*") if p.is_file())
    assert b"pickle" not in blobs and b"\x80\x04\x95" not in blobs   # no pickle protocol 4


def test_failed_save_leaves_the_previous_model_intact(tmp_path, monkeypatch):
    X, y = _data()
    first = ok.DSGClassifier(**SMALL).fit(X, y)
    first.save(tmp_path / "m.zarr")
    second = ok.DSGClassifier(**dict(SMALL, random_state=9)).fit(X, y)

    def broken(*args, **kwargs):                       # fails half way through the write
        raise OSError("disk full")

    monkeypatch.setattr(zarr.Group, "create_array", broken)
    with pytest.raises(OSError, match="disk full"):
        second.save(tmp_path / "m.zarr")
    monkeypatch.undo()
    np.testing.assert_array_equal(ok.load(tmp_path / "m.zarr").coef_, first.coef_)
    assert [p.name for p in tmp_path.iterdir()] == ["m.zarr"]   # no temporary left behind


def test_save_refuses_to_replace_something_that_is_not_a_model(tmp_path):
    X, y = _data()
    (tmp_path / "important").mkdir()
    (tmp_path / "important" / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not an ooc_kernels model"):
        ok.DSGClassifier(**SMALL).fit(X, y).save(tmp_path / "important")
    assert (tmp_path / "important" / "notes.txt").read_text() == "keep me"


def test_load_errors(tmp_path):
    with pytest.raises(ModelFormatError, match="does not exist"):
        ok.load(tmp_path / "missing.zarr")
    (tmp_path / "plain").mkdir()
    with pytest.raises(ModelFormatError, match="is not an ooc_kernels model"):
        ok.load(tmp_path / "plain")
    X, y = _data()
    ok.DSGClassifier(**SMALL).fit(X, y).save(tmp_path / "m.zarr")
    group = zarr.open_group(str(tmp_path / "m.zarr"), mode="r+")
    meta = dict(group.attrs["ooc_kernels"])
    meta["format_version"] = FORMAT_VERSION + 1
    group.attrs["ooc_kernels"] = meta
    with pytest.raises(ModelFormatError, match="Upgrade ooc_kernels"):
        ok.load(tmp_path / "m.zarr")


def test_unfitted_estimator_cannot_be_saved(tmp_path):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError, match="not fitted yet"):
        ok.DSGRegressor().save(tmp_path / "m.zarr")


@pytest.mark.parametrize("key,value", [("scheduler", "tcp://attacker.example:8786"),
                                       ("progress", True)])
def test_a_model_file_cannot_choose_the_scheduler(tmp_path, key, value):
    """Issue 7, item 8: ok.load passed the file's params to the constructor, so an edited
    model file could make score() connect to any scheduler.  Such a file is refused; a
    loaded model runs where its user says (scheduler=None)."""
    X, labels = _data()
    ok.DSGClassifier(**SMALL).fit(X, labels).save(tmp_path / "m.zarr")
    loaded = ok.load(tmp_path / "m.zarr")
    assert loaded.scheduler is None and loaded.progress is None
    group = zarr.open_group(str(tmp_path / "m.zarr"), mode="r+")
    meta = dict(group.attrs["ooc_kernels"])
    meta["params"] = dict(meta["params"], **{key: value})
    group.attrs["ooc_kernels"] = meta
    with pytest.raises(ModelFormatError, match=rf"sets \['{key}'\].*may not choose"):
        ok.load(tmp_path / "m.zarr")
    meta["params"] = dict(meta["params"], n_feature=3)
    meta["params"].pop(key)
    group.attrs["ooc_kernels"] = meta
    with pytest.raises(ModelFormatError, match=r"unknown hyperparameter\(s\) \['n_feature'\]"):
        ok.load(tmp_path / "m.zarr")


DATA = __import__("pathlib").Path(__file__).parent / "data"


def test_models_saved_by_version_0_1_load_with_identical_predictions():
    """Nothing lost: models of format 1 (written by ooc_kernels 0.1.0, before the registry)
    load through their family's upgrade, and predict exactly what 0.1.0 predicted."""
    expected = np.load(DATA / "dsg_classifier_v0.1.0_expected.npz")
    clf = ok.load(DATA / "dsg_classifier_v0.1.0.zarr")
    assert type(clf).__name__ == "DSGClassifier" and clf.scheduler is None
    np.testing.assert_array_equal(clf.decision_function(expected["X"]), expected["decision"])
    np.testing.assert_array_equal(clf.predict_proba(expected["X"]), expected["proba"])
    np.testing.assert_array_equal(clf.predict(expected["X"]), expected["labels"])
    expected = np.load(DATA / "dsg_regressor_v0.1.0_expected.npz")
    reg = ok.load(DATA / "dsg_regressor_v0.1.0.zarr")
    np.testing.assert_array_equal(reg.predict(expected["X"]), expected["pred"])


def test_unknown_estimator_and_unknown_format_are_refused(tmp_path):
    X, labels = _data()
    ok.DSGClassifier(**SMALL).fit(X, labels).save(tmp_path / "m.zarr")
    group = zarr.open_group(str(tmp_path / "m.zarr"), mode="r+")
    meta = dict(group.attrs["ooc_kernels"])
    group.attrs["ooc_kernels"] = dict(meta, estimator="QuantumSVM")
    with pytest.raises(ModelFormatError, match=r"unknown estimator 'QuantumSVM'; this "
                                               r"installation has \[.*'DSGClassifier'"):
        ok.load(tmp_path / "m.zarr")
    group.attrs["ooc_kernels"] = dict(meta, format_version=0)
    with pytest.raises(ModelFormatError, match=r"unknown model format version 0"):
        ok.load(tmp_path / "m.zarr")
    group.attrs["ooc_kernels"] = dict(meta, base={})
    with pytest.raises(ModelFormatError, match=r"metadata is incomplete or corrupt"):
        ok.load(tmp_path / "m.zarr")
