"""Threads inside one chunk task: how many, and how the numba kernels are launched on them.

A chunk task's hot kernels (the DSG full phase and predictions) have parallel versions that
split a step over threads by a fixed partition (blocks of features, tiles of rows) and keep
every reduction in a fixed order, so the model does not depend on the thread count
(``docs/threads.md``).  This module decides the count and holds the rules of numba's
threading layer:

* :func:`task_threads` resolves the estimators' ``n_jobs`` for one task: an explicit count,
  or (``None``) the threads the task may use where it runs, shared by the tasks of the round
  that run there at once;
* :func:`kernel_threads` sets that count for the kernels called in its block (numba's count
  is per calling thread, so each Dask task sets its own), and :func:`current_threads` is
  what the kernel dispatchers read (1 outside any block: the sequential kernels);
* :func:`launch` calls a parallel kernel: from the main thread in that thread, from any
  other thread (a Dask pool thread, a ``distributed`` worker thread) on one of the process's
  *launcher* threads, which are reused.  GNU OpenMP gives every thread that starts a
  parallel region a team of its own, so kernels started from the threads of a Dask pool in
  turn would create one team per pool thread; once the process holds more OpenMP threads
  than cores, the runtime stops spinning between regions and every region wakes its team
  from sleep.  The launchers keep the teams at one per chunk task running at once (one with
  ``K = 1``), whichever thread runs the task.
* :func:`parallel_launch` wraps every call of a parallel kernel.  numba's ``omp`` and ``tbb``
  layers accept launches from several threads at once (Dask's threaded scheduler runs tasks
  side by side); its ``workqueue`` fallback (no OpenMP or TBB library) does not (numba aborts
  the process), so with it launches take one process-wide lock.  The first launch of a
  process is always taken under the lock, since the layer is only known once it ran.  A
  process forked from one that had launched a parallel kernel uses the sequential kernels
  (GNU OpenMP's pool does not survive ``fork``); Dask's process pool and ``distributed``'s
  nanny start their workers with ``spawn``, which is not affected.
* :func:`omp_spin_default`: GNU OpenMP keeps the threads of a team spinning for a while
  after each parallel region (300,000 turns by default), but only while the process holds
  no more OpenMP threads than cores (1,000 turns otherwise).  A parallel kernel runs one
  region per step, and a chunk task's threads share the cores with the task's read ahead
  and, on a ``distributed`` worker, the worker's own threads; a team that spins between
  regions holds cores that those need.  Before numba starts its OpenMP runtime in a process,
  ``GOMP_SPINCOUNT`` is set to 1,000 unless ``GOMP_SPINCOUNT`` or ``OMP_WAIT_POLICY`` is set
  already (the user's choice wins), so a worker with one team waits as the threaded
  scheduler's process does (it holds two teams, the main thread's and a launcher's, so more
  OpenMP threads than cores); no value of a result depends on it.

No Dask here (the base layer): Dask and ``distributed`` are only read when already imported.

Examples
--------
>>> from ooc_kernels._threads import current_threads, kernel_threads, task_threads
>>> task_threads(3, tasks_per_round=1)
3
>>> task_threads(None, tasks_per_round=4, available=16)
4
>>> with kernel_threads(1):
...     current_threads()
1
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from numbers import Integral

from ooc_kernels.exceptions import ValidationError

__all__ = ["GOMP_SPIN_COUNT", "available_threads", "current_threads", "kernel_threads",
           "launch", "launcher_threads", "map_in_order", "omp_spin_default",
           "parallel_launch", "prediction_threads", "task_threads", "threading_layer"]

#: The spin count that :func:`omp_spin_default` gives GNU OpenMP (its own value for a
#: process holding more OpenMP threads than cores).
GOMP_SPIN_COUNT = "1000"

_local = threading.local()
_launch_lock = threading.Lock()
_state = {"layer": None, "pid": None}
_active = {"predictions": 0}
_count_lock = threading.Lock()
_launchers = {"pool": None, "pid": None}
_launchers_lock = threading.Lock()


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity on this platform
        return max(1, os.cpu_count() or 1)


def _worker():
    """The ``distributed`` worker running the calling thread's task, or None."""
    if "distributed" not in sys.modules:  # never imported: cannot be a worker
        return None
    from distributed import get_worker

    try:
        return get_worker()
    except ValueError:  # not in a worker's task
        return None


