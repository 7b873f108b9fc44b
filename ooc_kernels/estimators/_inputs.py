"""The estimators' fit inputs: scikit-learn's validation in the library's errors, lazy inputs,
sample weights, and the data of unsupervised and two-sample fits.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.data.inputs import as_chunked
>>> from ooc_kernels.estimators._inputs import _with_sample_weight
>>> data = _with_sample_weight(as_chunked(np.zeros((5, 2)), np.zeros(5), chunk_size=2),
...                            np.ones(5))
>>> sorted(data.variables), data["sample_weight"].chunks
(['X', 'sample_weight', 'y'], ((2, 2, 1),))
"""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
from sklearn.utils.validation import (_get_feature_names, check_array,
                                      check_consistent_length, column_or_1d, validate_data)

from ooc_kernels._checks import check_plain_array
from ooc_kernels.data.inputs import is_lazy_input, non_numeric_frame_error, pair_samples
from ooc_kernels.estimators._labels import check_missing_labels
from ooc_kernels.exceptions import (InputTypeError, InvalidDataError, OocKernelsWarning,
                                    ValidationError)
from ooc_kernels.parallel.chunked import ChunkedData

__all__ = ["check_row_input", "checked_class_weights", "named_sample", "numeric_targets",
           "sklearn_validated", "two_sample_data", "unsupervised_data", "validated_xy"]


def sklearn_validated(func, *args, **kwargs):
    """scikit-learn's input validation, its errors re-raised in the library's hierarchy.

    A pandas ``X`` that ``validate_data`` cannot convert to numbers gets the error of
    :func:`~ooc_kernels.data.inputs.non_numeric_frame_error`, which names the columns; a
    NumPy masked array with masked values (``X``, ``y``) is refused
    (:func:`~ooc_kernels._checks.check_plain_array`).
    """
    for name, value in zip(_ARRAY_NAMES.get(func, ()), args):
        if name is not None:
            check_plain_array(value, name)
    try:
        return func(*args, **kwargs)
    except ValidationError:
        raise
    except (TypeError, ValueError) as err:
        named = non_numeric_frame_error(args[1]) if func is validate_data else None
        if named is not None:
            raise named from err
        if isinstance(err, TypeError):
            raise InputTypeError(str(err)) from err
        raise ValidationError(str(err)) from err


def validated_xy(estimator, X, y, *, reset: bool, skip: bool):
    """In-memory ``X`` and ``y`` as scikit-learn's ``validate_data`` checks them for a fit
    (float ``X``, 1-D ``y`` of the same length, numeric for a regressor).

    With ``skip`` (``on_invalid="skip"``) NaN and inf are let through in ``y`` as in ``X``:
    their rows are left out chunk by chunk and counted, as for Dask inputs (scikit-learn
    refuses a non-finite ``y`` whatever ``ensure_all_finite`` says).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.base import BaseEstimator
    >>> class Toy(BaseEstimator):
    ...     _is_classifier = False
    >>> X, y = validated_xy(Toy(), np.ones((3, 2)), [1.0, np.nan, 2.0], reset=True,
    ...                     skip=True)
    >>> y
    array([ 1., nan,  2.])
    """
    dtype = [np.float64, np.float32]
    numeric = not estimator._is_classifier
    _check_one_target(estimator, y)
    if estimator._is_classifier:
        check_missing_labels(y)
    if not skip or y is None:
        return sklearn_validated(validate_data, estimator, X, y, reset=reset, dtype=dtype,
                                 y_numeric=numeric, multi_output=False,
                                 ensure_all_finite=not skip)
    X = sklearn_validated(validate_data, estimator, X, reset=reset, dtype=dtype,
                          ensure_all_finite=False)
    y = sklearn_validated(_targets_with_invalid, y, numeric)
    sklearn_validated(check_consistent_length, X, y)
    return X, y


def _check_one_target(estimator, y) -> None:
    """Refuse a ``y`` of several columns (several targets, or a label indicator matrix),
    naming its shape and the scikit-learn wrapper that fits one model per column.

    Examples
    --------
    >>> from sklearn.base import BaseEstimator
    >>> class Toy(BaseEstimator):
    ...     _is_classifier = False
    >>> _check_one_target(Toy(), np.ones((4, 1)))        # one column: scikit-learn's ravel
    >>> _check_one_target(Toy(), [[1.0, 2.0], [3.0, 4.0]])
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.ValidationError: y has 2 columns (shape (2, 2)), and Toy fits \
one target: a 1-D y of 2 values. Fit one model per column with \
sklearn.multioutput.MultiOutputRegressor(Toy()), or pass one column, y[:, j].
    """
    shape = getattr(y, "shape", None)
    if shape is None and isinstance(y, (list, tuple)):
        try:
            shape = np.shape(y)
        except ValueError:   # ragged: scikit-learn's own message
            return
    if shape is None or len(shape) != 2 or shape[1] <= 1:
        return
    name = type(estimator).__name__
    wrapper = "MultiOutputClassifier" if estimator._is_classifier else "MultiOutputRegressor"
    raise ValidationError(
        f"y has {shape[1]} columns (shape {tuple(int(v) for v in shape)}), and {name} "
        f"fits one target: a 1-D y of {shape[0]} values. Fit one model per column with "
        f"sklearn.multioutput.{wrapper}({name}()), or pass one column, y[:, j].")


