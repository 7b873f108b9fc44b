"""The error a Halley and a third-order (Householder) step leave in the logistic dual step.

The logistic dual step solves ``G(t) = sigma (c b - t) + n (sigmoid(-t) + b y) = 0``
(``docs/algorithms/dspdc_math.md``).  For random problems (``sigma`` log-uniform in
``1e-8 .. 1e2``, ``n`` in ``1 .. 1e6``, ``c`` Gaussian on scales ``1e-1 .. 1e2``, ``b y``
uniform in ``(-1, 0)``), the root by bisection in ``--dps``-digit arithmetic (mpmath), and
from starts at relative distances ``1e-2``, ``1e-3`` and ``1e-4`` from it, one Halley step
and one third-order step: the largest ratio of the error left to ``h^3`` (Halley) and to
``h^4`` (third order), ``h`` the step.  The solve ends on a step whose ``h^3`` (Halley) or
``h^4`` (third order) is below its tolerance, which these ratios justify.

    python benchmarks/dspdc_logistic_step_error.py --problems 1500 \\
        --out benchmarks/results/dspdc_logistic_step_error.json
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path


def run(problems: int, dps: int, seed: int) -> dict:
    import mpmath as mp

    mp.mp.dps = dps
    rnd = random.Random(seed)
    worst3 = worst4 = 0.0
    for _ in range(problems):
        sigma = mp.mpf(10) ** rnd.uniform(-8, 2)
        n = mp.mpf(10) ** rnd.uniform(0, 6)
        b = rnd.choice([-1, 1])
        c = mp.mpf(rnd.gauss(0, 1) * 10 ** rnd.uniform(-1, 2))
        by = -rnd.random()

        def G(t):
            return sigma * (c * b - t) + n * (1 / (1 + mp.e ** t) + by)

        lo, hi = c * b + n * by / sigma, c * b + n * by / sigma + n / sigma
        for _ in range(10 * dps):                  # bisection: G decreasing, G(lo) > 0
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if G(mid) > 0 else (lo, mid)
        r = (lo + hi) / 2
        for e0 in (1e-2, 1e-3, 1e-4):
            t = r + e0 * rnd.choice([-1, 1]) * max(1, abs(float(r)))
            s = 1 / (1 + mp.e ** t)
            g, ds = G(t), s * (1 - s)
            d1, d2 = -sigma - n * ds, n * (1 - 2 * s) * ds
            d3 = -n * ds * (1 - 6 * s + 6 * s ** 2)
            halley = 2 * g * d1 / (2 * d1 ** 2 - g * d2)
            third = (6 * g * d1 ** 2 - 3 * g ** 2 * d2) / (
                6 * d1 ** 3 - 6 * g * d1 * d2 + g ** 2 * d3)
            worst3 = max(worst3, float(abs(t - halley - r) / abs(halley) ** 3))
            worst4 = max(worst4, float(abs(t - third - r) / abs(third) ** 4))
    return {"problems": problems, "starts": 3 * problems, "dps": dps, "seed": seed,
            "halley_error_over_h3": worst3, "third_order_error_over_h4": worst4}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=1500)
    parser.add_argument("--dps", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = run(args.problems, args.dps, args.seed)
    print(json.dumps(out))
    if args.out is not None:
        args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
