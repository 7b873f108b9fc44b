"""How the DSG step kernel's tasks are handed to the threads: task lists against a counter.

Run from the repository root::

    OPENBLAS_NUM_THREADS=1 python benchmarks/threads_task_lists.py --rows 25600 --blocks 64 \\
        --threads 16 8 --repeats 5

The problem is a default model at 2,000,000 rows: ``--blocks`` blocks of 256 features
(64 blocks: 16,384 features, one task per block), 32 inputs, batches of 256, float32.
Times, per step (microseconds, medians and minima of ``--repeats`` after one warm-up, the
variants interleaved in every repeat), and checks that every variant gives the sequential
kernel's coefficients and average bit for bit:

* ``sequential``: the library's :func:`~ooc_kernels.families.dsg.kernels_full.dsg_full_update`
  (its task order forwards and backwards in turn);
* ``sequential forwards``: the same loop with the tasks always in order (defined here);
* ``counter T``: the tasks of a step taken one at a time from one shared counter by ``T``
  threads (defined here: how the parallel kernel handed out tasks before task lists);
* ``lists T``: the library's
  :func:`~ooc_kernels.families.dsg.kernels_threads.dsg_full_update_threads` on ``T``
  threads (one list of tasks per thread, forwards and backwards in turn, then the others'
  leftovers);
* ``lists forwards T``: the same lists always run forwards (defined here);
* ``lists, recomputed T``: the library's kernel with ``max_buffer_bytes=0``, so a task
  recomputes its features for its update instead of keeping them;
* ``free running T`` (a diagnostic, not the model: not checked): every thread runs its own
  list for all the steps in one parallel region, with no gradient between the steps (the
  update of a step takes a zero gradient), so the steps' work runs without their
  synchronisation.  ``lists T`` against ``free running T`` is what the regions, the
  one-thread gradient and the balance of the tasks cost a step; ``free running 1``
  against ``free running T`` is how the work itself scales on the machine (its clock
  with every core busy, its caches and memory);
* ``one region T`` (defined here): the library's lists in one parallel region for the
  whole kernel call instead of one per step.  The thread that finishes a step's last task
  takes the step's gradient, then raises the step's flag; the others wait for the flag
  (spinning about a millisecond, then naps of 20 us) before their next tasks.  Any thread
  may run any task and a thread waits only for tasks that running threads have taken, so
  it cannot deadlock whatever the team's size.  Against ``lists T``: what starting and
  ending a region every step costs;
* ``ahead T`` (defined here): ``one region T`` whose threads do not wait idle for a step's
  gradient: a thread with no task of the step left computes the next step's features of
  tasks whose step is done (its own list first) into one of its spare buffers
  (:data:`AHEAD_SPARES` a thread; the runner of a task whose features were computed ahead
  takes them and keeps the task's old buffer as a spare).  Each task's features of a step
  are computed once, by whoever takes them first, by the same operations, so the model is
  the sequential kernel's.  Against ``one region T``: what the tail of a step's tasks and
  its one-thread gradient cost the threads that wait for them;
* ``lists, twice the tasks T`` and ``sequential, twice the tasks`` (defined here): tiles of
  half the library's width, so twice its tasks (with 64 blocks: two tiles of 128 columns a
  block, 128 tasks).  The
  partition is part of the model's arithmetic: these two are checked against each other,
  not against the library's model.  Against ``lists T``: what a finer balance of the tasks
  buys.

``--clock`` adds a table of what each core does with every core busy, each of ``T`` threads
in its own memory (a few KiB: no cache or memory is shared), as work per second of ``T``
threads against one: the features of one tile of 64 rows x 64 columns over and over, its
product written out in the kernel (the machine's clock: the most the step kernel's work can
scale by), and a task's three products by BLAS, as the step kernel computes them
(``X_B W_t``, then ``Z_t c`` and ``Z_t^T g``: BLAS's calls from many threads at once as
well).

``--spins`` sets how long a waiting thread of ``one region`` and ``ahead`` spins before it
naps (atomic reads; 200,000 is about a millisecond).  The OpenMP wait is the runtime's own
unless set in the environment (the library sets
``GOMP_SPINCOUNT=1000`` only when it launches its kernels itself, which this script does
not do); ``OMP_WAIT_POLICY=active`` measures threads that never sleep.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numba
import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic
from threadpoolctl import threadpool_limits

from threads_kernel import problem

from ooc_kernels._jit.atomic import claim
from ooc_kernels._jit.rff import COS_AFFINE, features_inplace
from ooc_kernels.families.dsg.kernels_full import (_FULL_BUFFER_BYTES, _check_full_update,
                                                   dsg_full_update)
from ooc_kernels.families.dsg.kernels_tasks import (full_buffers, full_tile_width,
                                                    step_gradient, step_task, task_position,
                                                    task_update, tile_copy)
from ooc_kernels.families.dsg.kernels_threads import dsg_full_update_threads


@njit(nogil=True)
def _start(X, Y, sw, W, phase, coef, avg, n_avg, steps, params, width=0):
    """The model, tiles and buffers of a kernel call; ``width`` > 0: tiles of that many
    columns instead of the library's (the features are kept, as the library's are here)."""
    b = params[1]
    n_steps = _check_full_update(X, Y, sw, W, phase, coef, avg, steps, b)
    out = coef.astype(np.float64)
    mean = avg.astype(np.float64)
    tiles, bufs = full_buffers(X, W, Y.shape[1], b, _FULL_BUFFER_BYTES, COS_AFFINE)
    if width > 0:
        m, d, r = W.shape
        nf = (r + width - 1) // width
        nb = min(b, X.shape[0])
        tiles = (nf, width, tiles[2])
        bufs = (np.empty(m * d * r if nf > 1 else 0, dtype=X.dtype), bufs[1],
                np.empty((m * nf, nb, Y.shape[1]), dtype=X.dtype),
                np.empty((m * nf, width, Y.shape[1]), dtype=X.dtype), bufs[4], bufs[5])
    return n_steps, (out, out.astype(X.dtype), mean), tiles, bufs


@intrinsic
def _peek(typingctx, flags, i):
    """``flags[i]`` read as one atomic load (sequentially consistent), which the compiler
    may not move out of a waiting loop."""
    if not (isinstance(flags, types.Array) and flags.dtype == types.int64):
        return None

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = context.cast(builder, args[1], signature.args[1], types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [idx])
        return builder.load_atomic(ptr, "seq_cst", 8)

    return types.int64(flags, i), codegen


@intrinsic
def _nap(typingctx, microseconds):
    """C's ``usleep(microseconds)``."""
    def codegen(context, builder, signature, args):
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.IntType(32), [ir.IntType(32)]), "usleep")
        return builder.call(fn, [builder.trunc(args[0], ir.IntType(32))])

    return types.int32(microseconds), codegen


