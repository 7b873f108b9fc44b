"""Running average loss of OnlineKernelRidge over a stream read chunk by chunk from a Zarr
store: the Taylor basis (M = 2 and 3) over the whole stream and, on its first rows, the KORS
Nystrom dictionary and the exact learner (Kernel-AWV), as in the paper's figures of average
loss against samples.

The data: a regression stream of the shape of the paper's casp set (``d = 9``), ``x``
uniform on [-1, 1]^9, ``y = sin(2 x_1) cos(x_2) + x_3 x_4 / 2 + 0.1 eps`` scaled to [-1,
1]; Gaussian kernel sigma = 1, lambda = 1, KORS mu = beta = 1, epsilon = 0.5 (the paper's
settings).  The exact learner keeps ``t x t`` state and, in 9 dimensions at sigma = 1, KORS
keeps about a third of the rows (``O(m^2)`` a row), so both run on the first ``--n-exact``
rows only.

Run from the repository root (under a minute)::

    python docs/examples/online_kernel_ridge.py --out docs/img/online_kernel_ridge.svg

``--n`` lowers the size (the test suite runs it small).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import dask.array as da  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import ooc_kernels as ok  # noqa: E402


def make_data(n: int, d: int = 9, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.5 * X[:, 2] * X[:, 3] \
        + 0.1 * rng.normal(size=n)
    scale = np.abs(y).max()
    return X, y / scale, (0.1 / scale) ** 2      # the noise's variance after scaling


#: name -> (parameters, whether it streams every row or the first ``--n-exact`` only)
LEARNERS = {
    "Taylor, M = 2": (dict(basis="taylor", degree=2), True),
    "Taylor, M = 3": (dict(basis="taylor", degree=3), True),
    "Nystrom (KORS)": (dict(basis="nystrom", mu=1.0, beta=1.0, epsilon=0.5), False),
    "exact (Kernel-AWV)": (dict(basis="exact"), False),
}


def main(argv: list[str] | None = None) -> dict:
    """Stream every learner over the store, draw the figure, print and return the curves."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--n-exact", type=int, default=2_000)
    parser.add_argument("--chunk-size", type=int, default=2_000)
    parser.add_argument("--out", default="docs/img/online_kernel_ridge.svg")
    args = parser.parse_args(argv)
    X, y, noise = make_data(args.n)
    curves, models, seconds = {}, {}, {}
    with tempfile.TemporaryDirectory() as tmp:  # the stream, read chunk by chunk
        path = str(Path(tmp) / "X.zarr")
        da.to_zarr(da.from_array(X, chunks=(args.chunk_size, X.shape[1])), path)
        Xs, ys = da.from_zarr(path), da.from_array(y, chunks=args.chunk_size)
        for name, (params, whole) in LEARNERS.items():
            n = args.n if whole else min(args.n_exact, args.n)
            model = ok.OnlineKernelRidge(bandwidth=1.0, alpha=1.0, random_state=0,
                                         progress=False, **params)
            start = time.perf_counter()
            model.fit(Xs[:n], ys[:n])
            seconds[name] = time.perf_counter() - start
            losses = (y[:n] - model.online_predictions_) ** 2
            curves[name] = np.cumsum(losses) / np.arange(1, n + 1)
            models[name] = model
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for name, curve in curves.items():
        step = max(1, len(curve) // 400)
        ax.plot(np.arange(1, len(curve) + 1)[::step], curve[::step], lw=1.3,
                label=f"{name} ({models[name].n_components_} features, "
                      f"{seconds[name]:.1f} s)")
    ax.axhline(noise, color="0.6", ls=":", lw=0.8, label="noise variance (the floor)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rows seen")
    ax.set_ylabel("running average squared loss")
    ax.set_title(f"OnlineKernelRidge on a stream of {args.n} rows, d = 9", fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, metadata={"Date": None})
    plt.close(fig)
    for name, curve in curves.items():
        print(f"{name:20s} features {models[name].n_components_:5d}  rows {len(curve):6d}  "
              f"average loss {curve[-1]:.5f}  {seconds[name]:.1f} s")
    return {"X": X, "y": y, "noise": noise, "curves": curves, "models": models, "seconds": seconds}


if __name__ == "__main__":
    main(sys.argv[1:])
