"""Every registered regressor at its defaults on real data shipped inside packages and on
synthetic data with the traits of real data, against the peers a user would pick: held-out
R^2 and fit seconds, medians over seeds (a new split, or a new draw, per seed).

Our regressors (each default-constructed but for ``random_state`` and ``progress``):
``DSGRegressor`` with each of its losses (``squared``, ``huber``, ``epsilon_insensitive``,
``quantile``), ``ProjectedKernelRidge``, ``OnlineKernelRidge``,
``DSGGaussianProcessRegressor`` and ``DSPDCRegressor``; the list is checked against the
estimator registry, so a regressor registered later and left out here stops the script.

Peers (inputs ``StandardScaler``'d): ``Ridge()``, ``RidgeCV()``, ``SVR()`` (targets
standardized too, on at most 5,000 training rows), ``KernelRidge (CV)`` (the 3-fold search
of ``benchmarks/dsg_regression_peers.py``, on at most 1,000 rows),
``HistGradientBoostingRegressor()`` (raw inputs) and ``KNeighborsRegressor()``.

Real data (no download: shipped with scikit-learn or statsmodels, ``pip install
ooc_kernels[bench]``): scikit-learn's ``diabetes`` (442 rows) and ``linnerud`` (20 rows,
target ``Weight`` from the three exercises); statsmodels' ``fair`` (6,366 rows, hours of
affairs: zero-inflated, skewed), ``randhie`` (20,190 rows, doctor visits, an integer count;
8,000 drawn per seed), ``grunfeld`` (220 rows, investment from value, capital, year and a
one-hot firm), ``engel`` (235 rows, food expenditure from income), ``star98`` (303 rows,
the share of students above the national median from 20 school inputs), ``macrodata``
(203 rows, real consumption, about 7,000 with spread 2,000, from 11 macroeconomic series),
``longley`` (16 rows, total employment about 65,000) and ``statecrime`` (51 rows, violent
crime rate). Real sets are split 75/25.

Synthetic traits (2,000 training rows, 2,000 test rows, 8 standard normal inputs,
``f = sin(x_1) + x_2^2 / 2 + x_3 x_4 + x_5 / 2`` plus 0.3 N(0, 1) noise unless said):
``offset_1e6`` (``y = 1e6 + 1e3 (f + e)``), ``tiny_1e-6`` (``y = 1e-6 (f + e)``),
``counts`` (Poisson counts of mean ``exp(f / 2)``), ``skewed`` (``y = exp(f + e)``),
``scales`` (input ``j`` multiplied by ``10^(-4 + 8 j / 7)``), ``heavy_tailed`` (inputs
Student's t with 2 degrees of freedom, ``f = sin(x_1) + log(1 + x_2^2) + x_3 / 2``),
``dup_const`` (the inputs, then copies of the first four, then three constant columns of
0, 1 and 1e6) and ``onehot`` (3 normal inputs plus one-hot blocks of 5, 10 and 20
categories with a N(0, 1) effect each). Test targets are the noisy ones.

Fit seconds are wall clock on whatever machine runs the script; run it on a quiet machine
(or compare the ratios of one run).  Run from the repository root::

    python benchmarks/real_data_regressors.py --seeds 3 --out benchmarks/results/real_data_regressors.json
    python benchmarks/real_data_regressors.py --problems diabetes,fair --models DSGRegressor()
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import warnings

import numpy as np
from sklearn.compose import TransformedTargetRegressor
from sklearn.datasets import load_diabetes, load_linnerud
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.linear_model import Ridge, RidgeCV
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVR

import ooc_kernels as ok
from dsg_regression_peers import krr_cv, timed
from ooc_kernels.estimators._registry import ESTIMATORS

REAL = ("diabetes", "linnerud", "fair", "randhie", "grunfeld", "engel", "star98",
        "macrodata", "longley", "statecrime")
SYNTHETIC = ("offset_1e6", "tiny_1e-6", "counts", "skewed", "scales", "heavy_tailed",
             "dup_const", "onehot")
PROBLEMS = REAL + SYNTHETIC


def _statsmodels(name):
    import statsmodels.api as sm

    data = getattr(sm.datasets, name).load_pandas().data
    if name == "fair":
        return data.drop(columns="affairs").to_numpy(float), data["affairs"].to_numpy(float)
    if name == "randhie":
        return data.drop(columns="mdvis").to_numpy(float), data["mdvis"].to_numpy(float)
    if name == "grunfeld":
        firms = sorted(data["firm"].unique())
        onehot = (data["firm"].to_numpy()[:, None] == np.array(firms)[None, :]).astype(float)
        X = np.column_stack([data[["value", "capital", "year"]].to_numpy(float), onehot])
        return X, data["invest"].to_numpy(float)
    if name == "engel":
        return data[["income"]].to_numpy(float), data["foodexp"].to_numpy(float)
    if name == "star98":
        y = data["NABOVE"] / (data["NABOVE"] + data["NBELOW"])
        return data.drop(columns=["NABOVE", "NBELOW"]).to_numpy(float), y.to_numpy(float)
    if name == "macrodata":
        X = data.drop(columns=["year", "quarter", "realcons"]).to_numpy(float)
        return X, data["realcons"].to_numpy(float)
    if name == "longley":
        return data.drop(columns="TOTEMP").to_numpy(float), data["TOTEMP"].to_numpy(float)
    if name == "statecrime":
        return data.drop(columns="violent").to_numpy(float), data["violent"].to_numpy(float)
    raise KeyError(name)


def _synthetic(name, seed, n=2000):
    rng = np.random.default_rng(seed)
    m = 2 * n
    X = rng.normal(size=(m, 8))
    f = np.sin(X[:, 0]) + X[:, 1] ** 2 / 2 + X[:, 2] * X[:, 3] + X[:, 4] / 2
    e = 0.3 * rng.normal(size=m)
    y = f + e
    if name == "offset_1e6":
        y = 1e6 + 1e3 * y
    elif name == "tiny_1e-6":
        y = 1e-6 * y
    elif name == "counts":
        y = rng.poisson(np.exp(f / 2)).astype(float)
    elif name == "skewed":
        y = np.exp(y)
    elif name == "scales":
        X = X * 10.0 ** np.linspace(-4.0, 4.0, 8)
    elif name == "heavy_tailed":
        X = rng.standard_t(2.0, size=(m, 8))
        y = np.sin(X[:, 0]) + np.log1p(X[:, 1] ** 2) + X[:, 2] / 2 + e
    elif name == "dup_const":
        const = np.broadcast_to([0.0, 1.0, 1e6], (m, 3))
        X = np.column_stack([X, X[:, :4], const])
    elif name == "onehot":
        blocks, y = [X[:, :3]], np.sin(X[:, 0]) + X[:, 1] ** 2 / 2 + X[:, 2] / 2 + e
        for k in (5, 10, 20):
            cat = rng.integers(0, k, size=m)
            y = y + rng.normal(size=k)[cat]
            blocks.append(np.eye(k)[cat])
        X = np.column_stack(blocks)
    else:
        raise KeyError(name)
    return X[:n], y[:n], X[n:], y[n:]


def problem(name: str, seed: int):
    """Training inputs and targets, test inputs and targets."""
    if name in SYNTHETIC:
        return _synthetic(name, seed)
    if name == "diabetes":
        X, y = load_diabetes(return_X_y=True)
    elif name == "linnerud":
        X, Y = load_linnerud(return_X_y=True)
        X, y = X.astype(float), Y[:, 0].astype(float)
    else:
        X, y = _statsmodels(name)
    if name == "randhie":
        rows = np.random.default_rng(seed).choice(len(y), 8000, replace=False)
        X, y = X[rows], y[rows]
    X, Xt, y, yt = train_test_split(X, y, test_size=0.25, random_state=seed)
    return X, y, Xt, yt


def ours(seed):
    """Our regressors at their defaults (``random_state`` and ``progress`` aside)."""
    kw = {"random_state": seed, "progress": False}
    return {
        "DSGRegressor()": lambda: ok.DSGRegressor(**kw),
        "DSG huber": lambda: ok.DSGRegressor(loss="huber", **kw),
        "DSG epsilon_insensitive": lambda: ok.DSGRegressor(loss="epsilon_insensitive", **kw),
        "DSG quantile": lambda: ok.DSGRegressor(loss="quantile", **kw),
        "ProjectedKernelRidge()": lambda: ok.ProjectedKernelRidge(**kw),
        "OnlineKernelRidge()": lambda: ok.OnlineKernelRidge(**kw),
        "DSGGaussianProcess()": lambda: ok.DSGGaussianProcessRegressor(**kw),
        "DSPDCRegressor()": lambda: ok.DSPDCRegressor(**kw),
    }


def _scaled(model, target=False):
    pipe = make_pipeline(StandardScaler(), model)
    return TransformedTargetRegressor(pipe, transformer=StandardScaler()) if target else pipe


PEERS = {"Ridge()": (lambda: _scaled(Ridge()), None),
         "RidgeCV()": (lambda: _scaled(RidgeCV()), None),
         "SVR()": (lambda: _scaled(SVR(), target=True), 5000),
         "KernelRidge (CV)": (krr_cv, 1000),
         "HistGradientBoosting": (lambda: HistGradientBoostingRegressor(), None),
         "kNN": (lambda: _scaled(KNeighborsRegressor()), None)}


def check_registry():
    """Stop when a registered regressor is missing from :func:`ours`."""
    from sklearn.base import is_regressor

    covered = {type(make()).__name__ for make in ours(0).values()}
    missing = [name for name in ESTIMATORS.names()
               if is_regressor(ESTIMATORS.get(name)()) and name not in covered]
    if missing:
        raise SystemExit(f"registered regressors not benchmarked: {missing}; add them to ours()")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--problems", default=",".join(PROBLEMS))
    parser.add_argument("--models", default=None, help="comma-separated labels (default: all)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    check_registry()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=ok.__path__[0]).stdout.strip()
    print("library:", ok.__path__[0], commit, flush=True)
    X, y, _, _ = _synthetic("counts", 0, n=500)
    for make in ours(0).values():  # compile the kernels before any timing
        make().fit(X, y)
    chosen = None if args.models is None else args.models.split(",")
    rows = []
    for name in args.problems.split(","):
        labels = list(ours(0)) + list(PEERS)
        for label in labels:
            if chosen is not None and label not in chosen:
                continue
            runs = []
            for seed in range(args.seeds):
                X, y, Xt, yt = problem(name, seed)
                if label in PEERS:
                    make, limit = PEERS[label]
                    if limit is not None and len(y) > limit:
                        break
                else:
                    make = ours(seed)[label]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        score, seconds, _ = timed(make(), X, y, Xt, yt)
                    except Exception as exc:  # a failure is a result here
                        print(f"{name:13s} {label:24s} FAILED {type(exc).__name__}: {exc}",
                              flush=True)
                        score, seconds = float("nan"), float("nan")
                runs.append({"score": score, "seconds": seconds})
            if not runs:
                continue
            row = {"problem": name, "model": label, "n_train": len(y), "runs": runs,
                   "median_score": statistics.median(r["score"] for r in runs),
                   "median_seconds": statistics.median(r["seconds"] for r in runs)}
            rows.append(row)
            print(f"{name:13s} {label:24s} R2 {row['median_score']:9.4f}  s "
                  f"{row['median_seconds']:6.2f}   ("
                  + " ".join(f"{r['score']:.3f}" for r in runs) + ")", flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"commit": commit, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
