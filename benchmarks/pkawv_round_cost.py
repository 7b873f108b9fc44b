"""Per-round cost of the online learner (the specification's check C9): seconds per row
against the basis size ``r`` for the fixed Taylor basis, and against the round ``t`` for
the exact (Kernel-AWV) and KORS Nystrom learners.

* Taylor basis, ``d`` and ``M`` over a grid (``r = C(M + d, M)``): the row-by-row
  Sherman-Morrison kernel (``kernels_online.linear_online``, ``4 r^2`` flops a row as
  scalar loops) and the blocked kernel the estimator runs (``kernels_block``, blocks of
  ``solver.BLOCK_ROWS`` rows in matrix products), on the same features, one BLAS thread;
  the features' own time is reported apart.  The cost should grow as ``r^2``.
* Exact and KORS learners, and the Taylor basis with ``M = 4`` (``r = 126``): ``--t-max``
  rows (``d = 5``) streamed in chunks of ``--t-chunk`` through the learner's chunk step;
  the seconds per row of each chunk against its first row ``t``.  Kernel-AWV's should grow
  as ``t^2``; KORS's with ``t`` and its dictionary; the Taylor basis's not at all.

Every time is the median of ``--repeats`` runs.  Results: ``results/pkawv_round_cost.json``;
figure: ``../docs/img/pkawv_round_cost.svg``.

    python pkawv_round_cost.py --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels.families.pkawv import solver
from ooc_kernels.families.pkawv.kernels_block import linear_online_blocked
from ooc_kernels.families.pkawv.kernels_online import linear_online
from ooc_kernels.families.pkawv.taylor import TaylorBasis

HERE = Path(__file__).resolve().parent
#: (d, M) of the Taylor grid: r from 21 to 1,330.
TAYLOR_GRID = ((5, 2), (10, 2), (18, 2), (5, 4), (10, 3), (27, 2), (18, 3), (30, 2))


def _median(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def taylor_costs(rows, repeats):
    out = []
    rng = np.random.default_rng(0)
    for d, m in TAYLOR_GRID:
        X = np.tanh(rng.normal(size=(rows, d)))
        y = np.sign(rng.normal(size=rows))
        basis = TaylorBasis(d, m, 4.0)
        r = basis.n_components
        n = max(2000, min(rows, int(rows * (190 / r) ** 2)))  # fewer rows for large r
        X, y = X[:n], y[:n]

        def fresh():
            return np.eye(r), np.zeros(r), np.zeros(r)

        feats = basis.transform(X)
        linear_online(feats[:10], y[:10], *fresh(), False)       # compile
        linear_online_blocked(feats[:70], y[:70], *fresh(), False, solver.BLOCK_ROWS)
        with single_threaded_blas():
            t_feat = _median(lambda: basis.transform(X), repeats)
            t_row = _median(lambda: linear_online(feats, y, *fresh(), False), repeats)
            t_block = _median(lambda: linear_online_blocked(feats, y, *fresh(), False,
                                                            solver.BLOCK_ROWS), repeats)
        out.append({"d": d, "M": m, "r": r, "rows": n,
                    "features_us_per_row": 1e6 * t_feat / n,
                    "row_by_row_us_per_row": 1e6 * t_row / n,
                    "blocked_us_per_row": 1e6 * t_block / n,
                    "row_by_row_gflops": 4 * r * r * n / t_row / 1e9,
                    "blocked_gflops": 4 * r * r * n / t_block / 1e9})
        print(out[-1], flush=True)
    return out


def growing_costs(basis, t_max, t_chunk, repeats):
    rng = np.random.default_rng(1)
    d = 5
    X = np.tanh(rng.normal(size=(t_max, d)))
    y = np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=t_max)
    cfg = solver.OnlineConfig(basis=basis, mode="awv", alpha=1.0, bandwidth=1.0,
                              n_features=d, degree=4 if basis == "taylor" else 0)
    algo = solver.OnlineAlgorithm(cfg)
    runs = []
    for _ in range(repeats):
        state = solver.initial_state(cfg, algo.n_components)
        per = []
        for lo in range(0, t_max, t_chunk):
            batch = {"X": X[lo:lo + t_chunk], "y": y[lo:lo + t_chunk]}
            start = time.perf_counter()
            state = algo.apply(state, algo.chunk_step(state, batch, None), None)
            per.append(time.perf_counter() - start)
        runs.append(per)
    med = np.median(np.array(runs), axis=0)
    extra = {}
    if basis == "nystrom":
        extra["dictionary"] = int(len(state["basis_idx"]))
    return {"t": list(range(0, t_max, t_chunk)), "us_per_row": list(1e6 * med / t_chunk),
            **extra}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--t-max", type=int, default=4096)
    parser.add_argument("--t-chunk", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(HERE / "results" / "pkawv_round_cost.json"))
    parser.add_argument("--figure", default=str(HERE.parent / "docs" / "img" /
                                                "pkawv_round_cost.svg"))
    args = parser.parse_args(argv)
    growing_costs("exact", 2 * args.t_chunk, args.t_chunk, 1)     # compile
    growing_costs("nystrom", 2 * args.t_chunk, args.t_chunk, 1)
    growing_costs("taylor", 2 * args.t_chunk, args.t_chunk, 1)
    res = {"repeats": args.repeats, "block_rows": solver.BLOCK_ROWS,
           "taylor": taylor_costs(args.rows, args.repeats),
           "exact": growing_costs("exact", args.t_max, args.t_chunk, args.repeats),
           "nystrom": growing_costs("nystrom", args.t_max, args.t_chunk, args.repeats),
           "taylor_t": growing_costs("taylor", args.t_max, args.t_chunk, args.repeats)}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1))
    plot(res, args.figure)


def plot(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    tay = sorted(res["taylor"], key=lambda e: e["r"])
    r = np.array([e["r"] for e in tay], dtype=float)
    for key, label, marker in (("row_by_row_us_per_row", "row by row (Sherman-Morrison)",
                                "o"),
                               ("blocked_us_per_row",
                                f"blocked, {res['block_rows']} rows (estimator, r >= 48)", "s"),
                               ("features_us_per_row", "Taylor features", "^")):
        left.plot(r, [e[key] for e in tay], marker=marker, label=label)
    ref = tay[-1]["row_by_row_us_per_row"] * (r / r[-1]) ** 2
    left.plot(r, ref, "k:", label="slope r^2")
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("basis size r = C(M + d, M)")
    left.set_ylabel("microseconds per row")
    left.set_title("Fixed Taylor basis")
    left.legend(fontsize=7)
    for key, label in (("exact", "Kernel-AWV (exact)"),
                       ("nystrom", "PKAWV-Nystrom (KORS, "
                                   f"{res['nystrom'].get('dictionary', 0)} columns)"),
                       ("taylor_t", "PKAWV-Taylor M = 4 (r = 126)")):
        t = np.array(res[key]["t"], dtype=float) + 1
        right.plot(t, res[key]["us_per_row"], marker="o", label=label)
    t = np.array(res["exact"]["t"], dtype=float) + 1
    right.plot(t[1:], res["exact"]["us_per_row"][-1] * (t[1:] / t[-1]) ** 2, "k:",
               label="slope t^2")
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("round t (first row of the chunk)")
    right.set_ylabel("microseconds per row")
    right.set_title("Against the round t (d = 5)")
    right.legend(fontsize=7)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)


if __name__ == "__main__":
    main()
