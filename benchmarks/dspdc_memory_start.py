"""DSPDC in memory, code against code: whole fits of two trees of ``ooc_kernels`` in fresh
processes, interleaved, against scikit-learn's best solver.

The problems of ``benchmarks/dspdc_in_memory.py`` (the peer table's 50,000 x 50 stores as
NumPy arrays, ``alpha = 1e-4``; ridge, the elastic net at ``l1_ratio = 0.5``, the logistic
loss), DSPDC at its defaults with ``tol`` = the target (1e-4, 1e-6).  Each repeat starts one
process per tree, ``--before`` first, then the working tree (A, B, A, B ...); a process
imports its tree's ``ooc_kernels`` (``PYTHONPATH``), makes one warm-up fit per problem and
target (the numba caches of every kernel the fits call), then times one fit per problem and
target (CPU seconds of the process, ``time.process_time``) and scikit-learn's solver on
the same standardized rows at the loosest ``tol`` that reaches the target (chosen once, as
``dspdc_in_memory.py`` does; one warm-up fit, then one timed, in the working tree's
processes).
Medians over ``--repeats``; the load averages before and after.

    git archive HEAD ooc_kernels | tar -x -C /tmp/before
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python benchmarks/dspdc_memory_start.py --before /tmp/before --repeats 7 \\
        --out benchmarks/results/dspdc_memory_start.json

``--part start`` times the start alone on the regression problem's standardized rows with
the intercept's column (``_memory_start.memory_start``, ridge and the elastic net, and the
product ``A^T A`` in it), medians of ``--repeats`` after a warm-up:

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \
        python benchmarks/dspdc_memory_start.py --part start --repeats 15 \
        --out benchmarks/results/dspdc_memory_start_cost.json

``--part logistic_start`` times the logistic loss's start alone on the classification
problem's standardized rows (``_logistic_start.logistic_newton`` to ``tol`` = 1e-4 and 1e-6,
with its iterations, and one pass of every row at ``x = 0``, ``_logistic_start.newton_pass``:
the losses, the gradient and the Hessian), medians of ``--repeats`` after a warm-up:

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python benchmarks/dspdc_memory_start.py --part logistic_start --repeats 15 \\
        --out benchmarks/results/dspdc_logistic_start_cost.json
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
ROOT = HERE.parent
#: (name, loss, l1_ratio)
PROBLEMS = [("ridge", "squared", 0.0), ("elastic_net", "squared", 0.5),
            ("logistic", "logistic", 0.0)]
TARGETS = [1e-4, 1e-6]
ALPHA = 1e-4


def _peer(name, n, l1_ratio, tol):
    sys.path.insert(0, str(HERE))
    from dspdc_in_memory import _peer as peer

    return peer(name, n, ALPHA, l1_ratio, tol)


def worker(spec: dict) -> dict:
    """One process of one tree: warm-up fits, then one timed fit per problem and target."""
    import ooc_kernels as ok

    out = {"module": ok.__file__, "fits": {}, "peers": {}}
    for name, loss, l1_ratio in PROBLEMS:
        if name not in spec["problems"]:
            continue
        task = "regression" if loss == "squared" else "classification"
        X, y = np.load(spec["data"][task] + ".X.npy"), np.load(spec["data"][task] + ".y.npy")
        Est = ok.DSPDCRegressor if loss == "squared" else ok.DSPDCClassifier
        kw = {} if l1_ratio == 0 else {"l1_ratio": l1_ratio}
        for target in TARGETS:      # warm-up: every function the timed fits call, loaded
            Est(random_state=1, progress=False, tol=target, **kw).fit(X, y)
        for target in TARGETS:
            start = time.process_time()
            est = Est(random_state=0, progress=False, tol=target, **kw).fit(X, y)
            cpu = time.process_time() - start
            out["fits"][f"{name} {target}"] = {"cpu": cpu, "epochs": int(est.n_iter_)}
            tol = spec["peer_tols"].get(f"{name} {target}")
            if spec["peers"] and tol is not None:
                mu, sd = np.asarray(est._config.x_shift), np.asarray(est._config.x_scale)
                Xa = np.column_stack([(X - mu) / sd, np.ones(len(X))])
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    _peer(name, len(X), l1_ratio, tol).fit(Xa, y)        # warm-up
                    start = time.process_time()
                    _peer(name, len(X), l1_ratio, tol).fit(Xa, y)
                    out["peers"][f"{name} {target}"] = time.process_time() - start
    return out


def _spawn(tree: Path, spec: dict) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "OOC_KERNELS_PROGRESS": "0"}
    proc = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)],
                          env=env, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _peer_tols(problems, data) -> dict:
    """The loosest tol of ``dspdc_peers.TOLS`` at which scikit-learn's solver reaches each
    target's relative suboptimality."""
    sys.path.insert(0, str(HERE))
    import dspdc_peers as peers

    tols = {}
    for name, loss, l1_ratio in PROBLEMS:
        if name not in problems:
            continue
        task = "regression" if loss == "squared" else "classification"
        X, y = np.load(data[task] + ".X.npy"), np.load(data[task] + ".y.npy")
        Xa = np.column_stack([(X - X.mean(0)) / X.std(0), np.ones(len(X))])
        ref = peers._p_star(name, Xa, y, ALPHA, l1_ratio)

        def rel(c):
            args = dict(loss=loss, alpha=ALPHA, l1_ratio=l1_ratio)
            p_star = peers.objective(Xa[:, :-1], y, ref[:-1], ref[-1], **args)
            value = peers.objective(Xa[:, :-1], y, c[:-1], c[-1], **args)
            return (value - p_star) / abs(p_star)

        for target in TARGETS:
            for tol in peers.TOLS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    coef = np.ravel(_peer(name, len(X), l1_ratio, tol).fit(Xa, y).coef_)
                if rel(coef) <= target:
                    tols[f"{name} {target}"] = tol
                    break
    return tols


