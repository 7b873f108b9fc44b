"""Intake 2 catalogs of ``ooc_kernels`` datasets, opened safely.

A catalog is an Intake 2 YAML file (``version: 2``).  Each dataset is a reader entry
``intake.readers.readers:XArrayDatasetReader`` over a data entry
``intake.readers.datatypes:Zarr`` whose ``url`` is relative to the catalog's folder
(``{CATALOG_DIR}/data/NAME.zarr``).  :func:`register_dataset` writes such entries.

Trust rule
----------
Intake 2 catalogs can import and call arbitrary Python (reader classes, ``cls`` keys,
``{func(...)}``/``{import(...)}``/``{pickle64(...)}`` templates, user-parameter types).
Unless ``trusted=True``, a catalog file is parsed with ``yaml.safe_load`` and checked
*before* Intake sees it: every reader, data type, ``cls`` and user-parameter type must be in
a small allow-list of classes that only read data, and every template must be a plain
parameter (``{CATALOG_DIR}``), ``{data(...)}`` or ``{env(...)}``.  Anything else raises
:class:`~ooc_kernels.exceptions.UntrustedCatalogError` without importing anything.

Path rule
---------
Every local path an entry reads (after templates such as ``{CATALOG_DIR}``, user parameters
and ``{env(...)}`` are filled in, ``..`` removed and symbolic links followed) must lie inside
the catalog file's folder, so a catalog cannot reach ``../../home/me/.ssh`` or ``/etc``.
Otherwise :class:`PathEscapeError` is raised unless the caller passes
``allow_outside=True`` (any path) or ``allow_outside=[folder, ...]`` (these folders as
well).  The rule holds for trusted catalogs too; remote URLs (``s3://``, ``https://`` ...)
are not local paths and are not checked.

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
ooc_kernels.data.catalog.PathEscapeError: cannot register entry 'krr' ...
>>> register_dataset(outside, "krr", p, allow_outside=[os.path.join(d, "data")])
>>> open_dataset(outside, "krr", allow_outside=[os.path.join(d, "data")]).sizes["sample"]
100
"""

from __future__ import annotations

import os
import re
import uuid
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import xarray as xr
import yaml

from ..exceptions import CatalogError, UnknownEntryError, UntrustedCatalogError
from .schema import validate_dataset


class PathEscapeError(CatalogError):
    """A catalog entry's data lies outside the catalog's folder and this was not allowed.

    Raised by every function of :mod:`ooc_kernels.data.catalog` (reading and
    :func:`register_dataset`); pass ``allow_outside=True`` or a list of allowed folders.
    """


