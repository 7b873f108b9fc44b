"""ooc_kernels: kernel machines and regularized linear models on data larger than memory.

Zarr datasets chunked along the sample axis, registered in Intake catalogs, are trained on
as Dask task graphs whose chunks run numba-compiled updates.

Examples
--------
>>> import ooc_kernels as ok
>>> sorted(ok.available_generators())
['digits_deformed', 'nonlinear_binary', 'synthetic_krr_2d']
"""

from ooc_kernels._version import __version__
from ooc_kernels.data.catalog import list_datasets, open_dataset
from ooc_kernels.data.generators import available_generators, make_dataset
from ooc_kernels.estimators import DSGClassifier, DSGRegressor, load
from ooc_kernels.exceptions import OocKernelsError

__all__ = [
    "__version__",
    "DSGClassifier",
    "DSGRegressor",
    "OocKernelsError",
    "available_generators",
    "list_datasets",
    "load",
    "make_dataset",
    "open_dataset",
]
