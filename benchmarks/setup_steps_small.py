"""Where the set-up of ``DSGClassifier()`` goes on small data: CPU seconds of each step of
``bandwidth="auto"``'s set-up on digits (1,347 rows, 64 inputs, in memory) and ``binary10``
(``--n`` rows of 10 inputs of which 5 carry the label, a Zarr store): the problems of
:mod:`dsg_defaults_suite`.

Every fit is ``DSGClassifier(random_state=seed, max_iter=1, tol=None)``, the second and
later fits of the process (the first, seed 0, warms the compiled kernels and is not
recorded; every seed is then fitted ``--repeats`` times).  The steps are timed by wrapping
the functions that run them: the per-input width decision, the leave-one-out scan and
their parts count the CPU seconds of the thread that ran them (``time.thread_time``: with
2 threads or more the scan runs on a thread of its own beside the decision), the other
steps, the set-up (``_initialize``) and the fit those of the whole process; every step
also has its wall seconds.  Each record also holds the choices
(widths, ``alpha``, the scaling, the leave-one-out scores) and the test accuracy, to
compare two versions of the library: run the script of one tree with the library of the
other first on ``PYTHONPATH``.

    python benchmarks/setup_steps_small.py --problems digits binary10 --n 20000 --seeds 3 \\
        --out benchmarks/results/setup_steps_small_after.json
    python benchmarks/setup_steps_small.py --parts --repeats 41 \\
        --out benchmarks/results/setup_small_data_parts.json

``--parts`` times instead (CPU milliseconds under one BLAS thread, medians) the operations
the set-up's choices rest on: one evaluation of the quick ARD search's criterion and its
gradient with float64 products and with the search's float32 criterion object, NumPy's cosine of the quick ARD search's 1,000 x 256 phases
in float64 and float32, and on a 500-row kernel matrix one symmetric eigendecomposition
(which would score every ``alpha`` at once), a Cholesky factorization with the whole
inverse, and the factorization with two triangular solves and the triangular inverse
(:func:`~ooc_kernels.features.ard.solve_spd`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import numpy as np

#: ``(module attribute path, step name)`` of the wrapped functions.
STEPS = [
    ("estimators._DSGEstimator._initialize", "set-up"),
    ("estimators._DSGEstimator._sample", "sampled rows"),
    ("estimators.per_input_shape", "per-input width decision"),
    ("_ard.ard_scales", "  its quick ARD search"),
    ("_ard.loo_score", "  its leave-one-out comparison"),
    ("_setup_loo.select_setup_loo", "leave-one-out scan"),
    ("_setup_loo.random_feature_gram", "  its Gram matrices"),
    ("_setup_loo.loo_predictions", "  its factorizations"),
    ("_setup_loo.median_heuristic", "  its median distances"),
    ("estimators.growth_step_eigenvalue", "step size's eigenvalue"),
    ("estimators._DSGEstimator._curvature", "curvature's eigenvalue"),
]

#: Steps that may run beside one another (CPU seconds of their own thread); the others
#: count the whole process's when they run on the main thread, their thread's elsewhere
#: (the eigenvalues on the scan's thread).
SIDE_BY_SIDE = {name for _, name in STEPS[2:9]}

#: Per-thread CPU seconds of the current fit's set-up: the main thread's over the whole
#: set-up, before the scan's thread starts and after its answer is taken, and each other
#: thread's (the outermost timed steps run on it).
THREADS: dict = {}
_depth = threading.local()


def _critical_path(threads: dict) -> dict:
    """The estimate of the set-up's wall seconds on 2 idle threads: the main thread's CPU
    (with half the step eigenvalue's when its draws ran on 2 threads, and the longest
    thread of each evaluation the quick search or a leave-one-out score shared), or the main thread's part before the fork, the longest other thread and the main
    thread's part after the join, whichever is longer, and never under half the set-up's
    CPU seconds over all threads."""
    main = threads.get("main", 0.0)
    others = {k: v for k, v in threads.items() if k not in ("main", "before", "after")}
    longest = max(others.values(), default=0.0)
    path = max(main, threads.get("before", 0.0) + longest + threads.get("after", 0.0))
    return {"main": round(main, 4), "longest other": round(longest, 4),
            "other threads": {k: round(v, 4) for k, v in others.items()},
            "estimate": round(max(path, (main + sum(others.values())) / 2), 4)}


def _wrap_threads() -> None:
    from ooc_kernels.families.dsg import _setup_loo, estimators

    ahead, init = _setup_loo.SetupLOOAhead, estimators._DSGEstimator._initialize

    def initialize(*args, **kwargs):
        THREADS.clear()
        start = time.thread_time()
        try:
            return init(*args, **kwargs)
        finally:
            # the main thread's, with the step eigenvalue's draws when they ran on a pool of
            # 2 threads after the join (half their CPU seconds)
            pool = THREADS.pop("pool", 0.0)
            THREADS["main"] = time.thread_time() - start + pool + THREADS.pop("shared", 0.0)
            THREADS["after"] = time.thread_time() - THREADS.pop(
                "_joined", time.thread_time()) + pool
            THREADS["before"] = THREADS.pop("_forked", start) - start

    real_new, real_result = ahead.__init__, ahead.result

    def new(self, *args, **kwargs):
        THREADS["_forked"] = time.thread_time()
        real_new(self, *args, **kwargs)

    def result(self, *args, **kwargs):
        try:
            return real_result(self, *args, **kwargs)
        finally:
            THREADS["_joined"] = time.thread_time()

    estimators._DSGEstimator._initialize = initialize
    ahead.__init__, ahead.result = new, result
    from ooc_kernels.features import ard

    # the name the quick search calls its shared evaluations by (older libraries:
    # ``_in_order``; none: a library whose quick search runs on one thread)
    name = next((n for n in ("map_in_order", "_in_order") if hasattr(ard, n)), None)
    if name is None:
        return
    real_in_order = getattr(ard, name)

    def in_order(function, items, threads=None):
        """The longest of the threads a shared evaluation ran on, other than the calling
        thread (whose CPU seconds its own clock counts), as the main thread's."""
        if threading.current_thread() is not threading.main_thread():
            return real_in_order(function, items, threads)
        spent: dict = {}

        def timed(item):
            start = time.thread_time()
            try:
                return function(item)
            finally:
                name = threading.current_thread().name
                spent[name] = spent.get(name, 0.0) + time.thread_time() - start

        try:
            return real_in_order(timed, items, threads)
        finally:
            spent.pop(threading.main_thread().name, None)
            THREADS["shared"] = THREADS.get("shared", 0.0) + max(spent.values(), default=0.0)

    setattr(ard, name, in_order)


