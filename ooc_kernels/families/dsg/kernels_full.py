"""Hot path of doubly stochastic functional gradients (DSG): the full phase.

Once a model holds all its blocks, every step updates every coefficient: either all blocks
at once for one batch (:func:`dsg_full_update`), or tile by tile over the blocks with the
steps of a super-step simulated in row space (:func:`dsg_tile_forward`,
:func:`dsg_superstep`, :func:`dsg_tile_apply`; ``docs/algorithms/dsg_full_phase.md``).
Conventions, ``params``, ``steps`` and ``kind`` (the feature map's nonlinearity id) are
those of :mod:`ooc_kernels.families.dsg.kernels`.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dsg.kernels_full import dsg_full_update
>>> rng = np.random.default_rng(0)
>>> n, d, m, r = 8, 3, 2, 4
>>> X = rng.normal(size=(n, d)); Y = rng.normal(size=(n, 1))
>>> W = rng.normal(size=(m, d, r)); ph = rng.uniform(0, 2 * np.pi, (m, r))
>>> steps = (np.full(2, 0.5), np.zeros(2, dtype=bool))
>>> coef, avg, n_avg, loss, weight = dsg_full_update(
...     X, Y, np.ones(n), W, ph, np.zeros((m, r, 1)), np.zeros((0, r, 1)), 0, steps,
...     (0.1, 4, 0, 0.5 ** 0.5, 0.0))
>>> coef.shape, weight
((2, 4, 1), 8.0)
"""

from __future__ import annotations

import math

import numpy as np

from ooc_kernels._jit._cache import njit
from ooc_kernels._jit.losses import loss_grad_value
from ooc_kernels._jit.rff import COS_AFFINE, features_inplace
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.losses.reference import loss_grad_value_ref
from ooc_kernels.families.dsg.kernels import _features_ref, _tile_rows
from ooc_kernels.families.dsg.kernels_tasks import (full_buffers, step_gradient, step_task,
                                                    task_position)

__all__ = ["dsg_full_update", "dsg_full_update_ref", "dsg_superstep", "dsg_superstep_ref",
           "dsg_tile_apply", "dsg_tile_apply_ref", "dsg_tile_forward", "dsg_tile_forward_ref"]


#: Bytes of the per-batch feature buffer of :func:`dsg_full_update` (all blocks of one
#: batch).  Past it, the features are recomputed for the gradient instead of kept.
_FULL_BUFFER_BYTES = 64 * 2**20


@njit(cache=True, nogil=True)
def _check_full_update(X, Y, sw, W, phase, coef, avg, steps, b):
    """The argument checks of :func:`dsg_full_update` (and of its parallel version); returns
    the number of steps, ``ceil(n / b)``."""
    gammas, averaged = steps
    n, d = X.shape
    m = W.shape[0]
    r = W.shape[2]
    if b < 1:
        raise ValidationError("dsg_full_update: batch_size must be >= 1")
    n_steps = (n + b - 1) // b
    if gammas.shape[0] != n_steps or averaged.shape[0] != n_steps:
        raise ValidationError("dsg_full_update: gammas and averaged need ceil(n / batch_size) "
                              "entries")
    if W.shape[1] != d or phase.shape[0] != m or phase.shape[1] != r:
        raise ValidationError("dsg_full_update: W must be (m, d, r) and phase (m, r)")
    if coef.shape[0] != m or coef.shape[1] != r or Y.shape[0] != n or sw.shape[0] != n:
        raise ValidationError("dsg_full_update: coef must be (m, r, C), Y (n, C), sw (n,)")
    if avg.shape[0] > 0 and avg.shape[0] != m:
        raise ValidationError("dsg_full_update: avg must be (m, r, C) or (0, r, C)")
    return n_steps


