"""Targets and invalid rows of one DSG task: labels and numbers as the numba losses take them.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dsg._targets import numeric_targets
>>> numeric_targets(np.array([1, 2]), np.float32, "chunk 0").tolist()
[1.0, 2.0]
"""

from __future__ import annotations

import numpy as np

from ooc_kernels._checks import RowOrigin, check_finite
from ooc_kernels.exceptions import InvalidDataError
from ooc_kernels.families.dsg.kernels_targets import SOFTMAX, TARGET_CODES, class_targets

__all__ = ["class_array", "encode_targets", "numeric_targets"]


def numeric_targets(y: np.ndarray, dtype, where: str) -> np.ndarray:
    """``y`` as numbers of ``dtype`` (a regressor's targets), or a clear error naming
    ``where`` the rows come from."""
    try:
        return np.asarray(y).astype(dtype, copy=False)
    except (TypeError, ValueError) as err:
        raise InvalidDataError(
            f"y holds values that are not numbers (dtype {y.dtype}, e.g. "
            f"{_first_value(y)!r}) in {where} ({err}); a regressor needs numeric "
            "targets: convert them, e.g. y.astype('float32'), or use a classifier for "
            "labels."
        ) from None

def class_array(classes) -> np.ndarray:
    """The classes of a :class:`~ooc_kernels.families.dsg.solver.DSGConfig` (a tuple of
    Python labels) as an array that holds every one exactly: integers that no common
    integer dtype of NumPy's choice holds (``1`` with ``2**63 + 5``, read as float64 by
    ``np.asarray``) are ``uint64``, or objects beyond it.

    Examples
    --------
    >>> class_array((1, 2**63 + 5))
    array([                  1, 9223372036854775813], dtype=uint64)
    >>> class_array(("a", "b")).dtype.kind, class_array((0.5, 1.5)).dtype
    ('U', dtype('float64'))
    """
    values = np.asarray(classes)
    if values.dtype.kind == "f" and all(type(c) is int for c in classes):
        exact = 0 <= min(classes) and max(classes) < 2**64
        values = np.asarray(classes, dtype=np.uint64 if exact else object)
    return values


def encode_targets(config, y: np.ndarray, chunk: int | RowOrigin) -> np.ndarray:
    """Targets of one chunk as the (n, n_outputs) matrix the numba losses expect, for the
    :class:`~ooc_kernels.families.dsg.solver.DSGConfig` ``config``.

    ``chunk`` names where the rows come from in errors: a chunk index, or a
    :class:`~ooc_kernels._checks.RowOrigin` for a group of chunks.
    """
    origin = chunk if isinstance(chunk, RowOrigin) else RowOrigin((chunk,), (len(y),))
    dtype = np.dtype(config.dtype)
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if config.target == "regression":
        yf = numeric_targets(y, dtype, origin.describe())
        check_finite(yf, "y", origin)
        if config.y_shift != 0.0 or config.y_scale != 1.0:  # centred before the rounding
            y64 = numeric_targets(y, np.float64, origin.describe())
            yf = ((y64 - config.y_shift) / config.y_scale).astype(dtype, copy=False)
        return yf.reshape(-1, 1)
    classes = class_array(config.classes)
    same = _numeric_classes(classes, y)
    if same is not None:  # numbers: one pass of the kernel
        out = np.empty((len(y), 1 if config.target == "binary" else len(classes)), dtype=dtype)
        row = class_targets(y, same, TARGET_CODES.get(config.target, SOFTMAX), out)
        if row < 0:
            return out
        _not_a_class(classes, y, row, origin)
    try:
        idx = np.searchsorted(classes, y)
    except TypeError:  # labels of a kind that cannot be compared with the classes
        row = _first_incomparable(classes, y)
        where_chunk, where_row = origin.locate(row)
        raise InvalidDataError(
            f"labels of dtype {y.dtype} (e.g. {np.asarray(y).ravel()[row]!r}) in chunk "
            f"{where_chunk}, row {where_row} cannot be compared with the classes "
            f"{classes.tolist()}; pass labels of the same type as the classes (classes=... "
            "in partial_fit, or the dataset's 'classes' attribute)."
        ) from None
    idx_c = np.clip(idx, 0, len(classes) - 1)
    bad = classes[idx_c] != y
    if bad.any():
        _not_a_class(classes, y, int(np.flatnonzero(bad)[0]), origin)
    if config.target == "binary":
        return np.where(idx_c == 1, 1.0, -1.0).astype(dtype).reshape(-1, 1)
    out = np.zeros((len(y), len(classes)), dtype=dtype)
    out[np.arange(len(y)), idx_c] = 1.0
    if config.target == "ovr":
        out = 2.0 * out - 1.0
    return out.astype(dtype, copy=False)


