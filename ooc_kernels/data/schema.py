"""Dataset schemas: declared variables with dims, checked by one lazy validator.

A :class:`Schema` is a declared set of :class:`Variable` s.  Three are registered
(:data:`SCHEMAS`):

==============  ==========================================================================
schema          variables (``*``: needed to fit, optional to predict; ``?``: optional)
==============  ==========================================================================
``supervised``  ``X(sample, feature)`` float32, ``y*(sample)`` labels or float32 targets
``factorized``  ``U(sample, rank)`` float32, ``V(rank, feature)`` float32 *whole*,
                ``y*(sample)``: the data matrix is ``A = U V`` (never formed)
``triplets``    ``triplets(triplet, corner)`` integer, ``corner`` of length 3: row indices
                ``(anchor, similar, dissimilar)`` into ``X``; ``triplet_task?(triplet)``
                integer (multi-task); ``X(sample, feature)`` float32 and ``y?(sample)``
                labels, both *whole* (chunked along ``sample`` on their own)
==============  ==========================================================================

Variables whose first dimension is the schema's sample axis (``sample``; ``triplet`` for
``triplets``) are chunked along it only and share their chunks; *whole* variables are not
chunked along it and are given whole to every task (or gathered by index).  Group
attributes, all optional: ``ooc_kernels_schema_version`` (written by this library; its
presence makes the rules strict: canonical dim names and the declared dtypes), ``task``
(``"classification"`` or ``"regression"``, else inferred from ``y``'s dtype),
``classes`` (sorted labels, else found in ``y`` by the estimator),
``ooc_kernels_schema`` (the schema's name) and ``ooc_kernels_variables`` (which dataset
variables hold the schema's variables, e.g. ``{"X": "features", "y": "label"}``).

A dataset without the version attribute (``ds.to_zarr()``, an in-memory Dataset) may use
any names: its variables are found by the declaration, its dims by position (the first dim
of ``X`` is its sample axis, ``y`` must share it), and any numeric dtype is accepted.

:func:`validate_dataset` checks all of this from metadata alone, never reading array data,
and raises one :class:`~ooc_kernels.exceptions.SchemaError` listing every problem, each
with the fix that works for the input at hand (see :class:`Context`).

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

Any names, declared:

>>> user = xr.Dataset({"features": (("time", "channel"), np.zeros((4, 3))),
...                    "label": (("time",), np.arange(4) % 2)},
...                   attrs={"ooc_kernels_variables": {"X": "features", "y": "label"}})
>>> validate_dataset(user) is user
True
"""


from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from .._atomic import sweep_stale
from .._paths import user_path
from .._untrusted import clip, refuse_large_metadata
from ..exceptions import SchemaError, ValidationError
from ._checker import ArrayInfo, Resolved, check_arrays
from ._fixes import Context
from .declarations import (
    DECLARATION_KEY,
    FACTORIZED,
    FEATURE_DIM,
    SAMPLE_DIM,
    SCHEMA_ATTR,
    SCHEMA_VERSION,
    SCHEMA_VERSION_ATTR,
    SCHEMAS,
    SUPERVISED,
    TASKS,
    TRIPLETS,
    VARIABLES_ATTR,
    X_NAME,
    Y_NAME,
    Schema,
    Variable,
    get_schema,
    infer_task,
    not_a_label,
    make_attrs,
    register_schema,
)

__all__ = [
    "SCHEMA_VERSION", "SCHEMA_VERSION_ATTR", "SCHEMA_ATTR", "VARIABLES_ATTR",
    "DECLARATION_KEY", "X_NAME", "Y_NAME", "SAMPLE_DIM", "FEATURE_DIM", "TASKS",
    "Variable", "Schema", "Context", "ArrayInfo", "Resolved",
    "SUPERVISED", "FACTORIZED", "TRIPLETS", "SCHEMAS", "get_schema", "register_schema",
    "validate_dataset", "check_dataset", "check_arrays", "apply_declaration", "sample_dim",
    "DECLARATION_FIELDS", "make_declaration",
    "infer_task", "open_zarr_dataset", "make_attrs",
]


