"""Parameter values as users write them: on the command line and in pipeline files.

YAML 1.1 (PyYAML) reads ``1e3`` and ``2e5`` as strings, and ``-p eta0=2e5`` reaches the
command line as text.  :func:`coerce_number` turns every string written as a decimal number
into that number, and leaves every other string alone (``"median"``, ``"logistic"``).

Rules
-----
* the accepted forms are ``[+-]digits[.digits][(e|E)[+-]digits]`` and ``.digits...``,
  with single underscores allowed between digits (``1_000``), surrounding blanks ignored;
* a number written without a decimal point whose value is a whole number is an ``int``
  (``1000``, ``1_000``, ``2e5``, ``1E+3``), so it is accepted where an integer is required
  (``n_features=1e3``) and, like every int, where a real number is;
* anything else is a ``float`` (``1e-3``, ``.5``, ``2.0e5``, ``3.``, ``1e400`` = inf).

Examples
--------
>>> from ooc_kernels._params import coerce_number, parse_param_value
>>> [coerce_number(s) for s in ["2e5", "1e-3", "1E+3", ".5", "1_000", "2.0e5", "median"]]
[200000, 0.001, 1000, 0.5, 1000, 200000.0, 'median']
>>> parse_param_value("null"), parse_param_value("true"), parse_param_value("logistic")
(None, True, 'logistic')
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = ["coerce_number", "coerce_numbers", "parse_count", "parse_param_value",
           "unknown_key_hint"]

_DIGITS = r"\d(?:_?\d)*"
_NUMBER = re.compile(rf"[+-]?(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?|\.{_DIGITS})"
                     rf"(?:[eE][+-]?{_DIGITS})?")


def coerce_number(value: Any) -> Any:
    """``value`` as a number when it is a string written as a decimal number, else unchanged.

    Parameters
    ----------
    value : object
        Typically a string from YAML or the command line; non-strings are returned as is.

    Returns
    -------
    int, float or the input
        See the module docstring for when the result is an ``int``.

    Examples
    --------
    >>> coerce_number(" 1e3 "), coerce_number("-2.5"), coerce_number("1e"), coerce_number(7)
    (1000, -2.5, '1e', 7)
    """
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not _NUMBER.fullmatch(text):
        return value
    plain = text.replace("_", "")
    try:
        exact = Decimal(plain)
    except InvalidOperation:  # pragma: no cover - the pattern only lets numbers through
        return value
    if "." not in plain and exact.adjusted() < 19 and exact == exact.to_integral_value():
        return int(exact)  # a whole number below 1e19 (larger ones stay floats: no huge ints)
    return float(plain)


#: The largest count :func:`parse_count` takes (a 64-bit signed integer's largest value).
MAX_COUNT = 2**63 - 1


def parse_count(value: Any, *, minimum: int = 0) -> int:
    """``value`` as a whole count of at least ``minimum``: an ``int``, or text written as a
    decimal number whose value is whole (``"1000"``, ``"1e6"``, ``"2.5e5"``, ``"1_000"``).

    Raises
    ------
    ValueError
        The value is not a number, not a whole number (``"1.5"``, ``"1e-3"``), below
        ``minimum`` or above :data:`MAX_COUNT`; the message names the value and why.

    Examples
    --------
    >>> parse_count("1e6"), parse_count("2.5e5"), parse_count(" 1_000 "), parse_count(7)
    (1000000, 250000, 1000, 7)
    >>> parse_count("1.5")
    Traceback (most recent call last):
    ...
    ValueError: '1.5' is not a whole number; give a count such as 1000, 1e6 or 2.5e5
    """
    if isinstance(value, int) and not isinstance(value, bool):
        exact = Decimal(value)
    elif isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        exact = Decimal(value.strip().replace("_", ""))
    else:
        raise ValueError(f"{value!r} is not a number; give a count such as 1000, 1e6 or "
                         "2.5e5")
    if exact != exact.to_integral_value():
        raise ValueError(f"{value!r} is not a whole number; give a count such as 1000, 1e6 "
                         "or 2.5e5")
    if exact < minimum:
        raise ValueError(f"{value!r} is {'negative' if exact < 0 else 'too small'}: the "
                         f"count must be at least {minimum}")
    if exact > MAX_COUNT:
        raise ValueError(f"{value!r} is too large: the count must be at most {MAX_COUNT} "
                         f"(about {float(MAX_COUNT):.1e})")
    return int(exact)


def coerce_numbers(params: Mapping[str, Any] | None) -> dict:
    """A copy of ``params`` with :func:`coerce_number` applied to every value.

    Examples
    --------
    >>> coerce_numbers({"eta0": "2e5", "loss": "logistic", "t0": 1000.0})
    {'eta0': 200000, 'loss': 'logistic', 't0': 1000.0}
    """
    return {key: coerce_number(value) for key, value in dict(params or {}).items()}


def parse_param_value(text: str) -> Any:
    """The value of a command-line ``KEY=VALUE`` pair.

    YAML scalars (``null``, ``true``, ``[1, 2]``) are read as YAML, then numbers in any
    of the forms above are made numbers.  A mapping that sets a key twice or uses an alias
    is a :class:`~ooc_kernels.exceptions.ValidationError`
    (:func:`ooc_kernels._untrusted.load_yaml`).

    Examples
    --------
    >>> parse_param_value("2e5"), parse_param_value("1_000"), parse_param_value("0.5")
    (200000, 1000, 0.5)
    """
    import yaml

    from ooc_kernels._untrusted import load_yaml, short_repr
    from ooc_kernels.exceptions import ValidationError

    try:  # no aliases, no key set twice (``{nu: 0.5, nu: 1.5}``): a ValidationError
        value = load_yaml(text, source=f"the value {short_repr(text)}", error=ValidationError)
    except yaml.YAMLError:
        value = text  # e.g. "a: b: c": not YAML, so a plain string
    return coerce_number(value)


def unknown_key_hint(key: str, valid: Iterable[str]) -> str:
    """``did you mean 'x'? valid keys: ...`` for an unknown parameter name.

    Examples
    --------
    >>> unknown_key_hint("n_feature", ["n_features", "n_epochs", "loss"])
    "did you mean 'n_features'? valid keys: loss, n_epochs, n_features"
    >>> unknown_key_hint("zzz", ["a", "b"])
    'valid keys: a, b'
    """
    valid = sorted(valid)
    close = difflib.get_close_matches(str(key), valid, n=1)
    listing = f"valid keys: {', '.join(valid)}"
    return f"did you mean {close[0]!r}? {listing}" if close else listing
