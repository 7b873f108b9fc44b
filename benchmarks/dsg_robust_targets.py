"""DSGRegressor's robust losses (huber, epsilon-insensitive, quantile) at their defaults on
targets with outliers, against scikit-learn's HuberRegressor, SVR and Ridge.

``y = sin(x_1) + x_2^2 / 2 + x_3 + e`` on 5 standard normal inputs, 2,000 training and
2,000 test rows, with the noise ``e``: ``clean`` 0.3 N(0, 1); ``t2`` 0.3 t(2);
``cauchy`` 0.3 Cauchy; ``gross`` 0.3 N(0, 1) plus +-1,000 on 1% of the rows.  The score
is the R^2 of the predictions against the clean function on the test rows.  DSG runs at
``random_state`` 0, 1 and 2 (median score and seconds reported); the peers once (they are
deterministic), on standardized inputs (a pipeline with ``StandardScaler``).

Run it on another checkout with ``PYTHONPATH=/path/to/checkout``: the library it imports is
printed first.

    python benchmarks/dsg_robust_targets.py --out benchmarks/results/dsg_robust_targets.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time

import numpy as np
from sklearn.linear_model import HuberRegressor, Ridge
from sklearn.metrics import r2_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVR

import ooc_kernels as ok

NOISES = ("clean", "t2", "cauchy", "gross")
LOSSES = ("squared", "huber", "epsilon_insensitive", "quantile")


def problem(noise: str, n: int = 4000, seed: int = 9):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    f = np.sin(X[:, 0]) + X[:, 1] ** 2 / 2 + X[:, 2]
    if noise == "t2":
        e = 0.3 * rng.standard_t(2, size=n)
    elif noise == "cauchy":
        e = 0.3 * rng.standard_cauchy(size=n)
    else:
        e = 0.3 * rng.normal(size=n)
        if noise == "gross":
            bad = rng.choice(n, n // 100, replace=False)
            e[bad] += rng.choice([-1.0, 1.0], len(bad)) * 1000.0
    return X, f, f + e


def timed(make, X, y, Xt, ft):
    start = time.perf_counter()
    model = make().fit(X, y)
    seconds = time.perf_counter() - start
    return float(r2_score(ft, model.predict(Xt))), seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=ok.__path__[0]).stdout.strip()
    print("library:", ok.__path__[0], commit, flush=True)
    rows = []
    peers = {"HuberRegressor": lambda: make_pipeline(StandardScaler(), HuberRegressor()),
             "SVR": lambda: make_pipeline(StandardScaler(), SVR()),
             "Ridge": lambda: make_pipeline(StandardScaler(), Ridge())}
    for noise in NOISES:
        X, f, y = problem(noise)
        h = len(y) // 2
        for loss in LOSSES:
            runs = [timed(lambda: ok.DSGRegressor(loss=loss, random_state=s),
                          X[:h], y[:h], X[h:], f[h:]) for s in range(args.seeds)]
            rows.append({"noise": noise, "model": f"DSGRegressor(loss={loss!r})",
                         "scores": [r[0] for r in runs], "seconds": [r[1] for r in runs],
                         "score": statistics.median(r[0] for r in runs),
                         "median_seconds": statistics.median(r[1] for r in runs)})
            print(json.dumps({k: rows[-1][k] for k in ("noise", "model", "score",
                                                        "median_seconds")}), flush=True)
        for name, make in peers.items():
            score, seconds = timed(make, X[:h], y[:h], X[h:], f[h:])
            rows.append({"noise": noise, "model": name, "score": score,
                         "median_seconds": seconds})
            print(json.dumps(rows[-1]), flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"library": ok.__path__[0], "commit": commit, "rows": rows}, fh,
                      indent=1)


if __name__ == "__main__":
    main()
