"""Progress bars (tqdm), shown on an interactive terminal and in Jupyter unless asked otherwise.

The command line's ``--quiet``, :func:`set_progress` and the ``OOC_KERNELS_PROGRESS``
environment variable (``0``/``1``) override the automatic choice.

Which bar is used is decided when a bar is created, never at import (importing
``tqdm.auto`` in a notebook without ipywidgets warns ``IProgress not found``): in a
Jupyter/IPython kernel, ``tqdm.notebook`` when ipywidgets can be imported, else the text
bar of ``tqdm.std`` on standard error (which the notebook shows); elsewhere ``tqdm.std``.

Without a bar (standard error is not a terminal: a batch job's log file), long work reports
through the ``ooc_kernels`` logger instead, at level INFO: a fit one line per epoch, a bar
created with ``log_lines=N`` up to ``N`` lines as it advances (each tenth of the work for
``N = 10``).  A library does not configure logging: these lines are shown where the
application attaches a handler, as ``ooc-kernels`` does with :func:`log_to_stderr` when its
standard error is not a terminal.

Examples
--------
>>> from ooc_kernels._progress import progress_bar
>>> with progress_bar(total=3, desc="demo", enabled=False) as bar:
...     for _ in range(3):
...         bar.update(1)
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings
from collections.abc import Iterator
from typing import Any

_FORCED: bool | None = None

#: The library's logger: stage, epoch and progress lines at INFO (see the module docstring).
logger = logging.getLogger("ooc_kernels")

#: The format of :func:`log_to_stderr`'s lines: time, then the message.
LOG_FORMAT = "%(asctime)s ooc-kernels: %(message)s"


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
    """Force progress bars on (``True``), off (``False``) or back to automatic (``None``).

    The choice holds for every bar of this process until the next call; an estimator's
    ``progress=`` parameter still wins for its own fit.  Automatic means the
    ``OOC_KERNELS_PROGRESS`` environment variable (``0``/``1``) when it is set, else bars on
    an interactive terminal and in Jupyter.

    Examples
    --------
    >>> import ooc_kernels as ok
    >>> ok.set_progress(False)   # no bars, e.g. in a script whose output is a log
    >>> ok.set_progress(None)    # automatic again
    """
    global _FORCED
    _FORCED = enabled


@contextlib.contextmanager
def log_to_stderr(enabled: bool = True) -> Iterator[logging.Handler | None]:
    """Show the library's INFO lines (stages, epochs, progress) on standard error.

    What a command line does when it has no terminal to draw bars on: one line per event,
    each with its time, in the batch job's log.  The handler is removed and the logger's
    level restored when the block ends.

    Parameters
    ----------
    enabled : bool, default True
        ``False``: do nothing (yields None).

    Yields
    ------
    logging.Handler or None
        The handler attached to :data:`logger` (writing to the ``sys.stderr`` of the moment
        the block starts).

    Examples
    --------
    >>> import io, sys
    >>> err, sys.stderr = sys.stderr, io.StringIO()
    >>> with log_to_stderr():
    ...     logger.info("fit: started")
    >>> text, sys.stderr = sys.stderr.getvalue(), err
    >>> text.rstrip().endswith("ooc-kernels: fit: started")
    True
    """
    if not enabled:
        yield None
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT, datefmt="%Y-%m-%d %H:%M:%S"))
    handler.setLevel(logging.INFO)
    level = logger.level
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        handler.flush()


@contextlib.contextmanager
def warnings_to_log(category: type[Warning], prefix: str = "") -> Iterator[None]:
    """Show each warning of ``category`` raised in the block as a WARNING line of
    :data:`logger` (``prefix`` before the message), whatever the warning filters say.

    What a command does with a warning that is part of its report (a fit that stopped at
    ``max_iter`` before converging): one log line beside the stage lines, instead of
    Python's warning display with a source line.  Other warnings are shown as before.
    Without a handler on the logger, Python's last-resort handler still prints the line
    on standard error.

    Parameters
    ----------
    category : type of Warning
        The warnings to log (subclasses included).
    prefix : str, default ""
        Put before each message.

    Examples
    --------
    >>> import io, sys, warnings
    >>> err, sys.stderr = sys.stderr, io.StringIO()
    >>> with log_to_stderr(), warnings_to_log(RuntimeWarning, "fit: "):
    ...     warnings.warn("stopped at max_iter", RuntimeWarning)
    >>> text, sys.stderr = sys.stderr.getvalue(), err
    >>> text.rstrip().endswith("ooc-kernels: fit: stopped at max_iter")
    True
    """
    with warnings.catch_warnings():
        warnings.simplefilter("always", category)
        show = warnings.showwarning

        def log_or_show(message, cat, filename, lineno, file=None, line=None):
            if issubclass(cat, category):
                logger.warning("%s%s", prefix, message)
            else:
                show(message, cat, filename, lineno, file, line)

        warnings.showwarning = log_or_show
        yield


def logs_instead(enabled: bool | None, bar: Any) -> bool:
    """Whether work under ``bar`` reports through :data:`logger` instead: no bar is shown,
    progress was not switched off (``enabled`` is not False) and the logger is enabled for
    INFO (an application attached a handler, e.g. :func:`log_to_stderr`)."""
    return (enabled is not False and bool(getattr(bar, "disable", True))
            and logger.isEnabledFor(logging.INFO))


class _LoggedBar:
    """A hidden bar that writes up to ``lines`` INFO lines as it advances (every
    ``total / lines`` steps, and at the end); every other attribute is the bar's."""

    def __init__(self, bar: Any, desc: str, total: int, unit: str, lines: int):
        self._bar, self._desc, self._total, self._unit = bar, desc, total, unit
        self._lines, self._done, self._logged = lines, 0, 0

    def update(self, n: int = 1) -> None:
        self._bar.update(n)
        self._done += n
        step = min(self._lines, self._total) * self._done // self._total
        if step > self._logged:
            self._logged = step
            logger.info("%s: %d/%d %ss (%d%%)", self._desc, self._done, self._total,
                        self._unit, 100 * self._done // self._total)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._bar, name)


@contextlib.contextmanager
def progress_bar(total: int | None, desc: str, *, enabled: bool | None = None,
                 unit: str = "it", log_lines: int = 0) -> Iterator[Any]:
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
    log_lines : int, default 0
        When no bar is shown, ``enabled`` is not False and :data:`logger` is enabled for
        INFO (:func:`logs_instead`), write up to this many
        lines as the work advances (``desc: 12/20 chunks (60%)``), evenly spaced, the last
        at the end.  Needs a known ``total``.

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
        if log_lines > 0 and total and logs_instead(enabled, bar):
            yield _LoggedBar(bar, desc, total, unit, log_lines)
        else:
            yield bar
    finally:
        bar.close()
