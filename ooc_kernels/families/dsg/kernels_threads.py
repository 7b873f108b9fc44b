"""Parallel versions of the DSG kernels whose result does not depend on the thread count.

Each kernel splits its work by a partition fixed by the problem, never by the threads, and
keeps every sum in the order of the sequential kernel, so its output is bit-identical to the
sequential kernel's for 1, 2, 3 ... threads (``docs/threads.md``):

* :func:`dsg_full_update_threads` (twin of
  :func:`~ooc_kernels.families.dsg.kernels_full.dsg_full_update`): per step, the threads
  share the step's tasks, the column tiles of the blocks
  (:mod:`~ooc_kernels.families.dsg.kernels_tasks`; 64 tasks for a default model of 16
  blocks): each applies the previous step's update to its coefficients (``Z_t^T G``, a sum
  over all the step's rows in one product) and computes its features and partial
  prediction ``P_t``; one thread sums ``F = P_0 + P_1 + ...`` in task order (the sequential
  kernel's order) and takes the loss gradient.  One parallel region per step (the first
  also copies each task's columns of ``W`` into its tile), in which each thread runs its
  own list of tasks, the same list every step, then takes what is left of the others';
* :func:`dsg_chunk_update_threads` (twin of
  :func:`~ooc_kernels.families.dsg.kernels.dsg_chunk_update`, the growth phase): per step,
  the step's own batch on one thread, then the running predictions of the rows not visited
  yet, in the sequential kernel's tiles, shared by up to :data:`GROWTH_SLOTS` threads;
* :func:`dsg_predict_threads` (twin of :func:`~ooc_kernels.families.dsg.kernels.dsg_predict`):
  the threads share the sequential kernel's row tiles; a row's value depends on its tile only;
* :func:`take_rows_threads` (``X[order]``) and :func:`count_nonfinite_threads` (the NaN and
  inf of ``X``): a chunk task's shuffle and check of its rows, the rows shared by the
  threads; a copy and a count, so exact for any thread count.

:func:`full_update`, :func:`chunk_update` and :func:`predict` pick the kernel from
:func:`ooc_kernels._threads.current_threads`: the sequential one for one thread (no
launch), the parallel one (through :func:`~ooc_kernels._threads.launch`: from the main
thread, or from one of the process's reused launcher threads) otherwise.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dsg.kernels import dsg_predict
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(300, 3)); W = rng.normal(size=(4, 3, 8))
>>> ph = rng.uniform(0, 6, (4, 8)); coef = rng.normal(size=(4, 8, 1))
>>> F = dsg_predict_threads(X, W, ph, coef, 0.5, tile=64)
>>> bool(np.array_equal(F, dsg_predict_threads(X, W, ph, coef, 0.5, tile=64)))
True
"""

from __future__ import annotations

import numpy as np
import numba
from numba import prange

from ooc_kernels._jit._cache import njit
from ooc_kernels._jit.atomic import claim
from ooc_kernels._jit.rff import COS_AFFINE
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dsg.kernels import (_tile_rows, add_tile_predictions,
                                              dsg_chunk_update, dsg_predict, grow_tile,
                                              growth_batch, growth_finish, growth_start)
from ooc_kernels.families.dsg.kernels_full import (_FULL_BUFFER_BYTES, _check_full_update,
                                                   dsg_full_update)
from ooc_kernels.families.dsg.kernels_tasks import (full_buffers, step_gradient, step_task,
                                                    task_position)
from ooc_kernels._threads import current_threads, launch

__all__ = ["dsg_full_update_threads", "dsg_chunk_update_threads", "dsg_predict_threads",
           "full_update", "chunk_update", "predict", "take_rows_threads",
           "count_nonfinite_threads", "take_rows", "all_finite", "gathers_on_threads",
           "GROWTH_SLOTS"]

#: Tiles of rows that :func:`dsg_chunk_update_threads` updates at once at most, each with its
#: own buffers (a tile's features: 2 MiB): 16 MiB more than one thread's, whatever the threads.
GROWTH_SLOTS = 8

#: Rows below which :func:`take_rows` and :func:`all_finite` stay on the calling thread (a
#: launch costs more than the work), and the bytes of ``X`` above which :func:`take_rows`
#: is not used for a shuffle in place (it holds a second copy of the rows while it runs).
_ROWS_MIN = 4096
SHUFFLE_COPY_BYTES = 64 * 2**20


