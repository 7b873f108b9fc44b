"""DSPDC out of core at scale: a factorized store whose materialized ``A`` would not fit in
memory, solved to a certified relative duality gap with bounded memory.

Writes (once; kept with ``exist_ok``) a ``sparse_recovery`` store (the paper's section 6.1
data: ``U = X G^T`` chunked along samples, ``V = G`` whole, labels from a sparse ``beta``),
then fits ``ok.DSPDCClassifier(loss="smoothed_hinge")`` on it in a fresh process and reports
the fit's peak RSS (``getrusage``), seconds, epochs, the gap history and the size the
materialized ``A = U V`` would have (``n p`` values, float64 and float32), next to this
machine's memory.

    python benchmarks/dspdc_scale.py --n 24000000 --p 500 --rank 10 --alpha 1e-2 --q 50 \\
        --store /tmp/dspdc_scale.zarr --out benchmarks/results/dspdc_scale.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _procmem import peak_rss_mb
from _store import store_bytes



def _fit(spec: dict) -> dict:
    import psutil
    import xarray as xr

    import ooc_kernels as ok

    ds = xr.open_zarr(spec["store"])
    q = spec["q"] if spec["q"] == "auto" else int(spec["q"])
    est = ok.DSPDCClassifier(loss="smoothed_hinge", alpha=spec["alpha"], q=q,
                             tol=spec["tol"], max_iter=spec["max_iter"],
                             chunks_per_round=spec["k"], random_state=0, progress=False)
    start = time.perf_counter()
    est.fit(ds)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "epochs": int(est.n_iter_), "stop_reason": est.stop_reason_,
            "relative_gap": est.gap_history_[-1]["relative_gap"],
            "Lambda": float(est.Lambda_),
            "history": [{k: float(v) for k, v in h.items()} for h in est.gap_history_],
            "peak_rss_mb": peak_rss_mb(),
            "rss_end_mb": psutil.Process().memory_info().rss / 2 ** 20}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=24_000_000)
    parser.add_argument("--p", type=int, default=500)
    parser.add_argument("--rank", type=int, default=10)
    parser.add_argument("--chunk-size", type=int, default=200_000)
    parser.add_argument("--alpha", type=float, default=1e-2)
    parser.add_argument("--q", default="50")
    parser.add_argument("--k", type=int, default=1, help="chunks_per_round")
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--store", type=Path, default=Path("/tmp/dspdc_scale.zarr"))
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(_fit(json.loads(args.worker))))
        return
    import psutil

    import ooc_kernels as ok

    start = time.perf_counter()
    ok.make_dataset("sparse_recovery", args.store, args.n, chunk_size=args.chunk_size,
                    n_features=args.p, rank=args.rank, exist_ok=True, progress=False)
    write_seconds = time.perf_counter() - start
    disk = store_bytes(args.store)
    spec = {"store": str(args.store), "alpha": args.alpha, "q": args.q, "tol": args.tol,
            "max_iter": args.max_iter, "k": args.k}
    out = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)],
                         capture_output=True, text=True)
    if out.returncode:
        sys.exit(out.stderr)
    fit = json.loads(out.stdout.strip().splitlines()[-1])
    ram = psutil.virtual_memory().total
    result = {"n": args.n, "p": args.p, "rank": args.rank, "chunk_size": args.chunk_size,
              **spec, "store_bytes_on_disk": disk, "write_seconds": write_seconds,
              "materialized_A_bytes_float64": args.n * args.p * 8,
              "materialized_A_bytes_float32": args.n * args.p * 4,
              "machine_memory_bytes": ram,
              "A_float64_over_memory": args.n * args.p * 8 / ram, **fit}
    summary = {k: v for k, v in result.items() if k != "history"}
    summary["gaps"] = [float(f"{h['relative_gap']:.3g}") for h in fit["history"]]
    summary["epoch_seconds"] = np.round(np.diff([0.0] + [h["seconds"]
                                                         for h in fit["history"]]), 1).tolist()
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
