"""Checks of the plain fields of a saved model's metadata (counts, numbers, flags, names):
each field with what a fit can write, refused with a :class:`ModelFormatError` naming the
field, its value and what it must be.  A careful editor can change the metadata and
recompute its checksum; these checks keep such a file from loading as another model.

Examples
--------
>>> fields = {"n_iter": ("an integer >= 0", lambda v: is_int(v, 0))}
>>> check_fields("state", fields, {"n_iter": 3}, "m.zarr")
>>> check_fields("state", fields, {"n_iter": -1}, "m.zarr")
Traceback (most recent call last):
...
ooc_kernels.exceptions.ModelFormatError: m.zarr: the metadata's fitted.state has n_iter=-1; it must be an integer >= 0; re-save the model or restore it from a backup.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ooc_kernels.exceptions import ModelFormatError

__all__ = ["check_fields", "is_int", "is_real"]


def is_int(value, low: int, high: float = math.inf) -> bool:
    """An ``int`` (not a ``bool``) in ``[low, high)``."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value < high


def is_real(value, low: float, *, strict: bool = False) -> bool:
    """A finite ``int`` or ``float`` (not a ``bool``) ``>= low`` (``> low`` if strict)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) and (value > low if strict else value >= low)


def _short(value, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def check_fields(part: str, fields: Mapping, values: Mapping, where: str) -> None:
    """Refuse the first of ``fields`` (``{name: (what it must be, test)}``) whose entry in
    ``values`` fails its test; a field ``values`` lacks (an older model) is skipped.

    Raises
    ------
    ModelFormatError
        ``"{where}: the metadata's fitted.{part} has {name}={value}; it must be {what}"``.
    """
    for name, (what, valid) in fields.items():
        if name in values and not valid(values[name]):
            raise ModelFormatError(
                f"{where}: the metadata's fitted.{part} has {name}={_short(values[name])}; "
                f"it must be {what}; re-save the model or restore it from a backup.")
