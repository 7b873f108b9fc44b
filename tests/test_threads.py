"""Threads inside a chunk task (``n_jobs``): the parallel kernels give the sequential
kernels' result bit for bit for any thread count, on every scheduler; the thread count's
resolution; launches from several threads at once under every threading layer."""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import subprocess
import sys
import threading
from pathlib import Path

import dask
import dask.array as da
import numba
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels import _threads
from ooc_kernels._jit.coupled import POLY2, SQRT
from ooc_kernels._jit.rff import COS_AFFINE, RELU
from ooc_kernels._threads import (current_threads, kernel_threads, prediction_threads,
                                  task_threads)
from ooc_kernels.exceptions import InvalidParameterError, ValidationError
from ooc_kernels.families.dsg import kernels_threads
from ooc_kernels.families.dsg.kernels import (dsg_chunk_update, dsg_chunk_update_ref,
                                              dsg_predict, dsg_predict_ref)
from ooc_kernels.families.dsg.kernels_full import dsg_full_update, dsg_full_update_ref
from ooc_kernels.families.dsg.kernels_tasks import full_tile_width, task_position
from ooc_kernels.features.blocks import stacked_block_params
from ooc_kernels.features.rbf import feature_scale

HERE = Path(__file__).resolve().parent
TOL = {np.float32: {"rtol": 1e-4, "atol": 1e-5}, np.float64: {"rtol": 1e-12, "atol": 1e-13}}
#: Thread counts this process can run (numba's pool is fixed at import: the cores).
THREADS = sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)})
PARAMS = dict(n_features=512, block_size=128, batch_size=16, bandwidth=1.0, max_iter=2,
              tol=None, random_state=0, chunks_per_round=1, chunk_size=20_000,
              progress=False)


@pytest.fixture(autouse=True)
def _numba_threads():
    """The tests set numba's thread count of the test thread: put it back after each."""
    before = numba.get_num_threads()
    yield
    numba.set_num_threads(before)


def _problem(dtype, loss_id=0, C=2, n=203, m=5, r=8, b=16, seed=0):
    rng = np.random.default_rng(seed)
    d = 4
    X = np.ascontiguousarray(rng.normal(size=(n, d)), dtype=dtype)
    if loss_id == 0:
        Y = rng.normal(size=(n, C))
    else:  # logistic: labels -1 / +1
        Y = rng.choice([-1.0, 1.0], size=(n, C))
    Y = np.ascontiguousarray(Y, dtype=dtype)
    W, ph = stacked_block_params(seed + 3, np.arange(m), d, r, 1.2, dtype)
    coef, avg = 0.1 * rng.normal(size=(m, r, C)), 0.1 * rng.normal(size=(m, r, C))
    s = math.ceil(n / b)
    steps = (0.5 / np.sqrt(1.0 + np.arange(s)), np.arange(s) % 3 > 0)
    params = (0.01, b, loss_id, feature_scale(r), 0.0)
    return X, Y, np.linspace(0.5, 1.5, n), W, ph, coef, avg, steps, params


def _data(n=960, chunk=240, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] ** 2 + X[:, 1] > 0.8, 1, 0)
    return da.from_array(X, chunks=(chunk, 3)), da.from_array(y, chunks=(chunk,))


def _spy_threads(monkeypatch, name: str) -> list:
    """Replace the parallel kernel ``kernels_threads.<name>`` by one that records numba's
    thread count at each call, then runs it; returns the record."""
    calls = []
    original = getattr(kernels_threads, name)

    def spy(*args):
        calls.append(numba.get_num_threads())
        return original(*args)

    monkeypatch.setattr(kernels_threads, name, spy)
    return calls


def _same_model(a, b):
    ours, theirs = a._fitted_arrays(), b._fitted_arrays()
    assert sorted(ours) == sorted(theirs)
    for name in ours:
        assert np.array_equal(ours[name], theirs[name]), name


# ---------------------------------------------------------------------------------------
# the thread count
# ---------------------------------------------------------------------------------------
def test_explicit_counts_are_kept_and_negative_counts_count_from_the_cores(monkeypatch):
    monkeypatch.setattr(_threads, "_cpu_count", lambda: 8)
    assert task_threads(3, 4) == 3  # an explicit count is the user's, whatever K
    assert task_threads(-1) == 8 and task_threads(-2) == 7
    assert task_threads(-20) == 1  # never below one


