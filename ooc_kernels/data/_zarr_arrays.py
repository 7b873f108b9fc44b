"""A ``zarr.Array`` given as ``X`` or ``y``: read lazily, chunk by chunk, as a Dask array.

NumPy-style validation would read a ``zarr.Array`` whole (``np.asarray``), which defeats
out-of-core training on a store larger than memory; :func:`as_dask` wraps it with
``dask.array.from_zarr`` instead, keeping the store's own chunks along the samples, so it
is fitted and predicted like the Dask array of the same store.

Examples
--------
>>> import numpy as np, zarr
>>> z = zarr.create_array(store={}, shape=(5, 2), chunks=(2, 2), dtype="f8")
>>> z[:] = np.arange(10.0).reshape(5, 2)
>>> is_zarr_array(z), as_dask(z, "X").chunks
(True, ((2, 2, 1), (2,)))
"""

from __future__ import annotations

from typing import Any

from ooc_kernels.exceptions import SchemaError

__all__ = ["as_dask", "is_zarr_array"]


def is_zarr_array(obj: Any) -> bool:
    """True for a ``zarr.Array`` (of either Zarr format)."""
    try:
        import zarr
    except ImportError:  # pragma: no cover - zarr is a dependency
        return False
    return isinstance(obj, zarr.Array)


def as_dask(obj: Any, name: str) -> Any:
    """The Dask array of a ``zarr.Array`` (its chunks kept); any other input as it is.

    Raises
    ------
    SchemaError
        A 2-D array chunked along its second axis (the features), naming its chunks and
        the rechunk that fixes it (a ``zarr.Array`` has no ``rechunk`` of its own).
    """
    if not is_zarr_array(obj):
        return obj
    import dask.array as da

    if obj.ndim == 2 and obj.chunks[1] < obj.shape[1]:
        raise SchemaError(
            f"{name} is a zarr.Array chunked along its features (chunks {obj.chunks}, shape "
            f"{obj.shape}); chunks must span all features. Fix: pass "
            f"{name} = dask.array.from_zarr({name}).rechunk({{1: -1}}), which reads the "
            "store's chunks row block by row block, or rewrite the store with chunks "
            f"({obj.chunks[0]}, {obj.shape[1]})."
        )
    return da.from_zarr(obj)
