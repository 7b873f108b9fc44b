"""Class labels with missing values: ``None``, pandas ``NA`` or ``NaN`` among text labels
(a string or categorical column with gaps) are refused by name, with their row (in memory)
or their chunk and row (lazy labels), before any class is learned.

Numeric labels are left to the numeric checks: a ``NaN`` in float labels (or a nullable
integer ``NA``, which becomes one) is refused as a non-finite target, or skipped with its
row under ``on_invalid="skip"``.

Examples
--------
>>> import numpy as np
>>> check_missing_labels(np.array(["a", "b"], dtype=object))      # nothing missing
>>> check_missing_labels(np.array(["a", None, "b"], dtype=object))
Traceback (most recent call last):
...
ooc_kernels.exceptions.InvalidDataError: y has a missing label (None) at row 1 (1 of the 3 \
labels); ...
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ooc_kernels.exceptions import InvalidDataError

__all__ = ["any_missing", "check_missing_labels", "check_lazy_missing_labels"]

_FIX = ("a classifier needs a label for every row: drop those rows and the same rows of X "
        "(e.g. keep = y.notna(); X, y = X[keep], y[keep]), or give them a class of their "
        "own (y = y.fillna('missing')).")


def _text_labels(y: Any) -> np.ndarray | None:
    """``y`` as an object array when its labels are text or other objects (object, string
    or non-numeric categorical dtype), else None (numbers: not this check's)."""
    import pandas as pd

    dtype = getattr(y, "dtype", None)
    if dtype is None:  # a list: NumPy's reading of it (None makes it an object array)
        arr = np.asarray(y)
        return arr if arr.dtype.kind == "O" else None
    if isinstance(dtype, pd.CategoricalDtype):
        if pd.api.types.is_numeric_dtype(dtype.categories.dtype):
            return None
    elif isinstance(dtype, np.dtype):
        if dtype.kind != "O":
            return None
    elif not isinstance(dtype, pd.StringDtype) and pd.api.types.is_numeric_dtype(dtype):
        return None  # nullable Int64, boolean, Float64: numbers with NA
    return np.asarray(y, dtype=object)


def _missing(values: np.ndarray) -> np.ndarray:
    import pandas as pd

    return np.asarray(pd.isna(values), dtype=bool).reshape(-1)


def any_missing(values: np.ndarray) -> bool:
    """Whether an object array of labels (the distinct labels of a fit) holds ``None``,
    ``NA`` or ``NaN``."""
    return bool(_missing(np.asarray(values, dtype=object)).any())


def check_missing_labels(y: Any) -> None:
    """Refuse in-memory class labels with a missing value, naming the first one's row.

    Raises
    ------
    InvalidDataError
        Some text (or object) labels are ``None``, ``NA`` or ``NaN``.
    """
    if y is None:
        return
    arr = _text_labels(y)
    if arr is None or arr.ndim != 1:
        return
    missing = _missing(arr)
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise InvalidDataError(
            f"y has a missing label ({arr[row]!r}) at row {row} ({int(missing.sum())} of the "
            f"{arr.size} labels); {_FIX}"
        )


def _first_missing(block: np.ndarray) -> np.ndarray:
    missing = np.flatnonzero(_missing(np.asarray(block, dtype=object)))
    return np.array([missing[0] if missing.size else -1], dtype=np.int64)


def check_lazy_missing_labels(y: Any, scheduler: Any = None) -> None:
    """Refuse lazy (Dask) text labels with a missing value, naming its chunk and row: one
    pass over ``y`` (never ``X``), made only when the labels read so far hold one.

    Raises
    ------
    InvalidDataError
        Some labels are ``None``, ``NA`` or ``NaN``.
    """
    import dask.array as da

    from ooc_kernels.parallel.cluster import compute

    if not isinstance(y, da.Array) or y.dtype.kind != "O":
        return
    firsts = y.map_blocks(_first_missing, dtype=np.int64, chunks=((1,) * y.numblocks[0],))
    (rows,) = compute(firsts, scheduler=scheduler)
    for chunk, row in enumerate(np.asarray(rows).tolist()):
        if row >= 0:
            value = compute(y.blocks[chunk][row], scheduler=scheduler)[0]
            raise InvalidDataError(
                f"y has a missing label ({value!r}) in chunk {chunk}, row {row}; {_FIX}"
            )
