"""DSG, UDSG and CDSG (``update="new" | "uniform" | "check"``): the convergence rate against
exact kernel ridge regression, and test error against wall-clock time at fixed budgets.

Part 1, ``--part rate`` (the O(1/t) figure, Dai et al.'s Figure 4(2) setting on a finite
sample): ``synthetic_krr_2d``, ``n`` training rows, the exact empirical KRR solution
``f* = K (K + n lambda I)^-1 y`` (Gaussian kernel, bandwidth 1, ``lambda = 0.02``), the
estimators with ``standardize=False``, ``gamma_t = theta / (t + 20)`` with
``theta lambda = 1``, batches of 8, blocks of 8 features and a budget the run never fills
(all steps are growth steps).  Plotted: ``mean_i (f_t(x_i) - f*(x_i))^2`` over the training
rows against the step ``t`` (median over the seeds), with a ``1/t`` guide line; printed:
the log-log slope of the mean over the seeds.

Part 2, ``--part time`` (the reuse variants at equal time): on each problem, each mode
with the estimators' defaults but ``n_features`` (the budget, ``--budgets``) and the
bandwidth (the one ``bandwidth="auto"`` chooses for the problem and seed, found once so
that its trial fits are not timed) is fitted one epoch at a time (``warm_start``); after every epoch the cumulative fit time and the test
error (1 - accuracy, or the mean squared error on the noisy test targets) are recorded.
Reported per problem, budget and mode (medians of ``--repeats`` seeds): the error after
``--epochs`` epochs, the time they took, the error at DSG's time (the last epoch that ended
within it) and the time to reach DSG's final error (``null``: not reached).

Problems (in memory, chunks of 10,000 rows):

* ``krr``: ``synthetic_krr_2d``, 40,000 training rows, 10,000 test rows (regression);
* ``binary``: ``nonlinear_binary`` with 10 inputs, 3 informative, 40,000 / 10,000 rows;
* ``digits``: ``digits_deformed`` (64 inputs, 10 classes), 30,000 / 10,000 rows.

Run (a few minutes each on 2 shared cores)::

    python benchmarks/dsg_old_coords.py --part rate
    python benchmarks/dsg_old_coords.py --part time --repeats 3
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import ooc_kernels as ok
from ooc_kernels.data.generators import generate_chunk

MODES = ("new", "uniform", "check")
ROOT = Path(__file__).resolve().parent
#: name -> (generator, parameters, training rows, test rows)
PROBLEMS = {"krr": ("synthetic_krr_2d", {}, 40_000, 10_000),
            "binary": ("nonlinear_binary", {"n_features": 10}, 40_000, 10_000),
            "digits": ("digits_deformed", {}, 30_000, 10_000)}


def krr_rate(update: str, seed: int, n: int, epochs: int, lam: float = 0.02):
    """``(steps, errors)`` of one run of part 1."""
    c = generate_chunk("synthetic_krr_2d", 0, n, random_state=seed)
    X, y = c["X"].astype(np.float64), c["y"].astype(np.float64)
    K = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 2.0)
    f_star = K @ np.linalg.solve(K + n * lam * np.eye(n), y)
    B, r = 8, 8
    reg = ok.DSGRegressor(update=update, standardize=False, bandwidth=1.0, alpha=lam,
                          learning_rate="inverse", eta0=1.0 / lam, t0=20.0, dtype="float64",
                          n_features=r * epochs * n // B, block_size=r, batch_size=B,
                          average=False, max_iter=1, tol=None, warm_start=True,
                          chunk_size=n, random_state=seed, scheduler="sync", progress=False)
    steps, errors = [], []
    for _ in range(epochs):
        reg.fit(X, y)
        steps.append(reg.t_)
        errors.append(float(np.mean((reg.predict(X) - f_star) ** 2)))
    return np.array(steps), np.array(errors)


def part_rate(args) -> dict:
    out = {}
    for update in MODES:
        runs = [krr_rate(update, seed, args.rate_rows, args.rate_epochs)
                for seed in range(args.seeds)]
        steps = runs[0][0]
        errors = np.array([e for _, e in runs])
        slope = float(np.polyfit(np.log(steps), np.log(errors.mean(axis=0)), 1)[0])
        out[update] = {"steps": steps.tolist(), "median_error": np.median(errors, 0).tolist(),
                       "mean_error": errors.mean(0).tolist(), "slope": slope}
        print(f"{update:8s} slope {slope:+.3f}  error {errors.mean(0)[-1]:.3g} at t = "
              f"{steps[-1]}", flush=True)
    _plot_rate(out, ROOT.parent / "docs" / "img" / "dsg_old_coords_rate.png")
    return out


def _plot_rate(out: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4))
    labels = {"new": "DSG", "uniform": "UDSG", "check": "CDSG"}
    for update, res in out.items():
        ax.loglog(res["steps"], res["median_error"], "o-", ms=3,
                  label=f"{labels[update]} (slope {res['slope']:+.2f})")
    t = np.asarray(out["new"]["steps"], dtype=float)
    guide = out["new"]["median_error"][0] * t[0] / t
    ax.loglog(t, guide, "k--", lw=1, label="1/t")
    ax.set_xlabel("step t")
    ax.set_ylabel("mean (f_t(x) - f*(x))^2 over the training rows")
    ax.set_title("synthetic_krr_2d: distance to the exact KRR solution")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def load(name: str, seed: int):
    gen, params, n_train, n_test = PROBLEMS[name]
    tr = generate_chunk(gen, 0, n_train, random_state=seed, **params)
    te = generate_chunk(gen, 0, n_test, random_state=seed, split="test", **params)
    return tr["X"], tr["y"], te["X"], te["y"]


def default_bandwidth(name: str, seed: int):
    """The bandwidth the defaults choose (``"auto"``), found once per problem and seed so
    that the timed fits share it and do not repeat the trial fits."""
    X, y, _, _ = load(name, seed)
    cls = ok.DSGRegressor if name == "krr" else ok.DSGClassifier
    width = cls(max_iter=1, tol=None, chunk_size=10_000, random_state=seed,
                scheduler="sync", progress=False).fit(X, y).bandwidth_
    return float(width) if np.ndim(width) == 0 else np.asarray(width)


def curve(name: str, update: str, budget: int, seed: int, epochs: int, bandwidth):
    """``(seconds, errors)`` after each epoch of one fit."""
    X, y, Xt, yt = load(name, seed)
    cls = ok.DSGRegressor if name == "krr" else ok.DSGClassifier
    est = cls(update=update, n_features=budget, bandwidth=bandwidth, max_iter=1, tol=None,
              warm_start=True, chunk_size=10_000, random_state=seed, scheduler="sync",
              progress=False)
    seconds, errors, spent = [], [], 0.0
    for _ in range(epochs):
        start = time.perf_counter()
        est.fit(X, y)
        spent += time.perf_counter() - start
        pred = est.predict(Xt)
        err = float(np.mean((pred - yt) ** 2)) if name == "krr" else float(np.mean(pred != yt))
        seconds.append(spent)
        errors.append(err)
    return np.array(seconds), np.array(errors)


def part_time(args) -> dict:
    out, widths = {}, {}
    for name in args.problems:
        for budget in args.budgets:
            runs = {u: [] for u in MODES}
            for seed in range(args.repeats):  # the modes interleaved: the same machine load
                if (name, seed) not in widths:
                    widths[name, seed] = default_bandwidth(name, seed)
                for u in MODES:
                    runs[u].append(curve(name, u, budget, seed, args.epochs,
                                         widths[name, seed]))
            rows = {}
            for u in MODES:
                at_dsg, to_reach = [], []
                for (sec, err), (dsg_sec, dsg_err) in zip(runs[u], runs["new"]):
                    within = np.flatnonzero(sec <= dsg_sec[-1] * 1.0001)
                    at_dsg.append(float(err[within[-1]]) if len(within) else float("nan"))
                    hit = np.flatnonzero(err <= dsg_err[-1])
                    to_reach.append(float(sec[hit[0]]) if len(hit) else float("nan"))
                reached = [v for v in to_reach if v == v]
                rows[u] = {
                    "final_error": float(np.median([e[-1] for _, e in runs[u]])),
                    "seconds": float(np.median([s[-1] for s, _ in runs[u]])),
                    "error_at_dsg_time": float(np.nanmedian(at_dsg)),
                    "seconds_to_dsg_error": float(np.median(reached))
                    if len(reached) * 2 > len(to_reach) else None,
                    "curves": [{"seconds": s.tolist(), "errors": e.tolist()}
                               for s, e in runs[u]]}
                r = rows[u]
                print(f"{name:7s} n_features={budget:6d} {u:8s} error {r['final_error']:.4f} "
                      f"in {r['seconds']:6.1f} s; at DSG's time {r['error_at_dsg_time']:.4f}; "
                      f"DSG's error reached at {r['seconds_to_dsg_error']}", flush=True)
            out[f"{name}/{budget}"] = rows
            if args.out_path is not None:  # what is measured so far, after every budget
                args.out_path.write_text(json.dumps(out, indent=1))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--part", choices=["rate", "time"], required=True)
    p.add_argument("--seeds", type=int, default=5, help="part rate: seeds averaged")
    p.add_argument("--rate-rows", type=int, default=1024)
    p.add_argument("--rate-epochs", type=int, default=8)
    p.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=list(PROBLEMS))
    p.add_argument("--budgets", nargs="+", type=int, default=[4096, 32768])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    warnings.simplefilter("ignore", ok.exceptions.StepSizeWarning)
    out = args.out or ROOT / "results" / f"dsg_old_coords_{args.part}.json"
    args.out_path = out
    res = part_rate(args) if args.part == "rate" else part_time(args)
    out.write_text(json.dumps(res, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
