"""Numba dispatch of the library's losses on an integer ``loss_id``.

The ids, names and NumPy twins are the rows of the loss table
(:mod:`ooc_kernels.losses.registry`): 0 squared, 1 hinge, 2 logistic, 3 softmax,
4 smoothed hinge, 5 squared hinge, 6 huber, 7 epsilon-insensitive, 8 quantile.  Every function here has one branch per id it serves and a last branch
that raises :class:`~ooc_kernels.exceptions.ValidationError`: an id without its own branch
never falls through to another loss's formula.  ``tests/test_loss_table.py`` calls every
function with every id of the table and compares it with the row's twin.

Two shapes of the same losses:

* scalar, one sample and one output (``z`` the decision value, ``b`` the target, ``+-1``
  for the classification losses): :func:`loss_value`, :func:`loss_derivative`,
  :func:`loss_conjugate` and :func:`dual_prox` (the dual step of DSPDC); every id but 3
  (softmax couples the outputs of a sample and has no scalar form);
* batch, ``F`` and ``Y`` of shape ``(n, C)``: :func:`loss_gradient` and
  :func:`loss_grad_value` (the functional-gradient solvers); every id, the scalar losses
  column by column through the scalar functions.

Every function takes the loss's hyper-parameter as its last argument (``param``, or
``loss_param`` for the batch functions; default 0): ``epsilon`` of huber (> 0) and
epsilon-insensitive (>= 0), ``tau`` of quantile (in (0, 1)); the other losses ignore it.
The kernels do not check its range: the table's rows and the estimators do
(:meth:`ooc_kernels.losses.Loss.with_param`).  Computation is in float64; batch results
are stored in ``out``'s dtype.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels._jit.losses import loss_gradient, loss_value
>>> F = np.array([[0.5], [2.0]]); Y = np.array([[1.0], [1.0]]); out = np.empty_like(F)
>>> loss_gradient(1, F, Y, out)          # hinge: -y where y u < 1
>>> out.ravel().tolist()
[-1.0, 0.0]
>>> loss_value(4, 0.5, 1.0)              # smoothed hinge: (1 - y u)^2 / 2 inside (0, 1)
0.125
"""

from __future__ import annotations

import math

import numpy as np

from ooc_kernels._jit._cache import njit
from ooc_kernels.exceptions import ValidationError

__all__ = ["loss_value", "loss_derivative", "loss_conjugate", "dual_prox", "loss_gradient",
           "loss_grad_value", "NEWTON_RTOL", "NEWTON_MAX_ITER", "W_HIGH", "W_LOW"]

# The ids of the loss table (ooc_kernels.losses.registry); numba reads them as constants.
_SQUARED = 0
_HINGE = 1
_LOGISTIC = 2
_SOFTMAX = 3
_SMOOTHED_HINGE = 4
_SQUARED_HINGE = 5
_HUBER = 6
_EPSILON_INSENSITIVE = 7
_QUANTILE = 8

#: Logistic dual prox: ``t`` within ``NEWTON_RTOL * max(1, |t|)`` of the root (the last step
#: ``h`` has ``h^3`` below it, ``h^4`` for a third-order step, or ``h`` itself is).
NEWTON_RTOL = 1e-13
NEWTON_MAX_ITER = 200
#: Logistic dual prox: a Halley step below this (times ``max(1, |t|)``) is replaced by the
#: third-order (Householder) step from the same point, which ends the solve when ``h^4`` is
#: below the tolerance.
HOUSEHOLDER_BELOW = 1e-2
#: Largest float64 below 1 and the smallest normal float64: the logistic dual stays in
#: ``b * beta in [-W_HIGH, -W_LOW]``, strictly inside ``(-1, 0)``.
W_HIGH = 1.0 - 2.0 ** -53
W_LOW = 2.2250738585072014e-308


# --------------------------------------------------------------------------------------
# scalar helpers
# --------------------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def _sigmoid(z):
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    ez = math.exp(z)
    return ez / (1.0 + ez)


@njit(cache=True, nogil=True)
def _softplus(z):
    """``log(1 + exp(z))`` without overflow."""
    if z > 0.0:
        return z + math.log1p(math.exp(-z))
    return math.log1p(math.exp(z))


