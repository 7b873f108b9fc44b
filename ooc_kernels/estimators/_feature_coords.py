"""The feature coordinate labels of a model fitted on xarray data: recorded at fit as
``feature_coords_``, compared at every later call that reads features, saved with the model.

A model reads the features of its input by position.  An xarray input whose feature
dimension has an index coordinate names its columns, so a fit on such an input records the
labels (:func:`record_feature_coords`; a fit on an input without them forgets them), and
every later input with labels (xarray labels, or a pandas or Dask DataFrame's text column
names) is checked against them (:func:`check_feature_coords`): the same labels in another
order, or other labels, are refused with a :class:`~ooc_kernels.exceptions.ValidationError`
that names the first mismatch and how to select the features in fit's order, as a pandas or
Dask DataFrame with reordered columns is refused by its column names.  An input without
labels (NumPy, Dask, a DataArray without a feature coordinate) is taken by position, as
always.  The labels are not ``feature_names_in_``: scikit-learn would then warn at every call
on NumPy input.  A model fitted on a frame (``feature_names_in_``, no ``feature_coords_``)
has its column names compared in the same way with xarray labels that are all text.

Examples
--------
>>> import numpy as np, xarray as xr
>>> from sklearn.base import BaseEstimator
>>> X = xr.DataArray(np.zeros((2, 3)), dims=("time", "channel"),
...                  coords={"channel": ["a", "b", "c"]})
>>> model = BaseEstimator()
>>> record_feature_coords(model, X)
>>> model.feature_coords_.tolist()
['a', 'b', 'c']
>>> check_feature_coords(model, X.sel(channel=["a", "b", "c"]))
>>> try:
...     check_feature_coords(model, X.sel(channel=["b", "a", "c"]))
... except ValidationError as err:
...     print(str(err)[:76])
X's feature coordinate 'channel' has the labels the model was fitted with in
"""

from __future__ import annotations

import math

import numpy as np

from ooc_kernels.data._feature_coords import (KEPT_KINDS, feature_coords, frame_columns,
                                              opened_input)
from ooc_kernels.exceptions import ModelFormatError, ValidationError

__all__ = ["ATTRIBUTE", "check_feature_coords", "check_read_input", "opened_input",
           "record_feature_coords", "restore_feature_coords", "resumed_labels_problem",
           "saved_feature_coords"]

#: The fitted attribute holding the labels.
ATTRIBUTE = "feature_coords_"

_FIX = "re-save the model or restore it from a backup"


def record_feature_coords(estimator, X) -> None:
    """Set ``estimator.feature_coords_`` from the feature labels of the fit input ``X``, or
    remove it when ``X`` has none."""
    found = feature_coords(X)
    if found is not None:
        setattr(estimator, ATTRIBUTE, found[1])
    elif hasattr(estimator, ATTRIBUTE):
        delattr(estimator, ATTRIBUTE)


def _short(values: list, limit: int = 8) -> str:
    shown = ", ".join(repr(v) for v in values[:limit])
    return f"[{shown}{', ...' if len(values) > limit else ''}]"


def _labels_to_check(estimator, X):
    """``(fitted labels, attribute, dim, given labels)``, or None when there is nothing to
    compare: the model's ``feature_coords_`` against an xarray input's labels or a frame's
    column names; without them, its ``feature_names_in_`` against xarray labels that are all
    text (``dim`` None: a frame's columns)."""
    fitted = getattr(estimator, ATTRIBUTE, None)
    if fitted is not None:
        found = feature_coords(X)
        if found is None:
            columns = frame_columns(X)
            found = None if columns is None else (None, columns)
        return None if found is None else (fitted, ATTRIBUTE, *found)
    fitted = getattr(estimator, "feature_names_in_", None)
    found = None if fitted is None else feature_coords(X)
    if found is None or not all(isinstance(v, str) for v in found[1].tolist()):
        return None
    return fitted, "feature_names_in_", *found


def _wording(name: str, dim, attribute: str) -> tuple[str, str, str, str]:
    """``(has, does not have, the fix, the labels dropped)`` of the messages."""
    if dim is None:   # a frame's columns against the labels of an xarray fit
        return (f"{name}'s columns have", f"{name}'s columns do not have",
                f"{name}[list(model.{attribute})]", f"{name}.to_numpy()")
    labels = f"model.{attribute}" if attribute == ATTRIBUTE else f"list(model.{attribute})"
    return (f"{name}'s feature coordinate {dim!r} has",
            f"{name}'s feature coordinate {dim!r} does not have",
            f"{name}.sel({{{dim!r}: {labels}}})", f"{name}.drop_vars({dim!r})")


