"""Time to a fixed accuracy with threads inside a DSG step (``n_jobs``) and with worker
processes of a ``dask.distributed`` LocalCluster.

Run from the repository root::

    python benchmarks/threads_scaling.py --rows 200000 --threads 1 2 --repeats 5
    python benchmarks/threads_scaling.py --rows 2000000 --threads 1 2 4 8 16 \\
        --workers 1x1 4x1 16x1 4x4

Data: a ``nonlinear_binary`` store of ``--rows`` x 32 (10,000-row chunks, written once under
``--data-dir``) and a test store of ``--test-rows``.  Model: ``DSGClassifier`` defaults
except the bandwidth, fixed to the value ``bandwidth="auto"`` chooses (computed once, off the
clock, by a one-epoch fit that also compiles the kernels, or read from ``--bandwidth-file``
when that exists), and ``max_iter=2, tol=None``.

* **target**: ``n_jobs=1``, ``chunks_per_round=1``: the sequential model.  Its test accuracy
  after 2 epochs is the target.
* **threads** (``--threads``): ``n_jobs=t``, ``chunks_per_round=1``, the local threaded
  scheduler: the fit's wall-clock, its test accuracy, whether its model is bit-identical to
  the target's (it must be), the speed-up over the ``n_jobs=1`` runs of the same repeats, and
  the fit's CPU seconds in this process (all threads: the work the threads add).
  The settings are interleaved in every repeat (the machine may be shared); medians are
  reported, with the load average before every fit.
* **workers** (``--workers``, ``PxT``: ``P`` worker processes of ``T`` threads each):
  ``chunks_per_round=P`` (one task per worker; ``--k auto`` lets the estimator choose),
  ``n_jobs=None``.  A ``K > 1`` model differs from the sequential one, so the fit continues
  one epoch at a time (``warm_start``) until its test accuracy reaches the target (at most
  ``--max-epochs``); the time to the target is the sum of those fits' wall-clocks (scoring
  off the clock), the speed-up is against the median ``n_jobs=1`` fit.

Prints a markdown table and writes ``benchmarks/results/threads_scaling_<rows>.json`` (or
``--json``).  ``--checkout FOLDER`` measures another version of the library (``git archive``
of a commit, unpacked into FOLDER: its ``ooc_kernels`` is imported instead of this one), to
compare two versions in alternating runs on the same machine.
On a 16-core machine, threads only, 2,000,000 rows, one repeat (about 4 minutes; the workers
add about 2 minutes each)::

    python benchmarks/threads_scaling.py --rows 2000000 --threads 1 4 8 16 --repeats 1
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _checkout import use_checkout_of_argv  # noqa: E402

if __name__ == "__main__":  # --checkout FOLDER: import that version of the library instead
    use_checkout_of_argv(sys.argv)

import numpy as np  # noqa: E402

import ooc_kernels as ok  # noqa: E402
from ooc_kernels.data.schema import open_zarr_dataset  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
N_FEATURES = 32
N_RANDOM_FEATURES: int | str = "auto"   # set from --n-features


def store(data_dir: Path, n: int, split: str) -> Path:
    return ok.make_dataset("nonlinear_binary", data_dir / f"nonlinear_binary32_{split}_{n}.zarr",
                           n, chunk_size=10_000, random_state=0 if split == "train" else 1,
                           split=split, exist_ok=True, progress=False,
                           n_features=N_FEATURES)


def load() -> float:
    return round(os.getloadavg()[0], 2)


def peak_rss_mb() -> float:
    """This process's peak resident set size so far, MB (``ru_maxrss``: it only grows, so
    a fit that raises it is the fit that set it)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def model(bandwidth, **kw) -> ok.DSGClassifier:
    params = dict(bandwidth=bandwidth, max_iter=2, tol=None, random_state=0, progress=False,
                  n_features=N_RANDOM_FEATURES)
    params.update(kw)
    return ok.DSGClassifier(**params)


def timed(clf, X, y, cpu: list | None = None) -> float:
    """Wall-clock of ``clf.fit(X, y)``; its CPU seconds in this process (every thread)
    appended to ``cpu`` when given."""
    t0, c0 = time.perf_counter(), time.process_time()
    clf.fit(X, y)
    if cpu is not None:
        cpu.append(time.process_time() - c0)
    return time.perf_counter() - t0


def same_model(a, b) -> bool:
    ours, theirs = a._fitted_arrays(), b._fitted_arrays()
    return sorted(ours) == sorted(theirs) and all(np.array_equal(ours[k], theirs[k])
                                                  for k in ours)


