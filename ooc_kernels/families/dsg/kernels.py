"""Hot path of doubly stochastic functional gradients (DSG): prediction and the growth phase.

Model: ``f(x) = sum_j z_j(x) @ coef[j]`` with feature blocks
``z_j(x) = scale * cos(x @ W[j] + phase[j])`` (``scale = sqrt(2 / r)``), ``coef[j]`` of
shape ``(r, C)``.  The nonlinearity is the feature map's
(:mod:`ooc_kernels.features.maps`): every kernel takes its id as ``kind`` and applies it
with :func:`ooc_kernels._jit.rff.features_inplace` (``COS_AFFINE``, the cosine above, is
the default).  The full-phase kernels are in :mod:`ooc_kernels.families.dsg.kernels_full`.  See ``docs/algorithms/dsg_kernels.md`` for the conventions and the proof
that :func:`dsg_chunk_update` plus the caller's combination rule equals Algorithm 1.

Both kernels work tile by tile over the rows (``_TILE_BYTES`` of features per tile), so
memory is ``O(tile * r)`` whatever ``n`` and ``m``; every GEMM is ``np.dot`` on C-contiguous
2-D slices (BLAS) and the nonlinearity is :func:`ooc_kernels._jit.rff.features_inplace`.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dsg.kernels import dsg_predict, dsg_chunk_update
>>> rng = np.random.default_rng(0)
>>> n, d, r, b = 10, 3, 4, 4                       # 3 steps, the last batch has 2 rows
>>> X = rng.normal(size=(n, d)); Y = rng.normal(size=(n, 1))
>>> W = rng.normal(size=(3, d, r)); ph = rng.uniform(0, 2 * np.pi, (3, r))
>>> steps = (np.full(3, 0.5), np.ones(3, dtype=bool))    # step sizes, averaged steps
>>> params = (0.1, b, 0, 0.5 ** 0.5, 0.0)    # alpha, batch_size, loss_id, scale, loss_param
>>> coef, decay, avg_new, avg_old, n_avg, loss, weight = dsg_chunk_update(
...     X, Y, np.ones(n), np.zeros((n, 1)), W, ph, steps, params)
>>> coef.shape, round(decay, 6), n_avg, weight
((3, 4, 1), 0.857375, 3, 10.0)
>>> dsg_predict(X, W, ph, coef, 0.5 ** 0.5).shape
(10, 1)
"""

from __future__ import annotations

import math

import numpy as np

from ooc_kernels._jit._cache import njit
from ooc_kernels._jit.losses import loss_grad_value
from ooc_kernels._jit.rff import COS_AFFINE, features_inplace, features_inplace_ref
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.losses.reference import loss_grad_value_ref

__all__ = ["dsg_chunk_update", "dsg_chunk_update_ref", "dsg_predict", "dsg_predict_ref",
           "grow_tile", "growth_batch", "growth_buffers", "growth_finish", "growth_start"]

#: Bytes of the feature tile ``(rows, r)`` evaluated at once (2 MiB: best of 0.5/1/2/4 MiB on a
#: 2-core Zen 5 for d = 256, r = 256..1024; see docs/algorithms/dsg_kernels.md).
_TILE_BYTES = 1 << 21
_MIN_TILE_ROWS = 64


@njit(cache=True, nogil=True)
def _tile_rows(r, itemsize):
    rows = _TILE_BYTES // max(1, r * itemsize)
    return max(_MIN_TILE_ROWS, rows)


