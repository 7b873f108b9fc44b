"""A chunk task's shuffle and check of its rows on its threads (``take_rows``,
``all_finite``): the same rows, the same model and the same errors as one thread, for 1, 2
and 3 threads, on ragged row counts."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import dask.array as da
import numba
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels._threads import kernel_threads
from ooc_kernels.exceptions import InvalidDataError, ValidationError
from ooc_kernels.families.dsg import kernels_threads
from ooc_kernels.families.dsg.kernels_threads import (all_finite, count_nonfinite_threads,
                                                      take_rows, take_rows_threads)

THREADS = sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)})
#: Groups of 3 chunks of 1,700 rows: 5,100 rows, above the rows the threads start at.
PARAMS = dict(n_features=256, block_size=64, batch_size=32, bandwidth=1.0, max_iter=2,
              tol=None, random_state=0, chunks_per_round=1, chunk_size=1_700,
              progress=False)


@pytest.fixture(autouse=True)
def _numba_threads():
    before = numba.get_num_threads()
    yield
    numba.set_num_threads(before)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 4095, 5003])
def test_take_rows_threads_is_fancy_indexing_on_every_thread_count(dtype, n):
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 7)).astype(dtype)
    order = rng.permutation(n)
    for t in THREADS:
        numba.set_num_threads(t)
        got = take_rows_threads(X, order)
        assert got.dtype == X.dtype and got.flags.c_contiguous
        assert np.array_equal(got, X[order]), t


def test_take_rows_threads_refuses_rows_outside_x():
    X = np.ones((5, 2))
    with pytest.raises(ValidationError, match="order names rows outside X"):
        take_rows_threads(X, np.array([0, 1, 5]))
    with pytest.raises(ValidationError, match="order names rows outside X"):
        take_rows_threads(X, np.array([-1, 0]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_count_nonfinite_threads_counts_nan_and_inf_on_every_thread_count(dtype):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5003, 5)).astype(dtype)
    X[[0, 17, 4096, 5002], [1, 4, 0, 4]] = [np.nan, np.inf, -np.inf, np.nan]
    expected = int((~np.isfinite(X)).sum())
    assert expected == 4
    for t in THREADS:
        numba.set_num_threads(t)
        assert count_nonfinite_threads(X) == expected
        assert count_nonfinite_threads(np.ones((9, 3), dtype=dtype)) == 0


def test_dispatchers_use_the_threads_only_from_a_threaded_task(monkeypatch):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba's pool has one thread here (the fresh-process test covers it)")
    calls = []
    original = kernels_threads.launch

    def spy(kernel, *args):
        calls.append(kernel.__name__)
        return original(kernel, *args)

    monkeypatch.setattr(kernels_threads, "launch", spy)
    rng = np.random.default_rng(1)
    X, order = rng.normal(size=(6000, 3)), rng.permutation(6000)
    small = X[:100]
    assert np.array_equal(take_rows(X, order), X[order]) and all_finite(X)
    assert calls == []  # one thread: numpy
    with kernel_threads(2):
        assert np.array_equal(take_rows(X, order), X[order])
        assert all_finite(X) and not all_finite(np.where(X > 2.5, np.nan, X))
        assert all_finite(small)  # below the rows where the threads pay: numpy
    assert calls == ["take_rows_threads", "count_nonfinite_threads",
                     "count_nonfinite_threads"]


def _data(n=5_100 * 2, seed=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, (X[:, 0] * X[:, 1] > 0).astype(int)


def _digests(clf) -> dict:
    return {k: np.asarray(v).tobytes().hex()[:64] + str(np.asarray(v).sum())
            for k, v in sorted(clf._fitted_arrays().items())}


@pytest.mark.parametrize("shuffle_chunks", [1, 3])
def test_fits_shuffling_on_two_threads_equal_the_one_thread_fit(shuffle_chunks, monkeypatch):
    """Groups of 3 chunks (one task's own array: shuffled in place on one thread, gathered
    by the threads on two) and single chunks (a copy either way)."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba's pool has one thread here (the fresh-process test covers it)")
    gathered = []
    original = kernels_threads.take_rows_threads

    def spy(X, order):
        gathered.append(len(X))
        return original(X, order)

    X, y = _data()
    one = ok.DSGClassifier(**PARAMS, shuffle_chunks=shuffle_chunks, n_jobs=1,
                           scheduler="sync").fit(X, y)
    monkeypatch.setattr(kernels_threads, "take_rows_threads", spy)
    two = ok.DSGClassifier(**PARAMS, shuffle_chunks=shuffle_chunks, n_jobs=2,
                           scheduler="sync").fit(X, y)
    # chunks of 1,700 rows stay below the threads' minimum; groups of 5,100 rows are
    # gathered by the threads, 4 groups over the 2 epochs
    assert gathered == ([] if shuffle_chunks == 1 else [5_100] * 4)
    assert _digests(one) == _digests(two)
    for name, value in one._fitted_arrays().items():
        assert np.array_equal(value, two._fitted_arrays()[name]), name


def test_a_nan_found_by_the_threads_is_reported_as_by_one_thread():
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba's pool has one thread here (the fresh-process test covers it)")
    X, y = _data()
    X[6_000, 2] = np.nan  # chunk 3 (rows 5,100 .. 6,799), row 900 of it
    X, y = da.from_array(X, chunks=(1_700, 3)), da.from_array(y, chunks=1_700)
    errors = []
    for n_jobs in (1, 2):
        with pytest.raises(InvalidDataError, match=r"chunk 3.*row 900") as info:
            ok.DSGClassifier(**PARAMS, shuffle_chunks=3, n_jobs=n_jobs,
                             scheduler="sync").fit(X, y)
        errors.append(str(info.value))
    assert errors[0] == errors[1]


_WORKER = r"""
import json, numba, numpy as np
import ooc_kernels as ok
from ooc_kernels.families.dsg.kernels_threads import count_nonfinite_threads, take_rows_threads
rng = np.random.default_rng(0)
X = rng.normal(size=(7001, 5)).astype(np.float32); X[[3, 6999], [0, 4]] = np.nan
order = rng.permutation(7001)
out = {"take": [], "count": [], "fits": []}
p = dict(n_features=256, block_size=64, batch_size=32, bandwidth=1.0, max_iter=1, tol=None,
         random_state=0, chunks_per_round=1, chunk_size=1_700, progress=False,
         shuffle_chunks=3, scheduler="sync")
Xf = rng.normal(size=(10_200, 3)); yf = (Xf[:, 0] > 0).astype(int)
for t in (1, 2, 3):
    numba.set_num_threads(t)
    got = take_rows_threads(X, order)
    out["take"].append(bool(np.array_equal(got, X[order], equal_nan=True)))
    out["count"].append(int(count_nonfinite_threads(X)))
    clf = ok.DSGClassifier(**p, n_jobs=t).fit(Xf, yf)
    out["fits"].append(clf.coef_.tobytes().hex())
print(json.dumps(out))
"""


@pytest.mark.slow
def test_one_two_and_three_threads_in_a_fresh_process():
    env = dict(os.environ, NUMBA_NUM_THREADS="3", OOC_KERNELS_PROGRESS="0")
    run = subprocess.run([sys.executable, "-c", _WORKER], capture_output=True, text=True,
                         env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["take"] == [True] * 3
    assert out["count"] == [2] * 3
    assert out["fits"][1] == out["fits"][0] and out["fits"][2] == out["fits"][0]
