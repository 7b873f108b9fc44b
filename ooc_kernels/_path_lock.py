"""The advisory lock every writer of a path takes around its swap: :func:`path_lock`.

The lock is ``fcntl.flock`` on the sibling lock file ``.NAME.lock``, an empty regular file
created on entry and removed on exit; anything else at that name is not the library's and is
refused with :class:`~ooc_kernels.exceptions.ForeignPathError`.  Used by
:mod:`ooc_kernels._atomic` (which also exports :func:`path_lock`) and by the catalog's
writers.  The same lock under another sibling name, taken without waiting, is what a fit holds
on its checkpoint for as long as it runs (``path_lock(path, suffix=".fit-lock", wait=False)``:
:func:`ooc_kernels.estimators._checkpointing.holding_checkpoint`).  An ``flock`` ends with
the process that holds it, so a lock file left by a killed holder blocks nobody.

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> target = Path(tempfile.mkdtemp()) / "ck.zarr"
>>> with path_lock(target, suffix=".fit-lock", wait=False) as held:
...     with path_lock(target, suffix=".fit-lock", wait=False) as again:
...         held.name, again
('.ck.zarr.fit-lock', None)
>>> sorted(p.name for p in target.parent.iterdir())
[]
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: renames are serialised in-process only
    fcntl = None

from ooc_kernels.exceptions import ForeignPathError

__all__ = ["path_lock"]

# flock locks belong to open file descriptions, so threads of one process that open the lock
# file separately already exclude each other; this lock covers platforms without fcntl.
_THREAD_LOCK = threading.RLock()


def _foreign_lock(lock: Path, path: Path, what: str) -> ForeignPathError:
    return ForeignPathError(
        f"refusing to use {str(lock)!r} as the lock of {str(path)!r}: it is {what}, not an "
        "ooc_kernels lock file (an empty file the library creates there while it writes "
        f"{path.name!r} or a fit uses it, and removes). Move it away, or write "
        f"{path.name!r} under another name."
    )


def _open_lock(lock: Path, path: Path) -> int:
    """A descriptor of the lock file ``lock`` (created when missing), never through a link
    and only of a regular file."""
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except IsADirectoryError:
        raise _foreign_lock(lock, path, "a folder") from None
    except OSError as exc:
        if lock.is_symlink():
            raise _foreign_lock(lock, path, "a symbolic link") from exc
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _foreign_lock(lock, path, "not a regular file")
    return fd


def _acquire(lock: Path, path: Path, wait: bool) -> int | None:
    """A descriptor of ``lock`` holding its exclusive ``flock``; None when ``wait`` is False
    and another holder has it.  A lock file that the previous holder removed while this one
    waited (another inode at the name) is opened again."""
    while True:
        fd = _open_lock(lock, path)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return None
            try:
                same = os.fstat(fd).st_ino == os.stat(lock, follow_symlinks=False).st_ino
            except FileNotFoundError:
                same = False
            if same and os.fstat(fd).st_size:
                raise _foreign_lock(lock, path, "a file with content")
        except BaseException:
            with contextlib.suppress(OSError):
                os.close(fd)
            raise
        if same:
            return fd
        os.close(fd)  # the file we locked was unlinked by the previous holder: retry


@contextlib.contextmanager
def path_lock(path: str | os.PathLike, *, suffix: str = ".lock",
              wait: bool = True) -> Iterator[Path | None]:
    """Hold an exclusive advisory lock on ``path`` (through ``.NAME.lock`` next to it).

    Every writer of ``path`` that goes through this module takes this lock around its swap,
    so swaps of the same path never interleave, across threads and processes.  The lock file
    is created on entry and removed on exit; a writer that opened a lock file which another
    writer removed in the meantime notices it (different inode) and retries.

    The library's lock files are empty regular files.  Anything else found at the lock's
    name (a symbolic link, never followed; a file with content; a folder) is not the
    library's: it is refused with :class:`ForeignPathError` and left as it is.

    Parameters
    ----------
    path : str or os.PathLike
        What the lock is for.
    suffix : str, default ".lock"
        The lock file is ``.NAME`` followed by ``suffix`` (another suffix: another lock).
    wait : bool, default True
        Wait for another holder to let go; False: yield None at once when another holder
        (another thread or process) has it.

    Yields
    ------
    pathlib.Path or None
        The lock file's path, or None when ``wait`` is False and the lock is held.
    """
    path = Path(path)
    lock = path.with_name(f".{path.name}{suffix}")
    lock.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is None:  # pragma: no cover
        with _THREAD_LOCK:
            yield lock
        return
    fd = _acquire(lock, path, wait)
    if fd is None:
        yield None
        return
    try:
        yield lock
    finally:
        # unlink while still holding the lock: a waiter on the old inode will retry
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)
        os.close(fd)
