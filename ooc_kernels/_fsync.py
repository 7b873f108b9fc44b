"""Flushing what the library wrote to the disk before it replaces what was there.

A rename is atomic, but without a flush the disk may receive the rename before the files
(ext4 and others write data back later): a power cut or a crash of the machine just after a
swap could leave the new name on a folder of empty files, with the previous content already
deleted.  :mod:`ooc_kernels._atomic` therefore flushes every file and folder of a finished
store (:func:`fsync_tree`) before the swap, and the parent folder (:func:`fsync`) after it.

Examples
--------
>>> import os, tempfile
>>> from ooc_kernels._fsync import fsync_tree
>>> folder = tempfile.mkdtemp()
>>> with open(os.path.join(folder, "a"), "w") as f:
...     _ = f.write("x")
>>> fsync_tree(folder)
"""

from __future__ import annotations

import errno
import os

__all__ = ["DIRECTORY", "fsync", "fsync_tree"]

#: The flag that opens a folder (0 where the platform has none).
DIRECTORY = getattr(os, "O_DIRECTORY", 0)


def fsync(path, flags: int = os.O_RDONLY) -> None:
    """Flush ``path`` (a file; a folder's entries with ``flags`` holding :data:`DIRECTORY`)
    to the disk.  A file system that cannot flush a folder (``EINVAL``, ``ENOTSUP``) is
    left to its own guarantees."""
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    except OSError as err:
        if err.errno not in (errno.EINVAL, errno.ENOTSUP) or not flags & DIRECTORY:
            raise
    finally:
        os.close(fd)


def fsync_tree(folder) -> None:
    """Flush every file and folder under ``folder`` (and ``folder``) to the disk."""
    for root, _dirs, files in os.walk(folder, topdown=False):
        for name in files:
            fsync(os.path.join(root, name))
        fsync(root, os.O_RDONLY | DIRECTORY)
