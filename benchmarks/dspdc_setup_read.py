"""DSPDC out of core, code against code: ``local_passes="auto"`` and the set-up in one read.

The peer table's stores (``benchmarks/dspdc_peers.py``: ``--n`` x ``--p`` conditioned or raw
columns, chunks of ``--chunk-size`` rows, ``alpha = 1e-4``; ridge, elastic net with
``l1_ratio = 0.5``, logistic regression), each fit out of core from the store
(``xarray.open_zarr``) to ``tol`` = each target (``1e-4``, ``1e-6``), with the library of
each ``--trees`` folder (a ``git archive`` of a commit, or the working tree ``.``) and the
``local_passes`` of ``--variants`` (``TREE=default``: the estimator's default;
``TREE=L``: ``local_passes=L``).  Every fit runs in a child process of its own after one
warm-up fit there (numba's compilation and the imports excluded), the variants alternated run
after run (A, B, C, A, B, C ...), ``--repeats`` runs each; a run reports the process's CPU
seconds (``time.process_time``: every thread, the read ahead included; one BLAS and numba
thread), the epochs (reads of the store by the rounds), the reads of the set-up's
statistics passes (2 where the tree does not report them) and the ``local_passes`` the fit
ran with.  Medians per variant.

    git archive <start commit> ooc_kernels | tar -x -C /tmp/before
    python benchmarks/dspdc_setup_read.py --trees before=/tmp/before after=. \\
        --variants before=default before=3 after=default --repeats 3 \\
        --out benchmarks/results/dspdc_setup_read.json
    python benchmarks/dspdc_setup_read.py --table benchmarks/results/dspdc_setup_read.json
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # a script: one thread everywhere (not when imported)
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                 "NUMBA_NUM_THREADS"):
        os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from _results import run_or_table  # noqa: E402

HERE = Path(__file__).resolve().parent
TARGETS = (1e-4, 1e-6)
#: name: (task, estimator, parameters)
PROBLEMS = {"ridge": ("regression", "DSPDCRegressor", {}),
            "elastic_net": ("regression", "DSPDCRegressor", {"l1_ratio": 0.5}),
            "logistic": ("classification", "DSPDCClassifier", {})}


def _fit(spec: dict, tol: float):
    import xarray as xr

    import ooc_kernels as ok

    _, est_name, kw = PROBLEMS[spec["problem"]]
    if spec["local_passes"] != "default":
        kw = {**kw, "local_passes": float(spec["local_passes"])}
    est = getattr(ok, est_name)(tol=tol, progress=False, random_state=0, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                  # a fit that stops at max_iter
        return est.fit(xr.open_zarr(spec["store"]))


def child(spec: dict) -> dict:
    """One warm-up fit, then the timed fit, in this process (the library as imported)."""
    import ooc_kernels

    _fit(spec, 1e-2)                                      # warm-up
    cpu = time.process_time()
    est = _fit(spec, spec["target"])
    cpu = time.process_time() - cpu
    return {"cpu": cpu, "epochs": int(est.n_iter_),
            "setup_reads": int(getattr(est, "_setup_reads", 2)),
            "local_passes": float(est._config.local_passes),
            "relative_gap": float(est.gap_history_[-1]["relative_gap"]),
            "Lambda": float(est.Lambda_),
            "library": str(Path(ooc_kernels.__file__).parent.parent)}


def run(args) -> dict:
    sys.path.insert(0, str(HERE))
    from dspdc_peers import write_store

    trees = dict(t.split("=", 1) for t in args.trees)
    variants = [tuple(v.split("=", 1)) for v in args.variants]
    folder = Path(tempfile.mkdtemp(prefix="dspdc-setup-read-"))
    out = {"n": args.n, "p": args.p, "chunk_size": args.chunk_size, "repeats": args.repeats,
           "trees": trees, "variants": args.variants, "load_start": os.getloadavg(),
           "results": []}
    for kind in args.data:
        stores = {t: write_store(folder / f"{kind}_{t}.zarr", args.n, args.p,
                                 args.chunk_size, t, s, kind)
                  for t, s in (("regression", 1), ("classification", 2))}
        for problem in args.problems:
            for target in TARGETS:
                runs = {v: [] for v in args.variants}
                for _ in range(args.repeats):
                    for name, (tree, passes) in zip(args.variants, variants):   # alternated
                        spec = {"problem": problem, "target": target, "local_passes": passes,
                                "store": str(stores[PROBLEMS[problem][0]])}
                        env = dict(os.environ, PYTHONPATH=str(Path(trees[tree]).resolve()),
                                   PYTHONWARNINGS="ignore", OOC_KERNELS_PROGRESS="0")
                        res = subprocess.run([sys.executable, __file__, "--child",
                                              json.dumps(spec)], env=env, capture_output=True,
                                             text=True, check=True)
                        runs[name].append(json.loads(res.stdout.strip().splitlines()[-1]))
                        print(json.dumps({"data": kind, "problem": problem, "target": target,
                                          "variant": name, **runs[name][-1]}), flush=True)
                for name, rs in runs.items():
                    out["results"].append({
                        "data": kind, "problem": problem, "target": target, "variant": name,
                        "median_cpu_seconds": float(np.median([r["cpu"] for r in rs])),
                        "median_epochs": float(np.median([r["epochs"] for r in rs])),
                        "setup_reads": rs[0]["setup_reads"],
                        "local_passes": rs[0]["local_passes"], "runs": rs})
    out["load_end"] = os.getloadavg()
    return out


def table(result: dict) -> str:
    """Median CPU seconds (epochs + set-up reads) per variant, to 1e-4 / 1e-6."""
    rows = {}
    for r in result["results"]:
        rows.setdefault((r["data"], r["problem"]), {})[(r["variant"], r["target"])] = r
    variants = result["variants"]
    head = "| data | problem | " + " | ".join(
        f"{v}: CPU s (epochs + set-up reads) to 1e-4 / 1e-6" for v in variants) + " |"
    lines = [head, "|" + "---|" * (2 + len(variants))]
    for (data, problem), cells in rows.items():
        parts = []
        for v in variants:
            a, c = cells[(v, 1e-4)], cells[(v, 1e-6)]
            parts.append(f"{a['median_cpu_seconds']:.2f} ({a['median_epochs']:g} + "
                         f"{a['setup_reads']}) / {c['median_cpu_seconds']:.2f} "
                         f"({c['median_epochs']:g} + {c['setup_reads']})")
        lines.append(f"| {data} | {problem} | " + " | ".join(parts) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs="+", default=["after=."],
                        help="NAME=FOLDER: folders holding an ooc_kernels package")
    parser.add_argument("--variants", nargs="+", default=["after=default"],
                        help="TREE=default or TREE=L (local_passes=L)")
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS),
                        choices=list(PROBLEMS))
    parser.add_argument("--data", nargs="+", default=["conditioned"],
                        choices=["conditioned", "raw"])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--table", type=Path, default=None,
                        help="print the Markdown table of a result file and exit")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    run_or_table(args, run, table)


if __name__ == "__main__":
    main()
