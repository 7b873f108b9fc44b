"""Terminal progress bars (tqdm), shown only on an interactive terminal unless asked otherwise.

The command line's ``--quiet`` and the ``OOC_KERNELS_PROGRESS`` environment variable
(``0``/``1``) override the automatic choice.

Examples
--------
>>> from ooc_kernels._progress import progress_bar
>>> with progress_bar(total=3, desc="demo", enabled=False) as bar:
...     for _ in range(3):
...         bar.update(1)
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from tqdm.auto import tqdm

_FORCED: bool | None = None


def progress_enabled(enabled: bool | None = None) -> bool:
    """Decide whether a progress bar is shown.

    Parameters
    ----------
    enabled : bool or None
        An explicit choice wins.  ``None`` falls back to :func:`set_progress`, then to the
        ``OOC_KERNELS_PROGRESS`` environment variable, then to "is stderr a terminal".
    """
    if enabled is not None:
        return bool(enabled)
    if _FORCED is not None:
        return _FORCED
    env = os.environ.get("OOC_KERNELS_PROGRESS")
    if env is not None and env.strip() != "":
        return env.strip().lower() not in {"0", "false", "no", "off"}
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def set_progress(enabled: bool | None) -> None:
    """Force progress bars on (``True``), off (``False``) or back to automatic (``None``)."""
    global _FORCED
    _FORCED = enabled


@contextlib.contextmanager
def progress_bar(total: int | None, desc: str, *, enabled: bool | None = None,
                 unit: str = "it") -> Iterator[tqdm]:
    """A tqdm bar that is a silent no-op when progress is disabled."""
    bar = tqdm(total=total, desc=desc, unit=unit, disable=not progress_enabled(enabled),
               leave=False, dynamic_ncols=True)
    try:
        yield bar
    finally:
        bar.close()
