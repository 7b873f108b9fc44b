"""Where a DSG fit's time goes with ``n_jobs`` threads, on the sync and threaded schedulers.

Run from the repository root (one command, a few minutes on 16 cores)::

    python benchmarks/threads_profile.py --rows 400000 --threads 1 4 16 \\
        --json benchmarks/results/threads_profile.json

A ``nonlinear_binary`` store of ``--rows`` x 32 (10,000-row chunks, written once under
``--data-dir``), ``DSGClassifier`` defaults except ``bandwidth=3.96`` (the value ``"auto"``
chooses on this problem), ``max_iter=1, tol=None, chunks_per_round=1``.  For every scheduler
and thread count, the variants (``--variants``) are fitted one after the other:

* ``before``: the rounds read their own chunks, and the parallel kernels start from
  whichever thread runs the chunk task (as before the read ahead and the launchers);
* ``read_ahead``: the next round's chunks read while a round runs, kernels as ``before``;
* ``now``: the library as it is (read ahead, and kernels started from the process's
  reused launcher threads; on the sync scheduler the main thread launches anyway).

Each fit reports its wall-clock and CPU seconds, the seconds inside the chunk steps and
inside the step kernel (summed over the threads that ran them), the wall-clock outside the
chunk steps (reading when it is not overlapped, setup, ``apply``), the threads of the
process after the fit (``/proc/self/task``: OpenMP teams show here) and whether the model
equals the first fit's bit for bit.  Each thread count is compiled by a small fit off the
clock; ``--cprofile`` adds the 12 functions with the most time of their own on the sync
scheduler (cProfile sees the main thread only).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import threading
import time
from pathlib import Path

import dask
import numpy as np

import ooc_kernels as ok
from ooc_kernels import _threads
from ooc_kernels.data.schema import open_zarr_dataset
from ooc_kernels.families.dsg import _full_phase, kernels_threads
from ooc_kernels.families.dsg.solver import DSGAlgorithm

_clock = {"kernel": 0.0, "step": 0.0}
_lock = threading.Lock()


def _timed(fn, key):
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            with _lock:
                _clock[key] += time.perf_counter() - t
    return wrapper


_full_phase.full_update = _timed(_full_phase.full_update, "kernel")
DSGAlgorithm.chunk_step = _timed(DSGAlgorithm.chunk_step, "step")
_LAUNCH = kernels_threads.launch


def _launch_in_place(kernel, *args):
    """The kernels started from the calling thread (before the launchers)."""
    with _threads.parallel_launch():
        return kernel(*args)


@contextlib.contextmanager
def variant(name: str):
    kernels_threads.launch = _LAUNCH if name == "now" else _launch_in_place
    with dask.config.set({"ooc-kernels.local.read_ahead": name != "before"}):
        try:
            yield
        finally:
            kernels_threads.launch = _LAUNCH


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--schedulers", nargs="*", default=["sync", "threads"])
    ap.add_argument("--variants", nargs="*", default=["before", "read_ahead", "now"])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--cprofile", action="store_true")
    ap.add_argument("--data-dir", type=Path, default=Path("data/bench_threads"))
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    path = ok.make_dataset("nonlinear_binary",
                           args.data_dir / f"nonlinear_binary32_train_{args.rows}.zarr",
                           args.rows, chunk_size=10_000, random_state=0, split="train",
                           exist_ok=True, progress=False, n_features=32)
    ds = open_zarr_dataset(path)
    X, y = ds["X"].data, ds["y"].data
    out = {"rows": args.rows, "cpus": os.cpu_count(), "load_before": os.getloadavg(),
           "fits": []}
    first = None
    print("| scheduler | n_jobs | variant | wall s | CPU s | chunk steps s | step kernel s "
          "| outside steps s | OS threads | same model |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n_jobs in args.threads:
        for sched in args.schedulers:
            kw = dict(bandwidth=3.96, max_iter=1, tol=None, random_state=0, progress=False,
                      chunks_per_round=1, scheduler=sched, n_jobs=n_jobs)
            ok.DSGClassifier(**kw).fit(X[:50_000], y[:50_000])  # compile, off the clock
            for _ in range(args.repeats):
                for name in args.variants:
                    profile = cProfile.Profile() if args.cprofile and sched == "sync" else None
                    with variant(name):
                        for key in _clock:
                            _clock[key] = 0.0
                        t, c = time.perf_counter(), time.process_time()
                        if profile is not None:
                            profile.enable()
                        model = ok.DSGClassifier(**kw).fit(X, y)
                        if profile is not None:
                            profile.disable()
                        wall, cpu = time.perf_counter() - t, time.process_time() - c
                    first = first if first is not None else model.coef_
                    row = {"scheduler": sched, "n_jobs": n_jobs, "variant": name,
                           "wall_s": wall, "cpu_s": cpu, "steps_s": _clock["step"],
                           "kernel_s": _clock["kernel"],
                           "outside_s": wall - _clock["step"],
                           "os_threads": len(os.listdir("/proc/self/task")),
                           "launchers": _threads.launcher_threads(),
                           "same_model": bool(np.array_equal(model.coef_, first))}
                    out["fits"].append(row)
                    print(f"| {sched} | {n_jobs} | {name} | {wall:.2f} | {cpu:.2f} | "
                          f"{row['steps_s']:.2f} | {row['kernel_s']:.2f} | "
                          f"{row['outside_s']:.2f} | {row['os_threads']} | "
                          f"{row['same_model']} |", flush=True)
                    if profile is not None:
                        text = io.StringIO()
                        pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(12)
                        row["cprofile"] = "\n".join(text.getvalue().splitlines()[6:22])
                        print(row["cprofile"])
    out["load_after"] = os.getloadavg()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
