"""Posterior mean and +-2 standard-deviation band of DSGGaussianProcessRegressor trained out
of core, against scikit-learn's exact GaussianProcessRegressor on the same data.

The data: ``x`` uniform on [-3, 3] with a gap in (0.5, 1.5) (no rows there, so the band
must widen), ``y = sin(2x) + 0.3 eps``.  The rows are written to a Zarr store in chunks and
read lazily; the exact GP gets them in memory, with the same kernel (RBF, length scale the
fitted bandwidth on the standardized inputs), the same noise and ``normalize_y=True``.

Run from the repository root (about half a minute)::

    python docs/examples/gaussian_process_band.py --out docs/img/gaussian_process_band.svg

``--n`` lowers the size (the test suite runs it small).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import dask.array as da  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.gaussian_process import GaussianProcessRegressor  # noqa: E402
from sklearn.gaussian_process.kernels import RBF  # noqa: E402

import ooc_kernels as ok  # noqa: E402


def make_data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 3, size=3 * n)
    x = x[(x < 0.5) | (x > 1.5)][:n]
    y = np.sin(2 * x) + 0.3 * rng.normal(size=len(x))
    return x[:, None], y


def main(argv: list[str] | None = None) -> dict:
    """Fit both, draw the figure, print and return the curves."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--chunk-size", type=int, default=500)
    parser.add_argument("--out", default="docs/img/gaussian_process_band.svg")
    args = parser.parse_args(argv)
    X, y = make_data(args.n)
    noise, bandwidth = 0.1, 0.3
    with tempfile.TemporaryDirectory() as tmp:  # the training rows, read chunk by chunk
        path = str(Path(tmp) / "X.zarr")
        da.to_zarr(da.from_array(X, chunks=(args.chunk_size, 1)), path)
        gp = ok.DSGGaussianProcessRegressor(noise=noise, bandwidth=bandwidth,
                                            random_state=0, progress=False)
        gp.fit(da.from_zarr(path), da.from_array(y, chunks=args.chunk_size))
    grid = np.linspace(-3.5, 3.5, 300)[:, None]
    mean, std = gp.predict(grid, return_std=True)
    mu, sd = X.mean(0), X.std(0)
    exact = GaussianProcessRegressor(RBF(bandwidth), alpha=noise, optimizer=None,
                                     normalize_y=True).fit((X - mu) / sd, y)
    exact_mean, exact_std = exact.predict((grid - mu) / sd, return_std=True)

    fig, ax = plt.subplots(figsize=(7, 3.6))
    pick = np.random.default_rng(1).choice(len(y), size=min(300, len(y)), replace=False)
    ax.scatter(X[pick, 0], y[pick], s=4, color="0.6", label="training rows (sample)")
    ax.fill_between(grid[:, 0], exact_mean - 2 * exact_std, exact_mean + 2 * exact_std,
                    color="tab:blue", alpha=0.25, label="exact GP: mean +- 2 std")
    ax.plot(grid[:, 0], exact_mean, color="tab:blue", lw=1.5)
    ax.plot(grid[:, 0], mean, color="tab:red", lw=1.2, ls="--", label="DSG GP: mean")
    for sign in (-1, 1):
        ax.plot(grid[:, 0], mean + 2 * sign * std, color="tab:red", lw=0.9, ls=":",
                label="DSG GP: +- 2 std" if sign > 0 else None)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title(f"GP regression, {len(y)} rows out of core: DSG against the exact GP",
                 fontsize=10)
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, metadata={"Date": None})
    plt.close(fig)
    scale = y.std()
    print(f"max |mean - exact| / std(y) = {np.abs(mean - exact_mean).max() / scale:.3f}, "
          f"max |std - exact| / std(y) = {np.abs(std - exact_std).max() / scale:.4f}")
    return {"gp": gp, "grid": grid, "mean": mean, "std": std, "exact_mean": exact_mean,
            "exact_std": exact_std, "y": y}


if __name__ == "__main__":
    main(sys.argv[1:])
