"""Soak: consecutive checkpointed fits on a LocalCluster while workers are killed at random.

Run from the repository root::

    python benchmarks/soak.py --fits 20 --kill-probability 0.5

Reports how many fits completed, whether each equals the undisturbed model (bit for bit),
and the resident memory of every worker after each fit, so that growth from fit to fit shows.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil

import ooc_kernels as ok
from ooc_kernels.data.schema import open_zarr_dataset

PARAMS = dict(n_features=2048, block_size=128, batch_size=64, max_iter=2, tol=None,
              chunks_per_round=3, random_state=0)


def _rss():
    return psutil.Process().memory_info().rss


def main():
    import distributed

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fits", type=int, default=20)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--n-samples", type=int, default=60_000)
    ap.add_argument("--kill-probability", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ooc-soak-"))
    rng = np.random.default_rng(args.seed)
    try:
        store = ok.make_dataset("nonlinear_binary", work / "nb.zarr", args.n_samples,
                                chunk_size=2000, n_features=32, progress=False)
        ds = open_zarr_dataset(store)
        reference = ok.DSGClassifier(**PARAMS, scheduler="sync").fit(ds).coef_
        rows = []
        with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                      processes=True, dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            client.wait_for_workers(args.workers)
            for i in range(args.fits):
                ck = work / f"ck{i}.zarr"
                kill = bool(rng.random() < args.kill_probability)
                delay = float(rng.uniform(0.2, 1.5))
                out = {}

                def run():
                    try:
                        out["coef"] = ok.DSGClassifier(**PARAMS, scheduler=client).fit(
                            ds, checkpoint=ck, checkpoint_every=2).coef_
                    except BaseException as err:  # counted as a failed fit
                        out["error"] = f"{type(err).__name__}: {err}"

                t0 = time.perf_counter()
                thread = threading.Thread(target=run)
                thread.start()
                killed = None
                if kill:
                    time.sleep(delay)
                    if thread.is_alive():
                        name, nanny = sorted(cluster.workers.items())[
                            int(rng.integers(len(cluster.workers)))]
                        nanny.process.process.kill()
                        killed = str(name)
                thread.join()
                client.wait_for_workers(args.workers, timeout=60)
                rss = client.run(_rss)
                rows.append({
                    "fit": i, "seconds": round(time.perf_counter() - t0, 2),
                    "killed_worker": killed, "completed": "coef" in out,
                    "equal_to_undisturbed": bool("coef" in out
                                                 and np.array_equal(out["coef"], reference)),
                    "error": out.get("error"),
                    "worker_rss_mib": {str(k): round(v / 2**20, 1) for k, v in rss.items()},
                })
                print(json.dumps(rows[-1]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary = {
        "fits": len(rows),
        "completed": sum(r["completed"] for r in rows),
        "equal_to_undisturbed": sum(r["equal_to_undisturbed"] for r in rows),
        "worker_kills": sum(r["killed_worker"] is not None for r in rows),
        "median_fit_seconds": float(np.median([r["seconds"] for r in rows])),
    }
    # memory growth of workers that were never restarted: first vs last fit they served
    first, last = {}, {}
    for r in rows:
        for addr, mib in r["worker_rss_mib"].items():
            first.setdefault(addr, mib)
            last[addr] = mib
    summary["worker_rss_first_last_mib"] = {a: [first[a], last[a]] for a in first}
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"summary": summary, "fits": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