def _targets_with_invalid(y, numeric: bool) -> np.ndarray:
    """``y`` as scikit-learn's ``_check_y`` makes it, without refusing NaN or inf."""
    y = column_or_1d(y, warn=True)
    if np.iscomplexobj(y):
        raise ValueError("Complex data not supported\n{}\n".format(y))
    if numeric and y.dtype.kind == "O":
        y = y.astype(np.float64)
    return y


#: The input arrays of the functions :func:`sklearn_validated` calls, by position (None:
#: not an array of the caller's data).
_ARRAY_NAMES = {validate_data: (None, "X", "y"), check_array: ("X",),
                _targets_with_invalid: ("y",)}


def _is_chunked_input(X) -> bool:
    from ooc_kernels.data.factorized import Factorized

    if isinstance(X, Factorized):
        return True
    return is_lazy_input(X) or (hasattr(X, "read") and callable(X.read))


def _check_weight_dtype(dtype: np.dtype, values) -> None:
    """Refuse weights of text, dates or times: numbers only (booleans count as 0 and 1)."""
    if dtype.kind in "biufO":
        return
    first = f" (the first is {values.flat[0]!r})" if values is not None and values.size else ""
    raise ValidationError(
        f"sample_weight must hold numbers, got dtype {dtype}{first}; give the weights as "
        "numbers, e.g. np.asarray(weights, dtype=float) for weights read as text."
    )


def numeric_targets(estimator, data: ChunkedData) -> ChunkedData:
    """``data`` with a regressor's targets held as text or Python objects read as float64,
    chunk by chunk when read (text that spells numbers, ``'0.25'``, is those numbers);
    a value that is not a number is an :class:`InvalidDataError` naming it, its chunk and
    row.  Numeric targets, and a classifier's labels, are left as they are."""
    y = data.y
    if estimator._is_classifier or y is None or y.dtype.kind not in "USO":
        return data
    numbers = y.map_blocks(_numeric_block, y.dtype, dtype=np.float64)
    if getattr(estimator, "on_invalid", "error") != "skip":
        from ooc_kernels.data.integrity import check_finite_blocks

        numbers = check_finite_blocks(numbers, "y")  # 'nan' and 'inf' spelled out
    return data.replace(variables={**data.variables, "y": numbers})


def _numeric_block(y: np.ndarray, dtype, block_info=None) -> np.ndarray:
    """One chunk of text (or object) targets as float64, or the error naming the first
    value that is not a number."""
    values = np.asarray(y)  # one chunk of targets
    try:
        return values.astype(np.float64)
    except (TypeError, ValueError) as exc:
        row, value = next(((row, value) for row, value in enumerate(values.tolist())
                           if not _is_number(value)), ("?", exc))
        chunk = block_info[0]["chunk-location"][0] if block_info else "?"
        raise InvalidDataError(
            f"y holds values that are not numbers (dtype {dtype}, e.g. {value!r} in "
            f"chunk {chunk}, row {row}); a regressor needs numeric targets: convert "
            "them, e.g. y.astype('float32'), or use a classifier for labels."
        ) from None


def _is_number(value) -> bool:
    """Whether ``float(value)`` reads ``value``."""
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _nonnegative_weights(w: np.ndarray, block_info=None) -> np.ndarray:
    """One chunk of lazy sample weights, refused when one is negative (NaN and inf are
    the family's to refuse or skip, as ``on_invalid`` says, with the rows of ``X``)."""
    negative = w < 0
    if negative.any():
        row = int(np.flatnonzero(negative)[0])
        chunk = block_info[0]["chunk-location"][0] if block_info else "?"
        raise InvalidDataError(
            f"sample_weight {float(w[row])!r} in chunk {chunk}, row {row} is not a finite "
            "number >= 0; fix or drop that weight (a weight of 0 leaves its row out)."
        )
    return w


def zero_weights_error(rows: str) -> ValidationError:
    """The error of sample weights that are 0 on every row read, ``rows`` saying which
    rows were read (e.g. ``"all 200 samples"``)."""
    return ValidationError(
        f"sample_weight is zero on every row read ({rows}): every weight read is 0, so "
        "there is nothing to learn from; give some rows a positive weight (a weight of 0 "
        "leaves its row out).")