def check_dataset(ds: xr.Dataset, schema: Schema | str | None = None, *, require: Any = "fit",
                  variables: Mapping[str, str] | None = None,
                  context: Any = None) -> Resolved:
    """:func:`validate_dataset`, returning what it resolved (names, dims, task)."""
    if not isinstance(ds, xr.Dataset):
        raise SchemaError(
            f"expected an xarray.Dataset, found {type(ds).__name__}; open data with "
            "ooc_kernels.data.open_zarr_dataset or ooc_kernels.data.open_dataset"
        )
    return check_arrays({str(k): ArrayInfo.of(v) for k, v in ds.variables.items()}, schema,
                        attrs=ds.attrs, require=require, variables=variables, context=context,
                        listed=[str(k) for k in ds.data_vars])


def validate_dataset(ds: xr.Dataset, schema: Schema | str | None = None, *,
                     require: Any = "fit", variables: Mapping[str, str] | None = None,
                     context: Any = None, require_y: bool | None = None) -> xr.Dataset:
    """Check that ``ds`` follows ``schema``, from metadata only; report every problem.

    Parameters
    ----------
    ds : xarray.Dataset
        Typically lazy (Dask-backed); in-memory datasets are accepted as well.
    schema : Schema or str, optional
        Default: the dataset's ``ooc_kernels_schema`` attribute, else :data:`SUPERVISED`.
    require : {"fit", "predict"} or iterable of str, default "fit"
        ``"predict"``: the targets may be absent; or the names that must be present.
    variables : mapping, optional
        Schema variable -> dataset variable (``{"X": "features", "y": "label"}``);
        default: the dataset's ``ooc_kernels_variables`` attribute, else the same names.
    context : Context, str or path-like, optional
        Where ``ds`` came from, so that each fix works for it: ``"xarray"`` (default, a
        Dataset in hand), a store path, or a :class:`Context`.
    require_y : bool, optional
        Shorthand for ``require="fit"`` (True) or ``"predict"`` (False).

    Returns
    -------
    xarray.Dataset
        ``ds`` itself, unchanged, so calls can be chained.

    Raises
    ------
    SchemaError
        One error listing every problem (variable, what was expected, what was found, the
        fix); its ``problems`` attribute holds them one by one.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> ds = xr.Dataset({"X": (("sample", "feature"), np.zeros((3, 2), np.float64))},
    ...                 attrs={"ooc_kernels_schema_version": 1, "task": "regression"})
    >>> validate_dataset(ds, require_y=False)
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.SchemaError: variable 'X': expected dtype float32, found float64; ...

    Several problems are reported together:

    >>> bad = xr.Dataset({"X": (("sample", "feature"), np.zeros((4, 3), np.float32)),
    ...                   "y": (("sample",), np.zeros(4, np.float64))},
    ...                  attrs={"ooc_kernels_schema_version": 1, "task": "ranking"}
    ...                  ).chunk({"feature": 1})
    >>> try:
    ...     validate_dataset(bad)
    ... except Exception as err:
    ...     print(len(err.problems))
    3
    """
    if require_y is not None:
        require = "fit" if require_y else "predict"
    check_dataset(ds, schema, require=require, variables=variables, context=context)
    return ds


def sample_dim(ds: xr.Dataset, schema: Schema | str | None = None,
               variables: Mapping[str, str] | None = None) -> str:
    """The dataset's own name of the sample axis (the first dim of its ``X``).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> sample_dim(xr.Dataset({"f": (("time", "channel"), np.zeros((2, 3)))},
    ...                       attrs={"ooc_kernels_variables": {"X": "f"}}))
    'time'
    """
    schema = get_schema(schema, ds.attrs)
    decl = variables if variables is not None else ds.attrs.get(VARIABLES_ATTR)
    decl = decl if isinstance(decl, Mapping) else {}
    for v in schema.sample_variables:
        name = decl.get(v.name, v.name)
        if name in ds.variables and ds[name].ndim:
            return str(ds[name].dims[0])
    return schema.sample_dim


#: The keys of a declaration (a catalog entry's ``ooc_kernels`` metadata).
DECLARATION_FIELDS = ("schema", "variables", "task", "classes")


