"""The chunk engine (docs/architecture.md): shuffled parallel rounds, or one ordered stream.

One round takes the current state, sends it with ``K`` groups of chunks to ``K`` tasks; each
task runs ``algorithm.chunk_step`` (a numba update) over the rows of its group (one chunk, or
``shuffle_chunks`` chunks concatenated, whose rows the algorithm visits in one random order:
see :mod:`ooc_kernels.parallel.plan`) and returns a small delta; the deltas are
tree-reduced with ``algorithm.combine`` in a fixed order, and ``algorithm.apply`` turns the
reduced delta into the next state.  Only the chunks of the current round are ever read, so
memory stays at ``K * shuffle_chunks`` chunks plus the model.  The reduction tree has a fixed
shape, so the result is bit-identical on the synchronous, threaded and distributed
schedulers.

Two execution modes (``execution=``): ``"rounds"`` (above: the chunk order is a new
permutation every epoch, ``K`` tasks a round) and ``"sequential"``: every epoch visits the
chunks once in storage order, one chunk per round (``K = 1``, no groups), so an algorithm
that visits its rows in order (an online forecaster) sees the data exactly as stored, and a
checkpoint after any round resumes at the next chunk.

An algorithm is any object with four methods (see :class:`ChunkAlgorithm`); the DSG and
DSPDC solvers are two.  A task receives its rows as a *batch*: a dict from variable
name to array (``{"X": ..., "y": ...}`` for supervised data, ``{"U": ..., "V": ..., "y":
...}`` for factorized data), so a new kind of data is a new set of names, not a new code
path.

Examples
--------
A toy algorithm that counts samples and sums them:

>>> import dask.array as da
>>> from ooc_kernels.parallel.chunked import ChunkedData
>>> from ooc_kernels.parallel.engine import run_rounds
>>> class Sum:
...     def make_tasks(self, state, info):
...         return [None] * len(info.groups)
...     def chunk_step(self, state, batch, task):
...         return batch["X"].sum(), len(batch["X"])
...     def combine(self, a, b):
...         return a[0] + b[0], a[1] + b[1]
...     def apply(self, state, delta, info):
...         return (state[0] + delta[0], state[1] + delta[1])
>>> data = ChunkedData({"X": da.ones((10, 2), chunks=(3, 2))})
>>> run_rounds(Sum(), (0.0, 0), data, n_epochs=1, chunks_per_round=2, seed=0,
...            scheduler="sync").state
(np.float64(20.0), 10)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import dask

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels._progress import logger, logs_instead, progress_bar
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.parallel.chunked import ChunkedData
from ooc_kernels.parallel.cluster import active_client, cluster_rounds, compute_on_client
from ooc_kernels.parallel.graph import RoundGraph, tree_reduce
from ooc_kernels.parallel.plan import plan_epoch
from ooc_kernels.parallel.read_ahead import ReadAhead, read_ahead_enabled
from ooc_kernels.parallel.scheduler import local_scheduler

__all__ = ["EXECUTIONS", "ChunkAlgorithm", "RoundGraph", "RoundInfo", "RunResult",
           "run_rounds", "tree_reduce"]

#: The engine's execution modes.
EXECUTIONS = ("rounds", "sequential")


@dataclass(frozen=True)
class RoundInfo:
    """Where a round stands: epoch, round index, the groups of chunks its tasks read.

    Attributes
    ----------
    epoch, round : int
    groups : tuple of tuple of int
        One group of chunk ids per task, in task order.
    sizes : tuple of tuple of int
        The rows of every chunk of every group.
    seed : int
        Root of the fit's data randomness.
    n_rounds_in_epoch : int
    """

    epoch: int
    round: int
    groups: tuple[tuple[int, ...], ...]
    sizes: tuple[tuple[int, ...], ...]
    seed: int
    n_rounds_in_epoch: int = 0

    @property
    def chunk_ids(self) -> tuple[int, ...]:
        """Every chunk of the round, in task order."""
        return tuple(c for g in self.groups for c in g)

    @property
    def group_rows(self) -> tuple[int, ...]:
        """Rows per task."""
        return tuple(sum(s) for s in self.sizes)

    def next_position(self) -> tuple[int, int]:
        """``(epoch, round)`` of the round that follows this one."""
        if self.round + 1 >= self.n_rounds_in_epoch:
            return self.epoch + 1, 0
        return self.epoch, self.round + 1


class ChunkAlgorithm(Protocol):
    """What an algorithm provides to the engine.  No Dask inside any of these."""

    def make_tasks(self, state: Any, info: RoundInfo) -> Sequence[Any]:
        """One small, picklable task description per group of the round (in order)."""

    def chunk_step(self, state: Any, batch: dict, task: Any) -> Any:
        """Run the update over the rows of one group; return a small delta.  Runs on a
        worker.  ``batch`` maps every variable name to its array: the sample variables hold
        the group's chunks concatenated in group order, whole variables are given whole."""

    def combine(self, a: Any, b: Any) -> Any:
        """Merge two deltas (associative; applied in a fixed tree order)."""

    def apply(self, state: Any, delta: Any, info: RoundInfo) -> Any:
        """The next state from the current one and the round's reduced delta."""


