"""DSPDC in memory against scikit-learn's best solver: passes over the data, not only seconds.

The peer table's conditioned problem (``benchmarks/dspdc_peers.py``: 50,000 x 50 Gaussian
rows, ``alpha = 1e-4``, the elastic net at ``l1_ratio = 0.5``), as NumPy arrays.  For each
problem and each target relative suboptimality (1e-4, 1e-6):

* DSPDC at its defaults with ``tol`` = the target (its certified gap bounds the
  suboptimality): the CPU seconds of a fit (median of ``--repeats``, after one warm-up fit),
  its epochs and the CPU seconds per epoch;
* scikit-learn's best solver of the peer table (Cholesky ``Ridge``, coordinate-descent
  ``ElasticNet``, L-BFGS ``LogisticRegression``) on the same standardized problem, at the
  loosest ``tol`` whose solution reaches the target: CPU seconds (median) and its iterations
  (``n_iter_``; Cholesky is one solve of the ``p x p`` normal equations, one pass over the
  data to form them).

The ratio of the CPU seconds is DSPDC's distance to the target of 3; the passes say whether
it is the number of passes or the cost of one that stands in the way.

``--part kernel`` times the iteration kernel alone for one epoch on rows of the same shape
(squared and logistic loss): the floor of an epoch's cost.

``--part profile`` splits the CPU seconds of one default fit per problem (``tol = --tol``,
medians of ``--repeats`` fits after a warm-up) into parts: the functions that make a part
are wrapped in timers of the thread's CPU clock, a part's time without the parts that run
inside it (Dask's hashing of the input inside the validation), "Python and the rest" being
the fit's time outside every part (the rounds' bookkeeping, the uniforms, the callbacks).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python benchmarks/dspdc_in_memory.py --repeats 3 \\
        --out benchmarks/results/dspdc_in_memory_passes.json
    python benchmarks/dspdc_in_memory.py --part kernel --repeats 5 \\
        --out benchmarks/results/dspdc_in_memory_kernel.json
    python benchmarks/dspdc_in_memory.py --part profile --repeats 3 \\
        --out benchmarks/results/dspdc_in_memory_profile.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
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


def _cpu(fn):
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out


def _peer(name, n, alpha, l1_ratio, tol):
    """scikit-learn's best solver of the peer table for ``name`` (no intercept: the ones
    column is part of the rows)."""
    from sklearn.linear_model import ElasticNet, LogisticRegression, Ridge

    if name == "ridge":
        return Ridge(alpha=n * alpha, fit_intercept=False, tol=tol)
    if name == "elastic_net":
        return ElasticNet(alpha=alpha, l1_ratio=l1_ratio, fit_intercept=False, tol=tol,
                          max_iter=1_000_000)
    return LogisticRegression(C=1 / (n * alpha), fit_intercept=False, solver="lbfgs",
                              tol=tol, max_iter=100_000)


def standardized_problem(peers, est, X, y, name, loss, alpha, l1_ratio):
    """``(Xa, rel_of)``: the rows of ``est``'s standardized problem with the ones column,
    and the relative suboptimality on it of a ``(coef, intercept)`` (against the peers'
    exact optimum ``peers._p_star``)."""
    mu, sd = np.asarray(est._config.x_shift), np.asarray(est._config.x_scale)
    Xa = np.column_stack([(X - mu) / sd, np.ones(len(y))])
    ref = peers._p_star(name, Xa, y, alpha, l1_ratio)
    p_star = peers.objective(Xa[:, :-1], y, ref[:-1], ref[-1], loss=loss, alpha=alpha,
                             l1_ratio=l1_ratio)

    def rel_of(coef, intercept):
        P = peers.objective(Xa[:, :-1], y, coef, intercept, loss=loss, alpha=alpha,
                            l1_ratio=l1_ratio)
        return float((P - p_star) / abs(p_star))

    return Xa, rel_of


def run(args) -> dict:
    sys.path.insert(0, str(HERE))
    import dspdc_peers as peers

    import ooc_kernels as ok

    tmp = Path(tempfile.mkdtemp(prefix="dspdc-in-memory-"))
    n, p, alpha = args.n, args.p, 1e-4
    out = {"n": n, "p": p, "alpha": alpha, "repeats": args.repeats, "problems": []}
    stores = {}
    for name, loss, l1_ratio in [pr for pr in PROBLEMS if pr[0] in args.problems]:
        task = "regression" if loss == "squared" else "classification"
        if task not in stores:          # the peer table's stores: one per task
            stores[task] = peers.write_store(tmp / f"{task}.zarr", n, p, args.chunk_size,
                                             task, 1 if task == "regression" else 2)
        store = stores[task]
        _, X, y_raw = peers.load(store)
        # the squared loss is fit to the targets less their mean (DSPDC's intercept gets it
        # back): scikit-learn solves the problem on those targets
        ybar = float(np.mean(y_raw, dtype=np.float64)) if loss == "squared" else 0.0
        y = y_raw - ybar if loss == "squared" else y_raw
        Est = ok.DSPDCRegressor if loss == "squared" else ok.DSPDCClassifier
        kw = {} if l1_ratio == 0 else {"l1_ratio": l1_ratio}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            Est(max_iter=1, tol=None, progress=False, **kw).fit(X, y_raw)   # warm-up
        entry = {"problem": name, "targets": {}}
        for target in peers.TARGETS:
            fits = [_cpu(lambda r=r: Est(random_state=r, progress=False, tol=target,
                                         **kw).fit(X, y_raw)) for r in range(args.repeats)]
            est = fits[0][1]
            mu, sd = np.asarray(est._config.x_shift), np.asarray(est._config.x_scale)
            Xa, rel_of = standardized_problem(peers, est, X, y, name, loss, alpha, l1_ratio)
            cpu = float(np.median([f[0] for f in fits]))
            epochs = [int(f[1].n_iter_) for f in fits]
            dspdc = {"cpu_seconds": [f[0] for f in fits], "median_cpu_seconds": cpu,
                     "epochs": epochs, "cpu_per_epoch": cpu / float(np.median(epochs)),
                     "rel_subopt": rel_of(est.coef_ * sd, est.intercept_
                                          + float(est.coef_ @ mu) - ybar)}
            peer = None
            for tol in peers.TOLS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    _, model = _cpu(lambda t=tol: _peer(name, n, alpha, l1_ratio, t).fit(Xa, y))
                coef = np.ravel(model.coef_)
                rel = rel_of(coef[:-1], coef[-1])
                if rel <= target:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        runs = [_cpu(lambda t=tol: _peer(name, n, alpha, l1_ratio, t).fit(
                            Xa, y))[0] for _ in range(args.repeats)]
                    iters = getattr(model, "n_iter_", None)
                    peer = {"tol": tol, "rel_subopt": rel, "cpu_seconds": runs,
                            "median_cpu_seconds": float(np.median(runs)),
                            "iterations": None if iters is None else int(np.max(iters))}
                    break
            ratio = None if peer is None else cpu / peer["median_cpu_seconds"]
            entry["targets"][str(target)] = {"dspdc": dspdc, "peer": peer, "ratio": ratio}
            print(json.dumps({"problem": name, "target": target, "dspdc_cpu": cpu,
                              "epochs": epochs, "peer": peer, "ratio": ratio}), flush=True)
        out["problems"].append(entry)
    return out


def kernel_epochs(args) -> dict:
    """CPU seconds of the iteration kernel alone for one epoch (``n`` iterations, ``m = 1``,
    ``q = p``) on the standardized rows with the intercept's column, the squared and the
    logistic loss at steps of the theorems' size; medians of ``--repeats`` after a warm-up."""
    from ooc_kernels.families.dspdc.kernels import dspdc_dense_iterations

    rng = np.random.default_rng(0)
    n, p = args.n, args.p + 1
    A = np.column_stack([rng.normal(size=(n, p - 1)), np.ones(n)])
    signal = A @ rng.normal(size=p)
    out = {}
    for name, loss_id, b in (("squared", 0, signal), ("logistic", 2, np.sign(signal))):
        runs = []
        columns = np.zeros((n, p))      # not read with q = p
        for r in range(args.repeats + 1):   # the first: compilation and caches
            u = rng.random((n, 1))
            state = (np.zeros(n), np.zeros(p), np.zeros(p), np.zeros(p))
            cpu, _ = _cpu(lambda: dspdc_dense_iterations(
                A, b, *state, n, u, columns, 1, p, 1.0, 0.01, 1.0, loss_id, 0.0, 1e-4))
            if r:
                runs.append(cpu)
        out[name] = {"cpu_seconds": runs, "median_cpu_seconds": float(np.median(runs))}
        print(json.dumps({"kernel": name, **out[name]}), flush=True)
    return out