def threads_runs(args, X, y, Xt, yt, bandwidth, target_clf, first=None, save=None):
    runs = [first] if first is not None else []
    for rep in range(args.repeats):
        for t in args.threads:
            if first is not None and rep == 0 and t == 1:
                continue        # the target fit is this run (--reuse-target)
            seen = load()
            clf = model(bandwidth, n_jobs=t, chunks_per_round=1, scheduler="threads")
            cpu: list = []
            wall = timed(clf, X, y, cpu)
            acc = float(clf.score(Xt, yt))
            run = {"setting": f"n_jobs={t}", "threads": t, "repeat": rep, "wall_s": wall,
                   "cpu_s": cpu[0],
                   "accuracy": acc, "bit_identical": same_model(clf, target_clf),
                   "load_before": seen, "peak_rss_mb": peak_rss_mb()}
            runs.append(run)
            print(json.dumps(run), flush=True)
            if save is not None:
                save(runs, [])
    return runs


def worker_runs(args, X, y, Xt, yt, bandwidth, target, thread_runs=(), save=None):
    import distributed

    runs = []
    for spec in args.workers:
        procs, threads = (int(v) for v in spec.lower().split("x"))
        k = "auto" if args.k == "auto" else procs
        with distributed.LocalCluster(n_workers=procs, threads_per_worker=threads,
                                      processes=True, dashboard_address=None) as lc, \
                distributed.Client(lc, set_as_default=False) as client:
            # compile in every worker, off the clock
            model(bandwidth, max_iter=1, chunks_per_round=k, scheduler=client).fit(
                X[:40_000], y[:40_000])
            for rep in range(args.repeats):
                seen = load()
                clf = model(bandwidth, max_iter=2, chunks_per_round=k, scheduler=client)
                wall = timed(clf, X, y)
                acc, epochs = float(clf.score(Xt, yt)), 2
                while acc < target and epochs < args.max_epochs:
                    clf.set_params(warm_start=True, max_iter=1)
                    wall += timed(clf, X, y)
                    acc, epochs = float(clf.score(Xt, yt)), epochs + 1
                run = {"setting": f"{procs} workers x {threads} threads, K={k}",
                       "workers": spec, "repeat": rep, "wall_s": wall, "epochs": epochs,
                       "accuracy": acc, "reached": acc >= target, "load_before": seen}
                runs.append(run)
                print(json.dumps(run), flush=True)
                if save is not None:
                    save(list(thread_runs), runs)
    return runs


