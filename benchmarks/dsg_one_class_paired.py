"""Paired differences against the peer, from the JSON files of ``dsg_one_class.py``
(``--problem wide``) and ``dsg_one_class_real.py``.

Each method ran once per seed in turn, so seed ``i`` of one method and seed ``i`` of the
peer saw the same data (and about the same machine load).  For every method this prints
the median CPU seconds, the median ROC AUC, and the median over seeds of the method's AUC
minus the peer's (and, with ``--old``, minus the old default's), and writes them to ``--json``::

    python benchmarks/dsg_one_class_paired.py \
        --wide benchmarks/results/dsg_one_class_default_basis_wide.json \
        --real benchmarks/results/dsg_one_class_default_basis_digits.json \
        benchmarks/results/dsg_one_class_default_basis_breast_cancer.json \
        --json benchmarks/results/dsg_one_class_default_basis_paired.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np


def _summary(rows: dict, peer: str, old: str | None) -> dict:
    """``rows``: ``{method: (aucs, cpus)}`` by seed; the peer's AUCs are ``rows[peer][0]``,
    those of the old default the first method whose name starts with ``old``."""
    base = np.asarray(rows[peer][0])
    olds = [name for name in rows if old and name.startswith(old)]
    out = {}
    for name, (aucs, cpus) in rows.items():
        aucs = np.asarray(aucs)
        out[name] = {"cpu": float(np.median(cpus)), "auc": float(np.median(aucs)),
                     "minus_peer": float(np.median(aucs - base)),
                     "seeds_ahead": int((aucs > base).sum()), "seeds": len(aucs)}
        if olds:
            out[name]["minus_old"] = float(np.median(aucs - np.asarray(rows[olds[0]][0])))
    return out


def wide_rows(path) -> dict:
    """``{method: (aucs, cpus)}`` of a ``dsg_one_class.py`` file (``"name, epochs"``)."""
    data = json.loads(Path(path).read_text())
    return {f"{name}, {ep} ep": ([r[1] for r in v["runs"]], [r[2] for r in v["runs"]])
            for name, by_ep in data.items() if name != "setup"
            for ep, v in by_ep.items()}


def real_rows(path) -> dict:
    """``{problem: {method: (aucs, cpus)}}`` of a ``dsg_one_class_real.py`` file."""
    data = json.loads(Path(path).read_text())
    return {problem: {name: ([r["auc"] for r in v["runs"]], [r["cpu"] for r in v["runs"]])
                      for name, v in methods.items()}
            for problem, methods in data.items() if problem != "setup"}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--wide", nargs="*", default=[])
    p.add_argument("--wide-peer", default="peer 256:0.1:optimal, 0.5 ep")
    p.add_argument("--real", nargs="*", default=[])
    p.add_argument("--old", default="dsg basis='random', n_features=4096, batch_size=64",
                   help="the name (its start) of the old default's method")
    p.add_argument("--json", default="benchmarks/results/dsg_one_class_paired.json")
    args = p.parse_args(argv)
    tables = {}
    for path in args.wide:
        tables[f"wide ({path})"] = _summary(wide_rows(path), args.wide_peer, args.old)
    for path in args.real:
        for problem, rows in real_rows(path).items():
            tables[f"{problem} ({path})"] = _summary(rows, "peer", args.old)
    for title, table in tables.items():
        print(title)
        for name, r in table.items():
            print(f"  {name}: CPU {r['cpu']:.3f} s, AUC {r['auc']:.4f}, minus the peer "
                  f"{r['minus_peer']:+.4f} (ahead on {r['seeds_ahead']} of {r['seeds']})"
                  + (f", minus the old default {r['minus_old']:+.4f}" if "minus_old" in r
                     else ""))
    Path(args.json).write_text(json.dumps(tables, indent=1))
    print(f"wrote {args.json}")
    return tables


if __name__ == "__main__":
    main(sys.argv[1:])
