"""The logistic loss's start in memory: Newton's method in the ``p``-space on the rows held.

With the solver's rows ``A`` held in memory (standardized, with the intercept's column:
:class:`~ooc_kernels.families.dspdc._direct.MemoryRows`), the binary logistic loss with an
l2 part and no l1 part,

    P(x) = 1/n sum_i w_i phi_i(a_i^T x) + lam2 / 2 ||x||^2,   phi_i(z) = log(1 + exp(-b_i z)),

is smooth and strongly convex in ``p`` unknowns, and Newton's method solves it in a few
passes over the rows where DSPDC's coordinate steps take many: from ``x = 0``,

    g = A^T (w phi'(A x)) / n + lam2 x,    H = A^T diag(w phi''(A x)) A / n + lam2 I,
    x <- x - s H^{-1} g,

``s`` the largest of ``1, 1/2, 1/4, ...`` that decreases ``P`` by at least ``s g^T H^{-1} g
/ 4`` (Armijo's backtracking; ``P`` never increases).  An iteration is BLAS over the rows:
the gradient ``A^T r`` (the margins ``A x`` are kept and moved by ``s A d``), the Hessian as
the sum of the symmetric products of blocks of :data:`HESSIAN_BLOCK` rows scaled by
``sqrt(w phi'')`` (:func:`hessian`: one buffer of a block, in the cache), and the losses of
each trial step from ``A x - s A d`` (no product of their own).  Far from the solution (a
relative gap above :data:`SUBSAMPLE_ABOVE`) the Hessian is that of every
:data:`SUBSAMPLE`-th row, a quarter of the cost for the same descent.

The duals optimal for ``x``, ``y_i = phi_i'(a_i^T x)``, make the duality gap of the user's
problem (the certificate the fit stops on) exactly

    P(x) - D(y) = ||g||^2 / (2 lam2)

(Fenchel-Young: ``phi_i(z_i) + phi_i*(y_i) = z_i y_i``), so the iterations stop once that
gap is at most :data:`GAP_FRACTION` times the fit's ``tol`` times ``P(x)``, at the latest
after :data:`MAX_NEWTON` iterations: the fit's first task then finds the start certified and
runs no iteration (``DSPDCAlgorithm.certifies_start``).  Where the gap stays larger (``tol``
None, or the iterations ran out), DSPDC's iterations go on from that start.

:func:`~ooc_kernels.families.dspdc._memory_start.start_in_memory` starts the fit there as it
does from the squared loss's start: ``start_x``, the duals ``y_i = phi_i'(a_i^T x_0)``
(clipped to the dual step's interval), their conjugates and the chunks' ``A_c^T (w y_c)``.

Examples
--------
>>> import numpy as np
>>> from scipy.optimize import minimize
>>> rng = np.random.default_rng(0)
>>> A = rng.normal(size=(300, 4)); b = np.sign(A @ [1.0, -2.0, 0.5, 0.0] + rng.normal(size=300))
>>> x, iterations = logistic_newton(A, b, None, 0.01, 1e-10)
>>> def P(v):
...     return np.logaddexp(0.0, -b * (A @ v)).mean() + 0.005 * v @ v
>>> ref = minimize(P, np.zeros(4), method="BFGS", options={"gtol": 1e-10}).x
>>> bool(np.allclose(x, ref, atol=1e-6))
True
"""

from __future__ import annotations

import numpy as np

__all__ = ["GAP_FRACTION", "HESSIAN_BLOCK", "MAX_NEWTON", "hessian", "logistic_duals",
           "logistic_newton"]

#: The most Newton iterations of the start (each one pass of BLAS over the rows).
MAX_NEWTON = 20
#: The iterations stop once the duality gap at the duals ``phi'(A x)`` is at most this times
#: the fit's ``tol`` times ``P(x)`` (below ``tol``: the fit certifies the start).
GAP_FRACTION = 0.9
#: Without a ``tol`` (a fit of ``max_iter`` epochs), the relative gap the iterations reach.
DEFAULT_TOL = 1e-10
#: Armijo's constant of the backtracking and the most halvings of the step.
ARMIJO = 0.25
MAX_HALVINGS = 40
#: Far from the solution (a relative gap above :data:`SUBSAMPLE_ABOVE`) the Hessian is that
#: of every ``SUBSAMPLE``-th row (where that leaves at least ``8 p`` rows).
SUBSAMPLE = 4
SUBSAMPLE_ABOVE = 1.0
#: The rows scaled at a time for the Hessian (a buffer of this many rows, in the cache).
HESSIAN_BLOCK = 8192


