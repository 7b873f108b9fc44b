"""The set-up of a default ``DSGClassifier`` fit on a ``distributed.Client``: the classes of
``y`` and the sampled rows read in one computation of one task per chunk (the library's
way, :func:`~ooc_kernels.parallel.sampling.labels_and_rows`) against two computations (the
classes by ``da.unique``, then the rows by ``sample_rows``, a task per chunk read and per
row selection), interleaved in one process on one ``LocalCluster``.

Run from the repository root::

    python benchmarks/setup_client.py --rows 200000 --threads 2 --repeats 20

Data: the ``nonlinear_binary`` store of ``--rows`` x 32 (10,000-row chunks) that
``benchmarks/threads_scaling.py`` writes under ``--data-dir`` (written here when missing).
Model: ``DSGClassifier(bandwidth=1.0, random_state=0, n_features=--n-features)``, every
other parameter at its default, as in ``benchmarks/threads_client.py``.  Each repeat runs
the estimator's set-up (``_start``: the classes, the sample, the standardization and step
size, the initial state) once each way, in alternating order, after one call of each off
the clock: ``one`` as the library does it, ``two`` with the rows read after the classes
(``_setup_draw`` returning None: the reads of a set-up that samples on its own).  Per call:
wall-clock and CPU seconds (this process plus the worker's), the computations the
scheduler received, and whether both ways set up the same model (the classes, the
configuration and the initial state: they must).  Prints one JSON line per call and the
medians, and writes ``benchmarks/results/setup_client_<rows>.json`` (or ``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

RESULTS = Path(__file__).resolve().parent / "results"


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--n-features", type=int, default=16_384)
    ap.add_argument("--threads", type=int, default=2, help="the worker's threads")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--data-dir", type=Path, default=Path("data/bench_threads"))
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()

    import distributed

    import ooc_kernels as ok
    from ooc_kernels.data.schema import open_zarr_dataset
    from threads_scaling import store

    train = open_zarr_dataset(store(args.data_dir, args.rows, "train"))
    X, y = train["X"].data, train["y"].data
    params = dict(bandwidth=1.0, random_state=0, progress=False, n_features=args.n_features)
    rows = []
    with distributed.LocalCluster(n_workers=1, threads_per_worker=args.threads,
                                  processes=True, dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:

        def setup(way: str) -> tuple[dict, bytes]:
            est = ok.DSGClassifier(**params, scheduler=client)
            if way == "two":   # an instance attribute: the rows are read on their own
                est._setup_draw = lambda data: None
            data = est._fit_data(X, y, reset=True)
            est._resolve_tasks_per_round(client, keep=False)
            est._seed()
            load = round(os.getloadavg()[0], 2)
            worker = sum(client.run(_cpu).values())
            gets = []
            real_get = client.get

            def get(*a, **kw):   # every dask.compute through the Client calls its get
                gets.append(1)
                return real_get(*a, **kw)

            client.get = get
            try:
                with distributed.get_task_stream(client=client) as ts:
                    cpu, start = _cpu(), time.time()
                    est._start(data, client)
                    wall = time.time() - start
                    cpu = _cpu() - cpu
            finally:
                del client.get
            cpu += sum(client.run(_cpu).values()) - worker
            model = pickle.dumps((est.classes_, est._config, est._state))
            return {"way": way, "setup_s": wall, "cpu_s": cpu, "tasks": len(ts.data),
                    "computations": len(gets), "load": load}, model

        for way in ("one", "two"):
            setup(way)
        for rep in range(args.repeats):
            order = ("one", "two") if rep % 2 == 0 else ("two", "one")
            got = {}
            for way in order:
                row, got[way] = setup(way)
                row["repeat"] = rep
                rows.append(row)
            for row in rows[-2:]:
                row["same"] = got["one"] == got["two"]
                print(json.dumps({k: round(v, 4) if isinstance(v, float) else v
                                  for k, v in row.items()}), flush=True)
    keys = ("setup_s", "cpu_s", "tasks", "computations")
    medians = {way: {k: statistics.median(r[k] for r in rows if r["way"] == way)
                     for k in keys} for way in ("one", "two")}
    for way, m in medians.items():
        print(way, " ".join(f"{k}={v:.4f}" for k, v in m.items()))
    out = args.json or RESULTS / f"setup_client_{args.rows}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {"cores": os.cpu_count(), "processor": platform.processor(),
                    "python": platform.python_version()},
        "rows": args.rows, "n_features": args.n_features, "threads": args.threads,
        "repeats": args.repeats, "runs": rows, "medians": medians,
        "all_same": all(r["same"] for r in rows)}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
