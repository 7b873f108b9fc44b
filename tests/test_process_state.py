"""A task's result does not depend on the process that runs it.

A lost worker's tasks run again elsewhere: on a worker that has run other tasks (warm feature
cache, BLAS libraries loaded) or on a fresh process (cold cache, nothing loaded yet).  Both
must give the bits the first run gave.  The checks below run the same work in a fresh Python
process, started with ``OPENBLAS_NUM_THREADS=2`` (what a process gets on a 2-core machine
without Dask's nanny settings), and compare it with this process, where the libraries and
the feature cache are warm.
"""

import json
import os
import pickle
import subprocess
import sys
from dataclasses import fields, is_dataclass

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.families.dsg import solver

#: Run in a fresh process, as a fit's driver holds the BLAS limit for the whole fit: the
#: recorded chunk step is unpickled and run inside the limit (its imports load SciPy's
#: BLAS, the one numba's ``np.dot`` calls, there), then a prediction in the same limit.
FRESH = r"""
import pickle, sys
from threadpoolctl import threadpool_info, threadpool_limits
from ooc_kernels._blas import single_threaded_blas
from ooc_kernels.families.dsg.kernels import dsg_predict

with open(sys.argv[1], "rb") as f:
    predict_args, step_inputs = pickle.load(f)
with single_threaded_blas():
    # the task's modules (the solver, and SciPy with them) are imported inside the limit
    algorithm, state, batch, task = pickle.loads(step_inputs)
    delta = algorithm.chunk_step(state, batch, task)
    threads = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    first = dsg_predict(*predict_args)
with threadpool_limits(limits=1, user_api="blas"):   # every library loaded by now
    one_thread = dsg_predict(*predict_args)
with open(sys.argv[2], "wb") as f:
    pickle.dump({"threads": threads, "first": first, "one_thread": one_thread,
                 "delta": delta}, f)
"""


def _predict_args():
    """A prediction large enough that OpenBLAS splits its products over 2 threads (their
    bits differ from one thread's in float32)."""
    rng = np.random.default_rng(3)
    d, r, m = 16, 128, 4
    X = rng.normal(size=(2000, d)).astype(np.float32)
    W = (rng.normal(size=(m, d, r)) / 2).astype(np.float32)
    phase = rng.uniform(0, 2 * np.pi, (m, r)).astype(np.float32)
    coef = rng.normal(size=(m, r, 1)).astype(np.float32)
    return X, W, phase, coef, (2 / r) ** 0.5, 0


def _recorded_steps(monkeypatch):
    """The inputs and outputs of every chunk step of a small fit whose second task
    predicts 2,048 rows with the blocks the first one opened."""
    steps = []
    original = solver.DSGAlgorithm.chunk_step

    def spy(self, state, batch, task):
        inputs = pickle.dumps((self, state, {k: np.array(v) for k, v in batch.items()}, task))
        out = original(self, state, batch, task)
        steps.append((inputs, out))
        return out

    monkeypatch.setattr(solver.DSGAlgorithm, "chunk_step", spy)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4096, 16)).astype(np.float32)
    y = (np.sum(X[:, :3] ** 2, axis=1) > 2.4).astype(int)
    ok.DSGClassifier(n_features=2048, block_size=128, batch_size=256, max_iter=1, tol=None,
                     chunk_size=2048, chunks_per_round=1, bandwidth=2.0, shuffle=False,
                     random_state=0, scheduler="sync", progress=False).fit(X, y)
    monkeypatch.undo()
    return steps


def _same_bits(a, b, where="delta") -> list:
    """Names of the fields of two results that differ in any bit."""
    if is_dataclass(a):
        return [d for f in fields(a)
                for d in _same_bits(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")]
    if isinstance(a, np.ndarray):
        same = (isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
                and a.tobytes() == b.tobytes())
        return [] if same else [where]
    return [] if (a == b or (a != a and b != b)) else [where]


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    try:
        steps = _recorded_steps(mp)
    finally:
        mp.undo()
    inputs, recorded = steps[-1]
    folder = tmp_path_factory.mktemp("fresh")
    (folder / "in.pkl").write_bytes(pickle.dumps((_predict_args(), inputs)))
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2", OOC_KERNELS_PROGRESS="0")
    run = subprocess.run([sys.executable, "-c", FRESH, str(folder / "in.pkl"),
                          str(folder / "out.pkl")], env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = pickle.loads((folder / "out.pkl").read_bytes())
    return dict(out, steps=steps, recorded=recorded)


@pytest.mark.slow
def test_the_blas_limit_reaches_the_blas_a_task_loads_inside_it(fresh):
    """A fresh process loads SciPy's BLAS inside the limit: the limit must reach it
    (threadpoolctl reports one thread for every BLAS library), and a prediction in that
    limit gives the bits of one under threadpoolctl's own one-thread limit."""
    assert len(fresh["threads"]) >= 2, json.dumps(fresh["threads"])  # NumPy's and SciPy's
    assert fresh["threads"] == [1] * len(fresh["threads"])
    assert np.array_equal(fresh["first"], fresh["one_thread"])
    # and the prediction agrees with the NumPy twin of the kernel (float32 rounding)
    from ooc_kernels.families.dsg.kernels import dsg_predict_ref

    X, W, phase, coef, scale, kind = _predict_args()
    expected = dsg_predict_ref(X.astype(np.float64), W.astype(np.float64),
                               phase.astype(np.float64), coef.astype(np.float64), scale, kind)
    assert np.allclose(fresh["first"], expected, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_a_chunk_step_has_the_same_bits_in_a_fresh_and_in_a_used_process(fresh):
    """The step of a task run again after a worker loss: in a fresh process (cold feature
    cache, BLAS loaded by the task itself) and here, after other tasks and another
    precision warmed the cache, it gives the bits of the fit's own run."""
    from ooc_kernels.features.cache import default_cache

    steps, recorded = fresh["steps"], fresh["recorded"]
    # warm this process: other tasks, and blocks of another precision and width cached
    for inputs, _ in steps[:-1]:
        algorithm, state, batch, task = pickle.loads(inputs)
        algorithm.chunk_step(state, batch, task)
    rng = np.random.default_rng(1)
    Xo = rng.normal(size=(600, 16))
    ok.DSGClassifier(n_features=512, block_size=128, max_iter=1, tol=None, bandwidth=2.0,
                     dtype="float64", random_state=0, scheduler="sync",
                     progress=False).fit(Xo, Xo[:, 0] > 0)
    assert len(default_cache()) > 0
    algorithm, state, batch, task = pickle.loads(steps[-1][0])
    used = algorithm.chunk_step(state, batch, task)
    assert state.n_blocks_used > 0 and len(batch["X"]) == 2048  # the step predicts rows
    assert _same_bits(fresh["delta"], recorded) == []
    assert _same_bits(used, recorded) == []
