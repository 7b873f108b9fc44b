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
/ 4`` (Armijo's backtracking, :func:`armijo_step`, the one every Newton start takes; ``P``
never increases).  An iteration reads the rows once
where the full step is accepted: one pass at the trial point ``x - d``
(:func:`newton_pass`, a numba kernel over the rows,
:func:`~ooc_kernels.families.dspdc.kernels_newton.logistic_rows`) gives its objective, its
gradient and its Hessian together, the Hessian as the sum of the symmetric products of
blocks of :data:`HESSIAN_BLOCK` rows scaled by ``sqrt(w phi'')`` (one buffer of a block,
written by the kernel and multiplied while in the cache), so an accepted step's gradient and
Hessian serve the next iteration.  A rejected full step costs one more pass: the losses of
the shorter steps follow from the margins of the two points (``A x`` and ``A (x - d)``, no
product of their own), and the pass at the step taken gives its gradient and Hessian.  Far
from the solution (a relative gap above :data:`SUBSAMPLE_ABOVE` at the last point) the
Hessian is that of every :data:`SUBSAMPLE`-th row, a quarter of its products for the same
descent; at ``x = 0`` too.  A pass that Newton's quadratic rate predicts to be the last (the
gap ``gap^3 / (previous gap)^2`` below :data:`NO_HESSIAN_BELOW` times the gap the iterations
stop at) computes no Hessian, which no step would use; where it is not the last, the next
step takes the last Hessian again.

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
>>> x, iterations = logistic_newton(A, b, None, 0.01, 1e-14)
>>> def P(v):
...     return np.logaddexp(0.0, -b * (A @ v)).mean() + 0.005 * v @ v
>>> ref = minimize(P, np.zeros(4), method="BFGS", options={"gtol": 1e-10}).x
>>> bool(np.allclose(x, ref, atol=1e-6))
True
"""

from __future__ import annotations

import numpy as np

from ooc_kernels.families.dspdc.kernels_memory import margins_loss_sum
from ooc_kernels.losses import LOSS_LOGISTIC

__all__ = ["GAP_FRACTION", "HESSIAN_BLOCK", "MAX_NEWTON", "NEWTON_MAX_FEATURES",
           "NEWTON_ROWS_PER_COLUMN", "armijo_step", "logistic_duals", "logistic_newton", "newton_applies",
           "newton_pass"]

#: The most solver columns (the intercept's included) for which a fit starts from Newton's
#: solution whatever its rows (also bounded by
#: :data:`~ooc_kernels.families.dspdc._squared_start.START_MAX_FEATURES`).
NEWTON_MAX_FEATURES = 128
#: Above :data:`NEWTON_MAX_FEATURES` solver columns (and up to
#: :data:`~ooc_kernels.families.dspdc._squared_start.START_MAX_FEATURES`), the rows held in
#: memory start from Newton's solution where they are at most this many times the columns.
#: A Newton iteration (the Hessian's ``n p^2`` products) costs about ``p`` times a DSPDC
#: epoch's ``n p``, and the epochs from zero grow with the condition number ``p / (lam2
#: n)`` (a row's squared norm is about ``p`` on standardized columns), so Newton pays
#: where the rows are few per column: at 2,000 x 300 (``alpha = 1e-4``) the zero start can
#: stop at ``max_iter`` and Newton's takes about half its CPU time; at 16 rows per column
#: the two cost the same, and at 33 and 66 (10,000 and 20,000 x 300: 18 and 13 epochs from
#: zero) the zero start is 1.1 to 1.4 times faster (``benchmarks/dspdc_newton_columns.py``).
NEWTON_ROWS_PER_COLUMN = 16
#: The most Newton iterations of the start (each one read of the rows at a full step).
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
#: The next pass computes no Hessian (the last one serves again) where the gap predicted at
#: its point by Newton's quadratic rate, ``gap^3 / (previous gap)^2``, is below this times
#: the gap the iterations stop at: that pass is likely the last, whose Hessian no step uses.
NO_HESSIAN_BELOW = 0.1
#: The rows scaled at a time for the Hessian (a buffer of this many rows, in the cache).
HESSIAN_BLOCK = 8192


def newton_applies(n: int | None, p: int) -> bool:
    """Whether a logistic fit on ``p`` solver columns starts from Newton's solution in the
    ``p``-space (the l2 part, the l1 part's absence and ``p`` at most
    :data:`~ooc_kernels.families.dspdc._squared_start.START_MAX_FEATURES` aside): ``p``
    at most :data:`NEWTON_MAX_FEATURES`, or ``n`` rows held in memory (None: out of core)
    at most :data:`NEWTON_ROWS_PER_COLUMN` times ``p``.

    >>> newton_applies(None, 128), newton_applies(2000, 301), newton_applies(20000, 301)
    (True, True, False)
    >>> newton_applies(None, 301)
    False
    """
    if int(p) <= NEWTON_MAX_FEATURES:
        return True
    return n is not None and 0 < int(n) <= NEWTON_ROWS_PER_COLUMN * int(p)


def newton_pass(rows: np.ndarray, b: np.ndarray, weights, x: np.ndarray, stride: int,
                z: np.ndarray, block: np.ndarray):
    """One read of the rows at ``x``: ``z = A x`` (written), the losses ``sum_i w_i
    phi_i(a_i^T x)``, the gradient's sum ``A^T (w phi'(A x))`` and the Hessian's sum ``A_S^T
    diag(w phi''(A x)) A_S`` over the rows ``S`` = every ``stride``-th row, with ``|S|``
    (``stride`` 0: no Hessian, a zero sum over no rows).  The rows are visited in runs
    whose scaled rows fill ``block`` (``(k, p)``:
    :func:`~ooc_kernels.families.dspdc.kernels_newton.logistic_rows`), each followed by the
    symmetric product of the block just written.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> A, b, x = rng.normal(size=(50, 3)), np.sign(rng.normal(size=50)), rng.normal(size=3)
    >>> z = np.empty(50)
    >>> loss, g, H, count = newton_pass(A, b, None, x, 2, z, np.empty((7, 3)))
    >>> s = 1.0 / (1.0 + np.exp(b * (A @ x)))
    >>> h = (s * (1 - s))[::2]
    >>> bool(np.allclose(H, A[::2].T @ (h[:, None] * A[::2]))), count
    (True, 25)
    >>> bool(np.allclose(g, A.T @ (-b * s))), bool(np.allclose(z, A @ x))
    (True, True)
    """
    from ooc_kernels.families.dspdc import kernels_newton

    n, p = rows.shape
    g, H = np.zeros(p), np.zeros((p, p))
    loss, count = 0.0, 0
    span = len(block) * stride if stride > 0 else n   # rows whose scaled rows fill the block
    for lo in range(0, n, span):
        part_loss, k = kernels_newton.logistic_rows(rows, lo, min(n, lo + span), b, weights,
                                                    x, stride, z, g, block)
        loss += part_loss
        part = block[:k]
        H += part.T @ part
        count += k
    return loss, g, H, count


def logistic_newton(rows: np.ndarray, b: np.ndarray, weights, lam2: float,
                    tol: float | None, max_iter: int = MAX_NEWTON, margins=None):
    """Newton's method from ``x = 0`` on ``P`` of the module docstring: ``rows`` the
    solver's rows (``(n, p)`` float64), ``b`` the labels (``-1 / +1``), ``weights`` the rows'
    weights (None: ones), ``lam2 > 0``; iterations until the gap ``||g||^2 / (2 lam2)`` is at
    most ``GAP_FRACTION * tol * P`` (``tol`` None: :data:`DEFAULT_TOL`) or ``max_iter`` of
    them.  ``margins`` (``(n,)`` float64, optional) receives ``A x`` of the ``x`` returned.
    Returns ``x`` (``(p,)`` float64), or None when a value is not finite (no start: the fit
    starts from zero and reports the values), and the iterations run.  Every iteration
    whose full step is accepted reads the rows once (:func:`newton_pass` at the trial
    point); a shorter step costs one more read (:func:`newton_pass` at the point taken).
    Rows with more columns than rows
    (:func:`~ooc_kernels.families.dspdc._wide_newton.wide_applies`) take the same steps
    solved in the ``n``-space instead
    (:func:`~ooc_kernels.families.dspdc._wide_newton.newton_solution`)."""
    n, p = rows.shape
    tol = DEFAULT_TOL if tol is None else float(tol)
    subsample = n >= SUBSAMPLE * 8 * p              # every SUBSAMPLE-th row leaves >= 8 p
    x = np.zeros(p)
    z = np.empty(n) if margins is None else margins     # A x
    trial_z = np.empty(n)
    block = np.empty((min(n, HESSIAN_BLOCK), p))    # a block of rows scaled by sqrt(w phi'')
    last_gap = np.inf
    with np.errstate(all="ignore"):     # huge values: inf or nan, and no start
        stride = SUBSAMPLE if subsample else 1      # far from the solution at x = 0
        loss, gsum, Hsum, count = newton_pass(rows, b, weights, x, stride, z, block)
        for k in range(max_iter + 1):
            P = loss / n + 0.5 * lam2 * float(x @ x)
            g = gsum / n + lam2 * x
            if not (np.isfinite(P) and np.all(np.isfinite(g))):
                return None, k
            gap = float(g @ g) / (2.0 * lam2)
            if gap <= GAP_FRACTION * tol * abs(P) or k == max_iter:
                break
            if count:                                # else the last Hessian serves again
                H = Hsum / count
                H.flat[::p + 1] += lam2
            try:
                d = np.linalg.solve(H, g)
            except np.linalg.LinAlgError:
                return None, k
            decrease = float(g @ d)
            if not (np.isfinite(decrease) and decrease > 0.0):
                break
            # far from the solution (the gap above SUBSAMPLE_ABOVE times P) the next Hessian
            # is that of every SUBSAMPLE-th row: a quarter of its products, the same descent
            stride = SUBSAMPLE if subsample and gap > SUBSAMPLE_ABOVE * abs(P) else 1
            if gap < last_gap < np.inf and gap ** 3 / last_gap ** 2 <= NO_HESSIAN_BELOW \
                    * GAP_FRACTION * tol * abs(P):
                stride = 0                           # likely the last pass: no Hessian
            last_gap = gap
            full = []

            def value_at(step):
                trial_x = x - step * d
                if step == 1.0:                      # the full step: a pass at x - d
                    full.append(newton_pass(rows, b, weights, trial_x, stride, trial_z,
                                            block))
                    losses = full[0][0]
                else:               # the shorter steps' losses from the margins of x, x - d
                    if len(full) == 1:
                        full.append(z - trial_z)     # the products' direction, A d
                    losses = margins_loss_sum(z - step * full[1], b, weights, LOSS_LOGISTIC)
                return losses / n + 0.5 * lam2 * float(trial_x @ trial_x)

            step = armijo_step(value_at, P, decrease)
            if step is None:
                break                                # no decrease: x is the start
            x = x - step * d
            if step == 1.0:                          # the full step: one read
                loss, gsum, Hsum, count = full[0]
                z, trial_z = trial_z, z
            else:
                loss, gsum, Hsum, count = newton_pass(rows, b, weights, x, stride, z, block)
    if not np.all(np.isfinite(x)):
        return None, k
    if margins is not None and z is not margins:
        margins[:] = z
    return x, k


def armijo_step(value_at, P: float, decrease: float) -> float | None:
    """Armijo's backtracking of every Newton start (in memory in the ``p``-space,
    :func:`logistic_newton`; in the ``n``-space,
    :func:`~ooc_kernels.families.dspdc._wide_newton.wide_newton`; out of core,
    :func:`~ooc_kernels.families.dspdc._ooc_newton.newton_passes`): the largest step ``s``
    of ``1, 1/2, 1/4, ...`` (at most :data:`MAX_HALVINGS` tried, in that order) whose
    objective ``value_at(s)`` is at most ``P - ARMIJO s decrease``, or None where none is
    (the iterations then stop where they are).

    >>> armijo_step(lambda s: (1.0 - s) ** 2 + 4.0 * s ** 2, 1.0, 2.0)
    0.25
    """
    step = 1.0
    for _ in range(MAX_HALVINGS):
        if value_at(step) <= P - ARMIJO * step * decrease:
            return step
        step *= 0.5
    return None


def logistic_duals(z: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The duals optimal for the margins ``z = A x``: ``y_i = phi_i'(z_i) = -b_i
    sigmoid(-b_i z_i)``, with ``b_i y_i`` clipped to the dual step's interval ``[-W_HIGH,
    -W_LOW]`` (strictly inside ``(-1, 0)``)."""
    from scipy.special import expit

    from ooc_kernels._jit.losses import W_HIGH, W_LOW

    s = expit(-b * z)
    return b * -np.clip(s, W_LOW, W_HIGH)
