"""Registering datasets: write a catalog entry for a Zarr store, or the declaration of an
existing entry, atomically and without importing anything from the file."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: the catalog's lock is in-process only
    fcntl = None

from ..._atomic import path_lock, write_failed
from ..._fsync import DIRECTORY, fsync
from ..._paths import user_path
from ..._untrusted import short_repr as _r
from ...exceptions import (CatalogError, ForeignPathError, PathEscapeError, SchemaError,
                           UnknownEntryError)
from ..declarations import SCHEMAS
from ..schema import DECLARATION_KEY, make_declaration
from ._names import check_entry_name, find_entry, nfc
from ._reading import _entry_url, _from_spec, _read_entry, _read_yaml
from .locations import AllowOutside, _allowed_roots, _fmt_roots, _outside
from .trust import _check_structure, _env_names


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


def check_catalog_target(catalog_path: str | os.PathLike, *, trusted: bool = False) -> Path:
    """The absolute path of a catalog file that :func:`register_dataset` or
    :func:`declare_dataset` may write: missing (it is created), or an Intake 2 catalog
    file.  Raises before anything is written, so that a command writing a store and then
    its entry (``ooc-kernels data make --catalog``) checks the catalog first.
    ``trusted``: read an existing file as a trusted catalog (:func:`declare_dataset`).

    Raises
    ------
    ForeignPathError
        The path is a symbolic link (a link is never followed, replaced or removed: the
        entry's relative paths would be read against another folder).
    CatalogError
        The path is a folder, or a file that is not an Intake 2 catalog.
    """
    cat_path = user_path(catalog_path, "catalog_path").absolute()
    _refuse_unwritable(cat_path)
    _read_spec(cat_path, trusted=trusted)  # an Intake 2 catalog, or CatalogError
    return cat_path


def _refuse_unwritable(cat_path: Path) -> None:
    """:func:`check_catalog_target`'s checks of the path alone (a link, a folder)."""
    if cat_path.is_symlink():
        raise ForeignPathError(
            f"refusing to write catalog {str(cat_path)!r}: it is a symbolic link (to "
            f"{_r(os.readlink(cat_path))}), and a link is never followed, replaced or removed; "
            "name the catalog file it points to, or remove the link yourself"
        )
    if cat_path.exists() and not cat_path.is_file():
        raise CatalogError(
            f"catalog {str(cat_path)!r} is not a file; name a YAML file (e.g. "
            f"{str(cat_path / 'catalog.yaml')!r})"
        )


def _temp_name(cat_path: Path) -> str:
    """A new name for the temporary file that :func:`_write_spec` writes beside the
    catalog: ``.NAME.tmp-ID`` (ID: 12 hex digits)."""
    return f".{cat_path.name}.tmp-{uuid.uuid4().hex[:12]}"


def _sweep_temps(cat_path: Path) -> list[str]:
    """Remove the temporary files that killed writers of this catalog left beside it;
    return their names.

    Only regular files named as :func:`_temp_name` names them for this catalog are removed
    (not a link, a folder, another name or another catalog's temporary).  Called under the
    catalog's :func:`~ooc_kernels._atomic.path_lock`: a writer creates its temporary and
    renames or removes it while holding that lock, so a temporary found by the lock's
    holder belongs to a writer that died.  Without ``fcntl`` the lock covers one process
    only, and nothing is removed.
    """
    if fcntl is None:  # pragma: no cover - another process may be writing its temporary
        return []
    pattern = re.compile(re.escape(f".{cat_path.name}.tmp-") + "[0-9a-f]{12}")
    try:
        names = os.listdir(cat_path.parent)
    except OSError:
        return []
    removed = []
    for name in names:
        path = cat_path.parent / name
        if not pattern.fullmatch(name):
            continue
        with contextlib.suppress(OSError):
            if stat.S_ISREG(path.lstat().st_mode):
                path.unlink()
                removed.append(name)
    return removed


def _write_spec(cat_path: Path, spec: Mapping) -> None:
    """Replace the catalog file by ``spec`` atomically (temporary file + ``os.replace``):
    a reader sees the old file or the new one, never a part.  The temporary file is flushed
    to the disk before the rename and the folder after it, so a power cut finds the old
    file or the new one whole.  Called under the catalog's
    :func:`~ooc_kernels._atomic.path_lock`; the path is checked again just before, and the
    temporaries of killed writers of the catalog are removed (:func:`_sweep_temps`)."""
    _refuse_unwritable(cat_path)  # made a link since the check: still never replaced
    tmp = cat_path.parent / _temp_name(cat_path)
    existed = cat_path.exists()
    try:
        cat_path.parent.mkdir(parents=True, exist_ok=True)
        _sweep_temps(cat_path)
        with open(tmp, "w", encoding="utf-8") as stream:
            yaml.dump(dict(spec), stream, Dumper=_NoAliasDumper, sort_keys=True)
        fsync(tmp)  # on the disk before it replaces the previous file
        os.replace(tmp, cat_path)
    except OSError as err:  # a full disk, a read-only folder: the library's error
        failed = write_failed(err, cat_path, "catalog", existed)
        if failed is err:
            raise
        raise failed from err
    finally:
        if tmp.exists():
            tmp.unlink()
    fsync(cat_path.parent, os.O_RDONLY | DIRECTORY)  # the rename


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
    url = _entry_url(cat, cat.entries[entry])
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
    catalog_path : str, bytes or path-like
        The YAML file (created with its folder if missing).
    entry : str
        Entry name: letters and digits of any script, ``_``, ``-`` and ``.``, starting with
        a letter, a digit or ``_`` (e.g. ``"digits_deformed"``, ``"données"``,
        ``"温度"``); written in Unicode normal form C, and an entry whose name has the same
        normal form is replaced (see :mod:`ooc_kernels.data.catalog._names`).
    data_path : str, bytes or path-like
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
    >>> from ooc_kernels.data.catalog import open_dataset
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
    entry = check_entry_name(entry)  # in normal form C: one spelling per name
    cat_path = user_path(catalog_path, "catalog_path").absolute()
    data_abs = user_path(data_path, "data_path").absolute()
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
    _refuse_unwritable(cat_path)
    with path_lock(cat_path):  # two registrations at once: neither entry is lost
        _register(cat_path, spec=_read_spec(cat_path), entry=entry, data_abs=data_abs,
                  description=description, declaration=declaration,
                  allow_outside=allow_outside)


def create_catalog(catalog_path: str | os.PathLike,
                   stores: Mapping[str, str | os.PathLike]) -> bool:
    """Write a new catalog file listing ``stores``, only where no file is: a catalog that
    exists is never rewritten.

    Parameters
    ----------
    catalog_path : str, bytes or path-like
        The YAML file (created with its folder if missing).
    stores : mapping of str to path-like
        Entry name -> Zarr store inside the catalog's folder (it need not exist yet),
        written relative to the catalog's folder as :func:`register_dataset` does.

    Returns
    -------
    bool
        True when the file was written; False when a file (or a link) is at
        ``catalog_path`` already, which is left as it is, byte for byte.

    Raises
    ------
    CatalogError
        An invalid entry name.
    PathEscapeError
        A store outside the catalog's folder (nothing is written).

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> f = os.path.join(d, "c.yaml")
    >>> create_catalog(f, {"a": os.path.join(d, "data", "a.zarr")})
    True
    >>> create_catalog(f, {"b": os.path.join(d, "data", "b.zarr")})
    False
    """
    cat_path = user_path(catalog_path, "catalog_path").absolute()
    base = cat_path.parent.resolve()
    urls = {}
    for entry, store in stores.items():
        entry = check_entry_name(entry)
        data_abs = user_path(store, "store").absolute()
        if _outside(data_abs.resolve(), [base]):
            raise PathEscapeError(
                f"cannot create catalog {str(cat_path)!r}: the store of entry {_r(entry)}, "
                f"{str(data_abs)!r}, resolves to {str(data_abs.resolve())!r}, outside the "
                f"catalog's folder {str(base)!r}; write it under that folder"
            )
        urls[entry] = _relative_url(data_abs, cat_path.parent)
    with path_lock(cat_path):  # a file written meanwhile by anyone is kept as it is
        if os.path.lexists(cat_path):
            return False
        spec = _read_spec(cat_path)
        for entry, url in urls.items():
            new_entries, new_data = _entry_dicts(entry, url, None, {})
            spec["entries"].update(new_entries)
            spec["data"].update(new_data)
        _write_spec(cat_path, spec)
    return True


def _register(cat_path: Path, *, spec: dict, entry: str, data_abs: Path,
              description: str | None, declaration: dict,
              allow_outside: AllowOutside) -> None:
    """The entry of :func:`register_dataset` added to ``spec`` and written."""
    new_entries, new_data = _entry_dicts(entry, _relative_url(data_abs, cat_path.parent),
                                         description, declaration)
    # the entry of that name, also one a hand-written catalog spells in another normal form
    same = [k for k in (*spec["entries"], *spec["aliases"]) if nfc(k) == entry]
    olds = [spec["entries"].pop(k, None) for k in same]
    for k in same:
        spec["aliases"].pop(k, None)
    spec["entries"].update(new_entries)
    spec["data"].update(new_data)
    olds = [old for old in olds if isinstance(old, Mapping)]
    if olds:  # drop data no longer referenced by any entry
        entries = spec["entries"].values()  # small: catalog entries (YAML mappings)
        still_used = set().union(*(_data_refs(e) for e in entries if isinstance(e, Mapping)))
        for ref in set().union(*map(_data_refs, olds)) - still_used:
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
    catalog_path : str, bytes or path-like
        An existing Intake 2 catalog file.
    entry : str
        The entry (an alias declares the entry it points at); a name in another Unicode
        normal form than the catalog's key finds it.
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
    >>> from ooc_kernels.data.catalog import open_dataset
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
    cat_path = user_path(catalog_path, "catalog_path").absolute()
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
    _refuse_unwritable(cat_path)
    with path_lock(cat_path):  # a registration at the same time: neither change is lost
        spec = _read_spec(cat_path, trusted=trusted)
        names = sorted(set(spec["entries"]) | set(spec["aliases"]), key=str)
        found = find_entry(names, entry)
        if found is None:
            raise UnknownEntryError(
                f"catalog {str(cat_path)!r} has no entry {_r(entry)}; available entries: "
                f"{_r(names)}. Pick one of them, or add the store with `ooc-kernels catalog "
                "add` (ooc_kernels.data.register_dataset)"
            )
        entry = found
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
            make_declaration(declaration["variables"], schema=declaration["schema"],
                             where=where)
        metadata[DECLARATION_KEY] = declaration
        record["metadata"] = metadata
        spec["entries"][target] = record
        _check_declared_entry(cat_path, spec, target,
                              f"cannot declare {declaration!r} for entry {_r(target)}",
                              trusted=trusted, allow_outside=allow_outside, allow_env=allow_env)
        _write_spec(cat_path, spec)
    return declaration
