"""Atomic writes of folders and files: write aside, then rename into place.

A reader never sees a half-written store: either the previous content or the new one.
Concurrent writers of the same path (threads or processes) never mix: each builds its own
hidden temporary sibling outside any lock, and only the swap (two renames) runs under an
advisory lock on the sibling lock file ``.NAME.lock`` (``fcntl.flock``), so the final folder
is always exactly one writer's complete output.  The lock file is removed when the swap is
done; nothing is left next to ``path``.

Examples
--------
>>> import os, tempfile
>>> from pathlib import Path
>>> from ooc_kernels._atomic import atomic_dir
>>> target = Path(tempfile.mkdtemp()) / "store"
>>> with atomic_dir(target) as tmp:
...     _ = (tmp / "a.txt").write_text("hello")
>>> (target / "a.txt").read_text()
'hello'
>>> sorted(os.listdir(target.parent))
['store']
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: renames are serialised in-process only
    fcntl = None

from ooc_kernels.exceptions import DatasetExistsError

__all__ = ["atomic_dir", "path_lock", "replace_dir", "write_text_atomic"]

# flock locks belong to open file descriptions, so threads of one process that open the lock
# file separately already exclude each other; this lock covers platforms without fcntl.
_THREAD_LOCK = threading.RLock()


def _lock_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock")


@contextlib.contextmanager
def path_lock(path: str | os.PathLike) -> Iterator[Path]:
    """Hold an exclusive advisory lock on ``path`` (through ``.NAME.lock`` next to it).

    Every writer of ``path`` that goes through this module takes this lock around its swap,
    so swaps of the same path never interleave, across threads and processes.  The lock file
    is created on entry and removed on exit; a writer that opened a lock file which another
    writer removed in the meantime notices it (different inode) and retries.

    Yields the lock file's path.
    """
    path = Path(path)
    lock = _lock_path(path)
    lock.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is None:  # pragma: no cover
        with _THREAD_LOCK:
            yield lock
        return
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.fstat(fd).st_ino == os.stat(lock).st_ino
            except FileNotFoundError:
                same = False
        except BaseException:
            os.close(fd)
            raise
        if same:
            break
        os.close(fd)  # the file we locked was unlinked by the previous holder: retry
    try:
        yield lock
    finally:
        # unlink while still holding the lock: a waiter on the old inode will retry
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)
        os.close(fd)


def replace_dir(tmp: Path, path: Path, *, overwrite: bool = True) -> None:
    """Move the finished folder ``tmp`` to ``path``, replacing what is there.

    The old content is first renamed aside and only deleted once the new one is in place;
    if the second rename fails, the old content is put back.  Both renames run under
    :func:`path_lock`, so two writers of ``path`` never interleave their renames; the old
    content is deleted after the lock is released.

    Parameters
    ----------
    overwrite : bool, default True
        With False, raise :class:`~ooc_kernels.exceptions.DatasetExistsError` if ``path``
        exists at the moment of the swap (checked under the lock, so of two concurrent
        writers with ``overwrite=False`` exactly one succeeds); ``tmp`` is left to the caller.
    """
    tmp, path = Path(tmp), Path(path)
    trash = None
    with path_lock(path):
        if path.exists() or path.is_symlink():
            if not overwrite:
                raise DatasetExistsError(
                    f"{str(path)!r} appeared while this write was in progress (another "
                    "writer finished first); pass overwrite=True to replace it"
                )
            trash = path.with_name(f".{path.name}.old-{uuid.uuid4().hex}")
            os.replace(path, trash)
            try:
                os.replace(tmp, path)
            except BaseException:
                os.replace(trash, path)
                raise
        else:
            os.replace(tmp, path)
    if trash is not None:
        if trash.is_dir() and not trash.is_symlink():
            shutil.rmtree(trash, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                trash.unlink()


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike, *, overwrite: bool = True) -> Iterator[Path]:
    """Yield a temporary sibling folder; on success it replaces ``path``, on error it is removed.

    The writing happens in the temporary folder without any lock; only the final swap takes
    the lock (see :func:`replace_dir`, which also explains ``overwrite``).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex}")
    tmp.mkdir()
    try:
        yield tmp
        replace_dir(tmp, path, overwrite=overwrite)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write a text file through a temporary sibling and :func:`os.replace`.

    A single ``os.replace`` of a file is atomic on its own: concurrent writers each leave a
    complete file and the last rename wins.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex}")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
