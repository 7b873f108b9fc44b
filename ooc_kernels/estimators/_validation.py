"""Hyperparameter checks shared by the estimators (errors from the library's hierarchy)."""

from __future__ import annotations

import numbers
from typing import Any

from ooc_kernels.exceptions import ValidationError

__all__ = ["check_int", "check_float", "check_option"]


def check_int(name: str, value: Any, *, low: int | None = None) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise ValidationError(f"{name} must be an integer, got {value!r}.")
    if low is not None and value < low:
        raise ValidationError(f"{name} must be >= {low}, got {value!r}.")
    return int(value)


def check_float(name: str, value: Any, *, low: float | None = None, low_open: bool = False,
                ) -> float:
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise ValidationError(f"{name} must be a number, got {value!r}.")
    value = float(value)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValidationError(f"{name} must be finite, got {value!r}.")
    if low is not None and (value <= low if low_open else value < low):
        op = ">" if low_open else ">="
        raise ValidationError(f"{name} must be {op} {low}, got {value!r}.")
    return value


def check_option(name: str, value: Any, options: tuple[str, ...]) -> str:
    if value not in options:
        raise ValidationError(
            f"{name}={value!r} is not supported; use one of {', '.join(map(repr, options))}."
        )
    return value
