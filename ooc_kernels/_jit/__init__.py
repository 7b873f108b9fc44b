"""Numba kernels only: one chunk in, arrays out (no dask, no I/O, no Python objects).

Every kernel is compiled with ``@numba.njit(cache=True, nogil=True)`` and has a plain-numpy
twin with the suffix ``_ref`` that the tests compare against.

Modules
-------
rff
    ``rff_transform`` (``scale * cos(X @ W + phase)``) and the vectorised float32 cosine.
losses
    ``loss_gradient(loss_id, F, Y, out, loss_param=0.0)``.
dsg
    ``dsg_predict`` and ``dsg_chunk_update``, the hot path of doubly stochastic gradients.
rows
    ``permute_rows_inplace``: mixes the rows of a task's input without a second copy.

See ``docs/algorithms/dsg_kernels.md`` for the conventions.
"""
