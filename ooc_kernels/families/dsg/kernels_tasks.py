"""The tasks of a full-phase DSG step: blocks cut into column tiles.

A full-phase step (:func:`~ooc_kernels.families.dsg.kernels_full.dsg_full_update`) is cut
into ``m * nf`` *tasks*: task ``t`` owns the columns ``[c0, c1)`` of block ``j = t // nf``
(``c0 = (t % nf) w``), where ``w`` (:func:`full_tile_width`) depends on the model's shape
and nonlinearity only, never on the threads.  A task computes, for its columns alone:

* the features ``Z_t = f(X_B W[j][:, c0:c1] + phase[j, c0:c1])`` of the step's rows and
  their partial prediction ``P_t = Z_t coef[j, c0:c1]``;
* after the step's gradient ``G``: ``D_t = Z_t^T G`` (each coefficient's sum over all the
  step's rows, in one product) and the update of its coefficients and of their average.

Between the two, one thread sums ``F = P_0 + P_1 + ...`` in task order and takes the loss
gradient (:func:`step_gradient`).  A task's update needs nothing of the other tasks, and its
next features need only its own updated coefficients, so :func:`step_task` runs the update
of step ``s - 1`` and the features of step ``s`` together: a step is one pass over the tasks
and one gradient.  The sequential kernel runs the tasks in a loop, the parallel one
(:mod:`~ooc_kernels.families.dsg.kernels_threads`) shares them among the threads; every value
is computed by the same operations in the same order either way, so both give the same bits.

Examples
--------
>>> from ooc_kernels._jit.rff import COS_AFFINE, POLY2
>>> full_tile_width(16, 256, COS_AFFINE), full_tile_width(64, 256, COS_AFFINE)
(64, 256)
>>> full_tile_width(16, 256, POLY2)       # features that read other columns: whole blocks
256
"""

from __future__ import annotations

import numpy as np
from numba.core import types
from numba.extending import overload

from ooc_kernels._jit._cache import njit
from ooc_kernels._jit.coupled import SQRT
from ooc_kernels._jit.losses import loss_grad_value
from ooc_kernels._jit.rff import COS_AFFINE, COS_WIDE, RELU, RELU_SQUARED, STEP, features_inplace

__all__ = ["STEP_TASKS", "full_buffers", "full_tile_width", "step_gradient", "step_task",
           "task_position", "task_update", "tile_copy"]

#: Tasks a full-phase step is cut into at least (when the blocks' columns can be split and
#: hold at least 32 columns a tile): enough for 16 threads to get 4 each.
STEP_TASKS = 64


def _columnwise(kind):
    """Whether the nonlinearity ``kind`` computes each feature from its own column only
    (a block's columns can then be split); a layout tuple or a coupled id reads others."""
    return not isinstance(kind, tuple) and kind in (COS_AFFINE, COS_WIDE, STEP, RELU,
                                                    RELU_SQUARED, SQRT)


@overload(_columnwise, jit_options={"nogil": True})
def _columnwise_typed(kind):
    if isinstance(kind, types.BaseTuple):
        return lambda kind: False
    return lambda kind: (kind == COS_AFFINE or kind == COS_WIDE or kind == STEP
                         or kind == RELU or kind == RELU_SQUARED or kind == SQRT)


