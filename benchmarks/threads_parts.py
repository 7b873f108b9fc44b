"""Where the wall-clock and the CPU seconds of a DSG fit go, part by part, at several
thread counts, and which parts run in parallel.

Run from the repository root::

    python benchmarks/threads_parts.py --rows 200000 --threads 1 2 --repeats 3

Same data and model as ``benchmarks/threads_scaling.py`` (a ``nonlinear_binary`` store of
``--rows`` x 32 in 10,000-row chunks, ``DSGClassifier`` defaults but ``bandwidth`` (given,
so no bandwidth trials), ``n_features`` (``--n-features``), ``max_iter=2, tol=None,
chunks_per_round=1``, threaded scheduler without a Client).  The fits of the thread counts
are interleaved (1, 2, 1, 2 ...); the tables give medians.

Every part is timed by a wrapper around the function that runs it, with the wall-clock
(``time.perf_counter``) and the CPU seconds of the thread that runs it
(``time.thread_time``); the step kernel's CPU seconds are those of every thread it runs on
(``/proc/self/task/*/stat`` before and after each call: the caller, the launcher and
numba's threads).  The parts, in the order a fit runs them:

* ``set-up``: ``ChunkedEstimator._start`` (classes from a pass over ``y``, the rows sampled
  for the bandwidth and step-size set-up, the first step size), one thread;
* ``round reads (not ahead)``: the rounds whose groups were not read ahead (the first of a
  fit) run through ``dask.compute``: its wall-clock less the chunk step inside;
* ``read wait``: the wall-clock the rounds waited for the read ahead (reads not hidden);
* ``chunk step, other``: the chunk step outside the growth phase and the step kernel
  (checks, target encoding, weights, shuffle, the stacked block parameters), one thread;
* ``growth phase``: ``run_growth`` (the first ``m`` steps of a fit): each step's batch on
  one thread, the later rows' predictions on the ``n_jobs`` threads (its CPU seconds are
  the calling thread's only);
* ``step kernel``: ``full_update`` (the full-phase steps), on the ``n_jobs`` threads;
* ``apply``: the state update of a round, one thread;
* ``engine, other``: the rest of the round loop (planning, callbacks, progress), one thread;
* ``fit, other``: the fit less the set-up and the round loop (validation, result assembly);
* ``reads (ahead)``: the read ahead's thread (decoding the next round's chunks): beside the
  critical path, its wall-clock is not part of the fit's unless waited for (``read wait``).

The serial wall-clock is the fit's wall-clock less the kernel's: what ``n_jobs`` threads do
not shorten.  ``--variants`` compares the library (``now``: a task's shuffle and finite
check of its rows on its threads, ``kernels_threads.take_rows`` / ``all_finite``) with
``rows-one-thread`` (both on the calling thread, the shuffle of a group in place, as the
one-thread path does), interleaved.  Prints a markdown table per thread count and writes
``benchmarks/results/threads_parts_<rows>.json`` (or ``--json``).

Per fit it also counts the step kernel's parallel regions (with ``n_jobs > 1``: one per
pass of a kernel call, the call's steps and one more, and one more per call in versions
that copy the column tiles of ``W`` in a region of their own), the parallel kernels
launched (``kernels_threads.launch``: the step kernel, the rows' shuffle and finite check)
and the voluntary context switches of the kernel's threads during the kernel (a thread
that sleeps at a region's end and is woken for the next one counts one each time).
``--checkout FOLDER`` measures another version of the library (e.g. ``git archive`` of a
commit, unpacked): its ``ooc_kernels`` is imported instead of this one, timed by this
script.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import threading
import time
from pathlib import Path

import sys

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _checkout import use_checkout  # noqa: E402


def _checkout_arg(argv: list[str]) -> str | None:
    """The value of ``--checkout`` in ``argv`` (read before the library is imported)."""
    for i, a in enumerate(argv):
        if a == "--checkout" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--checkout="):
            return a.split("=", 1)[1]
    return None


if __name__ == "__main__":
    use_checkout(_checkout_arg(sys.argv))

import dask  # noqa: E402
import numpy as np  # noqa: E402

import ooc_kernels as ok  # noqa: E402
from ooc_kernels.data.schema import open_zarr_dataset  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PARTS = ("set-up", "round reads (not ahead)", "read wait", "chunk step, other",
         "growth phase", "step kernel", "apply", "engine, other", "fit, other",
         "reads (ahead)")
RUNS_ON = {"set-up": "one thread", "round reads (not ahead)": "one thread",
           "read wait": "one thread (waiting)", "chunk step, other": "one thread",
           "growth phase": "one, then n_jobs threads", "step kernel": "n_jobs threads",
           "apply": "one thread", "engine, other": "one thread",
           "fit, other": "one thread", "reads (ahead)": "beside the fit (own thread)"}
_RAW = ("start", "rounds", "compute", "step", "step in compute", "growth", "kernel",
        "apply", "take", "ahead")


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


def thread_sleeps() -> dict[int, int]:
    """Voluntary context switches (the thread blocked: a sleep at a synchronisation, a
    wait) of every live thread of this process, by thread id."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        out[int(tid)] = int(line.split()[1])
        except OSError:  # the thread ended
            pass
    return out