def available_threads() -> tuple[int, int | None]:
    """``(threads, busy)``: the threads the calling task may use where it runs, and how many
    tasks run there now when that is known (None otherwise).

    On a ``distributed`` worker: its ``nthreads`` and its executing tasks; elsewhere Dask's
    ``num_workers`` setting when given (the threaded scheduler's pool), else the cores this
    process may run on.
    """
    worker = _worker()
    if worker is not None:
        busy = len(getattr(worker.state, "executing", ())) or None
        return max(1, int(worker.state.nthreads)), busy
    num_workers = None
    if "dask" in sys.modules:
        import dask.config

        num_workers = dask.config.get("num_workers", None)
    if isinstance(num_workers, int) and num_workers >= 1:
        return num_workers, None
    return _cpu_count(), None


def task_threads(n_jobs: int | None, tasks_per_round: int = 1, *,
                 available: int | None = None) -> int:
    """The thread count of one chunk task.

    Parameters
    ----------
    n_jobs : int or None
        The estimator's ``n_jobs``: ``None`` (share the threads where the task runs), an int
        ``>= 1`` (that many), or ``-1`` (every core of the process, ``-2`` all but one, as in
        scikit-learn; at least 1).
    tasks_per_round : int
        ``K``, the tasks of the round (the value actually used, whatever
        ``chunks_per_round`` said).
    available : int, optional
        The threads where the task runs (default :func:`available_threads`: a
        ``distributed`` worker's ``nthreads``, the threaded scheduler's pool, or the cores).

    Returns
    -------
    int
        ``n_jobs`` when it is a count; with ``None``, ``available`` divided by the tasks of
        the round that run beside this one (on a ``distributed`` worker the tasks it is
        executing, at most ``K``; elsewhere ``K``), at least 1.

    Raises
    ------
    ValidationError
        ``n_jobs`` is 0 or not an int, or ``tasks_per_round < 1``.

    Examples
    --------
    >>> task_threads(None, 3, available=8)
    2
    >>> task_threads(None, 16, available=8)
    1
    >>> task_threads(0)
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.ValidationError: n_jobs=0 is not a thread count; use None (all the threads the task may use), an int >= 1, or -1 (every core).
    """
    if isinstance(tasks_per_round, bool) or not isinstance(tasks_per_round, int) \
            or tasks_per_round < 1:
        raise ValidationError(f"tasks_per_round must be an int >= 1; got {tasks_per_round!r}.")
    if n_jobs is not None:
        cores = _cpu_count()
        if isinstance(n_jobs, bool) or not isinstance(n_jobs, Integral) or n_jobs == 0:
            raise ValidationError(
                f"n_jobs={n_jobs!r} is not a thread count; use None (all the threads the task "
                "may use), an int >= 1, or -1 (every core).")
        n_jobs = int(n_jobs)  # a NumPy integer (from a parameter grid) counts as an int
        return n_jobs if n_jobs > 0 else max(1, cores + 1 + n_jobs)
    busy = None
    if available is None:
        available, busy = available_threads()
    sharing = tasks_per_round if busy is None else min(tasks_per_round, busy)
    return max(1, int(available) // max(1, sharing))


def current_threads() -> int:
    """The thread count the enclosing :func:`kernel_threads` block set in this thread (1
    outside one): what the kernel dispatchers read."""
    return getattr(_local, "threads", 1)


def map_in_order(function, items, threads: int | None = None) -> list:
    """``[function(item) for item in items]``, the items shared by up to ``threads`` threads
    (None: the enclosing :func:`kernel_threads` block's count, 1 outside one).  Each value is
    computed alone and the list keeps the items' order, so it is the same on any thread
    count; NumPy's products and LAPACK release the GIL, so set-up work of this kind runs in
    parallel.

    When an item raises (or the caller is interrupted), the items not started are
    dropped, the running ones end, and the error of the first failed item in the items'
    order is raised in the caller.

    Examples
    --------
    >>> map_in_order(lambda x: x * x, [1, 2, 3], threads=2)
    [1, 4, 9]
    """
    items = list(items)
    workers = min(current_threads() if threads is None else int(threads), len(items))
    if workers <= 1:
        return [function(item) for item in items]
    pool = concurrent.futures.ThreadPoolExecutor(workers,
                                                 thread_name_prefix="ooc-kernels-setup")
    try:
        futures = [pool.submit(function, item) for item in items]
        concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_EXCEPTION)
    finally:   # after an error or an interrupt, the items not started never run
        pool.shutdown(wait=True, cancel_futures=True)
    return [future.result() for future in futures if not future.cancelled()]