__all__ = [
    "ALLOWED_READERS",
    "ALLOWED_DATATYPES",
    "ALLOWED_USER_PARAMETERS",
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
_HINT = "pass trusted=True if you trust this file"

#: ``allow_outside`` argument: False (only the catalog's folder), True (anywhere) or an
#: iterable of extra folders that entries may read from.
AllowOutside = bool | Iterable[str | os.PathLike]



# --- trust check -----------------------------------------------------------------------

def _untrusted(where: str, what: str, source: str) -> UntrustedCatalogError:
    return UntrustedCatalogError(
        f"catalog {source}: {where} uses {what}, which could import or run code and is not "
        f"in the allow-list; {_HINT}"
    )


def _check_value(value: Any, where: str, source: str, *, defaults: bool = False) -> None:
    """Walk kwargs-like values: only plain data and harmless templates."""
    if isinstance(value, Mapping):
        if "cls" in value:
            raise _untrusted(where, f"class reference cls={value['cls']!r}", source)
        for k, v in value.items():
            if not isinstance(k, (str, int, float, bool)) and k is not None:
                raise _untrusted(where, f"a non-plain key {k!r}", source)
            _check_value(v, f"{where}.{k}", source, defaults=defaults)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_value(v, f"{where}[{i}]", source, defaults=defaults)
    elif isinstance(value, str):
        if _CALL_TEMPLATE.search(value):
            raise _untrusted(where, f"the template {value!r}", source)
        for field in _FIELD.findall(value):
            field = field.strip()
            if not (_PLAIN_NAME.match(field) or _DATA_REF.match(field)
                    or _ENV_REF.match(field)):
                raise _untrusted(where, f"the template {{{field}}} in {value!r}", source)
    elif value is None or isinstance(value, (bool, int, float)):
        return
    else:
        raise _untrusted(where, f"a Python object of type {type(value).__name__}", source)


def check_catalog_trust(spec: Mapping, source: str = "<dict>") -> None:
    """Refuse a parsed Intake 2 catalog that could import or execute code.

    Parameters
    ----------
    spec : mapping
        The catalog as parsed by ``yaml.safe_load`` (or ``Catalog.to_dict()``).
    source : str
        Name of the catalog in error messages.

    Raises
    ------
    UntrustedCatalogError
        Naming the entry, the offending reference and the fix (``trusted=True``).
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
    _check_structure(spec, source)
    for name, entry in (spec.get("entries") or {}).items():
        where = f"entry {name!r}"
        _check_entity(entry, where, source, _ALLOWED_ENTRY_CLS)
        reader = entry.get("reader")
        if reader not in ALLOWED_READERS:
            raise _untrusted(where, f"reader {reader!r}", source)
        if entry.get("output_instance") not in _ALLOWED_OUTPUTS:
            raise _untrusted(where, f"output_instance {entry.get('output_instance')!r}", source)
        _check_value(entry.get("kwargs") or {}, f"{where} kwargs", source)
        _check_user_parameters(entry.get("user_parameters") or {}, where, source)
    for name, data in (spec.get("data") or {}).items():
        where = f"data {name!r}"
        _check_entity(data, where, source, _ALLOWED_DATA_CLS)
        datatype = data.get("datatype")
        if datatype not in ALLOWED_DATATYPES:
            raise _untrusted(where, f"datatype {datatype!r}", source)
        _check_value(data.get("kwargs") or {}, f"{where} kwargs", source)
        _check_user_parameters(data.get("user_parameters") or {}, where, source)
    _check_user_parameters(spec.get("user_parameters") or {}, "the catalog", source)
    _check_value(spec.get("aliases") or {}, "catalog aliases", source)
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
            f"{spec.get('version')!r}, expected 2; convert it with intake 2 or recreate it "
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
                f"catalog {source}: {key!r} must be a mapping, found "
                f"{type(spec.get(key)).__name__}"
            )


def _check_entity(entity: Any, where: str, source: str, allowed_cls: frozenset) -> None:
    if not isinstance(entity, Mapping):
        raise CatalogError(
            f"catalog {source}: {where} must be a mapping, found {entity!r}; recreate it with "
            "ooc_kernels.data.register_dataset"
        )
    if "cls" in entity and entity["cls"] not in allowed_cls:
        raise _untrusted(where, f"class reference cls={entity['cls']!r}", source)


def _check_user_parameters(ups: Any, where: str, source: str) -> None:
    if not isinstance(ups, Mapping):
        raise CatalogError(f"catalog {source}: user_parameters of {where} must be a mapping")
    for name, up in ups.items():
        up_where = f"{where} user parameter {name!r}"
        if not isinstance(up, Mapping):
            _check_value(up, up_where, source)
            continue
        cls = up.get("cls")
        if cls is not None and cls not in ALLOWED_USER_PARAMETERS:
            raise _untrusted(up_where, f"class reference cls={cls!r}", source)
        dtype = up.get("dtype")
        if dtype is not None and dtype not in _SAFE_DTYPES:
            raise _untrusted(up_where, f"dtype {dtype!r}", source)
        _check_value({k: v for k, v in up.items() if k not in ("cls", "dtype")}, up_where,
                     source)


# --- path rule -------------------------------------------------------------------------

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")


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


def _local_paths(url: Any) -> list[Path]:
    """Resolved local paths a URL reads (fsspec chains ``a::b`` give several); remote: none."""
    if not isinstance(url, str) or not url:
        return []
    from urllib.parse import unquote, urlparse

    out = []
    for part in url.split("::"):
        m = _SCHEME.match(part)
        if m and m.group(1).lower() not in ("file", "local"):
            continue  # remote (s3://, https://, memory:// ...): not a local path
        local = unquote(urlparse(part).path) if m else part
        out.append(Path(os.path.abspath(os.path.expanduser(local))).resolve())
    return out


def _catalog_base(cat) -> Path | None:
    """The catalog file's folder (resolved); the working folder for in-memory catalogs."""
    base = cat.user_parameters.get("CATALOG_DIR")
    base = getattr(base, "default", base)
    if base is None:
        return Path.cwd().resolve()
    paths = _local_paths(str(base))
    return paths[0] if len(paths) == 1 else None


def _entry_urls(cat, name: str) -> list[str]:
    """The data URLs entry ``name`` reads, templates filled in as intake fills them."""
    entry = cat.entries[cat.aliases.get(name, name)]
    urls: list[str] = []

    def walk(value):
        if isinstance(value, Mapping):
            for key, v in value.items():
                if key in ("url", "urlpath", "path") and isinstance(v, str):
                    urls.append(_resolve(cat, v))
                else:
                    walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)
        elif isinstance(value, str):
            m = re.match(r"{?data[(]\s*([^),\s]+)", value)
            if m and m.group(1) in cat.data:
                token = m.group(1)
                try:
                    url = getattr(cat[token], "url", None)
                except Exception:  # noqa: BLE001 - a trusted custom datatype failing to build
                    url = None
                if not isinstance(url, str):
                    url = _resolve(cat, cat.data[token].kwargs.get("url"))
                urls.append(url)
        elif hasattr(value, "kwargs"):
            walk(value.kwargs)

    walk(entry.kwargs)
    return [u for u in urls if isinstance(u, str)]


