"""Decision surface and learning curve of a DSG kernel classifier trained out of core.

The data set is ``nonlinear_binary`` in two dimensions: points ``x ~ N(0, I_2)``, label 1
outside the circle that splits the classes in half (``||x||^2 > median chi2_2 = 2 ln 2``),
with 5 % of the labels flipped.  A linear model cannot separate it; a kernel machine can.
The store is written to Zarr chunk by chunk, opened lazily, and ``DSGClassifier.fit`` reads
it chunk by chunk.  The figure has two panels: the learned probability of class 1 over the
plane with the true circle and a sample of the training points, and the training loss per
epoch (``history_``).

Run from the repository root (well under a minute on a laptop)::

    python docs/examples/dsg_decision_surface.py --out docs/img/dsg_decision_surface.svg

``--n`` and ``--epochs`` lower the sizes (the test suite runs it small).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import ooc_kernels as ok  # noqa: E402
from ooc_kernels.data import open_zarr_dataset  # noqa: E402
from ooc_kernels.data.generators import nonlinear_binary_label  # noqa: E402


def main(argv: list[str] | None = None) -> dict:
    """Train the classifier, draw the figure, print and return what it shows.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    dict
        ``clf``: the fitted classifier; ``accuracy``: the share of a fresh test sample
        (drawn from another seed) whose noise-free label it predicts; ``out``: the path of
        the image written.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000, help="training rows")
    parser.add_argument("--chunk-size", type=int, default=10_000, help="rows per chunk")
    parser.add_argument("--epochs", type=int, default=8, help="passes over the data")
    parser.add_argument("--grid", type=int, default=120, help="grid points per axis")
    parser.add_argument("--out", default="docs/img/dsg_decision_surface.svg",
                        help="image to write (SVG; the format follows the suffix)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="ooc-dsg-example-") as work:
        params = {"n_features": 2, "n_informative": 2, "flip": 0.05}
        train = ok.make_dataset("nonlinear_binary", Path(work) / "train.zarr", args.n,
                                chunk_size=args.chunk_size, random_state=0,
                                progress=False, **params)
        test = ok.make_dataset("nonlinear_binary", Path(work) / "test.zarr", 5_000,
                               random_state=1, progress=False, **params)
        ds = open_zarr_dataset(train)                # lazy: read chunk by chunk by fit
        clf = ok.DSGClassifier(n_features=1024, max_iter=args.epochs, tol=None,
                               random_state=0, progress=False)   # exactly --epochs passes
        clf.fit(ds)

        X_test = open_zarr_dataset(test)["X"].values    # 5,000 rows: fine in memory
        accuracy = float(np.mean(clf.predict(X_test) == nonlinear_binary_label(X_test, 2)))
        X_show = ds["X"][:1_500].values                  # a sample of the training points
        y_show = ds["y"][:1_500].values

    lim = 3.2
    ticks = np.linspace(-lim, lim, args.grid)
    gx, gy = np.meshgrid(ticks, ticks)
    grid = np.column_stack([gx.ravel(), gy.ravel()]).astype(np.float32)
    proba = clf.predict_proba(grid)[:, 1].reshape(gx.shape)

    fig, (ax, ax_loss) = plt.subplots(1, 2, figsize=(9.5, 4.2),
                                      gridspec_kw={"width_ratios": [1.15, 1]})
    surface = ax.contourf(gx, gy, proba, levels=np.linspace(0, 1, 11), cmap="RdBu_r",
                          alpha=0.8)
    surface.set_rasterized(True)
    ax.contour(gx, gy, proba, levels=[0.5], colors="k", linewidths=1.5)
    radius = math.sqrt(2 * math.log(2))                # the median of chi2 with 2 dof is 2 ln 2
    theta = np.linspace(0, 2 * np.pi, 200)
    ax.scatter(X_show[:, 0], X_show[:, 1], c=np.where(y_show == 1, "#67001f", "#053061"),
               s=3, edgecolors="none", alpha=0.5, rasterized=True)
    ax.plot(radius * np.cos(theta), radius * np.sin(theta), "--", color="gold",
            linewidth=1.5, label="true boundary")
    ax.plot([], [], "k-", label="learned boundary (p = 0.5)")
    ax.set(xlim=(-lim, lim), ylim=(-lim, lim), aspect="equal", xlabel="$x_0$",
           ylabel="$x_1$", title=f"DSGClassifier: P(class 1), test accuracy {accuracy:.3f}")
    ax.legend(loc="lower left", fontsize=8, framealpha=0.9)
    fig.colorbar(surface, ax=ax, shrink=0.8)

    epochs = np.arange(1, len(clf.history_) + 1)
    ax_loss.plot(epochs, [h["loss"] for h in clf.history_], "o-")
    ax_loss.set(xlabel="epoch", ylabel="training loss (logistic)",
                title=f"learning curve, {args.n:,} rows out of core")
    ax_loss.set_xticks(epochs)
    ax_loss.grid(alpha=0.3)
    fig.tight_layout()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # no date in an SVG, so that rerunning the script changes the file only if the plot changes
    fig.savefig(out, metadata={"Date": None} if out.suffix == ".svg" else None)
    plt.close(fig)

    print(f"test accuracy against the noise-free labels: {accuracy:.4f}")
    print("loss per epoch: " + ", ".join(f"{h['loss']:.4f}" for h in clf.history_))
    print(f"wrote {out}")
    return {"clf": clf, "accuracy": accuracy, "out": out}


if __name__ == "__main__":
    main(sys.argv[1:])