def omp_spin_default() -> str | None:
    """Set ``GOMP_SPINCOUNT`` to :data:`GOMP_SPIN_COUNT` in this process's environment
    unless ``GOMP_SPINCOUNT`` or ``OMP_WAIT_POLICY`` is set (see the module docstring);
    returns the ``GOMP_SPINCOUNT`` in force (None: ``OMP_WAIT_POLICY`` decides).

    GNU OpenMP reads it when it starts, so it counts only before numba's first parallel
    launch in the process: :func:`kernel_threads` and :func:`parallel_launch` call it then.

    Examples
    --------
    >>> import os
    >>> omp_spin_default() == os.environ.get("GOMP_SPINCOUNT")
    True
    """
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ.setdefault("GOMP_SPINCOUNT", GOMP_SPIN_COUNT)
    return os.environ.get("GOMP_SPINCOUNT")


def _numba_limit(n: int) -> int:
    """``n`` capped by numba's pool (``NUMBA_NUM_THREADS``, the cores by default), and 1 in a
    process forked after a parallel launch (its OpenMP pool is unusable)."""
    from numba import config

    if _state["pid"] is not None and _state["pid"] != os.getpid():
        return 1
    return max(1, min(int(n), int(config.NUMBA_NUM_THREADS)))


@contextlib.contextmanager
def kernel_threads(n: int) -> Iterator[int]:
    """Run the kernels called in the block (in this thread) on ``n`` threads.

    ``n`` is capped by numba's pool size (``NUMBA_NUM_THREADS``, the cores by default);
    the value used is yielded.  Nested blocks restore the outer count when they end.
    """
    n = _numba_limit(n)
    previous = getattr(_local, "threads", None)
    _local.threads = n
    numba_previous = None
    if n > 1:
        import numba

        if _state["layer"] is None:  # numba's runtime may start here: its wait first
            omp_spin_default()
        numba_previous = numba.get_num_threads()
        numba.set_num_threads(n)
    try:
        yield n
    finally:
        if previous is None:
            del _local.threads
        else:
            _local.threads = previous
        if numba_previous is not None:
            import numba

            numba.set_num_threads(numba_previous)


@contextlib.contextmanager
def prediction_threads(n_jobs: int | None) -> Iterator[int]:
    """The threads of one prediction call: inside a :func:`kernel_threads` block (a fit
    task), that block's count; otherwise :func:`task_threads` with the predictions running
    at once in this process as the tasks sharing the threads (Dask runs a lazy prediction's
    chunks side by side)."""
    if hasattr(_local, "threads"):
        yield current_threads()
        return
    with _count_lock:
        _active["predictions"] += 1
        running = _active["predictions"]
    try:
        with kernel_threads(task_threads(n_jobs, running)) as n:
            yield n
    finally:
        with _count_lock:
            _active["predictions"] -= 1


