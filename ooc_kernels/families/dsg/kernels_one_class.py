"""Hot path of DSG novelty detection (the one-class machine of Dai et al. 2014, section 4).

The model is ``f(x) = sum_j z_j(x) @ coef[j]`` (the DSG model of
:mod:`ooc_kernels.families.dsg.kernels`, one output) and the offset ``tau``; a row is novel
when ``f(x) < tau``.  One mini-batch step over the rows ``B`` (``nb`` rows, weights
``sw``), from the model and offset the step starts with:

* ``o_i = 1`` if ``f(x_i) < tau`` else 0 (the paper's kink: ``f(x_i) = tau`` gives 0);
* growth phase (fewer than ``n_blocks`` blocks open): the step opens block ``j`` with the
  coefficient ``(gamma / nb) sum_i sw_i o_i z_j(x_i)`` and multiplies every older
  coefficient by ``1 - gamma alpha``;
* full phase (every block open): every coefficient becomes ``coef[j] (1 - gamma alpha) +
  (gamma / (nb m)) sum_i sw_i o_i z_j(x_i)`` (the kernel estimated with all ``m`` blocks, as
  :func:`ooc_kernels.families.dsg.kernels_full.dsg_full_update` does);
* ``tau <- tau - gamma (sum_i sw_i o_i / nb - nu)``.

With one row per step (``nb = 1``, ``sw = 1``) these are the paper's updates (step 5:
``alpha_i = gamma_i phi(x_i)`` if ``f(x_i) < tau_{i-1}`` else 0; ``tau_i = tau_{i-1} +
gamma_i nu`` if ``f(x_i) >= tau_{i-1}`` else ``tau_{i-1} - gamma_i (1 - nu)``), both taken
at ``tau_{i-1}``, and the usual decay (step 6).

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dsg.kernels_one_class import (one_class_update,
...                                                          one_class_update_ref)
>>> rng = np.random.default_rng(0)
>>> n, d, r, m = 10, 2, 4, 3                       # 3 steps of 4, 4 and 2 rows
>>> X = rng.normal(size=(n, d)); sw = np.ones(n)
>>> W = rng.normal(size=(m, d, r)); ph = rng.uniform(0, 2 * np.pi, (m, r))
>>> coef = np.zeros((m, r, 1))
>>> params = (0.5, 4, 0.5, 0.5 ** 0.5)              # alpha, batch_size, nu, scale
>>> out = one_class_update(X, sw, W, ph, coef, 0, 0, 0.0, np.full(3, 0.5), params)
>>> new, tau, block_end = out[0], out[1], out[2]
>>> block_end, round(tau, 6)          # step 1: f = tau = 0, no outlier, tau += gamma nu
(3, 0.25)
>>> ref = one_class_update_ref(X, sw, W, ph, coef, 0, 0, 0.0, np.full(3, 0.5), params)
>>> bool(np.allclose(new, ref[0]) and np.isclose(tau, ref[1]))
True

On a fixed basis of landmarks (every feature in the model from the first step, such as a
Nystrom basis: kernel values ``K`` of the rows against the landmarks and a whitening ``C``)
the same steps are :func:`one_class_fixed_update`:

>>> L = rng.normal(size=(5, d))
>>> K = np.exp(-((X[:, None] - L[None]) ** 2).sum(-1) / 2)
>>> s, U = np.linalg.eigh(np.exp(-((L[:, None] - L[None]) ** 2).sum(-1) / 2))
>>> args = (sw, np.zeros(5), 0.0, np.full(3, 0.5), (0.5, 4, 0.5), U / np.sqrt(s))
>>> out, ref = one_class_fixed_update(K, *args), one_class_fixed_update_ref(K, *args)
>>> bool(np.allclose(out[0], ref[0]) and np.isclose(out[1], ref[1]))
True
"""

from __future__ import annotations

import math

import numpy as np

from ooc_kernels._jit._cache import njit
from ooc_kernels._jit.rff import COS_AFFINE, features_inplace
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dsg.kernels import _features_ref
from ooc_kernels.families.dsg.kernels_full import _FULL_BUFFER_BYTES

__all__ = ["one_class_fixed_update", "one_class_fixed_update_ref", "one_class_update",
           "one_class_update_ref"]


