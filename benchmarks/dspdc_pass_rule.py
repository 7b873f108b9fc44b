"""DSPDC out of core: passes per read from the task's progress, code against code.

The peer table's stores (``benchmarks/dspdc_peers.py``: ``--n`` x ``--p`` rows, chunks of
``--chunk-size`` rows, conditioned or raw columns, ``alpha = 1e-4``; ridge, elastic net with
``l1_ratio = 0.5``, logistic regression), each fitted out of core from the store at the
estimator's defaults with ``tol`` = each target and ``random_state=0``, by the library of each
``--trees`` entry (``NAME=PATH``: a ``git archive`` of a commit, or ``.``), in a child process
of its own per tree and problem that runs one warm-up fit (numba's compilation and the imports
excluded) and then the fits to ``1e-4`` and ``1e-6``; the trees alternated run after run (A, B,
A, B ...), ``--repeats`` runs each, medians of the CPU seconds of the fits
(``time.process_time``: every thread, the read ahead included), with the epochs and the
passes over the duals of the certified iterate.  ``--rule GAIN:MAX`` (a tree name suffix
``NAME@GAIN:MAX``) sets ``PASS_GAIN`` and ``AUTO_MAX_LOCAL_PASSES`` of
``ooc_kernels.families.dspdc._pass_rule`` in that child (a sweep of the rule's constants;
``MAX`` = 3 gives 3 passes per read), and ``NAME@GAIN:MAX:all`` runs the rule for every
loss (``AUTO_RULE_LOSSES``).

    git archive <commit> ooc_kernels | tar -x -C /tmp/before
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python benchmarks/dspdc_pass_rule.py --trees before=/tmp/before after=. \\
        --data conditioned --repeats 3 --out benchmarks/results/dspdc_pass_rule.json
    python benchmarks/dspdc_pass_rule.py --table benchmarks/results/dspdc_pass_rule.json
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
from _results import run_or_table

TARGETS = (1e-4, 1e-6)
#: name: (task, estimator parameters)
PROBLEMS = {"ridge": ("regression", {}),
            "elastic_net": ("regression", {"l1_ratio": 0.5}),
            "logistic": ("classification", {})}


def child(spec: dict) -> dict:
    """The fits of one tree on one problem, in this process."""
    import xarray as xr

    import ooc_kernels as ok

    if spec.get("rule"):
        from ooc_kernels.families.dspdc import _pass_rule

        gain, most, *every = spec["rule"]
        _pass_rule.PASS_GAIN, _pass_rule.AUTO_MAX_LOCAL_PASSES = float(gain), float(most)
        if every:
            _pass_rule.AUTO_RULE_LOSSES = ("squared", "logistic", "smoothed_hinge")
    task, params = PROBLEMS[spec["problem"]]
    Est = ok.DSPDCRegressor if task == "regression" else ok.DSPDCClassifier
    ds = xr.open_zarr(spec["store"])
    out = {}
    for target in (1e-2,) + TARGETS:                             # the first: warm-up
        est = Est(tol=target, random_state=0, progress=False, **params)
        start = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")                      # a fit that stops at max_iter
            est.fit(ds)
        cpu = time.process_time() - start
        last = est.gap_history_[-1]
        out[str(target)] = {"cpu_seconds": cpu, "epochs": int(est.n_iter_),
                            "passes": float(last["passes"]),
                            "relative_gap": float(last["relative_gap"])}
    return out


def run(args) -> dict:
    sys.path.insert(0, str(Path(__file__).parent))
    from dspdc_peers import write_store

    folder = Path(tempfile.mkdtemp(prefix="dspdc-pass-rule-"))
    trees = {}
    for entry in args.trees:
        name, path = entry.split("=", 1)
        rule = name.split("@", 1)[1].split(":") if "@" in name else None
        trees[name] = (str(Path(path).resolve()), rule)
    out = {"n": args.n, "p": args.p, "chunk_size": args.chunk_size, "repeats": args.repeats,
           "trees": {k: v[0] for k, v in trees.items()}, "load_start": os.getloadavg(),
           "results": []}
    for kind in args.data:
        stores = {t: write_store(folder / f"{kind}_{t}.zarr", args.n, args.p,
                                 args.chunk_size, t, s, kind)
                  for t, s in (("regression", 1), ("classification", 2))}
        for problem in args.problems:
            spec = {"problem": problem, "store": str(stores[PROBLEMS[problem][0]])}
            runs = {name: [] for name in trees}
            for _ in range(args.repeats):
                for name, (path, rule) in trees.items():        # alternated
                    env = dict(os.environ, PYTHONPATH=path)
                    res = subprocess.run(
                        [sys.executable, __file__, "--child",
                         json.dumps({**spec, "rule": rule})],
                        env=env, capture_output=True, text=True, check=True)
                    runs[name].append(json.loads(res.stdout.strip().splitlines()[-1]))
                    print(json.dumps({"data": kind, "problem": problem, "tree": name,
                                      **runs[name][-1]}), flush=True)
            for name, rs in runs.items():
                for target in TARGETS:
                    cells = [r[str(target)] for r in rs]
                    out["results"].append({
                        "data": kind, "problem": problem, "tree": name, "target": target,
                        "median_cpu_seconds": float(np.median([c["cpu_seconds"]
                                                               for c in cells])),
                        "median_epochs": float(np.median([c["epochs"] for c in cells])),
                        "median_passes": float(np.median([c["passes"] for c in cells])),
                        "runs": cells})
    out["load_end"] = os.getloadavg()
    return out


def table(result: dict) -> str:
    """Markdown: per data and problem, each tree's median CPU s (epochs, passes) to
    ``1e-4`` / ``1e-6``."""
    names = list(result["trees"])
    cells = {}
    for r in result["results"]:
        cells.setdefault((r["data"], r["problem"]), {}).setdefault(r["tree"], {})[
            r["target"]] = r
    lines = ["| data | problem | " + " | ".join(f"{n}: CPU s (epochs, passes) to 1e-4 / 1e-6"
                                               for n in names) + " |",
             "|---|---|" + "---|" * len(names)]
    for (data, problem), by_tree in cells.items():
        row = []
        for n in names:
            a, b = (by_tree[n][t] for t in TARGETS)
            row.append(" / ".join(f"{c['median_cpu_seconds']:.3f} ({c['median_epochs']:g}, "
                                  f"{c['median_passes']:.1f})" for c in (a, b)))
        lines.append(f"| {data} | {problem} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trees", nargs="+", default=["working=."],
                        help="NAME=PATH (NAME@GAIN:MAX sets the pass rule's constants)")
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=list(PROBLEMS))
    parser.add_argument("--data", nargs="+", default=["conditioned"],
                        choices=["conditioned", "raw"])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--table", type=Path, default=None, help="print a result's table")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(json.loads(args.child))))
        return
    run_or_table(args, run, table)


if __name__ == "__main__":
    main()
