"""Measured decay of the DSPDC duality gap against the rate of Theorem 2, every loss x
regularizer.

For each loss (squared, smoothed hinge, logistic) and regularizer (l2, l1 + l2) and several
``(m, q)``, runs Algorithm 1 (the numba kernel) with the parameters of Theorem 2 (``"gap"``
mode, ``Lambda`` exact by enumeration on a small problem) from zero, for ``seeds`` sampler
streams, and fits the slope of the seed-averaged ``log(gap)`` per iteration where it lies
between ``1e-1`` and ``1e-11`` (above the rounding floor).  Theorem 2 promises
``log(1 - 1/(2K))``; the ratio ``measured / promised`` is at least 1 when the method is at
least as fast as the theorem.  ``tests/test_dspdc_math.py`` asserts it for the squared loss.

    python benchmarks/dspdc_slopes.py --out benchmarks/results/dspdc_slopes.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from pathlib import Path

import numpy as np

from ooc_kernels.families.dspdc.kernels import dspdc_dense_iterations
from ooc_kernels.families.dspdc.params import LOSSES, dspdc_parameters, loss_gamma
from ooc_kernels.families.dspdc.in_memory.paper import duality_gap, dspdc_uniforms


def brute_lambda(A, m, q):
    """``Lambda_{q,m}`` by its definition: the largest ``||A_IJ||_2^2``."""
    best = 0.0
    for I in itertools.combinations(range(A.shape[0]), m):
        for J in itertools.combinations(range(A.shape[1]), q):
            best = max(best, np.linalg.norm(A[np.ix_(I, J)], 2) ** 2)
    return best


def problem(loss, seed=1, n=12, p=6):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, p))
    z = A @ rng.normal(size=p)
    b = z + 0.1 * rng.normal(size=n) if loss == "squared" else np.where(
        z + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return A, b


def measured_slope(A, b, loss, lam1, lam2, m, q, seeds):
    n, p = A.shape
    prm = dspdc_parameters(n, p, m, q, brute_lambda(A, m, q), lam2, loss_gamma(loss),
                           mode="gap")
    n_iter = int(60 * prm.K)
    every = max(1, int(prm.K / 10))
    logs = []
    for seed in seeds:
        ru, cu = dspdc_uniforms(seed, n_iter, m, q)
        y, x, xbar, z = np.zeros(n), np.zeros(p), np.zeros(p), np.zeros(p)
        gaps, ts = [], []
        for s in range(0, n_iter, every):
            dspdc_dense_iterations(A, b, y, x, xbar, z, n, ru[s:s + every], cu[s:s + every],
                                   m, q, prm.theta, prm.tau, prm.sigma, LOSSES[loss], lam1,
                                   lam2)
            gaps.append(duality_gap(A, b, x, y, loss=loss, lam1=lam1, lam2=lam2))
            ts.append(min(s + every, n_iter))
        logs.append(np.log(np.maximum(gaps, 1e-300)))
    mean_log = np.mean(logs, axis=0)
    ts = np.array(ts, dtype=float)
    seg = (mean_log < math.log(1e-1)) & (mean_log > math.log(1e-11))
    if seg.sum() < 10:
        return prm, None
    return prm, float(np.polyfit(ts[seg], mean_log[seg], 1)[0])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = []
    print("| loss | regularizer | (m, q) | K | promised slope | measured slope | ratio |")
    print("|---|---|---|---|---|---|---|")
    for loss in LOSSES:
        A, b = problem(loss)
        for reg, (lam1, lam2) in {"l2": (0.0, 0.1), "l1 + l2": (0.02, 0.1)}.items():
            for m, q in [(1, 1), (2, 3), (1, 6), (12, 1)]:
                prm, slope = measured_slope(A, b, loss, lam1, lam2, m, q,
                                            range(args.seeds))
                promised = math.log(1.0 - 1.0 / (2.0 * prm.K))
                row = {"loss": loss, "regularizer": reg, "m": m, "q": q, "K": prm.K,
                       "promised_slope": promised, "measured_slope": slope,
                       "ratio": None if slope is None else slope / promised}
                rows.append(row)
                ms = "n/a" if slope is None else f"{slope:.3g}"
                ratio = "n/a" if slope is None else f"{slope / promised:.2f}"
                print(f"| {loss} | {reg} | ({m}, {q}) | {prm.K:.1f} | {promised:.3g} | {ms} "
                      f"| {ratio} |", flush=True)
    if args.out:
        args.out.write_text(json.dumps({"seeds": args.seeds, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