@njit(cache=True, nogil=True)
def one_class_update(X, sw, W, phase, coef, n_old, first_new, tau, gammas, params,
                     max_buffer_bytes=_FULL_BUFFER_BYTES, kind=COS_AFFINE):
    """Run the one-class mini-batch steps of one chunk (growth and full phase).

    Parameters
    ----------
    X : ndarray (n, d), C-contiguous, float32 or float64
        The rows in visiting order.
    sw : ndarray (n,) float64
        Row weights.
    W : ndarray (M, d, r), phase : ndarray (M, r), X's dtype
        Feature blocks ``0 .. M - 1`` of the model: every block the steps can touch
        (``M = min(n_blocks, first_new + steps)``).
    coef : ndarray (n_blocks, r, 1) float64
        The model before the chunk (not modified).
    n_old : int
        Blocks ``0 .. n_old - 1`` are open at the start (the others are zero).
    first_new : int
        The block the first growth step opens (``>= n_old``; blocks in between stay zero).
    tau : float
        The offset before the chunk.
    gammas : ndarray (ceil(n / batch_size),) float64
        The step sizes.
    params : tuple (alpha, batch_size, nu, scale)
        ``alpha``: the RKHS regularization (coefficient of ``||f||^2 / 2``); ``nu``: the
        weight of ``-nu tau``; ``scale``: the feature map's block scale.
    max_buffer_bytes : int
        In the full phase, the features of one batch for all blocks are kept for the update
        when they fit in this many bytes, and recomputed otherwise.
    kind : int
        The feature map's nonlinearity id.

    Returns
    -------
    coef : ndarray (n_blocks, r, 1) float64
        The model after the steps.
    tau : float
    block_end : int
        One past the highest block opened (0 when no growth step ran).
    loss_sum, weight_sum : float
        ``sum_i sw_i (max(0, tau - f(x_i)) - nu tau)`` at the values each step started
        from (the progressive one-class loss), and ``sum_i sw_i``.

    Notes
    -----
    Coefficients are kept in float64; the feature products use their rounding to X's
    dtype, refreshed after every step.  Twin: :func:`one_class_update_ref`.
    """
    alpha, batch_size, nu, scale = params
    n, d = X.shape
    m_all = coef.shape[0]
    M = W.shape[0]
    r = W.shape[2]
    b = batch_size
    if b < 1:
        raise ValidationError("one_class_update: batch_size must be >= 1")
    n_steps = (n + b - 1) // b
    if gammas.shape[0] != n_steps:
        raise ValidationError("one_class_update: gammas needs ceil(n / batch_size) entries")
    if W.shape[1] != d or phase.shape[0] != M or phase.shape[1] != r:
        raise ValidationError("one_class_update: W must be (M, d, r) and phase (M, r)")
    if coef.shape[1] != r or coef.shape[2] != 1 or sw.shape[0] != n or M > m_all:
        raise ValidationError("one_class_update: coef must be (n_blocks, r, 1) with "
                              "n_blocks >= M, and sw (n,)")
    if n_old > first_new or M < min(m_all, first_new + n_steps):
        raise ValidationError("one_class_update: W must hold every block the steps touch")
    out = coef[:, :, 0].astype(np.float64)  # float64 master copy
    low = out.astype(X.dtype)  # its rounding to X's dtype, for the GEMMs
    active = np.zeros(m_all, dtype=np.bool_)
    for j in range(min(n_old, M)):
        active[j] = True
    loss_sum = 0.0
    weight_sum = 0.0
    block_end = 0
    if n == 0:
        return out.reshape((m_all, r, 1)), tau, block_end, loss_sum, weight_sum
    nbmax = min(b, n)
    keep = M * nbmax * r * X.itemsize <= max_buffer_bytes
    Zall = np.empty((M if keep else 1, nbmax, r), dtype=X.dtype)
    f = np.empty(nbmax, dtype=np.float64)
    part = np.empty(nbmax, dtype=X.dtype)
    g = np.empty(nbmax, dtype=X.dtype)
    delta = np.empty(r, dtype=X.dtype)
    for s in range(n_steps):
        lo = s * b
        hi = min(lo + b, n)
        nb = hi - lo
        Xb = X[lo:hi]
        j_new = first_new + s
        full = j_new >= m_all
        # f on the batch with the open blocks (all of them in the full phase)
        for i in range(nb):
            f[i] = 0.0
        for j in range(M):
            if not (active[j] or full):
                continue
            Zj = Zall[j if keep else 0, :nb]
            np.dot(Xb, W[j], Zj)
            features_inplace(kind, Zj, phase[j], scale)
            np.dot(Zj, low[j], part[:nb])
            for i in range(nb):
                f[i] += part[i]
        # one-class loss and gradient at (f, tau): g_i = sw_i o_i
        n_out = 0.0
        for i in range(nb):
            w = sw[lo + i]
            margin = tau - f[i]
            loss_sum += w * (max(0.0, margin) - nu * tau)
            weight_sum += w
            if f[i] < tau:
                g[i] = w
                n_out += w
            else:
                g[i] = 0.0
        gamma = gammas[s]
        factor = 1.0 - gamma * alpha
        if full:
            step = gamma / (nb * m_all)
            for j in range(M):
                Zj = Zall[j if keep else 0, :nb]
                if not keep:
                    np.dot(Xb, W[j], Zj)
                    features_inplace(kind, Zj, phase[j], scale)
                np.dot(g[:nb], Zj, delta)
                for k in range(r):
                    v = out[j, k] * factor + step * delta[k]
                    out[j, k] = v
                    low[j, k] = v
            for j in range(m_all):
                active[j] = True
        else:
            for j in range(m_all):
                if active[j] and factor != 1.0:
                    for k in range(r):
                        v = out[j, k] * factor
                        out[j, k] = v
                        low[j, k] = v
            Zj = Zall[0, :nb]
            np.dot(Xb, W[j_new], Zj)
            features_inplace(kind, Zj, phase[j_new], scale)
            np.dot(g[:nb], Zj, delta)
            step = gamma / nb
            for k in range(r):
                v = step * delta[k]
                out[j_new, k] = v
                low[j_new, k] = v
            active[j_new] = True
            block_end = j_new + 1
        tau = tau - gamma * (n_out / nb - nu)
    return out.reshape((m_all, r, 1)), tau, block_end, loss_sum, weight_sum


