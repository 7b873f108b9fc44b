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
conjugates evaluated.  :func:`visits_once` takes the logistic conjugate from the dual step's
own solve (:func:`logistic_dual_step`: one logarithm, within about ``1e-14`` of the two).

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

import math

import numpy as np

from ooc_kernels._jit._cache import njit
from ooc_kernels._jit.losses import (
    _LOGISTIC,
    W_HIGH,
    W_LOW,
    _logistic_solve,
    _xlogx,
    dual_prox,
    loss_conjugate,
    loss_value,
)
from ooc_kernels._jit.prefetch import prefetch_row
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dspdc.kernels import PREFETCH_AHEAD, _one_row
from ooc_kernels.losses.reference import dual_prox_ref, loss_conjugate_ref, loss_value_ref

__all__ = ["task_sweep", "task_sweep_ref", "rows_loss_sum", "rows_loss_sum_ref",
           "margins_loss_sum", "margins_loss_sum_ref",
           "row_conjugates", "row_conjugates_ref", "visits_once", "visits_once_ref",
           "logistic_dual_step", "logistic_dual_step_ref", "move_duals", "move_duals_ref"]

@njit(cache=True, nogil=True)
def logistic_dual_step(c, y, b, sigma, n, t0):
    """The logistic loss's dual step (:func:`~ooc_kernels._jit.losses.dual_prox`) and the
    conjugate at the new dual, from the solve's ``t = log((1 + w) / (-w))`` (``w = b beta``):
    one ``log`` instead of the two of ``loss_conjugate``; and that ``t``, for the next step
    of the same dual.

    ``phi*(beta) = (-w) log(-w) + (1 + w) log(1 + w)`` equals ``log(1 + w) + w t`` and
    ``log(-w) + (1 + w) t``; the first is used for ``w > -1/2``, the second below, so that
    the solve's ``t`` (``-sigmoid(-t)`` is ``w`` to a relative ``2e-14 max(1, |t|) (1 + w)``,
    the last step's second-order update) moves the value by about ``1e-14`` absolute.  A
    dual clipped to an end of the domain gets the two logarithms.

    Parameters
    ----------
    c, y, b, sigma, n : float
        As :func:`~ooc_kernels._jit.losses.dual_prox`.
    t0 : float
        The ``t`` this function returned with the dual ``y`` (the solve starts there
        instead of at ``log((1 + b y) / (-b y))``: one ``log`` less), or NaN.  With NaN
        the dual is ``dual_prox``'s bit for bit; with the kept ``t``, the same root to the
        solve's tolerance.

    Returns
    -------
    (float, float, float)
        ``beta``, ``phi*(beta)`` and the solve's ``t`` (NaN where the dual was clipped).

    Examples
    --------
    >>> import math
    >>> from ooc_kernels._jit.losses import dual_prox, loss_conjugate
    >>> beta, conj, t = logistic_dual_step(0.3, -0.5, 1.0, 2.0, 10.0, math.nan)
    >>> beta == dual_prox(2, 0.3, -0.5, 1.0, 2.0, 10.0)
    True
    >>> abs(conj - loss_conjugate(2, beta, 1.0)) < 1e-15
    True
    >>> abs(t - math.log((1 + beta) / -beta)) < 1e-14      # w = b beta = beta here
    True
    """
    b = np.float64(b)
    w, t = _logistic_solve(np.float64(c), np.float64(y), b, np.float64(sigma),
                           np.float64(n), np.float64(t0))
    if w == -W_HIGH or w == -W_LOW:
        return b * w, _xlogx(-w) + _xlogx(1.0 + w), np.nan
    if w > -0.5:
        conj = math.log(1.0 + w) + w * t
    else:
        conj = math.log(-w) + (1.0 + w) * t
    return b * w, conj, t


def logistic_dual_step_ref(c, y, b, sigma, n, t0):
    """NumPy twin of :func:`logistic_dual_step`, elementwise: the dual step's twin (which
    starts from ``y``; ``t0`` is not read), the conjugate's twin at it and
    ``log((1 + w) / (-w))`` (NaN where ``w`` is clipped)."""
    beta = dual_prox_ref(_LOGISTIC, c, y, b, sigma, n)
    w = np.asarray(b, dtype=np.float64) * beta
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where((w == -W_HIGH) | (w == -W_LOW), np.nan, np.log((1.0 + w) / -w))
    return beta, loss_conjugate_ref(_LOGISTIC, beta, b), t


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
    return margins_loss_sum_ref(np.asarray(A, dtype=np.float64) @ x, b, weights, loss_id)


