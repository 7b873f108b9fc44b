"""DSG on a ``dask.distributed`` LocalCluster: the engine's overhead per round, the bytes
moved per round, and the wall-clock speed-up of 2 single-threaded workers over 1.

Run from the repository root (each part writes ``benchmarks/results/cluster_<part>.json``)::

    python benchmarks/cluster_speedup.py overhead --repeats 3
    python benchmarks/cluster_speedup.py bytes
    python benchmarks/cluster_speedup.py speedup --repeats 3

* ``overhead``: one epoch over a 60-chunk store (10,000 rows per chunk, the estimators'
  default ``chunk_size``) on 2 single-threaded worker processes, ``chunks_per_round=2``, one
  chunk per task (``shuffle_chunks=1``: the most rounds, the worst case) and the default
  groups (``shuffle_chunks="auto"``).  The chunk work of a round is the longest of its
  workers' task time (reading + ``chunk_step``, from the scheduler's task stream); the
  overhead per round is ``(wall - sum of the rounds' chunk work) / rounds``: graph building,
  scheduling, shipping the state, the reduction, ``apply``, the callbacks.  Measured with
  rounds chained on the cluster (the default) and with one ``dask.compute`` per round
  (``ooc-kernels.cluster.pipeline: false``, one compute per round).
* ``bytes``: one epoch on stores of 10^5 and 10^6 rows; the bytes every worker sent
  (``Worker.transfer_outgoing_bytes_total``, the counter behind Dask's Prometheus metric
  ``dask_worker_transfer_outgoing_bytes_total``; ``transfer_outgoing_log`` splits it by
  receiver: other workers, or the client, ``who=None``) per round, and the pickled size of
  the state and of the graph the client sends for a round.  Dask sizes what it moves with
  ``dask.sizeof``; the script registers the size of DSG states and deltas (their arrays),
  which Dask would otherwise count as ~100 bytes.
* ``speedup``: a ~1 GB ``digits_deformed`` store (5,000,000 rows, 500 chunks); default
  ``DSGClassifier`` but ``chunks_per_round``; 1 worker with K = 1 (the sequential model:
  its test accuracy after ``--epochs`` epochs is the target), 1 worker with K = 2 (the same
  model as 2 workers: the systems speed-up) and 2 workers with K = 2.  Every fit records
  the state every few rounds with the time since ``fit`` was called; the snapshots are scored
  after the fit, off the clock.  Reports the wall-clock to ``--epochs`` epochs and to the
  1-worker model's test accuracy (2 workers run up to ``2 * --epochs`` epochs to reach it),
  with the machine's load average before every fit.

The machine has 2 cores: the scheduler, the client and the 2 workers share them, and other
jobs may run; medians of ``--repeats`` runs are reported with the load seen.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import statistics
import time
from pathlib import Path

import dask
import numpy as np

import ooc_kernels as ok
from ooc_kernels.data.schema import open_zarr_dataset
from ooc_kernels.parallel.plan import plan_epoch

from _store import store_bytes

RESULTS = Path(__file__).resolve().parent / "results"
ROWS_PER_CHUNK = 10_000


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def cluster(n_workers: int):
    from distributed import Client, LocalCluster

    lc = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      dashboard_address=None)
    return lc, Client(lc)


def store(data_dir: Path, name: str, n: int, *, split="train", seed=0, **params) -> Path:
    return ok.make_dataset(name, data_dir / f"{name}_{split}_{n}.zarr", n,
                           chunk_size=ROWS_PER_CHUNK, random_state=seed, split=split,
                           exist_ok=True, progress=False, **params)


def warm_up(client, data_dir: Path) -> None:
    """Compile/load the numba kernels in every worker (cached on disk) before timing."""
    small = store(data_dir, "digits_deformed", 20_000, seed=5)
    ok.DSGClassifier(max_iter=1, tol=None, chunks_per_round=2, scheduler=client,
                     progress=False).fit(open_zarr_dataset(small))


class Recorder:
    """Records ``(seconds since start, epoch, round, state)`` every ``every`` rounds and at
    the end of every epoch (states are immutable: no copy)."""

    def __init__(self, every: int):
        self.every, self.start, self.points, self.n = every, None, [], 0

    def __call__(self, state, info):
        self.n += 1
        last = info.round == info.n_rounds_in_epoch - 1
        if last or self.n % self.every == 0:
            self.points.append((time.perf_counter() - self.start, info.epoch, info.round,
                                last, state))


def timed_fit(clf, ds, every: int):
    rec = Recorder(every)
    real = clf._after_round

    def after_round(state, info):  # the estimator's own check, then the recorder
        real(state, info)
        rec(state, info)

    clf._after_round = after_round
    rec.start = time.perf_counter()
    clf.fit(ds)
    total = time.perf_counter() - rec.start
    del clf._after_round
    return total, rec.points


def score_points(clf, points, X_test, y_test):
    clf.set_params(scheduler="sync")
    out = []
    for t, epoch, rnd, last, state in points:
        clf._state = state
        clf._publish()
        out.append({"t": t, "epoch": epoch, "round": rnd, "epoch_end": last,
                    "accuracy": float(clf.score(X_test, y_test))})
    return out


# ---------------------------------------------------------------------- overhead
def task_work(stream, chunk_round):
    """Per round, the longest worker's compute time of its reading and chunk tasks."""
    per = {}
    engine_s = 0.0
    for t in stream:
        key = t["key"]
        dur = sum(s["stop"] - s["start"] for s in t["startstops"] if s["action"] == "compute")
        if isinstance(key, tuple):  # a chunk of the store, read by Dask's array graph
            rnd = chunk_round.get(int(key[1]))
        elif "-chunk-step-" in key or "-read-group-" in key:
            e, r = key.split("-e", 1)[1].split("-")[:2]
            rnd = (int(e), int(r[1:]))
        elif key.startswith("dsg-"):
            engine_s += dur  # combine, apply, make_tasks: the engine's own tasks
            continue
        else:  # opening the store for a read (a few ms): neither work nor engine
            continue
        if rnd is None:
            continue
        per.setdefault(rnd, {}).setdefault(t["worker"], 0.0)
        per[rnd][t["worker"]] += dur
    return {r: max(w.values()) for r, w in per.items()}, engine_s


