"""DSPDC's logistic fit in memory above 128 solver columns: the zero start against Newton's
start in the p-space (``_logistic_start.newton_applies``: at most
``NEWTON_ROWS_PER_COLUMN`` rows per solver column, up to 512 columns).

For each ``--n`` and ``--p``, ``make_classification(n_samples=n, n_features=p,
n_informative=..., random_state=seed)`` for ``--seeds``; ``DSPDCClassifier(alpha=...,
tol=..., random_state=0)`` at its other defaults, once with the start off
(``_logistic_start.NEWTON_ROWS_PER_COLUMN = 0``: the zero start) and once with Newton's
start forced on (``NEWTON_ROWS_PER_COLUMN`` raised above ``n / p``), whatever the rule
decides for that shape (the line says which one the rule takes); scikit-learn's
``LogisticRegression(C=1 / (alpha * n))`` (L-BFGS at its default ``tol``, raw columns,
intercept not penalized) for scale.  One warm-up fit (numba's caches), then the median CPU
seconds of the process (``time.process_time``: on a loaded machine wall seconds mostly
measure the wait for a core) of ``--repeats`` fits per seed.  One line per fit: the
seconds, ``n_iter_``, the last relative gap and why the fit stopped.

    OPENBLAS_NUM_THREADS=1 python benchmarks/dspdc_newton_columns.py --n 2000 --p 300

``--out-of-core``: the fit out of core instead (a Dask array of ``--chunks`` chunks of
rows, ``scheduler="sync"``), its start (Newton's out of core, ``_ooc_newton``, or zero),
CPU seconds, reads of the rows before the first epoch (the set-up's and the start's) and
epochs to ``tol``, beside the iterations Newton's start takes on the same standardized
rows in memory (``_logistic_start.logistic_newton`` to the same ``tol``):

    OPENBLAS_NUM_THREADS=1 python benchmarks/dspdc_newton_columns.py --out-of-core \
        --n 2000 --p 300
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from ooc_kernels.families.dspdc import DSPDCClassifier, _logistic_start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alpha", type=float, default=1e-4)
    parser.add_argument("--n", type=int, nargs="+", default=[2000])
    parser.add_argument("--p", type=int, nargs="+", default=[300])
    parser.add_argument("--n-informative", type=int, nargs="+", default=[2, 30])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out-of-core", action="store_true")
    parser.add_argument("--chunks", type=int, default=4)
    args = parser.parse_args()
    if args.out_of_core:
        out_of_core(args)
        return
    warnings.simplefilter("ignore")              # the zero start warns at max_iter

    limit = _logistic_start.NEWTON_ROWS_PER_COLUMN
    DSPDCClassifier(alpha=args.alpha).fit(*make_classification(n_samples=400, n_features=200,
                                                              random_state=0))

    def timed(make, X, y):
        seconds = []
        for _ in range(args.repeats):
            model = make()
            start = time.process_time()
            model.fit(X, y)
            seconds.append(time.process_time() - start)
        return float(np.median(seconds)), model

    for n in args.n:
        for p in args.p:
            rule = _logistic_start.newton_applies(n, p + 1)
            for informative in args.n_informative:
                for seed in args.seeds:
                    X, y = make_classification(n_samples=n, n_features=p,
                                               n_informative=informative, random_state=seed)
                    cells = []
                    for label, rows in (("zero start", 0), ("Newton", n)):
                        _logistic_start.NEWTON_ROWS_PER_COLUMN = rows
                        seconds, model = timed(lambda: DSPDCClassifier(
                            alpha=args.alpha, tol=args.tol, random_state=0), X, y)
                        last = model.gap_history_[-1]
                        cells.append(f"{label} {seconds:.3f} s, {model.n_iter_} epochs, "
                                     f"{last['relative_gap']:.2g}, "
                                     f"{model.stop_reason_.split(':')[0]}")
                    _logistic_start.NEWTON_ROWS_PER_COLUMN = limit
                    seconds, _ = timed(lambda: LogisticRegression(
                        C=1.0 / (args.alpha * n), max_iter=10000), X, y)
                    print(f"{n}x{p} informative={informative} seed {seed} (rule: "
                          f"{'Newton' if rule else 'zero'}): " + " | ".join(cells)
                          + f" | LogisticRegression {seconds:.3f} s", flush=True)


def out_of_core(args) -> None:
    """The ``--out-of-core`` lines (module docstring)."""
    import dask.array as da

    warnings.simplefilter("ignore")
    for n in args.n:
        for p in args.p:
            for informative in args.n_informative:
                for seed in args.seeds:
                    X, y = make_classification(n_samples=n, n_features=p,
                                               n_informative=informative, random_state=seed)
                    rows = -(-n // args.chunks)
                    Xd, yd = da.from_array(X, chunks=(rows, p)), da.from_array(y, chunks=rows)
                    seconds = []
                    for _ in range(args.repeats):
                        model = DSPDCClassifier(alpha=args.alpha, tol=args.tol, random_state=0,
                                                scheduler="sync", progress=False)
                        start = time.process_time()
                        model.fit(Xd, yd)
                        seconds.append(time.process_time() - start)
                    A = np.column_stack([(X - X.mean(axis=0)) / X.std(axis=0), np.ones(n)])
                    b = np.where(y == model.classes_[1], 1.0, -1.0)
                    _, iterations = _logistic_start.logistic_newton(A, b, None, args.alpha,
                                                                    args.tol)
                    last = model.gap_history_[-1]
                    begun = "Newton" if model._config.start_x is not None else "zero"
                    print(f"{n}x{p} informative={informative} seed {seed}, {args.chunks} "
                          f"chunks: {begun} start {np.median(seconds):.3f} CPU s, "
                          f"{model._setup_reads} set-up reads, "
                          f"{model.n_iter_} epochs, {last['relative_gap']:.2g}, "
                          f"{model.stop_reason_.split(':')[0]} | Newton in memory: "
                          f"{iterations} iterations", flush=True)


if __name__ == "__main__":
    main()
