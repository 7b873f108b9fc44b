"""Two versions of the DSG defaults side by side, interleaved, in CPU seconds.

A rule of the defaults (how ``DSGClassifier()`` picks its bandwidth, scaling and ``alpha``)
is judged by fitting the default of the current code and of a baseline (a copy of the
package from another commit, e.g. ``git archive <commit> ooc_kernels | tar -x -C DIR``) on
the same problems with the same seeds.  Every fit runs in its own single-threaded process
(``OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=NUMBA_NUM_THREADS=1``, ``n_jobs=1``, the
synchronous scheduler), the two versions alternating fit by fit, so that a loaded machine slows both
alike; the fit's CPU seconds (``time.process_time()`` around ``fit``) are reported, and the
first fit of each version warms its compiled-kernel cache and is not counted.

Problems (``benchmarks/dsg_defaults_suite.py``): ``binary10`` (``--n`` rows, 10 inputs of
which 5 carry the label, fitted out of core from a Zarr store), ``signal`` (``--n-signal``
rows of the 40-D 10-class signal problem, from Zarr), ``digits`` (75/25, in memory).

    python benchmarks/defaults_rules.py --baseline /tmp/old --problems binary10 signal \\
        digits --n 20000 --n-signal 30000 --seeds 3 --out benchmarks/results/defaults_rules.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time, warnings
import numpy as np
sys.path.insert(0, {bench!r})
warnings.simplefilter("ignore")
import ooc_kernels as ok
import xarray as xr
from dsg_defaults_suite import problems
name, n, n_signal, work, seed = {args!r}
X, y, Xt, yt, store = problems([name], n, n_signal, __import__("pathlib").Path(work))[name]
clf = ok.DSGClassifier(random_state=seed, progress=False, n_jobs=1, scheduler="sync")
cpu, wall = time.process_time(), time.perf_counter()
clf.fit(store) if store is not None else clf.fit(X, y)
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
print("RESULT", json.dumps({{
    "accuracy": float(clf.score(Xt, yt)), "cpu_seconds": cpu, "wall_seconds": wall,
    "epochs": int(clf.n_iter_), "alpha": float(clf.alpha_),
    "bandwidth": np.round(np.asarray(clf.bandwidth_), 4).tolist(),
    "common_scale": bool(len(set(clf._config.x_scale or ())) == 1),
    "setup_scores": None if getattr(clf, "setup_scores_", None) is None else
        {{f"{{k[0]}} {{k[1]}}": v for k, v in clf.setup_scores_.items()}}}}))
"""


def _fit(tree: Path, name: str, n: int, n_signal: int, work: Path, seed: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", NUMBA_NUM_THREADS="1", MKL_NUM_THREADS="1",
               OOC_KERNELS_PROGRESS="0")
    code = CHILD.format(bench=str(ROOT / "benchmarks"),
                        args=(name, n, n_signal, str(work), seed))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True, cwd=tempfile.gettempdir())
    line = [l for l in out.stdout.splitlines() if l.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--baseline", type=Path, required=True,
                   help="a folder holding the baseline's ooc_kernels package")
    p.add_argument("--current", type=Path, default=ROOT,
                   help="a folder holding the current ooc_kernels package (default: this "
                        "checkout)")
    p.add_argument("--problems", nargs="+", default=["binary10", "signal", "digits"])
    p.add_argument("--n", type=int, default=20_000)
    p.add_argument("--n-signal", type=int, default=30_000)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    trees = {"baseline": args.baseline, "current": args.current}
    results = []
    with tempfile.TemporaryDirectory(prefix="defaults_rules_") as tmp:
        for tree in trees.values():  # warm each version's compiled kernels
            _fit(tree, "digits", args.n, args.n_signal, Path(tmp), 0)
        for name in args.problems:
            runs = {k: [] for k in trees}
            for seed in range(args.seeds):
                for key, tree in trees.items():
                    work = Path(tmp) / f"{key}_{name}_{seed}"
                    work.mkdir()
                    r = _fit(tree, name, args.n, args.n_signal, work, seed)
                    runs[key].append(r)
                    print(name, seed, key, json.dumps(r), flush=True)
            row = {"problem": name}
            for key, rs in runs.items():
                row[key] = {"accuracy": statistics.median(r["accuracy"] for r in rs),
                            "cpu_seconds": statistics.median(r["cpu_seconds"] for r in rs),
                            "runs": rs}
            results.append(row)
            print(name, {k: (row[k]["accuracy"], round(row[k]["cpu_seconds"], 1))
                         for k in trees}, flush=True)
            if args.out:
                args.out.write_text(json.dumps({"command": " ".join(sys.argv),
                                                "results": results}, indent=1))
    return results


if __name__ == "__main__":
    main()
