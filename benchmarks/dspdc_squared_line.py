"""In-memory DSPDC fits of two library versions against scikit-learn, in alternating fresh
processes.

The peer table's conditioned problems (``benchmarks/dspdc_peers.py``: 50,000 x 50 rows,
``alpha = 1e-4``; ridge, the elastic net at ``l1_ratio = 0.5`` and the logistic loss) as
NumPy arrays.  Each run is a fresh process of one tree (``--trees``: folders holding an
``ooc_kernels``, e.g. ``git archive`` of a commit); the trees alternate run by run (A B,
B A, A B, ...).  In a run, for each problem and target relative suboptimality (1e-4, 1e-6):
a warm-up fit, then ``--fits`` default fits with ``tol`` = the target (``random_state`` 0,
1, ...), and ``--fits`` fits of scikit-learn's best solver of the peer table (Cholesky
``Ridge``, coordinate-descent ``ElasticNet``, L-BFGS ``LogisticRegression``) at the loosest
tolerance whose solution reaches the target (found before the timed fits).  It records the
CPU seconds (``time.process_time``) of each fit, DSPDC's epochs, its final certified
relative gap and the suboptimality reached, and the run's 1-minute load average.  The
summary per tree, problem and target is the median over the runs of each run's median, and
the median over the runs of the ratio DSPDC / peer of the same run.

    mkdir -p before after
    git archive <commit before> ooc_kernels | tar -x -C before
    git archive <commit after> ooc_kernels | tar -x -C after
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python benchmarks/dspdc_squared_line.py --trees before after --runs 8 --fits 3 \\
        --out benchmarks/results/dspdc_squared_line.json
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
#: (name, loss, l1_ratio)
PROBLEMS = [("ridge", "squared", 0.0), ("elastic_net", "squared", 0.5),
            ("logistic", "logistic", 0.0)]


def child(stores: dict, fits: int, problems: list[str]) -> dict:
    """One process's fits (the library is the one ``sys.path`` finds first)."""
    sys.path.insert(0, str(HERE))
    import dspdc_in_memory as dim
    import dspdc_peers as peers

    import ooc_kernels as ok

    out = {"library": str(Path(ok.__file__).parent.parent), "problems": {}}
    n, alpha = None, 1e-4
    for name, loss, l1_ratio in [p for p in PROBLEMS if p[0] in problems]:
        _, X, y = peers.load(Path(stores[loss]))
        n = len(y)
        Est = ok.DSPDCRegressor if loss == "squared" else ok.DSPDCClassifier
        kw = {} if l1_ratio == 0 else {"l1_ratio": l1_ratio}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            Est(max_iter=1, tol=None, progress=False, **kw).fit(X, y)      # warm-up
        entry = {}
        for target in peers.TARGETS:
            runs = []
            for r in range(fits):
                start = time.process_time()
                est = Est(random_state=r, progress=False, tol=target, **kw).fit(X, y)
                runs.append((time.process_time() - start, est))
            est = runs[0][1]
            mu, sd = np.asarray(est._config.x_shift), np.asarray(est._config.x_scale)
            Xa, rel_of = dim.standardized_problem(peers, est, X, y, name, loss, alpha,
                                                  l1_ratio)

            peer_tol = None
            for tol in peers.TOLS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = dim._peer(name, n, alpha, l1_ratio, tol).fit(Xa, y)
                coef = np.ravel(model.coef_)
                if rel_of(coef[:-1], coef[-1]) <= target:
                    peer_tol = tol
                    break
            peer = []
            if peer_tol is not None:
                for _ in range(fits):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        start = time.process_time()
                        dim._peer(name, n, alpha, l1_ratio, peer_tol).fit(Xa, y)
                        peer.append(time.process_time() - start)
            cpu = [c for c, _ in runs]
            entry[str(target)] = {
                "cpu_seconds": cpu, "median_cpu_seconds": float(np.median(cpu)),
                "epochs": [int(e.n_iter_) for _, e in runs],
                "relative_gap": [float(e.gap_history_[-1]["relative_gap"]) for _, e in runs],
                "rel_subopt": rel_of(est.coef_ * sd, est.intercept_ + float(est.coef_ @ mu)),
                "peer_tol": peer_tol, "peer_cpu_seconds": peer,
                "peer_median_cpu_seconds": float(np.median(peer)) if peer else None,
                "ratio": float(np.median(cpu) / np.median(peer)) if peer else None}
        out["problems"][name] = entry
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs=2, required=True, help="two library folders")
    parser.add_argument("--runs", type=int, default=8, help="processes per tree")
    parser.add_argument("--fits", type=int, default=3, help="fits per process and target")
    parser.add_argument("--problems", nargs="+", default=[p[0] for p in PROBLEMS])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--child", nargs=3, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        stores = json.loads(args.child[0])
        print(json.dumps(child(stores, int(args.child[1]), args.child[2].split(","))))
        return
    sys.path.insert(0, str(HERE))
    import dspdc_peers as peers

    tmp = Path(tempfile.mkdtemp(prefix="dspdc-squared-line-"))
    stores = {}
    for loss, task, seed in (("squared", "regression", 1), ("logistic", "classification", 2)):
        stores[loss] = str(peers.write_store(tmp / f"{task}.zarr", args.n, args.p,
                                             args.chunk_size, task, seed))
    trees = [str(Path(t).resolve()) for t in args.trees]
    records = []
    for run in range(args.runs):
        order = trees if run % 2 == 0 else trees[::-1]
        for tree in order:
            env = {**os.environ, "PYTHONPATH": tree}
            load = os.getloadavg()[0]
            proc = subprocess.run(
                [sys.executable, __file__, "--trees", *trees, "--child", json.dumps(stores),
                 str(args.fits), ",".join(args.problems)],
                env=env, capture_output=True, text=True, check=True)
            result = json.loads(proc.stdout.strip().splitlines()[-1])
            result.update(tree=tree, run=run, load_1min=load)
            records.append(result)
            print(json.dumps({"run": run, "tree": Path(tree).name, "load": load,
                              **{f"{p}@{t}": (v["median_cpu_seconds"], v["epochs"][0],
                                              v["ratio"])
                                 for p, e in result["problems"].items()
                                 for t, v in e.items()}}), flush=True)
    summary = {}
    for tree in trees:
        mine = [r for r in records if r["tree"] == tree]
        for name in mine[0]["problems"]:
            for target in mine[0]["problems"][name]:
                cells = [r["problems"][name][target] for r in mine]
                ratios = [c["ratio"] for c in cells if c["ratio"] is not None]
                summary.setdefault(Path(tree).name, {})[f"{name} {target}"] = {
                    "median_cpu_seconds": float(np.median([c["median_cpu_seconds"]
                                                           for c in cells])),
                    "peer_median_cpu_seconds": float(np.median(
                        [c["peer_median_cpu_seconds"] for c in cells
                         if c["peer_median_cpu_seconds"] is not None])),
                    "epochs": sorted({e for c in cells for e in c["epochs"]}),
                    "median_ratio": float(np.median(ratios)) if ratios else None,
                    "ratio_range": [float(min(ratios)), float(max(ratios))] if ratios else None,
                    "rel_subopt": cells[0]["rel_subopt"]}
    print(json.dumps(summary, indent=1))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"runs": records, "summary": summary,
                                        "fits": args.fits, "n": args.n, "p": args.p},
                                       indent=1))


if __name__ == "__main__":
    main()
