"""DSGGaussianProcessRegressor against scikit-learn's exact GaussianProcessRegressor.

The problem: ``x ~ U[-2, 2]^d``, ``y = sum_k sin(2 x_k) / sqrt(d) + noise`` (noise standard
deviation 0.3), ``n`` training rows in a Zarr store read chunk by chunk, 2000 held-out
rows.  Both models use the RBF kernel with the same length scale on the standardized inputs
and the same noise variance (in standardized-target units, ``normalize_y=True``).

Reported, each the median of ``--repeats`` runs (seeds 0, 1, ...):

* the exact GP on random subsamples of ``m`` rows (``--exact-sizes``; it needs ``m^2``
  memory and ``m^3`` time, so the largest that fits is the reference), and
* the DSG GP on all ``n`` rows, with its variance ``"features"`` (the default) and
  ``"operator"`` (the paper's Eq. 18),

with the held-out RMSE of the mean against ``y``, the negative log predictive density of
``y`` (Gaussian, variance ``std^2 + noise``), the mean and the std's RMS difference from the
largest exact GP's, and the fit time.  The DSG runs say which exact subsample size they
match at equal time.

Run (about ten minutes on 2 cores)::

    python benchmarks/dsg_gaussian_process.py --n 20000 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import dask.array as da
import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF

import ooc_kernels as ok

NOISE_SD = 0.3


def make(n: int, d: int, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, d))
    f = np.sin(2 * X).sum(axis=1) / np.sqrt(d)
    return X, f + NOISE_SD * rng.normal(size=n)


def nlpd(y, mean, std, noise_var):
    var = std ** 2 + noise_var
    return float(np.mean(0.5 * np.log(2 * np.pi * var) + (y - mean) ** 2 / (2 * var)))


def run_once(args, seed: int, tmp: Path) -> list[dict]:
    X, y = make(args.n, args.d, seed)
    Xt, yt = make(2000, args.d, 1000 + seed)
    mu, sd, ysd = X.mean(0), X.std(0), y.std()
    noise = (NOISE_SD / ysd) ** 2  # the true noise variance, in standardized-target units
    rows = []

    def record(name, seconds, mean, std, m):
        rows.append(dict(model=name, rows=m, seconds=seconds,
                         rmse=float(np.sqrt(np.mean((mean - yt) ** 2))),
                         nlpd=nlpd(yt, mean, std, noise * ysd ** 2), mean=mean, std=std))

    for m in args.exact_sizes:
        pick = np.random.default_rng(seed).choice(args.n, size=min(m, args.n), replace=False)
        start = time.perf_counter()
        gp = GaussianProcessRegressor(RBF(args.bandwidth), alpha=noise, optimizer=None,
                                      normalize_y=True).fit((X[pick] - mu) / sd, y[pick])
        mean, std = gp.predict((Xt - mu) / sd, return_std=True)
        record("exact GP", time.perf_counter() - start, mean, std, len(pick))
    path = str(tmp / f"X{seed}.zarr")
    da.to_zarr(da.from_array(X, chunks=(args.chunk_size, args.d)), path, overwrite=True)
    for variance in ("features", "operator"):
        start = time.perf_counter()
        est = ok.DSGGaussianProcessRegressor(
            noise=noise, bandwidth=args.bandwidth, variance=variance,
            n_variance_features=args.variance_features, max_iter=args.epochs, tol=None,
            chunk_size=args.chunk_size, random_state=seed, progress=False)
        est.fit(da.from_zarr(path), da.from_array(y, chunks=args.chunk_size))
        mean, std = est.predict(Xt, return_std=True)
        record(f"DSG GP ({variance})", time.perf_counter() - start, mean, std, args.n)
    ref = rows[len(args.exact_sizes) - 1]  # the largest exact GP
    ref_mean, ref_std = ref["mean"], ref["std"]
    for row in rows:
        row["mean_vs_exact"] = float(np.sqrt(np.mean((row.pop("mean") - ref_mean) ** 2)))
        row["std_vs_exact"] = float(np.sqrt(np.mean((row.pop("std") - ref_std) ** 2)))
    return rows


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--d", type=int, default=4)
    parser.add_argument("--bandwidth", type=float, default=1.0)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--variance-features", type=int, default=1024)
    parser.add_argument("--chunk-size", type=int, default=2500)
    parser.add_argument("--exact-sizes", type=int, nargs="+", default=[1000, 2000, 4000, 8000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None, help="also write the medians here")
    args = parser.parse_args(argv)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.repeats):
            runs.append(run_once(args, seed, Path(tmp)))
    keys = ("seconds", "rmse", "nlpd", "mean_vs_exact", "std_vs_exact")
    medians = []
    print(f"n={args.n}, d={args.d}, medians of {args.repeats} runs")
    print(f"{'model':22s} {'rows':>6s} {'seconds':>8s} {'RMSE':>7s} {'NLPD':>7s} "
          f"{'mean-exact':>10s} {'std-exact':>9s}")
    for i, row in enumerate(runs[0]):
        med = {k: float(np.median([r[i][k] for r in runs])) for k in keys}
        med.update(model=row["model"], rows=row["rows"])
        medians.append(med)
        print(f"{med['model']:22s} {med['rows']:6d} {med['seconds']:8.2f} {med['rmse']:7.4f} "
              f"{med['nlpd']:7.4f} {med['mean_vs_exact']:10.4f} {med['std_vs_exact']:9.5f}")
    if args.json:
        Path(args.json).write_text(json.dumps(medians, indent=1))
    return medians


if __name__ == "__main__":
    main(sys.argv[1:])