@njit(cache=True, nogil=True)
def dsg_full_update(X, Y, sw, W, phase, coef, avg, n_avg, steps, params,
                    max_buffer_bytes=_FULL_BUFFER_BYTES, kind=COS_AFFINE):
    """Mini-batch steps that update every block of a full model (the capped phase).

    Once a model holds its ``m`` blocks, a step estimates the kernel with all of them,
    ``k(x, x') ~ (1/m) sum_j z_j(x) . z_j(x')``, instead of one new block: the functional
    gradient keeps its expectation (so step sizes keep their meaning) and every coefficient
    is updated.

    Parameters
    ----------
    X : ndarray (n, d), C-contiguous
        Rows in visiting order.
    Y : ndarray (n, C)
        Encoded targets.
    sw : ndarray (n,) float64
        Sample weights.
    W : ndarray (m, d, r), phase : ndarray (m, r)
        All feature blocks of the model.
    coef : ndarray (m, r, C), float64
        The model before this chunk (not modified).
    avg : ndarray (m, r, C) float64, or (0, r, C) without averaging
        The averaged iterate before this chunk (not modified).
    n_avg : int
        Steps averaged so far (the average is over ``n_avg`` models).
    steps, params
        As in :func:`dsg_chunk_update` (one entry per step, ``ceil(n / batch_size)``).
    max_buffer_bytes : int
        The features of one batch for all blocks are kept for the gradient when they fit in
        this many bytes, and recomputed otherwise.

    Returns
    -------
    coef : ndarray (m, r, C), float64
        The model after the steps.  Step ``s`` with batch ``B`` (``nb`` rows):
        ``G = sw l'(f(X[B]), Y[B])``; every coefficient times ``1 - gammas[s] alpha``; then
        ``coef[j] -= gammas[s] / (nb m) * z_j(X[B])^T G`` for every block ``j``.
    avg : ndarray like ``avg``
        ``avg += (coef - avg) / n_avg`` after every averaged step (``n_avg`` counted first).
    n_avg : int
    loss_sum, weight_sum : float
        As in :func:`dsg_chunk_update`.

    Notes
    -----
    Mixed precision: the coefficients are kept and updated in float64 (a master copy);
    the feature GEMMs use their rounding to X's dtype, refreshed after every step, so the
    small updates of late steps are not lost to float32 rounding.  Twin:
    :func:`dsg_full_update_ref`.

    A step runs as tasks over column tiles of the blocks
    (:mod:`~ooc_kernels.families.dsg.kernels_tasks`): the feature products and the sums
    over a block's columns are taken tile by tile, a fixed order given by the model's shape,
    which :func:`~ooc_kernels.families.dsg.kernels_threads.dsg_full_update_threads` keeps
    on any number of threads.
    """
    scale = params[3]
    b = params[1]
    n = X.shape[0]
    C = Y.shape[1]
    m = W.shape[0]
    n_steps = _check_full_update(X, Y, sw, W, phase, coef, avg, steps, b)
    out = coef.astype(np.float64)  # float64 master copy
    mean = avg.astype(np.float64)
    totals = (0.0, 0.0, n_avg)
    if n == 0 or m == 0:
        return out, mean, n_avg, 0.0, 0.0
    low = out.astype(X.dtype)  # its rounding to X's dtype, for the GEMMs
    tiles, bufs = full_buffers(X, W, C, b, max_buffer_bytes, kind)
    n_tasks = m * tiles[0]
    model = (out, low, mean)
    prev = (1.0, 0.0, 0.0)
    for s in range(n_steps + 1):  # pass s: step s - 1's updates, step s's features
        for p in range(n_tasks):
            step_task(task_position(p, n_tasks, s), s, n_steps, X, W, phase, scale, kind, b,
                      tiles, bufs, model, prev)
        if s < n_steps:
            totals, prev = step_gradient(s, n_tasks, Y, sw, steps, params, m, bufs, totals)
    loss_sum, weight_sum, n_avg = totals
    return out, mean, n_avg, loss_sum, weight_sum


