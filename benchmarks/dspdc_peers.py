"""DSPDC estimators against scikit-learn and dask-glm on equal objectives; factorized data.

Four parts (``--part``):

``peers``
    ``ok.DSPDCRegressor`` / ``ok.DSPDCClassifier`` at their defaults (``alpha = 1e-4``,
    ``m = 1``, ``q = "auto"``, standardized columns, an intercept column regularized like the
    other coefficients), fitted out of core from a Zarr store written chunk by chunk with the
    library's writer with ``tol`` = each target, against scikit-learn in memory
    (``Ridge`` cholesky and sag, ``ElasticNet``, ``LogisticRegression`` saga, liblinear and
    lbfgs), dask-glm out of core (``lbfgs``, ``proximal_grad``, ``admm`` on
    ``dask.array.from_zarr`` of the same store) and Vowpal Wabbit (logistic, from its text
    file, parsing included).  Data (``--data``): Gaussian columns ("conditioned"), and the same
    rows as a real table's columns ("raw": scales 1e-3 .. 1e3, offsets of 1,000, 0/1
    indicators; :func:`raw_columns`).  DSPDC certifies the problem on its standardized
    columns, so every peer solves that same problem: the columns standardized with the
    fitted estimator's shift and scale, plus a ones column (peers fit no separate
    intercept), ``P(x) = (1/n) sum_i phi(a_i^T x) + alpha (l1_ratio |x|_1 + (1 - l1_ratio)/2
    |x|^2)``, computed by one function for everyone (:func:`objective`); the squared loss's
    targets less their mean, as DSPDC fits them (its intercept less that mean is the ones
    column's coefficient).  ``P*``: the closed
    form (ridge) or a tight reference.  A peer's time to a target is the median wall and CPU
    seconds (3 runs) at the loosest tolerance of a sweep whose solution reaches it (dask-glm,
    whose tolerances are absolute on sum-scaled objectives: the fewest ``max_iter`` with its
    tolerances at 0; Vowpal Wabbit: the fewest passes); DSPDC's is the fit to its certified
    gap ``tol = target`` (which bounds the relative suboptimality).  ``--table FILE ...``
    prints the Markdown table of result files.
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

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \
        python benchmarks/dspdc_peers.py --part peers --out benchmarks/results/dspdc_peers.json
    python benchmarks/dspdc_peers.py --table benchmarks/results/dspdc_peers.json
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
#: Relative suboptimalities ``(P - P*) / |P*|`` the peer table times.
TARGETS = [1e-4, 1e-6]
#: Passes of Vowpal Wabbit's sweeps.
VW_PASSES = [1, 2, 5, 10, 20, 50, 100]
#: A sweep stops at a fit that took longer than this without reaching the target.
SWEEP_CAP_SECONDS = 30.0
#: ``max_iter`` values of the dask-glm sweeps: every count up to 10 (its L-BFGS reaches
#: 1e-4 on the well-conditioned ridge problem in 2 iterations and on the logistic one in 6).
MAX_ITER_GRID = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 40, 80, 160, 320]
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

def write_store(path: Path, n: int, p: int, chunk: int, task: str, seed: int,
                kind: str = "conditioned") -> Path:
    """Gaussian rows; a linear target with noise (regression) or logistic labels in {0, 1}.
    ``kind="raw"``: the same rows as a real table's columns (:func:`raw_columns`), the target
    drawn from the Gaussian rows."""
    from ooc_kernels.data.declarations import make_attrs
    from ooc_kernels.data.zarr_io import write_chunks

    w = np.random.default_rng(12345).normal(size=p) / np.sqrt(p) * 3

    def chunks():
        for i, lo in enumerate(range(0, n, chunk)):
            rng = np.random.default_rng([seed, i])
            X = rng.normal(size=(min(chunk, n - lo), p))
            t = X @ w + 0.5
            if task == "regression":
                yv = (t + 0.5 * rng.normal(size=len(X))).astype(np.float32)
            else:
                yv = (rng.random(len(X)) < 1 / (1 + np.exp(-t))).astype(np.int32)
            if kind == "raw":
                X = raw_columns(X)
            yield {"X": X.astype(np.float32), "y": yv}

    kw = {} if task == "regression" else {"classes": [0, 1]}
    dtypes = None if task == "regression" else {"y": "int32"}
    write_chunks(path, chunks(), n_samples=n, chunk_size=chunk,
                 attrs=make_attrs(task, generator="dspdc_peers", **kw),
                 sizes={"feature": p}, dtypes=dtypes, progress=False)
    return path


def raw_columns(X):
    """Columns as a real table has them: scales from 1e-3 to 1e3 (a fixed shuffle), an offset
    of 1,000 on the large ones (pressures, distances), and every tenth column a 0/1
    indicator."""
    p = X.shape[1]
    scales = np.logspace(-3, 3, p)
    np.random.default_rng(7).shuffle(scales)
    out = X * scales + 1000.0 * (scales > 1)
    ind = np.arange(p) % 10 == 9
    out[:, ind] = (X[:, ind] > 0.3)
    return out


def load(path: Path):
    import xarray as xr

    ds = xr.open_zarr(path)
    return ds, np.asarray(ds["X"].values, dtype=np.float64), np.asarray(ds["y"].values)


# ----------------------------------------------------------------------------- peers

def _timed(fn):
    start, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - start, time.process_time() - cpu, out


def _medians(make, first, repeats):
    """Median wall and CPU seconds of ``repeats`` runs, ``first`` = (wall, cpu) of one."""
    runs = [first] + [_timed(make)[:2] for _ in range(repeats - 1)]
    return {"median_seconds": float(np.median([r[0] for r in runs])),
            "median_cpu_seconds": float(np.median([r[1] for r in runs])),
            "seconds": [r[0] for r in runs], "cpu_seconds": [r[1] for r in runs]}


def sweep(make_fit, rel_of, repeats, grid=None):
    """Per target of :data:`TARGETS`: the loosest tolerance (or fewest iterations, for a
    ``grid`` of ``max_iter``) whose solution is within the target relative of ``P*``, and the
    median wall and CPU seconds of ``repeats`` fits there.
    ``make_fit(tol) -> () -> (coef, intercept)``, ``rel_of(coef, intercept)``."""
    tried, found = [], {}
    for tol in (TOLS if grid is None else grid):
        wall, cpu, (coef, icpt) = _timed(make_fit(tol))
        rel = rel_of(coef, icpt)
        tried.append({"tol": tol, "seconds": wall, "cpu_seconds": cpu, "rel_subopt": rel})
        for target in TARGETS:
            if target not in found and rel <= target:
                found[target] = {"tol": tol, "rel_subopt": rel,
                                 **_medians(make_fit(tol), (wall, cpu), repeats)}
        if len(found) == len(TARGETS) or (rel > min(TARGETS) and wall > SWEEP_CAP_SECONDS):
            break
    return {"targets": {str(t): found.get(t) for t in TARGETS}, "sweep": tried}


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


def _vw_fit(path, folder, n, p, alpha, passes, bfgs):
    """Vowpal Wabbit's logistic linear model from its text file (parsing included): its
    margins on the unit vectors give the coefficients and the intercept."""
    import vowpalwabbit

    l2 = n * alpha if bfgs else alpha
    opts = (f"-d {path} --loss_function logistic --l2 {l2!r} --passes {passes} -c -k "
            f"--cache_file {folder}/vw.cache --holdout_off --quiet -b 18")
    ws = vowpalwabbit.Workspace(opts + (" --bfgs" if bfgs else ""))
    ws.run_parser()
    zero = ws.predict("|f")
    coef = np.array([ws.predict(f"|f {j}:1") - zero for j in range(p)])
    ws.finish()
    return coef, zero


def _vw_rows(Xa, y, folder):
    """A Vowpal Wabbit text file of the (standardized) rows, labels -1/+1."""
    path = folder / "vw.txt"
    with open(path, "w") as fh:
        for row, label in zip(Xa[:, :-1], y):
            feats = " ".join(f"{j}:{v:.9g}" for j, v in enumerate(row))
            fh.write(f"{1 if label > 0 else -1} |f {feats}\n")
    return path


def _p_star(name, Xa, y, alpha, l1_ratio):
    """The solution of the standardized problem on ``a_i = (x_i, 1)``: closed form (ridge) or
    a tight reference."""
    from sklearn.linear_model import ElasticNet, LogisticRegression

    n, q = Xa.shape
    if name == "ridge":
        return np.linalg.solve(Xa.T @ Xa + n * alpha * np.eye(q), Xa.T @ y)
    if name == "elastic_net":
        return ElasticNet(alpha=alpha, l1_ratio=l1_ratio, fit_intercept=False, tol=1e-14,
                          max_iter=1_000_000).fit(Xa, y).coef_
    return LogisticRegression(C=1 / (n * alpha), fit_intercept=False, tol=1e-14,
                              max_iter=100_000).fit(Xa, y).coef_.ravel()


def _sklearn_peers(name, n, alpha, l1_ratio):
    from sklearn.linear_model import ElasticNet, LogisticRegression, Ridge

    def split(c):
        return c[:-1], c[-1]

    if name == "ridge":
        return [("sklearn Ridge (auto = cholesky)", lambda Xa, y, tol: split(
                    Ridge(alpha=n * alpha, fit_intercept=False, tol=tol).fit(Xa, y).coef_)),
                ("sklearn Ridge (sag)", lambda Xa, y, tol: split(
                    Ridge(alpha=n * alpha, fit_intercept=False, solver="sag", tol=tol,
                          max_iter=100_000, random_state=0).fit(Xa, y).coef_))]
    if name == "elastic_net":
        return [("sklearn ElasticNet (cd)", lambda Xa, y, tol: split(
            ElasticNet(alpha=alpha, l1_ratio=l1_ratio, fit_intercept=False, tol=tol,
                       max_iter=1_000_000).fit(Xa, y).coef_))]
    return [(f"sklearn LogisticRegression({s})", lambda Xa, y, tol, s=s: split(
        LogisticRegression(C=1 / (n * alpha), fit_intercept=False, solver=s, tol=tol,
                           max_iter=100_000, random_state=0).fit(Xa, y).coef_.ravel()))
            for s in ("saga", "liblinear", "lbfgs")]


def _dspdc_rows(Est, ds, kw, repeats, rel_of, shift_scale, arrays=None):
    """DSPDC at its defaults, out of core from the store (or in memory from ``arrays``, the
    same rows as NumPy ``(X, y)``), to each target as its ``tol`` (the certified relative
    gap bounds the relative suboptimality)."""
    out = {}
    data = (ds,) if arrays is None else tuple(arrays)
    for target in TARGETS:
        fits = [_timed(lambda r=r: Est(random_state=r, progress=False, tol=target,
                                       **kw).fit(*data)) for r in range(repeats)]
        est = fits[0][2]
        mu, sd = shift_scale(est)
        rel = rel_of(est.coef_ * sd, est.intercept_ + float(est.coef_ @ mu))
        out[str(target)] = {"median_seconds": float(np.median([f[0] for f in fits])),
                            "median_cpu_seconds": float(np.median([f[1] for f in fits])),
                            "seconds": [f[0] for f in fits], "cpu_seconds": [f[1] for f in fits],
                            "epochs": [int(f[2].n_iter_) for f in fits],
                            "relative_gap": fits[0][2].gap_history_[-1]["relative_gap"],
                            "rel_subopt": rel}
    where = "out of core" if arrays is None else "in memory, NumPy input"
    return {"method": f"ok.DSPDC (defaults, {where})", "targets": out}


def part_peers(args):
    import dask.array as da

    import ooc_kernels as ok

    tmp = Path(tempfile.mkdtemp(prefix="dspdc-peers-"))
    n, p, reps, alpha = args.n, args.p, args.repeats, 1e-4
    usable, why = dask_glm_status()
    results = {"n": n, "p": p, "chunk_size": args.chunk_size, "repeats": reps,
               "alpha": alpha, "targets": TARGETS,
               "dask_glm": {"usable": usable, "status": why}, "problems": []}
    print(json.dumps(results["dask_glm"]), flush=True)
    problems = [("ridge", "squared", 0.0), ("elastic_net", "squared", 0.5),
                ("logistic", "logistic", 0.0)]
    for kind in args.data:
        stores = {t: write_store(tmp / f"{kind}_{t}.zarr", n, p, args.chunk_size, t, s, kind)
                  for t, s in (("regression", 1), ("classification", 2))}
        for name, loss, l1_ratio in [pr for pr in problems if pr[0] in args.problems]:
            store = stores["regression" if loss == "squared" else "classification"]
            ds, X, y_raw = load(store)
            # DSPDC fits the squared loss to the targets less their mean (its intercept gets
            # the mean back): the peers solve the problem on those targets
            ybar = float(np.mean(y_raw, dtype=np.float64)) if loss == "squared" else 0.0
            y = y_raw - ybar if loss == "squared" else y_raw
            Est = ok.DSPDCRegressor if loss == "squared" else ok.DSPDCClassifier
            kw = {} if l1_ratio == 0 else {"l1_ratio": l1_ratio}
            # every method solves DSPDC's standardized problem: its columns' shift and scale
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")          # one epoch: not converged
                probe = Est(max_iter=1, tol=None, progress=False, **kw).fit(ds)
            mu, sd = np.asarray(probe._config.x_shift), np.asarray(probe._config.x_scale)
            Xa = np.column_stack([(X - mu) / sd, np.ones(n)])
            ref = _p_star(name, Xa, y, alpha, l1_ratio)
            p_star = objective(Xa[:, :-1], y, ref[:-1], ref[-1], loss=loss, alpha=alpha,
                               l1_ratio=l1_ratio)

            def rel_of(c, i):
                P = objective(Xa[:, :-1], y, c, i, loss=loss, alpha=alpha, l1_ratio=l1_ratio)
                return (P - p_star) / abs(p_star)

            rows = []
            for arrays in ([] if args.in_memory_only else [None]) + [(X, y_raw)]:
                rows.append(_dspdc_rows(Est, ds, kw, reps, lambda c, i: rel_of(c, i - ybar),
                                        lambda e: (np.asarray(e._config.x_shift),
                                                   np.asarray(e._config.x_scale)), arrays))
                print(json.dumps(rows[-1]), flush=True)
            if args.only_dspdc:
                results["problems"].append({"data": kind, "problem": name, "rows": rows})
                continue
            for label, fit in _sklearn_peers(name, n, alpha, l1_ratio):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")      # ConvergenceWarning at loose tol
                    out = sweep(lambda tol, f=fit: lambda: f(Xa, y, tol), rel_of, reps)
                rows.append({"method": label + " (in memory)", **out})
                print(json.dumps({k: v for k, v in rows[-1].items() if k != "sweep"}),
                      flush=True)
            if usable and not args.in_memory_only:
                Xd = da.from_zarr(str(store), component="X").astype(np.float64)
                Xd = (Xd - mu) / sd
                Xd = da.concatenate([Xd, da.ones((n, 1), chunks=(Xd.chunks[0], 1))], axis=1)
                Xd = Xd.rechunk({1: -1})
                yd = da.from_zarr(str(store), component="y").astype(np.float64) - ybar
                family = "normal" if loss == "squared" else "logistic"
                # dask-glm: sum of the family's loss + lamduh * reg; Normal's loss is
                # sum (y - Xb)^2 (no 1/2), the L2 regularizer is |b|^2 / 2
                lamduh = (2 if loss == "squared" else 1) * n * alpha
                reg = ("l2",) if l1_ratio == 0 else ("enet", l1_ratio)
                algos = (["lbfgs", "proximal_grad", "admm"] if l1_ratio == 0
                         else ["proximal_grad", "admm"])
                for algo in algos:
                    out = sweep(lambda it, a=algo: lambda: _dask_glm_fit(
                        Xd, yd, family, reg, lamduh, a, it), rel_of, reps, grid=MAX_ITER_GRID)
                    rows.append({"method": f"dask-glm {algo} (out of core)", **out})
                    print(json.dumps({k: v for k, v in rows[-1].items() if k != "sweep"}),
                          flush=True)
            if loss == "logistic" and not args.in_memory_only:
                path = _vw_rows(Xa, y, tmp)
                for bfgs in (False, True):
                    out = sweep(lambda ps, b=bfgs: lambda: _vw_fit(path, tmp, n, p, alpha, ps, b),
                                rel_of, reps, grid=[k for k in VW_PASSES if k > 1 or not bfgs])
                    rows.append({"method": "Vowpal Wabbit " + ("--bfgs, l2 = n alpha" if bfgs
                                 else "SGD, l2 = alpha (online: a different objective)")
                                 + " (from its text file, parsing included)", **out})
                    print(json.dumps({k: v for k, v in rows[-1].items() if k != "sweep"}),
                          flush=True)
            entry = {"data": kind, "problem": name, "loss": loss, "alpha": alpha,
                     "l1_ratio": l1_ratio, "p_star": p_star, "rows": rows}
            results["problems"].append(entry)
    return results


def peer_table(results: dict) -> str:
    """The peer table in Markdown: per data and problem, each method's median CPU (and wall)
    seconds to each target, or the best relative suboptimality its sweep reached."""
    lines = ["| data | problem | method | " + " | ".join(
        f"to {t:g}: CPU s (wall s)" for t in TARGETS) + " |",
        "|---|---|---|" + "---|" * len(TARGETS)]
    for entry in results["problems"]:
        for row in entry["rows"]:
            cells = []
            for t in TARGETS:
                hit = row["targets"].get(str(t))
                if hit is None:
                    best = min(r["rel_subopt"] for r in row.get("sweep", [{"rel_subopt":
                                                                            float("nan")}]))
                    cells.append(f"not reached (best {best:.1e})")
                else:
                    how = (f", {int(np.median(hit['epochs']))} epochs" if "epochs" in hit
                           else f", {hit['tol']:g}")
                    cells.append(f"{hit['median_cpu_seconds']:.3g} ({hit['median_seconds']:.3g}"
                                 f"{how})")
            lines.append(f"| {entry['data']} | {entry['problem']} | {row['method']} | "
                         + " | ".join(cells) + " |")
    return "\n".join(lines)


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
    parser.add_argument("--problems", nargs="+", default=["ridge", "elastic_net", "logistic"])
    parser.add_argument("--only-dspdc", action="store_true",
                        help="peers: the DSPDC rows only (the peers' rows of an earlier run "
                             "still hold)")
    parser.add_argument("--in-memory-only", action="store_true",
                        help="peers: DSPDC in memory and scikit-learn only (no out-of-core "
                             "DSPDC, dask-glm or Vowpal Wabbit rows)")
    parser.add_argument("--data", nargs="+", default=["conditioned", "raw"],
                        choices=["conditioned", "raw"])
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
    parser.add_argument("--table", type=Path, nargs="+", default=None,
                        help="print the peer table of these result files and exit")
    args = parser.parse_args(argv)
    if args.table:
        merged = {"problems": [e for f in args.table
                               for e in json.loads(f.read_text())["problems"]]}
        print(peer_table(merged))
        return
    if args.worker:
        fn = {"worker": worker, "factorized_peer_worker": factorized_peer_worker}
        print(json.dumps(fn[args.worker_fn](json.loads(args.worker)), default=float))
        return
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    result = {"peers": part_peers, "factorized": part_factorized,
              "factorized_peers": part_factorized_peers, "memory": part_memory}[args.part](args)
    result["meta"] = {"command": "python benchmarks/dspdc_peers.py " + " ".join(argv or []),
                      "machine": platform.platform(), "cpus": os.cpu_count(),
                      "load_average": os.getloadavg()}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1, default=float) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
