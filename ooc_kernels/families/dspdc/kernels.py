"""Numerical layer of DSPDC (Yu, Lin, Yang): the primal prox, the sampler, the iterations.

The saddle problem is the paper's (``docs/specs/dspdc.md`` §1.3)::

    min_x max_y  g(x) + (1/n) y^T A x - (1/n) sum_i phi_i*(y_i)

with ``g_j(x) = (lam2 / 2) x^2 + lam1 |x|`` (``lam2 > 0``), so that
``P(x) = (1/n) sum_i phi_i(a_i^T x) + g(x)``, ``D(y) = -g*(-A^T y / n) - (1/n) sum_i phi_i*(y_i)``
and ``y_i* = phi_i'(a_i^T x*)`` (the opposite of the usual SDCA sign).

The losses are the library's loss table (:mod:`ooc_kernels.losses`), addressed by its ids:
0 squared ``0.5 (z - b)^2`` (gamma = 1), 2 logistic ``log(1 + exp(-b z))`` (gamma = 4),
4 smoothed hinge, eq. (3) (gamma = 1); labels ``b`` are ``+-1`` for ids 2 and 4.  The dual
step is the table's conjugate prox, :func:`ooc_kernels._jit.losses.dual_prox`.  The
objective terms (``P``, ``D`` and the gap) are in
:mod:`ooc_kernels.families.dspdc.kernels_objective`.

Every ``@njit`` kernel (:func:`ooc_kernels._jit._cache.njit`) has a plain-NumPy twin with the suffix ``_ref``; the
vectorised scalar twins accept arrays.  ``docs/algorithms/dspdc_math.md`` pins the
conventions (``n_total`` versus ``n_rows``, the uniform stream, the misprints of the paper).

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dspdc.kernels import dspdc_dense_iterations
>>> rng = np.random.default_rng(0)
>>> A = rng.normal(size=(20, 4)); b = A @ np.ones(4)
>>> y, x, xbar, z = np.zeros(20), np.zeros(4), np.zeros(4), np.zeros(4)
>>> u = rng.random((2000, 2 + 2))           # per iteration: m row uniforms, then q column ones
>>> dspdc_dense_iterations(A, b, y, x, xbar, z, 20, u[:, :2], u[:, 2:], 2, 2,
...                        1.98, 0.18, 2.13, 0, 0.0, 0.1)   # theta, tau, sigma (Theorem 2)
>>> np.allclose(z, A.T @ y)                  # z = A^T y is maintained incrementally
True
>>> np.allclose(x, np.linalg.solve(A.T @ A + 20 * 0.1 * np.eye(4), A.T @ b))   # ridge
True
"""

from __future__ import annotations

import numpy as np

from ooc_kernels._jit._cache import njit
from ooc_kernels._jit.losses import dual_prox
from ooc_kernels._jit.prefetch import prefetch_row
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.losses.reference import dual_prox_ref

__all__ = [
    "primal_prox", "primal_prox_ref",
    "sample_without_replacement", "sample_without_replacement_ref",
    "dspdc_dense_iterations", "dspdc_dense_iterations_ref",
    "dspdc_factorized_iterations", "dspdc_factorized_iterations_ref",
    "row_top_sums", "row_top_sums_ref",
]


# --------------------------------------------------------------------------------------
# regularizer g_j(x) = lam2/2 x^2 + lam1 |x|
# --------------------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def primal_prox(v, tau, lam1, lam2):
    """``argmin_a g(a) + (a - v)^2 / (2 tau) = soft(v, tau lam1) / (1 + tau lam2)``.

    The primal step (12) is ``primal_prox(x_j - tau c'_j / n, tau, lam1, lam2)`` with
    ``c'_j = <A^j, ybar>``.

    Parameters
    ----------
    v : float
    tau : float
        The primal step size.
    lam1, lam2 : float
        ``g(a) = (lam2 / 2) a^2 + lam1 |a|``.

    Returns
    -------
    float

    Examples
    --------
    >>> primal_prox(3.0, 1.0, 1.0, 1.0), primal_prox(-0.5, 1.0, 1.0, 1.0)
    (1.0, 0.0)
    """
    v = np.float64(v)
    thr = tau * lam1
    if v > thr:
        s = v - thr
    elif v < -thr:
        s = v + thr
    else:
        return 0.0
    return s / (1.0 + tau * lam2)


