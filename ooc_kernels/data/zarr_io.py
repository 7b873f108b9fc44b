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
>>> chunks = ({"X": np.full((2, 3), i, np.float32), "y": np.full(2, i, np.float32)}
...           for i in range(3))
>>> path = write_chunks(os.path.join(tempfile.mkdtemp(), "tiny.zarr"), chunks,
...                     n_samples=6, chunk_size=2, sizes={"feature": 3},
...                     dtypes={"y": "float32"}, attrs=make_attrs("regression"))
>>> open_zarr_dataset(path).y.values.tolist()   # small: a 6-row example
[0.0, 0.0, 1.0, 1.0, 2.0, 2.0]

A factorized dataset ``A = U V``: ``V`` has no sample axis and is written whole.

>>> V = np.eye(2, 5, dtype=np.float32)
>>> chunks = ({"U": np.ones((2, 2), np.float32), "y": np.zeros(2, np.float32)}
...           for _ in range(3))
>>> path = write_chunks(os.path.join(tempfile.mkdtemp(), "uv.zarr"), chunks, n_samples=6,
...                     chunk_size=2, schema="factorized", whole={"V": V},
...                     dtypes={"y": "float32"}, attrs=make_attrs("regression"))
>>> dict(open_zarr_dataset(path).sizes)
{'sample': 6, 'rank': 2, 'feature': 5}
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .._atomic import KIND_ATTR, atomic_dir
from .._paths import user_path
from .._progress import progress_bar
from ..exceptions import DatasetExistsError, ValidationError
from ._checker import _dtype_ok, _dtype_words
from .declarations import (
    _DTYPE_CLASSES,
    FEATURE_DIM,
    SCHEMA_ATTR,
    SCHEMA_VERSION,
    SCHEMA_VERSION_ATTR,
    Schema,
    Variable,
    get_schema,
    infer_task,
)

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
    from ooc_kernels._checksums import compressors

    return compressors()  # the codecs of saved models and checkpoints too


#: Every chunk is written, even one equal to the fill value, so a missing chunk file is
#: always damage (zarr would otherwise read it back as the fill value, silently).
_ARRAY_CONFIG = {"write_empty_chunks": True}


def write_chunks(
    path: str | os.PathLike,
    chunks: Iterable[Mapping[str, np.ndarray] | tuple[np.ndarray, ...]],
    *,
    n_samples: int,
    chunk_size: int,
    attrs: dict,
    schema: Schema | str | None = None,
    sizes: Mapping[str, int] | None = None,
    dtypes: Mapping[str, Any] | None = None,
    whole: Mapping[str, Any] | None = None,
    n_features: int | None = None,
    y_dtype: Any = None,
    overwrite: bool = False,
    progress: bool | None = None,
    desc: str | None = None,
) -> Path:
    """Write a dataset store from an iterable of chunks, one chunk in memory at a time.

    Parameters
    ----------
    path : str, bytes or path-like
        Target folder of the Zarr store (conventionally ending in ``.zarr``).
    chunks : iterable of dict
        In sample order, one ``{name: array}`` per chunk holding every variable the schema
        chunks along its sample axis (``X`` and ``y``; ``U`` and ``y``; ``triplets`` ...).
        Chunk ``i`` must hold ``min(chunk_size, n_samples - i * chunk_size)`` rows.  For
        the supervised schema, ``(X_chunk, y_chunk)`` pairs are accepted too.  It may be a
        generator: it is consumed lazily.
    n_samples, chunk_size : int
        Length of the sample axis and the number of samples per Zarr chunk.
    attrs : dict
        Group attributes (see :func:`ooc_kernels.data.schema.make_attrs`); the schema
        version and name are added.
    schema : Schema or str, default "supervised"
        The declaration: names, dims and dtype rules of the variables.
    sizes : mapping, optional
        Lengths of the other dims, e.g. ``{"feature": 64}`` (those of whole variables and
        fixed sizes such as ``corner=3`` are known).
    dtypes : mapping, optional
        dtype of each variable, where the schema does not fix one (``{"y": "int32"}``); an
        optional variable is written when it is named here or in ``whole``.
    whole : mapping, optional
        Variables without a sample axis (``V`` of a factorized dataset, ``X`` of triplets),
        given in memory and written once.
    n_features, y_dtype
        Shorthands for ``sizes={"feature": n_features}`` and ``dtypes={"y": y_dtype}``.
    overwrite : bool, default False
        Replace an existing ``path``.  The old store stays in place until the new one is
        complete, then the two are swapped by renames.  Only a dataset this library wrote
        is ever replaced: a folder of other files, a file, another Zarr store or a symbolic
        link raises :class:`~ooc_kernels.exceptions.ForeignPathError` before any writing.
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
    ForeignPathError
        ``overwrite`` is True and ``path`` is not a dataset written by this library.
    ValidationError
        The declaration is incomplete or breaks the schema (checked before anything is
        written), a chunk misses a variable or has the wrong shape, or the iterable yields
        too few or too many chunks.  Nothing is left at ``path`` (or the previous store is
        kept when overwriting).
    """
    schema = get_schema(schema)
    n_samples = _check_positive_int("n_samples", n_samples)
    chunk_size = min(_check_positive_int("chunk_size", chunk_size), n_samples)
    sizes = dict(sizes or {})
    if n_features is not None:
        sizes[FEATURE_DIM] = _check_positive_int("n_features", n_features)
    dtypes = dict(dtypes or {})
    if y_dtype is not None:
        dtypes.setdefault("y", y_dtype)
    plan = _plan(schema, n_samples, chunk_size, sizes, dtypes, dict(whole or {}), attrs)
    target = user_path(path).absolute()
    _check_chunk_limits(plan, target)
    if (target.exists() or target.is_symlink()) and not overwrite:
        raise DatasetExistsError(
            f"dataset path {str(target)!r} already exists; pass overwrite=True "
            "(--overwrite on the command line) to replace it, or choose another path"
        )
    total = n_chunks(n_samples, chunk_size)
    attrs = {SCHEMA_VERSION_ATTR: SCHEMA_VERSION, SCHEMA_ATTR: schema.name, **attrs,
             KIND_ATTR: "dataset"}
    # only a dataset this library wrote is ever replaced (anything else: ForeignPathError)
    with atomic_dir(target, kind="dataset", overwrite=overwrite) as tmp:
        _write_store(tmp, chunks, plan, n_samples=n_samples, chunk_size=chunk_size,
                     attrs=attrs, total=total, progress=progress, desc=desc or target.name)
    return target