@njit(cache=True, nogil=True)
def margins_loss_sum(z, b, weights, loss_id):
    """``sum_i w_i phi_i(z_i)`` of the rows' products ``z_i = a_i^T x`` already taken
    (rows of weight 0 add 0): :func:`rows_loss_sum` without its products."""
    total = 0.0
    for i in range(z.shape[0]):
        value = loss_value(loss_id, z[i], b[i])
        if weights is not None:
            value = weights[i] * value if weights[i] > 0.0 else 0.0
        total += value
    return total


def margins_loss_sum_ref(z, b, weights, loss_id):
    """NumPy twin of :func:`margins_loss_sum`."""
    with np.errstate(over="ignore", invalid="ignore"):
        values = loss_value_ref(loss_id, np.asarray(z, dtype=np.float64), b)
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


@njit(cache=True, nogil=True)
def move_duals(y, b, d, weights, t, loss_id, conj):
    """``y += t d`` with the kept conjugates: ``conj[i] = phi_i*(y_i)`` at the moved duals;
    returns ``sum_i w_i (phi_i*(y_i + t d_i) - phi_i*(y_i))`` over the rows of weight
    ``> 0`` (all when ``weights`` is None): the squared loss's step along the line of
    :mod:`~ooc_kernels.families.dspdc._line_dual`."""
    change = 0.0
    for i in range(y.shape[0]):
        y[i] += t * d[i]
        after = loss_conjugate(loss_id, y[i], b[i])
        delta = after - conj[i]
        conj[i] = after
        if weights is not None:
            delta = weights[i] * delta if weights[i] > 0.0 else 0.0
        change += delta
    return change


def move_duals_ref(y, b, d, weights, t, loss_id, conj):
    """NumPy twin of :func:`move_duals`."""
    y += t * np.asarray(d)   # the rows held in memory: the in-memory path's duals
    after = loss_conjugate_ref(loss_id, y, b)
    delta = after - conj
    conj[:] = after
    if weights is not None:
        delta = np.where(weights > 0, weights * delta, 0.0)
    return float(np.sum(delta))


