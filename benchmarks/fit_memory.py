"""Resident-memory growth of one out-of-core epoch, by ``shuffle_chunks`` and allocator setting.

Runs ``tests/_ooc_fit_worker.py`` (a fresh interpreter: warm-up fit, then one epoch over a
384 MiB ``nonlinear_binary`` store, resident memory sampled every 5 ms) several times for
each setting, with glibc's default allocator policy and with ``MALLOC_TRIM_THRESHOLD_=65536``
(what Dask's nanny gives every distributed worker), and prints the medians as JSON.

    python benchmarks/fit_memory.py --repeats 3 --out benchmarks/results/fit_memory.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / "tests" / "_ooc_fit_worker.py"
CHUNK_ROWS, N_FEATURES = 10_000, 32
N_ROWS = 12 * 32 * 2**20 // (4 * N_FEATURES)   # 384 MiB of float32 X


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shuffle-chunks", nargs="+", default=["1", "2", "4", "auto"])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    import ooc_kernels as ok

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        store = ok.make_dataset("nonlinear_binary", Path(tmp) / "big.zarr", N_ROWS,
                                chunk_size=CHUNK_ROWS, n_features=N_FEATURES, progress=False)
        for allocator, extra in (("glibc default", {}),
                                 ("MALLOC_TRIM_THRESHOLD_=65536", {"MALLOC_TRIM_THRESHOLD_":
                                                                   "65536"})):
            for shuffle in args.shuffle_chunks:
                growth, seconds = [], []
                for _ in range(args.repeats):
                    out = subprocess.run([sys.executable, str(WORKER), str(store),
                                          str(CHUNK_ROWS), shuffle], check=True, text=True,
                                         capture_output=True, env=dict(os.environ, **extra))
                    report = json.loads(out.stdout.strip().splitlines()[-1])
                    growth.append((report["peak"] - report["baseline"]) / 2**20)
                    seconds.append(report["seconds"])
                row = {"allocator": allocator, "shuffle_chunks": shuffle,
                       "shuffle_chunks_": report["shuffle_chunks_"],
                       "growth_mib_median": round(statistics.median(growth), 1),
                       "growth_mib_runs": [round(g, 1) for g in growth],
                       "seconds_median": round(statistics.median(seconds), 2)}
                print(json.dumps(row), flush=True)
                results.append(row)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
