"""ooc_kernels: kernel machines and regularized linear models on data larger than memory.

Zarr datasets chunked along the sample axis, registered in Intake catalogs, are trained on
as Dask task graphs whose chunks run numba-compiled updates.

Importing the package is cheap: the functions and classes below are imported on first use
(PEP 562); estimator classes come from the registry
(:func:`ooc_kernels.estimators.available_estimators`), and :class:`Factorized` (a data matrix
``A = U V`` given by its factors, ``fit(ok.Factorized(U, V), y)``) from the data layer.

Examples
--------
>>> import ooc_kernels as ok
>>> sorted(ok.available_generators())
['digits_deformed', 'nonlinear_binary', 'sparse_recovery', 'synthetic_krr_2d']
>>> ok.DSGClassifier.__name__
'DSGClassifier'
"""

from __future__ import annotations

import importlib
import sys as _sys

from ooc_kernels._version import __version__
from ooc_kernels.exceptions import OocKernelsError

if "dask.config" in _sys.modules:
    # Dask is imported already: register the ``ooc-kernels.*`` configuration defaults now
    # (otherwise the library's Dask layer registers them when it is first imported)
    from ooc_kernels._config import register_defaults as _register_defaults

    _register_defaults()

#: Functions re-exported lazily: name -> module.
_LAZY = {
    "available_generators": "ooc_kernels.data.generators",
    "make_dataset": "ooc_kernels.data.generators",
    "list_datasets": "ooc_kernels.data.catalog",
    "open_dataset": "ooc_kernels.data.catalog",
    "load": "ooc_kernels.estimators.persistence",
    "available_estimators": "ooc_kernels.estimators._registry",
    "Factorized": "ooc_kernels.data.factorized",
    "MultiTaskLMNN": "ooc_kernels.families.dspdc",
    "set_progress": "ooc_kernels._progress",
}

#: The subpackages and modules reached as attributes of the package (``ok.data``): imported
#: on first use, like the functions above.
_SUBPACKAGES = ("data", "features", "estimators", "evaluation", "pipeline", "exceptions")

#: The registered estimator classes (looked up in the registry on first use); a test checks
#: that this lists every one of them.
_ESTIMATORS = ("DSGClassifier", "DSGRegressor", "DSGDensityRatio", "DSGOneClassSVM",
               "DSGGaussianProcessRegressor", "DSPDCClassifier", "DSPDCRegressor",
               "ProjectedKernelRidge", "OnlineKernelRidge")

__all__ = ["__version__", "OocKernelsError", *_ESTIMATORS, *sorted(_LAZY)]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _SUBPACKAGES:  # ok.data.open_zarr_dataset(...), ok.features.kernel_function
        value = importlib.import_module(f"ooc_kernels.{name}")
    elif name[:1].isupper():  # an estimator class, from the registry
        from ooc_kernels.estimators._registry import ESTIMATORS

        if name not in ESTIMATORS:
            raise AttributeError(f"module 'ooc_kernels' has no attribute {name!r}")
        value = ESTIMATORS.get(name)
    else:
        raise AttributeError(f"module 'ooc_kernels' has no attribute {name!r}")
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    from ooc_kernels.estimators._registry import ESTIMATORS

    return sorted(set(globals()) | set(_LAZY) | set(ESTIMATORS.names()))
