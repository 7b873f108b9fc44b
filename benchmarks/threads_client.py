"""A DSG fit on a ``distributed.Client`` with one worker of ``T`` threads against the local
threaded scheduler with ``n_jobs=T``: whole fits, and where the Client's fit spends its time.

Run from the repository root::

    python benchmarks/threads_client.py --rows 200000 --threads 2 --repeats 5
    python benchmarks/threads_client.py --rows 400000 --threads 16 --repeats 3

Data: the ``nonlinear_binary`` store of ``--rows`` x 32 (10,000-row chunks) that
``benchmarks/threads_scaling.py`` writes under ``--data-dir`` (written here when missing).
Model: ``DSGClassifier(bandwidth=1.0, max_iter=2, tol=None, random_state=0,
n_features=--n-features)``, every other parameter at its default (``chunks_per_round="auto"``
is 1 on both: one worker).

One ``LocalCluster(n_workers=1, threads_per_worker=T)`` is started; both kinds of fit run
once off the clock (numba's compilation, the worker's imports), then ``--repeats`` times,
interleaved (threads, client, threads, client ...).  For every fit the script prints one
JSON line:

* ``fit_s``: wall-clock seconds of ``fit``; ``cpu_s``: CPU seconds of the fit, this process
  plus (on the Client) the worker's process;
* ``setup_s``: from the start of ``fit`` to the start of the first ``chunk_step`` (the
  set-up's sampling, checks and statistics, and the first round's scheduling);
* ``steps_s``: the sum of the ``chunk_step`` calls' wall-clock seconds (where they run: the
  main process on the threaded scheduler, the worker on the Client), ``n_steps`` of them;
* ``between_s``: the wall-clock seconds between one ``chunk_step``'s end and the next's start,
  summed over the fit (``apply``, ``make_tasks``, reading the rows that were not read ahead,
  and on the Client the scheduler's hand-offs);
* ``tasks``: on the Client, the fit's tasks (from Dask's task stream) and ``chunk_tasks_s``,
  the time the tasks that ran a ``chunk_step`` took;
* ``same``: whether the Client's model equals the threaded scheduler's bit for bit (it must);
* ``load``: the 1-minute load average before the fit.

Then the medians of each kind, and the JSON file (``--json``, default
``benchmarks/results/threads_client_<rows>.json``).  ``--checkout FOLDER`` measures another
version of the library (``git archive`` of a commit unpacked into FOLDER: its
``ooc_kernels`` is imported instead, in this process and the worker's): run the script for
each version in turn to compare two versions on the same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _checkout import use_checkout, use_checkout_of_argv  # noqa: E402

if __name__ == "__main__":  # --checkout FOLDER: import that version of the library instead
    use_checkout_of_argv(sys.argv)

RESULTS = Path(__file__).resolve().parent / "results"


def _record_steps(checkout: str | None = None) -> None:
    """Time every ``DSGAlgorithm.chunk_step`` call of this process (start and end, seconds
    since the epoch); in a worker, import ``checkout``'s library first."""
    if checkout:
        use_checkout(checkout)
    from ooc_kernels.families.dsg import solver

    if getattr(solver.DSGAlgorithm, "_timed", False):
        return
    real = solver.DSGAlgorithm.chunk_step
    solver.STEP_TIMES = []

    def chunk_step(self, state, batch, task):
        start = time.time()
        try:
            return real(self, state, batch, task)
        finally:
            solver.STEP_TIMES.append((start, time.time()))

    solver.DSGAlgorithm.chunk_step = chunk_step
    solver.DSGAlgorithm._timed = True


def _take_steps() -> list:
    from ooc_kernels.families.dsg import solver

    out = list(solver.STEP_TIMES)
    solver.STEP_TIMES.clear()
    return out


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def _where() -> str:
    import ooc_kernels

    return str(Path(ooc_kernels.__file__).resolve().parent)


