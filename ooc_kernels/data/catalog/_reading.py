"""Reading catalogs: load a catalog file under the trust and location rules, list and
describe its entries, and open an entry as a validated lazy ``xarray.Dataset``."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import xarray as xr
import yaml

from ..._paths import is_path, user_path
from ..._untrusted import clip, load_yaml, open_regular, refuse_large_metadata, short_repr as _r
from ...exceptions import CatalogError, SchemaError, UnknownEntryError
from ..declarations import SCHEMAS
from ..schema import (
    DECLARATION_KEY,
    Context,
    apply_declaration,
    make_declaration,
    validate_dataset,
)
from ._names import find_entry
from .locations import _DATA_LINK, AllowOutside, _parameter, check_catalog_paths
from .trust import _HINT, _check_structure, _env_names, check_catalog_trust


def _read_yaml(path: Path, *, trusted: bool = False) -> Any:
    """The catalog file's YAML as plain data; aliases only in a trusted file, and never
    nesting deeper than :data:`ooc_kernels._untrusted.MAX_DEPTH`."""
    if not path.exists():
        raise CatalogError(
            f"catalog file {str(path)!r} does not exist; check the path or create it with "
            "ooc_kernels.data.register_dataset / `ooc-kernels data make --catalog`"
        )
    try:
        with open_regular(path, what=f"catalog file {str(path)!r}", error=CatalogError,
                          encoding="utf-8") as stream:
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
    >>> from ooc_kernels.data.catalog import register_dataset
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
    if not is_path(catalog):
        raise CatalogError(
            f"catalog must be a path to an Intake 2 YAML file or an intake Catalog, got "
            f"{type(catalog).__name__}"
        )
    path = user_path(catalog, "catalog").absolute()
    return _from_spec(_read_yaml(path, trusted=trusted), path, trusted=trusted,
                      allow_outside=allow_outside, allow_env=allow_env)


#: The keys Intake 2 reads from a catalog file and from each of its entries (empty
#: mappings will do): a catalog written by hand often leaves them out.
_INTAKE_TOP_KEYS = ("aliases", "data", "entries", "metadata", "user_parameters")
_INTAKE_ENTRY_KEYS = ("metadata", "user_parameters")


def _check_intake_keys(spec: Any, source: str) -> None:
    """Name the keys that Intake 2 needs and a (hand-written) catalog lacks, with where."""
    if not isinstance(spec, Mapping):
        return
    gaps = []
    top = [k for k in _INTAKE_TOP_KEYS if k not in spec]
    if top:
        gaps.append(f"the file lacks the top-level key{'s' if len(top) > 1 else ''} "
                    f"{', '.join(map(repr, top))}")
    entries = spec.get("entries")
    for name, entry in (entries.items() if isinstance(entries, Mapping) else ()):
        keys = [k for k in _INTAKE_ENTRY_KEYS if isinstance(entry, Mapping) and k not in entry]
        if keys:
            gaps.append(f"entry {_r(name)} lacks the key{'s' if len(keys) > 1 else ''} "
                        f"{', '.join(map(repr, keys))}")
    if gaps:
        missing = top or list(_INTAKE_ENTRY_KEYS)
        raise CatalogError(
            f"catalog file {source} is not a complete Intake 2 catalog: {'; '.join(gaps)}. "
            f"Intake needs them even when empty: add them (e.g. {missing[-1]}: {{}}), or "
            "write the entries with `ooc-kernels catalog add FILE NAME STORE` "
            "(ooc_kernels.data.register_dataset)."
        )


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
    _check_intake_keys(spec, source)
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
    found = find_entry(list(cat.entries) + list(cat.aliases), name)
    if not isinstance(name, str) or found is None:
        available = sorted(set(cat.entries) | set(cat.aliases))
        raise UnknownEntryError(
            f"catalog has no entry {_r(name)}; available entries: {_r(available)}. Pick one "
            "of them or add the dataset with ooc_kernels.data.register_dataset"
        )
    name = found  # the catalog's own spelling (another normal form of the name given)
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
            m = _DATA_LINK.match(ref)
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


def _entry_url(cat, entry) -> str | None:
    """The location an entry reads, ``{CATALOG_DIR}`` filled in and a local ``file://`` URL
    as the path fsspec opens (not percent-decoded)."""
    url = _data_url(cat, entry)
    if not isinstance(url, str):
        return url
    base = _parameter(cat, "CATALOG_DIR")
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
    >>> from ooc_kernels.data.catalog import register_dataset
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
            "path": _entry_url(cat, entry),
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
    >>> from ooc_kernels.data.catalog import register_dataset
    >>> d = tempfile.mkdtemp()
    >>> register_dataset(os.path.join(d, "c.yaml"), "a", os.path.join(d, "data", "a.zarr"))
    >>> entry_path(os.path.join(d, "c.yaml"), "a").relative_to(d).as_posix()
    'data/a.zarr'
    """
    cat = load_catalog(catalog, trusted=trusted, allow_outside=allow_outside,
                       allow_env=allow_env)
    url = _entry_url(cat, _entry(cat, name))
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