def overhead(args):
    from distributed import get_task_stream

    path = store(args.data_dir, "digits_deformed", 60 * ROWS_PER_CHUNK, seed=3)
    ds = open_zarr_dataset(path)
    lc, client = cluster(2)
    rows = []
    try:
        warm_up(client, args.data_dir)
        for shuffle_chunks in (1, "auto"):
            for pipeline in (False, True):
                for rep in range(args.repeats):
                    clf = ok.DSGClassifier(max_iter=1, tol=None, chunks_per_round=2,
                                           shuffle_chunks=shuffle_chunks, scheduler=client,
                                           progress=False, random_state=rep)
                    seen = load()
                    with dask.config.set({"ooc-kernels.cluster.pipeline": pipeline}), \
                            get_task_stream(client) as ts:
                        t0 = time.perf_counter()
                        clf.fit(ds)
                        wall = time.perf_counter() - t0
                    plan = plan_epoch(60, chunks_per_round=2, seed=clf._data_seed, epoch=0,
                                      shuffle=True, shuffle_chunks=clf.shuffle_chunks_)
                    chunk_round = {c: (0, r) for r, grp in enumerate(plan)
                                   for g in grp for c in g}
                    stream = rounds_tasks(ts.data)
                    work, engine_s = task_work(stream, chunk_round)
                    n_rounds = len(plan)
                    sum_work = sum(work.values())
                    rows.append({"shuffle_chunks": clf.shuffle_chunks_, "pipeline": pipeline,
                                 "repeat": rep, "load_before": seen, "fit_wall_s": wall,
                                 "rounds_span_s": _span(stream), "n_rounds": n_rounds,
                                 "chunk_work_s": sum_work, "engine_tasks_s": engine_s})
                    r = rows[-1]
                    r["overhead_per_round_ms"] = 1e3 * (r["rounds_span_s"] - sum_work) / n_rounds
                    r["chunk_work_per_round_ms"] = 1e3 * sum_work / n_rounds
                    r["overhead_pct"] = 100 * r["overhead_per_round_ms"] / r[
                        "chunk_work_per_round_ms"]
                    print(json.dumps(r), flush=True)
    finally:
        client.close()
        lc.close()
    summary = []
    for sc in sorted({r["shuffle_chunks"] for r in rows}):
        for pipeline in (False, True):
            sel = [r for r in rows if r["shuffle_chunks"] == sc and r["pipeline"] == pipeline]
            summary.append({
                "shuffle_chunks": sc, "pipeline": pipeline, "n_rounds": sel[0]["n_rounds"],
                "median_overhead_per_round_ms": statistics.median(
                    r["overhead_per_round_ms"] for r in sel),
                "median_chunk_work_per_round_ms": statistics.median(
                    r["chunk_work_per_round_ms"] for r in sel),
                "median_overhead_pct": statistics.median(r["overhead_pct"] for r in sel),
                "median_rounds_span_s": statistics.median(r["rounds_span_s"] for r in sel),
                "loads_before": [r["load_before"] for r in sel]})
    return {"runs": rows, "summary": summary}


