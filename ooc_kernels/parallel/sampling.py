"""Small random samples of rows drawn from a few chunks (for data-driven defaults such as
the median-trick bandwidth).

Examples
--------
>>> import dask.array as da
>>> from ooc_kernels.parallel.chunked import ChunkedData
>>> from ooc_kernels.parallel.sampling import sample_rows
>>> data = ChunkedData({"X": da.arange(40.0, chunks=10).reshape(20, 2)})
>>> sample_rows(data, n_rows=6, max_chunks=3, seed=0, scheduler="sync").shape
(6, 2)
"""

from __future__ import annotations

from typing import Any

import dask
import numpy as np

from ooc_kernels.parallel.chunked import ChunkedData
from ooc_kernels.parallel.scheduler import local_scheduler

__all__ = ["sample_rows"]


def _take(X, rows):
    return np.asarray(X)[rows]  # one chunk -> a few rows


def sample_rows(data: ChunkedData, *, n_rows: int = 2000, max_chunks: int = 8, seed: int = 0,
                scheduler: Any = None, return_index: bool = False, var: str = "X"):
    """Up to ``n_rows`` rows drawn uniformly from up to ``max_chunks`` random chunks.

    Only the chosen chunks of variable ``var`` are read, one task each; the result is small.
    With ``return_index``, also returns the chunk and the row inside the chunk of every
    sampled row.
    """
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(0x5A,)))
    n_chunks = data.n_chunks
    chosen = np.sort(rng.choice(n_chunks, size=min(max_chunks, n_chunks), replace=False))
    sizes = np.array([data.chunk_sizes[c] for c in chosen])
    per_chunk = np.minimum(sizes, int(np.ceil(n_rows / len(chosen))))
    xd = data.delayed_chunks()[var]
    picks = [np.sort(rng.choice(s, size=k, replace=False)) for s, k in zip(sizes, per_chunk)]
    parts = [dask.delayed(_take)(xd[c], p) for c, p in zip(chosen, picks)]
    rows = np.concatenate(dask.compute(*parts, scheduler=local_scheduler(scheduler)))[:n_rows]
    if not return_index:
        return rows
    chunk_of = np.concatenate([np.full(len(p), c) for c, p in zip(chosen, picks)])[:n_rows]
    return rows, chunk_of, np.concatenate(picks)[:n_rows]
