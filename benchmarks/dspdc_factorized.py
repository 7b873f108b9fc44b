"""DSPDC on factorized data ``A = U V`` (``p / d = 100``) against scikit-learn's ``Ridge`` on
the materialized ``A``: CPU seconds to the same relative suboptimality, one thread each.

Ridge regression, ``U`` (n, d) and ``V`` (d, p) Gaussian, ``y = A beta + noise``,
``alpha`` per sample (``Ridge(alpha=alpha * n)``), no intercept, raw columns
(``standardize=False``: the problem ``Ridge`` solves).  ``P*`` from the closed form in the
row space of ``V`` (an ``r x r`` solve, independent of both methods).  Each repeat times, in
this order and in the same process, ``Ridge(solver="cholesky")`` on ``A`` (``A`` built
before the clock starts), ``ok.DSPDCRegressor(q="auto", tol=--tol)`` on
``ok.Factorized(U, V)`` with the row-space tasks (the default), and, in the first repeat
only, the same fit with the tasks forced back to Algorithm 2 on ``(U, V)`` (``O(d p)`` per
iteration; "before").  ``OMP_NUM_THREADS=1`` etc. are set before NumPy is imported.

    python benchmarks/dspdc_factorized.py --n 50000 --p 1000 --d 10 --repeats 3 \\
        --out benchmarks/results/dspdc_factorized_ridge.json
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # a script: one thread everywhere (not when imported)
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                 "NUMBA_NUM_THREADS"):
        os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402


def primal(A_apply, y, coef, alpha):
    r = A_apply(coef) - y
    return 0.5 * float(r @ r) / len(y) + 0.5 * alpha * float(coef @ coef)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--p", type=int, default=1000)
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--alpha", type=float, default=1e-3)
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)

    from sklearn.linear_model import Ridge

    import ooc_kernels as ok
    from ooc_kernels.families.dspdc import solver

    rng = np.random.default_rng(0)
    n, p, d, alpha = args.n, args.p, args.d, args.alpha
    U, V = rng.normal(size=(n, d)), rng.normal(size=(d, p)) / np.sqrt(d)
    y = U @ (V @ rng.normal(size=p)) + rng.normal(size=n)
    A = U @ V

    def apply(coef):
        return U @ (V @ coef)

    # P*: x* = V^T Q e^{-1/2} w*, (Ut^T Ut / n + alpha I) w* = Ut^T y / n, Ut = U Q e^{1/2}
    e, Q = np.linalg.eigh(V @ V.T)
    Ut = U @ (Q * np.sqrt(e))
    w = np.linalg.solve(Ut.T @ Ut / n + alpha * np.eye(d), Ut.T @ y / n)
    p_star = primal(apply, y, V.T @ (Q / np.sqrt(e)) @ w, alpha)

    def rel(coef):
        return (primal(apply, y, coef, alpha) - p_star) / abs(p_star)

    def dspdc(reduced: bool):
        original = solver.reduced_applies
        if not reduced:
            solver.reduced_applies = lambda config: False
        try:
            est = ok.DSPDCRegressor(alpha=alpha, fit_intercept=False, standardize=False,
                                    tol=args.tol, max_iter=300, random_state=0,
                                    scheduler="sync", progress=False)
            t0 = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(ok.Factorized(U, V), y)
            seconds = time.process_time() - t0
        finally:
            solver.reduced_applies = original
        return {"cpu_seconds": seconds, "epochs": int(est.n_iter_),
                "certified_relative_gap": float(est.gap_history_[-1]["relative_gap"]),
                "relative_suboptimality": rel(est.coef_), "stop_reason": est.stop_reason_}

    dspdc(True)                                           # compile and import everything
    runs = []
    for rep in range(args.repeats):
        t0 = time.process_time()
        ridge = Ridge(alpha=alpha * n, fit_intercept=False, solver="cholesky").fit(A, y)
        ridge_s = time.process_time() - t0
        row = {"ridge": {"cpu_seconds": ridge_s, "relative_suboptimality": rel(ridge.coef_)},
               "dspdc": dspdc(True)}
        if args.before and rep == 0:
            row["dspdc_algorithm_2"] = dspdc(False)
        row["ratio_ridge_over_dspdc"] = ridge_s / row["dspdc"]["cpu_seconds"]
        runs.append(row)
        print(json.dumps(row), flush=True)
    med = {k: float(np.median([r[k]["cpu_seconds"] for r in runs])) for k in ("ridge", "dspdc")}
    summary = {"n": n, "p": p, "d": d, "alpha": alpha, "tol": args.tol, "P_star": p_star,
               "median_cpu_seconds": med,
               "median_ratio_ridge_over_dspdc": float(np.median(
                   [r["ratio_ridge_over_dspdc"] for r in runs])),
               "load": os.getloadavg(), "runs": runs}
    print(json.dumps({k: v for k, v in summary.items() if k != "runs"}), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
