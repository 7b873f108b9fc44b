"""A saved DSPDC model whose configuration was edited and resealed (its checksum
recomputed) is refused on load when a field holds a type or value no fit writes, naming the
field; an untouched model loads with its predictions."""

from __future__ import annotations

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import ModelFormatError

from _tamper import edit_attrs, set_at

KEY = "ooc_kernels"


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4)) * [1.0, 10.0, 0.1, 3.0]
    y = (X[:, 0] + 0.1 * X[:, 1] > 0).astype(int)
    model = ok.DSPDCClassifier(alpha=1e-2, max_iter=5, tol=None, random_state=0).fit(X, y)
    path = tmp_path_factory.mktemp("dspdc") / "m.zarr"
    model.save(path)
    return X, model, path


def _copy(path, tmp_path):
    import shutil
    target = tmp_path / "m.zarr"
    shutil.copytree(path, target)
    return target


def test_an_untouched_model_loads_with_its_predictions(saved):
    X, model, path = saved
    back = ok.load(path)
    np.testing.assert_array_equal(back.decision_function(X), model.decision_function(X))


BAD = [
    ("intercept_scaling", -1.0, "a finite number >= 0"),
    ("intercept_scaling", "1", "a finite number >= 0"),
    ("n_features", 0, "an integer >= 1"),
    ("n_features", 5.0, "an integer >= 1"),
    ("n_samples", -3, "an integer >= 1"),
    ("lam2", 0.0, "a finite number > 0"),
    ("lam1", -1e-3, "a finite number >= 0"),
    ("Lambda", None, "a finite number > 0"),
    ("m", True, "an integer >= 1"),
    ("q", [1], "an integer >= 1"),
    ("local_passes", 0, "a finite number > 0"),
    ("mode", "fast", "'gap' or 'distance'"),
    ("theta", -1.0, "None or a finite number > 0"),
    ("factorized", 1, "true or false"),
    ("weighted", "no", "true or false"),
    ("weight_scale", 0.0, "a finite number > 0"),
    ("class_weight", [1.0], "None or two finite numbers >= 0"),
    ("class_weight", [1.0, -2.0], "None or two finite numbers >= 0"),
    ("x_scale", [1.0, 0.0, 1.0, 1.0], r"None or a list of finite numbers > 0"),
    ("x_shift", ["a", 0.0, 0.0, 0.0], "None or a list of finite numbers"),
    ("step_boost", 0.5, "a finite number >= 1"),
    ("work_store", 3, "a string"),
]


@pytest.mark.parametrize("name, value, what", BAD, ids=lambda v: repr(v)[:20])
def test_a_resealed_field_of_a_value_no_fit_writes_is_refused(saved, tmp_path, name, value,
                                                               what):
    _, _, path = saved
    path = _copy(path, tmp_path)
    edit_attrs(path, KEY, set_at("fitted", "config", name, value=value))
    with pytest.raises(ModelFormatError,
                       match=rf"fitted\.config has {name}=.*it must be {what}"):
        ok.load(path)


def test_an_unknown_configuration_entry_is_refused(saved, tmp_path):
    _, _, path = saved
    path = _copy(path, tmp_path)
    edit_attrs(path, KEY, set_at("fitted", "config", "evil", value=1))
    with pytest.raises(ModelFormatError, match=r"entries no fit writes \(\['evil'\]\)"):
        ok.load(path)
