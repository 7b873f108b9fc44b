"""DSPDC with its defaults on raw, unscaled tabular data shaped like a real dataset: passes
to a relative duality gap of 1e-4 and 1e-6, test ROC AUC / R^2 and CPU seconds, against
``make_pipeline(StandardScaler(), LogisticRegression())`` and the scaled ``Ridge``.

The data (written here, seeded): 261,000 training and 50,000 test rows of 28 columns
like those of a flight or weather table: calendar values (year 2005-2015, month, day of
month, day of week, day of year), clock values (hour, minute, ``hhmm`` from 0 to 2359,
minutes since midnight), distances in the thousands (100-5,000), durations in the hundreds,
pressures near 1,000 (``N(1013, 8)``), temperatures, humidities in percent, counts, and
eight 0/1 indicators.  A weak, partly nonlinear signal gives a binary target (about 20 %
positives) and a noisy numeric one, so that the scaled linear peers reach a ROC AUC near 0.7
and an R^2 near 0.1, as on the real table.

Every fit is timed with ``time.process_time`` with one thread (``OMP_NUM_THREADS=1`` etc.
set before NumPy is imported; ``scheduler="sync"``); the runs of one repeat are interleaved
in one process, and the medians over ``--repeats`` are reported.

    python benchmarks/dspdc_raw.py --repeats 3 --out benchmarks/results/dspdc_raw.json

``--local-passes 1 2`` adds the DSPDC fits with ``local_passes=2`` to the interleaving (their
``reads_to_*``: epochs, i.e. reads of the data, to each gap):

    python benchmarks/dspdc_raw.py --repeats 3 --local-passes 1 2 \
        --out benchmarks/results/dspdc_raw_local_passes.json
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # a script: one thread everywhere (not when imported)
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                 "NUMBA_NUM_THREADS"):
        os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402


def raw_table(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(X, y_class, y_value)``: ``n`` rows of the 28 raw columns and the two targets."""
    rng = np.random.default_rng(seed)
    year = rng.integers(2005, 2016, n)
    month = rng.integers(1, 13, n)
    dom = rng.integers(1, 29, n)
    dow = rng.integers(0, 7, n)
    doy = (month - 1) * 30.5 + dom
    hour = rng.integers(0, 24, n)
    minute = rng.integers(0, 60, n)
    hhmm = hour * 100 + minute
    since = hour * 60 + minute
    dist = rng.gamma(2.0, 600.0, n) + 100.0
    duration = dist / 8.0 + rng.normal(0, 15, n) + 30
    pressure = rng.normal(1013.0, 8.0, n)
    pressure2 = pressure + rng.normal(0, 2.0, n)
    temp = 15 + 10 * np.sin(2 * np.pi * (doy - 100) / 365) + rng.normal(0, 5, n)
    dew = temp - rng.gamma(2.0, 3.0, n)
    humidity = np.clip(100 - 5 * (temp - dew) + rng.normal(0, 5, n), 5, 100)
    wind = rng.gamma(2.0, 4.0, n)
    visibility = np.clip(rng.normal(9, 2.5, n), 0, 10)
    traffic = rng.poisson(40 + 20 * np.sin(np.pi * hour / 24), n).astype(float)
    seats = rng.choice([50, 76, 120, 150, 180, 220, 300], n).astype(float)
    ind = (rng.random((n, 8)) < rng.uniform(0.05, 0.5, 8)).astype(float)
    X = np.column_stack([year, month, dom, dow, doy, hour, minute, hhmm, since, dist,
                         duration, pressure, pressure2, temp, dew, humidity, wind,
                         visibility, traffic, seats, ind]).astype(np.float64)
    signal = (0.04 * (hour - 12) + 0.00015 * (dist - 1300) - 0.03 * (pressure - 1013)
              + 0.6 * ind[:, 0] + 0.4 * ind[:, 3] - 0.3 * ind[:, 5] + 0.02 * wind
              + 0.08 * (month % 12 < 2) + 0.5 * (visibility < 5) + 0.01 * (traffic - 40)
              - 0.05 * (year - 2010) + 0.2 * np.sin(since / 120.0))
    logit = -1.6 + 1.5 * signal + rng.logistic(0.0, 1.0, n)
    y_class = (logit > 0).astype(np.int64)
    y_value = 20 * signal + rng.normal(0, 30, n)
    return X, y_class, y_value


