"""Doubly stochastic functional gradients (Dai et al. 2014) as a chunk algorithm.

The model is a table of ``n_blocks = n_features / block_size`` coefficient blocks
``coef[j]`` (``block_size`` x ``n_outputs``), block ``j`` being the random-feature block
regenerated from ``(feature_seed, j)``.

* **Growth phase** (Algorithm 1): while the model holds fewer than ``n_blocks`` blocks, every
  mini-batch step opens the next block, whose coefficient is the step's gradient, and decays
  all older ones (:func:`ooc_kernels.families.dsg.kernels.dsg_chunk_update`).
* **Full phase**: once all blocks are open, a step estimates the kernel with all of them,
  ``(1/n_blocks) sum_j z_j(x) z_j(x')`` (same expectation as one block, so the step size keeps
  its meaning), and updates every coefficient (:func:`ooc_kernels.families.dsg.kernels_full.dsg_full_update`).
  The prediction cost stops growing at ``n_features``.

Rounds of ``K`` tasks (``docs/algorithms/dsg_rounds.md``).  Every task starts
from the round's model ``x``.  With ``K = 1`` the task's local model is taken as it is: the
sequential algorithm exactly.  With ``K > 1`` the tasks get consecutive ranges of the global
step counter (and of block ids), as if their steps ran one after another, and each returns
its local run in a *summed form* (:class:`DSGDelta`); ``combine`` composes them in task
order into ``S``: the sequential algorithm over all the round's steps, except that each
task's gradients are taken at its own local model (stale by the other tasks' steps).  The
next model is ``x + w (S - x)`` with the weight ``w`` of :meth:`DSGAlgorithm.mixing_weight`,
between ``1 / K`` (close to averaging the local models) and 1 (adding the increments): 1
once the round's total step is stable, less while step sizes are large.  A task that trained
on nothing (all its rows skipped, or an empty chunk) is the identity of ``combine``.

Block ids.  The tasks of a round receive disjoint ranges of block ids, laid out from the
nominal chunk sizes (``ceil(rows / batch_size)`` each), because a task cannot know how many
rows the others will skip.  A task opens a prefix of its range; the next round starts after
the highest block actually opened, so a feature seed is never used twice, and every block
that received a coefficient lies below ``n_blocks_seen`` (prediction and ``coef_`` see it).
Ids a task skipped past stay zero: a few unused slots of the feature budget, only with
``on_invalid="skip"`` and ``K > 1``.

Precision.  Coefficients, decays and the combination are float64 everywhere; the random
features, their GEMMs and the loss gradients are computed in the data's dtype (float32 for
float32 data, the fast path), see ``docs/algorithms/dsg_kernels.md`` ("Precision").

No Dask here: these are pure functions over small frozen objects.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels._checks import RowOrigin, check_finite
from ooc_kernels._seeds import task_rng
from ooc_kernels.families.dsg._task_delta import DSGDelta, DSGTask
from ooc_kernels.families.dsg._targets import (_drop_invalid_rows, class_array, encode_targets,
                                               numeric_targets)
from ooc_kernels._jit.rows import permute_rows_inplace
from ooc_kernels.exceptions import InvalidDataError, ValidationError
from ooc_kernels.features.blocks import BlockSource
from ooc_kernels.features.cache import default_cache
from ooc_kernels.families.dsg._full_phase import full_phase_update
from ooc_kernels.families.dsg.kernels_threads import (all_finite, gathers_on_threads,
                                                      take_rows)
from ooc_kernels.families.dsg._predict import _affine, _predict_chunk, feature_map
from ooc_kernels._threads import kernel_threads, prediction_threads, task_threads
from ooc_kernels.families.dsg._reuse import (apply_betas, average_betas, beta_fields,
                                             compose_betas, new_blocks, run_growth)

__all__ = ["DSGConfig", "DSGState", "DSGTask", "DSGDelta", "DSGAlgorithm", "init_state",
           "step_sizes", "predict_chunk", "encode_targets", "numeric_targets", "feature_map"]

#: How the ``K > 1`` local models of a round are combined (``docs/algorithms/dsg_rounds.md``):
#: ``"adaptive"`` (the default) adds the tasks' increments with the weight of
#: :meth:`DSGAlgorithm.mixing_weight`, ``"sum"`` adds them (weight 1), ``"average"`` takes
#: the row-weighted mean of the local models (parameter mixing;
#: kept for comparisons).
COMBINATIONS = ("adaptive", "sum", "average")

#: The residual factor the ``"adaptive"`` weight may leave on the quadratic model's top
#: direction in a round (:meth:`DSGAlgorithm.mixing_weight`): every direction's residual
#: factor is at most ``max(|e|, contraction)``, ``e`` that of one task's run (averaging's).
#: 0 (the default): no direction contracts less than under averaging.  Larger values add
#: more of the increments while a task's steps remove the top direction: fewer rows where
#: the slow directions limit the fit, more where the gradient noise does
#: (``docs/algorithms/dsg_rounds.md``, "A contraction floor"); kept for comparisons.
ROUND_CONTRACTION = 0.0

#: Upper bound on the bytes of random-feature parameters generated at once in prediction.


@dataclass(frozen=True)
class DSGConfig:
    """Everything a chunk task needs besides the state (hashable, picklable, small)."""

    loss_id: int
    target: str  # "regression" | "binary" | "ovr" | "softmax"
    n_outputs: int
    n_features_in: int
    block_size: int
    n_blocks: int
    bandwidth: float
    feature_seed: int
    alpha: float
    batch_size: int
    learning_rate: str
    eta0: float
    t0: float
    dtype: str
    classes: tuple | None = None
    shuffle: bool = True
    on_invalid: str = "error"  # "error" | "skip": rows with NaN/inf in X or y
    average: int = 0  # average the iterates from this global step on (0: no averaging)
    class_weight: tuple | None = None  # a weight per class (aligned with ``classes``)
    loss_param: float = 0.0
    x_shift: tuple | None = None  # the model sees (x - x_shift) / x_scale (standardized X)
    x_scale: tuple | None = None
    y_shift: float = 0.0  # regression: trained on (y - y_shift) / y_scale, predicts back
    y_scale: float = 1.0
    weight_scale: float = 1.0  # row weights are multiplied by this (1 / their mean)
    # Largest eigenvalue of the data term's expected Hessian (loss curvature times the
    # weighted kernel operator), estimated at setup; it only sets how K > 1 tasks of a
    # round are combined (DSGAlgorithm.mixing_weight).  1 bounds it for the squared loss
    # with unit weights (k(x, x) = 1).
    curvature: float = 1.0
    # Bytes of feature memory the full phase of a chunk task is planned for (stacked or
    # tiled, tile size, super-step length: _dsg_full.plan_full_phase).  The estimator sets
    # the client's feature-cache budget at setup, so the plan, and with it the last bits of
    # the model, do not depend on the worker that runs a task; None (configs written before
    # the field): the budget of the running process's cache.
    feature_budget: int | None = None
    # The feature map (ooc_kernels.features.maps): its sampler, nonlinearity, scale and
    # exact kernel; ``bandwidth`` is its parameter.  Configs saved without it are "rbf".
    kernel: str = "rbf"
    # Per-input widths (``bandwidth`` given as an array, or chosen by ARD), in the units of
    # the standardized input, for ``bandwidth_`` and the saved model only: they are folded
    # into ``x_shift``/``x_scale`` (the model sees ``(x - x_shift) / x_scale`` and an
    # isotropic kernel of width ``bandwidth``), so nothing else reads them.  None: isotropic.
    input_bandwidths: tuple | None = None
    # The growth steps (families/dsg/_reuse.py): "new" (DSG), "uniform" (UDSG) or "check"
    # (CDSG).  Configs saved without it are "new".
    update: str = "new"
    # Threads of a chunk task (the estimators' ``n_jobs``: None shares the threads where the
    # task runs, ooc_kernels._threads.task_threads).  The model does not depend on
    # it: the parallel kernels give the sequential kernels' result bit for bit.
    n_jobs: int | None = None


@dataclass(frozen=True)
class DSGState:
    """The model between rounds.

    Attributes
    ----------
    coef : ndarray of shape (n_blocks, block_size, n_outputs), float64
    n_iter : int
        Global step counter ``t`` (mini-batch iterations so far, for the step size).
    n_blocks_seen : int
        Blocks opened so far (at most ``n_blocks``); the next growth step opens this one.
    n_samples_seen : int
        Row visits so far: every epoch adds the rows it trained on.
    n_samples_skipped : int
        Rows left out by ``on_invalid="skip"`` in the current (or last) epoch: the invalid
        rows of one pass over the data, each counted once.
    avg : ndarray like ``coef``, or None
        The averaged iterate: the mean of the models after the ``n_avg`` averaged steps.
    n_avg : int
    loss_sum, loss_weight : float
        Running totals of the weighted progressive-validation loss (each row's loss at the
        prediction its step used) and of the weights.
    beta : ndarray of shape (n_blocks, n_outputs), or None
        ``update="check"``: each block's coefficient without its feature factor, which the
        expected-descent test reads (:mod:`ooc_kernels.families.dsg.kernels_reuse`).
    """

    coef: np.ndarray
    n_iter: int = 0
    n_blocks_seen: int = 0
    n_samples_seen: int = 0
    n_samples_skipped: int = 0
    avg: np.ndarray | None = None
    n_avg: int = 0
    loss_sum: float = 0.0
    loss_weight: float = 0.0
    beta: np.ndarray | None = None

    @property
    def n_blocks_used(self) -> int:
        return min(self.n_blocks_seen, self.coef.shape[0])

    @property
    def model_coef(self) -> np.ndarray:
        """The coefficients that predict: the averaged iterate once it exists, else the
        current one."""
        return self.avg if (self.avg is not None and self.n_avg > 0) else self.coef


def init_state(config: DSGConfig) -> DSGState:
    """The zero model (and a zero averaged iterate when the config averages)."""
    shape = (config.n_blocks, config.block_size, config.n_outputs)
    beta = np.zeros(shape[::2]) if config.update == "check" else None
    return DSGState(coef=np.zeros(shape), avg=np.zeros(shape) if config.average else None,
                    beta=beta)


def step_sizes(config: DSGConfig, t: np.ndarray) -> np.ndarray:
    """Step sizes ``gamma_t`` for 1-based global steps ``t``.

    ``"inverse"``: ``eta0 / (t + t0)`` (the paper's ``theta / t`` is ``eta0 = theta, t0 = 0``);
    ``"constant"``: ``eta0``.
    """
    t = np.asarray(t, dtype=np.float64)
    if config.learning_rate == "constant":
        return np.full(t.shape, float(config.eta0))
    return float(config.eta0) / (t + float(config.t0))



def predict_chunk(config: DSGConfig, state: DSGState, X: np.ndarray) -> np.ndarray:
    """Decision values (n, n_outputs) of the model for one chunk (Algorithm 2).

    Feature blocks are regenerated from their seeds (through the process-wide cache) in
    groups whose parameters take at most ~32 MiB, so memory is bounded by the chunk.
    """
    with single_threaded_blas(), prediction_threads(config.n_jobs):
        F = _predict_chunk(config, state.model_coef, state.n_blocks_used, X)
    if config.target == "regression":  # in y's units, in float64 (a far mean keeps its digits)
        F = F.astype(np.float64) * config.y_scale + config.y_shift
    return F


class DSGAlgorithm:
    """The DSG chunk algorithm for :func:`ooc_kernels.parallel.engine.run_rounds`."""

    def __init__(self, config: DSGConfig, combination: str = "adaptive",
                 contraction: float = ROUND_CONTRACTION):
        if combination not in COMBINATIONS:
            raise ValidationError(
                f"combination must be one of {sorted(COMBINATIONS)}, got {combination!r}."
            )
        if not 0.0 <= contraction < 1.0:
            raise ValidationError(
                f"contraction must be in [0, 1), got {contraction!r}; 0 keeps every "
                "direction at least as contracted as averaging."
            )
        self.config = config
        self.combination = combination
        self.contraction = float(contraction)

    def n_steps(self, n_rows: int) -> int:
        return math.ceil(n_rows / self.config.batch_size)

    def make_tasks(self, state: DSGState, info) -> list[DSGTask]:
        """One task per group.  With ``K > 1`` tasks (and a summing combination) every task
        gets its own range of global steps and of block ids, laid out in task order from
        the nominal row counts, and the round's mixing weight (:meth:`mixing_weight`)."""
        k = len(info.groups)
        summed = k > 1 and self.combination != "average"
        mix = self.mixing_weight(state, info) if summed else 1.0
        tasks, offset, t = [], state.n_blocks_seen, state.n_iter
        for group, sizes in zip(info.groups, info.sizes):
            tasks.append(DSGTask(chunk=group[0], epoch=info.epoch, round=info.round,
                                 seed=info.seed, block_start=offset, t_start=t,
                                 chunks=tuple(group), sizes=tuple(sizes),
                                 n_tasks=k if summed else 1, mix=mix,
                                 round_tasks=max(1, k)))
            steps = self.n_steps(sum(sizes))  # nominal: before any row is skipped
            offset += new_blocks(self.config, t, steps, state.n_blocks_used, offset)
            if summed:
                t += steps
        return tasks

    def mixing_weight(self, state: DSGState, info) -> float:
        """The weight ``w`` of a round of ``K`` tasks: the next model is
        ``x + w (S - x)``, ``S`` the tasks' local runs composed (their increments added).

        ``"adaptive"``: ``w = min(1, max(1 / K, (1 + max(|e|, rho)) / (K (1 - e))))``,
        ``e = prod_s (1 - gamma_s (lambda + alpha))`` over the first ``m`` steps of the round
        (``m`` the most steps a task of the round takes, ``lambda`` the config's
        ``curvature``): the factor by which one task's local run shrinks the error along
        the Hessian's top eigendirection of the quadratic model; ``rho`` is the
        algorithm's ``contraction`` (:data:`ROUND_CONTRACTION`, 0, by default).  With it
        every eigendirection's error shrinks by the factor ``max(|e_i|, rho)`` or more per
        round; with ``rho = 0`` no eigendirection contracts less than under averaging
        (``w = 1 / K``, which the rule then gives whenever ``e <= 0``), and ``w = 1``
        (plain adding: the sequential algorithm with stale gradients) once the round's
        total step is small against ``1 / lambda``.  ``"sum"``: 1.  See
        ``docs/algorithms/dsg_rounds.md``.

        Examples
        --------
        A round of 4 one-step tasks whose step removes the top direction (``e = 0``)
        averages, or adds ``(1 + rho) / 4`` of the summed increments with a floor ``rho``:

        >>> from types import SimpleNamespace
        >>> cfg = DSGConfig(loss_id=0, target="regression", n_outputs=1, n_features_in=1,
        ...                 block_size=1, n_blocks=1, bandwidth=1.0, feature_seed=0,
        ...                 alpha=0.0, batch_size=1, learning_rate="constant", eta0=1.0,
        ...                 t0=0.0, dtype="float64", curvature=1.0)
        >>> info = SimpleNamespace(groups=[(0,), (1,), (2,), (3,)], sizes=[(1,)] * 4)
        >>> DSGAlgorithm(cfg).mixing_weight(init_state(cfg), info)
        0.25
        >>> DSGAlgorithm(cfg, contraction=0.5).mixing_weight(init_state(cfg), info)
        0.375
        """
        k = len(info.groups)
        if k <= 1 or self.combination == "sum":
            return 1.0
        cfg = self.config
        m = max((self.n_steps(sum(sizes)) for sizes in info.sizes), default=0)
        gammas = step_sizes(cfg, state.n_iter + 1 + np.arange(m))
        e = float(np.prod(1.0 - gammas * (float(cfg.curvature) + float(cfg.alpha))))
        if not e < 1.0:  # no curvature, no step: nothing can overshoot
            return 1.0
        bound = max(abs(e), self.contraction)  # the residual factor allowed on top
        return float(min(1.0, max(1.0 / k, (1.0 + bound) / (k * (1.0 - e)))))

    def chunk_step(self, state: DSGState, batch: dict, task: DSGTask) -> DSGDelta:
        """The local steps over one task's rows: ``batch["X"]``, ``batch["y"]`` and, when
        given, ``batch["sample_weight"]``."""
        threads = task_threads(self.config.n_jobs, task.round_tasks)
        with single_threaded_blas(), kernel_threads(threads):
            return self._chunk_step(state, batch["X"], batch.get("y"),
                                    batch.get("sample_weight"), task)

    def _weights(self, sw, Y: np.ndarray, y, origin: RowOrigin) -> np.ndarray:
        """Per-row weights: the sample weights times the class weights, times
        ``weight_scale`` (one over their mean on the rows sampled at setup: weights are
        relative, so that repeating every row and doubling every weight are the same)."""
        cfg = self.config
        n = len(Y)
        w = np.ones(n) if sw is None else np.asarray(sw, dtype=np.float64).reshape(-1)
        if sw is not None:
            check_finite(w, "sample_weight", origin)
            if (w < 0).any():
                row = int(np.flatnonzero(w < 0)[0])
                chunk, where = origin.locate(row)
                raise InvalidDataError(
                    f"sample_weight has a negative value ({w[row]!r}) in chunk {chunk}, row "
                    f"{where}; weights must be >= 0."
                )
        if cfg.class_weight is not None:
            idx = np.searchsorted(class_array(cfg.classes), np.asarray(y).reshape(-1))
            w = w * np.asarray(cfg.class_weight)[idx]
        if cfg.weight_scale != 1.0:
            w = w * cfg.weight_scale
        return np.ascontiguousarray(w)

    def _steps(self, t_start: int, m: int) -> tuple[np.ndarray, np.ndarray]:
        """Step sizes and averaged flags of global steps ``t_start + 1 .. t_start + m``."""
        t = t_start + 1 + np.arange(m)
        cfg = self.config
        averaged = (t >= cfg.average) if cfg.average else np.zeros(m, dtype=bool)
        return step_sizes(cfg, t), np.ascontiguousarray(averaged)

    def _chunk_step(self, state: DSGState, X, y, sw, task: DSGTask) -> DSGDelta:
        delta = self._local_step(state, X, y, sw, task)
        if task.n_tasks > 1:
            return self._summed(state, delta, task)
        return delta

    def _summed(self, state: DSGState, delta: DSGDelta, task: DSGTask) -> DSGDelta:
        """A task's local run in the summed form that :meth:`combine` composes.

        The local model is ``coef * d + B`` (``d``: the product of the step factors
        ``1 - gamma_t alpha`` of the task's steps, ``B``: what its gradients added, decayed
        by its later steps) and the sum of its averaged iterates is ``coef * A + P``
        (``A``: the sum over averaged steps of the decay so far).  ``B`` is the new blocks
        in the growth phase, a dense array once the task reached the full phase.
        """
        cfg = self.config
        m = delta.max_steps
        if m == 0:  # no work: the identity
            return replace(delta, summed=True, decay=1.0, avg_a=1.0, avg_c=0.0,
                           avg_coefs=None, avg_dense=None, n_steps=0, mix=task.mix)
        gammas, averaged = self._steps(task.t_start, m)
        factors = 1.0 - gammas * float(cfg.alpha)
        if delta.factors is not None:  # CDSG's growth steps: the test's step sizes
            factors[:len(delta.factors)] = delta.factors
        prefix = np.cumprod(factors)
        d, a_sum = float(prefix[-1]), float(prefix[averaged].sum())
        k0 = state.n_avg
        k1 = k0 + delta.n_avg
        if delta.dense is None:  # growth only: the new blocks (their averaged sums / k1)
            avg_coefs = None if delta.avg_coefs is None else delta.avg_coefs * k1
            return replace(delta, summed=True, decay=d, avg_a=1.0, avg_c=a_sum,
                           avg_coefs=avg_coefs, avg_dense=None, n_steps=m, mix=task.mix)
        # full phase: the whole local model and the mean of the averaged iterates
        dense = delta.dense - state.coef * d
        avg_dense = None
        if delta.avg_dense is not None and state.avg is not None:
            sums = delta.avg_dense * k1 - state.avg * k0 if k0 else delta.avg_dense * k1
            avg_dense = sums - state.coef * a_sum
        return replace(delta, summed=True, decay=d, dense=dense, avg_a=1.0, avg_c=a_sum,
                       avg_coefs=None, avg_dense=avg_dense, n_steps=m, mix=task.mix)

    def _local_step(self, state: DSGState, X, y, sw, task: DSGTask) -> DSGDelta:
        cfg = self.config
        dtype = np.dtype(cfg.dtype)
        X = np.asarray(X)  # one chunk, or one group of chunks
        origin = task.origin
        if X.ndim != 2 or X.shape[1] != cfg.n_features_in:
            raise ValidationError(
                f"{origin.describe()} has shape {X.shape}; expected (n, "
                f"{cfg.n_features_in})."
            )
        X = np.ascontiguousarray(X, dtype=dtype)
        sw = None if sw is None else np.asarray(sw, dtype=np.float64).reshape(-1)
        n_skipped = 0
        if cfg.on_invalid == "skip" and X.shape[0]:
            X, y, sw, n_skipped, origin = _drop_invalid_rows(cfg, X, y, sw, origin)
        n = X.shape[0]
        if n == 0:  # no work: the identity of the combination
            return DSGDelta(decay=1.0, weight=0.0, count=1,
                            block_ids=np.zeros(0, np.int64),
                            coefs=np.zeros((0, cfg.block_size, cfg.n_outputs)), dense=None,
                            max_steps=0, n_samples=0, block_end=0, n_skipped=n_skipped)
        if not all_finite(X):  # on the task's threads; check_finite names the bad value
            check_finite(X, "X", origin)
        if feature_map(cfg).rows is not None:  # hierarchical features: the rows become psi(X)
            X = feature_map(cfg).map_rows(X, _affine(cfg), dtype)
        Y = encode_targets(cfg, y, origin)
        w = self._weights(sw, Y, y, origin)
        if cfg.shuffle:
            order = task_rng(task.seed, task.epoch, task.round, task.chunk).permutation(n)
            own = len(task.chunks) > 1 and X.flags.owndata and X.flags.writeable
            if own and not gathers_on_threads(X):
                # a group's rows arrive concatenated in an array of the task's own: mixing
                # them in place keeps the task at one copy of its group
                permute_rows_inplace(X, order)
            else:  # a copy (a single chunk may be a view of the caller's data), gathered
                X = take_rows(X, order)  # by the task's threads: at most 64 MiB more
            Y, w = Y[order], w[order]
        Y = np.ascontiguousarray(Y)
        m = self.n_steps(n)
        gammas, averaged = self._steps(task.t_start, m)
        fmap = feature_map(cfg)
        params = (float(cfg.alpha), int(cfg.batch_size), int(cfg.loss_id),
                  fmap.feature_scale(cfg.block_size), float(cfg.loss_param))
        cache = default_cache()
        grown = run_growth(cfg, state, X, Y, w, task, (gammas, averaged), params, fmap, cache)
        g, block_ids, new_coef, decay = grown.steps, grown.ids, grown.coefs, grown.decay
        avg_new, avg_old, n_avg = grown.avg_new, grown.avg_old, grown.n_avg
        loss_sum, loss_weight = grown.loss_sum, grown.loss_weight
        empty = np.zeros((0, cfg.block_size, cfg.n_outputs))
        k0 = state.n_avg
        common = dict(weight=float(n), count=1, max_steps=m, n_samples=n,
                      block_end=grown.block_end, n_skipped=n_skipped, factors=grown.factors,
                      **beta_fields(grown))
        if g == m:
            k1 = k0 + n_avg
            avg = dict(avg_a=1.0, avg_c=0.0, avg_coefs=None, n_avg=n_avg)
            if n_avg:  # mean of the k0 earlier models and the n_avg of this task
                avg = dict(avg_a=k0 / k1, avg_c=avg_old / k1, avg_coefs=avg_new / k1,
                           n_avg=n_avg)
            return DSGDelta(decay=float(decay), block_ids=block_ids, coefs=new_coef,
                            dense=None, loss_sum=loss_sum, loss_weight=loss_weight,
                            **avg, **common)
        # Full phase for the remaining rows, from the local model reached so far.
        local = state.coef * decay
        np.add.at(local, block_ids, new_coef)
        mean, k1 = empty, k0 + n_avg
        if state.avg is not None:
            mean = state.avg * (k0 / k1) if k1 else state.avg.copy()
            if n_avg:
                mean += state.coef * (avg_old / k1)
                np.add.at(mean, block_ids, avg_new / k1)
        rows = g * cfg.batch_size
        # all blocks stacked when they fit in the config's feature budget, else tiles
        source = BlockSource(cfg.feature_seed, cfg.n_features_in, cfg.block_size,
                             cfg.bandwidth, dtype, cache=cache, affine=_affine(cfg),
                             kernel=fmap)
        after, mean, k2, more_loss, more_weight = full_phase_update(
            X[rows:], Y[rows:], w[rows:], local, mean, k1, (gammas[g:], averaged[g:]),
            params, source, budget=cfg.feature_budget)
        dense_avg = mean if state.avg is not None else None
        return DSGDelta(decay=0.0, block_ids=np.zeros(0, np.int64), coefs=empty, dense=after,
                        avg_a=0.0 if dense_avg is not None else 1.0, avg_c=0.0,
                        avg_coefs=None, avg_dense=dense_avg, n_avg=k2 - k0,
                        loss_sum=loss_sum + more_loss, loss_weight=loss_weight + more_weight,
                        **common)

    def combine(self, a: DSGDelta, b: DSGDelta) -> DSGDelta:
        """The tasks of ``a`` then those of ``b``: their local runs composed in task order
        (summed form), or with ``combination="average"`` the weighted average of two
        partial averages (weights: rows trained on)."""
        if a.summed != b.summed:
            raise ValidationError(
                "combine() got a delta of a K = 1 round and one of a K > 1 round; only the "
                "deltas of the tasks of one round are combined."
            )
        if a.summed:
            return _compose(a, b)
        counters = dict(count=a.count + b.count, max_steps=max(a.max_steps, b.max_steps),
                        n_samples=a.n_samples + b.n_samples,
                        block_end=max(a.block_end, b.block_end),
                        n_skipped=a.n_skipped + b.n_skipped, n_avg=max(a.n_avg, b.n_avg),
                        loss_sum=a.loss_sum + b.loss_sum,
                        loss_weight=a.loss_weight + b.loss_weight)
        if b.weight == 0:  # a task without work is the identity
            return replace(a, **counters)
        if a.weight == 0:
            return replace(b, **counters)
        weight = a.weight + b.weight
        wa, wb = a.weight / weight, b.weight / weight
        block_ids = np.concatenate([a.block_ids, b.block_ids])
        avg_coefs = None
        if a.avg_coefs is not None or b.avg_coefs is not None:
            avg_coefs = np.concatenate([_or_zeros(a.avg_coefs, a.coefs) * wa,
                                        _or_zeros(b.avg_coefs, b.coefs) * wb])
        return DSGDelta(decay=a.decay * wa + b.decay * wb, weight=weight,
                        block_ids=block_ids,
                        coefs=np.concatenate([a.coefs * wa, b.coefs * wb]),
                        dense=_mix(a.dense, wa, b.dense, wb),
                        avg_a=a.avg_a * wa + b.avg_a * wb, avg_c=a.avg_c * wa + b.avg_c * wb,
                        avg_coefs=avg_coefs, avg_dense=_mix(a.avg_dense, wa, b.avg_dense, wb),
                        **average_betas(a, b, wa, wb), **counters)

    def apply(self, state: DSGState, delta: DSGDelta, info=None) -> DSGState:
        """The next state: for ``K > 1``, ``x + w (S - x)`` (see :meth:`mixing_weight`),
        the averaged iterate and the step counter (every task's steps) alike."""
        skipped = _skipped(state, delta, info)
        if delta.summed:
            return self._apply_summed(state, delta, skipped)
        coef = state.coef * delta.decay
        np.add.at(coef, delta.block_ids, delta.coefs)
        if delta.dense is not None:
            coef += delta.dense
        avg = state.avg
        if avg is not None and (delta.avg_a != 1.0 or delta.avg_c != 0.0
                                or delta.avg_coefs is not None or delta.avg_dense is not None):
            avg = state.avg * delta.avg_a + state.coef * delta.avg_c
            if delta.avg_coefs is not None:
                np.add.at(avg, delta.block_ids, delta.avg_coefs)
            if delta.avg_dense is not None:
                avg += delta.avg_dense
        return replace(state, coef=coef, avg=avg, n_avg=state.n_avg + delta.n_avg,
                       beta=apply_betas(state.beta, delta),
                       n_iter=state.n_iter + delta.max_steps,
                       n_blocks_seen=min(max(state.n_blocks_seen, delta.block_end),
                                         self.config.n_blocks),
                       n_samples_seen=state.n_samples_seen + delta.n_samples,
                       n_samples_skipped=skipped,
                       loss_sum=state.loss_sum + delta.loss_sum,
                       loss_weight=state.loss_weight + delta.loss_weight)

    def _apply_summed(self, state: DSGState, delta: DSGDelta, skipped: int) -> DSGState:
        # model: x + w (x D + B - x); averaged iterates: the N iterates of the composed run
        # (sum x A + P) mixed alike, N (1 - w) x + w (x A + P)
        w = delta.mix
        coef = state.coef * (1.0 + w * (delta.decay - 1.0))
        if len(delta.block_ids):
            np.add.at(coef, delta.block_ids, delta.coefs * w)
        if delta.dense is not None:
            coef += delta.dense * w
        avg = state.avg
        k0, k1 = state.n_avg, state.n_avg + delta.n_avg
        if avg is not None and delta.n_avg:
            total = state.avg * k0 + state.coef * (delta.n_avg * (1.0 - w) + w * delta.avg_c)
            if delta.avg_coefs is not None:
                np.add.at(total, delta.block_ids, delta.avg_coefs * w)
            if delta.avg_dense is not None:
                total += delta.avg_dense * w
            avg = total / k1
        return replace(state, coef=coef, avg=avg, n_avg=k1,
                       beta=apply_betas(state.beta, delta, w),
                       n_iter=state.n_iter + delta.n_steps,
                       n_blocks_seen=min(max(state.n_blocks_seen, delta.block_end),
                                         self.config.n_blocks),
                       n_samples_seen=state.n_samples_seen + delta.n_samples,
                       n_samples_skipped=skipped,
                       loss_sum=state.loss_sum + delta.loss_sum,
                       loss_weight=state.loss_weight + delta.loss_weight)


def _skipped(state: DSGState, delta: DSGDelta, info) -> int:
    """Rows left out (``on_invalid="skip"``) in the pass over the data this round belongs
    to: the count starts again with every epoch's first round, so an invalid row is counted
    once however many epochs visit it (``info=None``, a round outside an epoch: counted on).
    """
    first = info is not None and info.round == 0
    return (0 if first else state.n_samples_skipped) + delta.n_skipped


def _compose(a: DSGDelta, b: DSGDelta) -> DSGDelta:
    """Task group ``a`` then task group ``b`` in summed form: the affine maps
    ``(x, s) -> (x d + B, s + x A + P)`` of the model ``x`` and the sum ``s`` of averaged
    iterates, composed."""
    da, db = a.decay, b.decay
    coefs = np.concatenate([a.coefs * db, b.coefs])
    avg_coefs = None
    if a.avg_coefs is not None or b.avg_coefs is not None or (b.avg_c and len(a.coefs)):
        avg_coefs = np.concatenate([_or_zeros(a.avg_coefs, a.coefs) + a.coefs * b.avg_c,
                                    _or_zeros(b.avg_coefs, b.coefs)])
    avg_dense = _mix(a.avg_dense, 1.0, b.avg_dense, 1.0)
    if a.dense is not None and b.avg_c:
        avg_dense = a.dense * b.avg_c if avg_dense is None else avg_dense + a.dense * b.avg_c
    return DSGDelta(decay=da * db, weight=a.weight + b.weight, count=a.count + b.count,
                    block_ids=np.concatenate([a.block_ids, b.block_ids]), coefs=coefs,
                    dense=_mix(a.dense, db, b.dense, 1.0),
                    max_steps=max(a.max_steps, b.max_steps),
                    n_samples=a.n_samples + b.n_samples,
                    block_end=max(a.block_end, b.block_end),
                    n_skipped=a.n_skipped + b.n_skipped, avg_a=1.0,
                    avg_c=a.avg_c + da * b.avg_c, avg_coefs=avg_coefs, avg_dense=avg_dense,
                    n_avg=a.n_avg + b.n_avg, loss_sum=a.loss_sum + b.loss_sum,
                    loss_weight=a.loss_weight + b.loss_weight, summed=True,
                    n_steps=a.n_steps + b.n_steps, mix=a.mix, **compose_betas(a, b))


def _mix(a, wa, b, wb):
    """``a wa + b wb`` where None stands for zero."""
    if a is None and b is None:
        return None
    if b is None:
        return a * wa
    if a is None:
        return b * wb
    return a * wa + b * wb


def _or_zeros(values, like):
    return np.zeros_like(like) if values is None else values


# ---------------------------------------------------------------------------------------
# registration: the contract suite's problem and the sequential reference
# ---------------------------------------------------------------------------------------
def state_arrays(state: DSGState) -> dict:
    """The arrays that make a DSG state (and its counters, as 0-d arrays)."""
    out = {"coef": state.coef, "n_iter": np.asarray(state.n_iter),
           "n_blocks_seen": np.asarray(state.n_blocks_seen),
           "n_samples_seen": np.asarray(state.n_samples_seen),
           "n_avg": np.asarray(state.n_avg), "loss_sum": np.asarray(state.loss_sum),
           "loss_weight": np.asarray(state.loss_weight)}
    if state.avg is not None:
        out["avg"] = state.avg
    if state.beta is not None:
        out["beta"] = state.beta
    return out


def make_case(seed: int = 0, *, shuffle: bool = False, update: str = "new"):
    """A small weighted regression problem: 5 chunks of 20 rows (the last 13), batches of
    4, 8 blocks of 8 features, so one pass crosses from the growth into the full phase;
    iterates are averaged from step 5 on.  With ``update="check"`` the steps are larger
    (``eta0=8, t0=0``), so that old blocks pass the test in several chunks."""
    from ooc_kernels.losses import get_loss
    from ooc_kernels.families._spec import AlgorithmCase

    rng = np.random.default_rng(seed)
    sizes = (20, 20, 20, 20, 13)
    X = rng.normal(size=(sum(sizes), 3))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=len(X))
    config = DSGConfig(loss_id=get_loss("squared").loss_id, target="regression",
                       n_outputs=1, n_features_in=3, block_size=8, n_blocks=8,
                       bandwidth=1.2, feature_seed=seed + 17, alpha=1e-2, batch_size=4,
                       learning_rate="inverse", eta0=8.0 if update == "check" else 2.0,
                       t0=0.0 if update == "check" else 4.0, dtype="float64",
                       shuffle=shuffle, average=5, x_shift=(0.1, -0.2, 0.3),
                       x_scale=(1.5, 0.8, 1.1), y_shift=0.25, y_scale=0.9, update=update)
    w = rng.uniform(0.5, 1.5, size=len(X))
    bounds = np.cumsum((0,) + sizes)
    chunks = [{"X": X[a:b], "y": y[a:b], "sample_weight": w[a:b]}
              for a, b in zip(bounds[:-1], bounds[1:])]
    return AlgorithmCase(algorithm=DSGAlgorithm(config), state=init_state(config),
                         chunks=chunks, dims={"X": ("sample", "feature"), "y": ("sample",),
                                              "sample_weight": ("sample",)},
                         seed=seed + 3)


def _reference(case):
    from ooc_kernels.families.dsg.reference import sequential_dsg

    return sequential_dsg(case.algorithm.config, case.state, case.chunks)


def _register():
    from ooc_kernels.families._spec import SolverSpec, register_solver

    register_solver(SolverSpec(
        name="dsg", algorithm=DSGAlgorithm, state_arrays=state_arrays, make_case=make_case,
        reference=_reference,
        description="doubly stochastic functional gradients (Dai et al. 2014)"))
    for update, what in (("uniform", "old blocks drawn uniformly (UDSG)"),
                         ("check", "old blocks checked for expected descent (CDSG)")):
        register_solver(SolverSpec(
            name=f"dsg_{update}", algorithm=DSGAlgorithm, state_arrays=state_arrays,
            make_case=functools.partial(make_case, update=update), reference=_reference,
            description=f"DSG with {what}, Li and Poczos"))


_register()
