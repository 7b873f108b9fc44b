"""CRC32C checksums of what the library saves: every array and the metadata of a saved
model or checkpoint, verified when it is read back.

The checksum is CRC32C, computed by ``google_crc32c`` (a dependency of zarr): the function of
zarr's ``crc32c`` codec, which every dataset store, saved model and checkpoint of this library
carries on each chunk.  A file is checked at two levels:

* each stored chunk ends with the CRC32C of its encoded bytes (the ``crc32c`` codec, see
  :func:`compressors`): zarr refuses to decode a chunk with a flipped byte;
* the metadata holds a manifest (:func:`seal`): for every array its shape, dtype and the
  CRC32C of its decoded bytes, and the CRC32C of the metadata itself (as canonical JSON).
  The manifest names exactly the arrays that belong to the file, so a reader reads those
  and no other (:func:`read_arrays`), and it catches what chunk checksums cannot: an edited
  array description (dtype, shape, codecs), a missing or extra array, an edited value in the
  metadata.

An array's own metadata file (``NAME/zarr.json``), which zarr parses when it opens the array,
is checked by parsing it (:func:`open_arrays`): a damaged one is the reader's error naming
the array, never the parser's.  What it says is then held to the manifest's entry.

These checksums detect damage (a flipped bit, a truncated or half-copied file, an edit made
without the library).  They are not a signature: whoever can write the file can also
recompute them, so a model file still only sets what :mod:`ooc_kernels.estimators.persistence`
lets it set, and every value is validated as the constructor validates it.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels._checksums import crc32c, seal, verify_metadata
>>> crc32c(b"123456789")                       # the CRC-32C check value
3808858755
>>> meta = seal({"alpha": 0.5}, {"coef": np.zeros(3)})
>>> sorted(meta["checksums"]["arrays"]["coef"])
['crc32c', 'dtype', 'shape']
>>> verify_metadata(meta, where="m.zarr", error=ValueError, fix="re-save it")["coef"]["shape"]
[3]
>>> verify_metadata(dict(meta, alpha=0.6), where="m.zarr", error=ValueError, fix="re-save it")
Traceback (most recent call last):
...
ValueError: m.zarr: the metadata fails its CRC32C checksum (stored ..., computed ...): it was edited or damaged after it was written; re-save it.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

__all__ = ["KEY", "check_sizes", "compressors", "crc32c", "seal", "verify_metadata",
           "open_arrays", "read_arrays", "write_arrays"]

#: The metadata key of the manifest (``{"arrays": {...}, "metadata": CRC}``).
KEY = "checksums"


def compressors() -> list:
    """Blosc/Zstd, then a CRC32C checksum of the compressed bytes of every chunk.

    The codecs of every dataset store (:func:`ooc_kernels.data.write_chunks`), saved model and
    checkpoint: a flipped byte or a truncated chunk file fails when it is decoded instead of
    decoding to wrong numbers.
    """
    from zarr.codecs import BloscCodec, Crc32cCodec

    return [BloscCodec(cname="zstd", clevel=3, shuffle="shuffle"), Crc32cCodec()]


def crc32c(data: Any) -> int:
    """CRC32C of a bytes-like object or of a NumPy array's bytes (C order)."""
    import google_crc32c

    if isinstance(data, np.ndarray):
        data = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
    return int(google_crc32c.value(data))


def _canonical(meta: dict) -> bytes:
    return json.dumps(meta, sort_keys=True, separators=(",", ":")).encode()


def _array_entry(value: np.ndarray) -> dict:
    return {"shape": [int(n) for n in value.shape], "dtype": value.dtype.str,
            "crc32c": crc32c(value)}


def seal(meta: dict, arrays: dict) -> dict:
    """``meta`` with the manifest of ``arrays`` and the CRC32C of the whole under :data:`KEY`."""
    body = {k: v for k, v in meta.items() if k != KEY}
    body[KEY] = {"arrays": {name: _array_entry(np.asarray(value))
                            for name, value in sorted(arrays.items())}}
    body[KEY]["metadata"] = crc32c(_canonical(body))
    return body


