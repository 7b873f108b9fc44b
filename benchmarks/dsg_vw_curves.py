"""Accuracy against time: ``DSGClassifier()`` stopped after a few epochs, against Vowpal
Wabbit ``--nn 32`` after 1 to 3 passes.

The problems are those of :mod:`dsg_defaults_suite` (``binary10``: 10 inputs of which 5
carry the label, ``--n`` training rows in a Zarr store fitted out of core, 20,000 test
rows; ``digits``: scikit-learn's digits, 75/25 split, in memory).  For every seed the
default is fitted with ``max_iter`` set to each of ``--budgets`` (0: the default stopping
rule), then VW with each of ``--vw-passes``, interleaved; every run records its test
accuracy, wall and CPU seconds (VW runs in this process: its CPU seconds include writing
the rows in its text format and parsing them), and for DSG the CPU seconds of its setup
(everything before the first epoch) and whether ``bandwidth="auto"`` took per-input
widths.  Medians over the seeds are printed and written with every run.

    python benchmarks/dsg_vw_curves.py --problems digits binary10 --n 20000 --seeds 3 \\
        --out benchmarks/results/dsg_vw_curves.json
"""

from __future__ import annotations

import argparse
import json
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


def _dsg_run(suite, problem, seed, budget, clock):
    clock["setup"] = 0.0
    params = {} if budget == 0 else {"max_iter": budget}
    with warnings.catch_warnings():  # a budget of a few epochs does not converge
        warnings.simplefilter("ignore")
        r = suite._dsg(problem, seed, **params)
    return {"accuracy": r["accuracy"], "seconds": r["seconds"],
            "cpu_seconds": r["cpu_seconds"], "setup_cpu_seconds": clock["setup"],
            "epochs": r["epochs"], "per_input_widths": isinstance(r["bandwidth"], list)}


def _median(runs, key):
    return round(statistics.median(r[key] for r in runs), 4)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--problems", nargs="+", default=["digits", "binary10"])
    p.add_argument("--n", type=int, default=20_000, help="training rows of binary10")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--budgets", type=int, nargs="+", default=[1, 2, 4, 8, 0],
                   help="max_iter of the DSG fits (0: the default stopping rule)")
    p.add_argument("--vw-passes", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).parent))
    import dsg_defaults_suite as suite

    clock = {"setup": 0.0}
    _setup_clock(clock)
    work = Path(tempfile.mkdtemp(prefix="dsg_vw_curves_"))
    results = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            problems = suite.problems(args.problems, args.n, 0, work)
            for name, problem in problems.items():
                _dsg_run(suite, problem, 0, 1, clock)  # warm-up: compiled kernels, pools
                runs = {f"dsg max_iter={b}": [] for b in args.budgets}
                runs.update({f"vw nn32 passes={k}": [] for k in args.vw_passes})
                for seed in range(args.seeds):
                    for b in args.budgets:
                        r = _dsg_run(suite, problem, seed, b, clock)
                        runs[f"dsg max_iter={b}"].append(r)
                        print(name, seed, f"dsg max_iter={b}", r, flush=True)
                    for k in args.vw_passes:
                        r = suite._vw(problem, f"--nn 32 --passes {k}", work)
                        runs[f"vw nn32 passes={k}"].append(r)
                        print(name, seed, f"vw nn32 passes={k}", r, flush=True)
                summary = {key: {m: _median(rs, m) for m in rs[0]
                                 if isinstance(rs[0][m], float)}
                           for key, rs in runs.items()}
                for key, s in summary.items():
                    print(name, key, s, flush=True)
                results.append({"problem": name, "n_train": len(problem[0]),
                                "seeds": args.seeds, "median": summary, "runs": runs})
                if args.out:
                    args.out.parent.mkdir(parents=True, exist_ok=True)
                    args.out.write_text(json.dumps(results, indent=1) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


if __name__ == "__main__":
    main()
