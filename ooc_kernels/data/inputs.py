"""Every input the estimators accept, seen as a :class:`~ooc_kernels.parallel.chunked.ChunkedData`.

:func:`as_chunked` turns NumPy arrays, pandas DataFrames, Dask arrays, Dask DataFrames, an
``xarray.Dataset`` or ``DataArray`` and an Intake reader into named lazy variables (``X``
chunked along samples only and an optional ``y`` with the same chunks).  Nothing is read
here: chunks are loaded by the tasks that use them (a Dask DataFrame costs one pass for its
partition lengths, see :func:`as_chunked`).

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
import sys
from typing import Any

import dask
import dask.array as da
import numpy as np

from ooc_kernels.exceptions import SchemaError, ValidationError
from ooc_kernels.parallel.chunked import ChunkedData

__all__ = ["as_chunked", "is_lazy_input", "wrap_prediction", "SUPERVISED_DIMS"]

#: Dimension names of the supervised variables handed to the engine.
SUPERVISED_DIMS = {"X": ("sample", "feature"), "y": ("sample",)}

DEFAULT_CHUNK_SIZE = 10_000

#: Dask's planner may fuse partitions of a column-projected Parquet read (``ddf["y"]``
#: alone becomes a few partitions of many files): off here, so that the chunks are the
#: partitions the user sees and ``X``/``y`` partitions pair up.
_NO_FUSION = {"optimization.tune.active": False}


def is_lazy_input(X: Any) -> bool:
    """True for inputs whose predictions should stay lazy.

    Dask arrays, Dask DataFrames and Series, xarray objects.
    """
    if isinstance(X, da.Array) or _dask_frame_kind(X) is not None:
        return True
    try:
        import xarray as xr
    except ImportError:  # pragma: no cover - xarray is a dependency
        return False
    return isinstance(X, (xr.Dataset, xr.DataArray))


def _dask_frame_kind(obj: Any) -> str | None:
    """``"frame"`` or ``"series"`` for a Dask DataFrame or Series, else None.

    ``dask.dataframe`` is not imported here (it needs pyarrow): an object can only be a Dask
    DataFrame if its module was imported by whoever built it.
    """
    dd = sys.modules.get("dask.dataframe")
    if dd is None:
        return None
    frame_t, series_t = getattr(dd, "DataFrame", None), getattr(dd, "Series", None)
    if frame_t is not None and isinstance(obj, frame_t):
        return "frame"
    if series_t is not None and isinstance(obj, series_t):
        return "series"
    return None


def _known_lengths(frame: Any) -> tuple[int, ...] | None:
    """Partition lengths that Dask's query planner knows without reading any partition.

    The planner answers from metadata where it can: the row counts in Parquet footers,
    in-memory pandas partitions.  None when it cannot (or on a Dask without this planner).
    """
    try:
        from dask.dataframe.dask_expr._expr import Lengths, Literal

        expr = Lengths(frame.expr).optimize()
    except Exception:  # noqa: BLE001 - a short-cut only: the general pass below still runs
        return None
    if isinstance(expr, Literal) and len(expr.value) == frame.npartitions:
        return tuple(int(n) for n in expr.value)
    return None


def _partition_lengths(*frames: Any) -> list[tuple[int, ...]]:
    """Rows per partition of each Dask DataFrame/Series.

    From metadata when Dask knows them (nothing read); otherwise all the unknown ones in one
    pass together, which loads each partition once, one at a time per worker, keeping only
    its length (partitions shared by the frames, e.g. ``ddf[cols]`` and ``ddf["y"]``, are
    read once).
    """
    with dask.config.set(_NO_FUSION):
        out = [_known_lengths(f) for f in frames]
        todo = [i for i, lengths in enumerate(out) if lengths is None]
        counted = dask.compute(*[frames[i].map_partitions(len, enforce_metadata=False)
                                 for i in todo]) if todo else ()
    for i, lengths in zip(todo, counted):
        out[i] = tuple(int(n) for n in lengths)
    return out


def _numpy_dtype(dtype: Any) -> np.dtype | None:
    """The NumPy dtype of a (possibly pandas extension) column dtype, None if it has none."""
    try:
        return np.dtype(getattr(dtype, "numpy_dtype", dtype))
    except TypeError:
        return None


def _frame_X(X: Any) -> Any:
    """A Dask DataFrame of numeric columns cast to one float dtype (lazy), else an error."""
    bad = []
    for name, dt in X.dtypes.items():
        nd = _numpy_dtype(dt)
        if nd is None or nd.kind not in "biuf" or str(dt) == "category":
            bad.append(f"{name!r} ({dt})")
    if bad:
        raise ValidationError(
            f"X has non-numeric columns: {', '.join(bad)}; the estimators need numbers. Fix: "
            "pass the numeric columns only, e.g. X = ddf[numeric_cols] or "
            "X = ddf.select_dtypes('number'), or encode the others as numbers first."
        )
    dtypes = {_numpy_dtype(dt) for dt in X.dtypes}
    target = np.dtype(np.float32) if dtypes == {np.dtype(np.float32)} else np.dtype(np.float64)
    if any(dt != target for dt in X.dtypes):  # also turns nullable NA into NaN
        X = X.astype(target)
    return X


def _frame_y(y: Any) -> Any:
    """A Dask Series of targets whose ``.values`` are a NumPy array (lazy), else an error."""
    if _dask_frame_kind(y) == "frame":
        if len(y.columns) != 1:
            raise ValidationError(
                f"y is a Dask DataFrame with {len(y.columns)} columns {list(y.columns)}; "
                "give a single target, e.g. y = ddf['target']."
            )
        y = y[y.columns[0]]
    dt = y.dtype
    nd = _numpy_dtype(dt)
    if isinstance(dt, np.dtype) and dt.kind in "biuf":
        return y
    if nd is not None and nd.kind in "biuf" and str(dt) != "category":
        return y.astype(nd)  # a nullable numeric column (float NA become NaN)
    return y.astype(object)  # labels: strings, categories


def _frame_to_array(frame: Any, lengths: tuple[int, ...]) -> da.Array:
    """The Dask array of a converted DataFrame/Series, one chunk per partition."""
    with dask.config.set(_NO_FUSION):
        values = frame.values  # planned now: chunks of unknown size, one per partition
    if values.numblocks[0] != len(lengths):  # pragma: no cover - a planner regrouping
        raise ValidationError(
            f"Dask planned {values.numblocks[0]} chunks for {len(lengths)} partitions; "
            "persist the DataFrame (ddf = ddf.persist()) or pass a Dask array."
        )
    return da.Array(values.dask, values.name, chunks=(lengths,) + values.chunks[1:],
                    meta=values._meta)


def _dask_frames_to_arrays(X: Any, y: Any) -> tuple[da.Array, Any]:
    """Dask DataFrame ``X`` (and Dask Series/DataFrame ``y``) as Dask arrays, chunks =
    partitions; one pass computes the partition lengths of both."""
    if _dask_frame_kind(X) == "series":
        raise ValidationError(
            "X is a Dask Series (one column); X must be 2-D (n_samples, n_features). "
            "Pass a DataFrame, e.g. X = ddf[['column']]."
        )
    Xf = _frame_X(X)
    if _dask_frame_kind(y) is None:
        (lengths,) = _partition_lengths(Xf)
        return _frame_to_array(Xf, lengths), y
    yf = _frame_y(y)
    if Xf.npartitions != yf.npartitions:
        raise ValidationError(
            f"X and y are partitioned differently: X has {Xf.npartitions} partitions and y "
            f"has {yf.npartitions}; partitions become chunks, paired row by row. Fix: take "
            "both from one DataFrame (X = ddf[feature_columns]; y = ddf['target']), or "
            "repartition y like X (y = y.repartition(divisions=X.divisions) when both have "
            "known divisions)."
        )
    if (Xf.known_divisions and yf.known_divisions
            and tuple(Xf.divisions) != tuple(yf.divisions)):
        raise ValidationError(
            f"X and y have different divisions (index bounds of the partitions): "
            f"{Xf.divisions} and {yf.divisions}; their rows would be paired by position, "
            "not by index. Fix: take both from one DataFrame (X = ddf[feature_columns]; "
            "y = ddf['target']), or align them first (y = y.repartition(divisions="
            "X.divisions))."
        )
    x_lengths, y_lengths = _partition_lengths(Xf, yf)
    if sum(x_lengths) != sum(y_lengths):
        raise ValidationError(
            f"X and y have different numbers of samples: {sum(x_lengths)} and "
            f"{sum(y_lengths)}; they must describe the same samples."
        )
    if x_lengths != y_lengths:
        i = next(k for k, (a, b) in enumerate(zip(x_lengths, y_lengths)) if a != b)
        raise ValidationError(
            f"X and y partitions do not line up: partition {i} has {x_lengths[i]} rows in X "
            f"and {y_lengths[i]} in y; partitions become chunks, paired row by row. Fix: "
            "take both from one DataFrame (X = ddf[feature_columns]; y = ddf['target']), "
            "or repartition y like X (y = y.repartition(divisions=X.divisions) when both "
            "have known divisions)."
        )
    return _frame_to_array(Xf, x_lengths), _frame_to_array(yf, y_lengths)


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
        raise SchemaError(
            f"X is chunked along the feature axis (feature chunks {X.chunks[1]}); chunks must "
            "span all features. Fix: X = X.rechunk({1: -1})."
        )
    if any(np.isnan(c) for c in X.chunks[0]):
        raise ValidationError(
            "X has unknown chunk sizes along samples; call X.compute_chunk_sizes() first."
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
    yd = None
    if y is not None:
        y = _unwrap_y(y)
        if isinstance(y, da.Array):
            yd = y
        else:
            y_np = np.asarray(y)  # y given in memory by the caller (small next to X)
            if y_np.ndim == 0 or y_np.shape[0] != X.shape[0]:
                raise ValidationError(
                    f"X and y have different numbers of samples: {X.shape[0]} and "
                    f"{y_np.shape[0] if y_np.ndim else 'a scalar y'}; they must describe the "
                    "same samples."
                )
            yd = da.from_array(y_np, chunks=(X.chunks[0],) + y_np.shape[1:])
        if yd.ndim == 2 and yd.shape[1] == 1:
            yd = yd[:, 0]
        if yd.ndim != 1:
            raise ValidationError(
                f"y must be 1-D (n_samples,), got shape {yd.shape}; pass y.ravel() for a "
                "single target."
            )
        if any(np.isnan(c) for c in yd.chunks[0]):
            raise ValidationError(
                "y has unknown chunk sizes along samples; call y.compute_chunk_sizes() first."
            )
        if yd.shape[0] != X.shape[0]:
            raise ValidationError(
                f"X and y have different numbers of samples: {X.shape[0]} and {yd.shape[0]}; "
                "they must describe the same samples."
            )
        if yd.dtype.kind not in _Y_KINDS:
            raise ValidationError(
                f"y must hold numbers (regression) or labels (classification), got dtype "
                f"{yd.dtype}; convert it, e.g. y.astype('float32') or y.astype('int32')."
            )
        if yd.chunks[0] != X.chunks[0]:
            yd = yd.rechunk((X.chunks[0],))
        if check_y:
            from ooc_kernels.data.integrity import check_finite_blocks

            yd = check_finite_blocks(yd, "y")  # NaN/inf named by chunk and row when read
    return _supervised(X, yd)


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
               require_y: bool = False, check_y: bool = True) -> ChunkedData:
    """Wrap any accepted input as :class:`ChunkedData` without reading it.

    Parameters
    ----------
    X : array-like, pandas or Dask DataFrame, dask.array.Array, xarray.Dataset or Intake reader
        The samples.  A Dataset must follow the library's schema (variables ``X``/``y``).
        An object with a ``read()`` method (an Intake 2 reader) is read lazily first.
    y : array-like, dask.array.Array or Dask Series, optional
        Targets.  Taken from the Dataset's ``y`` when ``X`` is a Dataset and ``y`` is None.
    chunk_size : int, optional
        Rows per chunk for in-memory inputs (Dask and Zarr inputs keep their chunks).
    require_y : bool
        Raise when no targets can be found.
    check_y : bool
        Check, chunk by chunk when read, that ``y`` holds no NaN/inf (off when the caller
        skips invalid rows itself).

    Notes
    -----
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

    Predictions on a Dask DataFrame are a lazy Dask array with one chunk per partition, as
    for every other lazy input, rather than a Dask Series on the DataFrame's index: that
    keeps one return type for all lazy inputs and for every method (``predict_proba`` and
    multi-class ``decision_function`` are 2-D, which a Series cannot hold), mirrors
    scikit-learn (pandas in, NumPy out), and feeds Dask reductions (``score``, the
    evaluation module) directly.  Since the chunks are the partitions, a Series is one call
    away: ``dd.from_dask_array(pred, index=ddf.index)``.
    """
    chunk_size = _check_chunk_size(chunk_size)
    if (_dask_frame_kind(X) is None and hasattr(X, "read") and callable(X.read)
            and not isinstance(X, np.ndarray)):
        X = X.read()
    import xarray as xr

    attrs: dict = {}
    if isinstance(X, xr.Dataset):
        from ooc_kernels.data.schema import SCHEMA_VERSION_ATTR, validate_dataset

        ds = X
        if SCHEMA_VERSION_ATTR in ds.attrs:  # a store of the library's schema: full check
            validate_dataset(ds, require_y=require_y and y is None)
        elif "X" not in ds.variables or ds["X"].ndim != 2:
            found = {str(k): ds[k].dims for k in ds.data_vars}
            raise SchemaError(
                f"the Dataset needs a 2-D variable 'X' (sample, feature); found {found}. "
                "Fix: name the feature matrix 'X' (and the targets 'y')."
            )
        from ooc_kernels.data.integrity import guard_dataset

        ds = guard_dataset(ds)  # chunk reads check that chunk files exist and decode
        attrs = dict(ds.attrs)
        Xd = ds["X"].data
        if not isinstance(Xd, da.Array):  # an in-memory Dataset
            Xd = da.from_array(Xd, chunks=(chunk_size, -1))
        if y is None and "y" in ds:
            y = ds["y"].data
        data = _from_dask(Xd, y, chunk_size, check_y)
        data = data.replace(attrs=attrs)
    elif isinstance(X, xr.DataArray):
        Xd = X.data
        if isinstance(Xd, da.Array):
            from ooc_kernels.data.integrity import guard_dask_array

            Xd = guard_dask_array(Xd, str(X.name) if X.name is not None else "X")
        else:
            Xd = da.from_array(Xd, chunks=(chunk_size,) + (-1,) * max(Xd.ndim - 1, 0))
        data = _from_dask(Xd, y, chunk_size, check_y)
    elif isinstance(X, da.Array):
        data = _from_dask(X, y, chunk_size, check_y)
    elif _dask_frame_kind(X) is not None:
        names = tuple(str(c) for c in X.columns) if _dask_frame_kind(X) == "frame" else None
        Xd, y = _dask_frames_to_arrays(X, y)
        data = _from_dask(Xd, y, chunk_size, check_y).replace(feature_names=names)
    else:
        from sklearn.utils.validation import check_array, check_consistent_length

        y = None if y is None else _unwrap_y(y)
        try:  # scikit-learn's checks (NaN/inf, dtype, dimensions), in the library's hierarchy
            X_np = check_array(X, dtype=[np.float64, np.float32], ensure_all_finite=True,
                               accept_sparse=False)
            if y is not None and not isinstance(y, da.Array):
                y = np.asarray(y)
                check_consistent_length(X_np, y)
        except ValidationError:
            raise
        except (ValueError, TypeError) as err:
            raise ValidationError(f"invalid input: {err}") from err
        data = _from_dask(da.from_array(X_np, chunks=(chunk_size, X_np.shape[1])), y,
                          chunk_size, check_y)
    if data.n_samples == 0:
        raise ValidationError(
            "the dataset is empty (0 samples); give at least one sample."
        )
    if require_y and data.y is None:
        raise ValidationError(
            "no targets: pass y, or a Dataset with a 'y' variable."
        )
    return data


def wrap_prediction(X: Any, values: Any, *, classes: Any = None) -> Any:
    """Predictions shaped like the input they came from.

    For an ``xarray.DataArray`` input, a (lazy) ``DataArray`` on the same sample dimension
    and coordinate (a second dimension ``class`` with the class labels for probabilities,
    ``output`` otherwise); any other input gets ``values`` unchanged (NumPy in, NumPy out;
    Dask in, Dask out).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> X = xr.DataArray(np.zeros((3, 2)), dims=("time", "channel"),
    ...                  coords={"time": [10, 20, 30]})
    >>> wrap_prediction(X, np.array([1, 0, 1])).coords["time"].values.tolist()
    [10, 20, 30]
    """
    import xarray as xr

    if not isinstance(X, xr.DataArray):
        return values
    sample = X.dims[0]
    coords = {sample: X.coords[sample]} if sample in X.coords else {}
    if np.ndim(values) == 1:
        return xr.DataArray(values, dims=(sample,), coords=coords)
    second = "class" if classes is not None else "output"
    if classes is not None:
        coords = {**coords, "class": np.asarray(classes)}
    return xr.DataArray(values, dims=(sample, second), coords=coords)
