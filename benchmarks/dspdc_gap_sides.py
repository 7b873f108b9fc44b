"""Which side of DSPDC's duality gap is slow: ``P(x) - P*`` against ``D* - D(y)`` per epoch.

Fits the peer table's problems (``benchmarks/dspdc_peers.py``: ``--n`` rows x ``--p``
columns in Zarr stores of ``--chunk-size`` rows, conditioned or raw columns, ``alpha =
1e-4``; ridge, elastic net with ``l1_ratio = 0.5``, logistic regression) out of core at the
defaults with ``tol=None`` for ``--epochs`` epochs, and reports from ``gap_history_`` (of a fit
whose gaps use each epoch's own duals: the same iterates, checked) the relative primal and
dual errors of every epoch, with ``P*`` taken as the midpoint of the last
primal and dual values (their gap is below ``1e-9`` relative after 26 epochs), and the epochs
whose gap reaches ``1e-4`` and ``1e-6`` with the epoch's own duals and with the better of
those and the next epoch's (the certificate the estimators use).

    python benchmarks/dspdc_gap_sides.py --out benchmarks/results/dspdc_gap_sides.json
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
import warnings  # noqa: E402
from contextlib import nullcontext  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

PROBLEMS = {"ridge": ("regression", {}), "elastic_net": ("regression", {"l1_ratio": 0.5}),
            "logistic": ("classification", {})}


def sides(history) -> dict:
    """Relative primal and dual errors per epoch, and the epochs (1-based iterates) whose
    gap reaches each level with the epoch's own duals and with the better of the epoch's and
    the next epoch's."""
    P = np.array([e["primal"] for e in history])
    D = np.array([e["dual"] for e in history])
    p_star = 0.5 * (P[-1] + D[-1])
    out = {"primal_error": ((P - p_star) / abs(p_star)).tolist(),
           "dual_error": ((p_star - D) / abs(p_star)).tolist()}
    for level in (1e-4, 1e-6):
        own = next((k + 1 for k in range(len(P)) if (P[k] - D[k]) / abs(P[k]) <= level), None)
        best = next((k + 1 for k in range(len(P) - 1)
                     if (P[k] - max(D[k], D[k + 1])) / abs(P[k]) <= level), None)
        out[f"iterate_to_{level:g}"] = {"own_duals": own, "better_duals": best}
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--epochs", type=int, default=26)
    parser.add_argument("--data", nargs="+", default=["conditioned", "raw"],
                        choices=["conditioned", "raw"])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)

    import xarray as xr

    import ooc_kernels as ok

    sys.path.insert(0, str(Path(__file__).parent))
    from dspdc_peers import write_store
    from dspdc_reads import own_duals_gap

    folder = Path(tempfile.mkdtemp(prefix="dspdc-gap-sides-"))
    result = {"n": args.n, "p": args.p, "epochs": args.epochs, "results": []}
    for kind in args.data:
        stores = {t: write_store(folder / f"{kind}_{t}.zarr", args.n, args.p,
                                 args.chunk_size, t, s, kind)
                  for t, s in (("regression", 1), ("classification", 2))}
        for name, (task, params) in PROBLEMS.items():
            Est = ok.DSPDCRegressor if task == "regression" else ok.DSPDCClassifier
            fits = {}
            for rule in ("better", "own"):       # the same iterates: no stall in either
                with own_duals_gap() if rule == "own" else nullcontext(), \
                        warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    fits[rule] = Est(tol=None, max_iter=args.epochs, random_state=0,
                                     progress=False, **params).fit(xr.open_zarr(stores[task]))
            history = [dict(e) for e in fits["own"].gap_history_]
            assert [e["primal"] for e in history] == \
                [e["primal"] for e in fits["better"].gap_history_]
            row = {"data": kind, "problem": name, **sides(history)}
            result["results"].append(row)
            ratio = np.array(row["dual_error"][:12]) / np.array(row["primal_error"][:12])
            print(json.dumps({"data": kind, "problem": name,
                              "dual_over_primal_error_epochs_1_12": np.round(ratio, 1).tolist(),
                              **{k: v for k, v in row.items() if k.startswith("iterate")}}),
                  flush=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
