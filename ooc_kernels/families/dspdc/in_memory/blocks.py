"""Block-coordinate DSPDC, (26)-(29) of Yu, Lin, Yang (``docs/specs/dspdc.md`` §4.1), in memory.

The saddle problem over ``p`` primal blocks ``x_j`` and ``n`` dual blocks ``y_i``::

    min_x max_y  sum_j g_j(x_j) + (1/n) y^T A x - (1/n) sum_i phi_i*(y_i)

with ``A`` an ``(N, P)`` array whose rows are partitioned into the dual blocks and whose
columns into the primal blocks.  Every iteration samples ``m`` dual blocks ``I`` and ``q``
primal blocks ``J`` without replacement (Robert Floyd's ``O(m)`` sampler of
:func:`ooc_kernels.families.dspdc.kernels.sample_without_replacement_ref`) and runs, in this order,

1. (28) for ``i in I``: ``y_i <- prox_{(sigma/n) phi_i*}(y_i + (sigma/n) A_i xbar)``;
2. (11) ``ybar = y_old + (n/m)(y_new - y_old)``;
3. (29) for ``j in J``: ``x_j <- prox_{tau g_j}(x_j - (tau/n) (A^j)^T ybar)``;
4. (13) ``xbar = x_old + (theta + 1)(x_new - x_old)`` (so ``xbar = x`` off ``J``).

``n`` and ``p`` count **blocks** (``1/n`` inside both steps, the ``n/m`` extrapolation and
the step sizes), and ``theta, tau, sigma`` come from
:func:`ooc_kernels.families.dspdc.params.dspdc_parameters` with ``lam = min_j`` of the
blocks' strong-convexity moduli, ``gamma`` the loss's, and the block scale constant
``Lambda >= Lambda_{q,m} = max_{|I| = m, |J| = q} ||A_I^J||_2^2`` (27) of
:func:`block_lambda`.  As in ``docs/specs/dspdc.md`` §2.4, one product is maintained:
``A^T y`` when ``n/m >= p/q`` (then ``A_I xbar`` is computed directly), else ``A x``.

The regularizer and loss objects are those of :mod:`ooc_kernels.families.dspdc.in_memory.block_prox`.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dspdc.in_memory.block_prox import L2Block, SeparableLoss
>>> from ooc_kernels.families.dspdc.in_memory.blocks import block_dspdc
>>> rng = np.random.default_rng(0)
>>> A = rng.normal(size=(30, 6)); b = np.sign(A @ np.ones(6))
>>> res = block_dspdc(A, SeparableLoss("smoothed_hinge", b), L2Block(0.1),
...                   col_blocks=[2, 2, 2], m=3, q=1, tol=1e-10, max_iter=20000, seed=0)
>>> res.converged, res.gap <= 1e-10
(True, True)
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from ooc_kernels.families.dspdc.kernels import sample_without_replacement_ref
from ooc_kernels.exceptions import DivergenceError, ValidationError
from ooc_kernels.families.dspdc.lambda_stats import spectral_norm_sq
from ooc_kernels.families.dspdc.params import DSPDCParameters, dspdc_parameters

__all__ = ["block_partition", "block_norms_sq", "lambda_from_block_norms", "block_lambda",
           "block_objectives", "BlockDSPDCResult", "block_dspdc"]

#: :func:`block_lambda` ``"exact"`` enumerates the block subsets only up to this many pairs.
MAX_EXACT_SUBSETS = 4096


# --------------------------------------------------------------------------------------
# partitions and the block scale constant
# --------------------------------------------------------------------------------------

def block_partition(blocks, total, name="blocks"):
    """The index arrays of a partition of ``range(total)``.

    Parameters
    ----------
    blocks : None, sequence of int or sequence of array_like
        ``None``: one block per index.  A sequence of ints: block sizes, consecutive
        (they must add up to ``total``).  A sequence of index arrays: every index of
        ``range(total)`` exactly once.
    total : int
    name : str
        Used in error messages.

    Returns
    -------
    list of ndarray (int64)

    Examples
    --------
    >>> [b.tolist() for b in block_partition([2, 1], 3)]
    [[0, 1], [2]]
    >>> [b.tolist() for b in block_partition([[2, 0], [1]], 3)]
    [[2, 0], [1]]
    """
    total = int(total)
    if blocks is None:
        return [np.array([k], dtype=np.int64) for k in range(total)]
    blocks = list(blocks)
    if not blocks:
        raise ValidationError(f"{name} must hold at least one block; got an empty sequence")
    if all(np.ndim(b) == 0 for b in blocks):
        sizes = []
        for s in blocks:
            if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1:
                raise ValidationError(f"{name}: block sizes must be integers >= 1; got {s!r}")
            sizes.append(int(s))
        if sum(sizes) != total:
            raise ValidationError(f"{name}: block sizes add up to {sum(sizes)}, not to the "
                                  f"{total} columns/rows of A; fix the sizes")
        ends = np.cumsum(sizes)
        return [np.arange(e - s, e, dtype=np.int64) for s, e in zip(sizes, ends)]
    out = [np.asarray(b, dtype=np.int64).ravel() for b in blocks]
    if any(b.size == 0 for b in out):
        raise ValidationError(f"{name}: every block needs at least one index")
    seen = np.concatenate(out)
    if seen.size != total or not np.array_equal(np.sort(seen), np.arange(total)):
        raise ValidationError(f"{name} must contain every index of range({total}) exactly once "
                              f"(a partition); got {seen.size} indices")
    return out


def _unit(blocks):
    return all(b.size == 1 for b in blocks)


def block_norms_sq(A, row_blocks, col_blocks):
    """``||A_i^j||_2^2`` for every dual block ``i`` and primal block ``j``.

    Parameters
    ----------
    A : ndarray (N, P)
    row_blocks, col_blocks : list of ndarray
        Partitions (:func:`block_partition`).

    Returns
    -------
    ndarray (n, p)

    Examples
    --------
    >>> A = np.array([[3.0, 4.0], [0.0, 1.0]])
    >>> block_norms_sq(A, block_partition(None, 2), block_partition([2], 2)).tolist()
    [[25.0], [1.0]]
    """
    A = np.asarray(A, dtype=np.float64)
    out = np.empty((len(row_blocks), len(col_blocks)))
    sq = A * A
    if _unit(row_blocks) or _unit(col_blocks):  # vectors: the spectral norm is the 2-norm
        rows = np.concatenate(row_blocks)
        for j, cols in enumerate(col_blocks):
            per_row = sq[:, cols].sum(axis=1)
            if _unit(row_blocks):
                out[:, j] = per_row[rows]
            else:
                out[:, j] = [per_row[r].sum() for r in row_blocks]
        return out
    for i, r in enumerate(row_blocks):
        for j, c in enumerate(col_blocks):
            out[i, j] = np.linalg.norm(A[np.ix_(r, c)], 2) ** 2
    return out


def _top_sum(values, k, axis):
    """Sum of the ``k`` largest values along ``axis``."""
    k = min(k, values.shape[axis])
    part = -np.partition(-values, k - 1, axis=axis)
    return np.take(part, np.arange(k), axis=axis).sum(axis=axis)


def lambda_from_block_norms(norms, m, q, Lambda="upper_bound", *, unit_rows=False,
                            unit_cols=False, spectral_norm_sq=None, max_row_sq=None):
    """The block ``Lambda`` from the block norms ``||A_i^j||_2^2`` (and ``||A||_2^2``).

    Parameters
    ----------
    norms : ndarray (n, p)
        :func:`block_norms_sq`.
    m, q : int
        Dual and primal blocks sampled per iteration.
    Lambda : {"upper_bound", "exact", "heuristic"} or float
        * ``"upper_bound"``: the smallest of (a) the sum over the ``m`` best dual blocks of
          their ``q`` largest block norms, (b) the sum over the ``q`` best primal blocks of
          their ``m`` largest block norms, (c) ``||A||_2^2`` when given, and (d) the exact
          value where it is cheap (below).  (a) and (b) are ``>= Lambda_{q,m}`` because
          ``||[B_1; B_2]||_2^2 <= ||B_1||_2^2 + ||B_2||_2^2`` and likewise side by side; both
          are at most the sum of the ``m q`` largest block norms.
        * ``"exact"``: ``(q, m) = (1, 1)``: the largest block norm; ``m = 1`` with unit dual
          blocks: the best row's ``q`` largest; ``q = 1`` with unit primal blocks: the best
          column's ``m`` largest; ``(q, m) = (p, n)``: ``||A||_2^2``.  Otherwise
          ``ValidationError`` (see :func:`block_lambda`, which enumerates small cases).
        * ``"heuristic"``: ``m q R^2 / p`` with ``R^2 = max_i ||A_i||_2^2`` (pass
          ``max_row_sq``; default: the row sums of ``norms``, an upper bound of it); not
          guaranteed ``>= Lambda_{q,m}``.
        * a positive float: returned as is.
    unit_rows, unit_cols : bool
        Whether every dual (primal) block has size 1.
    spectral_norm_sq : float, optional
        ``||A||_2^2``.
    max_row_sq : float, optional
        ``max_i ||A_i||_2^2`` for the heuristic.

    Returns
    -------
    float

    Examples
    --------
    >>> norms = np.array([[1.0, 4.0], [2.0, 0.0]])
    >>> lambda_from_block_norms(norms, 1, 1, "exact")
    4.0
    >>> lambda_from_block_norms(norms, 2, 1)        # rows: 4 + 2; columns: max(1 + 2, 4 + 0)
    4.0
    """
    norms = np.asarray(norms, dtype=np.float64)
    n, p = norms.shape
    if not (1 <= m <= n and 1 <= q <= p):
        raise ValidationError(f"need 1 <= m <= n = {n} dual blocks and 1 <= q <= p = {p} "
                              f"primal blocks; got m={m}, q={q}")
    if not isinstance(Lambda, str):
        try:
            value = float(Lambda)
        except (TypeError, ValueError):
            value = math.nan
        if not (math.isfinite(value) and value > 0.0):
            raise ValidationError(f"Lambda must be 'upper_bound', 'exact', 'heuristic' or a "
                                  f"positive number; got {Lambda!r}")
        return value
    exact = None
    if m == 1 and q == 1:
        exact = float(norms.max())
    elif m == 1 and unit_rows:
        exact = float(_top_sum(norms, q, axis=1).max())
    elif q == 1 and unit_cols:
        exact = float(_top_sum(norms, m, axis=0).max())
    elif m == n and q == p and spectral_norm_sq is not None:
        exact = float(spectral_norm_sq)
    if Lambda == "exact":
        if exact is None:
            raise ValidationError(
                f"Lambda='exact' is cheap only for (q, m) = (1, 1), m = 1 with unit dual "
                f"blocks, q = 1 with unit primal blocks or (q, m) = (p, n); got (q, m) = "
                f"({q}, {m}) with p = {p}, n = {n}; use Lambda='upper_bound' or a number")
        return exact
    if Lambda == "upper_bound":
        bounds = [float(np.sort(_top_sum(norms, q, axis=1))[::-1][:m].sum()),
                  float(np.sort(_top_sum(norms, m, axis=0))[::-1][:q].sum())]
        if spectral_norm_sq is not None:
            bounds.append(float(spectral_norm_sq))
        if exact is not None:
            bounds.append(exact)
        return min(bounds)
    if Lambda == "heuristic":
        r2 = float(norms.sum(axis=1).max()) if max_row_sq is None else float(max_row_sq)
        return m * q * r2 / p
    raise ValidationError(f"Lambda must be 'upper_bound', 'exact', 'heuristic' or a positive "
                          f"number; got {Lambda!r}")


def block_lambda(A, m, q, Lambda="upper_bound", *, row_blocks=None, col_blocks=None,
                 power_iteration=True, max_subsets=MAX_EXACT_SUBSETS):
    """The block scale constant ``Lambda`` (27) of an in-memory ``A``.

    Parameters
    ----------
    A : array_like (N, P)
    m, q : int
    Lambda : {"upper_bound", "exact", "heuristic"} or float
        As :func:`lambda_from_block_norms`; ``"exact"`` also enumerates all pairs of block
        subsets (``||A_I^J||_2^2`` by SVD) when there are at most ``max_subsets`` of them.
    row_blocks, col_blocks : optional
        As :func:`block_partition`.
    power_iteration : bool
        Include ``||A||_2^2`` (by
        :func:`ooc_kernels.families.dspdc.lambda_stats.spectral_norm_sq`, which converges from
        below to a relative ``1e-12``) among the upper bounds.
    max_subsets : int

    Returns
    -------
    float

    Examples
    --------
    >>> A = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])
    >>> round(block_lambda(A, 2, 1, "exact", col_blocks=[2, 1]), 12)   # ||A^1||_2^2 = 9
    9.0
    """
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2:
        raise ValidationError(f"A must be a 2-d array; got shape {A.shape}")
    rb = block_partition(row_blocks, A.shape[0], "row_blocks")
    cb = block_partition(col_blocks, A.shape[1], "col_blocks")
    norms = block_norms_sq(A, rb, cb)
    n, p = norms.shape
    spec = None
    if power_iteration or (m == n and q == p):
        spec = spectral_norm_sq(A)
    if Lambda == "exact":
        try:
            return lambda_from_block_norms(norms, m, q, "exact", unit_rows=_unit(rb),
                                           unit_cols=_unit(cb), spectral_norm_sq=spec)
        except ValidationError:
            count = math.comb(n, m) * math.comb(p, q)
            if count > max_subsets:
                raise ValidationError(
                    f"Lambda='exact' would enumerate {count} block subsets (more than "
                    f"max_subsets={max_subsets}); use Lambda='upper_bound'") from None
        best = 0.0
        for I in itertools.combinations(range(n), m):
            rows = np.concatenate([rb[i] for i in I])
            for J in itertools.combinations(range(p), q):
                cols = np.concatenate([cb[j] for j in J])
                best = max(best, float(np.linalg.norm(A[np.ix_(rows, cols)], 2) ** 2))
        return best
    max_row = None
    if Lambda == "heuristic":
        max_row = max(float(np.linalg.norm(A[r], 2) ** 2) for r in rb)
    return lambda_from_block_norms(norms, m, q, Lambda, unit_rows=_unit(rb),
                                   unit_cols=_unit(cb), spectral_norm_sq=spec,
                                   max_row_sq=max_row)


# --------------------------------------------------------------------------------------
# objectives
# --------------------------------------------------------------------------------------

def _regularizer_list(regularizers, p):
    regs = list(regularizers) if isinstance(regularizers, (list, tuple)) else [regularizers] * p
    if len(regs) != p:
        raise ValidationError(f"need one regularizer per primal block: {p} blocks, got "
                              f"{len(regs)} regularizers (or pass one for all blocks)")
    for r in regs:
        for attr in ("prox", "value", "conjugate"):
            if not callable(getattr(r, attr, None)):
                raise ValidationError(f"regularizer {r!r} has no method {attr}(); see "
                                      "ooc_kernels.families.dspdc.in_memory.block_prox.L2Block")
        mod = getattr(r, "strong_convexity", None)
        if not (isinstance(mod, (int, float)) and math.isfinite(mod) and mod > 0):
            raise ValidationError(f"regularizer {r!r} needs strong_convexity > 0; got {mod!r}")
    return regs


def _check_loss(loss):
    for attr in ("prox_conjugate", "value", "conjugate"):
        if not callable(getattr(loss, attr, None)):
            raise ValidationError(f"loss {loss!r} has no method {attr}(); see "
                                  "ooc_kernels.families.dspdc.in_memory.block_prox.SeparableLoss")
    gamma = getattr(loss, "gamma", None)
    if not (isinstance(gamma, (int, float)) and math.isfinite(gamma) and gamma > 0):
        raise ValidationError(f"loss {loss!r} needs gamma > 0; got {gamma!r}")


def block_objectives(A, x, y, loss, regularizers, *, row_blocks=None, col_blocks=None):
    """Primal ``P(x)`` and dual ``D(y)`` of the block problem (``n`` = number of dual blocks).

    ``P(x) = (1/n) sum_i phi_i(A_i x) + sum_j g_j(x_j)`` and
    ``D(y) = -sum_j g_j*(-(A^j)^T y / n) - (1/n) sum_i phi_i*(y_i)``; ``P - D >= 0``.

    Parameters
    ----------
    A : array_like (N, P)
    x : array_like (P,)
    y : array_like (N,)
    loss, regularizers
        As :func:`block_dspdc`.
    row_blocks, col_blocks : optional
        As :func:`block_partition`.

    Returns
    -------
    primal, dual : float

    Examples
    --------
    >>> from ooc_kernels.families.dspdc.in_memory.block_prox import L2Block, SeparableLoss
    >>> block_objectives(np.eye(2), np.zeros(2), np.zeros(2), SeparableLoss("squared", [1, 1]),
    ...                  L2Block(1.0))
    (0.5, 0.0)
    """
    A = np.asarray(A, dtype=np.float64)
    rb = block_partition(row_blocks, A.shape[0], "row_blocks")
    cb = block_partition(col_blocks, A.shape[1], "col_blocks")
    regs = _regularizer_list(regularizers, len(cb))
    return _objectives(A, np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64),
                       loss, regs, len(rb), cb)


def _objectives(A, x, y, loss, regs, n, cb):
    primal = loss.value(A @ x) / n + sum(r.value(x[c]) for r, c in zip(regs, cb))
    aty = A.T @ y
    dual = -sum(r.conjugate(-aty[c] / n) for r, c in zip(regs, cb)) - loss.conjugate(y) / n
    return float(primal) + 0.0, float(dual) + 0.0  # + 0.0: no -0.0


# --------------------------------------------------------------------------------------
# the solver
# --------------------------------------------------------------------------------------

@dataclass
class BlockDSPDCResult:
    """What :func:`block_dspdc` returns.

    Attributes
    ----------
    x, y : ndarray
        The last iterates (not averages).
    primal, dual, gap : float
        At the last check (``gap = primal - dual``).
    converged : bool
        ``gap <= tol`` at a check.
    stop_reason : str
        ``"tol"``, ``"max_iter"`` or ``"max_time"``.
    n_iter : int
    history : list of dict
        One entry per check: ``iteration``, ``passes`` (``iteration * m / n``), ``time``
        (seconds of iterations, the checks excluded), ``primal``, ``dual``, ``gap``.
    params : DSPDCParameters
        ``theta, tau, sigma`` and the rates (``n, p`` count blocks).
    """

    x: np.ndarray
    y: np.ndarray
    primal: float
    dual: float
    gap: float
    converged: bool
    stop_reason: str
    n_iter: int
    history: list = field(default_factory=list)
    params: DSPDCParameters | None = None


def _check_start(v, size, name):
    if v is None:
        return np.zeros(size)
    v = np.array(v, dtype=np.float64).ravel()
    if v.size != size or not np.all(np.isfinite(v)):
        raise ValidationError(f"{name} must be {size} finite values; got {v.size}")
    return v


def block_dspdc(A, loss, regularizers, *, row_blocks=None, col_blocks=None, m=1, q=1,
                Lambda="upper_bound", mode="gap", theta=None, tau=None, sigma=None, x0=None,
                y0=None, max_iter=100_000, tol=1e-8, check_every=None, max_time=None, seed=0,
                callback=None):
    """Block DSPDC (26)-(29) on an in-memory ``A`` (see the module docstring).

    Parameters
    ----------
    A : array_like (N, P)
        Rows: the dual coordinates, columns: the primal coordinates.
    loss : object
        ``gamma``, ``value(z, rows)``, ``conjugate(beta, rows)``,
        ``prox_conjugate(v, eta, rows)`` over dual coordinates (e.g.
        :class:`~ooc_kernels.families.dspdc.in_memory.block_prox.SeparableLoss`); ``rows`` are the coordinate
        indices of the sampled blocks, concatenated.
    regularizers : object or list of objects
        One per primal block (or one for all): ``strong_convexity``, ``value(x)``,
        ``prox(v, tau)``, ``conjugate(w)`` on the block's values (e.g.
        :class:`~ooc_kernels.families.dspdc.in_memory.block_prox.PSDBlock`).
    row_blocks, col_blocks : optional
        Dual and primal partitions (:func:`block_partition`); default one block per
        coordinate.
    m, q : int
        Dual and primal **blocks** sampled per iteration.
    Lambda : str or float
        As :func:`block_lambda` (``"upper_bound"``: a safe bound, the theorems apply).
    mode : {"gap", "distance"}
        ``theta`` of Theorem 2 (18) or Theorem 1 (14).
    theta, tau, sigma : float, optional
        Manual overrides.
    x0, y0 : array_like, optional
        Start (default zeros; ``y0`` must lie in the domain of ``phi*``).
    max_iter : int
    tol : float
        Stop when the duality gap is at most ``tol`` at a check.
    check_every : int, optional
        Iterations between gap checks (default ``10 ceil(max(n/m, p/q))``: a check costs
        a full pass over ``A`` and ``p`` block conjugates, about ``max(n/m, p/q)``
        iterations' work).
    max_time : float, optional
        Seconds; checked with the gap.
    seed : int or numpy.random.Generator
    callback : callable, optional
        ``callback(t, x, y)`` after every iteration (the arrays are the solver's own).

    Returns
    -------
    BlockDSPDCResult

    Examples
    --------
    >>> from ooc_kernels.families.dspdc.in_memory.block_prox import L2Block, SeparableLoss
    >>> A = np.eye(4); b = np.arange(4.0)
    >>> res = block_dspdc(A, SeparableLoss("squared", b), L2Block(0.25), m=4, q=4, tol=1e-12)
    >>> np.round(res.x, 4).tolist()                          # b / (1 + n lam)
    [0.0, 0.5, 1.0, 1.5]
    """
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or not np.all(np.isfinite(A)):
        raise ValidationError(f"A must be a finite 2-d array; got shape {A.shape}")
    rb = block_partition(row_blocks, A.shape[0], "row_blocks")
    cb = block_partition(col_blocks, A.shape[1], "col_blocks")
    n, p = len(rb), len(cb)
    regs = _regularizer_list(regularizers, p)
    _check_loss(loss)
    for name, v, hi in (("m", m, n), ("q", q, p)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= hi:
            raise ValidationError(f"{name} must be an integer in [1, {hi}] (number of blocks); "
                                  f"got {v!r}")
    lam = min(float(r.strong_convexity) for r in regs)
    lam_value = block_lambda(A, m, q, Lambda, row_blocks=rb, col_blocks=cb)
    prm = dspdc_parameters(n, p, m, q, lam_value, lam, float(loss.gamma), mode=mode,
                           theta=theta, tau=tau, sigma=sigma)
    _check_tol(tol)
    if check_every is None:
        check_every = 10 * int(math.ceil(max(n / m, p / q)))
    if isinstance(check_every, bool) or not isinstance(check_every, (int, np.integer)) or \
            check_every < 1:
        raise ValidationError(f"check_every must be an integer >= 1; got {check_every!r}")
    x = _check_start(x0, A.shape[1], "x0")
    y = _check_start(y0, A.shape[0], "y0")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    return _iterate(A, loss, regs, rb, cb, x, y, prm, int(max_iter), float(tol),
                    int(check_every), max_time, rng, callback)


def _check_tol(tol):
    try:
        ok = float(tol) >= 0.0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValidationError(f"tol must be a number >= 0; got {tol!r}")


def _gather(blocks, unit, idx):
    if unit:
        return idx
    return np.concatenate([blocks[k] for k in idx])


def _iterate(A, loss, regs, rb, cb, x, y, prm, max_iter, tol, check_every, max_time, rng,
             callback):
    n, p, m, q = prm.n, prm.p, prm.m, prm.q
    theta, tau, sigma = prm.theta, prm.tau, prm.sigma
    unit_r, unit_c = _unit(rb), _unit(cb)
    if unit_r:
        rb_index = np.concatenate(rb)  # dual block k is coordinate rb_index[k]
    if unit_c:
        cb_index = np.concatenate(cb)
    dual_product = n / m >= p / q  # which running product (docs/specs/dspdc.md §2.4)
    xbar = x.copy()
    prev_cols = np.zeros(0, dtype=np.int64)
    history = []
    iter_time = 0.0
    start = time.perf_counter()

    def resync():
        # the running products from scratch (no drift), with xbar - x on prev_cols
        if dual_product:
            return A.T @ y, None
        w = A @ x
        return w, w + A[:, prev_cols] @ (xbar[prev_cols] - x[prev_cols])

    def check(t):
        primal, dual = _objectives(A, x, y, loss, regs, n, cb)
        gap = primal - dual
        if math.isnan(gap) or not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
            raise DivergenceError(f"block DSPDC diverged at iteration {t}: primal {primal}, "
                                  f"dual {dual} (theta={theta}, tau={tau}, sigma={sigma}); "
                                  "use the theorems' parameters (no overrides)")
        history.append({"iteration": t, "passes": t * m / n, "time": iter_time,
                        "primal": primal, "dual": dual, "gap": gap})
        return gap

    prod, axbar = resync()
    gap = check(0)
    stop, t = ("tol" if gap <= tol else None), 0
    while stop is None and t < max_iter:
        t0 = time.perf_counter()
        u = rng.random(m + q)
        Ib = sample_without_replacement_ref(n, m, u[:m])
        Jb = sample_without_replacement_ref(p, q, u[m:])
        rows = rb_index[Ib] if unit_r else _gather(rb, False, Ib)
        cols = cb_index[Jb] if unit_c else _gather(cb, False, Jb)
        # (28) dual step with the previous xbar
        c = A[rows] @ xbar if dual_product else axbar[rows]
        y_old = y[rows]
        eta = sigma / n
        y_new = loss.prox_conjugate(y_old + eta * c, eta, rows)
        delta = y_new - y_old
        y[rows] = y_new
        # (11) + (29): (A^J)^T ybar with ybar = y_old + (n/m) delta on the sampled rows
        sub = A[np.ix_(rows, cols)]
        if dual_product:
            grad = prod[cols] + (n / m) * (sub.T @ delta)
            prod += A[rows].T @ delta
        else:
            grad = A[:, cols].T @ y + (n / m - 1.0) * (sub.T @ delta)
        v = x[cols] - (tau / n) * grad
        x_new = np.empty_like(v)
        pos = 0
        for j in Jb:
            size = cb[j].size
            x_new[pos:pos + size] = regs[j].prox(v[pos:pos + size], tau)
            pos += size
        # (13): xbar = x on the previous J (reset), x_new + theta (x_new - x_old) on J
        xbar[prev_cols] = x[prev_cols]
        dx = x_new - x[cols]
        x[cols] = x_new
        xbar[cols] = x_new + theta * dx
        if not dual_product:
            adx = A[:, cols] @ dx
            prod += adx
            axbar = prod + theta * adx
        prev_cols = cols
        t += 1
        iter_time += time.perf_counter() - t0
        if callback is not None:
            callback(t, x, y)
        if t % check_every == 0 or t == max_iter:
            gap = check(t)
            prod, axbar = resync()
            if gap <= tol:
                stop = "tol"
            elif max_time is not None and time.perf_counter() - start >= max_time:
                stop = "max_time"
    if history[-1]["iteration"] != t:
        check(t)
    last = history[-1]
    return BlockDSPDCResult(x, y, last["primal"], last["dual"], last["gap"],
                            last["gap"] <= tol, stop or "max_iter", t, history, prm)
