"""Doubly stochastic functional gradients (Dai et al. 2014) as a chunk algorithm.

The model is a table of ``n_blocks = n_features / block_size`` coefficient blocks
``coef[j]`` (``block_size`` x ``n_outputs``), block ``j`` being the random-feature block
regenerated from ``(feature_seed, j)``.

* **Growth phase** (Algorithm 1): while the model holds fewer than ``n_blocks`` blocks, every
  mini-batch step opens the next block, whose coefficient is the step's gradient, and decays
  all older ones (:func:`ooc_kernels._jit.dsg.dsg_chunk_update`).
* **Full phase**: once all blocks are open, a step estimates the kernel with all of them,
  ``(1/n_blocks) sum_j z_j(x) z_j(x')`` (same expectation as one block, so the step size keeps
  its meaning), and updates every coefficient (:func:`ooc_kernels._jit.dsg.dsg_full_update`).
  The prediction cost stops growing at ``n_features``.

A chunk task returns a :class:`DSGDelta` describing its local model as
``state.coef * decay + (new blocks at their ids) + dense``: pure growth gives a scalar decay
and the new blocks (small); a task that reached the full phase gives ``decay = 0`` and its
whole local model as ``dense``.  That description is linear, so averaging the ``K`` local
models of a round (DESIGN.md section 5: old coefficients times the mean decay, new blocks
added with weight ``1/K``) is a sum of deltas divided by ``K``.  With ``K = 1`` this is the
sequential algorithm exactly.

No Dask here: these are pure functions over small frozen objects.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels._checks import check_finite
from ooc_kernels._jit.dsg import dsg_chunk_update, dsg_full_update, dsg_predict
from ooc_kernels.exceptions import InvalidDataError, ValidationError
from ooc_kernels.features.cache import default_cache
from ooc_kernels.features.rbf import feature_scale, stacked_block_params
from ooc_kernels.parallel.schedule import task_rng

__all__ = ["DSGConfig", "DSGState", "DSGTask", "DSGDelta", "DSGAlgorithm", "init_state",
           "step_sizes", "predict_chunk", "encode_targets"]

#: Upper bound on the bytes of random-feature parameters generated at once in prediction.
_PREDICT_GROUP_BYTES = 32 * 2**20


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
    """

    coef: np.ndarray
    n_iter: int = 0
    n_blocks_seen: int = 0
    n_samples_seen: int = 0
    n_samples_skipped: int = 0

    @property
    def n_blocks_used(self) -> int:
        return min(self.n_blocks_seen, self.coef.shape[0])


@dataclass(frozen=True)
class DSGTask:
    chunk: int
    epoch: int
    round: int
    seed: int
    block_start: int
    t_start: int


@dataclass(frozen=True)
class DSGDelta:
    """Sum over ``count`` tasks of local models ``coef * decay + blocks + dense``."""

    decay_sum: float
    count: int
    block_ids: np.ndarray
    coefs: np.ndarray
    dense: np.ndarray | None
    max_steps: int
    n_samples: int
    n_new_blocks: int
    n_skipped: int = 0


def init_state(config: DSGConfig) -> DSGState:
    """The zero model."""
    return DSGState(coef=np.zeros((config.n_blocks, config.block_size, config.n_outputs)))


def step_sizes(config: DSGConfig, t: np.ndarray) -> np.ndarray:
    """Step sizes ``gamma_t`` for 1-based global steps ``t``.

    ``"inverse"``: ``eta0 / (t + t0)`` (the paper's ``theta / t`` is ``eta0 = theta, t0 = 0``);
    ``"constant"``: ``eta0``.
    """
    t = np.asarray(t, dtype=np.float64)
    if config.learning_rate == "constant":
        return np.full(t.shape, float(config.eta0))
    return float(config.eta0) / (t + float(config.t0))


