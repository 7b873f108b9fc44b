"""Every random number of a fit derives from ``(random_state, epoch, round, chunk)``.

:class:`numpy.random.SeedSequence` spawn keys turn the root seed and an integer path into
independent streams, so a task's random numbers do not depend on which worker runs it, in
which order, or under which scheduler.  Plain NumPy: usable from every layer.

Examples
--------
>>> from ooc_kernels._seeds import derive_seed, task_rng
>>> derive_seed(0, 1) == derive_seed(0, 1) != derive_seed(0, 2)
True
>>> float(task_rng(0, 1, 2, 3).random()) == float(task_rng(0, 1, 2, 3).random())
True
"""

from __future__ import annotations

import numpy as np

__all__ = ["derive_seed", "task_rng", "epoch_rng"]

# Domain separators, so streams used for different purposes never coincide.
_EPOCH_ORDER = 0x0E
_TASK = 0x7A


def derive_seed(seed: int, *path: int) -> int:
    """A 64-bit integer derived from ``seed`` and an integer path (deterministic)."""
    ss = np.random.SeedSequence(int(seed), spawn_key=tuple(int(p) for p in path))
    return int(ss.generate_state(1, dtype=np.uint64)[0])


def epoch_rng(seed: int, epoch: int) -> np.random.Generator:
    """The generator of the chunk order of ``epoch``."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(
        int(seed), spawn_key=(_EPOCH_ORDER, int(epoch)))))


def task_rng(seed: int, epoch: int, round_: int, chunk: int) -> np.random.Generator:
    """The generator of the task that processes ``chunk`` in ``(epoch, round_)``."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(
        int(seed), spawn_key=(_TASK, int(epoch), int(round_), int(chunk)))))