@njit(cache=True, nogil=True)
def visits_once(A, b, y, x, xbar, z, n_total, row_uniforms, theta, tau, sigma, loss_id,
                lam1, lam2, shift, weights, row_map, segment, x0, with_loss, dw, conj,
                tdual=None, xd=None, dline=None, dwline=None):
    """The iterations of a task that visits each of its rows at most once (``m = 1``,
    ``q = p``, its rows in a permutation, one pass), with the task's sweep
    (:func:`task_sweep`) done at each row's visit: every row is read once per epoch, not
    twice.

    The iterates are those of
    :func:`~ooc_kernels.families.dspdc.kernels._all_columns_one_row` with ``row_map`` (the
    same operations on the same values, bit for bit, where no logistic dual step starts
    from a kept ``t``: ``tdual``); the sums of :func:`task_sweep` over
    the visited rows are added in the order of the visits instead of the rows' (equal to
    rounding).  A block of the task's uniforms per call: ``dw`` and ``conj`` accumulate
    over the calls, the returned sums are the block's.

    Parameters
    ----------
    A, b, y, x, xbar, z, n_total, row_uniforms, theta, tau, sigma, loss_id, lam1, lam2, shift,
    weights, row_map
        As :func:`~ooc_kernels.families.dspdc.kernels._all_columns_one_row`.
    segment : ndarray (n_k,) int64
        The chunk (row of ``dw``) of each of the task's rows, indexed like ``row_map``.
    x0, with_loss
        The epoch's first iterate and whether its losses are summed (:func:`task_sweep`).
    dw : ndarray (n_seg, p) float64, updated
        ``+= w_i (y_i - y_old_i) a_i`` of every visited row, in its chunk's row.
    conj : ndarray (n,) float64, updated
        ``phi_i*(y_i)`` where a visit changed ``y_i`` (the logistic loss's from
        :func:`logistic_dual_step`).
    tdual : ndarray (n,) float64 or None, updated
        The logistic loss's ``t = log((1 + b y) / (-b y))`` of each row's dual as its last
        step left it (NaN: unknown); a visit's step starts there and writes its own
        (:func:`logistic_dual_step`).  Not read for other losses.
    xd : ndarray (p,) float64 or None
        The squared loss's line of dual points (:mod:`~ooc_kernels.families.dspdc.
        _line_dual`): the primal point of the duals before the visits, or None (no line).
    dline : ndarray (n,) float64 or None, written
        With ``xd``, ``dline[i] = a_i^T xd - b_i - y_i`` at the dual ``y_i`` after each
        visit (final for the task when every row is visited once): the line's direction.
    dwline : ndarray (n_seg, p + 2) float64 or None, updated
        With ``xd``, every visited row adds ``w_i d_i a_i`` into ``dwline[s, :p]``,
        ``w_i (y_i + b_i) d_i`` into ``dwline[s, p]`` and ``w_i d_i^2`` into
        ``dwline[s, p + 1]`` (``d_i = dline[i]``, ``s`` its chunk's row).

    Returns
    -------
    (float, float)
        ``sum w_i phi_i(a_i^T x0)`` over the visited rows (0 without ``with_loss``) and
        ``sum w_i (phi_i*(y_i) - phi_i*(y_old_i))``, over the rows of weight ``> 0`` when
        weighted.
    """
    p = A.shape[1]
    n_rows = row_map.shape[0]
    T = row_uniforms.shape[0]
    nt = np.float64(n_total)
    ext = np.float64(n_rows)
    theta1 = theta + 1.0
    thr = tau * lam1
    den = 1.0 + tau * lam2
    smooth = lam1 == 0.0
    loss = 0.0
    dconj = 0.0
    k = _one_row(row_uniforms[0, 0], n_rows) if T > 0 else 0
    for t in range(1, min(PREFETCH_AHEAD, T)):
        prefetch_row(A, row_map[_one_row(row_uniforms[t, 0], n_rows)])
    for t in range(T):
        if t + PREFETCH_AHEAD < T:
            prefetch_row(A, row_map[_one_row(row_uniforms[t + PREFETCH_AHEAD, 0], n_rows)])
        k_next = k
        if t + 1 < T:
            k_next = _one_row(row_uniforms[t + 1, 0], n_rows)
        i = row_map[k]
        s = segment[k]
        c = 0.0
        c0 = 0.0
        cd = 0.0
        if xd is None:
            for j in range(p):
                a = np.float64(A[i, j])
                c += a * xbar[j]
                c0 += a * x0[j]
        else:           # a loop of its own: a test inside the loop costs more than the dot
            for j in range(p):
                a = np.float64(A[i, j])
                c += a * xbar[j]
                c0 += a * x0[j]
                cd += a * xd[j]
        bi = np.float64(b[i])
        y_old = y[i]
        if loss_id == _LOGISTIC:        # the conjugate from the step's own solve
            if tdual is None:
                y_new, after, _ = logistic_dual_step(c, y_old, bi, sigma, nt, np.nan)
            else:
                y_new, after, tdual[i] = logistic_dual_step(c, y_old, bi, sigma, nt,
                                                            tdual[i])
        else:
            y_new = dual_prox(loss_id, c, y_old, bi, sigma, nt)
            after = 0.0
        d = y_new - y_old
        y[i] = y_new
        wi = 1.0
        if weights is not None:
            wi = weights[i]
            d *= wi
        if y_new != y_old:
            if loss_id != _LOGISTIC:
                after = loss_conjugate(loss_id, y_new, bi)
            change = after - conj[i]
            conj[i] = after
            if weights is not None:
                change = wi * change if wi > 0.0 else 0.0
            dconj += change
        if with_loss:
            value = loss_value(loss_id, c0, bi)
            if weights is not None:
                value = wi * value if wi > 0.0 else 0.0
            loss += value
        wd = 0.0
        if xd is not None:          # the line's direction at this row's final dual
            dl = cd - bi - y_new
            dline[i] = dl
            wd = wi * dl
            dwline[s, p] += wd * (y_new + bi)
            dwline[s, p + 1] += wd * dl
        if smooth:
            for j in range(p):
                a = np.float64(A[i, j])
                zj = z[j]
                xold = x[j]
                vj = xold - tau * (zj + ext * (a * d)) / nt
                if shift is not None:
                    vj += tau * shift[j]
                xj = vj / den
                x[j] = xj
                xbar[j] = xold + theta1 * (xj - xold)
                z[j] = zj + a * d
                dw[s, j] += a * d
                if xd is not None:
                    dwline[s, j] += a * wd
        else:
            for j in range(p):
                a = np.float64(A[i, j])
                zj = z[j]
                xold = x[j]
                vj = xold - tau * (zj + ext * (a * d)) / nt
                if shift is not None:
                    vj += tau * shift[j]
                v = vj - thr if vj > thr else (vj + thr if vj < -thr else 0.0)
                xj = v / den
                x[j] = xj
                xbar[j] = xold + theta1 * (xj - xold)
                z[j] = zj + a * d
                dw[s, j] += a * d
                if xd is not None:
                    dwline[s, j] += a * wd
        k = k_next
    return loss, dconj