def one_class_update_ref(X, sw, W, phase, coef, n_old, first_new, tau, gammas, params,
                         max_buffer_bytes=None, kind=COS_AFFINE):
    """NumPy twin of :func:`one_class_update`, written literally: every step predicts its
    batch from the open blocks, takes the indicator ``f < tau``, then updates the
    coefficients (decay, then the new block or every block) and ``tau``."""
    alpha, batch_size, nu, scale = params
    X = np.asarray(X)  # one chunk (reference twin, tests only)
    dt = X.dtype
    n = X.shape[0]
    b = int(batch_size)
    m_all = coef.shape[0]
    out = np.array(coef[:, :, 0], dtype=np.float64, copy=True)
    opened = set(range(n_old))
    loss_sum = weight_sum = 0.0
    block_end = 0
    for s in range(math.ceil(n / b)):
        rows = slice(s * b, min((s + 1) * b, n))
        nb = rows.stop - rows.start
        j_new = first_new + s
        full = j_new >= m_all
        used = range(m_all) if full else sorted(opened)
        f = np.zeros(nb)
        for j in used:
            f += (_features_ref(X[rows], W[j], phase[j], scale, kind)
                  @ out[j].astype(dt)).astype(np.float64)
        w = np.asarray(sw[rows], dtype=np.float64)
        outlier = f < tau
        loss_sum += float(np.sum(w * (np.maximum(0.0, tau - f) - nu * tau)))
        weight_sum += float(np.sum(w))
        g = np.where(outlier, w, 0.0)
        gamma = gammas[s]
        if full:
            for j in range(m_all):
                Z = _features_ref(X[rows], W[j], phase[j], scale, kind)
                out[j] = out[j] * (1.0 - gamma * alpha) + gamma / (nb * m_all) * (
                    g.astype(dt) @ Z).astype(np.float64)
            opened = set(range(m_all))
        else:
            for j in opened:
                out[j] = out[j] * (1.0 - gamma * alpha)
            Z = _features_ref(X[rows], W[j_new], phase[j_new], scale, kind)
            out[j_new] = gamma / nb * (g.astype(dt) @ Z).astype(np.float64)
            opened.add(j_new)
            block_end = j_new + 1
        tau = tau - gamma * (float(np.sum(g)) / nb - nu)
    return out.reshape(m_all, -1, 1), tau, block_end, loss_sum, weight_sum


