"""The squared loss's certificate from the set-up's scatter on the peer table's stores: the
bound on its rounding against ``n |P|``, and the scatter's sum of the losses against the one
over the rows (``families/dspdc/_scatter_gap.py``).

Writes the regression stores of ``benchmarks/dspdc_peers.py`` (50,000 x 50, chunks of
10,000; conditioned and raw columns), fits ``DSPDCRegressor`` (ridge and the elastic net at
the peer table's ``alpha``), and evaluates at the fit's start ``x_0``: the scatter's ``L``
and bound ``E`` (:func:`~ooc_kernels.families.dspdc._scatter_gap.scatter_gap`, with the
store's chunks), and ``L`` summed over the standardized rows in NumPy.

    python benchmarks/dspdc_scatter_bound.py --out benchmarks/results/dspdc_scatter_bound.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np

from dspdc_peers import load, write_store


def main(argv=None) -> None:
    import ooc_kernels as ok
    from ooc_kernels.families.dspdc._scaling import combine_moments
    from ooc_kernels.families.dspdc._scatter_gap import scatter_gap
    from ooc_kernels.families.dspdc._squared_start import chunk_scatter

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--alpha", type=float, default=1e-4)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="dspdc-scatter-bound-"))
    rows = []
    for kind in ("conditioned", "raw"):
        store = write_store(tmp / f"{kind}.zarr", args.n, args.p, args.chunk_size,
                            "regression", 1, kind)
        ds, X, y = load(store)
        b = y.astype(np.float64)
        cuts = list(range(0, args.n, args.chunk_size)) + [args.n]
        scatter = combine_moments(*[chunk_scatter(X[lo:hi], y[lo:hi], None)
                                    for lo, hi in zip(cuts[:-1], cuts[1:])])
        for l1_ratio in (0.0, 0.5):
            est = ok.DSPDCRegressor(alpha=args.alpha, l1_ratio=l1_ratio, tol=1e-6,
                                    progress=False).fit(ds)
            cfg = est._config
            scaled = {"x_shift": cfg.x_shift, "x_scale": cfg.x_scale}
            loss, bound = scatter_gap(scatter, scaled, float(cfg.intercept_scaling),
                                      cfg.start_x, float(cfg.lam1), float(cfg.lam2), args.n,
                                      chunk_rows=args.chunk_size, n_chunks=len(cuts) - 1)
            x = np.asarray(cfg.start_x)
            A = np.column_stack([(X - np.asarray(cfg.x_shift)) / np.asarray(cfg.x_scale),
                                 np.full(args.n, cfg.intercept_scaling)])
            on_rows = 0.5 * float(np.sum((A @ x - b) ** 2))
            nP = loss + args.n * float(np.sum(cfg.lam1 * np.abs(x) + 0.5 * cfg.lam2 * x * x))
            row = {"data": kind, "l1_ratio": l1_ratio, "bound_over_nP": bound / nP,
                   "loss_relative_error": (loss - on_rows) / on_rows,
                   "relative_gap": est.gap_history_[-1]["relative_gap"],
                   "n_iter": int(est.n_iter_)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.out is not None:
        args.out.write_text(json.dumps({"n": args.n, "p": args.p,
                                        "chunk_size": args.chunk_size, "alpha": args.alpha,
                                        "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
