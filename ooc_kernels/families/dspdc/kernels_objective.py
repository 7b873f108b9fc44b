"""DSPDC's objective: the regularizer, its conjugate, and ``P``, ``D`` and the gap in one
streaming pass over chunks of rows.

``P(x) = (1/n) sum_i phi_i(a_i^T x) + sum_j g(x_j)`` and
``D(y) = -sum_j g*(-(A^T y)_j / n) - (1/n) sum_i phi_i*(y_i)`` with
``g(a) = (lam2 / 2) a^2 + lam1 |a|``; the losses ``phi`` and their conjugates are the loss
table's (:func:`ooc_kernels._jit.losses.loss_value`,
:func:`ooc_kernels._jit.losses.loss_conjugate`).  Every ``@njit`` kernel has a NumPy twin
with the suffix ``_ref``.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dspdc.kernels_objective import (chunk_objective_terms,
...     objective_from_terms)
>>> A = np.array([[1.0, 0.0], [0.0, 2.0]]); aty = np.zeros(2); x = np.ones(2)
>>> sum_phi, sum_conj = chunk_objective_terms(A, np.array([1.0, 0.0]), x,
...                                           np.array([0.5, 1.0]), 0, aty)
>>> primal, dual = objective_from_terms(sum_phi, sum_conj, x, aty, 2, 0.0, 1.0)
>>> primal >= dual
True
"""

from __future__ import annotations

import numpy as np

from ooc_kernels._jit._cache import njit
from ooc_kernels._jit.losses import loss_conjugate, loss_value
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.losses.reference import loss_conjugate_ref, loss_value_ref

__all__ = [
    "reg_value", "reg_value_ref", "reg_conjugate", "reg_conjugate_ref",
    "chunk_objective_terms", "chunk_objective_terms_ref",
    "chunk_objective_terms_factorized", "chunk_objective_terms_factorized_ref",
    "objective_from_terms", "objective_from_terms_ref",
]


# --------------------------------------------------------------------------------------
# regularizer g_j(x) = lam2/2 x^2 + lam1 |x|
# --------------------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def reg_value(x, lam1, lam2):
    """``g_j(x) = (lam2 / 2) x^2 + lam1 |x|``.

    Parameters
    ----------
    x, lam1, lam2 : float

    Returns
    -------
    float

    Examples
    --------
    >>> reg_value(-2.0, 0.5, 1.0)
    3.0
    """
    x = np.float64(x)
    return 0.5 * lam2 * x * x + lam1 * abs(x)


def reg_value_ref(x, lam1, lam2):
    """NumPy twin of :func:`reg_value` (vectorised)."""
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * lam2 * x ** 2 + lam1 * np.abs(x)


@njit(cache=True, nogil=True)
def reg_conjugate(w, lam1, lam2):
    """``g_j*(w) = max(|w| - lam1, 0)^2 / (2 lam2)``.

    Parameters
    ----------
    w, lam1, lam2 : float

    Returns
    -------
    float

    Examples
    --------
    >>> reg_conjugate(-3.0, 1.0, 2.0), reg_conjugate(0.5, 1.0, 2.0)
    (1.0, 0.0)
    """
    a = abs(np.float64(w)) - lam1
    if a <= 0.0:
        return 0.0
    return a * a / (2.0 * lam2)


def reg_conjugate_ref(w, lam1, lam2):
    """NumPy twin of :func:`reg_conjugate` (vectorised)."""
    w = np.asarray(w, dtype=np.float64)
    return np.maximum(np.abs(w) - lam1, 0.0) ** 2 / (2.0 * lam2)


# --------------------------------------------------------------------------------------
# monitoring: P, D and the gap in one streaming pass over chunks of rows
# --------------------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def chunk_objective_terms(A, b, x, y, loss_id, aty):
    """One chunk's share of ``P`` and ``D``; adds the chunk's ``A^T y`` into ``aty``.

    Parameters
    ----------
    A : ndarray (n_rows, p), float32 or float64
    b, y : ndarray (n_rows,)
        Labels and duals of the chunk.
    x : ndarray (p,) float64
    loss_id : int
    aty : ndarray (p,) float64, updated
        ``aty += A^T y``.

    Returns
    -------
    sum_phi : float
        ``sum_i phi_i(a_i^T x)``.
    sum_conj : float
        ``sum_i phi_i*(y_i)`` (``inf`` if a dual is off the domain).

    Notes
    -----
    Over all chunks, :func:`objective_from_terms` turns the sums into ``P(x)`` and ``D(y)``.
    Twin: :func:`chunk_objective_terms_ref`.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[1.0, 0.0], [0.0, 2.0]]); aty = np.zeros(2)
    >>> chunk_objective_terms(A, np.array([1.0, 0.0]), np.ones(2), np.array([0.5, 1.0]), 0, aty)
    (2.0, 1.125)
    >>> aty.tolist()
    [0.5, 2.0]
    """
    n_rows, p = A.shape
    if b.shape[0] != n_rows or y.shape[0] != n_rows or x.shape[0] != p or aty.shape[0] != p:
        raise ValidationError("chunk_objective_terms: A (n, p), b (n,), y (n,), x (p,), "
                              "aty (p,) must agree")
    sum_phi = 0.0
    sum_conj = 0.0
    for i in range(n_rows):
        zi = 0.0
        yi = np.float64(y[i])
        for j in range(p):
            a = np.float64(A[i, j])
            zi += a * x[j]
            aty[j] += a * yi
        bi = np.float64(b[i])
        sum_phi += loss_value(loss_id, zi, bi)
        sum_conj += loss_conjugate(loss_id, yi, bi)
    return sum_phi, sum_conj