def _check_chunk_limits(plan: list, target: Path) -> None:
    """Refuse, before anything is written, a store that could not be opened: an array of
    more than :data:`~ooc_kernels.data._store_limits.MAX_CHUNKS` chunks, or one chunk of
    more bytes than the machine's memory (a chunk is built in memory to be written, and
    read whole)."""
    from .._memory import physical_memory, size_text
    from ._store_limits import MAX_CHUNKS

    limit = physical_memory()
    for p in plan:
        count = int(np.prod([-(-n // c) for n, c in zip(p.shape, p.chunks)], dtype=object))
        n_bytes = p.dtype.itemsize * int(np.prod(p.chunks, dtype=object))
        if count > MAX_CHUNKS or (limit is not None and n_bytes > limit):
            why = (f"{count} chunks, more than the {MAX_CHUNKS} a dataset may have"
                   if count > MAX_CHUNKS else f"chunks of {size_text(n_bytes)}, more than "
                   f"the {size_text(limit)} of memory of this machine (a chunk is built "
                   "and read whole)")
            raise ValidationError(
                f"cannot write the dataset {str(target)!r}: {p.var.name!r} of shape "
                f"{p.shape} in chunks of shape {p.chunks} would have {why}; nothing was "
                "written. Give another chunk_size, or smaller sizes (n_features ...)")


class _Planned:
    """One variable to write: its declaration, shape, dtype, Zarr chunks, whole value."""

    def __init__(self, var: Variable, shape: tuple, dtype: np.dtype, chunks: tuple,
                 value: Any = None):
        self.var, self.shape, self.dtype, self.chunks, self.value = (var, shape, dtype,
                                                                     chunks, value)


def _plan(schema: Schema, n_samples: int, chunk_size: int, sizes: dict, dtypes: dict,
          whole: dict, attrs: Mapping) -> list[_Planned]:
    """What to write, checked against the schema before anything is written."""
    unknown = sorted((set(dtypes) | set(whole)) - set(schema.names))
    bad_whole = sorted(n for n in whole if n in schema and not schema[n].whole)
    if unknown or bad_whole:
        raise ValidationError(
            f"the {schema.name!r} schema has no variable(s) {unknown}" if unknown else
            f"variable(s) {bad_whole} of the {schema.name!r} schema are chunked along "
            f"{schema.sample_dim!r}: yield them in the chunks, not in whole="
        )
    sizes[schema.sample_dim] = n_samples
    for name, value in whole.items():
        value = whole[name] = np.asarray(value)  # small by definition: given in memory
        var = schema[name]
        if value.ndim != len(var.dims):
            raise ValidationError(f"whole variable {name!r} has shape {value.shape}; the "
                                  f"{schema.name!r} schema declares {var}")
        for dim, n in zip(var.dims, value.shape):
            if sizes.setdefault(dim, n) != n:
                raise ValidationError(f"whole variable {name!r} has {n} entries along {dim!r}, "
                                      f"but sizes gives {sizes[dim]}; make them agree")
    task = attrs.get("task") if attrs.get("task") in ("classification", "regression") else None
    plan = []
    for var in schema.variables:
        if var.whole and var.name not in whole:
            if var.required == "always":
                raise ValidationError(f"the {schema.name!r} schema needs the whole variable "
                                      f"{var}: pass whole={{{var.name!r}: array}}")
            continue
        if not var.whole and var.required == "optional" and var.name not in dtypes:
            continue
        given = dtypes.get(var.name)
        seen = given if given is not None else \
            (whole[var.name].dtype if var.name in whole else None)
        rule_task = task or (infer_task(seen) if seen is not None and var.name ==
                             schema.target else None)
        kinds, strict = var.rule(rule_task if var.name == schema.target else None)
        if given is None:  # the schema's dtype, else that of the whole array
            given = strict if strict not in (None, *_DTYPE_CLASSES) else seen
        if given is None:
            raise ValidationError(f"give the dtype of {var.name!r}: dtypes={{{var.name!r}: "
                                  f"...}} ({_dtype_words(kinds, strict)})")
        dtype = np.dtype(given)
        if not _dtype_ok(dtype, kinds, strict):
            raise ValidationError(
                f"{var.name!r} as {dtype} breaks the {schema.name!r} schema, whose stores hold "
                f"{_dtype_words(kinds, strict)}"
                + (f" for task={rule_task!r}" if var.name == schema.target and rule_task
                   else "") + "; pass another dtype in dtypes")
        missing = [d for d in var.dims if d not in sizes and d not in var.sizes]
        if missing:
            raise ValidationError(f"give the length of {missing[0]!r} for {var}: "
                                  f"sizes={{{missing[0]!r}: N}}")
        shape = tuple(var.sizes.get(d, sizes.get(d)) for d in var.dims)
        along = var.dims[0] if not var.whole else var.chunked_along
        chunks = tuple(min(chunk_size, n) if d == along else n for d, n in zip(var.dims, shape))
        plan.append(_Planned(var, shape, dtype, tuple(max(c, 1) for c in chunks),
                             whole.get(var.name)))
    return plan


def _as_dict(item: Any, names: list[str], index: int) -> Mapping:
    if isinstance(item, Mapping):
        if set(item) != set(names):
            raise ValidationError(
                f"chunk {index} holds the variables {sorted(map(str, item))}, expected "
                f"{sorted(names)}; yield one dict with exactly these"
            )
        return item
    if isinstance(item, (tuple, list)) and len(item) == len(names):
        return dict(zip(names, item))
    raise ValidationError(
        f"chunk {index} is a {type(item).__name__}; yield a dict of the variables {names} "
        "(or a tuple in that order)"
    )


def _write_store(tmp: Path, chunks, plan: list[_Planned], *, n_samples, chunk_size, attrs,
                 total, progress, desc) -> None:
    import zarr

    group = zarr.open_group(str(tmp), mode="w-", zarr_format=3)
    arrays = {}
    for p in plan:
        arrays[p.var.name] = arr = group.create_array(
            p.var.name, shape=p.shape, chunks=p.chunks, dtype=p.dtype,
            dimension_names=p.var.dims, compressors=_compressor(),
            fill_value=p.dtype.type(0), config=_ARRAY_CONFIG)
        if p.value is not None:
            arr[...] = p.value.astype(p.dtype, copy=False)
    names = [p.var.name for p in plan if p.value is None]
    shapes = {p.var.name: p.shape[1:] for p in plan if p.value is None}
    written = 0
    with progress_bar(total=total, desc=desc, enabled=progress, unit="chunk",
                      log_lines=10) as bar:
        for index, item in enumerate(chunks):
            if index >= total:
                raise ValidationError(
                    f"the chunk iterable yielded more than the {total} chunks needed for "
                    f"n_samples={n_samples} with chunk_size={chunk_size}; pass a matching "
                    "n_samples"
                )
            item = _as_dict(item, names, index)
            start, stop = chunk_bounds(index, n_samples, chunk_size)
            values = {}
            for name in names:
                value = np.asarray(item[name])  # one chunk
                expected = (stop - start, *shapes[name])
                if value.shape != expected:
                    raise ValidationError(
                        f"chunk {index}: {name} has shape {value.shape}, expected {expected} "
                        f"(chunk_size={chunk_size}, n_samples={n_samples}); yield chunks of "
                        "exactly chunk_size rows except the last, the same rows in every "
                        "variable"
                    )
                values[name] = value
            for name, value in values.items():
                arrays[name][start:stop] = value.astype(arrays[name].dtype, copy=False)
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
        zarr.consolidate_metadata(str(user_path(path)))