@njit(cache=True, nogil=True)
def dsg_predict(X, W, phase, coef, scale, kind=COS_AFFINE):
    """Decision values ``F = sum_j scale * cos(X @ W[j] + phase[j]) @ coef[j]``.

    Parameters
    ----------
    X : ndarray (n, d), C-contiguous, float32 or float64
    W : ndarray (m, d, r), C-contiguous, X's dtype
    phase : ndarray (m, r), X's dtype
    coef : ndarray (m, r, C), X's dtype
    scale : float
        ``sqrt(2 / r)``.
    kind : int
        The feature map's nonlinearity id (:data:`ooc_kernels._jit.rff.NONLINEARITIES`).

    Returns
    -------
    F : ndarray (n, C) in X's dtype (accumulated in float64 across blocks).

    Notes
    -----
    Rows are processed in tiles and blocks one at a time: memory ``O(tile * r)``, never
    ``O(n * m * r)``.  Twin: :func:`dsg_predict_ref`.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.zeros((2, 1)); W = np.zeros((1, 1, 2)); ph = np.zeros((1, 2))
    >>> coef = np.ones((1, 2, 1))
    >>> dsg_predict(X, W, ph, coef, 1.0).ravel().tolist()    # cos(0) * 1 + cos(0) * 1
    [2.0, 2.0]
    """
    n, d = X.shape
    m = W.shape[0]
    r = W.shape[2]
    C = coef.shape[2]
    if W.shape[1] != d or phase.shape[0] != m or phase.shape[1] != r:
        raise ValidationError("dsg_predict: W must be (m, d, r) and phase (m, r) for X (n, d)")
    if coef.shape[0] != m or coef.shape[1] != r:
        raise ValidationError("dsg_predict: coef must be (m, r, C) matching W (m, d, r)")
    out = np.zeros((n, C), dtype=np.float64)
    if n == 0 or m == 0 or r == 0 or C == 0:
        return out.astype(X.dtype)
    tile = min(_tile_rows(r, X.itemsize), n)
    Z = np.empty((tile, r), dtype=X.dtype)
    acc = np.empty((tile, C), dtype=X.dtype)
    for start in range(0, n, tile):
        stop = min(start + tile, n)
        add_tile_predictions(X[start:stop], W, phase, coef, scale, kind,
                             Z[:stop - start], acc[:stop - start], out[start:stop])
    return out.astype(X.dtype)


@njit(cache=True, nogil=True)
def add_tile_predictions(Xt, W, phase, coef, scale, kind, Zt, At, out):
    """``out += sum_j scale * f(Xt @ W[j] + phase[j]) @ coef[j]``, block by block in order
    (``Zt`` (rows, r) and ``At`` (rows, C): work buffers): the tile step of
    :func:`dsg_predict` and of its parallel version, so both add the same numbers in the same
    order."""
    k, C = At.shape
    for j in range(W.shape[0]):
        np.dot(Xt, W[j], Zt)
        features_inplace(kind, Zt, phase[j], scale)
        np.dot(Zt, coef[j], At)
        for i in range(k):
            for c in range(C):
                out[i, c] += At[i, c]


def _features_ref(X, W, phase, scale, kind=COS_AFFINE):
    P = X @ W
    features_inplace_ref(kind, P, phase, scale)
    return P


def dsg_predict_ref(X, W, phase, coef, scale, kind=COS_AFFINE):
    """Numpy twin of :func:`dsg_predict`: the literal sum over blocks, in X's dtype."""
    X = np.asarray(X)  # one chunk (reference twin, tests only)
    F = np.zeros((X.shape[0], coef.shape[2]), dtype=X.dtype)
    for j in range(W.shape[0]):
        F += _features_ref(X, W[j], phase[j], scale, kind) @ coef[j]
    return F


