"""Defaults on a hard 10-class signal problem (``signal_hard``): the default against a small tuned grid.

Each setting runs in its own single-threaded process (synchronous scheduler, ``n_jobs=1``)
on the ``signal_hard`` problem of ``benchmarks/dsg_defaults_suite.py`` (``--n`` training
rows in a Zarr store of 10,000-row chunks, fitted out of core; 20,000 test rows).  The fit
runs one epoch at a time (``warm_start=True, max_iter=1``: the same steps and stopping rule
as one fit) so that the test accuracy after every epoch is known; CPU seconds
(``time.process_time()``) count the fitting calls only, not the scoring, and a small fit of
each version first compiles its kernels, which are not counted.  A setting stops
where the default stopping rule stops it, or after ``--max-epochs``.  The settings alternate
seed by seed (A, B, A, B ...) so that a loaded machine slows them alike.

    python benchmarks/dsg_hard_signal.py --n 300000 --max-epochs 40 --setting '{}' \\
        --setting '{"n_features": 16384, "alpha": 3.3333e-07, "bandwidth_multiple": 0.35}' \\
        --out benchmarks/results/dsg_hard_signal.json

``--seeds N`` runs the seeds 0 to N - 1 (the classifier's ``random_state``: its features,
the order of its rows; the rows are the same), ``--seed S`` (repeatable) the seeds given:

    python benchmarks/dsg_hard_signal.py --n 300000 --max-epochs 5 --seed 1 --seed 2 \\
        --setting '{"n_features": 16384, "alpha": 3.3333e-07, "bandwidth_multiple": 0.35}' \\
        --out benchmarks/results/dsg_hard_signal_tuned_seeds12.json

Every epoch's line (``EPOCH k [cpu_seconds, test_accuracy]``) and the setup's choices
(``SETUP``) are printed as the fit runs, so a run stopped early still leaves its curve.
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
from pathlib import Path
from dsg_defaults_suite import problems
n, work, seed, params, max_epochs = {args!r}
X, y, Xt, yt, store = problems(["signal_hard"], 0, n, Path(work))["signal_hard"]
if "bandwidth_multiple" in params:
    from dsg_defaults_suite import _median
    params = dict(params)
    params["bandwidth"] = params.pop("bandwidth_multiple") * _median(X)
clf = ok.DSGClassifier(random_state=seed, progress=False, n_jobs=1, scheduler="sync",
                       warm_start=True, max_iter=1, **params)
cpu, curve, epochs = 0.0, [], 0
while True:
    c = time.process_time()
    clf.fit(store)
    cpu += time.process_time() - c
    epochs += 1
    curve.append([round(cpu, 2), float(clf.score(Xt, yt))])
    print("EPOCH", epochs, curve[-1], flush=True)
    if epochs == 1:  # what the setup chose, known before the run ends
        print("SETUP", json.dumps({{"n_features": int(clf._config.n_blocks
                                                     * clf._config.block_size),
                                   "alpha": float(clf.alpha_),
                                   "bandwidth": float(np.asarray(clf.bandwidth_).ravel()[0])}}),
              flush=True)
    if not clf.stop_reason_.startswith("max_iter") or epochs >= max_epochs:
        break
print("RESULT", json.dumps({{
    "params": {params_in!r}, "seed": seed, "accuracy": curve[-1][1], "cpu_seconds": cpu,
    "epochs": epochs, "stop_reason": clf.stop_reason_, "curve": curve,
    "n_features": int(clf._config.n_blocks * clf._config.block_size),
    "alpha": float(clf.alpha_), "bandwidth": float(np.asarray(clf.bandwidth_).ravel()[0]),
    "bandwidth_scores": {{str(k): v for k, v in (clf.bandwidth_scores_ or {{}}).items()}},
    "setup_scores": None if getattr(clf, "setup_scores_", None) is None else
        {{f"{{k[0]}} {{k[1]}}": v for k, v in clf.setup_scores_.items()}}}}))
"""


def _fit(tree: Path, n: int, work: Path, seed: int, params: dict, max_epochs: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", NUMBA_NUM_THREADS="1", MKL_NUM_THREADS="1",
               OOC_KERNELS_PROGRESS="0")
    code = CHILD.format(bench=str(ROOT / "benchmarks"),
                        args=(n, str(work), seed, params, max_epochs), params_in=params)
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                            text=True, cwd=tempfile.gettempdir())
    result = None
    for line in proc.stdout:  # the epochs as they end
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT "):])
        else:
            print("  ", line.rstrip(), flush=True)
    if proc.wait() != 0 or result is None:
        raise RuntimeError(f"the fit of {params} (seed {seed}) failed: exit {proc.returncode}")
    return result


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tree", type=Path, action="append",
                   help="a folder holding an ooc_kernels package (repeat to compare "
                        "versions; default: this checkout)")
    p.add_argument("--n", type=int, default=300_000)
    seeds = p.add_mutually_exclusive_group()
    seeds.add_argument("--seeds", type=int, default=1,
                       help="run the seeds 0 to SEEDS - 1 (the classifier's random_state)")
    seeds.add_argument("--seed", type=int, action="append",
                       help="run this seed only (repeat for several), e.g. --seed 1 --seed 2")
    p.add_argument("--setting", action="append", type=json.loads,
                   help="parameters on top of the default (JSON); 'bandwidth_multiple' "
                        "multiplies the median distance of the standardized rows")
    p.add_argument("--max-epochs", type=int, default=60)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    trees = args.tree or [ROOT]
    settings = args.setting or [{}]
    runs = {}
    with tempfile.TemporaryDirectory(prefix="dsg_hard_signal_") as tmp:
        for i, tree in enumerate(trees):  # compile each version's kernels: not counted
            (Path(tmp) / f"warm{i}").mkdir()
            _fit(tree, 2000, Path(tmp) / f"warm{i}", 0, {}, 1)
        for seed in args.seed or range(args.seeds):
            for tree in trees:
                for params in settings:
                    key = f"{tree} {json.dumps(params, sort_keys=True)}"
                    work = Path(tmp) / f"run{len(sum(runs.values(), []))}"
                    work.mkdir()
                    r = _fit(tree, args.n, work, seed, params, args.max_epochs)
                    r["tree"] = str(tree)
                    runs.setdefault(key, []).append(r)
                    print(key, seed, json.dumps({k: v for k, v in r.items() if k != "curve"}),
                          flush=True)
                    results = [{"setting": k,
                                "accuracy": statistics.median(x["accuracy"] for x in rs),
                                "cpu_seconds": statistics.median(x["cpu_seconds"] for x in rs),
                                "runs": rs} for k, rs in runs.items()]
                    if args.out:
                        args.out.write_text(json.dumps({"command": " ".join(sys.argv),
                                                        "n": args.n, "results": results},
                                                       indent=1))
    return runs


if __name__ == "__main__":
    main()