@njit(nogil=True)
def _wait(flags, i, above, spins):
    """Until ``flags[i] > above``: ``spins`` atomic reads, then naps of 20 us between reads."""
    k = 0
    while _peek(flags, i) <= above:
        k += 1
        if k > spins:
            _nap(20)


@njit(nogil=True, parallel=True)
def counter(X, Y, sw, W, phase, coef, avg, n_avg, steps, params):
    scale, b, m = params[3], params[1], W.shape[0]
    n_steps, model, tiles, bufs = _start(X, Y, sw, W, phase, coef, avg, n_avg, steps, params)
    n_tasks = m * tiles[0]
    totals, prev = (0.0, 0.0, n_avg), (1.0, 0.0, 0.0)
    claims = np.zeros(n_steps + 1, dtype=np.int64)
    for s in range(n_steps + 1):
        for k in prange(n_tasks):
            t = claim(claims, s)
            while t < n_tasks:
                step_task(t, s, n_steps, X, W, phase, scale, COS_AFFINE, b, tiles, bufs,
                          model, prev)
                t = claim(claims, s)
        if s < n_steps:
            totals, prev = step_gradient(s, n_tasks, Y, sw, steps, params, m, bufs, totals)
    return model[0], model[2], totals[2], totals[0], totals[1]


