"""Wall and CPU seconds of some tests in two checkouts of the repository, interleaved.

Runs ``python -m pytest <node ids> -n 0`` in the ``--before`` checkout, then in the
``--after`` one, ``--repeats`` times (A, B, A, B ...), each with ``PYTHONPATH`` set to its
checkout so that each runs its own package and tests.  CPU seconds are those of pytest and of
every process it waited for (``getrusage(RUSAGE_CHILDREN)``: the test's subprocesses
included), which a loaded machine inflates far less than wall seconds.  Prints one JSON line
per run and writes the list to ``--out``.

Usage (a checkout of the commit before a change beside the working tree)::

    git clone -q . ../before && git -C ../before checkout -q <commit before>
    python benchmarks/suite_time_ab.py --before ../before --after . --repeats 2 \\
        --out benchmarks/results/suite_time_cli.json \\
        tests/test_cli_pipeline.py::test_train_evaluate_predict_commands
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path


def run(tree: Path, nodes: list[str]) -> dict:
    """One pytest run of ``nodes`` in ``tree``: exit status, wall and CPU seconds."""
    env = dict(os.environ, PYTHONPATH=str(tree), OOC_KERNELS_PROGRESS="0")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.time()
    done = subprocess.run([sys.executable, "-m", "pytest", *nodes, "-q", "-p",
                           "no:cacheprovider", "-n", "0"], cwd=tree, env=env,
                          capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = done.stdout.strip().splitlines()
    return {"returncode": done.returncode, "wall_s": round(time.time() - start, 1),
            "cpu_s": round(cpu, 1), "load": round(os.getloadavg()[0], 1),
            "summary": lines[-1] if lines else ""}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("nodes", nargs="+", help="pytest node ids (relative to a checkout)")
    parser.add_argument("--before", type=Path, required=True, help="checkout A")
    parser.add_argument("--after", type=Path, default=Path("."), help="checkout B")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, help="JSON file for the runs")
    args = parser.parse_args(argv)
    rows = []
    for repeat in range(args.repeats):
        for name, tree in (("before", args.before), ("after", args.after)):
            row = {"tree": name, "repeat": repeat, **run(tree.resolve(), args.nodes)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.out:
        args.out.write_text(json.dumps({"nodes": args.nodes, "runs": rows}, indent=1) + "\n")
    return rows


if __name__ == "__main__":
    main()
