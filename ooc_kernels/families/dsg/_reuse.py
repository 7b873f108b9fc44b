"""DSG's growth steps under the three ``update`` modes, and what the rounds need of them.

While the model holds fewer than ``n_blocks`` blocks (the ``n_features`` budget), a step is

* ``"new"`` (DSG, Dai et al. 2014): open the next block (Algorithm 1);
* ``"uniform"`` (UDSG, Li and Poczos): odd global steps ``t`` open the next block, even ones
  update an old block drawn uniformly among the open ones (``G = U = 1``, the paper's
  setting) with DSG's step ``gamma_t``: every coefficient decays by ``1 - gamma_t alpha`` and
  the drawn block ``k`` gets ``-(gamma_t / nb) z_k(X_B)^T G``.  The draw of step ``t`` is
  ``floor(u * n_open)`` with ``u = numpy.random.default_rng([feature_seed, t]).random()``;
  an old step with no open block opens one instead;
* ``"check"`` (CDSG): the expected-descent test of
  :mod:`ooc_kernels.families.dsg.kernels_reuse` chooses between the next block and the old
  block that admits the largest step.

Once the model holds its budget, every mode runs the full phase
(:mod:`ooc_kernels.families.dsg.kernels_full`): each step updates every block with the
kernel averaged over the blocks.  That step is the expectation of UDSG's old step over the
uniform draw (block ``j`` is drawn with probability ``1 / n_blocks`` and then moves by
``-(gamma / nb) z_j^T G``), without the draw's variance, at the cost of a prediction, which
every step pays anyway.  ``docs/algorithms/dsg_old_coords.md`` has the details.

No Dask here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ooc_kernels.families.dsg._predict import _affine, _predict_chunk
from ooc_kernels.families.dsg.kernels_reuse import dsg_check_update
from ooc_kernels.families.dsg.kernels_threads import chunk_update
from ooc_kernels.features.blocks import stacked_block_params

__all__ = ["UPDATES", "CHECK_STEP_CAP", "Growth", "uniform_schedule", "uniform_draw",
           "run_growth", "new_blocks"]

#: The ``update`` modes.
UPDATES = ("new", "uniform", "check")
#: CDSG: an old block's step is at most this multiple of ``gamma_t`` (the paper's
#: ``theta' / t`` with ``theta' = 2 theta``; the paper gives no value).
CHECK_STEP_CAP = 2.0


@dataclass(frozen=True)
class Growth:
    """What a task's growth steps did (the fields of :class:`DSGDelta` they fill)."""

    steps: int  # growth steps run (the rest of the task's steps are full-phase steps)
    ids: np.ndarray  # the block each step updated (repeats for old blocks)
    coefs: np.ndarray  # (steps, r, C): each step's increment, decayed by the later steps
    decay: float
    avg_new: np.ndarray
    avg_old: float
    n_avg: int
    loss_sum: float
    loss_weight: float
    block_end: int  # one past the highest block opened, 0 when none
    betas: np.ndarray | None = None  # CDSG: each step's beta increment
    factors: np.ndarray | None = None  # CDSG: each step's factor (its own step size)


def uniform_schedule(t_start: int, m: int, n_open: int, room: int) -> np.ndarray:
    """UDSG's growth steps among global steps ``t_start + 1 .. t_start + m``: True where a
    step opens a block; the growth ends once ``room`` blocks opened (the budget is full).

    Examples
    --------
    >>> uniform_schedule(0, 6, 0, 2).tolist()      # t = 1 new, 2 old, 3 new: full
    [True, False, True]
    >>> uniform_schedule(1, 3, 0, 5).tolist()      # t = 2 has no open block: it opens one
    [True, True, False]
    """
    kinds, opened = [], 0
    for s in range(m):
        if opened >= room:
            break
        t = t_start + 1 + s
        new = (t - 1) % 2 == 0 or n_open + opened == 0
        opened += new
        kinds.append(new)
    return np.asarray(kinds, dtype=bool)


def uniform_draw(feature_seed: int, t: int, n_open: int) -> int:
    """The old block UDSG's step ``t`` updates, among ``n_open`` open blocks.

    Examples
    --------
    >>> 0 <= uniform_draw(7, 2, 5) < 5
    True
    """
    u = np.random.default_rng([int(feature_seed), int(t)]).random()
    return min(int(u * n_open), n_open - 1)


def new_blocks(config, t_start: int, m: int, n_open: int, block_start: int) -> int:
    """Block ids a task of ``m`` steps from ``t_start`` reserves: the blocks UDSG opens,
    ``m`` otherwise (each step may open one)."""
    if config.update != "uniform":
        return m
    return int(uniform_schedule(t_start, m, n_open,
                                max(0, config.n_blocks - block_start)).sum())


