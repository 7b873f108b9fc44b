"""Rows per second of one DSG chunk task on one thread, against the machine's limits.

Run from the repository root::

    python benchmarks/throughput_per_core.py --repeats 3 \\
        --json benchmarks/results/throughput_per_core.json

For every input dimension ``d`` in ``--dims`` and model size ``D`` in ``--features``
(blocks of 256 features, batches of 256 rows, logistic loss, float32, one output), the
full-phase step kernel ``dsg_full_update`` (the kernel of almost every step of a fit) runs
over ``--rows`` rows on one thread (sequential kernel, BLAS limited to one thread) and its
thread CPU seconds (``time.thread_time``) give the rows per second.  In the same process:

* the float32 GEMM rate of one thread (a 2048 x 2048 x 2048 product), and the rate of the
  step's own product shape (256 rows x ``d`` x 256 features);
* the cosine rate of one thread: cosines per second of the kernel's float32 polynomial
  cosine (``cos_affine_inplace``: ``scale cos(z + phase)`` in place) and of ``np.cos``.

A row's work in the full phase is ``2 d D + 4 D`` FLOPs (its features ``x W``, its
prediction and its gradient's ``Z^T G``) and ``D`` cosines; the limit of a row is
``max(FLOPs / GEMM rate, D / cosine rate of the kernel)``, and the fraction reached is that
limit over the measured time per row.  The features of one batch for all blocks are kept
between the prediction and the gradient when they fit in 64 MiB, else recomputed: the
``kept`` column says which (a recomputing step does the feature GEMM and the cosines twice,
and its fraction counts them once).

CPU seconds of one thread are what the table compares, so that a loaded machine slows the
measurements without changing their ratios much; medians of ``--repeats`` runs, every
measurement interleaved in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

if __name__ == "__main__":  # a script: one thread everywhere (not when imported)
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                 "NUMBA_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from ooc_kernels._blas import single_threaded_blas  # noqa: E402
from ooc_kernels._jit.rff import cos_affine_inplace  # noqa: E402
from ooc_kernels.families.dsg.kernels_full import (_FULL_BUFFER_BYTES,  # noqa: E402
                                                   dsg_full_update)
from ooc_kernels.features.blocks import stacked_block_params  # noqa: E402
from ooc_kernels.features.rbf import feature_scale  # noqa: E402

BLOCK = 256
BATCH = 256
LOGISTIC = 2


def cpu_median(fn, repeats: int) -> float:
    """Median thread CPU seconds of ``fn()`` over ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        t = time.thread_time()
        fn()
        times.append(time.thread_time() - t)
    return statistics.median(times)