def dsg_full_update_ref(X, Y, sw, W, phase, coef, avg, n_avg, steps, params,
                        max_buffer_bytes=None, kind=COS_AFFINE):
    """Numpy twin of :func:`dsg_full_update`: the literal step over all blocks
    (coefficients and their average in float64, features and their products in X's
    dtype)."""
    gammas, averaged = steps
    alpha, batch_size, loss_id, scale, loss_param = params
    X = np.asarray(X)  # one chunk (reference twin, tests only)
    dt = X.dtype
    n, m = X.shape[0], W.shape[0]
    b = int(batch_size)
    out = np.array(coef, dtype=np.float64, copy=True)
    mean = np.array(avg, dtype=np.float64, copy=True)
    loss_sum = weight_sum = 0.0
    for s in range(math.ceil(n / b)):
        rows = slice(s * b, min((s + 1) * b, n))
        nb = rows.stop - rows.start
        Z = [_features_ref(X[rows], W[j], phase[j], scale, kind) for j in range(m)]
        f = sum(Z[j] @ out[j].astype(dt) for j in range(m))
        grad, value = loss_grad_value_ref(loss_id, f, Y[rows], sw[rows], loss_param)
        loss_sum += value
        weight_sum += float(np.sum(sw[rows]))
        factor = 1.0 - gammas[s] * alpha
        out = np.stack([out[j] * factor
                        - gammas[s] / (nb * m) * (Z[j].T @ grad.astype(dt)).astype(np.float64)
                        for j in range(m)])
        if averaged[s]:
            n_avg += 1
            if len(mean):
                mean = mean + (out - mean) / n_avg
    return out, mean, n_avg, loss_sum, weight_sum


# ---------------------------------------------------------------------------------------
# The tiled full phase: super-steps of R rows, blocks in tiles (docs/algorithms/
# dsg_full_phase.md).  Three kernels: forward (predictions at the super-step start and the
# kernel estimate between its rows), the S steps simulated in row space, and the update of
# a tile of blocks.  The driver is ooc_kernels.families.dsg._full_phase.
# ---------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def dsg_tile_forward(X, W, phase, coef, scale, batch_size, F0, K, work, kind=COS_AFFINE):
    """Add one tile of blocks to the predictions ``F0`` and to the kernel estimate ``K`` of
    the ``R`` rows of a super-step.

    Parameters
    ----------
    X : ndarray (R, d), C-contiguous
        The super-step's rows (whole batches of ``batch_size`` rows; the last may be short).
    W : ndarray (t, d, r), phase : ndarray (t, r)
        A tile of ``t`` blocks, X's dtype.
    coef : ndarray (t, r, C) float64
        Their coefficients (rounded to X's dtype for the GEMM, as in :func:`dsg_full_update`).
    scale : float
    batch_size : int
    F0 : ndarray (R, C) float64, accumulated
        ``F0 += sum_j z_j(X) coef_j``.
    K : ndarray (R, R) float64, accumulated, or (0, 0) to skip
        For every pair of batches ``s' < s``: ``K[B_s, B_s'] += sum_j z_j(X_B_s) z_j(X_B_s')^T``
        (the strictly block-lower part: the only part the steps read).
    work : tuple (Z, acc, low, Kt)
        Scratch in X's dtype: ``Z`` (R, r), ``acc`` (R, C), ``low`` (r, C), ``Kt`` (at least
        ``batch_size * (R - batch_size)`` values, 1-D).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.zeros((2, 1)); W = np.zeros((1, 1, 2)); ph = np.zeros((1, 2))
    >>> F0, K = np.zeros((2, 1)), np.zeros((2, 2))
    >>> work = (np.empty((2, 2)), np.empty((2, 1)), np.empty((2, 1)), np.empty(2))
    >>> dsg_tile_forward(X, W, ph, np.ones((1, 2, 1)), 1.0, 1, F0, K, work)
    >>> F0.ravel().tolist(), K.tolist()        # z(x) = (1, 1) for both rows
    ([2.0, 2.0], [[0.0, 0.0], [2.0, 0.0]])

    Notes
    -----
    Twin: :func:`dsg_tile_forward_ref`.
    """
    Z, acc, low, Kt = work
    R, d = X.shape
    t = W.shape[0]
    r = W.shape[2]
    C = coef.shape[2]
    b = batch_size
    if W.shape[1] != d or phase.shape[0] != t or phase.shape[1] != r:
        raise ValidationError("dsg_tile_forward: W must be (t, d, r) and phase (t, r)")
    if coef.shape[0] != t or coef.shape[1] != r or F0.shape[0] != R or F0.shape[1] != C:
        raise ValidationError("dsg_tile_forward: coef must be (t, r, C) and F0 (R, C)")
    if Z.shape[0] < R or Z.shape[1] != r or acc.shape[0] < R or low.shape[0] != r:
        raise ValidationError("dsg_tile_forward: scratch too small")
    with_k = K.shape[0] > 0
    if with_k and (K.shape[0] != R or K.shape[1] != R or Kt.shape[0] < b * (R - b)):
        raise ValidationError("dsg_tile_forward: K must be (R, R) with a Kt of b (R - b)")
    if R == 0:
        return
    Zt = Z[:R]
    At = acc[:R]
    for j in range(t):
        np.dot(X, W[j], Zt)
        features_inplace(kind, Zt, phase[j], scale)
        for k in range(r):
            for c in range(C):
                low[k, c] = coef[j, k, c]
        np.dot(Zt, low, At)
        for i in range(R):
            for c in range(C):
                F0[i, c] += At[i, c]
        if with_k:
            for lo in range(b, R, b):
                hi = min(lo + b, R)
                nb = hi - lo
                Kp = Kt[: nb * lo].reshape((nb, lo))
                np.dot(Zt[lo:hi], Zt[:lo].T, Kp)
                for i in range(nb):
                    for c in range(lo):
                        K[lo + i, c] += Kp[i, c]


