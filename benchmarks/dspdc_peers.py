"""DSPDC estimators against scikit-learn and dask-glm on equal objectives; factorized data.

Four parts (``--part``):

``peers``
    ``ok.DSPDCRegressor`` / ``ok.DSPDCClassifier`` at their defaults (``alpha = 1e-4``,
    ``m = 1``, ``q = "auto"``, ``tol = 1e-6`` on the relative duality gap, an intercept column
    regularized like the other coefficients), fitted out of core from a Zarr store written
    chunk by chunk with the library's writer, against scikit-learn in memory and dask-glm
    out of core (``dask.array.from_zarr`` on the same store).  Every peer solves the same
    problem ``P(x) = (1/n) sum_i phi(a_i^T x) + alpha (l1_ratio |x|_1 + (1 - l1_ratio)/2
    |x|^2)`` on ``a_i = (x_i, 1)`` (so peers fit no separate intercept); ``P`` is computed by
    one function for everyone (:func:`objective`, the library's
    :func:`~ooc_kernels.families.dspdc.in_memory.paper.primal_value`).  ``P*`` is a high-accuracy
    solution (closed form for ridge, the best of all runs and a tight reference otherwise).
    A peer's time to ``1e-6`` relative suboptimality is the median fit time (3 runs) at the
    loosest tolerance of a sweep whose solution reaches it (for dask-glm, whose tolerances
    are absolute on sum-scaled objectives: the fewest ``max_iter`` of a sweep, with its
    tolerances at 0); DSPDC's is the fit time to its
    certified gap (and the first gap evaluation below the target, read off
    ``gap_history_``).  ``LinearSVC`` (squared hinge) is not the smoothed hinge: its time
    and accuracy are listed beside ``loss="smoothed_hinge"``, not on equal objective.
``factorized``
    ``DSPDCRegressor`` on ``ok.Factorized(U, V)`` against the same estimator on the dense
    ``A = U V`` (in memory, rank ``d`` much smaller than ``p``): seconds per epoch and the
    peak RSS of a fresh process, for ``q = "auto"`` and a small ``q``.
``factorized_peers``
    ``DSPDCRegressor`` on ``ok.Factorized(U, V)`` (``q = "auto"`` and a small ``q``, to its
    certified ``1e-6`` gap) against scikit-learn's ``Ridge`` and dask-glm's ``lbfgs`` on the
    materialized ``A = U V``: seconds to ``1e-6`` relative suboptimality (``P*`` from the
    closed form) and the peak RSS of a fresh process, the data included.
``memory``
    An out-of-core factorized fit (``sparse_recovery`` stores of increasing size written by
    ``ok.make_dataset``): peak RSS growth of a fresh process against the store size.

    python benchmarks/dspdc_peers.py --part peers --out benchmarks/results/dspdc_peers.json
    python benchmarks/dspdc_peers.py --part factorized --out benchmarks/results/dspdc_factorized.json
    python benchmarks/dspdc_peers.py --part memory --out benchmarks/results/dspdc_memory.json
    python benchmarks/dspdc_peers.py --part factorized_peers --repeats 1 \
        --out benchmarks/results/dspdc_factorized_peers.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from _store import store_bytes

TARGET = 1e-6
#: A sweep stops at a fit that took longer than this without reaching the target.
SWEEP_CAP_SECONDS = 30.0
#: ``max_iter`` values of the dask-glm sweeps.
MAX_ITER_GRID = [5, 10, 20, 40, 80, 160, 320]
TOLS = [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-12]


# ----------------------------------------------------------------------------- objective

def objective(X, y, coef, intercept, *, loss, alpha, l1_ratio=0.0):
    """``P`` of the library's definition of ``alpha`` on ``a_i = (x_i, 1)``: the one function
    every method is scored with."""
    from ooc_kernels.families.dspdc.in_memory.paper import primal_value

    A = np.column_stack([X, np.ones(len(X))])
    x = np.append(np.asarray(coef, dtype=np.float64).ravel(), float(intercept))
    b = y if loss == "squared" else np.where(y > 0, 1.0, -1.0)
    return primal_value(A, b, x, loss=loss, lam1=alpha * l1_ratio,
                        lam2=alpha * (1.0 - l1_ratio))


# ----------------------------------------------------------------------------- data

def write_store(path: Path, n: int, p: int, chunk: int, task: str, seed: int) -> Path:
    """Gaussian rows; a linear target with noise (regression) or logistic labels in {0, 1}."""
    from ooc_kernels.data.declarations import make_attrs
    from ooc_kernels.data.zarr_io import write_chunks

    w = np.random.default_rng(12345).normal(size=p) / np.sqrt(p) * 3

    def chunks():
        for i, lo in enumerate(range(0, n, chunk)):
            rng = np.random.default_rng([seed, i])
            X = rng.normal(size=(min(chunk, n - lo), p)).astype(np.float32)
            t = X @ w + 0.5
            if task == "regression":
                yv = (t + 0.5 * rng.normal(size=len(X))).astype(np.float32)
            else:
                yv = (rng.random(len(X)) < 1 / (1 + np.exp(-t))).astype(np.int32)
            yield {"X": X, "y": yv}

    kw = {} if task == "regression" else {"classes": [0, 1]}
    dtypes = None if task == "regression" else {"y": "int32"}
    write_chunks(path, chunks(), n_samples=n, chunk_size=chunk,
                 attrs=make_attrs(task, generator="dspdc_peers", **kw),
                 sizes={"feature": p}, dtypes=dtypes, progress=False)
    return path


def load(path: Path):
    import xarray as xr

    ds = xr.open_zarr(path)
    return ds, np.asarray(ds["X"].values, dtype=np.float64), np.asarray(ds["y"].values)


# ----------------------------------------------------------------------------- peers

def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def sweep(make_fit, X, y, loss, alpha, l1_ratio, p_star, repeats, grid=None):
    """Loosest tolerance (or fewest iterations, for a ``grid`` of ``max_iter``) whose solution
    is within ``TARGET`` relative of ``P*``; the median of ``repeats`` fit times there.
    ``make_fit(tol) -> () -> (coef, intercept)``."""
    tried = []
    for tol in (TOLS if grid is None else grid):
        sec, (coef, icpt) = _timed(make_fit(tol))
        P = objective(X, y, coef, icpt, loss=loss, alpha=alpha, l1_ratio=l1_ratio)
        rel = (P - p_star) / abs(p_star)
        tried.append({"tol": tol, "seconds": sec, "rel_subopt": rel})
        if rel > TARGET and sec > SWEEP_CAP_SECONDS:     # tighter tolerances only take longer
            break
        if rel <= TARGET:
            times = [sec] + [_timed(make_fit(tol))[0] for _ in range(repeats - 1)]
            return {"tol": tol, "median_seconds": float(np.median(times)), "seconds": times,
                    "rel_subopt": rel, "coef": (coef, icpt), "sweep": tried}
    return {"tol": None, "median_seconds": None, "rel_subopt": tried[-1]["rel_subopt"],
            "coef": (coef, icpt), "sweep": tried}


def _dask_glm_fit(Xd, yd, family, reg, lamduh, algo, max_iter):
    """One dask-glm fit of ``max_iter`` iterations (its tolerances are absolute on
    sum-scaled objectives, so the sweep is over ``max_iter`` with the tolerances at 0)."""
    from dask_glm import algorithms, families, regularizers

    fam = {"normal": families.Normal, "logistic": families.Logistic}[family]
    regz = regularizers.L2() if reg[0] == "l2" else regularizers.ElasticNet(weight=reg[1])
    kw = {"regularizer": regz, "lamduh": lamduh, "max_iter": int(max_iter), "family": fam}
    if algo == "admm":
        kw.update(abstol=0.0, reltol=0.0)
    else:
        kw.update(tol=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # dask-glm's overflow warnings in exp
        beta = getattr(algorithms, algo)(Xd, yd, **kw)
    beta = np.asarray(beta)
    return beta[:-1], beta[-1]


def dask_glm_status():
    """``(usable, why)``: dask-glm imports and fits a tiny problem with the installed Dask."""
    try:
        import dask
        import dask.array as da
        import dask_glm
        from importlib.metadata import version

        X = da.from_array(np.random.default_rng(0).normal(size=(100, 3)), chunks=50)
        y = (X[:, 0] > 0).astype(float)
        _dask_glm_fit(X, y, "logistic", ("l2",), 1.0, "lbfgs", 5)
        return True, f"dask-glm {version('dask-glm')} with dask {dask.__version__}"
    except Exception as exc:  # reported in the results, not hidden
        return False, f"{type(exc).__name__}: {exc}"


def part_peers(args):
    import dask.array as da
    from sklearn.linear_model import ElasticNet, LogisticRegression, Ridge
    from sklearn.metrics import accuracy_score, r2_score
    from sklearn.svm import LinearSVC

    import ooc_kernels as ok

    tmp = Path(tempfile.mkdtemp(prefix="dspdc-peers-"))
    n, p, reps = args.n, args.p, args.repeats
    reg_store = write_store(tmp / "reg.zarr", n, p, args.chunk_size, "regression", 1)
    cls_store = write_store(tmp / "cls.zarr", n, p, args.chunk_size, "classification", 2)
    reg_test = write_store(tmp / "reg_test.zarr", n // 4, p, args.chunk_size, "regression", 3)
    cls_test = write_store(tmp / "cls_test.zarr", n // 4, p, args.chunk_size,
                           "classification", 4)
    usable, why = dask_glm_status()
    results = {"n": n, "p": p, "chunk_size": args.chunk_size, "repeats": reps,
               "dask_glm": {"usable": usable, "status": why}, "problems": []}
    print(json.dumps(results["dask_glm"]), flush=True)
    problems = [("ridge", "squared", 0.0, reg_store, reg_test),
                ("elastic_net", "squared", 0.5, reg_store, reg_test),
                ("logistic", "logistic", 0.0, cls_store, cls_test),
                ("smoothed_hinge", "smoothed_hinge", 0.0, cls_store, cls_test)]
    problems = [pr for pr in problems if pr[0] in args.problems]
    for name, loss, l1_ratio, store, test in problems:
        ds, X, y = load(store)
        _, Xt, yt = load(test)
        Xa = np.column_stack([X, np.ones(n)])
        alpha = 1e-4
        metric = ((lambda c, i: r2_score(yt, Xt @ c + i)) if loss == "squared" else
                  (lambda c, i: accuracy_score(yt, (Xt @ c + i > 0).astype(int))))
        rows = []
        # DSPDC, defaults, out of core from the store
        Est = ok.DSPDCRegressor if loss == "squared" else ok.DSPDCClassifier
        kw = {} if l1_ratio == 0 else {"l1_ratio": l1_ratio}
        if loss == "smoothed_hinge":
            kw["loss"] = "smoothed_hinge"
        fits = []
        for r in range(reps):
            sec, est = _timed(lambda: Est(random_state=r, progress=False, **kw).fit(ds))
            fits.append((sec, est))
        # P*: closed form (ridge) or a tight reference, lowered by any better run below
        if name == "ridge":
            xs = np.linalg.solve(Xa.T @ Xa + n * alpha * np.eye(p + 1), Xa.T @ y)
            p_star = objective(X, y, xs[:-1], xs[-1], loss=loss, alpha=alpha)
        elif name == "elastic_net":
            ref = ElasticNet(alpha=alpha, l1_ratio=l1_ratio, fit_intercept=False, tol=1e-14,
                             max_iter=1_000_000).fit(Xa, y).coef_
            p_star = objective(X, y, ref[:-1], ref[-1], loss=loss, alpha=alpha,
                               l1_ratio=l1_ratio)
        elif name == "logistic":
            ref = LogisticRegression(C=1 / (n * alpha), fit_intercept=False, tol=1e-14,
                                     max_iter=100_000).fit(Xa, y).coef_.ravel()
            p_star = objective(X, y, ref[:-1], ref[-1], loss=loss, alpha=alpha)
        else:
            from ooc_kernels.families.dspdc.in_memory.baselines import sdca

            b = np.where(y > 0, 1.0, -1.0)
            ref = sdca(Xa, b, loss="smoothed_hinge", lam1=0.0, lam2=alpha, tol=1e-12 * 0.5,
                       max_epochs=200, eval_every=2)
            p_star = objective(X, y, ref.x[:-1], ref.x[-1], loss=loss, alpha=alpha)
        finals = [objective(X, y, e.coef_, e.intercept_, loss=loss, alpha=alpha,
                            l1_ratio=l1_ratio) for _, e in fits]
        p_star = min([p_star] + finals)
        hit = []
        for sec, est in fits:
            first = next((h["seconds"] for h in est.gap_history_
                          if (h["primal"] - p_star) / abs(p_star) <= TARGET), None)
            hit.append(first)
        e0 = fits[0][1]
        rows.append({"method": "ok.DSPDC (defaults, out of core)",
                     "median_seconds": float(np.median([s for s, _ in fits])),
                     "seconds": [s for s, _ in fits],
                     "median_seconds_first_below_target":
                         float(np.median(hit)) if all(h is not None for h in hit) else None,
                     "epochs": [int(e.n_iter_) for _, e in fits],
                     "stop_reason": e0.stop_reason_,
                     "rel_subopt": (finals[0] - p_star) / abs(p_star),
                     "test_metric": float(metric(e0.coef_, e0.intercept_))})
        print(json.dumps(rows[-1]), flush=True)
        # scikit-learn, in memory
        peers = []
        if name == "ridge":
            peers.append(("sklearn Ridge (auto = cholesky)", lambda tol: lambda: (lambda c: (
                c[:-1], c[-1]))(Ridge(alpha=n * alpha, fit_intercept=False, tol=tol)
                                .fit(Xa, y).coef_)))
            peers.append(("sklearn Ridge (sag)", lambda tol: lambda: (lambda c: (
                c[:-1], c[-1]))(Ridge(alpha=n * alpha, fit_intercept=False, solver="sag",
                                      tol=tol, max_iter=100_000, random_state=0)
                                .fit(Xa, y).coef_)))
        if name == "elastic_net":
            peers.append(("sklearn ElasticNet (cd)", lambda tol: lambda: (lambda c: (
                c[:-1], c[-1]))(ElasticNet(alpha=alpha, l1_ratio=l1_ratio,
                                           fit_intercept=False, tol=tol, max_iter=1_000_000)
                                .fit(Xa, y).coef_)))
        if name == "logistic":
            for solver in ("saga", "lbfgs"):
                peers.append((f"sklearn LogisticRegression({solver})",
                              lambda tol, s=solver: lambda: (lambda c: (c[:-1], c[-1]))(
                                  LogisticRegression(C=1 / (n * alpha), fit_intercept=False,
                                                     solver=s, tol=tol, max_iter=100_000,
                                                     random_state=0)
                                  .fit(Xa, y).coef_.ravel())))
        for label, make in peers:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")      # ConvergenceWarning at loose tol
                out = sweep(make, X, y, loss, alpha, l1_ratio, p_star, reps)
            c, i = out.pop("coef")
            rows.append({"method": label, **out, "test_metric": float(metric(c, i))})
            print(json.dumps({k: v for k, v in rows[-1].items() if k != "sweep"}), flush=True)
        if name == "smoothed_hinge":
            times, svc = [], None
            for _ in range(reps):
                sec, svc = _timed(lambda: LinearSVC(C=1 / (n * alpha), fit_intercept=False,
                                                    tol=1e-4, max_iter=100_000).fit(Xa, y))
                times.append(sec)
            c = svc.coef_.ravel()
            rows.append({"method": "sklearn LinearSVC (squared hinge: NOT the same "
                                   "objective)", "median_seconds": float(np.median(times)),
                         "seconds": times, "rel_subopt": None,
                         "test_metric": float(metric(c[:-1], c[-1]))})
        # dask-glm, out of core from the same store
        if usable and loss in ("squared", "logistic"):
            Xd = da.from_zarr(str(store), component="X").astype(np.float64)
            Xd = da.concatenate([Xd, da.ones((n, 1), chunks=(Xd.chunks[0], 1))], axis=1)
            Xd = Xd.rechunk({1: -1})
            yd = da.from_zarr(str(store), component="y").astype(np.float64)
            family = "normal" if loss == "squared" else "logistic"
            # dask-glm: sum of the family's loss + lamduh * reg; Normal's loss is
            # sum (y - Xb)^2 (no 1/2), the L2 regularizer is |b|^2 / 2
            lamduh = (2 if loss == "squared" else 1) * n * alpha
            reg = ("l2",) if l1_ratio == 0 else ("enet", l1_ratio)
            algos = ["lbfgs", "admm"] if l1_ratio == 0 else ["admm", "proximal_grad"]
            for algo in algos:
                out = sweep(lambda it, a=algo: lambda: _dask_glm_fit(
                    Xd, yd, family, reg, lamduh, a, it), X, y, loss, alpha, l1_ratio,
                    p_star, reps, grid=MAX_ITER_GRID)
                out["max_iter"] = out.pop("tol")
                for t in out["sweep"]:
                    t["max_iter"] = t.pop("tol")
                c, i = out.pop("coef")
                rows.append({"method": f"dask-glm {algo} (out of core)", **out,
                             "test_metric": float(metric(c, i))})
                print(json.dumps({k: v for k, v in rows[-1].items()}), flush=True)
        entry = {"problem": name, "loss": loss, "alpha": alpha, "l1_ratio": l1_ratio,
                 "p_star": p_star, "rows": rows}
        print(json.dumps(entry), flush=True)
        results["problems"].append(entry)
    return results


# ----------------------------------------------------------------------------- factorized

def _rss_mb():
    import psutil

    return psutil.Process().memory_info().rss / 2 ** 20


def worker(spec: dict) -> dict:
    """One fit in this (fresh) process: RSS before the data, after it, and the peak."""
    import ooc_kernels as ok

    Est = ok.DSPDCClassifier if spec["kind"] == "memory" else ok.DSPDCRegressor
    kw = dict(spec.get("params", {}))
    # warm-up on a tiny problem of the same kind: imports and compiled kernels are loaded
    # before the baseline is taken
    rng = np.random.default_rng(1)
    Uw, Vw = rng.normal(size=(200, 3)), rng.normal(size=(3, 20))
    yw = np.where(Uw @ Vw @ rng.normal(size=20) > 0, 1, -1)
    Xw = Uw @ Vw if spec["kind"] == "dense" else ok.Factorized(Uw, Vw)
    Est(random_state=0, progress=False, **{**kw, "max_iter": 1}).fit(Xw, yw)
    base = _rss_mb()
    rng = np.random.default_rng(0)
    if spec["kind"] == "memory":
        import xarray as xr

        ds = xr.open_zarr(spec["store"])
        data, y = ds, None
        after = _rss_mb()
    else:
        n, p, d = spec["n"], spec["p"], spec["d"]
        U = rng.normal(size=(n, d))
        V = rng.normal(size=(d, p)) / np.sqrt(d)
        y = U @ (V @ rng.normal(size=p)) + rng.normal(size=n)
        data = ok.Factorized(U, V) if spec["kind"] == "factorized" else U @ V
        after = _rss_mb()
    est = Est(random_state=0, progress=False, **kw)
    start = time.perf_counter()
    est.fit(data, y) if y is not None else est.fit(data)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    h = est.gap_history_
    epoch_seconds = np.diff([0.0] + [e["seconds"] for e in h]).tolist()
    return {"rss_start_mb": base, "rss_with_data_mb": after, "peak_rss_mb": peak,
            "fit_seconds": seconds, "epochs": int(est.n_iter_),
            "epoch_seconds": epoch_seconds, "relative_gap": h[-1]["relative_gap"],
            "stop_reason": est.stop_reason_}


def _spawn(spec):
    out = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def part_factorized(args):
    n, p, d = args.fn, args.fp, args.fd
    rows = []
    for q in ["auto", args.fq]:
        for kind in ("factorized", "dense"):
            runs = [_spawn({"kind": kind, "n": n, "p": p, "d": d,
                            "params": {"q": q, "max_iter": args.f_epochs, "tol": None}})
                    for _ in range(args.repeats)]
            per_epoch = [np.median(r["epoch_seconds"][1:] or r["epoch_seconds"]) for r in runs]
            row = {"kind": kind, "q": q, "median_seconds_per_epoch": float(np.median(per_epoch)),
                   "median_peak_rss_mb": float(np.median([r["peak_rss_mb"] for r in runs])),
                   "median_rss_with_data_mb": float(np.median([r["rss_with_data_mb"]
                                                               for r in runs])),
                   "median_rss_start_mb": float(np.median([r["rss_start_mb"] for r in runs])),
                   "relative_gap_after": [r["relative_gap"] for r in runs], "runs": runs}
            print(json.dumps({k: v for k, v in row.items() if k != "runs"}), flush=True)
            rows.append(row)
    return {"n": n, "p": p, "d": d, "epochs": args.f_epochs, "repeats": args.repeats,
            "data_mb": {"factorized": (n * d + d * p) * 8 / 2 ** 20,
                        "dense": n * p * 8 / 2 ** 20}, "rows": rows}


def part_memory(args):
    import ooc_kernels as ok

    tmp = Path(tempfile.mkdtemp(prefix="dspdc-mem-"))
    rows = []
    for n in args.mem_n:
        path = ok.make_dataset("sparse_recovery", tmp / f"sr{n}.zarr", n, chunk_size=50_000,
                               n_features=100, rank=args.mem_rank, progress=False)
        size = store_bytes(path) / 2 ** 20
        r = _spawn({"kind": "memory", "store": str(path),
                    "params": {"loss": "smoothed_hinge", "max_iter": 1, "tol": None,
                               "q": args.mem_q}})
        row = {"n": n, "store_mb": size, "u_mb": n * args.mem_rank * 4 / 2 ** 20, **r,
               "peak_growth_mb": r["peak_rss_mb"] - r["rss_start_mb"]}
        print(json.dumps(row), flush=True)
        rows.append(row)
        import shutil

        shutil.rmtree(path, ignore_errors=True)
    return {"rank": args.mem_rank, "q": args.mem_q, "rows": rows}


def _factorized_problem(n, p, d):
    """The ``part_factorized`` data: Gaussian ``U`` and ``V / sqrt(d)``, a linear target."""
    rng = np.random.default_rng(0)
    U = rng.normal(size=(n, d))
    V = rng.normal(size=(d, p)) / np.sqrt(d)
    y = U @ (V @ rng.normal(size=p)) + rng.normal(size=n)
    return U, V, y


def factorized_peer_worker(spec: dict) -> dict:
    """One method on the factorized ridge problem in this (fresh) process: seconds to the
    target, relative suboptimality against ``P*``, peak RSS (the data included: the peers
    need the materialized ``A``, DSPDC only ``U`` and ``V``)."""
    import warnings

    import ooc_kernels as ok
    from ooc_kernels.families.dspdc.in_memory.paper import primal_value

    n, p, d, alpha, method = spec["n"], spec["p"], spec["d"], spec["alpha"], spec["method"]
    U, V, y = _factorized_problem(n, p, d)

    def rel(coef):     # P on A = U V without forming it: A x = U (V x)
        z = U @ (V @ coef)
        P = 0.5 * np.mean((z - y) ** 2) + 0.5 * alpha * coef @ coef
        return (P - spec["p_star"]) / abs(spec["p_star"])

    out = {"method": method}
    if method == "p_star":                    # the closed form, in its own process
        from sklearn.linear_model import Ridge

        A = U @ V
        coef = Ridge(alpha=n * alpha, fit_intercept=False, solver="cholesky").fit(A, y).coef_
        out["p_star"] = float(0.5 * np.mean((A @ coef - y) ** 2) + 0.5 * alpha * coef @ coef)
        return out
    if method.startswith("dspdc"):
        q = spec["q"]
        est = ok.DSPDCRegressor(alpha=alpha, fit_intercept=False, q=q, tol=TARGET,
                                max_iter=10_000, max_time=spec["max_seconds"],
                                random_state=0, progress=False)
        start = time.perf_counter()
        est.fit(ok.Factorized(U, V), y)
        out.update(seconds=time.perf_counter() - start, rel_subopt=rel(est.coef_),
                   epochs=int(est.n_iter_), stop_reason=est.stop_reason_,
                   relative_gap=est.gap_history_[-1]["relative_gap"])
    else:
        A = U @ V                                            # what the peers need
        if method == "sklearn_ridge":
            from sklearn.linear_model import Ridge

            start = time.perf_counter()
            coef = Ridge(alpha=n * alpha, fit_intercept=False).fit(A, y).coef_
            out.update(seconds=time.perf_counter() - start, rel_subopt=rel(coef))
        else:                                                # dask-glm lbfgs, out of core
            import dask.array as da

            Ad = da.from_array(A, chunks=(10_000, p))
            yd = da.from_array(y, chunks=10_000)
            from dask_glm import algorithms, families, regularizers

            for it in (5, 10, 20, 40, 80, 160):
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    coef = np.asarray(algorithms.lbfgs(
                        Ad, yd, regularizer=regularizers.L2(), lamduh=2 * n * alpha,
                        max_iter=it, tol=0.0, family=families.Normal))
                sec = time.perf_counter() - start
                if rel(coef) <= TARGET:
                    break
            out.update(seconds=sec, rel_subopt=rel(coef), max_iter=it)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def part_factorized_peers(args):
    """DSPDC on ``(U, V)`` against scikit-learn's ``Ridge`` and dask-glm on the materialized
    ``A``: seconds to ``1e-6`` relative suboptimality and peak RSS, each in a fresh process."""
    n, p, d, alpha = args.fn, args.fp, args.fd, args.f_alpha
    # P* in a process of its own: a worker's peak RSS (getrusage) counts the memory of the
    # process it was started from, so this one must never hold A
    p_star = _spawn_fn(factorized_peer_worker, {"n": n, "p": p, "d": d, "alpha": alpha,
                                                "method": "p_star"})["p_star"]
    methods = [("sklearn_ridge", None), ("dask_glm_lbfgs", None), ("dspdc", "auto"),
               ("dspdc", args.fq)]
    rows = []
    for method, q in methods:
        runs = [_spawn_fn(factorized_peer_worker, {
            "n": n, "p": p, "d": d, "alpha": alpha, "method": method, "q": q,
            "p_star": p_star, "max_seconds": args.f_max_seconds}) for _ in range(args.repeats)]
        row = {"method": method, "q": q,
               "median_seconds": float(np.median([r["seconds"] for r in runs])),
               "median_peak_rss_mb": float(np.median([r["peak_rss_mb"] for r in runs])),
               "rel_subopt": [r["rel_subopt"] for r in runs], "runs": runs}
        print(json.dumps({k: v for k, v in row.items() if k != "runs"}), flush=True)
        rows.append(row)
    return {"n": n, "p": p, "d": d, "alpha": alpha, "p_star": p_star,
            "data_mb": {"U, V": (n * d + d * p) * 8 / 2 ** 20, "A": n * p * 8 / 2 ** 20},
            "rows": rows}


def _spawn_fn(fn, spec):
    out = subprocess.run([sys.executable, __file__, "--worker-fn", fn.__name__,
                          "--worker", json.dumps(spec)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["peers", "factorized", "factorized_peers", "memory"],
                        default="peers")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--worker-fn", default="worker", help=argparse.SUPPRESS)
    parser.add_argument("--problems", nargs="+",
                        default=["ridge", "elastic_net", "logistic", "smoothed_hinge"])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--fn", type=int, default=50_000, help="factorized: rows")
    parser.add_argument("--fp", type=int, default=1000, help="factorized: features")
    parser.add_argument("--fd", type=int, default=10, help="factorized: rank")
    parser.add_argument("--fq", type=int, default=10, help="factorized: the small q")
    parser.add_argument("--f-epochs", type=int, default=3)
    parser.add_argument("--f-alpha", type=float, default=1e-3,
                        help="factorized_peers: alpha")
    parser.add_argument("--f-max-seconds", type=float, default=600.0,
                        help="factorized_peers: DSPDC's time budget")
    parser.add_argument("--mem-n", type=int, nargs="+",
                        default=[250_000, 500_000, 1_000_000, 2_000_000])
    parser.add_argument("--mem-rank", type=int, default=50)
    parser.add_argument("--mem-q", type=int, default=10)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.worker:
        fn = {"worker": worker, "factorized_peer_worker": factorized_peer_worker}
        print(json.dumps(fn[args.worker_fn](json.loads(args.worker)), default=float))
        return
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    result = {"peers": part_peers, "factorized": part_factorized,
              "factorized_peers": part_factorized_peers, "memory": part_memory}[args.part](args)
    result["meta"] = {"command": "python benchmarks/dspdc_peers.py " + " ".join(argv or []),
                      "machine": platform.platform(), "cpus": os.cpu_count()}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1, default=float) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
