"""A dataset seen as a sequence of sample chunks: the unit of I/O, of work and of failure.

:func:`as_chunked` turns every input the estimators accept (NumPy arrays, Dask arrays, an
``xarray.Dataset`` following the library's schema, an Intake reader) into a
:class:`ChunkedData`: a Dask array ``X`` chunked along samples only and an optional ``y``
with the same chunks.  Nothing is read here: chunks are loaded by the tasks that use them.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.parallel.chunked import as_chunked
>>> data = as_chunked(np.zeros((10, 3)), np.arange(10), chunk_size=4)
>>> data.chunk_sizes
(4, 4, 2)
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any

import dask
import dask.array as da
import numpy as np

from ooc_kernels.exceptions import SchemaError, ValidationError

__all__ = ["ChunkedData", "as_chunked", "is_lazy_input"]

DEFAULT_CHUNK_SIZE = 10_000


@dataclass(frozen=True)
class ChunkedData:
    """Lazy samples ``X`` (and targets ``y``), chunked along the sample axis only.

    Attributes
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
    y : dask.array.Array of shape (n_samples,) or None
    attrs : dict
        Dataset attributes (``task``, ``classes`` ...) when the input carried them.
    """

    X: da.Array
    y: da.Array | None = None
    attrs: dict = field(default_factory=dict)

    @property
    def chunk_sizes(self) -> tuple[int, ...]:
        return tuple(int(c) for c in self.X.chunks[0])

    @property
    def n_chunks(self) -> int:
        return len(self.X.chunks[0])

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def dtype(self) -> np.dtype:
        return self.X.dtype

    @property
    def token(self) -> str:
        """Deterministic identity of the data (Dask names hash the source and the graph)."""
        return dask.base.tokenize(self.X.name, None if self.y is None else self.y.name)

    def delayed_chunks(self) -> tuple[list, list | None]:
        """One ``Delayed`` per chunk of ``X`` (and of ``y``); nothing is computed."""
        xd = [row[0] for row in self.X.to_delayed(optimize_graph=True)]
        yd = None if self.y is None else list(self.y.to_delayed(optimize_graph=True))
        return xd, yd


def is_lazy_input(X: Any) -> bool:
    """True for inputs whose predictions should stay lazy (Dask arrays, xarray objects)."""
    if isinstance(X, da.Array):
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
        y = _unwrap_xarray(y)
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
    return ChunkedData(X=X, y=yd)


#: dtype kinds accepted for y: bool, integers, floats, strings and objects (labels).
_Y_KINDS = "biufUSO"


def _unwrap_xarray(y: Any) -> Any:
    """The (integrity-checked) Dask array behind an xarray ``y``; other inputs unchanged."""
    import xarray as xr

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
    X : array-like, dask.array.Array, xarray.Dataset or Intake reader
        The samples.  A Dataset must follow the library's schema (variables ``X``/``y``).
        An object with a ``read()`` method (an Intake 2 reader) is read lazily first.
    y : array-like or dask.array.Array, optional
        Targets.  Taken from the Dataset's ``y`` when ``X`` is a Dataset and ``y`` is None.
    chunk_size : int, optional
        Rows per chunk for in-memory inputs (Dask and Zarr inputs keep their chunks).
    require_y : bool
        Raise when no targets can be found.
    check_y : bool
        Check, chunk by chunk when read, that ``y`` holds no NaN/inf (off when the caller
        skips invalid rows itself).
    """
    chunk_size = _check_chunk_size(chunk_size)
    if hasattr(X, "read") and callable(X.read) and not isinstance(X, np.ndarray):
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
        data = ChunkedData(X=data.X, y=data.y, attrs=attrs)
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
    else:
        from sklearn.utils.validation import check_array, check_consistent_length

        y = None if y is None else _unwrap_xarray(y)
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