def test_none_shares_the_available_threads_among_the_round_tasks():
    assert task_threads(None, 1, available=16) == 16
    assert task_threads(None, 4, available=16) == 4
    assert task_threads(None, 3, available=16) == 5  # floor: never more threads than cores
    assert task_threads(None, 32, available=16) == 1


def test_none_on_local_schedulers_reads_the_pool_size_or_the_cores(monkeypatch):
    monkeypatch.setattr(_threads, "_cpu_count", lambda: 12)
    assert task_threads(None, 2) == 6
    with dask.config.set(num_workers=4):  # the threaded scheduler's pool
        assert task_threads(None, 2) == 2


def test_none_on_a_distributed_worker_reads_its_nthreads_and_running_tasks(monkeypatch):
    class State:
        nthreads = 8
        executing = {"a", "b"}  # two tasks of the round run on this worker

    class Worker:
        state = State()

    monkeypatch.setattr(_threads, "_worker", lambda: Worker())
    assert task_threads(None, 4) == 4  # 8 threads, 2 of the 4 tasks here
    assert task_threads(None, 1) == 8  # at most K tasks share them
    State.executing = set()
    assert task_threads(None, 4) == 2  # nothing known: K


@pytest.mark.parametrize("bad", [0, 1.5, "2", True])
def test_bad_thread_counts_are_refused(bad):
    with pytest.raises(ValidationError, match=r"n_jobs=.* is not a thread count; use None"):
        task_threads(bad)
    with pytest.raises(ValidationError, match=r"tasks_per_round must be an int >= 1; got 0"):
        task_threads(None, 0)


def test_estimator_refuses_n_jobs_zero():
    X, y = _data(n=40, chunk=40)
    with pytest.raises(InvalidParameterError,
                       match=r"'n_jobs' parameter of DSGClassifier must be None"):
        ok.DSGClassifier(n_jobs=0).fit(X, y)


def test_kernel_threads_sets_numba_in_the_block_and_restores_it():
    before = numba.get_num_threads()
    assert current_threads() == 1  # outside any block: the sequential kernels
    with kernel_threads(10**6) as n:  # capped by numba's pool
        assert n == numba.config.NUMBA_NUM_THREADS == current_threads()
        assert numba.get_num_threads() == n
        with kernel_threads(1):
            assert current_threads() == 1
        assert current_threads() == n
    assert current_threads() == 1 and numba.get_num_threads() == before
    with kernel_threads(1), prediction_threads(None) as inner:
        assert inner == 1  # a prediction inside a fit task keeps the task's count



@pytest.mark.parametrize("env, expected", [
    ({}, "1000"),                                       # the default: GNU OpenMP's throttled
    ({"GOMP_SPINCOUNT": "5"}, "5"),                     # the user's count is kept
    ({"OMP_WAIT_POLICY": "active"}, None),              # the user's policy decides
])
def test_the_openmp_wait_is_set_before_numba_starts_its_runtime(monkeypatch, env, expected):
    for name in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setitem(_threads._state, "layer", None)   # as in a process without a launch
    seen = []
    monkeypatch.setattr(numba, "get_num_threads",
                        lambda: seen.append(os.environ.get("GOMP_SPINCOUNT")) or 1)
    monkeypatch.setattr(numba, "set_num_threads", lambda n: None)
    with kernel_threads(2):
        pass
    assert seen == [expected]          # in the environment before numba's first call
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    with _threads.parallel_launch():   # the first launch of a process sets it too
        assert os.environ.get("GOMP_SPINCOUNT") == (None if env.get("OMP_WAIT_POLICY")
                                                    else "1000")
    monkeypatch.setitem(_threads._state, "layer", "omp")  # a started runtime: left alone
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    with kernel_threads(2), _threads.parallel_launch():
        assert "GOMP_SPINCOUNT" not in os.environ