def weight_scale(total: float, n_rows: int, rows: str, fix: str) -> float:
    """``n_rows / total``, the factor that scales row weights of sum ``total`` to mean 1;
    refused, naming ``sample_weight``, where the sum overflows float64 or is so small
    (subnormal weights) that the factor does.  ``rows`` says which rows the sum is over
    (e.g. ``"all 200 rows"``), ``fix`` how to rescale the family's weights."""
    if not np.isfinite(total):
        raise ValidationError(
            f"sample_weight sums to {float(total)!r} over {rows}: the sum of the weights "
            f"overflows float64 (above {np.finfo(np.float64).max:.3g}); {fix}")
    with np.errstate(over="ignore", divide="ignore"):
        scale = n_rows / float(total)
    if total > 0 and not np.isfinite(scale):
        raise ValidationError(
            f"sample_weight sums to {float(total)!r} over {rows}: weights this small "
            f"(subnormal, below {np.finfo(np.float64).tiny:.3g}) have a mean whose "
            f"inverse overflows float64, so they cannot be scaled to mean 1; {fix}")
    return scale


def _with_sample_weight(data: ChunkedData, sample_weight) -> ChunkedData:
    """``data`` with a ``sample_weight`` variable chunked like its samples."""
    if sample_weight is None:
        return data
    if isinstance(sample_weight, da.Array):
        sw = sample_weight
        _check_weight_dtype(sw.dtype, None)
    else:
        check_plain_array(sample_weight, "sample_weight")
        given = np.asarray(sample_weight)  # given in memory by the caller
        _check_weight_dtype(given.dtype, given)
        try:
            sw = given.astype(np.float64)
        except (TypeError, ValueError) as err:  # objects that are not numbers
            raise ValidationError(
                f"sample_weight must hold numbers, but it holds objects that are not ({err}); "
                "give the weights as numbers, e.g. np.asarray(weights, dtype=float)."
            ) from None
        if sw.ndim != 1 or sw.shape[0] != data.n_samples:
            raise ValidationError(
                f"sample_weight must have shape ({data.n_samples},), got {sw.shape}; give "
                "one weight per sample."
            )
        bad = ~(np.isfinite(sw) & (sw >= 0))
        if bad.any():
            i, count = int(np.flatnonzero(bad)[0]), int(bad.sum())
            raise ValidationError(
                f"sample_weight[{i}] is {float(sw[i])!r} ({count} of the {sw.size} weights "
                f"{'is' if count == 1 else 'are'} negative, NaN or infinite); sample weights "
                "must be finite numbers >= 0: fix or drop the invalid weights (a weight of 0 "
                "leaves its row out)."
            )
        if not (sw > 0).any():
            raise zero_weights_error(f"all {sw.size} samples")
        sw = da.from_array(sw, chunks=(data.chunk_sizes,))
    if sw.ndim != 1 or sw.shape[0] != data.n_samples:
        raise ValidationError(
            f"sample_weight must have shape ({data.n_samples},), got {sw.shape}; give one "
            "weight per sample."
        )
    if sw.chunks[0] != data.chunk_sizes:
        sw = sw.rechunk((data.chunk_sizes,))
    if isinstance(sample_weight, da.Array):  # the caller's lazy weights, checked when read
        sw = sw.astype(np.float64).map_blocks(_nonnegative_weights, dtype=np.float64)
    return data.replace(variables={**data.variables, "sample_weight": sw.astype(np.float64)},
                        dims={**data.dims, "sample_weight": ("sample",)})


