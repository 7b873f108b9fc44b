"""DSPDC: one start rule for every input and path (``families/dspdc/_start_rule.py``).

CPU seconds and epochs to a certified relative gap of ``1e-4`` (``tol=1e-4``,
``max_iter=100``, ``alpha=1e-4``) of ridge, the elastic net and logistic regression on a
20,000 x 50 problem (columns with a mean of 3 and correlated, targets offset by 5), as a
NumPy array (``chunk_size=4000``) and as a Dask array of the same chunks, on the paths
whose start depends on the input's type or ``chunks_per_round`` unless one rule decides it
(``standardize=False``, ``m=2``, ``chunks_per_round=3``) and on the defaults' paths as
controls.  Each case runs twice in one process, the second run is recorded (the first
compiles); medians over ``--repeats`` processes.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python benchmarks/dspdc_start_paths.py --repeats 3 \\
        --out benchmarks/results/dspdc_start_paths.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings

import numpy as np

CASES = [   # (name, estimator, parameters, input)
    ("ridge std=True dask K=1", "reg", {}, "dask"),
    ("ridge std=False dask K=1", "reg", {"standardize": False}, "dask"),
    ("ridge std=True dask m=2", "reg", {"m": 2}, "dask"),
    ("ridge std=False dask K=3", "reg", {"standardize": False, "chunks_per_round": 3}, "dask"),
    ("elastic net std=False dask K=1", "reg", {"standardize": False, "l1_ratio": 0.5}, "dask"),
    ("ridge std=True numpy K=1", "reg", {}, "numpy"),
    ("ridge std=False numpy K=1", "reg", {"standardize": False}, "numpy"),
    ("ridge std=True numpy K=3", "reg", {"chunks_per_round": 3}, "numpy"),
    ("ridge std=False numpy K=3", "reg", {"standardize": False, "chunks_per_round": 3},
     "numpy"),
    ("logistic dask K=1", "clf", {}, "dask"),
    ("logistic numpy K=1", "clf", {}, "numpy"),
]


def run_once() -> list[dict]:
    """Every case, twice; the second runs' records."""
    import dask.array as da

    import ooc_kernels as ok

    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    n, p, chunk = 20000, 50, 4000
    X = rng.normal(size=(n, p)) @ (np.eye(p) + 0.1 * rng.normal(size=(p, p))) + 3.0
    coef = rng.normal(size=p)
    y = X @ coef + rng.normal(size=n) + 5.0
    yc = (X @ coef + 2 * rng.normal(size=n) > np.median(X @ coef)).astype(int)
    Xd = da.from_array(X, chunks=(chunk, -1))
    out = []
    for rep in range(2):
        for name, kind, params, where in CASES:
            Est = ok.DSPDCRegressor if kind == "reg" else ok.DSPDCClassifier
            target = y if kind == "reg" else yc
            data = (X, target) if where == "numpy" else (Xd, da.from_array(target, chunk))
            est = Est(alpha=1e-4, tol=1e-4, max_iter=100, random_state=0, progress=False,
                      chunk_size=chunk, **params)
            t0 = time.process_time()
            est.fit(*data)
            cpu = time.process_time() - t0
            if rep == 1:
                out.append({"case": name, "cpu_seconds": cpu, "epochs": int(est.n_iter_),
                            "relative_gap": float(est.gap_history_[-1]["relative_gap"]),
                            "started": est._config.start_x is not None})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--once", action="store_true", help="one process's records (internal)")
    args = ap.parse_args()
    if args.once:
        print(json.dumps(run_once()))
        return
    runs = [json.loads(subprocess.run([sys.executable, __file__, "--once"], check=True,
                                      capture_output=True, text=True).stdout.splitlines()[-1])
            for _ in range(args.repeats)]
    table = []
    for i, (name, *_rest) in enumerate(CASES):
        recs = [run[i] for run in runs]
        table.append({"case": name,
                      "median_cpu_seconds": float(np.median([r["cpu_seconds"] for r in recs])),
                      "cpu_seconds": [r["cpu_seconds"] for r in recs],
                      "epochs": [r["epochs"] for r in recs],
                      "relative_gap": recs[0]["relative_gap"], "started": recs[0]["started"]})
        print(f"{name:32s} {table[-1]['median_cpu_seconds']:.4f} CPU s  "
              f"epochs {table[-1]['epochs']}  started {recs[0]['started']}")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"repeats": args.repeats, "cases": table}, fh, indent=1)


if __name__ == "__main__":
    main()
