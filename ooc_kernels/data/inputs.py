"""Every input the estimators accept, seen as a :class:`~ooc_kernels.parallel.chunked.ChunkedData`.

:func:`as_chunked` turns NumPy arrays, pandas DataFrames, Dask arrays, Dask DataFrames, an
``xarray.Dataset`` or ``DataArray`` and an Intake reader into named lazy variables (``X``
chunked along samples only and an optional ``y`` with the same chunks).  Nothing is read
here: chunks are loaded by the tasks that use them (a Dask DataFrame costs one pass for its
partition lengths, see :func:`as_chunked`).  Factorized data ``A = U V``, a
:class:`~ooc_kernels.data.factorized.Factorized` or a Dataset of the ``factorized`` schema,
becomes the sample variables ``U`` and ``y`` and the whole variable ``V``.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.data.inputs import as_chunked
>>> data = as_chunked(np.zeros((10, 3)), np.arange(10), chunk_size=4)
>>> data.chunk_sizes, sorted(data.variables)
((4, 4, 2), ['X', 'y'])
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

import dask.array as da
import numpy as np

from ooc_kernels.data._frames import (
    _dask_frame_kind,
    _dask_frames_to_arrays,
    _frame_to_array,
    _frame_y,
    _partition_lengths,
    frame_feature_names,
    non_numeric_frame_error,
)
from ooc_kernels.data._fill_values import warn_masked_zeros
from ooc_kernels.data._zarr_arrays import as_dask, is_zarr_array
from ooc_kernels.data.factorized import Factorized
from ooc_kernels.exceptions import InvalidDataError, SchemaError, ValidationError
from ooc_kernels.parallel.chunked import ChunkedData, ContentName

__all__ = ["as_chunked", "is_lazy_input", "model_input", "pair_samples", "wrap_prediction",
           "SUPERVISED_DIMS", "TWO_SAMPLE_DIMS"]

#: Dimension names of the supervised variables handed to the engine.
SUPERVISED_DIMS = {"X": ("sample", "feature"), "y": ("sample",)}
#: Dimension names of the two samples of a two-sample fit (:func:`pair_samples`).
TWO_SAMPLE_DIMS = {"X_p": ("sample_p", "feature"), "X_q": ("sample_q", "feature")}

DEFAULT_CHUNK_SIZE = 10_000



def is_lazy_input(X: Any) -> bool:
    """True for inputs whose predictions should stay lazy.

    Dask arrays, Dask DataFrames and Series, xarray objects; a
    :class:`~ooc_kernels.data.factorized.Factorized` whose ``U`` is one of them.
    """
    if isinstance(X, Factorized):
        return is_lazy_input(X.U)
    if isinstance(X, da.Array) or _dask_frame_kind(X) is not None or is_zarr_array(X):
        return True
    try:
        import xarray as xr
    except ImportError:  # pragma: no cover - xarray is a dependency
        return False
    return isinstance(X, (xr.Dataset, xr.DataArray))


def _check_chunk_size(chunk_size: Any) -> int:
    if chunk_size is None:
        return DEFAULT_CHUNK_SIZE
    if not isinstance(chunk_size, numbers.Integral) or isinstance(chunk_size, bool) or chunk_size < 1:
        raise ValidationError(
            f"chunk_size must be a positive integer, got {chunk_size!r}; "
            f"pass e.g. chunk_size={DEFAULT_CHUNK_SIZE}."
        )
    return int(chunk_size)


def _from_dask(X: da.Array, y: Any, chunk_size: int, check_y: bool = True) -> ChunkedData:
    if X.ndim != 2:
        raise ValidationError(
            f"X must be 2-D (n_samples, n_features), got a Dask array of shape {X.shape}; "
            "reshape it, e.g. X.reshape(-1, 1) for a single feature."
        )
    if len(X.chunks[1]) != 1:
        transposed = (f" But if the samples are along axis 1 (X holds {X.shape[0]} x "
                      f"{X.shape[1]} values in one chunk along axis 0: it looks transposed), "
                      "transpose it: X = X.T."
                      if len(X.chunks[0]) == 1 and X.shape[0] < X.shape[1] else "")
        raise SchemaError(
            f"X is chunked along the feature axis (feature chunks {X.chunks[1]}); chunks must "
            f"span all features. Fix: X = X.rechunk({{1: -1}}).{transposed}"
        )
    if any(np.isnan(c) for c in X.chunks[0]):
        raise ValidationError(
            "X has unknown chunk sizes along samples; call X.compute_chunk_sizes() first."
        )
    if any(np.isnan(c) for c in X.chunks[1]):   # columns picked by a lazy mask
        raise ValidationError(
            f"X has an unknown number of features (shape {X.shape}); call "
            "X.compute_chunk_sizes() first, or pick the columns with a NumPy mask."
        )
    if not (np.issubdtype(X.dtype, np.floating) or np.issubdtype(X.dtype, np.integer)
            or X.dtype == np.bool_):
        raise ValidationError(
            f"X must hold numbers, got dtype {X.dtype}; convert it with X.astype('float32')."
        )
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    if X.shape[1] == 0:
        raise ValidationError(
            f"X has 0 features (shape {X.shape}); give at least one feature column."
        )
    yd = None if y is None else _chunked_y(_unwrap_y(y), X, check_y)
    return _supervised(X, yd)


def _y_problem(y: Any, n: int, name: str = "X") -> str | None:
    """What is wrong with an unwrapped ``y`` (a Dask or in-memory array) for ``n`` samples
    of ``name``, or None."""
    if not isinstance(y, da.Array):
        y = np.asarray(y)  # y given in memory by the caller (small next to X)
        if y.ndim == 0 or y.shape[0] != n:
            return (f"{name} and y have different numbers of samples: {n} and "
                    f"{y.shape[0] if y.ndim else 'a scalar y'}; they must describe the same "
                    "samples.")
    if y.ndim == 2 and y.shape[1] != 1:
        return (f"y has {y.shape[1]} columns (shape {y.shape}), and the estimators fit one "
                "target: fit one model per column with sklearn.multioutput's "
                "MultiOutputRegressor or MultiOutputClassifier, or pass one column, y[:, j].")
    if y.ndim not in (1, 2):
        return (f"y must be 1-D (n_samples,), got shape {y.shape}; give one target per "
                "sample.")
    if isinstance(y, da.Array) and any(np.isnan(c) for c in y.chunks[0]):
        return "y has unknown chunk sizes along samples; call y.compute_chunk_sizes() first."
    if y.shape[0] != n:
        return (f"{name} and y have different numbers of samples: {n} and {y.shape[0]}; "
                "they must describe the same samples.")
    if y.dtype.kind not in _Y_KINDS:
        return (f"y must hold numbers (regression) or labels (classification), got dtype "
                f"{y.dtype}; convert it, e.g. y.astype('float32') or y.astype('int32').")
    return None


def _chunked_y(y: Any, X: da.Array, check_y: bool, name: str = "X") -> da.Array:
    """An unwrapped ``y`` as a 1-D Dask array with the sample chunks of ``X`` (checked)."""
    problem = _y_problem(y, X.shape[0], name)
    if problem is not None:
        raise ValidationError(problem)
    yd = y if isinstance(y, da.Array) else da.from_array(
        np.asarray(y), chunks=(X.chunks[0],) + np.shape(y)[1:])
    if yd.ndim == 2:
        yd = yd[:, 0]
    if yd.chunks[0] != X.chunks[0]:
        yd = yd.rechunk((X.chunks[0],))
    if check_y:
        from ooc_kernels.data.integrity import check_finite_blocks

        yd = check_finite_blocks(yd, "y")  # NaN/inf named by chunk and row when read
    return yd


def _supervised(X: da.Array, y: da.Array | None, **fields) -> ChunkedData:
    variables = {"X": X} if y is None else {"X": X, "y": y}
    return ChunkedData(variables, dims=SUPERVISED_DIMS, **fields)


#: dtype kinds accepted for y: bool, integers, floats, strings and objects (labels).
_Y_KINDS = "biufUSO"


def _unwrap_y(y: Any) -> Any:
    """The (integrity-checked) Dask array behind an xarray ``y``, the Dask array of a Dask
    Series ``y`` (its partition lengths computed); other inputs unchanged."""
    import xarray as xr

    if _dask_frame_kind(y) is not None:
        yf = _frame_y(y)
        (lengths,) = _partition_lengths(yf)
        return _frame_to_array(yf, lengths)
    if isinstance(y, xr.DataArray):
        y = y.data
    if isinstance(y, da.Array):
        from ooc_kernels.data.integrity import guard_dask_array

        y = guard_dask_array(y, "y")
    return y


def as_chunked(X: Any, y: Any = None, *, chunk_size: int | None = None,
               require_y: bool = False, check_y: bool = True,
               variables: Mapping[str, str] | None = None,
               schema: Any = None, lazy_token: bool = False,
               ensure_all_finite: bool = True) -> ChunkedData:
    """Wrap any accepted input as :class:`ChunkedData` without reading it.

    Parameters
    ----------
    X : array-like, DataFrame, Dask array/frame, xarray object, zarr.Array, reader, Factorized
        The samples.  A Dataset holds the schema's variables under their names or under the
        names declared by ``variables`` or its ``ooc_kernels_variables`` attribute (a
        catalog entry's declaration lands there).  A DataArray may have any dim names: the
        first is the sample axis and it must be chunked along it only (the schema's own
        names in the other order, ``('feature', 'sample')``, are refused with the
        transpose).  An object with a
        ``read()`` method (an Intake 2 reader) is read lazily first, its entry's
        ``ooc_kernels`` metadata applied.  A
        :class:`~ooc_kernels.data.factorized.Factorized` ``(U, V)`` gives the sample
        variables ``U`` (its chunks, or ``chunk_size`` rows of an in-memory ``U``) and
        ``y``, and the whole variable ``V`` as a NumPy array (see Notes).  A ``zarr.Array``
        (``X`` or ``y``) is its Dask array, with the store's chunks.
    y : array-like, dask.array.Array, xarray.DataArray or Dask Series, optional
        Targets.  Taken from the Dataset's ``y`` when ``X`` is a Dataset and ``y`` is None.
        A DataArray must lie along ``X``'s sample dim; when both have a coordinate there,
        the coordinates must be equal.
    chunk_size : int, optional
        Rows per chunk for in-memory inputs (Dask and Zarr inputs keep their chunks).
    require_y : bool
        Raise when no targets can be found.
    check_y : bool
        Check, chunk by chunk when read, that ``y`` holds no NaN/inf (off when the caller
        skips invalid rows itself); for factorized data the same holds for ``U``.
    variables : mapping, optional
        Schema variable -> Dataset variable, e.g. ``{"X": "features", "y": "label"}``.
    schema : Schema or str, optional
        Default: the Dataset's ``ooc_kernels_schema`` attribute, else ``"supervised"``.
        Other schemas (``"factorized"``, ``"triplets"``) take Datasets only; their whole
        variables become :attr:`ChunkedData.whole`.
    lazy_token : bool
        For an in-memory ``X`` (NumPy, pandas, lists): name its Dask array without hashing
        its contents, and hash them only when :attr:`ChunkedData.token` is asked for (a
        checkpoint, a Dask graph of rounds); the token is the same either way.  For callers
        that use the array only as it is (the Dask array of ``X`` is not derived into
        another one whose name would carry the unhashed name).
    ensure_all_finite : bool
        For an in-memory ``X``: check it for NaN and inf (True), or not (False: the caller
        checked it already, as the estimators' scikit-learn validation does).

    Notes
    -----
    The :class:`ChunkedData` always holds the canonical names and dims of the schema
    (``X: (sample, feature)``): that is what the engine and the solvers read.  The user's
    own names and sample coordinate matter only for predictions, which
    :func:`wrap_prediction` puts back on them.

    **Dask DataFrames** are read out of core, like Dask arrays: each partition becomes one
    chunk of ``X`` (nothing is repartitioned).  The columns must all be numeric (bool,
    integer, float, nullable numeric); a text or categorical column is refused by name, the
    fix being to select the numeric ones (``ddf[numeric_cols]``,
    ``ddf.select_dtypes("number")``).  They are cast to float32 when all are float32, else
    to float64 (nullable ``NA`` become NaN, refused or skipped like any NaN).  Chunks need
    known sizes, so the partition lengths are computed first: for free where Dask knows them
    from metadata (Parquet footers, ``from_pandas``), otherwise in one pass that loads each
    partition once, one at a time per worker, keeping only its length.  ``y`` may be a Dask
    Series (or a one-column Dask DataFrame) whose partitions pair up with those of ``X``:
    same number of partitions, same divisions when both are known, same lengths (their
    lengths are computed in the same pass); anything else is an error naming the fix (take
    both from one DataFrame: ``X = ddf[features]; y = ddf["target"]``).  ``y`` may also be a
    Dask array or an in-memory array, rechunked like ``X``.

    **Factorized data** ``A = U V`` (:class:`~ooc_kernels.data.factorized.Factorized`):
    ``U`` (NumPy, Dask or a DataArray with any dim names, chunked along its first axis
    only) and ``y`` share the sample chunks; ``V`` is read whole, checked for NaN/inf and
    converted to ``U``'s dtype (float32 kept, else float64), and lands in
    :attr:`ChunkedData.whole` as a NumPy array; the dims are the schema's ``U(sample,
    rank)``, ``V(rank, feature)``, ``y(sample)``, and ``attrs`` names the schema
    (``{"ooc_kernels_schema": "factorized"}``).  Every problem (ranks of ``U`` and ``V``
    that differ, ``U`` chunked along its rank axis, NaN/inf in ``V`` or in an in-memory
    ``U``, wrong dimensions or dtypes, a ``y`` of another length) is reported in one
    error whose ``problems`` lists them; NaN/inf in a lazy ``U`` are reported when its
    chunk is read, naming the chunk and the row.  A Dataset of the ``factorized`` schema
    (a store, a catalog entry) gives the same variables, ``V`` as a lazy Dask array.

    Predictions on a Dask DataFrame are a lazy Dask array with one chunk per partition, as
    for every other lazy input, rather than a Dask Series on the DataFrame's index: that
    keeps one return type for all lazy inputs and for every method (``predict_proba`` and
    multi-class ``decision_function`` are 2-D, which a Series cannot hold), mirrors
    scikit-learn (pandas in, NumPy out), and feeds Dask reductions (``score``, the
    evaluation module) directly.  Since the chunks are the partitions, a Series is one call
    away: ``dd.from_dask_array(pred, index=ddf.index)``.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> ds = xr.Dataset({"features": (("time", "channel"), np.zeros((6, 3))),
    ...                  "label": (("time",), np.arange(6) % 2)})
    >>> data = as_chunked(ds, variables={"X": "features", "y": "label"}, chunk_size=4)
    >>> data.chunk_sizes, data.dims["X"]
    ((4, 2), ('sample', 'feature'))
    >>> as_chunked(ds["features"], ds["label"], chunk_size=3).chunk_sizes
    (3, 3)
    """
    import xarray as xr

    chunk_size = _check_chunk_size(chunk_size)
    X, y = as_dask(X), as_dask(y)   # a zarr.Array: read chunk by chunk
    if isinstance(X, Factorized):
        return _from_factorized(X, y, schema, variables, chunk_size, require_y, check_y)
    if (_dask_frame_kind(X) is None and hasattr(X, "read") and callable(X.read)
            and not isinstance(X, np.ndarray)):
        X = _read_entry(X)
    if schema is not None or isinstance(X, xr.Dataset):
        from ooc_kernels.data.schema import SUPERVISED, get_schema

        chosen = get_schema(schema, X.attrs if isinstance(X, xr.Dataset) else None)
        if chosen is not SUPERVISED:
            if y is not None:
                raise ValidationError(
                    f"y is given separately, but a {chosen.name!r} dataset holds its variables "
                    f"({chosen.names}) in one Dataset; add it there, e.g. "
                    "ds = ds.assign(y=...), and pass the Dataset alone"
                )
            return _from_schema_dataset(X, chosen, variables, chunk_size, require_y,
                                        check_y)
    if isinstance(X, xr.Dataset):
        data = _from_dataset(X, y, variables, chunk_size, require_y, check_y)
    elif isinstance(X, xr.DataArray):
        data = _from_dataarray(X, y, chunk_size, check_y)
    elif isinstance(X, da.Array):
        data = _from_dask(X, y, chunk_size, check_y)
    elif _dask_frame_kind(X) is not None:
        names = frame_feature_names(X) if _dask_frame_kind(X) == "frame" else None
        Xd, y = _dask_frames_to_arrays(X, y)
        data = _from_dask(Xd, y, chunk_size, check_y).replace(feature_names=names)
    else:
        from sklearn.utils.validation import check_array, check_consistent_length

        from ooc_kernels._checks import check_plain_array

        check_plain_array(X, "X")
        check_plain_array(y, "y")
        y = None if y is None else _unwrap_y(y)
        try:  # scikit-learn's checks (NaN/inf, dtype, dimensions), in the library's hierarchy
            X_np = check_array(X, dtype=[np.float64, np.float32],
                               ensure_all_finite=ensure_all_finite, accept_sparse=False)
            if y is not None and not isinstance(y, da.Array):
                y = np.asarray(y)
                check_consistent_length(X_np, y)
        except ValidationError:
            raise
        except (ValueError, TypeError) as err:
            named = non_numeric_frame_error(X)   # a pandas text column: say which
            if named is not None:
                raise named from err
            raise ValidationError(f"invalid input: {err}") from err
        blocks = (chunk_size, X_np.shape[1])
        if lazy_token:       # named without hashing X: the token hashes it when asked for
            Xd = _unhashed_rows(X_np, chunk_size)
            data = _from_dask(Xd, y, chunk_size, check_y).replace(
                identities={Xd.name: ContentName(X_np, blocks)})
        else:
            data = _from_dask(da.from_array(X_np, chunks=blocks), y, chunk_size, check_y)
    if data.n_samples == 0:
        raise ValidationError(
            "the dataset is empty (0 samples); give at least one sample."
        )
    if require_y and data.y is None:
        raise ValidationError(
            "no targets: pass y, or a Dataset with a 'y' variable."
        )
    return data


def _unhashed_rows(X: np.ndarray, chunk_size: int) -> da.Array:
    """A Dask array of ``X``'s rows in chunks of ``chunk_size``, named at random, whose
    blocks are views of ``X``: neither hashed nor copied (``dask.array.from_array`` copies
    its input), for callers that read ``X`` while it is unchanged (a fit)."""
    import uuid

    from dask.highlevelgraph import HighLevelGraph

    name = f"array-{uuid.uuid4().hex}"
    bounds = list(range(0, X.shape[0], chunk_size)) + [X.shape[0]]
    graph = {(name, k, 0): X[lo:hi] for k, (lo, hi) in enumerate(zip(bounds[:-1],
                                                                        bounds[1:]))}
    sizes = tuple(hi - lo for lo, hi in zip(bounds[:-1], bounds[1:]))
    return da.Array(HighLevelGraph.from_collections(name, graph, dependencies=()), name,
                    (sizes, (X.shape[1],)), dtype=X.dtype, meta=X[:0, :0])


def _read_entry(reader: Any) -> Any:
    """An Intake reader's Dataset, its entry's ``ooc_kernels`` declaration applied.

    Read with Dask chunks equal to the Zarr chunks (``chunks={}``) unless the entry sets
    its own, as :func:`ooc_kernels.data.open_dataset` does.
    """
    from ooc_kernels.data.schema import DECLARATION_KEY, apply_declaration

    kwargs = getattr(reader, "kwargs", None)
    xarray_reader = getattr(reader, "output_instance", None) == "xarray:Dataset"
    extra = {"chunks": {}} if xarray_reader and isinstance(kwargs, Mapping) \
        and "chunks" not in kwargs else {}
    ds = reader.read(**extra)
    metadata = getattr(reader, "metadata", None)
    declaration = metadata.get(DECLARATION_KEY) if isinstance(metadata, Mapping) else None
    if declaration is None:
        return ds
    return apply_declaration(ds, declaration, where=f"the entry's metadata {DECLARATION_KEY}")


def _lazy(arr: Any, name: str, chunks: tuple) -> da.Array:
    """A Dask array of ``arr``: Zarr reads integrity-checked, in-memory data chunked."""
    if isinstance(arr, da.Array):
        from ooc_kernels.data.integrity import guard_dask_array

        return guard_dask_array(arr, name)
    return da.from_array(np.asarray(arr), chunks=chunks[:1] + (-1,) * (np.ndim(arr) - 1))


def _dask_of(var: Any, name: str, chunks: tuple) -> da.Array:
    """The Dask array of an xarray variable, chunked along its first dim when it is not.

    A variable of a Dataset opened without Dask (``xr.open_dataset(path)``) is read lazily,
    chunk by chunk, through xarray's own ``chunk`` (``.data`` would load it whole).
    """
    warn_masked_zeros(var, name)   # a Zarr 2 fill value 0 decoded as a missing value
    if var.chunks is None:
        spec = {d: (chunks[0] if i == 0 else -1) for i, d in enumerate(var.dims)}
        return var.chunk(spec).data
    return _lazy(var.data, name, chunks)


def _check_aligned(X: Any, y: Any, name: str = "X") -> None:
    """A DataArray ``y`` against the sample coordinate of ``X`` (both in memory: indexes);
    ``name`` is what the messages call ``X``."""
    import xarray as xr

    if not isinstance(y, xr.DataArray) or not X.dims:
        return
    dim = X.dims[0]
    if y.dims != (dim,):
        fix = (f"rename it, y = y.rename({{{y.dims[0]!r}: {dim!r}}})" if y.ndim == 1
               else "select one target (multi-output is not supported)")
        raise SchemaError(f"y has dims {y.dims}, expected ({dim!r},): one target per sample "
                          f"along {name}'s sample dim {dim!r}. Fix: {fix}.")
    if dim not in X.indexes or dim not in y.indexes:
        return  # at most one has labels: rows pair up by position
    a, b = X.indexes[dim], y.indexes[dim]
    if a.equals(b):
        return
    if len(a) != len(b):
        where = f"{name} has {len(a)} labels, y {len(b)}"
    else:
        i = int(np.flatnonzero(np.asarray(a) != np.asarray(b))[0])
        first = [v.item() if isinstance(v, np.generic) else v for v in (a[i], b[i])]
        where = (f"first difference at position {i}: {name} has {first[0]!r}, y has "
                 f"{first[1]!r}")
    raise SchemaError(
        f"y is not aligned with {name}: their coordinates {dim!r} differ ({where}); the rows "
        f"would be paired by position. Fix: align them first, {name}, y = xr.align({name}, y, "
        f"join='inner'), or select y on {name}'s labels, y = y.sel({dim}={name}[{dim!r}])."
    )


def _from_dataarray(X: Any, y: Any, chunk_size: int, check_y: bool) -> ChunkedData:
    """A DataArray ``X`` with any dim names (the first is the sample axis)."""
    import xarray as xr

    from ooc_kernels.data.schema import SUPERVISED, ArrayInfo, check_arrays

    arrays = {"X": X}
    if isinstance(y, xr.DataArray):  # chunks aside: y is rechunked like X
        arrays["y"] = ArrayInfo.of(y)._replace(chunks=None)
    check_arrays(arrays, SUPERVISED, require="predict", context="dataarray")
    _check_aligned(X, y)
    Xd = _dask_of(X, str(X.name) if X.name is not None else "X", (chunk_size,))
    if isinstance(y, xr.DataArray) and y.ndim and y.chunks is None:
        y = _dask_of(y, "y", Xd.chunks[0:1])
    return _from_dask(Xd, y, chunk_size, check_y)


def _from_dataset(ds: Any, y: Any, variables: Any, chunk_size: int, require_y: bool,
                  check_y: bool) -> ChunkedData:
    """A supervised Dataset: validated, its variables found by name or declaration."""
    from ooc_kernels.data.integrity import guard_dataset
    from ooc_kernels.data.schema import SUPERVISED, check_dataset

    need_y = require_y and y is None
    resolved = check_dataset(ds, SUPERVISED, require="fit" if need_y else "predict",
                             variables=variables, context="xarray")
    ds = guard_dataset(ds)  # chunk reads check that chunk files exist and decode
    X = ds[resolved.names["X"]]
    Xd = _dask_of(X, "X", (chunk_size,))
    if y is None and "y" in resolved.names:
        y = _dask_of(ds[resolved.names["y"]], "y", Xd.chunks[0:1])
    else:
        _check_aligned(X, y)
    data = _from_dask(Xd, y, chunk_size, check_y)
    return data.replace(attrs=dict(ds.attrs))


def _from_schema_dataset(ds: Any, schema: Any, variables: Any, chunk_size: int,
                         require_y: bool, check_y: bool = True) -> ChunkedData:
    """A Dataset of any registered schema, by the schema's declaration alone.

    Float variables are checked for NaN/inf chunk by chunk when read (sample variables
    when ``check_y``; whole ones always: a bad value there spoils every task).
    """
    from ooc_kernels.data.integrity import check_finite_blocks

    import xarray as xr

    from ooc_kernels.data.integrity import guard_dataset
    from ooc_kernels.data.schema import check_dataset

    if not isinstance(ds, xr.Dataset):
        raise ValidationError(
            f"the {schema.name!r} schema takes an xarray.Dataset (or a catalog entry), got "
            f"{type(ds).__name__}; build one with variables {schema.names}"
        )
    resolved = check_dataset(ds, schema, require="fit" if require_y else "predict",
                             variables=variables, context="xarray")
    ds = guard_dataset(ds)
    sample: dict[str, da.Array] = {}
    whole: dict[str, Any] = {}
    lazy = [ds[resolved.names[v.name]].chunks for v in schema.sample_variables
            if v.name in resolved.names]
    chunks = next((c[:1] for c in lazy if c is not None), (chunk_size,))
    for v in schema.variables:
        if v.name not in resolved.names:
            continue
        var = ds[resolved.names[v.name]]
        if v.whole:  # lazy as well: a task that needs it reads it whole
            whole[v.name] = check_finite_blocks(_dask_of(var, v.name, (chunk_size,)), v.name)
        else:
            arr = _dask_of(var, v.name, chunks)
            sample[v.name] = check_finite_blocks(arr, v.name) if check_y else arr
    dims = {k: schema[k].dims for k in (*sample, *whole)}
    data = ChunkedData(sample, dims=dims, whole=whole, attrs=dict(ds.attrs))
    if data.n_samples == 0:
        raise ValidationError("the dataset is empty (0 samples); give at least one sample.")
    return data


def _from_factorized(F: Factorized, y: Any, schema: Any, variables: Any, chunk_size: int,
                     require_y: bool, check_y: bool) -> ChunkedData:
    """A :class:`Factorized` input: ``U`` and ``y`` along the samples, ``V`` whole.

    Every problem is collected and raised in one error (see :func:`as_chunked`).
    """
    import xarray as xr

    from ooc_kernels.data.declarations import FACTORIZED, SCHEMA_ATTR

    if variables is not None or schema not in (None, FACTORIZED, FACTORIZED.name):
        raise ValidationError(
            f"a Factorized input is read with the 'factorized' schema and its own factors, "
            f"got schema={schema!r}, variables={variables!r}; leave both out"
        )
    from ooc_kernels._checks import check_plain_array

    check_plain_array(F.U, "U")
    check_plain_array(F.V, "V")
    U, problems, invalid = F.U, [], []
    kind = ("DataArray" if isinstance(U, xr.DataArray) else "Dask array"
            if isinstance(U, da.Array) else "array")
    if kind == "array":
        U = np.asarray(U)  # in memory: given so by the caller
    V = F.V.data if isinstance(F.V, xr.DataArray) else F.V
    V = V if isinstance(V, da.Array) else np.asarray(V)
    if U.ndim != 2:
        article = "an" if kind == "array" else "a"
        problems.append(f"U must be 2-D (n_samples, rank), got {article} {kind} of shape "
                        f"{U.shape}; "
                        "reshape it, e.g. U.reshape(-1, 1) for rank 1.")
    elif U.shape[0] == 0:
        problems.append(f"the dataset is empty: U has shape {U.shape} (0 samples); give at "
                        "least one sample.")
    if V.ndim != 2:
        problems.append(f"V must be 2-D (rank, n_features), got shape {V.shape}; reshape it, "
                        "e.g. V.reshape(1, -1) for rank 1.")
    elif 0 in V.shape:
        problems.append(f"V has shape {V.shape}: A = U V needs a rank of at least 1 and at "
                        "least one feature; give a non-empty V.")
    for name, arr in (("U", U), ("V", V)):
        if arr.dtype.kind not in "biuf":
            problems.append(f"{name} must hold numbers, got dtype {arr.dtype}; convert it with "
                            f"{name} = {name}.astype('float32').")
    shapes_ok = U.ndim == 2 and V.ndim == 2
    if shapes_ok and U.shape[1] != V.shape[0]:
        hint = (" (V looks transposed, (n_features, rank): pass V.T)"
                if V.shape[1] == U.shape[1] else "")
        problems.append(
            f"the ranks of U and V differ: U has shape {U.shape} (n_samples, rank) and V has "
            f"shape {V.shape} (rank, n_features), so U has {U.shape[1]} columns but V has "
            f"{V.shape[0]} rows; A = U V needs U.shape[1] == V.shape[0]: pass the two "
            f"factors of one product{hint}.")
    if kind == "DataArray" and isinstance(F.V, xr.DataArray) and shapes_ok \
            and F.V.dims[0] != U.dims[1] and U.dims[1] in F.V.dims:
        problems.append(f"V has dims {F.V.dims}; its first dim must be U's rank dim "
                        f"{U.dims[1]!r}. Fix: V = V.transpose{(U.dims[1], F.V.dims[0])!r}.")
    chunks = U.chunks if kind != "array" else None
    if chunks is not None and U.ndim == 2:
        if len(chunks[1]) > 1:
            fix = ("U = U.rechunk({1: -1})" if kind == "Dask array"
                   else f"U = U.chunk({{{U.dims[1]!r}: -1}})")
            problems.append(f"U is chunked along the rank axis (rank chunks {chunks[1]}); "
                            f"each chunk must hold whole rows of U. Fix: {fix}.")
        if any(np.isnan(c) for c in chunks[0]):
            problems.append("U has unknown chunk sizes along samples; call "
                            "U.compute_chunk_sizes() first.")
    if V.ndim == 2 and V.dtype.kind in "biuf" and V.size:
        from ooc_kernels.parallel.cluster import compute  # bounded waits on a Client

        V = np.asarray(compute(V)[0])  # small: rank x p
        bad = ~np.isfinite(V)
        if bad.any():
            i, j = (int(k) for k in np.argwhere(bad)[0])
            invalid.append(
                f"V has {int(bad.sum())} non-finite value(s), the first ({V[i, j].item()!r}) "
                f"at rank {i}, feature {j}; V is given whole to every chunk task, so every "
                "row of A = U V would be invalid: replace or remove them (e.g. rebuild V, or "
                "np.nan_to_num(V)).")
    if kind == "array" and check_y and U.ndim == 2 and U.dtype.kind == "f":
        from ooc_kernels._checks import check_finite

        try:  # in memory: checked now, chunk by chunk, naming the chunk and row
            for k, lo in enumerate(range(0, U.shape[0], chunk_size)):
                check_finite(U[lo:lo + chunk_size], "U", k)
        except InvalidDataError as err:
            invalid.append(str(err))
    yu = None
    if y is not None:
        yu = _unwrap_y(y)
        if kind == "DataArray" and isinstance(y, xr.DataArray) and U.ndim:
            try:
                _check_aligned(F.U, y, "U")
            except SchemaError as err:
                problems.append(str(err))
        problem = _y_problem(yu, U.shape[0], "U") if U.ndim else None
        if problem is not None:
            problems.append(problem)
    elif require_y:
        problems.append("no targets: pass y, e.g. fit(ok.Factorized(U, V), y).")
    _raise_all(problems, invalid, "the factorized input (U, V, y)")
    if kind == "Dask array":
        Ud = _lazy(U, "U", ())
    elif kind == "DataArray":
        Ud = _dask_of(U, "U", (chunk_size,))
    else:
        Ud = da.from_array(U, chunks=(chunk_size, -1))
    if Ud.dtype not in (np.float32, np.float64):
        Ud = Ud.astype(np.float64)
    if check_y and kind != "array":
        from ooc_kernels.data.integrity import check_finite_blocks

        Ud = check_finite_blocks(Ud, "U")  # NaN/inf named by chunk and row when read
    sample = {"U": Ud}
    if yu is not None:
        sample["y"] = _chunked_y(yu, Ud, check_y, "U")
    V = np.asarray(V, dtype=Ud.dtype)
    dims = {name: FACTORIZED[name].dims for name in (*sample, "V")}
    return ChunkedData(sample, dims=dims, whole={"V": V},
                       attrs={SCHEMA_ATTR: FACTORIZED.name})


def _raise_all(problems: list[str], invalid: list[str], where: str) -> None:
    """One error for every problem: a :class:`SchemaError` (an :class:`InvalidDataError`
    when all are about values), its ``problems`` listing them."""
    found = problems + invalid
    if not found:
        return
    cls = SchemaError if problems else InvalidDataError
    if len(found) == 1:
        err = cls(found[0])
    else:
        lines = "\n".join(f"  {i}. {p}" for i, p in enumerate(found, 1))
        err = cls(f"{where} has {len(found)} problems:\n{lines}")
    err.problems = found
    raise err


def pair_samples(first: ChunkedData, second: ChunkedData) -> ChunkedData:
    """Two samples of the same features as one :class:`ChunkedData` whose chunks pair them.

    The result holds ``X_p`` (``first``'s ``X``) and ``X_q`` (``second``'s ``X``), each
    along a sample dimension of its own (:data:`TWO_SAMPLE_DIMS`), with the same number of
    chunks: chunk ``c`` of the data is chunk ``c`` of ``X_p`` with chunk ``c`` of ``X_q``,
    so the task that reads it gets rows of both samples.  The sample with fewer chunks is
    cut lazily into as many chunks as the other, of sizes differing by at most one (a chunk
    of the new cut reads the one or few stored chunks it overlaps); the sample with more
    chunks keeps its own.  An epoch is therefore one pass over both samples, every row of
    each read once, whatever their lengths (a much shorter sample gives small chunks, of
    zero rows when it has fewer rows than the other has chunks).  ``sample_p`` is the first
    sample's length: :attr:`ChunkedData.n_samples` and :attr:`ChunkedData.chunk_sizes`
    refer to ``X_p``.

    Raises
    ------
    ValidationError
        The samples have different numbers of features, or one of them has no ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> p = as_chunked(np.zeros((10, 2)), chunk_size=4)
    >>> q = as_chunked(np.ones((5, 2)), chunk_size=5)
    >>> both = pair_samples(p, q)
    >>> both.chunk_sizes, both["X_q"].chunks[0], both.sizes["sample_q"]
    ((4, 4, 2), (2, 2, 1), 5)
    """
    for name, data in (("X_p", first), ("X_q", second)):
        if data.X is None:
            raise ValidationError(
                f"the sample {name} has no X variable (found {sorted(data.variables)}); "
                "give each sample as an array, a Dask array or a Dataset with an X."
            )
    if first.n_features != second.n_features:
        raise ValidationError(
            f"X_q has {second.n_features} features, X_p has {first.n_features}; the two "
            "samples must describe the same features: select the same columns in both."
        )
    if (first.feature_names is not None and second.feature_names is not None
            and first.feature_names != second.feature_names):
        order = (" (the same names in another order: the columns are matched by position)"
                 if sorted(first.feature_names) == sorted(second.feature_names) else "")
        raise ValidationError(
            f"X_p and X_q have different columns: {list(first.feature_names)} and "
            f"{list(second.feature_names)}{order}; select and order the columns alike, "
            "e.g. X_q[list(X_p.columns)]."
        )
    n = max(first.n_chunks, second.n_chunks)
    X_p, X_q = _cut(first.X, n), _cut(second.X, n)
    return ChunkedData({"X_p": X_p, "X_q": X_q}, dims=TWO_SAMPLE_DIMS,
                       attrs=dict(first.attrs),
                       feature_names=first.feature_names or second.feature_names)


def _cut(X: da.Array, n_chunks: int) -> da.Array:
    """``X`` in ``n_chunks`` chunks along its samples (its own chunks if it has as many)."""
    if X.numblocks[0] == n_chunks:
        return X
    base, extra = divmod(X.shape[0], n_chunks)
    return X.rechunk(({0: (base + 1,) * extra + (base,) * (n_chunks - extra)}))


def model_input(data) -> Any:
    """What ``predict`` takes for the rows of ``data`` (a ``ChunkedData``): ``X``, or
    ``Factorized(U, V)`` for factorized data, both lazy.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.data.inputs import as_chunked, model_input
    >>> model_input(as_chunked(np.ones((4, 2)), np.zeros(4))).shape
    (4, 2)
    """
    if "U" in data and "X" not in data:
        return Factorized(data["U"], data["V"])
    return data.X


def wrap_prediction(X: Any, values: Any, *, classes: Any = None) -> Any:
    """Predictions shaped like the input they came from.

    For an ``xarray.DataArray`` input, a (lazy) ``DataArray`` along the input's sample
    dimension (its first) with the input's coordinates on it; for an ``xarray.Dataset``,
    the same along the sample dimension of its ``X`` (found by name or declaration).  A
    second dimension is ``class`` with the class labels for probabilities, ``output``
    otherwise.  Any other input gets ``values`` unchanged (NumPy in, NumPy out; Dask in,
    Dask out).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> X = xr.DataArray(np.zeros((3, 2)), dims=("time", "channel"),
    ...                  coords={"time": [10, 20, 30]})
    >>> wrap_prediction(X, np.array([1, 0, 1])).coords["time"].values.tolist()
    [10, 20, 30]
    >>> ds = xr.Dataset({"f": X}, attrs={"ooc_kernels_variables": {"X": "f"}})
    >>> wrap_prediction(ds, np.ones((3, 2)), classes=["a", "b"]).dims
    ('time', 'class')
    """
    import xarray as xr

    if isinstance(X, Factorized):
        X = X.U
    if isinstance(X, xr.Dataset):
        from ooc_kernels.data.schema import sample_dim

        sample = sample_dim(X)
    elif isinstance(X, xr.DataArray) and X.ndim:
        sample = X.dims[0]
    else:
        return values
    coords = {k: c.variable for k, c in X.coords.items() if c.dims == (sample,)}
    if np.ndim(values) == 1:
        return xr.DataArray(values, dims=(sample,), coords=coords)
    second = "class" if classes is not None else "output"
    if classes is not None:
        coords = {**coords, "class": np.asarray(classes)}
    return xr.DataArray(values, dims=(sample, second), coords=coords)
