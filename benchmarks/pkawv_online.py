"""Online average loss against samples and against time on the stand-ins of the paper's
casp, ijcnn1 and cod-rna (its Figures 2 and 4), sigma = 1, lambda = 1.

Learners, each fed the stand-in's rows in order, ``--chunk`` rows per ``partial_fit``, until
the rows end or ``--budget`` seconds pass (the paper's timeout is 5 minutes):

* online kernel ridge regression, exact (``OnlineKernelRidge(basis="exact", mode="krr")``,
  ``O(t^2)`` a row, at most 4,096 rows: "where it fits");
* PKAWV-Taylor ``M`` in {2, 3, 4} in the KRR mode (the paper's Projected-KRR on i.i.d.
  data); a degree whose basis has more than ``--max-features`` features is not run (the
  ``r x r`` state and ``O(r^2)`` a row: ``d = 22`` and ``M = 4`` is 14,950 features, a
  1.8 GB state);
* PKAWV-Nystrom with the KORS dictionary, ``mu = beta = 1``, ``epsilon = 0.5``;
* FOGD, 1000 random Fourier features, ``eta = 1 / sqrt(n)``.

``--bandwidth auto`` gives the ``OnlineKernelRidge`` learners ``bandwidth="auto"`` (the
width from the data, their default) instead of the paper's sigma; FOGD keeps sigma.

Average loss: the running mean of the square loss (casp) or of the classification error of
``sign(y_hat)`` (ijcnn1, cod-rna).  Results: ``results/pkawv_online.json``; figure:
``../docs/img/pkawv_online.svg``.

    python pkawv_online.py --budget 60
    python pkawv_online.py --datasets casp --n 20000 --budget 20
    python pkawv_online.py --datasets casp --n 4000 --budget 8 --bandwidth auto
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pkawv_common import FOGD, STAND_INS, load, okr_step, online_curve

import ooc_kernels as ok
from ooc_kernels.families.pkawv.taylor import n_components

HERE = Path(__file__).resolve().parent


def learners(spec, n, max_features, width=None):
    sigma = spec.bandwidth if width is None else width
    out = {"KRR (exact)": (lambda: okr_step(ok.OnlineKernelRidge(
        basis="exact", bandwidth=sigma, alpha=1.0, mode="krr", scheduler="sync",
        progress=False)), 4096)}
    for m in (2, 3, 4):
        r = n_components(spec.d, m)
        if r > max_features:
            continue
        out[f"PKAWV-Taylor M={m} ({r})"] = (lambda m=m, r=r: okr_step(ok.OnlineKernelRidge(
            basis="taylor", degree=m, n_components=r, bandwidth=sigma, alpha=1.0,
            mode="krr", scheduler="sync", progress=False)), n)
    out["PKAWV-Nystrom (KORS)"] = (lambda: okr_step(ok.OnlineKernelRidge(
        basis="nystrom", bandwidth=sigma, alpha=1.0, mu=1.0, beta=1.0, epsilon=0.5,
        mode="krr", random_state=0, scheduler="sync", progress=False)), min(n, 200_000))
    out["FOGD (1000)"] = (lambda: FOGD(spec.d, spec.bandwidth, n).partial_fit, n)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["casp", "ijcnn1", "cod-rna"])
    parser.add_argument("--n", type=int, default=None, help="rows (default: the paper's)")
    parser.add_argument("--budget", type=float, default=60.0)
    parser.add_argument("--chunk", type=int, default=2000)
    parser.add_argument("--max-features", type=int, default=3000)
    parser.add_argument("--bandwidth", choices=["paper", "auto"], default="paper",
                        help="the OnlineKernelRidge learners' width: the paper's sigma, "
                             "or bandwidth='auto'")
    parser.add_argument("--out", default=str(HERE / "results" / "pkawv_online.json"))
    parser.add_argument("--figure", default=str(HERE.parent / "docs" / "img" /
                                                "pkawv_online.svg"))
    args = parser.parse_args(argv)
    res = {"budget": args.budget, "chunk": args.chunk, "datasets": {}}
    for name in args.datasets:
        spec = STAND_INS[name]
        n = args.n or spec.n
        X, y = load(spec, n)
        curves = {}
        width = "auto" if args.bandwidth == "auto" else None
        for label, (make, rows) in learners(spec, n, args.max_features, width).items():
            curves[label] = online_curve(spec, make(), X[:rows], y[:rows],
                                         chunk=min(args.chunk, rows), budget=args.budget)
            last = curves[label][-1]
            print(f"{name:8s} {label:28s} rows {last[0]:7d}  {last[1]:7.1f} s  "
                  f"average loss {last[2]:.4f}", flush=True)
        res["datasets"][name] = {"n": n, "d": spec.d, "task": spec.task,
                                 "sigma": spec.bandwidth, "curves": curves}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1))
    plot(res, args.figure)


def plot(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(res["datasets"])
    fig, axes = plt.subplots(len(names), 2, figsize=(9, 3 * len(names)), squeeze=False)
    for row, name in zip(axes, names):
        entry = res["datasets"][name]
        for label, curve in entry["curves"].items():
            rows = [c[0] for c in curve]
            row[0].plot(rows, [c[2] for c in curve], label=label)
            row[1].plot([c[1] for c in curve], [c[2] for c in curve], label=label)
        what = "square loss" if entry["task"] == "regression" else "classification error"
        for ax, xlabel in zip(row, ("rows seen", "seconds")):
            ax.set_xscale("log")
            ax.set_xlabel(xlabel)
            ax.set_ylabel(f"average {what}")
            ax.set_title(f"{name} stand-in (n={entry['n']:,}, d={entry['d']})", fontsize=9)
        row[0].legend(fontsize=6)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)


if __name__ == "__main__":
    main()