def primal_prox_ref(v, tau, lam1, lam2):
    """NumPy twin of :func:`primal_prox` (vectorised)."""
    v = np.asarray(v, dtype=np.float64)
    return np.sign(v) * np.maximum(np.abs(v) - tau * lam1, 0.0) / (1.0 + tau * lam2)


# --------------------------------------------------------------------------------------
# sampler
# --------------------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def sample_without_replacement(n, m, uniforms, marks, out):
    """Draw ``m`` distinct indices of ``range(n)`` uniformly (Robert Floyd's algorithm).

    Step ``k = 0 .. m-1`` handles ``j = n - m + k``: ``t = floor(uniforms[k] (j + 1))``
    (clamped to ``[0, j]``); ``t`` is taken unless already chosen, then ``j`` is.  Every
    ``m``-subset has probability ``1 / C(n, m)``.  ``O(m)`` time, no allocation.

    Parameters
    ----------
    n, m : int
        ``0 <= m <= n``.
    uniforms : ndarray (>= m,) float64
        Pre-drawn uniforms in ``[0, 1)``; only the first ``m`` are read.
    marks : ndarray (n,) bool
        Scratch, all ``False`` on entry; cleared again on return.
    out : ndarray (>= m,) int64
        ``out[:m]`` receives the subset, in the (deterministic) order of the steps.

    Examples
    --------
    >>> import numpy as np
    >>> out = np.empty(3, dtype=np.int64); marks = np.zeros(10, dtype=bool)
    >>> sample_without_replacement(10, 3, np.array([0.5, 0.99, 0.0]), marks, out)
    >>> out.tolist(), bool(marks.any())
    ([4, 8, 0], False)
    """
    if m < 0 or m > n:
        raise ValidationError("sample_without_replacement: need 0 <= m <= n")
    if uniforms.shape[0] < m or out.shape[0] < m or marks.shape[0] < n:
        raise ValidationError("sample_without_replacement: uniforms and out need m entries, "
                              "marks n entries")
    k = 0
    for j in range(n - m, n):
        t = np.int64(uniforms[k] * (j + 1))
        if t > j:
            t = j
        elif t < 0:
            t = 0
        if marks[t]:
            t = j
        marks[t] = True
        out[k] = t
        k += 1
    for k in range(m):
        marks[out[k]] = False


def sample_without_replacement_ref(n, m, uniforms):
    """NumPy twin of :func:`sample_without_replacement`: returns the ``(m,)`` int64 subset."""
    if not 0 <= m <= n:
        raise ValidationError(f"need 0 <= m <= n; got m={m}, n={n}")
    chosen: list[int] = []
    taken: set[int] = set()
    for k, j in enumerate(range(n - m, n)):
        t = min(max(int(np.float64(uniforms[k]) * (j + 1)), 0), j)
        if t in taken:
            t = j
        taken.add(t)
        chosen.append(t)
    return np.array(chosen, dtype=np.int64)


# --------------------------------------------------------------------------------------
# Algorithm 1 on a dense block of rows
# --------------------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def _check_iteration_args(n_rows, p, n_total, row_uniforms, col_uniforms, m, q, tau, sigma):
    if m < 1 or m > n_rows:
        raise ValidationError("DSPDC iterations: need 1 <= m <= number of rows")
    if q < 1 or q > p:
        raise ValidationError("DSPDC iterations: need 1 <= q <= number of columns p")
    if n_total < n_rows:
        raise ValidationError("DSPDC iterations: n_total (samples of the whole problem) must "
                              "be >= the number of rows given")
    if row_uniforms.shape[0] != col_uniforms.shape[0]:
        raise ValidationError("DSPDC iterations: row_uniforms (T, m) and col_uniforms (T, q) "
                              "need the same number of iterations T")
    if row_uniforms.shape[1] != m or col_uniforms.shape[1] != q:
        raise ValidationError("DSPDC iterations: row_uniforms must be (T, m) and "
                              "col_uniforms (T, q)")
    if not (tau > 0.0 and sigma > 0.0):
        raise ValidationError("DSPDC iterations: tau and sigma must be > 0")


@njit(cache=True, nogil=True)
def _dense_dual_step(A, b, y, xbar, rows, dy, loss_id, sigma, nt, weights):
    """The dual step (10) on the rows ``rows``: ``y_i = dual_prox(<A_i, xbar>, ...)``; ``dy``
    receives the changes (times the row weights, when given)."""
    p = A.shape[1]
    for k in range(rows.shape[0]):
        i = rows[k]
        c = 0.0
        for j in range(p):
            c += np.float64(A[i, j]) * xbar[j]
        y_new = dual_prox(loss_id, c, y[i], np.float64(b[i]), sigma, nt)
        dy[k] = y_new - y[i]
        y[i] = y_new
        if weights is not None:
            dy[k] *= weights[i]