def make_declaration(variables: Mapping[str, str] | None = None, *, schema: str | None = None,
                     task: str | None = None, classes: Any = None,
                     where: str = "the declaration") -> dict[str, Any]:
    """A checked declaration, as written under a catalog entry's ``ooc_kernels`` metadata.

    Only the arguments given appear in the result.  Nothing is read: whether the store has
    the declared variables is checked when the entry is opened.

    Parameters
    ----------
    variables : mapping of str to str, optional
        Schema variable -> the store's variable, e.g. ``{"X": "features", "y": "label"}``.
        The schema variables must be those of ``schema`` (when given) or of a registered
        schema.
    schema : str, optional
        A registered schema name (``"supervised"``, ``"factorized"``, ``"triplets"``).
    task : {"classification", "regression"}, optional
    classes : sequence, optional
        The label values, sorted and unique (numbers or strings).
    where : str
        What is being declared, for the error messages.

    Returns
    -------
    dict
        With the keys among ``schema``, ``variables``, ``task``, ``classes`` that were given,
        as plain YAML data.

    Raises
    ------
    SchemaError
        A value of the wrong type, an unknown schema or schema variable, an empty name, a
        task outside ``TASKS``, classes that are not sorted and unique.

    Examples
    --------
    >>> make_declaration({"X": "features", "y": "label"}, task="classification")
    {'variables': {'X': 'features', 'y': 'label'}, 'task': 'classification'}
    >>> make_declaration({"x": "features"})
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.SchemaError: the declaration names the schema variable 'x', ...
    """
    out: dict[str, Any] = {}
    if schema is not None:
        if not isinstance(schema, str) or schema not in SCHEMAS:
            raise SchemaError(f"{where}: unknown schema {schema!r}; registered schemas: "
                              f"{sorted(SCHEMAS)}")
        out["schema"] = schema
    if variables is not None:
        if not isinstance(variables, Mapping) or not variables:
            raise SchemaError(
                f"{where}: variables must be a non-empty mapping from schema variables to "
                f"the store's variables, found {variables!r}; e.g. "
                "{'X': 'features', 'y': 'label'} (command line: --var X=features --var y=label)")
        known = SCHEMAS[schema].names if schema is not None else \
            sorted({n for s in SCHEMAS.values() for n in s.names})
        mapping = {}
        for key, value in variables.items():
            if not isinstance(key, str) or key not in known:
                of = f"the {schema!r} schema" if schema is not None else "the registered schemas"
                raise SchemaError(
                    f"{where} names the schema variable {key!r}, which is not a variable of "
                    f"{of}; use one of {known}, e.g. X=features (schema variable = the "
                    "store's variable)")
            if not isinstance(value, str) or not value.strip():
                raise SchemaError(
                    f"{where} maps {key!r} to {value!r}; give the name of a variable of the "
                    f"store, e.g. {key}=features")
            mapping[key] = value
        out["variables"] = mapping
    if task is not None:
        if task not in TASKS:
            raise SchemaError(f"{where}: task must be one of {list(TASKS)}, found {task!r}")
        out["task"] = task
    if classes is not None:
        values = list(classes) if isinstance(classes, (list, tuple, np.ndarray)) else None
        plain = values is not None and len(values) > 0 and all(
            isinstance(c, (str, int, float, np.integer, np.floating))
            and not isinstance(c, (bool, np.bool_)) for c in values)
        if not plain:
            raise SchemaError(f"{where}: classes must be a non-empty list of label values "
                              f"(numbers or strings), found {classes!r}; e.g. [0, 1]")
        values = [c.item() if isinstance(c, np.generic) else c for c in values]
        odd = [c for c in values if not_a_label(c)]
        if odd:   # a classifier's labels: NaN, inf, 0.5 or 1e300 is no class it can hold
            raise SchemaError(
                f"{where}: classes must be labels, integers or strings, found {odd[0]!r} in "
                f"{values!r}; a label is not a fraction, infinite, NaN or beyond 2**53 "
                "(a --classes value such as 1e400 is read as a number): write the labels "
                "the store's y holds, e.g. [0, 1]")
        try:
            good = sorted(set(values))
        except TypeError:
            good = None
        if values != good:
            raise SchemaError(f"{where}: classes must be sorted and unique, found {values!r}"
                              + (f"; use {good!r}" if good is not None else
                                 "; use labels of one type (all numbers or all strings)"))
        out["classes"] = values
    return out