def dsg_tile_forward_ref(X, W, phase, coef, scale, batch_size, F0, K, work=None,
                         kind=COS_AFFINE):
    """Numpy twin of :func:`dsg_tile_forward` (features, products in X's dtype)."""
    X = np.asarray(X)  # one super-step of one chunk (reference twin, tests only)
    dt = X.dtype
    R, b = X.shape[0], int(batch_size)
    for j in range(W.shape[0]):
        Z = _features_ref(X, W[j], phase[j], scale, kind)
        F0 += (Z @ coef[j].astype(dt)).astype(np.float64)
        if K.shape[0]:
            for lo in range(b, R, b):
                hi = min(lo + b, R)
                K[lo:hi, :lo] += (Z[lo:hi] @ Z[:lo].T).astype(np.float64)


@njit(cache=True, nogil=True)
def dsg_superstep(F0, K, Y, sw, steps, params, n_blocks, n_avg, work):
    """Run the ``S`` sequential steps of one super-step in row space.

    With the predictions ``F0`` of the model at the super-step start and the kernel
    estimate ``K`` (:func:`dsg_tile_forward`), step ``s`` (batch ``B_s``, ``nb`` rows) sees

    ``f_s = P_s F0[B_s] + sum_{s' < s} K[B_s, B_s'] V[B_s']``,

    where ``P_s`` is the product of the earlier step factors ``1 - gamma alpha`` and
    ``V[B_s'] = -gamma_s' / (nb_s' m) G_s'`` times the factors of the steps between ``s'``
    and ``s``: the model after the steps is ``coef_j P + z_j(X)^T V``, exactly the model
    the steps of :func:`dsg_full_update` reach.

    Parameters
    ----------
    F0 : ndarray (R, C) float64
    K : ndarray (R, R) float64, or (0, 0) when the super-step is one batch
    Y : ndarray (R, C), sw : ndarray (R,) float64
    steps, params
        As in :func:`dsg_full_update`, one step per batch of the super-step.
    n_blocks : int
        ``m``, the number of blocks.
    n_avg : int
        Steps averaged so far.
    work : tuple (G, fb, V, Va, U, Ua)
        ``G`` (R, C), ``fb`` (batch_size, C), ``U`` and ``Ua`` (R, C) in X's dtype;
        ``V`` and ``Va`` (R, C) float64.  On return ``U = V`` and ``Ua = Va`` rounded to
        X's dtype: the model's change is ``z_j(X)^T U`` and the averaged iterate's
        ``z_j(X)^T Ua``.

    Returns
    -------
    decay : float
        ``P``: the model after the super-step is ``decay coef_j + z_j(X)^T U``.
    avg_a, avg_b : float
        The averaged iterate after it is ``avg_a avg_j + avg_b coef_j + z_j(X)^T Ua``
        (``coef_j`` the model at the super-step start).
    n_avg : int
    loss_sum, weight_sum : float

    Examples
    --------
    >>> import numpy as np
    >>> F0 = np.zeros((2, 1)); K = np.array([[0.0, 0.0], [4.0, 0.0]])
    >>> Y = np.ones((2, 1)); sw = np.ones(2)
    >>> steps = (np.array([0.5, 0.5]), np.zeros(2, dtype=bool))
    >>> work = (np.empty((2, 1)), np.empty((1, 1)), np.empty((2, 1)), np.empty((2, 1)),
    ...         np.empty((2, 1)), np.empty((2, 1)))
    >>> out = dsg_superstep(F0, K, Y, sw, steps, (0.0, 1, 0, 1.0, 0.0), 2, 0, work)
    >>> out[0], work[4].ravel().tolist()     # step 1 sees f = 4 * (-0.25 * -1) = 1
    (1.0, [0.25, -0.0])

    Notes
    -----
    Twin: :func:`dsg_superstep_ref`.
    """
    gammas, averaged = steps
    alpha, batch_size, loss_id, scale, loss_param = params
    G, fb, V, Va, U, Ua = work
    R, C = F0.shape
    b = batch_size
    S = (R + b - 1) // b
    if gammas.shape[0] != S or averaged.shape[0] != S:
        raise ValidationError("dsg_superstep: gammas and averaged need one entry per batch")
    if S > 1 and (K.shape[0] != R or K.shape[1] != R):
        raise ValidationError("dsg_superstep: K must be (R, R) for more than one batch")
    if Y.shape[0] != R or sw.shape[0] != R or G.shape[0] < R or V.shape[0] < R:
        raise ValidationError("dsg_superstep: Y (R, C), sw (R,) and the scratch must agree")
    decay = 1.0
    avg_a = 1.0
    avg_b = 0.0
    loss_sum = 0.0
    weight_sum = 0.0
    for i in range(R):
        for c in range(C):
            V[i, c] = 0.0
            Va[i, c] = 0.0
    for s in range(S):
        lo = s * b
        hi = min(lo + b, R)
        nb = hi - lo
        fs = fb[:nb]
        for i in range(nb):
            for c in range(C):
                acc = decay * F0[lo + i, c]
                for k in range(lo):
                    acc += K[lo + i, k] * V[k, c]
                fs[i, c] = acc
        Gs = G[lo:hi]
        loss_sum += loss_grad_value(loss_id, fs, Y[lo:hi], sw[lo:hi], Gs, loss_param)
        for i in range(lo, hi):
            weight_sum += sw[i]
        factor = 1.0 - gammas[s] * alpha
        step = -gammas[s] / (nb * n_blocks)
        for i in range(lo):
            for c in range(C):
                V[i, c] *= factor
        for i in range(lo, hi):
            for c in range(C):
                V[i, c] = step * np.float64(G[i, c])
        decay *= factor
        if averaged[s]:
            n_avg += 1
            w = 1.0 / n_avg
            avg_a *= 1.0 - w
            avg_b = avg_b * (1.0 - w) + w * decay
            for i in range(hi):
                for c in range(C):
                    Va[i, c] = Va[i, c] * (1.0 - w) + w * V[i, c]
    for i in range(R):
        for c in range(C):
            U[i, c] = V[i, c]
            Ua[i, c] = Va[i, c]
    return decay, avg_a, avg_b, n_avg, loss_sum, weight_sum