@njit(cache=True, nogil=True)
def dsg_chunk_update(X, Y, sw, F, W, phase, steps, params, kind=COS_AFFINE):
    """Run the local mini-batch DSG iterations of one chunk (the growth phase).

    Parameters
    ----------
    X : ndarray (n, d), C-contiguous, float32 or float64
        The chunk's rows in visiting order.
    Y : ndarray (n, C)
        Encoded targets (see :mod:`ooc_kernels.losses.registry`).
    sw : ndarray (n,) float64
        Sample weights: row ``i``'s loss derivative (and loss) is multiplied by ``sw[i]``.
    F : ndarray (n, C), C-contiguous, **overwritten**
        On entry: predictions of the model as it stood before this chunk.  On return: row
        ``i`` of batch ``s`` holds the prediction the step-``s`` gradient used (the model after
        steps ``0 .. s-1`` of this chunk), i.e. progressive-validation predictions.
    W : ndarray (m, d, r), phase : ndarray (m, r)
        Feature block used at local step ``s``, ``m = ceil(n / batch_size)``.
    steps : tuple (gammas, averaged)
        ``gammas`` (m,) float64: the step sizes; ``averaged`` (m,) bool: whether the model
        after each step counts in the averaged iterate.
    params : tuple (alpha, batch_size, loss_id, scale, loss_param)
        ``alpha``: the regularisation ``nu`` (coefficient of ``||f||^2 / 2``);
        ``batch_size`` ``b``: step ``s`` uses rows ``[s b, min((s + 1) b, n))`` (the last one
        may be short); ``loss_id``: see :func:`ooc_kernels._jit.losses.loss_gradient`;
        ``scale``: ``sqrt(2 / r)``; ``loss_param``: the loss's scalar hyperparameter.
    kind : int
        The feature map's nonlinearity id (:data:`ooc_kernels._jit.rff.NONLINEARITIES`).

    Returns
    -------
    new_coef : ndarray (m, r, C), float64
        Coefficients of the ``m`` new blocks after all later decays inside this chunk.
        They are formed and decayed in float64 from the batch gradients ``Z^T G`` (computed
        in X's dtype); the running predictions use their rounding to X's dtype.
    decay : float
        ``prod_s (1 - gammas[s] * alpha)``; the caller multiplies all older coefficients by it.
    avg_new : ndarray (m, r, C) float64, or (0, r, C) when no step is averaged
        ``sum over averaged steps of the new block's coefficient after that step``.
    avg_old : float
        ``sum over averaged steps s of prod_{v <= s} (1 - gammas[v] alpha)``: the older
        coefficients contribute ``avg_old * coef`` to the sum of averaged iterates.
    n_avg : int
        Steps averaged.
    loss_sum, weight_sum : float
        Weighted loss of the progressive predictions, and the sum of the weights.

    Notes
    -----
    Step ``s`` with batch ``B`` (``nb`` rows): ``Z = scale cos(X[B] W[s] + phase[s])``,
    ``G = sw l'(F[B], Y[B])``, ``delta = -(gammas[s] / nb) Z^T G``; every earlier coefficient
    and the running ``F`` of the unvisited rows are multiplied by ``1 - gammas[s] alpha``; the
    new block enters undecayed (Algorithm 1 steps 5-6) and the unvisited rows get
    ``F += Z(X_rest) delta``.  The decays of the new blocks are applied at the end as suffix
    products of the step factors (exact, also when a factor is 0), and so are the sums of
    the averaged iterates: with ``R_s = a_s + d_{s+1} R_{s+1}`` (``a_s`` the averaged flag,
    ``d_s`` the step factor), block ``s`` contributes ``new_s R_s`` and the older blocks
    ``d_0 R_0``.  Twin: :func:`dsg_chunk_update_ref`.
    """
    new_coef, factors, avg_new, n_avg, tile, bufs = growth_start(X, Y, sw, F, W, phase,
                                                                 steps, params)
    n = X.shape[0]
    b = params[1]
    Zt_buf, acc = bufs[4], bufs[5]
    totals = (1.0, 0.0, 0.0)  # decay, loss_sum, weight_sum
    for s in range(new_coef.shape[0]):
        factor, totals = growth_batch(s, X, Y, sw, F, W, phase, steps, params, kind, bufs,
                                      new_coef, factors, totals)
        hi = min(s * b + b, n)
        for start in range(hi, n, tile):  # the rows not visited yet, tile by tile
            stop = min(start + tile, n)
            grow_tile(X[start:stop], F[start:stop], W[s], phase[s], bufs[3], factor,
                      params[3], kind, Zt_buf[:stop - start], acc[:stop - start])
    decay, loss_sum, weight_sum = totals
    avg_old = growth_finish(new_coef, factors, steps[1], n_avg, avg_new)
    return new_coef, decay, avg_new, avg_old, n_avg, loss_sum, weight_sum


