"""Could DSPDC's local solver use threads inside an iteration?  Its work per iteration
against the cost of handing work to threads, measured in the same run.

An iteration of :func:`~ooc_kernels.families.dspdc.kernels.dspdc_dense_iterations` does
``O(m p)`` work (``m`` sampled rows, ``p`` columns; the default ``m = 1``): a dot product of
each sampled row with ``xbar``, the ``q`` primal coordinates, and ``z += A_I^T dy``.  Every
iteration depends on the previous one, so threads could only share the work of one
iteration, and with the result unchanged only by a fixed partition of the columns whose
partial sums are added in a fixed order.  This script times

* ``iteration``: seconds per iteration of the numba kernel on one chunk of 10,000 rows, for
  ``p`` in ``--features`` and ``m`` in ``--m`` (``q = p``: every primal coordinate, the most
  work per iteration);
* ``launch``: seconds per call of an empty numba ``prange`` region on ``--threads`` threads
  (the least a parallel step costs), and of the same region on one thread.

Threads can only pay when an iteration's work is several times the launch; medians of
``--repeats`` timings::

    python benchmarks/dspdc_threads.py --repeats 5 --out benchmarks/results/dspdc_threads.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numba
import numpy as np
from numba import prange


@numba.njit(parallel=True, nogil=True)
def _empty_region(out):
    for k in prange(out.shape[0]):
        out[k] += 1.0


def _time(fn, repeats: int) -> float:
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def iteration_seconds(p: int, m: int, repeats: int, iterations: int = 20_000) -> float:
    from ooc_kernels.families.dspdc.kernels import dspdc_dense_iterations

    rng = np.random.default_rng(0)
    n = 10_000
    A = rng.normal(size=(n, p))
    b = np.sign(rng.normal(size=n))
    y, x, xbar, z = np.zeros(n), np.zeros(p), np.zeros(p), np.zeros(p)
    rows, cols = rng.random((iterations, m)), rng.random((iterations, p))

    def run():
        dspdc_dense_iterations(A, b, y, x, xbar, z, n, rows, cols, m, p, 0.9, 0.5, 0.5,
                               0, 0.0, 1e-4)

    run()  # compile
    return _time(run, repeats) / iterations


def launch_seconds(threads: int, repeats: int, calls: int = 2_000) -> float:
    out = np.zeros(max(threads, 2))
    numba.set_num_threads(threads)
    _empty_region(out)  # compile and start the pool

    def run():
        for _ in range(calls):
            _empty_region(out)

    return _time(run, repeats) / calls


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", type=int, nargs="+", default=[32, 100, 1000])
    parser.add_argument("--m", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--threads", type=int, default=numba.config.NUMBA_NUM_THREADS)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = [{"what": "launch", "threads": t,
             "seconds": launch_seconds(t, args.repeats)} for t in (1, args.threads)]
    for p in args.features:
        for m in args.m:
            rows.append({"what": "iteration", "p": p, "m": m,
                         "seconds": iteration_seconds(p, m, args.repeats)})
    for row in rows:
        print(json.dumps(row), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
