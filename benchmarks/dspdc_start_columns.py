"""How many columns the DSPDC starts pay for: fits from the start against fits from zero.

Run from the repository root::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python benchmarks/dspdc_start_columns.py --p 200 400 512 --repeats 3 \\
        --out benchmarks/results/dspdc_start_columns.json

Data: ``--n`` rows (20,000) of ``p`` Gaussian columns on scales 0.5 to 2 with offsets up to
3, targets linear in them plus unit noise (the logistic labels: above the median).  Fits:
``DSPDCRegressor`` (ridge, and the elastic net with ``l1_ratio=0.5``) and
``DSPDCClassifier`` (logistic), ``alpha=1e-4``, ``tol=1e-4``, ``max_iter=200``, on the NumPy
arrays (in memory) and on Dask arrays of 5,000-row chunks (out of core), the synchronous
scheduler.  Each fit runs with the library's column limits (``with start``) and with
``_squared_start.START_MAX_FEATURES`` set to ``--below`` (128: the limit the squared
loss's start would have without the change measured here; ``without start`` where the
columns are above it), alternated in every repeat; CPU seconds of the process (medians),
epochs and the certified relative gap.  ``--logistic-p`` also times the logistic loss in
memory with and without Newton's start (limit 0 against the library's) at those columns
and at ``--n`` and 5 times as many rows; ``--newton-p`` the same at ``--n`` rows with
Newton's start allowed at any number of columns (``NEWTON_MAX_FEATURES`` raised), to see
where it stops paying.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings
from pathlib import Path

import dask.array as da
import numpy as np

import ooc_kernels as ok
from ooc_kernels.families.dspdc import _logistic_start, _squared_start


def problem(rng, n, p):
    X = rng.normal(size=(n, p)) * rng.uniform(0.5, 2, size=p) + rng.uniform(-3, 3, size=p)
    y = X @ rng.normal(size=p) / np.sqrt(p) + rng.normal(size=n)
    return X, y, (y > np.median(y)).astype(int)


def timed(Est, kw, args, limit):
    _squared_start.START_MAX_FEATURES = limit
    est = Est(alpha=1e-4, tol=1e-4, max_iter=200, random_state=0, scheduler="sync",
              progress=False, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.process_time()
        est.fit(*args)
        cpu = time.process_time() - t
    return cpu, est.n_iter_, float(est.gap_history_[-1]["relative_gap"])


def compare(Est, kw, args, limits, repeats):
    runs = {name: [] for name in limits}
    for _ in range(repeats):
        for name, limit in limits.items():
            runs[name].append(timed(Est, kw, args, limit))
    return {name: {"cpu_s": statistics.median(r[0] for r in rs), "epochs": rs[-1][1],
                   "relative_gap": rs[-1][2]} for name, rs in runs.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--p", type=int, nargs="*", default=[200, 400, 512])
    ap.add_argument("--logistic-p", type=int, nargs="*", default=[50, 100, 150])
    ap.add_argument("--newton-p", type=int, nargs="*", default=[])
    ap.add_argument("--below", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    library = _squared_start.START_MAX_FEATURES
    rng = np.random.default_rng(0)
    rows = []
    for p in args.p:
        X, y, labels = problem(rng, args.n, p)
        for name, Est, kw, target in [("ridge", ok.DSPDCRegressor, {}, y),
                                      ("elastic net", ok.DSPDCRegressor, {"l1_ratio": 0.5}, y),
                                      ("logistic", ok.DSPDCClassifier, {}, labels)]:
            for where in ("in memory", "out of core"):
                data = (X, target) if where == "in memory" else (
                    da.from_array(X, chunks=(5000, p)), da.from_array(target, chunks=5000))
                got = compare(Est, kw, data, {"with start": library,
                                              "without start": args.below}, args.repeats)
                rows.append({"p": p, "problem": name, "where": where, **got})
                print(json.dumps(rows[-1]), flush=True)
    for n in (args.n, 5 * args.n):
        for p in args.logistic_p:
            X, _, labels = problem(rng, n, p)
            got = compare(ok.DSPDCClassifier, {}, (X, labels),
                          {"with start": library, "without start": 0}, args.repeats)
            rows.append({"n": n, "p": p, "problem": "logistic", "where": "in memory", **got})
            print(json.dumps(rows[-1]), flush=True)
    newton = _logistic_start.NEWTON_MAX_FEATURES
    _logistic_start.NEWTON_MAX_FEATURES = 10 ** 6
    for p in args.newton_p:
        X, _, labels = problem(rng, args.n, p)
        got = compare(ok.DSPDCClassifier, {}, (X, labels),
                      {"with start": 10 ** 6, "without start": 0}, args.repeats)
        rows.append({"n": args.n, "p": p, "problem": "logistic, Newton at any columns",
                     "where": "in memory", **got})
        print(json.dumps(rows[-1]), flush=True)
    _logistic_start.NEWTON_MAX_FEATURES = newton
    _squared_start.START_MAX_FEATURES = library
    if args.out is not None:
        args.out.write_text(json.dumps({"n": args.n, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
