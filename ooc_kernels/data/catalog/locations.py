"""The location rule and the path rule: where a loaded untrusted catalog may read from.

:func:`check_catalog_paths` fills in every entry's and data description's templates as
Intake fills them and checks each location it names: its fsspec protocols, its
``storage_options``, its xarray ``engine``, and every local path (reference targets,
glob matches and symbolic links inside stores included) against the catalog's folder and
the folders the caller allows (see :mod:`ooc_kernels.data.catalog`).
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from ..._paths import is_path, user_path
from ..._untrusted import open_regular, scan_once, short_repr as _r, special_file
from ...exceptions import CatalogError, PathEscapeError, UntrustedCatalogError
from .trust import _HINT, _key

__all__ = [
    "ALLOWED_ENGINES",
    "REMOTE_PROTOCOLS",
    "LOCAL_PROTOCOLS",
    "SAFE_STORAGE_OPTIONS",
    "AllowOutside",
    "check_catalog_paths",
]

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
# how intake's Catalog._rehydrate recognises a reference to another entry or data
_DATA_LINK = re.compile(r"{?data[(]([^)]+)[)]}?")

#: ``allow_outside`` argument: False (only the catalog's folder), True (anywhere) or an
#: iterable of extra folders that entries may read from.
AllowOutside = bool | Iterable[str | os.PathLike]


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
        if not is_path(root) or not os.fspath(root):
            raise CatalogError(
                f"allow_outside must be True, False or a list of folders, found {root!r} in "
                f"{allow_outside!r}; e.g. allow_outside=['/data/shared']"
            )
        roots.append(user_path(root).resolve())
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


def _parameter(cat, name: str) -> Any:
    """The value of the catalog's user parameter ``name`` (a parameter object's default);
    None when the catalog does not set it."""
    value = cat.user_parameters.get(name)
    return getattr(value, "default", value)


def _catalog_base(cat) -> Path | None:
    """The catalog file's folder (resolved); the working folder for in-memory catalogs."""
    base = _parameter(cat, "CATALOG_DIR")
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
        files, nested groups, metadata files) that leads outside the allowed folders, and a
        named pipe, device or socket there or at the end of a link (reading a ``zarr.json``
        that is a pipe waits for a writer without end; ``/dev/zero`` never ends).

        One walk of the directory tree with ``os.scandir`` (no file is opened or read); a
        link to a folder inside the allowed folders is walked as well, each folder once.
        """
        if store in self.walked or not os.path.isdir(store):  # any OSError: not a folder
            return
        self.walked.add(store)
        stack, seen = [store], set()
        while stack:
            # an unreadable folder: nothing can be read through it either
            for item in scan_once(stack.pop(), seen):
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
                    else:
                        self.special(store, item.path, target, written, who, field)
                elif item.is_dir(follow_symlinks=False):
                    stack.append(Path(item.path))
                elif not item.is_file(follow_symlinks=False):
                    self.special(store, item.path, Path(item.path), written, who, field)

    def special(self, store: Path, item: str, target: Path, written: str, who: str,
                field: str) -> None:
        """Refuse ``item`` of ``store`` when ``target`` (itself, or where its link leads)
        is a named pipe, a device or a socket."""
        try:
            kind = special_file(target.stat().st_mode)
        except OSError:
            return  # missing: nothing can be read through it either
        if kind is not None:
            led = f", which leads to {_r(str(target))}," if str(target) != item else ""
            raise UntrustedCatalogError(
                f"catalog {self.source}: {who} reads {_r(written)} ({field}), whose store "
                f"{_r(str(store))} holds {_r(item)}{led} {kind}: reading it could wait for a "
                f"writer or never end; replace it by a regular file, or {_HINT}"
            )

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
            stream = open_regular(path, what=f"catalog {self.source}: {who} reads "
                                  f"{_r(written)} ({field}) through the reference file "
                                  f"{_r(str(path))}, which", error=UntrustedCatalogError)
        except OSError:
            return []  # fsspec cannot load it either
        try:
            with stream:
                spec = json.load(stream)
        except (OSError, ValueError, RecursionError):   # nested past the parser's depth too
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

    The location and path rules (see :mod:`ooc_kernels.data.catalog`): every location an
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
    >>> from ooc_kernels.data.catalog import load_catalog, register_dataset
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
        source = repr(str(_parameter(catalog, "CATALOG_PATH") or "<in-memory catalog>"))
    _LocationCheck(catalog, roots, base, source).run()
