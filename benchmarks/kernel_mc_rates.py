"""Monte Carlo convergence of every kernel of the table: Gram-matrix error against features.

For every kernel setting of :func:`ooc_kernels.features.maps.kernel_settings` (a new row of
the table is measured with no change here), the random features of the DSG models
(:func:`ooc_kernels.features.blocks.rff_map`, blocks of ``--block`` features) estimate the
Gram matrix of ``--points`` rows; the error is the relative RMS error
``||K_hat - K||_F / ||K||_F`` against the exact kernel (``FeatureMap.gram``).  For each
number of features ``r`` in ``--sizes`` the median over ``--seeds`` feature seeds is
recorded; the slope of ``log(error)`` against ``log(r)`` is fitted by least squares (an
unbiased map has slope -1/2).  Inputs: standard normal rows in ``--dim`` dimensions, the
additive kernels (which take non-negative inputs) on their absolute values; bandwidth 1.3.

Prints one line per kernel (slope, error at the largest size), writes
``benchmarks/results/kernel_mc_rates.json`` and the figure ``--out`` (``--from-results``
redraws it from the saved results).  ``--kernels`` measures only the settings whose names
start with one of the given prefixes and merges them into the saved results of a run with
the same settings (a new row of the table is measured without rerunning the others).  Run
from the repository root::

    python benchmarks/kernel_mc_rates.py --seeds 10 --sizes 64 128 256 512 1024 2048 4096 8192
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ooc_kernels.features.blocks import rff_map  # noqa: E402
from ooc_kernels.features.maps import get_feature_map, kernel_settings  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "kernel_mc_rates.json"


def points(spec, n, d, rng):
    X = rng.normal(size=(n, d))
    fmap = get_feature_map(spec)
    return np.abs(X) if getattr(fmap, "nonnegative_inputs", False) else X


def short(spec, width=52):
    """A legend label: the setting's name, cut at ``width`` characters."""
    return spec if len(spec) <= width else spec[:width - 3] + "..."


def measure(spec, X, sizes, seeds, block, bandwidth):
    fmap = get_feature_map(spec)
    exact = fmap.gram(X, X, bandwidth)
    norm = np.linalg.norm(exact)
    medians = []
    for r in sizes:
        errs = []
        for seed in seeds:
            Z = rff_map(X, seed, np.arange(r // block), bandwidth, block, np.float64,
                        kernel=fmap)
            errs.append(np.linalg.norm(Z @ Z.T / (r // block) - exact) / norm)
        medians.append(float(np.median(errs)))
    slope = float(np.polyfit(np.log(sizes), np.log(medians), 1)[0])
    return medians, slope


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+",
                        default=[64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--points", type=int, default=40)
    parser.add_argument("--dim", type=int, default=5)
    parser.add_argument("--block", type=int, default=32)
    parser.add_argument("--bandwidth", type=float, default=1.3)
    parser.add_argument("--out", default="docs/img/kernel_mc_rates.png")
    parser.add_argument("--results", default=str(RESULTS))
    parser.add_argument("--from-results", action="store_true",
                        help="redraw the figure from --results without measuring")
    parser.add_argument("--kernels", nargs="+", default=None,
                        help="measure only the settings starting with these prefixes and "
                             "merge them into --results (same settings required)")
    args = parser.parse_args(argv)

    if args.from_results:  # redraw the figure of a saved run
        saved = json.loads(Path(args.results).read_text())
        rows = saved["kernels"]
        for key in ("sizes", "seeds", "points", "dim"):
            setattr(args, key, saved["settings"][key])
    else:
        rows, specs = {}, kernel_settings()
        if args.kernels:  # only these, merged into the saved run of the same settings
            saved = json.loads(Path(args.results).read_text())
            mine = {k: v for k, v in vars(args).items()
                    if k not in ("out", "results", "kernels", "from_results")}
            if any(saved["settings"].get(k) != v for k, v in mine.items()):
                raise SystemExit(f"--kernels merges into a run with the same settings; "
                                 f"{args.results} has {saved['settings']}")
            rows = saved["kernels"]
            specs = [s for s in specs if s.startswith(tuple(args.kernels))]
        for spec in specs:
            t0 = time.perf_counter()
            X = points(spec, args.points, args.dim, np.random.default_rng(0))
            errors, slope = measure(spec, X, args.sizes, range(args.seeds), args.block,
                                    args.bandwidth)
            rows[spec] = {"errors": errors, "slope": slope}
            print(f"{spec:28s} slope {slope:+.3f}  error at r={args.sizes[-1]}: "
                  f"{errors[-1]:.4f}  ({time.perf_counter() - t0:.1f} s)", flush=True)

    fig, ax = plt.subplots(figsize=(11, 5.5))
    sizes = np.asarray(args.sizes, dtype=float)
    colors = plt.cm.tab20(np.linspace(0, 1, 20))
    for i, (spec, row) in enumerate(rows.items()):
        ax.loglog(sizes, row["errors"], marker="os^vD"[i % 5], ms=3, lw=1,
                  color=colors[(2 * i) % 20 + (i // 10) % 2],
                  label=f"{short(spec)} (slope {row['slope']:+.2f})")
    guide = [row["errors"][0] for row in rows.values()]
    ax.loglog(sizes, float(np.median(guide)) * np.sqrt(sizes[0] / sizes), "k--", lw=1.5,
              label="1 / sqrt(r)")
    ax.set_xlabel("random features r")
    ax.set_ylabel("relative Gram error ||K_hat - K||_F / ||K||_F")
    ax.set_title(f"Monte Carlo Gram error, median of {args.seeds} seeds "
                 f"({args.points} points, d={args.dim})")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    if args.from_results:
        return rows
    Path(args.results).parent.mkdir(parents=True, exist_ok=True)
    Path(args.results).write_text(json.dumps(
        {"settings": {k: v for k, v in vars(args).items()
                      if k not in ("out", "results", "kernels")},
         "kernels": rows}, indent=1) + "\n")
    return rows


if __name__ == "__main__":
    main()
