"""Whole in-memory DSPDC fits of two library versions, alternated in fresh processes.

The peer table's logistic problem (``benchmarks/dspdc_peers.py``: 50,000 x 50 conditioned
rows, ``alpha = 1e-4``, float32 NumPy arrays from its Zarr store) fitted by
``DSPDCClassifier`` at its defaults to ``--tol``.  Each run is a fresh process of one tree
(``--trees``: folders holding an ``ooc_kernels``, e.g. ``git archive`` of a commit): a
warm-up fit, then ``--fits`` fits with ``random_state`` 0, 1, ...; it reports their CPU
seconds (``time.process_time``), the number of times the BLAS limit listed the loaded
shared objects per fit (``_blas.loaded_objects``), the epochs, the final certified relative
gap and the first coefficient.  The trees alternate run by run (A B, B A, A B, ...), each
run's 1-minute load average is recorded, and the summary is the median over the runs of each
run's median.

    for t in before after; do mkdir -p $t; done
    git archive 7e532f0 ooc_kernels | tar -x -C before
    git archive a010767 ooc_kernels | tar -x -C after
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python benchmarks/dspdc_fixed_costs.py --trees before after --runs 8 --tol 1e-6 \\
        --out benchmarks/results/dspdc_fixed_costs_fits.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def child(store: Path, tol: float, fits: int) -> dict:
    """One process's fits (the library is the one ``sys.path`` finds first)."""
    sys.path.insert(0, str(HERE))
    import dspdc_peers as peers

    import ooc_kernels as ok
    from ooc_kernels import _blas

    _, X, y = peers.load(store)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ok.DSPDCClassifier(max_iter=1, tol=None, progress=False).fit(X, y)   # warm-up
    listed = [0]
    real = getattr(_blas, "loaded_objects", None)
    if real is not None:
        def counted():
            listed[0] += 1
            return real()

        _blas.loaded_objects = counted
    cpus = []
    for r in range(fits):
        start = time.process_time()
        est = ok.DSPDCClassifier(random_state=r, progress=False, tol=tol).fit(X, y)
        cpus.append(time.process_time() - start)
    return {"library": str(Path(ok.__file__).parent.parent), "cpu_seconds": cpus,
            "median_cpu_seconds": float(np.median(cpus)), "listings_per_fit": listed[0] / fits,
            "epochs": int(est.n_iter_), "relative_gap": est.gap_history_[-1]["relative_gap"],
            "coef0": float(np.ravel(est.coef_)[0])}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs=2, default=None, help="two library folders")
    parser.add_argument("--runs", type=int, default=8, help="processes per tree")
    parser.add_argument("--fits", type=int, default=3, help="fits per process")
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--store", type=Path, default=None,
                        help="the peer table's classification store (written if missing)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--child", nargs=3, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(Path(args.child[0]), float(args.child[1]),
                               int(args.child[2]))))
        return
    if args.trees is None:
        parser.error("--trees: give the two library folders to compare")
    sys.path.insert(0, str(HERE))
    import dspdc_peers as peers

    store = args.store or Path(tempfile.mkdtemp(prefix="dspdc-fixed-costs-")) / "c.zarr"
    if not store.exists():
        peers.write_store(store, 50_000, 50, 10_000, "classification", 2)
    runs = []
    for i in range(args.runs):
        for tree in (args.trees if i % 2 == 0 else args.trees[::-1]):
            env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
            load = os.getloadavg()[0]
            out = subprocess.run([sys.executable, __file__, "--child", str(store),
                                  str(args.tol), str(args.fits)], env=env, check=True,
                                 capture_output=True, text=True).stdout
            runs.append({"tree": tree, "load": load, **json.loads(out.splitlines()[-1])})
            print(json.dumps(runs[-1]), flush=True)
    summary = {tree: float(np.median([r["median_cpu_seconds"] for r in runs
                                      if r["tree"] == tree])) for tree in args.trees}
    print(json.dumps({"median_cpu_seconds": summary}))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"tol": args.tol, "runs": runs,
                                        "median_cpu_seconds": summary}, indent=1) + "\n")


if __name__ == "__main__":
    main()
