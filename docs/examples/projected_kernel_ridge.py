"""ProjectedKernelRidge trained out of core with the Taylor and the Nystrom bases, against
scikit-learn's exact KernelRidge with the same kernel and ``alpha``.

The data: ``x`` uniform on [-3, 3], ``y = sin(2x) + 0.3 eps``, written to a Zarr store in
chunks and read lazily.  Every model takes the inputs and targets as they are
(``standardize=False``) with the bandwidth of ``ProjectedKernelRidge``'s median rule
(``bandwidth="median"``, ``bandwidth_``) and ``alpha = 1``, the problem of the exact model,
which gets the rows in memory.  The Taylor basis converges to the exact model as its
degree grows (degree 2 is a quadratic times a Gaussian envelope); 60 Nystrom rows already
match it.

Run from the repository root (a few seconds)::

    python docs/examples/projected_kernel_ridge.py --out docs/img/projected_kernel_ridge.svg

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
import xarray as xr  # noqa: E402
from sklearn.kernel_ridge import KernelRidge  # noqa: E402

import ooc_kernels as ok  # noqa: E402
from ooc_kernels.data.declarations import make_attrs  # noqa: E402
from ooc_kernels.data.zarr_io import write_chunks  # noqa: E402


def make_data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 3, size=n).astype(np.float32)  # the store's dtypes
    y = (np.sin(2 * x) + 0.3 * rng.normal(size=n)).astype(np.float32)
    return x[:, None].astype(np.float64), y.astype(np.float64)


def main(argv: list[str] | None = None) -> dict:
    """Fit the models, draw the figure, print and return the curves."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000)
    parser.add_argument("--chunk-size", type=int, default=500)
    parser.add_argument("--out", default="docs/img/projected_kernel_ridge.svg")
    args = parser.parse_args(argv)

    X, y = make_data(args.n)
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "sine.zarr"
        parts = ({"X": X[lo:lo + args.chunk_size].astype(np.float32),
                  "y": y[lo:lo + args.chunk_size].astype(np.float32)}
                 for lo in range(0, args.n, args.chunk_size))
        write_chunks(store, parts, n_samples=args.n, chunk_size=args.chunk_size,
                     attrs=make_attrs("regression", generator="projected_kernel_ridge"),
                     sizes={"feature": 1}, progress=False)
        ds = xr.open_zarr(store)
        grid = np.linspace(-3, 3, 241)[:, None]
        curves, models = {}, {}
        for label, params in (("Taylor M=2", dict(degree=2)), ("Taylor M=4", dict(degree=4)),
                              ("Taylor M=10", dict(degree=10)),
                              ("Nystrom, 60 rows", dict(basis="nystrom-fixed",
                                                        n_components=60))):
            # the raw inputs and targets and the median width: one kernel for every model
            model = ok.ProjectedKernelRidge(**params, bandwidth="median", standardize=False,
                                            alpha=1.0, random_state=0, scheduler="sync",
                                            progress=False).fit(ds)
            models[label] = model
            curves[label] = model.predict(grid)
    sigma = models["Taylor M=2"].bandwidth_
    exact = KernelRidge(alpha=1.0, kernel="rbf", gamma=1 / (2 * sigma ** 2)).fit(X, y)
    curves["exact KernelRidge"] = exact.predict(grid)

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    show = np.random.default_rng(1).choice(args.n, size=min(args.n, 600), replace=False)
    ax.scatter(X[show, 0], y[show], s=3, color="0.75", label="training rows (600 shown)")
    for label, curve in curves.items():
        ax.plot(grid[:, 0], curve, lw=2.2 if label.startswith("exact") else 1.2,
                ls=":" if label.startswith("exact") else "-", label=label)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title(f"ProjectedKernelRidge, sigma = {sigma:.2f}, alpha = 1")
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out)
    plt.close(fig)
    gaps = {label: float(np.max(np.abs(c - curves["exact KernelRidge"])))
            for label, c in curves.items() if not label.startswith("exact")}
    print("largest gap to the exact model on [-3, 3]:",
          {k: round(v, 5) for k, v in gaps.items()})
    return {"grid": grid, "curves": curves, "gaps": gaps, "models": models}


if __name__ == "__main__":
    main()