def dsg_full_update_threads(X, Y, sw, W, phase, coef, avg, n_avg, steps, params,
                            max_buffer_bytes=_FULL_BUFFER_BYTES, kind=COS_AFFINE):
    """:func:`~ooc_kernels.families.dsg.kernels_full.dsg_full_update` with the tasks of
    every step (:mod:`~ooc_kernels.families.dsg.kernels_tasks`: blocks cut into column
    tiles) shared by the threads: same arguments, same result bit for bit.

    One parallel region per step: task ``t`` applies the previous step's update to its
    coefficients, then computes its features and partial prediction of this step; then one
    thread sums the partial predictions in task order and takes the loss gradient.

    The tasks are cut into one list per thread, ``ceil(tasks / threads)`` consecutive tasks
    each.  In every region a thread runs its own list first, forwards in even steps and
    backwards in odd ones (:func:`~ooc_kernels.families.dsg.kernels_tasks.task_position`):
    a task's update reads the features its previous region wrote, so the same thread, on
    the same core, finds the last of them still in its cache.  Then it takes what is left
    of the other lists.  Each list hands its tasks out one at a time from its own counter
    (:func:`~ooc_kernels._jit.atomic.claim`), so a thread held up by another job runs
    fewer and its partners take the rest.  A task writes only its own columns and buffers,
    so which thread runs it changes no value.
    """
    return _full_update_lists(X, Y, sw, W, phase, coef, avg, n_avg, steps, params,
                              max_buffer_bytes, kind, numba.get_num_threads())


@njit(cache=True, nogil=True, parallel=True)
def _full_update_lists(X, Y, sw, W, phase, coef, avg, n_avg, steps, params, max_buffer_bytes,
                       kind, lists):
    """:func:`dsg_full_update_threads` with the tasks cut into ``lists`` lists, the thread
    count of the region (any ``lists >= 1`` gives the same result)."""
    scale = params[3]
    b = params[1]
    n = X.shape[0]
    C = Y.shape[1]
    m = W.shape[0]
    n_steps = _check_full_update(X, Y, sw, W, phase, coef, avg, steps, b)
    out = coef.astype(np.float64)
    mean = avg.astype(np.float64)
    totals = (0.0, 0.0, n_avg)
    if n == 0 or m == 0:
        return out, mean, n_avg, 0.0, 0.0
    low = out.astype(X.dtype)
    tiles, bufs = full_buffers(X, W, C, b, max_buffer_bytes, kind)
    n_tasks = m * tiles[0]
    model = (out, low, mean)
    prev = (1.0, 0.0, 0.0)
    T = max(lists, 1)
    per = (n_tasks + T - 1) // T  # tasks of each list
    claims = np.zeros((n_steps + 1) * T, dtype=np.int64)  # the next of each list, per pass
    for s in range(n_steps + 1):  # pass s: step s - 1's updates, step s's features
        for me in prange(T):
            # list `me` first (numba gives thread k the same iteration k in every region of
            # a kernel call), then what is left of the others'
            for v in range(T):
                owner = (me + v) % T
                first = owner * per
                count = min(per, n_tasks - first)
                p = claim(claims, s * T + owner)
                while p < count:
                    t = first + task_position(p, count, s)
                    step_task(t, s, n_steps, X, W, phase, scale, kind, b, tiles, bufs,
                              model, prev)
                    p = claim(claims, s * T + owner)
        if s < n_steps:
            totals, prev = step_gradient(s, n_tasks, Y, sw, steps, params, m, bufs, totals)
    loss_sum, weight_sum, n_avg = totals
    return out, mean, n_avg, loss_sum, weight_sum


def dsg_chunk_update_threads(X, Y, sw, F, W, phase, steps, params, kind=COS_AFFINE):
    """:func:`~ooc_kernels.families.dsg.kernels.dsg_chunk_update` (the growth phase) with,
    at every step, the update of the rows not visited yet shared by the threads: same
    arguments, same result bit for bit.

    A step's own batch (its features, loss gradient and new block) runs on one thread; then
    the running predictions of the later rows, in the sequential kernel's tiles (a tile's
    rows depend on nothing else), are updated by up to :data:`GROWTH_SLOTS` threads, each
    with its own buffers, each taking every ``slots``-th tile.
    """
    return _chunk_update_slots(X, Y, sw, F, W, phase, steps, params, kind,
                               min(numba.get_num_threads(), GROWTH_SLOTS))


