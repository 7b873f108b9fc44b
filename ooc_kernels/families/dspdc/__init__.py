"""The doubly stochastic primal-dual coordinate method (Yu, Lin, Yang 2015).

The modules of ``__registers__`` (which the registries import on first lookup) register
the ``"dspdc"`` chunk algorithm (CoCoA+ rounds of DSPDC
over the chunks) and the estimators :class:`DSPDCClassifier` and :class:`DSPDCRegressor`;
:class:`MultiTaskLMNN` (multi-task metric learning by block DSPDC) is in-memory and not
registered.  Its modules:

``kernels``, ``kernels_objective``
    The numba kernels (dense and factorized iterations; the regularizer and the objective
    terms), each with a NumPy twin; the losses are the shared loss table's.
``solver``, ``_local``, ``params``, ``lambda_stats``
    The chunk algorithm, one task's local problem, the losses and step parameters of the
    theorems, the scale constant ``Lambda`` from one pass over the chunks.
``estimators``, ``_chunk_tasks``, ``_work``
    The scikit-learn estimators, the per-chunk tasks they run, and their private work
    stores of the dual variables.
``reference``
    The rounds written out sequentially in plain NumPy, the contract suite's oracle.
``mtlmnn``
    The :class:`MultiTaskLMNN` estimator.
``in_memory``
    Research code that is not on the out-of-core path: the paper's algorithm on an
    in-memory matrix, block DSPDC and its matrix problems, the paper's baselines.

Examples
--------
>>> from ooc_kernels.families.dspdc import DSPDCRegressor
>>> DSPDCRegressor().loss
'squared'
"""

from ooc_kernels._registry import lazy_exports

#: The modules that register this family's solver and estimators (imported by the
#: registries on their first lookup; importing this package alone stays cheap).
__registers__ = ("ooc_kernels.families.dspdc.solver",
                 "ooc_kernels.families.dspdc.estimators")

#: Public names, imported from their module on first use.
_PUBLIC = {
    "DSPDCClassifier": "estimators",
    "DSPDCRegressor": "estimators",
    "MultiTaskLMNN": "mtlmnn",
}

__all__ = sorted(_PUBLIC)

__getattr__ = lazy_exports(__name__, _PUBLIC)
