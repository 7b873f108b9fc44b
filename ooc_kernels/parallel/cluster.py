"""Rounds kept on a ``dask.distributed`` cluster: chained futures, the next round queued.

With Dask's local schedulers a round is one ``dask.compute`` (the client is the machine that
runs the tasks, so a round trip costs nothing).  On a cluster each ``dask.compute`` would
cost a round trip per round: build and send the graph, ship the state, wait for the reduced
delta, ``apply`` on the client, and only then send the next round.  Instead, when a
``distributed.Client`` runs the fit (:func:`active_client`), :func:`run_on_client`

* submits each round as futures whose last task computes the next state on the cluster
  (the root of the reduction tree and ``apply``, one task); the next round's tasks take
  that state's future as input, so the state crosses the network worker to worker, and
  each chunk task runs ``make_tasks`` (small and pure) itself: a round is two steps of
  tasks on the cluster, the chunk tasks and the new state (plus ``log2(K) - 1`` levels of
  ``combine`` when ``K > 2``), and a round of one task (``K = 1``) is one task that runs
  the chunk step and ``apply`` (no hand-off through the scheduler between the two);
* keeps ``lookahead`` rounds queued ahead of the client: while round ``r`` runs, round
  ``r + 1`` is already on the scheduler, so its chunks are read as soon as a worker has a
  free slot and its tasks start the moment ``apply`` of round ``r`` returns;
* brings every round's state to the client (it is small) and runs the callbacks on it, in
  round order, with the same arguments as the local path: ``callback(state, info)`` after
  every round, ``epoch_callback(state, epoch)`` after the last round of an epoch.  A
  callback that raises, or an epoch callback that stops the run, cancels the rounds queued
  after it, so the result is the one of the local path;
* waits for the state on the client (a *synchronization point*) at the end of every epoch
  and every ``chain`` rounds, and starts the next round from that concrete state.  Nothing
  of an epoch runs before the previous epoch's callbacks have returned (a stopping rule
  never wastes an epoch, and chunk-local state of a chunk read in consecutive rounds across
  an epoch boundary is never touched by two rounds at once), and the lineage that Dask keeps
  to recompute a lost state is at most ``chain`` rounds long.

A lost scheduler (killed, closed, unreachable) ends the fit with
:class:`~ooc_kernels.exceptions.SchedulerLostError` promptly: the client never waits on a
future without a bound, it looks at the Client's connection every :data:`POLL_SECONDS`
while it waits, and Dask's ``FutureCancelledError`` of a lost connection becomes the
library's error.

Results are bit-identical to the local schedulers: the tasks, the reduction tree and the
order of its operands are the same, only where ``make_tasks``, the root ``combine`` and
``apply`` run changes (in a task with one BLAS thread, like every chunk task).

Settings come from Dask's configuration (``run_rounds`` arguments win); their defaults are
in the packaged ``ooc_kernels/ooc-kernels.yaml``, registered with Dask's configuration when
the library's Dask layer is imported (:func:`ooc_kernels._config.register_defaults`)::

    ooc-kernels:
      cluster:
        pipeline: true     # false: one dask.compute per round, as on the local schedulers
        lookahead: 1       # rounds queued ahead of the one whose state the client awaits
        chain: 8           # rounds chained on the cluster between synchronization points

Examples
--------
>>> from ooc_kernels.parallel.cluster import cluster_rounds
>>> cluster_rounds()
ClusterRounds(pipeline=True, lookahead=1, chain=8)
>>> import dask
>>> with dask.config.set({"ooc-kernels.cluster.lookahead": 0}):
...     cluster_rounds().lookahead
0
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import dask
from dask.base import tokenize

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels._config import defaults, register_defaults
from ooc_kernels.exceptions import OocKernelsError, SchedulerLostError, ValidationError
from ooc_kernels.parallel.graph import _read_group, reduce_levels

register_defaults()  # the ooc-kernels.cluster.* keys read below

__all__ = ["POLL_SECONDS", "ClusterRounds", "active_client", "auto_tasks_per_round",
           "cluster_rounds",
           "compute", "compute_on_client", "reporting_scheduler_loss", "run_on_client",
           "scheduler_loss_during", "scheduler_lost"]

#: Seconds between two looks at the Client's connection while the client waits for tasks:
#: a lost scheduler is reported within about this long of the Client noticing it.
POLL_SECONDS = 0.5


def _defaults() -> dict:
    """The ``ooc-kernels.cluster`` defaults of the packaged configuration file."""
    return defaults()["ooc-kernels"]["cluster"]


_LOCAL_NAMES = {"sync", "synchronous", "single-threaded", "threads", "threading",
                "processes", "multiprocessing"}


@dataclass(frozen=True)
class ClusterRounds:
    """How rounds run on a ``distributed.Client`` (see the module docstring); made by
    :func:`cluster_rounds` from Dask's configuration.

    Attributes
    ----------
    pipeline : bool
        Chain rounds on the cluster (``False``: one ``dask.compute`` per round).
    lookahead : int
        Rounds queued on the cluster beyond the one whose state the client awaits (>= 0).
    chain : int
        Rounds chained on futures between two synchronization points (>= 1).
    """

    pipeline: bool
    lookahead: int
    chain: int


def cluster_rounds(pipeline: bool | None = None, lookahead: int | None = None,
                   chain: int | None = None) -> ClusterRounds:
    """The settings of rounds on a cluster: explicit values, else Dask's configuration
    (``ooc-kernels.cluster.*``, whose defaults are pipeline, lookahead 1, chain 8).

    Raises
    ------
    ValidationError
        ``lookahead`` below 0 or ``chain`` below 1 (or not integers).
    """
    def pick(name, value):
        if value is not None:
            return value
        return dask.config.get(f"ooc-kernels.cluster.{name}")

    out = ClusterRounds(pipeline=bool(pick("pipeline", pipeline)),
                        lookahead=pick("lookahead", lookahead), chain=pick("chain", chain))
    for name, low in (("lookahead", 0), ("chain", 1)):
        value = getattr(out, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValidationError(
                f"ooc-kernels.cluster.{name} must be an integer >= {low}, got {value!r}; "
                f"set it with dask.config.set({{'ooc-kernels.cluster.{name}': "
                f"{_defaults()[name]}}}) (the default)."
            )
    return out


def active_client(sched: Any) -> Any:
    """The ``distributed.Client`` that ``dask.compute(scheduler=sched)`` would use, or None.

    ``sched`` is what :func:`~ooc_kernels.parallel.scheduler.local_scheduler` returned: a
    Client, a local scheduler's name, or None (Dask's configuration, then the default
    Client).  Never imports ``distributed`` when it is not imported already (no Client can
    exist then).

    Examples
    --------
    >>> active_client("sync") is None
    True
    """
    if sys.modules.get("distributed") is None:
        return None
    from distributed import Client, default_client

    if isinstance(sched, Client):
        return sched
    if sched is not None:
        return None
    configured = dask.config.get("scheduler", None)
    if isinstance(configured, Client):
        return configured
    if isinstance(configured, str) and configured in _LOCAL_NAMES:
        return None
    if configured is not None and not isinstance(configured, str):
        return None  # a get function
    try:
        return default_client()
    except ValueError:  # no Client: Dask's local scheduler
        return None


def auto_tasks_per_round(sched: Any) -> int:
    """``chunks_per_round="auto"``: one chunk task per worker of the Client that runs the
    fit (its workers now), 1 on the local schedulers (sync, threads, processes).

    Task slot ``i`` of a round runs on worker ``i mod W`` (:func:`run_on_client`), so with
    ``K = W`` every worker runs one task a round, using its threads.  A Client without
    workers yet counts as one worker.  The caller keeps the value for the whole fit (and
    its checkpoints), so workers that join or leave later do not change ``K``.

    Examples
    --------
    >>> auto_tasks_per_round("threads"), auto_tasks_per_round("sync")
    (1, 1)
    """
    client = active_client(sched)
    if client is None:
        return 1
    return max(1, len(client.scheduler_info(n_workers=-1).get("workers", {})))


class _Prefetched:
    """A group being read by a background thread of a worker process."""

    def __init__(self):
        self.done = threading.Event()
        self.batch = None

    def fill(self, readers: dict) -> None:
        try:
            self.batch = {name: _read_group(*rs) for name, rs in readers.items()}
        except BaseException:  # noqa: BLE001 - the task that needs it reads it again
            self.batch = None
        finally:
            self.done.set()


#: Groups read ahead in this (worker) process, by the keys of their chunks: at most
#: :data:`PREFETCH_SLOTS` groups, the oldest dropped first.
_PREFETCHED: dict = {}
_PREFETCH_LOCK = threading.Lock()
PREFETCH_SLOTS = 2


def _group_key(readers: dict) -> tuple:
    return tuple((name, tuple(r.key for r in rs)) for name, rs in sorted(readers.items()))


def _prefetch(readers: dict) -> None:
    """Start reading a group in a background thread of this process (numba and the Zarr
    codecs release the GIL, so it overlaps the task that runs meanwhile)."""
    key = _group_key(readers)
    with _PREFETCH_LOCK:
        if key in _PREFETCHED:
            return
        while len(_PREFETCHED) >= PREFETCH_SLOTS:
            _PREFETCHED.pop(next(iter(_PREFETCHED)))
        entry = _PREFETCHED[key] = _Prefetched()
    threading.Thread(target=entry.fill, args=(readers,), daemon=True,
                     name="ooc-kernels-prefetch").start()


def _load(readers: dict) -> dict:
    """A task's rows: from the prefetched group when this process read it ahead, else read
    now (a failed read ahead is read again here, so its error is the task's error)."""
    with _PREFETCH_LOCK:
        entry = _PREFETCHED.pop(_group_key(readers), None)
    if entry is not None:
        entry.done.wait()
        if entry.batch is not None:
            return entry.batch
    return {name: _read_group(*rs) for name, rs in readers.items()}


def _chunk_step(algorithm, state, readers, whole, info, index, upcoming):
    """One chunk task of a round on the cluster: read the group (or take it from the read
    ahead), start reading the group this task slot gets next round, run ``make_tasks``
    (small and pure, so every task computes it rather than waiting for one more task) and
    ``chunk_step``."""
    batch = {**_load(readers), **whole}
    if upcoming is not None:
        _prefetch(upcoming)
    with single_threaded_blas():
        task = list(algorithm.make_tasks(state, info))[index]
    return algorithm.chunk_step(state, batch, task)


def _apply(algorithm, state, info, *operands):
    """The root of the reduction tree and ``apply`` in one task: ``combine(a, b)`` of the
    root's two operands (the same tree and order as :func:`tree_reduce`), then the new
    state."""
    with single_threaded_blas():
        delta = operands[0] if len(operands) == 1 else algorithm.combine(*operands)
        return algorithm.apply(state, delta, info)


def _chunk_apply(algorithm, state, readers, whole, info, upcoming):
    """A round of one task (``K = 1``) as one task: :func:`_chunk_step` then :func:`_apply`
    of its delta (the same calls in the same order, so the same state), without a second
    task and the scheduler's hand-off between the two."""
    delta = _chunk_step(algorithm, state, readers, whole, info, 0, upcoming)
    return _apply(algorithm, state, info, delta)


@dataclass
class _Round:
    info: Any
    state: Any          # the future of the round's new state
    steps: list         # futures of the chunk tasks (progress), released as they finish
    weights: list       # chunks per task


def _workers(client) -> list:
    """The addresses of the Client's workers now (one round trip to the scheduler)."""
    if scheduler_lost(client):
        raise _lost_error(client)
    return sorted(client.scheduler_info(n_workers=-1).get("workers", {}))


def _submit(client, graph, head, head_token, info, upcoming, workers) -> _Round:
    """Submit one round starting from ``head`` (a concrete state or a Future);
    ``upcoming``: the groups of the round after it (read ahead), or None; ``workers``: the
    addresses of the workers (:func:`_workers`) that the task slots are placed on.

    A round of one task (``K = 1``) is one task, :func:`_chunk_apply`, named as its chunk
    task; with ``K > 1`` the chunk tasks, the ``combine`` levels below the root and
    :func:`_apply`."""
    if scheduler_lost(client):  # nothing is submitted to a Client without a scheduler
        raise _lost_error(client)
    algorithm = graph.algorithm
    names = graph.names(info, head_token)
    if _is_future(head):  # chained: the state stays on the cluster
        state_d = head
    else:  # a synchronization point: the state enters the graph as data
        state_d = dask.delayed(head, traverse=False, name=names.state())
    # task slot i runs on worker i (mod W) every round, so the group it reads ahead is read
    # where it will be used; loose restrictions: any worker if that one is gone
    parts = []
    for i, g in enumerate(info.groups):
        nxt = None
        if upcoming is not None and i < len(upcoming):
            nxt = graph.group_readers(upcoming[i])
        where = (dask.annotate(workers=[workers[i % len(workers)]], allow_other_workers=True)
                 if workers else contextlib.nullcontext())
        with where:
            if len(info.groups) == 1:
                (new,) = client.compute([dask.delayed(_chunk_apply)(
                    algorithm, state_d, graph.group_readers(g), graph.whole, info, nxt,
                    dask_key_name=names.chunk_step(g))])
                return _Round(info=info, state=new, steps=[new], weights=[len(g)])
            parts.append(dask.delayed(_chunk_step)(
                algorithm, state_d, graph.group_readers(g), graph.whole, info, i, nxt,
                dask_key_name=names.chunk_step(g)))
    root = reduce_levels(parts, algorithm.combine, name=names.combine, until=2)
    new = dask.delayed(_apply)(algorithm, state_d, info, *root, dask_key_name=names.apply())
    futures = client.compute([new, *parts])
    return _Round(info=info, state=futures[0], steps=list(futures[1:]),
                  weights=[len(g) for g in info.groups])


def _is_future(obj) -> bool:
    from distributed import Future

    return isinstance(obj, Future)


def scheduler_lost(client) -> bool:
    """Whether ``client`` has lost its scheduler (its connection is down, being
    re-established, or the Client was closed).

    Examples
    --------
    >>> class Closed:
    ...     status = "closed"
    >>> scheduler_lost(Closed())
    True
    """
    return getattr(client, "status", "running") != "running"


#: The operation a lost scheduler's error names (:func:`scheduler_loss_during`); None: a fit.
_DURING: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "ooc_kernels_scheduler_loss_during", default=None)


