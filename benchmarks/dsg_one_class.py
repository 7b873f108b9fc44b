"""DSGOneClassSVM against scikit-learn's SGDOneClassSVM on Nystroem features, out of core.

Inliers: a mixture of four Gaussian blobs in ``--d`` dimensions written to a Zarr store
chunk by chunk (float32), larger than the 8 MiB of ``X`` one task may gather
(``SHUFFLE_BYTES``).  Test set: as many fresh inliers as outliers drawn uniformly in the box
``[-6, 6]^d``; the score is the ROC AUC of the decision function.

* DSG: ``DSGOneClassSVM(nu)`` with its defaults, fitted on the store for 1, 2 and 4 epochs
  (``--epochs``, ``tol=None``); the time is the whole ``fit`` (sampling, setup, epochs).
* Peer: ``Nystroem(gamma=1 / (2 sigma^2), n_components)`` fitted on 2000 rows of the first
  chunk, standardized with that chunk's moments (DSG's ``bandwidth="median"`` sigma, so
  both use the same kernel), then ``SGDOneClassSVM(nu).partial_fit`` fed chunk by chunk,
  for as many passes; the time includes reading, transforming and fitting.

``--problem wide`` makes the outliers hard to tell apart: they are drawn around the same
four centres with a standard deviation ``--wide`` times the inliers' (0.7), so even the
exact density ranks them imperfectly and the ROC AUC stays well below 1 at convergence.
``--peers`` then lists the peer settings a user would try, ``components:nu:learning_rate``
(``learning_rate`` is ``optimal``, scikit-learn's default, or ``constant@eta0``), each fitted
for the passes of ``--peer-epochs``; results go to ``..._wide.json`` / ``..._wide.svg``::

    python benchmarks/dsg_one_class.py --problem wide --n 140000 --d 16 --chunk-size 10000 \
        --epochs 1 2 4 --peers 256:0.1:optimal 1024:0.1:optimal 1024:0.1:constant@0.01 \
        --peer-epochs 1 2 --repeats 3

``--clusters 1`` makes the inliers one Gaussian at the origin (outliers: the same Gaussian,
``--wide`` times wider); ``--median-multiplier`` sets DSG's ``median_multiplier`` (the peer
uses the bandwidth DSG derives, so both keep the same kernel).  Either adds a suffix to the
output names (``_k1``, ``_m0.25``)::

    python benchmarks/dsg_one_class.py --problem wide --n 140000 --d 16 --chunk-size 10000 \
        --epochs 1 --median-multiplier 0.25 --peers 256:0.1:optimal 1024:0.1:optimal \
        --peer-epochs 1 --repeats 3

Equal time, both ways (``--problem wide``): ``--dsg-settings`` lists DSG settings
(keyword arguments written as Python; ``""`` the defaults, ``"tol=1e-3, max_iter=1000"``
the default stopping rule instead of ``--epochs`` passes), and ``--peer-epochs`` takes
fractions (0.5: a pass over half the chunks, chosen at random), so that smaller and shorter
peers can be given DSG's time and larger DSG models the peer's.  Every method runs once per
seed in turn (a change of the machine's load between seeds reaches all of them alike), and
the CPU seconds of the process (all its threads) are reported next to the wall clock::

    python benchmarks/dsg_one_class.py --problem wide --n 140000 --d 16 --chunk-size 10000 \
        --epochs 1 --dsg-settings "" "n_features=2048" "n_features=8192" \
        "tol=1e-3, max_iter=1000" --peers 64:0.1:optimal 128:0.1:optimal 256:0.1:optimal \
        --peer-epochs 0.5 1 --repeats 3 \
        --json benchmarks/results/dsg_one_class_wide_equal_time.json \
        --out docs/img/dsg_one_class_wide_equal_time.svg

Each configuration runs ``--repeats`` times (different seeds); the medians are reported and
written to ``benchmarks/results/dsg_one_class.json``, and the figure (AUC against time) to
``docs/img/dsg_one_class.svg``.  Run from the repository root::

    python benchmarks/dsg_one_class.py --n 280000 --d 8 --epochs 1 2 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import SGDOneClassSVM
from sklearn.metrics import roc_auc_score

import ooc_kernels as ok
from ooc_kernels.data import make_attrs, open_zarr_dataset, write_chunks
from ooc_kernels.estimators._hyperparams import SHUFFLE_BYTES



#: Blobs of the inlier mixture (``--clusters``; 1: one Gaussian at the origin).
CLUSTERS = 4


def _centers(d):
    if CLUSTERS == 1:
        return np.zeros((1, d))
    rng = np.random.default_rng(123)
    return rng.uniform(-3, 3, size=(CLUSTERS, d))


def mixture(n, d, rng):
    c = _centers(d)
    return (c[rng.integers(0, len(c), n)] + 0.7 * rng.normal(size=(n, d))).astype(
        np.float32)


def write_store(path, n, d, chunk):
    rng = np.random.default_rng(0)
    sizes = [min(chunk, n - a) for a in range(0, n, chunk)]
    write_chunks(path, ((mixture(k, d, rng), np.zeros(k, np.float32)) for k in sizes),
                 n_samples=n, n_features=d, chunk_size=chunk,
                 attrs=make_attrs("regression", generator="gaussian mixture"), progress=False)
    return open_zarr_dataset(path)


def run_dsg(ds, test, truth, nu, epochs, seed, **params):
    params = {"max_iter": epochs, "tol": None, **params}
    t, cpu = time.perf_counter(), time.process_time()
    det = ok.DSGOneClassSVM(nu=nu, random_state=seed, progress=False, **params).fit(ds)
    seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
    return (seconds, float(roc_auc_score(truth, det.decision_function(test))), det.bandwidth_,
            cpu)


def wide_outliers(n, d, factor, rng):
    """Outliers around the inliers' centres, ``factor`` times their spread."""
    c = _centers(d)
    return (c[rng.integers(0, len(c), n)] + factor * 0.7 * rng.normal(size=(n, d))).astype(
        np.float32)


