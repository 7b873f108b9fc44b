"""ProjectedKernelRidge's defaults against other settings and exact kernel ridge regression.

On each problem (20,000 training rows, 10,000 held out unless ``--n`` says otherwise):
``ProjectedKernelRidge(alpha=1.0)`` (standardized inputs and targets, Taylor basis,
degree ``"auto"``, ``bandwidth="auto"``; every variant here fixes ``alpha = 1``, the
setting of the figures in ``docs/benchmarks.md``), the median bandwidth, Taylor
degrees 2, 3 and 4, the raw inputs and targets with the median bandwidth (centred, and not:
``standardize=False``), the Nystrom basis of 1000 drawn rows, and scikit-learn's exact
``KernelRidge`` with the default's kernel and ``alpha`` on a uniform subsample of 5000
training rows, standardized as the default standardizes them.  Held-out R^2 (regression)
or accuracy of ``sign`` (classification), and
fit seconds, medians of ``--repeats`` runs.

Problems: the casp and cod-rna stand-ins of ``pkawv_common`` (d = 9 regression, d = 8
classification in [-1, 1]), scikit-learn's ``make_friedman1`` (d = 10, inputs in [0, 1]:
away from the origin) and a 5-D sine on Gaussian inputs of standard deviation 3.

    python pkawv_batch_defaults.py --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
from pkawv_common import STAND_INS, load

import ooc_kernels as ok

HERE = Path(__file__).resolve().parent


def problems(n: int):
    from sklearn.datasets import make_friedman1

    out = {}
    for name in ("casp", "cod-rna"):
        X, y = load(STAND_INS[name], n)
        out[name] = (X, y, STAND_INS[name].task)
    X, y = make_friedman1(n_samples=n, noise=1.0, random_state=0)
    out["friedman1"] = (X, y, "regression")
    rng = np.random.default_rng(1)
    X = 3 * rng.normal(size=(n, 5))
    out["sine5"] = (X, np.sin(X[:, 0] / 2) * np.cos(X[:, 1] / 3) + 0.1 * X[:, 2]
                    + 0.2 * rng.normal(size=n), "regression")
    return out


def score(task, pred, y):
    if task == "classification":
        return float(np.mean(np.where(pred > 0, 1, -1) == y))
    return float(1 - np.mean((pred - y) ** 2) / np.var(y))


VARIANTS = {
    "default (taylor, degree auto)": {},
    "bandwidth=median": {"bandwidth": "median"},
    "taylor M=2": {"degree": 2},
    "taylor M=3": {"degree": 3},
    "taylor M=4": {"degree": 4},
    "raw, median": {"standardize": False, "bandwidth": "median"},
    "raw, median, center=False": {"standardize": False, "bandwidth": "median",
                                  "center": False},
    "nystrom-fixed 1000": {"basis": "nystrom-fixed"},
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=30_000)
    parser.add_argument("--test", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(HERE / "results" / "pkawv_batch_defaults.json"))
    args = parser.parse_args(argv)
    from sklearn.kernel_ridge import KernelRidge

    res = {}
    for pname, (X, y, task) in problems(args.n).items():
        Xtr, ytr, Xte, yte = X[:-args.test], y[:-args.test], X[-args.test:], y[-args.test:]
        row = {}
        for vname, params in VARIANTS.items():
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                model = ok.ProjectedKernelRidge(**{"alpha": 1.0, **params}, random_state=0,
                                                scheduler="threads",
                                                progress=False).fit(Xtr, ytr)
                times.append(time.perf_counter() - start)
            row[vname] = {"score": score(task, model.predict(Xte), yte),
                          "seconds": statistics.median(times),
                          "n_components": model.n_components_,
                          "degree": model.degree_,
                          "bandwidth": model.bandwidth_}
            if not params:
                default = model
        sigma = row["default (taylor, degree auto)"]["bandwidth"]
        sub = np.random.default_rng(0).choice(len(Xtr), size=min(5000, len(Xtr)),
                                              replace=False)
        mx, sx = default.x_shift_, default.x_scale_    # the default's standardization
        my, sy = default.y_shift_, default.y_scale_
        start = time.perf_counter()
        krr = KernelRidge(alpha=1.0, kernel="rbf", gamma=1 / (2 * sigma ** 2)).fit(
            (Xtr[sub] - mx) / sx, (ytr[sub] - my) / sy)
        pred = krr.predict((Xte - mx) / sx) * sy + my
        row["exact KRR, 5000 rows"] = {"score": score(task, pred, yte),
                                       "seconds": time.perf_counter() - start}
        res[pname] = row
        print(pname, json.dumps(row, indent=1), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"n": args.n, "test": args.test,
                                          "repeats": args.repeats, "results": res},
                                         indent=1))


if __name__ == "__main__":
    main()
