"""The serial and the parallel work of a DSG fit with ``n_jobs`` threads, in CPU seconds,
and the wall-clock speed-up they predict on an idle machine (Amdahl).

Run from the repository root::

    python benchmarks/threads_serial.py --rows 200000 --threads 1 2 --repeats 3

Same data and model as ``benchmarks/threads_scaling.py`` (a ``nonlinear_binary`` store of
``--rows`` x 32 in 10,000-row chunks, ``DSGClassifier`` defaults but ``bandwidth``,
``max_iter=2, tol=None, chunks_per_round=1``, threaded scheduler).  A wall-clock speed-up
needs an idle machine; CPU seconds per thread do not, so this script measures those:

* every thread's CPU seconds over the fit (``/proc/self/task/*/stat``, utime + stime; the
  threads that exit during the fit, the read ahead's, are the process's CPU time minus the
  live threads'), grouped by role: the main thread, Dask's pool, the kernel launcher, the
  threads numba starts (OpenMP workers, native), the chunk readers (the read ahead, Zarr's
  I/O and codec threads);
* the CPU seconds of the parts of a fit, timed with ``time.thread_time`` in the thread that
  runs them: the set-up (classes, bandwidth sample, first step size), the growth phase, the
  chunk step outside its kernels (checks, target encoding, shuffle, the stacked blocks), the
  full-phase step kernel (on every thread it runs on: the calling thread, the launcher and
  numba's workers, from per-thread counters around each call), the reads; the rest of the
  main thread and Dask's pool is the engine (Dask's rounds, ``apply``, callbacks);
* the wall-clock seconds the rounds waited for the read ahead (reads not hidden).

The parts outside the kernel run on one thread; the reads run beside the fit (read ahead).
With ``S`` the serial CPU seconds on the fit's critical path (everything but the kernel and
the readers), ``K_t`` the kernel's CPU seconds summed over its ``t`` threads (``K_t / t`` its
wall-clock on idle cores when the threads split it evenly), ``R`` the readers' CPU seconds
and ``T_1 = S + K_1`` the one-thread fit on an idle machine (its reads on another core), the
idle wall-clock with ``t`` threads is predicted as ``S + K_t / t`` while ``t`` is below the
cores; with ``t`` at the cores the reads need the kernel's cores: at best they share them
fairly (``max(S + K_t / t, (S + K_t + R) / cores)``), at worst every read stalls both kernel
threads (``S + K_t / t + R``: a thread waiting at a synchronisation for a descheduled
partner).  The speed-up ``T_1 / T_t`` is printed as that range, and the bound with no extra
kernel work (``K_1`` for ``K_t``).

OpenMP threads spin at a synchronisation before they sleep (GNU OpenMP, the default policy):
on a loaded machine that spinning is CPU time, not work.  ``--wait-policy passive`` (the
default here) sets ``OMP_WAIT_POLICY=PASSIVE`` for this process, so that the CPU seconds of
``K_t`` are the kernel's work; ``--wait-policy runtime`` keeps the runtime's policy.

Prints the table and writes ``benchmarks/results/threads_serial_<rows>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import threading
import time
from pathlib import Path

import ooc_kernels as ok
from ooc_kernels.data.schema import open_zarr_dataset

RESULTS = Path(__file__).resolve().parent / "results"
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
READERS = ("read ahead", "zarr")
PARTS = ("setup", "growth", "step other", "kernel", "engine", "reads")


def thread_cpu() -> dict[int, float]:
    """CPU seconds (user + system) of every live thread of this process, by thread id."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / _TICK
    return out


def role(name: str | None) -> str:
    """The role of a thread from its Python name (None: a thread Python did not start)."""
    if name is None:
        return "numba workers (native)"
    if name == "MainThread":
        return "main"
    if name.startswith("ooc-kernels-launcher"):
        return "launcher"
    if name.startswith("ooc-kernels-read-ahead"):
        return "read ahead"
    if name.startswith(("zarr", "asyncio")):
        return "zarr"
    if name.startswith("ThreadPoolExecutor"):
        return "dask pool"
    return "other"


def names() -> dict[int, str]:
    return {t.native_id: t.name for t in threading.enumerate() if t.native_id is not None}