def visits_once_ref(A, b, y, x, xbar, z, n_total, row_uniforms, theta, tau, sigma, loss_id,
                    lam1, lam2, shift, weights, row_map, segment, x0, with_loss, dw, conj,
                    tdual=None, xd=None, dline=None, dwline=None):
    """NumPy twin of :func:`visits_once` (same contract): the iterations of
    :func:`~ooc_kernels.families.dspdc.kernels.dspdc_dense_iterations_ref` on the gathered
    rows (whose dual steps start from the duals, not from ``tdual``), then the sums of
    :func:`task_sweep_ref` over the visited rows, and ``tdual`` of the logistic loss as
    :func:`logistic_dual_step_ref` gives it.  With ``xd``, the line's direction
    (``dline``, ``dwline``) at the duals after the iterations.

    Raises
    ------
    ValidationError
        The uniforms visit a row twice."""
    from ooc_kernels.families.dspdc.kernels import dspdc_dense_iterations_ref

    row_u = np.asarray(row_uniforms, dtype=np.float64)
    n_k, p = len(row_map), np.asarray(A).shape[1]
    visited = np.minimum((row_u[:, 0] * n_k).astype(np.int64), n_k - 1)
    if len(np.unique(visited)) != len(visited):
        raise ValidationError("visits_once needs uniforms that visit each row at most once")
    rows = np.asarray(A, dtype=np.float64)[row_map]
    bk = np.asarray(b, dtype=np.float64)[row_map]
    yk = np.asarray(y)[row_map].copy()
    y_old = yk.copy()
    wk = None if weights is None else np.asarray(weights, dtype=np.float64)[row_map]
    dspdc_dense_iterations_ref(rows, bk, yk, x, xbar, z, n_total, row_u,
                               np.zeros((len(row_u), p)), 1, p, theta, tau, sigma, loss_id,
                               lam1, lam2, shift, wk)
    y[row_map] = yk
    seen = np.sort(visited)
    if tdual is not None and loss_id == _LOGISTIC:
        w = bk[seen] * yk[seen]
        with np.errstate(divide="ignore", invalid="ignore"):
            tdual[row_map[seen]] = np.where((w == -W_HIGH) | (w == -W_LOW), np.nan,
                                            np.log((1.0 + w) / -w))
    d = yk[seen] - y_old[seen]
    with np.errstate(over="ignore", invalid="ignore"):
        after = loss_conjugate_ref(loss_id, yk[seen], bk[seen])
        change = np.where(d != 0, after - conj[row_map[seen]], 0.0)
        conj[row_map[seen]] = np.where(d != 0, after, conj[row_map[seen]])
        if wk is not None:
            d = wk[seen] * d
            change = np.where(wk[seen] > 0, wk[seen] * change, 0.0)
        np.add.at(dw, segment[seen], d[:, None] * rows[seen])
        if xd is not None:
            dl = rows[seen] @ xd - bk[seen] - yk[seen]
            dline[row_map[seen]] = dl
            wd = dl if wk is None else wk[seen] * dl
            np.add.at(dwline, segment[seen], np.column_stack(
                [wd[:, None] * rows[seen], wd * (yk[seen] + bk[seen]), wd * dl]))
        loss = 0.0
        if with_loss:
            values = loss_value_ref(loss_id, rows[seen] @ x0, bk[seen])
            if wk is not None:
                values = np.where(wk[seen] > 0, wk[seen] * values, 0.0)
            loss = float(np.sum(values))
        return loss, float(np.sum(change))
