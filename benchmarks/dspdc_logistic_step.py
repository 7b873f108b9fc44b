"""The logistic dual step of DSPDC in memory: ``exp`` and ``log`` calls and iterations per step.

A default in-memory fit of the peer table's logistic problem (``benchmarks/dspdc_peers.py``:
50,000 x 50 conditioned rows, ``alpha = 1e-4``) to each ``--tols`` target, with every call of
the in-memory kernel (``kernels_memory.visits_once``) first replayed on a copy of its state by
an instrumented copy of the library's logistic solve (its source, with counters at each
``exp``, ``log`` and iteration; where the solve starts from a ``t`` kept per row, the replay
keeps one as the in-memory task does), so the counts are those of the dual steps the fit
takes; ``exp_per_step_by_call`` gives them per call of the kernel (one epoch's block of
uniforms).  The library is the one on ``sys.path``: ``PYTHONPATH=<tree>`` measures another
version (a ``git archive`` of a commit; the solve is ``_logistic_solve``, or
``_logistic_dual_prox`` in versions without it).  The counts do not depend on the machine or
its load.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python benchmarks/dspdc_logistic_step.py --seeds 0 1 2 \\
        --out benchmarks/results/dspdc_logistic_step_counts.json
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def counted_solve():
    """The library's logistic solve with counters: ``st[0]`` steps, ``st[1]`` ``log``
    calls, ``st[2]`` ``exp`` calls (one per sigmoid), ``st[3]`` iterations."""
    from numba import njit

    import ooc_kernels._jit.losses as L

    name = "_logistic_solve" if hasattr(L, "_logistic_solve") else "_logistic_dual_prox"
    src = textwrap.dedent(inspect.getsource(getattr(L, name).py_func)).split("\n", 1)[1]
    header = src.split("\n", 1)[0]              # (c, y, b, sigma, n), and t0 where kept
    kept = "t0" in header
    src = src.replace(header, "def counted(c, y, b, sigma, n, t0, st):\n    st[0] += 1")
    src = src.replace("math.log(", "_log(st, ").replace("_sigmoid(", "_sig(st, ")
    src = src.replace("    for _ in range(NEWTON_MAX_ITER):\n",
                      "    for _ in range(NEWTON_MAX_ITER):\n        st[3] += 1\n")

    @njit
    def _log(st, x):
        st[1] += 1
        return math.log(x)

    @njit
    def _sig(st, z):
        st[2] += 1
        return L._sigmoid(z)

    namespace = dict(math=math, np=np, _log=_log, _sig=_sig,
                     **{k: getattr(L, k) for k in ("NEWTON_MAX_ITER", "NEWTON_RTOL", "W_HIGH",
                                                   "W_LOW", "HOUSEHOLDER_BELOW")
                        if hasattr(L, k)})     # the constants of the tree's version
    exec(src, namespace)    # noqa: S102 - the library's own source, instrumented
    return njit(namespace["counted"]), kept


def replay(counted):
    """A numba function that runs a ``visits_once`` call's iterations on copies of its state
    with the counted solve (the same operations as the kernel for ``m = 1``, ``q = p``),
    keeping each row's ``t`` in ``tdual`` (read by a solve that takes it)."""
    from numba import njit

    from ooc_kernels._jit.losses import W_HIGH, W_LOW
    from ooc_kernels.families.dspdc.kernels import _one_row

    @njit
    def run(A, b, y, x, xbar, z, n_total, row_uniforms, theta, tau, sigma, lam1, lam2, shift,
            row_map, tdual, st):
        p = A.shape[1]
        n_rows = row_map.shape[0]
        nt = np.float64(n_total)
        ext = np.float64(n_rows)
        theta1 = theta + 1.0
        thr = tau * lam1
        den = 1.0 + tau * lam2
        for t in range(row_uniforms.shape[0]):
            i = row_map[_one_row(row_uniforms[t, 0], n_rows)]
            c = 0.0
            for j in range(p):
                c += A[i, j] * xbar[j]
            out = counted(c, y[i], b[i], sigma, nt, tdual[i], st)
            if isinstance(out, tuple):
                y_new = b[i] * out[0]
                tdual[i] = out[1] if -W_HIGH < out[0] < -W_LOW else np.nan
            else:
                y_new = out
            d = y_new - y[i]
            y[i] = y_new
            for j in range(p):
                a = A[i, j]
                zj = z[j]
                xold = x[j]
                vj = xold - tau * (zj + ext * (a * d)) / nt
                if shift is not None:
                    vj += tau * shift[j]
                v = vj - thr if vj > thr else (vj + thr if vj < -thr else 0.0)
                xj = v / den
                x[j] = xj
                xbar[j] = xold + theta1 * (xj - xold)
                z[j] = zj + a * d

    return run


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--tols", type=float, nargs="+", default=[1e-4, 1e-6])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    import dspdc_peers as peers

    import ooc_kernels as ok
    import ooc_kernels.families.dspdc.kernels_memory as km

    counted, kept = counted_solve()
    run = replay(counted)
    stats = np.zeros(4, dtype=np.int64)
    real = km.visits_once
    tdual = np.full(args.n, np.nan)          # each row's t, where the library keeps it
    calls: list = []                         # the counts of each call (a task's block)

    def visits_once(A, b, y, x, xbar, z, n_total, row_uniforms, theta, tau, sigma, loss_id,
                    lam1, lam2, shift, weights, row_map, *rest):
        if weights is not None:
            raise ValueError("the replay covers unweighted rows only")
        if not kept:
            tdual[:] = np.nan
        before = stats.copy()
        run(A, b, y.copy(), x.copy(), xbar.copy(), z.copy(), n_total, row_uniforms, theta,
            tau, sigma, lam1, lam2, shift, row_map, tdual, stats)
        calls.append([int(v) for v in stats - before])
        return real(A, b, y, x, xbar, z, n_total, row_uniforms, theta, tau, sigma, loss_id,
                    lam1, lam2, shift, weights, row_map, *rest)

    km.visits_once = visits_once      # the in-memory task imports it when a task runs
    store = peers.write_store(Path(tempfile.mkdtemp(prefix="dspdc-logistic-step-")) / "c.zarr",
                              args.n, args.p, args.chunk_size, "classification", 2)
    _, X, y = peers.load(store)
    import ooc_kernels._jit.losses as L

    rows = []
    for tol in args.tols:
        for seed in args.seeds:
            stats[:] = 0
            tdual[:] = np.nan
            calls.clear()
            est = ok.DSPDCClassifier(random_state=seed, progress=False, tol=tol).fit(X, y)
            steps = int(stats[0])
            row = {"tol": tol, "seed": seed, "epochs": int(est.n_iter_), "dual_steps": steps,
                   "exp_per_step": stats[2] / steps, "log_per_step": stats[1] / steps,
                   "iterations_per_step": stats[3] / steps,
                   "exp_per_step_by_call": [c[2] / max(c[0], 1) for c in calls]}
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"library": L.__file__, "args": {
            k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