def _outside(path: Path, roots: list[Path]) -> bool:
    return not any(path == r or path.is_relative_to(r) for r in roots)


def _fmt_roots(base: Path | None, roots: list[Path]) -> str:
    extra = [str(r) for r in roots if r != base]
    where = f"the catalog's folder {str(base)!r}" if base is not None else \
        "no local folder (the catalog is not a local file)"
    return where + (f" or the allowed folders {extra}" if extra else "")


def check_catalog_paths(catalog: Any, *, allow_outside: AllowOutside = False,
                        source: str | None = None) -> None:
    """Refuse a loaded catalog whose entries read local paths outside its folder.

    Parameters
    ----------
    catalog : intake.readers.entry.Catalog
        As returned by :func:`load_catalog` or ``intake.from_yaml_file``.
    allow_outside : bool or iterable of folders, default False
        True: no check.  Folders: allowed in addition to the catalog's folder.
    source : str, optional
        Name of the catalog in error messages.

    Raises
    ------
    PathEscapeError
        Naming the entry, the path as written, where it resolves, the allowed folder(s) and
        the fix.

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> f = os.path.join(d, "cat", "c.yaml")
    >>> register_dataset(f, "a", os.path.join(d, "a.zarr"), allow_outside=True)
    >>> check_catalog_paths(load_catalog(f, allow_outside=True))
    Traceback (most recent call last):
    ...
    ooc_kernels.data.catalog.PathEscapeError: catalog ...: entry 'a' reads ...
    """
    base = _catalog_base(catalog)
    roots = _allowed_roots(base, allow_outside)
    if roots is None:
        return
    if source is None:
        path = catalog.user_parameters.get("CATALOG_PATH")
        source = repr(str(getattr(path, "default", path) or "<in-memory catalog>"))
    for name in sorted(catalog.entries):
        for url in _entry_urls(catalog, name):
            for path in _local_paths(url):
                if _outside(path, roots):
                    raise PathEscapeError(
                        f"catalog {source}: entry {name!r} reads {url!r}, which resolves to "
                        f"{str(path)!r}, outside {_fmt_roots(base, roots)}; move the data "
                        f"under the catalog's folder, or pass allow_outside=True (any path) "
                        f"or allow_outside=[{str(path.parent)!r}] if you trust this catalog "
                        "(command line: --allow-outside)"
                    )


# --- loading ---------------------------------------------------------------------------