def threading_layer() -> str | None:
    """numba's threading layer in this process (``"omp"``, ``"tbb"``, ``"workqueue"``), or
    None before the first parallel launch."""
    return _state["layer"]


@contextlib.contextmanager
def parallel_launch() -> Iterator[None]:
    """Wrap one call of a parallel kernel: serialized under the ``workqueue`` layer (and for
    the first launch of the process, which picks the layer), free otherwise."""
    layer = _state["layer"]
    if layer is not None and layer != "workqueue":
        yield
        return
    with _launch_lock:
        if _state["layer"] is None:  # numba's runtime may start now: its wait first
            omp_spin_default()
        yield
        if _state["layer"] is None:
            import numba

            try:
                _state["layer"] = numba.threading_layer()
            except ValueError:  # the call ran no parallel region: the layer is still unknown
                return
            _state["pid"] = os.getpid()


def _launcher_pool() -> concurrent.futures.ThreadPoolExecutor:
    """The process's launcher threads (made again in a forked child: threads do not survive
    ``fork``).  An idle launcher is reused before a new one starts, so the pool holds as many
    threads as parallel kernels ever ran at once."""
    with _launchers_lock:
        if _launchers["pool"] is None or _launchers["pid"] != os.getpid():
            _launchers["pool"] = concurrent.futures.ThreadPoolExecutor(
                max(4, 2 * _cpu_count()), thread_name_prefix="ooc-kernels-launcher")
            _launchers["pid"] = os.getpid()
        return _launchers["pool"]


def launcher_threads() -> int:
    """How many launcher threads this process started (0 before the first launch from a
    thread other than the main thread)."""
    pool = _launchers["pool"]
    if pool is None or _launchers["pid"] != os.getpid():
        return 0
    return len(pool._threads)


def _launched(n: int, kernel, args: tuple):
    with kernel_threads(n), parallel_launch():
        return kernel(*args)


def launch(kernel, *args):
    """``kernel(*args)`` (a parallel numba kernel) on :func:`current_threads` threads,
    started from the main thread when called from it and from a launcher thread otherwise
    (see the module docstring); waits for the result and raises what the kernel raised.

    Examples
    --------
    >>> import threading
    >>> def where(x):
    ...     return threading.current_thread().name.startswith("ooc-kernels-launcher"), x
    >>> launch(where, 1)                  # the main thread launches itself
    (False, 1)
    >>> out = []
    >>> t = threading.Thread(target=lambda: out.append(launch(where, 2))); t.start(); t.join()
    >>> out
    [(True, 2)]
    """
    if threading.current_thread() is threading.main_thread():
        try:
            with parallel_launch():
                return kernel(*args)
        except SystemError as exc:
            raise _interrupt_of(exc) from None
    return _launcher_pool().submit(_launched, current_threads(), kernel, args).result()


def _interrupt_of(exc: SystemError) -> BaseException:
    """The ``KeyboardInterrupt`` behind ``exc``, else ``exc``.

    Ctrl-C during a parallel kernel started from the main thread: the threading layer
    or numba's own calls back into Python check for signals, Python's handler sets
    ``KeyboardInterrupt`` then, and the kernel still returns, which CPython turns into a
    ``SystemError`` with the interrupt in its chain of causes and contexts.  The interrupt is
    what the user did.

    Examples
    --------
    >>> err = SystemError("returned a result with an exception set")
    >>> err.__cause__ = KeyboardInterrupt()
    >>> type(_interrupt_of(err)).__name__
    'KeyboardInterrupt'
    >>> type(_interrupt_of(SystemError("other"))).__name__
    'SystemError'
    """
    seen, link = set(), exc
    while link is not None and id(link) not in seen:   # the chain of causes and contexts
        if isinstance(link, KeyboardInterrupt):
            return link
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return exc