def verify_metadata(meta: dict, *, where: str, error: type, fix: str) -> dict:
    """Check the metadata's own CRC32C and the manifest's form; return the manifest
    (array name -> ``{"shape", "dtype", "crc32c"}``).

    Raises
    ------
    error
        No manifest, a malformed one, or metadata whose checksum does not match.
    """
    sums = meta.get(KEY)
    if not isinstance(sums, dict) or not isinstance(sums.get("arrays"), dict) \
            or isinstance(sums.get("metadata"), bool) or not isinstance(sums.get("metadata"),
                                                                        int):
        raise error(f"{where}: the metadata has no valid {KEY!r} entry (found {sums!r}), so "
                    f"the file cannot be verified; {fix}.")
    body = dict(meta)
    body[KEY] = {k: v for k, v in sums.items() if k != "metadata"}
    computed = crc32c(_canonical(body))
    if computed != sums["metadata"]:
        raise error(f"{where}: the metadata fails its CRC32C checksum (stored "
                    f"{sums['metadata']}, computed {computed}): it was edited or damaged "
                    f"after it was written; {fix}.")
    manifest = sums["arrays"]
    for name, entry in manifest.items():
        if not (isinstance(entry, dict) and isinstance(entry.get("shape"), list)
                and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                        for n in entry["shape"])
                and isinstance(entry.get("dtype"), str)
                and isinstance(entry.get("crc32c"), int)):
            raise error(f"{where}: the checksum entry of array {name!r} is malformed "
                        f"({entry!r}); {fix}.")
    return manifest


def write_arrays(group, arrays: dict) -> None:
    """Write ``arrays`` into the Zarr ``group``, every chunk with its CRC32C (:func:`compressors`)."""
    for name, value in arrays.items():
        group.create_array(name, data=np.asarray(value), compressors=compressors())


def _is_damage(err: BaseException) -> bool:
    """Whether ``err``, raised while zarr opened an array, says its metadata file is damaged.

    zarr parses an array's ``zarr.json`` when the array is opened and raises what its parser
    raises: ``json.JSONDecodeError``, ``MetadataValidationError``, ``UnknownCodecError``, or a
    ``ValueError``, ``TypeError``, ``KeyError`` ... of a field.  Out of memory, a missing
    module and an I/O error of the disk (an ``OSError`` that is not zarr's) are not damage.
    """
    if not isinstance(err, Exception) or isinstance(err, (MemoryError, ImportError)):
        return False
    if isinstance(err, OSError):
        from zarr.errors import BaseZarrError

        return isinstance(err, BaseZarrError)
    return True


def _damaged(where: str, name: str, err: BaseException, fix: str,
             meta: str = "zarr.json") -> str:
    problem = f"{type(err).__name__}: {err}"
    if len(problem) > 300:
        problem = problem[:297] + "..."
    return (f"{where}: array {name!r} cannot be read: its metadata file "
            f"{name + '/' + meta!r} is damaged ({problem}); {fix}.")


def open_arrays(group, *, where: str, error: type, fix: str) -> dict:
    """The arrays of the Zarr ``group`` (name -> ``zarr.Array``), opened one by one.

    What ``group.array_keys()`` lists, but an array whose metadata file zarr cannot parse
    (truncated, garbled, an unknown codec or data type, a malformed shape) is ``error``
    naming the store, the array and the problem, never the parser's own error.  The
    metadata file is ``zarr.json`` in a Zarr format 3 group, ``.zarray`` in a format 2
    group (a store written by ``xarray.Dataset.to_zarr(..., zarr_format=2)``); members
    without one and sub-groups are not arrays.

    Raises
    ------
    error
        An array's metadata file is damaged.
    """
    import zarr
    from zarr.core.sync import collect_aiterator, sync

    store, prefix = group.store, group.path
    meta = ".zarray" if group.metadata.zarr_format == 2 else "zarr.json"
    names = sorted(collect_aiterator(store.list_dir(prefix)))
    out = {}
    for name in names:
        key = f"{prefix}/{name}/{meta}" if prefix else f"{name}/{meta}"
        if not sync(store.exists(key)):
            continue                       # a file, or a folder that is no Zarr node
        try:
            node = group[name]
            if isinstance(node, zarr.Array):
                np.dtype(node.dtype)       # a data type NumPy cannot hold is damage too
                out[name] = node
        except Exception as err:
            if not _is_damage(err):
                raise
            raise error(_damaged(where, name, err, fix, meta)) from err
    return out


def _n_bytes(shape, itemsize: int) -> int:
    """Bytes of an array of ``shape`` (Python integers: no overflow however large)."""
    n = itemsize
    for dim in shape:
        n *= int(dim)
    return n


