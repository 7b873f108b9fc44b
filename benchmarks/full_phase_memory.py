"""Peak memory and speed of one DSG task in the full phase: stacked blocks against the tiled
full phase under a feature budget.

Each measurement runs in a fresh process: it builds a model with ``n_features`` random
features already open (every step is a full-phase step), loads the numba kernels on a tiny
problem, resets the process's peak-RSS mark (``/proc/self/clear_refs``), then runs
``DSGAlgorithm.chunk_step`` on one chunk twice: once with a cold feature cache (the first
task of a worker) and once warm (a later task).  It reports the peak RSS above the
baseline and the seconds per row of both calls.

* ``before``: the stacked full phase: ``stacked_block_params`` over every block (served
  from the process-wide cache, 256 MiB by default) and ``dsg_full_update``.
* ``after``: ``full_phase_update`` with the default feature budget (256 MiB shared by the
  cache and the task): stacked blocks when they fit twice in it, tiles otherwise.

Both use today's block generator (``BlockWriter``, bit-identical to the old one and faster),
so the difference is the full phase alone.

Usage::

    python benchmarks/full_phase_memory.py --out benchmarks/results/full_phase_memory.json
    python benchmarks/full_phase_memory.py --n-features 16384 65536 --repeats 1   # quick
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _procmem import status_bytes


def _config(n_features, d, r, b, dtype):
    from ooc_kernels.families.dsg.solver import DSGConfig

    return DSGConfig(loss_id=0, target="regression", n_outputs=1, n_features_in=d,
                     block_size=r, n_blocks=n_features // r, bandwidth=float(np.sqrt(d)),
                     feature_seed=1, alpha=1e-4, batch_size=b, learning_rate="inverse",
                     eta0=1.0, t0=1.0, dtype=dtype, shuffle=False)


def _run_task(cfg, X, y, epoch):
    from ooc_kernels.families.dsg.solver import DSGAlgorithm, DSGTask, init_state

    state = init_state(cfg)
    task = DSGTask(chunk=0, epoch=epoch, round=0, seed=1, block_start=cfg.n_blocks,
                   t_start=10**6)  # every block open: the whole chunk is full phase
    return DSGAlgorithm(cfg).chunk_step(state, {"X": X, "y": y}, task)


def _old_full_phase(X, Y, sw, coef, avg, n_avg, steps, params, source):
    """The stacked full phase (every block's parameters in one array, dsg_full_update)."""
    from ooc_kernels.families.dsg.kernels_full import dsg_full_update
    from ooc_kernels.features.blocks import stacked_block_params

    w = source.writer
    W, phase = stacked_block_params(w.seed, np.arange(coef.shape[0]), w.d, w.r, w.bandwidth,
                                    w.dtype, cache=source.cache, affine=w.affine)
    return dsg_full_update(X, Y, sw, W, phase, coef, avg, n_avg, steps, params)


def worker(args) -> dict:
    import ooc_kernels.families.dsg.solver as dsg_mod
    from ooc_kernels.features.cache import default_cache, set_cache_budget
    from ooc_kernels.families.dsg._full_phase import plan_full_phase

    if args.path == "before":
        dsg_mod.full_phase_update = _old_full_phase
    d, r, b = args.d, args.block_size, args.batch_size
    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.n_rows, d)).astype(args.dtype)
    y = rng.normal(size=args.n_rows)
    # load the kernels on a tiny problem: stacked, then tiled (a budget of one block)
    tiny = _config(4 * r, d, r, b, args.dtype)
    budget = default_cache().max_bytes
    _run_task(tiny, X[:3 * b], y[:3 * b], 0)
    set_cache_budget((d + 1) * r * np.dtype(args.dtype).itemsize * 3)
    _run_task(tiny, X[:3 * b], y[:3 * b], 0)
    set_cache_budget(budget)
    default_cache().clear()
    cfg = _config(args.n_features, d, r, b, args.dtype)
    plan = plan_full_phase(budget, cfg.n_blocks, d, r, 1, b, args.n_rows,
                           np.dtype(args.dtype).itemsize)
    try:
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to VmRSS
        reset = True
    except OSError:
        reset = False
    base = status_bytes("VmRSS")
    times = []
    for epoch in range(2):
        t0 = time.perf_counter()
        _run_task(cfg, X, y, epoch)
        times.append(time.perf_counter() - t0)
    peak = status_bytes("VmHWM")
    return {"path": args.path, "n_features": args.n_features, "d": d, "block_size": r,
            "batch_size": b, "n_rows": args.n_rows, "dtype": args.dtype,
            "budget_bytes": budget, "hwm_reset": reset,
            "plan": None if args.path == "before" else {
                "stacked": plan.stacked, "rows": plan.rows, "tile_blocks": plan.tile_blocks,
                "cached_blocks": plan.cached_blocks, "work_bytes": plan.work_bytes},
            "baseline_rss": base, "peak_rss": peak, "peak_above_baseline": peak - base,
            "cold_s_per_row": times[0] / args.n_rows, "warm_s_per_row": times[1] / args.n_rows,
            "cache_nbytes_after": default_cache().nbytes}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-features", type=int, nargs="+", default=[2**14, 2**16, 2**18, 2**20])
    p.add_argument("--d", type=int, default=276)
    p.add_argument("--block-size", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--n-rows", type=int, default=1024)
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument("--paths", nargs="+", default=["before", "after"],
                   choices=["before", "after"])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--path", default="after", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        args.n_features = args.n_features[0]
        print(json.dumps(worker(args)))
        return
    rows = []
    for nf in args.n_features:
        for path in args.paths:
            runs = []
            for _ in range(args.repeats):
                cmd = [sys.executable, __file__, "--worker", "--path", path,
                       "--n-features", str(nf), "--d", str(args.d),
                       "--block-size", str(args.block_size),
                       "--batch-size", str(args.batch_size), "--n-rows", str(args.n_rows),
                       "--dtype", args.dtype]
                env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
                out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
                runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
            row = dict(runs[0])
            for key in ("baseline_rss", "peak_rss", "peak_above_baseline", "cold_s_per_row",
                        "warm_s_per_row"):
                row[key] = statistics.median(run[key] for run in runs)
                row[key + "_runs"] = [run[key] for run in runs]
            rows.append(row)
            print(f"n_features={nf:>8} {path:>6}: peak +{row['peak_above_baseline'] / 2**20:7.1f}"
                  f" MiB, cold {row['cold_s_per_row'] * 1e3:8.3f} ms/row, warm "
                  f"{row['warm_s_per_row'] * 1e3:8.3f} ms/row  plan={row['plan']}", flush=True)
    result = {"benchmark": "full_phase_memory", "argv": sys.argv[1:],
              "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                          "loadavg_end": os.getloadavg()},
              "rows": rows}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
