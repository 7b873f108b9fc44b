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
  with every core busy, its caches and memory).

The OpenMP wait is the runtime's own unless set in the environment (the library sets
``GOMP_SPINCOUNT=1000`` only when it launches its kernels itself, which this script does
not do); ``OMP_WAIT_POLICY=active`` measures threads that never sleep.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numba
import numpy as np
from numba import njit, prange
from threadpoolctl import threadpool_limits

from threads_kernel import problem

from ooc_kernels._jit.atomic import claim
from ooc_kernels._jit.rff import COS_AFFINE
from ooc_kernels.families.dsg.kernels_full import (_FULL_BUFFER_BYTES, _check_full_update,
                                                   dsg_full_update)
from ooc_kernels.families.dsg.kernels_tasks import full_buffers, step_gradient, step_task
from ooc_kernels.families.dsg.kernels_threads import dsg_full_update_threads


@njit(nogil=True)
def _start(X, Y, sw, W, phase, coef, avg, n_avg, steps, params):
    b = params[1]
    n_steps = _check_full_update(X, Y, sw, W, phase, coef, avg, steps, b)
    out = coef.astype(np.float64)
    mean = avg.astype(np.float64)
    tiles, bufs = full_buffers(X, W, Y.shape[1], b, _FULL_BUFFER_BYTES, COS_AFFINE)
    return n_steps, (out, out.astype(X.dtype), mean), tiles, bufs


@njit(nogil=True)
def sequential_forwards(X, Y, sw, W, phase, coef, avg, n_avg, steps, params):
    scale, b, m = params[3], params[1], W.shape[0]
    n_steps, model, tiles, bufs = _start(X, Y, sw, W, phase, coef, avg, n_avg, steps, params)
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
def lists_forwards(X, Y, sw, W, phase, coef, avg, n_avg, steps, params, lists):
    scale, b, m = params[3], params[1], W.shape[0]
    n_steps, model, tiles, bufs = _start(X, Y, sw, W, phase, coef, avg, n_avg, steps, params)
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
                    step_task(first + p, s, n_steps, X, W, phase, scale, COS_AFFINE, b, tiles,
                              bufs, model, prev)
                    p = claim(claims, s * lists + owner)
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=25_600)
    ap.add_argument("--blocks", type=int, default=64, help="blocks of 256 features")
    ap.add_argument("--threads", type=int, nargs="+", default=[2])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    m, r, b = args.blocks, 256, 256
    a = problem(args.rows, m, b)
    ns = len(a[8][0])
    variants = {"sequential": (1, lambda: dsg_full_update(*a)),
                "sequential forwards": (1, lambda: sequential_forwards(*a))}
    for k in args.threads:
        variants[f"counter {k}"] = (k, lambda: counter(*a))
        variants[f"lists {k}"] = (k, lambda: dsg_full_update_threads(*a))
        variants[f"lists forwards {k}"] = (k, lambda k=k: lists_forwards(*a, k))
        variants[f"lists, recomputed {k}"] = (k, lambda: dsg_full_update_threads(*a, 0))
    for k in sorted({1, *args.threads}):
        variants[f"free running {k}"] = (k, lambda k=k: free_running(*a, k))
    times: dict[str, list[float]] = {v: [] for v in variants}
    with threadpool_limits(1, user_api="blas"):
        ref = dsg_full_update(*a)
        for rep in range(args.repeats + 1):
            for name, (k, f) in variants.items():
                numba.set_num_threads(k)
                t = time.perf_counter()
                out = f()
                elapsed = time.perf_counter() - t
                if not name.startswith("free running") and not (
                        np.array_equal(out[0], ref[0]) and np.array_equal(out[1], ref[1])):
                    raise SystemExit(f"{name}: not the sequential kernel's model")
                if rep:
                    times[name].append(elapsed)
    print(f"{ns} steps of {b} rows, {m} blocks of {r} features, float32; every variant but "
          "the free-running ones gives the sequential model bit for bit")
    print("| variant | us per step (median) | minimum |")
    print("|---|---|---|")
    for name, ts in times.items():
        print(f"| {name} | {statistics.median(ts) * 1e6 / ns:.1f} | {min(ts) * 1e6 / ns:.1f} |")


if __name__ == "__main__":
    main()