@dataclass(frozen=True)
class RunResult:
    """Final state and where the run stopped (``epoch``, ``round`` of the next round);
    ``stopped``: an epoch callback ended the run before ``n_epochs``."""

    state: Any
    epoch: int
    round: int
    n_rounds: int
    stopped: bool = False


def _dashboard_link(sched: Any) -> str | None:
    """The dashboard address of the distributed Client that runs the tasks, if any."""
    import sys

    if sys.modules.get("distributed") is None:  # no Client can exist: do not import it
        return None
    from distributed import Client, default_client

    client = sched if isinstance(sched, Client) else None
    if client is None and sched is None:
        try:
            client = default_client()
        except ValueError:  # no active Client: Dask's local scheduler
            return None
    try:
        if client is None or "dashboard" not in client.scheduler_info().get("services", {}):
            return None  # a cluster started without a dashboard
        return client.dashboard_link
    except Exception:  # noqa: BLE001 - a client that cannot answer: no link
        return None


def run_rounds(algorithm: ChunkAlgorithm, state: Any, data: ChunkedData, *, n_epochs: int,
               execution: str = "rounds",
               chunks_per_round: int = 1, seed: int = 0, shuffle: bool = True,
               shuffle_chunks: int = 1,
               start_epoch: int = 0, start_round: int = 0, scheduler: Any = None,
               progress: bool | None = None, desc: str = "fit",
               callback: Callable[[Any, RoundInfo], None] | None = None,
               epoch_callback: Callable[[Any, int], bool] | None = None,
               pipeline: bool | None = None, lookahead: int | None = None,
               chain: int | None = None) -> RunResult:
    """Run ``n_epochs`` passes over ``data`` in rounds of ``chunks_per_round`` chunks.

    Parameters
    ----------
    algorithm : ChunkAlgorithm
    state : object
        Initial state (small: it is shipped to every task of a round).
    data : ChunkedData
    n_epochs : int
        Passes over the data; epochs ``start_epoch .. n_epochs - 1`` are run.
    execution : {"rounds", "sequential"}, default="rounds"
        ``"sequential"``: the chunks once per epoch in storage order, one per round (it
        takes ``chunks_per_round=1``, ``shuffle=False``, ``shuffle_chunks=1`` and refuses
        any other value of them).
    chunks_per_round : int
        ``K``: tasks (groups of chunks) processed in parallel per round.
    shuffle_chunks : int
        Chunks per group: a task reads that many chunks and gets their rows concatenated.
    seed : int
        Root of the chunk order (``shuffle``) and of every task's randomness.
    start_epoch, start_round : int
        Where to start (resuming); the chunk plan of an epoch depends only on ``seed``.
    scheduler : None, "sync", "threads", "processes" or distributed.Client
        What ``dask.compute`` gets (see :func:`ooc_kernels.parallel.scheduler.local_scheduler`;
        an address is connected by :func:`~ooc_kernels.parallel.scheduler.scheduler_context`
        first).
    progress : bool or None
        Show a progress bar over chunks (``None``: only on a terminal).
    callback : callable, optional
        ``callback(state, info)`` after each round (checkpoints, diagnostics);
        ``info.next_position()`` says where a resumed run would start.
    epoch_callback : callable, optional
        ``epoch_callback(state, epoch) -> bool`` after the last round of each epoch, before
        ``callback``; returning True stops the run there (convergence, early stopping).
    pipeline, lookahead, chain : optional
        How rounds run on a ``distributed.Client`` (chained futures, rounds queued ahead,
        synchronization points): see :mod:`ooc_kernels.parallel.cluster`; ``None`` takes
        Dask's configuration (``ooc-kernels.cluster.*``).  Ignored by the local schedulers.

    Raises
    ------
    SchedulerLostError
        The ``distributed`` scheduler went away during the run (reported within about
        :data:`~ooc_kernels.parallel.cluster.POLL_SECONDS` of the Client noticing).

    Notes
    -----
    Every task has a named key (``dsg-chunk-step-e0-r3-c17-<token>``,
    :mod:`ooc_kernels.parallel.names`), so Dask's dashboard shows the epoch, round and
    chunks of each task.  On a Client the progress bar advances as chunk tasks finish and
    names the dashboard's address.
    """
    if execution not in EXECUTIONS:
        raise ValidationError(
            f"execution must be one of {EXECUTIONS}, got {execution!r}."
        )
    if execution == "sequential":
        given = {"chunks_per_round": (chunks_per_round, 1), "shuffle": (shuffle, False),
                 "shuffle_chunks": (shuffle_chunks, 1)}
        for name, (value, fixed) in given.items():
            if value != fixed:
                raise ValidationError(
                    f"execution='sequential' reads one chunk per round in storage order, "
                    f"so {name} must be {fixed!r}, got {value!r}; pass {name}={fixed!r} or "
                    "execution='rounds'."
                )
    if chunks_per_round < 1:
        raise ValidationError(
            f"chunks_per_round must be >= 1, got {chunks_per_round!r}."
        )
    if shuffle_chunks < 1:
        raise ValidationError(f"shuffle_chunks must be >= 1, got {shuffle_chunks!r}.")
    sched = local_scheduler(scheduler)
    rounds = cluster_rounds(pipeline, lookahead, chain)
    with single_threaded_blas():
        return _run(algorithm, state, data, n_epochs=n_epochs,
                    chunks_per_round=chunks_per_round, seed=seed, shuffle=shuffle,
                    shuffle_chunks=shuffle_chunks, start_epoch=start_epoch,
                    start_round=start_round, sched=sched, progress=progress, desc=desc,
                    callback=callback, epoch_callback=epoch_callback, rounds=rounds)


