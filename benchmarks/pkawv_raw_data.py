"""The PKAWV estimators at their defaults on raw tabular data, against tuned peers.

Held-out R^2 of ``ProjectedKernelRidge(alpha=1.0)`` and ``OnlineKernelRidge()`` (defaults
but ``alpha = 1``, the setting of the figures in ``docs/benchmarks.md``; inputs and targets
as given) on the project's ``synthetic_krr_2d`` generator and scikit-learn's
``make_friedman1`` (noise 1), ``make_friedman2`` and ``make_friedman3`` (no noise), raw
and with 1e4 added to the targets (2,000 rows to train, 2,000 held out), and on
``load_diabetes`` and ``load_linnerud`` (its first target; 442 and 20 rows: 5-fold
cross-validated predictions).  Peers, on inputs and targets standardized on the training
rows: scikit-learn's exact ``KernelRidge`` (Gaussian kernel) with the width and ``alpha``
tuned by 3-fold grid search (widths 0.25 to 4, ``alpha`` 1e-3 to 1), and ``Nystroem``
(500 components, the median distance's width) followed by ``RidgeCV``.  Run it on an
earlier commit (``git worktree``) for the "before" columns.

    python pkawv_raw_data.py --out /tmp/pkawv_raw_data.json
    python pkawv_raw_data.py --only ProjectedKernelRidge OnlineKernelRidge
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

import ooc_kernels as ok

N_TRAIN = N_TEST = 2000


def problems():
    from sklearn.datasets import make_friedman1, make_friedman2, make_friedman3

    from ooc_kernels.data.generators import generate_chunk

    n = N_TRAIN + N_TEST
    c = generate_chunk("synthetic_krr_2d", 0, n, random_state=0)
    out = {"synthetic_krr_2d": (c["X"].astype(np.float64), c["y"].astype(np.float64))}
    out["friedman1"] = make_friedman1(n_samples=n, noise=1.0, random_state=0)
    out["friedman2"] = make_friedman2(n_samples=n, noise=0.0, random_state=0)
    out["friedman3"] = make_friedman3(n_samples=n, noise=0.0, random_state=0)
    for k in ("friedman1", "friedman2", "friedman3"):
        out[f"{k}, y + 1e4"] = (out[k][0], out[k][1] + 1e4)
    return out


def small_problems():
    from sklearn.datasets import load_diabetes, load_linnerud

    Xl, Yl = load_linnerud(return_X_y=True)
    return {"diabetes": load_diabetes(return_X_y=True),
            "linnerud": (Xl.astype(np.float64), Yl[:, 0].astype(np.float64))}


def r2(pred, y):
    return float(1 - np.mean((pred - y) ** 2) / np.var(y))


def _standardized(make):
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return lambda: TransformedTargetRegressor(make_pipeline(StandardScaler(), make()),
                                              transformer=StandardScaler())


def kernel_ridge_tuned():
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.model_selection import GridSearchCV

    grid = {"gamma": [1 / (2 * s ** 2) for s in (0.25, 0.5, 1.0, 2.0, 4.0)],
            "alpha": [1e-3, 1e-2, 1e-1, 1.0]}
    return GridSearchCV(KernelRidge(kernel="rbf"), grid, cv=3)


class NystroemRidgeCV(RegressorMixin, BaseEstimator):
    """``Nystroem`` (the median distance's width, at most 500 components) + ``RidgeCV``."""

    def fit(self, X, y):
        from sklearn.kernel_approximation import Nystroem
        from sklearn.linear_model import RidgeCV

        from ooc_kernels.features.bandwidth import median_heuristic

        sigma = float(median_heuristic(X[:2000], 1.0, random_state=0)) or 1.0
        self.map_ = Nystroem(gamma=1 / (2 * sigma ** 2), n_components=min(500, len(X)),
                             random_state=0).fit(X)
        self.ridge_ = RidgeCV(alphas=np.logspace(-4, 2, 13)).fit(self.map_.transform(X), y)
        return self

    def predict(self, X):
        return self.ridge_.predict(self.map_.transform(X))


MODELS = {
    "ProjectedKernelRidge": lambda: ok.ProjectedKernelRidge(alpha=1.0, random_state=0,
                                                            scheduler="sync",
                                                            progress=False),
    "OnlineKernelRidge": lambda: ok.OnlineKernelRidge(random_state=0, scheduler="sync",
                                                      progress=False),
    "KernelRidge, tuned": _standardized(kernel_ridge_tuned),
    "Nystroem + RidgeCV": _standardized(NystroemRidgeCV),
}


def evaluate(make) -> dict:
    from sklearn.model_selection import KFold

    res = {}
    for name, (X, y) in problems().items():
        model = make().fit(X[:N_TRAIN], y[:N_TRAIN])
        res[name] = r2(model.predict(X[N_TRAIN:]), y[N_TRAIN:])
    for name, (X, y) in small_problems().items():
        pred = np.empty_like(y)
        for tr, te in KFold(5, shuffle=True, random_state=0).split(X):
            pred[te] = make().fit(X[tr], y[tr]).predict(X[te])
        res[name] = r2(pred, y)
    return res


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    out = {}
    for label in args.only:
        start = time.perf_counter()
        out[label] = evaluate(MODELS[label])
        out[label]["seconds"] = time.perf_counter() - start
        print(label, json.dumps({k: round(v, 4) for k, v in out[label].items()}), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