def gemm_rate(repeats: int, shape=(2048, 2048, 2048)) -> float:
    """float32 FLOP/s of one thread for an ``(n, k) @ (k, p)`` product."""
    n, k, p = shape
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, k), dtype=np.float32)
    b = rng.standard_normal((k, p), dtype=np.float32)
    out = np.empty((n, p), np.float32)
    inner = max(1, int(2e9 // (2 * n * k * p)))  # about 2 GFLOP per timed call

    def run():
        for _ in range(inner):
            np.dot(a, b, out)

    run()
    return 2.0 * n * k * p * inner / cpu_median(run, max(repeats, 3))


def cosine_rates(repeats: int) -> tuple[float, float]:
    """Cosines per second of one thread: the kernel's float32 polynomial cosine and
    ``np.cos`` on float32, on blocks of 4,096 x 256."""
    rng = np.random.default_rng(1)
    P = rng.uniform(-20, 20, (4096, BLOCK)).astype(np.float32)
    phase = rng.uniform(0, 2 * np.pi, BLOCK).astype(np.float32)
    out = np.empty_like(P)
    cos_affine_inplace(P, phase, 0.5)  # compile, off the clock (P stays in [-0.5, 0.5])
    inner = 20

    def kernel():
        for _ in range(inner):
            cos_affine_inplace(P, phase, 1.0)

    def numpy():
        for _ in range(inner):
            np.cos(P, out=out)

    return (P.size * inner / cpu_median(kernel, repeats),
            P.size * inner / cpu_median(numpy, repeats))


def step_rows_per_second(d: int, D: int, rows: int, repeats: int) -> dict:
    """Rows per thread-CPU second of ``dsg_full_update`` at input dimension ``d`` and ``D``
    features (``D / 256`` blocks)."""
    rng = np.random.default_rng(d * 100_003 + D)
    m = D // BLOCK
    X = rng.standard_normal((rows, d)).astype(np.float32)
    Y = np.where(rng.random((rows, 1)) < 0.5, -1.0, 1.0).astype(np.float32)
    sw = np.ones(rows)
    W, ph = stacked_block_params(7, np.arange(m), d, BLOCK, float(np.sqrt(d)), np.float32)
    coef = 0.01 * rng.standard_normal((m, BLOCK, 1))
    avg = np.zeros((0, BLOCK, 1))
    n_steps = -(-rows // BATCH)
    steps = (0.5 / np.sqrt(1.0 + np.arange(n_steps)), np.zeros(n_steps, dtype=bool))
    params = (1e-5, BATCH, LOGISTIC, feature_scale(BLOCK), 0.0)

    def run():
        dsg_full_update(X, Y, sw, W, ph, coef, avg, 0, steps, params)

    run()  # compile and warm the caches, off the clock
    t = cpu_median(run, repeats)
    kept = m * min(BATCH, rows) * BLOCK * 4 <= _FULL_BUFFER_BYTES
    return {"d": d, "features": D, "rows": rows, "cpu_s": t, "rows_per_s": rows / t,
            "kept": bool(kept)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dims", type=int, nargs="*", default=[10, 32, 64, 256])
    ap.add_argument("--features", type=int, nargs="*", default=[4096, 16384, 65536])
    ap.add_argument("--rows", type=int, default=4096,
                    help="rows per timed kernel call (16 steps of 256 by default)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    out = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
           "load_before": os.getloadavg(), "repeats": args.repeats, "rows": args.rows,
           "configs": []}
    with single_threaded_blas():
        gemm = gemm_rate(args.repeats)
        cos_kernel, cos_numpy = cosine_rates(args.repeats)
        out.update(gemm_flops=gemm, cos_kernel_per_s=cos_kernel, cos_numpy_per_s=cos_numpy)
        print(f"float32 GEMM, 1 thread: {gemm / 1e9:.1f} GFLOP/s; cosines, 1 thread: kernel "
              f"{cos_kernel / 1e9:.3f} G/s, np.cos {cos_numpy / 1e9:.3f} G/s")
        print("| d | features | kept | rows/s | GEMM-bound rows/s | cosine-bound rows/s "
              "| limit rows/s | fraction of limit | step-shape GEMM GFLOP/s |")
        print("|---|---|---|---|---|---|---|---|---|")
        for d in args.dims:
            shape_gemm = gemm_rate(args.repeats, (BATCH, d, BLOCK))
            for D in args.features:
                res = step_rows_per_second(d, D, args.rows, args.repeats)
                flops = 2.0 * d * D + 4.0 * D
                by_gemm, by_cos = gemm / flops, cos_kernel / D
                limit = min(by_gemm, by_cos)
                res.update(flops_per_row=flops, gemm_bound_rows_per_s=by_gemm,
                           cos_bound_rows_per_s=by_cos, limit_rows_per_s=limit,
                           fraction=res["rows_per_s"] / limit, shape_gemm_flops=shape_gemm)
                out["configs"].append(res)
                print(f"| {d} | {D:,} | {'yes' if res['kept'] else 'no'} | "
                      f"{res['rows_per_s']:,.0f} | {by_gemm:,.0f} | {by_cos:,.0f} | "
                      f"{limit:,.0f} | **{res['fraction']:.2f}** | {shape_gemm / 1e9:.1f} |",
                      flush=True)
    out["load_after"] = os.getloadavg()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
