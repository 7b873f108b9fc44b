"""DSPDC in memory, logistic loss: CPU seconds of breast-cancer fits, and Newton's start with
and without its subsampled Hessian.

``--part fits``: ``DSPDCClassifier()`` (the defaults) on scikit-learn's breast cancer (569 x
30, raw columns) to ``tol`` = 1e-4 and 1e-6: one warm-up fit per target, then ``--repeats``
timed fits per target alternated, CPU seconds of the process (``time.process_time``).  Run it
with ``PYTHONPATH=<folder>`` to measure another version of the library (``git archive <commit>
ooc_kernels | tar -x -C <folder>``), alternating whole runs of the two versions::

    export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1
    python benchmarks/dspdc_newton_start.py --part fits --repeats 5 \\
        --out benchmarks/results/dspdc_newton_start_fits.json

``--part subsample``: ``_logistic_start.logistic_newton`` alone on the peer table's
classification rows (``dspdc_peers.py``: 50,000 x 50 conditioned or raw columns,
standardized, with the intercept's column; ``alpha = 1e-4``) and on breast cancer's, to
``tol`` = 1e-4 and 1e-6, with the Hessian of every 4th row while the relative gap is above 1
(``SUBSAMPLE = 4``, the default) and of every row (``SUBSAMPLE = 1``) alternated, medians of
``--repeats`` after a warm-up, with the iterations and the reads of the rows::

    python benchmarks/dspdc_newton_start.py --part subsample --repeats 7 \\
        --out benchmarks/results/dspdc_newton_start_subsample.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ALPHA = 1e-4


def fits(repeats: int) -> dict:
    """CPU seconds of the breast-cancer fits per target, with their epochs and gaps."""
    from sklearn.datasets import load_breast_cancer

    import ooc_kernels as ok

    X, y = load_breast_cancer(return_X_y=True)
    out = {"module": ok.__file__, "targets": {}}

    def fit(tol):
        est = ok.DSPDCClassifier(tol=tol, random_state=0, progress=False)
        start = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
        return time.process_time() - start, est

    for tol in (1e-4, 1e-6):
        _, est = fit(tol)                           # warm-up: the kernels compiled or loaded
        out["targets"][f"{tol:g}"] = {"cpu": [], "epochs": int(est.n_iter_),
                                      "relative_gap": float(
                                          est.gap_history_[-1]["relative_gap"])}
    for _ in range(repeats):
        for tol in (1e-4, 1e-6):
            out["targets"][f"{tol:g}"]["cpu"].append(fit(tol)[0])
    for entry in out["targets"].values():
        entry["median_cpu"] = float(np.median(entry["cpu"]))
    return out


def _solver_rows(X, y):
    A = np.column_stack([(X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0),
                         np.ones(len(X))])
    return np.ascontiguousarray(A), np.where(np.asarray(y) == np.unique(y)[1], 1.0, -1.0)


def subsample(repeats: int, n: int, p: int) -> dict:
    """Newton's start alone with ``SUBSAMPLE`` = 4 and 1, alternated, per data and target."""
    from sklearn.datasets import load_breast_cancer

    from ooc_kernels.families.dspdc import _logistic_start, kernels_newton

    sys.path.insert(0, str(HERE))
    import dspdc_peers as peers

    tmp = Path(tempfile.mkdtemp(prefix="dspdc-newton-start-"))
    store = peers.write_store(tmp / "classification.zarr", n, p, 10_000, "classification", 2)
    _, X, y = peers.load(store)
    data = {"conditioned": _solver_rows(X, y), "raw": _solver_rows(peers.raw_columns(X), y),
            "breast_cancer": _solver_rows(*load_breast_cancer(return_X_y=True))}
    reads = [0]
    real = kernels_newton.logistic_rows

    def counted(rows, lo, hi, *args):
        reads[0] += hi - lo
        return real(rows, lo, hi, *args)

    kernels_newton.logistic_rows = counted
    out = {"n": n, "p": p, "repeats": repeats, "load_before": os.getloadavg(), "cells": {}}
    for name, (A, b) in data.items():
        for tol in (1e-4, 1e-6):
            cell = out["cells"].setdefault(f"{name}, tol={tol:g}", {})
            for sub in (4, 1):
                _logistic_start.SUBSAMPLE = sub
                reads[0] = 0
                _, k = _logistic_start.logistic_newton(A, b, None, ALPHA, tol)
                cell[f"SUBSAMPLE={sub}"] = {"iterations": int(k), "reads": reads[0] / len(b),
                                            "cpu_ms": []}
            for _ in range(repeats):
                for sub in (4, 1):
                    _logistic_start.SUBSAMPLE = sub
                    start = time.process_time()
                    _logistic_start.logistic_newton(A, b, None, ALPHA, tol)
                    cell[f"SUBSAMPLE={sub}"]["cpu_ms"].append(
                        1e3 * (time.process_time() - start))
            for entry in cell.values():
                entry["median_cpu_ms"] = float(np.median(entry["cpu_ms"]))
            print(name, tol, {k: (v["iterations"], v["reads"], round(v["median_cpu_ms"], 2))
                              for k, v in cell.items()}, flush=True)
    _logistic_start.SUBSAMPLE = 4
    out["load_after"] = os.getloadavg()
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["fits", "subsample"], default="fits")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    load = os.getloadavg()
    out = fits(args.repeats) if args.part == "fits" else subsample(args.repeats, args.n, args.p)
    out["load"] = [load, os.getloadavg()]
    print(json.dumps(out.get("targets", {})), flush=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
