"""What a DSG round hands to its tasks and what they return: :class:`DSGTask` and
:class:`DSGDelta`, the messages between
:class:`~ooc_kernels.families.dsg.solver.DSGAlgorithm` and the engine
(:mod:`ooc_kernels.families.dsg.solver` re-exports both).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ooc_kernels._checks import RowOrigin

__all__ = ["DSGTask", "DSGDelta"]


@dataclass(frozen=True)
class DSGTask:
    """One task: the group of chunks it reads, where it stands, its first block id.

    ``chunk`` (the group's first chunk) keys the task's random row order; ``t_start`` is
    the global step before its first step; ``n_tasks`` the tasks of its round when they are
    combined in the summed form (1 otherwise), ``mix`` the round's mixing weight.
    """

    chunk: int
    epoch: int
    round: int
    seed: int
    block_start: int
    t_start: int
    chunks: tuple[int, ...] = ()
    sizes: tuple[int, ...] = ()
    n_tasks: int = 1
    mix: float = 1.0
    round_tasks: int = 1  # K: the tasks of the round, which share the threads

    @property
    def origin(self) -> RowOrigin:
        """Maps a row of the task's input back to its chunk and row there."""
        if not self.chunks:  # a task made by hand: one chunk of unknown size
            return RowOrigin((self.chunk,), (np.iinfo(np.int64).max // 2,))
        return RowOrigin(self.chunks, self.sizes)


@dataclass(frozen=True)
class DSGDelta:
    """What tasks return and
    :meth:`~ooc_kernels.families.dsg.solver.DSGAlgorithm.combine` reduces.

    A task of a ``K = 1`` round (or with ``combination="average"``) describes its local
    model as ``coef * decay + blocks + dense`` and the weighted average of such local
    models is what combining gives (``summed=False``).  Tasks of a ``K > 1`` round return
    the *summed form* (``summed=True``): the local run as the affine map ``x -> x * decay
    + B`` of the round's starting model ``x`` (``B``: ``coefs`` at ``block_ids`` plus
    ``dense``), and the sum of its averaged iterates as ``x * avg_c + P`` (``P``:
    ``avg_coefs`` at ``block_ids`` plus ``avg_dense``); combining composes these maps in
    task order, and :meth:`~ooc_kernels.families.dsg.solver.DSGAlgorithm.apply` mixes the
    result with the weight ``mix``.

    Attributes
    ----------
    decay : float
        Weighted mean of the tasks' decays of the old coefficients.
    weight : float
        Total weight: the rows trained on (0 for tasks that did no work).
    count : int
        Tasks combined (with or without work).
    block_ids : ndarray of int64
        Ids of the new blocks; ``coefs`` holds their weighted coefficients.
    coefs : ndarray (len(block_ids), block_size, n_outputs), float64
    dense : ndarray (n_blocks, block_size, n_outputs) float64, or None (zero)
        Weighted mean of the full local models of tasks that reached the full phase.
    max_steps : int
        Largest number of steps a task took.
    n_samples, n_skipped : int
        Rows trained on, rows skipped as invalid.
    block_end : int
        One past the highest block id opened (0 when none).
    avg_a, avg_c : float
        The averaged iterate after the tasks is ``avg_a * avg + avg_c * coef`` (of the
        state) ``+ avg_coefs`` at ``block_ids`` ``+ avg_dense``.
    avg_coefs : ndarray like ``coefs``, avg_dense : ndarray or None
    n_avg : int
        Largest number of averaged steps a task took.
    loss_sum, loss_weight : float
        Summed over the tasks (progressive-validation loss and its weights).
    summed : bool
        Whether the fields hold the summed form (above).
    n_steps : int
        Summed form: steps taken by all the tasks (the global step counter's advance).
    mix : float
        Summed form: the round's mixing weight ``w``
        (:meth:`~ooc_kernels.families.dsg.solver.DSGAlgorithm.mixing_weight`).
    beta_ids, betas, beta_decay
        ``update="check"``: the state's ``beta`` after the tasks is ``beta * beta_decay``
        plus ``betas`` at ``beta_ids`` (summed form: mixed like the coefficients).
    factors : ndarray or None
        ``update="check"``: the factors ``1 - step alpha`` of the task's growth steps (their
        step sizes are the test's, not the schedule's).
    """

    decay: float
    weight: float
    count: int
    block_ids: np.ndarray
    coefs: np.ndarray
    dense: np.ndarray | None
    max_steps: int
    n_samples: int
    block_end: int = 0
    n_skipped: int = 0
    avg_a: float = 1.0
    avg_c: float = 0.0
    avg_coefs: np.ndarray | None = None
    avg_dense: np.ndarray | None = None
    n_avg: int = 0
    loss_sum: float = 0.0
    loss_weight: float = 0.0
    summed: bool = False
    n_steps: int = 0
    mix: float = 1.0
    beta_ids: np.ndarray | None = None
    betas: np.ndarray | None = None
    beta_decay: float = 1.0
    factors: np.ndarray | None = None
