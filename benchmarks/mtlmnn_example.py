"""Multi-task LMNN by DSPDC on the ``multitask_classes`` generator (``docs/dspdc_blocks.md``).

The setting of the paper's Experiment 6.3 scaled down (ALOI is not available offline): the
tasks' data come from :func:`ooc_kernels.data.matrix_data.multitask_classes` (shared and
task-specific informative directions in large noise), 60% of each task's rows train and
40% test, ``n_neighbors = 3``, ``lambda0 = 0.01``, ``lambda_task = 0.1``.  Prints the held-out
accuracy of Euclidean 3-NN per task against 3-NN under the learned metrics ``X_j + X_0``, the
final relative duality gap, the iterations and the fit time.

    python benchmarks/mtlmnn_example.py
    python benchmarks/mtlmnn_example.py --tasks 8 --per-task 150 --d 16 --classes 4 \
        --tol 1e-4 --out benchmarks/results/mtlmnn_example.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from sklearn.neighbors import KNeighborsClassifier

import ooc_kernels as ok
from ooc_kernels.data.matrix_data import multitask_classes


def euclidean_knn_accuracy(X, y, task, test, k):
    """Held-out accuracy of Euclidean k-NN fitted per task on the training rows."""
    right = 0
    for j in np.unique(task):
        tr, te = (~test) & (task == j), test & (task == j)
        right += int(np.sum(KNeighborsClassifier(k).fit(X[tr], y[tr]).predict(X[te]) == y[te]))
    return right / int(test.sum())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=int, default=8)
    ap.add_argument("--per-task", type=int, default=150)
    ap.add_argument("--d", type=int, default=16)
    ap.add_argument("--classes", type=int, default=4)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--m", type=int, default=None)
    ap.add_argument("--q", type=int, default=None)
    ap.add_argument("--max-time", type=float, default=120.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="write the numbers as JSON")
    args = ap.parse_args(argv)

    X, y, task = multitask_classes(args.tasks, args.per_task, args.d, args.classes,
                                   seed=args.seed)
    test = np.random.default_rng(args.seed + 1).random(len(y)) < 0.4
    euclid = euclidean_knn_accuracy(X, y, task, test, 3)
    est = ok.MultiTaskLMNN(n_neighbors=3, lambda0=0.01, lambda_task=0.1, m=args.m, q=args.q,
                           tol=args.tol, max_time=args.max_time, random_state=args.seed)
    start = time.perf_counter()
    est.fit(X[~test], y[~test], task=task[~test])
    fit_s = time.perf_counter() - start
    learned = est.score(X[test], y[test], task=task[test])
    last = est.gap_history_[-1]
    out = {"tasks": args.tasks, "per_task": args.per_task, "d": args.d,
           "classes": args.classes, "train_rows": int((~test).sum()),
           "test_rows": int(test.sum()), "triplets": est.n_triplets_,
           "euclidean_knn_accuracy": euclid, "learned_knn_accuracy": learned,
           "final_gap": last["gap"], "final_relative_gap": last["relative_gap"],
           "primal": last["primal"], "iterations": est.n_iter_,
           "passes": last["passes"], "converged": bool(est.converged_), "fit_seconds": fit_s,
           "tol": args.tol}
    print(f"{args.tasks} tasks x {args.per_task} rows, d = {args.d}, {args.classes} classes "
          f"per task; {out['train_rows']} training rows, {est.n_triplets_} triplets")
    print(f"Euclidean 3-NN accuracy (held out): {euclid:.4f}")
    print(f"learned-metric 3-NN accuracy:       {learned:.4f}")
    print(f"final relative duality gap {last['relative_gap']:.3e} (tol {args.tol:g}, "
          f"converged {est.converged_}), primal {last['primal']:.6f}, {est.n_iter_} iterations "
          f"({last['passes']:.1f} passes over the triplets), fit {fit_s:.1f} s")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
