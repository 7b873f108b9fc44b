"""scikit-learn compatible estimators, registered by name.

:func:`load` and the registry (:func:`get_estimator`, :func:`available_estimators`) are
re-exported here; the estimator classes live in their family's module and are found through
the registry, so this package names no family.

Examples
--------
>>> from ooc_kernels.estimators import available_estimators
>>> "DSGClassifier" in available_estimators()
True
"""

from ooc_kernels.estimators._registry import (
    ESTIMATORS,
    available_estimators,
    get_estimator,
    register_estimator,
)
from ooc_kernels.estimators.persistence import load

__all__ = ["ESTIMATORS", "available_estimators", "get_estimator", "load",
           "register_estimator"]


def __getattr__(name: str):
    """Estimator classes by name (``from ooc_kernels.estimators import DSGClassifier``)."""
    if name[:1].isupper() and name in ESTIMATORS:
        return ESTIMATORS.get(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