@njit(cache=True, nogil=True)
def growth_start(X, Y, sw, F, W, phase, steps, params):
    """Check the arguments of :func:`dsg_chunk_update`; returns its zeroed outputs, its
    tile of rows and its work buffers: ``(new_coef, factors, avg_new, n_avg, tile,
    bufs)`` (:func:`growth_buffers`)."""
    gammas, averaged = steps
    n, d = X.shape
    C = Y.shape[1]
    m = W.shape[0]
    r = W.shape[2]
    b = params[1]
    if b < 1:
        raise ValidationError("dsg_chunk_update: batch_size must be >= 1")
    if m != (n + b - 1) // b:
        raise ValidationError("dsg_chunk_update: W must hold ceil(n / batch_size) blocks")
    if W.shape[1] != d or phase.shape[0] != m or phase.shape[1] != r:
        raise ValidationError("dsg_chunk_update: W must be (m, d, r) and phase (m, r)")
    if Y.shape[0] != n or F.shape[0] != n or F.shape[1] != C or sw.shape[0] != n:
        raise ValidationError("dsg_chunk_update: X (n, d), Y (n, C), sw (n,) and F (n, C) "
                              "must agree")
    if gammas.shape[0] != m or averaged.shape[0] != m:
        raise ValidationError("dsg_chunk_update: gammas and averaged need one entry per step")
    n_avg = 0
    for s in range(m):
        if averaged[s]:
            n_avg += 1
    tile = min(_tile_rows(r, X.itemsize), n)
    return (np.zeros((m, r, C), dtype=np.float64), np.empty(m, dtype=np.float64),
            np.zeros((m if n_avg else 0, r, C), dtype=np.float64), n_avg, tile,
            growth_buffers(X, C, r, b, tile))


@njit(cache=True, nogil=True)
def growth_buffers(X, C, r, b, tile):
    """The work buffers of :func:`dsg_chunk_update`: ``(Zb, G, delta, dcoef, Zt, At)``: the
    batch's features and loss gradient, ``Z^T G``, the new block rounded to X's dtype (for
    its products), and one tile's features and contribution."""
    n = X.shape[0]
    return (np.empty((min(b, n), r), dtype=X.dtype), np.empty((min(b, n), C), dtype=X.dtype),
            np.empty((r, C), dtype=X.dtype), np.empty((r, C), dtype=X.dtype),
            np.empty((tile, r), dtype=X.dtype), np.empty((tile, C), dtype=X.dtype))


@njit(cache=True, nogil=True)
def growth_batch(s, X, Y, sw, F, W, phase, steps, params, kind, bufs, new_coef, factors,
                 totals):
    """Step ``s`` of :func:`dsg_chunk_update` on its own batch: the features, loss and loss
    gradient at the running predictions ``F``, the new block's coefficients
    (``new_coef[s]``, and their rounding in ``bufs``) and the step's factor
    (``factors[s]``).  Returns ``(factor, totals)``, ``totals = (decay, loss_sum,
    weight_sum)`` so far."""
    gammas = steps[0]
    alpha, b, loss_id, scale, loss_param = params
    Zb, G, delta, dcoef = bufs[0], bufs[1], bufs[2], bufs[3]
    decay, loss_sum, weight_sum = totals
    n = X.shape[0]
    r = W.shape[2]
    C = Y.shape[1]
    lo = s * b
    hi = min(lo + b, n)
    nb = hi - lo
    Zs = Zb[:nb]
    np.dot(X[lo:hi], W[s], Zs)
    features_inplace(kind, Zs, phase[s], scale)
    Gs = G[:nb]
    loss_sum += loss_grad_value(loss_id, F[lo:hi], Y[lo:hi], sw[lo:hi], Gs, loss_param)
    for i in range(lo, hi):
        weight_sum += sw[i]
    np.dot(Zs.T, Gs, delta)
    step = -gammas[s] / nb
    for k in range(r):
        for c in range(C):
            v = step * delta[k, c]
            new_coef[s, k, c] = v
            dcoef[k, c] = v
    factor = 1.0 - gammas[s] * alpha
    factors[s] = factor
    return factor, (decay * factor, loss_sum, weight_sum)


