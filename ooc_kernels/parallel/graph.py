"""The Dask graph of one round: named tasks, groups of chunks read by a task, and the fixed
reduction tree (used by :mod:`ooc_kernels.parallel.engine` on the local schedulers and by
:mod:`ooc_kernels.parallel.cluster` on a ``distributed.Client``).

Examples
--------
>>> import dask, operator
>>> from ooc_kernels.parallel.graph import tree_reduce
>>> tree_reduce([dask.delayed(i) for i in range(5)], operator.add).compute(scheduler="sync")
10
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dask
import numpy as np
from dask.base import tokenize

from ooc_kernels.parallel.chunked import ChunkedData
from ooc_kernels.parallel.names import TaskNames, algorithm_prefix

__all__ = ["RoundGraph", "reduce_levels", "tree_reduce"]


def tree_reduce(parts: list, combine: Callable[[Any, Any], Any],
                name: Callable[[int, int], str] | None = None) -> Any:
    """Pairwise reduction of delayed parts in a fixed, balanced tree.

    Parameters
    ----------
    parts : list of Delayed
    combine : callable
        ``combine(a, b)``, applied to neighbours, left operand first.
    name : callable, optional
        ``name(level, node)`` gives the key of node ``node`` of level ``level`` (from 1);
        by default Dask names the nodes (``combine-<token>``).  The shape of the tree does
        not depend on it.

    Examples
    --------
    >>> import dask, operator
    >>> parts = [dask.delayed(i) for i in range(5)]
    >>> tree_reduce(parts, operator.add, name=lambda level, node: f"add-l{level}-n{node}"
    ...             ).key, tree_reduce(parts, operator.add).compute(scheduler="sync")
    ('add-l3-n0', 10)
    """
    return reduce_levels(parts, combine, name, until=1)[0]


def reduce_levels(parts: list, combine: Callable[[Any, Any], Any],
                  name: Callable[[int, int], str] | None = None, *, until: int = 1) -> list:
    """The levels of :func:`tree_reduce`'s tree, stopped at the first level of at most
    ``until`` nodes: ``until=2`` gives the two operands of the root (the same tree, without
    its last ``combine``, which a caller may run inside another task).

    Examples
    --------
    >>> import dask, operator
    >>> parts = [dask.delayed(i) for i in range(5)]
    >>> [d.compute(scheduler="sync") for d in reduce_levels(parts, operator.add, until=2)]
    [6, 4]
    """
    if not parts:
        raise ValueError("nothing to reduce")
    level = list(parts)
    depth = 0
    while len(level) > until:
        depth += 1
        nxt = []
        for i in range(0, len(level) - 1, 2):
            if name is None:
                nxt.append(dask.delayed(combine, pure=True)(level[i], level[i + 1]))
            else:
                nxt.append(dask.delayed(combine)(level[i], level[i + 1],
                                                 dask_key_name=name(depth, i // 2)))
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level


def _read_group(*readers):
    """The rows of a group's chunks, in group order (one task's input), read one chunk at a
    time into the result: the task holds the group plus one chunk, not the group twice.

    The result is a new array that belongs to the task: an algorithm may reorder its rows in
    place.
    """
    first = readers[0]()
    out = np.empty((sum(r.n_rows for r in readers),) + first.shape[1:], dtype=first.dtype)
    out[:len(first)] = first
    pos = len(first)
    del first
    for reader in readers[1:]:
        part = reader()
        if part.dtype != out.dtype:  # chunks of one variable share a dtype; be safe anyway
            out = out.astype(np.result_type(out.dtype, part.dtype))
        out[pos:pos + len(part)] = part
        pos += len(part)
    return out


class RoundGraph:
    """Builds the Dask graph of a round over ``data``, with named keys
    (:mod:`ooc_kernels.parallel.names`); shared by the local and the cluster paths.

    Parameters
    ----------
    algorithm : ooc_kernels.parallel.engine.ChunkAlgorithm
    data : ChunkedData
    shuffle_chunks : int
        Chunks per group (groups of more than one chunk are read by a task,
        :func:`_read_group`).
    """

    def __init__(self, algorithm: Any, data: ChunkedData, shuffle_chunks: int):
        self.algorithm = algorithm
        self.data = data
        self.chunks = data.delayed_chunks()
        self._readers = data.chunk_readers() if shuffle_chunks > 1 else None
        self.whole = data.delayed_whole()
        self.prefix = algorithm_prefix(algorithm)
        self._base = tokenize(self.prefix, algorithm, data.token)
        self._whole_values: dict | None = None

    @property
    def readers(self) -> dict:
        """One :class:`~ooc_kernels.parallel.chunked.ChunkReader` per chunk of every sample
        variable (built on first use)."""
        if self._readers is None:
            self._readers = self.data.chunk_readers()
        return self._readers

    def group_readers(self, group: tuple[int, ...]) -> dict:
        """The readers of ``group``'s chunks, by variable (a task reads them itself)."""
        return {name: [self.readers[name][c] for c in group] for name in self.chunks}

    def names(self, info, state_token: str) -> TaskNames:
        """The keys of ``info``'s round starting from the state whose token is given."""
        token = tokenize(self._base, state_token, info.epoch, info.round, info.groups,
                         info.seed)
        return TaskNames(self.prefix, info.epoch, info.round, token)

    def batch(self, group: tuple[int, ...], names: TaskNames) -> dict:
        """The delayed input of one task: every variable of ``group``."""
        return {**{name: self._group_input(name, c, group, names)
                   for name, c in self.chunks.items()}, **self.whole}

    def _group_input(self, variable: str, parts: list, group: tuple[int, ...],
                     names: TaskNames):
        """The chunk itself (a task of Dask's graph), or its group read by the task
        (:func:`_read_group`)."""
        if len(group) == 1:
            return parts[group[0]]
        return dask.delayed(_read_group)(*[self.readers[variable][c] for c in group],
                                         dask_key_name=names.read_group(group, variable))

    def whole_values(self) -> dict:
        """The whole variables' values (``V`` of factorized data), computed on first use and
        kept: small by definition, the same values every round's graph computes."""
        if self._whole_values is None:
            # the whole variables have no sample axis (V of A = U V: k x p), never the rows
            (self._whole_values,) = dask.compute(self.whole, scheduler="sync")
        return self._whole_values

    def run_here(self, state: Any, info, rows: dict, read_ahead=None) -> Any:
        """The delta of a round of one task whose rows were already read (``rows``, by
        variable), run in the calling thread: the call that :meth:`local_round`'s graph
        makes (the reduction of one part is that part), without building, tokenizing or
        scheduling a graph.  ``read_ahead``: a call that starts reading the next round's
        rows, given to the task as its batch's ``"read_ahead"`` when the algorithm has
        ``starts_read_ahead``."""
        (task,) = self.algorithm.make_tasks(state, info)
        batch = {**rows, **self.whole_values()}
        if read_ahead is not None and getattr(self.algorithm, "starts_read_ahead", False):
            batch["read_ahead"] = read_ahead
        return self.algorithm.chunk_step(state, batch, task)

    def local_round(self, state: Any, info, rows: list[dict] | None = None) -> Any:
        """The delayed reduced delta of a round run by ``dask.compute`` (the state and the
        tasks are known here; ``apply`` runs in the caller).  ``rows``: the groups' sample
        variables already read (:class:`~ooc_kernels.parallel.read_ahead.ReadAhead`), one
        dict per group; by default the tasks read their chunks."""
        names = self.names(info, tokenize(state))
        tasks = list(self.algorithm.make_tasks(state, info))
        state_d = dask.delayed(state, traverse=False, name=names.state())
        batches = ([self.batch(g, names) for g in info.groups] if rows is None
                   else [{**r, **self.whole} for r in rows])
        parts = [dask.delayed(self.algorithm.chunk_step)(
                     state_d, batch, task, dask_key_name=names.chunk_step(g))
                 for g, batch, task in zip(info.groups, batches, tasks)]
        return tree_reduce(parts, self.algorithm.combine, name=names.combine)