def encode_targets(config: DSGConfig, y: np.ndarray, chunk: int) -> np.ndarray:
    """Targets of one chunk as the (n, n_outputs) matrix the numba losses expect."""
    dtype = np.dtype(config.dtype)
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if config.target == "regression":
        try:
            yf = y.astype(dtype, copy=False)
        except (TypeError, ValueError) as err:
            raise InvalidDataError(
                f"y holds values that are not numbers (dtype {y.dtype}, e.g. "
                f"{_first_value(y)!r}) in chunk {chunk} ({err}); a regressor needs numeric "
                "targets: convert them, e.g. y.astype('float32'), or use a classifier for "
                "labels."
            ) from None
        check_finite(yf, "y", chunk)
        return yf.reshape(-1, 1)
    classes = np.asarray(config.classes)
    try:
        idx = np.searchsorted(classes, y)
    except TypeError:  # labels of a kind that cannot be compared with the classes
        raise InvalidDataError(
            f"labels of dtype {y.dtype} (e.g. {_first_value(y)!r}) in chunk {chunk} cannot be "
            f"compared with the classes {classes.tolist()}; pass labels of the same type as "
            "the classes (classes=... in partial_fit, or the dataset's 'classes' attribute)."
        ) from None
    idx_c = np.clip(idx, 0, len(classes) - 1)
    bad = classes[idx_c] != y
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InvalidDataError(
            f"label {np.asarray(y[row]).item()!r} in chunk {chunk}, row {row} is not one of the classes "
            f"{classes.tolist()}; pass the full list of classes (classes=... in partial_fit, "
            "or the dataset's 'classes' attribute)."
        )
    if config.target == "binary":
        return np.where(idx_c == 1, 1.0, -1.0).astype(dtype).reshape(-1, 1)
    out = np.zeros((len(y), len(classes)), dtype=dtype)
    out[np.arange(len(y)), idx_c] = 1.0
    if config.target == "ovr":
        out = 2.0 * out - 1.0
    return out.astype(dtype, copy=False)


def _first_value(y: np.ndarray):
    if not np.size(y):
        return None
    value = np.asarray(y).ravel()[0]
    return value.item() if isinstance(value, np.generic) else value


def _drop_invalid_rows(config: DSGConfig, X: np.ndarray, y):
    """``on_invalid="skip"``: the rows of one chunk whose X (and y) are finite."""
    keep = np.isfinite(X).all(axis=1)
    y_arr = None if y is None else np.asarray(y)
    if y_arr is not None and y_arr.dtype.kind in "fc":  # NaN/inf targets or labels
        keep &= np.isfinite(y_arr.reshape(len(X), -1)).all(axis=1)
    n_bad = int(len(keep) - keep.sum())
    if n_bad == 0:
        return X, y, 0
    return np.ascontiguousarray(X[keep]), np.asarray(y)[keep], n_bad


def predict_chunk(config: DSGConfig, state: DSGState, X: np.ndarray) -> np.ndarray:
    """Decision values (n, n_outputs) of the model for one chunk (Algorithm 2).

    Feature blocks are regenerated from their seeds (through the process-wide cache) in
    groups whose parameters take at most ~32 MiB, so memory is bounded by the chunk.
    """
    with single_threaded_blas():
        return _predict_chunk(config, state, X)


