"""Checkpoints of a running fit: the engine state written atomically to a Zarr group.

A checkpoint holds the model arrays, the model's JSON metadata (hyperparameters, kernel
spec, seeds), the position of the next round (``epoch``, ``round``: every random number of
a fit derives from ``(random_state, epoch, round, chunk)``, so the position *is* the RNG
state), the number of epochs asked for, the identity of the dataset and the library version.
It is written into a temporary sibling folder and renamed into place, so a crash while
writing leaves the previous checkpoint intact.  Every array and the metadata carry CRC32C
checksums (:mod:`ooc_kernels._checksums`), verified by :func:`read_checkpoint`.

Examples
--------
>>> import numpy as np, tempfile, os
>>> from ooc_kernels.parallel.checkpoint import read_checkpoint, write_checkpoint
>>> path = os.path.join(tempfile.mkdtemp(), "ck.zarr")
>>> write_checkpoint(path, {"coef": np.ones(3)}, {"position": {"epoch": 1, "round": 4}})
>>> ck = read_checkpoint(path)
>>> ck.meta["position"], ck.arrays["coef"].tolist()
({'epoch': 1, 'round': 4}, [1.0, 1.0, 1.0])
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import zarr

from ooc_kernels import _checksums
from ooc_kernels._atomic import KIND_ATTR, atomic_dir, read_consistent, sweep_stale
from ooc_kernels._version import __version__
from ooc_kernels.exceptions import CheckpointError, CheckpointMismatchError

__all__ = ["Checkpoint", "CheckpointError", "CheckpointMismatchError", "write_checkpoint",
           "read_checkpoint", "dataset_identity", "differences"]

_KEY = "ooc_kernels_checkpoint"
#: Format 2: every array and the metadata carry CRC32C checksums (:mod:`ooc_kernels._checksums`).
FORMAT_VERSION = 2
#: How to start a fit over instead of resuming, in every interface's spelling.
START_OVER = ("resume=False (command line: --no-resume; pipeline file: fit: {resume: "
              "false})")
_FIX = f"remove it (or pass {START_OVER}) to start the fit again"


@dataclass(frozen=True)
class Checkpoint:
    """Arrays and JSON metadata read back from a checkpoint."""

    arrays: dict
    meta: dict


def write_checkpoint(path: str | os.PathLike, arrays: dict, meta: dict) -> None:
    """Write ``arrays`` (name -> ndarray) and JSON ``meta`` to ``path`` atomically.

    An existing ``path`` is replaced only if it is a checkpoint this library wrote.

    Raises
    ------
    ForeignPathError
        ``path`` exists and is not a checkpoint (a folder of other files, a file, a link, a
        model ...): it is left as it is.
    """
    meta = dict(meta, format_version=FORMAT_VERSION, library_version=__version__)
    json.dumps(meta)  # fail before writing anything if the metadata is not JSON
    arrays = {name: np.asarray(value) for name, value in arrays.items()}
    meta = _checksums.seal(meta, arrays)
    with atomic_dir(path, kind="checkpoint") as tmp:
        group = zarr.open_group(str(tmp), mode="w")
        _checksums.write_arrays(group, arrays)
        group.attrs.update({_KEY: meta, KIND_ATTR: "checkpoint"})


def read_checkpoint(path: str | os.PathLike) -> Checkpoint | None:
    """The checkpoint at ``path``, or ``None`` when there is none.

    Everything read is verified: the metadata's CRC32C, then the arrays its checksums
    list (and no other), each against its shape, dtype and CRC32C.

    Raises
    ------
    CheckpointError
        ``path`` exists but is not a readable checkpoint, is of another format, or fails a
        checksum; the message names the array or what is wrong.
    """
    path = Path(path)
    sweep_stale(path)  # what a killed checkpoint write left beside it
    if not path.exists():
        return None
    # all from one folder: a checkpoint that another fit swaps in meanwhile is read anew
    return read_consistent(path, lambda: _read_verified(path))


def _read_verified(path: Path) -> Checkpoint:
    """:func:`read_checkpoint`'s read of the folder at ``path``, every checksum verified."""
    try:
        group = zarr.open_group(str(path), mode="r")
        meta = dict(group.attrs[_KEY])
    except Exception as err:
        raise CheckpointError(
            f"{str(path)!r} is not a readable checkpoint ({type(err).__name__}: {err}); "
            "remove it to start the fit from scratch."
        ) from err
    where = f"checkpoint {str(path)!r}"
    if meta.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(
            f"{where} has format version {meta.get('format_version')!r} (written by "
            f"ooc_kernels {meta.get('library_version')}); this is ooc_kernels {__version__}, "
            f"which resumes from checkpoints of format {FORMAT_VERSION} (with checksums) "
            f"only; {_FIX}."
        )
    manifest = _checksums.verify_metadata(meta, where=where, error=CheckpointError, fix=_FIX)
    arrays = _checksums.read_arrays(group, manifest, where=where, error=CheckpointError,
                                    fix=_FIX)
    return Checkpoint(arrays=arrays, meta=meta)


def dataset_identity(data) -> dict:
    """What identifies the training data's structure without reading it: every variable's
    shape and dtype, the chunks, the Dask token of its source and its attributes
    (generator, seed, split ...).

    The token names the contents of in-memory arrays, but a Zarr store's only by its path:
    checkpoints add the fingerprint of the stored contents
    (:func:`ooc_kernels.data.integrity.content_fingerprint`).
    """
    sizes = json.dumps(list(data.chunk_sizes))
    attrs = {k: v for k, v in sorted(data.attrs.items())
             if isinstance(v, (str, int, float, bool, list, type(None)))}
    variables = {name: {"shape": [int(n) for n in np.shape(arr)],
                        "dtype": str(np.asarray(arr[:0]).dtype if not hasattr(arr, "dtype")
                                     else arr.dtype)}
                 for name, arr in sorted({**data.variables, **data.whole}.items())}
    return {
        "n_samples": int(data.n_samples),
        "variables": variables,
        "chunks": hashlib.sha256(sizes.encode()).hexdigest()[:16],
        "n_chunks": int(data.n_chunks),
        "token": str(data.token),
        "attrs": json.loads(json.dumps(attrs, default=str)),
    }


def differences(expected: dict, found: dict, prefix: str = "") -> list[str]:
    """Human-readable differences between two JSON-like dicts (checkpoint vs now)."""
    out = []
    for key in sorted(set(expected) | set(found)):
        a, b = expected.get(key, "<missing>"), found.get(key, "<missing>")
        name = f"{prefix}{key}"
        if isinstance(a, dict) and isinstance(b, dict):
            out.extend(differences(a, b, prefix=f"{name}."))
        elif a != b:
            out.append(f"{name}: checkpoint has {a!r}, this fit has {b!r}")
    return out
