"""Saving and loading models: Zarr + JSON (no pickle), identical predictions, atomic."""

import json

import numpy as np
import pytest
import zarr

import ooc_kernels as ok
from ooc_kernels.estimators.persistence import FORMAT_VERSION
from ooc_kernels.exceptions import ModelFormatError

from _tamper import edit_attrs, reseal, set_at

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
    """A model file must not choose where a loaded model runs: were ok.load to pass the
    file's params to the constructor, an edited file could make score() connect to any
    scheduler.  Such a file is refused; a loaded model runs where its user says
    (scheduler=None)."""
    X, labels = _data()
    ok.DSGClassifier(**SMALL).fit(X, labels).save(tmp_path / "m.zarr")
    loaded = ok.load(tmp_path / "m.zarr")
    assert loaded.scheduler is None and loaded.progress is None
    group = zarr.open_group(str(tmp_path / "m.zarr"), mode="r+")
    meta = dict(group.attrs["ooc_kernels"])
    meta["params"] = dict(meta["params"], **{key: value})
    group.attrs["ooc_kernels"] = reseal(meta)          # as if written with this content
    with pytest.raises(ModelFormatError, match=rf"sets \['{key}'\].*may not choose"):
        ok.load(tmp_path / "m.zarr")
    meta["params"] = dict(meta["params"], n_feature=3)
    meta["params"].pop(key)
    group.attrs["ooc_kernels"] = reseal(meta)
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
    group.attrs["ooc_kernels"] = reseal(dict(meta, base={}))
    with pytest.raises(ModelFormatError, match=r"base.n_features_in_ must be an integer "
                                               r">= 1, found None"):
        ok.load(tmp_path / "m.zarr")


# ---------------------------------------------------------------- verified loading
@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """One saved model of each kind: binary DSG classifier (standardized), DSG regressor
    and DSPDC classifier, copied by each test before it is edited."""
    root = tmp_path_factory.mktemp("saved")
    X, labels = _data()
    ok.DSGClassifier(**SMALL).fit(X, labels).save(root / "clf.zarr")
    ok.DSGRegressor(**SMALL).fit(X, X[:, 0] ** 2).save(root / "reg.zarr")
    ok.DSPDCClassifier(max_iter=3, tol=1.0, random_state=0, scheduler="sync",
                       work_dir=str(root / "work")).fit(X, labels).save(root / "dspdc.zarr")
    return root


def _copy(saved, name, tmp_path):
    import shutil

    shutil.copytree(saved / f"{name}.zarr", tmp_path / "m.zarr")
    return tmp_path / "m.zarr"


def _edit(path, change, seal=True):
    edit_attrs(path, "ooc_kernels", change, seal=seal)


def _set(*keys, value=None, drop=False, seal=True):
    """An edit of the file's metadata at ``keys`` (set to ``value``, or removed)."""
    return lambda path: _edit(path, set_at(*keys, value=value, drop=drop), seal=seal)


def _old_format(version):
    def change(meta):
        meta["format_version"] = version
        del meta["checksums"]
    return lambda path: _edit(path, change)


def _chunk_files(path, array):
    return sorted(p for p in (path / array).rglob("*") if p.is_file() and p.name != "zarr.json")


def _flip_byte(path):
    chunk = _chunk_files(path, "coef")[0]
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0x01
    chunk.write_bytes(bytes(data))


def _rewrite_value(path):
    arr = zarr.open_array(str(path / "coef"), mode="r+")   # zarr recomputes the chunk CRC
    arr[0, 0, 0] = arr[0, 0, 0] + 1.0


def _as_float32(path):
    values = zarr.open_array(str(path / "coef"), mode="r")[...]
    group = zarr.open_group(str(path), mode="r+")
    del group["coef"]
    group.create_array("coef", data=values.astype(np.float32))


def _add_huge_array(path):
    group = zarr.open_group(str(path), mode="r+")   # metadata only: 2 GiB of fill value
    group.create_array("junk", shape=(2**28,), dtype="float64", chunks=(2**20,))


def _list_huge_array(path):
    _add_huge_array(path)

    def change(meta):
        meta["checksums"]["arrays"]["junk"] = {"shape": [2**28], "dtype": "<f8",
                                               "crc32c": 0}
    _edit(path, change)


def _remove_coef(path):
    import shutil

    shutil.rmtree(path / "coef")


