"""``DSGClassifier()`` of two source trees (a baseline and this one) at a few epoch budgets,
interleaved, against Vowpal Wabbit ``--nn 32``, by CPU seconds.

For every problem, seed and budget (``max_iter``; 0: the default stopping rule) the
baseline and the current tree fit, one after the other, each in its own child process
(``--baseline`` is prepended to that child's ``sys.path``; the current tree is this
checkout), after a warm-up fit in the same process (so that neither pays the numba cache
load); each records its test accuracy, the CPU seconds of ``fit`` (every thread of the
child) and of its setup (``_initialize``: everything before the first epoch), and the
epochs.  VW runs in this process (its CPU seconds include writing its text format and
parsing it).  Problems as in :mod:`dsg_defaults_suite` (``binary10`` from a Zarr store
written once, ``digits`` in memory).  Medians over the seeds are printed and written.

    git archive <commit> ooc_kernels | tar -x -C /tmp/old
    python benchmarks/setup_before_after.py --baseline /tmp/old --problems digits binary10 \\
        --n 20000 --seeds 3 --budgets 1 2 4 0 --vw-passes 3 6 \\
        --out benchmarks/results/setup_before_after.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, sys, time, warnings
sys.path.insert(0, {tree!r})
sys.path.insert(1, {bench!r})
import numpy as np
import dsg_defaults_suite as suite
import ooc_kernels as ok
from dsg_vw_curves import _setup_clock

clock = {{"setup": 0.0}}
_setup_clock(clock)  # the CPU seconds of every _initialize
problem, store, seed, budget = {problem!r}, {store!r}, {seed}, {budget}
if problem == "digits":
    X, y, Xt, yt, data = suite.problems(["digits"], 0, 0, None)["digits"]
    data = (X, y)
else:
    import xarray as xr
    data = (xr.open_zarr(store),)
    Xt, yt = suite._binary_rows(suite.N_TEST, 1)
params = {{}} if budget == 0 else {{"max_iter": budget}}
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # a budget of a few epochs does not converge
    ok.DSGClassifier(random_state=seed + 100, max_iter=1, progress=False).fit(*data)
    clock["setup"] = 0.0
    start = time.process_time()
    clf = ok.DSGClassifier(random_state=seed, progress=False, **params).fit(*data)
    cpu = time.process_time() - start
print(json.dumps({{"accuracy": float(clf.score(Xt, yt)), "cpu_seconds": cpu,
                  "setup_cpu_seconds": clock["setup"], "epochs": int(clf.n_iter_),
                  "per_input_widths": bool(np.ndim(clf.bandwidth_))}}))
"""


def _child(tree: str, problem: str, store: str, seed: int, budget: int) -> dict:
    code = CHILD.format(tree=tree, bench=str(HERE), problem=problem, store=store,
                        seed=seed, budget=budget)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--baseline", required=True, help="root of the baseline source tree")
    p.add_argument("--problems", nargs="+", default=["digits", "binary10"])
    p.add_argument("--n", type=int, default=20_000, help="training rows of binary10")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--budgets", type=int, nargs="+", default=[1, 2, 4, 0])
    p.add_argument("--vw-passes", type=int, nargs="+", default=[3, 6])
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    sys.path.insert(0, str(HERE))
    import dsg_defaults_suite as suite

    trees = {"baseline": str(Path(args.baseline).resolve()),
             "current": str(HERE.parent)}
    work = Path(tempfile.mkdtemp(prefix="setup_before_after_"))
    runs = []
    try:
        data = suite.problems(args.problems, args.n, 1000, work)
        for problem in args.problems:
            store = str(work / f"{problem}.zarr") if problem != "digits" else ""
            for passes in args.vw_passes:
                r = suite._vw(data[problem], f"--nn 32 --passes {passes}", work)
                runs.append({"problem": problem, "learner": f"vw --nn 32 x{passes}",
                             "accuracy": r["accuracy"], "cpu_seconds": r["cpu_seconds"]})
                print(runs[-1], flush=True)
            for seed in range(args.seeds):
                for budget in args.budgets:
                    for name, tree in trees.items():  # interleaved
                        r = _child(tree, problem, store, seed, budget)
                        runs.append({"problem": problem, "learner": name, "seed": seed,
                                     "budget": budget, **r})
                        print(runs[-1], flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary = {}
    for r in runs:
        key = f"{r['problem']} {r['learner']}" + (f" max_iter={r['budget']}" if "budget" in r
                                                  else "")
        summary.setdefault(key, []).append(r)
    medians = {k: {m: round(statistics.median(r[m] for r in v), 4)
                   for m in ("accuracy", "cpu_seconds", "setup_cpu_seconds", "epochs")
                   if m in v[0]} for k, v in summary.items()}
    for k, v in medians.items():
        print(k, v)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()},
                                        "medians": medians, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