def summarize(runs, key):
    by: dict = {}
    for r in runs:
        by.setdefault(r[key], []).append(r)
    return {name: {"wall_s": statistics.median(r["wall_s"] for r in rs),
                   **({"cpu_s": statistics.median(r["cpu_s"] for r in rs)}
                      if "cpu_s" in rs[0] else {}),
                   "accuracy": statistics.median(r["accuracy"] for r in rs),
                   "runs": len(rs), **({"epochs": statistics.median(r["epochs"] for r in rs)}
                                       if "epochs" in rs[0] else {}),
                   **({"bit_identical": all(r["bit_identical"] for r in rs)}
                      if "bit_identical" in rs[0] else {})}
            for name, rs in by.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--test-rows", type=int, default=50_000)
    ap.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--workers", nargs="*", default=[], help="PxT settings, e.g. 4x1 4x4")
    ap.add_argument("--k", choices=["workers", "auto"], default="workers",
                    help="chunks_per_round of the worker runs: P, or 'auto'")
    ap.add_argument("--repeats", type=int, default=None,
                    help="default: 3 up to 500,000 rows, else 1")
    ap.add_argument("--max-epochs", type=int, default=16)
    ap.add_argument("--data-dir", type=Path, default=Path("data/bench_threads"))
    ap.add_argument("--n-features", default="auto",
                    help="n_features of every fit: 'auto' (the default) or a number, e.g. 4096 "
                         "to compare with runs made when 4,096 was the default")
    ap.add_argument("--bandwidth-file", type=Path, default=None,
                    help="JSON with the bandwidth 'auto' chose: read when it exists (no "
                         "probe fit), else written after the probe fit (for a second run "
                         "on the same data, e.g. pinned to fewer cores)")
    ap.add_argument("--reuse-target", action="store_true",
                    help="count the target fit as the first repeat's n_jobs=1 run instead "
                         "of fitting that setting again (saves one one-thread fit where the "
                         "machine is lent for minutes)")
    ap.add_argument("--checkout", default=None,
                    help="a folder holding another version of the library (e.g. git archive "
                         "of a commit, unpacked), imported instead of this one")
    ap.add_argument("--json", type=Path, default=None,
                    help="where to write the results (default: "
                         "benchmarks/results/threads_scaling_<rows>.json)")
    args = ap.parse_args()
    global N_RANDOM_FEATURES
    N_RANDOM_FEATURES = args.n_features if args.n_features == "auto" else int(args.n_features)
    if args.repeats is None:
        args.repeats = 3 if args.rows <= 500_000 else 1
    if 1 not in args.threads:
        args.threads = [1, *args.threads]
    train = open_zarr_dataset(store(args.data_dir, args.rows, "train"))
    test = open_zarr_dataset(store(args.data_dir, args.test_rows, "test"))
    X, y = train["X"].data, train["y"].data
    Xt, yt = np.asarray(test["X"]), np.asarray(test["y"])

    # off the clock: the bandwidth "auto" picks, and every kernel compiled once
    t0 = time.perf_counter()
    if args.bandwidth_file is not None and args.bandwidth_file.exists():
        bandwidth = json.loads(args.bandwidth_file.read_text())["bandwidth"]
        # the kernels compile in the first (target) fit, which no speed-up uses
    else:
        probe = ok.DSGClassifier(max_iter=1, tol=None, random_state=0, progress=False,
                                 n_features=N_RANDOM_FEATURES,
                                 chunks_per_round=1, n_jobs=max(args.threads),
                                 scheduler="threads").fit(X, y)
        bandwidth = np.asarray(probe.bandwidth_).tolist()
        if args.bandwidth_file is not None:
            args.bandwidth_file.parent.mkdir(parents=True, exist_ok=True)
            args.bandwidth_file.write_text(json.dumps({"bandwidth": bandwidth,
                                                       "rows": args.rows}))
    # a float, or one width per input when "auto" chooses per-input widths
    bandwidth = float(bandwidth) if np.ndim(bandwidth) == 0 else np.asarray(bandwidth)
    bw_json = np.asarray(bandwidth).tolist()
    setup_s = time.perf_counter() - t0
    seen = load()
    target_clf = model(bandwidth, n_jobs=1, chunks_per_round=1, scheduler="threads")
    target_cpu: list = []
    target_wall = timed(target_clf, X, y, target_cpu)
    target = float(target_clf.score(Xt, yt))
    print(json.dumps({"bandwidth": bw_json, "probe_s": setup_s, "target_accuracy": target,
                      "target_wall_s": target_wall, "load_before": seen,
                      "peak_rss_mb": peak_rss_mb()}), flush=True)
    first = ({"setting": "n_jobs=1", "threads": 1, "repeat": 0, "wall_s": target_wall,
              "cpu_s": target_cpu[0], "accuracy": target, "bit_identical": True,
              "load_before": seen, "peak_rss_mb": peak_rss_mb()}
             if args.reuse_target else None)
    out = args.json or RESULTS / f"threads_scaling_{args.rows}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    command = "python benchmarks/threads_scaling.py " + " ".join(
        f"--{k.replace('_', '-')}" + (
            "" if v is True else
            f" {' '.join(map(str, v)) if isinstance(v, list) else v}")
        for k, v in vars(args).items() if v not in (None, [], False))

    def save(thread_runs, cluster_runs):
        """Write the results so far (a run cut short keeps every finished setting)."""
        threads = summarize(thread_runs, "setting") if thread_runs else {}
        base = threads.get("n_jobs=1", {}).get("wall_s")
        workers = summarize(cluster_runs, "setting") if cluster_runs else {}
        for v in (*threads.values(), *workers.values()):
            v["speedup"] = base / v["wall_s"] if base else None
        out.write_text(json.dumps({
            "command": command,
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
            "rows": args.rows, "n_features": N_RANDOM_FEATURES,
            "bandwidth": bw_json, "probe_s": setup_s, "target_accuracy": target,
            "target_wall_s": target_wall, "threads": threads, "workers": workers,
            "runs": thread_runs + cluster_runs}, indent=1))
        return threads, workers

    thread_runs = threads_runs(args, X, y, Xt, yt, bandwidth, target_clf, first, save)
    cluster_runs = (worker_runs(args, X, y, Xt, yt, bandwidth, target, thread_runs, save)
                    if args.workers else [])
    threads, workers = save(thread_runs, cluster_runs)

    print(f"\nrows={args.rows}, target accuracy {target:.4f} (n_jobs=1, K=1, 2 epochs), "
          f"medians of {args.repeats}, load {[r['load_before'] for r in thread_runs]}\n")
    print("| setting | fit s | speed-up | CPU s | test accuracy | epochs | bit-identical |")
    print("|---|---|---|---|---|---|---|")
    for name, v in {**threads, **workers}.items():
        cpu = f"{v['cpu_s']:.2f}" if "cpu_s" in v else "-"
        print(f"| {name} | {v['wall_s']:.2f} | {v['speedup']:.2f} | {cpu} | "
              f"{v['accuracy']:.4f} | {v.get('epochs', 2)} | {v.get('bit_identical', '-')} |")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
