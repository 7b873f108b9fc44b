"""Atomic writes of folders and files: write aside, then rename into place.

A reader never sees a half-written store: either the previous content or the new one.

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
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_dir", "replace_dir", "write_text_atomic"]


def replace_dir(tmp: Path, path: Path) -> None:
    """Move the finished folder ``tmp`` to ``path``, replacing what is there.

    The old content is first renamed aside and only deleted once the new one is in place;
    if the second rename fails, the old content is put back.
    """
    tmp, path = Path(tmp), Path(path)
    if path.exists():
        trash = path.with_name(f".{path.name}.old-{uuid.uuid4().hex}")
        os.replace(path, trash)
        try:
            os.replace(tmp, path)
        except BaseException:
            os.replace(trash, path)
            raise
        shutil.rmtree(trash, ignore_errors=True)
    else:
        os.replace(tmp, path)


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary sibling folder; on success it replaces ``path``, on error it is removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex}")
    tmp.mkdir()
    try:
        yield tmp
        replace_dir(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write a text file through a temporary sibling and :func:`os.replace`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex}")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