def _predict_chunk(config: DSGConfig, state: DSGState, X: np.ndarray) -> np.ndarray:
    dtype = np.dtype(config.dtype)
    X = np.ascontiguousarray(X, dtype=dtype)
    n_used = state.n_blocks_used
    F = np.zeros((X.shape[0], config.n_outputs), dtype=dtype)
    if n_used == 0 or X.shape[0] == 0:
        return F
    per_block = config.n_features_in * config.block_size * dtype.itemsize
    group = max(1, _PREDICT_GROUP_BYTES // max(per_block, 1))
    scale = feature_scale(config.block_size)
    cache = default_cache()
    for lo in range(0, n_used, group):
        ids = np.arange(lo, min(lo + group, n_used))
        W, phase = stacked_block_params(config.feature_seed, ids, config.n_features_in,
                                        config.block_size, config.bandwidth, dtype,
                                        cache=cache)
        coef = np.ascontiguousarray(state.coef[ids], dtype=dtype)
        F += dsg_predict(X, W, phase, coef, scale)
    return F


class DSGAlgorithm:
    """The DSG chunk algorithm for :func:`ooc_kernels.parallel.engine.run_rounds`."""

    def __init__(self, config: DSGConfig):
        self.config = config

    def n_steps(self, n_rows: int) -> int:
        return math.ceil(n_rows / self.config.batch_size)

    def make_tasks(self, state: DSGState, info) -> list[DSGTask]:
        tasks, offset = [], state.n_blocks_seen
        for c, size in zip(info.chunk_ids, info.chunk_sizes):
            tasks.append(DSGTask(chunk=c, epoch=info.epoch, round=info.round, seed=info.seed,
                                 block_start=offset, t_start=state.n_iter))
            offset += self.n_steps(size)
        return tasks

    def chunk_step(self, state: DSGState, X, y, task: DSGTask) -> DSGDelta:
        with single_threaded_blas():
            return self._chunk_step(state, X, y, task)

    def _chunk_step(self, state: DSGState, X, y, task: DSGTask) -> DSGDelta:
        cfg = self.config
        dtype = np.dtype(cfg.dtype)
        X = np.asarray(X)  # one chunk
        if X.ndim != 2 or X.shape[1] != cfg.n_features_in:
            raise ValidationError(
                f"chunk {task.chunk} has shape {X.shape}; expected (n, {cfg.n_features_in})."
            )
        X = np.ascontiguousarray(X, dtype=dtype)
        n_skipped = 0
        if cfg.on_invalid == "skip" and X.shape[0]:
            X, y, n_skipped = _drop_invalid_rows(cfg, X, y)
        n = X.shape[0]
        if n == 0:
            return DSGDelta(decay_sum=1.0, count=1, block_ids=np.zeros(0, np.int64),
                            coefs=np.zeros((0, cfg.block_size, cfg.n_outputs)), dense=None,
                            max_steps=0, n_samples=0, n_new_blocks=0, n_skipped=n_skipped)
        check_finite(X, "X", task.chunk)
        Y = encode_targets(cfg, y, task.chunk)
        if cfg.shuffle:
            order = task_rng(task.seed, task.epoch, task.round, task.chunk).permutation(n)
            X, Y = X[order], Y[order]
        Y = np.ascontiguousarray(Y)
        m = self.n_steps(n)
        gammas = step_sizes(cfg, task.t_start + 1 + np.arange(m))
        scale = feature_scale(cfg.block_size)
        cache = default_cache()
        g = int(min(m, max(0, cfg.n_blocks - task.block_start)))  # growth steps
        block_ids = task.block_start + np.arange(g, dtype=np.int64)
        decay, new_coef = 1.0, np.zeros((0, cfg.block_size, cfg.n_outputs))
        if g:
            rows = min(n, g * cfg.batch_size)
            F = _predict_chunk(cfg, state, X[:rows])
            W, phase = stacked_block_params(cfg.feature_seed, block_ids, cfg.n_features_in,
                                            cfg.block_size, cfg.bandwidth, dtype, cache=cache)
            new, decay = dsg_chunk_update(X[:rows], Y[:rows], F, W, phase, gammas[:g],
                                          float(cfg.alpha), int(cfg.batch_size),
                                          int(cfg.loss_id), scale)
            new_coef = np.asarray(new, dtype=np.float64)
        if g == m:
            return DSGDelta(decay_sum=float(decay), count=1, block_ids=block_ids,
                            coefs=new_coef, dense=None, max_steps=m, n_samples=n,
                            n_new_blocks=g, n_skipped=n_skipped)
        # Full phase for the remaining rows, from the local model reached so far.
        local = state.coef * decay
        np.add.at(local, block_ids, new_coef)
        rows = g * cfg.batch_size
        W, phase = stacked_block_params(cfg.feature_seed, np.arange(cfg.n_blocks),
                                        cfg.n_features_in, cfg.block_size, cfg.bandwidth,
                                        dtype, cache=cache)
        after = dsg_full_update(X[rows:], Y[rows:], W, phase, local.astype(dtype), gammas[g:],
                                float(cfg.alpha), int(cfg.batch_size), int(cfg.loss_id),
                                scale)
        return DSGDelta(decay_sum=0.0, count=1, block_ids=np.zeros(0, np.int64),
                        coefs=np.zeros((0, cfg.block_size, cfg.n_outputs)),
                        dense=np.asarray(after, dtype=np.float64), max_steps=m, n_samples=n,
                        n_new_blocks=g, n_skipped=n_skipped)

    def combine(self, a: DSGDelta, b: DSGDelta) -> DSGDelta:
        if a.dense is None:
            dense = b.dense
        elif b.dense is None:
            dense = a.dense
        else:
            dense = a.dense + b.dense
        return DSGDelta(decay_sum=a.decay_sum + b.decay_sum, count=a.count + b.count,
                        block_ids=np.concatenate([a.block_ids, b.block_ids]),
                        coefs=np.concatenate([a.coefs, b.coefs]), dense=dense,
                        max_steps=max(a.max_steps, b.max_steps),
                        n_samples=a.n_samples + b.n_samples,
                        n_new_blocks=a.n_new_blocks + b.n_new_blocks,
                        n_skipped=a.n_skipped + b.n_skipped)

    def apply(self, state: DSGState, delta: DSGDelta, info=None) -> DSGState:
        k = delta.count
        if k == 1:
            coef = state.coef * delta.decay_sum
            np.add.at(coef, delta.block_ids, delta.coefs)
            if delta.dense is not None:
                coef += delta.dense
        else:
            coef = state.coef * (delta.decay_sum / k)
            np.add.at(coef, delta.block_ids, delta.coefs / k)
            if delta.dense is not None:
                coef += delta.dense / k
        return replace(state, coef=coef, n_iter=state.n_iter + delta.max_steps,
                       n_blocks_seen=min(state.n_blocks_seen + delta.n_new_blocks,
                                         self.config.n_blocks),
                       n_samples_seen=state.n_samples_seen + delta.n_samples,
                       n_samples_skipped=state.n_samples_skipped + delta.n_skipped)
