"""Numerical layer of mini-batch proximal SDCA, the baseline of the DSPDC experiments.

Proximal stochastic dual coordinate ascent (Shalev-Shwartz & Zhang, "Accelerated proximal
stochastic dual coordinate ascent for regularized loss minimization", 2013; "prox-SDCA",
their Procedure with Option I) on the problem of :mod:`ooc_kernels.families.dspdc.kernels`, in the DSPDC
sign convention (``y = -alpha`` of the SDCA papers)::

    P(x) = (1/n) sum_i phi_i(a_i^T x) + g(x),   g(x) = sum_j lam2 / 2 x_j^2 + lam1 |x_j|
    D(y) = -g*(-A^T y / n) - (1/n) sum_i phi_i*(y_i),   x(y) = grad g*(-A^T y / n)

with ``grad g*(w) = soft(w, lam1) / lam2`` (the ``v = -A^T y / (lam2 n)``, ``x = soft(v,
lam1 / lam2)`` of prox-SDCA).  An iteration draws ``m`` rows ``I`` (Robert Floyd's sampler
of :func:`ooc_kernels.families.dspdc.kernels.sample_without_replacement`), computes ``c_i = <a_i, x>`` for
all of them with the same ``x``, and maximizes the lower bound of the dual increase of each
coordinate::

    y_i <- argmax_beta  (1/n) c_i beta - (1/n) phi_i*(beta) - (1/(2 sigma_i)) (beta - y_i)^2

which is exactly the DSPDC dual step :func:`ooc_kernels.families.dspdc.kernels.dual_prox` with
``sigma_i = lam2 n^2 / (nu ||a_i||^2)`` (the closed forms for the squared loss and the
smoothed hinge, safeguarded Newton steps for the logistic loss).  ``nu`` is the mini-batch
safety factor: ``nu = m`` makes every mini-batch step increase ``D`` (``||A_I^T dy||^2 <= m
sum_i ||a_i||^2 dy_i^2``); ``nu = 1`` is plain SDCA for ``m = 1``.  Then ``A^T y`` and
``x = x(y)`` are updated.

Every ``@njit`` kernel (:func:`ooc_kernels._jit._cache.njit`) has a plain-NumPy twin with the suffix ``_ref``.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dspdc.in_memory.kernels_sdca import sdca_dense_iterations
>>> rng = np.random.default_rng(0)
>>> A = rng.normal(size=(30, 4)); b = A @ np.ones(4)
>>> y, x, w = np.zeros(30), np.zeros(4), np.zeros(4)
>>> sigmas = 0.1 * 30 ** 2 / np.einsum("ij,ij->i", A, A)
>>> sdca_dense_iterations(A, b, y, x, w, 30, rng.random((3000, 1)), 1, 0, 0.0, 0.1, sigmas)
>>> np.allclose(x, np.linalg.solve(A.T @ A + 30 * 0.1 * np.eye(4), A.T @ b))   # ridge
True
"""

from __future__ import annotations

import numpy as np

from ooc_kernels._jit._cache import njit
from ooc_kernels._jit.losses import dual_prox
from ooc_kernels.families.dspdc.kernels import (
    primal_prox,
    primal_prox_ref,
    sample_without_replacement,
    sample_without_replacement_ref,
)
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.losses.reference import dual_prox_ref

__all__ = ["primal_from_dual", "primal_from_dual_ref",
           "sdca_dense_iterations", "sdca_dense_iterations_ref",
           "sdca_factorized_iterations", "sdca_factorized_iterations_ref"]


@njit(cache=True, nogil=True)
def primal_from_dual(aty_j, n_total, lam1, lam2):
    """``x_j = grad g_j*(-(A^T y)_j / n) = soft(-(A^T y)_j / n, lam1) / lam2``.

    Parameters
    ----------
    aty_j : float
        ``(A^T y)_j``.
    n_total : int or float
        ``n``.
    lam1, lam2 : float
        ``g_j(x) = lam2 / 2 x^2 + lam1 |x|`` with ``lam2 > 0``.

    Returns
    -------
    float

    Examples
    --------
    >>> primal_from_dual(-6.0, 2, 1.0, 0.5), primal_from_dual(1.0, 2, 1.0, 0.5)
    (4.0, 0.0)
    """
    # primal_prox(w, 1, lam1, 0) = soft(w, lam1)
    return primal_prox(-np.float64(aty_j) / np.float64(n_total), 1.0, lam1, 0.0) / lam2


def primal_from_dual_ref(aty, n_total, lam1, lam2):
    """NumPy twin of :func:`primal_from_dual` (vectorised)."""
    return primal_prox_ref(-np.asarray(aty, dtype=np.float64) / n_total, 1.0, lam1, 0.0) / lam2