@njit(nogil=True, parallel=True)
def free_running(X, Y, sw, W, phase, coef, avg, n_avg, steps, params, lists):
    scale, b, m = params[3], params[1], W.shape[0]
    n_steps, model, tiles, bufs = _start(X, Y, sw, W, phase, coef, avg, n_avg, steps, params)
    bufs[5][:] = 0.0                       # the gradient every update takes: zero
    n_tasks = m * tiles[0]
    prev = (1.0, 0.0, 0.0)
    per = (n_tasks + lists - 1) // lists
    for me in prange(lists):
        first = me * per
        count = min(per, n_tasks - first)
        for s in range(n_steps + 1):
            for p in range(count):
                step_task(first + p, s, n_steps, X, W, phase, scale, COS_AFFINE, b, tiles,
                          bufs, model, prev)
    return model[0], model[2], n_avg, 0.0, 0.0


@njit(nogil=True)
def sequential_width(X, Y, sw, W, phase, coef, avg, n_avg, steps, params, width):
    """The sequential kernel with its tasks always in order, on tiles of ``width`` columns
    (0: the library's)."""
    scale, b, m = params[3], params[1], W.shape[0]
    n_steps, model, tiles, bufs = _start(X, Y, sw, W, phase, coef, avg, n_avg, steps, params,
                                         width)
    n_tasks = m * tiles[0]
    totals, prev = (0.0, 0.0, n_avg), (1.0, 0.0, 0.0)
    for s in range(n_steps + 1):
        for t in range(n_tasks):
            step_task(t, s, n_steps, X, W, phase, scale, COS_AFFINE, b, tiles, bufs, model,
                      prev)
        if s < n_steps:
            totals, prev = step_gradient(s, n_tasks, Y, sw, steps, params, m, bufs, totals)
    return model[0], model[2], totals[2], totals[0], totals[1]


@njit(nogil=True, parallel=True)
def lists_width(X, Y, sw, W, phase, coef, avg, n_avg, steps, params, lists, width, turn):
    """The library's lists on tiles of ``width`` columns (0: the library's), run forwards and
    backwards in turn (``turn``) or always forwards."""
    scale, b, m = params[3], params[1], W.shape[0]
    n_steps, model, tiles, bufs = _start(X, Y, sw, W, phase, coef, avg, n_avg, steps, params,
                                         width)
    n_tasks = m * tiles[0]
    totals, prev = (0.0, 0.0, n_avg), (1.0, 0.0, 0.0)
    per = (n_tasks + lists - 1) // lists
    claims = np.zeros((n_steps + 1) * lists, dtype=np.int64)
    for s in range(n_steps + 1):
        for me in prange(lists):
            for v in range(lists):
                owner = (me + v) % lists
                first = owner * per
                count = min(per, n_tasks - first)
                p = claim(claims, s * lists + owner)
                while p < count:
                    t = first + (task_position(p, count, s) if turn else p)
                    step_task(t, s, n_steps, X, W, phase, scale, COS_AFFINE, b, tiles, bufs,
                              model, prev)
                    p = claim(claims, s * lists + owner)
        if s < n_steps:
            totals, prev = step_gradient(s, n_tasks, Y, sw, steps, params, m, bufs, totals)
    return model[0], model[2], totals[2], totals[0], totals[1]