@njit(cache=True, nogil=True)
def full_tile_width(m, r, kind):
    """Columns per task of a full-phase step with ``m`` blocks of ``r`` features.

    ``r`` (one task per block) when there are at least :data:`STEP_TASKS` blocks or when
    ``kind``'s features read other columns than their own; else the width that cuts the
    ``m r`` columns into about :data:`STEP_TASKS` tiles, rounded up to a multiple of 16 and
    at least 32 (the last tile of a block may be narrower).
    """
    if r == 0 or m >= STEP_TASKS or not _columnwise(kind):
        return r
    w = (r * m + STEP_TASKS - 1) // STEP_TASKS
    w = max(32, (w + 15) // 16 * 16)
    return min(r, w)


@njit(cache=True, nogil=True)
def full_buffers(X, W, C, batch_size, max_buffer_bytes, kind):
    """The layout and work buffers of a full-phase kernel call.

    Returns ``(tiles, bufs)``: ``tiles = (nf, w, keep)`` (tiles per block, their width,
    whether every task's features are kept between its partial prediction and its update:
    when ``m min(b, n) r`` features fit in ``max_buffer_bytes``; else a task recomputes
    them); ``bufs = (Wt, Zt, P, D, F, G)``: the tiles of ``W``, each contiguous (filled by
    :func:`tile_copy`; empty when ``nf = 1``, where the blocks of ``W`` are used), the kept
    features, the partial predictions, the products ``Z_t^T G``, the prediction and the
    gradient of a step.
    """
    n, d = X.shape
    m = W.shape[0]
    r = W.shape[2]
    w = full_tile_width(m, r, kind)
    nf = 1 if w == 0 else (r + w - 1) // w
    nbmax = min(batch_size, n)
    keep = m * nbmax * r * X.itemsize <= max_buffer_bytes
    Wt = np.empty(m * d * r if nf > 1 else 0, dtype=X.dtype)  # filled by tile_copy
    Zt = np.empty(m * nbmax * r if keep else 0, dtype=X.dtype)
    P = np.empty((m * nf, nbmax, C), dtype=X.dtype)
    D = np.empty((m * nf, w, C), dtype=X.dtype)
    F = np.empty((nbmax, C), dtype=X.dtype)
    G = np.empty((nbmax, C), dtype=X.dtype)
    return (nf, w, keep), (Wt, Zt, P, D, F, G)


@njit(cache=True, nogil=True)
def tile_copy(W, Wt, j, c0, c1):
    """Copy the columns ``[c0, c1)`` of block ``j`` of ``W`` (m, d, r) into their tile of
    ``Wt`` (the buffer of :func:`full_buffers`, used when a block has more than one tile),
    ``(d, c1 - c0)`` contiguous; the task that owns the tile makes its copy in the first
    pass of a kernel call (:func:`step_task`)."""
    d = W.shape[1]
    r = W.shape[2]
    base = j * d * r + c0 * d
    for k in range(d):
        for q in range(c1 - c0):
            Wt[base + k * (c1 - c0) + q] = W[j, k, c0 + q]


@njit(cache=True, nogil=True)
def task_position(p, count, s):
    """The ``p``-th task to run of a list of ``count`` tasks in pass ``s``: the list in
    order in even passes and backwards in odd ones.

    A task's features, written in one pass, are read by its update in the next; running a
    list backwards after forwards starts each pass with the tasks whose features the
    previous pass wrote last, still in the core's cache.  Tasks write only their own
    columns and buffers, so the order changes no value.

    Examples
    --------
    >>> [task_position(p, 4, 0) for p in range(4)], [task_position(p, 4, 1) for p in range(4)]
    ([0, 1, 2, 3], [3, 2, 1, 0])
    """
    return count - 1 - p if s % 2 == 1 else p


@njit(cache=True, nogil=True)
def step_task(t, s, n_steps, X, W, phase, scale, kind, b, tiles, bufs, model, prev):
    """Task ``t`` (:mod:`module docstring <ooc_kernels.families.dsg.kernels_tasks>`) of
    step ``s``: step ``s - 1``'s update of its coefficients (when ``s > 0``), then step
    ``s``'s features and partial prediction ``P[t]`` (when ``s < n_steps``).  In pass 0 the
    task first copies its columns of ``W`` into its contiguous tile (:func:`tile_copy`, when
    a block has more than one tile), so a kernel call needs no pass of its own for the
    copies.

    ``model = (out, low, mean)``: the float64 coefficients, their rounding to X's dtype,
    the float64 average (``(0, r, C)`` without averaging); ``prev = (factor, step, w)`` of
    step ``s - 1`` (``w = 0``: not averaged).  Writes only task ``t``'s columns and buffers.
    """
    nf, w, keep = tiles
    Wt, Zt, P, D, F, G = bufs
    low = model[1]
    n, d = X.shape
    r = W.shape[2]
    j = t // nf
    c0 = (t % nf) * w
    c1 = min(c0 + w, r)
    wt = c1 - c0
    if nf == 1:
        Wj = W[j]
    else:
        if s == 0:
            tile_copy(W, Wt, j, c0, c1)
        Wj = Wt[j * d * r + c0 * d:j * d * r + c1 * d].reshape((d, wt))
    ph = phase[j, c0:c1]
    nbmax = min(b, n)
    if keep:
        base = j * nbmax * r + c0 * nbmax
        Zbuf = Zt[base:base + nbmax * wt].reshape((nbmax, wt))
    else:
        Zbuf = np.empty((nbmax, wt), dtype=X.dtype)
    if s > 0:
        lo = (s - 1) * b
        hi = min(lo + b, n)
        Z = Zbuf[:hi - lo]
        if not keep:
            np.dot(X[lo:hi], Wj, Z)
            features_inplace(kind, Z, ph, scale)
        task_update(Z, G, D[t, :wt], model, prev, j, c0)
    if s < n_steps:
        lo = s * b
        hi = min(lo + b, n)
        Z = Zbuf[:hi - lo]
        np.dot(X[lo:hi], Wj, Z)
        features_inplace(kind, Z, ph, scale)
        np.dot(Z, low[j, c0:c1], P[t, :hi - lo])


@njit(cache=True, nogil=True)
def task_update(Z, G, delta, model, prev, j, c0):
    """A task's update of step ``s - 1`` (:func:`step_task`): ``delta = Z^T G`` (the
    columns' sums over the step's ``Z.shape[0]`` rows, in one product), then each of its
    coefficients ``out[j, c0 + k]`` scaled by ``factor`` plus ``step * delta[k]``, its
    rounding ``low`` and, when averaged, its running ``mean``."""
    out, low, mean = model
    factor, step, wavg = prev
    C = out.shape[2]
    np.dot(Z.T, G[:Z.shape[0]], delta)
    averaging = mean.shape[0] > 0 and wavg > 0.0
    for k in range(delta.shape[0]):
        for c in range(C):
            v = out[j, c0 + k, c] * factor + step * delta[k, c]
            out[j, c0 + k, c] = v
            low[j, c0 + k, c] = v
            if averaging:
                mean[j, c0 + k, c] += (v - mean[j, c0 + k, c]) * wavg


@njit(cache=True, nogil=True)
def step_gradient(s, n_tasks, Y, sw, steps, params, m, bufs, totals):
    """The one-thread part of step ``s``: ``F = P_0 + P_1 + ...`` in task order, the loss
    gradient ``G`` of the batch, the running totals ``totals = (loss_sum, weight_sum,
    n_avg)``.  Returns ``(totals, prev)`` with ``prev = (factor, step, w)`` for the tasks'
    update of this step (:func:`step_task`)."""
    gammas, averaged = steps
    alpha, b, loss_id, scale, loss_param = params
    Wt, Zt, P, D, F, G = bufs
    loss_sum, weight_sum, n_avg = totals
    n = Y.shape[0]
    lo = s * b
    hi = min(lo + b, n)
    nb = hi - lo
    Fs = F[:nb]
    Fs[:, :] = 0.0
    for t in range(n_tasks):
        Fs += P[t, :nb]
    loss_sum += loss_grad_value(loss_id, Fs, Y[lo:hi], sw[lo:hi], G[:nb], loss_param)
    for i in range(lo, hi):
        weight_sum += sw[i]
    factor = 1.0 - gammas[s] * alpha
    step = -gammas[s] / (nb * m)
    wavg = 0.0
    if averaged[s]:
        n_avg += 1
        wavg = 1.0 / n_avg
    return (loss_sum, weight_sum, n_avg), (factor, step, wavg)