class Probe:
    """Thread-CPU timers around the parts of a fit (installed once, reset per fit)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        self.cpu = {k: 0.0 for k in ("setup", "growth", "step", "kernel caller", "kernel",
                                     "kernel wall", "reads", "read wait")}

    def add(self, key, value):
        with self.lock:
            self.cpu[key] += value

    def timed(self, fn, key):
        def wrapper(*args, **kwargs):
            c = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.add(key, time.thread_time() - c)
        return wrapper

    def waited(self, fn, key):
        """Wall-clock seconds spent in ``fn`` (a wait, not work)."""
        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.add(key, time.perf_counter() - t)
        return wrapper

    def kernel(self, fn):
        """The kernel's CPU seconds on the calling thread, the launchers and numba's
        threads (per-thread counters around the call), and its wall-clock."""
        def wrapper(*args, **kwargs):
            kernel_threads = {tid for tid, n in names().items()
                              if role(n) in ("launcher",)} | {threading.get_native_id()}
            before = thread_cpu()
            known = set(names())
            c, t = time.thread_time(), time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.add("kernel caller", time.thread_time() - c)
                self.add("kernel wall", time.perf_counter() - t)
                after = thread_cpu()
                spent = sum(v - before.get(tid, 0.0) for tid, v in after.items()
                            if tid in kernel_threads or tid not in known)
                self.add("kernel", spent)
        return wrapper


def install(probe: Probe) -> None:
    from ooc_kernels.estimators.base import ChunkedEstimator
    from ooc_kernels.families.dsg import _full_phase, solver
    from ooc_kernels.parallel import read_ahead

    ChunkedEstimator._start = probe.timed(ChunkedEstimator._start, "setup")
    solver.run_growth = probe.timed(solver.run_growth, "growth")
    solver.DSGAlgorithm.chunk_step = probe.timed(solver.DSGAlgorithm.chunk_step, "step")
    _full_phase.full_update = probe.kernel(_full_phase.full_update)
    read_ahead._read_round = probe.timed(read_ahead._read_round, "reads")
    read_ahead.ReadAhead.take = probe.waited(read_ahead.ReadAhead.take, "read wait")


def fit_once(probe: Probe, X, y, kw: dict) -> dict:
    probe.reset()
    before, c, t = thread_cpu(), time.process_time(), time.perf_counter()
    clf = ok.DSGClassifier(**kw).fit(X, y)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    after, who = thread_cpu(), names()
    by_role: dict[str, float] = {}
    for tid, v in after.items():
        key = role(who.get(tid))
        by_role[key] = by_role.get(key, 0.0) + v - before.get(tid, 0.0)
    by_role["exited threads"] = cpu - sum(by_role.values())
    p = probe.cpu
    readers = sum(by_role.get(k, 0.0) for k in READERS) + max(0.0, by_role["exited threads"])
    parts = {"setup": p["setup"], "growth": p["growth"],
             "step other": p["step"] - p["growth"] - p["kernel caller"],
             "kernel": p["kernel"], "reads": readers}
    parts["engine"] = cpu - readers - sum(v for k, v in parts.items() if k != "reads")
    serial = cpu - readers - p["kernel"]
    return {"wall_s": wall, "cpu_s": cpu, "threads": by_role, "parts": parts,
            "serial_s": serial, "kernel_wall_s": p["kernel wall"],
            "read_wait_s": p["read wait"],
            "coef": clf.coef_.copy(), "load_before": None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--bandwidth", type=float, default=3.96,
                    help="the value bandwidth='auto' chooses on this problem")
    ap.add_argument("--scheduler", default="threads", choices=["threads", "sync"])
    ap.add_argument("--data-dir", type=Path, default=Path("data/bench_threads"))
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--wait-policy", choices=["passive", "runtime"], default="passive",
                    help="passive: OMP_WAIT_POLICY=PASSIVE (threads sleep at a "
                         "synchronisation, so their CPU seconds are work, not spinning); "
                         "runtime: the OpenMP runtime's own policy (spins first)")
    args = ap.parse_args()
    if args.wait_policy == "passive":  # read once, when the OpenMP runtime loads
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    if 1 not in args.threads:
        args.threads = [1, *args.threads]
    path = ok.make_dataset("nonlinear_binary",
                           args.data_dir / f"nonlinear_binary32_train_{args.rows}.zarr",
                           args.rows, chunk_size=10_000, random_state=0, split="train",
                           exist_ok=True, progress=False, n_features=32)
    ds = open_zarr_dataset(path)
    X, y = ds["X"].data, ds["y"].data
    probe = Probe()
    install(probe)
    kw = dict(bandwidth=args.bandwidth, max_iter=2, tol=None, random_state=0,
              progress=False, chunks_per_round=1, scheduler=args.scheduler)
    for t in args.threads:  # compile every kernel, off the clock
        ok.DSGClassifier(**{**kw, "max_iter": 1, "n_jobs": t}).fit(X[:40_000], y[:40_000])
    runs, first = [], None
    for rep in range(args.repeats):
        for t in args.threads:  # interleaved: 1, 2, 1, 2 ...
            load = round(os.getloadavg()[0], 2)
            run = fit_once(probe, X, y, {**kw, "n_jobs": t})
            coef = run.pop("coef")
            first = coef if first is None else first
            run.update(n_jobs=t, repeat=rep, load_before=load,
                       bit_identical=bool((coef == first).all()))
            runs.append(run)
            print(json.dumps(run), flush=True)

    def med(t, get):
        return statistics.median(get(r) for r in runs if r["n_jobs"] == t)

    summary = {}
    cores = len(os.sched_getaffinity(0))
    t1 = med(1, lambda r: r["serial_s"] + r["parts"]["kernel"])  # one thread's critical path
    k1 = med(1, lambda r: r["parts"]["kernel"])
    for t in args.threads:
        s = med(t, lambda r: r["serial_s"])
        k = med(t, lambda r: r["parts"]["kernel"])
        reads = med(t, lambda r: r["parts"]["reads"])
        cpu = med(t, lambda r: r["cpu_s"])
        # the reads run on a core the fit's threads leave free (t < cores), else they take
        # the kernel's cores: at best shared fairly (all CPU seconds over the cores), at worst
        # stalling every kernel thread for their whole time (a spinning partner waits)
        best = max(s + k / t, (s + k + reads) / cores) if t >= cores else s + k / t
        worst = s + k / t + reads if t >= cores else best
        ideal = max(s + k1 / t, (s + k1 + reads) / cores) if t >= cores else s + k1 / t
        summary[t] = {"cpu_s": cpu, "serial_s": s, "kernel_s": k, "reads_s": reads,
                      "parts": {p: med(t, lambda r, p=p: r["parts"][p]) for p in PARTS},
                      "threads": {name: med(t, lambda r, n=name: r["threads"].get(n, 0.0))
                                  for name in sorted({n for r in runs for n in r["threads"]})},
                      "wall_s": med(t, lambda r: r["wall_s"]),
                      "kernel_wall_s": med(t, lambda r: r["kernel_wall_s"]),
                      "read_wait_s": med(t, lambda r: r["read_wait_s"]),
                      "predicted_wall_s": [best, worst],
                      "predicted_speedup": [t1 / worst, t1 / best],
                      "bound_no_extra_work": t1 / ideal,
                      "extra_cpu_s": cpu - med(1, lambda r: r["cpu_s"]),
                      "bit_identical": all(r["bit_identical"] for r in runs
                                           if r["n_jobs"] == t)}
    loads = [r["load_before"] for r in runs]
    print(f"\nrows={args.rows}, {args.scheduler} scheduler, {cores} cores, OpenMP wait "
          f"policy {args.wait_policy}, medians of {args.repeats}, load before each fit "
          f"{loads}\n")
    cols = " | ".join(f"`n_jobs={t}` CPU s" for t in args.threads)
    print(f"| part | runs on | {cols} |")
    print("|---|---|" + "---|" * len(args.threads))
    on = {"setup": "one thread", "growth": "one thread", "step other": "one thread",
          "kernel": "all threads", "engine": "one thread at a time",
          "reads": "beside the fit"}
    for p in PARTS:
        vals = " | ".join(f"{summary[t]['parts'][p]:.2f}" for t in args.threads)
        print(f"| {p} | {on[p]} | {vals} |")
    print("| **total** | | " + " | ".join(f"{summary[t]['cpu_s']:.2f}"
                                          for t in args.threads) + " |")
    print()
    print("| `n_jobs` | serial S | kernel K_t | reads R | predicted idle wall s "
          "| predicted speed-up | bound (no extra kernel work) | extra CPU s "
          "| measured wall s (this load) | bit-identical |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for t in args.threads:
        v = summary[t]
        lo, hi = v["predicted_wall_s"]
        su_lo, su_hi = v["predicted_speedup"]
        print(f"| {t} | {v['serial_s']:.2f} | {v['kernel_s']:.2f} | {v['reads_s']:.2f} | "
              f"{lo:.2f}-{hi:.2f} | {su_lo:.2f}-{su_hi:.2f} | "
              f"{v['bound_no_extra_work']:.2f} | {v['extra_cpu_s']:+.2f} | "
              f"{v['wall_s']:.2f} | {v['bit_identical']} |")
    print("\nWall s the rounds waited for the read ahead (not hidden behind the steps):",
          {t: round(summary[t]["read_wait_s"], 2) for t in args.threads})
    print("\nCPU s by thread role:", json.dumps({t: {k: round(x, 2) for k, x in
                                                    summary[t]["threads"].items()}
                                                for t in args.threads}))
    out = args.json or RESULTS / f"threads_serial_{args.rows}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "command": "python benchmarks/threads_serial.py " + " ".join(
            f"--{k.replace('_', '-')} {' '.join(map(str, v)) if isinstance(v, list) else v}"
            for k, v in vars(args).items() if v not in (None, [])),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "summary": summary, "runs": runs}, indent=1))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
