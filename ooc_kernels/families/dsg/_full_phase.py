"""The DSG full phase under a memory budget: stacked blocks when they fit, tiles otherwise.

Once a model holds all its ``m`` blocks, every step predicts with all of them and updates
all of them (:func:`ooc_kernels.families.dsg.kernels_full.dsg_full_update`).  That kernel takes the
parameters of every block stacked in one array, ``m (d + 1) r`` values: 1.1 GiB per task at
``2^20`` features and ``d = 276``.  :func:`full_phase_update` bounds the feature memory of a
task by a budget: the feature-cache budget (one budget for the cache and the task's working
memory, ``OOC_KERNELS_FEATURE_CACHE_MB``, default 256 MiB, see
:mod:`ooc_kernels.features.cache`) of the client that set up the fit, recorded in
``DSGConfig.feature_budget`` so that the plan does not depend on the worker:

* **stacked** when ``2 m (d + 1) r itemsize <= budget`` (the blocks in the cache plus their
  stacked copy): today's kernel, with the stacked copy and its feature buffer reserved from
  the cache's budget;
* **tiled** otherwise: the rows in super-steps of ``R`` rows (whole batches), the blocks in
  tiles generated from their seeds (or taken from the cache, which keeps the blocks with the
  lowest ids that fit in what the tiles leave of the budget).  Per super-step: predictions at
  its start and the kernel estimate between its rows (one pass over the tiles,
  :func:`~ooc_kernels.families.dsg.kernels_full.dsg_tile_forward`), the ``S = R / batch_size`` steps simulated
  in row space (:func:`~ooc_kernels.families.dsg.kernels_full.dsg_superstep`), and the update of every block
  (:func:`~ooc_kernels.families.dsg.kernels_full.dsg_tile_apply`, fused with the next super-step's forward
  pass so each tile is generated once per super-step).  The iterates are those of the
  sequential steps, up to floating-point rounding (proof: ``docs/algorithms/
  dsg_full_phase.md``).

No Dask here.
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np

from ooc_kernels.families.dsg.kernels_full import (
    _FULL_BUFFER_BYTES,
    dsg_superstep,
    dsg_superstep_ref,
    dsg_tile_apply,
    dsg_tile_apply_ref,
    dsg_tile_forward,
    dsg_tile_forward_ref,
)
from ooc_kernels.families.dsg.kernels_threads import full_update
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.features.blocks import BlockSource, stacked_block_params

__all__ = ["FullPhasePlan", "full_phase_update", "plan_full_phase"]

#: Seconds to generate one block parameter (Philox words, Box-Muller in float64, cast):
#: 23-39 ns measured with :class:`~ooc_kernels.features.rbf.BlockWriter` at d = 276,
#: r = 256 on the 2-core development VM (medians of 21, under load 2-4).
_GEN_SECONDS = 30e-9
#: Single-thread GEMM rate (flop/s) of the feature and kernel products: 100-130 GFLOP/s
#: float32 measured on the same machine; float64 about half.
_GEMM_RATE = {4: 1.0e11, 8: 0.5e11}
#: Target bytes of one tile of block parameters (capped at an eighth of the budget).
_TILE_TARGET_BYTES = 4 * 2**20
#: Longest super-step considered, in batches.
_MAX_SUPER_BATCHES = 64


@dataclass(frozen=True)
class FullPhasePlan:
    """How one task runs its full phase.

    Attributes
    ----------
    stacked : bool
        All blocks fit (twice: cached and stacked) in the budget: today's kernel.
    rows : int
        ``R``, rows per super-step (a multiple of the batch size), tiled path.
    tile_blocks : int
        Blocks per tile, tiled path.
    cached_blocks : int
        Blocks ``0 .. cached_blocks - 1`` are kept in the cache, tiled path.
    work_bytes : int
        Feature working memory of the task, reserved from the cache's budget.
    """

    stacked: bool
    rows: int
    tile_blocks: int
    cached_blocks: int
    work_bytes: int


def _tiled_work_bytes(R, t, d, r, C, b, isz, scratch) -> int:
    """Bytes of the tiled path's buffers (``_Workspace``) for super-steps of ``R`` rows."""
    k = R * R * 8 + b * max(0, R - b) * isz if R > b else 0
    return int(t * (d + 1) * r * isz + scratch + R * r * isz + k
               + R * C * (3 * 8 + 4 * isz) + b * C * isz + 2 * r * C * isz)


