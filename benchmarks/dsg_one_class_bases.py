"""Which feature basis does the one-class problem want?  One optimizer, four bases.

The ``wide`` problem of ``benchmarks/dsg_one_class.py`` (inliers: four Gaussian blobs in
``--d`` dimensions; outliers: the same blobs ``--wide`` times wider), in memory.  Every
basis approximates the same Gaussian kernel (the bandwidth ``DSGOneClassSVM`` derives with
its defaults, seed 0) on the standardized rows, and every basis is fitted by the same
optimizer, scikit-learn's ``SGDOneClassSVM(nu)`` for one pass in chunks of ``--chunk-size``
rows (``partial_fit``), so that only the basis differs:

* ``iid``: ``--features`` random Fourier features of the library's ``rbf`` blocks (256
  features a block, i.i.d. Gaussian frequencies);
* ``orthogonal``: the same number of the ``rbf_orthogonal`` blocks (orthogonal frequency
  groups, :mod:`ooc_kernels.features.orthogonal`);
* ``nystroem_blocks``: ``--features / 256`` data-built blocks: block ``j`` draws 256
  landmarks ``L_j`` from a 2,000-row sample with seed ``j`` and maps
  ``x -> k(x, L_j) K_jj^{-1/2} / sqrt(blocks)`` (scikit-learn's ``Nystroem`` per block);
* ``nystroem``: scikit-learn's ``Nystroem(n_components=256)`` on the same sample (the
  peer's basis in ``benchmarks/dsg_one_class.py``).

The score is the ROC AUC on 5,000 fresh inliers and 5,000 outliers, the medians over
``--repeats`` seeds (all bases fitted once per seed in turn, so a change of the machine's
load reaches them alike); the seconds are CPU seconds of the transform and the fit
(``--bases`` picks some of them)::

    python benchmarks/dsg_one_class_bases.py --n 20000 --d 16 --features 4096 --repeats 3
    python benchmarks/dsg_one_class_bases.py --n 140000 --d 16 --features 4096 --repeats 3 \
        --bases iid orthogonal nystroem --json benchmarks/results/dsg_one_class_bases_140k.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import SGDOneClassSVM
from sklearn.metrics import roc_auc_score

import ooc_kernels as ok
from ooc_kernels.features.blocks import rff_map

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dsg_one_class import mixture, wide_outliers  # noqa: E402

BLOCK = 256


def _random_blocks(kernel, n_features, sigma):
    ids = np.arange(n_features // BLOCK)

    def make(seed, sample):
        def transform(X):
            return rff_map(X, seed, ids, sigma, BLOCK, np.float64, kernel=kernel) / np.sqrt(
                len(ids))
        return transform
    return make


def _nystroem_blocks(n_features, sigma):
    def make(seed, sample):
        maps = [Nystroem(gamma=1 / (2 * sigma ** 2), n_components=BLOCK,
                         random_state=seed * 1000 + j).fit(sample)
                for j in range(n_features // BLOCK)]

        def transform(X):
            return np.hstack([m.transform(X) for m in maps]) / np.sqrt(len(maps))
        return transform
    return make


def _nystroem(sigma):
    def make(seed, sample):
        m = Nystroem(gamma=1 / (2 * sigma ** 2), n_components=BLOCK, random_state=seed).fit(
            sample)
        return m.transform
    return make


def run(make, X, test, truth, nu, chunk, seed):
    rng = np.random.default_rng(seed)
    cpu = time.process_time()
    transform = make(seed, X[rng.choice(len(X), 2000, replace=False)])
    model = SGDOneClassSVM(nu=nu, random_state=seed)
    for start in rng.permutation(np.arange(0, len(X), chunk)):
        model.partial_fit(transform(X[start:start + chunk]))
    cpu = time.process_time() - cpu
    return cpu, float(roc_auc_score(truth, model.decision_function(transform(test))))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=140_000)
    p.add_argument("--d", type=int, default=16)
    p.add_argument("--features", type=int, default=4096)
    p.add_argument("--chunk-size", type=int, default=10_000)
    p.add_argument("--nu", type=float, default=0.1)
    p.add_argument("--wide", type=float, default=1.25)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--bases", nargs="+", default=["iid", "orthogonal", "nystroem_blocks",
                                                  "nystroem"])
    p.add_argument("--json", default="benchmarks/results/dsg_one_class_bases.json")
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    X = mixture(args.n, args.d, rng).astype(np.float64)
    rng = np.random.default_rng(99)
    test = np.vstack([mixture(5000, args.d, rng), wide_outliers(5000, args.d, args.wide, rng)])
    truth = np.r_[np.ones(5000), np.zeros(5000)]
    mean, std = X.mean(axis=0), X.std(axis=0)
    X, test = (X - mean) / std, (test - mean) / std
    sigma = float(ok.DSGOneClassSVM(nu=args.nu, n_features=256, max_iter=1, tol=None,
                                    random_state=0, progress=False).fit(
        X[:20_000]).bandwidth_)
    bases = {"iid": _random_blocks("rbf", args.features, sigma),
             "orthogonal": _random_blocks("rbf_orthogonal", args.features, sigma),
             "nystroem_blocks": _nystroem_blocks(args.features, sigma),
             "nystroem": _nystroem(sigma)}
    bases = {name: bases[name] for name in args.bases}
    runs = {name: [] for name in bases}
    for seed in range(args.repeats):
        for name, make in bases.items():
            runs[name].append(run(make, X, test, truth, args.nu, args.chunk_size, seed))
    summary = {"sigma": sigma, "setup": vars(args)}
    for name, rows in runs.items():
        aucs = [a for _, a in rows]
        summary[name] = {"cpu_s": statistics.median(c for c, _ in rows),
                         "auc": statistics.median(aucs), "auc_min": min(aucs),
                         "auc_max": max(aucs)}
        s = summary[name]
        print(f"{name}: CPU {s['cpu_s']:.2f} s, AUC {s['auc']:.4f} "
              f"({s['auc_min']:.4f} to {s['auc_max']:.4f})", flush=True)
    Path(args.json).write_text(json.dumps(summary, indent=1))
    print(f"wrote {args.json}")
    return summary


if __name__ == "__main__":
    main()
