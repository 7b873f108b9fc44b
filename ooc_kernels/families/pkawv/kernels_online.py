"""Numba kernels of the online forecasters: predict-then-update over a chunk's rows in order.

Each kernel visits the rows of one chunk in storage order; for row ``t`` it predicts
``y_hat_t`` from the state (in ``awv`` mode after ``x_t`` entered the covariance, in ``krr``
mode before), then reveals ``y_t`` and updates the state.  The state arrays are updated in
place (the caller passes copies) and the online predictions are returned.

* :func:`linear_online`: PKAWV on a fixed finite basis (Algorithm 1): the inverse
  ``A^(-1)`` of ``Phi^T Phi + lambda I`` by Sherman-Morrison with ``A_{t-1}^(-1)`` (the
  printed algorithm has ``A_t^(-1) v_t`` there), and ``b = Phi^T y``.
* :func:`exact_online`: Kernel-AWV, the inverse ``G`` of ``K_tt + lambda I`` grown by a
  block (Schur complement) update; in ``awv`` mode ``y_hat_t = -lambda sum_{s<t} G_ts
  y_s`` (because ``K G = I - lambda G``).  ``O(t^2)`` a row.
* :func:`nystrom_online`: PKAWV on the Nystrom dictionary grown by KORS; the upper
  Cholesky factor ``R`` of ``H = K_tI^T K_tI + lambda K_II`` (:func:`chol_update` for a new
  row, a bordered factor for a new column), ``K_tI^T Y_bar`` kept incrementally, the KORS
  inverse ``(S K_II S + mu I)^(-1)`` grown by block updates.

Every kernel has a plain-NumPy oracle in :mod:`ooc_kernels.families.pkawv.reference`,
which solves each round directly.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.pkawv.kernels_online import linear_online
>>> from ooc_kernels.families.pkawv.reference import linear_awv
>>> rng = np.random.default_rng(0)
>>> Phi = rng.normal(size=(6, 3)); y = rng.normal(size=6)
>>> Ainv, b, w = np.eye(3), np.zeros(3), np.zeros(3)        # lambda = 1
>>> pred = linear_online(Phi, y, Ainv, b, w, True)
>>> bool(np.allclose(pred, linear_awv(Phi, y, 1.0, "awv")))
True
"""

from __future__ import annotations

import math

import numpy as np

from ooc_kernels._jit._cache import njit

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
#: A new dictionary column whose Schur complement is below this fraction of its squared
#: norm lies in the span of the dictionary to working precision: it joins KORS's
#: dictionary but not the basis (the projection is the same).
DEPENDENT_TOL = 1e-10