@njit(cache=True, nogil=True)
def grow_tile(Xt, Ft, Ws, ph, dcoef, factor, scale, kind, Zt, At):
    """The running predictions ``Ft`` of a tile of rows not visited yet after a growth step:
    decayed by ``factor``, plus the new block's contribution ``f(Xt Ws + ph) dcoef``."""
    np.dot(Xt, Ws, Zt)
    features_inplace(kind, Zt, ph, scale)
    np.dot(Zt, dcoef, At)
    k, C = At.shape
    for i in range(k):
        for c in range(C):
            Ft[i, c] = Ft[i, c] * factor + At[i, c]


@njit(cache=True, nogil=True)
def growth_finish(new_coef, factors, averaged, n_avg, avg_new):
    """The later decays of the new blocks (suffix products, in place) and their averaged
    sums (``avg_new``, the ``R_s`` of :func:`dsg_chunk_update`); returns ``avg_old``."""
    m, r, C = new_coef.shape
    suffix = 1.0
    running = 0.0  # R_{s+1}
    for s in range(m - 1, -1, -1):
        nxt = factors[s + 1] if s + 1 < m else 0.0
        weight = (1.0 if averaged[s] else 0.0) + nxt * running  # R_s
        running = weight
        if n_avg:
            for k in range(r):
                for c in range(C):
                    avg_new[s, k, c] = new_coef[s, k, c] * weight
        if suffix != 1.0:
            for k in range(r):
                for c in range(C):
                    new_coef[s, k, c] = new_coef[s, k, c] * suffix
        suffix *= factors[s]
    return factors[0] * running if n_avg else 0.0


def dsg_chunk_update_ref(X, Y, sw, F, W, phase, steps, params, kind=COS_AFFINE):
    """Numpy twin of :func:`dsg_chunk_update`, written literally.

    Each batch prediction is recomputed from scratch as ``F_start * decay_so_far`` plus the
    contributions of the new blocks with their coefficients as they stand; coefficients are
    decayed explicitly at every step, and the averaged sums are accumulated step by step.
    ``F`` is not modified.  Cost ``O(m^2)`` blocks: tests only.
    """
    gammas, averaged = steps
    alpha, batch_size, loss_id, scale, loss_param = params
    X = np.asarray(X)  # one chunk (reference twin, tests only)
    dt = X.dtype
    n = X.shape[0]
    b = int(batch_size)
    m = math.ceil(n / b)
    if W.shape[0] != m:
        raise ValidationError(f"W must hold ceil(n / batch_size) = {m} blocks; got {W.shape[0]}")
    F_start = np.array(F, dtype=dt, copy=True)
    coefs: list[np.ndarray] = []
    sums: list[np.ndarray] = []
    decay, avg_old, n_avg, loss_sum, weight_sum = 1.0, 0.0, 0, 0.0, 0.0
    for s in range(m):
        rows = slice(s * b, min((s + 1) * b, n))
        nb = rows.stop - rows.start
        pred = F_start[rows] * dt.type(decay)
        for t in range(s):
            pred = pred + (_features_ref(X[rows], W[t], phase[t], scale, kind)
                           @ coefs[t].astype(dt))
        grad, value = loss_grad_value_ref(loss_id, pred, Y[rows], sw[rows], loss_param)
        loss_sum += value
        weight_sum += float(np.sum(sw[rows]))
        Z = _features_ref(X[rows], W[s], phase[s], scale, kind)
        # the gradient Z^T G in X's dtype; the coefficient itself in float64
        new = -(gammas[s] / nb) * (Z.T @ grad.astype(dt)).astype(np.float64)
        factor = 1.0 - gammas[s] * alpha
        coefs = [c * factor for c in coefs]  # step 6: decay the older blocks
        decay *= factor
        coefs.append(new)  # step 5: the new block, not decayed at its own step
        sums.append(np.zeros_like(new))
        if averaged[s]:  # the model after this step counts in the average
            n_avg += 1
            avg_old += decay
            sums = [acc + c for acc, c in zip(sums, coefs)]
    r, C = W.shape[2], Y.shape[1]
    if m == 0:
        return (np.zeros((0, r, C)), 1.0, np.zeros((0, r, C)), 0.0, 0, 0.0, 0.0)
    avg_new = np.stack(sums) if n_avg else np.zeros((0, r, C))
    return np.stack(coefs), decay, avg_new, avg_old, n_avg, loss_sum, weight_sum