def make_round_info(plan, epoch: int, rnd: int, *, sizes, seed: int) -> RoundInfo:
    """The :class:`RoundInfo` of round ``rnd`` of an epoch's ``plan`` (its groups of chunk
    ids), with the groups' chunk ``sizes``."""
    groups = plan[rnd]
    return RoundInfo(epoch=epoch, round=rnd, groups=groups,
                     sizes=tuple(tuple(sizes[c] for c in g) for g in groups),
                     seed=seed, n_rounds_in_epoch=len(plan))


def end_round(state, info: RoundInfo, *, last: bool, epoch_callback: Callable | None,
              callback: Callable | None) -> bool:
    """The callbacks after a round, in :func:`run_rounds`' order: ``epoch_callback`` after
    the ``last`` round of an epoch, then ``callback``; True when the epoch callback stops
    the run there."""
    stop = False
    if epoch_callback is not None and last:
        stop = bool(epoch_callback(state, info.epoch))
    if callback is not None:
        callback(state, info)
    return stop


def _epoch_lines(callback: Callable | None, desc: str, n_epochs: int, n_chunks: int,
                 link: str | None, start: tuple[int, int] = (0, 0)) -> Callable:
    """``callback`` preceded by one INFO line at the end of each epoch (its number, chunks
    and seconds): a batch job's log shows how a fit advances without a bar.  A fit that
    resumes (``start``: the epoch and round it starts at) says so first."""
    import time

    clock = {"start": time.perf_counter()}
    dashboard = f" (dashboard: {link})" if link else ""
    chunks = f"{n_chunks} chunk{'' if n_chunks == 1 else 's'}"
    if start[0] >= n_epochs:
        logger.info("%s: fit resumed from its checkpoint, which holds all %d epochs: nothing "
                    "left to run%s", desc, n_epochs, dashboard)
    elif start != (0, 0):
        where = (f"at the start of epoch {start[0] + 1}/{n_epochs}" if start[1] == 0 else
                 f"in epoch {start[0] + 1}/{n_epochs}, after {start[1]} of its rounds")
        logger.info("%s: fit resumed from its checkpoint %s (%s an epoch)%s", desc, where,
                    chunks, dashboard)
    else:
        logger.info("%s: fit started, %d epoch%s of %s%s", desc, n_epochs,
                    "" if n_epochs == 1 else "s", chunks, dashboard)

    def logged(state, info):
        if info.round == info.n_rounds_in_epoch - 1:
            now = time.perf_counter()
            logger.info("%s: epoch %d/%d done (%s, %.1f s)", desc, info.epoch + 1,
                        n_epochs, chunks, now - clock["start"])
            clock["start"] = now
        if callback is not None:
            callback(state, info)

    return logged


