"""How closely a default ``DSGOneClassSVM`` fit honours ``nu``: the fraction of training rows
with a negative decision value (scikit-learn's reading of ``nu``: an upper bound on the
fraction of training errors), on four problems, with each ``offset`` rule.

Problems (``--n`` rows each, in chunks of ``--chunk``):

* ``mixture``: three Gaussian blobs (sd 0.6) in 2-D;
* ``gaussian``: one round Gaussian in 2-D;
* ``box``: uniform in ``[0, 1]^2``;
* ``mixture10``: four Gaussian blobs (sd 0.7) in 10-D.

For each problem, ``nu`` and offset rule, ``--repeats`` default fits (seeds 0, 1, ...) run
with ``scheduler="sync"``; the script prints, and writes to
``benchmarks/results/dsg_one_class_nu.json``, the median over the runs of the fraction of
training outliers, its error against ``nu``, the epochs the stopping rule ran and the fit
time.  Run from the repository root::

    python benchmarks/dsg_one_class_nu.py --n 10000 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

import ooc_kernels as ok


def make(problem, n, rng):
    if problem == "mixture":
        c = np.array([[-2.0, -2.0], [2.0, 2.0], [2.0, -2.0]])
        return c[rng.integers(0, 3, n)] + 0.6 * rng.normal(size=(n, 2))
    if problem == "gaussian":
        return rng.normal(size=(n, 2))
    if problem == "box":
        return rng.uniform(0, 1, size=(n, 2))
    if problem == "mixture10":
        c = np.random.default_rng(123).uniform(-3, 3, size=(4, 10))
        return c[rng.integers(0, 4, n)] + 0.7 * rng.normal(size=(n, 10))
    raise ValueError(problem)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--chunk", type=int, default=2_500)
    ap.add_argument("--nu", type=float, nargs="+", default=[0.05, 0.1, 0.3, 0.5])
    ap.add_argument("--problems", nargs="+",
                    default=["mixture", "gaussian", "box", "mixture10"])
    ap.add_argument("--offsets", nargs="+", default=["quantile", "paper"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="benchmarks/results/dsg_one_class_nu.json")
    args = ap.parse_args(argv)
    rows = []
    for problem in args.problems:
        for nu in args.nu:
            for offset in args.offsets:
                runs = []
                for seed in range(args.repeats):
                    X = make(problem, args.n, np.random.default_rng(seed))
                    t = time.perf_counter()
                    det = ok.DSGOneClassSVM(nu=nu, offset=offset, chunk_size=args.chunk,
                                            random_state=seed, scheduler="sync",
                                            progress=False).fit(X)
                    seconds = time.perf_counter() - t
                    frac = float(np.mean(det.decision_function(X) < 0))
                    runs.append((frac, abs(frac - nu), det.n_iter_, seconds))
                med = np.median(np.array(runs), axis=0)
                row = dict(problem=problem, nu=nu, offset=offset, fraction=med[0],
                           error=med[1], max_error=max(r[1] for r in runs),
                           epochs=med[2], seconds=med[3])
                rows.append(row)
                print(f"{problem:10s} nu={nu:<5} {offset:8s} fraction {med[0]:.4f} "
                      f"|error| median {med[1]:.4f} max {row['max_error']:.4f} "
                      f"epochs {med[2]:.0f} time {med[3]:.2f}s", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(dict(args=vars(args), rows=rows), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
