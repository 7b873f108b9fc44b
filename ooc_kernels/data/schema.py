"""The ``ooc_kernels`` dataset schema and its lazy validation.

A dataset is a Zarr group holding two arrays chunked along the sample axis only:

========  ========================  ================================================
variable  dims                      dtype
========  ========================  ================================================
``X``     ``("sample", "feature")`` ``float32``; one chunk spans every feature
``y``     ``("sample",)``           ``float32`` (regression) or an integer dtype
                                    (classification); same sample chunks as ``X``
========  ========================  ================================================

and the group attributes ``ooc_kernels_schema_version`` (int), ``task``
(``"classification"`` or ``"regression"``), ``classes`` (sorted label values, classification
only) plus free provenance attributes (``generator``, ``generator_params``, ``random_state``,
``split``).

:func:`validate_dataset` checks all of this from metadata alone: it never reads array data.

Examples
--------
>>> import numpy as np, xarray as xr
>>> from ooc_kernels.data.schema import validate_dataset, SCHEMA_VERSION
>>> ds = xr.Dataset(
...     {"X": (("sample", "feature"), np.zeros((4, 2), np.float32)),
...      "y": (("sample",), np.array([0, 1, 0, 1], np.int32))},
...     attrs={"ooc_kernels_schema_version": SCHEMA_VERSION, "task": "classification",
...            "classes": [0, 1]},
... ).chunk({"sample": 2})
>>> validate_dataset(ds).sizes["sample"]
4
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from ..exceptions import SchemaError, ValidationError

__all__ = [
    "SCHEMA_VERSION",
    "SCHEMA_VERSION_ATTR",
    "X_NAME",
    "Y_NAME",
    "SAMPLE_DIM",
    "FEATURE_DIM",
    "TASKS",
    "validate_dataset",
    "open_zarr_dataset",
    "make_attrs",
]

#: Version of the on-disk layout written by this library.
SCHEMA_VERSION = 1
#: Group attribute holding the schema version.
SCHEMA_VERSION_ATTR = "ooc_kernels_schema_version"
X_NAME = "X"
Y_NAME = "y"
SAMPLE_DIM = "sample"
FEATURE_DIM = "feature"
#: Allowed values of the ``task`` attribute.
TASKS = ("classification", "regression")


def make_attrs(task: str, *, classes: Sequence[Any] | None = None, **provenance: Any) -> dict:
    """Build the group attributes of a dataset following the schema.

    Parameters
    ----------
    task : {"classification", "regression"}
    classes : sequence, optional
        Label values (required for classification); stored sorted and de-duplicated.
    **provenance
        Free JSON-serialisable attributes (``generator``, ``random_state`` ...).

    Returns
    -------
    dict

    Examples
    --------
    >>> make_attrs("classification", classes=[1, 0], split="train")["classes"]
    [0, 1]
    """
    if task not in TASKS:
        raise ValidationError(f"task={task!r} is not supported; use one of {list(TASKS)}")
    attrs: dict[str, Any] = {SCHEMA_VERSION_ATTR: SCHEMA_VERSION, "task": task}
    if task == "classification":
        if classes is None or len(classes) == 0:
            raise ValidationError(
                "classes is required for task='classification'; pass the list of label values"
            )
        attrs["classes"] = sorted({_plain(c) for c in classes})
    attrs.update({k: v for k, v in provenance.items()})
    return attrs


def _plain(value: Any) -> Any:
    """NumPy scalars -> Python scalars (JSON-serialisable attributes)."""
    return value.item() if isinstance(value, np.generic) else value


def _fail(var: str, expected: str, found: Any, fix: str) -> None:
    raise SchemaError(f"variable {var!r}: expected {expected}, found {found}; {fix}")


def _sample_chunks(da: xr.DataArray) -> tuple[int, ...] | None:
    chunks = da.chunks
    return None if chunks is None else tuple(chunks[0])


def validate_dataset(ds: xr.Dataset, *, require_y: bool = True) -> xr.Dataset:
    """Check that ``ds`` follows the ``ooc_kernels`` schema, from metadata only.

    Parameters
    ----------
    ds : xarray.Dataset
        Typically lazy (Dask-backed); in-memory datasets are accepted as well.
    require_y : bool, default True
        Whether the target ``y`` must be present (``False`` for prediction inputs).

    Returns
    -------
    xarray.Dataset
        ``ds`` itself, unchanged, so calls can be chained.

    Raises
    ------
    SchemaError
        Naming the variable, what was expected, what was found and how to fix it.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> ds = xr.Dataset({"X": (("sample", "feature"), np.zeros((3, 2), np.float64))},
    ...                 attrs={"ooc_kernels_schema_version": 1, "task": "regression"})
    >>> validate_dataset(ds, require_y=False)
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.SchemaError: variable 'X': expected dtype float32, found float64; ...
    """
    if not isinstance(ds, xr.Dataset):
        raise SchemaError(
            f"expected an xarray.Dataset, found {type(ds).__name__}; open data with "
            "ooc_kernels.data.open_zarr_dataset or ooc_kernels.data.open_dataset"
        )
    attrs = ds.attrs
    # --- attributes -------------------------------------------------------------------
    version = attrs.get(SCHEMA_VERSION_ATTR)
    if version is None:
        raise SchemaError(
            f"dataset attribute {SCHEMA_VERSION_ATTR!r} is missing (found attributes "
            f"{sorted(attrs)}); write datasets with ooc_kernels.data.write_chunks or set "
            f"ds.attrs[{SCHEMA_VERSION_ATTR!r}] = {SCHEMA_VERSION}"
        )
    if isinstance(version, bool) or not isinstance(version, (int, np.integer)):
        raise SchemaError(
            f"dataset attribute {SCHEMA_VERSION_ATTR!r} must be an int, found {version!r}; "
            f"set it to {SCHEMA_VERSION}"
        )
    if not 1 <= int(version) <= SCHEMA_VERSION:
        raise SchemaError(
            f"unsupported schema version {SCHEMA_VERSION_ATTR}={version!r}; this version of "
            f"ooc_kernels reads versions 1..{SCHEMA_VERSION}: upgrade ooc_kernels or rewrite "
            "the dataset"
        )
    task = attrs.get("task")
    if task not in TASKS:
        raise SchemaError(
            f"dataset attribute 'task' must be one of {list(TASKS)}, found {task!r}; "
            "set ds.attrs['task']"
        )
    if task == "classification":
        classes = attrs.get("classes")
        if classes is None or isinstance(classes, (str, bytes)) or len(classes) == 0:
            raise SchemaError(
                f"dataset attribute 'classes' is required for classification, found "
                f"{classes!r}; set ds.attrs['classes'] to the sorted list of label values"
            )
        classes = list(classes)
        if classes != sorted(set(classes)):
            raise SchemaError(
                f"dataset attribute 'classes' must be sorted and unique, found {classes!r}; "
                f"set it to {sorted(set(classes))!r}"
            )
    # --- X --------------------------------------------------------------------------
    if X_NAME not in ds.variables:
        _fail(X_NAME, "a data variable", f"variables {sorted(map(str, ds.variables))}",
              "name the feature matrix 'X', e.g. ds = ds.rename({'features': 'X'})")
    X = ds[X_NAME]
    if X.dims != (SAMPLE_DIM, FEATURE_DIM):
        _fail(X_NAME, f"dims {(SAMPLE_DIM, FEATURE_DIM)}", f"dims {X.dims}",
              "rename or transpose, e.g. ds.rename({'dim_0': 'sample', 'dim_1': 'feature'})"
              ".transpose('sample', 'feature')")
    if X.dtype != np.float32:
        _fail(X_NAME, "dtype float32", f"{X.dtype}",
              "convert with ds['X'] = ds.X.astype('float32')")
    n_samples, n_features = X.shape
    if n_samples == 0 or n_features == 0:
        _fail(X_NAME, "at least one sample and one feature", f"shape {X.shape}",
              "the dataset is empty: generate or select some samples")
    x_chunks = X.chunks
    if x_chunks is not None and len(x_chunks[1]) > 1:
        _fail(X_NAME, f"a single chunk along {FEATURE_DIM!r}",
              f"{len(x_chunks[1])} chunks {tuple(x_chunks[1])}",
              "rechunk with ds.chunk({'feature': -1})")
    # --- y --------------------------------------------------------------------------
    if Y_NAME not in ds.variables:
        if require_y:
            _fail(Y_NAME, "a data variable (the target)",
                  f"variables {sorted(map(str, ds.variables))}",
                  "add the targets as ds['y'] or pass require_y=False for prediction inputs")
        return ds
    y = ds[Y_NAME]
    if y.dims != (SAMPLE_DIM,):
        _fail(Y_NAME, f"dims {(SAMPLE_DIM,)}", f"dims {y.dims}",
              "store one target per sample along 'sample' (multi-output is not supported)")
    if task == "classification" and not np.issubdtype(y.dtype, np.integer):
        _fail(Y_NAME, "an integer dtype for task='classification'", f"{y.dtype}",
              "encode labels as integers, e.g. ds['y'] = ds.y.astype('int32')")
    if task == "regression" and y.dtype != np.float32:
        _fail(Y_NAME, "dtype float32 for task='regression'", f"{y.dtype}",
              "convert with ds['y'] = ds.y.astype('float32')")
    if y.shape[0] != n_samples:
        _fail(Y_NAME, f"{n_samples} samples (the length of 'X')", f"{y.shape[0]}",
              "X and y must have one row per sample: fix the writer or select matching samples")
    y_chunks = _sample_chunks(y)
    x_sample_chunks = None if x_chunks is None else tuple(x_chunks[0])
    if y_chunks is not None and x_sample_chunks is not None and y_chunks != x_sample_chunks:
        _fail(Y_NAME, f"the same sample chunks as 'X' {_short(x_sample_chunks)}",
              f"{_short(y_chunks)}",
              "rechunk both with ds.chunk({'sample': CHUNK_SIZE})")
    return ds


def _short(chunks: tuple[int, ...]) -> str:
    if len(chunks) <= 6:
        return str(chunks)
    return f"({', '.join(map(str, chunks[:3]))}, ..., {chunks[-1]}) [{len(chunks)} chunks]"


def open_zarr_dataset(path: str | os.PathLike, *, require_y: bool = True) -> xr.Dataset:
    """Open a dataset store lazily (Dask chunks = Zarr chunks) and validate it.

    Parameters
    ----------
    path : str or path-like
        A Zarr group written by :func:`ooc_kernels.data.write_chunks` or
        :func:`ooc_kernels.data.make_dataset`.
    require_y : bool, default True
        Passed to :func:`validate_dataset`.

    Returns
    -------
    xarray.Dataset
        Lazy; nothing but metadata is read.  Every chunk read checks that the chunk file
        exists and decodes (see :mod:`ooc_kernels.data.integrity`): a missing, truncated
        or garbled chunk raises :class:`~ooc_kernels.exceptions.CorruptChunkError` when it
        is read.

    Raises
    ------
    ValidationError
        The path does not exist.
    SchemaError
        The path is not a Zarr group, does not follow the schema, or its consolidated
        metadata lists an array that is missing from the store.

    Examples
    --------
    >>> import tempfile, os
    >>> from ooc_kernels.data import make_dataset
    >>> d = tempfile.mkdtemp()
    >>> p = make_dataset("synthetic_krr_2d", os.path.join(d, "krr.zarr"), 300, chunk_size=100)
    >>> open_zarr_dataset(p).X.chunks
    ((100, 100, 100), (2,))
    """
    p = Path(os.fspath(path)).expanduser()
    if not p.exists():
        raise ValidationError(
            f"dataset path {str(p)!r} does not exist; check the path or create the dataset "
            "with ooc_kernels.data.make_dataset / `ooc-kernels data make`"
        )
    import zarr

    try:
        group = zarr.open_group(str(p), mode="r")
    except Exception as err:  # zarr raises several types for "not a group"
        raise SchemaError(
            f"{str(p)!r} is not a Zarr group ({type(err).__name__}: {err}); point to the "
            "folder of a dataset written by ooc_kernels.data.write_chunks"
        ) from None
    _check_arrays_present(group, p, zarr)
    # xarray refuses arrays of different lengths along one dimension with a generic
    # message: check the lengths on the Zarr metadata first
    shapes = {k: getattr(group.get(k), "shape", None) for k in (X_NAME, Y_NAME)}
    known = all(s for s in shapes.values())  # small: a dict of two array shapes
    if known and shapes[X_NAME][0] != shapes[Y_NAME][0]:
        _fail(Y_NAME, f"{shapes[X_NAME][0]} samples (the length of 'X')",
              f"{shapes[Y_NAME][0]}", "the store is inconsistent: regenerate or rewrite it")
    try:
        with warnings.catch_warnings():
            # stores without consolidated metadata open fine, just a little slower
            warnings.filterwarnings("ignore", message=".*consolidated metadata.*")
            ds = xr.open_zarr(str(p), chunks={}, consolidated=None)
    except Exception as err:
        raise SchemaError(
            f"cannot open {str(p)!r} as an xarray dataset ({type(err).__name__}: {err}); "
            "the arrays need dimension names: rewrite it with ooc_kernels.data.write_chunks"
        ) from None
    validate_dataset(ds, require_y=require_y)
    from .integrity import guard_dataset

    # chunk reads check that each chunk file exists and decodes (CorruptChunkError)
    return guard_dataset(ds)


def _check_arrays_present(group, p: Path, zarr) -> None:
    """Refuse a store whose consolidated metadata lists an array that is gone.

    xarray opens such a store from the consolidated metadata alone and would read the lost
    array as its fill value (zeros) everywhere.
    """
    try:
        real = zarr.open_group(str(p), mode="r", use_consolidated=False)
    except Exception:  # no group metadata outside the consolidated copy: checked below
        real = None
    for name in (X_NAME, Y_NAME):
        listed = group.get(name) is not None
        present = real is not None and real.get(name) is not None
        if listed and not present:
            raise SchemaError(
                f"variable {name!r} is listed in the consolidated metadata of {str(p)!r} but "
                f"its array ({str(p / name)!r}) is missing from the store; the store is "
                "damaged: regenerate it (ooc_kernels.data.make_dataset(..., overwrite=True)) "
                "or restore it from a backup"
            )