@njit(cache=True, nogil=True)
def dspdc_dense_iterations(A, b, y, x, xbar, z, n_total, row_uniforms, col_uniforms, m, q,
                           theta, tau, sigma, loss_id, lam1, lam2, shift=None, weights=None):
    """Run ``T`` iterations of Algorithm 1 (``docs/specs/dspdc.md`` §2.1) in place on dense rows.

    Per iteration ``t``: ``I`` = :func:`sample_without_replacement` ``(n_rows, m,
    row_uniforms[t])``, ``J`` likewise ``(p, q, col_uniforms[t])``; then

    1. dual step (10) with the old ``xbar``: ``y_i = dual_prox(loss_id, <A_i, xbar>, y_i,
       b_i, sigma, n_total)`` for ``i`` in ``I``;
    2. ``A^T ybar = z + (n_rows / m) A_I^T (y_new - y_old)`` (on ``J`` only), then
       ``z += A_I^T (y_new - y_old)``;
    3. primal step (12) with the new ``ybar``: ``x_j = primal_prox(x_j - tau (A^T ybar)_j /
       n_total, tau, lam1, lam2)`` for ``j`` in ``J``;
    4. ``xbar = x_old + (theta + 1)(x_new - x_old)`` on ``J`` and ``xbar = x`` elsewhere
       (the coordinates of the previous ``J`` are reset: ``O(q)``; the first iteration of a
       call resets all ``p``).

    Parameters
    ----------
    A : ndarray (n_rows, p), float32 or float64
        A block of rows (computed in float64).
    b : ndarray (n_rows,)
        Labels.
    y : ndarray (n_rows,) float64, updated
        The duals of these rows.
    x, xbar : ndarray (p,) float64, updated
        The primal iterate and its extrapolation.
    z : ndarray (p,) float64, updated
        ``A^T y`` maintained incrementally (only the increments ``A_I^T dy`` are added, so
        it may hold the product of the whole problem when ``A`` is one chunk of it).
    n_total : int or float
        Samples of the whole problem: the ``1/n`` of both proxes (``>= n_rows``).
    row_uniforms : ndarray (T, m) float64
    col_uniforms : ndarray (T, q) float64
        Uniforms in ``[0, 1)`` that draw ``I`` and ``J``.
    m, q : int
        Dual and primal coordinates sampled per iteration.  The dual extrapolation factor is
        ``n_rows / m`` (the size of the set ``I`` is drawn from).
    theta, tau, sigma : float
        Extrapolation, primal and dual step sizes (:mod:`ooc_kernels.families.dspdc.params`).
    loss_id : int
        0 squared, 1 smoothed hinge, 2 logistic.
    lam1, lam2 : float
        ``g_j(x) = (lam2 / 2) x^2 + lam1 |x|``.
    shift : ndarray (p,) float64, optional
        A linear tilt of the regularizer, ``g_j(x) = (lam2 / 2) x^2 + lam1 |x| - shift_j x``
        (local subproblems of distributed schemes); the primal step becomes
        ``primal_prox(x_j - tau (A^T ybar)_j / n_total + tau shift_j, tau, lam1, lam2)``.
    weights : ndarray (n_rows,) float64, optional
        Row weights ``w_i >= 0`` of the weighted problem ``(1/n) sum_i w_i phi_i(a_i^T x)``.
        It is the unweighted problem on the rows ``sqrt(w_i) a_i`` with the losses
        ``w_i phi_i(z / sqrt(w_i))`` (as smooth as ``phi_i``), whose duals are
        ``sqrt(w_i) y_i``: ``y`` holds the duals ``y_i`` of ``phi_i``, the dual step is
        unchanged and every product with the duals weighs them, ``z = A^T (w * y)``.  A row
        of weight 0 changes nothing.

    Notes
    -----
    ``O(m p)`` per iteration, no allocation inside the loop.  With ``n_rows == n_total``
    this is exactly Algorithm 1.  Calling it twice on consecutive blocks of uniforms gives
    the same iterates as one call.  With ``q = p`` no column is sampled (the column
    uniforms are not read): every coordinate is updated in one fused pass over the row, and
    the iterates are those of the sampled version bit for bit.  Twin:
    :func:`dspdc_dense_iterations_ref`.
    """
    n_rows, p = A.shape
    _check_iteration_args(n_rows, p, n_total, row_uniforms, col_uniforms, m, q, tau, sigma)
    if b.shape[0] != n_rows or y.shape[0] != n_rows:
        raise ValidationError("dspdc_dense_iterations: b and y need one entry per row of A")
    if x.shape[0] != p or xbar.shape[0] != p or z.shape[0] != p:
        raise ValidationError("dspdc_dense_iterations: x, xbar and z need one entry per "
                              "column of A")
    if shift is not None:
        if shift.shape[0] != p:
            raise ValidationError("dspdc_dense_iterations: shift needs one entry per column")
    if weights is not None:
        if weights.shape[0] != n_rows:
            raise ValidationError("dspdc_dense_iterations: weights need one entry per row")
    if q == p:
        _dense_iterations_all_columns(A, b, y, x, xbar, z, n_total, row_uniforms, m, theta,
                                      tau, sigma, loss_id, lam1, lam2, shift, weights)
        return
    T = row_uniforms.shape[0]
    nt = np.float64(n_total)
    ext = np.float64(n_rows) / np.float64(m)
    theta1 = theta + 1.0
    rows = np.empty(m, dtype=np.int64)
    cols = np.empty(q, dtype=np.int64)
    prev = np.empty(q, dtype=np.int64)
    row_marks = np.zeros(n_rows, dtype=np.bool_)
    col_marks = np.zeros(p, dtype=np.bool_)
    dy = np.empty(m, dtype=np.float64)
    xold = np.empty(q, dtype=np.float64)
    for t in range(T):
        sample_without_replacement(n_rows, m, row_uniforms[t], row_marks, rows)
        sample_without_replacement(p, q, col_uniforms[t], col_marks, cols)
        # (10) dual step with xbar^(t)
        _dense_dual_step(A, b, y, xbar, rows, dy, loss_id, sigma, nt, weights)
        # (11) + (12): <A^j, ybar^(t+1)> = z_j + (n_rows/m) (A_I^j)^T dy, for j in J
        for l in range(q):
            j = cols[l]
            s = 0.0
            for k in range(m):
                s += np.float64(A[rows[k], j]) * dy[k]
            cj = z[j] + ext * s
            xold[l] = x[j]
            vj = x[j] - tau * cj / nt
            if shift is not None:
                vj += tau * shift[j]
            x[j] = primal_prox(vj, tau, lam1, lam2)
        # z = A^T y^(t+1)
        for k in range(m):
            d = dy[k]
            if d != 0.0:
                i = rows[k]
                for j in range(p):
                    z[j] += np.float64(A[i, j]) * d
        # (13) xbar^(t+1): reset the previous J (all of it on a call's first iteration)
        if t == 0:
            for j in range(p):
                xbar[j] = x[j]
        else:
            for l in range(q):
                xbar[prev[l]] = x[prev[l]]
        for l in range(q):
            j = cols[l]
            xbar[j] = xold[l] + theta1 * (x[j] - xold[l])
            prev[l] = j


