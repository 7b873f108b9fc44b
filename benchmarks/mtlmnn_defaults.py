"""``MultiTaskLMNN`` at its defaults against Euclidean k-NN on scikit-learn's datasets.

Per dataset and seed (a stratified 70 / 30 split, ``random_state=seed``), the held-out
accuracy and the fit time of

* ``knn``: ``KNeighborsClassifier(n_neighbors=3)`` (the LMNN's ``n_neighbors``) on the
  raw columns, and ``scaler+knn`` after ``StandardScaler``;
* ``lmnn``: ``MultiTaskLMNN(random_state=seed)`` at its defaults, and ``scaler+lmnn``
  after ``StandardScaler``;

with the LMNN fit's iterations, whether it met ``tol``, and its last duality gap (absolute
and relative to the primal value).  The datasets are iris, wine, breast cancer and digits
(one task) and ``two_task``: ``multitask_classes(2, 150, 10, 3)`` with the task of every
row passed as ``task=`` (k-NN fitted per task).  ``--tol`` fits the LMNN at several
tolerances instead of the default one (rows ``lmnn tol=...``), ``--standardize`` with
several ``standardize`` values (rows ``lmnn standardize=...``).  ``--checkout DIR`` measures
the library at ``DIR`` (another version; see ``_checkout.py``).

    cd benchmarks
    python mtlmnn_defaults.py --standardize True scalar --max-time 60 \
        --out results/mtlmnn_defaults_after.json
    python mtlmnn_defaults.py --table results/mtlmnn_defaults_after.json

The runs behind the table of ``docs/dspdc_blocks.md`` (and their commands) are listed
there.  Fit times are from a shared two-core machine: the iterations are the cost measure.
"""

from __future__ import annotations

import sys

from _checkout import use_checkout_of_argv

use_checkout_of_argv(sys.argv)

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from sklearn import datasets  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from _results import run_or_table  # noqa: E402

DATASETS = ("iris", "wine", "breast_cancer", "digits", "two_task")


def load(name):
    """``(X, y, task)`` of a dataset (``task`` None for one task)."""
    if name == "two_task":
        from ooc_kernels.data.matrix_data import multitask_classes

        return multitask_classes(2, 150, 10, 3, seed=0)
    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    return X, y, None


def knn_accuracy(Xtr, ytr, ttr, Xte, yte, tte, k):
    """Held-out accuracy of Euclidean k-NN (fitted per task when there are tasks)."""
    if ttr is None:
        return float(KNeighborsClassifier(k).fit(Xtr, ytr).score(Xte, yte))
    right = 0
    for j in np.unique(ttr):
        a, b = ttr == j, tte == j
        right += int(np.sum(KNeighborsClassifier(k).fit(Xtr[a], ytr[a]).predict(Xte[b])
                            == yte[b]))
    return right / len(yte)


def lmnn_row(ok, Xtr, ytr, ttr, Xte, yte, tte, seed, tol, standardize, max_time):
    """Accuracy, fit time and the stopping point of one ``MultiTaskLMNN`` fit."""
    params = {"random_state": seed}
    if tol is not None:
        params["tol"] = tol
    if standardize is not None:
        params["standardize"] = standardize
    if max_time is not None:
        params["max_time"] = max_time
    est = ok.MultiTaskLMNN(**params)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(Xtr, ytr, task=ttr)
    seconds = time.perf_counter() - start
    last = est.gap_history_[-1]
    return {"accuracy": float(est.score(Xte, yte, task=tte)), "fit_seconds": seconds,
            "n_iter": int(est.n_iter_), "converged": bool(est.converged_),
            "gap": float(last["gap"]), "primal": float(last["primal"]),
            "relative_gap": float(last["gap"] / abs(last["primal"])),
            "tol": float(est.tol)}