def check_row_input(estimator, data: ChunkedData, name: str = "X") -> ChunkedData:
    """``data`` when ``estimator`` reads it: rows ``X``, or factorized data ``A = U V`` for
    a family whose ``capabilities.factorized`` is True.

    Called on the adapted input (:func:`~ooc_kernels.data.inputs.as_chunked`), before any
    chunk is read; ``name`` is what the message calls the input (``X``, ``X_p``).

    Raises
    ------
    ValidationError
        ``data`` is factorized and the family takes rows only (the message names the
        estimators that take factorized data and how to materialize ``A = U V``), or it
        has neither ``X`` nor ``U``.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels import DSGRegressor, Factorized
    >>> from ooc_kernels.data.inputs import as_chunked
    >>> data = as_chunked(Factorized(np.ones((4, 2)), np.ones((2, 3))), np.zeros(4))
    >>> try:
    ...     check_row_input(DSGRegressor(), data)
    ... except ValidationError as err:
    ...     print(str(err)[:65])
    DSGRegressor takes dense rows X, but X is factorized data A = U V
    """
    if data.X is not None or ("U" in data and estimator.capabilities.factorized):
        return data
    cls = type(estimator).__name__
    if "U" not in data:
        raise ValidationError(
            f"{cls} reads rows X, but {name} has no X variable (found "
            f"{sorted(data.variables)}); give {name} as an array, a Dask array or a Dataset "
            "with an X (declare its name, e.g. ds.attrs['ooc_kernels_variables'] = "
            "{'X': 'features'})."
        )
    from ooc_kernels.estimators._registry import ESTIMATORS

    takers = sorted(n for n, c in ESTIMATORS.items()
                    if getattr(getattr(c, "capabilities", None), "factorized", False))
    n, rank = data["U"].shape
    raise ValidationError(
        f"{cls} takes dense rows X, but {name} is factorized data A = U V (U: {n} x {rank}, "
        f"V: {rank} x {data.n_features}); factorized data is for the linear models that read "
        f"it without forming A ({', '.join(takers)}). Fit one of them on it, "
        f"or, if A = U V fits, materialize it and give {cls} the rows: X = U @ V for "
        "ok.Factorized(U, V), or ooc_kernels.data.materialize(source, path) for a store, "
        "Dataset or catalog entry, then fit(ooc_kernels.data.open_zarr_dataset(path))."
    )


def unsupervised_data(data: ChunkedData) -> ChunkedData:
    """The data of an unsupervised fit: ``data`` without targets (a Dataset's ``y``, if it
    has one, is not read).

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.data.inputs import as_chunked
    >>> sorted(unsupervised_data(as_chunked(np.zeros((4, 2)), np.zeros(4))).variables)
    ['X']
    """
    if "y" not in data.variables:
        return data
    return data.replace(variables={k: v for k, v in data.variables.items() if k != "y"})


def named_sample(data: ChunkedData, X) -> ChunkedData:
    """``data`` read from the input ``X``, with ``X``'s column names when ``X`` is an
    in-memory frame whose columns are all strings (the names scikit-learn records as
    ``feature_names_in_``); lazy inputs carry their names in ``data`` already.

    Examples
    --------
    >>> import pandas as pd
    >>> from ooc_kernels.data.inputs import as_chunked
    >>> frame = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]})
    >>> named_sample(as_chunked(frame.to_numpy()), frame).feature_names
    ('a', 'b')
    """
    if data.feature_names is not None or _is_chunked_input(X):
        return data
    names = sklearn_validated(_get_feature_names, X)
    if names is None:
        return data
    return data.replace(feature_names=tuple(str(n) for n in names))


def two_sample_data(first: ChunkedData, second: ChunkedData) -> ChunkedData:
    """The data of a two-sample fit ``fit(X_p, X_q)``: the two samples paired chunk by chunk
    (:func:`~ooc_kernels.data.inputs.pair_samples`), targets dropped.

    The columns of ``X_q`` are matched to those of ``X_p`` by position, so when both
    samples name their features (give each through :func:`named_sample`) the names must
    be the same, in the same order (a ``ValidationError`` otherwise); when only one of them
    has names, an :class:`~ooc_kernels.exceptions.OocKernelsWarning` says so, as
    scikit-learn warns for a ``predict`` input without the names the model was fitted with.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.data.inputs import as_chunked
    >>> data = two_sample_data(as_chunked(np.zeros((6, 2)), chunk_size=3),
    ...                        as_chunked(np.ones((4, 2)), chunk_size=4))
    >>> sorted(data.variables), data["X_q"].chunks[0]
    (['X_p', 'X_q'], (2, 2))
    """
    names_p, names_q = first.feature_names, second.feature_names
    if (names_p is None) != (names_q is None):
        named, unnamed = ("X_p", "X_q") if names_q is None else ("X_q", "X_p")
        warnings.warn(
            f"{named} has feature names, but {unnamed} has none: the columns of X_q are "
            "taken to be those of X_p, in the same order; give both samples the same "
            "column names (or neither) to have them checked.",
            OocKernelsWarning, stacklevel=5)
    return pair_samples(unsupervised_data(first), unsupervised_data(second))


def checked_class_weights(class_weight: dict, labels: list) -> tuple:
    """The weights of ``labels`` from a ``class_weight`` dict (1 for a label it does not
    name), refused unless every one is a finite number >= 0.

    Examples
    --------
    >>> checked_class_weights({1: 3}, [0, 1])
    (1.0, 3.0)
    """
    weights = tuple(float(class_weight.get(c, 1.0)) for c in labels)
    bad = [w for w in weights if not (np.isfinite(w) and w >= 0)]
    if bad:
        raise ValidationError(
            f"class_weight {class_weight!r} holds {bad[0]!r}; class weights must be finite "
            "numbers >= 0."
        )
    return weights
