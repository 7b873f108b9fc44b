"""Reading the next round's chunks while a round runs (the local schedulers): every round
after the first gets its rows from the read ahead, each chunk is read once per epoch, no
read runs more than one round ahead, a failed read ahead is read again by its round, and
the model is the one the rounds give when they read their own chunks, bit for bit."""

from __future__ import annotations

import threading

import dask
import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.data.inputs import as_chunked
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.parallel.engine import run_rounds
from ooc_kernels.parallel.plan import plan_epoch
from ooc_kernels.parallel.read_ahead import read_ahead_enabled

READER = "ooc-kernels-read-ahead"


class _Recorder:
    """Toy algorithm: each task records its group, the values it saw and the chunks read
    so far in the process (a snapshot of the loads when it ran)."""

    def __init__(self, loads):
        self.loads = loads

    def make_tasks(self, state, info):
        return list(info.groups)

    def chunk_step(self, state, batch, task):
        X = batch["X"]
        return [(task, tuple(np.unique(X[:, 0]).tolist()), len(X),
                 tuple(c for c, _ in self.loads))]

    def combine(self, a, b):
        return a + b

    def apply(self, state, delta, info):
        return state + [(info.epoch, info.round, tuple(delta))]


def _tracked_array(n_chunks, rows, loads, fail=None):
    """Chunk ``i`` is filled with ``i``; each read appends ``(i, thread name)`` to
    ``loads``; ``fail(i, attempt)`` True makes that read raise."""
    lock = threading.Lock()
    attempts: dict[int, int] = {}

    def load(block_id=None):
        i = block_id[0]
        with lock:
            attempts[i] = attempts.get(i, 0) + 1
            loads.append((i, threading.current_thread().name))
            if fail is not None and fail(i, attempts[i]):
                raise OSError(f"chunk {i} could not be read (attempt {attempts[i]})")
        return np.full((rows, 2), float(i))

    return da.map_blocks(load, chunks=((rows,) * n_chunks, (2,)), dtype=float)


def _run(loads, *, read_ahead, scheduler="sync", k=2, g=1, n_epochs=2, fail=None):
    data = as_chunked(_tracked_array(7, 3, loads, fail))
    with dask.config.set({"ooc-kernels.local.read_ahead": read_ahead}):
        return run_rounds(_Recorder(loads), [], data, n_epochs=n_epochs, chunks_per_round=k,
                          seed=4, shuffle=True, shuffle_chunks=g, scheduler=scheduler)


@pytest.mark.parametrize("scheduler", ["sync", "threads"])
@pytest.mark.parametrize("k,g", [(1, 1), (2, 1), (2, 2)])
def test_rounds_after_the_first_get_their_rows_from_the_read_ahead(scheduler, k, g):
    loads: list = []
    res = _run(loads, read_ahead=True, scheduler=scheduler, k=k, g=g)
    plans = [plan_epoch(7, chunks_per_round=k, seed=4, epoch=e, shuffle=True,
                        shuffle_chunks=g) for e in range(2)]
    rounds = [r for plan in plans for r in plan]
    # each chunk read once per epoch: the first round's by the round itself, every later
    # round's by the reading thread, in round order
    sizes = [sum(len(grp) for grp in r) for r in rounds]
    start = np.cumsum([0] + sizes)
    assert len(loads) == start[-1]
    assert sorted(c for c, name in loads if not name.startswith(READER)) == \
        sorted(c for grp in rounds[0] for c in grp)
    assert [c for c, name in loads if name.startswith(READER)] == \
        [c for r in rounds[1:] for grp in r for c in grp]
    for i, (epoch, rnd, tasks) in enumerate(res.state):
        # the rows of each task are its group's (chunk i holds the value i)
        assert [t for t, _, _, _ in tasks] == list(rounds[i])
        assert all(set(v) == set(t) and n == 3 * len(t) for t, v, n, _ in tasks)
        # when a task ran: its group was read, and nothing beyond the next round's groups
        for t, _, _, seen in tasks:
            assert len(seen) <= start[min(i + 2, len(rounds))]
            assert set(seen) >= set(t)
    assert res.n_rounds == len(rounds) and res.epoch == 2


