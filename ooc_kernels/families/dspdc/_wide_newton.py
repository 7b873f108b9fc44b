"""The logistic loss's Newton start for wide rows in memory: more columns than rows.

With ``n`` rows of ``p > n`` solver columns (the intercept's included) held in memory,
Newton's step of :mod:`~ooc_kernels.families.dspdc._logistic_start`,

    d = H^{-1} g,    H = A^T diag(w phi''(A x)) A / n + lam2 I,

costs ``n p^2`` products for ``H`` and ``p^3 / 3`` for its factor in the ``p``-space.  With
``r_i = sqrt(w_i phi_i''(a_i^T x) / n)`` and ``R = diag(r)``, ``H = lam2 I + A^T R^2 A`` and
the Sherman-Morrison-Woodbury identity give the same step from an ``n x n`` system:

    d = (g - A^T R M^{-1} R A g) / lam2,    M = lam2 I + R G R,    G = A A^T,

``M`` positive definite with eigenvalues at least ``lam2`` (zero weights give ``r_i = 0``:
no division by them).  ``G`` is one product of the rows (``n^2 p``, a symmetric rank-``p``
update, once per fit); an iteration then costs a Cholesky factor of ``n^3 / 3`` and four
products of ``n p``.  The step and its backtracking are those of
:func:`~ooc_kernels.families.dspdc._logistic_start.logistic_newton` (Armijo's rule on ``P``,
which never increases), and so is the stopping rule: the duals ``y_i = phi_i'(a_i^T x)``
make the duality gap exactly ``||g||^2 / (2 lam2)``, and the iterations stop once it is at
most ``GAP_FRACTION * tol * P``.

Why a start at all: with standardized columns a row's squared norm is about ``p``, so the
DSPDC rate's condition number ``Lambda / (lam2 n)`` is about ``p / (lam2 n)``, above
``1 / lam2`` wherever ``p > n``; the epochs to a relative gap ``tol`` grow like
``sqrt(p / (n lam2)) log(1 / tol)`` (200 rows of 1,000 columns at ``alpha = 1e-4``: a
relative gap of 0.8 after 100 epochs), where Newton takes about a dozen iterations.

:func:`wide_applies` is where this start replaces the ``p``-space one: more columns than
:data:`~ooc_kernels.families.dspdc._logistic_start.NEWTON_MAX_FEATURES`, fewer rows than
columns, and at most :data:`WIDE_MAX_ROWS` rows (the factor of ``M`` each iteration).

Examples
--------
>>> import numpy as np
>>> from scipy.optimize import minimize
>>> rng = np.random.default_rng(0)
>>> A = rng.normal(size=(30, 200)); b = np.sign(A[:, 0] + 0.1 * rng.normal(size=30))
>>> x, iterations = wide_newton(A, b, None, 0.01, 1e-12)
>>> def P(v):
...     s = 1.0 / (1.0 + np.exp(b * (A @ v)))
...     value = np.logaddexp(0.0, -b * (A @ v)).mean() + 0.005 * v @ v
...     return value, A.T @ (-b * s) / 30 + 0.01 * v
>>> ref = minimize(P, np.zeros(200), jac=True, method="L-BFGS-B",
...                options={"gtol": 1e-12, "ftol": 0.0, "maxiter": 10000}).x
>>> bool(np.allclose(x, ref, atol=1e-6))
True
"""

from __future__ import annotations

import numpy as np

__all__ = ["WIDE_MAX_ROWS", "newton_solution", "wide_applies", "wide_newton"]

#: The most rows for which the start of wide rows applies (its ``n x n`` factor, ``n^3 /
#: 3`` products per Newton iteration, and ``G`` of ``8 n^2`` bytes).
WIDE_MAX_ROWS = 512


