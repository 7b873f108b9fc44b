"""An xarray ``X`` whose dims are the schema's own names in the other order,
``('feature', 'sample')``, is refused with the transpose that fixes it, by every estimator,
for fit and predict: read by position, its features would be taken for samples (a one-class
or density-ratio fit has no ``y`` whose length would catch it)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import ooc_kernels as ok
from ooc_kernels.data.inputs import as_chunked
from ooc_kernels.exceptions import SchemaError

FIX = r"transpose it: X = X.transpose\('sample', 'feature'\)"
FAST = dict(n_features=128, block_size=32, batch_size=8, max_iter=2, tol=None,
            random_state=0, scheduler="sync", progress=False)


def _data(n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X[:, 0] + 0.1 * rng.normal(size=n)


def _transposed(X):
    return xr.DataArray(X.T, dims=("feature", "sample"))


@pytest.mark.parametrize("make", [lambda X, y: ok.DSGOneClassSVM(**FAST).fit(_transposed(X)),
                                  lambda X, y: ok.DSGDensityRatio(**FAST).fit(_transposed(X),
                                                                              X + 1.0),
                                  lambda X, y: ok.DSGRegressor(**FAST).fit(_transposed(X), y)],
                         ids=["one-class", "density-ratio", "regressor"])
def test_fit_on_a_transposed_dataarray_is_refused_with_the_transpose(make):
    X, y = _data()
    with pytest.raises(SchemaError, match=r"variable 'X': expected dims \('sample', 'feature'\)"
                                          r", found dims \('feature', 'sample'\).*" + FIX):
        make(X, y)


def test_predict_on_a_transposed_dataarray_is_refused_with_the_transpose():
    X, y = _data()
    est = ok.DSGRegressor(**FAST).fit(X, y)
    with pytest.raises(SchemaError, match=FIX):
        est.predict(_transposed(X))


def test_a_dataset_with_a_transposed_x_names_x_once():
    X, y = _data()
    ds = xr.Dataset({"X": (("feature", "sample"), X.T), "y": (("sample",), y)})
    with pytest.raises(SchemaError, match=r"transpose it: ds\['X'\] = ds.X.transpose"
                                          r"\('sample', 'feature'\)") as info:
        as_chunked(ds)
    assert len(getattr(info.value, "problems", [str(info.value)])) == 1, str(info.value)


def test_the_transposed_dataarray_once_transposed_fits_as_its_array():
    """The fix the message gives: the same model as the NumPy rows (one chunk each)."""
    X, _ = _data()
    ref = ok.DSGOneClassSVM(**FAST).fit(X)
    est = ok.DSGOneClassSVM(**FAST).fit(_transposed(X).transpose("sample", "feature"))
    np.testing.assert_array_equal(est.decision_function(X), ref.decision_function(X))
    # dims of other names keep being read by position (the first is the samples)
    named = ok.DSGOneClassSVM(**FAST).fit(xr.DataArray(X, dims=("time", "sample")))
    np.testing.assert_array_equal(named.decision_function(X), ref.decision_function(X))
