"""Write datasets to Zarr chunk by chunk, atomically.

:func:`write_chunks` consumes an iterable of ``(X_chunk, y_chunk)`` pairs and writes each
one straight into its region of a Zarr 3 store, so at most one chunk is ever held in
memory.  The store is built in a hidden sibling folder (``.NAME.tmp-XXXX``) and renamed
into place only once complete: an interrupted write never leaves a half-written dataset at
the target path, and the temporary folder is removed.

Examples
--------
>>> import os, tempfile
>>> import numpy as np
>>> from ooc_kernels.data.zarr_io import write_chunks
>>> from ooc_kernels.data.schema import make_attrs, open_zarr_dataset
>>> chunks = ((np.full((2, 3), i, np.float32), np.full(2, i, np.float32)) for i in range(3))
>>> path = write_chunks(os.path.join(tempfile.mkdtemp(), "tiny.zarr"), chunks,
...                     n_samples=6, n_features=3, chunk_size=2, y_dtype="float32",
...                     attrs=make_attrs("regression"))
>>> open_zarr_dataset(path).y.values.tolist()   # small: a 6-row example
[0.0, 0.0, 1.0, 1.0, 2.0, 2.0]
"""

from __future__ import annotations

import os
import shutil
import uuid
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .._atomic import replace_dir
from .._progress import progress_bar
from ..exceptions import DatasetExistsError, ValidationError
from .schema import FEATURE_DIM, SAMPLE_DIM, X_NAME, Y_NAME

__all__ = ["write_chunks", "n_chunks", "chunk_bounds"]


