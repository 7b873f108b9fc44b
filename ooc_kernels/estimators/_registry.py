"""The registry of estimators: persistence, checkpoints, ``ok.load``, the pipeline runner and
the command line find estimator classes here, by their registered name.

Examples
--------
>>> from ooc_kernels.estimators._registry import ESTIMATORS
>>> ESTIMATORS.get("DSGRegressor").__name__
'DSGRegressor'
"""

from __future__ import annotations

from ooc_kernels._registry import Registry

__all__ = ["ESTIMATORS", "available_estimators", "get_estimator", "register_estimator"]

#: Registered estimator classes by name (filled by the family packages of
#: :mod:`ooc_kernels.families` when imported).
ESTIMATORS = Registry("estimator", "ooc_kernels.families")


def register_estimator(cls: type) -> type:
    """Class decorator: register ``cls`` under its class name."""
    ESTIMATORS.register(cls.__name__, cls)
    return cls


def get_estimator(name: str) -> type:
    """The estimator class registered under ``name``."""
    return ESTIMATORS.get(name)


def available_estimators() -> list[str]:
    """Sorted names of the registered estimators.

    These are the names ``ooc-kernels train --estimator``, a pipeline's ``model.estimator``
    and saved models use; each is also a top-level name (``ok.DSGClassifier``).

    Examples
    --------
    >>> import ooc_kernels as ok
    >>> names = ok.available_estimators()
    >>> "DSGClassifier" in names and names == sorted(names)
    True
    """
    return ESTIMATORS.names()
