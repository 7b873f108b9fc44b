"""Defaults against a tuned ceiling and against scikit-learn, on several problems.

For every problem:

* ``default``: ``DSGClassifier()`` / ``DSGRegressor()`` with nothing set but ``random_state``
  and ``chunks_per_round=2`` (both cores);
* ``tuned``: the best test score over a grid (bandwidth = 0.25 ... 2 times the median
  pairwise distance of the standardized rows, ``alpha`` in 1e-6 and 1/n, first step
  ``eta0`` "auto" (the default's rule for that bandwidth) or a quarter of the default fit's
  first step), each fit with the default's number of epochs; a setting that diverges is
  recorded as such and cannot be the best.  Picked on the test set, so an optimistic ceiling;
* ``sklearn``: what a user of scikit-learn would write: ``StandardScaler`` then
  ``RBFSampler`` (same number of features, ``gamma = 1 / (2 median^2)``) then
  ``SGDClassifier(loss="log_loss")`` / ``SGDRegressor`` trained by ``partial_fit`` over
  batches of 10,000 rows for as long as the default fit took (equal time).

Scores: accuracy (classifiers), R^2 (regressors), on a test set of other rows.

    python benchmarks/defaults.py --n 200000 --out benchmarks/results/defaults.json
    python benchmarks/defaults.py --n 50000 --default-only --out /tmp/d.json   # defaults only
    python benchmarks/defaults.py --from-json benchmarks/results/defaults.json \
        --plot docs/img/defaults.svg                        # the plot of a saved run
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.spatial.distance import pdist
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine
from sklearn.kernel_approximation import RBFSampler
from sklearn.linear_model import SGDClassifier, SGDRegressor
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import ooc_kernels as ok
from ooc_kernels.exceptions import DivergenceError
from ooc_kernels.data.generators import iter_chunks

MULTIPLIERS = (0.25, 0.5, 1.0, 2.0)
ETA0_FACTORS = ("auto", 0.25)
ALPHAS = (1e-6, "1/n")


def _generated(name, n, seed, split="train", **params):
    parts = list(iter_chunks(name, n, chunk_size=10_000, random_state=seed, split=split,
                             **params))
    return (np.concatenate([p["X"] for p in parts]), np.concatenate([p["y"] for p in parts]))


def signal_classes(n, seed, d=40, k=10):
    """10 classes of noisy sums of 3 sines with random phases, sampled at ``d`` points."""
    rng_c = np.random.default_rng(12345)                  # the classes: fixed
    freqs = rng_c.uniform(0.5, 4.0, size=(k, 3))
    amps = rng_c.uniform(0.5, 1.0, size=(k, 3))
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    t = np.linspace(0, 1, d)[None, :]
    shift = rng.uniform(0, 1, size=(n, 1))
    X = sum(amps[y, j][:, None] * np.sin(2 * np.pi * (freqs[y, j][:, None] * (t + shift)))
            for j in range(3))
    X = X * rng.uniform(0.7, 1.3, size=(n, 1)) + 0.3 * rng.normal(size=(n, d))
    return X.astype(np.float32), y


def problems(n: int) -> dict:
    out = {}
    n_test = max(10_000, n // 10)
    Xtr, ytr = _generated("digits_deformed", n, 0)
    Xte, yte = _generated("digits_deformed", n_test, 1, "test")
    out["digits_deformed"] = ("clf", Xtr, ytr, Xte, yte)
    for d in (10, 100):
        Xtr, ytr = _generated("nonlinear_binary", n, 0, n_features=d)
        Xte, yte = _generated("nonlinear_binary", n_test, 1, "test", n_features=d)
        out[f"nonlinear_binary_d{d}"] = ("clf", Xtr, ytr, Xte, yte)
    Xtr, ytr = _generated("synthetic_krr_2d", n, 0)
    Xte, yte = _generated("synthetic_krr_2d", n_test, 1, "test")
    out["synthetic_krr_2d"] = ("reg", Xtr, ytr, Xte, yte)
    Xtr, ytr = signal_classes(n, 0)
    Xte, yte = signal_classes(n_test, 1)
    out["signal_classes"] = ("clf", Xtr, ytr, Xte, yte)
    for name, loader, kind in [("breast_cancer", load_breast_cancer, "clf"),
                               ("wine", load_wine, "clf"), ("diabetes", load_diabetes, "reg")]:
        X, y = loader(return_X_y=True)
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
        out[name] = (kind, Xtr, ytr, Xte, yte)
    return out


def _median(X) -> float:
    rng = np.random.default_rng(0)
    Z = StandardScaler().fit_transform(X[rng.choice(len(X), min(2000, len(X)), replace=False)])
    return float(np.median(pdist(Z)))


def _multiple(bandwidth, median):
    """The bandwidth in multiples of ``median``, for JSON: a number, or one per input when
    the fit chose per-input widths (``bandwidth_`` a vector)."""
    return (np.asarray(bandwidth, dtype=np.float64) / median).tolist()


def _fit(kind, X, y, Xte, yte, **params):
    Est = ok.DSGClassifier if kind == "clf" else ok.DSGRegressor
    t = time.perf_counter()
    est = Est(random_state=0, chunks_per_round=2, progress=False, **params).fit(X, y)
    return est, time.perf_counter() - t, float(est.score(Xte, yte))


def _sklearn(kind, X, y, Xte, yte, seconds, n_features, median):
    scaler = StandardScaler().fit(X[:10_000])
    rbf = RBFSampler(gamma=1.0 / (2 * median ** 2), n_components=n_features,
                     random_state=0).fit(scaler.transform(X[:10]))
    if kind == "clf":
        model, extra = SGDClassifier(loss="log_loss", random_state=0), {"classes": np.unique(y)}
    else:
        model, extra = SGDRegressor(random_state=0), {}
        y_mean, y_sd = y.mean(), y.std()
    start, epochs = time.perf_counter(), 0
    while True:
        for lo in range(0, len(X), 10_000):
            Z = rbf.transform(scaler.transform(X[lo:lo + 10_000]))
            target = y[lo:lo + 10_000] if kind == "clf" else (y[lo:lo + 10_000] - y_mean) / y_sd
            model.partial_fit(Z, target, **extra)
        epochs += 1
        if time.perf_counter() - start >= seconds:
            break
    Zte = rbf.transform(scaler.transform(Xte))
    if kind == "clf":
        return float(model.score(Zte, yte)), epochs
    pred = model.predict(Zte) * y_sd + y_mean
    return float(1 - np.sum((yte - pred) ** 2) / np.sum((yte - yte.mean()) ** 2)), epochs


def plot(results: list[dict], path: Path) -> None:
    """Bars per problem: default, tuned ceiling, scikit-learn at equal time (test score)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["problem"] for r in results]
    series = {"DSG default": [r["default"]["score"] for r in results],
              "tuned ceiling (grid, on test)": [r["tuned"]["score"] for r in results],
              "RBFSampler + SGD, equal time": [r["sklearn_equal_time"]["score"]
                                               for r in results]}
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(11, 3.8))
    for i, (label, values) in enumerate(series.items()):
        ax.bar(x + (i - 1) * 0.27, values, width=0.27, label=label)
    ax.set_xticks(x, names, rotation=20, ha="right")
    ax.set_ylabel("test accuracy / R^2")
    ax.set_ylim(0, 1.05)
    ax.legend(loc="lower left", fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000, help="rows of generated problems")
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--plot", type=Path, default=None, help="write the bar plot here")
    parser.add_argument("--default-only", action="store_true",
                        help="fit only the default estimator (no grid, no scikit-learn): a "
                             "quick check of a change to the defaults against a saved run")
    parser.add_argument("--from-json", type=Path, default=None,
                        help="plot the results of an earlier run instead of running")
    args = parser.parse_args(argv)
    if args.from_json is not None:
        plot(json.loads(args.from_json.read_text()), args.plot or Path("defaults.svg"))
        return
    warnings.simplefilter("ignore")
    results = []
    for name, (kind, X, y, Xte, yte) in problems(args.n).items():
        if args.only and name not in args.only:
            continue
        default, seconds, score = _fit(kind, X, y, Xte, yte)
        median = _median(X)
        if args.default_only:
            row = {"problem": name, "kind": kind, "n_train": len(X),
                   "default": {"score": score, "seconds": seconds,
                               "epochs": default.n_iter_,
                               "stop_reason": default.stop_reason_,
                               "bandwidth_multiple": _multiple(default.bandwidth_, median)}}
            print(json.dumps(row), flush=True)
            results.append(row)
            if args.out:
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps(results, indent=1) + "\n")
            continue
        grid = []
        first_step = default.eta0_ / default.t0_          # "optimal": gamma_0 = eta0_ / t0_
        for m in MULTIPLIERS:
            for a in ALPHAS:
                for f in ETA0_FACTORS:
                    alpha = 1.0 / len(X) if a == "1/n" else a
                    eta0 = "auto" if f == "auto" else f * first_step
                    try:
                        _, s, sc = _fit(kind, X, y, Xte, yte, bandwidth=m * median,
                                        alpha=alpha, eta0=eta0, max_iter=default.n_iter_,
                                        tol=None)
                    except DivergenceError:
                        s, sc = None, float("-inf")
                    grid.append({"multiplier": m, "alpha": a, "eta0_factor": f, "score": sc,
                                 "seconds": s})
        best = max(grid, key=lambda g: g["score"])
        for g in grid:
            if g["score"] == float("-inf"):
                g["score"] = "diverged"
        sk_score, sk_epochs = _sklearn(kind, X, y, Xte, yte, seconds, default.n_features,
                                       median)
        row = {"problem": name, "kind": kind, "n_train": len(X), "n_test": len(Xte),
               "n_features_in": X.shape[1],
               "default": {"score": score, "seconds": seconds, "epochs": default.n_iter_,
                           "stop_reason": default.stop_reason_,
                           "bandwidth_multiple": _multiple(default.bandwidth_, median),
                           "bandwidth_scores": default.bandwidth_scores_},
               "tuned": best, "sklearn_equal_time": {"score": sk_score, "epochs": sk_epochs},
               "grid": grid, "default_minus_tuned": score - best["score"],
               "default_minus_sklearn": score - sk_score}
        print(json.dumps(row), flush=True)
        results.append(row)
        if args.out:                                        # after every problem
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=1) + "\n")
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
