"""The adaptive weight of ``K > 1`` DSG rounds with a contraction floor ``rho``: rows to
reach the ``K = 1`` fit's value after ``--target-epochs`` epochs, for several ``rho`` in one
process (the same data, the same ``K = 1`` reference; ``rho = 0`` is the library's rule).

``w = min(1, max(1/K, (1 + max(|e|, rho)) / (K (1 - e))))`` lets a round leave a residual
factor up to ``rho`` on the quadratic model's top direction, so that the slow directions
get ``(1 + rho)`` times averaging's progress while a task's own steps remove the top
direction (``docs/algorithms/dsg_rounds.md``, "A contraction floor").  The problems, their
settings and the crossing are those of ``benchmarks/scaling.py``.

Usage::

    python benchmarks/scaling_contraction.py --problem nonlinear_binary --ks 4 8 2 \\
        --out benchmarks/results/scaling_contraction_binary20k.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

from ooc_kernels.exceptions import StepSizeWarning


def main(argv=None) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import scaling  # the problems, the traced fits and the crossings

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problem", choices=list(scaling.PROBLEMS), required=True)
    ap.add_argument("--ks", nargs="+", type=int, default=[2, 4, 8])
    ap.add_argument("--contractions", nargs="+", type=float, default=[0.0, 0.5, 0.75])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--max-epochs", type=int, default=8)
    ap.add_argument("--target-epochs", type=int, default=2)
    ap.add_argument("--bandwidth", default="auto")
    ap.add_argument("--krr-n", type=int, default=4000)
    ap.add_argument("--digits-n", type=int, default=10000)
    ap.add_argument("--digits-test", type=int, default=2000)
    ap.add_argument("--binary-n", type=int, default=20000)
    ap.add_argument("--binary-test", type=int, default=2000)
    ap.add_argument("--binary-d", type=int, default=None)
    ap.add_argument("--binary-loss", default="logistic", choices=("logistic", "hinge"))
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    if args.bandwidth not in ("auto", "median"):
        args.bandwidth = float(args.bandwidth)
    res = {"command": "python benchmarks/scaling_contraction.py " + " ".join(
        sys.argv[1:] if argv is None else argv), "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            data, metric, cls, params, higher = scaling.PROBLEMS[args.problem](
                args, seed, Path(tmp))
            n = int(data.sizes["sample"])

            def fit(k, rho, epochs):
                est = scaling._estimator(cls, "adaptive", rho, chunks_per_round=k,
                                         max_iter=epochs, **params)
                c0 = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", StepSizeWarning)
                    trace = scaling._trace_fit(est, data, metric)
                return trace, time.process_time() - c0

            one, cpu = fit(1, 0.0, args.target_epochs)
            target = scaling._value_at_rows(one, args.target_epochs * n)
            rows1 = scaling._rows_to_reach(one, target, higher_is_better=higher)
            print(f"{args.problem} seed {seed} K=1 target {target:.6g} rows {rows1:.0f} "
                  f"cpu {cpu:.0f}", flush=True)
            for k in args.ks:
                for rho in args.contractions:
                    trace, cpu = fit(k, rho, args.max_epochs)
                    rows = scaling._rows_to_reach(trace, target, higher_is_better=higher)
                    ratio = None if rows is None else rows / rows1
                    print(f"  K={k} contraction {rho}: ratio "
                          f"{None if ratio is None else round(ratio, 2)}, final "
                          f"{trace[-1][1]:.6g}, cpu {cpu:.0f}", flush=True)
                    res["runs"].append(dict(seed=seed, k=k, contraction=rho, rows=rows,
                                            rows1=rows1, target=target, ratio=ratio,
                                            final=trace[-1][1], cpu_s=cpu, trace=trace))
                    if args.out:
                        args.out.parent.mkdir(parents=True, exist_ok=True)
                        args.out.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
