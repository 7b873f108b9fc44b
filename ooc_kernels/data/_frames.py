"""Dask and pandas DataFrames as the estimators' inputs: numeric columns, partition lengths,
partitions as chunks (used by :func:`ooc_kernels.data.inputs.as_chunked`).

Examples
--------
>>> import pandas as pd
>>> from ooc_kernels.data._frames import non_numeric_frame_error
>>> non_numeric_frame_error(pd.DataFrame({"a": [1.0, 2.0]})) is None
True
"""

from __future__ import annotations

import sys
from typing import Any

import dask
import dask.array as da
import numpy as np

from ooc_kernels.exceptions import InputTypeError, ValidationError

__all__ = ["non_numeric_frame_error"]

#: Dask's planner may fuse partitions of a column-projected Parquet read (``ddf["y"]``
#: alone becomes a few partitions of many files): off here, so that the chunks are the
#: partitions the user sees and ``X``/``y`` partitions pair up.
_NO_FUSION = {"optimization.tune.active": False}


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
    from ooc_kernels.parallel.cluster import compute  # bounded waits on a Client

    with dask.config.set(_NO_FUSION):
        out = [_known_lengths(f) for f in frames]
        todo = [i for i, lengths in enumerate(out) if lengths is None]
        counted = compute(*[frames[i].map_partitions(len, enforce_metadata=False)
                            for i in todo]) if todo else ()
    for i, lengths in zip(todo, counted):
        # Dask concatenates the per-partition results of several partitions into a Series,
        # but returns the result of a single partition as it is: one int
        out[i] = tuple(int(n) for n in np.atleast_1d(np.asarray(lengths)))
        if len(out[i]) != frames[i].npartitions:  # pragma: no cover - a planner regrouping
            raise ValidationError(
                f"Dask counted rows for {len(out[i])} partitions of a DataFrame with "
                f"{frames[i].npartitions}; persist the DataFrame (ddf = ddf.persist()) or "
                "pass a Dask array."
            )
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



def non_numeric_frame_error(X: Any) -> ValidationError | None:
    """The error naming the columns of a pandas DataFrame ``X`` that are not numbers.

    A column is accepted when its dtype is numeric (bool, integer, float, nullable numeric)
    or when its values convert to float (an object column of numbers, numeric categories);
    a column that does not convert (text) is named with its dtype and the conversion's
    complaint (the first value that failed), a column of dates or durations (which
    NumPy converts alone, as nanoseconds, but not beside numbers) with its dtype.
    Called when scikit-learn's validation of an in-memory ``X`` fails, so that its
    ``could not convert string to float: 'no'`` says which column holds ``'no'``.

    Returns
    -------
    ValidationError or None
        None when ``X`` is not a pandas DataFrame or all its columns convert.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"age": [31, 45], "smoker": ["no", "yes"]})
    >>> print(non_numeric_frame_error(df))  # doctest: +ELLIPSIS
    X has non-numeric columns: 'smoker' (str: could not convert string to float: 'no'); ...
    """
    pd = sys.modules.get("pandas")
    if pd is None or not isinstance(X, pd.DataFrame):
        return None
    bad, times = [], False
    for position, (name, dt) in enumerate(X.dtypes.items()):
        nd = _numpy_dtype(dt)
        if nd is not None and nd.kind in "biuf" and str(dt) != "category":
            continue
        if _is_time(dt):   # a column alone converts (nanoseconds), not beside numbers
            bad.append(f"{name!r} ({dt}: dates and durations are not numbers)")
            times = True
            continue
        try:
            # one column of the caller's in-memory pandas frame (already in memory)
            np.asarray(X.iloc[:, position], dtype=np.float64)  # one column, held already
        except (TypeError, ValueError) as err:
            bad.append(f"{name!r} ({dt}: {err})")
    if not bad:
        return None
    when = (" (a date or duration column as seconds: (df[col] - df[col].min())"
            ".dt.total_seconds())" if times else "")
    return ValidationError(
        f"X has non-numeric columns: {', '.join(bad)}; the estimators need numbers. Fix: "
        "pass the numeric columns only, e.g. X = df[numeric_cols] or "
        "X = df.select_dtypes('number'), or encode the others as numbers first (e.g. "
        f"sklearn.preprocessing.OrdinalEncoder){when}."
    )


