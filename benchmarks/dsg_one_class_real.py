"""DSGOneClassSVM against SGDOneClassSVM on Nystroem features on scikit-learn's bundled data.

Two novelty problems a user might bring, in memory:

* ``digits``: each of the 10 digit classes in turn is the inlier class; half of its images
  (drawn by the seed) are the training rows, the other half and every image of the other
  nine classes the test rows (the score of a seed is the mean ROC AUC over the 10 classes);
* ``breast_cancer``: half of the benign tumours train; the other half and the malignant
  ones test.

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
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import SGDOneClassSVM
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.svm import OneClassSVM

import ooc_kernels as ok
from ooc_kernels.features.blocks import rff_map


def tasks(problem, seed):
    """``(train, test, truth)`` of each inlier class of ``problem`` (truth: 1 = inlier)."""
    rng = np.random.default_rng(seed)
    if problem == "digits":
        X, y = load_digits(return_X_y=True)
        classes = range(10)
    else:
        X, y = load_breast_cancer(return_X_y=True)
        classes = [1]                                # benign
    for c in classes:
        inl = rng.permutation(np.flatnonzero(y == c))
        half = len(inl) // 2
        test = np.r_[inl[half:], np.flatnonzero(y != c)]
        yield X[inl[:half]], X[test], (y[test] == c).astype(int)


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


def run_seed(problem, seed, nu, settings, components, rff=()):
    out = {}
    for train, test, truth in tasks(problem, seed):
        keep = _constant_columns(train)
        train, test = train[:, keep], test[:, keep]
        sigma = ok.DSGOneClassSVM(nu=nu, max_iter=1, tol=None, random_state=0,
                                  scheduler="sync", progress=False).fit(train).bandwidth_
        gamma = 0.5 / sigma ** 2
        makers = {f"dsg {s}".strip(): (lambda s=s: ok.DSGOneClassSVM(
            nu=nu, random_state=seed, scheduler="sync", progress=False,
            **eval(f"dict({s})"))) for s in settings}  # noqa: S307 (the command line's)
        makers["peer"] = lambda: make_pipeline(
            StandardScaler(), Nystroem(gamma=gamma, n_components=min(components, len(train)),
                                       random_state=seed),
            SGDOneClassSVM(nu=nu, random_state=seed))
        makers["exact"] = lambda: make_pipeline(StandardScaler(),
                                                OneClassSVM(nu=nu, gamma=gamma))
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
                   choices=["digits", "breast_cancer"])
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
                                      args.components, args.rff_features).items():
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
