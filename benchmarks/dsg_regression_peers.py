"""DSGRegressor's defaults on 400 to 8,000-row regressions against the peers a user would
pick, in wall-clock seconds: ``SVR()``, ``HistGradientBoostingRegressor()`` and an exact
``KernelRidge`` (RBF) tuned by 3-fold cross-validation over ``alpha`` and ``gamma`` (the
tuned ceiling), each on ``StandardScaler``'d inputs (KernelRidge also on standardized
targets: it has no intercept).

Problems (training rows; the test rows are as many again, 25% of diabetes):
``friedman1`` (2,000, ``make_friedman1(noise=1)``), ``friedman1_8k`` (8,000),
``friedman2`` (2,000, ``noise=125``), ``friedman3`` (2,000, ``noise=0.1``), ``diabetes``
(331 of ``load_diabetes``'s 442), ``gross`` (2,000: ``sin(x_1) + x_2^2 / 2 + x_3`` on 5
standard normal inputs, noise 0.3 N(0, 1), 1% of the targets off by +-1,000; scored against
the clean function; DSG with ``loss="huber"``, the loss a user picks for outliers).
Each problem is drawn again (split again for diabetes) per seed; DSG runs with that
``random_state``.  Scores are test R^2 (noisy targets, clean function for ``gross``).

Run on another checkout with ``PYTHONPATH=/path/to/checkout``; the library it imports is
printed first.

    python benchmarks/dsg_regression_peers.py --seeds 3 --out benchmarks/results/dsg_regression_peers.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time

import numpy as np
from sklearn.compose import TransformedTargetRegressor
from sklearn.datasets import load_diabetes, make_friedman1, make_friedman2, make_friedman3
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics import r2_score
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVR

import ooc_kernels as ok

PROBLEMS = ("friedman1", "friedman1_8k", "friedman2", "friedman3", "diabetes", "gross")


def problem(name: str, seed: int):
    """Training inputs and targets, test inputs and the test targets scored against."""
    if name == "diabetes":
        X, y = load_diabetes(return_X_y=True)
        X, Xt, y, yt = train_test_split(X, y, test_size=0.25, random_state=seed)
        return X, y, Xt, yt
    if name == "gross":
        n = 4000
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(n, 5))
        f = np.sin(X[:, 0]) + X[:, 1] ** 2 / 2 + X[:, 2]
        e = 0.3 * rng.normal(size=n)
        bad = rng.choice(n, n // 100, replace=False)
        e[bad] += rng.choice([-1.0, 1.0], len(bad)) * 1000.0
        h = n // 2
        return X[:h], (f + e)[:h], X[h:], f[h:]
    n = 16000 if name == "friedman1_8k" else 4000
    make, noise = {"friedman1": (make_friedman1, 1.0), "friedman1_8k": (make_friedman1, 1.0),
                   "friedman2": (make_friedman2, 125.0),
                   "friedman3": (make_friedman3, 0.1)}[name]
    X, y = make(n_samples=n, noise=noise, random_state=seed)
    h = n // 2
    return X[:h], y[:h], X[h:], y[h:]


def krr_cv():
    grid = {"kernelridge__alpha": [1e-3, 1e-2, 1e-1, 1.0],
            "kernelridge__gamma": [0.01, 0.03, 0.1, 0.3]}
    search = GridSearchCV(make_pipeline(StandardScaler(), KernelRidge(kernel="rbf")), grid,
                          cv=3)
    return TransformedTargetRegressor(search, transformer=StandardScaler())


PEERS = {"SVR()": lambda: make_pipeline(StandardScaler(), SVR()),
         "HistGradientBoosting": lambda: HistGradientBoostingRegressor(),
         "KernelRidge (CV)": krr_cv}


def timed(model, X, y, Xt, yt):
    start = time.perf_counter()
    model.fit(X, y)
    seconds = time.perf_counter() - start
    return float(r2_score(yt, model.predict(Xt))), seconds, model


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--problems", default=",".join(PROBLEMS))
    parser.add_argument("--dsg-only", action="store_true")
    parser.add_argument("--skip", default="", help="peers to skip, comma-separated")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=ok.__path__[0]).stdout.strip()
    print("library:", ok.__path__[0], commit, flush=True)
    ok.DSGRegressor(max_iter=1, progress=False).fit(*problem("friedman1", 0)[:2])  # compile
    rows = []
    for name in args.problems.split(","):
        models = {"DSGRegressor()": None}
        if not args.dsg_only:
            models.update({k: v for k, v in PEERS.items() if k not in args.skip.split(",")})
        for label in models:
            runs = []
            for seed in range(args.seeds):
                X, y, Xt, yt = problem(name, seed)
                if label == "DSGRegressor()":
                    loss = "huber" if name == "gross" else "squared"
                    model = ok.DSGRegressor(loss=loss, random_state=seed, progress=False)
                else:
                    model = models[label]()
                score, seconds, model = timed(model, X, y, Xt, yt)
                extra = {}
                if label == "DSGRegressor()":
                    extra = {"epochs": int(model.n_iter_), "alpha": float(model.alpha_),
                             "bandwidth": np.round(np.atleast_1d(model.bandwidth_), 3).tolist()}
                runs.append({"score": score, "seconds": seconds, **extra})
            row = {"problem": name, "model": label, "runs": runs,
                   "median_score": statistics.median(r["score"] for r in runs),
                   "median_seconds": statistics.median(r["seconds"] for r in runs)}
            rows.append(row)
            print(f"{name:13s} {label:22s} R2 " + " ".join(f"{r['score']:.4f}" for r in runs)
                  + f"  s {row['median_seconds']:.2f}"
                  + (f"  epochs {[r['epochs'] for r in runs]} alpha "
                     f"{[float('%.3g' % r['alpha']) for r in runs]}" if "epochs" in runs[0]
                     else ""), flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"commit": commit, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