def check_feature_coords(estimator, X, name: str = "X") -> None:
    """Refuse an input ``X`` whose feature labels (xarray) or column names (a pandas or Dask
    DataFrame) are not ``estimator.feature_coords_`` in the same order; accept an input
    without them, or any input of a model fitted without labels.  A model fitted on a frame
    (``feature_names_in_``, no ``feature_coords_``) has its column names compared in the
    same way with xarray labels that are all text.  Call it after the number of features
    was checked.

    Raises
    ------
    ValidationError
        The same labels in another order (the message names the first position that
        differs), or other labels (it names the first one the model was not fitted with);
        either way it says how to select the features as in fit.
    """
    compared = _labels_to_check(estimator, X)
    if compared is None:
        return
    import pandas as pd

    fitted, attribute, dim, given = compared
    want, got = pd.Index(fitted), pd.Index(given)
    if want.equals(got):
        return
    cls = type(estimator).__name__
    has, lacks, select, drop = _wording(name, dim, attribute)
    both = f"fitted with {_short(list(want))}, got {_short(list(got))}"
    if len(want) == len(got) and want.is_unique and got.is_unique \
            and want.isin(got).all() and got.isin(want).all():
        i = next(i for i, (a, b) in enumerate(zip(want, got)) if not a == b)
        raise ValidationError(
            f"{has} the labels the model was fitted with in another order: position {i} is "
            f"{got[i]!r}, where {cls} was fitted with {want[i]!r} ({both}); features are "
            f"read by position, so order them as in fit, e.g. {select}.")
    unknown = [v for v, known in zip(got, got.isin(want)) if not known]
    which = (f"{unknown[0]!r} (position {list(got).index(unknown[0])}) is not one of "
             "them" if unknown else "some are repeated or missing")
    raise ValidationError(
        f"{lacks} the labels {cls} was fitted with: {which} ({both}); give the features "
        f"the model was fitted with, in fit's order, e.g. {select}, or drop the labels "
        f"({drop}) if these are the same features under other names.")


def check_read_input(estimator, data, X) -> None:
    """What ``predict`` checks of an input ``X`` (opened with :func:`opened_input`) that a
    caller read as ``data`` itself and gives the model as bare arrays
    (:func:`~ooc_kernels.data.inputs.model_input`, which has no names or labels): its number
    of features and column names (the estimator's ``_check_lazy_features``, where it has
    one) and its feature labels (:func:`check_feature_coords`)."""
    check = getattr(estimator, "_check_lazy_features", None)
    if check is not None:
        check(data)
    check_feature_coords(estimator, X)


def saved_feature_coords(estimator) -> dict | None:
    """``feature_coords_`` as JSON for a model file: ``{"dtype", "values"}`` (times as
    integers of their unit), or None when the model has none."""
    labels = getattr(estimator, ATTRIBUTE, None)
    if labels is None:
        return None
    arr = np.asarray(labels)
    values = arr.astype(np.int64) if arr.dtype.kind in "Mm" else arr
    return {"dtype": arr.dtype.str, "values": values.tolist()}


def resumed_labels_problem(saved_base, estimator) -> list[str]:
    """The difference, if any, between the feature labels of a checkpoint's model
    (``saved_base``: its metadata's ``base``) and those this fit recorded from its input:
    a resumed fit continues the checkpoint's model, which keeps its labels.  Nothing to
    compare for a checkpoint without the entry.

    Examples
    --------
    >>> from sklearn.base import BaseEstimator
    >>> resumed_labels_problem({"feature_coords_": None}, BaseEstimator())
    []
    """
    if not isinstance(saved_base, dict) or ATTRIBUTE not in saved_base:
        return []
    then, now = saved_base[ATTRIBUTE], saved_feature_coords(estimator)
    if then == now:
        return []

    def shown(entry):
        return "none" if not isinstance(entry, dict) else _short(list(entry.get("values", [])))
    return [f"dataset feature labels: checkpoint {shown(then)}, this fit's input "
            f"{shown(now)}"]


def _valid_value(kind: str):
    if kind == "b":
        return lambda v: isinstance(v, bool)
    if kind in "iuMm":
        return lambda v: isinstance(v, int) and not isinstance(v, bool)
    if kind == "f":
        return lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) \
            and math.isfinite(v)
    return lambda v: isinstance(v, str)


def restore_feature_coords(estimator, saved, n_features: int, where: str) -> None:
    """Set ``feature_coords_`` from :func:`saved_feature_coords`'s entry of a model file
    (absent, None: the model has none).

    Raises
    ------
    ModelFormatError
        The entry is not ``n_features`` labels of a kind a fit records.
    """
    if saved is None:
        if hasattr(estimator, ATTRIBUTE):
            delattr(estimator, ATTRIBUTE)
        return
    problem = None
    dtype = saved.get("dtype") if isinstance(saved, dict) else None
    values = saved.get("values") if isinstance(saved, dict) else None
    try:
        kind = np.dtype(dtype).kind if isinstance(dtype, str) else None
    except TypeError:
        kind = None
    if kind is None or kind not in KEPT_KINDS + "O":
        problem = "a dtype of numbers, bools, text or times"
    elif not isinstance(values, list) or len(values) != n_features \
            or not all(map(_valid_value(kind), values)):
        problem = f"{n_features} values of dtype {dtype}"
    if problem is not None:
        text = repr(saved)
        raise ModelFormatError(
            f"{where}: the metadata's base.feature_coords_ must be {{'dtype', 'values'}} "
            f"with {problem}, found {text[:80] + ('...' if len(text) > 80 else '')}; "
            f"{_FIX}.")
    if kind in "Mm":
        labels = np.asarray(values, dtype=np.int64).astype(np.dtype(dtype))
    elif kind == "O":
        labels = np.array(values, dtype=object)
    else:
        labels = np.asarray(values, dtype=np.dtype(dtype))
    setattr(estimator, ATTRIBUTE, labels)
