"""The idle 2-core wall-clock of a DSG fit estimated from the CPU seconds of its parts, for
runs of ``benchmarks/threads_parts.py`` made on a shared machine (where wall seconds
measure the other jobs).

Run from the repository root, after ``threads_parts.py`` (one or more JSON files, e.g. runs
of two versions of the library alternated)::

    python benchmarks/threads_parts.py --rows 200000 --threads 1 2 --repeats 2 \\
        --n-features auto --bandwidth-file bandwidth.json --json parts_1.json
    python benchmarks/threads_estimate.py parts_1.json parts_2.json --label A B --parts

For every file and thread count, medians over the file's fits of the CPU seconds of

* ``S``, the parts that run on one thread of the critical path, timed with
  ``time.thread_time`` in the thread that runs them: the set-up (the calling thread's share:
  work it hands to other threads is in ``B``), the chunk step outside its kernels, the
  growth phase and ``apply``;
* ``K``, the step kernel on every thread it runs on;
* ``B``, the rest of the fit's CPU seconds: the read ahead's thread, Zarr's decoding threads,
  Dask's pool, the main thread outside the timed parts (round loop, the first round's
  reads) and the set-up's helper threads;

and the wall-clock they predict on 2 idle cores: one thread ``T_1 = S + K`` (``B`` runs on
the other core), two threads ``T_2 = S + K / 2 + B / 2`` when ``B`` shares the cores
evenly, ``S + K / 2 + B`` when every second of ``B`` stalls both kernel threads, and the
speed-up ``T_1 / T_2`` for both.  ``S`` and ``B`` hold the part of the engine that runs on
the critical path, so the estimate is a model, not a measurement: the idle machine's
``threads_scaling.py`` is the measurement.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

SERIAL = ("set-up", "chunk step, other", "growth phase", "apply")
KERNEL = "step kernel"


def split(run: dict) -> dict:
    """``S``, ``K``, ``B`` (CPU seconds) of one fit of ``threads_parts.py``."""
    parts = run["parts"]
    s = sum(parts[p]["cpu_s"] for p in SERIAL)
    k = parts[KERNEL]["cpu_s"]
    return {"S": s, "K": k, "B": run["cpu_s"] - s - k, "fit": run["cpu_s"]}


def estimate(runs: list[dict]) -> dict:
    """Medians of ``S``, ``K``, ``B`` over ``runs`` (one thread count)."""
    vals = [split(r) for r in runs]
    return {key: statistics.median(v[key] for v in vals) for key in vals[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", type=Path, nargs="+", help="JSON files of threads_parts.py")
    ap.add_argument("--label", nargs="*", default=None,
                    help="one label per file (runs with the same label are pooled)")
    ap.add_argument("--parts", action="store_true",
                    help="also the median CPU seconds of every part, pooled by label")
    args = ap.parse_args()
    labels = args.label or [f.stem for f in args.files]
    if len(labels) != len(args.files):
        ap.error("give one --label per file")
    pooled: dict = {}
    for label, path in zip(labels, args.files):
        for run in json.loads(path.read_text())["runs"]:
            pooled.setdefault((label, run["n_jobs"]), []).append(run)
    print("| version | `n_jobs` | fits | load | fit CPU s | `S` | `K` | `B` |")
    print("|---|---|---|---|---|---|---|---|")
    est = {}
    for (label, t), runs in sorted(pooled.items(), key=lambda kv: (labels.index(kv[0][0]),
                                                                   kv[0][1])):
        e = est[label, t] = estimate(runs)
        loads = [r["load_before"] for r in runs]
        print(f"| {label} | {t} | {len(runs)} | {min(loads):.1f}-{max(loads):.1f} | "
              f"{e['fit']:.3f} | {e['S']:.3f} | {e['K']:.3f} | {e['B']:.3f} |")
    if args.parts:
        keys = list(dict.fromkeys(k for k in sorted(pooled, key=lambda k: (
            labels.index(k[0]), k[1]))))
        print("\n| part | " + " | ".join(f"{label} `n_jobs={t}`" for label, t in keys) + " |")
        print("|---|" + "---|" * len(keys))
        for part in pooled[keys[0]][0]["parts"]:
            vals = []
            for key in keys:
                got = [r["parts"][part]["cpu_s"] for r in pooled[key]]
                vals.append("-" if got[0] is None else f"{statistics.median(got):.3f}")
            print(f"| {part} | " + " | ".join(vals) + " |")
    print("\nPredicted on 2 idle cores (seconds):\n")
    print("| version | `T_1 = S + K` | `T_2`, `B` shared | `T_2`, `B` stalls | speed-up |")
    print("|---|---|---|---|---|")
    for label in dict.fromkeys(labels):
        if (label, 1) not in est or (label, 2) not in est:
            continue
        one, two = est[label, 1], est[label, 2]
        t1 = one["S"] + one["K"]
        fair = two["S"] + two["K"] / 2 + two["B"] / 2
        stall = two["S"] + two["K"] / 2 + two["B"]
        print(f"| {label} | {t1:.3f} | {fair:.3f} | {stall:.3f} | "
              f"{t1 / stall:.2f}x to {t1 / fair:.2f}x |")


if __name__ == "__main__":
    main()
