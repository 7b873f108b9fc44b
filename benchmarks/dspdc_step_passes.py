"""DSPDC's steps: passes over the duals to a certified relative gap of 1e-4 and 1e-6 on the
peer table's problems, in memory and out of core.

The stores of ``benchmarks/dspdc_peers.py`` (``write_store``: ``n`` Gaussian rows of ``p``
columns, chunks of ``--chunk-size`` rows; "conditioned" columns as drawn, "raw" columns at
scales 1e-3 .. 1e3 with offsets and indicators), and the problems ridge, elastic net
(``l1_ratio = 0.5``), logistic and smoothed hinge at ``alpha = 1e-4``, fitted with the
estimators' defaults (``tol = 1e-6``, at most ``--max-iter`` epochs) except
``local_passes`` (``--local-passes``, 1 by default, so that checkouts whose defaults differ
there compare their steps alone): out of core from the Zarr store, and in memory from the
same rows as NumPy arrays.  Passes (``n`` dual updates) and epochs to each gap are read from
``gap_history_``; CPU seconds are the fit's (``time.process_time``).  Every fit is repeated
with ``random_state`` = each of ``--seeds``.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python benchmarks/dspdc_step_passes.py --seeds 0 1 2 \\
        --out benchmarks/results/dspdc_step_passes_after.json

``--first-boost SQUARED OTHER`` starts the adaptive steps at other boosts
(``estimators.STEP_BOOST``: the squared loss's, then the logistic and smoothed-hinge
losses').  ``--checkout FOLDER`` measures another version of the library (e.g. ``git archive`` of an
older commit unpacked in FOLDER; the script itself and ``dspdc_peers.py`` come from this
folder).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _checkout import use_checkout  # noqa: E402
from dspdc_peers import load, write_store  # noqa: E402


PROBLEMS = {"ridge": ("squared", 0.0), "elastic_net": ("squared", 0.5),
            "logistic": ("logistic", 0.0), "smoothed_hinge": ("smoothed_hinge", 0.0)}


def first(history, key, target):
    """``key`` of the first evaluated iterate whose relative gap is at most ``target``."""
    return next((float(e[key]) for e in history if e["relative_gap"] <= target), None)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--max-iter", type=int, default=60)
    parser.add_argument("--local-passes", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--data", nargs="+", default=["conditioned", "raw"])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--where", nargs="+", default=["in_memory", "out_of_core"])
    parser.add_argument("--first-boost", type=float, nargs=2, default=None,
                        metavar=("SQUARED", "OTHER"),
                        help="the adaptive steps' first boosts (estimators.STEP_BOOST)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--checkout", default=None,
                        help="a folder holding another version of the library to measure")
    args = parser.parse_args(argv)
    use_checkout(args.checkout)
    import ooc_kernels as ok

    if args.first_boost is not None:
        from ooc_kernels.families.dspdc import estimators

        squared, other = args.first_boost
        estimators.STEP_BOOST.update(squared=squared, logistic=other, smoothed_hinge=other)

    tmp = Path(tempfile.mkdtemp(prefix="dspdc-step-passes-"))
    rows = []
    for kind in args.data:
        stores = {t: write_store(tmp / f"{kind}_{t}.zarr", args.n, args.p, args.chunk_size, t,
                                 s, kind) for t, s in (("regression", 1), ("classification", 2))}
        for name in args.problems:
            loss, l1_ratio = PROBLEMS[name]
            ds, X, y = load(stores["regression" if loss == "squared" else "classification"])
            Est = ok.DSPDCRegressor if loss == "squared" else ok.DSPDCClassifier
            for where in args.where:
                data = (X, y) if where == "in_memory" else (ds,)
                for seed in args.seeds:
                    est = Est(loss=loss, l1_ratio=l1_ratio, random_state=seed, progress=False,
                              max_iter=args.max_iter, local_passes=args.local_passes)
                    cpu = time.process_time()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        est.fit(*data)
                    h = est.gap_history_
                    row = {"data": kind, "problem": name, "where": where, "seed": seed,
                           "passes_1e-4": first(h, "passes", 1e-4),
                           "passes_1e-6": first(h, "passes", 1e-6),
                           "final_relative_gap": float(h[-1]["relative_gap"]),
                           "epochs": int(est.n_iter_),
                           "cpu_seconds": time.process_time() - cpu}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"args": {**vars(args), "out": str(args.out)},
                                        "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