def n_chunks(n_samples: int, chunk_size: int) -> int:
    """Number of chunks of ``chunk_size`` samples needed for ``n_samples`` (last one shorter).

    Examples
    --------
    >>> n_chunks(250, 100)
    3
    """
    return -(-int(n_samples) // int(chunk_size))


def chunk_bounds(index: int, n_samples: int, chunk_size: int) -> tuple[int, int]:
    """``(start, stop)`` sample indices of chunk ``index``.

    Examples
    --------
    >>> chunk_bounds(2, 250, 100)
    (200, 250)
    """
    start = index * chunk_size
    return start, min(start + chunk_size, n_samples)


def _check_positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValidationError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _compressor():
    """Blosc/Zstd, then a CRC32C checksum of the compressed bytes.

    The checksum makes a flipped byte or a truncated chunk file fail on read (as a
    :class:`~ooc_kernels.exceptions.CorruptChunkError`, see :mod:`ooc_kernels.data.integrity`)
    instead of decoding to wrong numbers.
    """
    from zarr.codecs import BloscCodec, Crc32cCodec

    return [BloscCodec(cname="zstd", clevel=3, shuffle="shuffle"), Crc32cCodec()]


#: Every chunk is written, even one equal to the fill value, so a missing chunk file is
#: always damage (zarr would otherwise read it back as the fill value, silently).
_ARRAY_CONFIG = {"write_empty_chunks": True}


def write_chunks(
    path: str | os.PathLike,
    chunks: Iterable[tuple[np.ndarray, np.ndarray]],
    *,
    n_samples: int,
    n_features: int,
    chunk_size: int,
    y_dtype: Any,
    attrs: dict,
    overwrite: bool = False,
    progress: bool | None = None,
    desc: str | None = None,
) -> Path:
    """Write a dataset store from an iterable of chunks, one chunk in memory at a time.

    Parameters
    ----------
    path : str or path-like
        Target folder of the Zarr store (conventionally ending in ``.zarr``).
    chunks : iterable of (ndarray, ndarray)
        ``(X_chunk, y_chunk)`` pairs in sample order.  Chunk ``i`` must hold
        ``min(chunk_size, n_samples - i * chunk_size)`` rows; ``X_chunk`` has
        ``n_features`` columns.  It may be a generator: it is consumed lazily.
    n_samples, n_features, chunk_size : int
        Shape of ``X`` and the number of samples per Zarr chunk.
    y_dtype : dtype-like
        dtype of ``y`` (``float32`` for regression, an integer dtype for classification).
    attrs : dict
        Group attributes (see :func:`ooc_kernels.data.schema.make_attrs`).
    overwrite : bool, default False
        Replace an existing ``path``.  The old store stays in place until the new one is
        complete, then the two are swapped by renames.
    progress : bool, optional
        Show a progress bar over chunks (default: on an interactive terminal).
    desc : str, optional
        Label of the progress bar.

    Returns
    -------
    pathlib.Path
        The absolute path of the written store.

    Raises
    ------
    DatasetExistsError
        ``path`` exists and ``overwrite`` is False.
    ValidationError
        A chunk has the wrong shape, or the iterable yields too few or too many chunks.
        Nothing is left at ``path`` (or the previous store is kept when overwriting).
    """
    n_samples = _check_positive_int("n_samples", n_samples)
    n_features = _check_positive_int("n_features", n_features)
    chunk_size = min(_check_positive_int("chunk_size", chunk_size), n_samples)
    y_dtype = np.dtype(y_dtype)
    target = Path(os.fspath(path)).expanduser().absolute()
    if target.exists() and not overwrite:
        raise DatasetExistsError(
            f"dataset path {str(target)!r} already exists; pass overwrite=True "
            "(--overwrite on the command line) to replace it, or choose another path"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:12]}"
    total = n_chunks(n_samples, chunk_size)
    try:
        _write_store(tmp, chunks, n_samples=n_samples, n_features=n_features,
                     chunk_size=chunk_size, y_dtype=y_dtype, attrs=attrs, total=total,
                     progress=progress, desc=desc or target.name)
        _move_into_place(tmp, target, overwrite=overwrite)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _write_store(tmp: Path, chunks, *, n_samples, n_features, chunk_size, y_dtype, attrs,
                 total, progress, desc) -> None:
    import zarr

    group = zarr.open_group(str(tmp), mode="w-", zarr_format=3)
    x_arr = group.create_array(
        X_NAME, shape=(n_samples, n_features), chunks=(chunk_size, n_features),
        dtype="float32", dimension_names=(SAMPLE_DIM, FEATURE_DIM),
        compressors=_compressor(), fill_value=0.0, config=_ARRAY_CONFIG)
    y_arr = group.create_array(
        Y_NAME, shape=(n_samples,), chunks=(chunk_size,), dtype=y_dtype,
        dimension_names=(SAMPLE_DIM,), compressors=_compressor(), fill_value=0,
        config=_ARRAY_CONFIG)
    written = 0
    with progress_bar(total=total, desc=desc, enabled=progress, unit="chunk") as bar:
        for index, pair in enumerate(chunks):
            if index >= total:
                raise ValidationError(
                    f"the chunk iterable yielded more than the {total} chunks needed for "
                    f"n_samples={n_samples} with chunk_size={chunk_size}; pass a matching "
                    "n_samples"
                )
            x_chunk, y_chunk = pair
            start, stop = chunk_bounds(index, n_samples, chunk_size)
            rows = stop - start
            x_chunk = np.asarray(x_chunk)
            y_chunk = np.asarray(y_chunk)
            if x_chunk.shape != (rows, n_features):
                raise ValidationError(
                    f"chunk {index}: X has shape {x_chunk.shape}, expected {(rows, n_features)}"
                    f" (chunk_size={chunk_size}, n_samples={n_samples}); yield chunks of "
                    "exactly chunk_size rows except the last"
                )
            if y_chunk.shape != (rows,):
                raise ValidationError(
                    f"chunk {index}: y has shape {y_chunk.shape}, expected {(rows,)}; "
                    "yield one target per row of X"
                )
            x_arr[start:stop] = x_chunk.astype(np.float32, copy=False)
            y_arr[start:stop] = y_chunk.astype(y_dtype, copy=False)
            written = stop
            bar.update(1)
    if written != n_samples:
        raise ValidationError(
            f"the chunk iterable stopped after {written} of n_samples={n_samples} samples; "
            "pass the number of samples it actually yields"
        )
    group.attrs.update(attrs)
    consolidate(tmp)


def consolidate(path: str | os.PathLike) -> None:
    """Write consolidated metadata so ``xr.open_zarr(path)`` opens the store in one read."""
    import zarr

    with warnings.catch_warnings():
        # zarr warns that consolidated metadata is not in the v3 spec yet; xarray uses it
        warnings.simplefilter("ignore")
        zarr.consolidate_metadata(str(path))


def _move_into_place(tmp: Path, target: Path, *, overwrite: bool) -> None:
    if not overwrite and (target.exists() or target.is_symlink()):
        raise DatasetExistsError(
            f"dataset path {str(target)!r} appeared while writing; pass overwrite=True to "
            "replace it"
        )
    replace_dir(tmp, target, overwrite=overwrite)