def _run(algorithm, state, data, *, n_epochs, chunks_per_round, seed, shuffle,
         shuffle_chunks, start_epoch, start_round, sched, progress, desc,
         callback, epoch_callback, rounds) -> RunResult:
    graph = RoundGraph(algorithm, data, shuffle_chunks)
    sizes = data.chunk_sizes
    total = max(n_epochs - start_epoch, 0) * data.n_chunks
    client = active_client(sched)
    with progress_bar(total=total, desc=desc, enabled=progress, unit="chunk") as bar:
        link = _dashboard_link(sched)
        if link and not bar.disable:  # Dask's own progress pages for this fit's tasks
            bar.set_postfix_str(f"dashboard: {link}")
        if logs_instead(progress, bar):  # no bar: one log line per epoch instead
            callback = _epoch_lines(callback, desc, n_epochs, data.n_chunks, link,
                                    (start_epoch, start_round))

        def plan_of(epoch: int):
            return plan_epoch(data.n_chunks, chunks_per_round=chunks_per_round, seed=seed,
                              epoch=epoch, shuffle=shuffle, shuffle_chunks=shuffle_chunks)

        def round_info(plan, epoch: int, rnd: int) -> RoundInfo:
            return make_round_info(plan, epoch, rnd, sizes=sizes, seed=seed)

        if client is not None and rounds.pipeline:
            from ooc_kernels.parallel.cluster import run_on_client

            return RunResult(*run_on_client(client, graph, state, plan_of=plan_of,
                                 round_info=round_info, n_epochs=n_epochs,
                                 start_epoch=start_epoch, start_round=start_round, bar=bar,
                                 callback=callback, epoch_callback=epoch_callback,
                                 lookahead=rounds.lookahead, chain=rounds.chain))
        ahead = ReadAhead(graph, client is None and read_ahead_enabled(sched))
        try:
            return _local_rounds(algorithm, state, graph, sched, client, ahead, plan_of,
                                 round_info, n_epochs=n_epochs, start_epoch=start_epoch,
                                 start_round=start_round, bar=bar, callback=callback,
                                 epoch_callback=epoch_callback)
        finally:
            ahead.close()


def _next_read(ahead, groups):
    """A call that starts reading ``groups`` ahead (the next round's; None: nothing
    follows) the first time it is made, and does nothing after."""
    started = []

    def start() -> None:
        if not started:
            started.append(True)
            ahead.start(groups)

    return start


def _local_rounds(algorithm, state, graph, sched, client, ahead, plan_of, round_info, *,
                  n_epochs, start_epoch, start_round, bar, callback,
                  epoch_callback) -> RunResult:
    """The rounds run one ``dask.compute`` each (local schedulers, or a Client without
    pipelining); ``ahead`` reads the next round's groups while a round runs.  On the local
    schedulers a round of one task whose rows were read ahead runs that task in this thread
    (:meth:`~ooc_kernels.parallel.graph.RoundGraph.run_here`: the same call, no graph).
    An algorithm with ``starts_read_ahead = True`` starts the next read itself from such a
    task, through the batch's ``"read_ahead"`` call, once it knows that the fit goes on
    (a task that certifies the fit's stop never starts it, so the store is not read for a
    round that never runs); for it a one-task round that nothing read ahead (a fit's first)
    reads its rows in this thread first, so that it is such a task too.  Else, or when the
    task did not, the read starts before the round, or after it when the fit goes on."""
    n_rounds = 0
    epoch, rnd = start_epoch, start_round
    for epoch in range(start_epoch, n_epochs):
        plan = plan_of(epoch)
        first = start_round if epoch == start_epoch else 0
        if first:
            bar.update(sum(len(g) for r in plan[:first] for g in r))
        for rnd in range(first, len(plan)):
            info = round_info(plan, epoch, rnd)
            rows = ahead.take(info.groups)
            opts_in = getattr(algorithm, "starts_read_ahead", False)
            if rows is None and opts_in and client is None and len(info.groups) == 1:
                rows = ahead.read_here(info.groups)   # nothing read ahead: the first round
            here = client is None and rows is not None and len(info.groups) == 1
            start_next = _next_read(ahead, plan[rnd + 1] if rnd + 1 < len(plan) else
                                    plan_of(epoch + 1)[0] if epoch + 1 < n_epochs else None)
            if not (here and opts_in):
                start_next()
            if client is not None:  # bounded waits: a lost scheduler is reported
                delta = compute_on_client(client, graph.local_round(state, info))
            elif here:  # one task, its rows read: no graph to schedule
                delta = graph.run_here(state, info, rows[0], read_ahead=start_next)
            else:
                (delta,) = dask.compute(graph.local_round(state, info, rows),
                                        scheduler=sched)
            state = algorithm.apply(state, delta, info)
            n_rounds += 1
            bar.update(len(info.chunk_ids))
            if end_round(state, info, last=rnd == len(plan) - 1,
                         epoch_callback=epoch_callback, callback=callback):
                return RunResult(state=state, epoch=epoch + 1, round=0,
                                 n_rounds=n_rounds, stopped=True)
            start_next()   # when the task did not start it
    else:
        epoch, rnd = n_epochs, 0
    return RunResult(state=state, epoch=epoch, round=rnd, n_rounds=n_rounds)