@njit(cache=True, nogil=True)
def _xlogx(v):
    if v <= 0.0:
        return 0.0
    return v * math.log(v)


@njit(cache=True, nogil=True)
def _bad_scalar_loss():
    raise ValidationError("unknown loss_id; valid ids are 0 (squared), 1 (hinge), "
                          "2 (logistic), 4 (smoothed_hinge), 5 (squared_hinge), 6 (huber), "
                          "7 (epsilon_insensitive), 8 (quantile); softmax (3) has no scalar "
                          "form")


@njit(cache=True, nogil=True)
def _bad_batch_loss():
    raise ValidationError("unknown loss_id; valid ids are 0 (squared), 1 (hinge), "
                          "2 (logistic), 3 (softmax), 4 (smoothed_hinge), 5 (squared_hinge), "
                          "6 (huber), 7 (epsilon_insensitive), 8 (quantile)")


@njit(cache=True, nogil=True)
def _is_scalar(loss_id):
    return (loss_id == _SQUARED or loss_id == _HINGE or loss_id == _LOGISTIC
            or loss_id == _SMOOTHED_HINGE or loss_id == _SQUARED_HINGE or loss_id == _HUBER
            or loss_id == _EPSILON_INSENSITIVE or loss_id == _QUANTILE)


# --------------------------------------------------------------------------------------
# scalar losses: value, derivative, conjugate, dual prox
# --------------------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def loss_value(loss_id, z, b, param=0.0):
    """The loss ``phi(z)`` for target ``b``.

    Parameters
    ----------
    loss_id : int
        0 squared ``0.5 (z - b)^2``; 1 hinge ``max(0, 1 - b z)``; 2 logistic
        ``log(1 + exp(-b z))``; 4 smoothed hinge with ``s = b z``: ``0`` if ``s >= 1``,
        ``0.5 - s`` if ``s <= 0``, ``0.5 (1 - s)^2`` otherwise; 5 squared hinge
        ``0.5 max(0, 1 - b z)^2``; with ``r = z - b``: 6 huber ``0.5 r^2`` if
        ``|r| <= param``, ``param (|r| - param / 2)`` otherwise; 7 epsilon-insensitive
        ``max(0, |r| - param)``; 8 quantile ``max(-param r, (1 - param) r)``.
    z : float
        The decision value.
    b : float
        The target (``+-1`` for ids 1, 2, 4 and 5).
    param : float
        The loss's hyper-parameter (ids 6, 7: epsilon; 8: tau).

    Returns
    -------
    float

    Raises
    ------
    ValidationError
        An id without a scalar branch.

    Examples
    --------
    >>> loss_value(0, 3.0, 1.0), loss_value(1, 0.5, 1.0), round(loss_value(2, 0.0, -1.0), 6)
    (2.0, 0.5, 0.693147)
    """
    z = np.float64(z)
    b = np.float64(b)
    if loss_id == _SQUARED:
        d = z - b
        return 0.5 * d * d
    if loss_id == _HINGE:
        m = 1.0 - b * z
        if m > 0.0:
            return m
        return 0.0
    if loss_id == _LOGISTIC:
        return _softplus(-b * z)
    if loss_id == _SMOOTHED_HINGE:
        s = b * z
        if s >= 1.0:
            return 0.0
        if s <= 0.0:
            return 0.5 - s
        return 0.5 * (1.0 - s) * (1.0 - s)
    if loss_id == _SQUARED_HINGE:
        m = 1.0 - b * z
        if m > 0.0:
            return 0.5 * m * m
        return 0.0
    if loss_id == _HUBER:
        a = abs(z - b)
        if a <= param:
            return 0.5 * a * a
        return param * (a - 0.5 * param)
    if loss_id == _EPSILON_INSENSITIVE:
        a = abs(z - b) - param
        if a > 0.0:
            return a
        return 0.0
    if loss_id == _QUANTILE:
        r = z - b
        if r >= 0.0:
            return (1.0 - param) * r
        return -param * r
    _bad_scalar_loss()
    return 0.0


