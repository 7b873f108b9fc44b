"""Why ``DSGClassifier()`` trails gradient boosting on ``nonlinear_binary`` with 100 inputs
of which 5 carry the label: the default against variants that each remove one suspect.

Data: ``ok.make_dataset("nonlinear_binary", ..., n_features=100, n_informative=5)``,
``--n`` training rows (Zarr, chunks of 10,000 rows, fitted out of core; ``random_state=0``)
and ``--n-test`` test rows (``split="test"``).  Fits (``random_state=seed``, interleaved per
seed), each recording test accuracy, CPU and wall seconds, epochs and, for
``bandwidth="auto"``, the ratio of the median noise width to the median signal width:

* ``default``: ``DSGClassifier()``;
* ``ard``: ``bandwidth="ard"`` (the full per-input width search);
* ``5 inputs``: the default on the 5 signal inputs only (the same rows);
* ``oracle widths``: ``bandwidth`` = the width the ``5 inputs`` fit chose on the 5 signal
  inputs (the geometric mean of the default's signal widths when ``5 inputs`` is not run
  before it) and 1e3 on the 95 noise inputs (standardized units: the noise inputs drop
  out);
* ``search 256`` and ``search 1024``: ``bandwidth`` = the widths of the quick search's
  settings (``ard_scales`` on 1,000 training rows drawn with the seed, standardized, 30
  Adam steps of 0.3, early stopping after 5 steps without a 0.1% gain) with 256 random
  features (those of ``bandwidth="auto"``) or 1,024;
* ``features 16384``: ``n_features=16384``;
* ``no stopping, 40 epochs``: ``max_iter=40, tol=None``.

    python benchmarks/dsg_binary100_causes.py --n 20000 --seeds 0 1 \\
        --out benchmarks/results/dsg_binary100_causes.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import xarray as xr

import ooc_kernels as ok

INFORMATIVE = 5
#: The fits the script knows (``--fits``).
FITS = ("default", "ard", "5 inputs", "oracle widths", "search 256", "search 1024",
        "features 16384", "no stopping, 40 epochs")


def _fit(store, Xt, yt, seed, **params):
    t, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = ok.DSGClassifier(random_state=seed, progress=False, **params).fit(store)
    out = {"seconds": time.perf_counter() - t, "cpu_seconds": time.process_time() - cpu,
           "accuracy": float(clf.score(Xt[:, :store.sizes["feature"]], yt)),
           "epochs": int(clf.n_iter_), "load": os.getloadavg()[0]}
    widths = np.atleast_1d(np.asarray(clf.bandwidth_, dtype=float))
    if widths.size == Xt.shape[1]:
        out["signal_widths"] = np.round(widths[:INFORMATIVE], 3).tolist()
        out["noise_width_median"] = float(np.median(widths[INFORMATIVE:]))
        out["noise_over_signal"] = float(np.median(widths[INFORMATIVE:])
                                         / np.median(widths[:INFORMATIVE]))
    else:
        out["widths"] = np.round(widths, 3).tolist()
    return out, clf


def _searched(store, seed, components):
    """Per-input widths (standardized units) of the quick search's settings."""
    from scipy.spatial.distance import pdist

    from ooc_kernels.features.ard import ard_scales

    rng = np.random.default_rng(seed)
    X = np.asarray(store["X"][:10_000], dtype=np.float64)  # one chunk
    y = np.asarray(store["y"][:10_000])
    take = rng.choice(len(X), 1000, replace=False)
    Z = (X[take] - X[take].mean(axis=0)) / X[take].std(axis=0)
    return ard_scales(Z, 2.0 * y[take] - 1.0, np.ones(len(take)),
                      start=float(np.median(pdist(Z))), seed=seed, steps=30,
                      learning_rate=0.3, patience=5, n_components=components)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=20_000)
    p.add_argument("--n-test", type=int, default=20_000)
    p.add_argument("--seeds", type=int, nargs="+", default=[0],
                   help="random_state of the fits (one round of --fits per seed)")
    p.add_argument("--fits", nargs="+", choices=FITS, default=[
        "default", "ard", "5 inputs", "oracle widths", "features 16384",
        "no stopping, 40 epochs"], help="the fits of every seed, in this order")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="dsg_binary100_"))
    results = {"n_train": args.n, "n_test": args.n_test, "runs": {}}
    try:
        params = {"n_features": 100, "n_informative": INFORMATIVE}
        train = ok.make_dataset("nonlinear_binary", work / "train.zarr", args.n,
                                chunk_size=10_000, progress=False, **params)
        test = ok.make_dataset("nonlinear_binary", work / "test.zarr", args.n_test,
                               chunk_size=10_000, split="test", progress=False, **params)
        store = xr.open_zarr(train)
        held = xr.open_zarr(test)
        Xt, yt = np.asarray(held["X"]), np.asarray(held["y"])
        _fit(store, Xt, yt, 0, max_iter=1)  # warm-up: compiled kernels
        for seed in args.seeds:
            default = five = None
            for name in args.fits:
                if name == "default":
                    r, clf = _fit(store, Xt, yt, seed)
                    default = clf
                elif name == "ard":
                    r, _ = _fit(store, Xt, yt, seed, bandwidth="ard")
                elif name == "oracle widths":
                    if five is not None:
                        overall = float(np.mean(five.bandwidth_))
                    else:
                        if default is None:
                            _, default = _fit(store, Xt, yt, seed, max_iter=1)
                        widths = np.atleast_1d(np.asarray(default.bandwidth_, dtype=float))
                        overall = float(np.exp(np.mean(np.log(widths[:INFORMATIVE]))))
                    oracle = np.full(Xt.shape[1], 1e3)
                    oracle[:INFORMATIVE] = overall
                    r, _ = _fit(store, Xt, yt, seed, bandwidth=oracle)
                    r["oracle_signal_width"] = overall
                elif name == "5 inputs":
                    r, five = _fit(store.isel(feature=slice(0, INFORMATIVE)), Xt, yt, seed)
                elif name in ("search 256", "search 1024"):
                    cpu = time.process_time()
                    widths = _searched(store, seed, int(name.split()[1]))
                    search_cpu = time.process_time() - cpu
                    r, _ = _fit(store, Xt, yt, seed, bandwidth=widths)
                    r["search_cpu_seconds"] = search_cpu
                elif name == "features 16384":
                    r, _ = _fit(store, Xt, yt, seed, n_features=16384)
                else:  # "no stopping, 40 epochs"
                    r, _ = _fit(store, Xt, yt, seed, max_iter=40, tol=None)
                results["runs"].setdefault(name, []).append(r)
                print(seed, name, r, flush=True)
                if args.out:
                    args.out.parent.mkdir(parents=True, exist_ok=True)
                    args.out.write_text(json.dumps(results, indent=1) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


if __name__ == "__main__":
    main()
