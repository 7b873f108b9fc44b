"""Where a default DSPDC fit's CPU seconds go, in memory and out of core, and code against code.

The peer table's problem (``benchmarks/dspdc_peers.py``: 50,000 x 50 conditioned rows in a
Zarr store of 10,000-row chunks, ``alpha = 1e-4``), fitted by ``ok.DSPDCRegressor`` /
``ok.DSPDCClassifier`` at their defaults with ``tol = 1e-4``, from the store (out of core)
and from the same rows as NumPy arrays (in memory).  Two parts (``--part``):

``breakdown``
    Fits of each kind with the functions that make each part wrapped in timers of the
    calling thread's CPU clock (``time.thread_time``; a part's time excludes the parts that
    run inside it, so that they add up): input validation and conversion, the statistics
    passes (column moments, ``Lambda``), the solver's rows (standardized float64), the
    kernel, the task's other work (``A_k^T y_k``, ``A_k^T dy``, the conjugates, the
    uniforms), the duals store, the primal value's losses, Dask's graphs and scheduling,
    the callbacks after a round, and the rest of the fit; plus the CPU seconds of other
    threads outside these parts (reading ahead, Dask's workers) and of the whole process.
    Medians of ``--repeats`` fits.
``compare``
    The CPU seconds of whole fits (``time.process_time`` of a child process that imports
    the library from ``--trees``: a ``git archive`` of a commit, or the working tree ``.``),
    the trees alternated run after run (A, B, A, B ...), ``--repeats`` runs each, medians;
    every fit after one warm-up fit in the same process (numba's compilation excluded).
    The coefficients of each tree's first fit are kept, so that results can be compared
    bit for bit (``identical``).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python benchmarks/dspdc_profile.py --part breakdown --repeats 3 \\
        --out benchmarks/results/dspdc_profile.json
    git archive <commit> ooc_kernels | tar -x -C /tmp/before
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python benchmarks/dspdc_profile.py --part compare --trees /tmp/before . \\
        --repeats 5 --out benchmarks/results/dspdc_profile_compare.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
#: The problems: (name, task, estimator, parameters).
PROBLEMS = {"ridge": ("regression", "DSPDCRegressor", {}),
            "elastic_net": ("regression", "DSPDCRegressor", {"l1_ratio": 0.5}),
            "logistic": ("classification", "DSPDCClassifier", {})}
#: Parts of ``breakdown``: (name, functions as ``module:qualified name``).  Each function is
#: wrapped with a timer of its thread's CPU clock; a part's time excludes the parts that run
#: inside it, so the parts add up.
PARTS = [
    ("whole fit", ["ooc_kernels.families.dspdc.estimators:_DSPDCEstimator.fit"]),
    ("input validation and conversion",
     ["ooc_kernels.estimators.base:ChunkedEstimator._fit_data"]),
    ("statistics passes (moments, Lambda)",
     ["ooc_kernels.families.dspdc.estimators:_DSPDCEstimator._initialize"]),
    ("Dask graphs and scheduling",
     ["dask:compute", "ooc_kernels.parallel.graph:RoundGraph.local_round"]),
    ("in-memory rows set-up", ["ooc_kernels.families.dspdc._direct:MemoryRows.__init__"]),
    ("task's other work (A_k^T y_k, A_k^T dy, conjugates, uniforms)",
     ["ooc_kernels.families.dspdc.solver:DSPDCAlgorithm._chunk_step"]),
    ("kernel", ["ooc_kernels.families.dspdc.kernels:dspdc_dense_iterations"]),
    ("solver's rows (standardized float64)",
     ["ooc_kernels.families.dspdc._scaling:model_rows",
      "ooc_kernels.families.dspdc._direct:MemoryRows.batch"]),
    ("duals store", ["ooc_kernels._chunk_store:ChunkStore.read",
                     "ooc_kernels._chunk_store:ChunkStore.write",
                     "ooc_kernels._chunk_store:ChunkStore.prune"]),
    ("primal value's losses", ["ooc_kernels.families.dspdc.solver:rows_loss",
                               "ooc_kernels.families.dspdc._direct:MemoryRows.primal_loss"]),
    ("callbacks after a round", ["ooc_kernels.parallel.engine:end_round"]),
]


class _Timers:
    """Wraps :data:`PARTS`' functions (everywhere the library holds them) with timers of the
    calling thread's CPU clock; :attr:`seconds` has each part's time without the parts
    nested in it."""

    def __init__(self):
        import importlib
        import threading

        self.seconds = {name: 0.0 for name, _ in PARTS}
        self._local = threading.local()
        self._undo = []
        for part, funcs in PARTS:
            for spec in funcs:
                module, qual = spec.split(":")
                owner = importlib.import_module(module)
                *path, attr = qual.split(".")
                for name in path:
                    owner = getattr(owner, name)
                original = owner.__dict__[attr] if isinstance(owner, type) else \
                    getattr(owner, attr)
                wrapped = self._wrap(part, original)
                holders = [owner] if isinstance(owner, type) else [
                    m for n, m in list(sys.modules.items())
                    if n.split(".")[0] in ("ooc_kernels", "dask") and m is not None
                    and getattr(m, attr, None) is original]
                for holder in holders:
                    self._undo.append((holder, attr, original))
                    setattr(holder, attr, wrapped)

    def _wrap(self, part, fn):
        import functools

        @functools.wraps(fn)
        def timed(*a, **k):
            stack = self._local.__dict__.setdefault("stack", [])
            start = time.thread_time()
            stack.append(0.0)
            try:
                return fn(*a, **k)
            finally:
                spent = time.thread_time() - start
                nested = stack.pop()
                self.seconds[part] += spent - nested
                if stack:
                    stack[-1] += spent
        return timed

    def close(self):
        for holder, attr, original in reversed(self._undo):
            setattr(holder, attr, original)


def _store(folder: Path, task: str) -> Path:
    sys.path.insert(0, str(HERE))
    from dspdc_peers import write_store

    path = folder / f"{task}.zarr"
    if not path.exists():
        write_store(path, 50_000, 50, 10_000, task, 1 if task == "regression" else 2)
    return path


def _inputs(store: Path, where: str):
    import xarray as xr

    ds = xr.open_zarr(store)
    if where == "out of core":
        return (ds,)
    return np.asarray(ds["X"].values), np.asarray(ds["y"].values)


def _fit(problem: str, data, seed: int = 0):
    import ooc_kernels as ok

    _, est_name, kw = PROBLEMS[problem]
    return getattr(ok, est_name)(tol=1e-4, progress=False, random_state=seed, **kw).fit(*data)


def part_breakdown(args) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="dspdc-profile-"))
    results = {}
    for problem in args.problems:
        store = _store(folder, PROBLEMS[problem][0])
        for where in ("in memory", "out of core"):
            data = _inputs(store, where)
            _fit(problem, data)                                   # compile, import, caches
            runs = []
            for r in range(args.repeats):
                timers = _Timers()
                try:
                    cpu = time.process_time()
                    est = _fit(problem, data, seed=r)
                    cpu = time.process_time() - cpu
                finally:
                    timers.close()
                parts = dict(timers.seconds)
                parts["rest of the fit"] = parts.pop("whole fit")
                parts["other threads (reading ahead, Dask's workers)"] = cpu - sum(
                    parts.values())
                parts["process CPU"] = cpu
                parts["epochs"] = int(est.n_iter_)
                runs.append(parts)
                print(json.dumps({"problem": problem, "where": where, **parts}), flush=True)
            med = {k: float(np.median([r[k] for r in runs])) for k in runs[0]}
            results[f"{problem}, {where}"] = {"median": med, "runs": runs}
    return results


def child(spec: dict) -> dict:
    """Fits of one problem in this process (the library on ``sys.path`` as given)."""
    import ooc_kernels

    data = _inputs(Path(spec["store"]), spec["where"])
    _fit(spec["problem"], data)                                   # warm-up
    cpu = time.process_time()
    est = _fit(spec["problem"], data)
    return {"cpu": time.process_time() - cpu, "epochs": int(est.n_iter_),
            "coef": [float(v) for v in np.ravel(est.coef_)],
            "intercept": float(np.ravel(est.intercept_)[0]),
            "library": str(Path(ooc_kernels.__file__).parent.parent)}


def part_compare(args) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="dspdc-profile-"))
    results = {}
    for problem in args.problems:
        store = _store(folder, PROBLEMS[problem][0])
        for where in args.where:
            spec = {"problem": problem, "where": where, "store": str(store)}
            runs = {tree: [] for tree in args.trees}
            for _ in range(args.repeats):
                for tree in args.trees:                           # alternated
                    env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()))
                    out = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)],
                                         env=env, capture_output=True, text=True, check=True)
                    runs[tree].append(json.loads(out.stdout.strip().splitlines()[-1]))
                    print(json.dumps({"problem": problem, "where": where, "tree": tree,
                                      "cpu": runs[tree][-1]["cpu"]}), flush=True)
            first = [runs[t][0] for t in args.trees]
            results[f"{problem}, {where}"] = {
                tree: {"median_cpu_seconds": float(np.median([r["cpu"] for r in rs])),
                       "cpu_seconds": [r["cpu"] for r in rs],
                       "epochs": [r["epochs"] for r in rs], "library": rs[0]["library"]}
                for tree, rs in runs.items()}
            results[f"{problem}, {where}"]["identical"] = all(
                (f["coef"], f["intercept"]) == (first[0]["coef"], first[0]["intercept"])
                for f in first)
            print(json.dumps({"problem": problem, "where": where, **{
                t: v["median_cpu_seconds"] for t, v in results[f"{problem}, {where}"].items()
                if isinstance(v, dict)}, "identical":
                results[f"{problem}, {where}"]["identical"]}), flush=True)
    return results


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["breakdown", "compare"], default="breakdown")
    parser.add_argument("--problems", nargs="+", default=["ridge", "elastic_net", "logistic"],
                        choices=sorted(PROBLEMS))
    parser.add_argument("--where", nargs="+", default=["in memory", "out of core"],
                        choices=["in memory", "out of core"])
    parser.add_argument("--trees", nargs="+", default=["."],
                        help="compare: folders holding an ooc_kernels package")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    result = {"part": args.part, "repeats": args.repeats,
              "results": (part_breakdown if args.part == "breakdown" else part_compare)(args),
              "meta": {"command": "python benchmarks/dspdc_profile.py "
                                  + " ".join(argv or []),
                       "machine": platform.platform(), "cpus": os.cpu_count(),
                       "load_average": os.getloadavg()}}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