@njit(cache=True, nogil=True)
def loss_derivative(loss_id, z, b, param=0.0):
    """The derivative ``phi'(z)``, with the sub-gradients of Dai et al. at the kinks.

    Parameters
    ----------
    loss_id : int
        As :func:`loss_value`.  Values: squared ``z - b``; hinge ``-b`` if ``b z < 1``
        else 0 (at the kink ``b z = 1`` too); logistic ``-b sigmoid(-b z)``; smoothed
        hinge ``-b`` if ``b z <= 0``, ``-b (1 - b z)`` if ``0 < b z < 1``, else 0; squared
        hinge ``z - b`` if ``b z < 1`` else 0; with ``r = z - b``: huber ``r`` clipped to
        ``[-param, param]``; epsilon-insensitive ``sign(r)`` if ``|r| > param``, else 0 (on
        the tube's edges too, and ``sign(0) = 0`` for ``param = 0``); quantile
        ``1 - param`` if ``z >= b`` (at ``z = b`` too), ``-param`` below.
    z, b : float
    param : float
        As :func:`loss_value`.

    Returns
    -------
    float

    Examples
    --------
    >>> loss_derivative(0, 3.0, 1.0), loss_derivative(4, 0.5, -1.0), loss_derivative(2, 0.0, 1.0)
    (2.0, 1.0, -0.5)
    """
    z = np.float64(z)
    b = np.float64(b)
    if loss_id == _SQUARED:
        return z - b
    if loss_id == _HINGE:
        if b * z < 1.0:
            return -b
        return 0.0
    if loss_id == _LOGISTIC:
        return -b * _sigmoid(-b * z)
    if loss_id == _SMOOTHED_HINGE:
        s = b * z
        if s >= 1.0:
            return 0.0
        if s <= 0.0:
            return -b
        return -b * (1.0 - s)
    if loss_id == _SQUARED_HINGE:
        if b * z < 1.0:
            return z - b
        return 0.0
    if loss_id == _HUBER:
        r = z - b
        if r > param:
            return param
        if r < -param:
            return -param
        return r
    if loss_id == _EPSILON_INSENSITIVE:
        r = z - b
        if r > param:
            return 1.0
        if r < -param:
            return -1.0
        return 0.0
    if loss_id == _QUANTILE:
        if z >= b:
            return 1.0 - param
        return -param
    _bad_scalar_loss()
    return 0.0


@njit(cache=True, nogil=True)
def loss_conjugate(loss_id, beta, b, param=0.0):
    """The convex conjugate ``phi*(beta) = sup_z beta z - phi(z)``, ``+inf`` off its domain.

    Parameters
    ----------
    loss_id : int
        With ``w = b beta``: squared ``0.5 beta^2 + b beta`` (domain R); hinge ``w`` on
        ``w in [-1, 0]``; logistic ``(-w) log(-w) + (1 + w) log(1 + w)`` on
        ``w in [-1, 0]`` (``0 log 0 = 0``); smoothed hinge ``w + 0.5 beta^2`` on
        ``w in [-1, 0]``; squared hinge ``w + 0.5 beta^2`` on ``w <= 0``; huber
        ``0.5 beta^2 + b beta`` on ``|beta| <= param``; epsilon-insensitive
        ``b beta + param |beta|`` on ``|beta| <= 1``; quantile ``b beta`` on
        ``beta in [-param, 1 - param]``.
    beta, b : float
    param : float
        As :func:`loss_value`.

    Returns
    -------
    float

    Examples
    --------
    >>> loss_conjugate(0, 1.0, 2.0), loss_conjugate(4, -0.5, 1.0), loss_conjugate(4, 0.5, 1.0)
    (2.5, -0.375, inf)
    >>> round(loss_conjugate(2, -0.5, 1.0), 6)              # -log 2
    -0.693147
    """
    beta = np.float64(beta)
    b = np.float64(b)
    if loss_id == _SQUARED:
        return 0.5 * beta * beta + b * beta
    if loss_id == _HINGE or loss_id == _LOGISTIC or loss_id == _SMOOTHED_HINGE:
        w = b * beta
        if w < -1.0 or w > 0.0:
            return np.inf
        if loss_id == _HINGE:
            return w
        if loss_id == _SMOOTHED_HINGE:
            return w + 0.5 * beta * beta
        return _xlogx(-w) + _xlogx(1.0 + w)
    if loss_id == _SQUARED_HINGE:
        w = b * beta
        if w > 0.0:
            return np.inf
        return w + 0.5 * beta * beta
    if loss_id == _HUBER:
        if abs(beta) > param:
            return np.inf
        return 0.5 * beta * beta + b * beta
    if loss_id == _EPSILON_INSENSITIVE:
        if abs(beta) > 1.0:
            return np.inf
        return b * beta + param * abs(beta)
    if loss_id == _QUANTILE:
        if beta < -param or beta > 1.0 - param:
            return np.inf
        return b * beta
    _bad_scalar_loss()
    return 0.0