# ---------------------------------------------------------------------------------------
# the kernels: the sequential kernel's bits, close to the NumPy twin
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("loss_id", [0, 1])
@pytest.mark.parametrize("buffer", [1 << 26, 2 * 16 * 8 * 8, 1])
def test_full_update_threads_equals_the_sequential_kernel_bit_for_bit(dtype, loss_id, buffer):
    """All features kept; groups of two blocks; one block at a time (recomputed)."""
    X, Y, sw, W, ph, coef, avg, steps, params = _problem(dtype, loss_id)
    seq = dsg_full_update(X, Y, sw, W, ph, coef, avg, 2, steps, params, buffer)
    for t in THREADS:
        numba.set_num_threads(t)
        got = kernels_threads.dsg_full_update_threads(X, Y, sw, W, ph, coef, avg, 2, steps,
                                                      params, buffer)
        for a, b in zip(seq, got):
            assert np.array_equal(a, b), t
    ref = dsg_full_update_ref(X, Y, sw, W, ph, coef, avg, 2, steps, params)
    assert np.abs(got[0] - coef).max() > 1e-2  # the steps moved the model
    np.testing.assert_allclose(got[0], ref[0], **TOL[dtype])
    np.testing.assert_allclose(got[1], ref[1], **TOL[dtype])
    assert got[2] == ref[2]


@pytest.mark.parametrize("lists", [1, 3, 7, 100])
def test_full_update_with_any_number_of_task_lists_equals_the_sequential_kernel(lists):
    """The tasks cut into lists that do not divide them, fewer or more lists than threads
    or than tasks (100 lists of at most one task): every task runs once, the same bits."""
    X, Y, sw, W, ph, coef, avg, steps, params = _problem(np.float32, 1)
    seq = dsg_full_update(X, Y, sw, W, ph, coef, avg, 2, steps, params)
    numba.set_num_threads(2)
    got = kernels_threads._full_update_lists(X, Y, sw, W, ph, coef, avg, 2, steps, params,
                                             1 << 26, COS_AFFINE, lists)
    for a, b in zip(seq, got):
        assert np.array_equal(a, b)
    assert np.abs(got[0] - coef).max() > 1e-2


def test_task_position_runs_a_list_forwards_then_backwards():
    orders = [[task_position(p, 5, s) for p in range(5)] for s in range(4)]
    assert orders == [[0, 1, 2, 3, 4], [4, 3, 2, 1, 0]] * 2


def test_full_update_threads_refuses_bad_shapes():
    X, Y, sw, W, ph, coef, avg, steps, params = _problem(np.float64)
    with pytest.raises(ValidationError, match="gammas and averaged need"):
        kernels_threads.dsg_full_update_threads(X, Y, sw, W, ph, coef, avg, 2,
                                                (steps[0][:3], steps[1][:3]), params)


#: A block mixing two nonlinearities (a quarter of its columns rbf, the rest poly2).
_LAYOUT = (2.0, 0.0, 0.25, 0.5, 2.0, 5.0, 1.0, 1.5, 1.0)


def test_full_tile_width_depends_on_the_model_only():
    """About 64 tasks (blocks x column tiles), tiles of at least 32 columns and a multiple
    of 16; whole blocks for nonlinearities that read other columns."""
    assert full_tile_width(16, 256, COS_AFFINE) == 64  # the default model: 64 tasks
    assert full_tile_width(5, 80, COS_AFFINE) == 32  # 32 + 32 + 16
    assert full_tile_width(1, 256, RELU) == 32
    assert full_tile_width(3, 20, SQRT) == 20
    assert full_tile_width(64, 256, COS_AFFINE) == 256
    assert full_tile_width(16, 256, POLY2) == 256
    assert full_tile_width(16, 256, _LAYOUT) == 256



@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("loss_id", [0, 1])
def test_full_update_on_ragged_column_tiles_is_the_same_for_any_threads(dtype, loss_id):
    """5 blocks of 80 columns: tiles of 32, 32 and 16 columns, 15 tasks (no multiple of 2
    or 4), a last batch of 11 rows; features kept or recomputed give the same bits."""
    X, Y, sw, W, ph, coef, avg, steps, params = _problem(dtype, loss_id, m=5, r=80)
    seq = dsg_full_update(X, Y, sw, W, ph, coef, avg, 2, steps, params)
    recomputed = dsg_full_update(X, Y, sw, W, ph, coef, avg, 2, steps, params, 1)
    for a, b in zip(seq, recomputed):
        assert np.array_equal(a, b)
    for t in THREADS:
        numba.set_num_threads(t)
        for buffer in (1 << 26, 1):
            got = kernels_threads.dsg_full_update_threads(X, Y, sw, W, ph, coef, avg, 2,
                                                          steps, params, buffer)
            for a, b in zip(seq, got):
                assert np.array_equal(a, b), (t, buffer)
    ref = dsg_full_update_ref(X, Y, sw, W, ph, coef, avg, 2, steps, params)
    assert np.abs(seq[0] - coef).max() > 1e-2
    for a, b in zip(seq[:2], ref[:2]):
        np.testing.assert_allclose(a, b, **TOL[dtype])
    assert seq[2] == ref[2]
    np.testing.assert_allclose(seq[3:], ref[3:], rtol=TOL[dtype]["rtol"])