def chunk_objective_terms_ref(A, b, x, y, loss_id, aty):
    """NumPy twin of :func:`chunk_objective_terms` (same contract)."""
    A = np.asarray(A).astype(np.float64)
    y = np.asarray(y, dtype=np.float64)
    aty += A.T @ y
    return (float(np.sum(loss_value_ref(loss_id, A @ x, b))),
            float(np.sum(loss_conjugate_ref(loss_id, y, b))))


@njit(cache=True, nogil=True)
def chunk_objective_terms_factorized(U, b, v, y, loss_id, uty):
    """:func:`chunk_objective_terms` for rows ``A = U V`` given ``v = V x``.

    Parameters
    ----------
    U : ndarray (n_rows, d)
    b, y : ndarray (n_rows,)
    v : ndarray (d,) float64
        ``V x`` (so ``a_i^T x = U_i v``).
    loss_id : int
    uty : ndarray (d,) float64, updated
        ``uty += U^T y``; after all chunks ``A^T y = V^T uty``.

    Returns
    -------
    sum_phi, sum_conj : float

    Examples
    --------
    >>> import numpy as np
    >>> U = np.array([[1.0], [2.0]]); uty = np.zeros(1)
    >>> chunk_objective_terms_factorized(U, np.zeros(2), np.array([1.0]), np.ones(2), 0, uty)
    (2.5, 1.0)
    >>> uty.tolist()
    [3.0]
    """
    n_rows, d = U.shape
    if b.shape[0] != n_rows or y.shape[0] != n_rows or v.shape[0] != d or uty.shape[0] != d:
        raise ValidationError("chunk_objective_terms_factorized: U (n, d), b (n,), y (n,), "
                              "v (d,), uty (d,) must agree")
    sum_phi = 0.0
    sum_conj = 0.0
    for i in range(n_rows):
        zi = 0.0
        yi = np.float64(y[i])
        for r in range(d):
            a = np.float64(U[i, r])
            zi += a * v[r]
            uty[r] += a * yi
        bi = np.float64(b[i])
        sum_phi += loss_value(loss_id, zi, bi)
        sum_conj += loss_conjugate(loss_id, yi, bi)
    return sum_phi, sum_conj


def chunk_objective_terms_factorized_ref(U, b, v, y, loss_id, uty):
    """NumPy twin of :func:`chunk_objective_terms_factorized` (same contract)."""
    U = np.asarray(U).astype(np.float64)
    y = np.asarray(y, dtype=np.float64)
    uty += U.T @ y
    return (float(np.sum(loss_value_ref(loss_id, U @ v, b))),
            float(np.sum(loss_conjugate_ref(loss_id, y, b))))


@njit(cache=True, nogil=True)
def objective_from_terms(sum_phi, sum_conj, x, aty, n_total, lam1, lam2):
    """``(P(x), D(y))`` from the summed chunk terms.

    ``P = sum_phi / n + sum_j g(x_j)`` and ``D = -sum_j g*(-aty_j / n) - sum_conj / n``
    with ``n = n_total``.

    Parameters
    ----------
    sum_phi, sum_conj : float
        Sums of :func:`chunk_objective_terms` over all chunks.
    x : ndarray (p,) float64
    aty : ndarray (p,) float64
        ``A^T y`` of the whole problem.
    n_total : int or float
    lam1, lam2 : float

    Returns
    -------
    primal, dual : float
        The gap is ``primal - dual >= 0``.

    Examples
    --------
    >>> import numpy as np
    >>> objective_from_terms(2.0, 1.125, np.ones(2), np.array([0.5, 2.0]), 2, 0.0, 1.0)
    (2.0, -1.09375)
    """
    nt = np.float64(n_total)
    primal = sum_phi / nt
    for j in range(x.shape[0]):
        primal += reg_value(x[j], lam1, lam2)
    dual = -sum_conj / nt
    for j in range(aty.shape[0]):
        dual -= reg_conjugate(-aty[j] / nt, lam1, lam2)
    return primal, dual


def objective_from_terms_ref(sum_phi, sum_conj, x, aty, n_total, lam1, lam2):
    """NumPy twin of :func:`objective_from_terms`."""
    primal = sum_phi / n_total + float(np.sum(reg_value_ref(x, lam1, lam2)))
    dual = -sum_conj / n_total - float(np.sum(reg_conjugate_ref(-np.asarray(aty) / n_total,
                                                                lam1, lam2)))
    return primal, dual
