"""How DSPDC's rounds converge as the data is cut into more chunks (docs/algorithms/dspdc_rounds.md).

Ridge regression, Gaussian rows, ``n = 4000``, ``p = 10``, ``alpha = 1e-2``, no intercept,
``K = 1`` and one chunk per task (``shuffle_chunks=1``), ``max_iter`` epochs: the relative
duality gap per epoch for each (chunk size, local passes).

    python benchmarks/dspdc_chunks.py --epochs 15
"""

from __future__ import annotations

import argparse
import json

import numpy as np

import ooc_kernels as ok


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=15)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    n = 4000
    X = rng.normal(size=(n, 10))
    y = X @ rng.normal(size=10) + 0.1 * rng.normal(size=n)
    for chunk, passes in [(4000, 1), (2000, 1), (2000, 20), (1000, 20)]:
        reg = ok.DSPDCRegressor(alpha=1e-2, fit_intercept=False, chunk_size=chunk,
                                shuffle_chunks=1, local_passes=passes, max_iter=args.epochs,
                                tol=None, random_state=0, scheduler="sync",
                                progress=False).fit(X, y)
        gaps = [h["relative_gap"] for h in reg.gap_history_]
        print(json.dumps({"chunks": n // chunk, "local_passes": passes,
                          "relative_gap": [float(f"{g:.3g}") for g in gaps]}), flush=True)


if __name__ == "__main__":
    main()