@contextlib.contextmanager
def scheduler_loss_during(operation: str):
    """Inside the block, a lost scheduler's :class:`SchedulerLostError` says it was lost
    during ``operation`` (``"score"``, ``"evaluate"`` ...) instead of during the fit.  The
    outermost block wins: a fit's scoring of its own validation rows is still the fit.

    Examples
    --------
    >>> with scheduler_loss_during("score"), scheduler_loss_during("evaluate"):
    ...     _during()
    'score'
    >>> _during()
    'the fit'
    """
    token = _DURING.set(_DURING.get() or operation)
    try:
        yield
    finally:
        _DURING.reset(token)


def _during() -> str:
    """What the scheduler is lost during: the operation of :func:`scheduler_loss_during`,
    else the fit."""
    return _DURING.get() or "the fit"


def _lost_error(client) -> SchedulerLostError:
    try:
        address = client.scheduler.address
    except Exception:  # noqa: BLE001 - a Client without an address: say so
        address = "(address unknown)"
    return SchedulerLostError(
        f"the Dask scheduler at {address} was lost during {_during()} (the Client's connection "
        f"is {getattr(client, 'status', '?')!r}): start a scheduler again (or connect to a "
        "running one), then rerun")


def _raise_if_cancelled_by_loss(client, err: BaseException) -> None:
    """Raise :class:`SchedulerLostError` from ``err`` when ``err`` comes from a lost
    scheduler (a future cancelled for ``scheduler-connection-lost``, a closed comm)."""
    if isinstance(err, OocKernelsError) or not isinstance(err, Exception):
        return
    if scheduler_lost(client) or "scheduler-connection-lost" in str(err):
        raise _lost_error(client) from err