@njit(cache=True, nogil=True)
def _dense_iterations_all_columns(A, b, y, x, xbar, z, n_total, row_uniforms, m, theta, tau,
                                  sigma, loss_id, lam1, lam2, shift, weights):
    """:func:`dspdc_dense_iterations` with ``q = p``: every iteration updates every primal
    coordinate, so no column is sampled and the column uniforms are not read.

    Floyd's sampler with ``q = p`` lists ``0 .. p - 1`` in order whatever the uniforms (step
    ``k`` finds ``0 .. k - 1`` taken, so it takes ``k``), and the primal coordinates of one
    iteration are independent (each reads only its own ``z_j``, ``x_j`` and the iteration's
    ``dy``): this loop over ``j = 0 .. p - 1`` gives, bit for bit, the iterates of the
    sampled version.  Per coordinate it fuses the primal step,
    the update of ``z`` and the extrapolation (one pass over the row instead of four), and
    the reset of ``xbar`` is not needed (every coordinate is rewritten)."""
    if m == 1:
        _all_columns_one_row(A, b, y, x, xbar, z, n_total, row_uniforms, theta, tau, sigma,
                             loss_id, lam1, lam2, shift, weights)
        return
    n_rows, p = A.shape
    T = row_uniforms.shape[0]
    nt = np.float64(n_total)
    ext = np.float64(n_rows) / np.float64(m)
    theta1 = theta + 1.0
    rows = np.empty(m, dtype=np.int64)
    row_marks = np.zeros(n_rows, dtype=np.bool_)
    dy = np.empty(m, dtype=np.float64)
    for t in range(T):
        sample_without_replacement(n_rows, m, row_uniforms[t], row_marks, rows)
        _dense_dual_step(A, b, y, xbar, rows, dy, loss_id, sigma, nt, weights)
        for j in range(p):
            s = 0.0
            for k in range(m):
                s += np.float64(A[rows[k], j]) * dy[k]
            zj = z[j]
            cj = zj + ext * s
            xold = x[j]
            vj = xold - tau * cj / nt
            if shift is not None:
                vj += tau * shift[j]
            xj = primal_prox(vj, tau, lam1, lam2)
            x[j] = xj
            xbar[j] = xold + theta1 * (xj - xold)
            for k in range(m):          # z = A^T y^(t+1), the increments in the order of I
                d = dy[k]
                if d != 0.0:
                    zj += np.float64(A[rows[k], j]) * d
            z[j] = zj