def _passes(epochs):
    """``(index, share of the chunks)`` of each pass: whole passes, then a last partial one
    (``epochs=0.5``: half the chunks, chosen at random)."""
    whole = int(epochs)
    shares = [1.0] * whole + ([epochs - whole] if epochs > whole else [])
    return list(enumerate(shares))


def run_peer(ds, test, truth, nu, epochs, seed, sigma, components, rate="optimal"):
    seconds, dec, cpu = peer_decision(ds, test, nu, epochs, seed, sigma, components, rate)
    return seconds, float(roc_auc_score(truth, dec)), cpu


def peer_decision(ds, test, nu, epochs, seed, sigma, components, rate="optimal"):
    """The peer's fit on the store: ``(seconds, decision function on test, CPU seconds)``."""
    X = ds.X.data
    t, cpu = time.perf_counter(), time.process_time()
    first = np.asarray(X.blocks[0].compute())
    mean, sd = first.mean(0), first.std(0)
    feats = Nystroem(gamma=0.5 / sigma ** 2, n_components=components, random_state=seed)
    feats.fit((first[:2000] - mean) / sd)
    if rate == "optimal":
        model = SGDOneClassSVM(nu=nu, random_state=seed)
    else:  # "constant@eta0"
        model = SGDOneClassSVM(nu=nu, learning_rate="constant",
                               eta0=float(rate.split("@")[1]), random_state=seed)
    order = np.random.default_rng(seed)
    for _, share in _passes(epochs):
        blocks = order.permutation(X.numblocks[0])
        for b in blocks[:max(1, round(share * len(blocks)))]:
            chunk = (np.asarray(X.blocks[int(b)].compute()) - mean) / sd
            model.partial_fit(feats.transform(chunk))
    seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
    return seconds, model.decision_function(feats.transform((test - mean) / sd)), cpu


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=280_000)
    p.add_argument("--d", type=int, default=8)
    p.add_argument("--chunk-size", type=int, default=20_000)
    p.add_argument("--nu", type=float, default=0.1)
    p.add_argument("--components", type=int, default=1024)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--epochs", type=int, nargs="+", default=[1, 2, 4],
                   help="passes over the store of each point")
    p.add_argument("--problem", choices=["uniform", "wide"], default="uniform")
    p.add_argument("--wide", type=float, default=1.25,
                   help="outliers' spread over the inliers' (--problem wide)")
    p.add_argument("--peers", nargs="+", default=None,
                   help="components:nu:learning_rate settings of the peer (--problem wide)")
    p.add_argument("--peer-epochs", type=float, nargs="+", default=[1, 2],
                   help="passes of each peer; a fraction reads that share of the chunks "
                        "in its last pass (0.5: half of them)")
    p.add_argument("--dsg-settings", nargs="+", default=[""],
                   help="(--problem wide) keyword arguments of DSGOneClassSVM written as "
                        "Python, each fitted for every --epochs; \"\" is the defaults, "
                        "\"tol=1e-3, max_iter=1000\" the default stopping rule")
    p.add_argument("--clusters", type=int, default=4,
                   help="blobs of the inlier mixture (--problem wide; 1: one Gaussian)")
    p.add_argument("--median-multiplier", type=float, default=None,
                   help="DSG's median_multiplier (default: DSG's default); the peer uses "
                        "the bandwidth DSG derives from it")
    p.add_argument("--json", default=None)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    global CLUSTERS
    CLUSTERS = args.clusters
    suffix = "" if args.problem == "uniform" else "_wide"
    if args.problem == "wide" and args.clusters != 4:
        suffix += f"_k{args.clusters}"
    if args.median_multiplier is not None:
        suffix += f"_m{args.median_multiplier:g}"
    args.json = args.json or f"benchmarks/results/dsg_one_class{suffix}.json"
    args.out = args.out or f"docs/img/dsg_one_class{suffix}.svg"
    if args.problem == "wide":
        return main_wide(args)
    rng = np.random.default_rng(99)
    test = np.vstack([mixture(5000, args.d, rng),
                      rng.uniform(-6, 6, (5000, args.d)).astype(np.float32)])
    truth = np.r_[np.ones(5000), np.zeros(5000)]
    rows = {"dsg": {}, "peer": {}}
    with tempfile.TemporaryDirectory() as tmp:
        ds = write_store(Path(tmp) / "inliers.zarr", args.n, args.d, args.chunk_size)
        store_bytes = args.n * args.d * 4
        print(f"store: {args.n} x {args.d} float32 = {store_bytes / 2**20:.1f} MiB of X "
              f"(task budget {SHUFFLE_BYTES / 2**20:.0f} MiB)", flush=True)
        for e in args.epochs:
            runs = [run_dsg(ds, test, truth, args.nu, e, s) for s in range(args.repeats)]
            sigma = runs[0][2]
            rows["dsg"][e] = runs
            peer = [run_peer(ds, test, truth, args.nu, e, s, sigma, args.components)
                    for s in range(args.repeats)]
            rows["peer"][e] = peer
            print(f"epochs {e}: DSG {np.median([r[0] for r in runs]):.1f} s AUC "
                  f"{np.median([r[1] for r in runs]):.4f} | SGDOneClassSVM+Nystroem "
                  f"{np.median([r[0] for r in peer]):.1f} s AUC "
                  f"{np.median([r[1] for r in peer]):.4f}", flush=True)
    summary = {name: {str(e): {"seconds": float(np.median([r[0] for r in runs])),
                               "auc": float(np.median([r[1] for r in runs])),
                               "runs": [[float(r[0]), float(r[1])] for r in runs]}
                      for e, runs in table.items()} for name, table in rows.items()}
    summary["setup"] = {k: v for k, v in vars(args).items() if k not in ("json", "out")}
    Path(args.json).write_text(json.dumps(summary, indent=1))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for name, label in (("dsg", "DSGOneClassSVM"),
                        ("peer", f"SGDOneClassSVM + Nystroem({args.components})")):
        pts = [(summary[name][str(e)]["seconds"], summary[name][str(e)]["auc"])
               for e in args.epochs]
        ax.plot(*zip(*pts), marker="o", label=label)
        for (x, y), e in zip(pts, args.epochs):
            ax.annotate(f"{e} ep", (x, y), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
    ax.set_xlabel("wall-clock seconds (median of %d)" % args.repeats)
    ax.set_ylabel("ROC AUC, planted uniform outliers")
    ax.set_title(f"{args.n} x {args.d} store, nu={args.nu}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out)
    print(f"wrote {args.json} and {args.out}")
    return summary


def _describe(row):
    aucs = [r[1] for r in row["runs"]]
    return (f"{row['seconds']:.2f} s (CPU {row['cpu_seconds']:.2f} s) AUC {row['auc']:.4f} "
            f"({min(aucs):.4f} to {max(aucs):.4f})")


def _median(runs):
    """Medians of ``(seconds, AUC, ..., CPU seconds)`` runs (CPU: the process's time in
    every thread, which other processes on the machine inflate less than the wall clock)."""
    return {"seconds": float(np.median([r[0] for r in runs])),
            "auc": float(np.median([r[1] for r in runs])),
            "cpu_seconds": float(np.median([r[-1] for r in runs])),
            "runs": [[float(r[0]), float(r[1]), float(r[-1])] for r in runs]}


def main_wide(args):
    rng = np.random.default_rng(99)
    test = np.vstack([mixture(5000, args.d, rng),
                      wide_outliers(5000, args.d, args.wide, rng)])
    truth = np.r_[np.ones(5000), np.zeros(5000)]
    peers = args.peers or [f"{args.components}:{args.nu}:optimal"]
    summary = {"dsg": {}, **{f"peer {p}": {} for p in peers}}
    with tempfile.TemporaryDirectory() as tmp:
        ds = write_store(Path(tmp) / "inliers.zarr", args.n, args.d, args.chunk_size)
        print(f"store: {args.n} x {args.d} float32 = {args.n * args.d * 4 / 2**20:.1f} MiB "
              f"of X (task budget {SHUFFLE_BYTES / 2**20:.0f} MiB)", flush=True)
        mm = {} if args.median_multiplier is None else {
            "median_multiplier": args.median_multiplier}
        # compiles the kernels (not timed); its bandwidth, seed 0's, is the peer's kernel
        sigma = ok.DSGOneClassSVM(nu=args.nu, n_features=256, max_iter=1, tol=None,
                                  random_state=0, progress=False, **mm).fit(ds).bandwidth_
        jobs = []  # (method, passes, run(seed))
        for setting in args.dsg_settings:
            params = {**mm, **eval(f"dict({setting})")}  # noqa: S307 (the command line's)
            for e in args.epochs:
                jobs.append(("dsg" if not setting else f"dsg {setting}", str(e),
                             lambda s, e=e, params=params:
                             run_dsg(ds, test, truth, args.nu, e, s, **params)))
        for peer in peers:
            components, nu, rate = peer.split(":")
            for e in args.peer_epochs:
                jobs.append((f"peer {peer}", f"{e:g}",
                             lambda s, e=e, nu=float(nu), c=int(components), rate=rate:
                             run_peer(ds, test, truth, nu, e, s, sigma, c, rate)))
        # every method once per seed, in turn: a change of the machine's load between
        # seeds reaches all of them alike
        runs = {(name, e): [] for name, e, _ in jobs}
        for seed in range(args.repeats):
            for name, e, run in jobs:
                runs[(name, e)].append(run(seed))
        if "" not in args.dsg_settings:
            del summary["dsg"]
        for (name, e), rows in runs.items():
            summary.setdefault(name, {})[e] = _median(rows)
            print(f"{name} {e} ep: {_describe(summary[name][e])}", flush=True)
    summary["setup"] = {k: v for k, v in vars(args).items() if k not in ("json", "out")}
    Path(args.json).write_text(json.dumps(summary, indent=1))
    plot_wide(summary, args.out)
    print(f"wrote {args.json} and {args.out}")
    return summary


def plot_wide(summary, out):
    """ROC AUC against wall-clock and CPU seconds, a line per method (``--problem wide``);
    ``summary`` as written to the JSON file (``plot_wide(json.load(f), "x.svg")`` redraws)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    setup = summary["setup"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6), sharey=True)
    for ax, key, what in zip(axes, ("seconds", "cpu_seconds"),
                             ("wall-clock seconds", "CPU seconds (all threads)")):
        for name, table in summary.items():
            if name == "setup" or any(key not in v for v in table.values()):
                continue
            pts = [(v[key], v["auc"]) for v in table.values()]
            label = "SGDOneClassSVM + Nystroem " + name.split(" ", 1)[1] \
                if name.startswith("peer") else "DSGOneClassSVM " + name[4:]
            ax.plot(*zip(*pts), marker="o", label=label)
            for (x, y), e in zip(pts, table):
                note = "stopped by tol" if "max_iter" in name else f"{e} ep"
                ax.annotate(note, (x, y), fontsize=7, xytext=(3, 3),
                            textcoords="offset points")
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(f"{what} (median of {setup['repeats']})")
    axes[0].set_ylabel("ROC AUC, outliers %.2fx wider" % setup["wide"])
    fig.suptitle(f"{setup['n']} x {setup['d']} store, chunks of {setup['chunk_size']}",
                 fontsize=9)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=3, fontsize=7)
    fig.tight_layout(rect=(0, 0.16, 1, 1))
    fig.savefig(out)


if __name__ == "__main__":
    main(sys.argv[1:])
