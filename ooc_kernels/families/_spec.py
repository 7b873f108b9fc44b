"""What a solver family registers, and the registry of solvers.

Examples
--------
>>> from ooc_kernels.families import get_solver
>>> case = get_solver("dsg").make_case(seed=0)
>>> len(case.chunks) > 1, sorted(case.chunks[0])
(True, ['X', 'sample_weight', 'y'])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ooc_kernels._capabilities import EXECUTIONS
from ooc_kernels._registry import Registry
from ooc_kernels.exceptions import ValidationError

__all__ = ["SOLVERS", "AlgorithmCase", "SolverSpec", "available_solvers", "get_solver",
           "register_solver"]

#: Registered solver families (filled by the modules of :mod:`ooc_kernels.families`).
SOLVERS = Registry("solver", "ooc_kernels.families")


@dataclass(frozen=True)
class AlgorithmCase:
    """A small problem for the contract suite: an algorithm, its initial state, the data.

    Attributes
    ----------
    algorithm : object
        A chunk algorithm (``make_tasks``, ``chunk_step``, ``combine``, ``apply``).
    state : object
        Its initial state.
    chunks : list of dict
        The data chunk by chunk, in storage order: ``{variable name: ndarray}``, sample axis
        first.
    dims : dict
        Dimension names of every variable (the first is the sample dimension).
    seed : int
        The data seed given to the engine.
    whole : dict
        Variables without a sample axis, given whole to every task.
    """

    algorithm: Any
    state: Any
    chunks: list[dict[str, np.ndarray]]
    dims: dict[str, tuple[str, ...]]
    seed: int = 0
    whole: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class SolverSpec:
    """A registered solver family.

    Attributes
    ----------
    name : str
    algorithm : type
        The chunk-algorithm class.
    state_arrays : callable
        ``state -> {name: ndarray}``: the arrays that make a state (compared by the contract
        suite, bit for bit across schedulers).
    make_case : callable
        ``(seed, shuffle=False) -> AlgorithmCase``: a small problem.  With ``shuffle=False``
        the rows are visited in storage order.
    reference : callable or None
        ``(case) -> state``: the family's sequential algorithm over ``case.chunks`` in
        storage order, written independently of the chunk algorithm (plain NumPy); one pass
        with ``K = 1`` through the engine must give the same state.
    description : str
    execution : {"rounds", "sequential"}, default="rounds"
        How the engine runs the algorithm (see
        :class:`~ooc_kernels._capabilities.Capabilities`): shuffled rounds of
        ``K`` parallel tasks whose deltas ``combine`` merges, or one chunk a round in storage
        order (``combine`` is never called).  The contract suite reads it.
    """

    name: str
    algorithm: type
    state_arrays: Callable[[Any], dict[str, np.ndarray]]
    make_case: Callable[..., AlgorithmCase]
    reference: Callable[[AlgorithmCase], Any] | None = None
    description: str = ""
    execution: str = "rounds"

    def __post_init__(self):
        if self.execution not in EXECUTIONS:
            raise ValidationError(f"SolverSpec.execution must be one of {EXECUTIONS}, got "
                                  f"{self.execution!r}")


def register_solver(spec: SolverSpec) -> SolverSpec:
    """Add a family to :data:`SOLVERS` (called by the family's module when imported)."""
    SOLVERS.register(spec.name, spec)
    return spec


def get_solver(name: str) -> SolverSpec:
    """The :class:`SolverSpec` registered under ``name``."""
    return SOLVERS.get(name)


def available_solvers() -> list[str]:
    """Sorted names of the registered solver families."""
    return SOLVERS.names()
