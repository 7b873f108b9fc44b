"""What one parallel region costs on 2 threads, with one OpenMP team in the process or two.

Run from the repository root::

    python benchmarks/threads_regions.py --repeats 9 --json benchmarks/results/threads_regions.json

GNU OpenMP (numba's ``omp`` layer) gives every thread that starts a parallel region a team of
its own.  With more OpenMP threads in the process than cores it throttles its spinning: a
thread that reaches the end of a region soon sleeps, and the next region wakes it.  Each
setting runs in a fresh process (a team lives as long as its thread), 2 numba threads, a
kernel of ``--regions`` regions of 64 items each (``--work`` cosines per item; 0: empty
items, the cost of the region itself), ``--repeats`` calls:

* ``main``: every call from the main thread (one team);
* ``launcher``: every call from one other thread (one team), as the library starts its
  kernels (``ooc_kernels._threads.launch``);
* ``main+launcher``: one call from the main thread first, then the calls from another
  thread (two teams: what a fit makes when its kernels start from two threads).

Prints per setting the wall-clock and CPU microseconds per region (minimum and median of the
calls) and the voluntary context switches per region (sleeps of the process's threads); the
wall-clock is the measure on an idle machine, the switches on a shared one.

It also times what one thread does between two regions of the full-phase step kernel
(``kernels_tasks.step_gradient``: the sum of the 64 partial predictions and the loss
gradient) for a default model of ``threads_scaling.py`` (8,192 features in 32 blocks of 256,
64 tasks, batches of 256 rows, logistic loss, float32): CPU microseconds per step, the
median of ``--repeats`` passes over 39 steps.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

CHILD = r'''
import json, os, statistics, sys, threading, time
import numba
import numpy as np
from numba import njit, prange

@njit(parallel=True, nogil=True)
def regions(n_regions, work, out):
    for s in range(n_regions):
        for t in prange(64):
            acc = 0.0
            for k in range(work):
                acc += np.cos(k * 1e-3 + t)
            out[t] += acc
        out[0] += 1.0

def sleeps():
    total = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total

mode, n_regions, work, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
numba.set_num_threads(2)
out = np.zeros(64)
result = {}

def calls():
    numba.set_num_threads(2)
    regions(1, work, out)
    walls, cpus, s0 = [], [], sleeps()
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        regions(n_regions, work, out)
        walls.append(1e6 * (time.perf_counter() - t) / n_regions)
        cpus.append(1e6 * (time.process_time() - c) / n_regions)
    result.update(wall_us_min=min(walls), wall_us_median=statistics.median(walls),
                  cpu_us_min=min(cpus), cpu_us_median=statistics.median(cpus),
                  sleeps_per_region=(sleeps() - s0) / (repeats * n_regions),
                  threads=len(os.listdir("/proc/self/task")))

if mode == "main":
    calls()
else:
    if mode == "main+launcher":
        regions(1, work, out)           # the main thread's team
    th = threading.Thread(target=calls)
    th.start()
    th.join()
print(json.dumps(result))
'''


def gradient_us(repeats: int) -> float:
    """CPU microseconds of one ``step_gradient`` (the one-thread part of a step)."""
    import statistics
    import time

    import numba
    import numpy as np

    from ooc_kernels._jit.rff import COS_AFFINE
    from ooc_kernels.families.dsg.kernels_tasks import full_buffers, step_gradient
    from ooc_kernels.features.blocks import stacked_block_params

    @numba.njit
    def steps_of(n_steps, n_tasks, Y, sw, steps, params, m, bufs):
        totals = (0.0, 0.0, 0)
        for s in range(n_steps):
            totals, _ = step_gradient(s, n_tasks, Y, sw, steps, params, m, bufs, totals)
        return totals[0]

    n, d, m, r, b = 10_000, 32, 32, 256, 256
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d)).astype(np.float32)
    Y = rng.choice([-1.0, 1.0], size=(n, 1)).astype(np.float32)
    W, _ph = stacked_block_params(3, np.arange(m), d, r, 1.2, np.float32)
    n_steps = n // b
    steps = (0.5 / np.sqrt(1.0 + np.arange(n_steps)), np.ones(n_steps, dtype=bool))
    params = (0.01, b, 2, 1.0 / np.sqrt(r), 0.0)   # logistic loss
    tiles, bufs = full_buffers(X, W, 1, b, 64 * 2**20, COS_AFFINE)
    bufs[2][:] = rng.normal(size=bufs[2].shape)
    n_tasks = m * tiles[0]
    args = (n_tasks, Y, np.ones(n), steps, params, m, bufs)
    steps_of(1, *args)
    times = []
    for _ in range(repeats):
        t = time.process_time()
        steps_of(n_steps, *args)
        times.append(1e6 * (time.process_time() - t) / n_steps)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--regions", type=int, default=1000)
    ap.add_argument("--work", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--rounds", type=int, default=2,
                    help="processes per setting, the settings interleaved")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    env = dict(os.environ, NUMBA_NUM_THREADS="2")
    runs = []
    for rnd in range(args.rounds):
        for mode in ("main", "launcher", "main+launcher"):
            load = os.getloadavg()[0]
            out = subprocess.run([sys.executable, "-c", CHILD, mode, str(args.regions),
                                  str(args.work), str(args.repeats)], env=env, check=True,
                                 capture_output=True, text=True).stdout
            run = {"mode": mode, "round": rnd, "load_before": round(load, 2),
                   **json.loads(out.strip().splitlines()[-1])}
            runs.append(run)
            print(f"{mode:14s} wall us/region min {run['wall_us_min']:8.1f} median "
                  f"{run['wall_us_median']:8.1f} | CPU us min {run['cpu_us_min']:8.1f} median "
                  f"{run['cpu_us_median']:8.1f} | sleeps/region {run['sleeps_per_region']:.2f}"
                  f" | threads {run['threads']} | load {load:.1f}", flush=True)
    grad = gradient_us(args.repeats)
    print(f"step_gradient (one thread, between two regions): {grad:.1f} CPU us a step")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "command": "python benchmarks/threads_regions.py " + " ".join(
                f"--{k} {v}" for k, v in vars(args).items() if v is not None),
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
            "step_gradient_cpu_us": grad, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