def _wrap(clock: dict) -> None:
    from ooc_kernels.families.dsg import _ard, _setup_loo, estimators

    _wrap_threads()
    modules = {"estimators": estimators, "_ard": _ard, "_setup_loo": _setup_loo}
    for path, name in STEPS:
        module, *attrs = path.split(".")
        owner = modules[module]
        if attrs == ["select_setup_loo"] and hasattr(estimators, "select_setup_loo"):
            owner = estimators  # a version whose estimator calls it by its own name
        for attr in attrs[:-1]:
            owner = getattr(owner, attr)
        real = getattr(owner, attrs[-1])

        def timed(*args, _real=real, _name=name, **kwargs):
            main = threading.current_thread() is threading.main_thread()
            _cpu = time.process_time if main and _name not in SIDE_BY_SIDE \
                else time.thread_time
            outermost = not main and not getattr(_depth, "n", 0)
            _depth.n = getattr(_depth, "n", 0) + 1
            start, wall, own = _cpu(), time.perf_counter(), time.thread_time()
            try:
                return _real(*args, **kwargs)
            finally:
                _depth.n -= 1
                entry = clock.setdefault(_name, [0.0, 0.0])
                entry[0] += _cpu() - start
                entry[1] += time.perf_counter() - wall
                if outermost:
                    key = threading.current_thread().name
                    THREADS[key] = THREADS.get(key, 0.0) + time.thread_time() - own
                elif main and _name == "step size's eigenvalue":  # its draws on 2 threads
                    pool = (_cpu() - start) - (time.thread_time() - own)
                    THREADS["pool"] = THREADS.get("pool", 0.0) + pool / 2

        setattr(owner, attrs[-1], timed)


def _fit(problem, seed, clock):
    import ooc_kernels as ok

    X, y, Xt, yt, store = problem
    clock.clear()
    clf = ok.DSGClassifier(random_state=seed, max_iter=1, tol=None, progress=False)
    cpu, wall = time.process_time(), time.perf_counter()
    with warnings.catch_warnings():  # one epoch does not converge
        warnings.simplefilter("ignore")
        clf.fit(store) if store is not None else clf.fit(X, y)
    out = {"seed": seed, "fit_cpu_seconds": time.process_time() - cpu,
           "fit_seconds": time.perf_counter() - wall,
           "steps": {k: {"cpu_seconds": round(v[0], 4), "seconds": round(v[1], 4)}
                     for k, v in clock.items()},
           "set_up_threads_cpu_seconds": _critical_path(THREADS)}
    config = clf._config
    out.update(bandwidth=np.round(np.atleast_1d(clf.bandwidth_), 4).tolist(),
               alpha=config.alpha, x_scale=list(config.x_scale[:4]),
               bandwidth_scores={str(k): v for k, v in (clf.bandwidth_scores_ or {}).items()},
               setup_scores={str(k): v for k, v in (clf.setup_scores_ or {}).items()},
               accuracy=float(clf.score(Xt, yt)))
    return out


