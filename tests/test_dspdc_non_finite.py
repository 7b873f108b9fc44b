"""NaN/inf in a lazy X given to the DSPDC estimators: found by the chunk tasks of the
set-up pass as they read the rows (by the first epoch's tasks when no set-up pass runs),
and named by chunk, row and feature as the DSG estimators name them; finite values whose
squares overflow keep their own message."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import InvalidDataError


def _data(bad):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = X @ np.ones(3)
    X[307, 2] = bad
    return da.from_array(X, chunks=100), da.from_array(y, chunks=100)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("make", [
    lambda: ok.DSPDCRegressor(max_iter=1),                        # the one-read set-up
    lambda: ok.DSPDCRegressor(m=2, max_iter=1),                   # moments, then Lambda
    lambda: ok.DSPDCRegressor(standardize=False, max_iter=1),     # Lambda's pass only
    lambda: ok.DSPDCClassifier(max_iter=1),
    # no set-up pass (no standardization, a given Lambda): the epoch's tasks check the rows
    lambda: ok.DSPDCRegressor(standardize=False, Lambda=50.0, max_iter=1),
    lambda: ok.DSPDCClassifier(standardize=False, Lambda=50.0, max_iter=1),
    lambda: ok.DSPDCRegressor(standardize=False, Lambda=50.0, max_iter=1, shuffle_chunks=2),
])
def test_a_non_finite_value_in_a_lazy_x_is_named_by_chunk_and_row(make, bad):
    X, y = _data(bad)
    est = make().set_params(scheduler="sync")
    if isinstance(est, ok.DSPDCClassifier):
        y = (y > 0).astype(int)
    with pytest.raises(InvalidDataError, match=rf"^X has a non-finite value \({bad!r}\) in "
                                               r"chunk 3, row 7, feature 2; remove or "
                                               r"impute the invalid values before fitting\."):
        est.fit(X, y)
    dsg = ok.DSGRegressor(n_features=256, max_iter=1, scheduler="sync")
    with pytest.raises(InvalidDataError, match=r"in chunk 3, row 7, feature 2"):
        dsg.fit(*_data(bad))


def test_finite_values_whose_squares_overflow_keep_their_message():
    with pytest.raises(InvalidDataError, match=r"column 2 of X has a mean .* squares that "
                                               r"overflow float64"):
        ok.DSPDCRegressor(max_iter=1, scheduler="sync").fit(*_data(1e200))