def check_sizes(opened: dict, *, where: str, error: type, fix: str,
                limit: int | None = None) -> None:
    """Refuse arrays that declare more bytes than the machine's memory, or chunks larger
    than their array, before any is read.

    A model or checkpoint is read whole, so a file of a few kilobytes whose metadata declares
    a shape of ``(10**9, 256)`` (its chunks missing, read as the fill value) would make the
    reader allocate terabytes: NumPy's raw ``MemoryError``, or the system's out-of-memory
    killer when the size is close to the memory.  The declared sizes come from the arrays'
    own metadata files, which a writer of the file controls like everything else in it, as
    do the chunk shapes: a chunk is decoded whole, so a chunk of ``(10**7, 256)`` for an
    array of shape ``(1, 256)`` would be a 20 GB buffer for 2 KB of values.

    Parameters
    ----------
    opened : dict
        Array name -> ``zarr.Array`` (from :func:`open_arrays`).
    where, error, fix
        As for :func:`read_arrays`.
    limit : int, optional
        Bytes allowed for all the arrays together: by default the machine's physical memory
        (:func:`ooc_kernels._memory.physical_memory`; no limit where it is unknown).  A
        stored chunk (or shard), which is decoded whole, may not be larger than its array
        in any dimension (this library never writes one so).

    Raises
    ------
    error
        A chunk larger than its array, or the arrays' total larger than ``limit``; the
        message names the (largest) array, its shape and its bytes.

    Examples
    --------
    >>> import zarr
    >>> g = zarr.open_group(zarr.storage.MemoryStore(), mode="w")
    >>> _ = g.create_array("coef", shape=(10**9, 256), chunks=(1000, 256), dtype="f8")
    >>> check_sizes({"coef": g["coef"]}, where="m.zarr", error=ValueError, fix="re-save it",
    ...             limit=2**30)
    Traceback (most recent call last):
    ...
    ValueError: m.zarr: its arrays declare 1.9 TiB in all, more than the 1.0 GiB of memory ...
    """
    from ._memory import physical_memory, size_text

    limit = physical_memory() if limit is None else limit
    sizes = {}
    for name, arr in sorted(opened.items()):
        item = np.dtype(arr.dtype).itemsize
        sizes[name] = _n_bytes(arr.shape, item)
        stored = tuple(getattr(arr, "shards", None) or arr.chunks)
        if any(int(c) > max(int(n), 1) for c, n in zip(stored, arr.shape)):
            raise error(
                f"{where}: array {name!r} of shape {tuple(arr.shape)} declares stored chunks "
                f"of shape {stored} ({size_text(_n_bytes(stored, item))} each), larger than "
                f"the array: decoding one would allocate the whole chunk; the file was edited "
                f"or damaged; {fix}.")
    total = sum(sizes.values())
    if limit is not None and total > limit:
        name = max(sorted(sizes), key=sizes.__getitem__)
        raise error(
            f"{where}: its arrays declare {size_text(total)} in all, more than the "
            f"{size_text(limit)} of memory of this machine (array {name!r}: shape "
            f"{tuple(opened[name].shape)}, {size_text(sizes[name])}), so they could not be "
            f"read; the file was edited or damaged; {fix}.")


def read_arrays(group, manifest: dict, *, where: str, error: type, fix: str) -> dict:
    """Read the arrays the manifest lists, and only them, each checked against its entry.

    An array's shape and dtype are compared with the manifest before anything is read (an
    array replaced by a larger one is refused without reading it), its chunks are decoded
    with their own CRC32C, and the CRC32C of the values read must equal the manifest's.
    Every array's metadata file is parsed first (:func:`open_arrays`), and arrays that
    declare more bytes than the machine's memory are refused before any is read
    (:func:`check_sizes`).

    Raises
    ------
    error
        The store holds an array the manifest does not list, lacks one it lists, an array's
        metadata file is damaged, the arrays declare more bytes than the memory, or an array
        does not match its entry; the message names the array.
    """
    opened = open_arrays(group, where=where, error=error, fix=fix)
    stored = sorted(opened)
    extra = sorted(set(stored) - set(manifest))
    if extra:
        raise error(f"{where}: holds array(s) {extra} that its checksums do not list (it was "
                    f"edited after it was written); {fix}.")
    missing = sorted(set(manifest) - set(stored))
    if missing:
        raise error(f"{where}: array(s) {missing} listed in its checksums are missing; {fix}.")
    check_sizes(opened, where=where, error=error, fix=fix)
    out = {}
    for name in sorted(manifest):
        entry = manifest[name]
        arr = opened[name]
        found = {"shape": [int(n) for n in arr.shape], "dtype": np.dtype(arr.dtype).str}
        expected = {"shape": entry["shape"], "dtype": entry["dtype"]}
        if found != expected:
            raise error(f"{where}: array {name!r} has shape {tuple(found['shape'])} and dtype "
                        f"{found['dtype']!r}, its checksum entry says "
                        f"{tuple(expected['shape'])} and {expected['dtype']!r}; {fix}.")
        try:
            value = np.asarray(arr[...])
        except MemoryError:
            raise
        except Exception as err:  # a codec error, the chunk CRC32C included
            raise error(f"{where}: array {name!r} cannot be read: a chunk is missing, "
                        f"truncated or fails its CRC32C checksum ({type(err).__name__}: "
                        f"{err}); {fix}.") from err
        computed = crc32c(value)
        if computed != entry["crc32c"]:
            raise error(f"{where}: array {name!r} fails its CRC32C checksum (stored "
                        f"{entry['crc32c']}, computed {computed}); {fix}.")
        out[name] = value
    return out