@pytest.mark.parametrize("scheduler", ["sync", "threads"])
def test_without_read_ahead_each_round_reads_its_own_chunks(scheduler):
    with_ahead, without = [], []
    a = _run(with_ahead, read_ahead=True, scheduler=scheduler)
    b = _run(without, read_ahead=False, scheduler=scheduler)
    assert all(not name.startswith(READER) for _, name in without)
    assert sorted(c for c, _ in with_ahead) == sorted(c for c, _ in without)
    strip = [[(e, r, [(t, v, n) for t, v, n, _ in tasks]) for e, r, tasks in s]
             for s in (a.state, b.state)]
    assert strip[0] == strip[1]


def test_the_process_pool_and_a_disabled_setting_do_not_read_ahead():
    assert read_ahead_enabled("sync") and read_ahead_enabled("threads")
    assert not read_ahead_enabled("processes")
    with dask.config.set({"ooc-kernels.local.read_ahead": False}):
        assert not read_ahead_enabled("sync")


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_a_setting_that_is_not_a_bool_is_refused(bad):
    with dask.config.set({"ooc-kernels.local.read_ahead": bad}):
        with pytest.raises(ValidationError,
                           match=r"ooc-kernels.local.read_ahead must be true or false, got"):
            read_ahead_enabled("sync")


def test_a_failed_read_ahead_is_read_again_by_its_round():
    loads: list = []
    # chunk 4 (second round) fails on its first read only: the read ahead drops it, the
    # round reads it
    res = _run(loads, read_ahead=True, fail=lambda i, attempt: i == 4 and attempt == 1)
    reads_of_4 = [name for c, name in loads if c == 4]
    assert len(reads_of_4) == 3 and reads_of_4[0].startswith(READER)
    assert not reads_of_4[1].startswith(READER)
    ref = _run([], read_ahead=False)
    strip = [[(e, r, [(t, v, n) for t, v, n, _ in tasks]) for e, r, tasks in s]
             for s in (res.state, ref.state)]
    assert strip[0] == strip[1]


@pytest.mark.parametrize("read_ahead", [True, False])
def test_a_chunk_that_cannot_be_read_raises_its_error_from_its_round(read_ahead):
    loads: list = []
    with pytest.raises(OSError, match=r"chunk 4 could not be read \(attempt [12]\)"):
        _run(loads, read_ahead=read_ahead, fail=lambda i, attempt: i == 4)
    # nothing after the failing round was read: the read ahead stopped with the fit
    plan = [r for e in range(2) for r in plan_epoch(7, chunks_per_round=2, seed=4, epoch=e,
                                                    shuffle=True)]
    failing = next(i for i, r in enumerate(plan) if any(4 in grp for grp in r))
    allowed = {c for r in plan[:failing + 2] for grp in r for c in grp}
    assert {c for c, _ in loads} <= allowed


def _store(tmp_path, n=1200, chunk=200):
    path = ok.make_dataset("nonlinear_binary", tmp_path / "nb.zarr", n, chunk_size=chunk,
                           random_state=3, split="train", progress=False, n_features=4)
    from ooc_kernels.data.schema import open_zarr_dataset

    ds = open_zarr_dataset(path)
    return ds["X"].data, ds["y"].data


@pytest.mark.parametrize("scheduler", ["sync", "threads"])
@pytest.mark.parametrize("shuffle_chunks", [1, 2])
def test_a_dsg_fit_reading_ahead_is_the_fit_reading_its_own_chunks(tmp_path, scheduler,
                                                                   shuffle_chunks):
    X, y = _store(tmp_path)
    params = dict(n_features=256, block_size=64, batch_size=16, bandwidth=1.0, max_iter=2,
                  tol=None, random_state=0, chunks_per_round=1, progress=False,
                  scheduler=scheduler, shuffle_chunks=shuffle_chunks, n_jobs=2)
    fits = {}
    for flag in (False, True):
        with dask.config.set({"ooc-kernels.local.read_ahead": flag}):
            fits[flag] = ok.DSGClassifier(**params).fit(X, y)
    ours, ref = fits[True]._fitted_arrays(), fits[False]._fitted_arrays()
    assert sorted(ours) == sorted(ref)
    for name in ref:
        assert np.array_equal(ours[name], ref[name]), name
    assert fits[True].n_iter_ == fits[False].n_iter_ == 2
