"""The DSG classifier on scikit-learn's digits at fixed settings, for several first steps.

The setup's choice on digits (one common scale for the pixels, 0.5 times the median pairwise
distance, ``alpha = 0.1 / n``) is given by hand, so that no trial runs, and the first step
``eta0`` of ``learning_rate="optimal"`` is set to each ``--factors`` multiple of the stable
step (the fit's own ``eta0="auto"`` value divided by the small-data factor it applied).
Per fit: test accuracy, epochs to the default stopping rule, the last epoch's training loss
(progressive validation) and CPU seconds of ``fit``.  ``docs/defaults.md`` ("Small data")
quotes the table.

    python benchmarks/dsg_step_factors.py --seeds 3 --factors 1 16 64 256 \\
        --out benchmarks/results/dsg_step_factors.json
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.spatial.distance import pdist
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import ooc_kernels as ok
from ooc_kernels.families.dsg._schedule import small_data_step_factor


def digits_common_scale():
    """The 75/25 split (``random_state=0``), centred and divided by the root mean square of
    the pixels' standard deviations (the setup's common scale), and the median distance."""
    X, y = load_digits(return_X_y=True)
    X, Xt, y, yt = train_test_split(X, y, test_size=0.25, random_state=0)
    shift, scale = X.mean(axis=0), float(np.sqrt(np.mean(X.std(axis=0) ** 2)))
    X, Xt = (X - shift) / scale, (Xt - shift) / scale
    return X, y, Xt, yt, float(np.median(pdist(X)))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--factors", type=float, nargs="+", default=[1.0, 16.0, 64.0, 256.0])
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    warnings.simplefilter("ignore")
    X, y, Xt, yt, median = digits_common_scale()
    base = dict(standardize=False, bandwidth=0.5 * median, alpha=0.1 / len(X),
                progress=False, n_jobs=1, scheduler="sync")
    auto = small_data_step_factor(loss="softmax", n_rows=len(X), batch_size=256,
                                  learning_rate="optimal", eta0="auto")
    rows = []
    for seed in range(args.seeds):
        probe = ok.DSGClassifier(random_state=seed, max_iter=1, **base).fit(X, y)
        stable = probe.eta0_ / (1.0 + probe.t0_) / auto
        for factor in args.factors:
            cpu = time.process_time()
            clf = ok.DSGClassifier(random_state=seed, eta0=factor * stable, **base).fit(X, y)
            cpu = time.process_time() - cpu
            row = {"seed": seed, "factor": factor, "stable_step": stable,
                   "accuracy": float(clf.score(Xt, yt)), "epochs": int(clf.n_iter_),
                   "final_loss": float(clf.history_[-1]["loss"]), "cpu_seconds": cpu}
            rows.append(row)
            print(json.dumps(row), flush=True)
            if args.out:
                args.out.write_text(json.dumps({"rows": rows}, indent=1))
    return rows


if __name__ == "__main__":
    main()
