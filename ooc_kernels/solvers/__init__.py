"""Solvers: one module per algorithm family, small frozen state objects and pure step functions.

Every family module registers a :class:`SolverSpec` in :data:`SOLVERS`: its chunk algorithm
(the four methods :func:`ooc_kernels.parallel.engine.run_rounds` drives), a sequential
reference and a small problem on which the contract suite (:mod:`ooc_kernels.testing`)
checks it.  No Dask here.

Examples
--------
>>> from ooc_kernels.solvers import SOLVERS
>>> "dsg" in SOLVERS.names()
True
>>> SOLVERS.get("dsg").algorithm.__name__
'DSGAlgorithm'
"""

from ooc_kernels.solvers._spec import (
    SOLVERS,
    AlgorithmCase,
    SolverSpec,
    available_solvers,
    get_solver,
    register_solver,
)

__all__ = ["SOLVERS", "AlgorithmCase", "SolverSpec", "available_solvers", "get_solver",
           "register_solver"]