@njit(cache=True, nogil=True)
def _check(n_rows, m, n_total, row_uniforms, sigmas, lam2):
    if m < 1 or m > n_rows:
        raise ValidationError("SDCA iterations: need 1 <= m <= number of rows")
    if n_total < n_rows:
        raise ValidationError("SDCA iterations: n_total must be >= the number of rows")
    if row_uniforms.shape[1] != m:
        raise ValidationError("SDCA iterations: row_uniforms must be (T, m)")
    if sigmas.shape[0] != n_rows:
        raise ValidationError("SDCA iterations: sigmas needs one entry per row")
    if not lam2 > 0.0:
        raise ValidationError("SDCA iterations: lam2 must be > 0 (strongly convex g)")


@njit(cache=True, nogil=True)
def sdca_dense_iterations(A, b, y, x, w, n_total, row_uniforms, m, loss_id, lam1, lam2,
                          sigmas):
    """Run ``T`` mini-batch prox-SDCA iterations in place on dense rows.

    Per iteration ``t``: ``I`` = :func:`~ooc_kernels.families.dspdc.kernels.sample_without_replacement`
    ``(n_rows, m, row_uniforms[t])``; for ``i`` in ``I`` (all with the same ``x``)
    ``y_i = dual_prox(loss_id, <A_i, x>, y_i, b_i, sigmas[i], n_total)``; then
    ``w += A_I^T dy`` and ``x_j = primal_from_dual(w_j, n_total, lam1, lam2)`` for every ``j``.
    ``O(m p + p)`` per iteration.

    Parameters
    ----------
    A : ndarray (n_rows, p), float32 or float64
    b : ndarray (n_rows,)
        Labels (``+-1`` for the margin losses).
    y : ndarray (n_rows,) float64, updated
        The duals (start inside the dual domain, e.g. zeros).
    x : ndarray (p,) float64, updated
        ``x(y)``; must equal ``primal_from_dual(w)`` on entry.
    w : ndarray (p,) float64, updated
        ``A^T y``.
    n_total : int or float
        ``n`` of the ``1/n`` of the problem.
    row_uniforms : ndarray (T, m) float64
        Uniforms in ``[0, 1)`` that draw ``I``.
    m : int
        Rows per iteration.
    loss_id : int
        0 squared, 1 smoothed hinge, 2 logistic (:mod:`ooc_kernels.families.dspdc.kernels`).
    lam1, lam2 : float
    sigmas : ndarray (n_rows,) float64
        Dual step of each row, ``lam2 n^2 / (nu ||a_i||^2)``.

    Notes
    -----
    Twin: :func:`sdca_dense_iterations_ref`.
    """
    n_rows, p = A.shape
    _check(n_rows, m, n_total, row_uniforms, sigmas, lam2)
    if b.shape[0] != n_rows or y.shape[0] != n_rows or x.shape[0] != p or w.shape[0] != p:
        raise ValidationError("sdca_dense_iterations: A (n, p), b (n,), y (n,), x (p,), "
                              "w (p,) must agree")
    nt = np.float64(n_total)
    rows = np.empty(m, dtype=np.int64)
    marks = np.zeros(n_rows, dtype=np.bool_)
    dy = np.empty(m, dtype=np.float64)
    for t in range(row_uniforms.shape[0]):
        sample_without_replacement(n_rows, m, row_uniforms[t], marks, rows)
        for k in range(m):
            i = rows[k]
            c = 0.0
            for j in range(p):
                c += np.float64(A[i, j]) * x[j]
            y_new = dual_prox(loss_id, c, y[i], np.float64(b[i]), sigmas[i], nt)
            dy[k] = y_new - y[i]
            y[i] = y_new
        changed = False
        for k in range(m):
            d = dy[k]
            if d != 0.0:
                changed = True
                i = rows[k]
                for j in range(p):
                    w[j] += np.float64(A[i, j]) * d
        if changed:
            for j in range(p):
                x[j] = primal_from_dual(w[j], nt, lam1, lam2)


def sdca_dense_iterations_ref(A, b, y, x, w, n_total, row_uniforms, m, loss_id, lam1, lam2,
                              sigmas):
    """NumPy twin of :func:`sdca_dense_iterations` (same in-place contract, vectorised)."""
    A = np.asarray(A)
    b = np.asarray(b, dtype=np.float64)
    sigmas = np.asarray(sigmas, dtype=np.float64)
    n_rows = A.shape[0]
    if not (1 <= m <= n_rows) or n_total < n_rows:
        raise ValidationError(f"need 1 <= m <= {n_rows} and n_total >= {n_rows}; got m={m}, "
                              f"n_total={n_total}")
    for ru in np.asarray(row_uniforms, dtype=np.float64):
        I = sample_without_replacement_ref(n_rows, m, ru)
        AI = A[I].astype(np.float64)
        y_new = np.array([dual_prox_ref(loss_id, c, yi, bi, s, n_total)
                          for c, yi, bi, s in zip(AI @ x, y[I], b[I], sigmas[I])]).ravel()
        dy = y_new - y[I]
        y[I] = y_new
        if np.any(dy != 0.0):
            w += AI.T @ dy
            x[:] = primal_from_dual_ref(w, n_total, lam1, lam2)