def wide_applies(n: int, p: int) -> bool:
    """Whether a logistic fit on ``n`` rows of ``p`` solver columns held in memory starts
    from Newton's solution computed in the ``n``-space (:func:`wide_newton`): ``p`` above
    :data:`~ooc_kernels.families.dspdc._logistic_start.NEWTON_MAX_FEATURES`, ``n < p``
    and ``n <= WIDE_MAX_ROWS``.

    >>> wide_applies(200, 1001), wide_applies(2000, 1001), wide_applies(100, 101)
    (True, False, False)
    """
    from ooc_kernels.families.dspdc._logistic_start import NEWTON_MAX_FEATURES

    return NEWTON_MAX_FEATURES < int(p) and 0 < int(n) < int(p) and int(n) <= WIDE_MAX_ROWS


def newton_solution(rows: np.ndarray, b: np.ndarray, weights, lam2: float,
                    tol: float | None, margins=None):
    """Newton's solution of the logistic start on the solver's rows held in memory: in the
    ``n``-space where :func:`wide_applies` (:func:`wide_newton`), else in the ``p``-space
    (:func:`~ooc_kernels.families.dspdc._logistic_start.logistic_newton`); the same
    arguments and result."""
    from ooc_kernels.families.dspdc._logistic_start import logistic_newton

    if wide_applies(*rows.shape):
        return wide_newton(rows, b, weights, lam2, tol, margins=margins)
    return logistic_newton(rows, b, weights, lam2, tol, margins=margins)


def _objective(z, b, weights, x, lam2, n):
    """``P(x)`` from the margins ``z = A x``, and ``s_i = sigmoid(-b_i z_i)``."""
    from scipy.special import expit

    from ooc_kernels.families.dspdc.kernels_memory import margins_loss_sum
    from ooc_kernels.losses import LOSS_LOGISTIC

    loss = float(margins_loss_sum(z, b, weights, LOSS_LOGISTIC))
    return loss / n + 0.5 * lam2 * float(x @ x), expit(-b * z)


def wide_newton(rows: np.ndarray, b: np.ndarray, weights, lam2: float, tol: float | None,
                max_iter: int | None = None, margins=None):
    """Newton's method from ``x = 0`` on the logistic ``P`` of
    :mod:`~ooc_kernels.families.dspdc._logistic_start`, each step solved in the
    ``n``-space (module docstring): the arguments and the result of
    :func:`~ooc_kernels.families.dspdc._logistic_start.logistic_newton` (``x``, or None
    when a value is not finite, and the iterations run; ``margins`` receives ``A x``)."""
    from scipy.linalg import LinAlgError, cho_factor, cho_solve

    from ooc_kernels.families.dspdc import _logistic_start as ls

    n, p = rows.shape
    tol = ls.DEFAULT_TOL if tol is None else float(tol)
    max_iter = ls.MAX_NEWTON if max_iter is None else int(max_iter)
    wsum = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    x, z = np.zeros(p), np.zeros(n)
    k = 0
    with np.errstate(all="ignore"):     # huge values: inf or nan, and no start
        G = rows @ rows.T
        P, s = _objective(z, b, weights, x, lam2, n)
        for k in range(max_iter + 1):
            g = rows.T @ (wsum * (-b * s)) / n + lam2 * x
            if not (np.isfinite(P) and np.all(np.isfinite(g))):
                return None, k
            gap = float(g @ g) / (2.0 * lam2)
            if gap <= ls.GAP_FRACTION * tol * abs(P) or k == max_iter:
                break
            r = np.sqrt(wsum * s * (1.0 - s) / n)
            M = r[:, None] * G * r[None, :]
            M.flat[::n + 1] += lam2
            try:
                v = cho_solve(cho_factor(M, lower=True, check_finite=True), r * (rows @ g))
            except (LinAlgError, ValueError):
                return None, k
            d = (g - rows.T @ (r * v)) / lam2
            decrease = float(g @ d)
            if not (np.isfinite(decrease) and decrease > 0.0):
                break
            ad = rows @ d

            def value_at(step):
                return _objective(z - step * ad, b, weights, x - step * d, lam2, n)[0]

            step = ls.armijo_step(value_at, P, decrease)
            if step is None:
                break                                # no decrease: x is the start
            x = x - step * d
            z = rows @ x                             # the margins of x itself, not a sum
            P, s = _objective(z, b, weights, x, lam2, n)
    if not np.all(np.isfinite(x)):
        return None, k
    if margins is not None:
        margins[:] = z
    return x, k