def hessian(rows: np.ndarray, h: np.ndarray, stride: int, lam2: float,
            block: np.ndarray) -> np.ndarray:
    """``A_S^T diag(h) A_S / |S| + lam2 I`` of the rows ``S`` = every ``stride``-th row
    (``h``: their ``w phi''``, one per row of ``S``), as the sum of the symmetric products of
    blocks of rows scaled by ``sqrt(h)`` into ``block`` (``(k, p)``, ``k`` rows at a time).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> A, h = rng.normal(size=(50, 3)), rng.uniform(size=25)
    >>> H = hessian(A, h, 2, 0.1, np.empty((7, 3)))
    >>> bool(np.allclose(H, A[::2].T @ (h[:, None] * A[::2]) / 25 + 0.1 * np.eye(3)))
    True
    """
    p = rows.shape[1]
    size = len(h)
    root = np.sqrt(h)
    H = np.zeros((p, p))
    for lo in range(0, size, len(block)):
        hi = min(size, lo + len(block))
        part = block[:hi - lo]
        np.multiply(rows[lo * stride:hi * stride:stride], root[lo:hi, None], out=part)
        H += part.T @ part
    H /= size
    H.flat[::p + 1] += lam2
    return H


def _losses(m: np.ndarray, weights) -> float:
    """``sum_i w_i log(1 + exp(-m_i))`` of the margins ``m_i = b_i a_i^T x``."""
    if m.size and float(m.min()) > -700.0:          # exp(-m) finite: a third of the cost
        values = np.log1p(np.exp(-m))
    else:
        values = np.logaddexp(0.0, -m)
    return float(values.sum() if weights is None else weights @ values)


def logistic_newton(rows: np.ndarray, b: np.ndarray, weights, lam2: float,
                    tol: float | None, max_iter: int = MAX_NEWTON):
    """Newton's method from ``x = 0`` on ``P`` of the module docstring: ``rows`` the
    solver's rows (``(n, p)`` float64), ``b`` the labels (``-1 / +1``), ``weights`` the rows'
    weights (None: ones), ``lam2 > 0``; iterations until the gap ``||g||^2 / (2 lam2)`` is at
    most ``GAP_FRACTION * tol * P`` (``tol`` None: :data:`DEFAULT_TOL`) or ``max_iter`` of
    them.  Returns ``x`` (``(p,)`` float64), or None when a value is not finite (no
    start: the fit starts from zero and reports the values), and the iterations run (each
    one Hessian: a pass over the rows)."""
    from scipy.special import expit

    n, p = rows.shape
    tol = DEFAULT_TOL if tol is None else float(tol)
    x = np.zeros(p)
    m = np.zeros(n)                     # the margins b_i a_i^T x
    block = None                        # a block of rows scaled by sqrt(w phi'')
    with np.errstate(all="ignore"):     # huge values: inf or nan, and no start
        loss = _losses(m, weights)
        for k in range(max_iter + 1):
            P = loss / n + 0.5 * lam2 * float(x @ x)
            s = expit(-m)                               # sigmoid(-m)
            r = -b * s if weights is None else -(weights * b) * s     # w phi'
            g = r @ rows / n + lam2 * x
            if not (np.isfinite(P) and np.all(np.isfinite(g))):
                return None, k
            gap = float(g @ g) / (2.0 * lam2)
            if gap <= GAP_FRACTION * tol * abs(P) or k == max_iter:
                break
            # far from the solution (the gap above SUBSAMPLE_ABOVE times P) the Hessian of
            # every SUBSAMPLE-th row: a quarter of the cost, and the same descent
            stride = SUBSAMPLE if gap > SUBSAMPLE_ABOVE * abs(P) and n >= SUBSAMPLE * 8 * p \
                else 1
            h = s[::stride] * (1.0 - s[::stride])                      # phi''
            if weights is not None:
                h *= weights[::stride]
            if block is None:
                block = np.empty((min(n, HESSIAN_BLOCK), p))
            H = hessian(rows, h, stride, lam2, block)
            try:
                d = np.linalg.solve(H, g)
            except np.linalg.LinAlgError:
                return None, k
            decrease = float(g @ d)
            if not (np.isfinite(decrease) and decrease > 0.0):
                break
            bd = b * (rows @ d)                      # the margins' direction
            step = 1.0
            for _ in range(MAX_HALVINGS):
                trial_x = x - step * d
                trial = _losses(m - step * bd, weights)
                if trial / n + 0.5 * lam2 * float(trial_x @ trial_x) \
                        <= P - ARMIJO * step * decrease:
                    break
                step *= 0.5
            else:
                break                                # no decrease: x is the start
            x = trial_x
            m -= step * bd
            loss = trial
    if not np.all(np.isfinite(x)):
        return None, k
    return x, k


def logistic_duals(z: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The duals optimal for the margins ``z = A x``: ``y_i = phi_i'(z_i) = -b_i
    sigmoid(-b_i z_i)``, with ``b_i y_i`` clipped to the dual step's interval ``[-W_HIGH,
    -W_LOW]`` (strictly inside ``(-1, 0)``)."""
    from scipy.special import expit

    from ooc_kernels._jit.losses import W_HIGH, W_LOW

    s = expit(-b * z)
    return b * -np.clip(s, W_LOW, W_HIGH)
