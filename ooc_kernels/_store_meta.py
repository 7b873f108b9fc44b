"""Reading the ``zarr.json`` of a folder to tell whether it is a store, with a size bound.

The checks that keep writes out of the library's stores read the ``zarr.json`` of the
target and of every folder above it (:func:`ooc_kernels._atomic.store_around`), folders
that anyone may have written into.  Such a file may be anything: a named pipe or a device
is never read (:func:`~ooc_kernels._untrusted.open_regular`), and a file larger than
:data:`MAX_STORE_META` is not read either: reading a file of gigabytes (or a sparse file of
terabytes) whole would take the memory of the machine.  Its size is returned instead, so
that a caller can refuse clearly rather than guess.

Examples
--------
>>> import json, os, tempfile
>>> from pathlib import Path
>>> folder = Path(tempfile.mkdtemp())
>>> _ = (folder / "zarr.json").write_text(json.dumps(
...     {"zarr_format": 3, "node_type": "group", "attributes": {"a": 1}}))
>>> read_store_attrs(folder)
{'a': 1}
>>> with open(folder / "zarr.json", "r+b") as f:
...     _ = f.truncate(MAX_STORE_META + 1)  # a sparse file: no disk used
>>> read_store_attrs(folder) == MAX_STORE_META + 1
True
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ooc_kernels._untrusted import MAX_METADATA_BYTES, open_regular

__all__ = ["MAX_STORE_META", "read_store_attrs"]

#: Largest ``zarr.json`` read to tell what a folder is, in bytes: the bound of every Zarr
#: metadata file the library reads (:data:`~ooc_kernels._untrusted.MAX_METADATA_BYTES`).
MAX_STORE_META = MAX_METADATA_BYTES


def read_store_attrs(folder: str | os.PathLike) -> dict | int | None:
    """The attributes of the Zarr 3 ``zarr.json`` of ``folder``; its size in bytes (an
    ``int``) when it is larger than :data:`MAX_STORE_META` (then not read); or ``None``:
    ``folder`` is not a folder or is a symbolic link (never followed), or the file is
    missing, a link, not a regular file (a named pipe or a device, also one swapped in while
    this looks), not JSON (or nested deeper than the JSON parser goes), or not a Zarr 3
    document with attributes."""
    path = Path(folder)
    meta = path / "zarr.json"
    try:
        if path.is_symlink() or not path.is_dir() or meta.is_symlink():
            return None
        with open_regular(meta, what=repr(str(meta)), error=ValueError) as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_STORE_META:
                return size
            # read(n) allocates n bytes first: ask for the file's size, and in pieces past it
            raw = f.read(size + 1)
            while len(raw) > size and len(raw) <= MAX_STORE_META:   # grew since fstat
                piece = f.read(min(1 << 16, MAX_STORE_META + 1 - len(raw)))
                if not piece:
                    break
                raw += piece
        if len(raw) > MAX_STORE_META:   # grew while it was read
            return len(raw)
        doc = json.loads(raw)
    except (OSError, ValueError, RecursionError):   # RecursionError: nesting past the
        return None                                 # parser's limit ("[[[[...")
    if not isinstance(doc, dict):   # JSON that is not an object: no store's metadata
        return None
    attrs = doc.get("attributes")
    if doc.get("zarr_format") != 3 or not isinstance(attrs, dict):
        return None
    return attrs
