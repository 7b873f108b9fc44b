"""DSGOneClassSVM against SGDOneClassSVM on Nystroem features on scikit-learn's bundled data.

Two novelty problems a user might bring, in memory:

* ``digits``: each of the 10 digit classes in turn is the inlier class; half of its images
  (drawn by the seed) are the training rows, the other half and every image of the other
  nine classes the test rows (the score of a seed is the mean ROC AUC over the 10 classes);
* ``breast_cancer``: half of the benign tumours train; the other half and the malignant
  ones test.

Problems the defaults were not tuned on (``PROBLEMS``), the same way: ``breast_cancer_malignant``
(the malignant tumours are the inliers), ``digits_0_4`` (the digits 0-4, then 5-9, as one
inlier class of five clusters), ``wine`` and ``iris`` (each class in turn; wine's features
range from 0.1 to 1,000), and ``wine_traits`` / ``breast_cancer_traits`` (``_traits``: the
columns rescaled by 1e-3 to 1e4, a log-normal column, a constant and a duplicated column
and a 5-column one-hot block of noise; the constant column is kept for every method).
``--peers`` adds the detectors a user would pick: ``"OneClassSVM scale"`` (``StandardScaler``
+ ``OneClassSVM(nu, gamma="scale")``), ``IsolationForest`` and ``LocalOutlierFactor``
(``StandardScaler`` + ``LocalOutlierFactor(novelty=True)``), at scikit-learn's defaults.

Every model uses the same Gaussian kernel on rows standardized with the training rows'
moments: the bandwidth ``DSGOneClassSVM`` derives (``bandwidth="median"``, seed 0 of each
training set; the peer and the exact machine take ``gamma = 1 / (2 sigma^2)``).

* ``dsg``: ``DSGOneClassSVM(nu)`` with ``--dsg-settings`` (keyword arguments written as
  Python, ``""`` the defaults, which stop on ``tol``);
* ``peer``: ``StandardScaler`` + ``Nystroem(min(256, rows))`` + ``SGDOneClassSVM(nu)`` with
  scikit-learn's defaults (``fit``, which stops on its ``tol``);
* ``exact``: scikit-learn's ``OneClassSVM(nu, gamma)`` (libsvm);
* ``exact on D rbf features`` (``--rff-features D ...``): libsvm's linear one-class SVM on
  ``D`` of the library's ``rbf`` random features of the same kernel (feature seed: the
  seed), the exact solution on the random features DSG approximates the kernel with.

Every method runs once per seed in turn; reported are the medians over ``--repeats``
seeds of the ROC AUC and of the process's CPU seconds of ``fit`` (summed over the 10
classes for ``digits``)::

    python benchmarks/dsg_one_class_real.py --repeats 7
    python benchmarks/dsg_one_class_real.py --problems digits --repeats 3 \
        --dsg-settings "batch_size=4" --rff-features 4096 16384 \
        --json benchmarks/results/dsg_one_class_real_rff.json
    python benchmarks/dsg_one_class_real.py --problems breast_cancer_malignant digits_0_4 \
        wine iris wine_traits breast_cancer_traits --repeats 3 --nu 0.5 --peers peer exact \
        "OneClassSVM scale" IsolationForest LocalOutlierFactor \
        --json benchmarks/results/dsg_one_class_untuned_nu0.5.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.ensemble import IsolationForest
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import SGDOneClassSVM
from sklearn.metrics import roc_auc_score
from sklearn.neighbors import LocalOutlierFactor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.svm import OneClassSVM

import ooc_kernels as ok
from ooc_kernels.features.blocks import rff_map


#: The problems: ``name -> (load, inlier classes)``; each inlier class in turn trains.
PROBLEMS = {
    "digits": (load_digits, [[c] for c in range(10)]),
    "breast_cancer": (load_breast_cancer, [[1]]),                  # benign
    # not tuned on: other splits and other sets
    "breast_cancer_malignant": (load_breast_cancer, [[0]]),
    "digits_0_4": (load_digits, [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]),  # two halves in turn
    "wine": (load_wine, [[0], [1], [2]]),                          # features from 0.1 to 1,000
    "iris": (load_iris, [[0], [1], [2]]),
    "wine_traits": (lambda **kw: _traits(load_wine(**kw)), [[0], [1], [2]]),
    "breast_cancer_traits": (lambda **kw: _traits(load_breast_cancer(**kw)), [[1], [0]]),
}


def _traits(data):
    """``(X, y)`` with traits of raw tables added: every column rescaled by a power of 10
    from 1e-3 to 1e4, the first column heavy-tailed (``exp`` of its z-score, a log-normal), a
    constant column, a copy of the last column, and a one-hot block of 5 random categories
    (no information)."""
    X, y = data
    rng = np.random.default_rng(12345)
    z = (X[:, 0] - X[:, 0].mean()) / X[:, 0].std()
    X = X * 10.0 ** rng.integers(-3, 5, X.shape[1])
    X[:, 0] = np.exp(2 * z)
    onehot = np.eye(5)[rng.integers(0, 5, len(X))]
    return np.c_[X, np.full(len(X), 7.0), X[:, -1], onehot], y


def tasks(problem, seed):
    """``(train, test, truth)`` of each inlier class of ``problem`` (truth: 1 = inlier)."""
    rng = np.random.default_rng(seed)
    load, groups = PROBLEMS[problem]
    X, y = load(return_X_y=True)
    for c in groups:
        inl = rng.permutation(np.flatnonzero(np.isin(y, c)))
        half = len(inl) // 2
        test = np.r_[inl[half:], np.flatnonzero(~np.isin(y, c))]
        yield X[inl[:half]], X[test], np.isin(y[test], c).astype(int)


def _fit_scores(make, train, test):
    cpu = time.process_time()
    model = make().fit(train)
    cpu = time.process_time() - cpu
    return model.decision_function(test), cpu


def _constant_columns(train):
    """Columns with one value on the training rows (digits' border pixels): no method can
    use them, and the DSG standardization refuses them, so every method drops them."""
    return np.ptp(train, axis=0) > 0


def _rff(D, seed, sigma):
    ids = np.arange(D // 256)

    def transform(X):
        return rff_map(X, seed, ids, sigma, 256, np.float64) / np.sqrt(len(ids))
    return FunctionTransformer(transform)


def run_seed(problem, seed, nu, settings, components, rff=(), peers=("peer", "exact")):
    out = {}
    for train, test, truth in tasks(problem, seed):
        if not problem.endswith("_traits"):   # the traits' constant column stays in
            keep = _constant_columns(train)
            train, test = train[:, keep], test[:, keep]
        sigma = ok.DSGOneClassSVM(nu=nu, max_iter=1, tol=None, random_state=0,
                                  scheduler="sync", progress=False).fit(train).bandwidth_
        gamma = 0.5 / sigma ** 2
        makers = {f"dsg {s}".strip(): (lambda s=s: ok.DSGOneClassSVM(
            nu=nu, random_state=seed, scheduler="sync", progress=False,
            **eval(f"dict({s})"))) for s in settings}  # noqa: S307 (the command line's)
        every = {
            "peer": lambda: make_pipeline(
                StandardScaler(), Nystroem(gamma=gamma, n_components=min(components, len(train)),
                                           random_state=seed),
                SGDOneClassSVM(nu=nu, random_state=seed)),
            "exact": lambda: make_pipeline(StandardScaler(), OneClassSVM(nu=nu, gamma=gamma)),
            "OneClassSVM scale": lambda: make_pipeline(StandardScaler(),
                                                       OneClassSVM(nu=nu, gamma="scale")),
            "IsolationForest": lambda: IsolationForest(random_state=seed),
            "LocalOutlierFactor": lambda: make_pipeline(
                StandardScaler(), LocalOutlierFactor(novelty=True)),
        }
        makers.update({k: every[k] for k in peers})
        for D in rff:
            makers[f"exact on {D} rbf features"] = lambda D=D: make_pipeline(
                StandardScaler(), _rff(D, seed, sigma), OneClassSVM(nu=nu, kernel="linear"))
        for name, make in makers.items():
            dec, cpu = _fit_scores(make, train, test)
            row = out.setdefault(name, {"auc": [], "cpu": 0.0})
            row["auc"].append(float(roc_auc_score(truth, dec)))
            row["cpu"] += cpu
    return {k: {"auc": float(np.mean(v["auc"])), "cpu": v["cpu"], "per_class": v["auc"]}
            for k, v in out.items()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--problems", nargs="+", default=["digits", "breast_cancer"],
                   choices=list(PROBLEMS))
    p.add_argument("--peers", nargs="*", default=["peer", "exact"],
                   choices=["peer", "exact", "OneClassSVM scale", "IsolationForest",
                            "LocalOutlierFactor"])
    p.add_argument("--nu", type=float, default=0.1)
    p.add_argument("--dsg-settings", nargs="+", default=[""])
    p.add_argument("--components", type=int, default=256)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--rff-features", type=int, nargs="*", default=[],
                   help="sizes D of the libsvm fits on D random features (multiples of 256)")
    p.add_argument("--json", default="benchmarks/results/dsg_one_class_real.json")
    args = p.parse_args(argv)
    summary = {}
    for problem in args.problems:
        runs = {}
        for seed in range(args.repeats):
            for name, row in run_seed(problem, seed, args.nu, args.dsg_settings,
                                      args.components, args.rff_features,
                                      args.peers).items():
                runs.setdefault(name, []).append(row)
        summary[problem] = {}
        for name, rows in runs.items():
            aucs = [r["auc"] for r in rows]
            summary[problem][name] = {
                "auc": float(np.median(aucs)), "auc_min": min(aucs), "auc_max": max(aucs),
                "cpu": float(np.median([r["cpu"] for r in rows])), "runs": rows}
            print(f"{problem} {name}: AUC {np.median(aucs):.4f} ({min(aucs):.4f} to "
                  f"{max(aucs):.4f}), CPU {summary[problem][name]['cpu']:.3f} s", flush=True)
    summary["setup"] = vars(args)
    Path(args.json).write_text(json.dumps(summary, indent=1))
    print(f"wrote {args.json}")
    return summary


if __name__ == "__main__":
    main(sys.argv[1:])
