"""The algorithm families: one subpackage each, plugged into one core.

A family is a folder, ``ooc_kernels/families/<name>/``, holding everything that is its own:
its numba kernels (``kernels.py``), its chunk algorithm (``solver.py``), its estimators
(``estimators.py``), its defaults helpers and its references; in-memory research code that
is not on the out-of-core path lives apart, in an ``in_memory`` subpackage.  Importing the
family's package registers its solver (:data:`SOLVERS`) and its estimators
(:data:`ooc_kernels.estimators.ESTIMATORS`); both registries discover the families by
importing every public subpackage of this package on first lookup, so the code that reads
them (the engine, persistence, checkpoints, the command line, the contract suite) names no
family.  A module outside a family imports at most the family's package (its public
names), never one of its modules.

Families
--------
``dsg``
    Doubly stochastic functional gradients for kernel machines (Dai et al. 2014):
    ``DSGClassifier``, ``DSGRegressor``.
``dspdc``
    The doubly stochastic primal-dual coordinate method (Yu, Lin, Yang 2015):
    ``DSPDCClassifier``, ``DSPDCRegressor`` and the in-memory ``MultiTaskLMNN``.
``pkawv``
    Online kernel regression with projections (Jezequel, Gaillard, Rudi 2019):
    ``ProjectedKernelRidge``, ``OnlineKernelRidge``.

Examples
--------
>>> from ooc_kernels.families import SOLVERS
>>> "dsg" in SOLVERS.names()
True
>>> SOLVERS.get("dsg").algorithm.__name__
'DSGAlgorithm'
"""

from ooc_kernels.families._spec import (
    SOLVERS,
    AlgorithmCase,
    SolverSpec,
    available_solvers,
    get_solver,
    register_solver,
)

__all__ = ["SOLVERS", "AlgorithmCase", "SolverSpec", "available_solvers", "get_solver",
           "register_solver"]
