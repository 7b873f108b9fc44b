"""Rows given along the second dim (a features x samples array, with no ``y`` to tell: a
prediction, a one-class fit) are chunked along the axis the library takes for the features:
the refusal gives the transpose as the other fix, and following it predicts what the array
in the right order predicts.  An array chunked along its features with more rows than
features gets the rechunk alone."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import xarray as xr

import ooc_kernels as ok
from ooc_kernels.exceptions import SchemaError

SMALL = dict(n_features=64, block_size=32, max_iter=1, tol=None, random_state=0, scheduler="sync",
             progress=False)


def _rows():
    rng = np.random.default_rng(0)
    values = rng.normal(size=(120, 3)).astype(np.float32)
    X = xr.DataArray(values, dims=("time", "channel"),
                     coords={"time": np.arange(120) * 10}).chunk({"time": 40})
    y = xr.DataArray((values[:, 0] * values[:, 1] > 0).astype(np.int32), dims=("time",),
                     coords={"time": X["time"]}).chunk({"time": 40})
    return X, y


def test_a_features_first_dataarray_is_told_to_transpose():
    X, y = _rows()
    clf = ok.DSGClassifier(**SMALL).fit(X, y)
    expected = clf.predict(X).values
    given = X.transpose("channel", "time")
    fix = "transpose it: X = X.transpose('time', 'channel')"
    with pytest.raises(SchemaError, match="looks transposed") as err:
        clf.predict(given)
    assert fix in str(err.value) and "3 x 120 values, 'channel' x 'time'" in str(err.value)
    np.testing.assert_array_equal(clf.predict(given.transpose("time", "channel")).values,
                                  expected)
    with pytest.raises(SchemaError, match="looks transposed") as err:   # no y to tell
        ok.DSGOneClassSVM(**SMALL).fit(given)
    assert fix in str(err.value)


def test_a_features_first_dask_array_is_told_to_transpose():
    X, y = _rows()
    clf = ok.DSGClassifier(**SMALL).fit(X.data, y.data)
    with pytest.raises(SchemaError, match=r"looks transposed\), transpose it: X = X\.T\."):
        clf.predict(X.data.T)
    np.testing.assert_array_equal(clf.predict(X.data.T.T).compute(),
                                  clf.predict(X.values))


def test_rows_chunked_along_their_features_get_the_rechunk_alone():
    X, y = _rows()
    clf = ok.DSGClassifier(**SMALL).fit(X, y)
    with pytest.raises(SchemaError, match="X.chunk") as err:
        clf.predict(X.chunk({"channel": 1, "time": -1}))
    assert "transpose" not in str(err.value)
    with pytest.raises(SchemaError, match=r"rechunk\(\{1: -1\}\)") as err:
        clf.predict(da.from_array(X.values, chunks=(120, 1)))
    assert "transpose" not in str(err.value)