def rounds_tasks(stream):
    """The tasks of the rounds: those that started at or after the first of the engine's
    tasks (``dsg-...`` keys), so the fit's set-up (bandwidth, step sizes) is left out.  The
    first round's reads, which start a few milliseconds earlier, are left out of both the
    span and the chunk work."""
    first = min(min(s["start"] for s in t["startstops"]) for t in stream
                if isinstance(t["key"], str) and t["key"].startswith("dsg-"))
    return [t for t in stream if min(s["start"] for s in t["startstops"]) >= first]


def _span(stream) -> float:
    """Seconds from the start of the rounds' first task to the end of their last: the
    rounds without the fit's set-up (the client gathers the last state right after)."""
    start = min(s["start"] for t in stream for s in t["startstops"])
    stop = max(s["stop"] for t in stream for s in t["startstops"])
    return stop - start


# ---------------------------------------------------------------------- bytes
def register_sizes() -> None:
    """Teach ``dask.sizeof`` the size of DSG states and deltas (the sum of their arrays).

    Dask counts transferred bytes with ``sizeof`` of the value; for objects it does not
    know it falls back to ``sys.getsizeof`` (about 100 bytes for a dataclass holding
    arrays), so without this the state and the deltas would hardly count."""
    import dataclasses

    from dask.sizeof import sizeof

    from ooc_kernels.families.dsg.solver import DSGDelta, DSGState

    @sizeof.register(DSGState)
    @sizeof.register(DSGDelta)
    def _size(obj):
        return 200 + sum(sizeof(getattr(obj, f.name)) for f in dataclasses.fields(obj))


def transfer_bytes(client) -> dict:
    def sent(dask_worker):
        by = {}
        for entry in dask_worker.transfer_outgoing_log:
            by[entry["who"] or "?"] = by.get(entry["who"] or "?", 0) + entry["total"]
        return {"total": dask_worker.transfer_outgoing_bytes_total, "by_receiver": by}

    return client.run(sent)


