"""Decision contour of DSGOneClassSVM trained out of core on a 2-D mixture.

Inliers are three Gaussian blobs (standard deviation 0.6) centred at (-2, -2), (2, 2) and
(2, -2); the test set adds as many outliers drawn uniformly in the box [-8, 8]^2.  The
training rows are written to Zarr chunk by chunk, opened lazily, and
``DSGOneClassSVM(nu=0.1).fit`` reads them chunk by chunk.  The figure shows the decision
function over the plane, its zero contour (the learnt boundary) and a sample of the training
rows; its title gives the ROC AUC on the planted outliers and the fraction of training rows
outside the boundary (``nu`` bounds it).

Run from the repository root (well under a minute on a laptop)::

    python docs/examples/one_class_contour.py --out docs/img/one_class_contour.svg

``--n`` and ``--epochs`` lower the sizes (the test suite runs it small).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402

import ooc_kernels as ok  # noqa: E402
from ooc_kernels.data import make_attrs, open_zarr_dataset, write_chunks  # noqa: E402

CENTERS = np.array([[-2.0, -2.0], [2.0, 2.0], [2.0, -2.0]])


def mixture(n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` rows of the three-blob mixture (float32)."""
    return (CENTERS[rng.integers(0, 3, n)] + 0.6 * rng.normal(size=(n, 2))).astype(np.float32)


def main(argv: list[str] | None = None) -> dict:
    """Train the detector, draw the figure, print and return what it shows.

    Returns
    -------
    dict
        ``det``: the fitted detector; ``auc``: ROC AUC of the decision function on inliers
        against planted uniform outliers; ``train_outliers``: fraction of training rows
        with a negative decision value; ``out``: the image written.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000, help="training rows")
    parser.add_argument("--chunk-size", type=int, default=10_000, help="rows per chunk")
    parser.add_argument("--epochs", type=int, default=5, help="passes over the data")
    parser.add_argument("--nu", type=float, default=0.1)
    parser.add_argument("--grid", type=int, default=80, help="grid points per axis")
    parser.add_argument("--out", default="docs/img/one_class_contour.svg",
                        help="image to write (SVG; the format follows the suffix)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "mixture.zarr"
        sizes = [min(args.chunk_size, args.n - a) for a in range(0, args.n, args.chunk_size)]
        write_chunks(store, ((mixture(k, rng), np.zeros(k, np.float32)) for k in sizes),
                     n_samples=args.n, n_features=2, chunk_size=args.chunk_size,
                     attrs=make_attrs("regression", generator="three-blob mixture"),
                     progress=False)
        det = ok.DSGOneClassSVM(nu=args.nu, max_iter=args.epochs, tol=None, random_state=0,
                                progress=False).fit(open_zarr_dataset(store))
        sample = open_zarr_dataset(store).X[:2000].values    # 2000 rows, for the plot
        train_outliers = float(np.mean(det.decision_function(sample) < 0))
    test_rng = np.random.default_rng(1)
    test = np.vstack([mixture(2000, test_rng), test_rng.uniform(-8, 8, (2000, 2))])
    truth = np.r_[np.ones(2000), np.zeros(2000)]
    auc = float(roc_auc_score(truth, det.decision_function(test)))
    g = np.linspace(-6, 6, args.grid)
    gx, gy = np.meshgrid(g, g)
    dec = det.decision_function(np.c_[gx.ravel(), gy.ravel()]).reshape(gx.shape)
    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    im = ax.contourf(gx, gy, dec, levels=12, cmap="viridis")
    im.set_rasterized(True)   # the filled contours as one small image inside the SVG
    ax.contour(gx, gy, dec, levels=[0.0], colors="red", linewidths=1.5)
    ax.scatter(sample[:400, 0], sample[:400, 1], s=3, c="white", alpha=0.6)
    fig.colorbar(im, ax=ax, label="decision_function = f(x) - offset_")
    ax.set_title(f"DSGOneClassSVM(nu={args.nu}): red = boundary\n"
                 f"ROC AUC {auc:.3f} vs uniform outliers, {train_outliers:.3f} of the "
                 "training rows outside", fontsize=9)
    ax.set_xlabel("x1")
    ax.set_ylabel("x2")
    fig.tight_layout()
    fig.savefig(args.out)
    plt.close(fig)
    print(f"ROC AUC {auc:.4f}; training rows outside {train_outliers:.4f} (nu={args.nu}); "
          f"wrote {args.out}")
    return {"det": det, "auc": auc, "train_outliers": train_outliers, "out": args.out}


if __name__ == "__main__":
    main(sys.argv[1:])