@njit(cache=True, nogil=True)
def sdca_factorized_iterations(U, V, b, y, x, u, v, n_total, row_uniforms, m, loss_id, lam1,
                               lam2, sigmas):
    """:func:`sdca_dense_iterations` on ``A = U V`` without forming ``A``.

    ``<a_i, x> = <U_i, v>`` with ``v = V x``; ``u = U^T y`` so that ``A^T y = V^T u``; after
    the dual steps ``u += U_I^T dy``, every ``x_j = primal_from_dual(<V^j, u>)`` and ``v``
    follows the changed coordinates.  ``O(d m + d p)`` per iteration (Table 1 of the DSPDC
    paper grants SDCA this factorized implementation).

    Parameters
    ----------
    U : ndarray (n_rows, d), float32 or float64
    V : ndarray (d, p), float32 or float64
    b : ndarray (n_rows,)
    y : ndarray (n_rows,) float64, updated
    x : ndarray (p,) float64, updated
    u : ndarray (d,) float64, updated
        ``U^T y``.
    v : ndarray (d,) float64, updated
        ``V x``.
    n_total, row_uniforms, m, loss_id, lam1, lam2, sigmas
        As :func:`sdca_dense_iterations` (``sigmas`` from ``||a_i||^2 = ||V^T U_i||^2``).

    Notes
    -----
    Twin: :func:`sdca_factorized_iterations_ref`.
    """
    n_rows, d = U.shape
    p = V.shape[1]
    _check(n_rows, m, n_total, row_uniforms, sigmas, lam2)
    if V.shape[0] != d:
        raise ValidationError("sdca_factorized_iterations: U must be (n_rows, d) and V (d, p)")
    if b.shape[0] != n_rows or y.shape[0] != n_rows or x.shape[0] != p:
        raise ValidationError("sdca_factorized_iterations: b, y need n_rows entries, x p")
    if u.shape[0] != d or v.shape[0] != d:
        raise ValidationError("sdca_factorized_iterations: u and v need d entries")
    nt = np.float64(n_total)
    rows = np.empty(m, dtype=np.int64)
    marks = np.zeros(n_rows, dtype=np.bool_)
    dy = np.empty(m, dtype=np.float64)
    for t in range(row_uniforms.shape[0]):
        sample_without_replacement(n_rows, m, row_uniforms[t], marks, rows)
        for k in range(m):
            i = rows[k]
            c = 0.0
            for r in range(d):
                c += np.float64(U[i, r]) * v[r]
            y_new = dual_prox(loss_id, c, y[i], np.float64(b[i]), sigmas[i], nt)
            dy[k] = y_new - y[i]
            y[i] = y_new
        changed = False
        for k in range(m):
            dk = dy[k]
            if dk != 0.0:
                changed = True
                i = rows[k]
                for r in range(d):
                    u[r] += np.float64(U[i, r]) * dk
        if not changed:
            continue
        for j in range(p):
            a = 0.0
            for r in range(d):
                a += np.float64(V[r, j]) * u[r]
            xj = primal_from_dual(a, nt, lam1, lam2)
            dx = xj - x[j]
            if dx != 0.0:
                x[j] = xj
                for r in range(d):
                    v[r] += np.float64(V[r, j]) * dx


def sdca_factorized_iterations_ref(U, V, b, y, x, u, v, n_total, row_uniforms, m, loss_id,
                                   lam1, lam2, sigmas):
    """NumPy twin of :func:`sdca_factorized_iterations` (same in-place contract)."""
    U = np.asarray(U)
    V = np.asarray(V).astype(np.float64)
    b = np.asarray(b, dtype=np.float64)
    sigmas = np.asarray(sigmas, dtype=np.float64)
    n_rows = U.shape[0]
    if not (1 <= m <= n_rows) or n_total < n_rows:
        raise ValidationError(f"need 1 <= m <= {n_rows} and n_total >= {n_rows}; got m={m}, "
                              f"n_total={n_total}")
    for ru in np.asarray(row_uniforms, dtype=np.float64):
        I = sample_without_replacement_ref(n_rows, m, ru)
        UI = U[I].astype(np.float64)
        y_new = np.array([dual_prox_ref(loss_id, c, yi, bi, s, n_total)
                          for c, yi, bi, s in zip(UI @ v, y[I], b[I], sigmas[I])]).ravel()
        dy = y_new - y[I]
        y[I] = y_new
        if np.any(dy != 0.0):
            u += UI.T @ dy
            x_new = primal_from_dual_ref(V.T @ u, n_total, lam1, lam2)
            v += V @ (x_new - x)
            x[:] = x_new
