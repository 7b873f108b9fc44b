"""Loss derivatives ``l'(F, Y)`` for a batch, dispatched on an integer ``loss_id``.

``loss_id``: 0 squared, 1 hinge, 2 logistic, 3 softmax (see
:mod:`ooc_kernels.losses.registry`, which owns the names).  ``F`` and ``Y`` have shape
``(n, C)``; binary/one-vs-rest targets are ``+-1``, softmax targets one-hot.  Computation is
in float64; the result is stored in ``out``'s dtype.  A new loss adds one ``elif`` branch
here (``loss_param`` carries its scalar hyper-parameter) and one registry entry.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels._jit.losses import loss_gradient
>>> F = np.array([[0.5], [2.0]]); Y = np.array([[1.0], [1.0]]); out = np.empty_like(F)
>>> loss_gradient(1, F, Y, out)          # hinge: -y where y u < 1
>>> out.ravel().tolist()
[-1.0, 0.0]
"""

from __future__ import annotations

import math

import numpy as np

from ooc_kernels._jit._cache import njit
from ooc_kernels.exceptions import ValidationError

__all__ = ["loss_gradient", "loss_gradient_ref", "loss_grad_value", "loss_grad_value_ref"]


@njit(cache=True, nogil=True)
def _sigmoid(z):
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    ez = math.exp(z)
    return ez / (1.0 + ez)


@njit(cache=True, nogil=True)
def loss_gradient(loss_id, F, Y, out, loss_param=0.0):
    """Write ``l'(F, Y)`` (derivative with respect to ``F``) into ``out``, all ``(n, C)``.

    Parameters
    ----------
    loss_id : int
        0 squared ``u - y``; 1 hinge ``-y`` if ``y u < 1`` else 0; 2 logistic
        ``-y sigmoid(-y u)``; 3 softmax ``softmax(u) - Y`` (row-wise, max-shifted).
    F, Y : ndarray (n, C)
    out : ndarray (n, C), written
    loss_param : float
        Scalar hyper-parameter for future losses (unused by ids 0-3).
    """
    n, C = F.shape
    if loss_id == 0:
        for i in range(n):
            for c in range(C):
                out[i, c] = np.float64(F[i, c]) - np.float64(Y[i, c])
    elif loss_id == 1:
        for i in range(n):
            for c in range(C):
                y = np.float64(Y[i, c])
                if y * np.float64(F[i, c]) < 1.0:
                    out[i, c] = -y
                else:
                    out[i, c] = 0.0
    elif loss_id == 2:
        for i in range(n):
            for c in range(C):
                y = np.float64(Y[i, c])
                out[i, c] = -y * _sigmoid(-y * np.float64(F[i, c]))
    elif loss_id == 3:
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
    else:
        raise ValidationError("loss_gradient: unknown loss_id; valid ids are 0 (squared), "
                              "1 (hinge), 2 (logistic), 3 (softmax)")


def loss_gradient_ref(loss_id, F, Y, loss_param=0.0):
    """Numpy twin of :func:`loss_gradient`; returns a new float64 array ``(n, C)``."""
    F = np.asarray(F, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    if loss_id == 0:
        return F - Y
    if loss_id == 1:
        return np.where(Y * F < 1.0, -Y, 0.0)
    if loss_id == 2:
        z = -Y * F
        # sigmoid(z) = exp(-logaddexp(0, -z)) is stable for both signs
        return -Y * np.exp(-np.logaddexp(0.0, -z))
    if loss_id == 3:
        E = np.exp(F - F.max(axis=1, keepdims=True))
        return E / E.sum(axis=1, keepdims=True) - Y
    raise ValidationError(f"unknown loss_id {loss_id!r}; valid ids are 0, 1, 2, 3")


@njit(cache=True, nogil=True)
def _softplus(z):
    """``log(1 + exp(z))`` without overflow."""
    if z > 0.0:
        return z + math.log1p(math.exp(-z))
    return math.log1p(math.exp(z))


@njit(cache=True, nogil=True)
def loss_grad_value(loss_id, F, Y, sw, out, loss_param=0.0):
    """Write the weighted derivative ``sw_i l'(F_i, Y_i)`` into ``out`` and return the
    weighted loss ``sum_i sw_i l(F_i, Y_i)`` (float64).

    Parameters
    ----------
    loss_id : int
        As :func:`loss_gradient`.  Values: squared ``(u - y)^2 / 2``, hinge
        ``max(0, 1 - y u)``, logistic ``log(1 + exp(-y u))``, softmax
        ``logsumexp(u) - <Y, u>`` (summed over the columns of a row).
    F, Y : ndarray (n, C)
    sw : ndarray (n,)
        Sample weights.
    out : ndarray (n, C), written
    loss_param : float

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
        if loss_id == 0:
            for c in range(C):
                d = np.float64(F[i, c]) - np.float64(Y[i, c])
                value += 0.5 * d * d
        elif loss_id == 1:
            for c in range(C):
                m = 1.0 - np.float64(Y[i, c]) * np.float64(F[i, c])
                if m > 0.0:
                    value += m
        elif loss_id == 2:
            for c in range(C):
                value += _softplus(-np.float64(Y[i, c]) * np.float64(F[i, c]))
        else:
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
        total += w * value
        if w != 1.0:
            for c in range(C):
                out[i, c] = out[i, c] * w
    return total


def loss_grad_value_ref(loss_id, F, Y, sw, loss_param=0.0):
    """Numpy twin of :func:`loss_grad_value`: returns ``(weighted gradient, weighted loss)``."""
    F = np.asarray(F, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    sw = np.asarray(sw, dtype=np.float64)
    if loss_id == 0:
        value = 0.5 * ((F - Y) ** 2).sum(axis=1)
    elif loss_id == 1:
        value = np.maximum(0.0, 1.0 - Y * F).sum(axis=1)
    elif loss_id == 2:
        value = np.logaddexp(0.0, -Y * F).sum(axis=1)
    else:
        mx = F.max(axis=1, keepdims=True)
        value = (mx[:, 0] + np.log(np.exp(F - mx).sum(axis=1))) - (Y * F).sum(axis=1)
    grad = loss_gradient_ref(loss_id, F, Y, loss_param) * sw[:, None]
    return grad, float((sw * value).sum())
