"""More work per read: DSPDC's ``local_passes`` (iterations of a task per row it read).

A task reads its rows once per epoch; with ``local_passes = L`` it runs ``L n_k / m`` DSPDC
iterations on them (``L`` passes over its duals) before the round aggregates.  The question
is whether the extra iterations buy fewer reads (epochs) to a certified relative duality gap,
and fewer CPU seconds.  Problems of ``benchmarks/dspdc_steps.py`` (``n`` rows, 50 columns,
conditioned or raw columns, out of core from a Zarr store, ``alpha = 1e-4``, everything else
at its defaults): ridge, elastic net (``l1_ratio = 0.5``) and logistic regression.  Each fit
runs to ``tol = 1e-6`` (at most ``--max-iter`` epochs) in one process with one BLAS and numba
thread; the epochs whose iterate reaches ``1e-4`` and ``1e-6`` come from ``gap_history_``,
and the fit's CPU seconds (``time.process_time``) to ``1e-6`` are measured.  The values of
``L`` are run interleaved, ``--repeats`` times each (medians), on each data seed of
``--seeds``.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python benchmarks/dspdc_local_passes.py --n 50000 --local-passes 1 2 3 \\
        --out benchmarks/results/dspdc_local_passes.json

``--in-memory`` fits the same rows as NumPy arrays (the in-memory path) instead of the store.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

PROBLEMS = {"ridge": ("regression", {}), "elastic_net": ("regression", {"l1_ratio": 0.5}),
            "logistic": ("classification", {})}


def epochs_to(history, level, local_passes):
    """Epochs of the first iterate whose relative gap is at most ``level`` (None: none)."""
    for entry in history:
        if entry["relative_gap"] <= level:
            return int(round(entry["passes"] / local_passes))
    return None


def one_fit(X, y, kind, params, local_passes, alpha, max_iter) -> dict:
    import ooc_kernels as ok

    Est = ok.DSPDCRegressor if kind == "regression" else ok.DSPDCClassifier
    est = Est(alpha=alpha, local_passes=local_passes, tol=1e-6, max_iter=max_iter,
              random_state=0, progress=False, **params)
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                 # a fit that does not reach 1e-6
        est.fit(X, y)
    cpu = time.process_time() - start
    h = est.gap_history_
    return {"epochs_run": int(est.n_iter_), "cpu_seconds": cpu,
            "cpu_per_epoch": cpu / max(est.n_iter_, 1),
            "epochs_to_1e-4": epochs_to(h, 1e-4, local_passes),
            "epochs_to_1e-6": epochs_to(h, 1e-6, local_passes),
            "stop_reason": est.stop_reason_}


def run(args) -> dict:
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from dspdc_steps import _data

    folder = Path(tempfile.mkdtemp(prefix="dspdc-local-passes-"))
    out = {"n": args.n, "p": args.p, "alpha": args.alpha, "max_iter": args.max_iter,
           "in_memory": bool(args.in_memory),
           "local_passes": args.local_passes, "repeats": args.repeats, "results": []}
    for data_kind, seed in [(k, s) for k in args.data for s in args.seeds]:
        X, y, yc = _data(args.n, args.p, seed, data_kind, folder)   # X: a Zarr store
        if args.in_memory:                      # the same rows as a NumPy array
            X = np.asarray(X)
        for kind, target in (("regression", y), ("classification", yc)):   # compile
            one_fit(X[:2000], target[:2000], kind, {}, 1.0, args.alpha, 1)
        for name in args.problems:
            kind, params = PROBLEMS[name]
            runs = {L: [] for L in args.local_passes}
            for _ in range(args.repeats):
                for L in args.local_passes:             # interleaved
                    r = one_fit(X, y if kind == "regression" else yc, kind, params, L,
                                args.alpha, args.max_iter)
                    runs[L].append(r)
                    print(json.dumps({"data": data_kind, "seed": seed, "problem": name,
                                      "local_passes": L, **r}), flush=True)
            for L, rs in runs.items():
                med = {k: float(np.median([r[k] for r in rs]))
                       for k in ("cpu_seconds", "cpu_per_epoch", "epochs_run")}
                out["results"].append({"data": data_kind, "seed": seed, "problem": name,
                                       "local_passes": L,
                                       "median": med, "runs": rs})
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--alpha", type=float, default=1e-4)
    parser.add_argument("--max-iter", type=int, default=40)
    parser.add_argument("--local-passes", type=float, nargs="+", default=[1.0, 2.0, 3.0])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--data", nargs="+", default=["conditioned", "raw"])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0],
                        help="data seeds (benchmarks/dspdc_steps.py's data)")
    parser.add_argument("--in-memory", action="store_true",
                        help="fit NumPy arrays of the same rows (the in-memory path)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    result = run(args)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
