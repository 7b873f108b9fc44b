"""Accuracy against time: ``DSGClassifier()`` stopped after a few epochs, against Vowpal
Wabbit ``--nn 32`` after 1 to 3 passes (and optionally VW's best linear setting and
scikit-learn's ``HistGradientBoostingClassifier()``).

Problems:

* ``binary10`` and ``digits``: those of :mod:`dsg_defaults_suite` (``binary10``: 10 inputs
  of which 5 carry the label, ``--n`` training rows in a Zarr store fitted out of core,
  20,000 test rows; ``digits``: scikit-learn's digits, 75/25 split, in memory);
* ``binary100``: ``ok.make_dataset("nonlinear_binary", ...)`` with 100 inputs of which the
  first ``--informative`` carry the label (the rest are noise), ``--n-binary100`` training
  rows (Zarr, chunks of 10,000 rows, fitted out of core; ``random_state=0``,
  ``split="train"``) and ``--n-test-binary100`` test rows (``split="test"``);
* ``digits_deformed``: ``ok.make_dataset("digits_deformed", ...)`` with its default
  deformation, ``--n-deformed`` training rows (Zarr, out of core) and ``--n-test-deformed``
  test rows (``split="test"``: deformations of source images the training split never
  uses).

For every seed the default is fitted with ``max_iter`` set to each of ``--budgets`` (0: the
default stopping rule), then each ``--variant`` (parameters on top of the default, with its
stopping rule), then VW ``--nn 32`` with each of ``--vw-passes``, then (with
``--vw-linear``) VW's best linear setting among those of :mod:`dsg_defaults_suite`
(picked on seed 0's test accuracy; VW is deterministic, later seeds rerun it for its time)
and (with ``--hgb``) ``HistGradientBoostingClassifier(random_state=seed)`` in memory, all
interleaved; every run records its test accuracy, wall and CPU seconds of this process (VW
runs in it: its CPU seconds include writing the rows in its text format and parsing them)
and the 1-minute load average at its end, and for DSG the CPU seconds of its setup
(everything before the first epoch), its ``bandwidth_`` and whether it has per-input widths.
Medians over the seeds are printed and written with every run (and the library's git commit
and its changed files), with, for every VW
``--nn 32`` budget, the DSG fit with the most epochs whose median CPU (and wall) seconds
end by VW's (``dsg_at_vw``; ``null``: no DSG model by then).

    python benchmarks/dsg_vw_curves.py --problems digits binary10 --n 20000 --seeds 3 \\
        --out benchmarks/results/dsg_vw_curves.json
    python benchmarks/dsg_vw_curves.py --problems binary100 --n-binary100 20000 --seeds 3 \\
        --budgets 1 2 4 0 --vw-passes 1 2 3 6 --vw-linear --hgb \\
        --out benchmarks/results/dsg_vw_curves_binary100_20k.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path


def _setup_clock(clock: dict) -> None:
    """Count the CPU seconds of every DSG setup (``_initialize``) into ``clock["setup"]``."""
    from ooc_kernels.families.dsg import estimators as dsg

    real = dsg._DSGEstimator._initialize

    def initialize(self, *args, **kwargs):
        start = time.process_time()
        try:
            return real(self, *args, **kwargs)
        finally:
            clock["setup"] += time.process_time() - start

    dsg._DSGEstimator._initialize = initialize


def _dsg_run(suite, problem, seed, budget, clock, **variant):
    clock["setup"] = 0.0
    params = dict(variant) if budget == 0 else {**variant, "max_iter": budget}
    with warnings.catch_warnings():  # a budget of a few epochs does not converge
        warnings.simplefilter("ignore")
        r = suite._dsg(problem, seed, **params)
    return {"accuracy": r["accuracy"], "seconds": r["seconds"],
            "cpu_seconds": r["cpu_seconds"], "setup_cpu_seconds": clock["setup"],
            "epochs": r["epochs"], "per_input_widths": isinstance(r["bandwidth"], list),
            "bandwidth": r["bandwidth"]}


def _tree() -> dict:
    """The library's commit and its files that differ from it (empty outside a checkout)."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                              text=True, check=True).stdout.strip()
        changed = subprocess.run(["git", "status", "--short", "--", "ooc_kernels"], cwd=root,
                                 capture_output=True, text=True, check=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return {}
    return {"commit": head, "changed": [line.strip() for line in changed if line.strip()]}


def _median(runs, key):
    return round(statistics.median(r[key] for r in runs), 4)


def _generated(name, n, n_test, work: Path, **params):
    """``n`` training rows of generator ``name`` in a Zarr store (chunks of 10,000 rows,
    opened lazily for DSG, also read into memory for VW and gradient boosting) and
    ``n_test`` test rows (``split="test"``) in memory: the tuple of :mod:`dsg_defaults_suite`."""
    import numpy as np
    import xarray as xr

    import ooc_kernels as ok

    train = ok.make_dataset(name, work / f"{name}.zarr", n, chunk_size=10_000,
                            random_state=0, split="train", progress=False, **params)
    test = ok.make_dataset(name, work / f"{name}_test.zarr", n_test, chunk_size=10_000,
                           random_state=0, split="test", progress=False, **params)
    store = xr.open_zarr(train)
    X, y = np.asarray(store["X"]), np.asarray(store["y"])  # the benchmark's own copy
    held = xr.open_zarr(test)
    return (X, y, np.asarray(held["X"]), np.asarray(held["y"]), store)


def _problems(suite, args, work: Path) -> dict:
    out = suite.problems([p for p in args.problems if p in ("binary10", "digits")],
                         args.n, 0, work)
    if "binary100" in args.problems:
        out["binary100"] = _generated("nonlinear_binary", args.n_binary100,
                                      args.n_test_binary100, work, n_features=100,
                                      n_informative=args.informative)
    if "digits_deformed" in args.problems:
        out["digits_deformed"] = _generated("digits_deformed", args.n_deformed,
                                            args.n_test_deformed, work)
    return {name: out[name] for name in args.problems}


def _timed(fit):
    """Run ``fit`` (returns the test accuracy): accuracy, wall and CPU seconds, load."""
    t, cpu = time.perf_counter(), time.process_time()
    accuracy = fit()
    return {"accuracy": accuracy, "seconds": time.perf_counter() - t,
            "cpu_seconds": time.process_time() - cpu, "load": os.getloadavg()[0]}


def _hgb_run(problem, seed):
    from sklearn.ensemble import HistGradientBoostingClassifier

    X, y, Xt, yt, _ = problem

    def fit():
        hgb = HistGradientBoostingClassifier(random_state=seed).fit(X, y)
        return float(hgb.score(Xt, yt))
    return _timed(fit)


def _with_load(r):
    return {**r, "load": os.getloadavg()[0]}


def _at_vw(summary, budgets, passes, clock):
    """For every VW ``--nn 32`` budget: the DSG fit with the most epochs whose median
    ``clock`` seconds end by VW's (``None``: no DSG model by then)."""
    out = {}
    for k in passes:
        vw = summary[f"vw nn32 passes={k}"][clock]
        ended = [b for b in budgets if summary[f"dsg max_iter={b}"][clock] <= vw]
        best = max(ended, key=lambda b: summary[f"dsg max_iter={b}"]["epochs"], default=None)
        out[f"vw nn32 passes={k}"] = None if best is None else f"dsg max_iter={best}"
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--problems", nargs="+", default=["digits", "binary10"],
                   choices=["digits", "binary10", "binary100", "digits_deformed"])
    p.add_argument("--n", type=int, default=20_000, help="training rows of binary10")
    p.add_argument("--n-binary100", type=int, default=20_000,
                   help="training rows of binary100")
    p.add_argument("--n-test-binary100", type=int, default=20_000)
    p.add_argument("--informative", type=int, default=5,
                   help="inputs of binary100 that carry the label (the first ones)")
    p.add_argument("--n-deformed", type=int, default=20_000,
                   help="training rows of digits_deformed")
    p.add_argument("--n-test-deformed", type=int, default=10_000)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--budgets", type=int, nargs="+", default=[1, 2, 4, 8, 0],
                   help="max_iter of the DSG fits (0: the default stopping rule)")
    p.add_argument("--vw-passes", type=int, nargs="*", default=[1, 2, 3],
                   help="passes of VW --nn 32 (none: no VW network)")
    p.add_argument("--vw-linear", action="store_true",
                   help="also VW's best linear setting (dsg_defaults_suite.VW_LINEAR)")
    p.add_argument("--hgb", action="store_true",
                   help="also HistGradientBoostingClassifier() in memory")
    p.add_argument("--variant", action="append", default=[], type=json.loads,
                   help="a JSON dict of DSGClassifier parameters fitted with the stopping "
                        "rule after the default's budgets (repeatable)")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).parent))
    import dsg_defaults_suite as suite

    tree = _tree()
    clock = {"setup": 0.0}
    _setup_clock(clock)
    work = Path(tempfile.mkdtemp(prefix="dsg_vw_curves_"))
    results = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            problems = _problems(suite, args, work)
            for name, problem in problems.items():
                _dsg_run(suite, problem, 0, 1, clock)  # warm-up: compiled kernels, pools
                runs = {f"dsg max_iter={b}": [] for b in args.budgets}
                runs.update({f"vw nn32 passes={k}": [] for k in args.vw_passes})
                linear = None
                for seed in range(args.seeds):
                    todo = [(f"dsg max_iter={b}",
                             lambda b=b: _with_load(_dsg_run(suite, problem, seed, b, clock)))
                            for b in args.budgets]
                    todo += [(f"dsg {json.dumps(v, sort_keys=True)}",
                              lambda v=v: _with_load(_dsg_run(suite, problem, seed, 0, clock,
                                                              **v)))
                             for v in args.variant]
                    todo += [(f"vw nn32 passes={k}", lambda k=k: _with_load(
                        suite._vw(problem, f"--nn 32 --passes {k}", work)))
                        for k in args.vw_passes]
                    if args.vw_linear and linear is None:
                        tried = {}
                        for a in suite.VW_LINEAR:
                            tried[a] = _with_load(suite._vw(problem, a, work))
                            print(name, seed, f"vw linear {a}", tried[a], flush=True)
                        linear = max(tried, key=lambda a: tried[a]["accuracy"])
                        runs["vw linear"] = [{**tried[linear], "args": linear}]
                    elif args.vw_linear:
                        todo.append(("vw linear", lambda: {
                            **_with_load(suite._vw(problem, linear, work)), "args": linear}))
                    if args.hgb:
                        todo.append(("hgb", lambda: _hgb_run(problem, seed)))
                    for key, run in todo:
                        r = run()
                        runs.setdefault(key, []).append(r)
                        print(name, seed, key, r, flush=True)
                summary = {key: {m: _median(rs, m) for m in rs[0]
                                 if isinstance(rs[0][m], (float, int)) and m != "bandwidth"
                                 and not isinstance(rs[0][m], bool)}
                           for key, rs in runs.items()}
                for key, s in summary.items():
                    print(name, key, s, flush=True)
                at_vw = {c: _at_vw(summary, args.budgets, args.vw_passes, c)
                         for c in ("cpu_seconds", "seconds")}
                print(name, "dsg at vw", at_vw, flush=True)
                results.append({"problem": name, "n_train": len(problem[0]),
                                "n_test": len(problem[2]),
                                "n_features_in": int(problem[0].shape[1]),
                                "seeds": args.seeds, "library": tree, "median": summary,
                                "dsg_at_vw": at_vw,
                                "runs": runs})
                if args.out:
                    args.out.parent.mkdir(parents=True, exist_ok=True)
                    args.out.write_text(json.dumps(results, indent=1) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


if __name__ == "__main__":
    main()