def bytes_per_round(args):
    lc, client = cluster(2)
    out = []
    try:
        register_sizes()
        client.run(register_sizes)
        warm_up(client, args.data_dir)
        workers = set(client.scheduler_info()["workers"])
        for n in (100_000, 1_000_000):
            ds = open_zarr_dataset(store(args.data_dir, "digits_deformed", n, seed=4))
            for pipeline in (True, False):
                clf = ok.DSGClassifier(max_iter=1, tol=None, chunks_per_round=2,
                                       shuffle_chunks=1, scheduler=client, progress=False,
                                       random_state=0)
                before = transfer_bytes(client)
                with dask.config.set({"ooc-kernels.cluster.pipeline": pipeline}):
                    clf.fit(ds)
                after = transfer_bytes(client)
                total = sum(after[w]["total"] - before[w]["total"] for w in after)
                to_workers = to_client = 0
                for w in after:
                    for who, b in after[w]["by_receiver"].items():
                        b -= before[w]["by_receiver"].get(who, 0)
                        if who in workers:
                            to_workers += b
                        else:
                            to_client += b
                n_rounds = -(-ds.sizes["sample"] // ROWS_PER_CHUNK) // 2
                state_bytes = len(pickle.dumps(clf._state, protocol=5))
                graph_bytes = _graph_bytes(clf, ds)
                row = {"n_rows": n, "pipeline": pipeline, "n_rounds": n_rounds,
                       "bytes_sent_by_workers": total,
                       "bytes_per_round": total / n_rounds,
                       "to_workers_per_round": to_workers / n_rounds,
                       "to_client_or_scheduler_per_round": to_client / n_rounds,
                       "state_bytes": state_bytes,
                       "graph_bytes_with_state": graph_bytes,
                       "graph_bytes_without_state": graph_bytes - state_bytes}
                out.append(row)
                print(json.dumps(row), flush=True)
    finally:
        client.close()
        lc.close()
    return {"runs": out}


def _graph_bytes(clf, ds) -> int:
    """Pickled size of the graph the client sends for one round from a concrete state
    (a synchronization point: it carries the state; chained rounds carry a reference)."""
    from ooc_kernels.data.inputs import as_chunked
    from ooc_kernels.parallel.engine import RoundGraph, RoundInfo

    data = clf._engine_data(as_chunked(ds))
    graph = RoundGraph(clf._make_algorithm(), data, shuffle_chunks=1)
    info = RoundInfo(epoch=0, round=0, groups=((0,), (1,)), sizes=((ROWS_PER_CHUNK,),) * 2,
                     seed=0, n_rounds_in_epoch=1)
    delayed = graph.local_round(clf._state, info)
    return len(pickle.dumps(dict(delayed.__dask_graph__()), protocol=5))


# ---------------------------------------------------------------------- speed-up
def speedup(args):
    n = 5_000_000
    path = store(args.data_dir, "digits_deformed", n, seed=0)
    test = open_zarr_dataset(store(args.data_dir, "digits_deformed", 50_000, split="test",
                                   seed=1))
    X_test, y_test = np.asarray(test["X"]), np.asarray(test["y"])
    ds = open_zarr_dataset(path)
    size = store_bytes(path)
    configs = [("1 worker, K=1", 1, 1, args.epochs), ("1 worker, K=2", 1, 2, args.epochs),
               ("2 workers, K=2", 2, 2, 2 * args.epochs)]
    runs = []
    for rep in range(args.repeats):
        for label, n_workers, k, epochs in configs:
            if label in args.skip:
                continue
            lc, client = cluster(n_workers)
            try:
                warm_up(client, args.data_dir)
                seen = load()
                clf = ok.DSGClassifier(max_iter=epochs, tol=None, chunks_per_round=k,
                                       scheduler=client, progress=False, random_state=0)
                wall, points = timed_fit(clf, ds, every=args.every)
            finally:
                client.close()
                lc.close()
            scored = score_points(clf, points, X_test, y_test)
            run = {"config": label, "n_workers": n_workers, "chunks_per_round": k,
                   "repeat": rep, "load_before": seen, "wall_s": wall, "epochs": epochs,
                   "shuffle_chunks": clf.shuffle_chunks_, "points": scored}
            runs.append(run)
            print(json.dumps({k2: v for k2, v in run.items() if k2 != "points"}),
                  f"acc at epoch ends: {[p['accuracy'] for p in scored if p['epoch_end']]}",
                  flush=True)
    return {"n_rows": n, "store_bytes": size, "runs": runs,
            "summary": summarize_speedup(runs, args.epochs)}


def summarize_speedup(runs, epochs):
    def at_epochs(run):
        return next(p["t"] for p in run["points"]
                    if p["epoch_end"] and p["epoch"] == epochs - 1)

    def final_acc(run):
        return next(p["accuracy"] for p in run["points"]
                    if p["epoch_end"] and p["epoch"] == epochs - 1)

    by = {}
    for r in runs:
        by.setdefault(r["config"], []).append(r)
    ref = by["1 worker, K=1"]
    target = statistics.median(final_acc(r) for r in ref)

    def to_target(run):
        hit = [p["t"] for p in run["points"] if p["accuracy"] >= target]
        return min(hit) if hit else None

    out = {"target_accuracy": target, "epochs": epochs, "configs": {}}
    for label, rs in by.items():
        times = [to_target(r) for r in rs]
        out["configs"][label] = {
            "median_s_to_epochs": statistics.median(at_epochs(r) for r in rs),
            "median_accuracy_at_epochs": statistics.median(final_acc(r) for r in rs),
            "s_to_target": times,
            "median_s_to_target": (statistics.median(times) if all(times) else None),
            "loads_before": [r["load_before"] for r in rs]}
    c = out["configs"]
    two = c.get("2 workers, K=2")
    if two:
        base = c["1 worker, K=1"]
        out["speedup_to_epochs_vs_1w_k1"] = base["median_s_to_epochs"] / two[
            "median_s_to_epochs"]
        if "1 worker, K=2" in c:
            out["speedup_to_epochs_vs_1w_k2"] = c["1 worker, K=2"]["median_s_to_epochs"] / \
                two["median_s_to_epochs"]
        if two["median_s_to_target"] and base["median_s_to_target"]:
            out["speedup_to_target"] = base["median_s_to_target"] / two["median_s_to_target"]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("part", choices=["overhead", "bytes", "speedup"])
    ap.add_argument("--data-dir", default="data/bench_cluster", type=Path)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--every", type=int, default=10, help="rounds between snapshots")
    ap.add_argument("--skip", nargs="*", default=[], help="configurations to leave out")
    args = ap.parse_args()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    result = {"overhead": overhead, "bytes": bytes_per_round, "speedup": speedup}[
        args.part](args)
    result["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform(),
                         "load_after": load(), "ooc_kernels": ok.__version__}
    out = RESULTS / f"cluster_{args.part}.json"
    out.write_text(json.dumps(result, indent=1, default=str))
    print("wrote", out)


if __name__ == "__main__":
    main()