def apply_declaration(ds: xr.Dataset, declaration: Any, where: str = "the declaration"
                      ) -> xr.Dataset:
    """``ds`` with a declaration (a catalog entry's ``ooc_kernels`` metadata) in its attrs.

    ``declaration`` maps ``schema`` (a name), ``variables`` (schema variable -> dataset
    variable), ``task`` and ``classes``; the latter two fill in what the store does not
    record (a store that records another value is an error).  Nothing is read.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> ds = xr.Dataset({"f": (("t", "c"), np.zeros((2, 3)))})
    >>> apply_declaration(ds, {"variables": {"X": "f"}}).attrs
    {'ooc_kernels_variables': {'X': 'f'}}
    """
    if declaration is None:
        return ds
    allowed = DECLARATION_FIELDS
    if not isinstance(declaration, Mapping) or set(map(str, declaration)) - set(allowed):
        extra = sorted(set(map(str, declaration)) - set(allowed)) \
            if isinstance(declaration, Mapping) else None
        raise SchemaError(
            f"{where} must be a mapping with keys among {list(allowed)}, found "
            f"{declaration!r}" + (f" (unknown keys {extra})" if extra else "")
            + "; e.g. ooc_kernels: {variables: {X: features, y: label}}"
        )
    new: dict[str, Any] = {}
    if declaration.get("schema") is not None:
        get_schema(declaration["schema"])  # a registered name
        new[SCHEMA_ATTR] = declaration["schema"]
    if declaration.get("variables") is not None:
        new[VARIABLES_ATTR] = dict(declaration["variables"]) \
            if isinstance(declaration["variables"], Mapping) else declaration["variables"]
    for key in ("task", "classes"):
        if declaration.get(key) is not None:
            new[key] = declaration[key]
    conflicts = [f"{k}: the store has {ds.attrs[k]!r}, {where} {v!r}" for k, v in new.items()
                 if k in ("task", "classes", SCHEMA_ATTR) and k in ds.attrs
                 and ds.attrs[k] != v]
    if conflicts:
        raise SchemaError(f"{where} contradicts the store's attributes ({'; '.join(conflicts)}); "
                          "remove one of the two")
    return ds.assign_attrs(new) if new else ds