#: Parts of ``--part profile``: (name, functions as ``module:qualified name``).
PROFILE_PARTS = [
    ("input validation and conversion",
     ["ooc_kernels.estimators.base:ChunkedEstimator._fit_data"]),
    ("  of which Dask's hashing of the input", ["dask.array.core:tokenize"]),
    ("set-up statistics (classes, weights' sums, moments, Lambda)",
     ["ooc_kernels.families.dspdc.estimators:_DSPDCEstimator._initialize"]),
    ("solver's rows built once", ["ooc_kernels.families.dspdc._direct:MemoryRows.__init__"]),
    ("kernel (iterations)", ["ooc_kernels.families.dspdc.kernels:_all_columns_one_row"]),
    ("fused sweep (products, lagged gap's losses, conjugates)",
     ["ooc_kernels.families.dspdc.kernels_memory:task_sweep"]),
    ("kernel with the sweep at each row's visit (one read per epoch)",
     ["ooc_kernels.families.dspdc.kernels_memory:visits_once"]),
    ("the squared loss's line of duals (its best point, the duals moved)",
     ["ooc_kernels.families.dspdc._memory_task:MemoryTasks._line_jump"]),
    ("primal value's losses (final gap)",
     ["ooc_kernels.families.dspdc._memory_task:MemoryTasks.primal_loss"]),
]


