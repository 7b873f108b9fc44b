"""Which chunks each round visits, and the random keys every task derives its randomness from.

An epoch is a random permutation of the chunks cut into *groups* of ``shuffle_chunks``
consecutive chunks of the permutation; a task reads one group and visits its rows in one
random order, so rows of different chunks are mixed (a store sorted by label, time or source
is seen in a mixed order) while each chunk is still read once per epoch.  ``K`` groups make a
round.

All randomness of a fit derives from ``(random_state, epoch, round, chunk)`` through
:class:`numpy.random.SeedSequence` spawn keys, so a task's random numbers do not depend on
which worker runs it, in which order, or under which scheduler.

Examples
--------
>>> from ooc_kernels.parallel.schedule import plan_epoch
>>> plan_epoch(5, chunks_per_round=2, seed=0, epoch=0, shuffle=False)
[((0,), (1,)), ((2,), (3,)), ((4,),)]
>>> plan_epoch(5, chunks_per_round=2, seed=0, epoch=0, shuffle=False, shuffle_chunks=2)
[((0, 1), (2, 3)), ((4,),)]
"""

from __future__ import annotations

import numpy as np

__all__ = ["plan_epoch", "task_rng", "derive_seed"]

# Domain separators, so streams used for different purposes never coincide.
_EPOCH_ORDER = 0x0E
_TASK = 0x7A


def derive_seed(seed: int, *path: int) -> int:
    """A 64-bit integer derived from ``seed`` and an integer path (deterministic)."""
    ss = np.random.SeedSequence(int(seed), spawn_key=tuple(int(p) for p in path))
    return int(ss.generate_state(1, dtype=np.uint64)[0])


def plan_epoch(n_chunks: int, *, chunks_per_round: int, seed: int, epoch: int,
               shuffle: bool, shuffle_chunks: int = 1) -> list[tuple[tuple[int, ...], ...]]:
    """The rounds of one epoch: each round a tuple of ``chunks_per_round`` groups, each group
    a tuple of ``shuffle_chunks`` chunk ids (the last group and round may be shorter).

    With ``shuffle`` the chunk order is a permutation drawn from ``(seed, epoch)``, so the
    groups are new random sets of chunks every epoch.
    """
    order = np.arange(n_chunks)
    if shuffle:
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
            int(seed), spawn_key=(_EPOCH_ORDER, int(epoch)))))
        order = rng.permutation(n_chunks)
    g = int(shuffle_chunks)
    groups = [tuple(int(c) for c in order[i:i + g]) for i in range(0, n_chunks, g)]
    k = int(chunks_per_round)
    return [tuple(groups[i:i + k]) for i in range(0, len(groups), k)]


def task_rng(seed: int, epoch: int, round_: int, chunk: int) -> np.random.Generator:
    """The generator of the task that processes ``chunk`` in ``(epoch, round_)``."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(
        int(seed), spawn_key=(_TASK, int(epoch), int(round_), int(chunk)))))
