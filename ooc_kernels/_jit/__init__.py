"""Numba kernels only: one chunk in, arrays out (no dask, no I/O, no Python objects).

Every kernel is compiled with ``@njit(cache=True, nogil=True)`` (:func:`_cache.njit`:
``numba.njit`` with its on-disk cache in a per-user folder keyed by the library's version and
the kernels' sources, :func:`_cache.cache_dir`, never next to the installed modules) and has a
plain-numpy twin with the suffix ``_ref`` that the tests compare against.

Modules
-------
rff
    ``rff_transform`` (``scale * cos(X @ W + phase)``) and the vectorised float32 cosine.
losses
    The numba dispatch of the loss table (``ooc_kernels.losses``) on ``loss_id``: one value
    (value, derivative, conjugate, dual prox) and rows (``loss_gradient``,
    ``loss_grad_value``); its twins are the table's.
coupled
    Nonlinearities that read several columns of ``X @ W`` per feature (polynomial and
    additive kernels).
segments
    The layout of a block whose columns mix nonlinearities (a sum of kernels).
hierarchical
    ``inner_rows``: the inner feature map of a hierarchical kernel, applied to the rows.
rows
    ``permute_rows_inplace``: mixes the rows of a task's input without a second copy.
atomic, prefetch
    ``claim`` (an atomic counter for work items of a parallel region) and ``prefetch_row``
    (a software prefetch of a row).
_cache
    ``njit`` and ``cache_dir``: where the compiled kernels are cached.

See ``docs/algorithms/dsg_kernels.md`` for the conventions.
"""
