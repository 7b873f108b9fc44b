"""Bounds on what a dataset store's metadata may declare, checked before xarray opens it.

A store's shape and chunk shape come from its metadata files (``X/zarr.json``), a few
bytes that whoever wrote the store controls.  Two declarations cost far more than their
size when the store is opened or read:

* **too many chunks**: Dask keeps a Python tuple entry per chunk along every dimension and
  xarray and Dask build a task per chunk, so ``X`` of ``10**12`` rows in chunks of 50 rows
  makes opening the store allocate 160 GB for the tuple of chunk sizes alone (NumPy's
  ``MemoryError`` at best, the out-of-memory killer near the memory).  Opening a store
  whose ``X`` and ``y`` have ``10**6`` chunks each took 9 s and 1.3 GiB of peak memory
  (``open_zarr_dataset``, on a shared 2-core machine), ``10**5`` chunks 2.6 s and 0.3 GiB;
* **a chunk larger than the memory**: a chunk is decoded whole, so a chunk of ``10**12``
  rows cannot be read (its file may be missing: it is read as the fill value).

:func:`check_store_limits` refuses both, naming the array and the sizes, from the metadata
alone (no chunk is read).  A store of ``10**10`` rows in chunks of 10,000 rows (the
default of :func:`ooc_kernels.data.make_dataset`) has ``10**6`` chunks,
:data:`MAX_CHUNKS`, the most accepted.

Examples
--------
>>> import zarr
>>> g = zarr.open_group(zarr.storage.MemoryStore(), mode="w")
>>> _ = g.create_array("X", shape=(10**12, 2), chunks=(50, 2), dtype="f4")
>>> check_store_limits(g, where="dataset 'big.zarr'")
Traceback (most recent call last):
...
ooc_kernels.exceptions.SchemaError: dataset 'big.zarr': array 'X' of shape (1000000000000, 2) declares chunks of shape (50, 2), 20000000000 chunks in all, ...
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._memory import physical_memory, size_text
from ..exceptions import SchemaError

__all__ = ["MAX_CHUNKS", "check_store_limits"]

#: Most chunks one array of a dataset store may have (all dimensions together).
MAX_CHUNKS = 10**6

_MAX_INT64 = 2**63 - 1

_FIX = ("the store's metadata was edited or damaged, or the store was written with other "
        "chunks: rewrite it with ooc_kernels.data.write_chunks (chunks of 10,000 to 100,000 "
        "rows) or restore it from a backup")


def _arrays(group) -> list[tuple[str, Any]]:
    """Every array of a Zarr group, nested groups included (name, array)."""
    import zarr

    return sorted((name, node) for name, node in group.members(max_depth=None)
                  if isinstance(node, zarr.Array))


def _dims(arr) -> tuple:
    """The dimension names of a Zarr array (format 3 metadata, or xarray's attribute in
    format 2), or ``()``."""
    names = getattr(arr.metadata, "dimension_names", None)
    if names is None:
        names = arr.attrs.get("_ARRAY_DIMENSIONS")
    return tuple(names) if isinstance(names, (list, tuple)) else ()


def _requested(chunks: Any, dims: tuple, shape: tuple, stored: tuple, where: str) -> tuple:
    """The Dask chunk shape ``chunks`` (xarray's ``chunks=`` argument: ``{}``, ``None``,
    ``"auto"``, a number for every dimension, or a mapping of dimension names to numbers,
    ``-1`` or ``None`` for the whole dimension) gives an array, for counting its chunks."""
    if chunks is None or chunks == "auto" or (isinstance(chunks, dict) and not chunks):
        return stored
    if isinstance(chunks, dict):
        values = [chunks.get(d, c) for d, c in zip(dims, stored)] if dims else list(stored)
    else:
        values = [chunks] * len(shape)
    out = []
    for n, c, v in zip(shape, stored, values):
        if v is None or v == -1:
            out.append(max(n, 1))
        elif v == "auto":
            out.append(c)
        elif isinstance(v, int) and not isinstance(v, bool) and 0 < v <= _MAX_INT64:
            out.append(v)
        else:   # beyond 64 bits, NumPy and Dask cannot hold the chunk size (a TypeError)
            raise SchemaError(
                f"{where}: chunks={chunks!r} sets {v!r} for a dimension, which cannot be "
                f"checked; give a positive number of rows (at most 2**63 - 1), -1 or "
                f"'auto' per dimension, or leave chunks out (the store's own chunks)")
    return tuple(out)


def check_store_limits(group, *, where: str, limit: int | None = None,
                       chunks: Any = None) -> None:
    """Refuse a store an array of which has more than :data:`MAX_CHUNKS` chunks, or a
    chunk of more bytes than the machine's memory, stored or as read with ``chunks``.

    Parameters
    ----------
    group : zarr.Group
        The store, opened for reading (only metadata is read).
    where : str
        How messages name the store (e.g. ``"dataset '/x/a.zarr'"``).
    limit : int, optional
        Bytes one chunk may have: by default the machine's physical memory
        (:func:`ooc_kernels._memory.physical_memory`; no limit where it is unknown).
    chunks : optional
        The Dask chunks the store will be read with (xarray's ``chunks=``, e.g. a catalog
        entry's ``chunks: {sample: 1}``), checked besides the stored ones.

    Raises
    ------
    SchemaError
        Naming the array, its shape, its chunk shape and what is too large.
    """
    limit = physical_memory() if limit is None else limit
    for name, arr in _arrays(group):
        stored = tuple(int(c) for c in (getattr(arr, "shards", None) or arr.chunks))
        shape = tuple(int(n) for n in arr.shape)
        _check_chunks(name, shape, stored, arr.dtype, where, limit, "declares")
        read = _requested(chunks, _dims(arr), shape, stored, where)
        if read != stored:
            _check_chunks(name, shape, read, arr.dtype, where, limit,
                          f"is read with chunks={chunks!r} in")


def _check_chunks(name: str, shape: tuple, chunks: tuple, dtype, where: str,
                  limit: int | None, how: str) -> None:
    count = 1
    for n, c in zip(shape, chunks):
        count *= -(-n // max(c, 1))
    if count > MAX_CHUNKS:
        raise SchemaError(
            f"{where}: array {name!r} of shape {shape} {how} chunks of shape "
            f"{chunks}, {count} chunks in all, more than the {MAX_CHUNKS} a dataset may "
            f"have (Dask keeps an entry and a task per chunk, so opening it would "
            f"allocate memory in proportion); {_FIX}"
        )
    n_bytes = int(np.dtype(dtype).itemsize)
    for n, c in zip(shape, chunks):
        n_bytes *= c if how == "declares" else min(c, max(n, 1))
    if limit is not None and n_bytes > limit:
        raise SchemaError(
            f"{where}: array {name!r} of shape {shape} {how} chunks of shape {chunks}, "
            f"{size_text(n_bytes)} each, more than the {size_text(limit)} of memory of "
            f"this machine (a chunk is read whole); {_FIX}"
        )
