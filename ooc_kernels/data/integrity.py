"""Chunk integrity: reads of Zarr-backed data that refuse missing, truncated or garbled chunks.

Zarr answers a read of a chunk whose file is *missing* with the array's fill value, silently:
a dataset that lost a chunk file would train on zeros.  A truncated or garbled chunk fails
deep inside a codec (``RuntimeError: error during blosc decompression: -1``), or, for a
flipped byte inside compressed data, may even decode to wrong numbers.

This module rebuilds the Dask array of a Zarr-backed variable so that every chunk task

1. checks that the file of every Zarr chunk it covers exists in the store, and
2. decodes them, turning any codec error (including a CRC32C checksum mismatch: stores
   written by :func:`ooc_kernels.data.write_chunks` carry a ``crc32c`` codec) into a
   :class:`~ooc_kernels.exceptions.CorruptChunkError` that names the variable, the chunk
   index, the chunk file, the store and the fix.

3. checks that the store is still the one that was opened: when :func:`guard_dask_array`
   builds the graph it records the identity of the variable's metadata file (its inode, size
   and modification time, :func:`store_identity`), and every chunk task compares it with one
   ``os.stat`` after its read.  A store replaced while a fit reads it (``make_dataset(...,
   overwrite=True)`` swaps a new folder in) or whose array metadata was rewritten raises a
   :class:`~ooc_kernels.exceptions.DataChangedError` instead of mixing two datasets in one
   model.  The identity travels in the graph's tasks, so the check runs wherever the chunk
   is read (threads, processes, ``distributed`` workers on a shared file system).  Stores
   that are not local folders (object stores, remote ``fsspec`` URLs such as ``s3://``)
   have no inode: their reads are not checked.

Reads stay lazy and one chunk at a time: only the task graph changes, and the values read
are exactly those xarray would read.  :func:`guard_dataset` is applied by
:func:`ooc_kernels.data.open_zarr_dataset` and, for Datasets opened any other way (a catalog,
``xr.open_zarr``), by :func:`ooc_kernels.data.inputs.as_chunked`.  Only an *untouched*
view of a whole Zarr array is rebuilt (the two-layer graph xarray creates when it opens a
store with Dask chunks); a variable that was sliced, converted or computed on is left as it
is.

Every store written by this library has all its chunks written (``write_empty_chunks``) and
says so (the schema-version attribute on its group), so there a missing chunk file is always
an error.  In a store written by other tools (``ds.to_zarr()``), Zarr leaves out chunks equal
to the fill value, so a missing chunk file reads as the fill value, as Zarr defines it (see
:func:`all_chunks_written`); decoding and checksum errors are caught in every store.

Examples
--------
>>> import os, tempfile
>>> import ooc_kernels as ok
>>> from ooc_kernels.data import open_zarr_dataset
>>> p = ok.make_dataset("synthetic_krr_2d", os.path.join(tempfile.mkdtemp(), "k.zarr"), 30,
...                     chunk_size=10)
>>> os.remove(os.path.join(p, "X", "c", "1", "0"))         # lose one chunk file
>>> open_zarr_dataset(p).X.values                        # small: a 30-row example
Traceback (most recent call last):
...
ooc_kernels.exceptions.CorruptChunkError: chunk 1 of variable 'X' (rows 10..19) ...
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import numpy as np

from .._checks import check_finite
from ..exceptions import CorruptChunkError, DataChangedError

__all__ = ["guard_dataset", "guard_dask_array", "zarr_source", "check_finite_blocks",
           "all_chunks_written", "CHECKSUM_CODEC", "zarr_sources", "stored_fingerprint",
           "content_fingerprint", "store_identity"]

#: The group attribute that stores written by :func:`ooc_kernels.data.write_chunks` carry
#: (``ooc_kernels.data.schema.SCHEMA_VERSION_ATTR``; the schema module imports this one, so
#: the name is repeated here rather than imported, and a test checks they agree).
WRITTEN_BY_LIBRARY_ATTR = "ooc_kernels_schema_version"

#: Name of the checksum codec written by :func:`ooc_kernels.data.write_chunks`.
CHECKSUM_CODEC = "crc32c"

_FIX = ("regenerate the store (ooc_kernels.data.make_dataset(..., overwrite=True) or "
        "`ooc-kernels data make --overwrite`) or restore it from a backup")

# xarray's lazy wrappers that only forward indexing (no value conversion).
_PASS_THROUGH = ("ImplicitToExplicitIndexingAdapter", "CopyOnWriteArray", "MemoryCachedArray")


# --------------------------------------------------------------------------- detection
def zarr_source(arr: Any):
    """The ``zarr.Array`` behind an untouched xarray view of a whole Zarr array, else None.

    "Untouched": the Dask graph is exactly the two layers xarray builds when it opens a store
    with Dask chunks (the backend array and one getter per chunk), the lazy indexer selects
    everything and no decoding wrapper sits in between, so reading the Zarr array directly
    gives the same values.
    """
    import dask.array as da

    if not isinstance(arr, da.Array):
        return None
    layers = arr.dask.layers
    original = "original-" + arr.name
    if set(layers) != {arr.name, original}:
        return None
    values = list(layers[original].values())  # small: the layer's graph dict
    if len(values) != 1:
        return None
    obj = values[0]
    for _ in range(8):
        kind = type(obj).__name__
        if kind in _PASS_THROUGH:
            obj = getattr(obj, "array", None)
        elif kind == "LazilyIndexedArray":
            key = getattr(getattr(obj, "key", None), "tuple", None)
            if key is None or any(k != slice(None) for k in key):
                return None
            obj = getattr(obj, "array", None)
        elif kind == "ZarrArrayWrapper":
            zarray = getattr(obj, "_array", None)
            if zarray is None or tuple(zarray.shape) != tuple(arr.shape) \
                    or np.dtype(zarray.dtype) != arr.dtype:
                return None
            return zarray
        else:
            return None
    return None


def guard_dask_array(arr: Any, var: str):
    """``arr`` with integrity-checked chunk reads when it is an untouched Zarr view.

    Any other input is returned unchanged (so the call is idempotent).
    """
    zarray = zarr_source(arr)
    if zarray is None:
        return arr
    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    token = tokenize(arr.name, "ooc-kernels-checked-read")
    name = f"checked-{var}-{token}"
    src = f"zarr-source-{var}-{token}"
    dsk: dict = {src: zarray}
    dense = all_chunks_written(zarray)
    identity = store_identity(zarray)  # in every task: checked where the chunk is read
    bounds = [np.concatenate([[0], np.cumsum(c)]).astype(int) for c in arr.chunks]
    for index in itertools.product(*(range(len(c)) for c in arr.chunks)):
        slices = tuple(slice(int(b[i]), int(b[i + 1])) for b, i in zip(bounds, index))
        dsk[(name, *index)] = (_read_block, src, var, index, slices, dense, identity)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=())
    return da.Array(graph, name, arr.chunks, dtype=arr.dtype,
                    meta=np.empty((0,) * arr.ndim, dtype=arr.dtype))


def guard_dataset(ds):
    """``ds`` with every untouched Zarr-backed data variable read through integrity checks."""
    out = ds
    for var in list(ds.data_vars):
        data = ds[var].data
        guarded = guard_dask_array(data, str(var))
        if guarded is not data:
            if out is ds:
                out = ds.copy()
            out[var] = ds[var].copy(data=guarded)  # keeps dims, attrs and encoding
    return out


# --------------------------------------------------------------------------- reading
def _grid(zarray) -> tuple[int, ...]:
    shards = getattr(zarray, "shards", None)  # keys name shards when the array is sharded
    return tuple(shards if shards is not None else zarray.chunks)


def _store_location(zarray) -> str:
    store = zarray.store
    root = getattr(store, "root", None)
    return str(root) if root is not None else str(store)


def _chunk_keys(zarray, slices: tuple[slice, ...]) -> list[tuple[tuple[int, ...], str]]:
    """(grid coordinates, store key) of every stored chunk overlapping ``slices``."""
    ranges = []
    for s, size in zip(slices, _grid(zarray)):
        if s.stop <= s.start:
            return []
        ranges.append(range(s.start // size, (s.stop - 1) // size + 1))
    prefix = f"{zarray.path}/" if zarray.path else ""
    return [(coords, prefix + zarray.metadata.encode_chunk_key(coords))
            for coords in itertools.product(*ranges)]


def _describe(var: str, index: tuple[int, ...], slices: tuple[slice, ...]) -> str:
    rows = slices[0]
    return (f"chunk {index[0]} of variable {var!r} (rows {rows.start}..{rows.stop - 1})"
            if len(index) == 1 or all(i == 0 for i in index[1:])
            else f"block {index} of variable {var!r} (rows {rows.start}..{rows.stop - 1})")


def all_chunks_written(zarray) -> bool:
    """Whether the store promises every chunk file (written by this library).

    Zarr skips chunks equal to the fill value by default (``write_empty_chunks=False``), so
    in a store written by other tools (``ds.to_zarr()``) a missing chunk file is the fill
    value, not damage.  Stores written by :func:`ooc_kernels.data.write_chunks` carry the
    schema-version attribute on their group and write every chunk.
    """
    parent = zarray.path.rsplit("/", 1)[0] if "/" in zarray.path else ""
    try:
        import zarr

        group = zarr.open_group(store=zarray.store, path=parent, mode="r")
        return WRITTEN_BY_LIBRARY_ATTR in group.attrs
    except Exception:  # noqa: BLE001 - no readable parent group: make no promise
        return False


def _local_root(store) -> str | None:
    """The folder of a Zarr store on a local (or locally mounted) file system, else None:
    a ``LocalStore``, or an ``FsspecStore`` over fsspec's local file system (what a catalog
    entry opens)."""
    from zarr.storage import FsspecStore, LocalStore

    if isinstance(store, LocalStore):
        return os.fspath(store.root)
    if isinstance(store, FsspecStore):
        from fsspec.implementations.local import LocalFileSystem

        fs = getattr(store.fs, "sync_fs", store.fs)  # zarr wraps a synchronous file system
        if isinstance(fs, LocalFileSystem):
            return str(store.path)
    return None


def store_identity(zarray) -> tuple[str, tuple[int, int, int]] | None:
    """The identity of the Zarr array ``zarray`` as stored now, or None where it has none.

    The path of the array's metadata file (``zarr.json``, ``.zarray`` for Zarr 2) and its
    ``(st_ino, st_size, st_mtime_ns)``.  The path is reached through the store's folder and
    the array's folder, so replacing any of them (every store the library writes is swapped
    in as a new folder, see :mod:`ooc_kernels._atomic`) or rewriting the metadata gives
    another identity, while reading, re-opening, or killing and resuming a fit on an
    unchanged store keeps it.  ``st_dev`` is left out: machines that mount one shared file
    system may number it differently.  ``None`` for a store that is not a local folder
    (object stores, remote ``fsspec`` URLs: no inode) or whose metadata file cannot be
    found.
    """
    root = _local_root(zarray.store)
    if root is None:
        return None
    name = "zarr.json" if zarray.metadata.zarr_format == 3 else ".zarray"
    path = os.path.join(root, *zarray.path.split("/"), name)
    try:
        st = os.stat(path)
    except OSError:
        return None
    return path, (st.st_ino, st.st_size, st.st_mtime_ns)


def _check_unchanged(zarray, var: str, identity: tuple[str, tuple[int, int, int]]) -> None:
    """Raise :class:`DataChangedError` unless the array's metadata file still has
    ``identity`` (:func:`store_identity`): one ``os.stat``."""
    path, recorded = identity
    unseen = ""
    try:
        st = os.stat(path)
    except OSError:
        import socket

        how = (f"is gone (not there for the process that reads it, on host "
               f"{socket.gethostname()!r})")
        unseen = (" Or this process does not see the folder: every worker of a "
                  "dask.distributed cluster must see the store at the same path (a file "
                  "system that all of them mount).")
    else:
        if (st.st_ino, st.st_size, st.st_mtime_ns) == recorded:
            return
        how = ("has been replaced by another file" if st.st_ino != recorded[0]
               else "has been rewritten")
    root = _local_root(zarray.store) or _store_location(zarray)
    raise DataChangedError(
        f"the Zarr store {root!r} changed while this fit was reading it: the metadata file "
        f"of variable {var!r} ({os.path.relpath(path, root)!r}) {how} since the data was "
        "opened. The store was replaced or removed (e.g. by ooc_kernels.data.make_dataset("
        "..., overwrite=True) or `ooc-kernels data make --overwrite`) or its metadata "
        "rewritten, so the rows read from now on would come from another dataset than those "
        "read so far. Open the data again and re-run the fit on the new store (a checkpoint "
        "of this fit belongs to the old data); write new data to another path, not over a "
        f"store that a fit is reading.{unseen}"
    )


def _read_block(zarray, var: str, index: tuple[int, ...], slices: tuple[slice, ...],
                dense: bool = True, identity: tuple | None = None):
    """One chunk task: check the chunk files exist (``dense`` stores), decode them, wrap
    codec errors.  The checks and the read go to Zarr's event loop together, in one round
    trip.  With an ``identity`` (:func:`store_identity`, recorded when the data was opened)
    the store is checked to be the same after the read (one ``os.stat``): a block read from
    a store swapped in meanwhile, and a chunk file missing because the store was replaced,
    raise :class:`DataChangedError`, not a block of another dataset or a corrupt chunk."""
    from zarr.core.sync import sync

    all_keys = [key for _coords, key in _chunk_keys(zarray, slices)]
    keys = all_keys if dense else []  # the files to check
    *found, block = sync(_exist_and_read(zarray, keys, slices))
    if identity is not None:  # after the read: a swap before or during it is seen
        _check_unchanged(zarray, var, identity)
    where = _describe(var, index, slices)
    store = _store_location(zarray)
    for key, exists in zip(keys, found):
        if isinstance(exists, BaseException):  # the store could not say: its own error
            raise exists
        if not exists:
            raise CorruptChunkError(
                f"{where} in the Zarr store {store!r} is corrupt: its chunk file {key!r} is "
                f"missing (zarr would silently read it as the fill value "
                f"{_fill(zarray)!r}); {_FIX}. A store written by another tool that skips "
                "chunks equal to the fill value must be rewritten with "
                "ooc_kernels.data.write_chunks (or zarr's write_empty_chunks=True)."
            )
    if isinstance(block, MemoryError) or (isinstance(block, BaseException)
                                          and not isinstance(block, Exception)):
        raise block  # out of memory, or the read cancelled: not the chunk's fault
    if isinstance(block, Exception):
        raise CorruptChunkError(
            f"{where} in the Zarr store {store!r} is corrupt: chunk file(s) {all_keys} cannot "
            f"be decoded ({type(block).__name__}: {block}); the file is truncated, garbled or "
            f"fails its checksum: {_FIX}."
        ) from block
    return np.asarray(block)  # one chunk (the block at `slices`), not the variable


async def _exist_and_read(zarray, keys: list[str], slices: tuple[slice, ...]) -> list:
    """Whether each chunk file of ``keys`` exists, then the block at ``slices``, fetched
    concurrently; an exception in place of a value that failed."""
    import asyncio

    # the array's asynchronous side: a property since zarr 3.1, the attribute before
    reader = getattr(zarray, "async_array", None) or zarray._async_array
    return await asyncio.gather(*(zarray.store.exists(key) for key in keys),
                                reader.getitem(slices), return_exceptions=True)


def _fill(zarray) -> Any:
    value = zarray.fill_value
    return value.item() if isinstance(value, np.generic) else value


# --------------------------------------------------------------------------- values
def _finite_block(block: np.ndarray, var: str, block_info=None) -> np.ndarray:
    block = np.asarray(block)  # one chunk
    check_finite(block, var, "?" if not block_info else block_info[0]["chunk-location"][0])
    return block


def check_finite_blocks(arr, var: str):
    """A lazy view of ``arr`` whose chunks raise :class:`InvalidDataError` on NaN/inf.

    The check runs in the chunk task (one chunk at a time) and names the chunk and row.
    Non-float arrays are returned unchanged.
    """
    if arr.dtype.kind not in "fc":
        return arr
    return arr.map_blocks(_finite_block, var, dtype=arr.dtype, meta=arr._meta)


# --------------------------------------------------------------------------- contents
def zarr_sources(arr: Any) -> list:
    """The ``zarr.Array`` objects a Dask array's graph reads (whatever sits between: the
    checked reads of :func:`guard_dask_array`, xarray's lazy wrappers, slicing, rechunking
    or conversions).  Nothing is read."""
    import dask.array as da
    import zarr

    if not isinstance(arr, da.Array):
        return []
    found: dict = {}
    for value in dict(arr.__dask_graph__()).values():  # the graph: one entry per task
        obj = value
        for _ in range(16):
            if isinstance(obj, zarr.Array):
                found[(_store_location(obj), obj.path)] = obj
                break
            if type(obj).__name__ == "DataNode":  # dask's task spec wrapping a value
                obj = getattr(obj, "value", None)
            elif hasattr(obj, "_array") and type(obj).__name__ == "ZarrArrayWrapper":
                obj = obj._array
            else:
                obj = getattr(obj, "array", None)  # xarray's lazy indexing wrappers
            if obj is None:
                break
    return [found[k] for k in sorted(found)]


def _stored_crc_suffix(zarray) -> bool:
    """Whether every stored chunk of ``zarray`` ends with the CRC32C of its encoded bytes
    (the last codec is ``crc32c``, unsharded): the checksum can be read instead of the
    chunk."""
    from zarr.codecs import Crc32cCodec

    codecs = tuple(getattr(zarray.metadata, "codecs", ()))
    return bool(codecs) and isinstance(codecs[-1], Crc32cCodec) \
        and getattr(zarray, "shards", None) is None


def stored_fingerprint(zarray) -> str:
    """A SHA-256 of what ``zarray`` stores: its metadata (shape, chunks, dtype, codecs,
    fill value, attributes) and, for every chunk file, its CRC32C.

    Stores whose chunks carry a CRC32C (every store written by
    :func:`ooc_kernels.data.write_chunks`) give it in their last four bytes, so only those
    are read: one small read per chunk file.  For other stores the CRC32C of every stored
    chunk is computed here, reading the stored (still encoded) bytes one chunk file at a
    time: one pass over the store's bytes on disk, no decoding, one chunk in memory.  A
    missing chunk file counts as such.  Two stores with the same fingerprint hold the same
    bytes up to CRC32C collisions of every chunk at once.
    """
    import hashlib
    import json

    from zarr.abc.store import SuffixByteRequest
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.sync import sync

    from .._checksums import crc32c

    digest = hashlib.sha256()
    digest.update(json.dumps(zarray.metadata.to_dict(), sort_keys=True, default=str).encode())
    suffix = _stored_crc_suffix(zarray)
    everything = tuple(slice(0, int(n)) for n in zarray.shape)
    prototype = default_buffer_prototype()
    for _coords, key in _chunk_keys(zarray, everything):
        if suffix:
            buf = sync(zarray.store.get(key, prototype, byte_range=SuffixByteRequest(4)))
            stored = b"missing" if buf is None else buf.to_bytes()
        else:
            buf = sync(zarray.store.get(key, prototype))
            stored = b"missing" if buf is None else \
                crc32c(buf.as_numpy_array()).to_bytes(4, "little")
        digest.update(key.encode() + b"\0" + stored)
    return digest.hexdigest()


def content_fingerprint(variables: dict) -> dict:
    """For each variable (name -> lazy array) read from Zarr, a SHA-256 of the stored
    contents of the Zarr arrays it reads (:func:`stored_fingerprint`); variables that read
    no Zarr array are left out (their Dask token already names their contents: NumPy
    arrays are hashed by value)."""
    import hashlib

    out = {}
    for name in sorted(variables):
        sources = zarr_sources(variables[name])
        if sources:
            digest = hashlib.sha256()
            for zarray in sources:
                digest.update(stored_fingerprint(zarray).encode())
            out[str(name)] = digest.hexdigest()
    return out
