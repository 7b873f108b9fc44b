"""Doubly stochastic functional gradients (Dai et al. 2014): kernel machines out of core.

The modules of ``__registers__`` (which the registries import on first lookup) register
the ``"dsg"`` chunk algorithm and the estimators
:class:`DSGClassifier` and :class:`DSGRegressor`.  Its modules:

``kernels``
    The numba kernels of one chunk's mini-batch steps, each with a NumPy twin.
``solver``
    The chunk algorithm (:class:`~ooc_kernels.families.dsg.solver.DSGAlgorithm`): state,
    rounds, combination.
``estimators``
    The scikit-learn estimators (classifier and regressor; ``one_class``,
    ``density_ratio`` and ``gaussian_process`` hold the other machines).
``_common``
    What every DSG estimator shares (:class:`~ooc_kernels.families.dsg._common.DSGModelMixin`):
    parameter checks, precision, published attributes, prediction payload, saving and
    loading.
``_schedule``, ``_bandwidth``
    The defaults: step-size schedule and curvature, bandwidth selection.
``reference``
    The sequential algorithm in plain NumPy, the contract suite's oracle.

Examples
--------
>>> from ooc_kernels.families.dsg import DSGClassifier
>>> DSGClassifier().loss
'logistic'
"""

from ooc_kernels._registry import lazy_exports

#: The modules that register this family's solver and estimators (imported by the
#: registries on their first lookup; importing this package alone stays cheap).
__registers__ = ("ooc_kernels.families.dsg.solver", "ooc_kernels.families.dsg.estimators",
                 "ooc_kernels.families.dsg.density_ratio",
                 "ooc_kernels.families.dsg.one_class",
                 "ooc_kernels.families.dsg.one_class_solver",
                 "ooc_kernels.families.dsg._ratio_solver",
                 "ooc_kernels.families.dsg.gaussian_process")

#: Public names, imported from their module on first use.
_PUBLIC = {
    "DSGClassifier": "estimators",
    "DSGRegressor": "estimators",
    "DSGDensityRatio": "density_ratio",
    "DSGOneClassSVM": "one_class",
    "DSGGaussianProcessRegressor": "gaussian_process",
}

__all__ = sorted(_PUBLIC)

__getattr__ = lazy_exports(__name__, _PUBLIC)
