"""Where a DSG fit's time goes with ``n_jobs`` threads: cProfile of one epoch.

Run from the repository root::

    python benchmarks/threads_profile.py --rows 400000 --threads 1 16

A ``nonlinear_binary`` store of ``--rows`` x 32 (10,000-row chunks, written once under
``--data-dir``), ``DSGClassifier`` defaults except ``bandwidth=3.96`` (the value ``"auto"``
chooses on this problem), ``max_iter=1, tol=None, chunks_per_round=1`` on the sync scheduler,
so that the profile sees the chunk tasks.  Each thread count is compiled by a small fit off
the clock, then one fit is profiled; prints the wall-clock, the CPU seconds and the 12
functions with the most time of their own (the step kernel is ``full_update``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time
from pathlib import Path

import ooc_kernels as ok
from ooc_kernels.data.schema import open_zarr_dataset


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--data-dir", type=Path, default=Path("data/bench_threads"))
    args = ap.parse_args()
    path = ok.make_dataset("nonlinear_binary", args.data_dir / f"nonlinear_binary32_train_{args.rows}.zarr",
                           args.rows, chunk_size=10_000, random_state=0, split="train",
                           exist_ok=True, progress=False, n_features=32)
    ds = open_zarr_dataset(path)
    X, y = ds["X"].data, ds["y"].data
    for n_jobs in args.threads:
        kw = dict(bandwidth=3.96, max_iter=1, tol=None, random_state=0, progress=False,
                  chunks_per_round=1, scheduler="sync", n_jobs=n_jobs)
        ok.DSGClassifier(**kw).fit(X[:50_000], y[:50_000])  # compile, off the clock
        t, c = time.perf_counter(), time.process_time()
        prof = cProfile.Profile()
        prof.enable()
        ok.DSGClassifier(**kw).fit(X, y)
        prof.disable()
        print(f"n_jobs={n_jobs}: wall {time.perf_counter() - t:.2f} s, "
              f"CPU {time.process_time() - c:.2f} s")
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(12)
        print("\n".join(out.getvalue().splitlines()[6:22]))


if __name__ == "__main__":
    main()