@njit(cache=True, nogil=True)
def _one_row(u, n_rows):
    """Floyd's sampler (:func:`sample_without_replacement`) with ``m = 1``."""
    i = np.int64(u * n_rows)
    if i > n_rows - 1:
        i = n_rows - 1
    elif i < 0:
        i = 0
    return i


#: The iterations with ``m = 1`` prefetch the row this many iterations ahead: rows sampled
#: at random from data larger than the caches are read from memory, and one row ahead
#: leaves most of the read's latency in the iteration.
PREFETCH_AHEAD = 4


@njit(cache=True, nogil=True)
def _mapped_row(u, n_rows, row_map):
    """The row of ``A`` of the uniform ``u``: :func:`_one_row`, through ``row_map`` when
    given."""
    i = _one_row(u, n_rows)
    if row_map is not None:
        i = row_map[i]
    return i


@njit(cache=True, nogil=True)
def _all_columns_one_row(A, b, y, x, xbar, z, n_total, row_uniforms, theta, tau, sigma,
                         loss_id, lam1, lam2, shift, weights, row_map=None):
    """:func:`_dense_iterations_all_columns` with ``m = 1``, written so that the loop over
    the columns has no branch and no call (its two divisions keep it scalar: they are those
    of the general loop, so that the iterates stay the same).

    The same floating-point operations in the same order as the general loop (the iterates
    agree bit for bit, up to the sign of a zero): Floyd's sampler with ``m = 1`` is
    ``i = floor(u n_rows)`` (clamped), known ahead, so the row :data:`PREFETCH_AHEAD`
    iterations ahead is prefetched (:func:`~ooc_kernels._jit.prefetch.prefetch_row`: its
    read overlaps as many iterations; a prefetch changes no value); the proximal step keeps
    its two divisions (``tau cj / nt`` and ``s / (1 + tau lam2)``, the denominator computed
    once) and its soft threshold as selects, which are the identity when ``lam1 = 0``; and
    ``z_j += a_ij dy`` is the same value when ``dy = 0`` (rows are finite), so it is not
    tested.

    ``row_map`` (int64, optional): the iterations run on the rows ``A[row_map]`` (with
    ``b``, ``y`` and ``weights`` indexed like ``A``), without gathering them; the sampled
    row ``i`` of ``0 .. len(row_map) - 1`` is the row ``row_map[i]`` of ``A``.  The same
    operations on the same values as a call on the gathered rows: the same iterates, bit
    for bit (the in-memory path, :mod:`ooc_kernels.families.dspdc._memory_task`)."""
    p = A.shape[1]
    n_rows = A.shape[0]
    if row_map is not None:
        n_rows = row_map.shape[0]
    T = row_uniforms.shape[0]
    nt = np.float64(n_total)
    ext = np.float64(n_rows)            # n_rows / m
    theta1 = theta + 1.0
    thr = tau * lam1
    den = 1.0 + tau * lam2
    smooth = lam1 == 0.0
    i = _mapped_row(row_uniforms[0, 0], n_rows, row_map) if T > 0 else 0
    for t in range(1, min(PREFETCH_AHEAD, T)):     # the first rows' reads start together
        prefetch_row(A, _mapped_row(row_uniforms[t, 0], n_rows, row_map))
    for t in range(T):
        if t + PREFETCH_AHEAD < T:  # its read overlaps the iterations up to it
            prefetch_row(A, _mapped_row(row_uniforms[t + PREFETCH_AHEAD, 0], n_rows, row_map))
        i_next = i
        if t + 1 < T:
            i_next = _mapped_row(row_uniforms[t + 1, 0], n_rows, row_map)
        c = 0.0
        for j in range(p):
            c += np.float64(A[i, j]) * xbar[j]
        y_new = dual_prox(loss_id, c, y[i], np.float64(b[i]), sigma, nt)
        d = y_new - y[i]
        y[i] = y_new
        if weights is not None:
            d *= weights[i]
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
        else:
            for j in range(p):
                a = np.float64(A[i, j])
                zj = z[j]
                xold = x[j]
                vj = xold - tau * (zj + ext * (a * d)) / nt
                if shift is not None:
                    vj += tau * shift[j]
                s = vj - thr if vj > thr else (vj + thr if vj < -thr else 0.0)
                xj = s / den
                x[j] = xj
                xbar[j] = xold + theta1 * (xj - xold)
                z[j] = zj + a * d
        i = i_next


