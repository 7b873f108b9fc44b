"""DSG with every kernel of the table against exact kernel ridge regression with that kernel.

For every kernel setting of :func:`ooc_kernels.features.maps.kernel_settings`, the small
problem of ``tests/test_kernels_table.py::_fit_problem`` (350 training rows, 150 test rows;
the problem and bandwidth suited to the kernel): ``DSGRegressor(kernel=..., kernel_params=...,
bandwidth=..., standardize=False, n_features=1024, block_size=128, max_iter=30)`` against
scikit-learn's ``KernelRidge`` on the exact Gram matrix (``ok.features.kernel_function``),
the best test R^2 of alpha in {1e-3, 1e-2, 1e-1, 1}.  Prints one line per kernel (test R^2 of
both, DSG's fit time) and writes ``benchmarks/results/kernel_fits.json``; ``--kernels``
measures the given settings only (any kernel names ``ok.features.get_feature_map`` reads,
in or out of the table) and merges them into the saved results.  Run from the repository
root::

    python benchmarks/kernel_fits.py
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from sklearn.kernel_ridge import KernelRidge

import ooc_kernels as ok
from ooc_kernels.features.maps import kernel_settings

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from test_kernels_table import _fit_problem, _name_params  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", nargs="+", default=None,
                        help="measure these settings only, merged into the saved results")
    args = parser.parse_args(argv)
    out = ROOT / "benchmarks" / "results" / "kernel_fits.json"
    rows = json.loads(out.read_text()) if args.kernels else {}
    for spec in args.kernels or kernel_settings():
        X, y, Xt, yt, bandwidth = _fit_problem(spec)
        name, params = _name_params(spec)
        t0 = time.perf_counter()
        model = ok.DSGRegressor(kernel=name, kernel_params=params or None,
                                bandwidth=bandwidth, standardize=False, n_features=1024,
                                block_size=128, max_iter=30, progress=False, random_state=0,
                                scheduler="sync").fit(X, y)
        seconds = time.perf_counter() - t0
        k = ok.features.kernel_function(name, bandwidth=bandwidth, **params)
        exact = max(KernelRidge(alpha=a, kernel="precomputed").fit(k(X, X), y).score(
            k(Xt, X), yt) for a in (1e-3, 1e-2, 1e-1, 1.0))
        rows[spec] = {"dsg_r2": model.score(Xt, yt), "exact_r2": exact, "seconds": seconds}
        print(f"{spec:45s} DSG R^2 {rows[spec]['dsg_r2']:.3f}  exact {exact:.3f}  "
              f"({seconds:.1f} s)", flush=True)
    out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
