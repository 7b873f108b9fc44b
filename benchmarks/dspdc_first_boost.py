"""DSPDC's first step boost by loss: the squared loss at 100 against 30, on the peer table's
problems, out of core and in memory.

``steps="adaptive"`` starts from the steps of a problem ``step_boost`` times more strongly
convex than the regularizer makes it (``docs/dspdc.md``, Adaptive steps).  This script
compares the squared loss's first boost of 100 (the default) with 30 (the logistic loss's,
and the squared loss's before) on the problems of ``benchmarks/dspdc_peers.py --part peers``
(``--n`` rows, ``--p`` Gaussian columns, conditioned or as a real table's raw columns,
written to a Zarr store in chunks of ``--chunk-size`` rows, ``alpha = 1e-4``): ridge and
elastic net (``l1_ratio = 0.5``).  Each fit runs at the estimator's defaults with
``tol = target`` for each target of ``1e-4`` and ``1e-6`` (the fit stops on its certified
relative duality gap), out of core from the store and in memory from the same rows as NumPy
arrays.  The two boosts alternate (30, 100, 30, 100, ...) ``--repeats`` times; the medians
of the CPU seconds (``time.process_time``, one thread) and the epochs (reads of the data)
are reported.

    python benchmarks/dspdc_first_boost.py --repeats 3 \\
        --out benchmarks/results/dspdc_first_boost.json
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # a script: one thread everywhere (not when imported)
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                 "NUMBA_NUM_THREADS"):
        os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from _results import run_or_table  # noqa: E402

PROBLEMS = {"ridge": 0.0, "elastic_net": 0.5}
TARGETS = (1e-4, 1e-6)


def one_fit(data, l1_ratio: float, target: float, boost: float) -> dict:
    """One ``DSPDCRegressor`` fit at its defaults to ``tol=target`` with the squared loss's
    first step boost set to ``boost`` (restored afterwards)."""
    import ooc_kernels as ok
    from ooc_kernels.families.dspdc import estimators

    saved = estimators.STEP_BOOST["squared"]
    estimators.STEP_BOOST["squared"] = boost
    try:
        est = ok.DSPDCRegressor(l1_ratio=l1_ratio, tol=target, random_state=0,
                                progress=False, scheduler="sync")
        start = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")              # a fit that stops at max_iter
            est.fit(*data)
        cpu = time.process_time() - start
    finally:
        estimators.STEP_BOOST["squared"] = saved
    last = est.gap_history_[-1]
    return {"cpu_seconds": cpu, "epochs": int(est.n_iter_),
            "relative_gap": float(last["relative_gap"]), "stop_reason": est.stop_reason_,
            "last_step_boost": float(last["step_boost"])}


def run(args) -> dict:
    sys.path.insert(0, str(Path(__file__).parent))
    from dspdc_peers import load, write_store

    folder = Path(tempfile.mkdtemp(prefix="dspdc-first-boost-"))
    out = {"n": args.n, "p": args.p, "chunk_size": args.chunk_size, "repeats": args.repeats,
           "boosts": args.boosts, "results": []}
    for kind in args.data:
        store = write_store(folder / f"{kind}.zarr", args.n, args.p, args.chunk_size,
                            "regression", 1, kind)
        ds, X, y = load(store)
        one_fit((X[:2000], y[:2000]), 0.0, 1e-2, args.boosts[0])       # compile
        for name in args.problems:
            for where, data in (("out of core", (ds,)), ("in memory", (X, y))):
                for target in TARGETS:
                    runs = {b: [] for b in args.boosts}
                    for _ in range(args.repeats):
                        for b in args.boosts:                             # interleaved
                            r = one_fit(data, PROBLEMS[name], target, b)
                            runs[b].append(r)
                            print(json.dumps({"data": kind, "problem": name, "where": where,
                                              "target": target, "boost": b, **r}),
                                  flush=True)
                    for b, rs in runs.items():
                        out["results"].append({
                            "data": kind, "problem": name, "where": where, "target": target,
                            "boost": b,
                            "median_cpu_seconds": float(np.median([r["cpu_seconds"]
                                                                   for r in rs])),
                            "median_epochs": float(np.median([r["epochs"] for r in rs])),
                            "runs": rs})
    return out


def table(result: dict) -> str:
    """The Markdown table of a result: median CPU seconds and epochs per boost."""
    rows = {}
    for r in result["results"]:
        key = (r["data"], r["problem"], r["where"])
        rows.setdefault(key, {})[(r["boost"], r["target"])] = r
    boosts = result["boosts"]
    head = "| data | problem | path | " + " | ".join(
        f"boost {b:g}: CPU s (epochs) to 1e-4 / 1e-6" for b in boosts) + " |"
    lines = [head, "|" + "---|" * (3 + len(boosts))]
    for (data, problem, where), cells in rows.items():
        parts = []
        for b in boosts:
            a, c = cells[(b, 1e-4)], cells[(b, 1e-6)]
            parts.append(f"{a['median_cpu_seconds']:.2f} ({a['median_epochs']:g}) / "
                         f"{c['median_cpu_seconds']:.2f} ({c['median_epochs']:g})")
        lines.append(f"| {data} | {problem} | {where} | " + " | ".join(parts) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--boosts", type=float, nargs="+", default=[30.0, 100.0])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS),
                        choices=list(PROBLEMS))
    parser.add_argument("--data", nargs="+", default=["conditioned", "raw"],
                        choices=["conditioned", "raw"])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--table", type=Path, default=None,
                        help="print the Markdown table of a result file and exit")
    args = parser.parse_args(argv)
    run_or_table(args, run, table)


if __name__ == "__main__":
    main()
