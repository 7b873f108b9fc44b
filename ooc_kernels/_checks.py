"""The one check for NaN/inf values in a chunk, and its error naming the chunk and row.

Used by the chunk tasks of the solvers, by the lazy per-chunk checks of
:mod:`ooc_kernels.data.integrity` and by the median-bandwidth sample of the estimators.
:func:`check_plain_array` refuses an in-memory masked array that masks values and a
structured (record) array.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels._checks import check_finite
>>> check_finite(np.array([[1.0, np.inf]]), "X", chunk=3)
Traceback (most recent call last):
...
ooc_kernels.exceptions.InvalidDataError: X has a non-finite value (inf) in chunk 3, row 0, feature 1; remove or impute the invalid values before fitting.
"""

from __future__ import annotations

import os

import numpy as np

from ooc_kernels.exceptions import InputTypeError, InvalidDataError, ValidationError

__all__ = ["RowOrigin", "SampleOrigin", "check_finite", "check_plain_array",
           "non_finite_error"]

_FLOAT32_MAX = float(np.finfo(np.float32).max)


def non_finite_error(var: str, value, chunk, row: int, feature: int | None = None,
                     context: str = "", hint: str = "") -> InvalidDataError:
    """The error for a NaN/inf ``value`` of variable ``var`` at ``chunk``/``row`` (``hint``:
    a sentence added at the end)."""
    where = f"chunk {chunk}, row {row}" + ("" if feature is None else f", feature {feature}")
    shown = "" if value is None else f" ({value!r})"
    what = "targets" if var == "y" else "values"
    return InvalidDataError(
        f"{var} has a non-finite value{shown} in {where}{context}; remove or impute the "
        f"invalid {what} before fitting.{hint}"
    )


class RowOrigin:
    """Where the rows of a task's input come from: its chunks concatenated in order, of which
    the rows at ``kept`` (all rows when None) remain.

    Examples
    --------
    >>> RowOrigin((7, 2), (3, 4)).locate(5)
    (2, 2)
    >>> RowOrigin((7, 2), (3, 4), kept=np.array([0, 4, 6])).locate(1)
    (2, 1)
    """

    def __init__(self, chunks, sizes, kept=None):
        self.chunks = tuple(int(c) for c in chunks)
        self.starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.kept = kept

    def locate(self, row: int) -> tuple[int, int]:
        """``(chunk, row inside the chunk)`` of row ``row`` of the task's input."""
        row = int(row if self.kept is None else self.kept[row])
        i = int(np.searchsorted(self.starts, row, side="right")) - 1
        return self.chunks[i], row - int(self.starts[i])

    def describe(self) -> str:
        return (f"chunk {self.chunks[0]}" if len(self.chunks) == 1
                else f"chunks {', '.join(map(str, self.chunks))}")

    def keep(self, mask: np.ndarray) -> "RowOrigin":
        """The origin of the rows left after selecting ``mask``."""
        rows = np.flatnonzero(mask)
        out = RowOrigin.__new__(RowOrigin)
        out.chunks, out.starts = self.chunks, self.starts
        out.kept = rows if self.kept is None else self.kept[rows]
        return out


class SampleOrigin(RowOrigin):
    """Where the rows of a sample drawn from several chunks come from: row ``i`` is row
    ``row_of[i]`` of chunk ``chunk_of[i]``.  Same interface as :class:`RowOrigin`.

    Examples
    --------
    >>> SampleOrigin([3, 3, 5], [10, 40, 2], "the rows sampled").locate(2)
    (5, 2)
    """

    def __init__(self, chunk_of, row_of, what: str = "the rows sampled"):
        self.chunk_of = np.asarray(chunk_of, dtype=np.int64)
        self.row_of = np.asarray(row_of, dtype=np.int64)
        self.what = what

    def locate(self, row: int) -> tuple[int, int]:
        return int(self.chunk_of[row]), int(self.row_of[row])

    def describe(self) -> str:
        return self.what

    def keep(self, mask: np.ndarray) -> "SampleOrigin":
        return SampleOrigin(self.chunk_of[mask], self.row_of[mask], self.what)


