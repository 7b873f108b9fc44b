"""Parallel versions of the DSG kernels whose result does not depend on the thread count.

Each kernel splits its work by a partition fixed by the problem, never by the threads, and
keeps every sum in the order of the sequential kernel, so its output is bit-identical to the
sequential kernel's for 1, 2, 3 ... threads (``docs/threads.md``):

* :func:`dsg_full_update_threads` (twin of
  :func:`~ooc_kernels.families.dsg.kernels_full.dsg_full_update`): per step, the threads
  share the step's tasks, the column tiles of the blocks
  (:mod:`~ooc_kernels.families.dsg.kernels_tasks`; 64 tasks for a default model of 16
  blocks): each applies the previous step's update to its coefficients (``Z_t^T G``, a sum
  over all the step's rows in one product) and computes its features and partial
  prediction ``P_t``; one thread sums ``F = P_0 + P_1 + ...`` in task order (the sequential
  kernel's order) and takes the loss gradient.  One parallel region per step;
* :func:`dsg_predict_threads` (twin of :func:`~ooc_kernels.families.dsg.kernels.dsg_predict`):
  the threads share the sequential kernel's row tiles; a row's value depends on its tile only.

:func:`full_update` and :func:`predict` pick the kernel from
:func:`ooc_kernels._threads.current_threads`: the sequential one for one thread (no
launch), the parallel one (through :func:`~ooc_kernels._threads.launch`: from the main
thread, or from one of the process's reused launcher threads) otherwise.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dsg.kernels import dsg_predict
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(300, 3)); W = rng.normal(size=(4, 3, 8))
>>> ph = rng.uniform(0, 6, (4, 8)); coef = rng.normal(size=(4, 8, 1))
>>> F = dsg_predict_threads(X, W, ph, coef, 0.5, tile=64)
>>> bool(np.array_equal(F, dsg_predict_threads(X, W, ph, coef, 0.5, tile=64)))
True
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ooc_kernels._jit._cache import njit
from ooc_kernels._jit.rff import COS_AFFINE
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dsg.kernels import _tile_rows, add_tile_predictions, dsg_predict
from ooc_kernels.families.dsg.kernels_full import (_FULL_BUFFER_BYTES, _check_full_update,
                                                   dsg_full_update)
from ooc_kernels.families.dsg.kernels_tasks import (full_buffers, step_gradient, step_task,
                                                    tile_block)
from ooc_kernels._threads import current_threads, launch

__all__ = ["dsg_full_update_threads", "dsg_predict_threads", "full_update", "predict"]


@njit(cache=True, nogil=True, parallel=True)
def dsg_full_update_threads(X, Y, sw, W, phase, coef, avg, n_avg, steps, params,
                            max_buffer_bytes=_FULL_BUFFER_BYTES, kind=COS_AFFINE):
    """:func:`~ooc_kernels.families.dsg.kernels_full.dsg_full_update` with the tasks of
    every step (:mod:`~ooc_kernels.families.dsg.kernels_tasks`: blocks cut into column
    tiles) shared by the threads: same arguments, same result bit for bit.

    One parallel region per step: task ``t`` applies the previous step's update to its
    coefficients, then computes its features and partial prediction of this step; then one
    thread sums the partial predictions in task order and takes the loss gradient.
    """
    scale = params[3]
    b = params[1]
    n = X.shape[0]
    C = Y.shape[1]
    m = W.shape[0]
    n_steps = _check_full_update(X, Y, sw, W, phase, coef, avg, steps, b)
    out = coef.astype(np.float64)
    mean = avg.astype(np.float64)
    totals = (0.0, 0.0, n_avg)
    if n == 0 or m == 0:
        return out, mean, n_avg, 0.0, 0.0
    low = out.astype(X.dtype)
    tiles, bufs = full_buffers(X, W, C, b, max_buffer_bytes, kind)
    n_tasks = m * tiles[0]
    if tiles[0] > 1:
        for j in prange(m):
            tile_block(W, bufs[0], j, tiles[0], tiles[1])
    model = (out, low, mean)
    prev = (1.0, 0.0, 0.0)
    for s in range(n_steps + 1):  # pass s: step s - 1's updates, step s's features
        for t in prange(n_tasks):
            step_task(t, s, n_steps, X, W, phase, scale, kind, b, tiles, bufs, model, prev)
        if s < n_steps:
            totals, prev = step_gradient(s, n_tasks, Y, sw, steps, params, m, bufs, totals)
    loss_sum, weight_sum, n_avg = totals
    return out, mean, n_avg, loss_sum, weight_sum


@njit(cache=True, nogil=True, parallel=True)
def dsg_predict_threads(X, W, phase, coef, scale, kind=COS_AFFINE, tile=0):
    """:func:`~ooc_kernels.families.dsg.kernels.dsg_predict` with its row tiles shared by the
    threads: same arguments, same result bit for bit (``tile``: rows per tile, 0 for the
    sequential kernel's)."""
    n, d = X.shape
    m = W.shape[0]
    r = W.shape[2]
    C = coef.shape[2]
    if W.shape[1] != d or phase.shape[0] != m or phase.shape[1] != r:
        raise ValidationError("dsg_predict_threads: W must be (m, d, r) and phase (m, r) "
                              "for X (n, d)")
    if coef.shape[0] != m or coef.shape[1] != r:
        raise ValidationError("dsg_predict_threads: coef must be (m, r, C) matching W")
    out = np.zeros((n, C), dtype=np.float64)
    if n == 0 or m == 0 or r == 0 or C == 0:
        return out.astype(X.dtype)
    rows = min(_tile_rows(r, X.itemsize) if tile < 1 else tile, n)
    n_tiles = (n + rows - 1) // rows
    for t in prange(n_tiles):
        start = t * rows
        stop = min(start + rows, n)
        k = stop - start
        add_tile_predictions(X[start:stop], W, phase, coef, scale, kind,
                             np.empty((k, r), dtype=X.dtype), np.empty((k, C), dtype=X.dtype),
                             out[start:stop])
    return out.astype(X.dtype)


def full_update(X, Y, sw, W, phase, coef, avg, n_avg, steps, params,
                max_buffer_bytes=_FULL_BUFFER_BYTES, kind=COS_AFFINE):
    """:func:`~ooc_kernels.families.dsg.kernels_full.dsg_full_update` on the threads of
    :func:`~ooc_kernels._threads.current_threads` (the sequential kernel for one)."""
    if current_threads() <= 1:
        return dsg_full_update(X, Y, sw, W, phase, coef, avg, n_avg, steps, params,
                               max_buffer_bytes, kind)
    return launch(dsg_full_update_threads, X, Y, sw, W, phase, coef, avg, n_avg, steps,
                  params, max_buffer_bytes, kind)


def predict(X, W, phase, coef, scale, kind=COS_AFFINE):
    """:func:`~ooc_kernels.families.dsg.kernels.dsg_predict` on the threads of
    :func:`~ooc_kernels._threads.current_threads` (the sequential kernel for one, or
    for a single tile of rows)."""
    if current_threads() <= 1 or X.shape[0] <= _tile_rows(W.shape[2], X.itemsize):
        return dsg_predict(X, W, phase, coef, scale, kind)
    return launch(dsg_predict_threads, X, W, phase, coef, scale, kind)
