"""Resident memory of out-of-core fits: one epoch's growth by ``shuffle_chunks`` and
allocator setting, and (``--default-fit``) the peak of a default fit on a 1 GB store.

Runs ``tests/_ooc_fit_worker.py`` (a fresh interpreter: warm-up fit, then one epoch over a
384 MiB ``nonlinear_binary`` store, resident memory sampled every 5 ms) several times for
each setting, with glibc's default allocator policy and with ``MALLOC_TRIM_THRESHOLD_=65536``
(what Dask's nanny gives every distributed worker), and prints the medians as JSON.

    python benchmarks/fit_memory.py --repeats 3 --out benchmarks/results/fit_memory.json

``--default-fit``: a ``nonlinear_binary`` store of 1 GB of float32 ``X`` (2,621,440 rows x 100
features, chunks of 10,000 rows, the layout of ``benchmarks/larger_than_memory.py``), and
for each setting a fresh process that fits ``DSGClassifier(max_iter=1, tol=None,
random_state=0)`` (every other parameter at its default: ``bandwidth="auto"``, 4,096
features, the threaded scheduler, ``n_jobs=None``: every core) on it, with resident memory
(``VmRSS``) sampled every 5 ms and the peak (``VmHWM``) read at the end.  It reports the
process's peak, its memory after the imports and a warm-up fit (``baseline``: the
interpreter, NumPy, Dask, numba and the compiled kernels), the peak during the setup (the
sample, the bandwidth trials) and during the rounds.  ``--rounds N`` ends each fit after
``N`` rounds (a round's memory is the same all epoch long; 0: the whole epoch).  The
settings: the defaults, ``n_jobs=1``, and ``OOC_KERNELS_FEATURE_CACHE_MB`` = 32::

    python benchmarks/fit_memory.py --default-fit --repeats 3 --rounds 40 \
        --out benchmarks/results/fit_memory_default.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / "tests" / "_ooc_fit_worker.py"
CHUNK_ROWS, N_FEATURES = 10_000, 32
N_ROWS = 12 * 32 * 2**20 // (4 * N_FEATURES)   # 384 MiB of float32 X


DEFAULT_ROWS, DEFAULT_FEATURES = 2**30 // (4 * 100), 100   # 1 GiB of float32 X
#: ``(name, extra constructor parameters, extra environment)`` of ``--default-fit``.
DEFAULT_SETTINGS = (("defaults", {}, {}),
                    ("n_jobs=1", {"n_jobs": 1}, {}),
                    ("OOC_KERNELS_FEATURE_CACHE_MB=32", {}, {"OOC_KERNELS_FEATURE_CACHE_MB": "32"}))


class _EnoughRounds(Exception):
    """Ends a ``--rounds`` fit."""


def _default_fit_worker(store: str, rounds: int, params: dict) -> None:
    """Body of one ``--default-fit`` process: prints one JSON line."""
    import threading
    import time

    import numpy as np

    import ooc_kernels as ok
    from ooc_kernels.data.schema import open_zarr_dataset
    from ooc_kernels.families.dsg import estimators as dsg
    from _procmem import status_bytes

    rng = np.random.default_rng(0)   # warm up: imports, compiled kernels, thread pools
    Xw = rng.normal(size=(20_000, DEFAULT_FEATURES)).astype(np.float32)
    ok.DSGClassifier(max_iter=1, tol=None, random_state=0, progress=False,
                     **params).fit(Xw, (Xw[:, 0] > 0).astype(int))
    baseline = status_bytes("VmRSS")
    phase = {"name": "setup"}
    peaks = {"setup": baseline, "rounds": baseline}
    done = threading.Event()

    def sample():
        while not done.is_set():
            name = phase["name"]
            peaks[name] = max(peaks[name], status_bytes("VmRSS"))
            time.sleep(0.005)

    real_init, real_after = dsg._DSGEstimator._initialize, dsg._DSGEstimator._after_round
    count = {"rounds": 0}

    def initialize(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        peaks["setup"] = max(peaks["setup"], status_bytes("VmRSS"))
        phase["name"] = "rounds"

    def after_round(self, state, info):
        real_after(self, state, info)
        count["rounds"] += 1
        if rounds and count["rounds"] >= rounds:
            raise _EnoughRounds

    dsg._DSGEstimator._initialize, dsg._DSGEstimator._after_round = initialize, after_round
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    try:
        ok.DSGClassifier(max_iter=1, tol=None, random_state=0, progress=False,
                         **params).fit(open_zarr_dataset(store))
    except _EnoughRounds:
        pass
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    mib = 2 ** 20
    print(json.dumps({"baseline_mib": baseline / mib, "setup_peak_mib": peaks["setup"] / mib,
                      "rounds_peak_mib": peaks["rounds"] / mib,
                      "peak_mib": status_bytes("VmHWM") / mib, "rounds": count["rounds"],
                      "seconds": seconds}))


def default_fit(repeats: int, rounds: int, out: Path | None, store_dir: str | None) -> None:
    """``--default-fit`` (see the module docstring): medians over ``repeats`` processes per
    setting, the settings interleaved run by run."""
    import ooc_kernels as ok

    with tempfile.TemporaryDirectory(dir=store_dir) as tmp:
        store = ok.make_dataset("nonlinear_binary", Path(tmp) / "gb.zarr", DEFAULT_ROWS,
                                chunk_size=CHUNK_ROWS, n_features=DEFAULT_FEATURES,
                                progress=False)
        runs: dict = {name: [] for name, _, _ in DEFAULT_SETTINGS}
        for _ in range(repeats):
            for name, params, env in DEFAULT_SETTINGS:
                done = subprocess.run(
                    [sys.executable, __file__, "--worker", str(store), str(rounds),
                     json.dumps(params)], check=True, text=True, capture_output=True,
                    env=dict(os.environ, **env))
                report = json.loads(done.stdout.strip().splitlines()[-1])
                print(json.dumps({"setting": name, **report}), flush=True)
                runs[name].append(report)
    results = [{"setting": name, "rounds": rounds, "runs": len(reports),
                **{key: round(statistics.median(r[key] for r in reports), 1)
                   for key in ("baseline_mib", "setup_peak_mib", "rounds_peak_mib",
                               "peak_mib", "seconds")}}
               for name, reports in runs.items()]
    for row in results:
        print(json.dumps(row), flush=True)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=1) + "\n")


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        _default_fit_worker(argv[1], int(argv[2]), json.loads(argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--default-fit", action="store_true")
    parser.add_argument("--rounds", type=int, default=0)
    parser.add_argument("--store-dir", default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shuffle-chunks", nargs="+", default=["1", "2", "4", "auto"])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.default_fit:
        default_fit(args.repeats, args.rounds, args.out, args.store_dir)
        return
    import ooc_kernels as ok

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        store = ok.make_dataset("nonlinear_binary", Path(tmp) / "big.zarr", N_ROWS,
                                chunk_size=CHUNK_ROWS, n_features=N_FEATURES, progress=False)
        for allocator, extra in (("glibc default", {}),
                                 ("MALLOC_TRIM_THRESHOLD_=65536", {"MALLOC_TRIM_THRESHOLD_":
                                                                   "65536"})):
            for shuffle in args.shuffle_chunks:
                growth, seconds = [], []
                for _ in range(args.repeats):
                    out = subprocess.run([sys.executable, str(WORKER), str(store),
                                          str(CHUNK_ROWS), shuffle], check=True, text=True,
                                         capture_output=True, env=dict(os.environ, **extra))
                    report = json.loads(out.stdout.strip().splitlines()[-1])
                    growth.append((report["peak"] - report["baseline"]) / 2**20)
                    seconds.append(report["seconds"])
                row = {"allocator": allocator, "shuffle_chunks": shuffle,
                       "shuffle_chunks_": report["shuffle_chunks_"],
                       "growth_mib_median": round(statistics.median(growth), 1),
                       "growth_mib_runs": [round(g, 1) for g in growth],
                       "seconds_median": round(statistics.median(seconds), 2)}
                print(json.dumps(row), flush=True)
                results.append(row)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
