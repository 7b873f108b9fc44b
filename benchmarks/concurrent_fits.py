"""CPU seconds of two ``bandwidth="auto"`` fits run at once in two threads of one process,
against the same two fits one after the other, and whether the threads' models are the
bits of the fits run one after the other in the main thread.

Each measurement runs in a fresh Python process (``--child``) that first compiles the
kernels with one fit in its main thread (as a notebook or a script does before it starts
threads), then times its fits with ``time.process_time`` (every thread of the process).
The modes run interleaved (A, B, A, B ...); the medians are printed and written as JSON.

* ``threads``: two fits started at once in two threads;
* ``sequential``: the same two fits one after the other in the main thread;
* ``threads-held``: the two threads started inside the caller's own
  ``threadpoolctl.threadpool_limits(1, user_api="blas")`` held by the main thread.

Data: a ``nonlinear_binary`` Zarr store (``--rows`` x ``--n-features``, chunks of
``--chunk`` rows); each fit is ``DSGClassifier(max_iter=1, tol=None, random_state=seed)``,
every other parameter at its default (``bandwidth="auto"``).

    python benchmarks/concurrent_fits.py --repeats 5 --out benchmarks/results/concurrent_fits.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

MODES = ("threads", "sequential", "threads-held")


def _fit(store: str, seed: int):
    import ooc_kernels as ok
    from ooc_kernels.data.schema import open_zarr_dataset

    return ok.DSGClassifier(max_iter=1, tol=None, random_state=seed,
                            progress=False).fit(open_zarr_dataset(store))


def child(store: str, mode: str) -> dict:
    """One measurement in this (fresh) process; returns CPU seconds and the models' bits."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    _fit(store, 0)                                   # compiles the kernels (main thread)
    models: dict = {}

    def run(seed):
        models[seed] = _fit(store, seed)

    start = time.process_time()
    if mode == "sequential":
        for seed in (1, 2):
            run(seed)
    else:
        held = threadpool_limits(1, user_api="blas") if mode == "threads-held" else None
        threads = [threading.Thread(target=run, args=(seed,)) for seed in (1, 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if held is not None:
            held.restore_original_limits()
    cpu = time.process_time() - start
    return {"mode": mode, "cpu_s": cpu,
            "coef_sums": [float(np.sum(models[s].coef_, dtype=np.float64)) for s in (1, 2)],
            "bandwidths": [np.asarray(models[s].bandwidth_).tolist() for s in (1, 2)]}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--n-features", type=int, default=16)
    parser.add_argument("--chunk", type=int, default=2_000)
    parser.add_argument("--modes", nargs="*", default=list(MODES), choices=MODES)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--child", nargs=2, metavar=("STORE", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    import ooc_kernels as ok

    runs: dict = {m: [] for m in args.modes}
    with tempfile.TemporaryDirectory() as tmp:
        store = str(ok.make_dataset("nonlinear_binary", Path(tmp) / "cf.zarr", args.rows,
                                    chunk_size=args.chunk, n_features=args.n_features,
                                    progress=False))
        for repeat in range(args.repeats):
            for mode in args.modes:                  # interleaved: A, B, C, A, B, C ...
                out = subprocess.run([sys.executable, __file__, "--child", store, mode],
                                     check=True, capture_output=True, text=True).stdout
                row = json.loads(out.strip().splitlines()[-1])
                runs[mode].append(row)
                print(json.dumps({"repeat": repeat, **row}), flush=True)
    reference = runs.get("sequential")
    summary = {m: {"cpu_s_median": round(statistics.median(r["cpu_s"] for r in rows), 3),
                   "cpu_s": [round(r["cpu_s"], 3) for r in rows],
                   "same_bits_as_sequential": None if not reference else all(
                       r["coef_sums"] == reference[0]["coef_sums"]
                       and r["bandwidths"] == reference[0]["bandwidths"] for r in rows)}
               for m, rows in runs.items()}
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"args": {k: v for k, v in vars(args).items()
                                                 if k not in ("out", "child")},
                                        "summary": summary, "runs": runs}, indent=1) + "\n")


if __name__ == "__main__":
    main()
