"""What ``bandwidth="auto"`` decides about per-input widths, and what the decision costs.

For every problem and seed, one ``DSGClassifier(random_state=seed, max_iter=1, tol=None)``
fit (the widths are chosen at setup) records the leave-one-out scores of one width and of
the quick ARD search's widths (:func:`~ooc_kernels.families.dsg._ard.auto_ard`), whether
per-input widths were taken, the CPU seconds of the decision (quick search and comparison)
and of the whole setup, and the widths the fit uses.  Problems:

* ``digits``: scikit-learn's digits, 75/25 split (``random_state=0``), the fit's seed
  varied;
* ``binary10``: ``nonlinear_binary`` with 10 inputs of which 5 carry the label, ``--n``
  rows drawn with the seed;
* ``iso10``: the same with all 10 inputs carrying the label (nothing to switch off);
* ``binary32``, ``binary64``: ``nonlinear_binary`` with 32 or 64 inputs of which 5 carry
  the label (with ``--n 1347``, digits' rows: few rows for many widths).

    python benchmarks/auto_ard_decisions.py --n 10000 --seeds 3 \\
        --out benchmarks/results/auto_ard_decisions.json
    python benchmarks/auto_ard_decisions.py --problems binary64 binary32 --n 1347 \\
        --seeds 3 --out benchmarks/results/auto_ard_decisions_few_rows.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def _problem(name: str, n: int, seed: int):
    if name == "digits":
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        X, y = load_digits(return_X_y=True)
        return train_test_split(X, y, test_size=0.25, random_state=0)[0::2]
    from ooc_kernels.data.generators import nonlinear_binary_label

    d = 10 if name in ("binary10", "iso10") else int(name[len("binary"):])
    X = np.random.default_rng(seed).normal(size=(n, d))
    return X, nonlinear_binary_label(X, 10 if name == "iso10" else 5)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--problems", nargs="+", default=["digits", "binary10", "iso10"])
    p.add_argument("--n", type=int, default=10_000,
                   help="rows of binary10, iso10, binary32 and binary64")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    import ooc_kernels as ok
    from _setup_watch import watch_setup

    seen = {}
    watch_setup(seen)
    X, y = _problem("iso10", 2000, 99)  # warm-up: compiled kernels
    ok.DSGClassifier(max_iter=1, tol=None, progress=False).fit(X, y)
    rows = []
    for name in args.problems:
        for seed in range(args.seeds):
            seen.clear()
            X, y = _problem(name, args.n, seed)
            clf = ok.DSGClassifier(random_state=seed, max_iter=1, tol=None,
                                   progress=False).fit(X, y)
            widths = np.asarray(clf.bandwidth_)
            row = {"problem": name, "seed": seed, "n": len(X),
                   "per_input_widths": bool(widths.ndim == 1),
                   "scores": {k: round(v, 4) for k, v in seen["scores"].items()},
                   "decision_cpu_seconds": round(seen["decision_cpu_seconds"], 2),
                   "setup_cpu_seconds": round(seen["setup_cpu_seconds"], 2),
                   "widths": np.round(widths, 2).tolist()}
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    return rows


if __name__ == "__main__":
    main()