def start_cost(X, y, repeats: int) -> dict:
    """CPU milliseconds of the start alone (medians of ``repeats`` after a warm-up)."""
    from ooc_kernels.families.dspdc._memory_start import memory_start

    A = np.column_stack([(X - X.mean(0)) / X.std(0), np.ones(len(X))])
    b = np.asarray(y, dtype=np.float64)
    parts = {"memory_start, ridge": lambda: memory_start(A, b, None, ALPHA),
             "memory_start, elastic net": lambda: memory_start(A, b, None, ALPHA / 2,
                                                               ALPHA / 2),
             "A^T A alone": lambda: A.T @ A}
    return _timed_parts(parts, repeats)[0]


def _timed_parts(parts: dict, repeats: int) -> dict:
    """``(out, results)``: CPU milliseconds of each call of ``parts`` (name: call),
    ``repeats`` times after a warm-up, with their median, and each warm-up's result."""
    out, results = {}, {}
    for name, fn in parts.items():
        results[name] = fn()
        runs = []
        for _ in range(repeats):
            start = time.process_time()
            fn()
            runs.append(time.process_time() - start)
        out[name] = {"cpu_ms": [1e3 * r for r in runs],
                     "median_cpu_ms": 1e3 * float(np.median(runs))}
        print(name, round(out[name]["median_cpu_ms"], 2), flush=True)
    return out, results


