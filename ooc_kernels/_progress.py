"""Progress bars (tqdm), shown on an interactive terminal and in Jupyter unless asked otherwise.

The command line's ``--quiet``, :func:`set_progress` and the ``OOC_KERNELS_PROGRESS``
environment variable (``0``/``1``) override the automatic choice.

Which bar is used is decided when a bar is created, never at import (importing
``tqdm.auto`` in a notebook without ipywidgets warns ``IProgress not found``): in a
Jupyter/IPython kernel, ``tqdm.notebook`` when ipywidgets can be imported, else the text
bar of ``tqdm.std`` on standard error (which the notebook shows); elsewhere ``tqdm.std``.

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
from typing import Any

_FORCED: bool | None = None


def in_notebook() -> bool:
    """Whether this code runs in a Jupyter/IPython kernel (a notebook, JupyterLab, VS Code).

    Looks at an already-imported IPython only (never imports it): true when the current
    IPython shell is connected to a kernel, false in a plain interpreter and in terminal
    IPython (which is an interactive terminal anyway).

    Examples
    --------
    >>> in_notebook()      # doctests run outside a kernel
    False
    """
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:  # a broken or partial IPython: no kernel to draw in
        return False
    return shell is not None and getattr(shell, "kernel", None) is not None


def _ipywidgets_available() -> bool:
    try:
        import ipywidgets  # noqa: F401
    except Exception:  # not installed, or broken: use the text bar
        return False
    return True


def bar_class() -> type:
    """The tqdm class for a bar shown now: ``tqdm.notebook.tqdm`` in a kernel with
    ipywidgets, otherwise ``tqdm.std.tqdm`` (text on standard error).  Never warns."""
    if in_notebook() and _ipywidgets_available():
        from tqdm.notebook import tqdm as notebook_tqdm

        return notebook_tqdm
    from tqdm.std import tqdm as text_tqdm

    return text_tqdm


def progress_enabled(enabled: bool | None = None) -> bool:
    """Decide whether a progress bar is shown.

    Parameters
    ----------
    enabled : bool or None
        An explicit choice wins.  ``None`` falls back to :func:`set_progress`, then to the
        ``OOC_KERNELS_PROGRESS`` environment variable, then to "is stderr an interactive
        terminal, or is this a Jupyter/IPython kernel" (:func:`in_notebook`).

    Returns
    -------
    bool
    """
    if enabled is not None:
        return bool(enabled)
    if _FORCED is not None:
        return _FORCED
    env = os.environ.get("OOC_KERNELS_PROGRESS")
    if env is not None and env.strip() != "":
        return env.strip().lower() not in {"0", "false", "no", "off"}
    try:
        tty = bool(getattr(sys.stderr, "isatty", lambda: False)())
    except Exception:  # a closed or replaced stderr
        tty = False
    return tty or in_notebook()


def set_progress(enabled: bool | None) -> None:
    """Force progress bars on (``True``), off (``False``) or back to automatic (``None``)."""
    global _FORCED
    _FORCED = enabled


@contextlib.contextmanager
def progress_bar(total: int | None, desc: str, *, enabled: bool | None = None,
                 unit: str = "it") -> Iterator[Any]:
    """A tqdm bar that is a silent no-op when progress is disabled.

    Parameters
    ----------
    total : int or None
        Number of steps (``None``: unknown).
    desc : str
        Label of the bar.
    enabled : bool or None
        See :func:`progress_enabled`.
    unit : str, default "it"
        Unit shown after the counts.

    Yields
    ------
    tqdm.std.tqdm or tqdm.notebook.tqdm
        Call ``update(n)`` on it; closed when the block ends.
    """
    show = progress_enabled(enabled)
    if show:
        cls = bar_class()
    else:
        from tqdm.std import tqdm as cls
    # tqdm.std writes to the sys.stderr of the moment (the notebook's stream in a kernel)
    bar = cls(total=total, desc=desc, unit=unit, disable=not show, leave=False,
              dynamic_ncols=True)
    try:
        yield bar
    finally:
        bar.close()
