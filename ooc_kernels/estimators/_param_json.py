"""Hyperparameter values as JSON in a saved model or checkpoint, and back.

Numbers, strings, booleans and None are saved as they are, NumPy scalars as the Python
number they hold, a vector of numbers as a list of floats, a
:class:`~ooc_kernels.features.Kernel` tagged ``{"Kernel": terms}``.  A mapping whose keys
are all ``str`` (``kernel_params``) is saved as a JSON object.  A mapping with other keys
(``class_weight={0: 1.0, 1: 2.0}``: keys are labels) is tagged ``{"Mapping": [[key, type,
value], ...]}``, one entry per item in the mapping's order, where ``type`` names the key's
type: ``"int"``, ``"float"``, ``"bool"`` or ``"str"`` for Python keys, the NumPy dtype
(``"<u8"``, ``"<f4"``, ``"|b1"``, ``"<U3"`` ...) for NumPy keys, so a loaded model has the
keys it was saved with, of the same type (``np.uint64(2**63 + 5)`` stays that number).

Examples
--------
>>> import numpy as np
>>> json_param("class_weight", {0: 1.0, np.uint64(7): 2})
{'Mapping': [[0, 'int', 1.0], [7, '<u8', 2]]}
>>> decoded_mapping("class_weight", {"Mapping": [[0, "int", 1.0], [7, "<u8", 2]]}, "m.zarr")
{0: 1.0, np.uint64(7): 2}
>>> json_param("kernel_params", {"gamma": np.float32(0.5)})
{'gamma': 0.5}
"""

from __future__ import annotations

import math

import numpy as np

from ooc_kernels.exceptions import ModelFormatError

__all__ = ["MAPPING_TAG", "decoded_mapping", "json_param"]

#: The key of the tagged form of a mapping whose keys are not all strings.
MAPPING_TAG = "Mapping"
#: Tags of hyperparameter values that are objects (a mapping that is exactly one of these
#: keys is always saved tagged, so that loading never mistakes it for the tagged form).
_TAGS = (MAPPING_TAG, "Kernel")
_PYTHON_KEYS = {bool: "bool", int: "int", float: "float", str: "str"}
_KEY_KINDS = "biufU"
_FIX = "re-save the model or restore it from a backup"


def _scalar(value):
    """A JSON scalar for ``value`` (a NumPy scalar as its Python number), or raise
    ``TypeError``."""
    if isinstance(value, np.generic) and value.dtype.kind in "biufU":
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(value)


def _key_entry(key) -> list:
    """``[key, type]`` of a mapping's key, or raise ``TypeError`` naming why not."""
    kind = _PYTHON_KEYS.get(type(key))
    if kind is not None:
        plain = key
    elif isinstance(key, np.generic) and key.dtype.kind in _KEY_KINDS:
        kind, plain = key.dtype.str, key.item()
        if not isinstance(plain, (bool, int, float, str)):  # a long double
            raise TypeError(f"its key {key!r} has dtype {key.dtype}, which JSON cannot hold")
    else:
        raise TypeError(f"its key {key!r} is a {type(key).__name__}, not a label (an int, "
                        "float, bool or str, or a NumPy scalar of one)")
    if isinstance(plain, float) and not math.isfinite(plain):
        raise TypeError(f"its key {key!r} is not a finite number")
    return [plain, kind]


def _advice(name: str, value) -> str:
    if name == "random_state" or isinstance(value, (np.random.RandomState,
                                                    np.random.Generator)):
        return (f"set {name} to an int seed or None before saving (e.g. {name}=0; the "
                "generator object itself cannot be saved)")
    if isinstance(value, dict):
        return (f"give {name} keys that are labels (int, float, bool or str, or NumPy "
                "scalars of those) and values that are numbers, strings, booleans or None")
    return (f"set {name} to a number, a string, a bool, None, a list of numbers or a "
            "mapping of such values before saving")


def json_param(name: str, value):
    """The JSON form of hyperparameter ``name``'s ``value`` (see the module docstring).

    Raises
    ------
    ModelFormatError
        ``value`` has no JSON form: the message names the parameter, the value, why and
        what to set instead.
    """
    from ooc_kernels.features.objects import Kernel

    why = ""
    if isinstance(value, Kernel):  # a kernel object (``kernel=Kernel(...)``), tagged
        return {"Kernel": str(value)}
    if isinstance(value, (list, tuple, np.ndarray)) and np.ndim(value) == 1 and all(
            isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
            for v in value):  # a vector of numbers (a per-input bandwidth)
        return [float(v) for v in value]
    try:
        if not isinstance(value, dict):
            return _scalar(value)
        values = {k: _scalar(v) for k, v in value.items()}
        if all(type(k) is str for k in value) and not (len(value) == 1 and
                                                        next(iter(value)) in _TAGS):
            return values  # parameters of a parameter (kernel_params)
        return {MAPPING_TAG: [_key_entry(k) + [v] for k, v in values.items()]}
    except TypeError as err:
        if isinstance(value, dict) and err.args and isinstance(err.args[0], str):
            why = f": {err.args[0]}"
        elif isinstance(value, dict):
            why = f": its value {err.args[0]!r} is not a number, string, bool or None"
    raise ModelFormatError(
        f"parameter {name}={value!r} cannot be saved as JSON{why}; {_advice(name, value)}."
    )


def decoded_mapping(name: str, value: dict, where: str) -> dict:
    """The mapping of the tagged form ``{"Mapping": [[key, type, value], ...]}``.

    Raises
    ------
    ModelFormatError
        The entries are not of that form: an unknown key type, a key that is not a value of
        its type, a key given twice, a value that is not a JSON scalar.
    """
    def bad(why):
        return ModelFormatError(f"{where}: the model file's {name}={value!r} {why}; the file "
                                f"was edited or damaged; {_FIX}.")

    entries = value.get(MAPPING_TAG)
    if not isinstance(entries, list):
        raise bad("must hold a list of [key, type, value] entries")
    out = {}
    for entry in entries:
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[1], str)):
            raise bad(f"has an entry {entry!r} that is not [key, type, value]")
        plain, kind, item = entry
        key = _decoded_key(plain, kind)
        if key is None:
            raise bad(f"has a key {plain!r} that is not a label of type {kind!r}")
        if key in out:
            raise bad(f"gives the key {plain!r} twice")
        if not (item is None or isinstance(item, (bool, int, float, str))):
            raise bad(f"has a value {item!r} that is not a number, string, bool or None")
        out[key] = item
    return out


def _decoded_key(plain, kind: str):
    """The key ``plain`` of type ``kind``, or None where it is not one."""
    for python, name in _PYTHON_KEYS.items():
        if kind == name:
            ok = type(plain) is python and not (python is float and not math.isfinite(plain))
            return plain if ok else None
    try:
        dtype = np.dtype(kind)
        if dtype.kind not in _KEY_KINDS or type(plain) not in _PYTHON_KEYS:
            return None
        key = dtype.type(plain)
    except (TypeError, ValueError, OverflowError):
        return None
    same = key.item() == plain and type(key.item()) is type(plain)
    return key if same and key.dtype.str == kind else None
