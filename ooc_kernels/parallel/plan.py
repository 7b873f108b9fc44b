"""Which chunks each round visits: the epoch plan of groups of chunks.

An epoch is a random permutation of the chunks cut into *groups* of at most
``shuffle_chunks`` consecutive chunks of the permutation; a task reads one group and visits
its rows in one random order, so rows of different chunks are mixed (a store sorted by
label, time or source is seen in a mixed order) while each chunk is still read once per
epoch.  ``K`` groups make a round.  The number of groups is a multiple of ``K`` whenever
there are enough chunks, and their sizes differ by at most one, so that no round leaves
workers idle.

The ``"sequential"`` execution mode of :func:`ooc_kernels.parallel.engine.run_rounds` is
the plan with ``chunks_per_round=1``, ``shuffle=False`` and ``shuffle_chunks=1``: one chunk a
round, in storage order.

The chunk order of an epoch derives from ``(random_state, epoch)`` (see
:mod:`ooc_kernels._seeds`), so it does not depend on the scheduler.

Examples
--------
>>> from ooc_kernels.parallel.plan import plan_epoch
>>> plan_epoch(5, chunks_per_round=2, seed=0, epoch=0, shuffle=False)
[((0,), (1,)), ((2,), (3,)), ((4,),)]
>>> plan_epoch(5, chunks_per_round=2, seed=0, epoch=0, shuffle=False, shuffle_chunks=2)
[((0, 1), (2,)), ((3,), (4,))]
>>> plan_epoch(20, chunks_per_round=2, seed=0, epoch=0, shuffle=False,
...            shuffle_chunks=3)[-1]                 # 8 groups of 3 or 2 chunks, 4 rounds
((16, 17), (18, 19))
"""

from __future__ import annotations

import numpy as np

from ooc_kernels._seeds import epoch_rng

__all__ = ["plan_epoch"]


def plan_epoch(n_chunks: int, *, chunks_per_round: int, seed: int, epoch: int,
               shuffle: bool, shuffle_chunks: int = 1) -> list[tuple[tuple[int, ...], ...]]:
    """The rounds of one epoch: each round a tuple of ``chunks_per_round`` groups (the last
    round may have fewer), each group a tuple of at most ``shuffle_chunks`` chunk ids.

    With ``shuffle`` the chunk order is a permutation drawn from ``(seed, epoch)``, so the
    groups are new random sets of chunks every epoch.  There are ``ceil(n_chunks /
    shuffle_chunks)`` groups, rounded up to a multiple of ``chunks_per_round`` (at most
    ``n_chunks``), of sizes differing by at most one (the larger ones first).
    """
    order = np.arange(n_chunks)
    if shuffle:
        order = epoch_rng(seed, epoch).permutation(n_chunks)
    k = int(chunks_per_round)
    n_groups = -(-n_chunks // int(shuffle_chunks))
    if n_groups % k:  # whole rounds: no worker idles in the last round of the epoch
        n_groups = min(n_chunks, -(-n_groups // k) * k)
    base, extra = divmod(n_chunks, max(n_groups, 1))
    bounds = np.cumsum([0] + [base + 1] * extra + [base] * (n_groups - extra))
    groups = [tuple(int(c) for c in order[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    return [tuple(groups[i:i + k]) for i in range(0, len(groups), k)]
