"""Fewer reads out of core: DSPDC's certificate with the best duals known, and the local
passes a task runs per read.

An out-of-core epoch reads and decodes every chunk of the store once; its cost is mostly
that read, so a fit's CPU seconds follow its epochs.  Two changes cut the epochs to a
certified relative duality gap:

* the gap of an epoch's start, computed by the next epoch's tasks on the rows they read,
  takes the larger dual value of the start's duals and of the duals at the end of that next
  epoch (both bound ``P*`` from below; ``DSPDCState.best_dual_value``);
* ``local_passes = L``: a task runs ``L n_k / m`` iterations on the rows it read (``L``
  passes over its duals) before the round aggregates.

Variants, interleaved in one process (``before``, ``L=1``, ``L=2`` ... per repeat):
``before`` is the gap with the start's own duals and ``L = 1``; ``L=k`` the gap with the best
duals and ``local_passes = k``.  Problems: the peer table's stores
(``benchmarks/dspdc_peers.py``: ``--n`` rows x ``--p`` columns, chunks of ``--chunk-size``
rows, conditioned or raw columns, ``alpha = 1e-4``): ridge, elastic net (``l1_ratio = 0.5``),
logistic regression and the smoothed hinge; ``--raw-table`` adds the 261,000 x 28 raw table of
``benchmarks/dspdc_raw.py`` written to a store (logistic and ridge).  Every fit runs out of
core from the store at the estimator's defaults otherwise (default scheduler, so the read
ahead runs), with ``tol`` set to each target; medians of ``--repeats`` of the process's CPU
seconds (``time.process_time``: every thread, the read ahead included; one BLAS and numba
thread) and the epochs run (reads of the store by the rounds, the certifying one included;
the set-up's two statistics passes come on top).

    python benchmarks/dspdc_reads.py --repeats 3 --raw-table \\
        --out benchmarks/results/dspdc_reads.json
    python benchmarks/dspdc_reads.py --table benchmarks/results/dspdc_reads.json
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # a script: one thread everywhere (not when imported)
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                 "NUMBA_NUM_THREADS"):
        os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from _results import run_or_table  # noqa: E402

TARGETS = (1e-4, 1e-6)
#: name: (task, estimator parameters)
PROBLEMS = {"ridge": ("regression", {}),
            "elastic_net": ("regression", {"l1_ratio": 0.5}),
            "logistic": ("classification", {}),
            "smoothed_hinge": ("classification", {"loss": "smoothed_hinge"})}


@contextmanager
def own_duals_gap():
    """The gap of an epoch's start with that start's own duals only (the rule before the
    best duals were used)."""
    from ooc_kernels.families.dspdc.solver import DSPDCState

    saved = DSPDCState.best_dual_value
    DSPDCState.best_dual_value = lambda self, config, V=None, later=None: \
        self.dual_value(config, V)
    try:
        yield
    finally:
        DSPDCState.best_dual_value = saved


def one_fit(ds, task: str, params: dict, target: float, variant: str) -> dict:
    """One fit out of core from ``ds`` to ``tol=target`` under ``variant``."""
    import ooc_kernels as ok
    from contextlib import nullcontext

    Est = ok.DSPDCRegressor if task == "regression" else ok.DSPDCClassifier
    local = 1.0 if variant == "before" else float(variant.split("=")[1])
    est = Est(tol=target, local_passes=local, random_state=0, progress=False, **params)
    with own_duals_gap() if variant == "before" else nullcontext():
        start = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")              # a fit that stops at max_iter
            est.fit(ds)
        cpu = time.process_time() - start
    last = est.gap_history_[-1]
    return {"cpu_seconds": cpu, "epochs": int(est.n_iter_),
            "relative_gap": float(last["relative_gap"]), "stop_reason": est.stop_reason_,
            "last_step_boost": float(last["step_boost"])}


def raw_table_stores(folder: Path, n: int) -> dict:
    """The raw table of ``benchmarks/dspdc_raw.py`` (``n`` rows) as two float32 stores of
    10,000-row chunks: ``{"classification": path, "regression": path}``."""
    from dspdc_raw import raw_table

    from ooc_kernels.data.declarations import make_attrs
    from ooc_kernels.data.zarr_io import write_chunks

    X, yc, yv = raw_table(n, seed=0)
    out = {}
    for task, target, dtype in (("classification", yc, np.int32),
                                ("regression", yv, np.float32)):
        path = folder / f"raw_table_{task}.zarr"

        def chunks(target=target, dtype=dtype):
            for lo in range(0, n, 10_000):
                yield {"X": X[lo:lo + 10_000].astype(np.float32),
                       "y": target[lo:lo + 10_000].astype(dtype)}

        kw = {"classes": [0, 1]} if task == "classification" else {}
        write_chunks(path, chunks(), n_samples=n, chunk_size=10_000,
                     attrs=make_attrs(task, generator="dspdc_raw", **kw),
                     sizes={"feature": X.shape[1]},
                     dtypes={"y": "int32"} if task == "classification" else None,
                     progress=False)
        out[task] = path
    return out


def run(args) -> dict:
    import xarray as xr

    sys.path.insert(0, str(Path(__file__).parent))
    from dspdc_peers import write_store

    folder = Path(tempfile.mkdtemp(prefix="dspdc-reads-"))
    variants = ["before"] + [f"L={L:g}" for L in args.local_passes]
    out = {"n": args.n, "p": args.p, "chunk_size": args.chunk_size, "repeats": args.repeats,
           "variants": variants, "load_start": os.getloadavg(), "results": []}
    cases = []
    for kind in args.data:
        stores = {t: write_store(folder / f"{kind}_{t}.zarr", args.n, args.p,
                                 args.chunk_size, t, s, kind)
                  for t, s in (("regression", 1), ("classification", 2))}
        cases += [(kind, name, stores[PROBLEMS[name][0]]) for name in args.problems]
    if args.raw_table:
        stores = raw_table_stores(folder, args.raw_table_n)
        cases += [("raw table", name, stores[PROBLEMS[name][0]])
                  for name in ("logistic", "ridge")]
    first = xr.open_zarr(cases[0][2])
    for v in variants:                                   # compile, warm the caches
        one_fit(first, PROBLEMS[cases[0][1]][0], PROBLEMS[cases[0][1]][1], 1e-2, v)
    for kind, name, store in cases:
        ds = xr.open_zarr(store)
        task, params = PROBLEMS[name]
        for target in TARGETS:
            runs = {v: [] for v in variants}
            for _ in range(args.repeats):
                for v in variants:                       # interleaved
                    r = one_fit(ds, task, params, target, v)
                    runs[v].append(r)
                    print(json.dumps({"data": kind, "problem": name, "target": target,
                                      "variant": v, **r}), flush=True)
            for v, rs in runs.items():
                out["results"].append({
                    "data": kind, "problem": name, "target": target, "variant": v,
                    "median_cpu_seconds": float(np.median([r["cpu_seconds"] for r in rs])),
                    "median_epochs": float(np.median([r["epochs"] for r in rs])),
                    "runs": rs})
    out["load_end"] = os.getloadavg()
    return out


def table(result: dict) -> str:
    """The Markdown table of a result: median CPU seconds (epochs) per variant."""
    rows = {}
    for r in result["results"]:
        rows.setdefault((r["data"], r["problem"]), {})[(r["variant"], r["target"])] = r
    variants = result["variants"]
    head = "| data | problem | " + " | ".join(f"{v}: CPU s (epochs) to 1e-4 / 1e-6"
                                             for v in variants) + " |"
    lines = [head, "|" + "---|" * (2 + len(variants))]
    for (data, problem), cells in rows.items():
        parts = []
        for v in variants:
            a, c = cells[(v, 1e-4)], cells[(v, 1e-6)]
            parts.append(f"{a['median_cpu_seconds']:.2f} ({a['median_epochs']:g}) / "
                         f"{c['median_cpu_seconds']:.2f} ({c['median_epochs']:g})")
        lines.append(f"| {data} | {problem} | " + " | ".join(parts) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--local-passes", type=float, nargs="+", default=[1.0, 2.0, 3.0, 4.0])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS),
                        choices=list(PROBLEMS))
    parser.add_argument("--data", nargs="+", default=["conditioned", "raw"],
                        choices=["conditioned", "raw"])
    parser.add_argument("--raw-table", action="store_true",
                        help="add the raw table of benchmarks/dspdc_raw.py as stores")
    parser.add_argument("--raw-table-n", type=int, default=261_000)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--table", type=Path, default=None,
                        help="print the Markdown table of a result file and exit")
    args = parser.parse_args(argv)
    run_or_table(args, run, table)


if __name__ == "__main__":
    main()