def logistic_start_cost(X, y, repeats: int) -> dict:
    """CPU milliseconds of the logistic loss's start alone (Newton's iterations to ``tol`` =
    1e-4 and 1e-6, and one pass of every row: losses, gradient and Hessian) on the
    classification problem's standardized rows with the intercept's column, medians of
    ``repeats`` after a warm-up."""
    from ooc_kernels.families.dspdc._logistic_start import (
        HESSIAN_BLOCK,
        logistic_newton,
        newton_pass,
    )

    A = np.column_stack([(X - X.mean(0)) / X.std(0), np.ones(len(X))])
    b = np.where(np.asarray(y) == np.unique(y)[1], 1.0, -1.0)
    block = np.empty((HESSIAN_BLOCK, A.shape[1]))
    x, z = np.zeros(A.shape[1]), np.empty(len(b))
    parts = {"logistic_newton, tol=1e-4": lambda: logistic_newton(A, b, None, ALPHA, 1e-4),
             "logistic_newton, tol=1e-6": lambda: logistic_newton(A, b, None, ALPHA, 1e-6),
             "one pass of every row (losses, gradient, Hessian)":
                 lambda: newton_pass(A, b, None, x, 1, z, block)}
    out, results = _timed_parts(parts, repeats)
    for name, entry in out.items():
        if name.startswith("logistic_newton"):
            entry["iterations"] = int(results[name][1])
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, default=None,
                        help="a folder holding the ooc_kernels to compare with")
    parser.add_argument("--problems", nargs="+", default=[p[0] for p in PROBLEMS])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--part", choices=["fits", "start", "logistic_start"], default="fits")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        print(json.dumps(worker(json.loads(args.worker))), flush=True)
        return
    sys.path.insert(0, str(HERE))
    import dspdc_peers as peers

    tmp = Path(tempfile.mkdtemp(prefix="dspdc-memory-start-"))
    if args.part in ("start", "logistic_start"):
        task, seed = ("regression", 1) if args.part == "start" else ("classification", 2)
        store = peers.write_store(tmp / f"{task}.zarr", args.n, args.p, args.chunk_size,
                                  task, seed)
        _, X, y = peers.load(store)
        cost = start_cost if args.part == "start" else logistic_start_cost
        out = {"n": args.n, "p": args.p, "repeats": args.repeats,
               "load_before": os.getloadavg(), **cost(X, y, args.repeats),
               "load_after": os.getloadavg()}
        if args.out is not None:
            args.out.write_text(json.dumps(out, indent=1) + "\n")
        return
    data = {}
    for task, seed in (("regression", 1), ("classification", 2)):
        store = peers.write_store(tmp / f"{task}.zarr", args.n, args.p, args.chunk_size,
                                  task, seed)
        _, X, y = peers.load(store)
        np.save(tmp / f"{task}.X.npy", X)
        np.save(tmp / f"{task}.y.npy", y)
        data[task] = str(tmp / task)
    spec = {"data": data, "problems": args.problems,
            "peer_tols": _peer_tols(args.problems, data)}
    trees = ([("before", args.before)] if args.before is not None else []) + [("after", ROOT)]
    load = [os.getloadavg()]
    runs = {name: [] for name, _ in trees}
    for _ in range(args.repeats):
        for name, tree in trees:
            runs[name].append(_spawn(tree, {**spec, "peers": name == "after"}))
    load.append(os.getloadavg())
    out = {"n": args.n, "p": args.p, "alpha": ALPHA, "repeats": args.repeats,
           "load_before_after": load, "peer_tols": spec["peer_tols"], "cells": {},
           "modules": {name: runs[name][0]["module"] for name in runs}}
    for cell in runs["after"][0]["fits"]:
        entry = {}
        for name in runs:
            cpu = [r["fits"][cell]["cpu"] for r in runs[name]]
            entry[name] = {"cpu": cpu, "median_cpu": float(np.median(cpu)),
                           "epochs": sorted({r["fits"][cell]["epochs"] for r in runs[name]})}
        peer = [r["peers"][cell] for r in runs["after"] if cell in r["peers"]]
        if peer:
            entry["peer"] = {"cpu": peer, "median_cpu": float(np.median(peer))}
            for name in runs:
                entry[name]["ratio"] = entry[name]["median_cpu"] / entry["peer"]["median_cpu"]
        out["cells"][cell] = entry
        print(cell, json.dumps({k: {kk: v[kk] for kk in v if kk != "cpu"}
                                for k, v in entry.items()}), flush=True)
    if args.out is not None:
        args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
