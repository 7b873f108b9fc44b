"""DSPDC as a chunk algorithm: CoCoA+ rounds whose local solver is DSPDC, duals per chunk.

The scheme and its guarantee are in ``docs/algorithms/dspdc_rounds.md``; the numerical layer
(losses, proxes, the sampler, Algorithms 1 and 2) in :mod:`ooc_kernels.families.dspdc.kernels` and the
step sizes in :mod:`ooc_kernels.families.dspdc.params`.  In short: the state holds the primal
``x = grad g*(-A^T y / n)``, the aggregate ``w = A^T y`` (or ``U^T y`` for factorized data
``A = U V``) and ``sum_i phi_i*(y_i)``; the duals ``y`` of every chunk live in a
:class:`~ooc_kernels._chunk_store.ChunkStore`, versioned by ``(epoch, round)``.  A task
solves the CoCoA+ subproblem of its chunk (``sigma' = K``, the round's number of tasks) with
``local_passes * n_k / m`` DSPDC iterations, writes its new duals and returns ``A_k^T dy_k``
and the change of ``sum phi*``; the round adds them.

Examples
--------
>>> from ooc_kernels.families import get_solver
>>> case = get_solver("dspdc").make_case(seed=0)
>>> from ooc_kernels.families.dspdc.reference import sequential_dspdc
>>> state = sequential_dspdc(case)
>>> state.n_rounds, state.x.shape
(4, (6,))
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass, field, replace

import numpy as np

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels._checks import RowOrigin, check_finite
from ooc_kernels._chunk_store import INITIAL, ChunkStore, ChunkVersions
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dspdc._pass_rule import local_dual_value, pass_checkpoints, \
    stop_after
from ooc_kernels.families.dspdc._reduced import ReducedRows, data_boost, reduced_applies
from ooc_kernels.families.dspdc._scaling import model_rows, model_V
from ooc_kernels.families.dspdc._local import (
    encode_labels,
    local_parameters,
    local_problem,
    local_step_parameters,
    row_weights,
    task_uniform_blocks,
)
from ooc_kernels.losses import get_loss, losses_for
from ooc_kernels.losses.reference import loss_conjugate_ref

__all__ = ["LOSSES", "DSPDCConfig", "DSPDCState", "DSPDCTask", "DSPDCDelta", "DSPDCAlgorithm",
           "augment_V", "init_state", "state_arrays", "make_case"]

#: Loss names and their ids in the loss table (:mod:`ooc_kernels.losses`).
LOSSES = {name: get_loss(name).loss_id for name in losses_for("dspdc")}
#: The dual variable's name in the work store.
DUALS = "y"


@dataclass(frozen=True)
class DSPDCConfig:
    """Everything a task needs besides the state and its rows.

    Attributes
    ----------
    loss_id : int
        The loss's id in the loss table: 0 squared, 2 logistic, 4 smoothed hinge
        (:data:`LOSSES`).
    n_samples : int
        ``n``: rows of the whole problem (the ``1/n`` of ``P`` and ``D``).
    n_features : int
        ``p``: primal coordinates.
    lam1, lam2 : float
        ``g_j(x) = lam1 |x| + lam2 / 2 x^2`` with ``lam2 > 0``.
    Lambda : float
        An upper bound of ``Lambda_{q,m}`` of every chunk's rows (the whole matrix's bound
        is one: a chunk's sub-matrices are sub-matrices of ``A``).
    m, q : int
        Dual and primal coordinates per iteration (``m`` is capped at a chunk's rows).
    local_passes : float
        Iterations per task: ``ceil(local_passes * n_k / m)``.
    max_local_passes : float or None
        None: every task runs ``local_passes`` passes.  A number: a task runs at least
        ``local_passes`` passes and goes on pass by pass, at most ``max_local_passes`` in
        all, while its passes still raise its subproblem's dual value
        (:mod:`ooc_kernels.families.dspdc._pass_rule`).
    mode : {"gap", "distance"}
        ``theta`` of Theorem 2 (18) or Theorem 1 (14).
    theta, tau, sigma : float or None
        Manual overrides of the local step parameters.
    classes : tuple or None
        The two labels of a classification loss, mapped to ``-1, +1``; None: regression.
    work_store : str
        Folder of the :class:`~ooc_kernels._chunk_store.ChunkStore` of the duals.
    factorized : bool
        Rows come as ``U`` (sample, rank) with ``V`` (rank, feature) whole.
    intercept_scaling : float
        When > 0, a constant column of this value is appended to the rows (the last of the
        ``n_features`` coordinates is the intercept's, regularized like the others); for
        factorized data ``U`` gets the column and ``V`` a matching row and column.
    weighted : bool
        The problem is weighted, ``P(x) = (1/n) sum_i w_i phi_i(a_i^T x) + g(x)`` with
        ``w_i`` from :func:`~ooc_kernels.families.dspdc._local.row_weights` (the rows'
        ``sample_weight`` times ``class_weight``, times ``weight_scale``).  It is solved as
        the unweighted problem on the rows ``sqrt(w_i) a_i`` with the losses
        ``w_i phi_i(z / sqrt(w_i))``, which are as smooth as ``phi_i``: the step sizes of the
        theorems hold with ``Lambda`` of the scaled rows.  The stored duals are those of
        ``phi_i`` (``y_i``; the scaled problem's are ``sqrt(w_i) y_i``), so ``w = A^T (w * y)``
        and ``conj_sum = sum_i w_i phi_i*(y_i)``.
    class_weight : tuple of two floats or None
        The weights of ``classes[0]`` and ``classes[1]``.
    weight_scale : float
        ``n / sum_i w_i`` over the whole data: the weights have mean 1, so that a weight of
        ``k`` counts as ``k`` copies of the row and a weight of 0 as no row.
    x_shift, x_scale : tuple of float or None
        The standardization of the columns (:mod:`ooc_kernels.families.dspdc._scaling`): the
        solver sees ``(a_j - x_shift_j) / x_scale_j``; None: the raw columns.
    step_boost : float
        ``s >= 1``: the step parameters are those of the theorems for the strong convexity
        ``s`` times the local problem's (``1``: the theorems' safe steps;
        :func:`~ooc_kernels.families.dspdc._local.local_parameters`).  The proximal steps
        keep the true regularizer; the duality gap certifies the result either way.
    x_spread : int or None
        How many of the standardized columns have a spread (mean square 1; the others are
        constant); None: all of ``x_scale``'s.
    mean_lambda : bool
        The step sizes use the mean squared norm of a sampled block of the standardized rows
        in place of ``Lambda`` when it is smaller
        (:func:`~ooc_kernels.families.dspdc._local.steps_lambda`; adaptive steps only, turned
        off by the stall rule once ``step_boost`` is 1).
    permuted_rows : bool
        With ``m = 1``, a task visits its rows in random permutations (a new one every
        ``n_k`` iterations) instead of sampling them independently
        (:func:`~ooc_kernels.families.dspdc._local.task_uniform_blocks`).
    start_x, start_w, start_conj : tuple, tuple, float or None
        The squared loss's start out of core
        (:mod:`~ooc_kernels.families.dspdc._squared_start`) or a start in memory (the squared
        loss's, :mod:`~ooc_kernels.families.dspdc._memory_start`, and the logistic loss's,
        :mod:`~ooc_kernels.families.dspdc._logistic_start`): the first ``x``, ``A^T (w y)``
        and ``sum_i w_i phi*(y_i)`` of the duals ``y_i = phi_i'(a_i^T start_x)`` that a chunk
        holds at its initial version; None: ``x = 0`` and zero duals.
    y_shift : float
        Regression: the squared loss is fit to the targets ``b_i = y_i - y_shift`` (their
        weighted mean with an intercept, :func:`~ooc_kernels.families.dspdc._local.
        encode_labels`), and the intercept gets it back (``raw_coefficients``); 0: the
        targets as given (classification, no intercept, models saved before it existed).
    """

    loss_id: int
    n_samples: int
    n_features: int
    lam1: float
    lam2: float
    Lambda: float
    m: int = 1
    q: int = 1
    local_passes: float = 1.0
    max_local_passes: float | None = None
    mode: str = "gap"
    theta: float | None = None
    tau: float | None = None
    sigma: float | None = None
    classes: tuple | None = None
    work_store: str = ""
    factorized: bool = False
    intercept_scaling: float = 0.0
    weighted: bool = False
    class_weight: tuple | None = None
    weight_scale: float = 1.0
    x_shift: tuple | None = None
    x_scale: tuple | None = None
    step_boost: float = 1.0
    x_spread: int | None = None
    mean_lambda: bool = False
    permuted_rows: bool = False
    start_x: tuple | None = None
    start_w: tuple | None = None
    start_conj: float | None = None
    y_shift: float = 0.0

    def __post_init__(self):
        for key in ("start_x", "start_w"):      # a restored model's lists: hashable again
            if isinstance(getattr(self, key), list):
                object.__setattr__(self, key, tuple(getattr(self, key)))

    @property
    def store(self) -> ChunkStore:
        return ChunkStore(self.work_store)


@dataclass(frozen=True)
class DSPDCState:
    """The small state every task receives.

    Attributes
    ----------
    x : ndarray (p,)
        The primal iterate: the mean of the round's local primal iterates (``K = 1``: the
        DSPDC primal, carried from round to round).
    w : ndarray (p,) or (d,)
        ``A^T y`` (dense) or ``U^T y`` (factorized).
    conj_sum : float
        ``sum_i phi_i*(y_i)`` (``sum_i w_i phi_i*(y_i)`` for a weighted problem).
    versions : ChunkVersions
        The version of every chunk's duals in the work store.
    n_iter : int
        DSPDC iterations run by all tasks so far.
    n_dual_updates : int
        Dual coordinates updated so far (``/ n``: passes over the duals).
    n_rounds : int
    local_steps : tuple
        ``((n_k, k, theta, tau, sigma), ...)``: the step parameters the last round's tasks
        ran with, by rows and tasks in the round (not part of a checkpoint: each round
        sets it).
    step_boost : float
        The ``step_boost`` the last round ran with.
    epoch_start : DSPDCState or None
        The state at the start of the current epoch (its own ``epoch_start`` None): the
        iterate ``(x, y)`` whose primal value the epoch's tasks compute on the rows they
        read anyway (see ``start_loss``).
    start_loss, start_rows : float, int
        ``sum_i w_i phi_i(a_i^T x_0)`` over the rows the epoch's rounds have read so far, at
        the ``x_0 = epoch_start.x``, and how many rows that is.  Once ``start_rows = n``,
        ``P(x_0) = start_loss / n + g(x_0)``: the duality gap of ``epoch_start`` without a
        pass of its own (:meth:`start_primal_value`).
    tail_state, tail_loss, tail_rows : DSPDCState or None, float, int
        The epoch's *tail* in an epoch of two rounds of one task each: the state after the
        first round, whose losses the two tasks sum on the rows they read anyway (the
        first at its final iterate, which is that state's ``x``; the second at its start),
        so that its gap is known at the epoch's end (:meth:`tail_primal_value`) instead of
        during the next epoch.  After the first round the tail is this state
        (``tail_state`` None), after the second the state it started from.
    """

    x: np.ndarray
    w: np.ndarray
    conj_sum: float
    versions: ChunkVersions
    n_iter: int = 0
    n_dual_updates: int = 0
    n_rounds: int = 0
    local_steps: tuple = ()
    step_boost: float = 1.0
    epoch_start: DSPDCState | None = None
    start_loss: float = 0.0
    start_rows: int = 0
    tail_state: DSPDCState | None = None
    tail_loss: float = 0.0
    tail_rows: int = 0

    def tail_primal_value(self, config: DSPDCConfig):
        """``(tail, P(tail.x))`` of the epoch's tail (see ``tail_state``) once its rounds
        have summed the losses of every row at it, else None."""
        from ooc_kernels.families.dspdc.kernels_objective import reg_value_ref

        if self.tail_rows != config.n_samples:
            return None
        tail = self if self.tail_state is None else self.tail_state
        with np.errstate(over="ignore", invalid="ignore"):
            return tail, float(self.tail_loss / config.n_samples + np.sum(
                reg_value_ref(tail.x, config.lam1, config.lam2)))

    def tail_gap(self, config: DSPDCConfig, V: np.ndarray | None = None):
        """``(tail, P(tail.x), relative gap)`` of the epoch's tail against the better of its
        duals and this state's, or None while its losses are not summed over every row."""
        found = self.tail_primal_value(config)
        if found is None:
            return None
        tail, primal = found
        with np.errstate(over="ignore", invalid="ignore"):
            return tail, primal, _relative_gap(primal, tail.best_dual_value(config, V,
                                                                            later=self))

    def start_primal_value(self, config: DSPDCConfig) -> float | None:
        """``P(epoch_start.x)`` from the losses the epoch's tasks summed, or None while
        the epoch's rounds have not read every row at that iterate."""
        from ooc_kernels.families.dspdc.kernels_objective import reg_value_ref

        if self.epoch_start is None or self.start_rows != config.n_samples:
            return None
        with np.errstate(over="ignore", invalid="ignore"):
            return float(self.start_loss / config.n_samples + np.sum(
                reg_value_ref(self.epoch_start.x, config.lam1, config.lam2)))

    def dual_value(self, config: DSPDCConfig, V: np.ndarray | None = None) -> float:
        """``D(y)`` from the state alone (no pass over the data)."""
        from ooc_kernels.families.dspdc.kernels_objective import reg_conjugate_ref

        aty = self.w if V is None else V.T @ self.w
        v = -aty / config.n_samples
        return float(-np.sum(reg_conjugate_ref(v, config.lam1, config.lam2))
                     - self.conj_sum / config.n_samples)

    def best_dual_value(self, config: DSPDCConfig, V: np.ndarray | None = None,
                        later: DSPDCState | None = None) -> float:
        """The larger of ``D(y)`` and ``D(later.y)`` (no pass over the data).

        Every dual point bounds ``P*`` from below (weak duality), so ``P(x) - D`` with the
        duals of a later state certifies ``x`` as well: the gap of an epoch's start, known
        once the epoch's tasks have read every row, uses the duals at the epoch's end when
        those are better.  A non-finite ``D(later.y)`` is ignored (``D(y)`` itself is
        returned as it is, so that a divergence is still reported).

        Examples
        --------
        >>> cfg = DSPDCConfig(loss_id=0, n_samples=2, n_features=1, lam1=0.0, lam2=1.0,
        ...                   Lambda=1.0)
        >>> from ooc_kernels._chunk_store import ChunkVersions
        >>> s0 = DSPDCState(x=np.zeros(1), w=np.zeros(1), conj_sum=-0.5,   # D = 1/4
        ...                 versions=ChunkVersions.initial(1))
        >>> s1 = replace(s0, w=np.array([1.0]), conj_sum=-1.0)   # D = -1/8 + 1/2
        >>> s0.best_dual_value(cfg), s0.best_dual_value(cfg, later=s1)
        (0.25, 0.375)
        >>> s1.best_dual_value(cfg, later=s0)
        0.375
        """
        dual = self.dual_value(config, V)
        if later is not None:
            other = later.dual_value(config, V)
            if np.isfinite(dual) and np.isfinite(other) and other > dual:
                return other
        return dual


@dataclass(frozen=True)
class DSPDCTask:
    """One task of a round: its chunks, the versions it reads and the one it writes."""

    chunks: tuple[int, ...]
    sizes: tuple[int, ...]
    read: tuple[tuple[int, int], ...]
    write: tuple[int, int]
    seed: int
    sigma_prime: int
    tail: str = ""      # "end": sum the losses at the final iterate; "start": at the start


@dataclass(frozen=True)
class DSPDCDelta:
    """What a task returns: ``A_k^T dy_k`` (or ``U_k^T dy_k``), its local primal iterate
    (summed, with the number of tasks, so that the round takes their mean), the change of
    ``sum phi*``, and counters.  Zero for a task that saw no rows (the identity)."""

    dw: np.ndarray
    x_sum: np.ndarray
    n_tasks: int = 0
    dconj: float = 0.0
    n_iter: int = 0
    n_dual_updates: int = 0
    chunks: tuple[int, ...] = field(default_factory=tuple)
    steps: tuple = ()
    start_loss: float = 0.0
    start_rows: int = 0
    tail_loss: float = 0.0
    tail_rows: int = 0


def _relative_gap(primal: float, dual: float) -> float:
    """``(P - D) / |P|`` (``|P|`` at least the smallest positive float)."""
    return (primal - dual) / max(abs(primal), np.finfo(float).tiny)


def _certified(primal: float, dual: float, tol: float) -> bool:
    """Whether finite ``primal`` and ``dual`` values certify a relative gap within ``tol``."""
    return bool(np.isfinite(primal) and np.isfinite(dual)
                and _relative_gap(primal, dual) <= tol)


def augment_V(V: np.ndarray, config: DSPDCConfig) -> np.ndarray:
    """``V`` as float64, standardized (``x_scale``), with the intercept's row and column
    when ``intercept_scaling`` (:func:`~ooc_kernels.families.dspdc._scaling.model_V`)."""
    return model_V(V, config)


def init_state(config: DSPDCConfig, n_chunks: int, rank: int | None = None) -> DSPDCState:
    """All duals zero (inside every loss's domain), so ``w = 0`` and ``x = 0``; or the
    configuration's start (``start_x``: the duals its residuals)."""
    size = rank if config.factorized else config.n_features
    if config.start_x is not None:
        return DSPDCState(x=np.array(config.start_x, dtype=np.float64),
                          w=np.array(config.start_w, dtype=np.float64),
                          conj_sum=float(config.start_conj),
                          versions=ChunkVersions.initial(n_chunks))
    return DSPDCState(x=np.zeros(config.n_features), w=np.zeros(int(size)), conj_sum=0.0,
                      versions=ChunkVersions.initial(n_chunks))


class DSPDCAlgorithm:
    """The DSPDC chunk algorithm for :func:`ooc_kernels.parallel.engine.run_rounds`.

    Parameters
    ----------
    config : DSPDCConfig
    V : ndarray (d, p), optional
        The whole factor of factorized data (needed by :meth:`apply` for ``x = x(y)``).
    """

    #: ``(tol, gap_every)`` of the fit's stopping rule, or None: a task that completes the
    #: sums of its epoch's start skips its iterations when that start is certified
    #: (:meth:`certifies_start`).  Not part of the configuration: ``tol`` may change when a
    #: fit resumes.
    stop_rule: tuple | None = None
    #: A task run in the calling thread starts the read ahead of the next round's rows once
    #: it knows it does not certify the fit's stop (:func:`ooc_kernels.parallel.engine.
    #: run_rounds`): a fit that stops reads no rows for a round it never runs.
    starts_read_ahead: bool = True

    def __init__(self, config: DSPDCConfig, V: np.ndarray | None = None):
        if config.lam2 <= 0:
            raise ValidationError(
                f"DSPDC needs a strongly convex regularizer: the l2 part alpha * (1 - "
                f"l1_ratio) = {config.lam2!r} must be > 0; raise alpha or lower l1_ratio."
            )
        self.config = config
        self.V = None if V is None else np.ascontiguousarray(V, dtype=np.float64)

    def make_tasks(self, state: DSPDCState, info) -> list[DSPDCTask]:
        k, rounds = len(info.groups), info.n_rounds_in_epoch
        rule = self.stop_rule
        tail = "" if k > 1 or rule is None or rule[0] is None or info.epoch % rule[1] \
            or rounds != 2 else ("end", "start")[info.round]
        return [DSPDCTask(chunks=tuple(g), sizes=tuple(s),
                          read=tuple(state.versions[c] for c in g),
                          write=(info.epoch, info.round), seed=info.seed, sigma_prime=k,
                          tail=tail)
                for g, s in zip(info.groups, info.sizes)]

    def _rows(self, batch: dict):
        """The task's rows (with the intercept column) and the augmented ``V``."""
        cfg = self.config
        # the task's own group of chunks, already read by the engine: bounded by
        # shuffle_chunks chunks, never the dataset
        rows = model_rows(cfg, batch["U"] if cfg.factorized else batch["X"])
        if cfg.factorized:
            return rows, augment_V(np.asarray(batch["V"]), cfg)
        return rows, None

    def chunk_step(self, state: DSPDCState, batch: dict, task: DSPDCTask) -> DSPDCDelta:
        """Solve the chunk's CoCoA+ subproblem with DSPDC; write its duals; return
        ``A_k^T dy_k`` and the change of ``sum phi*``."""
        with single_threaded_blas():
            return self._chunk_step(state, batch, task)

    def _chunk_step(self, state, batch, task) -> DSPDCDelta:
        from ooc_kernels.families.dspdc import kernels as kern

        cfg = self.config
        if cfg.x_scale is None and not cfg.factorized and task.write[0] == 0:
            # no standardization: the set-up may have read no rows (a given Lambda), so the
            # first epoch's tasks check theirs, naming a NaN/inf by chunk, row and feature
            check_finite(batch["X"], "X", RowOrigin(task.chunks, task.sizes))
        rows, V = self._rows(batch)
        n_k = len(rows)
        if n_k == 0:
            return DSPDCDelta(dw=np.zeros_like(state.w), x_sum=np.zeros_like(state.x))
        b = encode_labels(cfg, batch["y"], task.chunks, task.sizes)
        weights = row_weights(cfg, batch.get("sample_weight"), b, task.chunks, task.sizes)
        # the epoch's first iterate: its loss on these rows gives the gap of the epoch start
        x0 = state.x if task.write[1] == 0 else getattr(state.epoch_start, "x", None)
        start_loss = 0.0 if x0 is None else rows_loss(cfg, rows, V, x0, b, weights)
        store = cfg.store
        y_old = np.concatenate([store.read(DUALS, c, v, n_rows=s)
                                for c, v, s in zip(task.chunks, task.read, task.sizes)])
        if cfg.start_x is not None:     # chunks at their initial version: the start's duals
            y_old = _start_duals(cfg, rows, b, y_old, task)
        x = np.array(state.x, dtype=np.float64)
        epoch, round_ = task.write
        wy_old = y_old if weights is None else weights * y_old     # the weighted duals
        if cfg.factorized:
            u0 = rows.T.astype(np.float64, copy=False) @ wy_old     # U_k^T y_k  (d,)
            aty_k, aty = V.T @ u0, V.T @ state.w
        else:
            aty_k = rows.T.astype(np.float64, copy=False) @ wy_old  # A_k^T y_k (rows: no copy)
            aty = state.w                                          # A^T y
        lam1, lam2, shift = local_problem(cfg, aty, aty_k, n_k, task.sigma_prime)
        tilt = shift   # the reduced rows below take its projection
        reduced = ReducedRows(rows, V, cfg.intercept_scaling) if reduced_applies(cfg) \
            else None
        if reduced is not None and cfg.loss_id == LOSSES["squared"]:
            boost = data_boost(cfg.step_boost, lam2, reduced.smallest_curvature(weights))
            m, theta, tau, sigma = local_parameters(replace(cfg, step_boost=boost), n_k, lam2)
        else:
            m, theta, tau, sigma = local_step_parameters(cfg, n_k, task.sigma_prime)
        y_new = y_old.copy()
        a, abar = x.copy(), x.copy()
        if reduced is not None:                 # Algorithm 2 in the row space of V
            a, x_perp = reduced.split(x)
            abar, z, shift = a.copy(), reduced.rows.T @ wy_old, reduced.project(shift)
        elif cfg.factorized:
            u, v = u0.copy(), V @ a
            vbar = v.copy()
        else:
            z = aty_k.copy()
        t_max, checks = pass_checkpoints(cfg.local_passes, cfg.max_local_passes, n_k, m)
        tail_loss = rows_loss(cfg, rows, V, state.x, b, weights) if task.tail == "start" \
            else 0.0
        certified = self.certifies_start(state, task, start_loss, n_k) or (
            task.tail == "start" and self.certifies_tail(state, tail_loss, n_k))
        if not certified and "read_ahead" in batch:   # the fit goes on: read the next rows
            batch["read_ahead"]()
        rule = _PassReferee(cfg, n_k, m, checks, b, weights, (lam1, lam2, tilt), y_new,
                            z if reduced is None and not cfg.factorized else None, rows, V)
        T = 0
        for row_u, col_u in () if certified else task_uniform_blocks(
                replace(cfg, local_passes=cfg.max_local_passes) if checks else cfg,
                task.seed, epoch, round_, task.chunks[0], n_k, m,
                max_block=-(-n_k // m) if checks else None):  # a pass a block: drawn as run
            done = False
            for lo, hi in rule.segments(T, len(row_u)):
                ru, cu = row_u[lo:hi], col_u[lo:hi]
                if reduced is not None:
                    kern.dspdc_dense_iterations(
                        reduced.rows, b, y_new, a, abar, z, n_k, ru,
                        np.zeros((len(ru), len(a))), m, len(a), theta, tau, sigma,
                        cfg.loss_id, lam1, lam2, shift, weights)
                elif cfg.factorized:
                    kern.dspdc_factorized_iterations(
                        rows, V, b, y_new, a, u, v, vbar, n_k, ru, cu, m, cfg.q, theta,
                        tau, sigma, cfg.loss_id, lam1, lam2, shift, weights)
                else:
                    kern.dspdc_dense_iterations(
                        rows, b, y_new, a, abar, z, n_k, ru, cu, m, cfg.q, theta, tau,
                        sigma, cfg.loss_id, lam1, lam2, shift, weights)
                T += hi - lo
                if rule.stop(T):
                    done = True
                    break
            if done or T >= t_max:
                break
        if reduced is not None:
            a = reduced.join(a, x_perp, (1.0 + tau * lam2) ** -float(T))
        if task.tail == "end" and not certified:     # the round's iterate is this ``a``
            tail_loss = rows_loss(cfg, rows, V, a, b, weights)
        dy = y_new - y_old
        if weights is not None:
            dy = weights * dy
        dw = rows.T.astype(np.float64, copy=False) @ dy  # exact, not the running z
        conj = loss_conjugate_ref
        with np.errstate(over="ignore", invalid="ignore"):  # diverged: inf, checked by the
            change = conj(cfg.loss_id, y_new, b) - conj(cfg.loss_id, y_old, b)  # estimator
            if weights is not None:                               # after the round
                change = np.where(weights > 0, weights * change, 0.0)
            dconj = float(np.sum(change))
        start = 0
        for c, s in zip(task.chunks, task.sizes):
            store.write(DUALS, c, task.write, y_new[start:start + s])
            start += s
        return DSPDCDelta(dw=dw, x_sum=a, n_tasks=1, dconj=dconj, n_iter=T,
                          n_dual_updates=T * m, chunks=task.chunks,
                          steps=((n_k, task.sigma_prime, float(theta), float(tau),
                                  float(sigma)),),
                          start_loss=start_loss, start_rows=0 if x0 is None else n_k,
                          tail_loss=tail_loss, tail_rows=n_k if task.tail else 0)

    def certifies_start(self, state: DSPDCState, task: DSPDCTask, start_loss: float,
                        n_k: int) -> bool:
        """Whether this task completes the losses of its epoch's start (it is the only
        task left that reads rows the epoch has not summed) and the start's duality gap,
        against the duals of the state the task received, is within ``tol``: the fit
        stops at the end of this round and returns that start, so the task's iterations
        would be thrown away and it runs none (its duals, ``w`` and ``sum phi*`` stay as
        they are, so the estimator computes the same gap from the state after the round).
        Only at the epochs where the estimator evaluates the gap (``gap_every``)."""
        if self.stop_rule is None or self.stop_rule[0] is None:
            return False
        tol, every = self.stop_rule
        cfg = self.config
        epoch, round_ = task.write
        if (epoch < 1 and cfg.start_x is None) or epoch % every:
            return False
        if round_ == 0:             # the epoch's first round: its start is this state
            start, loss, rows = state, start_loss, n_k
        else:
            start = state.epoch_start
            loss, rows = state.start_loss + start_loss, state.start_rows + n_k
        if start is None or rows != cfg.n_samples:
            return False
        summed = replace(state, epoch_start=start, start_loss=loss, start_rows=rows)
        primal = summed.start_primal_value(cfg)
        with np.errstate(over="ignore", invalid="ignore"):
            return _certified(primal, start.best_dual_value(cfg, self.V, later=state), tol)

    def certifies_tail(self, state: DSPDCState, tail_loss: float, n_k: int) -> bool:
        """Whether the epoch's tail (``state``: the second of two rounds' start), with the
        losses the first round summed at it and ``tail_loss`` on this task's rows, is
        within ``tol`` against its own duals: the fit then stops and returns it (the
        estimator finds the same gap, or a smaller one against the round's later duals),
        so this task runs no iterations."""
        cfg = self.config
        if state.tail_rows + n_k != cfg.n_samples:
            return False
        _, primal = replace(state, tail_loss=state.tail_loss + tail_loss,
                            tail_rows=cfg.n_samples).tail_primal_value(cfg)
        with np.errstate(over="ignore", invalid="ignore"):
            return _certified(primal, state.dual_value(cfg, self.V), self.stop_rule[0])

    def combine(self, a: DSPDCDelta, b: DSPDCDelta) -> DSPDCDelta:
        return DSPDCDelta(dw=a.dw + b.dw, x_sum=a.x_sum + b.x_sum,
                          n_tasks=a.n_tasks + b.n_tasks, dconj=a.dconj + b.dconj,
                          n_iter=a.n_iter + b.n_iter,
                          n_dual_updates=a.n_dual_updates + b.n_dual_updates,
                          chunks=a.chunks + b.chunks, steps=a.steps + b.steps,
                          start_loss=a.start_loss + b.start_loss,
                          start_rows=a.start_rows + b.start_rows,
                          tail_loss=a.tail_loss + b.tail_loss,
                          tail_rows=a.tail_rows + b.tail_rows)

    def apply(self, state: DSPDCState, delta: DSPDCDelta, info=None) -> DSPDCState:
        versions = state.versions
        if info is not None and delta.chunks:
            versions = versions.updated(delta.chunks, (info.epoch, info.round))
        x = delta.x_sum / delta.n_tasks if delta.n_tasks else state.x
        if info is not None and info.round == 0:   # a new epoch: its start is this state
            start = replace(state, epoch_start=None, start_loss=0.0, start_rows=0,
                            local_steps=(), tail_state=None, tail_loss=0.0, tail_rows=0)
            loss, rows = delta.start_loss, delta.start_rows
            tail = (None, delta.tail_loss, delta.tail_rows)     # at the new iterate
        else:
            start = state.epoch_start
            loss, rows = state.start_loss + delta.start_loss, state.start_rows + delta.start_rows
            tail = (replace(state, epoch_start=None, start_loss=0.0, start_rows=0,  # the
                            tail_state=None, tail_loss=0.0, tail_rows=0)      # state after
                    if delta.tail_rows else state.tail_state,                 # round 0
                    state.tail_loss + delta.tail_loss, state.tail_rows + delta.tail_rows)
        return replace(state, w=state.w + delta.dw, x=x,
                       conj_sum=state.conj_sum + delta.dconj, versions=versions,
                       n_iter=state.n_iter + delta.n_iter,
                       n_dual_updates=state.n_dual_updates + delta.n_dual_updates,
                       n_rounds=state.n_rounds + 1, local_steps=delta.steps,
                       step_boost=self.config.step_boost, epoch_start=start,
                       start_loss=loss, start_rows=rows, tail_state=tail[0],
                       tail_loss=tail[1], tail_rows=tail[2])


def _start_duals(cfg, rows, b, y_old, task):
    """``y_old`` with the rows of chunks at their initial version replaced by the start's
    duals (:func:`~ooc_kernels.families.dspdc._squared_start.initial_duals`)."""
    from ooc_kernels.families.dspdc._squared_start import initial_duals

    start = 0
    for v, s in zip(task.read, task.sizes):
        if tuple(v) == INITIAL:
            stop = start + s
            y_old[start:stop] = initial_duals(cfg, rows[start:stop], b[start:stop])
        start += s
    return y_old


class _PassReferee:
    """The pass rule of a task (:mod:`~ooc_kernels.families.dspdc._pass_rule`): where its
    iterations are cut into passes and, after each, whether it stops.  ``z``: the kernels'
    running ``A_k^T (w * y)`` (dense rows), else None and the product is formed from ``U``
    and ``V``.  Inactive (one segment per block, never a stop) without checkpoints."""

    def __init__(self, cfg, n_k, m, checks, b, weights, problem, y, z, rows, V):
        self.cfg, self.n_k, self.checks = cfg, n_k, checks
        self.t_min = max(1, math.ceil(cfg.local_passes * n_k / m))
        self.b, self.weights, self.problem, self.y, self.z = b, weights, problem, y, z
        self.rows, self.V = rows, V
        self.next = 0
        if checks:
            self.first = self.previous = self.dual()

    def dual(self) -> float:
        if self.z is not None:
            aty = self.z
        else:
            wy = self.y if self.weights is None else self.weights * self.y
            aty = self.V.T @ (self.rows.T.astype(np.float64, copy=False) @ wy)
        lam1, lam2, tilt = self.problem
        return local_dual_value(self.cfg.loss_id, self.y, self.b, self.weights, aty, lam1,
                                lam2, tilt, self.n_k)

    def segments(self, done: int, length: int):
        """``(lo, hi)`` slices of a block of ``length`` iterations that starts after
        ``done``, cut at the checkpoints."""
        lo = 0
        for t in self.checks[self.next:]:
            if t >= done + length:
                break
            if t > done + lo:
                yield lo, t - done
                lo = t - done
        yield lo, length

    def stop(self, done: int) -> bool:
        """Called after ``done`` iterations: whether the task stops there."""
        if self.next >= len(self.checks) or done != self.checks[self.next]:
            return False
        self.next += 1
        dual, previous = self.dual(), self.previous
        self.previous = dual
        return done >= self.t_min and stop_after(dual, previous, self.first)


def rows_loss(cfg: DSPDCConfig, rows: np.ndarray, V: np.ndarray | None, x: np.ndarray,
              b: np.ndarray, weights: np.ndarray | None) -> float:
    """``sum_i w_i phi_i(a_i^T x)`` over a task's rows (the solver's rows: standardized,
    with the intercept's column; ``U`` with the augmented ``V`` for factorized data).

    Examples
    --------
    >>> cfg = DSPDCConfig(loss_id=0, n_samples=2, n_features=1, lam1=0.0, lam2=1.0,
    ...                   Lambda=1.0)
    >>> rows_loss(cfg, np.array([[1.0], [2.0]]), None, np.array([1.0]), np.zeros(2), None)
    2.5
    """
    from ooc_kernels.losses.reference import loss_value_ref

    with np.errstate(over="ignore", invalid="ignore"):  # a diverged x: inf, checked after
        z = rows @ (V @ x) if V is not None else rows @ x
        values = loss_value_ref(cfg.loss_id, z, b)
        if weights is not None:
            values = np.where(weights > 0, weights * values, 0.0)
        return float(np.sum(values))


def state_arrays(state: DSPDCState) -> dict:
    """The arrays that make a DSPDC state (counters as 0-d arrays)."""
    return {"x": state.x, "w": state.w, "conj_sum": np.asarray(state.conj_sum),
            "versions": state.versions.table, "n_iter": np.asarray(state.n_iter),
            "n_dual_updates": np.asarray(state.n_dual_updates),
            "n_rounds": np.asarray(state.n_rounds)}


def make_case(seed: int = 0, *, shuffle: bool = False, weighted: bool = False):
    """A small logistic elastic-net problem: 4 chunks of 15 rows (the last 9), 6 features,
    ``m = 3`` duals and ``q = 2`` primal coordinates per iteration; its duals go to a fresh
    temporary work store, removed with the case's algorithm (or at exit).  ``weighted``:
    the rows carry integer ``sample_weight`` from 0 to 3 and the classes the weights
    ``(0.5, 2.0)``."""
    import shutil
    import weakref

    from ooc_kernels.families._spec import AlgorithmCase
    from ooc_kernels.families.dspdc.lambda_stats import lambda_value

    folder = tempfile.mkdtemp(prefix="ooc-dspdc-case-")
    rng = np.random.default_rng(seed)
    sizes = (15, 15, 15, 9)
    n, p = sum(sizes), 6
    X = rng.normal(size=(n, p))
    y = np.where(X @ rng.normal(size=p) + 0.3 * rng.normal(size=n) > 0, 7, 3)
    weights, extra = np.ones(n), {}
    if weighted:
        sw = rng.integers(0, 4, size=n).astype(np.float64)
        weights = sw * np.where(y == 7, 2.0, 0.5)
        extra = {"weighted": True, "class_weight": (0.5, 2.0),
                 "weight_scale": n / float(weights.sum())}
        weights = weights * extra["weight_scale"]
    config = DSPDCConfig(loss_id=LOSSES["logistic"], n_samples=n, n_features=p, lam1=1e-3,
                         lam2=5e-2, Lambda=lambda_value(np.sqrt(weights)[:, None] * X, 3, 2),
                         m=3, q=2, classes=(3, 7),
                         work_store=os.path.join(folder, "work"), **extra)
    bounds = np.cumsum((0,) + sizes)
    chunks = [{"X": X[a:b], "y": y[a:b]} for a, b in zip(bounds[:-1], bounds[1:])]
    dims = {"X": ("sample", "feature"), "y": ("sample",)}
    if weighted:
        for chunk, a, b in zip(chunks, bounds[:-1], bounds[1:]):
            chunk["sample_weight"] = sw[a:b]
        dims["sample_weight"] = ("sample",)
    algorithm = DSPDCAlgorithm(config)
    weakref.finalize(algorithm, shutil.rmtree, folder, ignore_errors=True)
    return AlgorithmCase(algorithm=algorithm,
                         state=init_state(config, len(sizes)), chunks=chunks,
                         dims=dims, seed=seed + 5)


def _sequential(case):
    from ooc_kernels.families.dspdc.reference import sequential_dspdc

    return sequential_dspdc(case)


def _register():
    from ooc_kernels.families._spec import SolverSpec, register_solver

    register_solver(SolverSpec(
        name="dspdc", algorithm=DSPDCAlgorithm, state_arrays=state_arrays,
        make_case=make_case, reference=_sequential,
        description="doubly stochastic primal-dual coordinate method (Yu, Lin, Yang 2015), "
                    "CoCoA+ rounds"))


_register()
