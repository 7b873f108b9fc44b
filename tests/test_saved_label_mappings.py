"""Hyperparameters that are mappings keyed by labels (``class_weight={0: 1.0, 1: 2.0}``) are
saved, checkpointed and loaded with their keys of the same type; what cannot be saved is
refused with advice about that parameter, and ``ooc-kernels train`` refuses it before the
fit."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import ooc_kernels as ok
from ooc_kernels.cli import main
from ooc_kernels.estimators._param_json import decoded_mapping, json_param
from ooc_kernels.exceptions import ModelFormatError

rng = np.random.default_rng(0)
X = rng.normal(size=(200, 3))
SIDE = (X[:, 0] > 0).astype(int)
LABELS = {  # two classes of each kind the library accepts as labels
    "int": [0, 1],
    "int64": [np.int64(-3), np.int64(4)],
    "uint64": [np.uint64(1), np.uint64(2**40)],
    "float": [0.0, 2.0],
    "float32": [np.float32(-1.0), np.float32(3.0)],
    "bool": [False, True],
    "str": ["a", "b"],
    "np.str_": [np.str_("no"), np.str_("yes")],
}


def _fit(make, labels, **kw):
    y = np.array(labels)[SIDE]
    weights = {labels[0]: 1.0, labels[1]: np.float64(2.5)}
    return make(class_weight=weights, **kw).fit(X, y), y


def _params(est):
    """The hyperparameters a model file keeps (not where tasks run, nor progress bars)."""
    return {k: v for k, v in est.get_params().items() if k not in ("scheduler", "progress")}


def _dsg(**kw):
    return ok.DSGClassifier(n_features=256, max_iter=2, tol=None, random_state=0,
                            progress=False, scheduler="sync", **kw)


def _dspdc(**kw):
    return ok.DSPDCClassifier(max_iter=2, tol=None, random_state=0, progress=False,
                              scheduler="sync", **kw)


@pytest.mark.parametrize("kind", sorted(LABELS))
def test_a_class_weight_keyed_by_labels_is_saved_and_loaded_with_its_key_types(tmp_path,
                                                                                 kind):
    clf, y = _fit(_dsg, LABELS[kind])
    clf.save(tmp_path / "m.zarr")
    back = ok.load(tmp_path / "m.zarr")
    assert _params(back) == _params(clf)
    assert [type(k) for k in back.class_weight] == [type(k) for k in clf.class_weight]
    assert list(back.class_weight) == list(clf.class_weight)
    np.testing.assert_array_equal(back.predict(X), clf.predict(X))


def test_a_dspdc_class_weight_keyed_by_int_labels_is_saved_and_loaded(tmp_path):
    clf, _ = _fit(_dspdc, [0, 1])
    clf.save(tmp_path / "m.zarr")
    back = ok.load(tmp_path / "m.zarr")
    assert _params(back) == _params(clf)
    np.testing.assert_array_equal(back.decision_function(X), clf.decision_function(X))


def test_a_fit_with_a_class_weight_dict_checkpoints_and_resumes(tmp_path):
    ck = tmp_path / "ck.zarr"
    plain, y = _fit(_dsg, [0, 1])
    kept, _ = _fit(_dsg, [0, 1])
    kept.fit(X, y, checkpoint=ck, checkpoint_every=1)
    np.testing.assert_array_equal(kept.decision_function(X), plain.decision_function(X))
    again = _dsg(class_weight={0: 1.0, 1: np.float64(2.5)}).fit(X, y, checkpoint=ck)
    np.testing.assert_array_equal(again.decision_function(X), plain.decision_function(X))


@pytest.mark.parametrize("bad", [
    {"Mapping": "0:1"}, {"Mapping": [[0, "int"]]}, {"Mapping": [[0.5, "int", 1.0]]},
    {"Mapping": [[-1, "<u8", 1.0]]}, {"Mapping": [[0, "<M8[s]", 1.0]]},
    {"Mapping": [[0, "int", 1.0], [0, "int", 2.0]]}, {"Mapping": [[0, "int", [1]]]},
    {"Mapping": [[True, "int", 1.0]]}, {"Mapping": [[300, "|i1", 1.0]]},
])
def test_an_edited_mapping_in_a_model_file_is_refused_naming_it(bad):
    with pytest.raises(ModelFormatError, match=r"m\.zarr: the model file's class_weight="):
        decoded_mapping("class_weight", bad, "m.zarr")


def test_a_mapping_that_looks_like_a_tag_is_saved_tagged():
    value = {"Mapping": 1.0}
    assert decoded_mapping("p", json_param("p", value), "m") == value


def test_what_cannot_be_saved_is_refused_with_advice_for_that_parameter():
    with pytest.raises(ModelFormatError) as err:
        json_param("class_weight", {(0, 1): 1.0})
    message = str(err.value)
    assert "class_weight={(0, 1): 1.0} cannot be saved as JSON: its key (0, 1)" in message
    assert "give class_weight keys that are labels" in message
    assert "random_state" not in message
    with pytest.raises(ModelFormatError, match=r"set random_state to an int seed or None"):
        json_param("random_state", np.random.RandomState(0))


def _train(tmp_path, *params):
    from ooc_kernels.data.catalog import register_dataset

    cat = tmp_path / "c.yaml"
    store = ok.make_dataset("nonlinear_binary", tmp_path / "nb.zarr", 300, chunk_size=100,
                            n_features=3, progress=False)
    register_dataset(cat, "nb", store)
    args = ["train", "--catalog", str(cat), "--entry", "nb", "--scheduler", "sync", "-q",
            "-p", "n_features=256", "-p", "max_iter=2", "-p", "tol=null", "-p",
            "random_state=0", "--out", str(tmp_path / "m.zarr")]
    for p in params:
        args += ["-p", p]
    return CliRunner().invoke(main, args)


def test_train_saves_a_class_weight_dict(tmp_path):
    r = _train(tmp_path, "class_weight={0: 1, 1: 2}")
    assert r.exit_code == 0, r.output
    assert ok.load(tmp_path / "m.zarr").class_weight == {0: 1, 1: 2}


def test_train_refuses_what_cannot_be_saved_before_the_fit(tmp_path, monkeypatch):
    def no_fit(*args, **kwargs):
        raise AssertionError("the fit ran")

    monkeypatch.setattr(ok.DSGClassifier, "fit", no_fit)
    r = _train(tmp_path, "class_weight={null: 2.0, 0: 1.0}")
    assert r.exit_code == 1
    assert "ModelFormatError: parameter class_weight={None: 2.0, 0: 1.0} cannot be saved" \
        in r.output
    assert "the fit ran" not in r.output
    assert not (tmp_path / "m.zarr").exists()