@njit(cache=True, nogil=True)
def one_class_fixed_update(K, sw, coef, tau, gammas, params, C):
    """Run the one-class mini-batch steps of one chunk on a fixed basis of landmarks.

    The features are ``z(x) = C^T k(x, L)``: the kernel values ``K = k(X, L)`` of the rows
    against ``m`` fixed landmarks and a whitening ``C`` (m, r) (a Nystrom basis: ``C C^T =
    K_LL^+``).  The model is ``f(x) = z(x) @ coef``, every feature in it from the first step
    (the full-phase step of :func:`one_class_update` with the kernel estimated by the one
    basis): ``coef <- coef (1 - gamma alpha) + (gamma / nb) sum_i sw_i o_i z(x_i)``, and
    ``tau <- tau - gamma (sum_i sw_i o_i / nb - nu)``, with ``o_i = 1`` if ``f(x_i) < tau``
    else 0.  The features of the rows are never formed: a step computes ``beta = C coef``,
    ``f = K_B beta`` and ``C^T (K_B^T g)``, ``O(nb m + m r)``.

    Parameters
    ----------
    K : ndarray (n, m), C-contiguous, float64
        The kernel values of the rows (in visiting order) against the landmarks.
    sw : ndarray (n,) float64
        Row weights.
    coef : ndarray (r,) float64
        The model before the chunk (not modified).
    tau : float
        The offset before the chunk.
    gammas : ndarray (ceil(n / batch_size),) float64
        The step sizes.
    params : tuple (alpha, batch_size, nu)
        ``alpha``: the RKHS regularization; ``nu``: the weight of ``-nu tau``.
    C : ndarray (m, r), C-contiguous, float64
        The whitening.

    Returns
    -------
    coef : ndarray (r,) float64
    tau : float
    loss_sum, weight_sum : float
        ``sum_i sw_i (max(0, tau - f(x_i)) - nu tau)`` at the values each step started
        from, and ``sum_i sw_i``.

    Notes
    -----
    Twin: :func:`one_class_fixed_update_ref`.
    """
    alpha, batch_size, nu = params
    n, m = K.shape
    r = C.shape[1]
    b = batch_size
    if b < 1:
        raise ValidationError("one_class_fixed_update: batch_size must be >= 1")
    n_steps = (n + b - 1) // b
    if gammas.shape[0] != n_steps:
        raise ValidationError("one_class_fixed_update: gammas needs ceil(n / batch_size) "
                              "entries")
    if coef.shape[0] != r or sw.shape[0] != n or C.shape[0] != m:
        raise ValidationError("one_class_fixed_update: C must be (m, r), coef (r,) and "
                              "sw (n,)")
    out = coef.copy()
    loss_sum = 0.0
    weight_sum = 0.0
    if n == 0:
        return out, tau, loss_sum, weight_sum
    nbmax = min(b, n)
    f = np.empty(nbmax, dtype=np.float64)
    g = np.empty(nbmax, dtype=np.float64)
    beta = np.empty(m, dtype=np.float64)
    delta = np.empty(m, dtype=np.float64)
    move = np.empty(r, dtype=np.float64)
    for s in range(n_steps):
        lo = s * b
        hi = min(lo + b, n)
        nb = hi - lo
        Kb = K[lo:hi]
        np.dot(C, out, beta)
        np.dot(Kb, beta, f[:nb])
        n_out = 0.0
        for i in range(nb):
            w = sw[lo + i]
            loss_sum += w * (max(0.0, tau - f[i]) - nu * tau)
            weight_sum += w
            if f[i] < tau:
                g[i] = w
                n_out += w
            else:
                g[i] = 0.0
        gamma = gammas[s]
        factor = 1.0 - gamma * alpha
        step = gamma / nb
        if n_out > 0.0:
            np.dot(g[:nb], Kb, delta)
            np.dot(delta, C, move)
            for k in range(r):
                out[k] = out[k] * factor + step * move[k]
        elif factor != 1.0:
            for k in range(r):
                out[k] = out[k] * factor
        tau = tau - gamma * (n_out / nb - nu)
    return out, tau, loss_sum, weight_sum


def one_class_fixed_update_ref(K, sw, coef, tau, gammas, params, C):
    """NumPy twin of :func:`one_class_fixed_update`, written on the features: ``Z = K C``
    formed, then every step scores its batch, takes the indicator ``f < tau``, decays the
    coefficients and adds the gradient, and moves ``tau``."""
    alpha, batch_size, nu = params
    Z = np.asarray(K, dtype=np.float64) @ np.asarray(C, dtype=np.float64)  # (tests only)
    b = int(batch_size)
    out = np.array(coef, dtype=np.float64, copy=True)
    loss_sum = weight_sum = 0.0
    for i in range(math.ceil(Z.shape[0] / b)):
        Zb = Z[i * b:(i + 1) * b]
        w = np.asarray(sw[i * b:(i + 1) * b], dtype=np.float64)
        f = Zb @ out
        loss_sum += float(np.sum(w * (np.maximum(0.0, tau - f) - nu * tau)))
        weight_sum += float(np.sum(w))
        g = np.where(f < tau, w, 0.0)
        gamma = gammas[i]
        out = out * (1.0 - gamma * alpha) + gamma / len(Zb) * (g @ Zb)
        tau = tau - gamma * (float(np.sum(g)) / len(Zb) - nu)
    return out, tau, loss_sum, weight_sum
