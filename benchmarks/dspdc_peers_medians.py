"""Medians over several result files of ``benchmarks/dspdc_peers.py --part peers``: the CPU
seconds of every fit of two trees run alternately (``before`` and ``after`` files), pooled
per data, problem, method and target, with the per-file medians beside them.

    python benchmarks/dspdc_peers_medians.py \
        --before benchmarks/results/dspdc_scatter_gap_peers_before_{1,2,3}.json \
        --after benchmarks/results/dspdc_scatter_gap_peers_after_{1,2,3}.json \
        --method "out of core"
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def pooled(paths, method: str) -> dict:
    """``{(data, problem, target): (all CPU seconds, per-file medians, epochs, worst
    relative suboptimality)}`` of the rows whose method names ``method``."""
    out = {}
    for path in paths:
        for entry in json.loads(Path(path).read_text())["problems"]:
            for row in entry["rows"]:
                if method not in row["method"]:
                    continue
                for target, hit in row["targets"].items():
                    if hit is None:
                        continue
                    cell = out.setdefault((entry["data"], entry["problem"], target),
                                          ([], [], set(), 0.0))
                    cell[0].extend(hit["cpu_seconds"])
                    cell[1].append(hit["median_cpu_seconds"])
                    cell[2].update(hit.get("epochs", []))
                    out[(entry["data"], entry["problem"], target)] = (
                        cell[0], cell[1], cell[2], max(cell[3], abs(hit["rel_subopt"])))
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, nargs="+", required=True)
    parser.add_argument("--after", type=Path, nargs="+", required=True)
    parser.add_argument("--method", default="out of core",
                        help="the rows whose method contains this text")
    args = parser.parse_args(argv)
    before, after = pooled(args.before, args.method), pooled(args.after, args.method)
    print("| data | problem | target | before: CPU s (per file) | after: CPU s (per file) "
          "| after / before | epochs before / after |")
    print("|---|---|---|---|---|---|---|")
    for key in sorted(before):
        if key not in after:
            continue
        b, a = before[key], after[key]
        mb, ma = statistics.median(b[0]), statistics.median(a[0])
        print(f"| {key[0]} | {key[1]} | {key[2]} | {mb:.4g} "
              f"({', '.join(f'{v:.4g}' for v in b[1])}) | {ma:.4g} "
              f"({', '.join(f'{v:.4g}' for v in a[1])}) | {ma / mb:.2f} | "
              f"{sorted(b[2])} / {sorted(a[2])} |")


if __name__ == "__main__":
    main()
