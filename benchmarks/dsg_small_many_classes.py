"""``DSGClassifier()`` at its defaults on small data with many classes, and on the other
small-data problems, before and after a change.

Fits ``DSGClassifier(random_state=seed)`` / ``DSGRegressor(random_state=seed)`` (nothing
else set but one thread and the synchronous scheduler) of a baseline copy of the package
(``--baseline``, e.g. ``git archive <commit> ooc_kernels | tar -x -C DIR``) and of the
current one (``--current``), one child process per version and problem (single-threaded:
``OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=NUMBA_NUM_THREADS=1``), the versions alternating
problem by problem.  Reported per seed: the test score (accuracy; R^2 for the
regressors), ``alpha_`` times the training rows, and CPU seconds of ``fit``
(``time.process_time()``).  Peers at their defaults on the same split: ``SVC()`` and
``LogisticRegression()`` (classifiers), ``SVR()`` (regressors), on the same inputs as the
default (standardized where the problem says so).

Problems (``seed`` 0, 1, 2 draws the data where the problem is generated; the fixed data
sets keep their split and vary the fit's seed):

* ``many50``, ``many100``: :func:`many_classes`, 50 and 100 classes, 10 training and 10
  test rows per class, 10 inputs (8 informative, 1 cluster per class,
  ``class_sep=2.0``), standardized on the training rows;
* ``blobs40``: :func:`blobs`, 40 overlapping Gaussian classes (``make_blobs``, 10 inputs,
  ``cluster_std=4``), 10 training and 10 test rows per class, standardized: many classes
  where less shrinkage than ``alpha = 1 / n`` loses;
* ``digits`` (1,347 training rows: above 1,000, not on the small-data path),
  ``breast_cancer`` (426), ``wine`` (133): 75/25 split, ``random_state=0``, raw inputs
  (as ``benchmarks/dsg_small_data.py``); ``iris``: 70/30 split (105 training rows, 45
  test rows), ``random_state=0``;
* ``moons``: ``make_moons(300, noise=0.3, random_state=seed)``, 2,000 test rows of seed
  ``seed + 1000``;
* ``mc100``: ``make_classification(5500, n_features=100, n_informative=25,
  n_redundant=0, random_state=2)``, rows 0-499 train, 500-1,499 test
  (``tests/test_dsg_stopping.py``; the same data on every seed);
* the defaults suite's small cells (``benchmarks/defaults.py``'s generators, training
  seed ``seed``, 4,000 test rows of seed ``seed + 100``): ``nb10_100``, ``nb10_300``,
  ``nb10_1000`` (``nonlinear_binary``, 10 inputs, 100 / 300 / 1,000 rows), ``nb100_1000``
  (100 inputs), ``deformed_1000`` (``digits_deformed``), ``signal_1000``
  (``signal_classes``), and the regressors ``krr2d_1000`` (``synthetic_krr_2d``) and
  ``diabetes`` (70/30, ``random_state=0``).

    git archive HEAD ooc_kernels | tar -x -C /tmp/old
    python benchmarks/dsg_small_many_classes.py --baseline /tmp/old --seeds 3 \\
        --out benchmarks/results/dsg_small_many_classes.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
PROBLEMS = ("many50", "many100", "blobs40", "digits", "breast_cancer", "wine", "iris", "moons", "mc100",
            "nb10_100", "nb10_300", "nb10_1000", "nb100_1000", "deformed_1000", "signal_1000",
            "krr2d_1000", "diabetes")
REGRESSION = ("krr2d_1000", "diabetes")


def many_classes(n_classes: int, seed: int, rows_per_class: int = 10):
    """``make_classification`` with ``n_classes`` classes, ``rows_per_class`` training and
    as many test rows per class (stratified), 10 inputs (8 informative, none redundant, 1
    cluster per class, ``class_sep=2.0``), standardized with the training rows' mean and
    standard deviation: ``(X, y, Xt, yt)``."""
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = make_classification(n_samples=2 * rows_per_class * n_classes, n_features=10,
                               n_informative=8, n_redundant=0, n_classes=n_classes,
                               n_clusters_per_class=1, class_sep=2.0, flip_y=0.0,
                               random_state=seed)
    X, Xt, y, yt = train_test_split(X, y, test_size=0.5, stratify=y, random_state=seed)
    scaler = StandardScaler().fit(X)
    return scaler.transform(X), y, scaler.transform(Xt), yt


def blobs(n_classes: int, seed: int, rows_per_class: int = 10):
    """``make_blobs`` with ``n_classes`` centres, 10 inputs, ``cluster_std=4``, split and
    standardized as :func:`many_classes`: ``(X, y, Xt, yt)``."""
    from sklearn.datasets import make_blobs
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = make_blobs(2 * rows_per_class * n_classes, centers=n_classes, n_features=10,
                      cluster_std=4.0, random_state=seed)
    X, Xt, y, yt = train_test_split(X, y, test_size=0.5, stratify=y, random_state=seed)
    scaler = StandardScaler().fit(X)
    return scaler.transform(X), y, scaler.transform(Xt), yt


def problem(name: str, seed: int):
    """``(X, y, Xt, yt)`` of a problem (module docstring)."""
    import numpy as np
    from sklearn import datasets
    from sklearn.model_selection import train_test_split

    if name.startswith("many"):
        return many_classes(int(name[4:]), seed)
    if name.startswith("blobs"):
        return blobs(int(name[5:]), seed)
    if name in ("digits", "breast_cancer", "wine", "iris", "diabetes"):
        X, y = getattr(datasets, "load_" + name)(return_X_y=True)
        size = 0.3 if name in ("iris", "diabetes") else 0.25
        X, Xt, y, yt = train_test_split(X, y, test_size=size, random_state=0)
        return X, y, Xt, yt
    if name == "moons":
        X, y = datasets.make_moons(300, noise=0.3, random_state=seed)
        Xt, yt = datasets.make_moons(2000, noise=0.3, random_state=seed + 1000)
        return X, y, Xt, yt
    if name == "mc100":
        X, y = datasets.make_classification(5500, n_features=100, n_informative=25,
                                            n_redundant=0, random_state=2)
        return X[:500], y[:500], X[500:1500], y[500:1500]
    sys.path.insert(0, str(HERE))
    from defaults import _generated, signal_classes

    base, n = name.rsplit("_", 1)
    n = int(n)
    if base == "signal":
        X, y = signal_classes(n, seed)
        Xt, yt = signal_classes(4000, seed + 100)
        return X, y, Xt, yt
    generator, params = {"nb10": ("nonlinear_binary", {"n_features": 10}),
                         "nb100": ("nonlinear_binary", {"n_features": 100}),
                         "deformed": ("digits_deformed", {}),
                         "krr2d": ("synthetic_krr_2d", {})}[base]
    X, y = _generated(generator, n, seed, **params)
    Xt, yt = _generated(generator, 4000, seed + 100, "test", **params)
    return np.asarray(X), np.asarray(y), np.asarray(Xt), np.asarray(yt)


CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, {here!r})
import ooc_kernels as ok
from dsg_small_many_classes import problem, REGRESSION
name, seeds = {args!r}
out = []
for seed in seeds:
    X, y, Xt, yt = problem(name, seed)
    kind = ok.DSGRegressor if name in REGRESSION else ok.DSGClassifier
    model = kind(random_state=seed, progress=False, n_jobs=1, scheduler="sync")
    cpu = time.process_time()
    model.fit(X, y)
    cpu = time.process_time() - cpu
    out.append({{"seed": seed, "score": float(model.score(Xt, yt)), "cpu_seconds": cpu,
                 "alpha_n": float(model.alpha_) * len(X), "epochs": int(model.n_iter_),
                 "module": ok.__file__}})
print("RESULT", json.dumps(out))
"""