def run_growth(config, state, X, Y, w, task, steps, params, fmap, cache):
    """The growth steps of one task (all its steps while the budget is not full).

    Returns a :class:`Growth`; the task's remaining steps are full-phase steps.
    """
    cfg = config
    gammas, averaged = steps
    n, m, b = X.shape[0], gammas.shape[0], cfg.batch_size
    r, C = cfg.block_size, cfg.n_outputs
    room = max(0, cfg.n_blocks - task.block_start)
    empty = np.zeros((0, r, C))

    def stacked(ids):
        return stacked_block_params(cfg.feature_seed, ids, cfg.n_features_in, r,
                                    cfg.bandwidth, X.dtype, cache=cache, affine=_affine(cfg),
                                    kernel=fmap)

    if cfg.update == "check":
        n_new, n_old = min(m, room), state.n_blocks_used
        if n_new == 0:
            return Growth(0, np.zeros(0, np.int64), empty, 1.0, empty, 0.0, 0, 0.0, 0.0, 0,
                          np.zeros((0, C)), np.zeros(0))
        slot_ids = np.concatenate([np.arange(n_old, dtype=np.int64),
                                   task.block_start + np.arange(n_new, dtype=np.int64)])
        W, phase = stacked(slot_ids)
        beta = np.zeros((len(slot_ids), C))
        beta[:n_old] = state.beta[:n_old]
        F = _predict_chunk(cfg, state.coef, n_old, X, mapped=True)
        (g, slots, coefs, betas, decay, factors, avg_new, avg_old, n_avg, loss_sum,
         loss_weight) = dsg_check_update(
            X, Y, w, F, W, phase, beta, n_old, steps, params,
            (CHECK_STEP_CAP, task.block_start + n_new == cfg.n_blocks), fmap.nonlinearity)
        opened = slots[slots >= n_old]
        end = task.block_start + int(opened.max()) - n_old + 1 if len(opened) else 0
        return Growth(int(g), slot_ids[slots], coefs, float(decay), avg_new, float(avg_old),
                      int(n_avg), float(loss_sum), float(loss_weight), end, betas, factors)
    if cfg.update == "uniform":
        kinds = uniform_schedule(task.t_start, m, state.n_blocks_used, room)
        g = len(kinds)
        ids, opened = np.zeros(g, dtype=np.int64), 0
        for s, new in enumerate(kinds):
            if new:
                ids[s] = task.block_start + opened
                opened += 1
                continue
            k = uniform_draw(cfg.feature_seed, task.t_start + 1 + s,
                             state.n_blocks_used + opened)
            ids[s] = k if k < state.n_blocks_used else \
                task.block_start + (k - state.n_blocks_used)
        end = task.block_start + opened if opened else 0
    else:
        g = int(min(m, room))
        ids = task.block_start + np.arange(g, dtype=np.int64)
        end = task.block_start + g if g else 0
    if not g:
        return Growth(0, ids, empty, 1.0, empty, 0.0, 0, 0.0, 0.0, 0)
    rows = min(n, g * b)
    F = _predict_chunk(cfg, state.coef, state.n_blocks_used, X[:rows], mapped=True)
    W, phase = stacked(ids)
    (coefs, decay, avg_new, avg_old, n_avg, loss_sum,
     loss_weight) = chunk_update(X[:rows], Y[:rows], w[:rows], F, W, phase,
                                 (gammas[:g], averaged[:g]), params, fmap.nonlinearity)
    return Growth(g, ids, coefs, decay, avg_new, avg_old, n_avg, loss_sum, loss_weight, end)


# ---------------------------------------------------------------------------------------
# CDSG's beta through the rounds: the same affine algebra as the coefficients
# ---------------------------------------------------------------------------------------
def beta_fields(growth: Growth) -> dict:
    """The :class:`DSGDelta` fields that carry a task's ``beta`` (CDSG), else none."""
    if growth.betas is None:
        return {}
    return dict(beta_ids=growth.ids, betas=growth.betas, beta_decay=growth.decay)


def average_betas(a, b, wa: float, wb: float) -> dict:
    """``beta`` fields of the weighted average of two partial averages of local models."""
    if a.betas is None and b.betas is None:
        return {}
    return dict(beta_ids=np.concatenate([_ids(a), _ids(b)]),
                betas=np.concatenate([_incs(a, b) * wa, _incs(b, a) * wb]),
                beta_decay=a.beta_decay * wa + b.beta_decay * wb)


def compose_betas(a, b) -> dict:
    """``beta`` fields of task group ``a`` then ``b`` (summed form: affine maps composed)."""
    if a.betas is None and b.betas is None:
        return {}
    return dict(beta_ids=np.concatenate([_ids(a), _ids(b)]),
                betas=np.concatenate([_incs(a, b) * b.beta_decay, _incs(b, a)]),
                beta_decay=a.beta_decay * b.beta_decay)


def apply_betas(beta, delta, w: float = 1.0):
    """``beta`` after a round: ``x + w (x d + B - x)`` (``w = 1``: ``x d + B``)."""
    if beta is None or delta.betas is None:
        return beta
    out = beta * (1.0 + w * (delta.beta_decay - 1.0))
    np.add.at(out, delta.beta_ids, delta.betas * w)
    return out


def _ids(d):
    return np.zeros(0, np.int64) if d.beta_ids is None else d.beta_ids


def _incs(d, other):
    if d.betas is not None:
        return d.betas
    return np.zeros((0,) + other.betas.shape[1:])
