"""Accuracy on a store sorted by label: rows mixed within each chunk only, versus mixed
across groups of chunks (``shuffle_chunks``), versus a store shuffled before writing.

Two moons (scikit-learn's ``make_moons``), written to Zarr sorted by label (chunks of
2,000 rows), fitted with K = 1 and K = 4 chunk tasks per round.

    python benchmarks/sorted_store.py --repeats 5 --chunk 2000
    python benchmarks/sorted_store.py --repeats 5 --chunk 500

Prints a table (median test accuracy over seeds) and writes
``benchmarks/results/sorted_store.json``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import xarray as xr
from sklearn.datasets import make_moons

import ooc_kernels as ok

PARAMS = dict(eta0=1e4, t0=1e3, scheduler="sync", progress=False)


def _store(path, X, y, chunk):
    ds = xr.Dataset({"X": (("sample", "feature"), X.astype(np.float32)),
                     "y": (("sample",), y.astype(np.int32))}).chunk({"sample": chunk})
    with warnings.catch_warnings():  # zarr's note on consolidated metadata
        warnings.simplefilter("ignore")
        ds.to_zarr(path, mode="w")
        return xr.open_zarr(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--chunk", type=int, default=2_000)
    args = parser.parse_args(argv)
    X, y = make_moons(args.n, noise=0.2, random_state=0)
    Xt, yt = make_moons(5_000, noise=0.2, random_state=1)
    order = np.argsort(y, kind="stable")
    tmp = Path(tempfile.mkdtemp())
    sorted_ds = _store(tmp / "sorted.zarr", X[order], y[order], args.chunk)
    shuffled_ds = _store(tmp / "shuffled.zarr", X, y, args.chunk)
    settings = [("store shuffled before writing", shuffled_ds, 1),
                ("sorted store, rows mixed within each chunk", sorted_ds, 1),
                ("sorted store, shuffle_chunks='auto'", sorted_ds, "auto")]
    rows = []
    for label, ds, window in settings:
        for K in (1, 4):
            accs, secs = [], []
            for seed in range(args.repeats):
                clf = ok.DSGClassifier(chunks_per_round=K, shuffle_chunks=window,
                                       random_state=seed, **PARAMS)
                t0 = time.perf_counter()
                clf.fit(ds)
                secs.append(time.perf_counter() - t0)
                accs.append(clf.score(Xt, yt))
            rows.append({"setting": label, "K": K, "shuffle_chunks_": clf.shuffle_chunks_,
                         "accuracy": float(np.median(accs)), "fit_seconds": float(np.median(secs))})
            print(f"{label:45s} K={K}  shuffle_chunks_={clf.shuffle_chunks_:2d}  "
                  f"accuracy {np.median(accs):.4f}  fit {np.median(secs):.2f} s")
    out = Path(__file__).parent / "results" / f"sorted_store_chunk{args.chunk}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "params": {k: v for k, v in PARAMS.items()
                                                             if k != "scheduler"},
                               "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
