"""NumPy arrays of dates or durations (``datetime64``, ``timedelta64``) given as data are
refused by name with a conversion to numbers, as a pandas date column and a Dask array of
dates are: NumPy would otherwise turn them silently into counts of their unit (days,
seconds, nanoseconds ...), which a model would read as values of another scale."""

from __future__ import annotations

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import InputTypeError

FAST = dict(random_state=0, scheduler="sync", progress=False)
DSG = dict(n_features=128, block_size=32, batch_size=8, max_iter=2, tol=None, **FAST)
N = 40


def _dates():
    return (np.datetime64("2020-01-01") + np.arange(2 * N).reshape(N, 2)).astype(
        "datetime64[D]")


@pytest.mark.parametrize("fit", [lambda X, y: ok.DSGRegressor(**DSG).fit(X, y),
                                 lambda X, y: ok.DSPDCRegressor(max_iter=2, **FAST).fit(X, y),
                                 lambda X, y: ok.DSGOneClassSVM(**DSG).fit(X)],
                         ids=["DSGRegressor", "DSPDCRegressor", "DSGOneClassSVM"])
def test_dates_as_x_are_refused_with_the_conversion(fit):
    with pytest.raises(InputTypeError, match=r"X must hold numbers, but it holds dates \(dtype "
                                             r"datetime64\[D\]\).*"
                                             r"np.timedelta64\(1, 'D'\)"):
        fit(_dates(), np.arange(N, dtype=float))


def test_durations_and_dates_in_predict_are_refused():
    days = (_dates() - np.datetime64("1970-01-01")) / np.timedelta64(1, "D")
    model = ok.DSGRegressor(**DSG).fit(days, np.arange(N, dtype=float))
    with pytest.raises(InputTypeError, match=r"X must hold numbers, but it holds durations "
                                             r"\(dtype timedelta64\[s\]\)"
                                             r".*X / np.timedelta64\(1, 's'\)"):
        model.predict(np.arange(2 * N).reshape(N, 2).astype("timedelta64[s]"))
    with pytest.raises(InputTypeError, match=r"it holds dates"):
        model.predict(_dates())


def test_the_conversion_given_fits_as_the_numbers():
    """The fix of the message, then the same model as the plain float array of days."""
    X = _dates()
    days = (X - np.datetime64("1970-01-01")) / np.timedelta64(1, "D")
    ref = np.array([[18262.0 + 2 * i, 18263.0 + 2 * i] for i in range(N)])
    y = np.arange(N, dtype=float)
    np.testing.assert_array_equal(ok.DSGRegressor(**DSG).fit(days, y).predict(ref),
                                  ok.DSGRegressor(**DSG).fit(ref, y).predict(ref))