def passes_to(history, level):
    hit = [h["passes"] for h in history if h["relative_gap"] <= level]
    return float(hit[0]) if hit else None


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-train", type=int, default=261_000)
    parser.add_argument("--n-test", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--local-passes", type=float, nargs="+", default=[1.0],
                        help="DSPDC fits with each value of local_passes (interleaved)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)

    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.metrics import r2_score, roc_auc_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    import ooc_kernels as ok

    X, yc, yv = raw_table(args.n_train + args.n_test, seed=0)
    tr, te = slice(0, args.n_train), slice(args.n_train, None)

    def timed(make, target, score):
        est = make()
        local = getattr(est, "local_passes", 1.0)
        t0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("error")     # a ConvergenceWarning would be reported
            est.fit(X[tr], target[tr])
        seconds = time.process_time() - t0
        if score == "auc":
            metric = roc_auc_score(target[te], est.predict_proba(X[te])[:, 1])
        else:
            metric = r2_score(target[te], est.predict(X[te]))
        row = {"cpu_seconds": seconds, "test_metric": float(metric)}
        if hasattr(est, "gap_history_"):
            h = est.gap_history_
            row.update(epochs=int(est.n_iter_), relative_gap=float(h[-1]["relative_gap"]),
                       passes_to_1e4=passes_to(h, 1e-4), passes_to_1e6=passes_to(h, 1e-6),
                       stop_reason=est.stop_reason_)
            # reads of the data: an epoch reads every row once and runs local_passes passes
            row.update({f"reads_to_{k}": None if row[f"passes_to_{k}"] is None
                        else row[f"passes_to_{k}"] / local for k in ("1e4", "1e6")})
        return row

    def label(est, L):
        return f"{est}()" if L == 1.0 else f"{est}(local_passes={L:g})"

    fits = {}
    for L in args.local_passes:
        fits[label("DSPDCClassifier", L)] = (lambda L=L: ok.DSPDCClassifier(
            max_iter=args.max_iter, random_state=0, scheduler="sync", progress=False,
            local_passes=L), yc, "auc")
    fits["StandardScaler + LogisticRegression()"] = (lambda: make_pipeline(
        StandardScaler(), LogisticRegression()), yc, "auc")
    for L in args.local_passes:
        fits[label("DSPDCRegressor", L)] = (lambda L=L: ok.DSPDCRegressor(
            max_iter=args.max_iter, random_state=0, scheduler="sync", progress=False,
            local_passes=L), yv, "r2")
    fits["StandardScaler + Ridge()"] = (lambda: make_pipeline(StandardScaler(), Ridge()),
                                        yv, "r2")
    runs = {name: [] for name in fits}
    for rep in range(args.repeats):
        for name, (make, target, score) in fits.items():
            row = timed(make, target, score)
            runs[name].append(row)
            print(json.dumps({"repeat": rep, "fit": name, **row}), flush=True)
    summary = {}
    for name, rows in runs.items():
        summary[name] = {"median_cpu_seconds": float(np.median([r["cpu_seconds"] for r in rows])),
                         "test_metric": rows[0]["test_metric"]}
        for key in ("passes_to_1e4", "passes_to_1e6", "reads_to_1e4", "reads_to_1e6",
                    "epochs", "relative_gap"):
            if key in rows[0]:
                summary[name][key] = rows[0][key]
    out = {"n_train": args.n_train, "n_test": args.n_test, "repeats": args.repeats,
           "load": os.getloadavg(), "summary": summary, "runs": runs}
    print(json.dumps(summary, indent=1), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
