"""The DSG full-phase step kernel alone on 1..T threads, and the cost of a parallel launch.

Run from the repository root::

    OPENBLAS_NUM_THREADS=1 python benchmarks/threads_kernel.py --rows 20000 --threads 1 2 4 8 16

Times :func:`~ooc_kernels.families.dsg.kernels_full.dsg_full_update` (sequential) and
:func:`~ooc_kernels.families.dsg.kernels_threads.dsg_full_update_threads` on each thread count
(m = 16 blocks of 256 features, d = 32, batch 256, float32: a default model), checks that
every thread count gives the sequential result bit for bit, and times a kernel that only
launches two empty parallel loops per step (the synchronisation cost).  Medians of 3.  Set
``OPENBLAS_NUM_THREADS=1`` so that the BLAS products inside the kernels run on one thread
whatever loads the BLAS libraries (the library's fits hold that limit themselves).

``--against FILE`` also times the ``dsg_full_update`` of another version of
``kernels_full.py`` (for example ``git show REV:ooc_kernels/families/dsg/kernels_full.py >
/tmp/kernels_full_rev.py``) interleaved with today's sequential kernel, 5 runs each, wall and
CPU seconds, and prints how far apart their coefficients are.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np
from numba import njit, prange
from threadpoolctl import threadpool_limits

from ooc_kernels.families.dsg.kernels_full import dsg_full_update
from ooc_kernels.families.dsg.kernels_threads import dsg_full_update_threads


@njit(parallel=True, nogil=True)
def empty_launches(n_steps, m, buf):
    for _ in range(n_steps):
        for j in prange(m):
            buf[j] += 1.0
        for j in prange(m):
            buf[j] *= 0.5
    return buf


def against(path: str, ref, call_args) -> None:
    """Time another version's sequential kernel beside today's (interleaved, 5 runs)."""
    # compiled in this process only: a disk cache entry of a module loaded from a path
    # cannot be reloaded by the next process
    folder = Path(tempfile.mkdtemp(prefix="kernels_against_"))
    copy = folder / "kernels_full_against.py"
    copy.write_text(Path(path).read_text().replace("cache=True", "cache=False"))
    spec = importlib.util.spec_from_file_location("kernels_full_against", copy)
    other = importlib.util.module_from_spec(spec)
    sys.modules["kernels_full_against"] = other
    spec.loader.exec_module(other)
    theirs = other.dsg_full_update(*call_args)
    scale = float(np.abs(ref[0]).max())
    print(f"--against {path}: max |coef difference| {np.abs(theirs[0] - ref[0]).max():.3g} "
          f"(coefficients up to {scale:.3g}); loss {theirs[3]!r} against {ref[3]!r}")
    times = {"today": ([], []), "against": ([], [])}
    for _ in range(5):
        for name, f in (("today", dsg_full_update), ("against", other.dsg_full_update)):
            t, c = time.perf_counter(), time.process_time()
            f(*call_args)
            times[name][0].append(time.perf_counter() - t)
            times[name][1].append(time.process_time() - c)
    for name, (walls, cpus) in times.items():
        print(f"{name}: wall {statistics.median(walls):.3f} s, CPU {statistics.median(cpus):.3f} s"
              " (medians of 5)")
    shutil.rmtree(folder, ignore_errors=True)


def problem(rows: int, blocks: int, batch: int) -> tuple:
    """The arguments of a step kernel call: ``rows`` x 32 float32 rows, ``blocks`` blocks of
    256 features, batches of ``batch`` rows, every step averaged."""
    rng = np.random.default_rng(0)
    n, d, m, r, b = rows, 32, blocks, 256, batch
    X = rng.normal(size=(n, d)).astype(np.float32)
    Y = np.sign(rng.normal(size=(n, 1))).astype(np.float32)
    sw = np.ones(n)
    W = (rng.normal(size=(m, d, r)) / 4).astype(np.float32)
    ph = rng.uniform(0, 2 * np.pi, (m, r)).astype(np.float32)
    coef, avg = np.zeros((m, r, 1)), np.zeros((m, r, 1))
    ns = -(-n // b)
    steps = (np.full(ns, 0.1), np.ones(ns, dtype=bool))
    return X, Y, sw, W, ph, coef, avg, 0, steps, (1e-5, b, 1, (2 / r) ** 0.5, 0.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--batch", type=int, default=256, help="rows per step (default model: 256)")
    ap.add_argument("--blocks", type=int, default=16,
                    help="blocks of 256 features (default model: 16)")
    ap.add_argument("--against", default=None,
                    help="another kernels_full.py whose dsg_full_update to time beside today's")
    args = ap.parse_args()
    m, b = args.blocks, args.batch
    X, Y, sw, W, ph, coef, avg, _, steps, params = problem(args.rows, m, b)
    ns = len(steps[0])
    buf = np.zeros(m)
    with threadpool_limits(1, user_api="blas"):
        ref = dsg_full_update(X, Y, sw, W, ph, coef, avg, 0, steps, params)
        dsg_full_update_threads(X, Y, sw, W, ph, coef, avg, 0, steps, params)
        empty_launches(2, m, buf)
        seq = []
        for _ in range(3):
            t = time.perf_counter()
            dsg_full_update(X, Y, sw, W, ph, coef, avg, 0, steps, params)
            seq.append(time.perf_counter() - t)
        s = statistics.median(seq)
        if args.against:
            against(args.against, ref, (X, Y, sw, W, ph, coef, avg, 0, steps, params))
        print(f"sequential kernel: {s:.3f} s ({ns} steps of {b} rows, {m} blocks)")
        print("| threads | kernel s | speed-up | CPU s | bit-identical | two empty launches, us/step |")
        print("|---|---|---|---|---|---|")
        for k in args.threads:
            numba.set_num_threads(k)
            walls, cpus, same = [], [], True
            for _ in range(3):
                t, c = time.perf_counter(), time.process_time()
                out = dsg_full_update_threads(X, Y, sw, W, ph, coef, avg, 0, steps, params)
                walls.append(time.perf_counter() - t)
                cpus.append(time.process_time() - c)
                same = same and bool(np.array_equal(out[0], ref[0]))
            launches = []
            for _ in range(3):
                t = time.perf_counter()
                empty_launches(ns, m, buf)
                launches.append(time.perf_counter() - t)
            w = statistics.median(walls)
            print(f"| {k} | {w:.3f} | {s / w:.2f} | {statistics.median(cpus):.3f} | {same} | "
                  f"{statistics.median(launches) / ns * 1e6:.1f} |")


if __name__ == "__main__":
    main()
