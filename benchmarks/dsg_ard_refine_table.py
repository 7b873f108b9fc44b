"""The table of ``docs/benchmarks.md``, "Per-input widths on 100 inputs: keeping every
signal input": ``dsg_vw_curves.py`` results of the default's stopping-rule fit
(``dsg max_iter=0``) of two library trees, side by side.

Each ``--runs`` argument is ``LABEL=PATH`` (a JSON file written by
``benchmarks/dsg_vw_curves.py --budgets 0``); files of the same problem and label are
pooled (repeats).  Printed per problem and label: the test accuracy of every seed, its
median, median CPU seconds of the fit and of its set-up (every fit of every file), the
epochs, whether per-input widths were taken, and for ``binary100`` and ``binary10`` how many
of the first ``--informative`` inputs (those that carry the label) have a width below the
median width of the others.

    python benchmarks/dsg_ard_refine_table.py \\
        --runs before=benchmarks/results/dsg_ard_refine_binary100_20k_before.json \\
        after=benchmarks/results/dsg_ard_refine_binary100_20k_after.json
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

import numpy as np


def _kept(widths, informative):
    if not isinstance(widths, list):
        return "-"
    w = np.asarray(widths, dtype=float)
    return int(np.sum(w[:informative] < np.median(w[informative:])))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", nargs="+", required=True, help="LABEL=PATH")
    p.add_argument("--informative", type=int, default=5)
    args = p.parse_args(argv)
    pooled = defaultdict(list)
    order = []
    for item in args.runs:
        label, path = item.split("=", 1)
        for problem in json.loads(open(path).read()):
            key = (problem["problem"], problem["n_train"], label)
            if key not in pooled:
                order.append(key)
            pooled[key].append(problem["runs"]["dsg max_iter=0"])
    print("| problem | rows | tree | accuracy by seed (median) | CPU s | set-up CPU s | epochs "
          "| per-input | signal inputs kept by seed |")
    print("|---|---|---|---|---|---|---|---|---|")
    for key in order:
        problem, n, label = key
        files = pooled[key]
        first = files[0]
        acc = [r["accuracy"] for r in first]
        every = [r for runs in files for r in runs]
        kept = [_kept(r["bandwidth"], args.informative) if problem != "digits" else "-"
                for r in first]
        print(f"| {problem} | {n:,} | {label} | "
              f"{' / '.join(f'{a:.4f}' for a in acc)} (**{np.median(acc):.4f}**) | "
              f"{np.median([r['cpu_seconds'] for r in every]):.2f} | "
              f"{np.median([r['setup_cpu_seconds'] for r in every]):.3f} | "
              f"{'/'.join(str(r['epochs']) for r in first)} | "
              f"{'/'.join('yes' if r['per_input_widths'] else 'no' for r in first)} | "
              f"{' / '.join(map(str, kept))} |")


if __name__ == "__main__":
    main()