def _read_yaml(path: Path) -> Any:
    if not path.exists():
        raise CatalogError(
            f"catalog file {str(path)!r} does not exist; check the path or create it with "
            "ooc_kernels.data.register_dataset / `ooc-kernels data make --catalog`"
        )
    try:
        with open(path, encoding="utf-8") as stream:
            return yaml.safe_load(stream)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        detail = " ".join(str(err).split())
        raise CatalogError(
            f"catalog file {str(path)!r} cannot be read as YAML ({type(err).__name__}: "
            f"{detail}); fix the file or recreate it with ooc_kernels.data.register_dataset"
        ) from None


def load_catalog(catalog: Any, *, trusted: bool = False,
                 allow_outside: AllowOutside = False):
    """Load an Intake 2 catalog, refusing code references unless ``trusted``.

    Parameters
    ----------
    catalog : str, path-like or intake.readers.entry.Catalog
        A YAML file, or a catalog already loaded by intake (checked as well).
    trusted : bool, default False
        Skip the allow-list check (the file may then import and run code).
    allow_outside : bool or iterable of folders, default False
        Entries must read local paths inside the catalog file's folder; True lifts the
        rule, a list of folders allows these too (see :func:`check_catalog_paths`).

    Returns
    -------
    intake.readers.entry.Catalog

    Raises
    ------
    CatalogError
        Missing, unreadable or invalid file.
    UntrustedCatalogError
        The catalog names code outside the allow-list and ``trusted`` is False.
    PathEscapeError
        An entry reads a path outside the catalog's folder that ``allow_outside`` does not
        allow.

    Examples
    --------
    >>> import os, tempfile
    >>> f = os.path.join(tempfile.mkdtemp(), "empty.yaml")
    >>> register_dataset(f, "a", os.path.join(os.path.dirname(f), "a.zarr"))
    >>> sorted(load_catalog(f).entries)
    ['a']
    """
    from intake.readers.entry import Catalog

    if isinstance(catalog, Catalog):
        if not trusted:
            check_catalog_trust(catalog.to_dict(), source=repr(type(catalog).__name__))
        check_catalog_paths(catalog, allow_outside=allow_outside)
        return catalog
    if not isinstance(catalog, (str, os.PathLike)):
        raise CatalogError(
            f"catalog must be a path to an Intake 2 YAML file or an intake Catalog, got "
            f"{type(catalog).__name__}"
        )
    path = Path(os.fspath(catalog)).expanduser().absolute()
    spec = _read_yaml(path)
    source = repr(str(path))
    if trusted:
        _check_structure(spec, source)
    else:
        check_catalog_trust(spec, source)
    try:
        cat = Catalog.from_dict(spec)
    except Exception as err:
        raise CatalogError(
            f"catalog file {source} is not a valid Intake 2 catalog ({type(err).__name__}: "
            f"{err}); recreate it with ooc_kernels.data.register_dataset"
        ) from None
    # the same parameters intake.from_yaml_file sets, for {CATALOG_DIR} templates
    cat.user_parameters["CATALOG_PATH"] = str(path)
    cat.user_parameters["CATALOG_DIR"] = path.parent.as_uri()
    cat.user_parameters["STORAGE_OPTIONS"] = {}
    check_catalog_paths(cat, allow_outside=allow_outside, source=source)
    return cat


def list_datasets(catalog: Any, *, trusted: bool = False,
                  allow_outside: AllowOutside = False) -> list[str]:
    """Sorted names of the entries (and aliases) of a catalog.

    Examples
    --------
    >>> list_datasets("catalogs/examples.yaml")  # doctest: +SKIP
    ['digits_deformed', 'digits_deformed_test', 'nonlinear_binary', 'synthetic_krr_2d']
    """
    cat = load_catalog(catalog, trusted=trusted, allow_outside=allow_outside)
    return sorted(set(cat.entries) | set(cat.aliases))


def _entry(cat, name: str):
    if not isinstance(name, str) or (name not in cat.entries and name not in cat.aliases):
        available = sorted(set(cat.entries) | set(cat.aliases))
        raise UnknownEntryError(
            f"catalog has no entry {name!r}; available entries: {available}. Pick one of them "
            "or add the dataset with ooc_kernels.data.register_dataset"
        )
    return cat.entries[cat.aliases.get(name, name)]


