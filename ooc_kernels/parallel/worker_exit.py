"""Worker processes of Dask's ``"processes"`` scheduler that end with the process that
started them.

Dask's ``"processes"`` scheduler starts a pool of worker processes for a computation and
shuts it down when the computation ends.  A process killed while it computes (``SIGKILL``,
the out-of-memory killer) cannot shut its pool down, and the workers would keep running:
blocked on the pool's queue, whose pipe they hold open themselves, or finishing their task.
Inside :func:`~ooc_kernels.parallel.scheduler.scheduler_context` with ``"processes"``,
:func:`workers_exit_with_parent` makes :func:`exit_with_parent` the pool's initializer
(Dask's ``multiprocessing.initializer`` setting, run after any initializer configured
already): on Linux the kernel sends a worker ``SIGKILL`` when its parent dies
(``prctl(PR_SET_PDEATHSIG)``); elsewhere, or where that call fails, a daemon thread of the
worker looks at its parent every :data:`WATCH_SECONDS` and ends the worker once the parent
is gone.

Examples
--------
>>> import dask
>>> with workers_exit_with_parent():
...     dask.config.get("multiprocessing.initializer").func is exit_with_parent
True
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator

import dask

__all__ = ["WATCH_SECONDS", "exit_with_parent", "workers_exit_with_parent"]

#: Seconds between two looks at the parent by a worker that the kernel does not signal.
WATCH_SECONDS = 1.0
#: ``prctl`` option: the signal this process gets when its parent ends (Linux).
_PR_SET_PDEATHSIG = 1


def _signal_on_parent_death() -> bool:
    """Ask the kernel to send this process ``SIGKILL`` when its parent ends (Linux); whether
    it was done."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):  # no libc, or no prctl in it
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a process of another user has the pid: ours is gone
        return False
    return True


def _watch(gone: Callable[[], bool]) -> None:
    def run():
        while not gone():
            time.sleep(WATCH_SECONDS)
        os._exit(1)

    threading.Thread(target=run, daemon=True, name="ooc-kernels-parent-watch").start()


def exit_with_parent(parent: int, then: Callable[[], None] | None = None) -> None:
    """Initializer of a worker process: end this process when the process ``parent`` ends,
    then run ``then`` (an initializer configured before), if any.

    ``parent`` is the process that started the pool.  When it is this process's parent,
    the kernel signals its end (Linux) or a thread watches :func:`os.getppid`; when a fork
    server started this process, the thread watches ``parent`` itself.
    """
    if os.getppid() == parent:
        if not _signal_on_parent_death():
            _watch(lambda: os.getppid() != parent)
        elif os.getppid() != parent:  # the parent ended before the kernel was asked
            os._exit(1)
    else:
        _watch(lambda: not _alive(parent))
    if then is not None:
        then()


_LOCK = threading.Lock()
#: Blocks of :func:`workers_exit_with_parent` open now, and the setting found by the first.
_OPEN = [0]
_FOUND: list = [None, False]


@contextlib.contextmanager
def workers_exit_with_parent() -> Iterator[None]:
    """Inside the block, the worker processes of Dask's ``"processes"`` scheduler started by
    this process end when it ends (:func:`exit_with_parent` is Dask's
    ``multiprocessing.initializer``, followed by the one configured before).  Blocks may be
    open in several threads at once; the setting found by the first is restored when the
    last ends."""
    with _LOCK:
        if not _OPEN[0]:
            section = dask.config.config.get("multiprocessing", {})
            _FOUND[:] = [section.get("initializer"), "initializer" in section]
            dask.config.set({"multiprocessing.initializer": functools.partial(
                exit_with_parent, os.getpid(), _FOUND[0])})
        _OPEN[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _OPEN[0] -= 1
            if not _OPEN[0]:
                if _FOUND[1]:
                    dask.config.set({"multiprocessing.initializer": _FOUND[0]})
                else:
                    dask.config.config.get("multiprocessing", {}).pop("initializer", None)
