"""DSPDC's logistic fit in memory on wide rows (more columns than rows): the zero start
against Newton's start solved in the n-space (``families/dspdc/_wide_newton.py``).

``make_classification(n_samples=n, n_features=p, n_informative=20, random_state=seed)`` for
seeds 0, 1, 2; ``DSPDCClassifier(alpha=..., tol=..., max_iter=..., random_state=0)`` at its
other defaults, once with the start of wide rows off (``_wide_newton.WIDE_MAX_ROWS = 0``:
the zero start, the rule without that module) and once on; scikit-learn's
``LogisticRegression(C=1 / (alpha * n))`` (L-BFGS at its default ``tol``, raw columns,
intercept not penalized) for scale.  One warm-up fit (numba's caches), then the median wall
seconds of ``--repeats`` fits per seed.  One line per fit: the seconds, ``n_iter_``, the
last relative gap and why the fit stopped.

    OPENBLAS_NUM_THREADS=1 python benchmarks/dspdc_wide_start.py --alpha 1e-4 --n 200 --p 1000
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from ooc_kernels.families.dspdc import DSPDCClassifier, _wide_newton


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alpha", type=float, default=1e-4)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--p", type=int, default=1000)
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")              # the zero start warns at max_iter

    def data(seed):
        return make_classification(n_samples=args.n, n_features=args.p, n_informative=20,
                                   random_state=seed)

    DSPDCClassifier(alpha=args.alpha).fit(*data(0))
    limit = _wide_newton.WIDE_MAX_ROWS
    for label, rows in (("zero start", 0), ("wide Newton", limit)):
        _wide_newton.WIDE_MAX_ROWS = rows
        for seed in range(3):
            X, y = data(seed)
            seconds = []
            for _ in range(args.repeats):
                model = DSPDCClassifier(alpha=args.alpha, tol=args.tol,
                                        max_iter=args.max_iter, random_state=0)
                start = time.perf_counter()
                model.fit(X, y)
                seconds.append(time.perf_counter() - start)
            last = model.gap_history_[-1]
            print(f"{label:11s} alpha={args.alpha:g} {args.n}x{args.p} seed {seed}: "
                  f"{np.median(seconds):.4f} s, n_iter_={model.n_iter_}, relative gap "
                  f"{last['relative_gap']:.3g}, {model.stop_reason_.split(':')[0]}")
    _wide_newton.WIDE_MAX_ROWS = limit
    for seed in range(3):
        X, y = data(seed)
        seconds = []
        for _ in range(args.repeats):
            reference = LogisticRegression(C=1.0 / (args.alpha * args.n), max_iter=10000)
            start = time.perf_counter()
            reference.fit(X, y)
            seconds.append(time.perf_counter() - start)
        print(f"LogisticRegression seed {seed}: {np.median(seconds):.4f} s")


if __name__ == "__main__":
    main()