def _data_url(cat, entry) -> str | None:
    """The url of the data an entry reads (templates left as written)."""
    refs = list(entry.kwargs.get("args") or [])
    data = entry.kwargs.get("data")
    if data is not None:
        refs.append(data)
    for ref in refs:
        if isinstance(ref, str):
            m = re.match(r"{?data[(]([^)]+)[)]}?", ref)
            if m and m.group(1) in cat.data:
                return cat.data[m.group(1)].kwargs.get("url")
        elif hasattr(ref, "kwargs"):
            return ref.kwargs.get("url")
    return entry.kwargs.get("url")


def _resolve(cat, url: str | None) -> str | None:
    if not isinstance(url, str):
        return url
    base = cat.user_parameters.get("CATALOG_DIR")
    base = getattr(base, "default", base)
    if isinstance(base, str):
        url = url.replace("{CATALOG_DIR}", base)
    if url.startswith("file://"):
        from urllib.parse import unquote, urlparse

        url = os.path.normpath(unquote(urlparse(url).path))
    return url


def describe_catalog(catalog: Any, *, trusted: bool = False,
                     allow_outside: AllowOutside = False) -> list[dict]:
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
    cat = load_catalog(catalog, trusted=trusted, allow_outside=allow_outside)
    rows = []
    for name in sorted(set(cat.entries) | set(cat.aliases)):
        entry = _entry(cat, name)
        rows.append({
            "name": name,
            "description": (entry.metadata or {}).get("description", ""),
            "path": _resolve(cat, _data_url(cat, entry)),
            "reader": entry.reader,
        })
    return rows


def entry_path(catalog: Any, name: str, *, trusted: bool = False,
               allow_outside: AllowOutside = False) -> Path:
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
    cat = load_catalog(catalog, trusted=trusted, allow_outside=allow_outside)
    url = _resolve(cat, _data_url(cat, _entry(cat, name)))
    if not isinstance(url, str) or not url or "://" in url or "{" in url:
        raise CatalogError(
            f"catalog entry {name!r} does not point at a local path (found {url!r}); "
            "register the store with ooc_kernels.data.register_dataset"
        )
    return Path(url)


def open_dataset(catalog: Any, name: str, *, trusted: bool = False,
                 allow_outside: AllowOutside = False) -> xr.Dataset:
    """Open catalog entry ``name`` as a lazy, validated, Dask-backed ``xarray.Dataset``.

    Parameters
    ----------
    catalog : str, path-like or intake.readers.entry.Catalog
    name : str
        Entry (or alias) name.
    trusted, allow_outside
        See :func:`load_catalog`.

    Returns
    -------
    xarray.Dataset
        Dask chunks equal the Zarr chunks; no array data is read.

    Raises
    ------
    UnknownEntryError
        ``name`` is not in the catalog (the message lists the available entries).
    CatalogError, UntrustedCatalogError, PathEscapeError, SchemaError

    Examples
    --------
    >>> ds = open_dataset("catalogs/examples.yaml", "synthetic_krr_2d")  # doctest: +SKIP
    """
    cat = load_catalog(catalog, trusted=trusted, allow_outside=allow_outside)
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
            f"catalog entry {name!r} points at {_resolve(cat, _data_url(cat, entry))!r}, which "
            f"does not exist ({err}); create it with `ooc-kernels data make` or "
            "ooc_kernels.data.make_dataset"
        ) from None
    except (CatalogError, KeyboardInterrupt):
        raise
    except Exception as err:
        raise CatalogError(
            f"catalog entry {name!r} (data {_resolve(cat, _data_url(cat, entry))!r}) could not "
            f"be opened: {type(err).__name__}: {err}"
        ) from None
    if not isinstance(ds, xr.Dataset):
        raise CatalogError(
            f"catalog entry {name!r} produced a {type(ds).__name__}, expected an "
            "xarray.Dataset; use the reader intake.readers.readers:XArrayDatasetReader"
        )
    return validate_dataset(ds)


# --- writing ---------------------------------------------------------------------------

