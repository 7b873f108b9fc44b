"""Rows sampled for the set-up (:func:`~ooc_kernels.parallel.sampling.sample_rows`): several
variables read in one computation, each the rows it gets read alone."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np

from ooc_kernels.parallel import sampling
from ooc_kernels.parallel.chunked import ChunkedData
from ooc_kernels.parallel.sampling import sample_rows


def test_several_variables_are_read_in_one_computation_with_the_same_rows(monkeypatch):
    rng = np.random.default_rng(0)
    X, y, w = rng.normal(size=(230, 3)), rng.normal(size=230), rng.uniform(size=230)
    chunks = (40, 40, 40, 40, 40, 30)
    data = ChunkedData({"X": da.from_array(X, chunks=(chunks, 3)),
                        "y": da.from_array(y, chunks=(chunks,)),
                        "sample_weight": da.from_array(w, chunks=(chunks,))})
    calls = []
    real = dask.compute

    def compute(*args, **kw):
        calls.append(len(args))
        return real(*args, **kw)

    monkeypatch.setattr(sampling.dask, "compute", compute)
    kw = dict(n_rows=50, max_chunks=4, seed=7, scheduler="sync")
    (gx, gy, gw), chunk_of, row_of = sample_rows(
        data, var=("X", "y", "sample_weight"), return_index=True, **kw)
    assert calls == [12]                        # 3 variables x 4 chunks, one computation
    rows = np.concatenate([[0], np.cumsum(chunks)])[chunk_of] + row_of
    assert len(rows) == 50 and len(set(chunk_of.tolist())) == 4
    assert np.array_equal(gx, X[rows]) and np.array_equal(gy, y[rows])
    assert np.array_equal(gw, w[rows])
    assert np.array_equal(sample_rows(data, var="y", **kw), gy)  # alone: the same rows
    (only,) = sample_rows(data, var=("sample_weight",), **kw)
    assert np.array_equal(only, gw)
