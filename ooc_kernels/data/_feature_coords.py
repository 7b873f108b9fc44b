"""The coordinate labels of an xarray input's feature dimension: what a model records at fit
and compares at every later call (:mod:`ooc_kernels.estimators._feature_coords`).

A DataArray's feature dimension is its second; a Dataset's is the ``feature`` dimension of
its schema's variable (``X`` of the supervised schema, ``V`` of the factorized one), found
under the name the Dataset declares (``ooc_kernels_variables``); a
:class:`~ooc_kernels.data.factorized.Factorized` input's is the second dimension of a
DataArray ``V``.  Only a dimension with an index coordinate has labels.

Labels keep their type when it is a number, a bool, text or a time (so that
``X.sel({dim: labels})`` selects them); labels of any other kind (Python objects that are
not text, bytes, complex numbers) and floats that are not all finite are taken as their
text, ``str(label)``.

Examples
--------
>>> import numpy as np, xarray as xr
>>> X = xr.DataArray(np.zeros((2, 3)), dims=("time", "channel"),
...                  coords={"channel": ["a", "b", "c"]})
>>> dim, labels = feature_coords(X)
>>> dim, labels.tolist()
('channel', ['a', 'b', 'c'])
>>> feature_coords(xr.DataArray(np.zeros((2, 3)))) is None
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["feature_coords", "frame_columns", "labels_of", "opened_input"]

#: dtype kinds whose labels are kept as they are (bool, integers, floats, text, times).
KEPT_KINDS = "biufUMm"


def opened_input(X: Any) -> Any:
    """An Intake reader's Dataset, read once with its entry's declaration applied (as
    :func:`~ooc_kernels.data.inputs.as_chunked` reads it); any other input as it is."""
    from ooc_kernels.data._frames import _dask_frame_kind
    from ooc_kernels.data.inputs import _read_entry

    if (_dask_frame_kind(X) is None and hasattr(X, "read") and callable(X.read)
            and not isinstance(X, np.ndarray)):
        return _read_entry(X)
    return X


def labels_of(values: Any) -> np.ndarray:
    """Coordinate labels as the model keeps them: numbers, bools, text and times as they
    are, anything else (and floats that are not all finite) as text.

    Examples
    --------
    >>> labels_of(np.array([1.5, np.nan])).tolist()
    ['1.5', 'nan']
    >>> labels_of(np.array(["a", 2], dtype=object)).tolist()
    ['a', '2']
    """
    arr = np.asarray(values)
    kind = arr.dtype.kind
    if kind in KEPT_KINDS and not (kind == "f" and not np.isfinite(arr).all()):
        return arr
    if kind == "O" and all(isinstance(v, str) for v in arr.tolist()):
        return arr
    return np.array([str(v) for v in arr.tolist()], dtype=object)


def _feature_variable(X: Any) -> tuple[Any, int] | None:
    """The xarray variable holding ``X``'s features and the position of its feature dim."""
    import xarray as xr

    from ooc_kernels.data.declarations import FEATURE_DIM, VARIABLES_ATTR
    from ooc_kernels.data.factorized import Factorized

    if isinstance(X, Factorized):
        return (X.V, 1) if isinstance(X.V, xr.DataArray) and X.V.ndim == 2 else None
    if isinstance(X, xr.DataArray):
        return (X, 1) if X.ndim == 2 else None
    if not isinstance(X, xr.Dataset):
        return None
    from ooc_kernels.data.schema import get_schema

    try:
        schema = get_schema(None, X.attrs)
    except Exception:  # noqa: BLE001  (a bad schema attribute: as_chunked says what is wrong)
        return None
    declared = X.attrs.get(VARIABLES_ATTR)
    declared = declared if isinstance(declared, Mapping) else {}
    for v in schema.variables:
        if FEATURE_DIM not in v.dims:
            continue
        name = declared.get(v.name, v.name)
        if name in X.variables and X[name].ndim == len(v.dims):
            return X[name], v.dims.index(FEATURE_DIM)
    return None


def feature_coords(X: Any) -> tuple[str, np.ndarray] | None:
    """``(dim, labels)`` of the feature dimension of an xarray input (or a
    :class:`~ooc_kernels.data.factorized.Factorized` one with a DataArray ``V``) when that
    dimension has an index coordinate; None for any other input, and for a feature
    dimension without labels.  Reads no data: the labels are the coordinate's index, held in
    memory by xarray."""
    found = _feature_variable(X)
    if found is None:
        return None
    var, pos = found
    dim = var.dims[pos]
    index = var.indexes.get(dim)
    if index is None or len(index) != var.shape[pos]:
        return None
    return str(dim), labels_of(index.to_numpy())


def frame_columns(X: Any) -> np.ndarray | None:
    """The column names of a pandas or Dask DataFrame when every one is text (the names
    scikit-learn records as ``feature_names_in_``), None for any other input.

    Examples
    --------
    >>> import pandas as pd
    >>> frame_columns(pd.DataFrame({"b": [1.0], "a": [2.0]})).tolist()
    ['b', 'a']
    >>> frame_columns(pd.DataFrame([[1.0, 2.0]])) is None
    True
    """
    import pandas as pd

    from ooc_kernels.data._frames import _dask_frame_kind, frame_feature_names
    from ooc_kernels.exceptions import InputTypeError

    if not (isinstance(X, pd.DataFrame) or _dask_frame_kind(X) == "frame"):
        return None
    try:
        names = frame_feature_names(X)
    except InputTypeError:   # names of mixed types: the input's validation refuses them
        return None
    return None if names is None else np.array(names, dtype=object)
