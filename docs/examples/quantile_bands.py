"""Quantile bands of DSG kernel quantile regression on a 1-D heteroscedastic problem.

``x ~ U(-3, 3)``, ``y = sin(x) + (0.2 + 0.3 |x|) e`` with ``e ~ N(0, 1)``: the noise grows
away from 0, so the true 10% and 90% quantiles, ``sin(x) -+ 1.2816 (0.2 + 0.3 |x|)``, widen
with ``|x|`` and have a kink at 0.  The training rows are written to a Zarr store chunk by
chunk and ``DSGRegressor(loss="quantile", quantile=tau, average=True)`` reads it chunk by
chunk, for tau in 0.1, 0.5 and 0.9.  The figure shows a sample of the rows, the true
quantiles (dashed) and the fitted ones, with the held-out coverage of each in the legend.

Run from the repository root (under a minute on a laptop)::

    python docs/examples/quantile_bands.py --out docs/img/quantile_bands.svg

``--n`` lowers the size (the test suite runs it small).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import ooc_kernels as ok  # noqa: E402
from ooc_kernels.data import make_attrs, open_zarr_dataset, write_chunks  # noqa: E402

Z90 = 1.2815515655446004  # the standard normal's 90% quantile


def problem(n, rng):
    x = rng.uniform(-3.0, 3.0, size=(n, 1))
    y = np.sin(x[:, 0]) + (0.2 + 0.3 * np.abs(x[:, 0])) * rng.normal(size=n)
    return x.astype(np.float32), y.astype(np.float32)


def true_quantile(x, tau):
    z = {0.1: -Z90, 0.5: 0.0, 0.9: Z90}[tau]
    return np.sin(x) + z * (0.2 + 0.3 * np.abs(x))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=40_000)
    p.add_argument("--chunk-size", type=int, default=10_000)
    p.add_argument("--out", default="docs/img/quantile_bands.svg")
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    Xt, yt = problem(20_000, np.random.default_rng(1))
    grid = np.linspace(-3, 3, 301)[:, None].astype(np.float32)
    models, coverage = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        sizes = [min(args.chunk_size, args.n - a) for a in range(0, args.n, args.chunk_size)]
        write_chunks(Path(tmp) / "train.zarr", (problem(k, rng) for k in sizes),
                     n_samples=args.n, n_features=1, chunk_size=args.chunk_size,
                     attrs=make_attrs("regression", generator="heteroscedastic sine"),
                     progress=False)
        ds = open_zarr_dataset(Path(tmp) / "train.zarr")
        sample = np.asarray(ds.X.data[:1500].compute()), np.asarray(ds.y.data[:1500].compute())
        for tau in (0.1, 0.5, 0.9):
            models[tau] = ok.DSGRegressor(loss="quantile", quantile=tau, average=True,
                                          random_state=0, progress=False).fit(ds)
            coverage[tau] = float(np.mean(yt <= models[tau].predict(Xt)))
    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    ax.scatter(sample[0][:, 0], sample[1], s=2, color="0.75", rasterized=True)
    for tau, color in ((0.1, "C0"), (0.5, "C2"), (0.9, "C3")):
        ax.plot(grid[:, 0], true_quantile(grid[:, 0], tau), "--", color=color, lw=1)
        ax.plot(grid[:, 0], models[tau].predict(grid), color=color, lw=1.8,
                label=f"tau = {tau}: held-out coverage {coverage[tau]:.3f}")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title("DSGRegressor(loss='quantile'): fitted (solid) and true (dashed) quantiles",
                 fontsize=9)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(args.out)
    plt.close(fig)
    return {"models": models, "coverage": coverage}


if __name__ == "__main__":
    main()