@njit(nogil=True, parallel=True)
def one_region(X, Y, sw, W, phase, coef, avg, n_avg, steps, params, lists, spins):
    scale, b, m = params[3], params[1], W.shape[0]
    n_steps, model, tiles, bufs = _start(X, Y, sw, W, phase, coef, avg, n_avg, steps, params)
    n_tasks = m * tiles[0]
    per = (n_tasks + lists - 1) // lists
    claims = np.zeros((n_steps + 1) * lists, dtype=np.int64)
    finished = np.zeros(n_steps + 1, dtype=np.int64)  # tasks finished, per pass
    ready = np.zeros(n_steps + 1, dtype=np.int64)     # 1: the pass's gradient is taken
    prevs = np.zeros((n_steps + 1, 3))                # (factor, step, w) for each pass
    prevs[0, 0] = 1.0
    sums = np.zeros(2)                                # loss and weight sums so far
    n_avgs = np.full(1, n_avg, dtype=np.int64)
    for me in prange(lists):
        for s in range(n_steps + 1):
            if s > 0:
                _wait(ready, s - 1, 0, spins)
            prev = (prevs[s, 0], prevs[s, 1], prevs[s, 2])
            for v in range(lists):
                owner = (me + v) % lists
                first = owner * per
                count = min(per, n_tasks - first)
                p = claim(claims, s * lists + owner)
                while p < count:
                    step_task(first + task_position(p, count, s), s, n_steps, X, W, phase,
                              scale, COS_AFFINE, b, tiles, bufs, model, prev)
                    if claim(finished, s) == n_tasks - 1 and s < n_steps:  # the last task
                        totals, nxt = step_gradient(s, n_tasks, Y, sw, steps, params, m,
                                                    bufs, (sums[0], sums[1], n_avgs[0]))
                        sums[0], sums[1], n_avgs[0] = totals
                        prevs[s + 1, 0], prevs[s + 1, 1], prevs[s + 1, 2] = nxt
                        claim(ready, s)
                    p = claim(claims, s * lists + owner)
    return model[0], model[2], n_avgs[0], sums[0], sums[1]


#: Spare feature buffers each thread of ``ahead T`` starts with.
AHEAD_SPARES = 2


@njit(nogil=True)
def _ahead_views(t, s, X, W, b, tiles, Wt, pool, slot):
    """Task ``t``'s columns of ``W`` and its step ``s`` features in buffer ``slot``."""
    nf, w, keep = tiles
    n, d = X.shape
    r = W.shape[2]
    j = t // nf
    c0 = (t % nf) * w
    c1 = min(c0 + w, r)
    wt = c1 - c0
    if nf == 1:
        Wj = W[j]
    else:
        Wj = Wt[j * d * r + c0 * d:j * d * r + c1 * d].reshape((d, wt))
    nb = min(b, n - s * b) if s * b < n else 0
    return Wj, pool[slot, :nb * wt].reshape((nb, wt)), j, c0, c1


@njit(nogil=True)
def _ahead_features(t, s, X, W, phase, scale, b, tiles, Wt, pool, slot):
    """Step ``s``'s features of task ``t``, into buffer ``slot``."""
    Wj, Z, j, c0, c1 = _ahead_views(t, s, X, W, b, tiles, Wt, pool, slot)
    lo = s * b
    np.dot(X[lo:lo + Z.shape[0]], Wj, Z)
    features_inplace(COS_AFFINE, Z, phase[j, c0:c1], scale)


@njit(nogil=True)
def _ahead_task(t, s, n_steps, X, W, phase, scale, b, tiles, bufs, pool, model, prev,
                state, stack, spins):
    """:func:`step_task` whose step ``s`` features another thread may have computed ahead.

    ``state = (taken, done, home, spare)``: one counter per task and step (the first to take
    it computes the features), the steps whose features are in (per task), the buffer of
    the task's last features, the buffer that features computed ahead went to.  ``stack``:
    this thread's free buffers (``stack[0]`` their count); a task whose features were
    computed ahead gives its old buffer to the thread that runs it."""
    taken, done, home, spare = state
    nf, w, keep = tiles
    Wt, Zt, P, D, F, G = bufs
    low = model[1]
    if s == 0 and nf > 1:
        j = t // nf
        c0 = (t % nf) * w
        tile_copy(W, Wt, j, c0, min(c0 + w, W.shape[2]))
    if s > 0:
        Wj, Z, j, c0, c1 = _ahead_views(t, s - 1, X, W, b, tiles, Wt, pool, home[t])
        task_update(Z, G, D[t, :c1 - c0], model, prev, j, c0)
    if s < n_steps:
        if claim(taken, t * (n_steps + 1) + s) == 0:
            _ahead_features(t, s, X, W, phase, scale, b, tiles, Wt, pool, home[t])
            claim(done, t)
        else:
            _wait(done, t, s, spins)  # another thread is computing them
            stack[0] += 1
            stack[stack[0]] = home[t]
            home[t] = spare[t]
        Wj, Z, j, c0, c1 = _ahead_views(t, s, X, W, b, tiles, Wt, pool, home[t])
        np.dot(Z, low[j, c0:c1], P[t, :Z.shape[0]])


