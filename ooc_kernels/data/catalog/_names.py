"""Catalog entry names: which names an entry may have, and how a name given by a user finds
its entry.

An entry name is a key of the catalog's YAML, a name typed on the command line, and the
file name of the store ``ooc-kernels data make`` writes for it (``OUT/NAME.zarr``).  The
rule keeps it all three: a name is NFC-normalised, then made of letters and digits of any
script, combining marks, ``_``, ``-`` and ``.`` (the characters that Python identifiers
may continue with, plus ``-`` and ``.``), and starts with a letter, a digit or ``_``.  So
``données``, ``温度`` and ``digits_deformed.v2`` are names; a path separator, a space, a
control or invisible formatting character, an empty name, and a name starting with ``.``
or ``-`` (``..``, a hidden file, a command-line option) are not.

Intake itself takes any string as an entry name, so a hand-written catalog may hold a key
spelled in another normal form (``e`` followed by a combining accent instead of ``é``):
:func:`find_entry` finds it by its NFC form, and :func:`register_dataset` replaces it
rather than writing a second entry that looks the same.

Examples
--------
>>> check_entry_name("donne\\u0301es") == "donn\\u00e9es"
True
>>> check_entry_name("../x")
Traceback (most recent call last):
...
ooc_kernels.exceptions.CatalogError: invalid entry name '../x': it contains a path separator ...
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Any

from ..._untrusted import short_repr as _r
from ...exceptions import CatalogError

__all__ = ["check_entry_name", "find_entry", "nfc"]

_RULE = ("use letters and digits (of any script), '_', '-' and '.', starting with a letter, "
         "a digit or '_' (e.g. 'digits_deformed', 'donn\u00e9es', '\u6e29\u5ea6')")


def nfc(name: Any) -> Any:
    """``name`` in Unicode normal form C (a non-string is returned as it is)."""
    return unicodedata.normalize("NFC", name) if isinstance(name, str) else name


def _why_not(name: str) -> str | None:
    """What is wrong with the NFC name ``name``, or ``None``."""
    if not name:
        return "it is empty"
    for ch in name:
        if ch in "/\\" or ch == "\0" or unicodedata.category(ch)[0] in "CZ":
            what = "a path separator" if ch in "/\\" else (
                "a space or separator" if unicodedata.category(ch)[0] == "Z"
                else "a control or formatting character")
            return f"it contains {what} ({ch!r}, U+{ord(ch):04X})"
    first = name[0]
    if not (first == "_" or (first.isalnum() and first.isidentifier())
            or unicodedata.category(first) == "Nd"):
        return f"it starts with {first!r} (U+{ord(first):04X})"
    if not ("_" + name.replace("-", "_").replace(".", "_")).isidentifier():
        bad = next(ch for ch in name if ch not in "-." and not ("_" + ch).isidentifier())
        return f"it contains {bad!r} (U+{ord(bad):04X})"
    return None


def check_entry_name(name: Any) -> str:
    """``name`` in normal form C if it may name a catalog entry, else raise.

    Raises
    ------
    CatalogError
        Not a string, empty, or a character outside the rule of this module (a path
        separator, a space, a control character, a leading ``.`` or ``-`` ...).
    """
    why = _why_not(nfc(name)) if isinstance(name, str) else "it is not a string"
    if why is not None:
        raise CatalogError(f"invalid entry name {_r(name)}: {why}; {_RULE}")
    return nfc(name)


def find_entry(names: Iterable[Any], name: Any) -> Any:
    """The key of ``names`` that ``name`` means: itself, else the one key with the same
    NFC form (``None`` when there is none, or several)."""
    names = list(names)
    if name in names or not isinstance(name, str):
        return name if name in names else None
    same = [k for k in names if isinstance(k, str) and nfc(k) == nfc(name)]
    return same[0] if len(same) == 1 else None