def _check_ref_args(n_rows, p, n_total, row_uniforms, col_uniforms, m, q):
    row_uniforms = np.asarray(row_uniforms, dtype=np.float64)
    col_uniforms = np.asarray(col_uniforms, dtype=np.float64)
    if not (1 <= m <= n_rows and 1 <= q <= p):
        raise ValidationError(f"need 1 <= m <= {n_rows} and 1 <= q <= {p}; got m={m}, q={q}")
    if n_total < n_rows:
        raise ValidationError(f"n_total={n_total} must be >= the number of rows {n_rows}")
    if row_uniforms.shape != (len(row_uniforms), m) or col_uniforms.shape != (
            len(row_uniforms), q):
        raise ValidationError("row_uniforms must be (T, m) and col_uniforms (T, q)")
    return row_uniforms, col_uniforms


def dspdc_dense_iterations_ref(A, b, y, x, xbar, z, n_total, row_uniforms, col_uniforms, m, q,
                               theta, tau, sigma, loss_id, lam1, lam2, shift=None,
                               weights=None):
    """NumPy twin of :func:`dspdc_dense_iterations` (same in-place contract, vectorised)."""
    A = np.asarray(A)
    n_rows, p = A.shape
    row_uniforms, col_uniforms = _check_ref_args(n_rows, p, n_total, row_uniforms,
                                                 col_uniforms, m, q)
    b = np.asarray(b, dtype=np.float64)
    first = True
    for ru, cu in zip(row_uniforms, col_uniforms):
        I = sample_without_replacement_ref(n_rows, m, ru)
        J = sample_without_replacement_ref(p, q, cu)
        AI = A[I].astype(np.float64)
        y_new = dual_prox_ref(loss_id, AI @ xbar, y[I], b[I], sigma, n_total)
        dy = y_new - y[I]
        y[I] = y_new
        if weights is not None:
            dy = dy * np.asarray(weights, dtype=np.float64)[I]
        delta = AI.T @ dy
        ybar_prod = z[J] + (n_rows / m) * delta[J]
        x_old = x[J].copy()
        tilt = 0.0 if shift is None else tau * np.asarray(shift, dtype=np.float64)[J]
        x[J] = primal_prox_ref(x[J] - tau * ybar_prod / n_total + tilt, tau, lam1, lam2)
        z += delta
        if first:
            xbar[:] = x
            first = False
        else:
            xbar[prev] = x[prev]
        xbar[J] = x_old + (theta + 1.0) * (x[J] - x_old)
        prev = J


