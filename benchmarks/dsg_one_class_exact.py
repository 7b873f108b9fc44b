"""Which one-class model is closer to the exact one-class SVM?  DSG, the peer, and libsvm.

The ``wide`` problem of ``benchmarks/dsg_one_class.py`` (inliers: four Gaussian blobs in
``--d`` dimensions written to a Zarr store; outliers: the same blobs ``--wide`` times
wider; 5,000 of each in the test set).  Every model uses the same Gaussian kernel: the
bandwidth ``DSGOneClassSVM`` derives with ``--median-multiplier`` (seed 0), on rows
standardized with the training rows' moments.

* ``exact m``: scikit-learn's ``OneClassSVM(nu, gamma=1 / (2 sigma^2))`` (libsvm, the exact
  solution) on ``m`` rows drawn from the store (``--exact-n``, one draw per seed);
* ``dsg``: ``DSGOneClassSVM(nu)`` on the store, one pass (``--dsg-settings`` adds keyword
  arguments written as Python; ``""`` is the defaults);
* ``peer``: ``Nystroem(256)`` fitted on 2,000 rows of the first chunk, standardized with
  that chunk's moments, then ``SGDOneClassSVM(nu)`` fed chunk by chunk (``--peer-epochs``
  passes; 0.5 reads half the chunks), as in ``benchmarks/dsg_one_class.py``.

For every seed (the store is the same; the seed draws the features, the row order and the
exact machine's subsample) every model runs in turn, and the script reports the ROC AUC of
each, its CPU seconds, and the Spearman rank correlation of its test-set decision function
with that of the largest exact machine of the same seed.  Medians over ``--repeats``
seeds; raw runs go to ``--json``::

    python benchmarks/dsg_one_class_exact.py --n 140000 --d 16 --chunk-size 10000 \\
        --exact-n 5000 20000 --repeats 7
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score
from sklearn.svm import OneClassSVM

import ooc_kernels as ok

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dsg_one_class as bench  # noqa: E402


def run_exact(ds, test, m, nu, sigma, seed):
    """libsvm's one-class SVM on ``m`` rows of the store: ``(decision, CPU seconds)``."""
    X = ds.X.data
    rows = np.sort(np.random.default_rng(1000 + seed).choice(X.shape[0], m, replace=False))
    cpu = time.process_time()
    sample = np.asarray(X[rows].compute(), dtype=np.float64)
    mean, sd = sample.mean(0), sample.std(0)
    model = OneClassSVM(nu=nu, gamma=0.5 / sigma ** 2, cache_size=1000).fit(
        (sample - mean) / sd)
    cpu = time.process_time() - cpu
    return model.decision_function((test - mean) / sd), cpu


def run_dsg(ds, test, nu, seed, epochs, **params):
    params = {"max_iter": epochs, "tol": None, **params}
    cpu = time.process_time()
    det = ok.DSGOneClassSVM(nu=nu, random_state=seed, progress=False, **params).fit(ds)
    cpu = time.process_time() - cpu
    return np.asarray(det.decision_function(test)), cpu


def run_peer(ds, test, nu, seed, epochs, sigma, components):
    """The peer of ``benchmarks/dsg_one_class.py``: ``(decision, CPU seconds)``."""
    _, dec, cpu = bench.peer_decision(ds, test, nu, epochs, seed, sigma, components)
    return dec, cpu


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=140_000)
    p.add_argument("--d", type=int, default=16)
    p.add_argument("--chunk-size", type=int, default=10_000)
    p.add_argument("--nu", type=float, default=0.1)
    p.add_argument("--wide", type=float, default=1.25)
    p.add_argument("--median-multiplier", type=float, default=0.5)
    p.add_argument("--exact-n", type=int, nargs="+", default=[5000, 20000],
                   help="rows of each exact one-class SVM (the last one is the reference "
                        "of the rank correlations)")
    p.add_argument("--dsg-settings", nargs="+", default=[""])
    p.add_argument("--dsg-epochs", type=int, default=1)
    p.add_argument("--components", type=int, default=256)
    p.add_argument("--peer-epochs", type=float, nargs="+", default=[0.5, 1])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", default="benchmarks/results/dsg_one_class_exact.json")
    args = p.parse_args(argv)
    rng = np.random.default_rng(99)
    test = np.vstack([bench.mixture(5000, args.d, rng),
                      bench.wide_outliers(5000, args.d, args.wide, rng)])
    truth = np.r_[np.ones(5000), np.zeros(5000)]
    mm = {"median_multiplier": args.median_multiplier}
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        ds = bench.write_store(Path(tmp) / "inliers.zarr", args.n, args.d, args.chunk_size)
        # compiles the kernels (not timed); its bandwidth, seed 0's, is every model's kernel
        sigma = ok.DSGOneClassSVM(nu=args.nu, n_features=256, max_iter=1, tol=None,
                                  random_state=0, progress=False, **mm).fit(ds).bandwidth_
        print(f"bandwidth {sigma:.4f}", flush=True)
        jobs = [(f"exact {m}", lambda s, m=m: run_exact(ds, test, m, args.nu, sigma, s))
                for m in args.exact_n]
        for setting in args.dsg_settings:
            params = {**mm, **eval(f"dict({setting})")}  # noqa: S307 (the command line's)
            jobs.append((f"dsg {setting}".strip(),
                         lambda s, params=params: run_dsg(ds, test, args.nu, s,
                                                          args.dsg_epochs, **params)))
        for e in args.peer_epochs:
            jobs.append((f"peer {args.components} {e:g} ep",
                         lambda s, e=e: run_peer(ds, test, args.nu, s, e, sigma,
                                                 args.components)))
        ref = f"exact {args.exact_n[-1]}"
        for seed in range(args.repeats):
            decisions = {}
            for name, job in jobs:
                decisions[name], cpu = job(seed)
                runs.setdefault(name, []).append(
                    {"auc": float(roc_auc_score(truth, decisions[name])), "cpu": cpu})
            for name in decisions:
                runs[name][-1]["spearman"] = float(
                    spearmanr(decisions[name], decisions[ref]).statistic)
            print(f"seed {seed}: " + "; ".join(
                f"{k} {v[-1]['auc']:.4f} ({v[-1]['spearman']:.4f}, {v[-1]['cpu']:.2f} s)"
                for k, v in runs.items()), flush=True)
    summary = {}
    for name, rows in runs.items():
        med = {k: float(np.median([r[k] for r in rows])) for k in ("auc", "cpu", "spearman")}
        aucs = [r["auc"] for r in rows]
        summary[name] = {**med, "auc_min": min(aucs), "auc_max": max(aucs), "runs": rows}
        print(f"{name}: AUC {med['auc']:.4f} ({min(aucs):.4f} to {max(aucs):.4f}), "
              f"Spearman with {ref} {med['spearman']:.4f}, CPU {med['cpu']:.2f} s")
    summary["setup"] = {**vars(args), "bandwidth": sigma}
    Path(args.json).write_text(json.dumps(summary, indent=1))
    print(f"wrote {args.json}")
    return summary


if __name__ == "__main__":
    main(sys.argv[1:])