@pytest.mark.parametrize("kind", [RELU, SQRT, POLY2, _LAYOUT])
def test_full_update_tasks_follow_the_nonlinearity(kind):
    """Column tiles for column-wise features, whole blocks otherwise: the twin's model
    either way, and the same bits on every thread count."""
    X, Y, sw, W, ph, coef, avg, steps, params = _problem(np.float64, 0, m=3, r=96)
    seq = dsg_full_update(X, Y, sw, W, ph, coef, avg, 2, steps, params, 1 << 26, kind)
    ref = dsg_full_update_ref(X, Y, sw, W, ph, coef, avg, 2, steps, params, None, kind)
    for a, b in zip(seq[:2], ref[:2]):
        np.testing.assert_allclose(a, b, **TOL[np.float64])
    for t in THREADS:
        numba.set_num_threads(t)
        got = kernels_threads.dsg_full_update_threads(X, Y, sw, W, ph, coef, avg, 2, steps,
                                                      params, 1 << 26, kind)
        for a, b in zip(seq, got):
            assert np.array_equal(a, b), t


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_predict_threads_equals_the_sequential_kernel_bit_for_bit(dtype):
    rng = np.random.default_rng(2)
    m, d, r = 3, 4, 64
    tile = (1 << 21) // (r * np.dtype(dtype).itemsize)  # the sequential kernel's tile
    X = np.ascontiguousarray(rng.normal(size=(2 * tile + 77, d)), dtype=dtype)
    W, ph = stacked_block_params(5, np.arange(m), d, r, 1.0, dtype)
    coef = np.ascontiguousarray(rng.normal(size=(m, r, 2)), dtype=dtype)
    seq = dsg_predict(X, W, ph, coef, feature_scale(r))
    for t in THREADS:
        numba.set_num_threads(t)
        assert np.array_equal(kernels_threads.dsg_predict_threads(
            X, W, ph, coef, feature_scale(r)), seq), t
    np.testing.assert_allclose(seq, dsg_predict_ref(X, W, ph, coef, feature_scale(r)),
                               **TOL[dtype])


def test_predict_threads_computes_each_fixed_tile_as_the_sequential_kernel_would():
    """Small tiles, where a BLAS product's rows change in their last bits with the number of
    rows it has: each tile of ``tile`` rows is the sequential kernel on those rows alone,
    whatever the thread count (a tile derived from the threads fails here)."""
    rng = np.random.default_rng(4)
    m, d, r, tile = 3, 8, 16, 100
    X = np.ascontiguousarray(rng.normal(size=(1000, d)), dtype=np.float32)
    W, ph = stacked_block_params(6, np.arange(m), d, r, 1.0, np.float32)
    coef = np.ascontiguousarray(rng.normal(size=(m, r, 1)), dtype=np.float32)
    tiles = np.concatenate([dsg_predict(X[i:i + tile], W, ph, coef, 0.3)
                            for i in range(0, len(X), tile)])
    assert not np.array_equal(tiles, dsg_predict(X, W, ph, coef, 0.3))  # the tiles matter
    for t in THREADS:
        numba.set_num_threads(t)
        got = kernels_threads.dsg_predict_threads(X, W, ph, coef, 0.3, tile=tile)
        assert np.array_equal(got, tiles), t


def _growth_problem(dtype, loss_id, n=1500, r=512, b=40, seed=4):
    """A growth phase of 38 blocks whose later rows span several of the sequential kernel's
    tiles (2 MiB of features: 512 rows of 512 float64 features, 1,024 of float32)."""
    rng = np.random.default_rng(seed)
    d, C, m = 3, 2, math.ceil(n / b)
    X = np.ascontiguousarray(rng.normal(size=(n, d)), dtype=dtype)
    Y = rng.choice([-1.0, 1.0], size=(n, C)) if loss_id else rng.normal(size=(n, C))
    W, ph = stacked_block_params(seed, np.arange(m), d, r, 1.2, dtype)
    F = np.ascontiguousarray(0.1 * rng.normal(size=(n, C)), dtype=dtype)
    steps = (0.5 / np.sqrt(1.0 + np.arange(m)), np.arange(m) % 3 > 0)
    params = (0.01, b, loss_id, feature_scale(r), 0.0)
    return (X, np.ascontiguousarray(Y, dtype=dtype), np.linspace(0.5, 1.5, n), F, W, ph,
            steps, params)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("loss_id", [0, 1])