def run(args):
    import ooc_kernels as ok

    rows = []
    for name in args.datasets:
        X, y, task = load(name)
        strata = y if task is None else task * (y.max() + 1) + y
        for seed in args.seeds:
            idx = np.arange(len(y))
            tr, te = train_test_split(idx, test_size=0.3, stratify=strata, random_state=seed)
            ttr, tte = (None, None) if task is None else (task[tr], task[te])
            scaler = StandardScaler().fit(X[tr])
            views = {"": (X[tr], X[te]), "scaler+": (scaler.transform(X[tr]),
                                                    scaler.transform(X[te]))}
            for prefix, (A, B) in views.items():
                if (prefix or "raw") not in args.lmnn_views:
                    rows.append({"dataset": name, "seed": seed, "method": prefix + "knn",
                                 "accuracy": knn_accuracy(A, y[tr], ttr, B, y[te], tte, 3)})
                    continue
                rows.append({"dataset": name, "seed": seed, "method": prefix + "knn",
                             "accuracy": knn_accuracy(A, y[tr], ttr, B, y[te], tte, 3)})
                for tol in args.tol or [None]:
                    for std in args.standardize or [None]:
                        if prefix and std is not None and std is not True:
                            continue   # after StandardScaler: the default only
                        label = prefix + "lmnn" + ("" if tol is None else f" tol={tol:g}") \
                            + ("" if std is None else f" standardize={std}")
                        row = lmnn_row(ok, A, y[tr], ttr, B, y[te], tte, seed, tol, std,
                                       args.max_time)
                        rows.append({"dataset": name, "seed": seed, "method": label, **row})
                        print(name, seed, label, {k: float(f"{v:.4g}") if isinstance(
                            v, float) else v for k, v in row.items()}, flush=True)
    return {"datasets": list(args.datasets), "seeds": list(args.seeds),
            "max_time": args.max_time, "lmnn_views": args.lmnn_views, "tol": args.tol, "standardize": args.standardize, "checkout": args.checkout, "rows": rows}


def table(result):
    """Markdown table: per dataset and method, the accuracy (mean, min - max over the
    seeds), the median fit seconds and iterations, and the fits that met ``tol``."""
    out = ["| dataset | method | accuracy mean (min - max) | fit s (median) | iterations "
           "(median) | met tol |", "|---|---|---|---|---|---|"]
    keys = []
    for r in result["rows"]:
        if (r["dataset"], r["method"]) not in keys:
            keys.append((r["dataset"], r["method"]))
    for name, method in keys:
        rs = [r for r in result["rows"] if r["dataset"] == name and r["method"] == method]
        acc = [r["accuracy"] for r in rs]
        fit = (f"{np.median([r['fit_seconds'] for r in rs]):.2f}"
               if "fit_seconds" in rs[0] else "")
        its = f"{np.median([r['n_iter'] for r in rs]):,.0f}" if "n_iter" in rs[0] else ""
        met = f"{sum(r['converged'] for r in rs)}/{len(rs)}" if "converged" in rs[0] else ""
        out.append(f"| {name} | {method} | {np.mean(acc):.3f} ({min(acc):.3f} - "
                   f"{max(acc):.3f}) | {fit} | {its} | {met} |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--tol", nargs="+", type=float, default=None,
                    help="fit the LMNN at these tolerances (default: its default tol)")
    ap.add_argument("--standardize", nargs="+", default=None,
                    type=lambda v: {"True": True, "False": False}.get(v, v),
                    help="fit the LMNN with these standardize values (True, False, scalar; "
                         "default: its default)")
    ap.add_argument("--lmnn-views", nargs="+", default=["raw", "scaler+"],
                    choices=["raw", "scaler+"],
                    help="fit the LMNN on the raw columns, after StandardScaler, or both")
    ap.add_argument("--max-time", type=float, default=None,
                    help="seconds at most per LMNN fit (default: none)")
    ap.add_argument("--checkout", default=None, help="measure the library at this folder")
    ap.add_argument("--out", type=Path, default=None, help="write the result as JSON")
    ap.add_argument("--table", type=Path, default=None, help="print a saved result's table")
    run_or_table(ap.parse_args(argv), run, table)


if __name__ == "__main__":
    main()
