"""Parallel versions of the DSG kernels whose result does not depend on the thread count.

Each kernel splits its work by a partition fixed by the problem, never by the threads, and
keeps every sum in the order of the sequential kernel, so its output is bit-identical to the
sequential kernel's for 1, 2, 3 ... threads (``docs/threads.md``):

* :func:`dsg_full_update_threads` (twin of
  :func:`~ooc_kernels.families.dsg.kernels_full.dsg_full_update`): per step, the threads
  share the blocks ``j``: each computes its features ``Z_j`` and its partial prediction
  ``P_j = Z_j low_j`` into a buffer of its own; one thread sums ``F = P_0 + P_1 + ...`` in
  block order (the sequential kernel's order) and takes the loss gradient; the threads share
  the blocks again for ``Z_j^T G`` (never split over rows) and the update of block ``j``'s
  coefficients and of their average.  When every block's features are kept (the default
  models), block ``j``'s update of step ``s`` runs in the same parallel region as its
  features and partial prediction of step ``s + 1`` (it needs nothing of the other blocks):
  one synchronisation per step instead of two, the same operations on every value;
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
from ooc_kernels._jit.losses import loss_grad_value
from ooc_kernels._jit.rff import COS_AFFINE, features_inplace
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dsg.kernels import _tile_rows, add_tile_predictions, dsg_predict
from ooc_kernels.families.dsg.kernels_full import (_FULL_BUFFER_BYTES, _check_full_update,
                                                   block_step, dsg_full_update)
from ooc_kernels._threads import current_threads, launch

__all__ = ["dsg_full_update_threads", "dsg_predict_threads", "full_update", "predict"]


@njit(cache=True, nogil=True)
def _block_update(Zj, G, delta, out, low, mean, j, averaging, factor, step, w):
    """Block ``j``'s update of one step (:func:`block_step`) and of its average."""
    block_step(Zj, G, delta, out[j], low[j], factor, step)
    if averaging and w > 0.0:
        r, C = delta.shape
        for k in range(r):
            for c in range(C):
                mean[j, k, c] += (out[j, k, c] - mean[j, k, c]) * w


@njit(cache=True, nogil=True, parallel=True)
def dsg_full_update_threads(X, Y, sw, W, phase, coef, avg, n_avg, steps, params,
                            max_buffer_bytes=_FULL_BUFFER_BYTES, kind=COS_AFFINE):
    """:func:`~ooc_kernels.families.dsg.kernels_full.dsg_full_update` with the blocks of
    every step shared by the threads: same arguments, same result bit for bit.

    The features of as many blocks as fit in ``max_buffer_bytes`` are kept between the
    prediction and the gradient (all of them in the sequential kernel's "kept" case, else
    groups of blocks, recomputed for the gradient as the sequential kernel does).
    """
    gammas, averaged = steps
    alpha, batch_size, loss_id, scale, loss_param = params
    n, d = X.shape
    C = Y.shape[1]
    m = W.shape[0]
    r = W.shape[2]
    b = batch_size
    n_steps = _check_full_update(X, Y, sw, W, phase, coef, avg, steps, b)
    out = coef.astype(np.float64)
    mean = avg.astype(np.float64)
    averaging = mean.shape[0] > 0
    loss_sum = 0.0
    weight_sum = 0.0
    if n == 0 or m == 0:
        return out, mean, n_avg, loss_sum, weight_sum
    low = out.astype(X.dtype)
    nbmax = min(b, n)
    # blocks whose features are held at once: all of them when they fit (the sequential
    # kernel's "keep"), else groups that fit; a group's blocks are recomputed for the gradient
    per_block = nbmax * r * X.itemsize
    group = m if m * per_block <= max_buffer_bytes else max(1, max_buffer_bytes // per_block)
    keep = group >= m
    Zall = np.empty((group, nbmax, r), dtype=X.dtype)
    P = np.empty((m, nbmax, C), dtype=X.dtype)  # partial predictions, one per block
    D = np.empty((m, r, C), dtype=X.dtype)  # Z_j^T G, one per block
    Fb = np.empty((nbmax, C), dtype=X.dtype)
    G = np.empty((nbmax, C), dtype=X.dtype)
    # with every block's features kept, step s's update of block j (which needs only block
    # j's features and the gradient G of step s) runs in the same parallel region as step
    # s + 1's features and partial prediction of block j: one region per step, not two
    p_nb, p_factor, p_step, p_w = 0, 1.0, 0.0, 0.0
    for s in range(n_steps):
        lo = s * b
        hi = min(lo + b, n)
        nb = hi - lo
        Xb = X[lo:hi]
        if keep:
            for j in prange(m):
                if s > 0:  # the previous step's update of block j, from its kept features
                    _block_update(Zall[j, :p_nb], G[:p_nb], D[j], out, low, mean, j,
                                  averaging, p_factor, p_step, p_w)
                Zj = Zall[j, :nb]
                np.dot(Xb, W[j], Zj)
                features_inplace(kind, Zj, phase[j], scale)
                np.dot(Zj, low[j], P[j, :nb])
        else:
            for g0 in range(0, m, group):
                g1 = min(g0 + group, m)
                for j in prange(g0, g1):
                    Zj = Zall[j - g0, :nb]
                    np.dot(Xb, W[j], Zj)
                    features_inplace(kind, Zj, phase[j], scale)
                    np.dot(Zj, low[j], P[j, :nb])
        Fs = Fb[:nb]
        Fs[:, :] = 0.0
        for j in range(m):  # the sequential kernel's order: block 0, 1, ...
            Fs += P[j, :nb]
        Gs = G[:nb]
        loss_sum += loss_grad_value(loss_id, Fs, Y[lo:hi], sw[lo:hi], Gs, loss_param)
        for i in range(lo, hi):
            weight_sum += sw[i]
        factor = 1.0 - gammas[s] * alpha
        step = -gammas[s] / (nb * m)
        w = 0.0
        if averaged[s]:
            n_avg += 1
            w = 1.0 / n_avg
        if keep:  # applied in the next step's region, or after the last step
            p_nb, p_factor, p_step, p_w = nb, factor, step, w
            continue
        for g0 in range(0, m, group):
            g1 = min(g0 + group, m)
            for j in prange(g0, g1):
                Zj = Zall[j - g0, :nb]
                np.dot(Xb, W[j], Zj)
                features_inplace(kind, Zj, phase[j], scale)
                _block_update(Zj, Gs, D[j], out, low, mean, j, averaging, factor, step, w)
    if keep and n_steps > 0:  # the last step's update
        for j in prange(m):
            _block_update(Zall[j, :p_nb], G[:p_nb], D[j], out, low, mean, j, averaging,
                          p_factor, p_step, p_w)
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
