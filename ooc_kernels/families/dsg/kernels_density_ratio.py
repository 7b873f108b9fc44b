"""Hot path of the DSG density-ratio estimator: the steps of one task over two samples.

The estimator (:mod:`ooc_kernels.families.dsg.density_ratio`) minimizes Nguyen, Wainwright
and Jordan's objective (KL case, Dai et al. 2014 Eq. 8)

    ``R(f) = E_{y~q}[exp f(y)] - E_{x~p}[f(x)] + nu / 2 ||f||^2``

by doubly stochastic functional gradients.  A task's rows are *pooled*: step ``s`` reads
rows ``starts[s] .. starts[s + 1]`` of ``X``, some from the numerator sample ``p``
(``is_q = 0``) and some from the denominator sample ``q`` (``is_q = 1``).  Its gradient is

    ``g_s(.) = (1 / n_s) [ sum_{x in p rows} -k(x, .) + c sum_{y in q rows} e^{f(y)} k(y, .) ]``

with ``n_s`` the step's ``p`` rows and ``c = n_p / n_q`` (``q_weight``): over an epoch the
steps sum to the number of steps times the gradient of ``R`` (each row of each sample read
once), whatever the two samples' sizes.  The kernel is estimated as in the DSG kernels
(:mod:`ooc_kernels.families.dsg.kernels`): one new block per step in the growth phase, all
the model's blocks (``(1/m) sum_j z_j(x) . z_j(x')``) in the full phase.  Coefficients
are float64, features and their products in X's dtype.

Loss bookkeeping: row ``i`` adds ``-f(x_i)`` (``p``) or ``c e^{f(y_i)}`` (``q``) to the
loss sum and ``p`` rows add 1 to the weight, so ``loss_sum / weight_sum`` is the epoch's
estimate of ``E_q[e^f] - E_p[f]`` at the progressive predictions.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dsg.kernels_density_ratio import (ratio_growth_update,
...                                                             ratio_growth_update_ref)
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(7, 2)); is_q = np.array([0, 0, 1, 0, 1, 1, 0], dtype=np.uint8)
>>> starts = np.array([0, 3, 7])                    # two steps: 3 rows then 4 rows
>>> W = rng.normal(size=(2, 2, 4)); ph = rng.uniform(0, 2 * np.pi, (2, 4))
>>> params = (0.1, 1.5, 0.5 ** 0.5)                 # alpha, q_weight, feature scale
>>> out = ratio_growth_update(X, is_q, starts, np.zeros(7), W, ph, np.full(2, 0.5), params)
>>> ref = ratio_growth_update_ref(X, is_q, starts, np.zeros(7), W, ph, np.full(2, 0.5),
...                               params)
>>> bool(np.allclose(out[0], ref[0])), round(out[1], 6)
(True, 0.9025)
"""

from __future__ import annotations

import math

import numpy as np

from ooc_kernels._jit._cache import njit
from ooc_kernels._jit.rff import COS_AFFINE, features_inplace
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dsg.kernels import _features_ref, _tile_rows

__all__ = ["ratio_growth_update", "ratio_growth_update_ref", "ratio_full_update",
           "ratio_full_update_ref"]


@njit(cache=True, nogil=True)
def _ratio_gradient(F, is_q, q_weight, G):
    """``G = -1`` (p rows) or ``q_weight e^F`` (q rows); returns (loss sum, p rows)."""
    loss = 0.0
    n_p = 0.0
    for i in range(F.shape[0]):
        if is_q[i]:
            e = math.exp(float(F[i]))
            G[i, 0] = q_weight * e
            loss += q_weight * e
        else:
            G[i, 0] = -1.0
            loss -= float(F[i])
            n_p += 1.0
    return loss, n_p


def _ratio_gradient_ref(F, is_q, q_weight):
    F = np.asarray(F, dtype=np.float64)
    q = np.asarray(is_q).astype(bool)
    e = np.exp(np.where(q, F, 0.0))
    G = np.where(q, q_weight * e, -1.0)
    return G, float(np.sum(np.where(q, q_weight * e, -F))), float(np.sum(~q))


def _check_steps(n, starts, m, gammas):
    if starts.shape[0] != m + 1 or gammas.shape[0] != m:
        raise ValidationError("ratio kernels: starts needs one entry per step plus one, and "
                              "gammas one per step")
    if m and (starts[0] != 0 or starts[m] != n):
        raise ValidationError("ratio kernels: starts must run from 0 to the number of rows")