#: Label dtypes that :func:`class_targets` takes (integers and the floats numba has: no
#: float16); other labels (booleans, strings, objects) go through NumPy's ``searchsorted``.
_KERNEL_LABELS = frozenset(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64,
                                                   np.uint8, np.uint16, np.uint32, np.uint64,
                                                   np.float32, np.float64))


def _numeric_classes(classes: np.ndarray, y: np.ndarray):
    """``classes`` in ``y``'s dtype when :func:`class_targets` can encode ``y`` (1-D labels
    of a dtype it takes, and classes that the dtype holds exactly, so that comparing in it
    is comparing the values), else None."""
    if y.ndim != 1 or y.dtype not in _KERNEL_LABELS or not y.dtype.isnative \
            or classes.dtype not in _KERNEL_LABELS:
        return None
    same = classes.astype(y.dtype)
    if not np.array_equal(same, classes) or np.any(same[1:] <= same[:-1]):
        return None
    return np.ascontiguousarray(same)


def _not_a_class(classes: np.ndarray, y: np.ndarray, row: int, origin: RowOrigin):
    """Raise the error of a label, at ``row`` of the task's rows, that is not a class."""
    where_chunk, where_row = origin.locate(row)
    label = np.asarray(y[row]).item()  # one label, as a Python value
    raise InvalidDataError(
        f"label {label!r} in chunk {where_chunk}, row {where_row} is "
        f"not one of the classes "
        f"{classes.tolist()}; pass the full list of classes (classes=... in partial_fit, "
        "or the dataset's 'classes' attribute). A warm_start fit or a later partial_fit "
        "call keeps the classes of the first fit: to learn new ones, fit again with "
        "warm_start=False."
    )


def _first_incomparable(classes: np.ndarray, y: np.ndarray) -> int:
    """The first row whose label cannot be ordered against the classes (error path only)."""
    flat = np.asarray(y).ravel()
    for row, value in enumerate(flat):  # one chunk, and only to name the culprit
        try:
            np.searchsorted(classes, np.asarray([value], dtype=flat.dtype))
        except TypeError:
            return row
    return 0


def _first_value(y: np.ndarray):
    if not np.size(y):
        return None
    value = np.asarray(y).ravel()[0]
    return value.item() if isinstance(value, np.generic) else value


def _drop_invalid_rows(config, X: np.ndarray, y, sw, origin: RowOrigin):
    """``on_invalid="skip"``: the rows of one task whose X (and y, and weight) are finite."""
    keep = np.isfinite(X).all(axis=1)
    y_arr = None if y is None else np.asarray(y)
    if y_arr is not None and y_arr.dtype.kind in "fc":  # NaN/inf targets or labels
        keep &= np.isfinite(y_arr.reshape(len(X), -1)).all(axis=1)
    if sw is not None:
        keep &= np.isfinite(sw)
    n_bad = int(len(keep) - keep.sum())
    if n_bad == 0:
        return X, y, sw, 0, origin
    return (np.ascontiguousarray(X[keep]), None if y is None else np.asarray(y)[keep],
            None if sw is None else sw[keep], n_bad, origin.keep(keep))