def test_growth_threads_equals_the_sequential_kernel_bit_for_bit(dtype, loss_id):
    """The running predictions of the later rows shared by the threads, with 1 to 8 tiles
    updated at once: the sequential kernel's outputs and its running predictions."""
    X, Y, sw, F, W, ph, steps, params = _growth_problem(dtype, loss_id)
    F_seq = F.copy()
    seq = dsg_chunk_update(X, Y, sw, F_seq, W, ph, steps, params)
    runs = [(t, lambda F: kernels_threads.dsg_chunk_update_threads(
        X, Y, sw, F, W, ph, steps, params)) for t in THREADS]
    runs += [(THREADS[-1], lambda F, most=most: kernels_threads._chunk_update_slots(
        X, Y, sw, F, W, ph, steps, params, COS_AFFINE, most)) for most in (1, 3, 8)]
    for t, run in runs:
        numba.set_num_threads(t)
        F_got = F.copy()
        got = run(F_got)
        assert np.array_equal(F_got, F_seq), t
        for a, b in zip(seq, got):
            assert np.array_equal(a, b), t
    ref = dsg_chunk_update_ref(X, Y, sw, F, W, ph, steps, params)
    assert np.abs(seq[0]).max() > 1e-3  # the steps moved the model
    np.testing.assert_allclose(seq[0], ref[0], **TOL[dtype])