# --------------------------------------------------------------------------- opening
def _zarr_infos(group) -> dict[str, ArrayInfo] | None:
    """The metadata of a Zarr group's arrays, None when some array has no dim names."""
    out = {}
    for name, arr in group.arrays():
        dims = getattr(arr.metadata, "dimension_names", None) \
            or arr.attrs.get("_ARRAY_DIMENSIONS")
        if not dims or len(dims) != arr.ndim:
            return None
        chunks = tuple(tuple([c] * (n // c) + ([n % c] if n % c else [])) if n else (0,)
                       for n, c in zip(arr.shape, arr.chunks))
        out[str(name)] = ArrayInfo(tuple(map(str, dims)), tuple(arr.shape),
                                   np.dtype(arr.dtype), chunks)
    return out


def open_zarr_dataset(path: str | os.PathLike, *, require_y: bool = True,
                      schema: Schema | str | None = None,
                      variables: Mapping[str, str] | None = None) -> xr.Dataset:
    """Open a dataset store lazily (Dask chunks = Zarr chunks) and validate it.

    Parameters
    ----------
    path : str or path-like
        A Zarr group: written by :func:`ooc_kernels.data.write_chunks` /
        :func:`ooc_kernels.data.make_dataset`, or by ``ds.to_zarr()`` with any names.
    require_y : bool, default True
        Whether the targets must be present (False for prediction inputs).
    schema : Schema or str, optional
        Default: the store's ``ooc_kernels_schema`` attribute, else ``"supervised"``.
    variables : mapping, optional
        Schema variable -> store variable, e.g. ``{"X": "features", "y": "label"}``
        (default: the store's ``ooc_kernels_variables`` attribute, else the same names).
        Kept in the returned Dataset's ``ooc_kernels_variables`` attribute, so the
        estimators find the variables.

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
        The path is not a Zarr group, does not follow the schema (every problem listed,
        with fixes that rewrite the store or declare its names), or its consolidated
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
    p = user_path(path)
    if not p.exists():
        sweep_stale(p)  # a swap killed between its renames: the previous store goes back
    if not p.exists():
        raise ValidationError(
            f"dataset path {str(p)!r} does not exist; check the path or create the dataset "
            "with ooc_kernels.data.make_dataset / `ooc-kernels data make`"
        )
    import zarr

    # a metadata file of terabytes (a sparse file) is refused before zarr reads it whole
    refuse_large_metadata(p, what=f"dataset {str(p)!r}", error=SchemaError,
                          fix="the store's metadata was edited or damaged: rewrite the store "
                              "with ooc_kernels.data.write_chunks or restore it from a backup")
    try:
        group = zarr.open_group(str(p), mode="r")
    except Exception as err:  # zarr raises several types for "not a group"
        raise SchemaError(
            f"{str(p)!r} is not a Zarr group ({type(err).__name__}: {err}); point to the "
            "folder of a dataset written by ooc_kernels.data.write_chunks"
        ) from None
    _check_arrays_present(group, p, zarr)
    ctx = Context("store", path=str(p))
    require = "fit" if require_y else "predict"
    try:
        with warnings.catch_warnings():
            # stores without consolidated metadata open fine, just a little slower
            warnings.filterwarnings("ignore", message=".*consolidated metadata.*")
            ds = xr.open_zarr(str(p), chunks={}, consolidated=None)
    except Exception as err:
        # xarray refuses e.g. arrays of different lengths along one dim with a generic
        # message: the checker names every problem from the Zarr metadata
        infos = _zarr_infos(group)
        if infos is not None:
            attrs = dict(group.attrs)
            check_arrays(infos, schema, attrs=attrs, require=require, variables=variables,
                         context=ctx, listed=[n for n in infos if n not in
                                              {d for i in infos.values() for d in i.dims}])
        raise SchemaError(
            f"cannot open {str(p)!r} as an xarray dataset ({type(err).__name__}: {err}); "
            "the arrays need dimension names: rewrite it with ooc_kernels.data.write_chunks"
        ) from None
    validate_dataset(ds, schema, require=require, variables=variables, context=ctx)
    new = {}
    if variables is not None:
        new[VARIABLES_ATTR] = dict(variables)
    if schema is not None and SCHEMA_ATTR not in ds.attrs:
        new[SCHEMA_ATTR] = get_schema(schema).name
    if new:
        ds = ds.assign_attrs(new)
    from .integrity import guard_dataset

    # chunk reads check that each chunk file exists and decodes (CorruptChunkError)
    return guard_dataset(ds)


def _check_arrays_present(group, p: Path, zarr) -> None:
    """Refuse a store whose consolidated metadata lists an array that is gone.

    xarray opens such a store from the consolidated metadata alone and would read the lost
    array as its fill value (zeros) everywhere.
    """
    from .._checksums import open_arrays
    from ._store_limits import check_store_limits

    try:
        real = zarr.open_group(str(p), mode="r", use_consolidated=False)
    except Exception:  # no group metadata outside the consolidated copy: checked below
        real = None
    fix = ("the store is damaged: regenerate it (ooc_kernels.data.make_dataset(..., "
           "overwrite=True)) or restore it from a backup")
    # every array's own metadata file parsed one by one: a damaged one is named
    arrays = open_arrays(real if real is not None else group, where=f"dataset {str(p)!r}",
                         error=SchemaError, fix=fix)
    # chunk counts and sizes from the metadata alone, before xarray builds a Dask array
    check_store_limits(real if real is not None else group, where=f"dataset {str(p)!r}")
    try:
        listed = sorted(group.array_keys())  # the consolidated copy's list, when there is one
    except Exception as err:
        raise SchemaError(
            f"the consolidated metadata of dataset {str(p)!r} cannot be read "
            f"({type(err).__name__}: {str(err)[:300]}); {fix}"
        ) from None
    for name in listed:
        if real is None or name not in arrays:
            raise SchemaError(
                f"variable {name!r} is listed in the consolidated metadata of {str(p)!r} but "
                f"its array ({str(p / name)!r}) is missing from the store; the store is "
                "damaged: regenerate it (ooc_kernels.data.make_dataset(..., overwrite=True)) "
                "or restore it from a backup"
            )
        copy, own = _described(group[name]), _described(arrays[name])
        if copy != own:
            keys = sorted(k for k in set(copy) | set(own) if copy.get(k) != own.get(k))
            raise SchemaError(
                f"the consolidated metadata of {str(p)!r} describes variable {name!r} "
                f"otherwise than its own metadata file ({name}/zarr.json): "
                + "; ".join(f"{k} {clip(copy.get(k))} there, {clip(own.get(k))} in the "
                            "array's file" for k in keys)
                + f" (xarray would read the array as the consolidated copy says); {fix}; if "
                f"the array's file was edited on purpose, consolidate again: "
                f"zarr.consolidate_metadata({str(p)!r})"
            )


def _described(array) -> dict:
    """What zarr reads an array by (shape, data type, chunks, codecs, fill value, dimension
    names ...: its metadata without the user attributes), each value as JSON text."""
    meta = array.metadata.to_dict()
    return {k: json.dumps(v, sort_keys=True, default=repr) for k, v in meta.items()
            if k != "attributes"}
