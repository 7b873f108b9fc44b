"""Paths as users give them: the one place where a path given to the library is read.

Every function that takes a file or folder (``est.save``, ``ok.load``, ``make_dataset``,
``write_dataset``, ``open_zarr_dataset``, the catalog functions, ``fit(checkpoint=...)``,
``write_predictions``, ``run_pipeline`` ...) takes what :mod:`os` and :mod:`pathlib` take:
a ``str``, a ``bytes`` path (``b"/tmp/m.zarr"``, decoded with :func:`os.fsdecode`, so any
bytes the file system holds round-trip) or an :class:`os.PathLike` whose ``__fspath__``
returns either.  A leading ``~`` (or ``~user``) is that home folder.  Anything else is an
:class:`~ooc_kernels.exceptions.InputTypeError` naming what was given.

Examples
--------
>>> import os
>>> from pathlib import Path
>>> from ooc_kernels._paths import user_path
>>> user_path(b"/tmp/m.zarr") == user_path("/tmp/m.zarr") == user_path(Path("/tmp/m.zarr"))
True
>>> user_path("~/m.zarr") == Path(os.path.expanduser("~")) / "m.zarr"
True
>>> user_path(3)
Traceback (most recent call last):
...
ooc_kernels.exceptions.InputTypeError: the path must be a str, bytes or os.PathLike, got int 3; ...
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ooc_kernels.exceptions import InputTypeError

__all__ = ["PATH_TYPES", "expand_user", "is_path", "user_path"]

#: The types a path may have (with :func:`is_path`: not a ``bool``).
PATH_TYPES = (str, bytes, os.PathLike)


def is_path(value: Any) -> bool:
    """Whether ``value`` is given as a path: ``str``, ``bytes`` or :class:`os.PathLike`."""
    return isinstance(value, PATH_TYPES)


def expand_user(path: Any, what: str = "the path") -> str | None:
    """``path`` as a ``str`` (``bytes`` decoded with :func:`os.fsdecode`), a leading ``~``
    (or ``~user``) replaced by that home folder, as every path the library reads or writes
    takes it; ``None`` stays ``None``.  ``what`` names the argument in the error.

    Raises
    ------
    InputTypeError
        ``path`` is not a ``str``, ``bytes`` or :class:`os.PathLike` (or its ``__fspath__``
        returns something else).

    Examples
    --------
    >>> import os
    >>> expand_user(b"~/m.zarr") == os.path.join(os.path.expanduser("~"), "m.zarr")
    True
    """
    if path is None:
        return None
    try:
        raw = os.fspath(path)
    except TypeError:
        raise InputTypeError(
            f"{what} must be a str, bytes or os.PathLike, got {type(path).__name__} "
            f"{str(path)[:80]}; pass a file or folder path such as 'data/train.zarr' or "
            "pathlib.Path('data/train.zarr')") from None
    return os.path.expanduser(os.fsdecode(raw))


def user_path(path: Any, what: str = "the path") -> Path:
    """:func:`expand_user` of ``path`` as a :class:`pathlib.Path` (not resolved)."""
    if path is None:
        raise InputTypeError(f"{what} must be a str, bytes or os.PathLike, got None; pass a "
                             "file or folder path such as 'data/train.zarr'")
    return Path(expand_user(path, what))
