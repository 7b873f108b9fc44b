"""Where a DSGOneClassSVM fit spends its time: setup, epochs and the quantile-offset pass.

The store and test set of ``benchmarks/dsg_one_class.py --problem wide`` (four blobs in
``--d`` dimensions, outliers 1.25 times wider around the same centres).  Each setting
(``--settings``, keyword arguments of ``DSGOneClassSVM`` written as Python, e.g.
``"n_features=1024"``; the empty string is the defaults) is fitted for one pass,
``--repeats`` times, and the medians of the whole fit and of its phases are printed:

* setup: ``_initialize`` (sampling rows, standardization, the median bandwidth, the step);
* epochs: the fit minus setup and offset pass;
* offset: ``_finish`` (scoring the training rows for the ``nu``-quantile offset);

with the ROC AUC on the test set.  Run from the repository root::

    python benchmarks/dsg_one_class_profile.py --n 140000 --d 16 --repeats 3 \\
        --settings "" "n_features=1024" "n_features=8192" "median_multiplier=0.25"
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

import ooc_kernels as ok
from ooc_kernels.families.dsg import one_class

sys.path.insert(0, str(Path(__file__).parent))
import dsg_one_class as bench  # noqa: E402

PHASES: dict[str, float] = {}


def _timed(name):
    method = getattr(one_class.DSGOneClassSVM, name)

    def wrapper(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return method(self, *args, **kwargs)
        finally:
            PHASES[name] = PHASES.get(name, 0.0) + time.perf_counter() - start

    setattr(one_class.DSGOneClassSVM, name, wrapper)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=140_000)
    p.add_argument("--d", type=int, default=16)
    p.add_argument("--chunk-size", type=int, default=10_000)
    p.add_argument("--nu", type=float, default=0.1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--settings", nargs="+", default=[""])
    args = p.parse_args(argv)
    for name in ("_initialize", "_finish"):
        _timed(name)
    rng = np.random.default_rng(99)
    test = np.vstack([bench.mixture(5000, args.d, rng),
                      bench.wide_outliers(5000, args.d, 1.25, rng)])
    truth = np.r_[np.ones(5000), np.zeros(5000)]
    with tempfile.TemporaryDirectory() as tmp:
        ds = bench.write_store(Path(tmp) / "inliers.zarr", args.n, args.d, args.chunk_size)
        ok.DSGOneClassSVM(nu=args.nu, n_features=256, max_iter=1, tol=None,
                          progress=False).fit(ds)  # compiles the kernels
        print("setting | fit s | setup s | epochs s | offset s | ROC AUC")
        for setting in args.settings:
            params = eval(f"dict({setting})")  # noqa: S307 (the command line's own text)
            rows = []
            for seed in range(args.repeats):
                PHASES.clear()
                start = time.perf_counter()
                det = ok.DSGOneClassSVM(nu=args.nu, max_iter=1, tol=None, random_state=seed,
                                        progress=False, **params).fit(ds)
                total = time.perf_counter() - start
                auc = roc_auc_score(truth, det.decision_function(test))
                rows.append((total, PHASES["_initialize"],
                             total - PHASES["_initialize"] - PHASES["_finish"],
                             PHASES["_finish"], auc))
            med = np.median(np.array(rows), axis=0)
            print(f"{setting or 'defaults'} | " + " | ".join(f"{v:.2f}" for v in med[:4])
                  + f" | {med[4]:.4f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
