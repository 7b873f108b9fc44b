"""A ``zarr.Array`` given as ``X`` (and ``y``) is read chunk by chunk, as the Dask array of
the same store, never whole: an out-of-core fit on a store opened with ``zarr.open_array``.
Its model is the one of the same rows in memory cut into the store's chunks, and its
predictions are lazy, as for any lazy input."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import zarr

import ooc_kernels as ok
from ooc_kernels.exceptions import SchemaError

FAST = dict(n_features=128, block_size=32, batch_size=8, max_iter=2, tol=None,
            random_state=0, scheduler="sync", progress=False, chunk_size=20)
ROWS, CHUNK = 60, 20


def _stores(tmp_path, zarr_format):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(ROWS, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=ROWS)
    zX = zarr.open_array(tmp_path / "X.zarr", mode="w", shape=X.shape, chunks=(CHUNK, 3),
                         dtype="f8", zarr_format=zarr_format)
    zX[:] = X
    zy = zarr.open_array(tmp_path / "y.zarr", mode="w", shape=y.shape, chunks=(CHUNK,),
                         dtype="f8", zarr_format=zarr_format)
    zy[:] = y
    return X, y, zX, zy


@pytest.fixture
def largest_read(monkeypatch):
    """The most rows one read of a ``zarr.Array`` returned."""
    reads = [0]
    original = zarr.Array.__getitem__

    def spy(self, selection):
        out = original(self, selection)
        reads[0] = max(reads[0], int(np.shape(out)[0]) if np.ndim(out) else 0)
        return out

    monkeypatch.setattr(zarr.Array, "__getitem__", spy)
    return reads


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_zarr_array_is_fitted_chunk_by_chunk_like_its_rows(tmp_path, zarr_format,
                                                              largest_read):
    X, y, zX, zy = _stores(tmp_path, zarr_format)
    reg = ok.DSGRegressor(**FAST).fit(zX, zy)
    assert largest_read[0] == CHUNK          # never the whole array
    pred = reg.predict(zX)
    assert isinstance(pred, da.Array) and pred.chunks[0] == (CHUNK,) * 3
    ref = ok.DSGRegressor(**FAST).fit(X, y)  # the same rows in memory, the same chunks
    np.testing.assert_array_equal(pred.compute(), ref.predict(X))
    oc = ok.DSGOneClassSVM(**FAST).fit(zX)   # no y at all
    np.testing.assert_array_equal(oc.decision_function(zX).compute(),
                                  ok.DSGOneClassSVM(**FAST).fit(X).decision_function(X))
    assert largest_read[0] == CHUNK


def test_a_zarr_array_chunked_along_its_features_is_refused_with_the_fix(tmp_path):
    X = np.zeros((ROWS, 3))
    z = zarr.open_array(tmp_path / "cols.zarr", mode="w", shape=X.shape, chunks=(CHUNK, 1),
                        dtype="f8")
    with pytest.raises(SchemaError, match=r"X is a zarr.Array chunked along its features "
                                          r"\(chunks \(20, 1\), shape \(60, 3\)\).*"
                                          r"X = dask.array.from_zarr\(X\).rechunk"):
        ok.DSGOneClassSVM(**FAST).fit(z)
