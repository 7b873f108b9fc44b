"""DSGDensityRatio against the classifier a user would pick, on Gaussian pairs, out of core.

For p = N(0, 1), q = N(0.5, 1.2^2) (1-D) and p = N(0, I), q = N((0.7, 0), diag(1.3^2, 1))
(2-D), both samples written to Zarr stores in chunks of ``n / 8`` rows and read lazily:

* ``DSGDensityRatio`` (defaults) on the two stores;
* the peer: scikit-learn's ``SGDClassifier(loss="log_loss")`` on ``RBFSampler`` features
  (as many features as the DSG model, the same median bandwidth on the pooled
  standardized sample), fed chunk by chunk with ``partial_fit`` for as many epochs as DSG
  ran, whose odds give the ratio: ``p/q = (n_q / n_p) P(p|x) / P(q|x)``, and its KL plug-in
  ``mean_p log r - mean_q r + 1`` (SGDClassifier at its defaults, alpha=1e-4).

Reported: the RMSE of the log-ratio on a grid where both densities have mass, the relative
KL error and the wall-clock time (medians of ``--repeats`` runs, seeds 0, 1, 2), and the
figure ``docs/img/density_ratio.png`` (the 1-D ratio curves).

    python benchmarks/dsg_density_ratio.py --sizes 2000 8000 32000 --repeats 3
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import dask.array as da
import numpy as np
from scipy.stats import multivariate_normal, norm
from sklearn.kernel_approximation import RBFSampler
from sklearn.linear_model import SGDClassifier

import ooc_kernels as ok
from ooc_kernels.features.bandwidth import median_heuristic


def gaussians(dim, n, seed):
    rng = np.random.default_rng(seed)
    if dim == 1:
        X_p, X_q = rng.normal(0, 1, (n, 1)), rng.normal(0.5, 1.2, (n, 1))
        grid = np.linspace(-2, 2, 41)[:, None]
        log_ratio = norm.logpdf(grid[:, 0], 0, 1) - norm.logpdf(grid[:, 0], 0.5, 1.2)
        kl = np.log(1.2) + (1 + 0.25) / (2 * 1.44) - 0.5
        return X_p, X_q, grid, log_ratio, kl
    X_p = rng.normal(size=(n, 2))
    X_q = rng.normal(size=(n, 2)) * np.array([1.3, 1.0]) + np.array([0.7, 0.0])
    g = np.linspace(-1.5, 1.5, 13)
    grid = np.array(np.meshgrid(g, g)).reshape(2, -1).T
    cov = np.diag([1.69, 1.0])
    log_ratio = (multivariate_normal([0, 0], np.eye(2)).logpdf(grid)
                 - multivariate_normal([0.7, 0], cov).logpdf(grid))
    kl = 0.5 * (np.trace(np.linalg.inv(cov)) + 0.49 / 1.69 - 2 + np.log(1.69))
    return X_p, X_q, grid, log_ratio, kl


def store(X, path, chunk):
    da.to_zarr(da.from_array(X, chunks=(chunk, X.shape[1])), str(path), overwrite=True)
    return da.from_zarr(str(path))


def run_dsg(P, Q, grid, seed):
    t = time.perf_counter()
    est = ok.DSGDensityRatio(random_state=seed, scheduler="sync", progress=False,
                             chunk_size=max(1, P.chunks[0][0])).fit(P, Q)
    seconds = time.perf_counter() - t
    return est.decision_function(grid), est.divergence_, seconds, est.n_iter_, est


def run_peer(P, Q, grid, seed, epochs, n_features):
    t = time.perf_counter()
    sample = np.concatenate([P[:1000].compute(), Q[:1000].compute()])
    shift, scale = sample.mean(0), sample.std(0)
    bandwidth = median_heuristic((sample - shift) / scale)
    rff = RBFSampler(gamma=1 / (2 * bandwidth ** 2), n_components=n_features,
                     random_state=seed).fit(sample[:1])
    clf = SGDClassifier(loss="log_loss", random_state=seed)  # scikit-learn defaults
    n_p, n_q = P.shape[0], Q.shape[0]
    for _ in range(epochs):
        for bp, bq in zip(P.to_delayed().ravel(), Q.to_delayed().ravel()):
            xp, xq = np.asarray(bp.compute()), np.asarray(bq.compute())
            Z = rff.transform((np.concatenate([xp, xq]) - shift) / scale)
            y = np.r_[np.ones(len(xp)), np.zeros(len(xq))]
            clf.partial_fit(Z, y, classes=[0, 1])

    def log_r(X):
        return clf.decision_function(rff.transform((X - shift) / scale)) + np.log(n_q / n_p)

    terms = [(log_r(np.asarray(b.compute())), n) for b, n in ((P, n_p), (Q, n_q))]
    kl = terms[0][0].mean() - np.exp(terms[1][0]).mean() + 1
    return log_r(grid), kl, time.perf_counter() - t


def figure(path, X_p, X_q, est, dim_grid):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = np.linspace(-3, 3, 200)[:, None]
    true = np.exp(norm.logpdf(x[:, 0], 0, 1) - norm.logpdf(x[:, 0], 0.5, 1.2))
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.4))
    ax[0].hist(X_p[:, 0], 60, density=True, alpha=0.5, label="X_p ~ N(0, 1)")
    ax[0].hist(X_q[:, 0], 60, density=True, alpha=0.5, label="X_q ~ N(0.5, 1.2^2)")
    ax[0].legend(fontsize=8)
    ax[0].set_title("the two samples")
    ax[1].plot(x[:, 0], true, "k-", label="analytic p/q")
    ax[1].plot(x[:, 0], est.predict(x), "C3--", label="DSGDensityRatio.predict")
    ax[1].axvspan(-3, -2, color="0.9")
    ax[1].axvspan(2, 3, color="0.9")
    ax[1].set_title(f"ratio p/q (KL est {est.divergence_:.3f}, true 0.116)")
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 8000, 32000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--figure", default=str(Path(__file__).parents[1] / "docs/img/density_ratio.png"))
    args = ap.parse_args()
    print("| case | n per sample | method | log-ratio RMSE | KL rel. error | seconds |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for dim in (1, 2):
            for n in args.sizes:
                rows = {"DSGDensityRatio": [], "SGD log_loss on RBFSampler": []}
                for seed in range(args.repeats):
                    X_p, X_q, grid, log_ratio, kl = gaussians(dim, n, seed)
                    chunk = max(1, n // 8)
                    P = store(X_p, Path(tmp) / "p.zarr", chunk)
                    Q = store(X_q, Path(tmp) / "q.zarr", chunk)
                    f, kl_dsg, sec, epochs, est = run_dsg(P, Q, grid, seed)
                    rows["DSGDensityRatio"].append(
                        (np.sqrt(np.mean((f - log_ratio) ** 2)), abs(kl_dsg - kl) / kl, sec))
                    g, kl_peer, sec_peer = run_peer(P, Q, grid, seed, epochs, 1024)
                    rows["SGD log_loss on RBFSampler"].append(
                        (np.sqrt(np.mean((g - log_ratio) ** 2)), abs(kl_peer - kl) / kl,
                         sec_peer))
                    if dim == 1 and n == max(args.sizes) and seed == 0 and args.figure:
                        figure(args.figure, X_p, X_q, est, grid)
                for name, vals in rows.items():
                    med = np.median(np.asarray(vals), axis=0)
                    print(f"| {dim}-D | {n} | {name} | {med[0]:.3f} | {med[1]:.3f} | "
                          f"{med[2]:.2f} |", flush=True)


if __name__ == "__main__":
    main()