# --------------------------------------------------------------------------------------
# Algorithm 2 on factorized rows A = U V
# --------------------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def dspdc_factorized_iterations(U, V, b, y, x, u, v, vbar, n_total, row_uniforms, col_uniforms,
                                m, q, theta, tau, sigma, loss_id, lam1, lam2, shift=None,
                                weights=None):
    """Run ``T`` iterations of Algorithm 2 (``docs/specs/dspdc.md`` §3.2) in place, ``A = U V``.

    Per iteration, with ``I`` and ``J`` drawn as in :func:`dspdc_dense_iterations`:

    * (20) ``y_i = dual_prox(loss_id, <U_i, vbar>, y_i, b_i, sigma, n_total)``, ``i`` in ``I``;
    * (21)-(22) ``du = U_I^T dy``, ``ubar = u + (n_rows / m) du``, ``u += du``;
    * (23) ``x_j = primal_prox(x_j - tau <V^j, ubar> / n_total, tau, lam1, lam2)``, ``j`` in
      ``J`` (the paper's prose says ``<V^j, vbar>``, a typo; (23) is used);
    * (24)-(25) ``dv = V^J dx``, ``vbar = v + (theta + 1) dv``, ``v += dv``.

    ``ubar`` and ``vbar`` are rebuilt from ``u^(t)`` and ``v^(t)``, so the reset of
    ``xbar`` is implicit.  ``O(d (m + q))`` per iteration.

    Parameters
    ----------
    U : ndarray (n_rows, d), float32 or float64
    V : ndarray (d, p), float32 or float64
    b : ndarray (n_rows,)
    y : ndarray (n_rows,) float64, updated
    x : ndarray (p,) float64, updated
    u : ndarray (d,) float64, updated
        ``U^T y`` (``U^T (w * y)`` with ``weights``; increments only are added: it may be
        the whole problem's product).
    v, vbar : ndarray (d,) float64, updated
        ``V x`` and ``V xbar``.
    n_total, row_uniforms, col_uniforms, m, q, theta, tau, sigma, loss_id, lam1, lam2, shift
        As :func:`dspdc_dense_iterations`.
    weights : ndarray (n_rows,) float64, optional
        Row weights, as :func:`dspdc_dense_iterations`: ``du = U_I^T (w_I * dy)``.

    Notes
    -----
    With the same uniforms it produces the iterates of :func:`dspdc_dense_iterations` on
    ``A = U V`` (to rounding).  Twin: :func:`dspdc_factorized_iterations_ref`.
    """
    n_rows, d = U.shape
    p = V.shape[1]
    _check_iteration_args(n_rows, p, n_total, row_uniforms, col_uniforms, m, q, tau, sigma)
    if V.shape[0] != d:
        raise ValidationError("dspdc_factorized_iterations: U must be (n_rows, d) and V (d, p)")
    if b.shape[0] != n_rows or y.shape[0] != n_rows or x.shape[0] != p:
        raise ValidationError("dspdc_factorized_iterations: b, y need n_rows entries, x p")
    if u.shape[0] != d or v.shape[0] != d or vbar.shape[0] != d:
        raise ValidationError("dspdc_factorized_iterations: u, v and vbar need d entries")
    if shift is not None:
        if shift.shape[0] != p:
            raise ValidationError("dspdc_factorized_iterations: shift needs p entries")
    if weights is not None:
        if weights.shape[0] != n_rows:
            raise ValidationError("dspdc_factorized_iterations: weights need n_rows entries")
    T = row_uniforms.shape[0]
    nt = np.float64(n_total)
    ext = np.float64(n_rows) / np.float64(m)
    theta1 = theta + 1.0
    rows = np.empty(m, dtype=np.int64)
    cols = np.empty(q, dtype=np.int64)
    row_marks = np.zeros(n_rows, dtype=np.bool_)
    col_marks = np.zeros(p, dtype=np.bool_)
    dy = np.empty(m, dtype=np.float64)
    du = np.empty(d, dtype=np.float64)
    ubar = np.empty(d, dtype=np.float64)
    dv = np.empty(d, dtype=np.float64)
    for t in range(T):
        sample_without_replacement(n_rows, m, row_uniforms[t], row_marks, rows)
        sample_without_replacement(p, q, col_uniforms[t], col_marks, cols)
        # (20)
        for k in range(m):
            i = rows[k]
            c = 0.0
            for r in range(d):
                c += np.float64(U[i, r]) * vbar[r]
            y_new = dual_prox(loss_id, c, y[i], np.float64(b[i]), sigma, nt)
            dy[k] = y_new - y[i]
            y[i] = y_new
            if weights is not None:
                dy[k] *= weights[i]
        # (21), (22)
        for r in range(d):
            du[r] = 0.0
        for k in range(m):
            dk = dy[k]
            if dk != 0.0:
                i = rows[k]
                for r in range(d):
                    du[r] += np.float64(U[i, r]) * dk
        for r in range(d):
            ubar[r] = u[r] + ext * du[r]
            u[r] += du[r]
        # (23), (24), (25)
        for r in range(d):
            dv[r] = 0.0
        for l in range(q):
            j = cols[l]
            c = 0.0
            for r in range(d):
                c += np.float64(V[r, j]) * ubar[r]
            vj = x[j] - tau * c / nt
            if shift is not None:
                vj += tau * shift[j]
            x_new = primal_prox(vj, tau, lam1, lam2)
            dx = x_new - x[j]
            x[j] = x_new
            if dx != 0.0:
                for r in range(d):
                    dv[r] += np.float64(V[r, j]) * dx
        for r in range(d):
            vbar[r] = v[r] + theta1 * dv[r]
            v[r] += dv[r]


