"""The DSG classifier's default on small data sets, before and after a change, in CPU seconds.

Fits ``DSGClassifier(random_state=seed)`` (nothing else set but one thread and the
synchronous scheduler) of a baseline copy of the package (``--baseline``, e.g. ``git archive
<commit> ooc_kernels | tar -x -C DIR``) and of the current code on scikit-learn's small
data sets, 75/25 split (``random_state=0``), the two versions alternating fit by fit, each
fit in its own single-threaded process (``OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=
NUMBA_NUM_THREADS=1``), so that a loaded machine slows both alike.  Reported per fit: test
accuracy, CPU seconds of ``fit`` (``time.process_time()``), epochs, the first step; medians
over the seeds.  The first fit of each version warms its compiled-kernel cache and is not
counted.  ``SVC()`` on the same split is the exact kernel machine for reference.

Problems: ``digits`` (1,347 training rows, 64 pixels, 10 classes), ``breast_cancer`` (426
rows, 30 inputs), ``wine`` (133 rows, 13 inputs).

With ``--vw``, for each problem also Vowpal Wabbit ``--nn 32 --passes 3`` (the ``vowpalwabbit``
package; its CPU seconds include writing its text format and parsing it, as in
``benchmarks/dsg_defaults_suite.py``) and the current default stopped after 1, 2, 4, 8 and
16 epochs (``max_iter``, seed 0), each in its own single-threaded process: accuracy against
CPU seconds, to read the default's accuracy at VW's time.

    python benchmarks/dsg_small_data.py --baseline /tmp/old --seeds 3 --vw \\
        --out benchmarks/results/dsg_small_data.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ("digits", "breast_cancer", "wine")

CHILD = r"""
import json, time, warnings
import numpy as np
warnings.simplefilter("ignore")
import ooc_kernels as ok
from sklearn import datasets
from sklearn.model_selection import train_test_split
name, seed, params = {args!r}
X, y = getattr(datasets, "load_" + name)(return_X_y=True)
X, Xt, y, yt = train_test_split(X, y, test_size=0.25, random_state=0)
clf = ok.DSGClassifier(random_state=seed, progress=False, n_jobs=1, scheduler="sync",
                       **params)
cpu = time.process_time()
clf.fit(X, y)
cpu = time.process_time() - cpu
print("RESULT", json.dumps({{
    "accuracy": float(clf.score(Xt, yt)), "cpu_seconds": cpu, "epochs": int(clf.n_iter_),
    "first_step": float(clf.eta0_ / (1.0 + clf.t0_)), "alpha": float(clf.alpha_)}}))
"""


def fit(tree: Path, name: str, seed: int, **params) -> dict:
    """One default fit (plus ``params``) of the package under ``tree`` in a single-threaded
    child process."""
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", NUMBA_NUM_THREADS="1", MKL_NUM_THREADS="1",
               OOC_KERNELS_PROGRESS="0")
    code = CHILD.format(args=(name, seed, params))
    out = subprocess.run([sys.executable, "-c", code], env=env,
                         capture_output=True, text=True, check=True,
                         cwd=tempfile.gettempdir())
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def svc(name: str) -> dict:
    """``SVC()`` on the same split: accuracy and CPU seconds."""
    from sklearn import datasets
    from sklearn.model_selection import train_test_split
    from sklearn.svm import SVC

    X, y = getattr(datasets, "load_" + name)(return_X_y=True)
    X, Xt, y, yt = train_test_split(X, y, test_size=0.25, random_state=0)
    cpu = time.process_time()
    model = SVC().fit(X, y)
    return {"accuracy": float(model.score(Xt, yt)), "cpu_seconds": time.process_time() - cpu}


VW_CHILD = r"""
import json, sys, tempfile, warnings
from pathlib import Path
warnings.simplefilter("ignore")
sys.path.insert(0, {bench!r})
from sklearn import datasets
from sklearn.model_selection import train_test_split
from dsg_defaults_suite import VW_NN, _vw
name = {name!r}
X, y = getattr(datasets, "load_" + name)(return_X_y=True)
X, Xt, y, yt = train_test_split(X, y, test_size=0.25, random_state=0)
with tempfile.TemporaryDirectory() as work:
    print("RESULT", json.dumps(_vw((X, y, Xt, yt, None), VW_NN, Path(work))))
"""

#: Epochs at which the default is stopped for the accuracy-against-time curve (``--vw``).
CURVE_EPOCHS = (1, 2, 4, 8, 16)


def vw(name: str) -> dict:
    """VW ``--nn 32 --passes 3`` on the 75/25 split, in a single-threaded child process."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", VW_CHILD.format(
        bench=str(ROOT / "benchmarks"), name=name)], env=env, capture_output=True, text=True,
        check=True, cwd=tempfile.gettempdir())
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--baseline", type=Path, required=True,
                   help="a folder holding the baseline's ooc_kernels package")
    p.add_argument("--current", type=Path, default=ROOT,
                   help="a folder holding the current ooc_kernels package (default: this "
                        "checkout)")
    p.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=PROBLEMS)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--vw", action="store_true",
                   help="also VW --nn 32 and the current default stopped early (see above)")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    trees = {"baseline": args.baseline, "current": args.current}
    for tree in trees.values():  # warm each version's compiled kernels
        fit(tree, "wine", 0)
    results = []
    for name in args.problems:
        runs = {k: [] for k in trees}
        for seed in range(args.seeds):
            for key, tree in trees.items():
                r = fit(tree, name, seed)
                runs[key].append(r)
                print(name, seed, key, json.dumps(r), flush=True)
        row = {"problem": name, "svc": svc(name)}
        if args.vw:
            row["vw_nn32"] = [vw(name) for _ in range(args.seeds)]
            row["curve"] = [dict(fit(args.current, name, 0, max_iter=e), max_iter=e)
                            for e in CURVE_EPOCHS]
            print(name, "vw", row["vw_nn32"], "curve", row["curve"], flush=True)
        for key, rs in runs.items():
            row[key] = {"accuracy": statistics.median(r["accuracy"] for r in rs),
                        "cpu_seconds": statistics.median(r["cpu_seconds"] for r in rs),
                        "epochs": statistics.median(r["epochs"] for r in rs), "runs": rs}
        results.append(row)
        print(name, {k: (row[k]["accuracy"], round(row[k]["cpu_seconds"], 2))
                     for k in trees}, "SVC", row["svc"]["accuracy"], flush=True)
        if args.out:
            args.out.write_text(json.dumps({"command": " ".join(sys.argv),
                                            "load_average": os.getloadavg(),
                                            "results": results}, indent=1))
    return results


if __name__ == "__main__":
    main()
