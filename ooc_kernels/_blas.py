"""One BLAS thread inside chunk tasks, so results do not depend on where a task runs.

OpenBLAS gives results that differ in the last bits with its thread count (measured on
``dsg_chunk_update`` and ``dsg_predict``: up to 4e-9 between 1 and 2 threads).  Dask's
distributed workers start with ``OPENBLAS_NUM_THREADS=1``; to get bit-identical models on
every scheduler, chunk tasks everywhere use one BLAS thread, and parallelism comes from the
tasks of a round and from the cluster's workers.  The engine holds the limit for the whole
fit in the driving process; each task also enters it (free when already held), which covers
Dask's process pool, workers configured with more threads, and lazy predictions.

A limit only reaches the BLAS libraries loaded when it is set.  The compiled kernels call
SciPy's BLAS (numba's ``np.dot`` goes through ``scipy.linalg.cython_blas``), a library of
its own next to NumPy's, which a process loads when ``scipy.linalg`` is first imported, at
the latest when a kernel first runs.  Loaded inside a limit, it would keep its default
thread count until that limit ends: in a process without ``OPENBLAS_NUM_THREADS=1`` (the
client, Dask's process pool, a worker started without the nanny's settings), the tasks that
load it would compute with more threads than the tasks of a process that loaded it
earlier, and give other bits.  So the limit loads the kernels' BLAS before it is set.

The limit is process-wide and reference-counted: it may begin in one thread and end in
another (two fits in threads of one process).  threadpoolctl 3.8 (measured) lets only one
thread change OpenBLAS's thread count, the first to set it, and silently ignores the others
until that thread's ``with threadpool_limits`` block ends; a limit set outside such a block
keeps that thread in charge for good.  Here the thread that sets or restores the limit
takes charge first and gives it up afterwards, so the limit holds whichever thread enters it
and the caller's setting comes back whichever thread leaves it last.

Finding the BLAS libraries a process has loaded (threadpoolctl's ``ThreadpoolController``)
opens and queries every one of them: about 1 to 4 ms, paid at every outermost limit (three
in a small fit, a few percent of it).  The controller is kept and made anew only when the
process's set of loaded shared objects has changed (:func:`loaded_objects`, the count of
file-backed mappings on Linux; everywhere else it is made anew every time), so a library
loaded since the last limit is always found.

Examples
--------
>>> from ooc_kernels._blas import single_threaded_blas
>>> with single_threaded_blas():
...     pass
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator

import threadpoolctl
from threadpoolctl import ThreadpoolController

__all__ = ["single_threaded_blas"]

_lock = threading.Lock()
_depth = 0
_limiter = None
_kernels_blas_loaded = False
_controller: ThreadpoolController | None = None
_controller_objects: int | None = None


def loaded_objects() -> int | None:
    """A count that changes when a shared object is loaded into this process: its
    file-backed memory mappings (the entries of ``/proc/self/map_files``, each shared object
    maps several), or ``None`` where it cannot be read (not Linux, no procfs, or not
    permitted there).

    The kernel lists the mappings without the dynamic linker's lock.  ``dl_iterate_phdr``
    holds that lock while it calls back into Python, and the callback needs the GIL, which
    a thread importing an extension module holds inside ``dlopen`` while it waits for the
    same lock: the process hangs (threadpoolctl reads ``/proc/self/maps`` on Linux for that
    reason).  A file mapped or unmapped meanwhile also changes the count (the controller is
    then made anew for nothing); a library loaded while as many file mappings are removed
    leaves it equal, which CPython's extension modules and the BLAS libraries never do
    (they are not unloaded).
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        return len(os.listdir("/proc/self/map_files"))
    except OSError:
        return None


def _blas_controller() -> ThreadpoolController:
    """The process's threadpoolctl controller, made anew when a shared object was loaded
    since it was made (call with ``_lock`` held)."""
    global _controller, _controller_objects
    objects = loaded_objects()
    if _controller is None or objects is None or objects != _controller_objects:
        _controller = ThreadpoolController()
        _controller_objects = objects
    return _controller


def _load_kernels_blas() -> None:
    """Load the BLAS the compiled kernels call (SciPy's, through ``cython_blas``), so a
    limit set afterwards covers it (once per process)."""
    global _kernels_blas_loaded
    if not _kernels_blas_loaded:
        import scipy.linalg.cython_blas  # noqa: F401 - loads SciPy's BLAS library
        import scipy.linalg.cython_lapack  # noqa: F401

        _kernels_blas_loaded = True


def _release_openblas_control() -> None:
    """Let the calling thread change OpenBLAS's thread count (threadpoolctl 3.8 obeys only
    the thread that set it first; a threadpoolctl without ``clear_controlling_thread`` lets
    any thread set it)."""
    openblas = getattr(threadpoolctl, "OpenBLASController", None)
    clear = getattr(openblas, "clear_controlling_thread", None)
    if clear is not None:
        clear(force=True)


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Limit BLAS to one thread in this process for the block (re-entrant, thread-safe).

    The previous limits are restored when the outermost block ends.
    """
    global _depth, _limiter
    with _lock:
        if _depth == 0:
            _load_kernels_blas()  # before the limit: a library loaded later escapes it
            _release_openblas_control()
            _limiter = _blas_controller().limit(limits=1, user_api="blas")
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _limiter is not None:
                _release_openblas_control()  # this thread may not be the one that set it
                _limiter.restore_original_limits()
                _limiter = None
                _release_openblas_control()
