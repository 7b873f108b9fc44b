"""A rare class (1% or 0.1% positives): ``DSGClassifier()`` and ``class_weight="balanced"``
against ``SVC()`` and ``LogisticRegression()`` (both on standardized rows), with and
without ``class_weight="balanced"``, and ``HistGradientBoostingClassifier()``.

The problem: ``make_classification(n_samples=N, weights=[1 - share], flip_y=0,
class_sep=1.0, random_state=seed)`` (``--n``, default 20,000; ``--share``, default 0.01),
a stratified 75/25 split (``random_state=seed``).
Also ``DSGClassifier(bandwidth="median", median_multiplier=0.5, alpha=0.1 / n)``: half the
median distance and ``alpha / 10``.  Each learner's balanced accuracy, ROC AUC and average
precision (of ``decision_function``), accuracy, the positives it predicts on the test rows
and its fit seconds; for the default DSG fit also the set-up's leave-one-out scores
(``bandwidth_scores_``, ``setup_scores_``: balanced accuracies when the positives are
rare in the sample, ``docs/defaults.md``, "A rare class"), its width and ``alpha``, and
the positives predicted by the minimizer of the same objective (``twin``: scikit-learn's
``LogisticRegression(C=1 / (alpha n), fit_intercept=False)`` on 4,096 ``RBFSampler``
features of the rows standardized as the fit standardizes them, at the fit's width).

    python benchmarks/dsg_rare_class.py --seeds 0 1 2 3 4
    python benchmarks/dsg_rare_class.py --seeds 0 1 2 3 4 --share 0.001 --n 40000
    python benchmarks/dsg_rare_class.py --seeds 0 1 2 --n 80000 --default-only

A baseline copy of the package (``git archive <commit> ooc_kernels | tar -x -C DIR``)
runs with ``PYTHONPATH=DIR``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import make_classification
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.kernel_approximation import RBFSampler
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import (accuracy_score, average_precision_score,
                             balanced_accuracy_score, roc_auc_score)
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import ooc_kernels as ok


def learners(seed, n_rows):
    # a fixed narrower, less regularized setting: half the median distance (standardized
    # rows), alpha / 10
    yield "DSGClassifier(bandwidth=\"median\", median_multiplier=0.5, alpha=0.1 / n)", \
        ok.DSGClassifier(random_state=seed, bandwidth="median", median_multiplier=0.5,
                         alpha=0.1 / n_rows)
    for weight in (None, "balanced"):
        tag = "" if weight is None else " balanced"
        yield "DSGClassifier()" + tag, ok.DSGClassifier(random_state=seed, class_weight=weight)
        yield "SVC()" + tag, make_pipeline(StandardScaler(), SVC(class_weight=weight))
        yield "LogisticRegression()" + tag, make_pipeline(
            StandardScaler(), LogisticRegression(class_weight=weight))
    yield "HistGradientBoostingClassifier()", HistGradientBoostingClassifier(random_state=seed)


def twin_positives(est, Xtr, ytr, Xte) -> int:
    """Test positives of the exact minimizer of the default fit's objective (its width,
    ``alpha`` and standardization) on random Fourier features."""
    config = est._config
    shift, scale = np.asarray(config.x_shift), np.asarray(config.x_scale)
    rbf = RBFSampler(gamma=0.5 / config.bandwidth ** 2, n_components=4096, random_state=0)
    Ftr = rbf.fit_transform((Xtr - shift) / scale)
    lr = LogisticRegression(C=1.0 / (config.alpha * len(ytr)), fit_intercept=False,
                            max_iter=5000).fit(Ftr, ytr)
    return int(lr.predict(rbf.transform((Xte - shift) / scale)).sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--share", type=float, default=0.01, help="share of positives")
    parser.add_argument("--n", type=int, default=20000, help="rows (training and test)")
    parser.add_argument("--default-only", action="store_true",
                        help="only DSGClassifier(), without its twin (more than 50,000 "
                        "training rows: the set-up's trial fits)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    rows = {}
    for seed in args.seeds:
        X, y = make_classification(n_samples=args.n, weights=[1 - args.share], flip_y=0,
                                   class_sep=1.0, random_state=seed)
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=seed,
                                              stratify=y)
        for name, est in learners(seed, len(ytr)):
            if args.default_only and name != "DSGClassifier()":
                continue
            start = time.perf_counter()
            est.fit(Xtr, ytr)
            seconds = time.perf_counter() - start
            pred, dec = est.predict(Xte), est.decision_function(Xte)
            row = (balanced_accuracy_score(yte, pred), roc_auc_score(yte, dec),
                   accuracy_score(yte, pred), int(pred.sum()), seconds,
                   average_precision_score(yte, dec))
            rows.setdefault(name, []).append(row)
            extra = ""
            if name == "DSGClassifier()":
                extra = (f" widths {est.bandwidth_scores_} setup {est.setup_scores_}"
                         f" bandwidth {est.bandwidth_:.3g} alpha {est._config.alpha:.3g}"
                         f" epochs {est.n_iter_}")
                if not args.default_only:
                    extra += f" twin positives {twin_positives(est, Xtr, ytr, Xte)}"
            print(f"seed {seed} {name}: balanced acc {row[0]:.4f} AUC {row[1]:.4f} "
                  f"AP {row[5]:.4f} acc {row[2]:.4f} positives {row[3]}/{int(yte.sum())} "
                  f"{seconds:.1f} s{extra}", flush=True)
    print(f"\n| learner | balanced accuracy | ROC AUC | average precision | accuracy | "
          f"positives predicted (of {int(yte.sum())}) | fit s |\n|---|---|---|---|---|---|---|")
    for name, values in rows.items():
        v = np.array(values)
        med = np.median(v, axis=0)
        print(f"| {name} | {med[0]:.4f} | {med[1]:.4f} | {med[5]:.4f} | {med[2]:.4f} | "
              f"{', '.join(str(int(p)) for p in v[:, 3])} | {med[4]:.1f} |")


if __name__ == "__main__":
    main()
