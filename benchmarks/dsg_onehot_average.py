"""The averaged iterate against the last one on one-hot (categorical) inputs, and digits.

The one-hot problem (:func:`onehot_rows`): 8 categorical inputs of 3 to 12 levels, one-hot
encoded (52 columns), and 2 Gaussian noise columns; the label is the sign of per-level
effects, two pairwise interactions and logistic noise.  ``--n`` training rows, 5,000 test
rows.  Digits: scikit-learn's, 75/25 split (``random_state=0``).

For each seed: ``SVC()`` and ``DSGClassifier(random_state=seed)`` with ``average`` False
(the default on these sizes: the last iterate), True (Polyak-Ruppert from the first step),
and ``k * n`` for ``k`` in ``--from-epochs`` (suffix averaging from the step at which ``k``
epochs of rows have been seen), test accuracy, fit seconds and epochs; with ``--curve``
also the test accuracy after each of the first 20 epochs (``tol=None``, ``warm_start``)
of the last and the averaged iterate (from the first step).

    python benchmarks/dsg_onehot_average.py --seeds 0 1 2 --n 3000 10000
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC

import ooc_kernels as ok

LEVELS = (3, 4, 5, 6, 8, 10, 12, 4)


def onehot_rows(n: int, seed: int):
    """``(X, y)``: ``n`` rows of the one-hot problem (module docstring); the effects are
    fixed, the rows and the noise drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, k, size=n) for k in LEVELS], axis=1)
    effects = np.random.default_rng(1234)
    main = [effects.normal(size=k) for k in LEVELS]
    first = effects.normal(size=(LEVELS[0], LEVELS[1])) * 1.5
    second = effects.normal(size=(LEVELS[4], LEVELS[5])) * 1.5
    s = sum(e[codes[:, j]] for j, e in enumerate(main)) + first[codes[:, 0], codes[:, 1]] \
        + second[codes[:, 4], codes[:, 5]]
    y = (s - np.median(s) + rng.logistic(size=n) * 0.7 > 0).astype(int)
    X = np.concatenate([np.eye(k)[codes[:, j]] for j, k in enumerate(LEVELS)]
                       + [rng.normal(size=(n, 2))], axis=1)
    return X, y


def problems(seed, sizes):
    for n in sizes:
        X, y = onehot_rows(n + 5000, seed)
        yield f"onehot{n}", X[:n], y[:n], X[n:], y[n:]
    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0)
    yield "digits", Xtr, ytr, Xte, yte


def timed(est, Xtr, ytr, Xte, yte):
    start = time.perf_counter()
    est.fit(Xtr, ytr)
    return round(est.score(Xte, yte), 4), round(time.perf_counter() - start, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--n", type=int, nargs="+", default=[3000, 10000])
    parser.add_argument("--from-epochs", type=int, nargs="*", default=[4, 8])
    parser.add_argument("--curve", action="store_true")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    for seed in args.seeds:
        for name, Xtr, ytr, Xte, yte in problems(seed, args.n):
            acc, sec = timed(SVC(), Xtr, ytr, Xte, yte)
            print(json.dumps(dict(seed=seed, problem=name, learner="SVC()", acc=acc,
                                  s=sec)), flush=True)
            averages = [False, True] + [k * len(ytr) for k in args.from_epochs]
            for average in averages:
                est = ok.DSGClassifier(random_state=seed, average=average)
                acc, sec = timed(est, Xtr, ytr, Xte, yte)
                label = average if isinstance(average, bool) else \
                    f"from epoch {average // len(ytr)}"
                print(json.dumps(dict(seed=seed, problem=name, learner=f"average={label}",
                                      acc=acc, s=sec, epochs=int(est.n_iter_))), flush=True)
            if args.curve:
                for average in (False, True):
                    est = ok.DSGClassifier(random_state=seed, average=average, tol=None,
                                           warm_start=True, max_iter=1)
                    curve = []
                    for _ in range(20):
                        est.fit(Xtr, ytr)
                        curve.append(round(est.score(Xte, yte), 4))
                    print(json.dumps(dict(seed=seed, problem=name, curve=curve,
                                          average=average)), flush=True)


if __name__ == "__main__":
    main()
