"""The scale constant ``Lambda`` of DSPDC from one streaming pass over chunks of rows.

``Lambda >= Lambda_{q,m} = max over |I| = m, |J| = q of ||A_I^J||_2^2`` (``docs/specs/dspdc.md``
§1.4, 2.2) is computed from statistics that one pass over chunks of rows gathers
(:func:`chunk_lambda_stats`, or :func:`factorized_chunk_lambda_stats` for ``A = U V``,
merged with :func:`combine_lambda_stats`), then :func:`lambda_from_stats` in one of the modes
``"exact"``, ``"upper_bound"``, ``"heuristic"`` or a user value; :func:`lambda_value` does
both for an in-memory matrix.  The step parameters that ``Lambda`` enters are in
:mod:`ooc_kernels.families.dspdc.params`.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dspdc.lambda_stats import lambda_value
>>> A = np.array([[1.0, 2.0], [0.0, 1.0], [3.0, 0.0]])
>>> lambda_value(A, m=1, q=1, Lambda="exact")              # max_ij A_ij^2
9.0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dspdc.kernels import row_top_sums
from ooc_kernels.families.dspdc.params import _as_int, _positive

__all__ = [
    "LambdaStats", "chunk_lambda_stats", "combine_lambda_stats",
    "factorized_chunk_lambda_stats", "lambda_from_stats", "lambda_value",
    "lambda_value_factorized", "power_iteration_sq", "spectral_norm_sq",
    "spectral_norm_sq_factorized", "DEFAULT_MAX_COL_TOP",
]

#: Per-column top-``m`` squares are kept by :func:`chunk_lambda_stats` only when ``m * p`` is
#: at most this many values (32 MiB of float64).
DEFAULT_MAX_COL_TOP = 4_000_000


@dataclass(frozen=True, eq=False)
class LambdaStats:
    """Mergeable statistics of the rows seen so far, enough for :func:`lambda_from_stats`.

    Attributes
    ----------
    m, q : int
        The sampling sizes the statistics were gathered for.
    n_rows : int
        Rows seen.
    p : int
        Columns.
    max_row_sq : float
        ``max_i ||a_i||^2`` (``Lambda_{p,1} = R^2``).
    col_sq : ndarray (p,)
        ``||A^j||^2`` per column.
    max_entry_sq : float or None
        ``max_ij A_ij^2`` (``Lambda_{1,1}``); None when the entries were not formed.
    row_topq : ndarray or None
        The ``min(m, n_rows)`` largest values, descending, of the per-row sums of the ``q``
        largest squares (``Lambda_{q,1}`` is the first).
    col_topm : ndarray (k, p) or None
        Per column the ``k = min(m, n_rows)`` largest squares, descending; kept only when
        ``m * p`` is small enough.
    """

    m: int
    q: int
    n_rows: int
    p: int
    max_row_sq: float
    col_sq: np.ndarray = field(repr=False)
    max_entry_sq: float | None = None
    row_topq: np.ndarray | None = field(default=None, repr=False)
    col_topm: np.ndarray | None = field(default=None, repr=False)


def chunk_lambda_stats(A, m, q, *, max_col_top=DEFAULT_MAX_COL_TOP):
    """Statistics of one chunk of rows for ``Lambda_{q,m}``.

    Merge the statistics of all chunks with :func:`combine_lambda_stats`, then call
    :func:`lambda_from_stats`.

    Parameters
    ----------
    A : array_like (n_rows, p)
        A chunk of rows (computed in float64).
    m, q : int
        Dual and primal coordinates sampled per iteration.
    max_col_top : int
        Keep the per-column top-``m`` squares only when ``m * p <= max_col_top``.

    Returns
    -------
    LambdaStats

    Examples
    --------
    >>> import numpy as np
    >>> s = chunk_lambda_stats(np.array([[1.0, -2.0], [3.0, 0.0]]), m=1, q=1)
    >>> s.max_row_sq, s.col_sq.tolist(), s.max_entry_sq, s.row_topq.tolist()
    (9.0, [10.0, 4.0], 9.0, [9.0])
    """
    A = np.asarray(A)
    if A.ndim != 2:
        raise ValidationError(f"A must be 2-D (n_rows, p); got shape {A.shape}")
    n_rows, p = A.shape
    q = _as_int("q", q, 1, p)
    m = _as_int("m", m, 1)
    with np.errstate(over="ignore"):     # squares that overflow: the error below
        S = np.square(A, dtype=np.float64)
    if not np.all(np.isfinite(S)):
        raise ValidationError("A holds non-finite values (NaN or inf, or squares that "
                              "overflow); clean the data before computing Lambda")
    k = min(m, n_rows)
    if n_rows == 0:
        return LambdaStats(m, q, 0, p, 0.0, np.zeros(p), 0.0, np.zeros(0),
                           np.zeros((0, p)) if m * p <= max_col_top else None)
    row_sq = S.sum(axis=1)
    if q == p:
        topq = row_sq
    else:
        topq = row_top_sums(np.ascontiguousarray(S), q)
    row_topq = np.sort(topq)[::-1][:k].copy()
    col_topm = None
    if m * p <= max_col_top:
        if k == 1:    # the column maxima: one pass, no partition
            col_topm = S.max(axis=0)[None, :]
        else:
            part = S if k == n_rows else np.partition(S, n_rows - k, axis=0)[n_rows - k:]
            col_topm = np.sort(part, axis=0)[::-1].copy()
    return LambdaStats(m, q, n_rows, p, float(row_sq.max()), S.sum(axis=0),
                       float(S.max()), row_topq, col_topm)


def _merge_top(a, b, k):
    """The ``k`` largest along axis 0 (descending) of two descending arrays."""
    if a is None or b is None:
        return None
    return np.sort(np.concatenate([a, b], axis=0), axis=0)[::-1][:k].copy()


def combine_lambda_stats(*stats):
    """Merge :class:`LambdaStats` of disjoint chunks of rows (associative and commutative).

    Parameters
    ----------
    *stats : LambdaStats or iterables of them
        Statistics with the same ``m``, ``q`` and ``p``.

    Returns
    -------
    LambdaStats
        The statistics of all the rows together; a field missing in one input is missing
        in the result.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.arange(12.0).reshape(4, 3)
    >>> s = combine_lambda_stats(chunk_lambda_stats(A[:1], 2, 2), chunk_lambda_stats(A[1:], 2, 2))
    >>> s.n_rows, s.row_topq.tolist() == chunk_lambda_stats(A, 2, 2).row_topq.tolist()
    (4, True)
    """
    flat: list[LambdaStats] = []
    for s in stats:
        if isinstance(s, LambdaStats):
            flat.append(s)
        else:
            flat.extend(s)
    if not flat:
        raise ValidationError("combine_lambda_stats needs at least one LambdaStats")
    out = flat[0]
    for s in flat[1:]:
        if (s.m, s.q, s.p) != (out.m, out.q, out.p):
            raise ValidationError(f"cannot merge statistics gathered for (m, q, p) = "
                                  f"{(s.m, s.q, s.p)} with {(out.m, out.q, out.p)}; gather "
                                  "every chunk with the same m and q")
        n_rows = out.n_rows + s.n_rows
        k = min(out.m, n_rows)
        max_entry = (None if out.max_entry_sq is None or s.max_entry_sq is None
                     else max(out.max_entry_sq, s.max_entry_sq))
        out = LambdaStats(out.m, out.q, n_rows, out.p, max(out.max_row_sq, s.max_row_sq),
                          out.col_sq + s.col_sq, max_entry,
                          _merge_top(out.row_topq, s.row_topq, k),
                          _merge_top(out.col_topm, s.col_topm, k))
    return out


def factorized_chunk_lambda_stats(U, V, m, q, *, entries=True, tile_rows=None,
                                  max_col_top=DEFAULT_MAX_COL_TOP):
    """:func:`chunk_lambda_stats` for a chunk of rows ``A = U V`` without forming ``A`` at once.

    ``||a_i||^2 = U_i (V V^T) U_i^T`` and ``||A^j||^2 = V^j^T (U^T U) V^j`` cost
    ``O(n d^2 + p d^2)``.  With ``entries=True`` the entry statistics (``max A_ij^2``,
    per-row top-``q``, per-column top-``m``) are computed on row tiles ``U_tile V``
    (``O(n p d)`` time, ``O(tile p)`` memory).

    Parameters
    ----------
    U : array_like (n_rows, d)
    V : array_like (d, p)
    m, q : int
    entries : bool
        Form the entries tile by tile (needed by the exact modes other than ``(p, 1)`` and
        ``(1, n)``/``(p, n)``, and by the tighter bounds).
    tile_rows : int, optional
        Rows per tile (default: about 8 MiB of entries).
    max_col_top : int
        As :func:`chunk_lambda_stats`.

    Returns
    -------
    LambdaStats

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0); U = rng.normal(size=(5, 2)); V = rng.normal(size=(2, 4))
    >>> a = factorized_chunk_lambda_stats(U, V, 2, 3, entries=False)
    >>> bool(np.isclose(a.max_row_sq, chunk_lambda_stats(U @ V, 2, 3).max_row_sq))
    True
    """
    U = np.asarray(U, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    if U.ndim != 2 or V.ndim != 2 or U.shape[1] != V.shape[0]:
        raise ValidationError(f"U must be (n_rows, d) and V (d, p); got {U.shape} and {V.shape}")
    n_rows, p = U.shape[0], V.shape[1]
    q = _as_int("q", q, 1, p)
    m = _as_int("m", m, 1)
    if entries:
        if tile_rows is None:
            tile_rows = max(1, (8 << 20) // (8 * max(p, 1)))
        parts = [chunk_lambda_stats(U[s:s + tile_rows] @ V, m, q, max_col_top=max_col_top)
                 for s in range(0, max(n_rows, 1), tile_rows)]
        return combine_lambda_stats(parts)
    row_sq = np.einsum("ir,ir->i", U @ (V @ V.T), U) if n_rows else np.zeros(0)
    col_sq = np.einsum("rj,rj->j", (U.T @ U) @ V, V)
    row_sq = np.maximum(row_sq, 0.0)
    col_sq = np.maximum(col_sq, 0.0)
    k = min(m, n_rows)
    row_topq = np.sort(row_sq)[::-1][:k].copy() if q == p else None
    return LambdaStats(m, q, n_rows, p, float(row_sq.max()) if n_rows else 0.0, col_sq,
                       None, row_topq, None)


def _exact_lambda(st, n, spectral_norm_sq):
    """``Lambda_{q,m}`` when the statistics determine it, else None."""
    m, q, p = st.m, st.q, st.p
    if m == n and q == p and spectral_norm_sq is not None:
        return spectral_norm_sq
    if m == 1 and st.row_topq is not None:
        return float(st.row_topq[0]) if len(st.row_topq) else 0.0
    if m == 1 and q == p:
        return st.max_row_sq
    if q == 1:
        if m == n:
            return float(st.col_sq.max()) if p else 0.0
        if m == 1 and st.max_entry_sq is not None:
            return st.max_entry_sq
        if st.col_topm is not None:
            return float(st.col_topm.sum(axis=0).max()) if p else 0.0
    return None


def _upper_bounds(st, n, spectral_norm_sq):
    m, q = st.m, st.q
    bounds = {"frobenius": float(st.col_sq.sum())}
    if st.max_entry_sq is not None:
        bounds["m q max_ij A_ij^2"] = m * q * st.max_entry_sq
    bounds["sum of the q largest column norms^2"] = float(np.sort(st.col_sq)[::-1][:q].sum())
    if q == st.p:
        bounds["m max_i ||a_i||^2"] = m * st.max_row_sq
    if st.row_topq is not None:
        bounds["sum over the m best rows of their q largest squares"] = float(st.row_topq.sum())
    if st.col_topm is not None:
        colsums = st.col_topm.sum(axis=0)
        bounds["sum over the q best columns of their m largest squares"] = float(
            np.sort(colsums)[::-1][:q].sum())
    if spectral_norm_sq is not None:
        bounds["||A||_2^2"] = float(spectral_norm_sq)
    exact = _exact_lambda(st, n, spectral_norm_sq)
    if exact is not None:
        bounds["exact"] = exact
    return bounds


def lambda_from_stats(stats, Lambda="upper_bound", *, spectral_norm_sq=None):
    """``Lambda`` (an upper bound of ``Lambda_{q,m}``, or the heuristic) from merged statistics.

    Parameters
    ----------
    stats : LambdaStats
        Statistics of **all** rows (``n = stats.n_rows``).
    Lambda : {"exact", "upper_bound", "heuristic"} or float
        * ``"exact"``: ``Lambda_{q,m}`` itself for the tractable cases of
          ``docs/specs/dspdc.md`` §1.4: ``m = 1`` (sum of the ``q`` largest squares of the best
          row; ``(p, 1)`` is ``R^2 = max_i ||a_i||^2``), ``q = 1`` (the ``m`` largest squares
          of the best column; ``(1, n)`` is ``max_j ||A^j||^2``; ``(1, 1)`` is
          ``max A_ij^2``) and ``(p, n)`` (``||A||_2^2``, pass ``spectral_norm_sq``);
          raises ``ValidationError`` otherwise.
        * ``"upper_bound"``: the smallest of the valid bounds the statistics allow:
          ``||A||_F^2``, ``m q max A_ij^2``, the sum of the ``q`` largest column norms,
          ``m R^2`` (when ``q = p``), the sum over the ``m`` best rows of their ``q``
          largest squares, the sum over the ``q`` best columns of their ``m`` largest
          squares, ``||A||_2^2`` when given, and the exact value when tractable.  Each is
          ``>= Lambda_{q,m}`` (``||A_I^J||_2^2 <= ||A_I^J||_F^2``); they are at least as
          tight as the bounds of ``docs/specs/dspdc.md`` §1.4,
          ``m max_i max_J ||A_i^J||^2`` and ``q max_j max_I ||A_I^j||^2``.
        * ``"heuristic"``: ``m q R^2 / p`` (the paper's suggestion read with
          ``R = max_i ||a_i||``); **not** guaranteed ``>= Lambda_{q,m}``.
        * a positive float: returned as is.
    spectral_norm_sq : float, optional
        ``||A||_2^2`` (e.g. from :func:`spectral_norm_sq`).

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> st = chunk_lambda_stats(np.array([[1.0, 2.0], [0.0, 1.0], [3.0, 0.0]]), m=1, q=2)
    >>> lambda_from_stats(st, "exact"), lambda_from_stats(st, "heuristic")
    (9.0, 9.0)
    """
    if not isinstance(stats, LambdaStats):
        raise ValidationError(f"stats must be a LambdaStats; got {type(stats).__name__}")
    n = stats.n_rows
    if stats.m > n:
        raise ValidationError(f"m={stats.m} exceeds the number of rows n={n}")
    if spectral_norm_sq is not None:
        spectral_norm_sq = _positive("spectral_norm_sq", spectral_norm_sq, allow_zero=True)
    if isinstance(Lambda, str):
        if Lambda == "exact":
            value = _exact_lambda(stats, n, spectral_norm_sq)
            if value is None:
                raise ValidationError(
                    f"Lambda='exact' is tractable only for m = 1, q = 1 or (q, m) = (p, n) "
                    f"(with spectral_norm_sq, and entry statistics for m = 1 with q < p or "
                    f"q = 1 with m < n); got (q, m) = ({stats.q}, {stats.m}) with p = "
                    f"{stats.p}, n = {n}; use Lambda='upper_bound' or pass a number")
            return float(value)
        if Lambda == "upper_bound":
            # the few named bounds of the merged statistics (scalars), no data
            return float(min(_upper_bounds(stats, n, spectral_norm_sq).values()))
        if Lambda == "heuristic":
            return stats.m * stats.q * stats.max_row_sq / stats.p
        raise ValidationError(f"Lambda must be 'exact', 'upper_bound', 'heuristic' or a "
                              f"positive number; got {Lambda!r}")
    return _positive("Lambda", Lambda)


def power_iteration_sq(matvec: Callable, rmatvec: Callable, p, *, max_iter=1000, rtol=1e-12,
                       seed=0):
    """``||A||_2^2`` by power iteration on ``A^T A`` given ``x -> A x`` and ``r -> A^T r``.

    The estimate ``||A x||^2`` (``||x|| = 1``) increases towards ``||A||_2^2`` from below;
    iteration stops when its relative change is below ``rtol`` or after ``max_iter`` steps.
    ``matvec`` may stream over chunks of rows.

    Parameters
    ----------
    matvec, rmatvec : callable
    p : int
        Number of columns.
    max_iter : int
    rtol : float
    seed : int
        Seed of the random start vector.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> A = np.diag([3.0, 1.0])
    >>> round(power_iteration_sq(lambda x: A @ x, lambda r: A.T @ r, 2), 10)
    9.0
    """
    x = np.random.default_rng(seed).normal(size=int(p))
    nrm = np.linalg.norm(x)
    if nrm == 0.0:
        return 0.0
    x /= nrm
    est = 0.0
    for _ in range(int(max_iter)):
        Ax = np.asarray(matvec(x), dtype=np.float64)
        new = float(Ax @ Ax)
        g = np.asarray(rmatvec(Ax), dtype=np.float64)
        gn = np.linalg.norm(g)
        if gn == 0.0:
            return new
        x = g / gn
        if abs(new - est) <= rtol * new:
            return new
        est = new
    return est


def spectral_norm_sq(A, **kwargs):
    """``||A||_2^2`` of an in-memory matrix by :func:`power_iteration_sq`.

    Parameters
    ----------
    A : array_like (n, p)
    **kwargs
        Passed to :func:`power_iteration_sq`.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> round(spectral_norm_sq(np.array([[1.0, 1.0], [1.0, 1.0]])), 10)
    4.0
    """
    A = np.asarray(A, dtype=np.float64)
    return power_iteration_sq(lambda x: A @ x, lambda r: A.T @ r, A.shape[1], **kwargs)


def spectral_norm_sq_factorized(U, V, **kwargs):
    """``||U V||_2^2`` by power iteration without forming ``U V``.

    Parameters
    ----------
    U : array_like (n, d)
    V : array_like (d, p)
    **kwargs
        Passed to :func:`power_iteration_sq`.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> round(spectral_norm_sq_factorized(np.ones((3, 1)), np.ones((1, 2))), 10)   # 3 * 2
    6.0
    """
    U = np.asarray(U, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    return power_iteration_sq(lambda x: U @ (V @ x), lambda r: V.T @ (U.T @ r), V.shape[1],
                              **kwargs)


def lambda_value(A, m, q, Lambda="upper_bound", *, power_iteration=False, **kwargs):
    """``Lambda`` of an in-memory matrix: :func:`chunk_lambda_stats` + :func:`lambda_from_stats`.

    Parameters
    ----------
    A : array_like (n, p)
    m, q : int
    Lambda : str or float
        As :func:`lambda_from_stats`.
    power_iteration : bool
        Compute ``||A||_2^2`` (used by ``"upper_bound"``; always computed for the exact
        ``(p, n)`` case).
    **kwargs
        Passed to :func:`chunk_lambda_stats`.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> round(lambda_value(np.eye(3), m=3, q=3, Lambda="exact"), 10)      # ||I||_2^2
    1.0
    """
    st = chunk_lambda_stats(A, m, q, **kwargs)
    spec = None
    if power_iteration or (Lambda == "exact" and st.m == st.n_rows and st.q == st.p):
        spec = spectral_norm_sq(A)
    return lambda_from_stats(st, Lambda, spectral_norm_sq=spec)


def lambda_value_factorized(U, V, m, q, Lambda="upper_bound", *, entries=True,
                            power_iteration=False, **kwargs):
    """:func:`lambda_value` for ``A = U V`` (see :func:`factorized_chunk_lambda_stats`).

    Parameters
    ----------
    U : array_like (n, d)
    V : array_like (d, p)
    m, q : int
    Lambda : str or float
    entries : bool
        Form the entries tile by tile (``O(n p d)``) for the entry statistics.
    power_iteration : bool
    **kwargs
        Passed to :func:`factorized_chunk_lambda_stats`.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> lambda_value_factorized(np.ones((3, 1)), np.ones((1, 2)), 1, 2, "exact", entries=False)
    2.0
    """
    st = factorized_chunk_lambda_stats(U, V, m, q, entries=entries, **kwargs)
    spec = None
    if power_iteration or (Lambda == "exact" and st.m == st.n_rows and st.q == st.p):
        spec = spectral_norm_sq_factorized(U, V)
    return lambda_from_stats(st, Lambda, spectral_norm_sq=spec)
