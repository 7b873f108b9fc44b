"""A finite input beyond float32's range becomes inf when a float32 fit casts it: the error
says so and names the fix (``dtype='float64'``), and such a fit in float64 runs."""

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels._checks import check_finite
from ooc_kernels.exceptions import InvalidDataError

CAST = "ignore:overflow encountered in cast:RuntimeWarning"


@pytest.mark.parametrize("dtype, value, hinted", [
    (np.float32, np.inf, True), (np.float32, -np.inf, True), (np.float32, np.nan, False),
    (np.float64, np.inf, False), (np.float64, np.nan, False)])
def test_the_hint_only_for_an_infinite_float32_value(dtype, value, hinted):
    values = np.zeros((4, 3), dtype=dtype)
    values[2, 1] = value
    with pytest.raises(InvalidDataError, match="row 2, feature 1") as err:
        check_finite(values, "X", 0)
    assert ("dtype='float64'" in str(err.value)) is hinted


@pytest.mark.filterwarnings(CAST)
def test_a_float32_fit_names_the_range_and_a_float64_fit_runs():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] > 0).astype(int)
    X[5, 1] = 1e39  # finite in float64, inf in float32
    with pytest.raises(InvalidDataError, match=r"row 5, feature 1.*beyond float32's range"):
        ok.DSGClassifier(max_iter=1, n_features=256).fit(X, y)
    model = ok.DSGClassifier(max_iter=1, tol=None, n_features=256, dtype="float64").fit(X, y)
    assert np.isfinite(model.decision_function(X[:10])).all()


@pytest.mark.filterwarnings(CAST)
def test_a_float32_regression_target_beyond_the_range():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 3))
    t = X[:, 0].copy()
    t[7] = -1e39
    with pytest.raises(InvalidDataError, match=r"y has a non-finite value.*row 7.*dtype='float64'"):
        ok.DSGRegressor(max_iter=1, n_features=256).fit(X, t)
