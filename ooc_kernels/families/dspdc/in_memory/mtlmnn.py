"""Multi-task LMNN (35) by DSPDC, Algorithm 3 of Yu, Lin, Yang (``docs/specs/dspdc.md`` §4.3).

Task ``j = 1 .. p`` classifies with the metric ``X_j + X_0`` (``X_0`` shared, all PSD).
With the triplets ``(u, v, w)`` of :func:`build_triplets` (``v`` one of the ``l`` nearest
same-label points of ``u`` in its task, ``w`` the nearest differently-labelled one),
stacked over all tasks (``n`` triplets, ``T(i)`` the task of triplet ``i``),

* ``Z_i = Z_uw - Z_uv`` with ``Z_uv = (z_u - z_v)(z_u - z_v)^T`` (the paper prints
  ``Z_uv - Z_uv``, a typo: with this sign ``<Z_i, X_j + X_0> = d_j^2(u, w) - d_j^2(u, v)``);
* ``C_j = sum over the pairs of task j of Z_uv`` and ``C_0 = sum_j C_j``;
* the saddle problem (35) is the block problem with ``p + 1`` primal blocks,
  ``g_j(X) = lam_j/2 ||X||_F^2 + <C_j, X>/n + indicator(PSD)`` (``j >= 1``),
  ``g_0(X) = lam_0/2 ||X - I||_F^2 + <C_0, X>/n + indicator(PSD)``, the smoothed hinge with
  ``b = 1`` and row ``i`` of ``A`` equal to ``vec(Z_i)`` on blocks ``0`` and ``T(i)``.

Algorithm 3 keeps ``W_j = sum_{T(i) = j} ybar_i Z_i`` and ``W_0 = sum_j W_j`` by the
recursion (38) (``W_j += (n/m) B_j^{t+1} + ((m - n)/m) B_j^t``, ``B`` the sampled dual
changes), updated incrementally over the touched tasks only, and ``Xbar`` lazily (only
the blocks of the last two ``J`` change).  The ``Z_i`` are never formed: a triplet keeps
``a_i = z_u - z_w`` and ``b_i = z_u - z_v``, so ``<Z_i, M> = a_i^T M a_i - b_i^T M b_i``
and ``sum_i c_i Z_i = A^T diag(c) A - B^T diag(c) B`` (``O(d^2)`` per triplet).

The step sizes are those of :func:`ooc_kernels.families.dspdc.params.dspdc_parameters` with
``p + 1`` primal blocks, ``gamma = 1``, ``lam = min_j lam_j`` (the paper does not say which
``lam``; the smallest keeps the theorems valid) and the block ``Lambda`` of
:func:`mtlmnn_lambda`.

Examples
--------
>>> from ooc_kernels.data.matrix_data import multitask_classes
>>> from ooc_kernels.families.dspdc.in_memory.mtlmnn import build_triplets, mtlmnn_dspdc
>>> X, y, task = multitask_classes(2, 30, 4, 2, seed=0)
>>> tr = build_triplets(X / X.std(), y, task, n_neighbors=2)
>>> tr.n, tr.n_tasks
(120, 2)
>>> res = mtlmnn_dspdc(tr, 0.1, 0.1, m=20, q=1, tol=1e-8, seed=0)
>>> res.converged, res.task_metrics.shape
(True, (2, 4, 4))
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels.families.dspdc.kernels import sample_without_replacement_ref
from ooc_kernels.exceptions import DivergenceError, ValidationError
from ooc_kernels.families.dspdc.in_memory.block_prox import PSDBlock, SeparableLoss
from ooc_kernels.families.dspdc.in_memory.blocks import _check_tol, lambda_from_block_norms
from ooc_kernels.families.dspdc.lambda_stats import power_iteration_sq
from ooc_kernels.families.dspdc.params import DSPDCParameters, dspdc_parameters
from ooc_kernels.families.dspdc.solver import _relative_gap

__all__ = ["Triplets", "build_triplets", "mtlmnn_lambda", "mtlmnn_objectives",
           "MTLMNNResult", "mtlmnn_dspdc"]

#: Rows of a task whose distances :func:`build_triplets` computes at once.
_DIST_ROWS = 512


@dataclass(frozen=True, eq=False)
class Triplets:
    """The neighbour sets and outer-product data of multi-task LMNN.

    Attributes
    ----------
    index : ndarray (n, 3) int64
        ``(u, v, w)`` per triplet, row indices of the training data.
    task : ndarray (n,) int64
        ``T(i) - 1``: the task (``0 .. n_tasks - 1``) of each triplet; its primal block is
        ``task + 1`` (block 0 is the shared metric).
    impostor : ndarray (n, d)
        ``a_i = z_u - z_w``.
    target : ndarray (n, d)
        ``b_i = z_u - z_v``.
    C : ndarray (n_tasks, d, d)
        ``C_j = sum over the pairs (u, v) of task j of (z_u - z_v)(z_u - z_v)^T``.
    n_tasks, d : int
    """

    index: np.ndarray
    task: np.ndarray
    impostor: np.ndarray
    target: np.ndarray
    C: np.ndarray
    n_tasks: int
    d: int

    @property
    def n(self):
        """The number of triplets (dual variables)."""
        return int(self.task.size)

    def Z(self, i):
        """``Z_i = a_i a_i^T - b_i b_i^T`` (``d x d``), for inspection and tests.

        Parameters
        ----------
        i : int

        Returns
        -------
        ndarray (d, d)
        """
        a, b = self.impostor[i], self.target[i]
        return np.outer(a, a) - np.outer(b, b)


def _sq_dist(Xt, rows):
    diff = Xt[rows, None, :] - Xt[None, :, :]
    return np.einsum("ijk,ijk->ij", diff, diff)


def build_triplets(X, y, task, n_neighbors=3):
    """The triplets of every task (Euclidean closeness in the input space).

    For each point ``u`` of task ``j``: its targets ``v`` are the ``n_neighbors`` nearest
    other points with the same label in task ``j`` (fewer if the class is smaller), and its
    impostor ``w`` is the nearest point of task ``j`` with another label; each ``(u, v)``
    gives the pair of ``N_j`` and the triplet ``(u, v, w)`` of ``S_j``.  Ties are broken by
    the lower row index.

    Parameters
    ----------
    X : array_like (N, d)
    y : array_like (N,)
        Class labels.
    task : array_like (N,) int
        Task of each row, in ``0 .. n_tasks - 1`` (every task present).
    n_neighbors : int
        ``l`` (the paper's 6.3 uses 3).

    Returns
    -------
    Triplets

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [3.0], [10.0]])
    >>> tr = build_triplets(X, [0, 0, 1, 1], [0, 0, 0, 0], n_neighbors=1)
    >>> tr.index.tolist()                                  # (u, v, w)
    [[0, 1, 2], [1, 0, 2], [2, 3, 1], [3, 2, 1]]
    >>> tr.Z(0).tolist()                                   # 3^2 - 1^2
    [[8.0]]
    """
    # MultiTaskLMNN is an in-memory estimator: X is the caller's (small) training matrix
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or not np.all(np.isfinite(X)):
        raise ValidationError(f"X must be a finite 2-d array; got shape {X.shape}")
    y = np.asarray(y).ravel()
    task = np.asarray(task).ravel()
    if y.size != X.shape[0] or task.size != X.shape[0]:
        raise ValidationError(f"y and task need one value per row of X ({X.shape[0]}); got "
                              f"{y.size} and {task.size}")
    if task.size == 0 or not np.issubdtype(task.dtype, np.integer) or task.min() < 0:
        raise ValidationError("task must hold integers 0 .. n_tasks - 1")
    if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, (int, np.integer)) or \
            n_neighbors < 1:
        raise ValidationError(f"n_neighbors must be an integer >= 1; got {n_neighbors!r}")
    n_tasks = int(task.max()) + 1
    d = X.shape[1]
    C = np.zeros((n_tasks, d, d))
    parts = []
    for j in range(n_tasks):
        idx = np.flatnonzero(task == j)
        if idx.size == 0:
            raise ValidationError(f"task {j} has no rows: tasks must be numbered 0 .. "
                                  f"{n_tasks - 1} without gaps")
        lab = y[idx]
        if np.unique(lab).size < 2:
            raise ValidationError(f"task {j} has a single class ({lab[0]!r}): LMNN needs at "
                                  "least two classes per task; drop the task or add classes")
        Xt = X[idx]
        for start in range(0, idx.size, _DIST_ROWS):
            rows = np.arange(start, min(start + _DIST_ROWS, idx.size))
            D2 = _sq_dist(Xt, rows)
            same = lab[rows, None] == lab[None, :]
            impostor = np.argmin(np.where(same, np.inf, D2), axis=1)     # first minimum
            D2[rows - start, rows] = np.inf                             # not itself
            targets = np.argsort(np.where(same, D2, np.inf), axis=1, kind="stable")
            k = min(n_neighbors, idx.size)
            targets = targets[:, :k]
            ok = np.isfinite(np.take_along_axis(np.where(same, D2, np.inf), targets, axis=1))
            u = np.repeat(rows, k).reshape(-1, k)[ok]
            v = targets[ok]
            w = impostor[np.repeat(np.arange(rows.size), k).reshape(-1, k)[ok]]
            parts.append(np.stack([idx[u], idx[v], idx[w]], axis=1))
            diff = Xt[u] - Xt[v]
            C[j] += diff.T @ diff
    index = np.concatenate(parts) if parts else np.zeros((0, 3), dtype=np.int64)
    if index.shape[0] == 0:
        raise ValidationError("no triplets: every class has a single point; LMNN needs "
                              "classes with at least two points")
    index = index.astype(np.int64)
    return Triplets(index, task[index[:, 0]].astype(np.int64), X[index[:, 0]] - X[index[:, 2]],
                    X[index[:, 0]] - X[index[:, 1]], C, n_tasks, d)


# --------------------------------------------------------------------------------------
# operators of A (never formed)
# --------------------------------------------------------------------------------------

def _inner(tr, M, rows=None):
    """``<Z_i, M>`` for the given rows and one ``(d, d)`` matrix ``M`` (the products by
    BLAS: a three-operand ``einsum`` loops in C 12 times slower, 37 ms against 3 ms for the
    4,041 triplets of the digits, d = 64)."""
    a = tr.impostor if rows is None else tr.impostor[rows]
    b = tr.target if rows is None else tr.target[rows]
    return np.einsum("ij,ij->i", a @ M, a) - np.einsum("ij,ij->i", b @ M, b)


def _margins(tr, X, rows=None):
    """``<Z_i, X_0 + X_(task(i) + 1)>`` for the given rows (all by default), task by task:
    never an ``(n, d, d)`` array of one metric per row (``n d^2`` floats)."""
    rows = np.arange(tr.n) if rows is None else np.asarray(rows)
    task = tr.task[rows]
    out = np.empty(rows.size)
    for j in np.unique(task):
        sel = task == j
        out[sel] = _inner(tr, X[j + 1] + X[0], rows[sel])
    return out


def _block_sums(tr, coef, rows=None):
    """``S[j + 1] = sum over rows of task j of coef_i Z_i`` and ``S[0] = sum_j S[j + 1]``;
    also the list of the blocks touched."""
    a = tr.impostor if rows is None else tr.impostor[rows]
    b = tr.target if rows is None else tr.target[rows]
    blocks = (tr.task if rows is None else tr.task[rows]) + 1
    out = np.zeros((tr.n_tasks + 1, tr.d, tr.d))
    order = np.argsort(blocks, kind="stable")
    uniq, starts = np.unique(blocks[order], return_index=True)
    ends = np.append(starts[1:], order.size)
    for j, s, e in zip(uniq, starts, ends):
        sel = order[s:e]
        ca = a[sel] * coef[sel, None]
        cb = b[sel] * coef[sel, None]
        out[j] = ca.T @ a[sel] - cb.T @ b[sel]
    out[0] = out[uniq].sum(axis=0)
    return out, np.concatenate([[0], uniq]).astype(np.int64)


def _matvec(tr, x):
    return _margins(tr, x.reshape(tr.n_tasks + 1, tr.d, tr.d))


def _rmatvec(tr, y):
    return _block_sums(tr, y)[0].ravel()


def mtlmnn_lambda(tr, m, q, Lambda="upper_bound", *, power_iteration=True):
    """The block ``Lambda >= Lambda_{q,m}`` of the MT-LMNN saddle problem.

    Row ``i`` of ``A`` has two nonzero blocks, both ``vec(Z_i)``, of norm
    ``||Z_i||_F^2 = ||a||^4 + ||b||^4 - 2 (a.b)^2``; see
    :func:`ooc_kernels.families.dspdc.in_memory.blocks.lambda_from_block_norms` (exact for ``m = 1``:
    ``min(q, 2) max_i ||Z_i||_F^2``).

    Parameters
    ----------
    tr : Triplets
    m, q : int
        Triplets and primal blocks (of ``n_tasks + 1``) per iteration.
    Lambda : str or float
    power_iteration : bool
        Include ``||A||_2^2`` (power iteration with the operators above) among the bounds.

    Returns
    -------
    float

    Examples
    --------
    >>> tr = build_triplets(np.array([[0.0], [1.0], [3.0], [10.0]]), [0, 0, 1, 1],
    ...                     [0, 0, 0, 0], n_neighbors=1)
    >>> mtlmnn_lambda(tr, 1, 2, "exact")            # Z = 8, 3, -45, 32: 2 max_i ||Z_i||^2
    4050.0
    """
    a2 = np.einsum("ij,ij->i", tr.impostor, tr.impostor)
    b2 = np.einsum("ij,ij->i", tr.target, tr.target)
    ab = np.einsum("ij,ij->i", tr.impostor, tr.target)
    zn = a2 * a2 + b2 * b2 - 2.0 * ab * ab
    norms = np.zeros((tr.n, tr.n_tasks + 1))
    norms[:, 0] = zn
    norms[np.arange(tr.n), tr.task + 1] = zn
    spec = None
    if power_iteration and isinstance(Lambda, str) and Lambda != "heuristic":
        with single_threaded_blas():  # d x d products: threads only spin on busy cores
            spec = power_iteration_sq(lambda x: _matvec(tr, x), lambda r: _rmatvec(tr, r),
                                      (tr.n_tasks + 1) * tr.d * tr.d)
    return lambda_from_block_norms(norms, m, q, Lambda, unit_rows=True, spectral_norm_sq=spec,
                                   max_row_sq=float(2.0 * zn.max()))


def _regularizers(tr, lambda0, lambda_task):
    lam = np.broadcast_to(np.asarray(lambda_task, dtype=np.float64), (tr.n_tasks,))
    n = tr.n
    regs = [PSDBlock(lambda0, tr.d, center="identity", linear=tr.C.sum(axis=0) / n)]
    regs += [PSDBlock(float(lam[j]), tr.d, linear=tr.C[j] / n) for j in range(tr.n_tasks)]
    return regs


def _objectives(tr, X, y, regs, loss):
    primal = sum(r.value(X[j]) for j, r in enumerate(regs)) + loss.value(
        _margins(tr, X)) / tr.n
    V = _block_sums(tr, y)[0]
    dual = -sum(r.conjugate(-V[j] / tr.n) for j, r in enumerate(regs)) - \
        loss.conjugate(y) / tr.n
    return float(primal), float(dual)


def mtlmnn_objectives(tr, shared, task_metrics, y, lambda0, lambda_task):
    """Primal (33) at ``(X_0, X_1 .. X_p)`` and dual of (35) at ``y``.

    Parameters
    ----------
    tr : Triplets
    shared : array_like (d, d)
        ``X_0``.
    task_metrics : array_like (n_tasks, d, d)
        ``X_1 .. X_p`` (the task parts, without ``X_0``).
    y : array_like (n,)
        Duals (``y_i in [-1, 0]``).
    lambda0 : float
    lambda_task : float or array_like (n_tasks,)

    Returns
    -------
    primal, dual : float

    Examples
    --------
    >>> tr = build_triplets(np.array([[0.0], [1.0], [3.0], [10.0]]), [0, 0, 1, 1],
    ...                     [0, 0, 0, 0], n_neighbors=1)
    >>> P, D = mtlmnn_objectives(tr, np.eye(1), np.zeros((1, 1, 1)), np.zeros(4), 1.0, 1.0)
    >>> P           # (1 + 1 + 49 + 49) / 4 target distances + (0.5 + 45) / 4 (margin Z_2 = -45)
    36.375
    """
    X = np.concatenate([np.asarray(shared, dtype=np.float64).reshape(1, tr.d, tr.d),
                        np.asarray(task_metrics, dtype=np.float64).reshape(-1, tr.d, tr.d)])
    if X.shape[0] != tr.n_tasks + 1:
        raise ValidationError(f"task_metrics must hold {tr.n_tasks} matrices; got "
                              f"{X.shape[0] - 1}")
    return _objectives(tr, X, np.asarray(y, dtype=np.float64), _regularizers(
        tr, lambda0, lambda_task), SeparableLoss("smoothed_hinge", np.ones(tr.n)))


# --------------------------------------------------------------------------------------
# Algorithm 3
# --------------------------------------------------------------------------------------

@dataclass
class MTLMNNResult:
    """What :func:`mtlmnn_dspdc` returns.

    Attributes
    ----------
    shared : ndarray (d, d)
        ``X_0``.
    task_metrics : ndarray (n_tasks, d, d)
        ``X_1 .. X_p``; task ``j`` uses ``task_metrics[j] + shared``.
    y : ndarray (n,)
    primal, dual, gap : float
        At the last check.
    relative_gap : float
        ``gap / |primal|`` at the last check (``|primal|`` at least the smallest positive
        float).
    converged : bool
    stop_reason : str
        ``"tol"``, ``"max_iter"`` or ``"max_time"``.
    n_iter : int
    history : list of dict
        ``iteration``, ``passes`` (``iteration m / n``), ``time`` (iterations only),
        ``primal``, ``dual``, ``gap``, ``relative_gap`` per check.
    params : DSPDCParameters
        With ``p = n_tasks + 1`` blocks.
    """

    shared: np.ndarray
    task_metrics: np.ndarray
    y: np.ndarray
    primal: float
    dual: float
    gap: float
    relative_gap: float
    converged: bool
    stop_reason: str
    n_iter: int
    history: list = field(default_factory=list)
    params: DSPDCParameters | None = None


def mtlmnn_dspdc(tr, lambda0=0.01, lambda_task=0.1, *, m=None, q=None, Lambda="upper_bound",
                 mode="gap", theta=None, tau=None, sigma=None, X0=None, y0=None,
                 max_iter=100_000, tol=1e-6, check_every=None, max_time=None, seed=0,
                 callback=None):
    """Algorithm 3: DSPDC on the MT-LMNN saddle problem (35).

    Parameters
    ----------
    tr : Triplets
        From :func:`build_triplets`.
    lambda0 : float
        Weight of ``||X_0 - I||_F^2 / 2`` (6.3: 0.01).
    lambda_task : float or array_like (n_tasks,)
        Weights of ``||X_j||_F^2 / 2`` (6.3: 0.1).
    m : int, optional
        Triplets per iteration (default ``ceil(n / 10)``).
    q : int, optional
        Metrics (of ``n_tasks + 1``) per iteration (default ``ceil((n_tasks + 1) / 5)``).
    Lambda : str or float
        As :func:`mtlmnn_lambda`.
    mode : {"gap", "distance"}
    theta, tau, sigma : float, optional
        Overrides.
    X0 : array_like (n_tasks + 1, d, d), optional
        Start ``(X_0, X_1, ..)`` (PSD); default ``X_0 = I``, ``X_j = 0``.
    y0 : array_like (n,), optional
        Start duals in ``[-1, 0]``; default 0.
    max_iter : int
    tol : float
        Stop when the relative duality gap ``(P - D) / |P|`` is at most ``tol`` at a check
        (the definition of the DSPDC family's other estimators: a bound on the primal
        value's relative distance to the optimum, whatever the scale of the data and the
        number of triplets).
    check_every : int, optional
        Default ``10 ceil(max(n/m, (n_tasks + 1)/q))`` (a check costs a pass over the
        triplets and ``n_tasks + 1`` eigendecompositions).
    max_time : float, optional
    seed : int or numpy.random.Generator
    callback : callable, optional
        ``callback(t, state)`` after every iteration with a dict of the solver's arrays
        ``X``, ``Xbar``, ``W``, ``y``, ``ybar_shift`` (``ybar - y``, nonzero on the last
        ``I``).

    Returns
    -------
    MTLMNNResult

    Examples
    --------
    >>> tr = build_triplets(np.array([[0.0], [1.0], [3.0], [10.0]]), [0, 0, 1, 1],
    ...                     [0, 0, 0, 0], n_neighbors=1)
    >>> res = mtlmnn_dspdc(tr, 1.0, 1.0, m=2, q=1, tol=1e-12)
    >>> res.converged, res.gap <= 1e-12 * abs(res.primal)
    (True, True)
    """
    if not isinstance(tr, Triplets):
        raise ValidationError(f"tr must be Triplets (build_triplets); got {type(tr).__name__}")
    n, P, d = tr.n, tr.n_tasks + 1, tr.d
    m = int(math.ceil(n / 10)) if m is None else m
    q = int(math.ceil(P / 5)) if q is None else q
    for name, v, hi in (("m", m, n), ("q", q, P)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= hi:
            raise ValidationError(f"{name} must be an integer in [1, {hi}]; got {v!r}")
    regs = _regularizers(tr, lambda0, lambda_task)
    loss = SeparableLoss("smoothed_hinge", np.ones(n))
    lam = min(r.strong_convexity for r in regs)
    prm = dspdc_parameters(n, P, int(m), int(q), mtlmnn_lambda(tr, m, q, Lambda), lam,
                           loss.gamma, mode=mode, theta=theta, tau=tau, sigma=sigma)
    if X0 is None:
        X = np.zeros((P, d, d))
        X[0] = np.eye(d)
    else:
        X = np.array(X0, dtype=np.float64)
        if X.shape != (P, d, d) or not np.all(np.isfinite(X)):
            raise ValidationError(f"X0 must be a finite ({P}, {d}, {d}) array; got {X.shape}")
    y = np.zeros(n) if y0 is None else np.array(y0, dtype=np.float64).ravel()
    if y.shape != (n,) or not np.all((y >= -1.0) & (y <= 0.0)):
        raise ValidationError(f"y0 must hold {n} values in [-1, 0] (the smoothed hinge's "
                              "dual domain)")
    if check_every is None:
        check_every = 10 * int(math.ceil(max(n / m, P / q)))
    _check_tol(tol)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    with single_threaded_blas():  # d x d eigendecompositions: threads only spin on busy cores
        return _algorithm3(tr, regs, loss, prm, X, y, int(max_iter), float(tol),
                           int(check_every), max_time, rng, callback)


def _algorithm3(tr, regs, loss, prm, X, y, max_iter, tol, check_every, max_time, rng,
                callback):
    n, P, m, q = prm.n, prm.p, prm.m, prm.q
    theta, tau, sigma = prm.theta, prm.tau, prm.sigma
    Xbar = X.copy()
    W = _block_sums(tr, y)[0]                       # ybar^0 = y^0
    B_prev = np.zeros_like(W)
    touched_prev = np.zeros(0, dtype=np.int64)
    I_prev, shift_prev = np.zeros(0, dtype=np.int64), np.zeros(0)
    J_prev = np.zeros(0, dtype=np.int64)
    history, iter_time, start = [], 0.0, time.perf_counter()

    def check(t):
        primal, dual = _objectives(tr, X, y, regs, loss)
        gap = primal - dual
        if math.isnan(gap) or not np.all(np.isfinite(X)):
            raise DivergenceError(f"MT-LMNN DSPDC diverged at iteration {t}: primal {primal}, "
                                  f"dual {dual} (theta={theta}, tau={tau}, sigma={sigma}); "
                                  "use the theorems' parameters (no overrides)")
        rel = float(_relative_gap(primal, dual))
        history.append({"iteration": t, "passes": t * m / n, "time": iter_time,
                        "primal": primal, "dual": dual, "gap": gap, "relative_gap": rel})
        return rel

    rel = check(0)
    stop, t = ("tol" if rel <= tol else None), 0
    while stop is None and t < max_iter:
        t0 = time.perf_counter()
        u = rng.random(m + q)
        I = sample_without_replacement_ref(n, m, u[:m])
        J = sample_without_replacement_ref(P, q, u[m:])
        # (36) dual step with the previous Xbar
        c = _margins(tr, Xbar, I)
        eta = sigma / n
        y_old = y[I]
        y_new = loss.prox_conjugate(y_old + eta * c, eta, I)
        delta = y_new - y_old
        y[I] = y_new
        # (37), (38): W_j += (n/m) B_j^{t+1} + ((m - n)/m) B_j^t on the touched blocks
        B_new, touched = _block_sums(tr, delta, I)
        W[touched] += (n / m) * B_new[touched]
        W[touched_prev] += ((m - n) / m) * B_prev[touched_prev]
        B_prev, touched_prev = B_new, touched
        # (39) primal step on J, (40) lazy Xbar: reset the previous J, extrapolate J
        for j in J_prev:
            Xbar[j] = X[j]
        for j in J:
            X_new = regs[j].prox((X[j] - (tau / n) * W[j]).ravel(), tau).reshape(tr.d, tr.d)
            Xbar[j] = X_new + theta * (X_new - X[j])
            X[j] = X_new
        J_prev = J
        I_prev, shift_prev = I, (n / m - 1.0) * delta
        t += 1
        iter_time += time.perf_counter() - t0
        if callback is not None:
            ybar_shift = np.zeros(n)
            ybar_shift[I_prev] = shift_prev
            callback(t, {"X": X, "Xbar": Xbar, "W": W, "y": y, "ybar_shift": ybar_shift})
        if t % check_every == 0 or t == max_iter:
            rel = check(t)
            # W from scratch (no drift): ybar = y + (n/m - 1) delta on the last I
            W = _block_sums(tr, y)[0] + ((n - m) / m) * B_prev
            if rel <= tol:
                stop = "tol"
            elif max_time is not None and time.perf_counter() - start >= max_time:
                stop = "max_time"
    if history[-1]["iteration"] != t:
        check(t)
    last = history[-1]
    return MTLMNNResult(X[0].copy(), X[1:].copy(), y, last["primal"], last["dual"],
                        last["gap"], last["relative_gap"], last["relative_gap"] <= tol,
                        stop or "max_iter", t, history, prm)