@contextlib.contextmanager
def reporting_scheduler_loss(sched: Any, hint: Callable[[], str] | None = None):
    """Inside the block, an error raised because the Client that ``sched`` stands for
    (:func:`active_client`) lost its scheduler becomes
    :class:`~ooc_kernels.exceptions.SchedulerLostError` (Dask's ``FutureCancelledError``,
    a closed comm ...), its message followed by ``hint()``: what to do next (which
    checkpoint to resume from).  Other errors pass unchanged.

    Examples
    --------
    >>> with reporting_scheduler_loss("sync"):
    ...     pass
    """
    try:
        yield
    except SchedulerLostError as err:
        if hint is None:
            raise
        raise SchedulerLostError(f"{err}; {hint()}.") from err
    except Exception as err:
        client = active_client(sched)
        if client is None or isinstance(err, OocKernelsError) or not (
                scheduler_lost(client) or "scheduler-connection-lost" in str(err)):
            raise
        lost = _lost_error(client)
        raise SchedulerLostError(f"{lost}; {hint()}." if hint is not None else str(lost)) \
            from err


def _result(client, future, on_poll: Callable[[], None] | None = None) -> Any:
    """``future.result()``, bounded: the Client's connection is looked at every
    :data:`POLL_SECONDS` (``on_poll()`` runs then too), so a lost scheduler raises
    :class:`~ooc_kernels.exceptions.SchedulerLostError` promptly instead of a wait
    without end.

    The wait is a ``threading.Event`` set by the future's done callback, and the result is
    fetched once the future is done: ``future.result(timeout=...)`` would leave, at every
    timeout, the future in a reference cycle of ``distributed``'s ``sync`` (the timed-out wait's
    exception and its frames), which keeps the future's keys on the scheduler until
    Python's cyclic garbage collector runs, seconds or minutes later in a large process."""
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    while not done.is_set():
        if scheduler_lost(client):
            raise _lost_error(client)
        if not done.wait(POLL_SECONDS) and on_poll is not None:
            on_poll()
    try:
        return future.result()
    except concurrent.futures.CancelledError as err:
        _raise_if_cancelled_by_loss(client, err)
        raise


