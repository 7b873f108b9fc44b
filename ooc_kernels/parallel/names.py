"""Task names of a fit: what the Dask dashboard shows for every task of a round.

Dask names a task by its key, and groups the tasks of its dashboard (task stream, progress
bars, "Groups" page) by the key's leading words (``dask.utils.key_split``).  The engine gives
every task of a round a key such as::

    dsg-chunk-step-e0-r3-c17-5f1c0e9a1b2c3d4e     one task: epoch 0, round 3, chunk 17
    dsg-chunk-step-e0-r3-c17_4_9-5f1c...           a task that read the group 17, 4, 9
    dsg-read-group-e0-r3-c17_4_9-X-5f1c...         reading that group's X
    dsg-combine-e0-r3-l1-n0-5f1c...                the reduction tree: level 1, node 0
    dsg-apply-e0-r3-5f1c...                        a cluster's round: root combine + apply
    dsg-state-e0-r3-5f1c...                        the state the round starts from

so the dashboard shows ``dsg-chunk-step``, ``dsg-combine`` ... and, on hover, the epoch,
round and chunks of every task.  The prefix is the algorithm's class name without
``Algorithm`` (``DSGAlgorithm`` -> ``dsg``).  The last word is a token of the round's inputs
(the state, the data, the algorithm, the epoch plan), so keys are deterministic (the same
fit gives the same keys) and two different computations never share a key, even when two
fits share a cluster.

Examples
--------
>>> from ooc_kernels.parallel.names import TaskNames, algorithm_prefix
>>> class DSGAlgorithm: ...
>>> algorithm_prefix(DSGAlgorithm())
'dsg'
>>> names = TaskNames("dsg", epoch=0, round=3, token="5f1c0e9a1b2c3d4e")
>>> names.chunk_step((17,))
'dsg-chunk-step-e0-r3-c17-5f1c0e9a1b2c3d4e'
>>> names.combine(1, 0)
'dsg-combine-e0-r3-l1-n0-5f1c0e9a1b2c3d4e'
>>> from dask.utils import key_split
>>> key_split(names.chunk_step((17, 4)))        # the dashboard's group of the task
'dsg-chunk-step'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["TaskNames", "algorithm_prefix", "TOKEN_LENGTH"]

#: Hex digits of the round token kept in every key (64 bits).
TOKEN_LENGTH = 16


def algorithm_prefix(algorithm) -> str:
    """The first word of an algorithm's task keys: its class name without ``Algorithm``,
    lower case, letters and digits only (``DSGAlgorithm`` -> ``dsg``; ``"ooc"`` when
    nothing is left)."""
    name = type(algorithm).__name__
    if name.endswith("Algorithm") and len(name) > len("Algorithm"):
        name = name[:-len("Algorithm")]
    name = re.sub(r"[^a-z0-9]", "", name.lower())
    if not name or not name[0].isalpha():  # key_split needs a leading letter
        name = "ooc" + name
    return name


@dataclass(frozen=True)
class TaskNames:
    """The keys of one round's tasks.

    Parameters
    ----------
    prefix : str
        From :func:`algorithm_prefix`.
    epoch, round : int
    token : str
        Hex token of the round's inputs (truncated to :data:`TOKEN_LENGTH` digits).
    """

    prefix: str
    epoch: int
    round: int
    token: str

    def _key(self, kind: str, *detail: str) -> str:
        parts = [self.prefix, kind, f"e{self.epoch}", f"r{self.round}", *detail,
                 self.token[:TOKEN_LENGTH]]
        return "-".join(parts)

    @staticmethod
    def _chunks(group) -> str:
        return "c" + "_".join(str(int(c)) for c in group)

    def chunk_step(self, group) -> str:
        """Key of the task that runs ``chunk_step`` over ``group`` (chunk ids)."""
        return self._key("chunk-step", self._chunks(group))

    def read_group(self, group, variable: str) -> str:
        """Key of the task that reads the chunks of ``group`` of ``variable`` into one
        array."""
        return self._key("read-group", self._chunks(group), re.sub(r"[^A-Za-z0-9_]", "_",
                                                                    str(variable)))

    def combine(self, level: int, node: int) -> str:
        """Key of node ``node`` of level ``level`` (1 = first) of the reduction tree."""
        return self._key("combine", f"l{int(level)}", f"n{int(node)}")

    def state(self) -> str:
        """Key of the state the round starts from, when the graph embeds it."""
        return self._key("state")

    def apply(self) -> str:
        """Key of the task that computes the round's new state on a cluster (the root of
        the reduction tree and ``apply``)."""
        return self._key("apply")
