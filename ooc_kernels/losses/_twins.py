"""NumPy twins of the losses of the table: one set of formulas per loss.

Scalar losses are written elementwise in the decision value ``z`` and the target ``b``
(arrays of any matching shape): ``value``, ``derivative``, ``conjugate`` and ``dual_prox``
(the dual step of :func:`ooc_kernels._jit.losses.dual_prox`).  The losses with a
parameter (huber and epsilon-insensitive: ``epsilon``; quantile: ``tau``) take it as a
last argument ``p``.  The softmax couples the
outputs of a sample and is written on rows ``(n, C)``.  Links map decision values ``(n, C)``
to predictions or probabilities.  The numba dispatch of :mod:`ooc_kernels._jit.losses` is
tested against these functions; they are float64 and favour clarity over speed.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.losses._twins import smoothed_hinge_value, smoothed_hinge_derivative
>>> smoothed_hinge_value(np.array([-1.0, 0.5, 2.0]), 1.0).tolist()
[1.5, 0.125, 0.0]
>>> smoothed_hinge_derivative(np.array([-1.0, 0.5, 2.0]), 1.0).tolist()
[-1.0, -0.5, 0.0]
"""

from __future__ import annotations

import numpy as np

from ooc_kernels._jit.losses import (HOUSEHOLDER_BELOW, NEWTON_MAX_ITER, NEWTON_RTOL, W_HIGH,
                                     W_LOW)

__all__ = [
    "sigmoid", "softmax", "logsumexp", "identity", "logistic_mean", "binary_or_ovr_proba",
    "squared_value", "squared_derivative", "squared_conjugate", "squared_dual_prox",
    "hinge_value", "hinge_derivative", "hinge_conjugate", "hinge_dual_prox",
    "logistic_value", "logistic_derivative", "logistic_conjugate", "logistic_dual_prox",
    "smoothed_hinge_value", "smoothed_hinge_derivative", "smoothed_hinge_conjugate",
    "smoothed_hinge_dual_prox", "softmax_value", "softmax_gradient",
    "squared_hinge_value", "squared_hinge_derivative", "squared_hinge_conjugate",
    "squared_hinge_dual_prox", "huber_value", "huber_derivative", "huber_conjugate",
    "huber_dual_prox", "epsilon_insensitive_value", "epsilon_insensitive_derivative",
    "epsilon_insensitive_conjugate", "epsilon_insensitive_dual_prox", "quantile_value",
    "quantile_derivative", "quantile_conjugate", "quantile_dual_prox",
]


def _f64(*arrays):
    return tuple(np.asarray(a, dtype=np.float64) for a in arrays)


# --------------------------------------------------------------------------------------
# stable elementwise helpers and links
# --------------------------------------------------------------------------------------
def sigmoid(z) -> np.ndarray:
    """``1 / (1 + exp(-z))`` without overflow."""
    z = np.asarray(z, dtype=np.float64)
    return np.exp(-np.logaddexp(0.0, -z))


def softmax(F) -> np.ndarray:
    """Row softmax of ``F`` ``(n, C)``, max-shifted."""
    F = np.asarray(F, dtype=np.float64)
    e = np.exp(F - F.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def logsumexp(F) -> np.ndarray:
    """Row ``log sum exp`` of ``F`` ``(n, C)``, max-shifted; shape ``(n,)``."""
    F = np.asarray(F, dtype=np.float64)
    mx = F.max(axis=1)
    return mx + np.log(np.exp(F - mx[:, None]).sum(axis=1))


def identity(F) -> np.ndarray:
    """The identity link (the decision value is the prediction)."""
    return np.asarray(F, dtype=np.float64)


def logistic_mean(F) -> np.ndarray:
    """``1 / (1 + exp(-F))`` elementwise: the logistic link (0 where ``exp(-F)``
    overflows, its limit)."""
    F = np.asarray(F, dtype=np.float64)
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-F))