def dsg_superstep_ref(F0, K, Y, sw, steps, params, n_blocks, n_avg, dtype):
    """Numpy twin of :func:`dsg_superstep`, written as the recursion over the model's
    change: returns ``(U, Ua, decay, avg_a, avg_b, n_avg, loss_sum, weight_sum)`` with
    ``U`` and ``Ua`` in ``dtype``."""
    gammas, averaged = steps
    alpha, batch_size, loss_id, scale, loss_param = params
    dt = np.dtype(dtype)
    R, C = F0.shape
    b = int(batch_size)
    V = np.zeros((R, C))
    Va = np.zeros((R, C))
    decay, avg_a, avg_b, loss_sum, weight_sum = 1.0, 1.0, 0.0, 0.0, 0.0
    for s in range(math.ceil(R / b)):
        rows = slice(s * b, min((s + 1) * b, R))
        nb = rows.stop - rows.start
        f = decay * F0[rows]
        if rows.start:
            f = f + K[rows, :rows.start] @ V[:rows.start]
        grad, value = loss_grad_value_ref(loss_id, f.astype(dt), Y[rows], sw[rows], loss_param)
        loss_sum += value
        weight_sum += float(np.sum(sw[rows]))
        factor = 1.0 - gammas[s] * alpha
        V = V * factor
        V[rows] = -gammas[s] / (nb * n_blocks) * grad.astype(dt).astype(np.float64)
        decay *= factor
        if averaged[s]:
            n_avg += 1
            w = 1.0 / n_avg
            avg_a, avg_b = avg_a * (1 - w), avg_b * (1 - w) + w * decay
            Va = Va * (1 - w) + w * V
    return V.astype(dt), Va.astype(dt), decay, avg_a, avg_b, n_avg, loss_sum, weight_sum


