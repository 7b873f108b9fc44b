"""Numba passes of DSPDC's in-memory rounds (:mod:`ooc_kernels.families.dspdc._memory_task`).

A task of the in-memory path runs its iterations on rows of the whole data held once
(``A[row_map]``, never gathered), then makes one pass over its rows that returns everything
the round needs besides the iterate: the changes of ``A_c^T (w * y_c)`` of each of its
chunks, the loss of the epoch's first iterate on its rows (the lagged duality gap) and the
change of ``sum_i w_i phi_i*(y_i)``.  The out-of-core task computes the same three with
three NumPy passes (two BLAS products and the losses), so the two agree to rounding.  The
conjugates ``phi_i*(y_i)`` of every row are kept (:func:`row_conjugates` once, then the
sweeps): a sweep evaluates the conjugate only at the duals the iterations changed (the
logistic conjugate is two logarithms), and the change is the same number as with both
conjugates evaluated.

Every ``@njit`` function has a plain-NumPy twin with the suffix ``_ref``.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dspdc.kernels_memory import task_sweep
>>> A = np.arange(12.0).reshape(4, 3); b = np.array([1.0, -1.0, 1.0, -1.0])
>>> y, y_old = np.array([0.5, 0.0, 1.0, 0.0]), np.zeros(2)
>>> dw, conj = np.zeros((1, 3)), np.zeros(4)       # the conjugates of y = 0
>>> loss, dconj = task_sweep(A, np.array([2, 0]), np.array([2]), b, y, y_old, None,
...                          np.ones(3), True, 0, dw, conj)
>>> dw.tolist(), loss, dconj        # 1.0 * A[2] + 0.5 * A[0]; squared losses at x0 = 1
([[6.0, 7.5, 9.0]], 202.0, 2.125)
>>> conj.tolist()                   # 0.5 y^2 + b y of the rows changed
[0.625, 0.0, 1.5, 0.0]
"""

from __future__ import annotations

import numpy as np

from ooc_kernels._jit._cache import njit
from ooc_kernels._jit.losses import loss_conjugate, loss_value
from ooc_kernels.losses.reference import loss_conjugate_ref, loss_value_ref

__all__ = ["task_sweep", "task_sweep_ref", "rows_loss_sum", "rows_loss_sum_ref",
           "row_conjugates", "row_conjugates_ref"]


@njit(cache=True, nogil=True)
def task_sweep(A, row_map, seg_ends, b, y, y_old, weights, x0, with_loss, loss_id, dw,
               conj):
    """One pass over a task's rows ``A[row_map]`` after its iterations.

    Parameters
    ----------
    A : ndarray (n, p) float64
        The solver's rows of the whole data.
    row_map : ndarray (n_k,) int64
        The task's rows, chunk after chunk.
    seg_ends : ndarray (n_seg,) int64
        The end of each chunk in ``row_map`` (its last entry is ``n_k``).
    b, y : ndarray (n,) float64
        Labels and the duals after the iterations (indexed like ``A``).
    y_old : ndarray (n_k,) float64
        The task's duals before its iterations (indexed like ``row_map``).
    weights : ndarray (n,) float64 or None
        Row weights ``w_i`` (None: all 1).
    x0 : ndarray (p,) float64
        The epoch's first iterate (read only when ``with_loss``).
    with_loss : bool
    loss_id : int
    dw : ndarray (n_seg, p) float64, overwritten
        ``dw[s] = sum_{i in chunk s} w_i (y_i - y_old_i) a_i``.
    conj : ndarray (n,) float64, updated
        ``phi_i*(y_old_i)`` on the task's rows (indexed like ``A``), ``phi_i*(y_i)`` after
        the call; evaluated only where ``y_i != y_old_i``.

    Returns
    -------
    (float, float)
        ``sum_i w_i phi_i(a_i^T x0)`` (0 without ``with_loss``) and
        ``sum_i w_i (phi_i*(y_i) - phi_i*(y_old_i))``, both over the rows of weight
        ``> 0`` when weighted.
    """
    p = A.shape[1]
    dw[:, :] = 0.0
    loss = 0.0
    dconj = 0.0
    start = 0
    for s in range(seg_ends.shape[0]):
        for k in range(start, seg_ends[s]):
            i = row_map[k]
            bi = b[i]
            yi = y[i]
            d = yi - y_old[k]
            before = conj[i]
            after = before
            if yi != y_old[k]:
                after = loss_conjugate(loss_id, yi, bi)
                conj[i] = after
            change = after - before
            wi = 1.0
            if weights is not None:
                wi = weights[i]
                d *= wi
                change = wi * change if wi > 0.0 else 0.0
            dconj += change
            c = 0.0
            if with_loss:
                for j in range(p):
                    a = A[i, j]
                    c += a * x0[j]
                    dw[s, j] += a * d
                value = loss_value(loss_id, c, bi)
                if weights is not None:
                    value = wi * value if wi > 0.0 else 0.0
                loss += value
            elif d != 0.0:
                for j in range(p):
                    dw[s, j] += A[i, j] * d
        start = seg_ends[s]
    return loss, dconj