def test_a_fit_whose_growth_spans_tiles_runs_it_on_the_threads(monkeypatch):
    """16 blocks of 512 features in batches of 128: 2,048 growth rows, 1,920 after the
    first batch, more than one tile of 1,024 float32 rows."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba's pool has one thread here (the fresh-process test covers it)")
    X, y = _data(n=3000, chunk=3000)
    params = dict(PARAMS, n_features=8192, block_size=512, batch_size=128, max_iter=1)
    one = ok.DSGClassifier(**params, n_jobs=1, scheduler="threads").fit(X, y)
    calls = _spy_threads(monkeypatch, "dsg_chunk_update_threads")
    two = ok.DSGClassifier(**params, n_jobs=2, scheduler="threads").fit(X, y)
    assert calls == [2]
    _same_model(one, two)


@pytest.mark.slow
def test_one_two_and_three_threads_give_the_same_bits_in_a_fresh_process():
    """``NUMBA_NUM_THREADS=3`` so that three threads exist on any machine."""
    env = dict(os.environ, NUMBA_NUM_THREADS="3", OOC_KERNELS_PROGRESS="0")
    run = subprocess.run([sys.executable, str(HERE / "_threads_worker.py"), "kernels"],
                         capture_output=True, text=True, env=env, timeout=300, cwd=HERE)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["full_threads"] == [out["full_seq"]] * 3
    assert out["predict_threads"] == [out["predict_seq"]] * 3


# ---------------------------------------------------------------------------------------
# fits: every thread count, every scheduler, the same model
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_fits_with_one_two_and_three_threads_are_bit_identical_on_every_local_scheduler():
    env = dict(os.environ, NUMBA_NUM_THREADS="3", OOC_KERNELS_PROGRESS="0")
    run = subprocess.run([sys.executable, str(HERE / "_threads_worker.py"), "fits"],
                         capture_output=True, text=True, env=env, timeout=500, cwd=HERE)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out.pop("threads_seen") == [2, 3]  # the parallel kernel ran on 2 and 3 threads
    reference = out.pop("sync-1")  # n_jobs=1: the sequential kernels only
    assert len(out) == 8
    for where, digests in out.items():
        assert digests == reference, where


def test_a_fit_on_two_threads_runs_the_parallel_kernel_and_equals_one_thread(monkeypatch):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba's pool has one thread here (the fresh-process test covers it)")
    X, y = _data()
    one = ok.DSGClassifier(**PARAMS, n_jobs=1, scheduler="threads").fit(X, y)
    calls = _spy_threads(monkeypatch, "dsg_full_update_threads")
    two = ok.DSGClassifier(**PARAMS, n_jobs=2, scheduler="threads").fit(X, y)
    assert calls and set(calls) == {2}
    _same_model(one, two)
    Xt = np.random.default_rng(3).normal(size=(9000, 3))  # three prediction tiles
    assert np.array_equal(one.decision_function(Xt), two.decision_function(Xt))
    lazy = two.decision_function(da.from_array(Xt, chunks=(3000, 3)))
    with dask.config.set(scheduler="threads"):
        lazy = lazy.compute()
    assert np.array_equal(lazy, one.decision_function(Xt))


def test_a_cluster_of_two_workers_with_two_threads_gives_the_one_thread_model():
    distributed = pytest.importorskip("distributed")
    X, y = _data()
    one = ok.DSGClassifier(**PARAMS, n_jobs=1, scheduler="sync").fit(X, y)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, set_as_default=False, timeout="30s") as client:
        other = ok.DSGClassifier(**PARAMS, scheduler=client).fit(X, y)
    _same_model(one, other)


# ---------------------------------------------------------------------------------------
# several launching threads; fork
# ---------------------------------------------------------------------------------------
def test_two_fits_in_two_threads_at_once_give_the_one_thread_model():
    X, y = _data()
    reference = ok.DSGClassifier(**PARAMS, n_jobs=1, scheduler="sync").fit(X, y)
    fitted, errors = [], []

    def fit():
        try:
            fitted.append(ok.DSGClassifier(**PARAMS, n_jobs=2, scheduler="sync").fit(X, y))
        except Exception as exc:  # reported below, with the thread's traceback lost
            errors.append(exc)

    workers = [threading.Thread(target=fit) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors and len(fitted) == 2
    for est in fitted:
        _same_model(reference, est)


_CONCURRENT = """
import threading, numpy as np, numba
from ooc_kernels._threads import kernel_threads, threading_layer
from ooc_kernels.families.dsg.kernels_threads import full_update
from ooc_kernels.families.dsg.kernels_full import dsg_full_update
from ooc_kernels.features.blocks import stacked_block_params
rng = np.random.default_rng(0)
n, d, m, r, b = 400, 4, 6, 16, 16
X = rng.normal(size=(n, d)); Y = rng.normal(size=(n, 1))
W, ph = stacked_block_params(1, np.arange(m), d, r, 1.0, np.float64)
args = (X, Y, np.ones(n), W, ph, np.zeros((m, r, 1)), np.zeros((0, r, 1)), 0,
        (np.full(n // b, 0.1), np.zeros(n // b, dtype=bool)), (0.01, b, 0, 0.35, 0.0))
ref = dsg_full_update(*args)[0]
out = []
def go():
    with kernel_threads(2):
        for _ in range(20):
            out.append(np.array_equal(full_update(*args)[0], ref))
ts = [threading.Thread(target=go) for _ in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
print(threading_layer(), numba.threading_layer(), len(out), all(out))
"""


@pytest.mark.parametrize("layer", ["workqueue", "omp"])
def test_concurrent_launches_from_four_threads_do_not_abort(layer):
    """numba aborts the process on concurrent launches under ``workqueue`` unless they are
    serialized: 4 threads x 20 launches each, under each layer."""
    env = dict(os.environ, NUMBA_THREADING_LAYER=layer, NUMBA_NUM_THREADS="2")
    run = subprocess.run([sys.executable, "-c", _CONCURRENT], capture_output=True, text=True,
                         env=env, timeout=300)
    if layer == "omp" and "No threading layer could be loaded" in run.stderr:
        pytest.skip("no OpenMP runtime on this machine")
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == [layer, layer, "80", "True"]


def _threads_in_child(queue):
    with kernel_threads(2) as n:
        queue.put(n)


def test_a_process_forked_after_a_parallel_launch_runs_the_sequential_kernels():
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba's pool has one thread here")
    X, Y, sw, W, ph, coef, avg, steps, params = _problem(np.float64)
    with kernel_threads(2):
        kernels_threads.full_update(X, Y, sw, W, ph, coef, avg, 2, steps, params)
    assert _threads.threading_layer() is not None
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_threads_in_child, args=(queue,))
    child.start()
    got = queue.get(timeout=60)
    child.join(timeout=60)
    assert got == 1 and child.exitcode == 0
    with kernel_threads(2) as n:  # this process keeps its threads
        assert n == 2


def test_dask_process_pools_start_their_workers_without_fork():
    pytest.importorskip("distributed")  # its defaults enter Dask's config when it is imported
    assert dask.config.get("multiprocessing.context", "spawn") == "spawn"
    assert dask.config.get("distributed.worker.multiprocessing-method") == "spawn"


# ---------------------------------------------------------------------------------------
# the parameter
# ---------------------------------------------------------------------------------------
def test_n_jobs_is_saved_and_can_be_changed_on_a_loaded_model(tmp_path):
    X, y = _data(n=480)
    clf = ok.DSGRegressor(**PARAMS, n_jobs=2, scheduler="sync").fit(X, X[:, 0])
    clf.save(tmp_path / "m")
    back = ok.load(tmp_path / "m")
    assert back.get_params()["n_jobs"] == 2
    back.set_params(n_jobs=1)
    assert back._predict_payload()[0].n_jobs == 1
    Xt = np.random.default_rng(0).normal(size=(100, 3))
    assert np.array_equal(back.predict(Xt), clf.predict(Xt))


def _os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def test_kernels_started_from_many_pool_threads_run_on_one_reused_launcher():
    """A parallel kernel called from threads other than the main thread runs on a launcher
    thread that is reused, so OpenMP makes one team, not one per calling thread; the result
    is the sequential kernel's, bit for bit."""
    X, Y, sw, W, ph, coef, avg, steps, params = _problem(np.float32, 2)
    ref = dsg_full_update(X, Y, sw, W, ph, coef, avg, 0, steps, params)
    with kernel_threads(2):  # the first launch of the process (picks the layer) first
        kernels_threads.full_update(X, Y, sw, W, ph, coef, avg, 0, steps, params)
    jobs = [__import__("queue").Queue() for _ in range(4)]
    results: list = []

    def serve(q):  # a long-lived thread, like a Dask pool thread: runs what it is given
        while (job := q.get()) is not None:
            results.append(job())

    def step():
        with kernel_threads(2) as n:
            return n, kernels_threads.full_update(X, Y, sw, W, ph, coef, avg, 0, steps,
                                                  params)

    threads = [threading.Thread(target=serve, args=(q,)) for q in jobs]
    for t in threads:
        t.start()
    before_launchers, before = _threads.launcher_threads(), _os_threads()
    for q in jobs:  # one call from each thread, one after the other
        q.put(step)
        while len(results) < jobs.index(q) + 1:
            threading.Event().wait(0.01)
    after_launchers, after = _threads.launcher_threads(), _os_threads()
    for q in jobs:
        q.put(None)
    for t in threads:
        t.join()
    assert after_launchers == max(before_launchers, 1)
    if numba.config.NUMBA_NUM_THREADS >= 2 and _threads.threading_layer() == "omp":
        # at most one new team (one worker for 2 threads) and one new launcher thread
        assert after - before <= 2, (before, after)
    for n, out in results:
        assert n == min(2, numba.config.NUMBA_NUM_THREADS)
        for a, b in zip(out, ref):
            assert np.array_equal(np.asarray(a), np.asarray(b))


def test_a_kernel_error_raised_on_a_launcher_reaches_the_calling_thread():
    X, Y, sw, W, ph, coef, avg, steps, params = _problem(np.float64, 0)
    errors: list = []

    def call():
        try:
            with kernel_threads(2):
                kernels_threads.full_update(np.ascontiguousarray(X[:, :3]), Y, sw, W, ph,
                                            coef, avg, 0, steps, params)
        except Exception as err:  # noqa: BLE001 - the test looks at what arrived
            errors.append(err)

    t = threading.Thread(target=call)
    t.start()
    t.join()
    if min(2, numba.config.NUMBA_NUM_THREADS) < 2:
        pytest.skip("numba's pool has one thread: the sequential kernel runs")
    assert len(errors) == 1 and isinstance(errors[0], ValidationError)
    assert "W must be (m, d, r)" in str(errors[0])


def test_kernels_called_from_the_main_thread_run_there_and_from_a_pool_thread_on_a_launcher():
    """The main thread launches its kernels itself (its OpenMP team, which the runtime
    throttles when the process holds more OpenMP threads than cores); any other thread
    launches on a launcher thread (reused: the test above)."""
    def where():
        return threading.current_thread().name

    from_main = _threads.launch(where)
    out: list = []
    t = threading.Thread(target=lambda: out.append(_threads.launch(where)))
    t.start()
    t.join()
    assert from_main == threading.main_thread().name
    assert len(out) == 1 and out[0].startswith("ooc-kernels-launcher")
