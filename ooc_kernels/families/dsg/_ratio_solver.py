"""The DSG density-ratio chunk algorithm: DSG's rounds over two samples paired by chunk.

:class:`RatioAlgorithm` is :class:`~ooc_kernels.families.dsg.solver.DSGAlgorithm` with
another local step: a task reads its group's rows of both samples (``batch["X_p"]``,
``batch["X_q"]``), shuffles each, and runs ``m = ceil(n_p / batch_size)`` steps; step ``s``
takes the next ``batch_size`` rows of ``p`` and the rows of ``q`` up to the same fraction
of the task's ``q`` rows (``floor(n_q * p_end / n_p)``), so both samples are read once per
epoch in proportion.  The step's gradient is that of
:mod:`~ooc_kernels.families.dsg.kernels_density_ratio` (both terms of ``R(f)`` every step,
``q`` rows weighted ``n_p / n_q``).  Everything else is DSG's: the step counter and the
block ids of the tasks (laid out from the ``p`` rows, which ``RoundInfo.sizes`` counts),
the growth and full phases, the summed form of ``K > 1`` rounds, their combination and
mixing, the predictions (:func:`~ooc_kernels.families.dsg.solver.predict_chunk`).

No Dask here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels._seeds import task_rng
from ooc_kernels.exceptions import InvalidDataError, ValidationError
from ooc_kernels.families.dsg.kernels_density_ratio import (ratio_full_update,
                                                            ratio_growth_update)
from ooc_kernels.families.dsg.solver import (DSGAlgorithm, DSGConfig, DSGDelta, DSGState,
                                             DSGTask, _affine, _predict_chunk, feature_map)
from ooc_kernels.features.blocks import stacked_block_params
from ooc_kernels.features.cache import default_cache

__all__ = ["RatioConfig", "RatioAlgorithm", "pooled_steps"]


@dataclass(frozen=True)
class RatioConfig(DSGConfig):
    """A :class:`~ooc_kernels.families.dsg.solver.DSGConfig` with the weight of the ``q``
    rows, ``q_weight = n_p / n_q`` (the two samples' sizes)."""

    q_weight: float = 1.0


def pooled_steps(n_p: int, n_q: int, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Where each step's ``p`` and ``q`` rows end: ``(p_end, q_end)``, ``m + 1`` each.

    Step ``s`` takes ``p`` rows ``p_end[s] .. p_end[s + 1]`` (``batch_size`` of them, the
    last step fewer) and ``q`` rows ``q_end[s] .. q_end[s + 1]``, ``q_end = floor(n_q p_end
    / n_p)``.

    Examples
    --------
    >>> p, q = pooled_steps(5, 7, 2)
    >>> p.tolist(), q.tolist()
    ([0, 2, 4, 5], [0, 2, 5, 7])
    """
    m = -(-int(n_p) // int(batch_size)) if n_p else 0
    p_end = np.minimum(np.arange(m + 1, dtype=np.int64) * int(batch_size), int(n_p))
    q_end = (int(n_q) * p_end) // max(int(n_p), 1)
    return p_end, q_end


def _finite_rows(X: np.ndarray, name: str, task: DSGTask, skip: bool):
    """The rows of ``X`` with finite values: all of them, or (``skip``) the finite ones with
    the count left out; ``on_invalid="error"`` names the first bad value."""
    bad = ~np.isfinite(X).all(axis=1)
    if not bad.any():
        return X, 0
    if skip:
        return X[~bad], int(bad.sum())
    row = int(np.flatnonzero(bad)[0])
    col = int(np.flatnonzero(~np.isfinite(X[row]))[0])
    chunks = ", ".join(map(str, task.chunks or (task.chunk,)))
    raise InvalidDataError(
        f"{name} has a non-finite value ({float(X[row, col])!r}) in feature {col} of row {row} of "
        f"the rows of chunk(s) {chunks} (rows counted across those chunks); remove or "
        "impute it, or pass on_invalid='skip' to leave such rows out.")


class RatioAlgorithm(DSGAlgorithm):
    """DSG's chunk algorithm for the density ratio (see the module docstring)."""

    def __init__(self, config: RatioConfig, combination: str = "adaptive"):
        super().__init__(config, combination)

    def chunk_step(self, state: DSGState, batch: dict, task: DSGTask) -> DSGDelta:
        """The local steps over one task's rows of both samples (``X_p``, ``X_q``)."""
        with single_threaded_blas():
            delta = self._ratio_step(state, batch["X_p"], batch["X_q"], task)
            if task.n_tasks > 1:
                return self._summed(state, delta, task)
            return delta

    def _pooled(self, Xp, Xq, task: DSGTask):
        """The task's rows in visiting order, their sample flags and step boundaries."""
        cfg = self.config
        dtype = np.dtype(cfg.dtype)
        arrays = []
        n_skipped = 0
        for name, X in (("X_p", Xp), ("X_q", Xq)):
            X = np.asarray(X)  # one chunk, or one group of chunks
            if X.ndim != 2 or X.shape[1] != cfg.n_features_in:
                raise ValidationError(
                    f"{name} of chunk(s) {task.chunks or (task.chunk,)} has shape {X.shape}; "
                    f"expected (n, {cfg.n_features_in}).")
            X, skipped = _finite_rows(X, name, task, cfg.on_invalid == "skip")
            n_skipped += skipped
            arrays.append(np.ascontiguousarray(X, dtype=dtype))
        Xp, Xq = arrays
        n_p, n_q = len(Xp), len(Xq)
        if cfg.shuffle:
            rng = task_rng(task.seed, task.epoch, task.round, task.chunk)
            op, oq = rng.permutation(n_p), rng.permutation(n_q)
        else:
            op, oq = np.arange(n_p), np.arange(n_q)
        p_end, q_end = pooled_steps(n_p, n_q, cfg.batch_size)
        m = len(p_end) - 1
        order = np.concatenate(
            [np.concatenate([op[p_end[s]:p_end[s + 1]], n_p + oq[q_end[s]:q_end[s + 1]]])
             for s in range(m)]).astype(np.int64) if m else np.zeros(0, np.int64)
        X = np.concatenate([Xp, Xq])[order] if m else np.zeros((0, cfg.n_features_in), dtype)
        is_q = (order >= n_p).astype(np.uint8)
        starts = (p_end + q_end).astype(np.int64)
        return np.ascontiguousarray(X), is_q, starts, n_p, n_q, n_skipped

    def _ratio_step(self, state: DSGState, Xp, Xq, task: DSGTask) -> DSGDelta:
        cfg = self.config
        X, is_q, starts, n_p, n_q, n_skipped = self._pooled(Xp, Xq, task)
        m = len(starts) - 1
        empty = np.zeros((0, cfg.block_size, 1))
        if m == 0:  # no p row: the identity of the combination
            return DSGDelta(decay=1.0, weight=0.0, count=1, block_ids=np.zeros(0, np.int64),
                            coefs=empty, dense=None, max_steps=0, n_samples=0,
                            n_skipped=n_skipped)
        gammas, _ = self._steps(task.t_start, m)
        fmap = feature_map(cfg)
        params = (float(cfg.alpha), float(cfg.q_weight), fmap.feature_scale(cfg.block_size))
        cache = default_cache()
        dtype = np.dtype(cfg.dtype)
        g = int(min(m, max(0, cfg.n_blocks - task.block_start)))  # growth steps
        Xf = fmap.map_rows(X, _affine(cfg), dtype)  # the rows the blocks read (psi(X))
        block_ids = task.block_start + np.arange(g, dtype=np.int64)
        decay, new_coef, loss_sum, loss_weight = 1.0, empty, 0.0, 0.0
        if g:
            rows = int(starts[g])
            F = _predict_chunk(cfg, state.coef, state.n_blocks_used, X[:rows])[:, 0]
            W, phase = stacked_block_params(cfg.feature_seed, block_ids, cfg.n_features_in,
                                            cfg.block_size, cfg.bandwidth, dtype, cache=cache,
                                            affine=_affine(cfg), kernel=fmap)
            new_coef, decay, loss_sum, loss_weight = ratio_growth_update(
                Xf[:rows], is_q[:rows], starts[:g + 1], np.asarray(F, dtype=np.float64), W,
                phase, gammas[:g], params, fmap.nonlinearity)
        common = dict(weight=float(n_p + n_q), count=1, max_steps=m, n_samples=n_p + n_q,
                      block_end=task.block_start + g if g else 0, n_skipped=n_skipped)
        if g == m:
            return DSGDelta(decay=float(decay), block_ids=block_ids, coefs=new_coef,
                            dense=None, loss_sum=loss_sum, loss_weight=loss_weight, **common)
        # full phase for the remaining steps, from the local model reached so far
        local = state.coef * decay
        np.add.at(local, block_ids, new_coef)
        W, phase = stacked_block_params(cfg.feature_seed, np.arange(cfg.n_blocks),
                                        cfg.n_features_in, cfg.block_size, cfg.bandwidth,
                                        dtype, cache=cache, affine=_affine(cfg), kernel=fmap)
        lo = int(starts[g])
        after, more_loss, more_weight = ratio_full_update(
            Xf[lo:], is_q[lo:], starts[g:] - lo, W, phase, local, gammas[g:], params,
            fmap.nonlinearity)
        return DSGDelta(decay=0.0, block_ids=np.zeros(0, np.int64), coefs=empty, dense=after,
                        loss_sum=loss_sum + more_loss, loss_weight=loss_weight + more_weight,
                        **common)


# ---------------------------------------------------------------------------------------
# registration: the contract suite's problem and the sequential reference
# ---------------------------------------------------------------------------------------
def state_arrays(state: DSGState) -> dict:
    """The arrays that make a density-ratio state: the model and the counters (as 0-d
    arrays)."""
    return {"coef": state.coef, "n_iter": np.asarray(state.n_iter),
            "n_blocks_seen": np.asarray(state.n_blocks_seen),
            "n_samples_seen": np.asarray(state.n_samples_seen),
            "loss_sum": np.asarray(state.loss_sum),
            "loss_weight": np.asarray(state.loss_weight)}


def make_case(seed: int = 0, *, shuffle: bool = False):
    """A small two-sample problem: ``p = N(0, I)`` in 3 chunks of 20, 20 and 13 rows paired
    with ``q = N((0.5, 0, 0), diag(1.3^2, 1, 1))`` in chunks of 14, 17 and 9, batches of 4
    ``p`` rows, 6 blocks of 8 features, so one pass crosses from the growth into the full
    phase; standardized input, the ``inverse`` schedule."""
    from ooc_kernels.families._spec import AlgorithmCase
    from ooc_kernels.families.dsg.solver import init_state

    rng = np.random.default_rng(seed)
    sizes_p, sizes_q = (20, 20, 13), (14, 17, 9)
    X_p = rng.normal(size=(sum(sizes_p), 3))
    X_q = rng.normal(size=(sum(sizes_q), 3)) * np.array([1.3, 1.0, 1.0]) + [0.5, 0.0, 0.0]
    config = RatioConfig(loss_id=-1, target="density_ratio", n_outputs=1, n_features_in=3,
                         block_size=8, n_blocks=6, bandwidth=1.1, feature_seed=seed + 17,
                         alpha=0.05, batch_size=4, learning_rate="inverse", eta0=2.0,
                         t0=4.0, dtype="float64", shuffle=shuffle, x_shift=(0.2, 0.0, -0.1),
                         x_scale=(1.2, 0.9, 1.1), q_weight=len(X_p) / len(X_q))
    bp, bq = np.cumsum((0,) + sizes_p), np.cumsum((0,) + sizes_q)
    chunks = [{"X_p": X_p[bp[i]:bp[i + 1]], "X_q": X_q[bq[i]:bq[i + 1]]}
              for i in range(len(sizes_p))]
    return AlgorithmCase(algorithm=RatioAlgorithm(config), state=init_state(config),
                         chunks=chunks, dims={"X_p": ("sample_p", "feature"),
                                              "X_q": ("sample_q", "feature")},
                         seed=seed + 3)


def _reference(case):
    from ooc_kernels.families.dsg.reference_density_ratio import sequential_ratio

    return sequential_ratio(case.algorithm.config, case.state, case.chunks)


def _register():
    from ooc_kernels.families._spec import SolverSpec, register_solver

    register_solver(SolverSpec(
        name="dsg_density_ratio", algorithm=RatioAlgorithm, state_arrays=state_arrays,
        make_case=make_case, reference=_reference,
        description="density ratio p/q and KL(p || q) by doubly stochastic functional "
                    "gradients (Dai et al. 2014, Eq. 8)"))


_register()
