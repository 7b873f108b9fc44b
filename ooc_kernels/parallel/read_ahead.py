"""Reading the next round's chunks while the current round runs, on the local schedulers.

On the synchronous and threaded schedulers a round reads its groups of chunks, steps them
and returns; without help the chunk reads (Zarr decoding) and the steps alternate on the
critical path.  :class:`ReadAhead` reads round ``r + 1``'s groups in one background thread
while round ``r`` runs (the numba kernels and the Zarr codecs release the GIL, so the two
overlap), and hands them to round ``r + 1`` in place of its chunk reads.  The arrays are the
same values as the chunks the round would read itself, so the model is the same bit for bit.

Bounds: one round ahead and one reading thread, so a fit holds at most two rounds of groups
(``2 K shuffle_chunks`` chunks instead of ``K shuffle_chunks``).  A read ahead that fails is
dropped, and the round reads its chunks itself, so a bad chunk raises its usual error from
its own round.  Off with ``dask.config.set({"ooc-kernels.local.read_ahead": False})``.  The
process pool (tasks in other processes) and a ``distributed.Client`` (its workers read
ahead themselves, :mod:`ooc_kernels.parallel.cluster`) do not use it.

Examples
--------
>>> import dask.array as da
>>> from ooc_kernels.parallel.chunked import ChunkedData
>>> from ooc_kernels.parallel.graph import RoundGraph
>>> data = ChunkedData({"X": da.arange(12, chunks=4).reshape(6, 2)})
>>> ahead = ReadAhead(RoundGraph(object(), data, 1), enabled=True)
>>> ahead.start(((1,), (2,)))
>>> [rows["X"].tolist() for rows in ahead.take(((1,), (2,)))]
[[[4, 5], [6, 7]], [[8, 9], [10, 11]]]
>>> ahead.take(((0,),)) is None   # nothing read ahead for this round: it reads its own
True
>>> ahead.close()
"""

from __future__ import annotations

import concurrent.futures
from typing import Any

import dask
import dask.local
import dask.threaded
from dask.base import get_scheduler

from ooc_kernels._config import register_defaults
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.parallel.graph import _read_group

register_defaults()  # the ooc-kernels.local.read_ahead key read below

__all__ = ["ReadAhead", "read_ahead_enabled"]


def read_ahead_enabled(sched: Any) -> bool:
    """Whether rounds run by ``dask.compute(scheduler=sched)`` (no Client) read ahead: the
    synchronous and threaded schedulers (tasks in this process; ``None``, with no scheduler
    in Dask's configuration, is the threaded one), when
    ``ooc-kernels.local.read_ahead`` is true (the default).

    Raises
    ------
    ValidationError
        The setting is not a bool.
    """
    value = dask.config.get("ooc-kernels.local.read_ahead", True)
    if not isinstance(value, bool):
        raise ValidationError(
            f"ooc-kernels.local.read_ahead must be true or false, got {value!r}; set it with "
            "dask.config.set({'ooc-kernels.local.read_ahead': True}) (the default).")
    if not value:
        return False
    get = get_scheduler(scheduler=sched)
    if get is None:   # no scheduler named or configured: a round's graph (Delayed) runs on
        get = dask.threaded.get   # Dask's default for Delayed, the threaded scheduler
    return get in (dask.local.get_sync, dask.threaded.get)


def _read_round(readers: list[dict]) -> list[dict]:
    """Every group of a round, by variable: a one-chunk group is its chunk as read, a larger
    group its chunks concatenated into a new array (:func:`_read_group`)."""
    return [{name: rs[0]() if len(rs) == 1 else _read_group(*rs) for name, rs in g.items()}
            for g in readers]


class ReadAhead:
    """At most one round of groups read ahead, by one background thread.

    Parameters
    ----------
    graph : ooc_kernels.parallel.graph.RoundGraph
        Gives the chunk readers of a group.
    enabled : bool
        False: :meth:`start` reads nothing and :meth:`take` returns None.
    """

    def __init__(self, graph: Any, enabled: bool):
        self.graph = graph
        self.enabled = bool(enabled)
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._pending: tuple[tuple, concurrent.futures.Future] | None = None

    def start(self, groups: tuple[tuple[int, ...], ...] | None) -> None:
        """Start reading ``groups`` (the next round's; None: nothing follows)."""
        if not self.enabled or not groups:
            return
        self._drop()
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(
                1, thread_name_prefix="ooc-kernels-read-ahead")
        readers = [self.graph.group_readers(g) for g in groups]
        self._pending = (tuple(groups), self._pool.submit(_read_round, readers))

    def take(self, groups: tuple[tuple[int, ...], ...]) -> list[dict] | None:
        """The rows of ``groups`` by group and variable when they were read ahead (waits for
        the read to end), else None: the round reads them itself (a failed read included,
        so that its error is raised where the round reads)."""
        pending, self._pending = self._pending, None
        if pending is None:
            return None
        key, future = pending
        try:
            rows = future.result()
        except Exception:  # noqa: BLE001 - the round reads these chunks again itself
            return None
        return rows if key == tuple(groups) else None

    def read_here(self, groups: tuple[tuple[int, ...], ...]) -> list[dict] | None:
        """The rows of ``groups`` read now in the calling thread (the same arrays as
        :meth:`take`'s), for a round that nothing read ahead; None when reading ahead is off
        or the read fails (the round then reads its chunks itself and raises its error)."""
        if not self.enabled or not groups:
            return None
        try:
            return _read_round([self.graph.group_readers(g) for g in groups])
        except Exception:  # noqa: BLE001 - the round reads these chunks again itself
            return None

    def _drop(self) -> None:
        """Wait for a read nobody took (at most one read runs or is held at a time)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            concurrent.futures.wait([pending[1]])

    def close(self) -> None:
        """Wait for the read in flight, if any, and stop the thread."""
        self._drop()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