def _check_data_argument(entry, name: str) -> None:
    """Refuse an xarray entry whose first argument is a path: Intake 2's
    ``XArrayDatasetReader`` reads a data description (``{data(TOKEN)}``), and fails on a
    string deep inside with an ``AttributeError``."""
    reader = getattr(entry, "reader", None)
    args = (getattr(entry, "kwargs", None) or {}).get("args")
    if not str(reader).endswith(":XArrayDatasetReader") or not isinstance(args, (list, tuple)) \
            or not args or not isinstance(args[0], str) \
            or args[0].strip().startswith("{data("):
        return
    raise CatalogError(
        f"catalog entry {_r(name)} gives the path {_r(args[0])} as kwargs.args[0], but "
        "Intake 2's XArrayDatasetReader reads a data description there: describe the store "
        "under the catalog's data: key (datatype intake.readers.datatypes:Zarr, kwargs.url: "
        "the path) and give args: ['{data(TOKEN)}'], or let `ooc-kernels catalog add FILE "
        "NAME STORE` (ooc_kernels.data.register_dataset) write the entry."
    )


def _check_store_limits(url: Any, name: str, chunks: Any) -> None:
    """Refuse a local store whose metadata declares, or whose entry reads it with
    ``chunks``, more chunks or larger ones than can be opened
    (:func:`ooc_kernels.data._store_limits.check_store_limits`), before xarray builds its
    Dask arrays, and one whose consolidated metadata lists an array that is missing or
    describes one otherwise than the array's own metadata file (the checks of
    :func:`~ooc_kernels.data.open_zarr_dataset`: xarray reads by the consolidated copy, a
    missing ``y`` as zeros); a store that zarr cannot open is left to the reader's error."""
    if not isinstance(url, str) or "://" in url or "::" in url or not os.path.isdir(url):
        return
    import zarr

    from .._store_limits import check_store_limits
    from ..schema import _check_arrays_present

    # a metadata file of terabytes (a sparse file) is refused before zarr reads it whole
    refuse_large_metadata(url, what=f"catalog entry {_r(name)} (data {_r(url)})",
                          error=SchemaError, fix=_METADATA_FIX)
    try:
        group = zarr.open_group(url, mode="r")
        check_store_limits(group, chunks=chunks,
                           where=f"catalog entry {_r(name)} (data {_r(url)})")
        _check_arrays_present(group, Path(url), zarr)
    except SchemaError:
        raise
    except Exception:  # noqa: BLE001 - not a group, a damaged array: the reader says so
        return


_METADATA_FIX = ("the store's metadata was edited or damaged: rewrite the store with "
                 "ooc_kernels.data.write_chunks or restore it from a backup")


def _read_entry(cat, name: str, variables: Mapping[str, str] | None = None
                ) -> tuple[xr.Dataset, Context]:
    """Entry ``name`` of a loaded catalog as a lazy Dataset, its declaration (and
    ``variables``) applied but not validated, and the :class:`Context` for validating it."""
    entry = _entry(cat, name)
    _check_data_argument(entry, name)
    _check_store_limits(_entry_url(cat, entry), name, entry.kwargs.get("chunks", {}))
    try:
        reader = cat[find_entry(list(cat.entries) + list(cat.aliases), name)]
        extra = {} if "chunks" in entry.kwargs else {"chunks": {}}
        with warnings.catch_warnings():
            # stores without consolidated metadata open fine, just a little slower
            warnings.filterwarnings("ignore", message=".*consolidated metadata.*")
            ds = reader.read(**extra)
    except FileNotFoundError as err:
        raise CatalogError(
            f"catalog entry {_r(name)} points at {_r(_entry_url(cat, entry))}, which "
            f"does not exist ({clip(err, 500)}); create it with `ooc-kernels data make` or "
            "ooc_kernels.data.make_dataset"
        ) from None
    except (CatalogError, KeyboardInterrupt):
        raise
    except Exception as err:
        raise CatalogError(
            f"catalog entry {_r(name)} (data {_r(_entry_url(cat, entry))}) could not "
            f"be opened: {type(err).__name__}: {clip(err, 500)}"
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
    path = _entry_url(cat, entry)
    source = _parameter(cat, "CATALOG_PATH")
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
