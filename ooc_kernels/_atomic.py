"""Atomic writes of folders and files: write aside, then rename into place.

A reader never sees a half-written store: either the previous content or the new one.  A
fit that is reading a store when it is swapped does not read both: its next chunk read stops
it with :class:`~ooc_kernels.exceptions.DataChangedError` (the swap gives the store's files
new inodes, which :mod:`ooc_kernels.data.integrity` checks).
Concurrent writers of the same path (threads or processes) never mix: each builds its own
hidden temporary sibling ``.NAME.tmp-ID`` outside any lock, and only the checks before the
writing and the swap (two renames) run under an advisory lock on the sibling lock file
``.NAME.lock`` (``fcntl.flock``), so the final folder is always exactly one writer's complete
output and no check ever sees a swap half done.  The lock file is removed when
the swap is done; nothing is left next to ``path``.

Nothing a user owns is replaced.  Every store written through :func:`atomic_dir` is a Zarr
store marked with its kind (``"model"``, ``"checkpoint"``, ``"predictions"``, ``"dataset"``,
``"chunk-local"``) in the attribute :data:`KIND_ATTR` of its ``zarr.json``; an existing
``path`` is replaced only when the caller asked for it (``overwrite``) and it is a store of
the same kind (:func:`check_replaceable`).  A plain file, a folder that is not such a store,
or a symbolic link (never followed) is refused with :class:`ForeignPathError`.  The outputs of
a pipeline run also record which pipeline wrote them, and the run replaces only its own
(:mod:`ooc_kernels._output_owner`).

Leftovers of a writer that died (killed, power cut) are removed by the next write or load
of the same path (:func:`sweep_stale`): each writer holds an ``flock`` on
``.NAME.tmp-ID.lock`` for as long as its temporary folder exists, so a temporary whose lock
is free belongs to nobody, and a live writer's temporary is never touched.  A swap killed
between its two renames left the previous content at ``.NAME.old-ID`` and nothing at
``path``: the sweep puts it back.  A failed write waits for Zarr's pending asynchronous
writes before it removes its temporary folder, so they cannot re-create it afterwards.

Examples
--------
>>> import os, tempfile
>>> from pathlib import Path
>>> import zarr
>>> from ooc_kernels._atomic import KIND_ATTR, atomic_dir
>>> target = Path(tempfile.mkdtemp()) / "store"
>>> with atomic_dir(target, kind="predictions") as tmp:
...     zarr.open_group(str(tmp), mode="w").attrs[KIND_ATTR] = "predictions"
>>> sorted(os.listdir(target.parent))
['store']
>>> (target.parent / "notes").mkdir()
>>> with atomic_dir(target.parent / "notes", kind="predictions") as tmp:
...     pass
Traceback (most recent call last):
...
ooc_kernels.exceptions.ForeignPathError: refusing to replace '.../notes': it is a folder that is not a Zarr store ...
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import re
import shutil
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: renames are serialised in-process only
    fcntl = None

from ooc_kernels._folder_pin import check_pinned
from ooc_kernels._fsync import DIRECTORY as _DIRECTORY
from ooc_kernels._fsync import fsync as _fsync, fsync_tree as _fsync_tree
from ooc_kernels._paths import expand_user
from ooc_kernels._output_owner import OWNER_ATTR, check_owner, mark_store, owner_for
from ooc_kernels._path_lock import path_lock
from ooc_kernels._store_meta import MAX_STORE_META, read_store_attrs
from ooc_kernels._untrusted import open_regular, special_file
from ooc_kernels.exceptions import (DatasetExistsError, ForeignPathError, ModelPathError,
                                    WriteFailedError,
                                    ValidationError)

__all__ = ["FILE_KIND_KEY", "FILE_KINDS", "KIND_ATTR", "KINDS", "atomic_dir", "write_failed",
           "check_replaceable", "check_replaceable_file", "check_target", "file_kind",
           "expand_user", "path_lock", "read_consistent",
           "replace_dir", "store_around", "store_kind", "sweep_stale", "write_json_atomic"]

#: The attribute of a store's ``zarr.json`` that names what kind of store the library wrote.
KIND_ATTR = "ooc_kernels_store"

#: The kinds of store the library writes, as messages name them.
KINDS = {
    "model": "model",
    "checkpoint": "checkpoint",
    "predictions": "prediction store",
    "dataset": "dataset",
    "chunk-local": "chunk-local array",
}

#: The key that marks a JSON file this library wrote, and the kinds of such files.
FILE_KIND_KEY = "ooc_kernels_file"
FILE_KINDS = {"metrics": "metrics file"}
_MAX_MARKED_FILE = 1 << 20  # a metrics file is a few hundred bytes: larger is not one

# Stores written before the kind attribute existed are recognised by the attribute that
# their kind always carried (only the library writes these).
_UNMARKED = (
    ("model", lambda a: isinstance(a.get("ooc_kernels"), dict)
     and a["ooc_kernels"].get("format") == "ooc_kernels-model"),
    ("checkpoint", lambda a: isinstance(a.get("ooc_kernels_checkpoint"), dict)),
    ("dataset", lambda a: "ooc_kernels_schema_version" in a),
    ("chunk-local", lambda a: "ooc_kernels_crc32" in a),
)
_ERRORS = {"model": ModelPathError}
_ID = re.compile(r"[0-9a-f]{12}|[0-9a-f]{32}")  # the ids of temporaries (older writers: 12)

# What a writer puts beside ``NAME``: the longest is ``.NAME.tmp-ID.lock`` (ID: 32 hex digits).
_SIBLING_EXTRA = len("..tmp-.lock") + 32


def _name_max(folder: Path) -> int:
    """The longest file name, in bytes, of the file system that holds ``folder`` (or its
    nearest existing parent); 255 where the system does not say."""
    for existing in (folder, *folder.parents):
        try:
            if existing.is_dir():
                return int(os.pathconf(existing, "PC_NAME_MAX"))
        except (OSError, ValueError, AttributeError):
            break
    return 255


def check_target(path: str | os.PathLike, kind: str | None = None) -> Path:
    """Refuse a path that no store or file can be written at, before any work; return it.

    A leading ``~`` is the home folder, and a ``bytes`` path is decoded
    (:func:`~ooc_kernels._paths.expand_user`).  Refused: a path with a NUL
    character or without a last name (``""``, ``"."``, ``"x/.."``), a name too long for the
    temporary ``.NAME.tmp-ID.lock`` written beside it (the file system's limit per name, 255
    bytes on most), a path whose folder or one of its parents is a file (or a link to
    nothing) instead of a folder, and a path inside a store this library wrote (a model,
    checkpoint, dataset or prediction store, links resolved): what is written there goes
    with that store when it is replaced (``overwrite=True``, the next checkpoint) or removed.

    Raises
    ------
    ValidationError
        The path has no name, holds a NUL character, or its name is too long.
    ForeignPathError
        A parent of the path is not a folder, or is a store of this library
        (:class:`ModelPathError` for ``kind="model"``).

    Examples
    --------
    >>> check_target("out/" + "m" * 250)
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.ValidationError: the name 'mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm...' (250 bytes) is too long: ooc_kernels writes a temporary '.NAME.tmp-ID.lock' beside it, which must fit the file system's limit of 255 bytes per name; use a name of at most 212 bytes.
    """
    expanded = expand_user(path)  # a path of a type no file has: InputTypeError
    text = os.fsdecode(os.fspath(path))
    if "\0" in text:
        raise ValidationError(f"the path {text!r} contains a NUL character, which no file "
                              "name may hold; remove it.")
    path = Path(expanded)
    if path.name in ("", ".", ".."):
        raise ValidationError(
            f"the path {text!r} names no file or folder (its last part is "
            f"{path.name or text!r}); add a name, e.g. {os.path.join(text, 'model.zarr')!r}.")
    size, limit = len(os.fsencode(path.name)), _name_max(path.parent)
    if size + _SIBLING_EXTRA > limit:
        raise ValidationError(
            f"the name {path.name[:40] + '...' if len(path.name) > 40 else path.name!r} "
            f"({size} bytes) is too long: ooc_kernels writes a temporary '.NAME.tmp-ID.lock' "
            f"beside it, which must fit the file system's limit of {limit} bytes per name; "
            f"use a name of at most {limit - _SIBLING_EXTRA} bytes.")
    for parent in path.parents:
        if parent.is_dir():
            break
        if parent.exists() or parent.is_symlink():
            what = "a file" if parent.exists() else "a symbolic link to nothing"
            raise _ERRORS.get(kind, ForeignPathError)(
                f"cannot write {text!r}: {str(parent)!r} is {what}, not a folder; choose a "
                "path whose parents are folders, or move what is there aside yourself.")
    _check_outside_stores(path, text, kind)
    check_pinned(path, _ERRORS.get(kind, ForeignPathError))  # a run's folder, swapped?
    return path


def store_around(folder: str | os.PathLike, error: type[Exception] = ForeignPathError
                 ) -> tuple[Path, str] | None:
    """``(store, kind)``: the store this library wrote that ``folder`` (links resolved) is
    or lies inside, with its kind (a key of :data:`KINDS`); None when there is none.  What
    is written there goes with that store when the library replaces or removes it.

    Raises ``error`` when a folder on the way has a ``zarr.json`` too large to read
    (:data:`~ooc_kernels._store_meta.MAX_STORE_META`): whether it is a store is unknown."""
    folder = Path(os.path.realpath(folder))
    for above in (folder, *folder.parents):
        attrs = read_store_attrs(above)
        if isinstance(attrs, int):
            raise error(
                f"cannot tell whether {str(above)!r} is a store that ooc_kernels wrote (what "
                f"is written inside one goes with it when it is replaced): its zarr.json is "
                f"{attrs} bytes, more than the {MAX_STORE_META} read to find out; write "
                "outside that folder, or move that file aside.")
        found = None if attrs is None else _kind_of(attrs)
        if found is not None:
            return above, found
    return None


def _check_outside_stores(path: Path, text: str, kind: str | None) -> None:
    """Refuse ``path`` when a folder above it (links resolved) is a store this library
    wrote: it would be written into that store, and removed with it when the library
    replaces or removes the store."""
    inside = store_around(path.parent, _ERRORS.get(kind, ForeignPathError))
    if inside is not None:
        above, found = inside
        raise _ERRORS.get(kind, ForeignPathError)(
            f"cannot write {text!r}: it lies inside {str(above)!r}, a {KINDS[found]} "
            "that ooc_kernels wrote, and would be removed with it when that store is "
            "replaced (overwrite=True, --overwrite, the next checkpoint) or removed; "
            "choose a path outside every store, e.g. "
            f"{os.path.join(os.path.dirname(above), path.name)!r}.")


def store_kind(path: str | os.PathLike) -> str | None:
    """The kind of library store at ``path`` (a key of :data:`KINDS`), or ``None``.

    ``None`` when ``path`` is not a folder, is a symbolic link (never followed), or holds no
    readable Zarr 3 ``zarr.json`` marked by this library.  Reads that one file only.
    """
    attrs = _store_attrs(Path(path))
    return None if attrs is None else _kind_of(attrs)


def _store_attrs(path: Path) -> dict | None:
    """The attributes of the Zarr 3 ``zarr.json`` of the folder ``path``, or ``None``
    (:func:`~ooc_kernels._store_meta.read_store_attrs`; a file too large to read is no
    store's either)."""
    attrs = read_store_attrs(path)
    return attrs if isinstance(attrs, dict) else None


def _kind_of(attrs: dict) -> str | None:
    """The kind of library store whose ``zarr.json`` has the attributes ``attrs``."""
    kind = attrs.get(KIND_ATTR)
    if kind is not None:
        return kind if kind in KINDS else None
    for name, carries in _UNMARKED:
        if carries(attrs):
            return name
    return None


def _describe(path: Path) -> str:
    """What is at ``path``, for a refusal message."""
    if path.is_symlink():
        return "it is a symbolic link (a link is never followed, replaced or removed)"
    if not path.is_dir():
        return "it is a file"
    found = store_kind(path)
    if found is not None:
        return f"it is an ooc_kernels {KINDS[found]}"
    if (path / "zarr.json").is_file() or (path / ".zgroup").is_file() \
            or (path / ".zarray").is_file():
        return "it is a Zarr store that ooc_kernels did not write"
    return "it is a folder that is not a Zarr store written by ooc_kernels"


def check_replaceable(path: str | os.PathLike, kind: str) -> None:
    """Raise unless ``path`` is free or holds a store of ``kind`` that this library wrote.

    Call it before any work when the caller asked to replace ``path``; :func:`replace_dir`
    checks again under the path's lock right before the swap.

    Raises
    ------
    ForeignPathError
        ``path`` is a file, a symbolic link, a folder that is not a Zarr store of this
        library, or a store of another kind (:class:`ModelPathError` when ``kind`` is
        ``"model"``); for an output of a pipeline run, also a store of ``kind`` that another
        pipeline or no pipeline wrote (:mod:`ooc_kernels._output_owner`).  The message
        names the path, what is there and the fix.  Also raised, like
        :class:`~ooc_kernels.exceptions.ValidationError`, for a path no store can be
        written at (:func:`check_target`).
    """
    path = check_target(path, kind)
    while True:
        if not (path.exists() or path.is_symlink()):
            return
        attrs = None if path.is_symlink() else _store_attrs(path)
        if attrs is not None and _kind_of(attrs) == kind:
            check_owner(path, KINDS[kind], attrs.get(OWNER_ATTR),
                        _ERRORS.get(kind, ForeignPathError))
            return
        if path.exists() or path.is_symlink():
            break
        # gone while it was read: a writer of the same path swapped it; look again
    raise _ERRORS.get(kind, ForeignPathError)(
        f"refusing to replace {str(path)!r}: {_describe(path)}, not an ooc_kernels "
        f"{KINDS[kind]}, and ooc_kernels only ever replaces its own. Choose another path, "
        "or move or remove what is there yourself if it is no longer needed."
    )


def replace_dir(tmp: Path, path: Path, *, kind: str, overwrite: bool = True) -> None:
    """Move the finished store ``tmp`` to ``path``, replacing what is there.

    The old content is first renamed aside and only deleted once the new one is in place;
    if the second rename fails, the old content is put back.  Both renames run under
    :func:`path_lock`, so two writers of ``path`` never interleave their renames; the old
    content is deleted after the lock is released.

    Parameters
    ----------
    tmp : pathlib.Path
        The finished store; its ``zarr.json`` must carry ``kind`` in :data:`KIND_ATTR`.
    path : pathlib.Path
        The target.
    kind : str
        The kind of store (a key of :data:`KINDS`): an existing ``path`` is replaced only
        if it is a store of this kind written by this library (:func:`check_replaceable`,
        checked under the lock).
    overwrite : bool, default True
        With False, raise :class:`~ooc_kernels.exceptions.DatasetExistsError` if ``path``
        exists at the moment of the swap (checked under the lock, so of two concurrent
        writers with ``overwrite=False`` exactly one succeeds); ``tmp`` is left to the caller.

    Raises
    ------
    ForeignPathError
        ``path`` exists and is not a store of ``kind`` written by this library.
    DatasetExistsError
        ``path`` exists and ``overwrite`` is False.
    """
    tmp, path = Path(tmp), Path(path)
    if store_kind(tmp) != kind:
        raise ValueError(
            f"the finished store {str(tmp)!r} does not carry {KIND_ATTR}={kind!r} in its "
            "zarr.json; every store written through atomic_dir must be marked with its kind "
            "so that it can be told from what a user owns."
        )
    trash = None
    check_pinned(path, _ERRORS.get(kind, ForeignPathError))
    with path_lock(path):
        if path.exists() or path.is_symlink():
            if not overwrite:
                raise DatasetExistsError(
                    f"{str(path)!r} appeared while this write was in progress (another "
                    "writer finished first); pass overwrite=True (--overwrite on the "
                    "command line) to replace it"
                )
            check_replaceable(path, kind)
            trash = path.with_name(f".{path.name}.old-{uuid.uuid4().hex}")
            os.replace(path, trash)
            try:
                os.replace(tmp, path)
            except BaseException:
                os.replace(trash, path)
                raise
        else:
            os.replace(tmp, path)
        _fsync(path.parent, os.O_RDONLY | _DIRECTORY)  # the rename, before the old goes
    if trash is not None:
        _remove(trash)


def _moved(path: Path, before: os.stat_result) -> bool:
    """Whether ``path`` no longer names the folder ``before`` was taken of."""
    try:
        now = os.stat(path)
    except OSError:
        return True
    return (now.st_dev, now.st_ino) != (before.st_dev, before.st_ino)


def read_consistent(path: str | os.PathLike, read, *, attempts: int = 8):
    """``read()`` of the store at ``path``, all of it from one folder: the previous store or
    the one a writer swapped in meanwhile, never metadata of one and arrays of the other.

    The folder is held open while ``read`` runs (so its inode cannot be reused) and
    ``path`` is looked up again afterwards: when a writer swapped another folder in, the
    read, or the error it raised, is discarded and the read starts over.  The last attempt
    runs under :func:`path_lock` (no swap can happen), or as it is where the lock cannot be
    created (a read-only folder, where no writer swaps).  A path that is not a folder is
    left to ``read`` to report.
    """
    path = Path(path)
    for _ in range(attempts - 1):
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError:
            return read()
        try:
            before = os.fstat(fd)
            try:
                result = read()
            except Exception:
                if _moved(path, before):
                    continue
                raise
            if not _moved(path, before):
                return result
        finally:
            os.close(fd)
    with contextlib.ExitStack() as stack:
        with contextlib.suppress(OSError):  # ForeignPathError (a user's file there) too
            stack.enter_context(path_lock(path))
        return read()


def _remove(path: Path) -> None:
    """Delete a folder of this library (never following a link) or a file."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def _wait_for_pending_writes(timeout: float = 120.0) -> None:
    """Wait until the asynchronous writes that Zarr still runs in this process have ended.

    Zarr 3 runs every store operation as a task on one event loop in its own thread.  When
    one chunk write of an array fails (disk full), the synchronous call raises at once while
    the array's other chunk writes go on; each of them creates its parent folders again.
    Removing a temporary folder before they have ended would leave it re-created.
    """
    try:
        from zarr.core import sync as zsync

        loop = zsync.loop[0]
    except (ImportError, AttributeError, IndexError):  # another Zarr: nothing to wait for
        return
    if loop is None or loop.is_closed() or not loop.is_running() \
            or threading.current_thread() is getattr(zsync, "iothread", [None])[0]:
        return

    async def others_done():
        me = asyncio.current_task()
        pending = [t for t in asyncio.all_tasks() if t is not me]
        if pending:
            await asyncio.wait(pending, timeout=timeout)

    with contextlib.suppress(Exception):
        asyncio.run_coroutine_threadsafe(others_done(), loop).result(timeout + 5)


def _temporaries(path: Path) -> tuple[list[Path], list[Path], list[Path]]:
    """The temporary folders, writer lock files and old copies of ``path`` beside it."""
    tmp_prefix, old_prefix = f".{path.name}.tmp-", f".{path.name}.old-"
    temps, locks, olds = [], [], []
    try:
        names = os.listdir(path.parent)
    except OSError:
        return temps, locks, olds
    for name in names:
        if name.startswith(tmp_prefix):
            rest = name[len(tmp_prefix):]
            if rest.endswith(".lock") and _ID.fullmatch(rest[:-5]):
                locks.append(path.parent / name)
            elif _ID.fullmatch(rest):
                temps.append(path.parent / name)
        elif name.startswith(old_prefix) and _ID.fullmatch(name[len(old_prefix):]):
            olds.append(path.parent / name)
    return temps, locks, olds


@contextlib.contextmanager
def _claim(lock: Path) -> Iterator[bool]:
    """Yield whether the writer that owns ``lock`` has ended (its flock is free).

    While the block runs, the lock is held, so that writer cannot be starting again under
    the same name; a missing lock file means its writer has ended (a writer creates its lock
    before its temporary folder and removes it after).
    """
    if fcntl is None:  # pragma: no cover - no way to tell: treat every temporary as live
        yield False
        return
    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        yield True
        return
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: a live writer
            yield False
            return
        yield True
        with contextlib.suppress(OSError):
            os.unlink(lock)
    finally:
        os.close(fd)


def sweep_stale(path: str | os.PathLike) -> list[str]:
    """Remove what dead writers of ``path`` left beside it; return the names handled.

    Temporary folders ``.NAME.tmp-ID`` (and their lock files) whose writer no longer holds
    its lock are removed; a live writer's temporary is kept.  Old copies ``.NAME.old-ID``
    are removed, except that when ``path`` itself is missing the newest one is renamed back
    to ``path``: a swap killed between its two renames leaves the previous content there.
    Runs under :func:`path_lock` (no swap of ``path`` is half done meanwhile) and only when
    there is something to remove; a folder where this process may not write is left as is.
    """
    path = Path(path)
    if not any(_temporaries(path)):
        return []
    try:
        with path_lock(path):
            return _sweep_locked(path)
    except OSError:  # e.g. a read-only folder: the leftovers stay for a writer to remove
        return []


def _sweep_locked(path: Path) -> list[str]:
    """:func:`sweep_stale` for a caller that holds ``path_lock(path)``."""
    handled = []
    temps, locks, olds = _temporaries(path)
    for tmp in temps:
        lock = tmp.with_name(tmp.name + ".lock")
        with _claim(lock) as dead:
            if dead:
                _remove(tmp)
                handled.append(tmp.name)
    for lock in locks:
        if not lock.with_name(lock.name[:-5]).exists():
            with _claim(lock) as dead:
                if dead:
                    handled.append(lock.name)
    if olds and not (path.exists() or path.is_symlink()):
        newest = max(olds, key=lambda p: p.lstat().st_ctime_ns)
        os.replace(newest, path)
        olds.remove(newest)
        handled.append(newest.name)
    for old in olds:
        _remove(old)
        handled.append(old.name)
    return handled


@contextlib.contextmanager
def _writer_temp(path: Path) -> Iterator[Path]:
    """A new temporary folder beside ``path``, marked live by a held lock until it is gone."""
    while True:
        tmp = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex}")
        lock = tmp.with_name(tmp.name + ".lock")
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        if fcntl is None:  # pragma: no cover
            break
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            linked = os.fstat(fd).st_ino == os.stat(lock).st_ino
        except FileNotFoundError:
            linked = False  # a sweep took the fresh lock for a dead one: take another name
        except BaseException:
            os.close(fd)
            raise
        if linked:
            break
        os.close(fd)
    try:
        tmp.mkdir()
        yield tmp
    finally:
        try:
            if tmp.exists() or tmp.is_symlink():
                _remove(tmp)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(lock)
            os.close(fd)


#: The file system's refusals of a write: the disk or the quota full, a file size limit, a
#: read-only or forbidden folder, an I/O error.
_WRITE_REFUSALS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS, errno.EACCES,
                   errno.EPERM, errno.EIO}


def write_failed(err: OSError, path: Path, what: str, existed: bool) -> BaseException:
    """``err`` as the library's :class:`WriteFailedError` naming ``path`` when it is a
    refusal of the file system (:data:`_WRITE_REFUSALS`), else ``err`` itself."""
    if isinstance(err, WriteFailedError) or not isinstance(err, OSError) \
            or err.errno not in _WRITE_REFUSALS or type(err).__module__ != "builtins":
        return err
    before = (f"the previous {what} there is intact" if existed else "nothing is there")
    if existed and what == "checkpoint":
        before += " (a re-run resumes from it)"
    return WriteFailedError(
        err.errno,
        f"could not write the {what} {str(path)!r}: {err.strerror or err} "
        f"({errno.errorcode.get(err.errno, err.errno)}); nothing was replaced: {before}, and "
        "no temporary file is left. Free space (or raise the limit, or fix the folder's "
        "permissions), or write elsewhere, then run again")


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike, *, kind: str, overwrite: bool = True) -> Iterator[Path]:
    """Yield a temporary sibling folder; on success it replaces ``path``, on error it is removed.

    The writing happens in the temporary folder without any lock; only the final swap takes
    the lock (see :func:`replace_dir`, which also explains ``kind`` and ``overwrite``).
    Before anything is written, an existing ``path`` is checked (:func:`check_replaceable`
    when ``overwrite``) and the leftovers of dead writers of ``path`` are removed
    (:func:`sweep_stale`).  The store written into the folder must carry ``kind`` in the
    attribute :data:`KIND_ATTR` of its ``zarr.json``.

    Raises
    ------
    ForeignPathError
        ``overwrite`` and ``path`` is not a store of ``kind`` written by this library, or a
        parent of ``path`` is a file (:func:`check_target`).
    DatasetExistsError
        Not ``overwrite`` and ``path`` exists (before or after the writing).
    ValidationError
        ``path`` has no name or one too long for its temporary sibling (:func:`check_target`).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown store kind {kind!r}; one of {sorted(KINDS)}")
    path = check_target(path, kind)
    with contextlib.ExitStack() as stack:
        try:  # the folder, the lock and the writer's temporary are written too
            path.parent.mkdir(parents=True, exist_ok=True)
            with path_lock(path):  # no swap of path is half done while checked and swept
                if path.exists() or path.is_symlink():
                    if not overwrite:
                        raise DatasetExistsError(
                            f"{str(path)!r} already exists; pass overwrite=True to replace "
                            "it, or choose another path"
                        )
                    check_replaceable(path, kind)
                if any(_temporaries(path)):
                    _sweep_locked(path)
            existed = path.exists()
            tmp = stack.enter_context(_writer_temp(path))
        except OSError as err:
            failed = write_failed(err, path, KINDS[kind], path.exists())
            if failed is err:
                raise
            raise failed from err
        try:
            yield tmp
        except BaseException as err:
            _wait_for_pending_writes()
            failed = write_failed(err, path, KINDS[kind], existed)
            if failed is err:
                raise
            raise failed from err
        try:
            mark_store(tmp, path)  # a pipeline's output: which pipeline wrote it
            _fsync_tree(tmp)  # on the disk before it replaces the previous store
            replace_dir(tmp, path, kind=kind, overwrite=overwrite)
        except BaseException as err:
            _wait_for_pending_writes()
            failed = write_failed(err, path, KINDS[kind], existed)
            if failed is err:
                raise
            raise failed from err


def file_kind(path: str | os.PathLike) -> str | None:
    """The kind of JSON file this library wrote at ``path`` (a key of :data:`FILE_KINDS`),
    or ``None``: not a regular file (a named pipe or a device is never read, also one
    swapped in after a check), a symbolic link (never followed), larger than 1 MiB, not a
    JSON object, or without the marker :data:`FILE_KIND_KEY`."""
    doc = _marked_file(Path(path))
    return None if doc is None else doc[FILE_KIND_KEY]


def _marked_file(path: Path) -> dict | None:
    """The JSON object of the file this library wrote at ``path`` (see :func:`file_kind`)."""
    try:
        if path.is_symlink():
            return None
        with open_regular(path, what=repr(str(path)), error=ValueError) as f:
            if os.fstat(f.fileno()).st_size > _MAX_MARKED_FILE:
                return None
            doc = json.loads(f.read(_MAX_MARKED_FILE + 1))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get(FILE_KIND_KEY) not in FILE_KINDS:
        return None
    return doc


def check_replaceable_file(path: str | os.PathLike, kind: str, *,
                           overwrite: bool = True) -> None:
    """Raise unless ``path`` is free or (with ``overwrite``) a ``kind`` file this library wrote.

    Raises
    ------
    DatasetExistsError
        ``path`` exists and ``overwrite`` is False.
    ForeignPathError
        ``path`` is a folder, a symbolic link, or a file that is not a ``kind`` file written
        by this library; for an output of a pipeline run, also a ``kind`` file that another
        pipeline or no pipeline wrote (:mod:`ooc_kernels._output_owner`).  The message
        names the path, what is there and the fix.
    ValidationError
        A path no file can be written at (:func:`check_target`).
    """
    path = check_target(path)
    if not (path.exists() or path.is_symlink()):
        return
    if not overwrite:
        raise DatasetExistsError(
            f"{str(path)!r} already exists; pass overwrite=True (--overwrite) to replace it "
            f"(only an ooc_kernels {FILE_KINDS[kind]} is ever replaced), or choose another path"
        )
    doc = _marked_file(path)
    if doc is not None and doc[FILE_KIND_KEY] == kind:
        check_owner(path, FILE_KINDS[kind], doc.get(OWNER_ATTR), ForeignPathError)
        return
    special = None
    with contextlib.suppress(OSError):
        special = special_file(os.lstat(path).st_mode)
    if path.is_symlink():
        what = "it is a symbolic link (a link is never followed, replaced or removed)"
    elif path.is_dir():
        what = "it is a folder"
    elif special is not None:
        what = f"it is {special}, not an ooc_kernels {FILE_KINDS[kind]}"
    else:
        what = f"it is a file that is not an ooc_kernels {FILE_KINDS[kind]}"
    raise ForeignPathError(
        f"refusing to replace {str(path)!r}: {what}, and ooc_kernels only ever replaces its "
        "own. Choose another path, or move or remove what is there yourself if it is no "
        "longer needed."
    )


def write_json_atomic(path: str | os.PathLike, doc: dict, *, kind: str,
                      overwrite: bool = False) -> dict:
    """Write ``doc`` as a JSON file of ``kind`` (marked with :data:`FILE_KIND_KEY`) atomically.

    An existing ``path`` is replaced only with ``overwrite`` and only when it is a file of
    the same kind that this library wrote (:func:`check_replaceable_file`, checked again under
    the path's lock right before the rename).  Returns the document as written.

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> from ooc_kernels._atomic import write_json_atomic
    >>> target = Path(tempfile.mkdtemp()) / "metrics.json"
    >>> write_json_atomic(target, {"r2": 0.9}, kind="metrics")
    {'ooc_kernels_file': 'metrics', 'r2': 0.9}
    >>> _ = target.with_name("notes.json").write_text("{}")
    >>> write_json_atomic(target.with_name("notes.json"), {"r2": 0.9}, kind="metrics",
    ...                   overwrite=True)
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.ForeignPathError: refusing to replace ...
    """
    path = check_target(path)
    owner = owner_for(path)  # a pipeline's output records which pipeline wrote it
    doc = {FILE_KIND_KEY: kind, **({OWNER_ATTR: owner} if owner is not None else {}), **doc}
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    check_replaceable_file(path, kind, overwrite=overwrite)
    tmp = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex}")
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text)
        _fsync(tmp)  # on the disk before it replaces the previous file
        with path_lock(path):
            check_replaceable_file(path, kind, overwrite=overwrite)
            os.replace(tmp, path)
    except OSError as err:
        failed = write_failed(err, path, FILE_KINDS[kind], existed)
        if failed is err:
            raise
        raise failed from err
    finally:
        if tmp.exists():
            tmp.unlink()
    return doc

