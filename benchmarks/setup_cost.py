"""What the setup of a default ``DSGClassifier`` fit costs, step by step, on a 200,000 x 32
``nonlinear_binary`` Zarr store (chunks of 10,000 rows).

Every fit is ``DSGClassifier(max_iter=1, tol=None, random_state=0)`` with every other
parameter at its default (``bandwidth="auto"``, standardized rows, 4,096 features), on Dask's
threaded scheduler.  The steps are timed by wrapping the functions that run them:

* ``classes``: the distinct labels, a Dask reduction over ``y`` (one task per chunk);
* ``sample``: the rows sampled for the setup, read from 8 chunks (one task per chunk);
* ``standardization``: the shifts and scales, from the sample;
* ``per-input widths``: :func:`~ooc_kernels.families.dsg._ard.per_input_shape`, the choice
  between one width and per-input widths (a quick ARD search and two leave-one-out
  comparisons), and the full ARD search where it takes them;
* ``bandwidth trials``: :func:`~ooc_kernels.families.dsg._bandwidth.select_bandwidth`, the
  5 short trial fits (each with the growth-step eigenvalue of its schedule);
* ``curvature``: the largest eigenvalue of the weighted kernel operator on 1,000 rows;
* ``setup``: the whole of ``_initialize``; ``fit``: the whole fit (setup and one epoch).

Each step reports its wall-clock seconds and, as ``<step> cpu``, the CPU seconds of the
whole process meanwhile (every thread): on a loaded machine the wall clock follows the other
jobs, the CPU seconds much less.

One warm-up fit compiles the kernels first; then ``--repeats`` fits, and the medians.
``--setup-only`` ends every fit after its setup (no epoch, no ``fit`` figure).
``--parts`` times instead two of the setup's costs against their replacements
(:func:`parts`).
``--trial-threads N`` runs the trials on ``N`` threads in all (the default: every core the
process may use); ``--trial-threads 1`` is the trials one after the other.  ``--check``
also asserts that every setting picked the same bandwidth.

    python benchmarks/setup_cost.py --repeats 3 --trial-threads 1 2 \\
        --out benchmarks/results/setup_cost.json
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

N_ROWS, N_FEATURES, CHUNK_ROWS = 200_000, 32, 10_000


def _timed(owner, name: str, label: str, clock: dict) -> None:
    real = getattr(owner, name)

    @functools.wraps(real)
    def wrapper(*args, **kwargs):
        start, cpu = time.perf_counter(), time.process_time()
        try:
            return real(*args, **kwargs)
        finally:
            clock[label] += time.perf_counter() - start
            clock[label + " cpu"] += time.process_time() - cpu

    setattr(owner, name, wrapper)


class _SetupDone(Exception):
    """Ends a ``--setup-only`` fit."""


def _instrument(clock: dict, trials: dict, setup_only: bool) -> None:
    """Wrap the setup's steps with timers (once per process); ``trials["threads"]`` is the
    ``threads`` the bandwidth trials get (None: the library's default)."""
    from ooc_kernels.estimators._mixins import ChunkedClassifierMixin
    from ooc_kernels.families.dsg import estimators as dsg

    select = dsg.select_bandwidth

    def select_bandwidth(*args, **kwargs):
        if trials["threads"] is not None:
            kwargs["threads"] = trials["threads"]
        return select(*args, **kwargs)

    dsg.select_bandwidth = select_bandwidth
    _timed(ChunkedClassifierMixin, "_resolve_classes", "classes", clock)
    _timed(dsg._DSGEstimator, "_sample", "sample", clock)
    _timed(dsg._DSGEstimator, "_standardization", "standardization", clock)
    _timed(dsg, "per_input_shape", "per-input widths", clock)
    _timed(dsg, "select_bandwidth", "bandwidth trials", clock)
    _timed(dsg._DSGEstimator, "_curvature", "curvature", clock)
    _timed(dsg._DSGEstimator, "_initialize", "setup", clock)
    if setup_only:
        timed_init = dsg._DSGEstimator._initialize

        def initialize(self, *args, **kwargs):
            timed_init(self, *args, **kwargs)
            raise _SetupDone

        dsg._DSGEstimator._initialize = initialize


def warm_up() -> None:
    """Compile the kernels and start the thread pools (before the timers are in place)."""
    import numpy as np

    import ooc_kernels as ok

    rng = np.random.default_rng(0)
    Xw = rng.normal(size=(20_000, N_FEATURES)).astype(np.float32)
    ok.DSGClassifier(max_iter=1, tol=None, random_state=0, progress=False).fit(
        Xw, (Xw[:, 0] > 0).astype(int))


def run(store: Path, repeats: int, clock: dict) -> dict:
    import numpy as np

    import ooc_kernels as ok
    from ooc_kernels.data.schema import open_zarr_dataset

    runs, bandwidths = defaultdict(list), []
    for _ in range(repeats):
        clock.clear()
        start = time.perf_counter()
        clf = ok.DSGClassifier(max_iter=1, tol=None, random_state=0, progress=False)
        try:
            clf.fit(open_zarr_dataset(store))
            clock["fit"] = time.perf_counter() - start
        except _SetupDone:
            pass
        for label, seconds in clock.items():
            runs[label].append(round(seconds, 3))
        bandwidths.append(np.round(np.asarray(clf.bandwidth_, dtype=float), 6).tolist())
    return {"bandwidths": bandwidths,
            "median_s": {k: round(statistics.median(v), 3) for k, v in runs.items()},
            "runs_s": dict(runs)}


def parts(repeats: int) -> dict:
    """Two costs of the setup, each against its replacement, interleaved in one process:
    the median of the 2,000-row sample's pairwise distances by a sort (the weighted path,
    which unit weights used to take) and by a partition; entering the one-BLAS-thread limit
    with nobody holding it (``threadpoolctl`` finds the BLAS libraries every time) and while
    it is held (a counter)."""
    import numpy as np
    from scipy.spatial.distance import pdist

    from ooc_kernels._blas import single_threaded_blas
    from ooc_kernels._moments import weighted_median

    dist = pdist(np.random.default_rng(0).normal(size=(2000, N_FEATURES)))
    ones = np.ones(len(dist))

    def sort():
        weighted_median(np.append(dist, 0.0), np.append(ones, 0.0))

    def partition():
        np.median(dist)

    def enter():
        with single_threaded_blas():
            pass

    runs = defaultdict(list)
    for _ in range(repeats):
        for name, fn in (("median by sort", sort), ("median by partition", partition),
                         ("BLAS limit, first entry", enter)):
            start = time.perf_counter()
            fn()
            runs[name].append(time.perf_counter() - start)
        with single_threaded_blas():
            start = time.perf_counter()
            enter()
            runs["BLAS limit, while held"].append(time.perf_counter() - start)
    return {k: round(statistics.median(v), 6) for k, v in runs.items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--trial-threads", type=int, nargs="*", default=[])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--setup-only", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--parts", action="store_true")
    args = parser.parse_args(argv)
    if args.parts:
        print(json.dumps(parts(args.repeats)))
        return
    import ooc_kernels as ok

    settings = args.trial_threads or [None]
    results = []
    clock: dict = defaultdict(float)
    trials: dict = {"threads": None}
    with tempfile.TemporaryDirectory() as tmp:
        store = ok.make_dataset("nonlinear_binary", Path(tmp) / "setup.zarr", N_ROWS,
                                chunk_size=CHUNK_ROWS, n_features=N_FEATURES,
                                progress=False)
        warm_up()
        _instrument(clock, trials, args.setup_only)
        for threads in settings:
            trials["threads"] = threads
            row = {"trial_threads": threads, **run(store, args.repeats, clock)}
            print(json.dumps(row), flush=True)
            results.append(row)
    if args.check:
        chosen = {json.dumps(b) for row in results for b in row["bandwidths"]}
        assert len(chosen) == 1, f"the settings chose different bandwidths: {chosen}"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