@njit(cache=True, nogil=True)
def _logistic_solve(c, y, b, sigma, n, t0):
    # The logistic dual step as (w, t): w = b beta, t = log((1 + w) / (-w)) where the solve
    # ended (w is -sigmoid(-t) to a relative 2e-14 max(1, |t|) unless it was clipped).
    # t0: the current dual's t where the caller kept it from the step that gave the dual
    # (NaN: unknown).
    # With w = b beta = -sigmoid(-t) (t = log((1 + w) / (-w))), the optimality condition
    # c/n - (b/n) log((1 + w)/(-w)) - (beta - y)/sigma = 0 times n sigma b reads
    # G(t) = sigma (c b - t) + n (sigmoid(-t) + b y) = 0, G strictly decreasing, and
    # G(lo) > 0 > G(hi) on lo = c b + n b y / sigma, hi = lo + n / sigma.
    cb = c * b
    by = b * y
    lo = cb + n * by / sigma
    hi = lo + n / sigma
    t = 0.5 * (lo + hi)
    sm = -1.0                   # sigmoid(-t) where known without an exp, else -1
    if -1.0 < by < 0.0:
        # Warm start from the current dual, sigmoid(-t0) = -b y: the first step needs no
        # exp.  Outside the bracket t0 is only a point to step from: G(t0) has the sign of
        # G at the nearer end, and the max / min below keep the bracket.
        t = t0 if t0 == t0 else math.log((1.0 + by) / -by)
        sm = -by
    # Halley steps.  |G''| and |G'''| are at most |G'|, so a step h leaves an error below
    # (5/12) h^3: a step with h^3 below the tolerance is the last one, and sigmoid(-t)
    # after it is its second-order update from sm (a relative error below h^3 / 6), so
    # the solve costs one exp per step after the first.  Near the root (a Halley step
    # below HOUSEHOLDER_BELOW max(1, |t|)) the step is the third-order Householder step
    # (G''' = -n ds (1 - 6 sm + 6 sm^2), from the same sm): its error is below h^4 / 50
    # (measured in 60 digits over sigma in 1e-8 .. 1e2, n in 1 .. 1e6), so a step with
    # h^4 below the tolerance is the last, with sigmoid(-t) updated to third order (a
    # relative error below h^4 / 24).  Far from the root (where the correction would
    # more than double the step) the step is Newton's; a step that leaves the bracket, or
    # turns back by more than half the previous change of t (steps that cycle across the
    # root), is replaced by the bracket's midpoint.
    prev = 0.0
    for _ in range(NEWTON_MAX_ITER):
        if sm < 0.0:
            sm = _sigmoid(-t)
        g = sigma * (cb - t) + n * (sm + by)
        if g > 0.0:
            lo = max(lo, t)
        elif g < 0.0:
            hi = min(hi, t)
        else:
            break
        ds = sm * (1.0 - sm)
        d1 = -sigma - n * ds
        d2 = n * (1.0 - 2.0 * sm) * ds
        den = 2.0 * d1 * d1 - g * d2
        if den >= d1 * d1:
            step = 2.0 * g * d1 / den
        else:
            step = g / d1
        if abs(step) <= HOUSEHOLDER_BELOW * max(1.0, abs(t)):
            p3 = (1.0 - 6.0 * sm + 6.0 * sm * sm) * ds
            step = (6.0 * g * d1 * d1 - 3.0 * g * g * d2) / (
                6.0 * d1 * d1 * d1 - 6.0 * g * d1 * d2 - g * g * n * p3)
            t_new = t - step
            h = abs(step)
            tol = NEWTON_RTOL * max(1.0, abs(t_new))
            if h * h * h * h <= tol and (h <= tol or lo < t_new < hi):
                sm = sm + step * (ds + step * (0.5 * (1.0 - 2.0 * sm) * ds
                                               + step * p3 / 6.0))
                t = t_new
                break
        t_new = t - step
        h = abs(step)
        tol = NEWTON_RTOL * max(1.0, abs(t_new))
        if h * h * h <= tol and (h <= tol or lo < t_new < hi):
            sm = sm + ds * step + 0.5 * (1.0 - 2.0 * sm) * ds * step * step
            t = t_new
            break
        if not (lo < t_new < hi) or (step * prev > 0.0 and h > 0.5 * abs(prev)):
            t_new = 0.5 * (lo + hi)
        prev = t_new - t
        h = abs(prev)
        t = t_new
        sm = -1.0
        tol = NEWTON_RTOL * max(1.0, abs(t))
        if h <= tol or hi - lo <= tol:
            break
    w = -sm if sm >= 0.0 else -_sigmoid(-t)
    if w < -W_HIGH:
        w = -W_HIGH
    elif w > -W_LOW:
        w = -W_LOW
    return w, t


