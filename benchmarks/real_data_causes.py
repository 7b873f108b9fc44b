"""The causes of the gaps in ``benchmarks/real_data_classifiers.py``, measured
(``docs/defaults.md``, "Real data: where the defaults trail").

Three parts, each on the problems and splits of that benchmark (seed ``s``: the split, the
draw and ``random_state``), ``DSGClassifier`` with one thread and the synchronous scheduler:

* ``exact``: the exact kernel logistic regression (multinomial, the Gaussian kernel of the
  fit's ``bandwidth_`` on the standardized training rows, ``alpha_`` times 1, 1/10 and
  1/100, every training row, scipy's L-BFGS to its default tolerance) on ``many_classes``
  seed 2 and ``wine`` seed 0: test accuracy, log loss and the median top probability,
  beside the fit's own;
* ``alpha``: the default against ``alpha = 0.1 / n`` given, on wine, iris, breast cancer,
  anes96 and many classes, seeds 0 to 2: accuracy and log loss per seed;
* ``coding``: the default on ``heavy_tails`` after scikit-learn's
  ``QuantileTransformer(n_quantiles=200, output_distribution="normal")`` and on
  ``categorical`` with its three integer-coded inputs one-hot (``OneHotEncoder``), both
  fitted on the training rows, against the raw inputs, seeds 0 to 2.

    OMP_NUM_THREADS=1 python benchmarks/real_data_causes.py --part exact alpha coding
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_data_classifiers import problem  # noqa: E402


def _dsg(seed, **params):
    import ooc_kernels as ok

    return ok.DSGClassifier(random_state=seed, scheduler="sync", progress=False, n_jobs=1,
                            **params)


def exact_kernel_logistic(X, y, Xt, bandwidth, alpha):
    """Class probabilities on ``Xt`` of the multinomial kernel logistic regression
    minimizing ``mean loss + alpha / 2 ||f||^2`` (standardized inputs, Gaussian kernel of
    width ``bandwidth``), by L-BFGS on the coefficients of every training row."""
    from scipy.optimize import minimize
    from scipy.special import logsumexp
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(X)
    X, Xt = scaler.transform(X), scaler.transform(Xt)
    n, k = len(y), int(y.max()) + 1

    def gram(A, B):
        return np.exp(-((A[:, None] - B[None]) ** 2).sum(-1) / (2 * bandwidth ** 2))

    G, Y = gram(X, X), np.eye(k)[y]

    def objective(a):
        A = a.reshape(n, k)
        F = G @ A
        lse = logsumexp(F, axis=1)
        value = (lse - F[np.arange(n), y]).mean() + alpha / 2 * np.sum(A * F)
        P = np.exp(F - lse[:, None])
        return value, (G @ (P - Y) / n + alpha * F).ravel()

    a = minimize(objective, np.zeros(n * k), jac=True, method="L-BFGS-B",
                 options={"maxiter": 2000}).x
    F = gram(Xt, X) @ a.reshape(n, k)
    return np.exp(F - logsumexp(F, axis=1)[:, None])


def part_exact():
    from sklearn.metrics import log_loss

    for name, seed in (("many_classes", 2), ("wine", 0)):
        X, Xt, y, yt = problem(name, seed)
        fit = _dsg(seed).fit(X, y)
        yi, yti = np.searchsorted(fit.classes_, y), np.searchsorted(fit.classes_, yt)
        P = fit.predict_proba(Xt)
        print(name, seed, "fit", _row(P, yti, log_loss), "alpha_", fit.alpha_,
              "bandwidth_", fit.bandwidth_, flush=True)
        for factor in (1.0, 0.1, 0.01):
            P = exact_kernel_logistic(X, yi, Xt, float(fit.bandwidth_), fit.alpha_ * factor)
            print(name, seed, f"exact alpha_ x {factor}", _row(P, yti, log_loss), flush=True)


def _row(P, yt, log_loss):
    return {"accuracy": round(float(np.mean(P.argmax(1) == yt)), 4),
            "log_loss": round(float(log_loss(yt, P, labels=range(P.shape[1]))), 4),
            "median_top": round(float(np.median(P.max(1))), 4)}


def part_alpha():
    from sklearn.metrics import log_loss

    for name in ("wine", "iris", "breast_cancer", "anes96", "many_classes"):
        for factor in (None, 0.1):
            rows = []
            for seed in range(3):
                X, Xt, y, yt = problem(name, seed)
                fit = _dsg(seed, **({} if factor is None else {"alpha": factor / len(y)}))
                fit.fit(X, y)
                rows.append((round(fit.score(Xt, yt), 3),
                             round(log_loss(yt, fit.predict_proba(Xt), labels=fit.classes_),
                                   3)))
            print(name, "default" if factor is None else "alpha=0.1/n",
                  "accuracy", [r[0] for r in rows], "log loss", [r[1] for r in rows],
                  flush=True)


def part_coding():
    from sklearn.preprocessing import OneHotEncoder, QuantileTransformer

    def quantiles(X, Xt):
        t = QuantileTransformer(n_quantiles=200, output_distribution="normal").fit(X)
        return t.transform(X), t.transform(Xt)

    def one_hot(X, Xt):
        e = OneHotEncoder(handle_unknown="ignore", sparse_output=False).fit(X[:, :3])
        return (np.hstack([e.transform(X[:, :3]), X[:, 3:]]),
                np.hstack([e.transform(Xt[:, :3]), Xt[:, 3:]]))

    for name, coding in (("heavy_tails", quantiles), ("categorical", one_hot)):
        for label, f in (("raw", None), (coding.__name__, coding)):
            scores = []
            for seed in range(3):
                X, Xt, y, yt = problem(name, seed)
                if f is not None:
                    X, Xt = f(X, Xt)
                scores.append(round(_dsg(seed).fit(X, y).score(Xt, yt), 3))
            print(name, label, scores, "median", float(np.median(scores)), flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--part", nargs="+", default=["exact", "alpha", "coding"],
                   choices=["exact", "alpha", "coding"])
    args = p.parse_args(argv)
    warnings.simplefilter("ignore")
    for part in args.part:
        globals()["part_" + part]()


if __name__ == "__main__":
    main()
