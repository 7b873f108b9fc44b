"""Rows held in memory are checked for NaN and inf once, by the estimators' scikit-learn
validation, not a second time when they are wrapped as chunks; a NaN is still refused with
the library's error."""

import numpy as np
import pytest
from sklearn.utils import validation

import ooc_kernels as ok
from ooc_kernels.exceptions import OocKernelsError


def _rows():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    return X, X @ rng.normal(size=4)


@pytest.mark.parametrize("make", [lambda: ok.DSPDCRegressor(max_iter=2, tol=None),
                                  lambda: ok.DSGRegressor(max_iter=1, tol=None, n_features=256)])
def test_the_rows_are_checked_for_nan_once(monkeypatch, make):
    X, y = _rows()
    checks = []
    original = validation.check_array

    def counted(array, *args, **kwargs):
        if np.shape(array) == X.shape and kwargs.get("ensure_all_finite", True):
            checks.append(kwargs.get("ensure_all_finite", True))
        return original(array, *args, **kwargs)

    monkeypatch.setattr(validation, "check_array", counted)
    make().fit(X, y)
    assert len(checks) == 1


@pytest.mark.parametrize("where", ["X", "y"])
def test_a_nan_is_still_refused(where):
    X, y = _rows()
    (X if where == "X" else y)[7] = np.nan
    with pytest.raises(OocKernelsError, match="NaN"):
        ok.DSPDCRegressor(max_iter=2).fit(X, y)
