"""A ``zarr.Array`` given as ``X`` or ``y``: read lazily, chunk by chunk, as a Dask array.

NumPy-style validation would read a ``zarr.Array`` whole (``np.asarray``), which defeats
out-of-core training on a store larger than memory; :func:`as_dask` wraps it with
``dask.array.from_zarr`` instead, keeping the store's own chunks along the samples, so it
is fitted and predicted like the Dask array of the same store.  Zarr's default chunks split
the features of most arrays (``(2000, 50)`` float64 is stored in chunks of ``(1000, 25)``):
such an array is read a row block at a time, each block joining its chunks along the
features (``rechunk({1: -1})``), as the library's readers need.

Examples
--------
>>> import numpy as np, zarr
>>> z = zarr.create_array(store={}, shape=(5, 2), chunks=(2, 2), dtype="f8")
>>> z[:] = np.arange(10.0).reshape(5, 2)
>>> is_zarr_array(z), as_dask(z).chunks
(True, ((2, 2, 1), (2,)))
>>> as_dask(zarr.create_array(store={}, shape=(5, 4), chunks=(2, 2), dtype="f8")).chunks
((2, 2, 1), (4,))
"""

from __future__ import annotations

from typing import Any

__all__ = ["as_dask", "is_zarr_array"]


def is_zarr_array(obj: Any) -> bool:
    """True for a ``zarr.Array`` (of either Zarr format)."""
    try:
        import zarr
    except ImportError:  # pragma: no cover - zarr is a dependency
        return False
    return isinstance(obj, zarr.Array)


def as_dask(obj: Any) -> Any:
    """The Dask array of a ``zarr.Array`` (its chunks along the samples kept, and each row
    block's chunks along the features joined); any other input as it is."""
    if not is_zarr_array(obj):
        return obj
    import dask.array as da

    arr = da.from_zarr(obj)
    if arr.ndim == 2 and arr.numblocks[1] > 1:
        arr = arr.rechunk({1: -1})   # a row block of every feature, read chunk by chunk
    return arr