def fits(tree: Path, name: str, seeds) -> list:
    """The default fits of ``name`` for ``seeds`` with the package under ``tree``, in one
    single-threaded child process."""
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", NUMBA_NUM_THREADS="1", MKL_NUM_THREADS="1",
               OOC_KERNELS_PROGRESS="0")
    code = CHILD.format(here=str(HERE), args=(name, list(seeds)))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True, cwd=tempfile.gettempdir())
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def peers(name: str, seeds) -> dict:
    """The peers' test scores per seed at their defaults."""
    import warnings

    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import SVC, SVR

    warnings.simplefilter("ignore")
    out = {}
    for seed in seeds:
        X, y, Xt, yt = problem(name, seed)
        models = {"SVR": SVR()} if name in REGRESSION else \
            {"SVC": SVC(), "LogisticRegression": LogisticRegression(max_iter=5000)}
        for key, model in models.items():
            out.setdefault(key, []).append(float(model.fit(X, y).score(Xt, yt)))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--baseline", type=Path, required=True)
    p.add_argument("--current", type=Path, default=ROOT)
    p.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=PROBLEMS)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    seeds = list(range(args.seeds))
    results = {}
    for name in args.problems:
        row = {"before": fits(args.baseline, name, seeds),
               "after": fits(args.current, name, seeds), "peers": peers(name, seeds)}
        results[name] = row
        fmt = lambda runs: " ".join(f"{r['score']:.3f}" for r in runs)  # noqa: E731
        cpu = lambda runs: statistics.median(r["cpu_seconds"] for r in runs)  # noqa: E731
        print(f"{name:14s} before {fmt(row['before'])} ({cpu(row['before']):.1f} s, alpha n "
              f"{[round(r['alpha_n'], 2) for r in row['before']]})  after {fmt(row['after'])} "
              f"({cpu(row['after']):.1f} s, alpha n {[round(r['alpha_n'], 2) for r in row['after']]})  "
              + "  ".join(f"{k} " + " ".join(f"{v:.3f}" for v in vs)
                          for k, vs in row["peers"].items()), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