def plan_full_phase(budget, n_blocks, d, r, C, batch_size, n_rows, itemsize,
                    scratch_bytes=None) -> FullPhasePlan:
    """Choose the full-phase path, the super-step length and the tile size for a budget.

    The tiled path runs ``ceil(n / R) + 1`` passes over the blocks (the forward pass of
    each super-step fused with the update of the one before, and a last update pass), each
    generating the uncached fraction ``q`` of the blocks (``t_gen d r`` per block); every
    row's features are computed twice whatever ``R`` (``4 d r`` flops per row and block);
    and a super-step of ``R = S b`` rows adds the kernel estimate between its batches,
    ``r R (R - b)`` flops per block.  ``S = 1 .. 64`` is chosen to minimize
    ``(ceil(n / R) + 1) q t_gen d r + sum over super-steps of r R (R - b) / rate`` within
    half the budget.

    Parameters
    ----------
    budget : int
        Bytes (the feature-cache budget).
    n_blocks, d, r, C, batch_size, n_rows, itemsize : int
        Blocks, input dimension, block size, outputs, batch size, rows of the full phase,
        bytes per value of the data's dtype.
    scratch_bytes : int, optional
        Scratch of the block generator (default: one float64 block plus 1 MiB).

    Returns
    -------
    FullPhasePlan

    Examples
    --------
    >>> from ooc_kernels.families.dsg._full_phase import plan_full_phase
    >>> plan_full_phase(256 * 2**20, 64, 276, 256, 1, 256, 4096, 4).stacked
    True
    >>> p = plan_full_phase(256 * 2**20, 4096, 276, 256, 1, 256, 4096, 4)
    >>> p.stacked, p.rows % 256, p.work_bytes <= 128 * 2**20
    (False, 0, True)
    """
    m, b, isz = int(n_blocks), int(batch_size), int(itemsize)
    block = (d + 1) * r * isz
    if scratch_bytes is None:
        scratch_bytes = 8 * d * r + 2**20
    if 2 * m * block <= budget:
        buffer = min(_FULL_BUFFER_BYTES, budget - 2 * m * block)
        keep = m * min(b, max(n_rows, 1)) * r * isz <= buffer
        work = m * block + (m * min(b, max(n_rows, 1)) * r * isz if keep else 0)
        return FullPhasePlan(True, 0, m, m, int(work))
    t = max(1, min(m, min(_TILE_TARGET_BYTES, budget // 8) // block))
    rate = _GEMM_RATE.get(isz, _GEMM_RATE[8])
    s_max = max(1, min(_MAX_SUPER_BATCHES, math.ceil(max(n_rows, 1) / b)))
    best = None
    for S in range(1, s_max + 1):
        R = S * b
        work = _tiled_work_bytes(R, t, d, r, C, b, isz, scratch_bytes)
        if S > 1 and work > budget // 2:
            break
        cached = int(min(m, max(0, (budget - work) // block)))
        q = (m - cached) / m
        rows = max(n_rows, 1)
        full, last = divmod(rows, R)
        passes = full + (last > 0) + 1
        products = full * R * (R - b) + (last * (last - b) if last > b else 0)
        cost = passes * q * _GEN_SECONDS * d * r + products * r / rate
        if best is None or cost < best[0]:
            best = (cost, R, cached, work)
    _, R, cached, work = best
    return FullPhasePlan(False, int(R), int(t), int(cached), int(work))


class _Workspace:
    """The tiled path's buffers, allocated once per task (their bytes are the plan's)."""

    def __init__(self, R, t, d, r, C, b, dt):
        self.W = np.empty((t, d, r), dtype=dt)
        self.phase = np.empty((t, r), dtype=dt)
        self.Z = np.empty((R, r), dtype=dt)
        self.K = np.empty(R * R if R > b else 0)
        self.Kt = np.empty(b * max(0, R - b), dtype=dt)
        self.F0 = np.empty((R, C))
        self.V = np.empty((R, C))
        self.Va = np.empty((R, C))
        self.acc = np.empty((R, C), dtype=dt)
        self.G = np.empty((R, C), dtype=dt)
        self.U = np.empty((R, C), dtype=dt)
        self.Ua = np.empty((R, C), dtype=dt)
        self.fb = np.empty((b, C), dtype=dt)
        self.low = np.empty((r, C), dtype=dt)
        self.delta = np.empty((r, C), dtype=dt)


def full_phase_update(X, Y, sw, coef, avg, n_avg, steps, params, source: BlockSource,
                      budget=None, kernels="jit", plan=None):
    """Full-phase steps over the rows ``X`` with the feature memory bounded by ``budget``.

    Same contract as :func:`ooc_kernels.families.dsg.kernels_full.dsg_full_update`, except that the blocks
    come from ``source`` (generated from their seeds or taken from its cache) instead of a
    stacked array.

    Parameters
    ----------
    X, Y, sw, coef, avg, n_avg, steps, params
        As in :func:`~ooc_kernels.families.dsg.kernels_full.dsg_full_update`.  On the tiled path ``coef``
        and ``avg`` are updated in place when they are C-contiguous float64 arrays.
    source : BlockSource
        The model's blocks ``0 .. m - 1`` (``m = coef.shape[0]``).
    budget : int, optional
        Feature-memory budget in bytes the plan is made for (DSG passes
        ``DSGConfig.feature_budget``, the client's); default the budget of ``source.cache``
        (the process-wide cache: ``OOC_KERNELS_FEATURE_CACHE_MB``, default 256 MiB), or
        256 MiB without a cache.  It may exceed the cache's own budget: the reservation
        then empties the cache for the task's duration (blocks are generated, not cached).
    kernels : {"jit", "ref"}
        ``"ref"`` runs the tiled path with the numpy twins (tests).
    plan : FullPhasePlan, optional
        Overrides :func:`plan_full_phase` (tests and benchmarks: a given super-step length
        or tile size).  Its ``work_bytes`` are reserved from the cache as planned.

    Returns
    -------
    coef, avg, n_avg, loss_sum, weight_sum
        As :func:`~ooc_kernels.families.dsg.kernels_full.dsg_full_update`.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.blocks import BlockSource
    >>> from ooc_kernels.families.dsg._full_phase import full_phase_update
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(10, 3)); Y = rng.normal(size=(10, 1)); sw = np.ones(10)
    >>> m, r, b = 6, 4, 2
    >>> source = BlockSource(1, 3, r, 1.0, np.float64)
    >>> steps = (np.full(5, 0.5), np.ones(5, dtype=bool))
    >>> params = (0.1, b, 0, (2 / r) ** 0.5, 0.0)
    >>> coef0 = np.zeros((m, r, 1))
    >>> big = full_phase_update(X, Y, sw, coef0.copy(), coef0.copy(), 0, steps, params,
    ...                         source, budget=2**20)            # stacked
    >>> small = full_phase_update(X, Y, sw, coef0.copy(), coef0.copy(), 0, steps, params,
    ...                           source, budget=2**10)          # tiles of one block
    >>> bool(np.allclose(big[0], small[0], rtol=1e-10, atol=1e-13)), small[2]
    (True, 5)
    """
    if kernels not in ("jit", "ref"):
        raise ValidationError(f"kernels must be 'jit' or 'ref'; got {kernels!r}")
    X = np.asarray(X)  # one chunk (the task's rows)
    cache = source.cache
    if budget is None:
        budget = cache.max_bytes if cache is not None else 256 * 2**20
    w = source.writer
    m, r, C = coef.shape
    b = int(params[1])
    if r != w.r or X.shape[1] != w.d:
        raise ValidationError("full_phase_update: coef (m, r, C) and X (n, d) must match the "
                              "blocks of source")
    if plan is None:
        plan = plan_full_phase(budget, m, w.d, r, C, b, X.shape[0], X.dtype.itemsize,
                               w.scratch_nbytes)
    elif not plan.stacked and (plan.rows < b or plan.rows % b or plan.tile_blocks < 1):
        raise ValidationError(f"full_phase_update: plan.rows must be a positive multiple of "
                              f"batch_size={b} and plan.tile_blocks >= 1; got {plan}")
    reserve = cache.reserve(plan.work_bytes) if cache is not None else nullcontext()
    with reserve:
        if plan.stacked:
            W, phase = stacked_block_params(w.seed, np.arange(m), w.d, r, source.bandwidth,
                                            w.dtype, cache=cache, affine=w.affine,
                                            kernel=source.feature_map)
            buffer = min(_FULL_BUFFER_BYTES, max(0, budget - 2 * m * source.block_nbytes))
            return full_update(X, Y, sw, W, phase, coef, avg, n_avg, steps, params, buffer,
                               source.feature_map.nonlinearity)
        return _tiled(X, Y, sw, coef, avg, n_avg, steps, params, source, plan, kernels)


def _tiled(X, Y, sw, coef, avg, n_avg, steps, params, source, plan, kernels):
    gammas, averaged = steps
    scale = params[3]
    kind = source.feature_map.nonlinearity
    n = X.shape[0]
    b = int(params[1])
    m, r, C = coef.shape
    if gammas.shape[0] != math.ceil(n / b) or averaged.shape[0] != gammas.shape[0]:
        raise ValidationError("full_phase_update: gammas and averaged need ceil(n / "
                              "batch_size) entries")
    coef = np.ascontiguousarray(coef, dtype=np.float64)
    avg = np.ascontiguousarray(avg, dtype=np.float64)
    if avg.shape[0] and avg.shape != coef.shape:
        raise ValidationError("full_phase_update: avg must be (m, r, C) or (0, r, C)")
    loss_sum = weight_sum = 0.0
    if n == 0 or m == 0:
        return coef, avg, n_avg, loss_sum, weight_sum
    dt = X.dtype
    R, t = plan.rows, plan.tile_blocks
    ws = _Workspace(R, t, source.writer.d, r, C, b, dt)
    starts = list(range(0, n, R))
    pending = None  # (rows, coeffs) of the super-step whose update is not applied yet
    for k in range(len(starts) + 1):
        rows = None
        if k < len(starts):
            rows = slice(starts[k], min(starts[k] + R, n))
            RL = rows.stop - rows.start
            F0 = ws.F0[:RL]
            F0[...] = 0.0
            K = ws.K[:RL * RL].reshape(RL, RL) if RL > b else ws.K[:0].reshape(0, 0)
            K[...] = 0.0
            Xr = X[rows]
        for t0 in range(0, m, t):
            t1 = min(t0 + t, m)
            Wt, pht = ws.W[:t1 - t0], ws.phase[:t1 - t0]
            source.fill(t0, Wt, pht, cache_below=plan.cached_blocks)
            ct = coef[t0:t1]
            at = avg[t0:t1] if avg.shape[0] else avg
            if pending is not None:
                prows, coeffs = pending
                PL = prows.stop - prows.start
                U, Ua = ws.U[:PL], ws.Ua[:PL]
                if kernels == "jit":
                    dsg_tile_apply(X[prows], Wt, pht, ct, at, U, Ua, coeffs, scale,
                                   (ws.Z, ws.delta), kind)
                else:
                    dsg_tile_apply_ref(X[prows], Wt, pht, ct, at, U, Ua, coeffs, scale,
                                       kind=kind)
            if rows is not None:
                if kernels == "jit":
                    dsg_tile_forward(Xr, Wt, pht, ct, scale, b, F0, K,
                                     (ws.Z, ws.acc, ws.low, ws.Kt), kind)
                else:
                    dsg_tile_forward_ref(Xr, Wt, pht, ct, scale, b, F0, K, kind=kind)
        pending = None
        if rows is None:
            break
        s0 = rows.start // b
        s1 = math.ceil(rows.stop / b)
        sub = (np.ascontiguousarray(gammas[s0:s1]), np.ascontiguousarray(averaged[s0:s1]))
        if kernels == "jit":
            work = (ws.G[:RL], ws.fb, ws.V[:RL], ws.Va[:RL], ws.U[:RL], ws.Ua[:RL])
            decay, avg_a, avg_b, n_avg, loss, weight = dsg_superstep(
                F0, K, Y[rows], sw[rows], sub, params, m, n_avg, work)
        else:
            U, Ua, decay, avg_a, avg_b, n_avg, loss, weight = dsg_superstep_ref(
                F0, K, Y[rows], sw[rows], sub, params, m, n_avg, dt)
            ws.U[:RL], ws.Ua[:RL] = U, Ua
        loss_sum += loss
        weight_sum += weight
        pending = (rows, (decay, avg_a, avg_b))
    return coef, avg, n_avg, loss_sum, weight_sum
