"""``bandwidth="auto"``'s per-input widths on the regression of ``benchmarks/dsg_losses.py``,
whose second input acts through an even effect with two minima over its range.

``x ~ U(-3, 3)^4``, ``f = sin(x_1) + cos(2 x_2) / 2``, ``y = f + (0.2 + 0.3 |x_1|) e``, a
fraction ``--outliers`` of the targets replaced by ``6 + 3 N(0, 1)`` (the training rows
drawn with seed 0, 20,000 clean test rows with seed 1).  For every ``random_state`` of
``--seeds``, one ``DSGRegressor(loss=--loss, random_state=seed, max_iter=1, tol=None)`` fit
in memory: the widths it chose (``bandwidth_``) and the mean squared error of its
predictions against ``f`` on the test rows.  Switching ``x_2`` off costs
``var(cos(2 x_2) / 2) = 0.125``.  Import the tree to measure first on ``PYTHONPATH``::

    python benchmarks/dsg_screen_even.py --n 60000 --outliers 0.05 --loss huber \\
        --seeds 0 1 2 3 4 5
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

import ooc_kernels as ok


def regression(n, rng, outliers):
    """``(X, y, f)`` as ``benchmarks/dsg_losses.py`` draws them, with 4 inputs."""
    X = rng.uniform(-3, 3, size=(n, 4))
    f = np.sin(X[:, 0]) + 0.5 * np.cos(2 * X[:, 1])
    y = f + (0.2 + 0.3 * np.abs(X[:, 0])) * rng.normal(size=n)
    y = np.where(rng.random(n) < outliers, 6.0 + 3.0 * rng.normal(size=n), y)
    return X.astype(np.float32), y.astype(np.float32), f


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=60000)
    parser.add_argument("--outliers", type=float, default=0.05)
    parser.add_argument("--loss", default="huber")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4, 5])
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    X, y, _ = regression(args.n, np.random.default_rng(0), args.outliers)
    X_test, _, f_test = regression(20000, np.random.default_rng(1), 0.0)
    for seed in args.seeds:
        est = ok.DSGRegressor(loss=args.loss, random_state=seed, max_iter=1, tol=None,
                              progress=False).fit(X, y)
        mse = float(np.mean((est.predict(X_test) - f_test) ** 2))
        widths = np.round(np.atleast_1d(est.bandwidth_), 3).tolist()
        print(f"seed {seed}: widths {widths}, MSE against f {mse:.4f}", flush=True)


if __name__ == "__main__":
    main()
