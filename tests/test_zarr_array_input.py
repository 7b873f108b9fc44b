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


@pytest.mark.parametrize("chunks", [(500, 10), "auto"])   # "auto": zarr's default, (1000, 25)
def test_a_zarr_array_chunked_along_its_features_is_fitted_row_block_by_row_block(
        chunks, largest_read):
    """Zarr's default chunks split the features of most arrays (``(2000, 50)`` float64:
    ``(1000, 25)``); such an array is read a row block at a time, every feature of it, and
    fits the model of its rows in memory cut into the same row blocks."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2000, 50))
    y = X[:, 0] - X[:, 1] + 0.1 * rng.normal(size=2000)
    z = zarr.create_array(store={}, shape=X.shape, chunks=chunks, dtype="f8")
    z[:] = X
    assert z.chunks[1] < X.shape[1]
    rows = z.chunks[0]
    kw = {**FAST, "chunk_size": rows}
    largest_read[0] = 0
    reg = ok.DSGRegressor(**kw).fit(z, y)
    assert 0 < largest_read[0] <= rows       # a row block, never the whole array
    ref = ok.DSGRegressor(**kw).fit(X, y)    # the same rows in memory, the same chunks
    np.testing.assert_array_equal(np.asarray(reg.predict(z)), ref.predict(X))
