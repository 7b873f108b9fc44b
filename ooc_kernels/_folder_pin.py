"""Output folders pinned for a run: nothing is written through a folder swapped meanwhile.

A run names its output folder at its start (a pipeline's ``save.output_dir``, the folder of
``ooc-kernels train --out``, the folder of a fit's ``checkpoint``) and writes into it minutes
or hours later (checkpoints during the fit, then the model, predictions and metrics).  A
folder path is looked up again at every write, so a folder replaced meanwhile by a symbolic
link (or another folder renamed there) sends the writes to wherever the link points, a
place nobody named.

Inside :func:`pinning`, :func:`pin` records the identity (device and inode) of a folder as
it is now.  Every write of :mod:`ooc_kernels._atomic` into a pinned folder or below it calls
:func:`check_pinned` before it begins and again right before its final rename: the folder
must be the same one, and no folder between it and the target may be a symbolic link
(the library creates real folders there).  Otherwise the write is refused with
:class:`~ooc_kernels.exceptions.ForeignPathError`.  A swap in the instant between the last
check and the rename is not caught (a check of the path, not of an open folder).

Examples
--------
>>> import os, tempfile
>>> from pathlib import Path
>>> out = Path(tempfile.mkdtemp()) / "out"
>>> out.mkdir()
>>> with pinning():
...     pin(out)
...     check_pinned(out / "model.zarr")          # the same folder: nothing to say
...     os.rename(out, out.with_name("moved"))
...     os.symlink(tempfile.mkdtemp(), out)
...     check_pinned(out / "model.zarr")
Traceback (most recent call last):
...
ooc_kernels.exceptions.ForeignPathError: refusing to write ...: the folder ... is no longer the folder it was when the run began (it is now a symbolic link to ...); ...
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextvars import ContextVar

__all__ = ["check_pinned", "pin", "pinning"]

# the folders pinned in this context: (absolute path, (device, inode) or None when absent)
_PINS: ContextVar[list | None] = ContextVar("ooc_kernels_folder_pins", default=None)


def _identity(folder: str) -> tuple[int, int] | None:
    """``(device, inode)`` of the folder ``folder`` names now (links followed, as a write
    follows them), or ``None`` when nothing is there."""
    try:
        st = os.stat(folder)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


@contextlib.contextmanager
def pinning() -> Iterator[None]:
    """Within the block, :func:`pin` records folders that the writes then check (with
    those of an enclosing block)."""
    token = _PINS.set(list(_PINS.get() or ()))
    try:
        yield
    finally:
        _PINS.reset(token)


def pin(folder: str | os.PathLike) -> None:
    """Record the folder ``folder`` names now (nothing outside :func:`pinning`)."""
    pins = _PINS.get()
    if pins is not None:
        key = os.path.abspath(os.fspath(folder))
        pins.append((key, _identity(key)))


def _what(folder: str) -> str:
    if os.path.islink(folder):
        return f"a symbolic link to {os.readlink(folder)!r}"
    if not os.path.lexists(folder):
        return "missing"
    return "another folder" if os.path.isdir(folder) else "a file"


def check_pinned(path: str | os.PathLike, error: type[Exception] | None = None) -> None:
    """Raise ``error`` (default :class:`~ooc_kernels.exceptions.ForeignPathError`) when
    ``path`` lies below a pinned folder that is no longer the folder it was when pinned,
    or below a symbolic link under it."""
    pins = _PINS.get()
    if not pins:
        return
    target = os.path.abspath(os.fspath(path))
    for folder, before in pins:
        if os.path.commonpath([folder, target]) != folder or target == folder:
            continue
        changed = folder if (_identity(folder) != before if before is not None
                             else os.path.islink(folder)) else None
        below = os.path.dirname(target)
        while changed is None and below != folder:
            if os.path.islink(below):
                changed = below
            below = os.path.dirname(below)
        if changed is not None:
            if error is None:
                from ooc_kernels.exceptions import ForeignPathError as error
            raise error(
                f"refusing to write {target!r}: the folder {changed!r} is no longer the "
                f"folder it was when the run began (it is now {_what(changed)}); it was "
                "replaced or moved during the run, and nothing is written through it to a "
                "place that was not named. Put the folder back where it was and run again "
                "(a pipeline resumes from its checkpoint, a fit with checkpoint=... and "
                "resume=True), or name the new place yourself.")