@njit(cache=True, nogil=True)
def ratio_growth_update(X, is_q, starts, F, W, phase, gammas, params, kind=COS_AFFINE):
    """The growth-phase steps of one task: step ``s`` opens block ``s``.

    Parameters
    ----------
    X : ndarray (n, d), C-contiguous, float32 or float64
        The pooled rows in visiting order.
    is_q : ndarray (n,) uint8
        1 for rows of the denominator sample ``q``, 0 for the numerator ``p``.
    starts : ndarray (m + 1,) int64
        Step ``s`` reads rows ``starts[s] .. starts[s + 1]`` (each with at least one ``p``
        row).
    F : ndarray (n,) float64, **overwritten**
        On entry the model's values ``f`` at the rows; on return the progressive values
        each step used.
    W : ndarray (m, d, r), phase : ndarray (m, r)
        Block opened at each step.
    gammas : ndarray (m,) float64
        Step sizes.
    params : tuple (alpha, q_weight, scale)
        ``alpha`` the regularization ``nu``; ``q_weight`` ``c = n_p / n_q``; ``scale`` the
        feature map's block scale.
    kind : int
        The feature map's nonlinearity id.

    Returns
    -------
    new_coef : ndarray (m, r, 1) float64
        The new blocks after the later decays of this task.
    decay : float
        ``prod_s (1 - gammas[s] alpha)``, the factor of every older coefficient.
    loss_sum, weight_sum : float
        See the module docstring.

    Notes
    -----
    Step ``s``: ``delta = -(gammas[s] / n_s) z_s(X_B)^T G`` (Algorithm 1 steps 5-6 with the
    pooled gradient of the module docstring); older coefficients and the values of the
    rows not visited yet are multiplied by ``1 - gammas[s] alpha``, and those values get
    ``z_s(X_rest) delta``.  Twin: :func:`ratio_growth_update_ref`.
    """
    alpha, q_weight, scale = params
    n, d = X.shape
    m = W.shape[0]
    r = W.shape[2]
    if starts.shape[0] != m + 1 or gammas.shape[0] != m or F.shape[0] != n \
            or is_q.shape[0] != n:
        raise ValidationError("ratio_growth_update: starts (m + 1,), gammas (m,), F (n,) "
                              "and is_q (n,) must agree with W (m, d, r) and X (n, d)")
    new_coef = np.zeros((m, r, 1), dtype=np.float64)
    factors = np.empty(m, dtype=np.float64)
    decay = 1.0
    loss_sum = 0.0
    weight_sum = 0.0
    if m == 0:
        return new_coef, decay, loss_sum, weight_sum
    nbmax = 1
    for s in range(m):
        nbmax = max(nbmax, starts[s + 1] - starts[s])
    tile = min(_tile_rows(r, X.itemsize), max(n, 1))
    Zb = np.empty((nbmax, r), dtype=X.dtype)
    G = np.empty((nbmax, 1), dtype=X.dtype)
    Zt_buf = np.empty((tile, r), dtype=X.dtype)
    acc = np.empty((tile, 1), dtype=X.dtype)
    delta = np.empty((r, 1), dtype=X.dtype)
    dcoef = np.empty((r, 1), dtype=X.dtype)
    for s in range(m):
        lo = starts[s]
        hi = starts[s + 1]
        nb = hi - lo
        Zs = Zb[:nb]
        np.dot(X[lo:hi], W[s], Zs)
        features_inplace(kind, Zs, phase[s], scale)
        Gs = G[:nb]
        loss, n_p = _ratio_gradient(F[lo:hi], is_q[lo:hi], q_weight, Gs)
        loss_sum += loss
        weight_sum += n_p
        np.dot(Zs.T, Gs, delta)
        step = -gammas[s] / max(n_p, 1.0)
        for k in range(r):
            v = step * delta[k, 0]
            new_coef[s, k, 0] = v
            dcoef[k, 0] = v
        factor = 1.0 - gammas[s] * alpha
        factors[s] = factor
        decay *= factor
        for start in range(hi, n, tile):
            stop = min(start + tile, n)
            k = stop - start
            Zt = Zt_buf[:k]
            At = acc[:k]
            np.dot(X[start:stop], W[s], Zt)
            features_inplace(kind, Zt, phase[s], scale)
            np.dot(Zt, dcoef, At)
            for i in range(k):
                F[start + i] = F[start + i] * factor + At[i, 0]
    suffix = 1.0
    for s in range(m - 1, -1, -1):
        if suffix != 1.0:
            for k in range(r):
                new_coef[s, k, 0] *= suffix
        suffix *= factors[s]
    return new_coef, decay, loss_sum, weight_sum


def ratio_growth_update_ref(X, is_q, starts, F, W, phase, gammas, params, kind=COS_AFFINE):
    """NumPy twin of :func:`ratio_growth_update`, written literally: every step's values
    recomputed from the starting values and the new blocks as they stand, every older
    coefficient decayed explicitly (``F`` is not modified; tests only)."""
    alpha, q_weight, scale = params
    X = np.asarray(X)  # one task's rows (reference twin, tests only)
    dt = X.dtype
    m = W.shape[0]
    _check_steps(X.shape[0], np.asarray(starts), m, np.asarray(gammas))
    F0 = np.asarray(F, dtype=np.float64)
    coefs, decay, loss_sum, weight_sum = [], 1.0, 0.0, 0.0
    for s in range(m):
        rows = slice(int(starts[s]), int(starts[s + 1]))
        f = F0[rows] * decay
        for t in range(s):
            f = f + (_features_ref(X[rows], W[t], phase[t], scale, kind)
                     @ coefs[t].astype(dt))[:, 0].astype(np.float64)
        G, loss, n_p = _ratio_gradient_ref(f, is_q[rows], q_weight)
        loss_sum += loss
        weight_sum += n_p
        Z = _features_ref(X[rows], W[s], phase[s], scale, kind)
        new = -(gammas[s] / max(n_p, 1.0)) * (Z.T @ G.astype(dt)[:, None]).astype(np.float64)
        factor = 1.0 - gammas[s] * alpha
        coefs = [c * factor for c in coefs]
        decay *= factor
        coefs.append(new)
    r = W.shape[2]
    stacked = np.stack(coefs) if m else np.zeros((0, r, 1))
    return stacked, decay, loss_sum, weight_sum


