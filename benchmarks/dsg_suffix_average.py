"""The robust losses' averaged iterate, averaged from the first step (``average=True``)
against averaged from the first epoch the stopping rule counts as no gain (suffix
averaging), and the last iterate, on 2,000 training rows.

For each problem, loss and seed five fits of ``DSGRegressor(loss=..., random_state=seed)``,
everything else at its default:

* ``last``: ``average=False``; its ``history_`` gives the first epoch ``e`` whose training
  loss is not below the best before it minus ``tol`` (the epochs the stopping rule counts
  towards ``n_iter_no_change``; the last epoch when there is none);
* ``from start``: ``average=True``;
* ``suffix``: ``average=e * n`` (an ``int``: the mean starts after ``e`` epochs, with the
  first step of that no-gain epoch; epochs counted from 0 as in ``history_``);
* ``late``: ``average=(e + 1) * n``, one epoch later (what a rule can do that reads the
  no-gain epoch from ``history_`` once that epoch has ended);
* ``auto``: ``average="auto"``, the default: for these losses the mean starts with the
  first step after epoch ``e`` (``average_start_``; ``late`` in steps, where ``late``
  counts samples: the two differ when ``n`` is not a multiple of ``batch_size``).

The averaging does not change the iterates nor the progressive loss the stopping rule
watches, so the five fits run the same epochs.  Scores: mean squared error of the
predictions against the clean function on the test rows.

Problems: ``gross`` (``benchmarks/dsg_regression_peers.py``: ``sin(x_1) + x_2^2 / 2 + x_3``
on 5 inputs, noise 0.3 N(0, 1), 1% of the targets off by +-1,000), and ``corrupted``,
``heavy_tailed``, ``clean`` of ``benchmarks/dsg_loss_defaults.py`` (the problems behind
``average="auto"``).

    python benchmarks/dsg_suffix_average.py --seeds 3
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np

import ooc_kernels as ok
from dsg_robust_clip import robust_problem

CASES = (("gross", "huber"), ("gross", "epsilon_insensitive"), ("corrupted", "huber"),
         ("corrupted", "epsilon_insensitive"), ("corrupted", "quantile"),
         ("heavy_tailed", "huber"), ("heavy_tailed", "epsilon_insensitive"),
         ("clean", "huber"))


def first_no_gain(history, tol: float) -> int:
    """The first epoch whose loss is not below the best before it minus ``tol`` (the last
    epoch when every epoch gained)."""
    best = math.inf
    for entry in history:
        if entry["loss"] < best - tol:
            best = entry["loss"]
        else:
            return int(entry["epoch"])
    return int(history[-1]["epoch"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rows = []
    for name, loss in CASES:
        for seed in range(args.seeds):
            X, y, Xt, ft = robust_problem(name, seed)
            out = {"problem": name, "loss": loss, "seed": seed}
            last = ok.DSGRegressor(loss=loss, random_state=seed, progress=False,
                                   average=False).fit(X, y)
            out["epochs"] = int(last.n_iter_)
            out["from_epoch"] = first_no_gain(last.history_, last.tol)
            out["last"] = float(np.mean((last.predict(Xt) - ft) ** 2))
            for label, average in (("from_start", True), ("suffix", out["from_epoch"] * len(y)),
                                   ("late", (out["from_epoch"] + 1) * len(y)),
                                   ("auto", "auto")):
                model = ok.DSGRegressor(loss=loss, random_state=seed, progress=False,
                                        average=average).fit(X, y)
                out[label] = float(np.mean((model.predict(Xt) - ft) ** 2))
            rows.append(out)
            print(f"{name:13s} {loss:20s} seed {seed} epochs {out['epochs']:3d} from "
                  f"{out['from_epoch']:3d}  last {out['last']:.4f}  from start "
                  f"{out['from_start']:.4f}  suffix {out['suffix']:.4f}  late "
                  f"{out['late']:.4f}  auto {out['auto']:.4f}", flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