@njit(cache=True, nogil=True)
def _logistic_dual_prox(c, y, b, sigma, n):
    return b * _logistic_solve(c, y, b, sigma, n, np.nan)[0]


@njit(cache=True, nogil=True)
def dual_prox(loss_id, c, y, b, sigma, n, param=0.0):
    """The dual step of DSPDC for one coordinate, the prox of the conjugate.

    ``argmax_beta (1/n) c beta - (1/n) phi*(beta) - (1/(2 sigma)) (beta - y)^2``.

    Parameters
    ----------
    loss_id : int
        As :func:`loss_value`.
    c : float
        ``<a_i, xbar>``.
    y : float
        The current dual ``y_i``.
    b : float
        The target.
    sigma : float
        The dual step size.
    n : float
        The number of samples of the whole problem (the ``1/n`` of the saddle function).
    param : float
        As :func:`loss_value`.

    Returns
    -------
    float
        Squared: ``beta_hat = (sigma (c - b) + n y) / (sigma + n)``; smoothed hinge:
        ``b clip(b beta_hat, -1, 0)``; squared hinge ``b min(b beta_hat, 0)``; huber
        ``clip(beta_hat, -param, param)``; with ``v = y + sigma (c - b) / n``: hinge
        ``b clip(b v, -1, 0)``; epsilon-insensitive ``v`` soft-thresholded by
        ``sigma param / n`` and clipped to ``[-1, 1]``; quantile
        ``clip(v, -param, 1 - param)``;
        logistic: the root of ``c/n - (b/n) log((1 + b beta)/(-b beta)) - (beta - y)/sigma``,
        by safeguarded Halley steps (bisection fallback; third-order Householder steps
        near the root) on ``t = log((1 + b beta)/(-b beta))`` from the current dual, until
        ``t`` is within ``1e-13 max(1, |t|)`` of the root (a step ``h`` with ``h^3`` below
        that is the last, or a third-order one with ``h^4`` below it); ``b beta`` is kept
        strictly inside ``(-1, 0)``.

    Examples
    --------
    >>> dual_prox(0, 1.0, 0.0, 0.0, 1.0, 1.0)          # (1 * (1 - 0) + 0) / 2
    0.5
    >>> dual_prox(4, 10.0, 0.0, 1.0, 1.0, 1.0)         # clipped to b beta = 0
    0.0
    >>> -1.0 < dual_prox(2, -50.0, 0.0, 1.0, 100.0, 1.0) < -0.999
    True
    """
    c = np.float64(c)
    y = np.float64(y)
    b = np.float64(b)
    sigma = np.float64(sigma)
    n = np.float64(n)
    if loss_id == _SQUARED or loss_id == _SMOOTHED_HINGE or loss_id == _HINGE:
        if loss_id == _HINGE:
            beta = (sigma * (c - b) + n * y) / n
        else:
            beta = (sigma * (c - b) + n * y) / (sigma + n)
        if loss_id == _SQUARED:
            return beta
        w = b * beta
        if w < -1.0:
            w = -1.0
        elif w > 0.0:
            w = 0.0
        return b * w
    if loss_id == _LOGISTIC:
        return _logistic_dual_prox(c, y, b, sigma, n)
    if loss_id == _SQUARED_HINGE or loss_id == _HUBER:
        beta = (sigma * (c - b) + n * y) / (sigma + n)
        if loss_id == _HUBER:
            return min(max(beta, -param), param)
        if b * beta > 0.0:
            return 0.0 * b
        return beta
    if loss_id == _EPSILON_INSENSITIVE or loss_id == _QUANTILE:
        v = y + sigma * (c - b) / n
        if loss_id == _QUANTILE:
            return min(max(v, -param), 1.0 - param)
        t = sigma * param / n
        if v > t:
            v = v - t
        elif v < -t:
            v = v + t
        else:
            v = 0.0
        return min(max(v, -1.0), 1.0)
    _bad_scalar_loss()
    return 0.0


