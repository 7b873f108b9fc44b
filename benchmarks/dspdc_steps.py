"""Passes over the duals to a relative duality gap of 1e-4 and 1e-6: DSPDC's settings before
and after standardization and adaptive steps, on well-conditioned and on raw, unscaled data.

Problems (n rows, 50 Gaussian columns, written to a Zarr store and fitted out of core from
it, ``alpha = 1e-4``): ridge (a linear target plus noise) and logistic regression (its sign),
on the columns as drawn ("conditioned") and on the same columns scaled by 1e-3 .. 1e3 with an
offset of 1000 on the large ones ("raw", as calendar values, distances and pressures are).
Settings:

* ``theorem, raw columns``: ``standardize=False, steps="theorem"`` (the solver before);
* ``theorem, standardized``: ``standardize=True, steps="theorem"``;
* ``defaults``: ``standardize=True, steps="adaptive"``.

Each fit runs at most ``--max-iter`` epochs with the gap evaluated every epoch; the passes to
each tolerance are read from ``gap_history_`` (None: not reached).  Medians over ``--seeds``
data seeds.

    python benchmarks/dspdc_steps.py --n 50000 --seeds 3 \
        --out benchmarks/results/dspdc_steps.json --plot docs/img/dspdc_steps.png

(or the seeds in separate processes, ``--seeds 1 --first-seed S --out part_S.json``, then
``--merge part_0.json part_1.json part_2.json --out ... --plot ...``).

``--sweep B ...`` instead runs the defaults on the conditioned problems of seed
``--first-seed`` (0 by default) with every loss's first ``step_boost`` set to each ``B`` (the
choice of the default):

    python benchmarks/dspdc_steps.py --n 50000 --max-iter 30 --sweep 3 30 300 \
        --out benchmarks/results/dspdc_steps_sweep.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import warnings
from pathlib import Path

import dask.array as da
import numpy as np

import ooc_kernels as ok

SETTINGS = {
    "theorem, raw columns": {"standardize": False, "steps": "theorem"},
    "theorem, standardized": {"standardize": True, "steps": "theorem"},
    "defaults": {},
}
#: Settings run per data kind (the raw columns' theorem fit is the slow one).
RUNS = {"conditioned": ("theorem, raw columns", "defaults"),
        "raw": ("theorem, raw columns", "theorem, standardized", "defaults")}


def _data(n: int, p: int, seed: int, kind: str, folder: Path):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    w = rng.normal(size=p)
    y = X @ w + 0.5 * rng.normal(size=n)
    yc = (X @ w + rng.normal(size=n) > 0).astype(np.int64)
    if kind == "raw":
        scales = np.logspace(-3, 3, p)
        rng.shuffle(scales)
        X = X * scales + 1000.0 * (scales > 1)
    path = folder / f"{kind}_{seed}.zarr"
    da.from_array(X, chunks=(10_000, p)).to_zarr(str(path / "X"))
    lazy = da.from_zarr(str(path / "X"))
    return lazy, y, yc


def _passes(history, tol):
    return next((e["passes"] for e in history if e["relative_gap"] <= tol), None)


def run(n: int, p: int, seeds: int, alpha: float, max_iter: int,
        first_seed: int = 0, extra: dict | None = None) -> list[dict]:
    folder = Path(tempfile.mkdtemp(prefix="dspdc-steps-"))
    out = []
    for seed in range(first_seed, first_seed + seeds):
        for kind, settings in RUNS.items():
            X, y, yc = _data(n, p, seed, kind, folder)
            for problem, Est, target in (("ridge", ok.DSPDCRegressor, y),
                                         ("logistic", ok.DSPDCClassifier, yc)):
                for setting in settings:
                    start = time.perf_counter()
                    with warnings.catch_warnings():   # the slow settings stop at max_iter
                        warnings.simplefilter("ignore")
                        est = Est(alpha=alpha, tol=1e-6, max_iter=max_iter, random_state=0,
                                  scheduler="sync", progress=False,
                                  **SETTINGS[setting], **(extra or {})).fit(X, target)
                    h = est.gap_history_
                    row = {"seed": seed, "data": kind, "problem": problem, "setting": setting,
                           "n": n, "p": p, "alpha": alpha, "max_iter": max_iter,
                           "seconds": time.perf_counter() - start,
                           "passes_1e-4": _passes(h, 1e-4), "passes_1e-6": _passes(h, 1e-6),
                           "last_relative_gap": h[-1]["relative_gap"],
                           "gap_history": [{k: e[k] for k in ("passes", "relative_gap",
                                                              "step_boost")} for e in h]}
                    print(json.dumps({k: v for k, v in row.items() if k != "gap_history"}),
                          flush=True)
                    out.append(row)
    return out


def sweep(n: int, p: int, alpha: float, max_iter: int, boosts, seed: int = 0) -> list[dict]:
    """Passes of the default settings with each first ``step_boost`` of ``boosts`` (every
    loss's), on the conditioned problems of data seed ``seed``."""
    from ooc_kernels.families.dspdc import estimators

    folder = Path(tempfile.mkdtemp(prefix="dspdc-sweep-"))
    X, y, yc = _data(n, p, seed, "conditioned", folder)
    out = []
    default = dict(estimators.STEP_BOOST)
    try:
        for boost in boosts:
            estimators.STEP_BOOST.update(dict.fromkeys(default, float(boost)))
            for problem, Est, target in (("ridge", ok.DSPDCRegressor, y),
                                         ("logistic", ok.DSPDCClassifier, yc)):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est = Est(alpha=alpha, tol=1e-6, max_iter=max_iter, random_state=0,
                              scheduler="sync", progress=False).fit(X, target)
                h = est.gap_history_
                row = {"problem": problem, "seed": seed, "first_step_boost": float(boost),
                       "passes_1e-4": _passes(h, 1e-4), "passes_1e-6": _passes(h, 1e-6),
                       "last_step_boost": h[-1]["step_boost"]}
                print(json.dumps(row), flush=True)
                out.append(row)
    finally:
        estimators.STEP_BOOST.update(default)
    return out


def summary(results) -> list[dict]:
    """Medians over the seeds of the passes to each tolerance (a fit that did not reach it
    counts as more than ``max_iter``: the median is reported as None when it is one)."""
    rows = []
    keys = sorted({(r["data"], r["problem"], r["setting"]) for r in results},
                  key=lambda k: (k[0], k[1], list(SETTINGS).index(k[2])))
    for data, problem, setting in keys:
        runs = [r for r in results if (r["data"], r["problem"], r["setting"])
                == (data, problem, setting)]
        row = {"data": data, "problem": problem, "setting": setting, "runs": len(runs)}
        for tol in ("1e-4", "1e-6"):
            vals = sorted(np.inf if r[f"passes_{tol}"] is None else r[f"passes_{tol}"]
                          for r in runs)
            med = float(np.median(vals))
            row[f"passes_{tol}"] = None if not np.isfinite(med) else med
        rows.append(row)
    return rows


def plot(results, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(d, pr) for d in RUNS for pr in ("ridge", "logistic")]
    first = min(r["seed"] for r in results if "gap_history" in r)   # one seed's curves
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), sharey=True)
    for ax, (data, problem) in zip(axes, panels):
        for r in results:
            if (r["seed"], r["data"], r["problem"]) != (first, data, problem):
                continue
            h = r["gap_history"]
            ax.semilogy([e["passes"] for e in h], [max(e["relative_gap"], 1e-12) for e in h],
                        marker=".", label=r["setting"])
        ax.axhline(1e-4, color="grey", lw=0.8, ls=":")
        ax.set_title(f"{problem}, {data} columns (seed {first})")
        ax.set_xlabel("passes over the duals")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("relative duality gap (P - D) / |P|")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--alpha", type=float, default=1e-4)
    parser.add_argument("--max-iter", type=int, default=40)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--plot", type=Path, default=None)
    parser.add_argument("--sweep", type=float, nargs="+", default=None)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--local-passes", type=float, default=None,
                        help="local_passes of every fit (default: the estimators' default)")
    parser.add_argument("--merge", type=Path, nargs="+", default=None,
                        help="summarize (and plot) the runs of these result files")
    args = parser.parse_args(argv)
    if args.merge:
        results = [r for f in args.merge for r in json.loads(f.read_text())["runs"]]
        table = summary(results)
        for row in table:
            print(json.dumps(row))
        if args.out:
            args.out.write_text(json.dumps({"summary": table, "runs": results}, indent=1)
                                + "\n")
        if args.plot:
            plot(results, args.plot)
        return
    if args.sweep:
        rows = sweep(args.n, args.p, args.alpha, args.max_iter, args.sweep, args.first_seed)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps({"sweep": rows}, indent=1) + "\n")
        return
    extra = {} if args.local_passes is None else {"local_passes": args.local_passes}
    results = run(args.n, args.p, args.seeds, args.alpha, args.max_iter, args.first_seed,
                  extra)
    table = summary(results)
    for row in table:
        print(json.dumps(row))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"summary": table, "runs": results}, indent=1) + "\n")
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