def _is_time(dtype: Any) -> bool:
    """True for the dtype of dates, times or durations (NumPy's or pandas' own)."""
    nd = _numpy_dtype(dtype)
    if nd is not None and nd.kind in "mM":
        return True
    return getattr(dtype, "kind", None) in ("m", "M")  # e.g. pandas' DatetimeTZDtype

def _frame_y(y: Any) -> Any:
    """A Dask Series of targets whose ``.values`` are a NumPy array (lazy), else an error.

    The Series stays lazy, one partition per chunk; only categories that Dask does not
    know yet (``astype("category")``) are found first, in one pass over ``y``."""
    if _dask_frame_kind(y) == "frame":
        if len(y.columns) != 1:
            raise ValidationError(
                f"y is a Dask DataFrame with {len(y.columns)} columns {list(y.columns)}; "
                "give a single target, e.g. y = ddf['target']."
            )
        y = y[y.columns[0]]
    if str(y.dtype) == "category" and not y.cat.known:  # e.g. after astype("category")
        with dask.config.set(_NO_FUSION):
            y = y.cat.as_known()   # one pass over y, keeping its distinct values
    dt = y.dtype
    nd = _numpy_dtype(dt)
    if isinstance(dt, np.dtype) and dt.kind in "biuf":
        return y
    if nd is None or nd.kind not in "biuf" or str(dt) == "category":
        nd = _category_numbers(dt)   # categories of numbers: the numbers, never the codes
        if nd is None:
            return y.astype(object)  # labels: strings, other categories
    if nd.kind == "f":
        return y.astype(nd)  # a nullable float column: NA become NaN, checked as NaN
    # nullable integers or booleans, categories of them: NumPy's integers hold no NA
    return y.map_partitions(_exact_values, nd, meta=(y.name, nd))


def _category_numbers(dtype: Any) -> np.dtype | None:
    """The NumPy dtype of the categories of a categorical ``dtype`` when they are known
    numbers (bool, integers, floats), else None."""
    if str(dtype) != "category":
        return None
    categories = getattr(dtype, "categories", None)
    nd = None if categories is None else _numpy_dtype(categories.dtype)
    return nd if nd is not None and nd.kind in "biuf" else None


def _exact_values(part: Any, dtype: np.dtype, partition_info=None) -> Any:
    """One partition of nullable integers (or booleans, or categories of them) as
    ``dtype``; a missing value (``NA``) is an error naming its chunk and row."""
    missing = np.flatnonzero(np.asarray(part.isna()))
    if missing.size:
        from ooc_kernels.exceptions import InvalidDataError

        chunk = (partition_info or {}).get("number", "?")
        raise InvalidDataError(
            f"y has a missing value (NA) in chunk {chunk}, row {int(missing[0])}; integer "
            "targets hold no NaN: remove those rows, or, for regression targets, cast them "
            "to float (y = y.astype('float64')) to have them skipped with on_invalid='skip'."
        )
    return part.astype(dtype)


def frame_feature_names(frame: Any) -> tuple[str, ...] | None:
    """The feature names a fit on the (pandas or Dask) ``frame`` records, by scikit-learn's
    rule: its column names when every one is a string, None when none is.

    Raises
    ------
    InputTypeError
        Some column names are strings and others are not (scikit-learn refuses them too).

    Examples
    --------
    >>> import pandas as pd
    >>> frame_feature_names(pd.DataFrame({"a": [1.0], "b": [2.0]}))
    ('a', 'b')
    >>> frame_feature_names(pd.DataFrame([[1.0, 2.0]])) is None
    True
    """
    import pandas as pd
    from sklearn.utils.validation import _get_feature_names

    try:   # an empty pandas frame of the same columns: scikit-learn's own check
        names = _get_feature_names(pd.DataFrame(columns=frame.columns))
    except TypeError as err:   # mixed: the same refusal as for a pandas frame
        raise InputTypeError(str(err)) from err
    return None if names is None else tuple(str(n) for n in names)


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
