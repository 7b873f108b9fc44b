"""DSGGaussianProcessRegressor against scikit-learn's exact GaussianProcessRegressor at
equal wall-clock time, on several problems, out of core.

Problems (``--problems``; the training rows in a Zarr store read chunk by chunk, 2000
held-out rows):

* ``1d``: ``x ~ U[-3, 3]``, ``y = sin(2x) + 0.3 eps`` (the documentation's example),
  length scale 0.3 on the standardized input;
* ``5d``: ``x ~ U[-2, 2]^5``, ``y = sum_k sin(2 x_k) / sqrt(5) + 0.3 eps``, length scale 1;
* ``10d``: Friedman's function #1 (``sklearn.datasets.make_friedman1``, 10 inputs of which
  5 matter, noise standard deviation 1), length scale 2.

Both models use the RBF kernel with the same length scale on the standardized inputs and
``normalize_y=True`` (the estimator's ``standardize``).  Models, each the median of
``--repeats`` runs (seeds 0, 1, ...):

* the exact GP (true noise) on random subsamples of ``m`` rows (``--exact-sizes``; ``m^2``
  memory and ``m^3`` time: the largest that fits the DSG GP's time is the reference);
* the DSG GP on all ``n`` rows with ``mean="features"`` and ``noise`` ``"auto"``, the true
  noise and 0.1;
* the DSG GP with the paper's ``mean="dsg"`` (true noise) after ``--dsg-epochs`` epochs.

Reported: the held-out RMSE of the mean against ``y``, the negative log predictive density
of ``y`` (Gaussian, variance ``std^2 +`` the model's noise), the fit-and-predict time, and
the chosen noise over the true one.

Run (about ten minutes on 2 shared cores)::

    python benchmarks/dsg_gaussian_process.py --repeats 3
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
from sklearn.datasets import make_friedman1
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF

import ooc_kernels as ok

#: name -> (rows, length scale, noise standard deviation)
PROBLEMS = {"1d": (10_000, 0.3, 0.3), "5d": (30_000, 1.0, 0.3), "10d": (100_000, 2.0, 1.0)}


def make(name: str, n: int, seed: int):
    rng = np.random.default_rng(seed)
    sd = PROBLEMS[name][2]
    if name == "1d":
        X = rng.uniform(-3, 3, size=(n, 1))
        return X, np.sin(2 * X[:, 0]) + sd * rng.normal(size=n)
    if name == "5d":
        X = rng.uniform(-2, 2, size=(n, 5))
        return X, np.sin(2 * X).sum(axis=1) / np.sqrt(5) + sd * rng.normal(size=n)
    return make_friedman1(n, n_features=10, noise=sd, random_state=seed)


def nlpd(y, mean, std, noise_var):
    var = std ** 2 + noise_var
    return float(np.mean(0.5 * np.log(2 * np.pi * var) + (y - mean) ** 2 / (2 * var)))


def run_once(args, name: str, seed: int, tmp: Path) -> list[dict]:
    n, bandwidth, noise_sd = PROBLEMS[name]
    n = args.n or n
    X, y = make(name, n, seed)
    Xt, yt = make(name, 2000, 1000 + seed)
    mu, sd, ysd = X.mean(0), X.std(0), y.std()
    true_noise = (noise_sd / ysd) ** 2  # in standardized-target units
    rows = []

    def record(model, rows_used, seconds, mean, std, noise):
        rows.append(dict(problem=name, model=model, rows=rows_used, seconds=seconds,
                         rmse=float(np.sqrt(np.mean((mean - yt) ** 2))),
                         nlpd=nlpd(yt, mean, std, noise * ysd ** 2),
                         noise_ratio=noise / true_noise))

    for m in args.exact_sizes:
        pick = np.random.default_rng(seed).choice(n, size=min(m, n), replace=False)
        start = time.perf_counter()
        gp = GaussianProcessRegressor(RBF(bandwidth), alpha=true_noise, optimizer=None,
                                      normalize_y=True).fit((X[pick] - mu) / sd, y[pick])
        mean, std = gp.predict((Xt - mu) / sd, return_std=True)
        record(f"exact GP, {len(pick)} rows", len(pick), time.perf_counter() - start,
               mean, std, true_noise)
    path = str(tmp / f"{name}{seed}.zarr")
    da.to_zarr(da.from_array(X, chunks=(args.chunk_size, X.shape[1])), path, overwrite=True)
    fits = [("features", "auto", None), ("features", true_noise, None),
            ("features", 0.1, None)]
    fits += [("dsg", true_noise, epochs) for epochs in args.dsg_epochs]
    for mean_mode, noise, epochs in fits:
        label = "auto" if noise == "auto" else ("0.1" if noise == 0.1 else "true")
        params = dict(noise=noise, mean=mean_mode, bandwidth=bandwidth,
                      chunk_size=args.chunk_size, random_state=seed, progress=False)
        if epochs is not None:
            params.update(max_iter=epochs, tol=None)
        start = time.perf_counter()
        est = ok.DSGGaussianProcessRegressor(**params)
        est.fit(da.from_zarr(path), da.from_array(y, chunks=args.chunk_size))
        mean, std = est.predict(Xt, return_std=True)
        model = f"DSG GP, mean={mean_mode}, noise {label}" + (
            f", {epochs} epochs" if epochs else "")
        record(model, n, time.perf_counter() - start, mean, std, est.noise_)
    return rows


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--n", type=int, default=None, help="rows of every problem")
    parser.add_argument("--chunk-size", type=int, default=5000)
    parser.add_argument("--exact-sizes", type=int, nargs="+", default=[1000, 2000, 4000])
    parser.add_argument("--dsg-epochs", type=int, nargs="*", default=[5, 20])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None, help="also write the medians here")
    args = parser.parse_args(argv)
    keys = ("seconds", "rmse", "nlpd", "noise_ratio")
    medians = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.problems:
            runs = [run_once(args, name, seed, Path(tmp)) for seed in range(args.repeats)]
            n = runs[0][-1]["rows"]
            print(f"\n{name}: n={n}, medians of {args.repeats} runs")
            print(f"{'model':44s} {'seconds':>8s} {'RMSE':>7s} {'NLPD':>7s} "
                  f"{'noise/true':>10s}")
            for i, row in enumerate(runs[0]):
                med = {k: float(np.median([r[i][k] for r in runs])) for k in keys}
                med.update(problem=name, model=row["model"], rows=row["rows"])
                medians.append(med)
                print(f"{med['model']:44s} {med['seconds']:8.2f} {med['rmse']:7.4f} "
                      f"{med['nlpd']:7.4f} {med['noise_ratio']:10.3f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(medians, indent=1))
    return medians


if __name__ == "__main__":
    main(sys.argv[1:])