@njit(nogil=True)
def _look_ahead(me, s, lists, per, n_tasks, n_steps, X, W, phase, scale, b, tiles, Wt,
                pool, ready, passes, state, stack, counted):
    """While step ``s - 1``'s gradient is not taken: step ``s``'s features of the tasks whose
    pass ``s - 1`` is done, this thread's list first, into this thread's free buffers."""
    taken, done, home, spare = state
    for v in range(lists):
        owner = (me + v) % lists
        first = owner * per
        count = min(per, n_tasks - first)
        for p in range(count):
            if stack[0] == 0 or _peek(ready, s - 1) != 0:
                return
            t = first + task_position(p, count, s)
            if _peek(passes, t) >= s and claim(taken, t * (n_steps + 1) + s) == 0:
                slot = stack[stack[0]]
                stack[0] -= 1
                _ahead_features(t, s, X, W, phase, scale, b, tiles, Wt, pool, slot)
                spare[t] = slot
                claim(done, t)
                claim(counted, 0)


@njit(nogil=True, parallel=True)
def ahead(X, Y, sw, W, phase, coef, avg, n_avg, steps, params, lists, spins, counted):
    """``one region`` whose threads, once a step's tasks are all taken, compute the next
    step's features of tasks whose step is done while they wait for the gradient; adds to
    ``counted[0]`` the tasks' features computed ahead."""
    scale, b, m = params[3], params[1], W.shape[0]
    n_steps, model, tiles, bufs = _start(X, Y, sw, W, phase, coef, avg, n_avg, steps, params)
    nb = min(b, X.shape[0])
    Wt = bufs[0]
    n_tasks = m * tiles[0]
    n_bufs = n_tasks + lists * AHEAD_SPARES
    pool = np.empty((n_bufs, nb * tiles[1]), dtype=X.dtype)
    stacks = np.zeros((lists, n_bufs + 1), dtype=np.int64)
    for me in range(lists):
        stacks[me, 0] = AHEAD_SPARES
        for q in range(AHEAD_SPARES):
            stacks[me, 1 + q] = n_tasks + me * AHEAD_SPARES + q
    state = (np.zeros(n_tasks * (n_steps + 1), dtype=np.int64),
             np.zeros(n_tasks, dtype=np.int64), np.arange(n_tasks),
             np.zeros(n_tasks, dtype=np.int64))
    per = (n_tasks + lists - 1) // lists
    claims = np.zeros((n_steps + 1) * lists, dtype=np.int64)
    finished = np.zeros(n_steps + 1, dtype=np.int64)
    ready = np.zeros(n_steps + 1, dtype=np.int64)
    passes = np.zeros(n_tasks, dtype=np.int64)  # passes finished, a task
    prevs = np.zeros((n_steps + 1, 3))
    prevs[0, 0] = 1.0
    sums = np.zeros(2)
    n_avgs = np.full(1, n_avg, dtype=np.int64)
    for me in prange(lists):
        stack = stacks[me]
        for s in range(n_steps + 1):
            if s > 0:
                if s < n_steps:
                    _look_ahead(me, s, lists, per, n_tasks, n_steps, X, W, phase, scale, b,
                                tiles, Wt, pool, ready, passes, state, stack, counted)
                _wait(ready, s - 1, 0, spins)
            prev = (prevs[s, 0], prevs[s, 1], prevs[s, 2])
            for v in range(lists):
                owner = (me + v) % lists
                first = owner * per
                count = min(per, n_tasks - first)
                p = claim(claims, s * lists + owner)
                while p < count:
                    t = first + task_position(p, count, s)
                    _ahead_task(t, s, n_steps, X, W, phase, scale, b, tiles, bufs, pool,
                                model, prev, state, stack, spins)
                    claim(passes, t)
                    if claim(finished, s) == n_tasks - 1 and s < n_steps:
                        totals, nxt = step_gradient(s, n_tasks, Y, sw, steps, params, m,
                                                    bufs, (sums[0], sums[1], n_avgs[0]))
                        sums[0], sums[1], n_avgs[0] = totals
                        prevs[s + 1, 0], prevs[s + 1, 1], prevs[s + 1, 2] = nxt
                        claim(ready, s)
                    p = claim(claims, s * lists + owner)
    return model[0], model[2], n_avgs[0], sums[0], sums[1]


