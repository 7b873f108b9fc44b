"""``bandwidth="auto"``'s per-input width decision on problems with noise inputs, NumPy and
Dask inputs: what the fit chose, what it scored, and what the decision cost.

For every problem, seed and input kind, one ``DSGRegressor(random_state=seed)`` /
``DSGClassifier(random_state=seed)`` fit to its stopping rule, nothing else set, scored on
5,000 rows drawn with the training rows: test R^2 or accuracy, wall seconds of ``fit``,
epochs, whether the fit has per-input widths, the leave-one-out scores of the decision
(:func:`~ooc_kernels.families.dsg._ard.auto_ard`: one width, the search's widths, the
screened and refined widths when tried) and the CPU seconds of the decision and of the
whole set-up.  Problems (``--n`` training rows, drawn with the seed):

* ``f1``, ``f2``, ``f3``: scikit-learn's Friedman #1 (10 inputs, 5 of them noise; noise
  0.5), #2 (noise 0.5) and #3 (noise 0.05);
* ``clf<d>_<k>``: ``make_classification`` with ``d`` inputs of which ``k`` informative
  (the others noise), 2 clusters per class, 1% of the labels flipped.

Inputs: ``numpy`` (the library cuts it into chunks of 10,000 rows) and ``dask``
(``da.from_array`` in chunks of ``--chunks`` rows).  Import the tree to measure first on
``PYTHONPATH`` (``git archive <commit> ooc_kernels | tar -x -C DIR``);
``--screen-margin`` sets ``REFINE_SCREEN_MARGIN`` of a tree that has it (0.015, the
decision's margin, is the rule "always take the screened widths when they beat one width by
the decision's margin"):

    PYTHONPATH=before python benchmarks/dsg_screened_widths.py --problems f1 f2 f3 \\
        --seeds 0 1 2 3 --inputs numpy dask --out before.json

With ``--check-cost`` it times only what the check adds when the search's widths are not
taken (:func:`~ooc_kernels.families.dsg._ard_refine.check_widths` on 500 rows of 8, 32,
100 and 784 standard normal inputs whose target depends on inputs 0-3; CPU seconds, median
of 5, one BLAS thread): one width scored above everything (the screened widths scored, not
taken) and at its own leave-one-out score (taken, then checked forward).

With ``--catalog PATH --entry NAME`` it reads nothing but the decision of
``DSGClassifier(n_features=8192, max_iter=3, chunks_per_round=2, random_state=seed)`` (the
quickstart's settings) on that catalog entry, for every seed: the fit stops right after it.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np


def problem(name: str, n: int, seed: int):
    """``(X, y, X_test, y_test, regression)``."""
    from sklearn import datasets

    rows = n + 5000
    if name == "f1":
        X, y = datasets.make_friedman1(rows, noise=0.5, random_state=seed)
    elif name == "f2":
        X, y = datasets.make_friedman2(rows, noise=0.5, random_state=seed)
    elif name == "f3":
        X, y = datasets.make_friedman3(rows, noise=0.05, random_state=seed)
    else:   # clf<d>_<k>
        d, k = map(int, name[3:].split("_"))
        X, y = datasets.make_classification(rows, n_features=d, n_informative=k,
                                            n_redundant=0, n_repeated=0, flip_y=0.01,
                                            random_state=seed)
    return X[:n], y[:n], X[n:], y[n:], name.startswith("f")


def _check_cost():
    import statistics

    from ooc_kernels._blas import single_threaded_blas
    from ooc_kernels.families.dsg._ard_refine import (_squared_distances, check_widths,
                                                      loo_fit)

    rng = np.random.default_rng(0)
    rows = []
    for d in (8, 32, 100, 784):
        Z = rng.normal(size=(500, d))
        t = np.sin(2 * Z[:, 0]) + Z[:, 1] ** 2 + Z[:, 2] + Z[:, 3] + 0.3 * rng.normal(size=500)
        T = ((t - t.mean()) / t.std())[:, None]
        w = np.ones(500)
        with single_threaded_blas():
            one = loo_fit(_squared_distances(Z), T, w, classification=False)[0]
            row = {"d": d, "one width": round(one, 3)}
            for label, one_score in (("not taken", 1.0), ("taken", one)):
                seconds = []
                for _ in range(5):
                    scores = {"one width": one_score, "per-input": 0.0}
                    start = time.process_time()
                    shape = check_widths(Z, T, w, None, scores, classification=False,
                                         margin=0.015)
                    seconds.append(time.process_time() - start)
                row[label] = {"cpu_seconds": round(statistics.median(seconds), 4),
                              "per_input": shape is not None,
                              "screened": round(scores.get("screened", float("nan")), 3)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


class _Decided(Exception):
    """Raised right after the per-input width decision: the fit goes no further."""


def _decisions(args, ok, dsg, seen):
    data = ok.open_dataset(args.catalog, args.entry)
    real = dsg.per_input_shape

    def decided(*a, **k):
        shape = real(*a, **k)
        seen["switched_off"] = None if shape is None else int((shape > 100).sum())
        raise _Decided

    dsg.per_input_shape = decided
    rows = []
    try:
        for seed in args.seeds:
            seen.clear()
            try:
                ok.DSGClassifier(n_features=8192, max_iter=3, chunks_per_round=2,
                                 random_state=seed, progress=False).fit(data)
            except _Decided:
                pass
            row = dict(entry=args.entry, seed=seed, **seen)
            print(json.dumps(row), flush=True)
            rows.append(row)
    finally:
        dsg.per_input_shape = real
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--problems", nargs="+", default=["f1", "f2", "f3"])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--inputs", nargs="+", default=["numpy", "dask"],
                   choices=["numpy", "dask"])
    p.add_argument("--chunks", type=int, default=2500, help="rows per Dask chunk")
    p.add_argument("--screen-margin", type=float, default=None)
    p.add_argument("--check-cost", action="store_true")
    p.add_argument("--catalog", help="decisions only, on this catalog's --entry")
    p.add_argument("--entry", default="digits_deformed")
    p.add_argument("--out")
    args = p.parse_args(argv)
    warnings.simplefilter("ignore")
    import dask.array as da
    from sklearn.metrics import r2_score

    import ooc_kernels as ok
    from _setup_watch import watch_setup
    from ooc_kernels.families.dsg import estimators as dsg

    seen = {}
    watch_setup(seen, digits=3)
    if args.screen_margin is not None:
        from ooc_kernels.families.dsg import _ard_refine

        _ard_refine.REFINE_SCREEN_MARGIN = args.screen_margin
    if args.check_cost:
        return _check_cost()
    if args.catalog:
        rows = _decisions(args, ok, dsg, seen)
        if args.out:
            with open(args.out, "w") as f:
                json.dump(rows, f, indent=1)
        return rows
    rows = []
    for name in args.problems:
        for seed in args.seeds:
            X, y, Xt, yt, regression = problem(name, args.n, seed)
            for kind in args.inputs:
                seen.clear()
                Xf, yf = (X, y) if kind == "numpy" else (
                    da.from_array(X, chunks=(args.chunks, -1)),
                    da.from_array(y, chunks=args.chunks))
                est = (ok.DSGRegressor if regression else ok.DSGClassifier)(
                    random_state=seed, progress=False)
                start = time.perf_counter()
                est.fit(Xf, yf)
                seconds = time.perf_counter() - start
                pred = np.asarray(est.predict(Xt))
                score = r2_score(yt, pred) if regression else float((pred == yt).mean())
                row = dict(problem=name, seed=seed, input=kind, n=args.n,
                           score=round(float(score), 4), fit_seconds=round(seconds, 2),
                           epochs=int(est.n_iter_),
                           per_input=bool(np.ndim(est.bandwidth_) == 1), **seen)
                print(json.dumps(row), flush=True)
                rows.append(row)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return rows


if __name__ == "__main__":
    main()