def _parts(repeats: int) -> dict:
    """Milliseconds (CPU, one BLAS thread, medians of ``repeats``) of the operations the
    set-up's choices rest on, each against its alternative."""
    from scipy.linalg import lapack

    from ooc_kernels._blas import single_threaded_blas
    from ooc_kernels.features.ard import solve_spd

    rng = np.random.default_rng(0)
    U = rng.uniform(-np.pi, np.pi, size=(1000, 256))  # the quick search's phases
    U32 = U.astype(np.float32)
    A = rng.normal(size=(500, 500))
    M = A @ A.T / 500 + np.eye(500)  # a leave-one-out scan's kernel matrix plus ridge
    T = rng.normal(size=(500, 10))

    # one evaluation of the quick ARD search's criterion with its gradient: 1,000 rows of 64
    # inputs (2/3 fit, 1/3 validate), 10 classes, 256 features, float64 products (the
    # cosines in float32) against the search's float32 criterion object, called again
    from ooc_kernels.features import ard

    Xa = rng.normal(size=(1000, 64))
    Ta = np.where(rng.integers(0, 10, 1000)[:, None] == np.arange(10), 1.0, -1.0)
    wa = np.ones(1000)
    parts = (Xa[:666], Ta[:666], wa[:666], Xa[666:], Ta[666:], wa[666:])
    omega, phase = rng.normal(size=(64, 256)), rng.uniform(0, 2 * np.pi, 256)
    log_s = np.full(64, np.log(8.0))
    criterion = ard._Float32Criterion(parts, omega, phase)

    def potri():
        factor, _ = lapack.dpotrf(np.array(M, order="F"), lower=1, overwrite_a=1)
        B, _ = lapack.dpotri(factor, lower=1, overwrite_c=1)
        B = np.tril(B) + np.tril(B, -1).T
        return B @ T, np.diag(B)

    ops = {"ARD criterion and gradient, float64 products (1000 x 64, 256 features)":
               lambda: ard.validation_error(log_s, -7.0, parts, omega, phase, fast_trig=True),
           "ARD criterion and gradient, float32 criterion object (1000 x 64, 256 features)":
               lambda: criterion(log_s, -7.0),
           "cosine float64 (1000 x 256)": lambda: np.cos(U),
           "cosine float32 (1000 x 256)": lambda: np.cos(U32),
           "eigendecomposition (500 rows)": lambda: np.linalg.eigh(M),
           "Cholesky factorization and inverse (500 rows)": potri,
           "Cholesky factorization, solves, triangular inverse (500 rows)":
               lambda: solve_spd(M, T)}
    out = {}
    with single_threaded_blas():
        for name, op in ops.items():
            op()
            times = []
            for _ in range(repeats):
                start = time.process_time()
                op()
                times.append(1e3 * (time.process_time() - start))
            out[name] = round(statistics.median(times), 3)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--problems", nargs="+", default=["digits", "binary10"])
    p.add_argument("--n", type=int, default=20_000, help="training rows of binary10")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--parts", action="store_true",
                   help="time the operations the set-up rests on instead (_parts)")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    if args.parts:
        parts = _parts(max(args.repeats, 21))
        print(json.dumps(parts, indent=1))
        if args.out:
            args.out.write_text(json.dumps({"milliseconds": parts}, indent=1))
        return
    sys.path.insert(0, str(Path(__file__).parent))
    import ooc_kernels
    import dsg_defaults_suite as suite

    clock: dict = {}
    _wrap(clock)
    results = {"library": str(Path(ooc_kernels.__file__).parent), "problems": {}}
    with tempfile.TemporaryDirectory() as work:
        problems = suite.problems(args.problems, args.n, args.n, Path(work))
        for name in args.problems:
            _fit(problems[name], 0, clock)  # warm-up: compiled kernels, caches
            runs = []
            for _ in range(args.repeats):
                for seed in range(args.seeds):
                    runs.append(_fit(problems[name], seed, clock))
                    print(name, json.dumps(runs[-1]), flush=True)
            steps = {k: statistics.median(r["steps"].get(k, {"cpu_seconds": 0.0})
                                          ["cpu_seconds"] for r in runs)
                     for _, k in STEPS}
            path = {k: statistics.median(r["set_up_threads_cpu_seconds"][k] for r in runs)
                    for k in ("main", "longest other", "estimate")}
            results["problems"][name] = {"median_step_cpu_seconds": steps,
                                         "median_set_up_threads_cpu_seconds": path,
                                         "runs": runs}
            print(name, "median CPU seconds per step:", json.dumps(steps, indent=1))
            print(name, "median set-up CPU seconds by thread:", json.dumps(path))
    if args.out:
        args.out.write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
