"""Numba kernel of the Gaussian-kernel Taylor basis, with its plain-NumPy twin.

For the Gaussian kernel ``k(x, x') = exp(-||x - x'||^2 / (2 sigma^2))`` the functions::

    g_k(x) = prod_i x_i^{k_i} / (sigma^{|k|} sqrt(prod_i k_i!)) * exp(-||x||^2 / (2 sigma^2)),

one per multi-index ``k`` of ``N^d``, are an orthonormal basis of the RKHS and
``k(x, x') = sum_k g_k(x) g_k(x')``.  The basis keeps the multi-indices with
``|k| <= M``.  Every multi-index but ``0`` has a *parent* ``k - e_i`` (``i`` its first
non-zero coordinate), listed before it, and ``g_k(x) = g_{k - e_i}(x) x_i / (sigma
sqrt(k_i))``: one multiplication per feature, ``O(r)`` a row after the exponential.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.pkawv.kernels_taylor import taylor_features, taylor_features_ref
>>> parent = np.array([-1, 0, 0]); var = np.array([-1, 0, 1]); div = np.array([1.0, 1.0, 1.0])
>>> X = np.array([[0.5, -1.0]])
>>> out = taylor_features(X, parent, var, div, 1.0)
>>> bool(np.allclose(out, taylor_features_ref(X, parent, var, div, 1.0)))
True
>>> round(float(out[0, 1] / out[0, 0]), 6)              # g_(1,0) / g_(0,0) = x_1 / sigma
0.5
"""

from __future__ import annotations

import math

import numpy as np

from ooc_kernels._jit._cache import njit


@njit(nogil=True)
def taylor_features(X, parent, var, div, bandwidth):
    """The Taylor features of the rows of ``X``.

    Parameters
    ----------
    X : ndarray of shape (n, d), float64
    parent : ndarray of shape (r,), int64
        Index of each feature's parent multi-index (-1 for ``k = 0``, which must be first).
    var : ndarray of shape (r,), int64
        The coordinate ``i`` with ``k = parent + e_i`` (-1 for ``k = 0``).
    div : ndarray of shape (r,), float64
        ``sqrt(k_i)`` of that coordinate (1 for ``k = 0``).
    bandwidth : float
        ``sigma``.

    Returns
    -------
    ndarray of shape (n, r), float64
    """
    n, d = X.shape
    r = parent.shape[0]
    out = np.empty((n, r))
    inv_s = 1.0 / bandwidth
    for t in range(n):
        sq = 0.0
        for i in range(d):
            sq += X[t, i] * X[t, i]
        out[t, 0] = math.exp(-0.5 * sq * inv_s * inv_s)
        for j in range(1, r):
            out[t, j] = out[t, parent[j]] * (X[t, var[j]] * inv_s) / div[j]
    return out


def taylor_features_ref(X, parent, var, div, bandwidth):
    """Plain-NumPy twin of :func:`taylor_features` (same arguments, same result)."""
    X = np.asarray(X, dtype=np.float64)
    out = np.empty((X.shape[0], parent.shape[0]))
    out[:, 0] = np.exp(-0.5 * np.sum(X * X, axis=1) / bandwidth ** 2)
    for j in range(1, parent.shape[0]):
        out[:, j] = out[:, parent[j]] * (X[:, var[j]] / bandwidth) / div[j]
    return out