def binary_or_ovr_proba(F) -> np.ndarray:
    """Probabilities of a logistic model: binary ``C = 1`` gives ``[P(-1), P(+1)]``,
    one-vs-rest normalises the per-class sigmoids (as scikit-learn does)."""
    P = logistic_mean(F)
    if P.shape[1] == 1:
        return np.hstack([1.0 - P, P])
    s = P.sum(axis=1, keepdims=True)
    s[s == 0] = 1.0
    return P / s


def _on_domain(w, values):
    """``values`` where ``w = b beta`` lies in ``[-1, 0]``, ``+inf`` elsewhere."""
    return np.where((w >= -1.0) & (w <= 0.0), values, np.inf)


def _clip_dual(b, beta):
    return b * np.clip(b * beta, -1.0, 0.0)


# --------------------------------------------------------------------------------------
# squared: 0.5 (z - b)^2
# --------------------------------------------------------------------------------------
def squared_value(z, b):
    z, b = _f64(z, b)
    return 0.5 * (z - b) ** 2


def squared_derivative(z, b):
    z, b = _f64(z, b)
    return z - b


def squared_conjugate(beta, b):
    beta, b = _f64(beta, b)
    return 0.5 * beta ** 2 + b * beta


def squared_dual_prox(c, y, b, sigma, n):
    c, y, b = np.broadcast_arrays(*_f64(c, y, b))
    return (sigma * (c - b) + n * y) / (sigma + n)


# --------------------------------------------------------------------------------------
# hinge: max(0, 1 - b z)
# --------------------------------------------------------------------------------------
def hinge_value(z, b):
    z, b = _f64(z, b)
    return np.maximum(0.0, 1.0 - b * z)


def hinge_derivative(z, b):
    # the sub-gradient at the kink b z = 1 is 0 (the paper's choice)
    z, b = _f64(z, b)
    return np.where(b * z < 1.0, -b, 0.0)


def hinge_conjugate(beta, b):
    beta, b = _f64(beta, b)
    return _on_domain(b * beta, b * beta)


def hinge_dual_prox(c, y, b, sigma, n):
    c, y, b = np.broadcast_arrays(*_f64(c, y, b))
    return _clip_dual(b, (sigma * (c - b) + n * y) / n)


# --------------------------------------------------------------------------------------
# logistic: log(1 + exp(-b z))
# --------------------------------------------------------------------------------------
def logistic_value(z, b):
    z, b = _f64(z, b)
    return np.logaddexp(0.0, -b * z)


def logistic_derivative(z, b):
    z, b = _f64(z, b)
    return -b * sigmoid(-b * z)