TAMPERED_MODELS = {
    # the metadata, re-sealed: what the hyperparameter and fitted checks refuse
    "no params": ("clf", _set("params", drop=True), r"'params' must be a mapping, found None"),
    "no base": ("clf", _set("base", drop=True), r"'base' must be a mapping, found None"),
    "format 1 on a DSG model": ("clf", _old_format(1),
                                r"does not have the layout of model format 1 \(KeyError"),
    "format 1 on a DSPDC model": ("dspdc", _old_format(1),
                                  r"model format 1 holds DSG models only, not "
                                  r"DSPDCClassifier"),
    "format 2 with checksums": ("clf", _set("format_version", value=2),
                                r"says model format 2, which has no checksums, but carries "
                                r"'checksums'"),
    "format version as text": ("clf", _set("format_version", value="3"),
                               r"unknown model format version '3'"),
    "estimator as a list": ("clf", _set("estimator", value=["DSGClassifier"]),
                            r"unknown estimator \['DSGClassifier'\]"),
    "chunk_size=0": ("clf", _set("params", "chunk_size", value=0),
                     r"hyperparameters are invalid: The 'chunk_size' parameter of "
                     r"DSGClassifier must be .* Got 0 instead"),
    "chunk_size=-5": ("reg", _set("params", "chunk_size", value=-5),
                      r"hyperparameters are invalid: The 'chunk_size' parameter of "
                      r"DSGRegressor must be .* Got -5 instead"),
    "alpha as a list": ("reg", _set("params", "alpha", value=[1]),
                        r"hyperparameters are invalid: The 'alpha' parameter"),
    "short x_shift": ("clf", _set("fitted", "config", "x_shift", value=[0.0, 0.0]),
                      r"has x_shift of length 2; it must be 3 finite numbers"),
    "x_scale zeros": ("reg", _set("fitted", "config", "x_scale", value=[0.0, 0.0, 0.0]),
                      r"has x_scale \[0.0, 0.0, 0.0\]; every scale must be > 0"),
    "empty classes": ("clf", _set("base", "classes", "values", value=[]),
                      r"base.classes must be at least two distinct labels in sorted order, "
                      r"found \[\]"),
    "object classes": ("clf", _set("base", "classes", value={"values": [{"a": 1}, {"b": 2}],
                                                              "dtype": "|O"}),
                       r"base.classes must be labels \(strings or numbers\), found \{'a': 1\}"),
    "classes as text": ("clf", _set("base", "classes", value="no,yes"),
                        r"base.classes must be a mapping with a list 'values'"),
    "three classes, one column": ("clf", _set("base", "classes", "values",
                                              value=["maybe", "no", "yes"]),
                                  r"fitted.config has target 'binary' with 1 output\(s\)"),
    "classes on a regressor": ("reg", _set("base", "classes",
                                           value={"values": [0, 1], "dtype": "<i8"}),
                               r"gives classes to DSGRegressor, a regressor"),
    "no features": ("clf", _set("base", "n_features_in_", value=0),
                    r"base.n_features_in_ must be an integer >= 1, found 0"),
    "other n_features_in_": ("clf", _set("base", "n_features_in_", value=5),
                             r"has n_features_in=3, the model 5"),
    "negative epochs done": ("clf", _set("base", "n_epochs_done", value=-1),
                             r"base.n_epochs_done must be an integer >= 0, found -1"),
    "zero bandwidth": ("reg", _set("fitted", "config", "bandwidth", value=0.0),
                       r"has bandwidth=0.0; it must be a positive finite number"),
    "fitted as a list": ("clf", _set("fitted", value=[]),
                         r"'fitted' must be a mapping, found \[\]"),
    # damage: what the checksums catch
    "metadata edited without its checksum": (
        "clf", _set("params", "alpha", value=0.5, seal=False),
        r"the metadata fails its CRC32C checksum \(stored \d+, computed \d+\)"),
    "no checksums": ("clf", _set("checksums", drop=True),
                     r"the metadata has no valid 'checksums' entry"),
    "a byte flipped in a coef chunk": ("clf", _flip_byte,
                                       r"array 'coef' cannot be read: a chunk is missing, "
                                       r"truncated or fails its CRC32C checksum"),
    "coef rewritten through zarr": ("reg", _rewrite_value,
                                    r"array 'coef' fails its CRC32C checksum \(stored \d+, "
                                    r"computed \d+\)"),
    "coef as float32": ("reg", _as_float32,
                        r"array 'coef' has shape \(8, 32, 1\) and dtype '<f4', its checksum "
                        r"entry says \(8, 32, 1\) and '<f8'"),
    "coef removed": ("clf", _remove_coef,
                     r"array\(s\) \['coef'\] listed in its checksums are missing"),
    "an extra huge array": ("clf", _add_huge_array,
                            r"holds array\(s\) \['junk'\] that its checksums do not list"),
    "an extra huge array, listed": ("clf", _list_huge_array,
                                    r"holds array\(s\) \['junk'\] that a DSGClassifier model "
                                    r"does not have"),
}


@pytest.mark.parametrize("case", sorted(TAMPERED_MODELS))
def test_tampered_or_damaged_model_files_are_refused_with_the_reason(saved, tmp_path, case):
    """Every edit or damage of a model file is a ModelFormatError that says what is wrong,
    never a raw error or a model that predicts something else; an array that does not
    belong to the model is refused without being read."""
    kind, tamper, message = TAMPERED_MODELS[case]
    path = _copy(saved, kind, tmp_path)
    ok.load(path)                                         # loads before it is touched
    tamper(path)
    with pytest.raises(ModelFormatError, match=message):
        ok.load(path)


def test_models_of_format_2_without_checksums_still_load(saved, tmp_path):
    """A model written before checksums (format 2: the same metadata, no 'checksums')
    loads with every other check and predicts what it predicted."""
    path = _copy(saved, "clf", tmp_path)
    X = np.random.default_rng(7).normal(size=(30, 3))
    expected = ok.load(path).decision_function(X)
    _old_format(2)(path)
    np.testing.assert_array_equal(ok.load(path).decision_function(X), expected)
    _set("params", "chunk_size", value=0)(path)          # still validated
    with pytest.raises(ModelFormatError, match=r"The 'chunk_size' parameter"):
        ok.load(path)