class _PartTimers:
    """Module attributes and methods of :data:`PROFILE_PARTS` wrapped with timers of the
    thread's CPU clock (the in-memory path imports its kernels when a task runs, so the
    module attribute is the one it calls; one that a version of the library lacks counts
    0); :attr:`seconds` excludes nested parts."""

    def __init__(self):
        import functools
        import importlib

        self.seconds = {name: 0.0 for name, _ in PROFILE_PARTS}
        self._stack, self._undo = [], []
        for part, specs in PROFILE_PARTS:
            for spec in specs:
                module, qual = spec.split(":")
                owner = importlib.import_module(module)
                *path, attr = qual.split(".")
                for name in path:
                    owner = getattr(owner, name)
                if not hasattr(owner, attr):
                    continue
                original = owner.__dict__[attr] if isinstance(owner, type) else \
                    getattr(owner, attr)

                def timed(*a, _fn=original, _part=part, **k):
                    start = time.thread_time()
                    self._stack.append(0.0)
                    try:
                        return _fn(*a, **k)
                    finally:
                        spent = time.thread_time() - start
                        self.seconds[_part] += spent - self._stack.pop()
                        if self._stack:
                            self._stack[-1] += spent

                self._undo.append((owner, attr, original))
                setattr(owner, attr, functools.wraps(original)(timed))

    def close(self):
        for owner, attr, original in reversed(self._undo):
            setattr(owner, attr, original)


def profile(args) -> dict:
    """The parts of one default fit per problem (medians of ``--repeats``)."""
    sys.path.insert(0, str(HERE))
    import dspdc_peers as peers

    import ooc_kernels as ok

    tmp = Path(tempfile.mkdtemp(prefix="dspdc-in-memory-"))
    out = {}
    for name, loss, l1_ratio in [pr for pr in PROBLEMS if pr[0] in args.problems]:
        task = "regression" if loss == "squared" else "classification"
        store = peers.write_store(tmp / f"{name}.zarr", args.n, args.p, args.chunk_size,
                                  task, 1 if task == "regression" else 2)
        _, X, y = peers.load(store)
        Est = ok.DSPDCRegressor if loss == "squared" else ok.DSPDCClassifier
        kw = {} if l1_ratio == 0 else {"l1_ratio": l1_ratio}
        Est(random_state=0, progress=False, tol=args.tol, **kw).fit(X, y)      # warm-up
        runs = []
        for r in range(args.repeats):
            timers = _PartTimers()
            try:
                cpu, est = _cpu(lambda r=r: Est(random_state=r, progress=False, tol=args.tol,
                                                **kw).fit(X, y))
            finally:
                timers.close()
            parts = dict(timers.seconds)
            parts["Python and the rest"] = cpu - sum(parts.values())
            runs.append({"cpu_seconds": cpu, "epochs": int(est.n_iter_), "parts": parts})
        med = {k: float(np.median([r["parts"][k] for r in runs])) for k in runs[0]["parts"]}
        out[name] = {"runs": runs, "median_cpu_seconds": float(np.median(
            [r["cpu_seconds"] for r in runs])), "median_parts": med,
            "epochs": [r["epochs"] for r in runs]}
        print(json.dumps({"problem": name, "cpu": out[name]["median_cpu_seconds"],
                          "epochs": out[name]["epochs"], "parts": med}), flush=True)
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", default=[p[0] for p in PROBLEMS])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--tol", type=float, default=1e-4, help="the fits' tol (profile)")
    parser.add_argument("--part", choices=["peers", "kernel", "profile"], default="peers",
                        help="peers: DSPDC against scikit-learn's best; kernel: the "
                             "iteration kernel alone, one epoch; profile: a fit's parts")
    args = parser.parse_args(argv)
    if args.part == "peers":
        results = run(args)
    elif args.part == "kernel":
        results = {"kernel": kernel_epochs(args)}
    else:
        results = {"profile": profile(args)}
    results["machine"] = {"platform": platform.platform(), "cpus": os.cpu_count(),
                          "load": os.getloadavg()}
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