def kernel_regions(args) -> int:
    """The parallel regions of one ``full_update`` call with ``n_jobs > 1``: one per pass
    (the steps of the call, and one more for the last step's updates), and one more where
    the library copies the column tiles of ``W`` in a region of its own (versions with
    ``kernels_tasks.tile_block``)."""
    from ooc_kernels.families.dsg import kernels_tasks

    X, W, params = args[0], args[3], args[9]
    b = int(params[1])
    regions = -(-X.shape[0] // b) + 1
    kind = args[11] if len(args) > 11 else kernels_tasks.COS_AFFINE
    w = kernels_tasks.full_tile_width(W.shape[0], W.shape[2], kind)
    if hasattr(kernels_tasks, "tile_block") and w < W.shape[2]:
        regions += 1
    return regions


class Clock:
    """Wall-clock and thread-CPU seconds per key, summed over calls (thread-safe)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        self.wall = {k: 0.0 for k in _RAW}
        self.cpu = {k: 0.0 for k in _RAW}
        self.kernel_caller = 0.0   # the kernel's CPU seconds on the calling thread
        self.in_compute = False
        self.regions = 0           # the step kernel's parallel regions (n_jobs > 1)
        self.kernel_sleeps = 0     # voluntary context switches of its threads
        self.launches = 0          # parallel kernels launched (each one region or more)

    def add(self, key, wall, cpu):
        with self.lock:
            self.wall[key] += wall
            self.cpu[key] += cpu

    def timed(self, fn, key):
        def wrapper(*args, **kwargs):
            t, c = time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.add(key, time.perf_counter() - t, time.thread_time() - c)
        return wrapper

    def kernel(self, fn):
        """Wall-clock of each call, and the CPU seconds of every thread of the process
        but the read ahead's over it (the caller, the launcher, numba's threads)."""
        def wrapper(*args, **kwargs):
            skip = {t.native_id for t in threading.enumerate()
                    if t.name.startswith("ooc-kernels-read-ahead")}
            sleeps = thread_sleeps()
            before, t, c = thread_cpu(), time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                wall = time.perf_counter() - t
                with self.lock:
                    self.kernel_caller += time.thread_time() - c
                after = thread_cpu()
                slept = sum(v - sleeps.get(tid, 0) for tid, v in thread_sleeps().items()
                            if tid not in skip)
                from ooc_kernels._threads import current_threads
                with self.lock:
                    self.kernel_sleeps += slept
                    if current_threads() > 1:
                        self.regions += kernel_regions(args)
                self.add("kernel", wall, sum(v - before.get(tid, 0.0)
                                             for tid, v in after.items() if tid not in skip))
        return wrapper


class _DaskProxy:
    """The ``dask`` module as the engine sees it, with ``compute`` timed (the engine's
    only ``dask.compute`` calls are its rounds')."""

    def __init__(self, clock):
        self._clock = clock
        self._compute = clock.timed(dask.compute, "compute")

    def compute(self, *args, **kwargs):
        self._clock.in_compute = True
        try:
            return self._compute(*args, **kwargs)
        finally:
            self._clock.in_compute = False

    def __getattr__(self, name):
        return getattr(dask, name)


def install(clock: Clock) -> None:
    """Wrap the functions of every part (once per process)."""
    from ooc_kernels.estimators.base import ChunkedEstimator
    from ooc_kernels.families.dsg import _full_phase, solver
    from ooc_kernels.parallel import engine, read_ahead

    step = clock.timed(solver.DSGAlgorithm.chunk_step, "step")

    def chunk_step(*args, **kwargs):
        t = time.perf_counter()
        try:
            return step(*args, **kwargs)
        finally:
            if clock.in_compute:  # run by a round's dask.compute (its wall includes it)
                clock.add("step in compute", time.perf_counter() - t, 0.0)

    ChunkedEstimator._start = clock.timed(ChunkedEstimator._start, "start")
    engine._local_rounds = clock.timed(engine._local_rounds, "rounds")
    engine.dask = _DaskProxy(clock)
    solver.DSGAlgorithm.chunk_step = chunk_step
    solver.DSGAlgorithm.apply = clock.timed(solver.DSGAlgorithm.apply, "apply")
    solver.run_growth = clock.timed(solver.run_growth, "growth")
    _full_phase.full_update = clock.kernel(_full_phase.full_update)
    from ooc_kernels.families.dsg import kernels_threads

    launch = kernels_threads.launch

    def counted(*args, **kwargs):
        with clock.lock:
            clock.launches += 1
        return launch(*args, **kwargs)

    kernels_threads.launch = counted
    read_ahead._read_round = clock.timed(read_ahead._read_round, "ahead")
    read_ahead.ReadAhead.take = clock.timed(read_ahead.ReadAhead.take, "take")


def parts(clock: Clock, wall: float, cpu: float) -> dict:
    """Wall and CPU seconds by part (None: not timed on its own thread) from the timers of
    one fit of ``wall`` seconds and ``cpu`` CPU seconds (the process's)."""
    w, c = clock.wall, clock.cpu
    compute_other = w["compute"] - w["step in compute"]
    out = {
        "set-up": (w["start"], c["start"]),
        "round reads (not ahead)": (compute_other, None),
        "read wait": (w["take"], c["take"]),
        "chunk step, other": (w["step"] - w["growth"] - w["kernel"],
                              c["step"] - c["growth"] - clock.kernel_caller),
        "growth phase": (w["growth"], c["growth"]),
        "step kernel": (w["kernel"], c["kernel"]),
        "apply": (w["apply"], c["apply"]),
        "engine, other": (w["rounds"] - w["step"] - compute_other - w["take"] - w["apply"],
                          None),
        "fit, other": (wall - w["start"] - w["rounds"], None),
        "reads (ahead)": (w["ahead"], c["ahead"]),
    }
    timed = sum(v[1] for v in out.values() if v[1] is not None)
    out["CPU not timed per part (main thread, Dask's pool)"] = (None, cpu - timed)
    return {k: {"wall_s": a, "cpu_s": b} for k, (a, b) in out.items()}


def _isfinite_all(X) -> bool:
    return bool(np.isfinite(X).all())


def _take(X, order):
    return X[order]


@contextlib.contextmanager
def variant(name: str):
    """``now``: the library as it is; ``rows-one-thread``: a task's shuffle and finite check
    of its rows on the calling thread whatever ``n_jobs`` (the shuffle of a group in place)."""
    from ooc_kernels.families.dsg import solver

    one = {"gathers_on_threads": lambda X: False, "take_rows": _take,
           "all_finite": _isfinite_all}
    saved = {k: getattr(solver, k) for k in one}
    if name == "rows-one-thread":
        for k, f in one.items():
            setattr(solver, k, f)
    try:
        yield
    finally:
        for k, f in saved.items():
            setattr(solver, k, f)


def fit_once(clock: Clock, X, y, kw: dict) -> dict:
    clock.reset()
    c, t = time.process_time(), time.perf_counter()
    clf = ok.DSGClassifier(**kw).fit(X, y)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    return {"wall_s": wall, "cpu_s": cpu, "parts": parts(clock, wall, cpu),
            "serial_wall_s": wall - clock.wall["kernel"], "coef": clf.coef_.copy(),
            "kernel_regions": clock.regions, "launches": clock.launches,
            "kernel_sleeps": clock.kernel_sleeps}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--bandwidth", type=float, default=3.96,
                    help="the value bandwidth='auto' chooses on this problem with one width")
    ap.add_argument("--bandwidth-file", type=Path, default=None,
                    help="JSON whose 'bandwidth' (a float or one width per input, as "
                         "threads_scaling.py --bandwidth-file writes it) replaces --bandwidth")
    ap.add_argument("--n-features", default="4096",
                    help="n_features of every fit: a number, or 'auto' (the classifier's "
                         "default, as threads_scaling.py runs it)")
    ap.add_argument("--scheduler", default="threads", choices=["threads", "sync"])
    ap.add_argument("--data-dir", type=Path, default=Path("data/bench_threads"))
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--variants", nargs="*", default=["now"],
                    choices=["now", "rows-one-thread"])
    ap.add_argument("--checkout", default=None,
                    help="a folder holding another version of the library to measure (e.g. "
                         "git archive of a commit, unpacked), imported instead of this one")
    args = ap.parse_args()
    path = ok.make_dataset("nonlinear_binary",
                           args.data_dir / f"nonlinear_binary32_train_{args.rows}.zarr",
                           args.rows, chunk_size=10_000, random_state=0, split="train",
                           exist_ok=True, progress=False, n_features=32)
    ds = open_zarr_dataset(path)
    X, y = ds["X"].data, ds["y"].data
    bandwidth = args.bandwidth
    if args.bandwidth_file is not None:
        bandwidth = json.loads(args.bandwidth_file.read_text())["bandwidth"]
        bandwidth = float(bandwidth) if np.ndim(bandwidth) == 0 else np.asarray(bandwidth)
    clock = Clock()
    install(clock)
    kw = dict(bandwidth=bandwidth, max_iter=2, tol=None, random_state=0,
              progress=False, chunks_per_round=1, scheduler=args.scheduler,
              n_features=args.n_features if args.n_features == "auto"
              else int(args.n_features))
    for t in args.threads:  # compile every kernel, off the clock
        ok.DSGClassifier(**{**kw, "max_iter": 1, "n_jobs": t}).fit(X[:40_000], y[:40_000])
    runs, first = [], None
    # one thread runs the rows on the calling thread in every variant: fitted once
    settings = [(t, v) for t in args.threads for v in args.variants
                if t > 1 or v == args.variants[0]]
    for rep in range(args.repeats):
        for t, name in settings:  # interleaved
            load = round(os.getloadavg()[0], 2)
            with variant(name):
                run = fit_once(clock, X, y, {**kw, "n_jobs": t})
            coef = run.pop("coef")
            first = coef if first is None else first
            run.update(n_jobs=t, variant=name, setting=f"n_jobs={t} {name}", repeat=rep,
                       load_before=load, bit_identical=bool(np.array_equal(coef, first)))
            runs.append(run)
            print(json.dumps(run), flush=True)

    def med(t, get):
        vals = [get(r) for r in runs if r["setting"] == t]
        return None if vals[0] is None else statistics.median(vals)

    names = list(runs[0]["parts"])
    summary = {t: {"wall_s": med(t, lambda r: r["wall_s"]),
                   "cpu_s": med(t, lambda r: r["cpu_s"]),
                   "serial_wall_s": med(t, lambda r: r["serial_wall_s"]),
                   "kernel_regions": med(t, lambda r: r["kernel_regions"]),
                   "launches": med(t, lambda r: r["launches"]),
                   "kernel_sleeps": med(t, lambda r: r["kernel_sleeps"]),
                   "bit_identical": all(r["bit_identical"] for r in runs
                                        if r["setting"] == t),
                   "parts": {p: {k: med(t, lambda r, p=p, k=k: r["parts"][p][k])
                                 for k in ("wall_s", "cpu_s")} for p in names}}
               for t in dict.fromkeys(r["setting"] for r in runs)}
    keys = list(summary)
    print(f"\nrows={args.rows}, n_features={args.n_features}, {args.scheduler} scheduler, "
          f"{len(os.sched_getaffinity(0))} cores, medians of {args.repeats}, load before each "
          f"fit {[r['load_before'] for r in runs]}\n")
    head = " | ".join(f"`{t}` wall s | CPU s" for t in keys)
    print(f"| part | runs on | {head} |")
    print("|---|---|" + "---|---|" * len(keys))

    def fmt(v):
        return "-" if v is None else f"{v:.2f}"

    for p in names:
        vals = " | ".join(f"{fmt(summary[t]['parts'][p]['wall_s'])} | "
                          f"{fmt(summary[t]['parts'][p]['cpu_s'])}" for t in keys)
        print(f"| {p} | {RUNS_ON.get(p, '')} | {vals} |")
    print("| **fit** | | " + " | ".join(f"**{summary[t]['wall_s']:.2f}** | "
                                        f"**{summary[t]['cpu_s']:.2f}**"
                                        for t in keys) + " |")
    print("| serial wall (fit less the kernel) | | " + " | ".join(
        f"{summary[t]['serial_wall_s']:.2f} | " for t in keys) + " |")
    print("| step kernel's parallel regions / launches / its threads' sleeps | | " + " | ".join(
        f"{summary[t]['kernel_regions']} / {summary[t]['launches']} / "
        f"{summary[t]['kernel_sleeps']} | " for t in keys) + " |")
    print("\nbit-identical to the first fit:", {t: summary[t]["bit_identical"] for t in keys})
    out = args.json or RESULTS / f"threads_parts_{args.rows}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "command": "python benchmarks/threads_parts.py " + " ".join(
            f"--{k.replace('_', '-')} {' '.join(map(str, v)) if isinstance(v, list) else v}"
            for k, v in vars(args).items() if v not in (None, [])),
        "bandwidth": np.asarray(bandwidth).tolist(),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "summary": summary, "runs": runs}, indent=1))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
