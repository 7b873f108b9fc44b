"""Regression targets of text that are not numbers are refused by one shared check for
every regressor, naming a value, its chunk and row, in memory and from Dask; text that
holds numbers (``'0.25'``) is those numbers, as the float targets give."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import InvalidDataError

FAST = dict(random_state=0, scheduler="sync", progress=False, chunk_size=20)
DSG = dict(n_features=128, block_size=32, batch_size=8, max_iter=2, tol=None)
REGRESSORS = {
    "DSGRegressor": lambda: ok.DSGRegressor(**DSG, **FAST),
    "DSGGaussianProcessRegressor": lambda: ok.DSGGaussianProcessRegressor(
        mean="dsg", noise=0.1, **DSG, **FAST),
    "DSPDCRegressor": lambda: ok.DSPDCRegressor(max_iter=5, **FAST),
    "OnlineKernelRidge": lambda: ok.OnlineKernelRidge(degree=2, **FAST),
    "ProjectedKernelRidge": lambda: ok.ProjectedKernelRidge(degree=2, **FAST),
}
N = 60


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 3))
    return X, X[:, 0] + 0.1 * rng.normal(size=N)


@pytest.mark.parametrize("name", sorted(REGRESSORS))
@pytest.mark.parametrize("lazy", [False, True], ids=["numpy", "dask"])
def test_text_targets_are_refused_by_chunk_and_row(name, lazy):
    X, y = _data()
    text = y.astype(str)
    text[25] = "n/a"
    if lazy:
        X, text = da.from_array(X, chunks=(20, 3)), da.from_array(text, chunks=20)
    with pytest.raises(InvalidDataError, match=r"y holds values that are not numbers \(dtype "
                                               r"<U\d+, e\.g\. 'n/a' in chunk 1, row 5\); a "
                                               r"regressor needs numeric targets"):
        REGRESSORS[name]().fit(X, text)


@pytest.mark.parametrize("name", sorted(REGRESSORS))
def test_text_of_numbers_gives_the_model_of_the_numbers(name):
    X, y = _data()
    y = np.round(y, 3)                 # exactly the numbers their text spells
    a = REGRESSORS[name]().fit(X, y.astype(str)).predict(X)
    b = REGRESSORS[name]().fit(X, y).predict(X)
    np.testing.assert_array_equal(a, b)
