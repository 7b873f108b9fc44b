"""The logistic loss's Newton pass: the objective, the gradient and the Hessian's scaled rows
of one block of rows in one read of each row.

For the solver's rows ``a_i``, labels ``b_i = +-1``, row weights ``w_i`` (None: ones) and a
point ``x``, :func:`logistic_rows` visits the rows ``lo <= i < hi`` once and, per row,

* takes ``z_i = a_i^T x`` (written to ``z``) and the margin ``m_i = b_i z_i``;
* adds ``w_i log(1 + exp(-m_i))`` to the losses it returns (rows of weight 0 add 0);
* adds ``w_i phi'(z_i) a_i = -w_i b_i sigmoid(-m_i) a_i`` to ``g`` (the gradient's sum);
* for every ``stride``-th row (``i % stride == 0``) writes ``sqrt(w_i phi''(z_i)) a_i``,
  ``phi'' = sigmoid(-m) sigmoid(m)``, to the next row of ``scaled``,

and returns the losses and the number of scaled rows.  The Hessian's sum ``sum_i w_i
phi''(z_i) a_i a_i^T`` over those rows is then ``scaled^T scaled`` (one BLAS product of the
block just written, in the cache:
:func:`~ooc_kernels.families.dspdc._logistic_start.newton_pass`).
:func:`logistic_rows_ref` is its NumPy twin (the same values to rounding: NumPy sums the
products in another order).

Examples
--------
>>> import numpy as np
>>> A = np.array([[1.0, 2.0], [0.5, -1.0], [-2.0, 0.0]])
>>> b, x = np.array([1.0, -1.0, 1.0]), np.array([0.3, -0.2])
>>> z, g, scaled = np.empty(3), np.zeros(2), np.empty((3, 2))
>>> loss, count = logistic_rows(A, 0, 3, b, None, x, 1, z, g, scaled)
>>> m = b * (A @ x)
>>> bool(np.isclose(loss, np.logaddexp(0.0, -m).sum())), count
(True, 3)
>>> s = 1.0 / (1.0 + np.exp(m))
>>> bool(np.allclose(g, A.T @ (-b * s)))
True
>>> bool(np.allclose(scaled.T @ scaled, A.T @ ((s * (1 - s))[:, None] * A)))
True
"""

from __future__ import annotations

import math

import numpy as np

from ooc_kernels._jit._cache import njit

__all__ = ["logistic_rows", "logistic_rows_ref"]


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def logistic_rows(rows, lo, hi, b, weights, x, stride, z, g, scaled):
    """One read of the rows ``lo <= i < hi`` at ``x``: ``z[i] = a_i^T x``, the losses'
    weighted sum (returned), ``g += sum_i w_i phi'(z_i) a_i`` and the scaled rows
    ``sqrt(w_i phi''(z_i)) a_i`` of every ``stride``-th row in ``scaled[0:count]``;
    returns ``(losses, count)``."""
    p = rows.shape[1]
    total = 0.0
    count = 0
    for i in range(lo, hi):
        zi = 0.0
        for j in range(p):
            zi += rows[i, j] * x[j]
        z[i] = zi
        m = b[i] * zi
        if m < 0.0:                        # log(1 + exp(-m)), sigmoid(-m), without overflow
            e = math.exp(m)
            loss = -m + math.log1p(e)
            s = 1.0 / (1.0 + e)
        else:
            e = math.exp(-m)
            loss = math.log1p(e)
            s = e / (1.0 + e)
        w = 1.0 if weights is None else weights[i]
        if w > 0.0:
            total += w * loss
        r = -w * b[i] * s
        for j in range(p):
            g[j] += r * rows[i, j]
        if stride > 0 and i % stride == 0:
            root = math.sqrt(w * s * (1.0 - s)) if w > 0.0 else 0.0
            for j in range(p):
                scaled[count, j] = root * rows[i, j]
            count += 1
    return total, count


def logistic_rows_ref(rows, lo, hi, b, weights, x, stride, z, g, scaled):
    """NumPy twin of :func:`logistic_rows`."""
    A = rows[lo:hi]
    z[lo:hi] = A @ x
    m = b[lo:hi] * z[lo:hi]
    e = np.exp(-np.abs(m))
    loss = np.where(m < 0.0, -m + np.log1p(e), np.log1p(e))
    s = np.where(m < 0.0, 1.0 / (1.0 + e), e / (1.0 + e))
    w = np.ones(hi - lo) if weights is None else weights[lo:hi]
    total = float(np.sum(np.where(w > 0.0, w * loss, 0.0)))
    g += (-w * b[lo:hi] * s) @ A
    keep = np.arange(lo, hi) % max(stride, 1) == 0 if stride > 0 else np.zeros(hi - lo, bool)
    h = np.where(w > 0.0, w * s * (1.0 - s), 0.0)[keep]
    count = int(keep.sum())
    scaled[:count] = np.sqrt(h)[:, None] * A[keep]
    return total, count