def dspdc_factorized_iterations_ref(U, V, b, y, x, u, v, vbar, n_total, row_uniforms,
                                    col_uniforms, m, q, theta, tau, sigma, loss_id, lam1, lam2,
                                    shift=None, weights=None):
    """NumPy twin of :func:`dspdc_factorized_iterations` (same in-place contract)."""
    U = np.asarray(U)
    V = np.asarray(V)
    n_rows, p = U.shape[0], V.shape[1]
    row_uniforms, col_uniforms = _check_ref_args(n_rows, p, n_total, row_uniforms,
                                                 col_uniforms, m, q)
    b = np.asarray(b, dtype=np.float64)
    for ru, cu in zip(row_uniforms, col_uniforms):
        I = sample_without_replacement_ref(n_rows, m, ru)
        J = sample_without_replacement_ref(p, q, cu)
        UI = U[I].astype(np.float64)
        y_new = dual_prox_ref(loss_id, UI @ vbar, y[I], b[I], sigma, n_total)
        dy = y_new - y[I]
        if weights is not None:
            dy = dy * np.asarray(weights, dtype=np.float64)[I]
        du = UI.T @ dy
        y[I] = y_new
        ubar = u + (n_rows / m) * du
        u += du
        VJ = V[:, J].astype(np.float64)
        tilt = 0.0 if shift is None else tau * np.asarray(shift, dtype=np.float64)[J]
        x_new = primal_prox_ref(x[J] - tau * (VJ.T @ ubar) / n_total + tilt, tau, lam1, lam2)
        dv = VJ @ (x_new - x[J])
        x[J] = x_new
        vbar[:] = v + (theta + 1.0) * dv
        v += dv


# --------------------------------------------------------------------------------------
# statistics for Lambda: per-row sums of the q largest entries
# --------------------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def row_top_sums(S, q):
    """Per row of ``S`` (non-negative), the sum of its ``q`` largest entries.

    A binary min-heap of the ``q`` largest values seen so far, per row: ``O(p log q)`` per
    row and no allocation beyond the heap, so ``q << p`` costs about one read of the row
    (``np.partition`` along rows costs 10 to 20 times more for ``p = 1000, q = 10``).
    Twin: :func:`row_top_sums_ref`.

    Parameters
    ----------
    S : ndarray (n, p), float64
    q : int
        ``1 <= q <= p``.

    Returns
    -------
    ndarray (n,) float64

    Examples
    --------
    >>> import numpy as np
    >>> row_top_sums(np.array([[1.0, 5.0, 3.0, 4.0], [0.0, 2.0, 2.0, 1.0]]), 2).tolist()
    [9.0, 4.0]
    """
    n, p = S.shape
    if q < 1 or q > p:
        raise ValidationError("row_top_sums: need 1 <= q <= number of columns")
    out = np.empty(n, dtype=np.float64)
    heap = np.empty(q, dtype=np.float64)
    for i in range(n):
        for k in range(q):                 # the first q values, heapified below
            heap[k] = S[i, k]
        for start in range(q // 2 - 1, -1, -1):
            _sift_down(heap, start, q)
        for j in range(q, p):
            v = S[i, j]
            if v > heap[0]:
                heap[0] = v
                _sift_down(heap, 0, q)
        total = 0.0
        for k in range(q):
            total += heap[k]
        out[i] = total
    return out


@njit(cache=True, nogil=True)
def _sift_down(heap, k, size):
    v = heap[k]
    while True:
        child = 2 * k + 1
        if child >= size:
            break
        if child + 1 < size and heap[child + 1] < heap[child]:
            child += 1
        if heap[child] >= v:
            break
        heap[k] = heap[child]
        k = child
    heap[k] = v


def row_top_sums_ref(S, q):
    """NumPy twin of :func:`row_top_sums` (``np.partition`` along rows)."""
    S = np.asarray(S, dtype=np.float64)
    p = S.shape[1]
    if not 1 <= q <= p:
        raise ValidationError(f"need 1 <= q <= {p}; got q={q}")
    return np.partition(S, p - q, axis=1)[:, p - q:].sum(axis=1)