def logistic_conjugate(beta, b):
    beta, b = _f64(beta, b)
    w = b * beta
    wc = np.clip(w, -1.0, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(wc < 0.0, -wc * np.log(np.where(wc < 0.0, -wc, 1.0)), 0.0)
        c = np.where(wc > -1.0, (1.0 + wc) * np.log(np.where(wc > -1.0, 1.0 + wc, 1.0)), 0.0)
    return _on_domain(w, a + c)


def logistic_dual_prox(c, y, b, sigma, n):
    """Safeguarded Halley steps on ``t = log((1 + b beta) / (-b beta))`` from the current
    dual, third-order (Householder) steps near the root, vectorised (see
    :func:`ooc_kernels._jit.losses.dual_prox`)."""
    c, y, b = np.broadcast_arrays(*_f64(c, y, b))
    sigma = float(sigma)
    n = float(n)
    cb, by = c * b, b * y
    lo = cb + n * by / sigma
    hi = lo + n / sigma
    warm = (by > -1.0) & (by < 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(warm, np.log((1.0 + by) / -by), 0.5 * (lo + hi))
    known = warm.copy()                  # sigmoid(-t) known without an exp
    sm = np.where(warm, -by, 0.0)        # the warm start's sigmoid(-t0) is -b y
    active = np.ones(t.shape, dtype=bool)
    prev = np.zeros(t.shape)             # the last change of t
    for _ in range(NEWTON_MAX_ITER):
        if not active.any():
            break
        sm = np.where(known, sm, sigmoid(-t))
        g = sigma * (cb - t) + n * (sm + by)
        lo = np.where(active & (g > 0.0), np.maximum(lo, t), lo)
        hi = np.where(active & (g < 0.0), np.minimum(hi, t), hi)
        done = g == 0.0
        ds = sm * (1.0 - sm)
        d1 = -sigma - n * ds
        d2 = n * (1.0 - 2.0 * sm) * ds
        den = 2.0 * d1 * d1 - g * d2
        p3 = (1.0 - 6.0 * sm + 6.0 * sm * sm) * ds
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            step = np.where(den >= d1 * d1, 2.0 * g * d1 / den, g / d1)
            # near the root: the third-order step from the same point
            near = np.abs(step) <= HOUSEHOLDER_BELOW * np.maximum(1.0, np.abs(t))
            step = np.where(near, (6.0 * g * d1 * d1 - 3.0 * g * g * d2) / (
                6.0 * d1 * d1 * d1 - 6.0 * g * d1 * d2 - g * g * n * p3), step)
        t_step = t - step
        h = np.abs(step)
        inside = (t_step > lo) & (t_step < hi)
        tol = NEWTON_RTOL * np.maximum(1.0, np.abs(t_step))
        with np.errstate(over="ignore", invalid="ignore"):
            # the last step: sigmoid(-t) to third order in a third-order step whose h^4 is
            # below the tolerance, else to second order in one whose h^3 is
            ok_side = ~done & ((h <= tol) | inside)
            last3 = ok_side & near & (h * h * h * h <= tol)
            last = last3 | (ok_side & (h * h * h <= tol))
            sm_last = np.where(
                last3, sm + step * (ds + step * (0.5 * (1.0 - 2.0 * sm) * ds
                                                 + step * p3 / 6.0)),
                sm + ds * step + 0.5 * (1.0 - 2.0 * sm) * ds * step * step)
        back = (step * prev > 0.0) & (h > 0.5 * np.abs(prev))     # turns back: cycles
        t_new = np.where(inside & ~back, t_step, 0.5 * (lo + hi))
        tol = NEWTON_RTOL * np.maximum(1.0, np.abs(t_new))
        ended = (np.abs(t_new - t) <= tol) | (hi - lo <= tol)
        prev = np.where(active, t_new - t, prev)
        t = np.where(active & ~done, np.where(last, t_step, t_new), t)
        sm = np.where(active & last, sm_last, sm)
        known = np.where(active, done | last, known)
        active = active & ~done & ~last & ~ended
    w = np.clip(np.where(known, -sm, -sigmoid(-t)), -W_HIGH, -W_LOW)
    return b * w


# --------------------------------------------------------------------------------------
# smoothed hinge: with s = b z, 0 (s >= 1), 0.5 - s (s <= 0), 0.5 (1 - s)^2 otherwise
# --------------------------------------------------------------------------------------
def smoothed_hinge_value(z, b):
    z, b = _f64(z, b)
    s = b * z
    return np.where(s >= 1.0, 0.0, np.where(s <= 0.0, 0.5 - s, 0.5 * (1.0 - s) ** 2))


def smoothed_hinge_derivative(z, b):
    z, b = _f64(z, b)
    s = b * z
    return np.where(s >= 1.0, 0.0, np.where(s <= 0.0, -b, -b * (1.0 - s)))


def smoothed_hinge_conjugate(beta, b):
    beta, b = _f64(beta, b)
    return _on_domain(b * beta, b * beta + 0.5 * beta ** 2)


def smoothed_hinge_dual_prox(c, y, b, sigma, n):
    return _clip_dual(np.broadcast_arrays(*_f64(c, y, b))[2],
                      squared_dual_prox(c, y, b, sigma, n))


# --------------------------------------------------------------------------------------
# softmax on rows: logsumexp(u) - <Y, u>, Y one-hot
# --------------------------------------------------------------------------------------
def softmax_value(F, Y):
    F, Y = _f64(F, Y)
    return logsumexp(F) - (Y * F).sum(axis=1)


def softmax_gradient(F, Y):
    F, Y = _f64(F, Y)
    return softmax(F) - Y


# --------------------------------------------------------------------------------------
# squared hinge: 0.5 max(0, 1 - b z)^2
# --------------------------------------------------------------------------------------
def squared_hinge_value(z, b):
    z, b = _f64(z, b)
    return 0.5 * np.maximum(0.0, 1.0 - b * z) ** 2


def squared_hinge_derivative(z, b):
    # z - b where b z < 1 (= -b (1 - b z) for b = +-1), 0 from the kink b z = 1 on
    z, b = _f64(z, b)
    return np.where(b * z < 1.0, z - b, 0.0)


def squared_hinge_conjugate(beta, b):
    # sup_z beta z - phi(z) = b beta + beta^2 / 2 for b beta <= 0 (b = +-1), +inf above
    beta, b = _f64(beta, b)
    w = b * beta
    return np.where(w <= 0.0, w + 0.5 * beta ** 2, np.inf)


def squared_hinge_dual_prox(c, y, b, sigma, n):
    c, y, b = np.broadcast_arrays(*_f64(c, y, b))
    beta = squared_dual_prox(c, y, b, sigma, n)
    return b * np.minimum(b * beta, 0.0)


# --------------------------------------------------------------------------------------
# huber, threshold p > 0: 0.5 r^2 (|r| <= p), p |r| - p^2 / 2 otherwise, r = z - b
# --------------------------------------------------------------------------------------
def huber_value(z, b, p):
    z, b = _f64(z, b)
    a = np.abs(z - b)
    return np.where(a <= p, 0.5 * a ** 2, p * (a - 0.5 * p))


def huber_derivative(z, b, p):
    z, b = _f64(z, b)
    return np.clip(z - b, -p, p)


def huber_conjugate(beta, b, p):
    beta, b = _f64(beta, b)
    return np.where(np.abs(beta) <= p, 0.5 * beta ** 2 + b * beta, np.inf)


def huber_dual_prox(c, y, b, sigma, n, p):
    return np.clip(squared_dual_prox(c, y, b, sigma, n), -p, p)


# --------------------------------------------------------------------------------------
# epsilon-insensitive, p >= 0: max(0, |z - b| - p)
# --------------------------------------------------------------------------------------
def epsilon_insensitive_value(z, b, p):
    z, b = _f64(z, b)
    return np.maximum(0.0, np.abs(z - b) - p)


def epsilon_insensitive_derivative(z, b, p):
    # sign(z - b) outside the tube, 0 inside and on its edges |z - b| = p (sign(0) = 0)
    z, b = _f64(z, b)
    r = z - b
    return np.where(r > p, 1.0, np.where(r < -p, -1.0, 0.0))


def epsilon_insensitive_conjugate(beta, b, p):
    beta, b = _f64(beta, b)
    return np.where(np.abs(beta) <= 1.0, b * beta + p * np.abs(beta), np.inf)


def epsilon_insensitive_dual_prox(c, y, b, sigma, n, p):
    # the unconstrained maximizer soft-thresholded by sigma p / n, then put in [-1, 1]
    c, y, b = np.broadcast_arrays(*_f64(c, y, b))
    v = y + sigma * (c - b) / n
    return np.clip(np.sign(v) * np.maximum(np.abs(v) - sigma * p / n, 0.0), -1.0, 1.0)


# --------------------------------------------------------------------------------------
# quantile (pinball), level p in (0, 1): max(p (b - z), (1 - p) (z - b))
# --------------------------------------------------------------------------------------
def quantile_value(z, b, p):
    z, b = _f64(z, b)
    r = z - b
    return np.where(r >= 0.0, (1.0 - p) * r, -p * r)


def quantile_derivative(z, b, p):
    # 1 - p where z >= b (at z = b too), -p below
    z, b = _f64(z, b)
    return np.where(z >= b, 1.0 - p, -p)


def quantile_conjugate(beta, b, p):
    beta, b = _f64(beta, b)
    return np.where((beta >= -p) & (beta <= 1.0 - p), b * beta, np.inf)


def quantile_dual_prox(c, y, b, sigma, n, p):
    c, y, b = np.broadcast_arrays(*_f64(c, y, b))
    return np.clip(y + sigma * (c - b) / n, -p, 1.0 - p)