def _split(start: float, wall: float, steps: list) -> dict:
    steps = sorted(steps)
    return {"setup_s": steps[0][0] - start if steps else None,
            "steps_s": sum(b - a for a, b in steps), "n_steps": len(steps),
            "between_s": sum(steps[i + 1][0] - steps[i][1] for i in range(len(steps) - 1)),
            "tail_s": start + wall - steps[-1][1] if steps else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--n-features", type=int, default=16_384)
    ap.add_argument("--threads", type=int, default=2, help="T: the worker's threads and "
                    "the threaded scheduler's n_jobs")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--data-dir", type=Path, default=Path("data/bench_threads"))
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--worker-env", nargs="*", default=[], metavar="NAME=VALUE",
                    help="environment variables of the worker process (e.g. "
                    "GOMP_SPINCOUNT=1000)")
    ap.add_argument("--checkout", default=None,
                    help="import ooc_kernels from this folder (another version)")
    args = ap.parse_args()
    checkout = str(Path(args.checkout).resolve()) if args.checkout else None

    import distributed
    import numpy as np

    import ooc_kernels as ok
    from ooc_kernels.data.schema import open_zarr_dataset
    from threads_scaling import store

    path = store(args.data_dir, args.rows, "train")
    train = open_zarr_dataset(path)
    X, y = train["X"].data, train["y"].data
    params = dict(bandwidth=1.0, max_iter=2, tol=None, random_state=0, progress=False,
                  n_features=args.n_features)
    T = args.threads
    _record_steps()
    rows, models = [], {}
    env = dict(item.split("=", 1) for item in args.worker_env)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=T, processes=True,
                                  dashboard_address=None, env=env) as cluster, \
            distributed.Client(cluster) as client:
        client.run(_record_steps, checkout)
        worker_lib = next(iter(client.run(_where).values()))
        if worker_lib != _where():
            raise SystemExit(f"the worker imported {worker_lib}, this process {_where()}: "
                             "start the script from a fresh shell")

        def fit(kind: str) -> dict:
            load = round(os.getloadavg()[0], 2)
            sched = {"scheduler": "threads", "n_jobs": T} if kind == "threads" else \
                {"scheduler": client}
            cpu_worker = sum(client.run(_cpu).values()) if kind == "client" else 0.0
            cpu, start = _cpu(), time.time()
            with distributed.get_task_stream(client=client) as ts:
                model = ok.DSGClassifier(**params, **sched).fit(X, y)
            wall = time.time() - start
            cpu = _cpu() - cpu
            if kind == "client":
                cpu += sum(client.run(_cpu).values()) - cpu_worker
                steps = next(iter(client.run(_take_steps).values()))
            else:
                steps = _take_steps()
            out = {"what": kind, "fit_s": wall, "cpu_s": cpu, **_split(start, wall, steps),
                   "load": load}
            if kind == "client":
                done = [(s["start"], s["stop"]) for t in ts.data for s in t["startstops"]
                        if s["action"] == "compute"]
                out["tasks"] = len(done)
                out["chunk_tasks_s"] = sum(
                    b - a for a, b in done
                    if any(a <= s0 and s1 <= b for s0, s1 in steps))
            models[kind] = model._fitted_arrays()
            if len(models) == 2:
                out["same"] = all(np.array_equal(models["threads"][k], models["client"][k])
                                  for k in models["threads"])
            return out

        fit("threads")
        fit("client")
        for rep in range(args.repeats):
            for kind in ("threads", "client"):
                row = {"repeat": rep, **fit(kind)}
                rows.append(row)
                print(json.dumps({k: round(v, 4) if isinstance(v, float) else v
                                  for k, v in row.items()}), flush=True)
    keys = ("fit_s", "cpu_s", "setup_s", "steps_s", "between_s")
    medians = {kind: {k: statistics.median(r[k] for r in rows if r["what"] == kind)
                      for k in keys} for kind in ("threads", "client")}
    for kind, m in medians.items():
        print(kind, " ".join(f"{k}={v:.3f}" for k, v in m.items()))
    ratio = medians["client"]["fit_s"] / medians["threads"]["fit_s"]
    print(f"client / threads (median fit): {ratio:.3f}")
    out = args.json or RESULTS / f"threads_client_{args.rows}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {"cores": os.cpu_count(), "processor": platform.processor(),
                    "python": platform.python_version()},
        "library": _where(), "worker_library": worker_lib, "rows": args.rows,
        "n_features": args.n_features, "threads": T, "repeats": args.repeats,
        "worker_env": env,
        "runs": rows, "medians": medians, "client_over_threads": ratio}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