def _relative_url(data_path: Path, catalog_dir: Path) -> str:
    try:
        rel = os.path.relpath(data_path, catalog_dir)
    except ValueError:  # e.g. another drive on Windows
        return data_path.as_posix()
    return "{CATALOG_DIR}/" + Path(rel).as_posix()


def _entry_dicts(name: str, url: str, description: str | None) -> tuple[dict, dict]:
    from intake.readers import datatypes, readers
    from intake.readers.entry import Catalog

    data = datatypes.Zarr(url=url)
    reader = readers.XArrayDatasetReader(data, chunks={}, engine="zarr")
    if description:
        reader.metadata["description"] = description
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


def register_dataset(catalog_path: str | os.PathLike, entry: str,
                     data_path: str | os.PathLike, *, description: str | None = None,
                     allow_outside: AllowOutside = False) -> None:
    """Create or update an Intake 2 catalog file with an entry for a Zarr store.

    The store's path is written relative to the catalog's folder (``{CATALOG_DIR}/...``)
    when possible, so catalog and data can move together.  The file is written atomically
    (temporary file + ``os.replace``).  Existing entries are kept as they are (nothing from
    the file is imported or executed); an entry of the same name is replaced.

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

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> f = os.path.join(d, "catalogs", "c.yaml")
    >>> register_dataset(f, "digits", os.path.join(d, "catalogs", "data", "digits.zarr"))
    >>> "{CATALOG_DIR}/data/digits.zarr" in open(f).read()
    True
    """
    if not isinstance(entry, str) or not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*", entry):
        raise CatalogError(
            f"invalid entry name {entry!r}; use letters, digits, '_', '-' and '.' (e.g. "
            "'digits_deformed')"
        )
    cat_path = Path(os.fspath(catalog_path)).expanduser().absolute()
    data_abs = Path(os.fspath(data_path)).expanduser().absolute()
    base = cat_path.parent.resolve()
    roots = _allowed_roots(base, allow_outside)
    resolved = data_abs.resolve()
    if roots is not None and _outside(resolved, roots):
        raise PathEscapeError(
            f"cannot register entry {entry!r} in catalog {str(cat_path)!r}: its data "
            f"{str(data_abs)!r} resolves to {str(resolved)!r}, outside "
            f"{_fmt_roots(base, roots)}, and readers of the catalog would refuse it; write "
            f"the store under the catalog's folder (e.g. "
            f"{str(base / 'data' / resolved.name)!r}), or pass allow_outside=True or "
            f"allow_outside=[{str(resolved.parent)!r}] (readers then need the same; command "
            "line: --allow-outside)"
        )
    if cat_path.exists():
        spec = _read_yaml(cat_path)
        if spec is None:
            spec = {}
        _check_structure(spec if spec else {"version": 2}, repr(str(cat_path)))
    else:
        spec = {}
    spec = {
        "aliases": dict(spec.get("aliases") or {}),
        "data": dict(spec.get("data") or {}),
        "entries": dict(spec.get("entries") or {}),
        "metadata": dict(spec.get("metadata") or {}),
        "user_parameters": dict(spec.get("user_parameters") or {}),
        "version": 2,
    }
    new_entries, new_data = _entry_dicts(entry, _relative_url(data_abs, cat_path.parent),
                                         description)
    old = spec["entries"].pop(entry, None)
    spec["aliases"].pop(entry, None)
    spec["entries"].update(new_entries)
    spec["data"].update(new_data)
    if isinstance(old, Mapping):  # drop data no longer referenced by any entry
        entries = spec["entries"].values()  # small: catalog entries (YAML mappings)
        still_used = set().union(*(_data_refs(e) for e in entries if isinstance(e, Mapping)))
        for ref in _data_refs(old) - still_used:
            spec["data"].pop(ref, None)
    cat_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = cat_path.parent / f".{cat_path.name}.tmp-{uuid.uuid4().hex[:12]}"
    try:
        with open(tmp, "w", encoding="utf-8") as stream:
            yaml.safe_dump(spec, stream, sort_keys=True)
        os.replace(tmp, cat_path)
    finally:
        if tmp.exists():
            tmp.unlink()
