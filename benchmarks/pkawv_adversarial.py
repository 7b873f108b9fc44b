"""The paper's adversarial experiment (its Figure 3): a greedy adversary against each online
learner, d = 5, up to 80 rounds, sigma = 1, lambda = 1.

At every round the adversary chooses ``(x_t, y_t)`` in ``[-1, 1]^5 x [-1, 1]`` to maximize
the learner's regret after the round against the best function of the RKHS,

    sup_f [R_t(f) - lambda ||f||^2] = sum_{s<=t} (y_s - y_hat_s)^2 - lambda Y^T (K + lambda I)^{-1} Y

(the comparator the paper leaves unnamed; ``y_hat_t`` is the learner's forecast at ``x_t``
given the rounds before), by ``scipy.optimize.minimize`` (L-BFGS-B with bounds) from
``--starts`` random starting points; the learner then sees ``y_t`` and updates.  Each
learner gets its own adversarial sequence.  Learners (AWV mode, the paper's adversarial
setting): Kernel-AWV (``OnlineKernelRidge(basis="exact")``), PKAWV-Taylor ``M`` in {2, 3, 4}
and FOGD (1000 random Fourier features, ``eta = 1 / sqrt(80)``).  The KORS Nystrom learner
is left out: its forecast at ``x_t`` depends on a random draw (whether ``x_t`` joins the
dictionary) made when the row arrives, so the adversary cannot evaluate it at candidate
points without replaying that draw.

For every learner the plot also shows Proposition 1's bound for Kernel-AWV on that
learner's sequence, ``B^2 sum_j log(1 + lambda_j(K) / lambda)`` with ``B = 1``.
Results: ``results/pkawv_adversarial.json``; figure: ``../docs/img/pkawv_adversarial.svg``.

    python pkawv_adversarial.py --rounds 80
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from pkawv_common import FOGD
from scipy.optimize import minimize

import ooc_kernels as ok
from ooc_kernels.families.pkawv.reference import gaussian_kernel, log_det

HERE = Path(__file__).resolve().parent
D, SIGMA, ALPHA = 5, 1.0, 1.0


class OKRForecaster:
    """An ``OnlineKernelRidge`` as the adversary sees it: the forecast at a candidate row
    (the estimator's next-row forecast, computed by its prediction block without input
    checks, for speed) and the update with the chosen row."""

    def __init__(self, **params):
        self.model = ok.OnlineKernelRidge(bandwidth=SIGMA, alpha=ALPHA, mode="awv",
                                          scheduler="sync", progress=False, **params)
        self.started = False

    def forecast(self, x):
        if not self.started:
            return 0.0
        return float(self.model._predict_block(x[None, :], self.model._predict_payload())[0, 0])

    def update(self, x, y):
        self.model.partial_fit(x[None, :], np.array([y]))
        self.started = True


class FOGDForecaster:
    def __init__(self, n):
        self.fogd = FOGD(D, SIGMA, n)

    def forecast(self, x):
        return float((self.fogd.features(x[None, :]) @ self.fogd.w)[0])

    def update(self, x, y):
        self.fogd.partial_fit(x[None, :], np.array([y]))


def regret(Xs, ys, losses, x, y, y_hat):
    """The sup-regret after a round with ``(x, y)`` forecast ``y_hat``."""
    X = np.vstack([Xs, x[None, :]]) if len(Xs) else x[None, :]
    Y = np.append(ys, y)
    K = gaussian_kernel(X, X, SIGMA)
    return losses + (y - y_hat) ** 2 - ALPHA * Y @ np.linalg.solve(K + ALPHA * np.eye(len(Y)),
                                                                   Y)


def run(learner, rounds, starts, seed):
    rng = np.random.default_rng(seed)
    Xs, ys, losses, out = np.zeros((0, D)), np.zeros(0), 0.0, []
    for _ in range(rounds):
        def negative(v):
            x, y = v[:D], v[D]
            return -regret(Xs, ys, losses, x, y, learner.forecast(x))

        best = None
        for _ in range(starts):
            res = minimize(negative, rng.uniform(-1, 1, size=D + 1), method="L-BFGS-B",
                           bounds=[(-1, 1)] * (D + 1), options={"maxiter": 40})
            if best is None or res.fun < best.fun:
                best = res
        x, y = best.x[:D], float(best.x[D])
        y_hat = learner.forecast(x)
        losses += (y - y_hat) ** 2
        learner.update(x, y)
        Xs, ys = np.vstack([Xs, x[None, :]]), np.append(ys, y)
        K = gaussian_kernel(Xs, Xs, SIGMA)
        out.append({"regret": float(losses - ALPHA * ys @ np.linalg.solve(
            K + ALPHA * np.eye(len(ys)), ys)), "bound": log_det(K, ALPHA)})
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=80)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(HERE / "results" / "pkawv_adversarial.json"))
    parser.add_argument("--figure", default=str(HERE.parent / "docs" / "img" /
                                                "pkawv_adversarial.svg"))
    args = parser.parse_args(argv)
    makers = {"Kernel-AWV": lambda: OKRForecaster(basis="exact"),
              "PKAWV-Taylor M=2": lambda: OKRForecaster(basis="taylor", degree=2),
              "PKAWV-Taylor M=3": lambda: OKRForecaster(basis="taylor", degree=3),
              "PKAWV-Taylor M=4": lambda: OKRForecaster(basis="taylor", degree=4),
              "FOGD (1000)": lambda: FOGDForecaster(args.rounds)}
    res = {"rounds": args.rounds, "starts": args.starts, "seed": args.seed, "learners": {}}
    for name, make in makers.items():
        start = time.perf_counter()
        curve = run(make(), args.rounds, args.starts, args.seed)
        res["learners"][name] = {"curve": curve, "seconds": time.perf_counter() - start}
        print(f"{name:18s} regret after {args.rounds} rounds {curve[-1]['regret']:8.3f}  "
              f"(Prop. 1 bound on its sequence {curve[-1]['bound']:.3f}), "
              f"{res['learners'][name]['seconds']:.0f} s", flush=True)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(res, indent=1))   # after every learner
    plot(res, args.figure)


def plot(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for name, entry in res["learners"].items():
        t = np.arange(1, len(entry["curve"]) + 1)
        line, = ax.plot(t, [c["regret"] for c in entry["curve"]], label=name)
    kawv = res["learners"]["Kernel-AWV"]["curve"]
    ax.plot(np.arange(1, len(kawv) + 1), [c["bound"] for c in kawv], "k:",
            label="Prop. 1 bound (Kernel-AWV's sequence)")
    ax.set_xlabel("rounds n")
    ax.set_ylabel("cumulative regret (sup over the RKHS)")
    ax.set_title("Greedy adversary, d = 5, sigma = 1, lambda = 1")
    ax.legend(fontsize=7)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)


if __name__ == "__main__":
    main()
