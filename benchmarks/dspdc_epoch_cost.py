"""Where a DSPDC epoch's time goes, against a plain pass that reads the same chunks.

A ridge problem (``n`` Gaussian rows, ``p`` columns, float32, chunks of ``--chunk-size``
rows), fitted by ``ok.DSPDCRegressor`` at its defaults (``q = "auto"``, one dual per
iteration, standardized columns, an intercept) from a Zarr store (out of core) and from the
same rows as a NumPy array.  Per epoch, CPU seconds of one process with one thread for BLAS
and numba (``time.process_time``), every part measured in the same loop, interleaved, so that
they compare under the same load:

``plain pass``
    read every chunk (from the Zarr store, or the array's slices) and multiply it by a
    vector: the memory bound of an epoch;
``task rows``
    the rows a task solves on: float64, standardized, the intercept's column;
``kernel``
    the DSPDC iterations of a chunk (``n_k`` iterations, ``m = 1``, ``q = p``) alone;
``duals store``
    one write and one read of a chunk's duals in a fit's work store;
``gap pass``
    the primal value's pass over the data (the fit with the gap every epoch minus the same
    fit with the gap only at its end, per epoch);
``whole epoch``
    the fit's CPU seconds per epoch (gap every epoch), setup excluded (a fit of ``E`` epochs
    minus a fit of 1 epoch, over ``E - 1``).

The rest of the whole epoch (Dask's round machinery, the solver's per-round work) is the
whole epoch minus the parts.  Medians of ``--repeats`` runs; rows per second of each part.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \
        python benchmarks/dspdc_epoch_cost.py --repeats 5 --out benchmarks/results/dspdc_epoch_cost.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np


def _cpu(fn):
    start = time.process_time()
    fn()
    return time.process_time() - start


def _data(n, p, chunk, folder: Path):
    import dask.array as da

    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, p)).astype(np.float32)
    y = X @ rng.normal(size=p) + 0.5 * rng.normal(size=n)
    da.from_array(X, chunks=(chunk, p)).to_zarr(str(folder / "X"))
    return X, y, da.from_zarr(str(folder / "X"))


def _parts(X, lazy, y, chunk, source, work: Path):
    """CPU seconds of the parts of one epoch over every chunk."""
    from ooc_kernels._chunk_store import ChunkStore
    from ooc_kernels.families.dspdc._scaling import model_rows
    from ooc_kernels.families.dspdc.kernels import dspdc_dense_iterations

    n, p = X.shape
    bounds = list(range(0, n, chunk)) + [n]
    w = np.ones(p, dtype=np.float32)

    def read(k):
        lo, hi = bounds[k], bounds[k + 1]
        return np.asarray(lazy[lo:hi].compute()) if source == "zarr" else X[lo:hi]

    blocks = [read(k) for k in range(len(bounds) - 1)]
    mu, sd = X.mean(axis=0).astype(np.float64), X.std(axis=0).astype(np.float64)
    cfg = SimpleNamespace(x_shift=tuple(mu), x_scale=tuple(sd), intercept_scaling=1.0,
                          factorized=False)
    rows = [model_rows(cfg, B) for B in blocks]
    out = {}
    out["plain pass"] = _cpu(lambda: [read(k) @ w for k in range(len(blocks))])
    out["task rows"] = _cpu(lambda: [model_rows(cfg, B) for B in blocks])

    def kernel():
        rng = np.random.default_rng(1)
        for k, R in enumerate(rows):
            nk, q = R.shape
            yk = np.asarray(y[bounds[k]:bounds[k + 1]], dtype=np.float64)
            dspdc_dense_iterations(R, yk, np.zeros(nk), np.zeros(q), np.zeros(q), np.zeros(q),
                                   n, rng.random((nk, 1)), np.zeros((nk, q)), 1, q, 1.0,
                                   0.05, 10.0, 0, 0.0, 1e-4)

    out["kernel"] = _cpu(kernel)
    store = ChunkStore(str(work / f"store-{time.monotonic_ns()}"))

    def duals():
        for k, B in enumerate(blocks):
            store.write("y", k, (1, 0), np.zeros(len(B)))
            store.read("y", k, (1, 0), n_rows=len(B))

    out["duals store"] = _cpu(duals)
    store.remove()
    return out


def _fit_cpu(Est, data, y, epochs, gap_every):
    est = Est(max_iter=epochs, tol=None, gap_every=gap_every, random_state=0, progress=False)
    return _cpu(lambda: est.fit(data, y))


def run(args) -> dict:
    import ooc_kernels as ok

    folder = Path(tempfile.mkdtemp(prefix="dspdc-epoch-"))
    n, p, E = args.n, args.p, args.epochs
    X, y, lazy = _data(n, p, args.chunk_size, folder)
    Est = ok.DSPDCRegressor
    Est(max_iter=1, tol=None, progress=False).fit(X[:2000], y[:2000])          # compile, import
    results = {}
    for source, data in (("zarr", lazy), ("numpy", X)):
        _parts(X, lazy, y, args.chunk_size, source, folder)                     # warm caches
        runs = []
        for _ in range(args.repeats):
            r = _parts(X, lazy, y, args.chunk_size, source, folder)
            one = _fit_cpu(Est, data, y, 1, 1)
            every = _fit_cpu(Est, data, y, E, 1)
            once = _fit_cpu(Est, data, y, E, E)
            r["whole epoch"] = (every - one) / (E - 1)
            r["gap pass"] = (every - once) / (E - 1)
            runs.append(r)
            print(json.dumps({"source": source, **r}), flush=True)
        med = {k: float(np.median([r[k] for r in runs])) for k in runs[0]}
        named = sum(med[k] for k in ("task rows", "kernel", "duals store", "gap pass"))
        reading = med["plain pass"]
        med["rest (Dask rounds, solver)"] = med["whole epoch"] - named - reading
        results[source] = {"median_cpu_seconds": med,
                           "rows_per_cpu_second": {k: n / v for k, v in med.items() if v > 0},
                           "whole_epoch_over_plain_pass": med["whole epoch"] / reading,
                           "runs": runs}
        print(json.dumps({"source": source, "median": med}), flush=True)
    return {"n": n, "p": p, "chunk_size": args.chunk_size, "epochs": E,
            "repeats": args.repeats, "results": results}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    result = run(args)
    result["meta"] = {"command": "python benchmarks/dspdc_epoch_cost.py " + " ".join(argv or []),
                      "machine": platform.platform(), "cpus": os.cpu_count(),
                      "load_average": os.getloadavg()}
    print(json.dumps({k: v for k, v in result.items() if k != "results"}))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1, default=float) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
