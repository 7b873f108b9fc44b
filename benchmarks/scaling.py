"""Statistical efficiency of DSG rounds against K: rows processed to reach the
``K = 1`` model's error after 3 epochs, for ``K = chunks_per_round`` = 1, 2, 4, 8, 16.

Two problems, both written by the package's own generators (``ok.make_dataset``; nothing is
downloaded):

* ``synthetic_krr_2d`` (``--krr-n`` rows, 16 chunks): squared loss, ``alpha = 1e-3``,
  ``gamma_t = 2000 / (t + 1000)``; the error is the distance
  ``mean_i (f(x_i) - f*(x_i))^2`` over the training rows to the exact kernel ridge solution
  ``f*`` of the same objective (same standardization, bandwidth and ``alpha``), solved
  directly.  ``--bandwidth`` picks the kernel (default: the estimator's ``"auto"``).
* ``digits_deformed`` (``--digits-n`` training rows, chunks of 500; a test split of
  ``--digits-test`` rows): the estimator's defaults (softmax loss), test accuracy.

A third problem, not one of the two defaults, checks the scheme on data it was not chosen on
(``--problems nonlinear_binary``): ``nonlinear_binary`` (``--binary-n`` rows in 20 chunks, a
test split of ``--binary-test`` rows), ``DSGClassifier`` defaults with ``--binary-loss``
(logistic or hinge), test accuracy.

For every K and seed the fit records the model after every round; the rows needed to
reach the target (the ``K = 1`` fit's value after 3 epochs, same seed) are interpolated
between rounds (log-distance or accuracy, linearly in rows).  A fit that has not reached
it after ``--max-epochs`` reports ``null``.  Medians over ``--seeds``.

``--combination`` runs a candidate combination scheme (``adaptive``: the default of the
library; ``sum``; ``average``: parameter mixing) so the
comparison in ``docs/algorithms/dsg_rounds.md`` can be reproduced; ``--contraction`` sets
the adaptive weight's contraction floor (0, the library's rule, by default;
``benchmarks/scaling_contraction.py`` compares several in one process).
``--target-epochs`` moves the target to the ``K = 1`` fit's value after that many epochs
(3 by default), ``--binary-d`` sets the inputs of ``nonlinear_binary``.

Usage::

    python benchmarks/scaling.py --out benchmarks/results/scaling.json \\
        --plot docs/img/scaling.svg
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import ooc_kernels as ok
from ooc_kernels.exceptions import StepSizeWarning
from ooc_kernels.features.rbf import rbf_kernel
from ooc_kernels.families.dsg.solver import (COMBINATIONS, ROUND_CONTRACTION, DSGAlgorithm,
                                             predict_chunk)

KS = (1, 2, 4, 8, 16)
TARGET_EPOCHS = 3


def _estimator(cls, combination: str, contraction: float = ROUND_CONTRACTION, **params):
    """An estimator whose rounds use ``combination`` and, for ``"adaptive"``, the
    ``contraction`` floor (the library's defaults: adaptive, ``ROUND_CONTRACTION``)."""

    class Candidate(cls):
        def _make_algorithm(self):
            return DSGAlgorithm(self._config, combination=combination,
                                contraction=contraction)

    Candidate.__name__ = cls.__name__
    return Candidate(**params)


def _exact_krr(X, y, config) -> np.ndarray:
    """``f*`` at the training rows: kernel ridge on what the model sees (standardized X and
    y), ``c = (K + n alpha I)^-1 y``, mapped back to the units of y."""
    X = np.asarray(X, dtype=np.float64)
    if config.x_shift is not None:
        X = (X - np.asarray(config.x_shift)) / np.asarray(config.x_scale)
    ys = (np.asarray(y, dtype=np.float64) - config.y_shift) / config.y_scale
    K = rbf_kernel(X, X, config.bandwidth)
    n = len(X)
    c = np.linalg.solve(K + n * config.alpha * np.eye(n), ys)
    return (K @ c) * config.y_scale + config.y_shift


def _trace_fit(est, data, metric) -> list[tuple[int, float]]:
    """Fit ``est`` on ``data`` and return ``(rows seen, metric)`` after every round."""
    trace: list[tuple[int, float]] = []
    after_round = est._after_round

    def record(state, info):
        after_round(state, info)
        trace.append((int(state.n_samples_seen), float(metric(est._config, state))))

    est._after_round = record
    est.fit(data)
    return trace


def _rows_to_reach(trace, target: float, *, higher_is_better: bool) -> float | None:
    """First rows at which the metric reaches ``target``, interpolated between rounds."""
    prev_rows, prev = 0, None
    for rows, value in trace:
        good = value >= target if higher_is_better else value <= target
        if good:
            if prev is None:
                return float(rows)
            a, b = (prev, value) if higher_is_better else (np.log(prev), np.log(value))
            goal = target if higher_is_better else np.log(target)
            frac = 1.0 if b == a else float(np.clip((goal - a) / (b - a), 0.0, 1.0))
            return prev_rows + frac * (rows - prev_rows)
        prev_rows, prev = rows, value
    return None


def _value_at_rows(trace, rows: int) -> float:
    return next(v for r, v in trace if r >= rows)


def krr_problem(args, seed: int, folder: Path):
    import xarray as xr

    path = ok.make_dataset("synthetic_krr_2d", folder / f"krr{seed}.zarr", args.krr_n,
                           chunk_size=args.krr_n // 16, random_state=seed, progress=False,
                           overwrite=True)
    ds = xr.open_zarr(path)
    X, y = ds["X"].values, ds["y"].values  # n = 4,000 rows: small enough to solve directly
    cache = {}

    def metric(config, state):
        if "f" not in cache:
            cache["f"] = _exact_krr(X, y, config)
        f = predict_chunk(config, state, X)[:, 0].astype(np.float64)
        return float(np.mean((f - cache["f"]) ** 2))

    params = dict(alpha=1e-3, learning_rate="inverse", eta0=2000.0, t0=1000.0,
                  bandwidth=args.bandwidth, shuffle_chunks=1, random_state=seed,
                  scheduler="sync", progress=False, tol=None)
    return ds, metric, ok.DSGRegressor, params, False


def digits_problem(args, seed: int, folder: Path):
    import xarray as xr

    train = ok.make_dataset("digits_deformed", folder / f"digits{seed}.zarr", args.digits_n,
                            chunk_size=500, random_state=seed, progress=False,
                            overwrite=True)
    test = ok.make_dataset("digits_deformed", folder / f"digits_test{seed}.zarr",
                           args.digits_test, chunk_size=args.digits_test, random_state=seed,
                           split="test", progress=False, overwrite=True)
    ds, ts = xr.open_zarr(train), xr.open_zarr(test)
    Xt, yt = ts["X"].values, ts["y"].values

    def metric(config, state):
        dec = predict_chunk(config, state, Xt)
        return float(np.mean(np.asarray(config.classes)[dec.argmax(axis=1)] == yt))

    params = dict(shuffle_chunks=1, random_state=seed, scheduler="sync", progress=False,
                  tol=None)
    return ds, metric, ok.DSGClassifier, params, True


def binary_problem(args, seed: int, folder: Path):
    import xarray as xr

    shape = {} if args.binary_d is None else {"n_features": args.binary_d}
    train = ok.make_dataset("nonlinear_binary", folder / f"binary{seed}.zarr", args.binary_n,
                            chunk_size=args.binary_n // 20, random_state=seed,
                            progress=False, overwrite=True, **shape)
    test = ok.make_dataset("nonlinear_binary", folder / f"binary_test{seed}.zarr",
                           args.binary_test, chunk_size=args.binary_test, random_state=seed,
                           split="test", progress=False, overwrite=True, **shape)
    ds, ts = xr.open_zarr(train), xr.open_zarr(test)
    Xt, yt = ts["X"].values, ts["y"].values  # 2,000 test rows

    def metric(config, state):
        dec = predict_chunk(config, state, Xt)[:, 0]
        return float(np.mean(np.asarray(config.classes)[(dec > 0).astype(int)] == yt))

    params = dict(loss=args.binary_loss, shuffle_chunks=1, random_state=seed,
                  scheduler="sync", progress=False, tol=None)
    return ds, metric, ok.DSGClassifier, params, True


PROBLEMS = {"synthetic_krr_2d": krr_problem, "digits_deformed": digits_problem,
            "nonlinear_binary": binary_problem}
#: The two default problems: what runs without ``--problems``.
DEFAULT_PROBLEMS = ("synthetic_krr_2d", "digits_deformed")


def run_problem(name, args, folder: Path) -> dict:
    per_seed = {}
    for seed in args.seeds:
        data, metric, cls, params, higher = PROBLEMS[name](args, seed, folder)
        traces = {}
        for k in args.ks:
            start = time.perf_counter()
            est = _estimator(cls, args.combination, args.contraction, chunks_per_round=k,
                             max_iter=args.max_epochs if k > 1 else args.target_epochs,
                             **params)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", StepSizeWarning)
                traces[k] = _trace_fit(est, data, metric)
            print(f"{name} seed {seed} K={k}: {traces[k][-1][1]:.6g} after "
                  f"{traces[k][-1][0]} rows ({time.perf_counter() - start:.1f} s)",
                  file=sys.stderr, flush=True)
        n = int(data.sizes["sample"])
        target = _value_at_rows(traces[1], args.target_epochs * n)
        rows = {k: _rows_to_reach(traces[k], target, higher_is_better=higher)
                for k in args.ks}
        per_seed[seed] = {"target": target, "rows": rows, "n": n,
                          "traces": {k: traces[k] for k in args.ks}}
    return per_seed


def summarize(per_seed: dict, ks) -> dict:
    out = {}
    for k in ks:
        rows = [s["rows"][k] for s in per_seed.values()]
        ratios = [None if r is None else r / s["rows"][1] for r, s in zip(rows,
                                                                         per_seed.values())]
        finite = [r for r in ratios if r is not None]
        out[k] = {"median_rows": None if len(finite) < len(ratios) else
                  float(np.median([r for r in rows])),
                  "median_ratio": None if len(finite) < len(ratios) else
                  float(np.median(finite)),
                  "ratios": ratios}
    return out


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, res in results["problems"].items():
        ks = [int(k) for k in res["summary"]]
        ratio = [res["summary"][k]["median_ratio"] for k in res["summary"]]
        ax.plot(ks, [np.nan if r is None else r for r in ratio], "o-", label=name)
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.axhline(1.25, color="red", lw=0.8, ls="--", label="target at K = 8 (1.25)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("K = chunks_per_round")
    ax.set_ylabel("rows to reach K = 1's 3-epoch error / rows of K = 1")
    ax.set_title(f"DSG statistical efficiency ({results['combination']} combination)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--problems", nargs="+", default=list(DEFAULT_PROBLEMS),
                   choices=list(PROBLEMS))
    p.add_argument("--ks", nargs="+", type=int, default=list(KS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--max-epochs", type=int, default=12)
    p.add_argument("--combination", default="adaptive", choices=COMBINATIONS)
    p.add_argument("--contraction", type=float, default=ROUND_CONTRACTION,
                   help="adaptive: the residual factor a round may leave on the top "
                        "direction (0, the library's rule: no direction contracts less than under "
                        "averaging)")
    p.add_argument("--target-epochs", type=int, default=TARGET_EPOCHS,
                   help="the target: the K = 1 fit's value after this many epochs")
    p.add_argument("--binary-d", type=int, default=None,
                   help="nonlinear_binary: input dimension (default: the generator's)")
    p.add_argument("--bandwidth", default="auto",
                   help="synthetic_krr_2d: 'auto', 'median' or a number")
    p.add_argument("--krr-n", type=int, default=4000)
    p.add_argument("--digits-n", type=int, default=10000)
    p.add_argument("--digits-test", type=int, default=2000)
    p.add_argument("--binary-n", type=int, default=20000)
    p.add_argument("--binary-test", type=int, default=2000)
    p.add_argument("--binary-loss", default="logistic", choices=("logistic", "hinge"))
    p.add_argument("--out", type=Path)
    p.add_argument("--plot", type=Path)
    args = p.parse_args(argv)
    if 1 not in args.ks:
        p.error("--ks must include 1 (the reference)")
    if args.bandwidth not in ("auto", "median"):
        args.bandwidth = float(args.bandwidth)
    results = {"command": "python benchmarks/scaling.py " + " ".join(
                   sys.argv[1:] if argv is None else argv),
               "combination": args.combination, "contraction": args.contraction,
               "target_epochs": args.target_epochs,
               "machine": platform.platform(), "problems": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.problems:
            per_seed = run_problem(name, args, Path(tmp))
            summary = summarize(per_seed, args.ks)
            results["problems"][name] = {"summary": summary, "seeds": per_seed}
            for k in args.ks:
                s = summary[k]
                print(f"{name} K={k}: median rows {s['median_rows']}, ratio "
                      f"{s['median_ratio']} (per seed {s['ratios']})", flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1, default=str))
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
