"""scikit-learn compatible estimators."""

from ooc_kernels.estimators.dsg import DSGClassifier, DSGRegressor
from ooc_kernels.estimators.persistence import load

__all__ = ["DSGClassifier", "DSGRegressor", "load"]