def check_finite(values: np.ndarray, var: str, chunk) -> None:
    """Raise :func:`non_finite_error` for the first NaN/inf of one chunk (1-D or 2-D).

    ``chunk`` is the chunk index, or a :class:`RowOrigin` for a task reading several chunks
    (the error then names the chunk and row the value came from).
    """
    values = np.asarray(values)  # one chunk (or one task's group of chunks)
    if values.dtype.kind not in "fc" or values.size == 0:
        return
    ok = np.isfinite(values)
    if ok.all():
        return
    pos = tuple(int(v) for v in np.argwhere(~ok)[0])
    row = pos[0]
    if isinstance(chunk, RowOrigin):
        chunk, row = chunk.locate(row)
    value = values[pos].item()
    hint = ""
    if values.dtype == np.float32 and value in (np.inf, -np.inf):  # perhaps a finite input cast
        hint = (f" A finite value beyond float32's range (about {_FLOAT32_MAX:.1e} in "
                "magnitude) becomes inf when cast to float32: fit with dtype='float64' to "
                "keep such values, or rescale them.")
    raise non_finite_error(var, value, chunk, row, pos[1] if len(pos) > 1 else None,
                           hint=hint)


def _dates_as_data(value: np.ndarray, name: str) -> InputTypeError:
    """The error for a NumPy array of dates or durations given as data: NumPy would make
    them counts of their unit, a scale no one chose."""
    unit = np.datetime_data(value.dtype)[0]
    unit = unit if unit != "generic" else "s"
    if value.dtype.kind == "M":
        what, how = "dates", (f"{name} = ({name} - np.datetime64('1970-01-01')) / "
                              f"np.timedelta64(1, '{unit}') ({unit} since 1970)")
    else:
        what, how = "durations", f"{name} = {name} / np.timedelta64(1, '{unit}') (in {unit})"
    return InputTypeError(
        f"{name} must hold numbers, but it holds {what} (dtype {value.dtype}): convert "
        f"them to numbers of a unit you choose, e.g. {how}."
    )


def check_plain_array(value, name: str) -> None:
    """Refuse a NumPy masked array with masked values (NumPy's conversions drop the mask
    and keep the values under it, which would be read as data), a NumPy array of dates or
    durations (NumPy would read them as counts of their unit), a structured (record)
    array (named fields, not columns), and a path or other text given as data (a Zarr
    store's path as ``X``: scikit-learn's checks would report a missing ``y`` or a string
    that cannot be converted to float, never how to read the store).

    Examples
    --------
    >>> import numpy as np
    >>> check_plain_array(np.ma.masked_array([1.0, 2.0], mask=[False, True]), "y")
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.ValidationError: y is a masked array with 1 masked value ...
    """
    if isinstance(value, (str, bytes, os.PathLike)):
        raise _path_as_data(value, name)
    fields = getattr(getattr(value, "dtype", None), "names", None)
    if isinstance(value, np.ndarray) and value.dtype.kind in "mM":
        raise _dates_as_data(value, name)
    if isinstance(value, np.ndarray) and fields:
        raise ValidationError(
            f"{name} is a structured array with fields {list(fields)}; the estimators take "
            f"columns of numbers: convert it, e.g. {name} = numpy.lib.recfunctions."
            f"structured_to_unstructured({name}) (of some fields: "
            f"structured_to_unstructured({name}[[{fields[0]!r}, ...]]))."
        )
    if not isinstance(value, np.ma.MaskedArray):
        return
    mask = np.ma.getmaskarray(value)   # the caller's in-memory array
    if not mask.any():
        return
    first = tuple(int(i) for i in np.argwhere(mask)[0])
    where = f"row {first[0]}" + (f", column {first[1]}" if len(first) > 1 else "")
    count = int(mask.sum())
    drop = (f"{name}[~{name}.mask.any(axis=1)] (and the same rows of y)" if value.ndim == 2
            else f"the rows where {name}.mask is True")
    raise ValidationError(
        f"{name} is a masked array with {count} masked value{'s' if count > 1 else ''} (the "
        f"first at {where}); NumPy's conversion keeps the values under the mask, which "
        f"would be read as data. Fill them, e.g. {name}.filled(np.nan) (and fit with "
        f"on_invalid='skip' to leave those rows out), or drop them: {drop}."
    )


def _path_as_data(value, name: str) -> InputTypeError:
    """The error for text (a path, most likely) where ``name`` must hold data."""
    shown = repr(os.fspath(value) if isinstance(value, os.PathLike) else value)
    if len(shown) > 200:
        shown = f"{shown[:200]}... ({len(shown)} characters in all)"
    return InputTypeError(
        f"{name} is {type(value).__name__} {shown}, not data; the estimators take arrays, "
        "DataFrames, Dask or xarray objects. For a Zarr store at that path, pass the "
        f"store opened as a Dataset: ooc_kernels.data.open_zarr_dataset({shown}) (with "
        "variables={'X': NAME, 'y': NAME} for a store whose variables have other names); "
        "for a catalog entry, ooc_kernels.open_dataset(catalog, entry)."
    )