def compute_on_client(client, obj) -> Any:
    """``dask.compute(obj, scheduler=client)[0]`` with the bounded wait of
    :func:`_result`: a lost scheduler raises
    :class:`~ooc_kernels.exceptions.SchedulerLostError` promptly."""
    try:
        return _result(client, client.compute(obj))
    except Exception as err:
        _raise_if_cancelled_by_loss(client, err)
        raise


def compute(*objs: Any, scheduler: Any = None) -> tuple:
    """``dask.compute(*objs, scheduler=scheduler)``, with the bounded waits of
    :func:`compute_on_client` when the computation runs on a Client: a scheduler lost while
    it runs raises :class:`~ooc_kernels.exceptions.SchedulerLostError` within
    :data:`POLL_SECONDS` of the Client noticing, not after Dask's reconnection timeout.

    ``scheduler`` is what :func:`~ooc_kernels.parallel.scheduler.local_scheduler` takes: a
    Client, a local scheduler's name, or None (Dask's configuration, then the default
    Client).  The objects are computed together (one graph, shared tasks computed once);
    objects that are not Dask collections come back as they are.

    Examples
    --------
    >>> import dask.array as da
    >>> total, three = compute(da.ones(4, chunks=2).sum(), 3, scheduler="sync")
    >>> float(total), three
    (4.0, 3)
    """
    from ooc_kernels.parallel.scheduler import local_scheduler

    sched = local_scheduler(scheduler)
    client = active_client(sched)
    if client is None:
        return dask.compute(*objs, scheduler=sched)
    if scheduler_lost(client):
        raise _lost_error(client)
    try:
        futures = client.compute(list(objs))
        return tuple(_result(client, f) if dask.is_dask_collection(o) else o
                     for o, f in zip(objs, futures))
    except Exception as err:
        _raise_if_cancelled_by_loss(client, err)
        # a scheduler closing while the graph is sent fails the send with another error
        # (a serialization TypeError) before the Client's connection says so
        if not isinstance(err, OocKernelsError) and _lost_within(client, 2 * POLL_SECONDS):
            raise _lost_error(client) from err
        raise


