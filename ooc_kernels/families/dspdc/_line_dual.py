"""A better dual point for the squared loss, from the pass an epoch makes anyway.

The duality gap certifies an iterate ``x`` with ``P(x) - D(y)``, and on the squared loss
the duals are its slow side: the primal iterate converges first.  The squared loss's dual
objective is a concave quadratic (plus the piecewise-quadratic conjugate of the elastic
net's regularizer), so along a line ``y + t d`` it is known exactly from a few sums, and the
line's best point is found without another pass.

An in-memory task that visits every row of the problem once
(``kernels_memory.visits_once``) takes the direction ``d_i = a_i^T x_D - b_i - y_i``: the
residuals at ``x_D = grad g*(-A^T (w y_0) / n)`` (:func:`duals_primal`), the primal point of
the duals ``y_0`` the task starts from, minus the duals ``y_i`` after the task; that is the
dual objective's gradient at ``y_0`` (per row ``(a_i^T x(y) - b_i - y_i) / n``), taken
from where the task ended.  At each row's visit, whose dual is then final for the task, the
kernel computes ``a_i^T x_D`` (one more dot product per row), keeps ``d_i`` and adds
``w_i d_i a_i`` into ``A^T (w d)``.  With ``phi_i*(u) = u^2 / 2 + b_i u``,

``D(y + t d) = -sum_j g*_j(-(A^T (w y) + t A^T (w d)) / n)
- (sum_i w_i phi_i*(y_i) + t sum_i w_i (y_i + b_i) d_i + t^2 / 2 sum_i w_i d_i^2) / n``

and :func:`line_dual_value` maximizes it over ``t``: in closed form for ridge, between the
breakpoints of the elastic net's conjugate otherwise.  The task then moves its duals to
``y + t* d`` (with their conjugates and products) when that raises ``D``: the duals the
next gap evaluation reads are a better dual point, and the gap with them is the same
certificate as before (``P(x) - D(y)`` of duals the fit holds).

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> A, b = rng.normal(size=(40, 3)), rng.normal(size=40)
>>> lam1, lam2, n = 0.0, 0.1, 40
>>> y = rng.normal(size=40) * 0.1
>>> xd = duals_primal(A.T @ y, n, lam1, lam2)
>>> d = A @ xd - b - y
>>> value, t = line_dual_value(A.T @ y, A.T @ d, np.sum(0.5 * y**2 + b * y),
...                            np.sum((y + b) * d), np.sum(d * d), n, lam1, lam2)
>>> def D(u):
...     v = -A.T @ u / n
...     return -np.sum(v**2) / (2 * lam2) - np.sum(0.5 * u**2 + b * u) / n
>>> bool(np.isclose(value, D(y + t * d))), bool(value >= D(y))
(True, True)
"""

from __future__ import annotations

import numpy as np

__all__ = ["duals_primal", "line_dual_value"]


def duals_primal(aty: np.ndarray, n: int, lam1: float, lam2: float) -> np.ndarray:
    """``x(y) = grad g*(-A^T (w y) / n)``: the primal point of duals whose ``A^T (w y)`` is
    ``aty``, for ``g(x) = lam1 ||x||_1 + lam2 / 2 ||x||^2``.

    Examples
    --------
    >>> duals_primal(np.array([-4.0, 1.0, 0.5]), 2, 0.25, 0.5).tolist()
    [3.5, -0.5, -0.0]
    """
    v = -np.asarray(aty, dtype=np.float64) / n   # A^T y: p numbers
    return np.sign(v) * np.maximum(np.abs(v) - lam1, 0.0) / lam2


def line_dual_value(aty, atd, conj, s1: float, s2: float, n: int, lam1: float,
                    lam2: float) -> tuple[float, float]:
    """The largest dual objective on the line ``y + t d`` and its ``t``.

    Parameters
    ----------
    aty, atd : ndarray (p,)
        ``A^T (w y)`` and ``A^T (w d)``.
    conj : float
        ``sum_i w_i phi_i*(y_i)``.
    s1, s2 : float
        ``sum_i w_i (y_i + b_i) d_i`` and ``sum_i w_i d_i^2``: the squared loss's
        ``sum_i w_i phi_i*(y_i + t d_i)`` is ``conj + t s1 + t^2 s2 / 2``.
    n : int
        The number of rows of the problem.
    lam1, lam2 : float
        The regularizer ``lam1 ||x||_1 + lam2 / 2 ||x||^2`` (``lam2 > 0``).

    Returns
    -------
    (float, float)
        ``max_t D(y + t d)`` and the ``t`` that attains it; ``(D(y), 0.0)`` where no
        ``t`` found raises ``D`` (``d`` is 0, or the sums are not finite).

    Examples
    --------
    >>> value, t = line_dual_value(np.array([2.0]), np.array([-2.0]), 1.0, -1.0, 1.0, 1,
    ...                            0.0, 1.0)
    >>> t, value          # D(t) = -(2 - 2 t)^2 / 2 - (1 - t + t^2 / 2)
    (1.0, -0.5)
    """
    u = -np.asarray(aty, dtype=np.float64) / n   # A^T y and A^T d: p numbers each
    v = -np.asarray(atd, dtype=np.float64) / n

    def value(t: float) -> float:
        s = np.maximum(np.abs(u + t * v) - lam1, 0.0)
        return float(-np.sum(s * s) / (2.0 * lam2) - (conj + t * s1 + 0.5 * t * t * s2) / n)

    def slope(t):          # D'(t), decreasing in t (vectorized over t)
        t = np.asarray(t, dtype=np.float64)[..., None]   # the trial steps, a few numbers
        w = u + t * v
        s = np.maximum(np.abs(w) - lam1, 0.0) * np.sign(w)
        return -(s @ v) / lam2 - (s1 + t[..., 0] * s2) / n

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if not (np.all(np.isfinite(v)) and np.isfinite(s1) and np.isfinite(s2)) or \
                s2 <= 0.0:
            return value(0.0), 0.0
        if lam1 == 0.0:
            t = -(float(u @ v) / lam2 + s1 / n) / (float(v @ v) / lam2 + s2 / n)
        else:              # D' is linear between the points where |u_j + t v_j| = lam1
            moving = v != 0.0
            points = np.sort(np.concatenate([(lam1 - u[moving]) / v[moving],
                                             (-lam1 - u[moving]) / v[moving]]))
            slopes = slope(points)
            k = int(np.searchsorted(-slopes, 0.0))     # the first point with D' >= 0 ... < 0
            lo = points[k - 1] if k > 0 else None
            hi = points[k] if k < len(points) else None
            ref = hi if lo is None else lo       # on [lo, hi] D' is linear: its root
            inside = hi - 1.0 if lo is None else (lo + 1.0 if hi is None else 0.5 * (lo + hi))
            active = np.abs(u + inside * v) > lam1
            curvature = float(v[active] @ v[active]) / lam2 + s2 / n
            t = float(ref + slope(ref) / curvature)
        best = value(t) if np.isfinite(t) else -np.inf
        at_zero = value(0.0)
        return (best, t) if best > at_zero else (at_zero, 0.0)
