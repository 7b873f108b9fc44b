"""The trust rule and the environment rule: what an untrusted catalog's YAML may name.

:func:`check_catalog_trust` walks a parsed catalog before Intake sees it and refuses every
class, reader, data type, user-parameter type and template that could import or run code,
and every ``env(NAME)`` read the caller did not allow (see :mod:`ooc_kernels.data.catalog`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..._untrusted import short_repr as _r
from ...exceptions import CatalogError, UntrustedCatalogError

__all__ = [
    "ALLOWED_READERS",
    "ALLOWED_DATATYPES",
    "ALLOWED_USER_PARAMETERS",
    "check_catalog_trust",
]

#: Reader classes an untrusted catalog may name (they only read data).
ALLOWED_READERS = frozenset({"intake.readers.readers:XArrayDatasetReader"})
#: Data types an untrusted catalog may name.
ALLOWED_DATATYPES = frozenset({"intake.readers.datatypes:Zarr"})
#: User-parameter classes an untrusted catalog may name.
ALLOWED_USER_PARAMETERS = frozenset(
    f"intake.readers.user_parameters:{name}"
    for name in ("BaseUserParameter", "SimpleUserParameter", "OptionsUserParameter",
                 "NamedOptionsUserParameter", "MultiOptionUserParameter",
                 "BoundedNumberUserParameter")
)
_ALLOWED_ENTRY_CLS = frozenset({"intake.readers.entry:ReaderDescription"})
_ALLOWED_DATA_CLS = frozenset({"intake.readers.entry:DataDescription"})
_ALLOWED_OUTPUTS = frozenset({None, "xarray:Dataset"})
# the descriptions of a catalog, checked in this order: (top-level key, name in messages,
# allowed ``cls``, the key naming the class that reads, its allow-list, whether
# ``output_instance`` is checked)
_DESCRIPTIONS = (
    ("entries", "entry", _ALLOWED_ENTRY_CLS, "reader", ALLOWED_READERS, True),
    ("data", "data", _ALLOWED_DATA_CLS, "datatype", ALLOWED_DATATYPES, False),
)
# builtins a SimpleUserParameter may coerce values with (``dtype: eval`` would run code)
_SAFE_DTYPES = frozenset({"str", "int", "float", "bool", "list", "tuple", "dict", "set",
                          "frozenset", "complex", "object"})
_TOP_KEYS = frozenset({"version", "entries", "data", "user_parameters", "aliases", "metadata"})
_FIELD = re.compile(r"\{([^{}]*)\}")
_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DATA_REF = re.compile(r"^data\(\s*[A-Za-z0-9_.\-]+\s*(,\s*\d+\s*)?\)$")
_ENV_REF = re.compile(r"^env\(\s*[A-Za-z_][A-Za-z0-9_]*\s*\)$")
# intake also matches these *without* braces in user-parameter defaults
_CALL_TEMPLATE = re.compile(r"(func|import|pickle64)\s*\(", re.IGNORECASE)
# every environment read intake makes: ``{env(X)}`` anywhere in a string, ``env(X)`` at the
# start of a user-parameter default (or of a kwarg that sets one); matched anywhere here
_ENV_ANY = re.compile(r"env[(]([^)]+)[)]", re.IGNORECASE)
_HINT = "pass trusted=True if you trust this file"


def _key(key: Any, limit: int = 60) -> str:
    """A key (or path) of the catalog, unquoted, in an error message: at most ``limit``
    characters."""
    text = str(key)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _untrusted(where: str, what: str, source: str) -> UntrustedCatalogError:
    return UntrustedCatalogError(
        f"catalog {source}: {where} uses {what}, which could import or run code and is not "
        f"in the allow-list; {_HINT}"
    )


def _env_names(allow_env: Any) -> frozenset[str]:
    """The ``allow_env`` argument as a set of variable names."""
    if allow_env is None:
        return frozenset()
    if isinstance(allow_env, str):
        allow_env = [allow_env]
    if isinstance(allow_env, Iterable) and not isinstance(allow_env, Mapping):
        names = list(allow_env)
        if all(isinstance(n, str) and n for n in names):
            return frozenset(names)
    raise CatalogError(
        f"allow_env must be a list of environment variable names, found {allow_env!r}; e.g. "
        "allow_env=['DATA_ROOT'] (command line: --allow-env DATA_ROOT)"
    )


def _check_env(value: str, where: str, source: str, allow_env: frozenset[str]) -> None:
    for name in _ENV_ANY.findall(value):
        if name not in allow_env:
            raise UntrustedCatalogError(
                f"catalog {source}: {where} reads the environment variable {_r(name)} (in "
                f"{_r(value)}); an untrusted catalog may only read the environment variables "
                f"the caller allows, because it could send their values to any URL; pass "
                f"allow_env=[{_r(name)}] (command line: --allow-env {_key(name)}) if this catalog "
                f"may read it, or {_HINT}"
            )


def _check_value(value: Any, where: str, source: str,
                 allow_env: frozenset[str] = frozenset()) -> None:
    """Walk kwargs-like values: only plain data and harmless templates."""
    if isinstance(value, Mapping):
        if "cls" in value:
            raise _untrusted(where, f"class reference cls={_r(value['cls'])}", source)
        for k, v in value.items():
            if not isinstance(k, (str, int, float, bool)) and k is not None:
                raise _untrusted(where, f"a non-plain key {_r(k)}", source)
            _check_value(v, f"{where}.{_key(k)}", source, allow_env)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_value(v, f"{where}[{i}]", source, allow_env)
    elif isinstance(value, str):
        if _CALL_TEMPLATE.search(value):
            raise _untrusted(where, f"the template {_r(value)}", source)
        for field in _FIELD.findall(value):
            field = field.strip()
            if not (_PLAIN_NAME.match(field) or _DATA_REF.match(field)
                    or _ENV_REF.match(field)):
                raise _untrusted(where, f"the template {{{field}}} in {_r(value)}", source)
        _check_env(value, where, source, allow_env)
    elif value is None or isinstance(value, (bool, int, float)):
        return
    else:
        raise _untrusted(where, f"a Python object of type {type(value).__name__}", source)


def check_catalog_trust(spec: Mapping, source: str = "<dict>", *,
                        allow_env: Iterable[str] = ()) -> None:
    """Refuse a parsed Intake 2 catalog that could import or execute code or read secrets.

    Parameters
    ----------
    spec : mapping
        The catalog as parsed by ``yaml.safe_load`` (or ``Catalog.to_dict()``).
    source : str
        Name of the catalog in error messages.
    allow_env : iterable of str, default ()
        Environment variables the catalog may read through ``{env(NAME)}`` templates.

    Raises
    ------
    UntrustedCatalogError
        Naming the entry, the offending reference and the fix (``trusted=True``, or
        ``allow_env`` for an environment variable).
    CatalogError
        The mapping is not an Intake 2 catalog.

    Examples
    --------
    >>> bad = {"version": 2, "aliases": {}, "data": {}, "metadata": {}, "user_parameters": {},
    ...        "entries": {"x": {"reader": "os:system", "kwargs": {}}}}
    >>> check_catalog_trust(bad, "bad.yaml")
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.UntrustedCatalogError: catalog bad.yaml: entry 'x' uses reader 'os:system', ...

    An allowed reader may still only produce an ``xarray.Dataset``:

    >>> bad["entries"]["x"] = {"reader": "intake.readers.readers:XArrayDatasetReader",
    ...                        "output_instance": "pandas:DataFrame", "kwargs": {}}
    >>> check_catalog_trust(bad, "bad.yaml")
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.UntrustedCatalogError: catalog ...: entry 'x' uses output_instance 'pandas:DataFrame', ...
    """
    allow_env = _env_names(allow_env)
    _check_structure(spec, source)
    for section, label, allowed_cls, kind, allowed, outputs in _DESCRIPTIONS:
        for name, desc in (spec.get(section) or {}).items():
            where = f"{label} {_r(name)}"
            _check_entity(desc, where, source, allowed_cls)
            if desc.get(kind) not in allowed:
                raise _untrusted(where, f"{kind} {_r(desc.get(kind))}", source)
            if outputs and desc.get("output_instance") not in _ALLOWED_OUTPUTS:
                raise _untrusted(where, f"output_instance {_r(desc.get('output_instance'))}",
                                 source)
            _check_value(desc.get("kwargs") or {}, f"{where} kwargs", source, allow_env)
            _check_user_parameters(desc.get("user_parameters") or {}, where, source, allow_env)
    _check_user_parameters(spec.get("user_parameters") or {}, "the catalog", source, allow_env)
    _check_value(spec.get("aliases") or {}, "catalog aliases", source, allow_env)
    # metadata is free text: intake neither templates nor imports it when reading


def _check_structure(spec: Any, source: str) -> None:
    if not isinstance(spec, Mapping):
        raise CatalogError(
            f"catalog {source} is not an Intake 2 catalog: expected a YAML mapping, found "
            f"{type(spec).__name__}; write it with ooc_kernels.data.register_dataset"
        )
    if spec.get("version") != 2:
        raise CatalogError(
            f"catalog {source} is not an Intake 2 catalog: 'version' is "
            f"{_r(spec.get('version'))}, expected 2; convert it with intake 2 or recreate it "
            "with ooc_kernels.data.register_dataset"
        )
    extra = sorted(set(map(str, spec)) - _TOP_KEYS)
    if extra:
        raise CatalogError(
            f"catalog {source} has unknown top-level key(s) {extra}; allowed keys are "
            f"{sorted(_TOP_KEYS)}"
        )
    for key in ("entries", "data", "user_parameters", "aliases", "metadata"):
        if not isinstance(spec.get(key) or {}, Mapping):
            raise CatalogError(
                f"catalog {source}: {_r(key)} must be a mapping, found "
                f"{type(spec.get(key)).__name__}"
            )
    for key, label in _NAMED:
        for name in spec.get(key) or {}:
            if not isinstance(name, str):
                raise _not_a_name(source, f"the {label} name", name)
    for name, target in (spec.get("aliases") or {}).items():
        if not isinstance(target, str):
            raise _not_a_name(source, f"alias {_r(name)} points at the entry name", target)


# the catalog's keys whose own keys are names (of entries, data descriptions ...)
_NAMED = (("entries", "entry"), ("data", "data description"), ("aliases", "alias"),
          ("user_parameters", "user parameter"))


def _not_a_name(source: str, what: str, name: Any) -> CatalogError:
    """A name of a catalog that YAML read as a boolean, a number, None or a date."""
    return CatalogError(
        f"catalog {source}: {what} {_r(name)} is of type {type(name).__name__}, not a "
        "string: YAML reads an unquoted NO (the country code), no, yes, on, off, true, false, "
        "null, a number or a date as a value of that type, and nothing could be opened by "
        "that name; quote the name in the file ('NO': ...), or write the entry with "
        "`ooc-kernels catalog add FILE NAME STORE` (ooc_kernels.data.register_dataset)"
    )


def _check_entity(entity: Any, where: str, source: str, allowed_cls: frozenset) -> None:
    if not isinstance(entity, Mapping):
        raise CatalogError(
            f"catalog {source}: {where} must be a mapping, found {_r(entity)}; recreate it with "
            "ooc_kernels.data.register_dataset"
        )
    if "cls" in entity and entity["cls"] not in allowed_cls:
        raise _untrusted(where, f"class reference cls={_r(entity['cls'])}", source)


def _check_user_parameters(ups: Any, where: str, source: str,
                           allow_env: frozenset[str] = frozenset()) -> None:
    if not isinstance(ups, Mapping):
        raise CatalogError(f"catalog {source}: user_parameters of {where} must be a mapping")
    for name, up in ups.items():
        up_where = f"{where} user parameter {_r(name)}"
        if not isinstance(up, Mapping):
            _check_value(up, up_where, source, allow_env)
            continue
        cls = up.get("cls")
        if cls is not None and cls not in ALLOWED_USER_PARAMETERS:
            raise _untrusted(up_where, f"class reference cls={_r(cls)}", source)
        dtype = up.get("dtype")
        if dtype is not None and dtype not in _SAFE_DTYPES:
            raise _untrusted(up_where, f"dtype {_r(dtype)}", source)
        _check_value({k: v for k, v in up.items() if k not in ("cls", "dtype")}, up_where,
                     source, allow_env)


# --- location rule and path rule -------------------------------------------------------