@njit(nogil=True, parallel=True)
def compute_alone(X, W, phase, scale, threads, reps):
    """Each of ``threads`` threads: the features of a 64 x 64 tile ``reps`` times, in its
    own buffers, its products written out here rather than calling BLAS."""
    total = 0.0
    for me in prange(threads):
        Xs = X[64 * me:64 * me + 64].copy()
        Ws = W[me % W.shape[0], :, :64].copy()
        ph = phase[me % W.shape[0], :64].copy()
        Z = np.empty((64, 64), dtype=X.dtype)
        acc = 0.0
        for k in range(reps):
            for i in range(64):
                for q in range(64):
                    Z[i, q] = 0.0
                for j in range(Xs.shape[1]):
                    x = Xs[i, j]
                    for q in range(64):
                        Z[i, q] += x * Ws[j, q]
            features_inplace(COS_AFFINE, Z, ph, scale)
            acc += Z[k % 64, k % 64]
        total += acc
    return total


@njit(nogil=True, parallel=True)
def products_alone(X, W, width, threads, reps):
    """Each of ``threads`` threads: a task's three BLAS products ``reps`` times, in its own
    buffers: ``Z = X_B W_t`` (256 rows, the model's tile of ``width`` columns), ``Z c`` and
    ``Z^T g`` (one output column)."""
    total = 0.0
    for me in prange(threads):
        Xs = X[256 * me:256 * me + 256].copy()
        Ws = W[me % W.shape[0], :, :width].copy()
        Z = np.empty((256, width), dtype=X.dtype)
        c = np.full((width, 1), 0.5, dtype=X.dtype)
        g = np.full((256, 1), 0.25, dtype=X.dtype)
        p = np.empty((256, 1), dtype=X.dtype)
        q = np.empty((width, 1), dtype=X.dtype)
        acc = 0.0
        for k in range(reps):
            np.dot(Xs, Ws, Z)
            np.dot(Z, c, p)
            np.dot(Z.T, g, q)
            acc += p[k % 256, 0] + q[k % width, 0]
        total += acc
    return total


