"""Rows held in memory are checked for NaN and inf once, by the estimators' scikit-learn
validation: the lazy per-chunk check of ``y`` is not added on top, and a NaN is still
refused with the library's error."""

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.data import integrity
from ooc_kernels.exceptions import OocKernelsError


def _rows():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    return X, X @ rng.normal(size=4)


@pytest.mark.parametrize("make", [lambda: ok.DSPDCRegressor(max_iter=2, tol=None),
                                  lambda: ok.DSGRegressor(max_iter=1, n_features=256)])
def test_validated_targets_get_no_second_check(monkeypatch, make):
    def second_check(*args, **kwargs):
        raise AssertionError("y checked a second time")

    monkeypatch.setattr(integrity, "check_finite_blocks", second_check)
    X, y = _rows()
    make().fit(X, y)


@pytest.mark.parametrize("where", ["X", "y"])
def test_a_nan_is_still_refused(where):
    X, y = _rows()
    (X if where == "X" else y)[7] = np.nan
    with pytest.raises(OocKernelsError, match="NaN"):
        ok.DSPDCRegressor(max_iter=2).fit(X, y)