@njit(cache=True, nogil=True)
def dsg_tile_apply(X, W, phase, coef, avg, U, Ua, coeffs, scale, work, kind=COS_AFFINE):
    """Apply a super-step to one tile of blocks, in place.

    ``avg_j <- avg_a avg_j + avg_b coef_j + z_j(X)^T Ua`` (when ``avg`` is not empty), then
    ``coef_j <- decay coef_j + z_j(X)^T U``, with ``(decay, avg_a, avg_b) = coeffs`` and
    ``U``, ``Ua`` from :func:`dsg_superstep`.

    Parameters
    ----------
    X : ndarray (R, d), W : ndarray (t, d, r), phase : ndarray (t, r)
    coef : ndarray (t, r, C) float64, updated in place
    avg : ndarray (t, r, C) float64 updated in place, or (0, r, C)
    U, Ua : ndarray (R, C), X's dtype
    coeffs : tuple (decay, avg_a, avg_b)
    scale : float
    work : tuple (Z, delta)
        Scratch in X's dtype: ``Z`` (R, r) and ``delta`` (r, C).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.zeros((1, 1)); W = np.zeros((1, 1, 2)); ph = np.zeros((1, 2))
    >>> coef = np.ones((1, 2, 1)); U = np.full((1, 1), 0.5)
    >>> work = (np.empty((1, 2)), np.empty((2, 1)))
    >>> dsg_tile_apply(X, W, ph, coef, np.zeros((0, 2, 1)), U, U, (0.5, 1.0, 0.0), 1.0, work)
    >>> coef.ravel().tolist()                  # 0.5 * 1 + 1 * 0.5
    [1.0, 1.0]

    Notes
    -----
    Twin: :func:`dsg_tile_apply_ref`.
    """
    decay, avg_a, avg_b = coeffs
    Z, delta = work
    R, d = X.shape
    t = W.shape[0]
    r = W.shape[2]
    C = coef.shape[2]
    if W.shape[1] != d or phase.shape[0] != t or phase.shape[1] != r:
        raise ValidationError("dsg_tile_apply: W must be (t, d, r) and phase (t, r)")
    if coef.shape[0] != t or coef.shape[1] != r or U.shape[0] != R or U.shape[1] != C:
        raise ValidationError("dsg_tile_apply: coef must be (t, r, C) and U (R, C)")
    averaging = avg.shape[0] > 0
    if averaging and (avg.shape[0] != t or Ua.shape[0] != R):
        raise ValidationError("dsg_tile_apply: avg must be (t, r, C) or (0, r, C)")
    Zt = Z[:R]
    for j in range(t):
        if R:
            np.dot(X, W[j], Zt)
            features_inplace(kind, Zt, phase[j], scale)
        if averaging:
            if R:
                np.dot(Zt.T, Ua, delta)
            else:
                delta[:, :] = 0.0
            for k in range(r):
                for c in range(C):
                    avg[j, k, c] = avg_a * avg[j, k, c] + avg_b * coef[j, k, c] + delta[k, c]
        if R:
            np.dot(Zt.T, U, delta)
        else:
            delta[:, :] = 0.0
        for k in range(r):
            for c in range(C):
                coef[j, k, c] = decay * coef[j, k, c] + delta[k, c]


def dsg_tile_apply_ref(X, W, phase, coef, avg, U, Ua, coeffs, scale, work=None,
                       kind=COS_AFFINE):
    """Numpy twin of :func:`dsg_tile_apply` (in place on ``coef`` and ``avg``)."""
    decay, avg_a, avg_b = coeffs
    X = np.asarray(X)  # one super-step of one chunk (reference twin, tests only)
    for j in range(W.shape[0]):
        Z = _features_ref(X, W[j], phase[j], scale, kind)
        if len(avg):
            avg[j] = avg_a * avg[j] + avg_b * coef[j] + (Z.T @ Ua).astype(np.float64)
        coef[j] = decay * coef[j] + (Z.T @ U).astype(np.float64)