def _lost_within(client, seconds: float) -> bool:
    """Whether ``client`` loses its scheduler within ``seconds`` (looked at every 50 ms)."""
    end = time.monotonic() + seconds
    while not scheduler_lost(client):
        if time.monotonic() >= end:
            return False
        time.sleep(0.05)
    return True


def _await(client, rnd: _Round, bar) -> Any:
    """Wait for a round's new state (it depends on every chunk task of the round, so a
    failed task makes its result raise that task's error), advancing ``bar`` as chunk
    tasks finish (looked at while waiting, and at the end)."""
    weight = {f.key: w for f, w in zip(rnd.steps, rnd.weights)}
    steps, rnd.steps = rnd.steps, []

    def advance() -> None:
        nonlocal steps
        still = []
        for f in steps:
            if f.status == "pending":
                still.append(f)
            else:  # a finished delta is released
                bar.update(weight[f.key])
        steps = still

    state = _result(client, rnd.state, advance)
    advance()
    return state


def _cancel(client, rounds) -> None:
    futures = list({f.key: f for r in rounds for f in (r.state, *r.steps)}.values())
    if futures and not scheduler_lost(client):  # a lost scheduler cancelled them already
        client.cancel(futures)


def run_on_client(client, graph, state: Any, *, plan_of: Callable, round_info: Callable,
                  n_epochs: int, start_epoch: int, start_round: int, bar,
                  callback: Callable | None, epoch_callback: Callable | None,
                  lookahead: int, chain: int):
    """Run the rounds of :func:`~ooc_kernels.parallel.engine.run_rounds` on ``client``
    (see the module docstring), with the same callbacks as the local path.

    Returns
    -------
    tuple
        ``(state, epoch, round, n_rounds, stopped)``: the fields of
        :class:`~ooc_kernels.parallel.engine.RunResult`.
    """
    n_rounds, stopped = 0, False
    for epoch in range(start_epoch, n_epochs):
        plan = plan_of(epoch)
        first = start_round if epoch == start_epoch else 0
        if first:
            bar.update(sum(len(g) for r in plan[:first] for g in r))
        queued: deque[_Round] = deque()
        head, head_token, chained = state, tokenize(state), 0

        def finish() -> None:
            """Wait for the oldest queued round and run its callbacks."""
            nonlocal state, n_rounds, stopped
            rnd = queued.popleft()
            state = _await(client, rnd, bar)
            n_rounds += 1
            info = rnd.info
            if epoch_callback is not None and info.round == info.n_rounds_in_epoch - 1:
                stopped = bool(epoch_callback(state, info.epoch))
            if callback is not None:
                callback(state, info)

        try:
            workers = _workers(client)  # once an epoch: a round trip to the scheduler
            for r in range(first, len(plan)):
                if chained >= chain:  # a synchronization point: cut the lineage
                    while queued:
                        finish()
                    head, head_token, chained = state, tokenize(state), 0
                if r + 1 < len(plan):
                    upcoming = plan[r + 1]
                else:  # the next epoch's first round (its plan depends on the seed only)
                    upcoming = plan_of(epoch + 1)[0] if epoch + 1 < n_epochs else None
                rnd = _submit(client, graph, head, head_token, round_info(plan, epoch, r),
                              upcoming, workers)
                queued.append(rnd)
                head, head_token, chained = rnd.state, rnd.state.key, chained + 1
                while len(queued) > lookahead:
                    finish()
            while queued:  # the end of an epoch is a synchronization point
                finish()
        except BaseException as err:
            _cancel(client, queued)
            _raise_if_cancelled_by_loss(client, err)
            raise
        if stopped:
            return state, epoch + 1, 0, n_rounds, True
    return state, n_epochs, 0, n_rounds, False
