"""The per-input width search (``ooc_kernels.features.ard.ard_scales``) on
``nonlinear_binary`` with 100 inputs of which the first 5 carry the label: does it find
them, by rows searched, Adam steps, early stopping and random features?

For every setting and seed (the rows drawn with the seed from ``--pool`` training rows,
standardized, targets +-1) the script records which inputs get the 5 smallest widths
(``found``: how many of them are signal inputs), the largest signal width over the
smallest noise width (below 1: every signal input is narrower than every noise input),
the steps taken and the CPU seconds.  ``bandwidth="auto"`` searches 1,000 rows with 30
steps of 0.3, early stopping after 5 steps without a 0.1% gain, 256 random features
(``ooc_kernels/families/dsg/_ard.py``); ``"ard"`` 1,500 rows, 40 steps of 0.15, no early
stopping.

With ``--decision`` it runs instead ``bandwidth="auto"``'s whole per-input width decision
(``ooc_kernels.families.dsg._ard.auto_ard`` on 3,000 rows drawn with the seed, as a fit
samples them) and records its two leave-one-out scores, whether it took the widths and the
widths of the signal inputs.

    python benchmarks/dsg_binary100_search.py --seeds 0 1 2 \\
        --out benchmarks/results/dsg_binary100_search.json
    python benchmarks/dsg_binary100_search.py --decision --seeds 0 1 2 3 4 5 \\
        --out benchmarks/results/dsg_binary100_decision.json
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from scipy.spatial.distance import pdist

from ooc_kernels.data.generators import generate_chunk
from ooc_kernels.features.ard import ard_scales

INFORMATIVE = 5
#: (rows, steps, learning rate, patience, random features)
SETTINGS = [(1000, 30, 0.3, 5, 256), (1000, 30, 0.3, None, 256), (1500, 40, 0.15, None, 256),
            (1000, 120, 0.3, None, 256), (3000, 30, 0.3, 5, 256), (3000, 120, 0.3, None, 256),
            (1000, 30, 0.3, 5, 1024), (3000, 120, 0.3, None, 1024)]


def _decisions(X, y, args):
    from ooc_kernels.families.dsg._ard import auto_ard

    out = []
    for seed in args.seeds:
        take = np.random.default_rng(seed).choice(len(X), 3000, replace=False)
        cpu = time.process_time()
        shape, scores = auto_ard(X[take], (2.0 * y[take] - 1.0)[:, None], np.ones(len(take)),
                                 seed=seed, classification=True)
        r = {"seed": seed, "cpu_seconds": time.process_time() - cpu, "scores": scores,
             "taken": shape is not None, "load": os.getloadavg()[0]}
        if shape is not None:
            r["signal_widths"] = np.round(shape[:INFORMATIVE], 3).tolist()
            r["noise_width_median"] = float(np.median(shape[INFORMATIVE:]))
            r["kept"] = int(np.sum(shape[:INFORMATIVE] < r["noise_width_median"]))
        out.append(r)
        print(r, flush=True)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(out, indent=1) + "\n")
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--pool", type=int, default=10_000)
    p.add_argument("--decision", action="store_true",
                   help="run bandwidth='auto''s per-input width decision instead")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    chunk = generate_chunk("nonlinear_binary", 0, args.pool, random_state=0, n_features=100,
                           n_informative=INFORMATIVE)
    X, y = chunk["X"].astype(np.float64), chunk["y"]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    if args.decision:
        return _decisions(X, y, args)
    out = []
    for seed in args.seeds:
        for rows, steps, lr, patience, components in SETTINGS:
            rng = np.random.default_rng(seed)
            take = rng.choice(len(X), rows, replace=False)
            Z, T = X[take], (2.0 * y[take] - 1.0)
            start = float(np.median(pdist(Z[:1000])))
            cpu = time.process_time()
            scales, history = ard_scales(Z, T, np.ones(rows), start=start, seed=seed,
                                         steps=steps, learning_rate=lr, patience=patience,
                                         n_components=components, return_history=True)
            r = {"seed": seed, "rows": rows, "steps": steps, "learning_rate": lr,
                 "patience": patience, "components": components,
                 "cpu_seconds": time.process_time() - cpu, "steps_taken": len(history) - 1,
                 "found": int(np.sum(np.argsort(scales)[:INFORMATIVE] < INFORMATIVE)),
                 "signal_max_over_noise_min": float(scales[:INFORMATIVE].max()
                                                    / scales[INFORMATIVE:].min()),
                 "signal_widths": np.round(scales[:INFORMATIVE] / start, 3).tolist(),
                 "noise_width_median": float(np.median(scales[INFORMATIVE:]) / start),
                 "error_first_last": [history[0], min(history)],
                 "load": os.getloadavg()[0]}
            out.append(r)
            print(r, flush=True)
            if args.out:
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps(out, indent=1) + "\n")
    return out


if __name__ == "__main__":
    main()
