"""The robust losses at their defaults on targets with outliers, for comparing two trees
(the set-up's target clip, ``TARGET_CLIP``): for every problem, loss and seed one
``DSGRegressor(loss=..., random_state=seed)`` fit, everything else at its default; the
mean squared error of its predictions against the clean function on the test rows, and the
per-input widths it chose.

Problems: ``gross`` (``benchmarks/dsg_regression_peers.py``, 2,000 rows, 1% of the targets
off by +-1,000), ``corrupted``, ``heavy_tailed`` and ``clean`` (``benchmarks/
dsg_loss_defaults.py``, 2,000 rows).  Import the tree to measure first on ``PYTHONPATH``::

    cd benchmarks && PYTHONPATH=<tree>:. python dsg_robust_clip.py --seeds 3
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

import ooc_kernels as ok
from dsg_loss_defaults import regression_problem
from dsg_regression_peers import problem

CASES = (("gross", "huber"), ("gross", "epsilon_insensitive"), ("gross", "quantile"),
         ("corrupted", "huber"), ("corrupted", "epsilon_insensitive"),
         ("corrupted", "quantile"), ("heavy_tailed", "huber"),
         ("heavy_tailed", "epsilon_insensitive"), ("clean", "huber"))


def robust_problem(name: str, seed: int):
    """``(X, y, X_test, clean function on X_test)`` of the problem ``name``: ``gross`` from
    ``dsg_regression_peers.py``, the others from ``dsg_loss_defaults.py`` at 2,000 rows."""
    if name == "gross":
        return problem(name, seed)
    return regression_problem(name, 2000, seed)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    for name, loss in CASES:
        for seed in range(args.seeds):
            X, y, Xt, ft = robust_problem(name, seed)
            model = ok.DSGRegressor(loss=loss, random_state=seed, progress=False).fit(X, y)
            mse = float(np.mean((model.predict(Xt) - ft) ** 2))
            widths = np.round(np.atleast_1d(model.bandwidth_), 2).tolist()
            print(f"{name:13s} {loss:20s} seed {seed}  MSE {mse:.4f}  epochs "
                  f"{model.n_iter_:3d}  widths {widths}", flush=True)


if __name__ == "__main__":
    main()
