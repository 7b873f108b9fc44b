"""How DSPDC's rounds converge as a task's group of chunks gets smaller than the data
(docs/algorithms/dspdc_rounds.md, "Many small groups").

Ridge regression (``DSPDCRegressor`` defaults: standardized columns, adaptive steps,
``alpha = 1e-4``, ``K = 1``), Gaussian rows with column scales from 0.5 to 2, ``p = 50``,
chunks of ``--chunk`` rows; ``shuffle_chunks`` sets the chunks of a task's group, so a task
solves ``rows = chunk * shuffle_chunks`` rows out of ``n`` (a new random partition of the
chunks into groups every epoch).  For each ``n`` and each group size: passes over the duals
to a relative duality gap of 1e-4 and 1e-6 (at most ``--max-iter``), one data seed.

    python benchmarks/dspdc_chunks.py --n 50000 200000 --rows 500 2000 5000 20000 \\
        --out benchmarks/results/dspdc_chunks.json

``--local-passes L ...``: each layout with each ``local_passes`` (a task's passes over its
rows per read); ``reads_to_*`` are the epochs (reads of the data), ``passes_to_*`` the
passes over the duals (``local_passes`` per read).

``--fixed``: for each group size, also the same rows per task as one chunk
(``chunk_size = rows``, ``shuffle_chunks = 1``: a task sees the same rows every epoch),
against groups of ``rows / chunk`` chunks drawn anew every epoch:

    python benchmarks/dspdc_chunks.py --n 200000 --chunk 250 --rows 2000 --fixed \\
        --max-iter 20 --out benchmarks/results/dspdc_chunks_mixing.json
"""

from __future__ import annotations

import argparse
import json
import warnings

import numpy as np

import ooc_kernels as ok


def passes_to(history, level):
    hit = [h["passes"] for h in history if h["relative_gap"] <= level]
    return float(hit[0]) if hit else None


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[50_000, 200_000])
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--chunk", type=int, default=500)
    parser.add_argument("--rows", type=int, nargs="+", default=[500, 2000, 5000, 20000])
    parser.add_argument("--alpha", type=float, default=1e-4)
    parser.add_argument("--max-iter", type=int, default=30)
    parser.add_argument("--fixed", action="store_true")
    parser.add_argument("--local-passes", type=float, nargs="+", default=[1.0],
                        help="local_passes values (a task's passes over its rows per read)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    results = []
    for n in args.n:
        rng = np.random.default_rng(0)
        X = rng.normal(size=(n, args.p)) * rng.uniform(0.5, 2, size=args.p)
        y = X @ rng.normal(size=args.p) + rng.normal(size=n)
        layouts = [(rows, args.chunk) for rows in args.rows if rows <= n]
        if args.fixed:
            layouts = [lay for rows, chunk in layouts for lay in ((rows, rows), (rows, chunk))]
        for (rows, chunk), L in [(lay, L) for lay in layouts for L in args.local_passes]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")     # a fit may end at max_iter by design
                reg = ok.DSPDCRegressor(alpha=args.alpha, chunk_size=chunk,
                                        shuffle_chunks=rows // chunk, tol=1e-6,
                                        max_iter=args.max_iter, random_state=0,
                                        local_passes=L, scheduler="sync",
                                        progress=False).fit(X, y)
            h = reg.gap_history_
            p4, p6 = passes_to(h, 1e-4), passes_to(h, 1e-6)
            row = {"n": n, "p": args.p, "rows_per_task": rows, "groups": -(-n // rows),
                   "chunk": chunk, "shuffle_chunks": rows // chunk, "local_passes": L,
                   "passes_to_1e4": p4, "passes_to_1e6": p6,
                   # reads of the data (epochs): passes over the duals / local_passes
                   "reads_to_1e4": None if p4 is None else round(p4 / L),
                   "reads_to_1e6": None if p6 is None else round(p6 / L),
                   "relative_gap": [float(f"{e['relative_gap']:.3g}") for e in h]}
            results.append(row)
            print(json.dumps(row), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
