"""Gram-matrix error of orthogonal random features against i.i.d. ones, at equal size.

For ``--d`` in the list, 40 standard normal points in ``d`` dimensions, one block of
``--block`` features (DSG's default block size, 256), the bandwidth a multiple of the
points' median pairwise distance (the library's ``bandwidth="median"`` rule is 0.5 times
it for the one-class machine, ``"auto"`` picks a multiple by GCV): the mean squared error of
the block's Gram estimate against the exact Gaussian kernel, over ``--seeds`` seeds, for the
``rbf_orthogonal`` row and the ``rbf`` row, and their ratio; the control is the ratio of the
``rbf`` row to itself on another set of seeds (the noise of the ratio: the error of a
block at a wide bandwidth is mostly the random phases' ``cos(w.(x + y) + 2b)`` term, whose
variance, ``1 / (2r)`` per entry, is the same for both rows).  Results in
``benchmarks/results/orthogonal_variance.json``, figure ``docs/img/orthogonal_variance.png``::

    python benchmarks/orthogonal_variance.py --d 4 16 --seeds 800
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.spatial.distance import pdist

from ooc_kernels.features.blocks import rff_map
from ooc_kernels.features.rbf import rbf_kernel

MULTIPLIERS = (0.25, 0.5, 1.0, 2.0, 4.0)


def block_mse(kernel, X, bandwidth, block, seeds):
    exact = rbf_kernel(X, X, bandwidth)
    errs = []
    for seed in seeds:
        Z = rff_map(X, seed, [0], bandwidth, block, np.float64, kernel=kernel)
        errs.append(np.mean((Z @ Z.T - exact) ** 2))
    return float(np.mean(errs))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--d", type=int, nargs="+", default=[4, 16])
    p.add_argument("--block", type=int, default=256)
    p.add_argument("--seeds", type=int, default=300)
    p.add_argument("--json", default="benchmarks/results/orthogonal_variance.json")
    p.add_argument("--out", default="docs/img/orthogonal_variance.png")
    args = p.parse_args(argv)
    rows = []
    for d in args.d:
        X = np.random.default_rng(d).normal(size=(40, d))
        median = float(np.median(pdist(X)))
        for m in MULTIPLIERS:
            bw = m * median
            orf = block_mse("rbf_orthogonal", X, bw, args.block, range(args.seeds))
            iid = block_mse("rbf", X, bw, args.block, range(args.seeds, 2 * args.seeds))
            control = block_mse("rbf", X, bw, args.block,
                                range(2 * args.seeds, 3 * args.seeds))
            rows.append({"d": d, "multiplier": m, "bandwidth": bw, "mse_orthogonal": orf,
                         "mse_iid": iid, "ratio": orf / iid, "control": control / iid})
            print(f"d={d:3d} bandwidth {m:4g} x median: MSE orthogonal {orf:.3e}, i.i.d. "
                  f"{iid:.3e}, ratio {orf / iid:.3f} (control {control / iid:.3f})",
                  flush=True)
    Path(args.json).write_text(json.dumps({"setup": vars(args), "rows": rows}, indent=1))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for d in args.d:
        sel = [r for r in rows if r["d"] == d]
        line, = ax.plot([r["multiplier"] for r in sel], [r["ratio"] for r in sel], "o-",
                        label=f"d = {d}")
        ax.plot([r["multiplier"] for r in sel], [r["control"] for r in sel], "x:",
                color=line.get_color(), label=f"d = {d}, control (i.i.d. / i.i.d.)")
    ax.axhline(1.0, color="grey", ls="--", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bandwidth / median pairwise distance")
    ax.set_ylabel("Gram MSE, orthogonal / i.i.d.")
    ax.set_title(f"one block of {args.block} features, {args.seeds} seeds each")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.json} and {args.out}")


if __name__ == "__main__":
    main()
