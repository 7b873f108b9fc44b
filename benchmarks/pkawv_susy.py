"""The paper's SUSY headline on a stand-in: a stream of 10^6 rows, d = 18, sigma = 4,
lambda = 1, PKAWV-Taylor with M = 2 (190 features).

Writes the stand-in (``pkawv_common``) to a Zarr store chunk by chunk, then measures on it,
the last ``--test`` rows held out:

* ``OnlineKernelRidge(basis="taylor", degree=2, mode="krr")`` streamed over every row (the
  paper's Projected-KRR): seconds, online average classification error, held-out error;
* ``ProjectedKernelRidge`` (Taylor M = 2, and Nystrom with 1000 rows) on the training rows,
  out of core: seconds and held-out error;
* exact kernel ridge regression (scikit-learn's ``KernelRidge``) on a uniform subsample of
  ``--krr-rows`` training rows: held-out error;
* FOGD (1000 random Fourier features, eta = 1 / sqrt(n)) over every row: seconds, online and
  held-out error;
* the peers at the online learner's time: scikit-learn's ``SGDRegressor`` and River's
  ``LinearRegression`` on ``RBFSampler`` features (1000), progressive error and rows reached.

Timings are medians of ``--repeats`` runs.  Results: ``results/pkawv_susy.json``; figure:
``../docs/img/pkawv_susy.svg``.

    python pkawv_susy.py --repeats 1 --skip-nystrom       # 10^6 rows
    python pkawv_susy.py --repeats 3 --skip-nystrom --skip-peers \
        --out results/pkawv_susy_1m.json --figure /tmp/pkawv_susy_1m.svg
    python pkawv_susy.py --n 200000 --test 20000 --krr-rows 3000 --repeats 3 \
        --out results/pkawv_susy_200k.json --figure /tmp/pkawv_susy_200k.svg
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from pkawv_common import FOGD, STAND_INS, loss, online_curve, river_step, sgd_step, write_store

import ooc_kernels as ok

HERE = Path(__file__).resolve().parent


def gemm_seconds() -> float:
    """Seconds of a 2000 x 2000 float64 matrix product (16 GFLOP), median of 3: how fast
    (how loaded) the machine was at the time of the run."""
    a = np.random.default_rng(0).normal(size=(2000, 2000))
    return statistics.median(_median_time(lambda: a @ a, 3)[1])


def _median_time(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times, out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--test", type=int, default=100_000)
    parser.add_argument("--chunk", type=int, default=50_000)
    parser.add_argument("--krr-rows", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--store", default=None, help="Zarr store path (default: a temp dir)")
    parser.add_argument("--skip-nystrom", action="store_true",
                        help="leave out ProjectedKernelRidge with the Nystrom basis")
    parser.add_argument("--skip-peers", action="store_true",
                        help="leave out FOGD and the equal-time peers (SGD, River)")
    parser.add_argument("--out", default=str(HERE / "results" / "pkawv_susy.json"))
    parser.add_argument("--figure", default=str(HERE.parent / "docs" / "img" /
                                                "pkawv_susy.svg"))
    args = parser.parse_args(argv)

    import xarray as xr
    from sklearn.kernel_ridge import KernelRidge

    base = STAND_INS["susy"]
    spec = type(base)(**{**base.__dict__, "n": args.n})
    sigma, alpha = spec.bandwidth, 1.0
    tmp = tempfile.TemporaryDirectory()
    store = Path(args.store or Path(tmp.name) / "susy.zarr")
    if not store.exists():
        write_store(store, spec, args.chunk)
    ds = xr.open_zarr(store)
    n_train = spec.n - args.test
    train = ds.isel(sample=slice(0, n_train))
    X_test = np.asarray(ds["X"][n_train:].values, dtype=np.float64)   # the held-out rows
    y_test = np.asarray(ds["y"][n_train:].values)
    res = {"n": spec.n, "d": spec.d, "test_rows": args.test, "sigma": sigma, "alpha": alpha,
           "chunk": args.chunk, "repeats": args.repeats,
           "gemm_seconds_before": gemm_seconds()}

    def test_error(model):
        return float(loss(spec, np.asarray(model.predict(X_test)), y_test).mean())

    # the online learner over the whole stream
    def online():
        model = ok.OnlineKernelRidge(basis="taylor", degree=2, bandwidth=sigma, alpha=alpha,
                                     mode="krr", scheduler="sync", progress=False)
        return model.fit(ds)
    med, times, model = _median_time(online, args.repeats)
    y_all = np.asarray(ds["y"].values)      # labels only: the online error's reference
    res["online_taylor_m2"] = {
        "seconds": med, "runs": times, "n_components": model.n_components_,
        "rows_per_second": spec.n / med,
        "online_error": float(loss(spec, model.online_predictions_, y_all).mean()),
        "test_error": test_error(model)}
    budget = med

    batches = [("batch_taylor_m2", dict(basis="taylor", degree=2, center=False))]
    if not args.skip_nystrom:
        batches.append(("batch_nystrom_1000", dict(basis="nystrom-fixed", n_components=1000)))
    for name, params in batches:
        def batch(params=params):
            return ok.ProjectedKernelRidge(**params, bandwidth=sigma, alpha=alpha,
                                           random_state=0, scheduler="threads",
                                           progress=False).fit(train)
        med_b, times_b, pkr = _median_time(batch, args.repeats)
        res[name] = {"seconds": med_b, "runs": times_b, "n_components": pkr.n_components_,
                     "test_error": test_error(pkr)}

    rng = np.random.default_rng(0)
    rows = np.sort(rng.choice(n_train, size=min(args.krr_rows, n_train), replace=False))
    Xs = np.asarray(ds["X"][rows].values, dtype=np.float64)   # a few thousand rows
    ys = np.asarray(ds["y"][rows].values)
    start = time.perf_counter()
    krr = KernelRidge(alpha=alpha, kernel="rbf", gamma=1 / (2 * sigma ** 2)).fit(Xs, ys)
    res["exact_krr_subsample"] = {"rows": len(rows), "seconds": time.perf_counter() - start,
                                  "test_error": float(loss(spec, krr.predict(X_test),
                                                           y_test).mean())}

    if not args.skip_peers:
        peers(spec, ds, args, budget, X_test, y_test, res)

    # the online learner's curve: its cumulative loss after every chunk
    hist = model.loss_history_
    res["online_taylor_m2_curve"] = [
        (int(r), None, float(loss(spec, model.online_predictions_[:int(r)],
                                  y_all[:int(r)]).mean())) for r in hist[:, 0]]
    res["gemm_seconds_after"] = gemm_seconds()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1))
    plot(res, args.figure)
    print(json.dumps({k: v for k, v in res.items() if not k.endswith("curve")}, indent=1))


def peers(spec, ds, args, budget, X_test, y_test, res):
    """FOGD over every row, and the peers within the online learner's ``budget``."""
    sigma = spec.bandwidth

    def stream(step):
        """Online pass chunk by chunk over the store: ``(curve, online error)``."""
        curve, total, start, seen = [], 0.0, time.perf_counter(), 0
        for lo in range(0, spec.n, args.chunk):
            X = np.asarray(ds["X"][lo:lo + args.chunk].values, dtype=np.float64)
            y = np.asarray(ds["y"][lo:lo + args.chunk].values)
            total += loss(spec, step(X, y), y).sum()
            seen += len(X)
            curve.append((seen, time.perf_counter() - start, total / seen))
        return curve

    fogd_runs = []
    for _ in range(args.repeats):
        fogd = FOGD(spec.d, sigma, spec.n)
        fogd_runs.append((stream(fogd.partial_fit), fogd))
    fogd_times = [c[-1][1] for c, _ in fogd_runs]
    curve, fogd = fogd_runs[0]
    res["fogd"] = {"seconds": statistics.median(fogd_times), "runs": fogd_times,
                   "online_error": curve[-1][2],
                   "test_error": float(loss(spec, fogd.features(X_test) @ fogd.w,
                                            y_test).mean())}
    res["fogd_curve"] = curve

    head = min(spec.n, 400_000)     # the peers stop at the online learner's time anyway
    X_head = np.asarray(ds["X"][:head].values, dtype=np.float64)
    y_head = np.asarray(ds["y"][:head].values)
    for name, step, chunk in (("sgd_rff_1000", sgd_step(sigma, spec.d), 5000),
                              ("river_rff_1000", river_step(sigma, spec.d), 500)):
        c = online_curve(spec, step, X_head, y_head, chunk=chunk, budget=budget)
        res[name] = {"budget_seconds": budget, "rows": c[-1][0], "seconds": c[-1][1],
                     "online_error": c[-1][2]}
        res[name + "_curve"] = c


def plot(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for key, label in (("online_taylor_m2_curve", "PKAWV-Taylor M=2 (online KRR)"),
                       ("fogd_curve", "FOGD, 1000 features"),
                       ("sgd_rff_1000_curve", "SGDRegressor + RBFSampler (equal time)"),
                       ("river_rff_1000_curve", "River LinearRegression + RBFSampler "
                                                "(equal time)")):
        if key not in res:
            continue
        c = np.array([(r, e) for r, _, e in res[key]], dtype=float)
        ax.plot(c[:, 0], c[:, 1], label=label)
    for key, label, style in (("batch_taylor_m2", "ProjectedKernelRidge Taylor M=2 "
                                                  "(held out)", "--"),
                              ("exact_krr_subsample", "exact KRR on "
                               f"{res['exact_krr_subsample']['rows']} rows (held out)",
                               ":")):
        ax.axhline(res[key]["test_error"], linestyle=style, color="k", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("rows seen")
    ax.set_ylabel("average classification error")
    ax.set_title(f"SUSY-like stand-in: n={res['n']:,}, d={res['d']}, sigma={res['sigma']}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
