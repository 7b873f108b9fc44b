"""Default-constructed DSG estimators from 10^2 to 10^7 rows (the alpha default and
the stopping rule across data sizes).

For each size, ``nonlinear_binary`` (10 dimensions, a ball in the first 3: not linearly
separable, Bayes accuracy 1) is written to a Zarr store chunk by chunk and fitted out of core
by ``DSGClassifier(random_state=0, chunks_per_round=2)``: everything else at its default
(``alpha="auto"`` = 1/n, ``max_iter=1000`` with ``tol=1e-3``, ``bandwidth="auto"``).  Test
accuracy on 100,000 fresh rows, epochs, why it stopped, seconds, rows per second.  Sizes up to
``--max-n``; the largest store is about 0.4 GB per 10^7 rows.

    python benchmarks/defaults_scale.py --max-n 10000000 --out benchmarks/results/defaults_scale.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import xarray as xr

import ooc_kernels as ok


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-n", type=int, default=10_000_000)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="defaults-scale-"))
    test = ok.make_dataset("nonlinear_binary", work / "test.zarr", 100_000, chunk_size=50_000,
                           split="test", random_state=1, n_features=10, n_informative=3,
                           progress=False, exist_ok=True)
    results = []
    n = 100
    while n <= args.max_n:
        chunk = min(100_000, max(n // 10, 10))
        path = work / f"train_{n}.zarr"
        start = time.perf_counter()
        ok.make_dataset("nonlinear_binary", path, n, chunk_size=chunk, random_state=0,
                        n_features=10, n_informative=3, progress=False, exist_ok=True)
        written = time.perf_counter() - start
        start = time.perf_counter()
        clf = ok.DSGClassifier(random_state=0, chunks_per_round=2,
                               progress=False).fit(xr.open_zarr(path))
        seconds = time.perf_counter() - start
        row = {"n": n, "chunk_size": chunk, "accuracy": clf.score(xr.open_zarr(test)),
               "epochs": clf.n_iter_, "stop_reason": clf.stop_reason_,
               "alpha": clf.alpha_, "bandwidth_multiple_scores": clf.bandwidth_scores_,
               "fit_seconds": seconds, "rows_per_second": n * clf.n_iter_ / seconds,
               "write_seconds": written}
        print(json.dumps(row), flush=True)
        results.append(row)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=1) + "\n")
        shutil.rmtree(path, ignore_errors=True)
        n *= 10


if __name__ == "__main__":
    main()