def task_sweep_ref(A, row_map, seg_ends, b, y, y_old, weights, x0, with_loss, loss_id, dw,
                   conj):
    """NumPy twin of :func:`task_sweep` (same contract; sums in NumPy's order; the
    conjugates evaluated at every row)."""
    rows = np.asarray(A, dtype=np.float64)[row_map]
    bk, yk = np.asarray(b)[row_map], np.asarray(y)[row_map]
    d = yk - y_old
    with np.errstate(over="ignore", invalid="ignore"):
        after = loss_conjugate_ref(loss_id, yk, bk)
        change = after - conj[row_map]
        conj[row_map] = after
        wk = None if weights is None else np.asarray(weights)[row_map]
        if wk is not None:
            d = wk * d
            change = np.where(wk > 0, wk * change, 0.0)
        starts = np.concatenate([[0], seg_ends[:-1]])
        for s, (lo, hi) in enumerate(zip(starts, seg_ends)):
            dw[s] = rows[lo:hi].T @ d[lo:hi]
        loss = 0.0
        if with_loss:
            values = loss_value_ref(loss_id, rows @ x0, bk)
            if wk is not None:
                values = np.where(wk > 0, wk * values, 0.0)
            loss = float(np.sum(values))
        return loss, float(np.sum(change))


@njit(cache=True, nogil=True)
def rows_loss_sum(A, b, weights, x, loss_id):
    """``sum_i w_i phi_i(a_i^T x)`` over every row of ``A`` (rows of weight 0 add 0):
    the primal value's losses in one pass."""
    n, p = A.shape
    total = 0.0
    for i in range(n):
        c = 0.0
        for j in range(p):
            c += A[i, j] * x[j]
        value = loss_value(loss_id, c, b[i])
        if weights is not None:
            value = weights[i] * value if weights[i] > 0.0 else 0.0
        total += value
    return total


def rows_loss_sum_ref(A, b, weights, x, loss_id):
    """NumPy twin of :func:`rows_loss_sum`."""
    with np.errstate(over="ignore", invalid="ignore"):
        values = loss_value_ref(loss_id, np.asarray(A, dtype=np.float64) @ x, b)
        if weights is not None:
            values = np.where(weights > 0, weights * values, 0.0)
        return float(np.sum(values))


@njit(cache=True, nogil=True)
def row_conjugates(y, b, loss_id, out):
    """``out[i] = phi_i*(y_i)`` for every row: the conjugates that :func:`task_sweep`
    keeps, at the duals a fit starts from."""
    for i in range(y.shape[0]):
        out[i] = loss_conjugate(loss_id, y[i], b[i])


def row_conjugates_ref(y, b, loss_id, out):
    """NumPy twin of :func:`row_conjugates`."""
    with np.errstate(over="ignore", invalid="ignore"):
        out[:] = loss_conjugate_ref(loss_id, np.asarray(y), np.asarray(b))