# --------------------------------------------------------------------------------------
# batch losses (n, C): derivative, and derivative with the weighted value
# --------------------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def loss_gradient(loss_id, F, Y, out, loss_param=0.0):
    """Write ``l'(F, Y)`` (derivative with respect to ``F``) into ``out``, all ``(n, C)``.

    Parameters
    ----------
    loss_id : int
        3 softmax ``softmax(u) - Y`` (row-wise, max-shifted); the scalar ids of
        :func:`loss_derivative` column by column.
    F, Y : ndarray (n, C)
    out : ndarray (n, C), written
    loss_param : float
        The loss's hyper-parameter (:attr:`ooc_kernels.losses.Loss.param`): ``epsilon`` of
        ids 6 and 7, ``tau`` of id 8; the other ids ignore it.

    Raises
    ------
    ValidationError
        An id that is not in the table.
    """
    n, C = F.shape
    if loss_id == _SOFTMAX:
        for i in range(n):
            mx = np.float64(F[i, 0])
            for c in range(1, C):
                v = np.float64(F[i, c])
                if v > mx:
                    mx = v
            tot = 0.0
            for c in range(C):
                tot += math.exp(np.float64(F[i, c]) - mx)
            for c in range(C):
                out[i, c] = math.exp(np.float64(F[i, c]) - mx) / tot - np.float64(Y[i, c])
    elif _is_scalar(loss_id):
        for i in range(n):
            for c in range(C):
                out[i, c] = loss_derivative(loss_id, F[i, c], Y[i, c], loss_param)
    else:
        _bad_batch_loss()


@njit(cache=True, nogil=True)
def loss_grad_value(loss_id, F, Y, sw, out, loss_param=0.0):
    """Write the weighted derivative ``sw_i l'(F_i, Y_i)`` into ``out`` and return the
    weighted loss ``sum_i sw_i l(F_i, Y_i)`` (float64).

    Parameters
    ----------
    loss_id : int
        As :func:`loss_gradient`.  Values: softmax ``logsumexp(u) - <Y, u>``; a scalar
        loss :func:`loss_value` summed over the columns of a row.
    F, Y : ndarray (n, C)
    sw : ndarray (n,)
        Sample weights.
    out : ndarray (n, C), written
    loss_param : float
        As :func:`loss_gradient`.

    Examples
    --------
    >>> import numpy as np
    >>> F = np.array([[0.0], [2.0]]); Y = np.array([[1.0], [1.0]]); out = np.empty_like(F)
    >>> round(loss_grad_value(0, F, Y, np.array([1.0, 2.0]), out), 6), out.ravel().tolist()
    (1.5, [-1.0, 2.0])
    """
    loss_gradient(loss_id, F, Y, out, loss_param)
    n, C = F.shape
    total = 0.0
    for i in range(n):
        w = np.float64(sw[i])
        value = 0.0
        if loss_id == _SOFTMAX:
            mx = np.float64(F[i, 0])
            for c in range(1, C):
                v = np.float64(F[i, c])
                if v > mx:
                    mx = v
            tot = 0.0
            dot = 0.0
            for c in range(C):
                tot += math.exp(np.float64(F[i, c]) - mx)
                dot += np.float64(Y[i, c]) * np.float64(F[i, c])
            value = mx + math.log(tot) - dot
        else:  # a scalar id: loss_gradient has refused any other
            for c in range(C):
                value += loss_value(loss_id, F[i, c], Y[i, c], loss_param)
        total += w * value
        if w != 1.0:
            for c in range(C):
                out[i, c] = out[i, c] * w
    return total