@njit(cache=True, nogil=True)
def ratio_full_update(X, is_q, starts, W, phase, coef, gammas, params, kind=COS_AFFINE):
    """Full-phase steps of one task: every step updates every block of the model.

    Parameters
    ----------
    X, is_q, starts, gammas, params, kind
        As in :func:`ratio_growth_update`.
    W : ndarray (m, d, r), phase : ndarray (m, r)
        All the model's blocks.
    coef : ndarray (m, r, 1) float64
        The model before these steps (not modified).

    Returns
    -------
    coef : ndarray (m, r, 1) float64
        After the steps: step ``s`` multiplies every coefficient by ``1 - gammas[s] alpha``
        and adds ``-gammas[s] / (n_s m) z_j(X_B)^T G`` to block ``j``.
    loss_sum, weight_sum : float

    Notes
    -----
    Twin: :func:`ratio_full_update_ref`.
    """
    alpha, q_weight, scale = params
    n, d = X.shape
    m = W.shape[0]
    r = W.shape[2]
    n_steps = starts.shape[0] - 1
    if gammas.shape[0] != n_steps or is_q.shape[0] != n or coef.shape[0] != m \
            or coef.shape[1] != r:
        raise ValidationError("ratio_full_update: gammas (steps,), is_q (n,) and coef "
                              "(m, r, 1) must agree with starts, X and W")
    out = coef.astype(np.float64)
    loss_sum = 0.0
    weight_sum = 0.0
    if n == 0 or m == 0 or n_steps == 0:
        return out, loss_sum, weight_sum
    low = out.astype(X.dtype)
    nbmax = 1
    for s in range(n_steps):
        nbmax = max(nbmax, starts[s + 1] - starts[s])
    Zall = np.empty((m, nbmax, r), dtype=X.dtype)
    Fb = np.empty(nbmax, dtype=np.float64)
    acc = np.empty((nbmax, 1), dtype=X.dtype)
    G = np.empty((nbmax, 1), dtype=X.dtype)
    delta = np.empty((r, 1), dtype=X.dtype)
    for s in range(n_steps):
        lo = starts[s]
        hi = starts[s + 1]
        nb = hi - lo
        Xb = X[lo:hi]
        Fs = Fb[:nb]
        Fs[:] = 0.0
        At = acc[:nb]
        for j in range(m):
            Zj = Zall[j, :nb]
            np.dot(Xb, W[j], Zj)
            features_inplace(kind, Zj, phase[j], scale)
            np.dot(Zj, low[j], At)
            for i in range(nb):
                Fs[i] += At[i, 0]
        Gs = G[:nb]
        loss, n_p = _ratio_gradient(Fs, is_q[lo:hi], q_weight, Gs)
        loss_sum += loss
        weight_sum += n_p
        factor = 1.0 - gammas[s] * alpha
        step = -gammas[s] / (max(n_p, 1.0) * m)
        for j in range(m):
            np.dot(Zall[j, :nb].T, Gs, delta)
            for k in range(r):
                v = out[j, k, 0] * factor + step * delta[k, 0]
                out[j, k, 0] = v
                low[j, k, 0] = v
    return out, loss_sum, weight_sum


def ratio_full_update_ref(X, is_q, starts, W, phase, coef, gammas, params, kind=COS_AFFINE):
    """NumPy twin of :func:`ratio_full_update`: the literal step over all blocks."""
    alpha, q_weight, scale = params
    X = np.asarray(X)  # one task's rows (reference twin, tests only)
    dt = X.dtype
    m = W.shape[0]
    n_steps = len(starts) - 1
    _check_steps(X.shape[0], np.asarray(starts), n_steps, np.asarray(gammas))
    out = np.array(coef, dtype=np.float64, copy=True)
    loss_sum = weight_sum = 0.0
    for s in range(n_steps):
        rows = slice(int(starts[s]), int(starts[s + 1]))
        Z = [_features_ref(X[rows], W[j], phase[j], scale, kind) for j in range(m)]
        f = sum((Z[j] @ out[j].astype(dt))[:, 0].astype(np.float64) for j in range(m))
        G, loss, n_p = _ratio_gradient_ref(f, is_q[rows], q_weight)
        loss_sum += loss
        weight_sum += n_p
        factor = 1.0 - gammas[s] * alpha
        out = np.stack([out[j] * factor - gammas[s] / (max(n_p, 1.0) * m)
                        * (Z[j].T @ G.astype(dt)[:, None]).astype(np.float64)
                        for j in range(m)])
    return out, loss_sum, weight_sum
