"""DSPDC at its defaults on small data: passes to a certified relative gap of 1e-4 and 1e-6.

The data sets that scikit-learn ships (no download): breast cancer (569 x 30, binary),
wine (178 x 13, class 0 against the rest), digits (1,797 x 64, digits 0-4 against 5-9), iris
(150 x 4, class 1 against the rest), diabetes (442 x 10, regression) and linnerud (20 x 3,
the first target), all with raw columns; and two synthetic ill-conditioned problems (2,000
rows, 20 correlated raw columns whose covariance has eigenvalues from 1 to 1e-4, a ridge and
a logistic target); and five tiny problems (``tiny_ridge_N``: ``N`` = 1, 2, 3 rows of 3 raw
columns on scales 1 to 100, offset by 5, with a noisy linear target; ``tiny_logistic_N``: 2
and 3 such rows with alternating labels).  Every fit is the estimator's defaults (``alpha = 1e-4``, standardized
columns, ``tol`` below the targets so that the fit runs on) with ``random_state`` = the seed;
a pass is ``n`` dual coordinate updates (``gap_history_``'s ``passes``).  Where the fit
starts from Newton's solution (the logistic loss's start in memory,
``families/dspdc/_logistic_start.py``), ``newton_iterations`` gives its iterations (each
one Hessian of the rows), which the passes do not count; ``--zero-start`` turns the starts
in memory off (DSPDC's own iterations from ``x = 0``).

    python benchmarks/dspdc_small_data.py --max-iter 100 --seeds 0 1 2 \\
        --out benchmarks/results/dspdc_small_data.json

``--count-reads`` fits the classification problems at ``tol`` = 1e-4 and 1e-6 and counts the
reads of every row each fit made (Newton's start in memory, the duals at the start with the
first task's certificate, DSPDC's passes: ``reads_1e-04``, ``reads_1e-06``, with the parts):

    python benchmarks/dspdc_small_data.py --count-reads --seeds 0 \
        --out benchmarks/results/dspdc_small_data_reads.json

``--checkout`` with ``--out`` names the library measured in the results; CPU seconds of two
versions are compared by alternating whole runs (``--out`` of each run its own file) and
taking the medians per problem and seed (``--median FILE ...`` prints them: the table of
passes and the median CPU seconds of the runs given).

``--rate-fraction F`` runs the rate test of the adaptive steps with the fraction ``F`` (the
sweep that chose the default); ``--first-boost SQUARED OTHER`` starts the adaptive steps at
other boosts (``estimators.STEP_BOOST``: the squared loss's, then the logistic and
smoothed-hinge losses'); ``--min-epoch-iterations N`` gives an epoch at least ``N``
iterations where one task holds all the rows (the sweep that chose 128).  ``--checkout FOLDER`` measures another version of the library (e.g. ``git archive`` of an
older commit unpacked in FOLDER).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _checkout import use_checkout  # noqa: E402


def problems():
    """``(name, kind, X, y)`` of every problem."""
    from sklearn import datasets

    bc, wine, digits = datasets.load_breast_cancer(), datasets.load_wine(), datasets.load_digits()
    iris, diab, linn = datasets.load_iris(), datasets.load_diabetes(), datasets.load_linnerud()
    rng = np.random.default_rng(0)
    n, p = 2000, 20
    Q, _ = np.linalg.qr(rng.normal(size=(p, p)))
    Z = rng.normal(size=(n, p)) * np.sqrt(np.logspace(0, -4, p)) @ Q.T
    X_ill = Z * np.logspace(-2, 2, p) + 50.0      # correlated, raw scales and offsets
    beta = rng.normal(size=p)
    y_ridge = Z @ beta + 0.1 * rng.normal(size=n)
    y_logit = (Z @ beta + 0.3 * rng.normal(size=n) > 0).astype(int)
    return [("breast_cancer", "classifier", bc.data, bc.target),
            ("wine", "classifier", wine.data, (wine.target == 0).astype(int)),
            ("digits", "classifier", digits.data, (digits.target >= 5).astype(int)),
            ("iris", "classifier", iris.data, (iris.target == 1).astype(int)),
            ("diabetes", "regressor", diab.data, diab.target),
            ("linnerud", "regressor", linn.data, linn.target[:, 0]),
            ("ill_conditioned_ridge", "regressor", X_ill, y_ridge),
            ("ill_conditioned_logistic", "classifier", X_ill, y_logit)] + tiny_problems()


def tiny_problems():
    """``(name, kind, X, y)`` of 1 to 3 rows (the rows of ``tests/test_dspdc_tiny.py``)."""
    out = []
    for n in (1, 2, 3):
        rng = np.random.default_rng(0)
        X = rng.normal(size=(n, 3)) * np.array([1.0, 10.0, 100.0]) + 5.0
        out.append((f"tiny_ridge_{n}", "regressor", X,
                    X @ np.array([0.3, -0.02, 0.01]) + rng.normal(size=n)))
    for n in (2, 3):
        rng = np.random.default_rng(1)
        X = rng.normal(size=(n, 3)) * np.array([1.0, 10.0, 100.0]) + 5.0
        out.append((f"tiny_logistic_{n}", "classifier", X, np.arange(n) % 2))
    return out


def median_table(paths):
    """Per problem: the median over seeds of the passes to 1e-4 / 1e-6 and of the final
    gap in the first file, and the median CPU seconds per fit over every file and seed
    (whole runs of one version, alternated with another's)."""
    runs = [json.loads(Path(p).read_text())["rows"] for p in paths]
    names = list(dict.fromkeys(r["problem"] for r in runs[0]))
    print("| problem | passes to 1e-4 / 1e-6 (gap at the end) | epochs | CPU s per fit |")
    print("|---|---|---|---|")

    def med(values):
        values = [np.inf if v is None else v for v in values]
        m = float(np.median(values))
        return "> max_iter" if m == np.inf else f"{m:g}"

    for name in names:
        first = [r for r in runs[0] if r["problem"] == name]
        cpu = [r["cpu_seconds"] for rows in runs for r in rows if r["problem"] == name]
        print(f"| {name} | {med([r['passes_1e-4'] for r in first])} / "
              f"{med([r['passes_1e-6'] for r in first])} "
              f"({float(np.median([r['final_relative_gap'] for r in first])):.2g}) | "
              f"{med([r['epochs'] for r in first])} | {float(np.median(cpu)):.4f} |")


def first_pass(history, target):
    """Passes of the first evaluated iterate whose relative gap is at most ``target``."""
    return next((float(e["passes"]) for e in history if e["relative_gap"] <= target), None)


def _count_newton() -> list:
    """A list that receives the iterations of every Newton start (the logistic loss's start
    in memory) that the fits run; empty for a library without that start."""
    runs: list = []
    try:
        from ooc_kernels.families.dspdc import _logistic_start
    except ImportError:
        return runs
    real = _logistic_start.logistic_newton

    def counted(*args, **kwargs):
        x, iterations = real(*args, **kwargs)
        runs.append(iterations)
        return x, iterations

    _logistic_start.logistic_newton = counted
    return runs


def _count_reads() -> dict:
    """Reads of every row (a read of all ``n`` rows counts 1, of a fraction of them that
    fraction) by the logistic loss's start in memory, added up in the dict returned:
    ``newton`` (Newton's iterations) and ``start`` (the duals at the start with their chunk
    products, the first task's certificate summed from the same products).  With the
    one-pass Newton (``kernels_newton``) every row its kernel visits counts; without it
    (the library before) each iteration counts a read for its gradient, one for its
    direction's margins and ``1 / stride`` for its Hessian, plus one for the last gradient.
    ``MemoryTasks.start_at`` counts 1 where it receives Newton's margins, else 2 (the
    product ``A x_0`` and the chunks' products)."""
    counts = {"newton": 0.0, "start": 0.0}
    try:
        from ooc_kernels.families.dspdc import _logistic_start, _memory_task
    except ImportError:
        return counts
    try:
        from ooc_kernels.families.dspdc import kernels_newton
    except ImportError:
        kernels_newton = None
    if kernels_newton is not None:
        real_rows = kernels_newton.logistic_rows

        def rows_counted(rows, lo, hi, *args):
            counts["newton"] += (hi - lo) / len(rows)
            return real_rows(rows, lo, hi, *args)

        kernels_newton.logistic_rows = rows_counted
    else:
        real_hessian, real_newton = _logistic_start.hessian, _logistic_start.logistic_newton

        def hessian_counted(rows, h, *args):
            counts["newton"] += len(h) / len(rows)
            return real_hessian(rows, h, *args)

        def newton_counted(*args, **kwargs):
            x, iterations = real_newton(*args, **kwargs)
            counts["newton"] += 2 * iterations + 1
            return x, iterations

        _logistic_start.hessian = hessian_counted
        _logistic_start.logistic_newton = newton_counted
    real_start = _memory_task.MemoryTasks.start_at

    def start_counted(self, *args, **kwargs):
        counts["start"] += 2 if kwargs.get("margins") is None else 1
        return real_start(self, *args, **kwargs)

    _memory_task.MemoryTasks.start_at = start_counted
    return counts


def count_reads(ok, args) -> list:
    """Per problem and seed: fits at ``tol`` = 1e-4 and 1e-6 (the defaults otherwise) and the
    reads of every row each made: Newton's, the start's and DSPDC's passes (dual updates
    over ``n``, each epoch's sweep in the same visit)."""
    counts = _count_reads()
    rows = []
    for name, kind, X, y in problems():
        if (args.only and name not in args.only) or kind != "classifier":
            continue
        for seed in args.seeds:
            row = {"problem": name, "n": int(X.shape[0]), "p": int(X.shape[1]), "seed": seed}
            for tol in (1e-4, 1e-6):
                counts.update(newton=0.0, start=0.0)
                est = ok.DSPDCClassifier(random_state=seed, max_iter=args.max_iter, tol=tol)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est.fit(X, y)
                last = est.gap_history_[-1]
                reached = last["relative_gap"] <= tol
                row[f"reads_{tol:g}"] = (counts["newton"] + counts["start"] + last["passes"]
                                         if reached else None)
                row[f"parts_{tol:g}"] = {"newton": counts["newton"], "start": counts["start"],
                                         "dspdc": float(last["passes"]),
                                         "relative_gap": float(last["relative_gap"])}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--only", nargs="+", default=None, help="problem names")
    parser.add_argument("--rate-fraction", type=float, default=None,
                        help="the rate test's fraction (_step_rule.RATE_FRACTION; the sweep "
                             "that chose the default)")
    parser.add_argument("--first-boost", type=float, nargs=2, default=None,
                        metavar=("SQUARED", "OTHER"),
                        help="the adaptive steps' first boosts (estimators.STEP_BOOST)")
    parser.add_argument("--min-epoch-iterations", type=int, default=None,
                        help="the fewest iterations of an epoch where one task holds all "
                             "the rows (_setup_pass.MIN_EPOCH_ITERATIONS; the sweep that "
                             "chose the default)")
    parser.add_argument("--zero-start", action="store_true",
                        help="fit from x = 0: the starts in memory off "
                             "(_squared_start.START_MAX_FEATURES = 0)")
    parser.add_argument("--count-reads", action="store_true",
                        help="fits at tol = 1e-4 and 1e-6 of the classification problems and "
                             "the reads of every row each made (Newton's start, the start's "
                             "duals and certificate, DSPDC's passes)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--median", type=Path, nargs="+", default=None, metavar="FILE",
                        help="print the medians of these results files and exit")
    parser.add_argument("--checkout", default=None,
                        help="a folder holding another version of the library to measure")
    args = parser.parse_args(argv)
    if args.median:
        median_table(args.median)
        return
    use_checkout(args.checkout)
    import ooc_kernels as ok

    if args.zero_start:
        from ooc_kernels.families.dspdc import _squared_start

        _squared_start.START_MAX_FEATURES = 0
    if args.rate_fraction is not None:
        from ooc_kernels.families.dspdc import _step_rule

        _step_rule.RATE_FRACTION = args.rate_fraction
    if args.min_epoch_iterations is not None:
        from ooc_kernels.families.dspdc import _setup_pass

        _setup_pass.MIN_EPOCH_ITERATIONS = args.min_epoch_iterations
    if args.first_boost is not None:
        from ooc_kernels.families.dspdc import estimators

        squared, other = args.first_boost
        estimators.STEP_BOOST.update(squared=squared, logistic=other, smoothed_hinge=other)
    if args.count_reads:
        rows = count_reads(ok, args)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps({"args": vars(args) | {"out": str(args.out)},
                                            "rows": rows}, indent=1))
        return
    newton = _count_newton()
    rows = []
    for name, kind, X, y in problems():
        if args.only and name not in args.only:
            continue
        for seed in args.seeds:
            cls = ok.DSPDCClassifier if kind == "classifier" else ok.DSPDCRegressor
            est = cls(random_state=seed, max_iter=args.max_iter, tol=1e-7)
            newton.clear()
            cpu = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(X, y)
            h = est.gap_history_
            row = {"problem": name, "n": int(X.shape[0]), "p": int(X.shape[1]), "seed": seed,
                   "passes_1e-4": first_pass(h, 1e-4), "passes_1e-6": first_pass(h, 1e-6),
                   "final_relative_gap": float(h[-1]["relative_gap"]),
                   "epochs": int(est.n_iter_), "cpu_seconds": time.process_time() - cpu,
                   "stop_reason": est.stop_reason_,
                   "newton_iterations": sum(newton) if newton else None}
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"args": vars(args) | {"out": str(args.out)},
                                        "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