def clock(a, threads, repeats):
    """The work per second of ``T`` threads of :func:`compute_alone` and of
    :func:`products_alone` against one, medians of ``repeats`` (after one warm-up), the
    settings interleaved."""
    X, W, phase, scale = a[0], a[3], a[4], a[9][3]
    width = full_tile_width(W.shape[0], W.shape[2], COS_AFFINE)
    work = {"features, products written out (64 x 64 tiles x 20,000)":
            lambda t: compute_alone(X, W, phase, scale, t, 20_000),
            f"a task's three BLAS products (tile of {width} columns, x 2,000)":
            lambda t: products_alone(X, W, width, t, 2_000)}
    times = {(name, t): [] for name in work for t in threads}
    for rep in range(repeats + 1):
        for name, f in work.items():
            for t in threads:
                numba.set_num_threads(t)
                start = time.perf_counter()
                f(t)
                if rep:
                    times[name, t].append(time.perf_counter() - start)
    print("| each thread's work, in its own memory | threads | s (median) | work per second "
          "against one thread |")
    print("|---|---|---|---|")
    for name in work:
        one = statistics.median(times[name, threads[0]])
        for t in threads:
            med = statistics.median(times[name, t])
            print(f"| {name} | {t} | {med:.4f} | {t * one / med:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=25_600)
    ap.add_argument("--blocks", type=int, default=64, help="blocks of 256 features")
    ap.add_argument("--threads", type=int, nargs="+", default=[2])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--spins", type=int, default=200_000,
                    help="atomic reads before a waiting thread of `one region` or `ahead` "
                         "naps (200,000: about a millisecond)")
    ap.add_argument("--only", nargs="+", default=None,
                    help="time only the variants whose names start with one of these, e.g. "
                         "'lists 2' 'ahead' (two invocations at once: the kernels sharing "
                         "the cores with another process)")
    ap.add_argument("--clock", action="store_true",
                    help="also time each thread's work alone, in its own memory")
    args = ap.parse_args()
    m, r, b = args.blocks, 256, 256
    a = problem(args.rows, m, b)
    ns = len(a[8][0])
    half = full_tile_width(m, r, COS_AFFINE) // 2  # tiles of twice the library's tasks
    variants = {"sequential": (1, lambda: dsg_full_update(*a)),
                "sequential forwards": (1, lambda: sequential_width(*a, 0)),
                "sequential, twice the tasks": (1, lambda: sequential_width(*a, half))}
    counted = {k: np.zeros(1, dtype=np.int64) for k in args.threads}  # computed ahead
    for k in args.threads:
        variants[f"counter {k}"] = (k, lambda: counter(*a))
        variants[f"lists {k}"] = (k, lambda: dsg_full_update_threads(*a))
        variants[f"lists forwards {k}"] = (k, lambda k=k: lists_width(*a, k, 0, False))
        variants[f"lists, recomputed {k}"] = (k, lambda: dsg_full_update_threads(*a, 0))
        variants[f"one region {k}"] = (k, lambda k=k: one_region(*a, k, args.spins))
        variants[f"ahead {k}"] = (k, lambda k=k: ahead(*a, k, args.spins, counted[k]))
        variants[f"lists, twice the tasks {k}"] = (k, lambda k=k: lists_width(*a, k, half,
                                                                            True))
    for k in sorted({1, *args.threads}):
        variants[f"free running {k}"] = (k, lambda k=k: free_running(*a, k))
    if args.only:
        variants = {v: f for v, f in variants.items() if v.startswith(tuple(args.only))}
    times: dict[str, list[float]] = {v: [] for v in variants}
    with threadpool_limits(1, user_api="blas"):
        ref = dsg_full_update(*a)
        ref_half = sequential_width(*a, half)
        for rep in range(args.repeats + 1):
            for name, (k, f) in variants.items():
                numba.set_num_threads(k)
                t = time.perf_counter()
                out = f()
                elapsed = time.perf_counter() - t
                want = ref_half if "twice the tasks" in name else ref
                if not name.startswith("free running") and not all(
                        np.array_equal(x, y) for x, y in zip(out, want)):
                    raise SystemExit(f"{name}: not the sequential kernel's model")
                if rep:
                    times[name].append(elapsed)
    print(f"{ns} steps of {b} rows, {m} blocks of {r} features, float32; every variant but "
          "the free-running ones gives its sequential kernel's model and sums bit for bit")
    print("| variant | us per step (median) | minimum |")
    print("|---|---|---|")
    for name, ts in times.items():
        print(f"| {name} | {statistics.median(ts) * 1e6 / ns:.1f} | {min(ts) * 1e6 / ns:.1f} |")
    for k, c in counted.items():
        if f"ahead {k}" in times:
            calls = args.repeats + 1
            print(f"ahead {k}: the features of {c[0] / (calls * ns):.2f} tasks a step (of "
                  f"{m * -(-r // (2 * half))}) computed ahead, mean of {calls} calls")
    if args.clock:
        with threadpool_limits(1, user_api="blas"):
            clock(a, sorted({1, *args.threads}), args.repeats)


if __name__ == "__main__":
    main()