@njit(nogil=True)
def row_uniform(seed, t):
    """The uniform in [0, 1) of row ``t`` (counter-based: splitmix64 of ``(seed, t)``)."""
    z = np.uint64(seed) + (np.uint64(t) + np.uint64(1)) * _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    z = z ^ (z >> np.uint64(31))
    return float(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


def row_uniforms_ref(seed, rows):
    """Plain-NumPy twin of :func:`row_uniform` for an array of row numbers."""
    z = np.uint64(seed) + (np.asarray(rows, dtype=np.uint64) + np.uint64(1)) * _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / 9007199254740992.0


@njit(nogil=True)
def linear_online(Phi, y, Ainv, b, w, awv):
    """Online AWV / ridge on the features ``Phi``; ``Ainv``, ``b`` and ``w = Ainv b`` are
    updated in place.

    Sherman-Morrison with ``u = A_{t-1}^(-1) v``: ``A_t^(-1) = A_{t-1}^(-1) - u u^T / (1 +
    v^T u)``, and ``w`` follows in ``O(r)``: ``w <- w - u (u^T b) / (1 + v^T u)`` for the
    new row, then ``w <- w + y_t u / (1 + v^T u)`` (``A_t^(-1) v = u / (1 + v^T u)``) for
    its target.  ``O(r^2)`` a row: one product with ``A^(-1)`` and one rank-one update.
    """
    n, r = Phi.shape
    pred = np.empty(n)
    u = np.empty(r)
    for t in range(n):
        v = Phi[t]
        if not awv:
            pred[t] = v @ w
        for i in range(r):
            acc = 0.0
            for j in range(r):
                acc += Ainv[i, j] * v[j]
            u[i] = acc
        den = 1.0 + v @ u
        ub = u @ b
        for i in range(r):
            ui = u[i] / den
            for j in range(r):
                Ainv[i, j] -= ui * u[j]
            w[i] -= ui * ub
        if awv:
            pred[t] = v @ w
        for i in range(r):
            b[i] += y[t] * v[i]
            w[i] += y[t] * u[i] / den
    return pred


@njit(nogil=True)
def _gauss(X, i, x, inv2s2):
    acc = 0.0
    for k in range(x.shape[0]):
        diff = X[i, k] - x[k]
        acc += diff * diff
    return math.exp(-acc * inv2s2)


@njit(nogil=True)
def exact_online(X, y, Xs, ys, G, t0, alpha, inv2s2, awv):
    """Kernel-AWV / online KRR.  ``Xs``, ``ys``: the rows seen (capacity >= t0 + n);
    ``G[:t0, :t0]`` the inverse of ``K + alpha I`` on them.  Updated in place."""
    n = X.shape[0]
    pred = np.empty(n)
    cap = G.shape[0]
    kv = np.empty(cap)
    g = np.empty(cap)
    for i in range(n):
        t = t0 + i
        x = X[i]
        for s in range(t):
            kv[s] = _gauss(Xs, s, x, inv2s2)
        if not awv:
            acc = 0.0
            for s in range(t):
                row = 0.0
                for q in range(t):
                    row += G[s, q] * ys[q]
                acc += kv[s] * row
            pred[i] = acc
        # block inverse update: G <- [[G + s g g^T, -s g], [-s g^T, s]], g = G k
        quad = 0.0
        for s in range(t):
            acc = 0.0
            for q in range(t):
                acc += G[s, q] * kv[q]
            g[s] = acc
            quad += kv[s] * acc
        sc = 1.0 / (1.0 + alpha - quad)
        for s in range(t):
            for q in range(t):
                G[s, q] += sc * g[s] * g[q]
            G[s, t] = -sc * g[s]
            G[t, s] = -sc * g[s]
        G[t, t] = sc
        Xs[t] = x
        if awv:
            acc = 0.0
            for s in range(t):
                acc += G[t, s] * ys[s]
            pred[i] = -alpha * acc
        ys[t] = y[i]
    return pred


@njit(nogil=True)
def chol_update(R, x, m):
    """``R^T R + x x^T`` in place (upper ``R[:m, :m]``; Givens rotations, ``x`` destroyed).

    A zero diagonal entry is allowed (the rotation then moves ``x`` into that row)."""
    for k in range(m):
        rkk = R[k, k]
        r = math.hypot(rkk, x[k])
        if r == 0.0:
            continue
        c = rkk / r
        s = x[k] / r
        R[k, k] = r
        for j in range(k + 1, m):
            rj = R[k, j]
            R[k, j] = c * rj + s * x[j]
            x[j] = -s * rj + c * x[j]


@njit(nogil=True)
def chol_downdate(R, x, m):
    """``R^T R - x x^T`` in place (hyperbolic rotations); False if the result is not
    positive definite (``R`` is then partly modified)."""
    for k in range(m):
        rkk = R[k, k]
        r2 = rkk * rkk - x[k] * x[k]
        if not r2 > 0.0:
            return False
        r = math.sqrt(r2)
        c = r / rkk
        s = x[k] / rkk
        R[k, k] = r
        for j in range(k + 1, m):
            R[k, j] = (R[k, j] - s * x[j]) / c
            x[j] = c * x[j] - s * R[k, j]
    return True


@njit(nogil=True)
def chol_add_column(R, c, d, m):
    """Border ``R[:m, :m]`` (``R^T R = H``) into the factor of ``[[H, c], [c^T, d]]``.

    Returns the squared Schur complement ``d - |R^(-T) c|^2`` (the new diagonal's square);
    the caller decides whether the column is independent before keeping it."""
    for i in range(m):  # forward solve R^T r12 = c
        acc = c[i]
        for k in range(i):
            acc -= R[k, i] * R[k, m]
        R[i, m] = acc / R[i, i]
    sq = d
    for i in range(m):
        sq -= R[i, m] * R[i, m]
    for j in range(m):
        R[m, j] = 0.0
    R[m, m] = math.sqrt(sq) if sq > 0.0 else 0.0
    return sq


@njit(nogil=True)
def chol_add_column_augmented(R, c, d, m):
    """The paper's column addition: ``blkdiag(H, 0) + u u^T - v v^T`` with ``g = sqrt(1 +
    d)``, ``u = (c / (1 + g), g)``, ``v = (c / (1 + g), -1)``: an update then a downdate.

    Same factor as :func:`chol_add_column` in exact arithmetic; False if the downdate fails.
    """
    g = math.sqrt(1.0 + d)
    u = np.empty(m + 1)
    v = np.empty(m + 1)
    for i in range(m):
        u[i] = c[i] / (1.0 + g)
        v[i] = u[i]
        R[i, m] = 0.0
        R[m, i] = 0.0
    u[m] = g
    v[m] = -1.0
    R[m, m] = 0.0
    chol_update(R, u, m + 1)
    return chol_downdate(R, v, m + 1)


@njit(nogil=True)
def _chol_solve(R, rhs, m, out):
    for i in range(m):  # R^T z = rhs
        acc = rhs[i]
        for k in range(i):
            acc -= R[k, i] * out[k]
        out[i] = acc / R[i, i]
    for i in range(m - 1, -1, -1):  # R a = z
        acc = out[i]
        for k in range(i + 1, m):
            acc -= R[i, k] * out[k]
        out[i] = acc / R[i, i]


@njit(nogil=True)
def nystrom_online(X, y, Xs, ys, counts, kors_idx, kors_w, Minv, basis_idx, KtI, R, kty,
                   params, seed, awv, probs):
    """PKAWV with the KORS dictionary over the rows of one chunk, from row ``counts[0]``.

    ``counts = [rows seen, KORS dictionary size, basis size, rows of this chunk done]``;
    ``params = [alpha, inv2s2, mu, beta, epsilon]``.  Stops early, with ``counts[3]``
    the next row to do, when a point must join a dictionary that is at capacity (the
    caller grows the arrays and calls again).  Returns the predictions of the rows done.
    """
    alpha, inv2s2, mu, beta, eps = params[0], params[1], params[2], params[3], params[4]
    n = X.shape[0]
    mcap = Minv.shape[0]
    pred = np.zeros(n)
    kk = np.empty(mcap)
    gk = np.empty(mcap)
    kb = np.empty(mcap + 1)
    a = np.empty(Xs.shape[0])
    col = np.empty(mcap + 1)
    tmp = np.empty(mcap + 1)
    coef = np.empty(mcap + 1)
    for i in range(counts[3], n):
        t, mk, mb = counts[0], counts[1], counts[2]
        x = X[i]
        # KORS: tau = (1 + eps)(1 - mu s), s = 1 / (1 + mu - b^T Minv b), b = S k
        for j in range(mk):
            kk[j] = math.sqrt(kors_w[j]) * _gauss(Xs, kors_idx[j], x, inv2s2)
        quad = 0.0
        for j in range(mk):
            acc = 0.0
            for q in range(mk):
                acc += Minv[j, q] * kk[q]
            gk[j] = acc
            quad += kk[j] * acc
        sk = 1.0 / (1.0 + mu - quad)
        p = min(max(beta * (1.0 + eps) * (1.0 - mu * sk), 0.0), 1.0)
        take = row_uniform(seed, t) < p
        if take and (mk == mcap or mb == mcap):
            return pred[:i]
        probs[i] = p
        Xs[t] = x
        for j in range(mb):
            kb[j] = _gauss(Xs, basis_idx[j], x, inv2s2)
        rows = t + 1 if awv else t
        if awv and mb > 0:  # the new row enters H before predicting
            for j in range(mb):
                KtI[t, j] = kb[j]
                tmp[j] = kb[j]
            chol_update(R, tmp, mb)
        if take:
            w = 1.0 / p  # KORS: the kept point's weight, sqrt(w) on each side
            sw = math.sqrt(w)
            sc = 1.0 / (w + mu - w * quad)
            for j in range(mk):
                for q in range(mk):
                    Minv[j, q] += sc * w * gk[j] * gk[q]
                Minv[j, mk] = -sc * sw * gk[j]
                Minv[mk, j] = -sc * sw * gk[j]
            Minv[mk, mk] = sc
            kors_idx[mk] = t
            kors_w[mk] = w
            counts[1] = mk + 1
            # the basis column: a = k(x_s, x_t) over the rows in H
            dd = alpha
            for s in range(rows):
                a[s] = _gauss(Xs, s, x, inv2s2)
                dd += a[s] * a[s]
            for j in range(mb):
                acc = alpha * kb[j]
                for s in range(rows):
                    acc += KtI[s, j] * a[s]
                col[j] = acc
            sq = chol_add_column(R, col, dd, mb)
            if sq > DEPENDENT_TOL * dd:
                acc = 0.0
                for s in range(rows):
                    KtI[s, mb] = a[s]
                    if s < t:
                        acc += a[s] * ys[s]
                kty[mb] = acc
                basis_idx[mb] = t
                kb[mb] = 1.0
                mb += 1
                counts[2] = mb
        if mb > 0:
            _chol_solve(R, kty, mb, coef)
            acc = 0.0
            for j in range(mb):
                acc += coef[j] * kb[j]
            pred[i] = acc
        if not awv and mb > 0:  # the row enters H after predicting
            for j in range(mb):
                KtI[t, j] = kb[j]
                tmp[j] = kb[j]
            chol_update(R, tmp, mb)
        for j in range(mb):
            kty[j] += y[i] * KtI[t, j]
        ys[t] = y[i]
        counts[0] = t + 1
        counts[3] = i + 1
    return pred