@njit(cache=True, nogil=True, parallel=True)
def _chunk_update_slots(X, Y, sw, F, W, phase, steps, params, kind, most):
    """:func:`dsg_chunk_update_threads` with at most ``most`` tiles updated at once (any
    ``most >= 1`` gives the same result)."""
    new_coef, factors, avg_new, n_avg, tile, bufs = growth_start(X, Y, sw, F, W, phase,
                                                                 steps, params)
    n = X.shape[0]
    m, r, C = new_coef.shape
    b = params[1]
    later = n - min(b, n)  # the rows after the first batch
    slots = max(1, min(most, (later + tile - 1) // max(tile, 1)))
    Zt = np.empty((slots, tile, r), dtype=X.dtype)
    At = np.empty((slots, tile, C), dtype=X.dtype)
    totals = (1.0, 0.0, 0.0)  # decay, loss_sum, weight_sum
    for s in range(m):
        factor, totals = growth_batch(s, X, Y, sw, F, W, phase, steps, params, kind, bufs,
                                      new_coef, factors, totals)
        hi = min(s * b + b, n)
        n_tiles = (n - hi + tile - 1) // tile
        for q in prange(min(slots, n_tiles)):
            for t in range(q, n_tiles, slots):  # the rows not visited yet, tile by tile
                start = hi + t * tile
                stop = min(start + tile, n)
                grow_tile(X[start:stop], F[start:stop], W[s], phase[s], bufs[3], factor,
                          params[3], kind, Zt[q, :stop - start], At[q, :stop - start])
    decay, loss_sum, weight_sum = totals
    avg_old = growth_finish(new_coef, factors, steps[1], n_avg, avg_new)
    return new_coef, decay, avg_new, avg_old, n_avg, loss_sum, weight_sum


@njit(cache=True, nogil=True, parallel=True)
def dsg_predict_threads(X, W, phase, coef, scale, kind=COS_AFFINE, tile=0):
    """:func:`~ooc_kernels.families.dsg.kernels.dsg_predict` with its row tiles shared by the
    threads: same arguments, same result bit for bit (``tile``: rows per tile, 0 for the
    sequential kernel's)."""
    n, d = X.shape
    m = W.shape[0]
    r = W.shape[2]
    C = coef.shape[2]
    if W.shape[1] != d or phase.shape[0] != m or phase.shape[1] != r:
        raise ValidationError("dsg_predict_threads: W must be (m, d, r) and phase (m, r) "
                              "for X (n, d)")
    if coef.shape[0] != m or coef.shape[1] != r:
        raise ValidationError("dsg_predict_threads: coef must be (m, r, C) matching W")
    out = np.zeros((n, C), dtype=np.float64)
    if n == 0 or m == 0 or r == 0 or C == 0:
        return out.astype(X.dtype)
    rows = min(_tile_rows(r, X.itemsize) if tile < 1 else tile, n)
    n_tiles = (n + rows - 1) // rows
    for t in prange(n_tiles):
        start = t * rows
        stop = min(start + rows, n)
        k = stop - start
        add_tile_predictions(X[start:stop], W, phase, coef, scale, kind,
                             np.empty((k, r), dtype=X.dtype), np.empty((k, C), dtype=X.dtype),
                             out[start:stop])
    return out.astype(X.dtype)


def full_update(X, Y, sw, W, phase, coef, avg, n_avg, steps, params,
                max_buffer_bytes=_FULL_BUFFER_BYTES, kind=COS_AFFINE):
    """:func:`~ooc_kernels.families.dsg.kernels_full.dsg_full_update` on the threads of
    :func:`~ooc_kernels._threads.current_threads` (the sequential kernel for one)."""
    if current_threads() <= 1:
        return dsg_full_update(X, Y, sw, W, phase, coef, avg, n_avg, steps, params,
                               max_buffer_bytes, kind)
    return launch(dsg_full_update_threads, X, Y, sw, W, phase, coef, avg, n_avg, steps,
                  params, max_buffer_bytes, kind)


def chunk_update(X, Y, sw, F, W, phase, steps, params, kind=COS_AFFINE):
    """:func:`~ooc_kernels.families.dsg.kernels.dsg_chunk_update` on the threads of
    :func:`~ooc_kernels._threads.current_threads` (the sequential kernel for one, or when the
    rows after the first batch fit in one tile)."""
    later = X.shape[0] - min(params[1], X.shape[0])  # the rows after the first batch
    if current_threads() <= 1 or later <= _tile_rows(W.shape[2], X.itemsize):
        return dsg_chunk_update(X, Y, sw, F, W, phase, steps, params, kind)
    return launch(dsg_chunk_update_threads, X, Y, sw, F, W, phase, steps, params, kind)


def predict(X, W, phase, coef, scale, kind=COS_AFFINE):
    """:func:`~ooc_kernels.families.dsg.kernels.dsg_predict` on the threads of
    :func:`~ooc_kernels._threads.current_threads` (the sequential kernel for one, or
    for a single tile of rows)."""
    if current_threads() <= 1 or X.shape[0] <= _tile_rows(W.shape[2], X.itemsize):
        return dsg_predict(X, W, phase, coef, scale, kind)
    return launch(dsg_predict_threads, X, W, phase, coef, scale, kind)


@njit(cache=True, nogil=True, parallel=True)
def take_rows_threads(X, order):
    """``X[order]`` for a 2-D ``X`` and an index array ``order`` of valid rows, the rows
    shared by the threads (a copy: the same values for any thread count)."""
    n = order.shape[0]
    rows = X.shape[0]
    out = np.empty((n, X.shape[1]), dtype=X.dtype)
    outside = 0
    for i in prange(n):
        k = order[i]
        if k < 0 or k >= rows:
            outside += 1
        else:
            out[i, :] = X[k, :]
    if outside:
        raise ValidationError("take_rows_threads: order names rows outside X; pass row "
                              "indices in [0, len(X))")
    return out


@njit(cache=True, nogil=True, parallel=True)
def count_nonfinite_threads(X):
    """The number of NaN and inf values of a 2-D ``X``, its rows shared by the threads (an
    integer sum: the same for any thread count)."""
    n, d = X.shape
    bad = 0
    for i in prange(n):
        row = 0
        for j in range(d):
            if not np.isfinite(X[i, j]):
                row += 1
        bad += row
    return bad


def take_rows(X, order):
    """``X[order]`` (2-D ``X``, ``order`` an int64 array of rows), on the threads of
    :func:`~ooc_kernels._threads.current_threads` when more than one and ``X`` has at
    least ``_ROWS_MIN`` rows.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.arange(12.0).reshape(6, 2); order = np.array([5, 0, 3, 1, 2, 4])
    >>> bool(np.array_equal(take_rows(X, order), X[order]))
    True
    """
    if current_threads() <= 1 or X.shape[0] < _ROWS_MIN:
        return X[order]
    return launch(take_rows_threads, X, np.ascontiguousarray(order, dtype=np.int64))


def gathers_on_threads(X) -> bool:
    """Whether :func:`take_rows` gathers ``X``'s rows on more than one thread (more than one
    thread, at least ``_ROWS_MIN`` rows, at most :data:`SHUFFLE_COPY_BYTES`): a shuffle in
    place pays only otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> gathers_on_threads(np.ones((10, 2)))  # too few rows, whatever the threads
    False
    """
    return (current_threads() > 1 and X.shape[0] >= _ROWS_MIN
            and X.nbytes <= SHUFFLE_COPY_BYTES)


def all_finite(X) -> bool:
    """Whether every value of the 2-D float array ``X`` is finite, on the threads of
    :func:`~ooc_kernels._threads.current_threads` when more than one and ``X`` has at
    least ``_ROWS_MIN`` rows (:func:`ooc_kernels._checks.check_finite` then names the first
    bad value).

    Examples
    --------
    >>> import numpy as np
    >>> all_finite(np.ones((3, 2))), all_finite(np.array([[1.0, np.nan]]))
    (True, False)
    """
    if current_threads() <= 1 or X.shape[0] < _ROWS_MIN:
        return bool(np.isfinite(X).all())
    return launch(count_nonfinite_threads, X) == 0
