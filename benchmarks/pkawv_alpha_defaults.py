"""``ProjectedKernelRidge`` at its defaults against scikit-learn's ``Ridge`` and a
Nystroem / ``KernelRidge`` peer, on a wide problem (more inputs than rows), Friedman #1 at
20,000 rows, ``load_diabetes``, ``synthetic_krr_2d`` and Friedman #3: held-out R^2 and fit
seconds, medians over seeds.

Usage::

    python benchmarks/pkawv_alpha_defaults.py --seeds 0 1 2 --out /tmp/alpha.json
    python benchmarks/pkawv_alpha_defaults.py --no-peers --params '{"alpha": 1.0}'

The peers (``--no-peers`` leaves them out): ``Ridge()`` (its defaults, standardized
inputs), ``KernelRidge(kernel="rbf")`` (defaults, standardized inputs) on the problems of
at most 5,000 training rows, and ``Nystroem(n_components=m) + RidgeCV`` (standardized
inputs; ``m`` = 200, about the fit time of ``ProjectedKernelRidge``, and 1000) on all.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from sklearn.datasets import load_diabetes, make_friedman1, make_friedman3
from sklearn.kernel_approximation import Nystroem
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import Ridge, RidgeCV
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import ooc_kernels as ok
from ooc_kernels.data.generators import generate_chunk


def wide(seed):
    """200 rows, 1,000 inputs, a dense linear target plus noise (sd 0.1); 1,000 held out."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(1200, 1000))
    y = X @ (rng.normal(size=1000) / np.sqrt(1000)) + 0.1 * rng.normal(size=1200)
    return X[:200], y[:200], X[200:], y[200:]


def friedman1(seed):
    X, y = make_friedman1(n_samples=25_000, noise=1.0, random_state=seed)
    return X[:20_000], y[:20_000], X[20_000:], y[20_000:]


def diabetes(seed):
    X, y = load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=seed)
    return Xtr, ytr, Xte, yte


def krr_2d(seed):
    c = generate_chunk("synthetic_krr_2d", 0, 6000, random_state=seed)
    X, y = np.asarray(c["X"], dtype=np.float64), np.asarray(c["y"], dtype=np.float64)
    return X[:4000], y[:4000], X[4000:], y[4000:]


def friedman3(seed):
    X, y = make_friedman3(n_samples=4000, noise=0.1, random_state=seed)
    return X[:2000], y[:2000], X[2000:], y[2000:]


PROBLEMS = {"wide 200 x 1000": wide, "friedman1 20k": friedman1, "diabetes": diabetes,
            "synthetic_krr_2d": krr_2d, "friedman3": friedman3}


def _timed(make, Xtr, ytr, Xte, yte):
    t = time.perf_counter()
    model = make().fit(Xtr, ytr)
    seconds = time.perf_counter() - t
    return float(model.score(Xte, yte)), seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--params", default="{}", help="ProjectedKernelRidge parameters (JSON)")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--out")
    args = parser.parse_args()
    params = json.loads(args.params)
    results = {}
    for name in args.problems:
        rows = {}
        for seed in args.seeds:
            Xtr, ytr, Xte, yte = PROBLEMS[name](seed)
            models = {"ProjectedKernelRidge": lambda: ok.ProjectedKernelRidge(
                random_state=seed, scheduler="sync", **params)}
            if not args.no_peers:
                models["Ridge"] = lambda: make_pipeline(StandardScaler(), Ridge())
                for m in (200, 1000):
                    models[f"Nystroem {m} + RidgeCV"] = lambda m=m: make_pipeline(
                        StandardScaler(), Nystroem(n_components=m, random_state=seed),
                        RidgeCV())
                if len(ytr) <= 5000:
                    models["KernelRidge rbf"] = lambda: make_pipeline(
                        StandardScaler(), KernelRidge(kernel="rbf"))
            for label, make in models.items():
                rows.setdefault(label, []).append(_timed(make, Xtr, ytr, Xte, yte))
        results[name] = {label: {"r2": float(np.median([r for r, _ in got])),
                                 "seconds": float(np.median([s for _, s in got])),
                                 "r2_each": [r for r, _ in got]}
                         for label, got in rows.items()}
        for label, v in results[name].items():
            print(f"{name:18s} {label:26s} R^2 {v['r2']:.3f} "
                  f"({', '.join(f'{r:.3f}' for r in v['r2_each'])})  {v['seconds']:.2f} s",
                  flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"params": params, "seeds": args.seeds, "results": results}, f,
                      indent=1)


if __name__ == "__main__":
    main()
