"""The round-based chunk engine: what each round reads, averaging of K local models, and
bit-identical results on the synchronous, threaded and distributed schedulers."""

import threading

import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.data.inputs import as_chunked
from ooc_kernels.parallel.engine import run_rounds
from ooc_kernels.parallel.plan import plan_epoch


class _Recorder:
    """Toy algorithm: records the chunks each task saw; state = list of rounds."""

    def make_tasks(self, state, info):
        return list(info.groups)

    def chunk_step(self, state, batch, task):
        X = batch["X"]
        return [(task, tuple(np.unique(X[:, 0]).tolist()), len(X))]

    def combine(self, a, b):
        return a + b

    def apply(self, state, delta, info):
        return state + [(info.epoch, info.round, tuple(delta))]


def _tracked_array(n_chunks, rows, loads):
    lock = threading.Lock()

    def load(block_id=None):
        i = block_id[0]
        with lock:
            loads.append(i)
        return np.full((rows, 2), float(i))

    return da.map_blocks(load, chunks=((rows,) * n_chunks, (2,)), dtype=float)


def test_each_round_reads_exactly_its_chunks():
    loads = []
    X = _tracked_array(7, 3, loads)
    data = as_chunked(X)
    res = run_rounds(_Recorder(), [], data, n_epochs=2, chunks_per_round=3, seed=4,
                     shuffle=True, scheduler="threads")
    assert len(loads) == 14 and sorted(loads) == sorted(list(range(7)) * 2)
    for epoch in range(2):
        plan = plan_epoch(7, chunks_per_round=3, seed=4, epoch=epoch, shuffle=True)
        rounds = [r for r in res.state if r[0] == epoch]
        assert [tuple(t for t, _, _ in r[2]) for r in rounds] == plan
        # each task saw its own chunk (the loader fills chunk i with the value i)
        assert all(t == v for r in rounds for t, v, _ in r[2])
    assert res.n_rounds == 6 and res.epoch == 2


@pytest.mark.parametrize("n_chunks", [1, 2, 5, 7, 20, 33])
@pytest.mark.parametrize("k", [1, 2, 3, 4])
@pytest.mark.parametrize("g", [1, 2, 3, 8])
def test_groups_are_balanced_and_fill_whole_rounds(n_chunks, k, g):
    plan = plan_epoch(n_chunks, chunks_per_round=k, seed=2, epoch=0, shuffle=True,
                      shuffle_chunks=g)
    sizes = [len(grp) for r in plan for grp in r]
    assert sorted(c for r in plan for grp in r for c in grp) == list(range(n_chunks))
    assert max(sizes) <= g and max(sizes) - min(sizes) <= 1
    assert all(len(r) == k for r in plan[:-1])
    if len(sizes) < n_chunks:            # groups were possible: every round is full
        assert len(plan[-1]) == k
    if g == 1:                           # one chunk per task, as before groups existed
        assert sizes == [1] * n_chunks


def test_a_task_reads_its_group_of_chunks_and_each_chunk_once():
    loads = []
    X = _tracked_array(7, 3, loads)
    data = as_chunked(X)
    res = run_rounds(_Recorder(), [], data, n_epochs=2, chunks_per_round=2, seed=4,
                     shuffle=True, shuffle_chunks=3, scheduler="threads")
    assert sorted(loads) == sorted(list(range(7)) * 2)      # every chunk once per epoch
    for epoch in range(2):
        plan = plan_epoch(7, chunks_per_round=2, seed=4, epoch=epoch, shuffle=True,
                          shuffle_chunks=3)
        assert [len(g) for r in plan for g in r] == [2, 2, 2, 1]   # 4 groups: 2 rounds
        rounds = [r for r in res.state if r[0] == epoch]
        assert [tuple(t for t, _, _ in r[2]) for r in rounds] == plan
        # a task's rows are exactly those of its group's chunks
        assert all(sorted(t) == list(v) and n == 3 * len(t)
                   for r in rounds for t, v, n in r[2])
    assert plan_epoch(7, chunks_per_round=2, seed=4, epoch=0, shuffle=True,
                      shuffle_chunks=3) != plan       # new groups every epoch


def test_plan_epoch_is_a_permutation_and_deterministic():
    a = plan_epoch(10, chunks_per_round=4, seed=1, epoch=3, shuffle=True)
    b = plan_epoch(10, chunks_per_round=4, seed=1, epoch=3, shuffle=True)
    c = plan_epoch(10, chunks_per_round=4, seed=1, epoch=4, shuffle=True)
    assert a == b and a != c
    assert sorted(c for r in a for g in r for c in g) == list(range(10))
    assert [len(r) for r in a] == [4, 4, 2]
    assert all(len(g) == 1 for r in a for g in r)
    # groups of 3 chunks are cut from the same permutation: the order does not change
    grouped = plan_epoch(10, chunks_per_round=4, seed=1, epoch=3, shuffle=True,
                         shuffle_chunks=3)
    assert [c for r in grouped for g in r for c in g] == [c for r in a for g in r for c in g]
    assert [[len(g) for g in r] for r in grouped] == [[3, 3, 2, 2]]


def _fit(scheduler):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    Xd = da.from_array(X, chunks=(45, 4))
    clf = ok.DSGClassifier(n_features=512, block_size=32, batch_size=16, max_iter=2, tol=None,
                           chunks_per_round=3, random_state=7, scheduler=scheduler)
    return clf.fit(Xd, da.from_array(y, chunks=45))


@pytest.mark.slow
def test_bit_identical_on_sync_threads_and_distributed(dask_client):
    distributed = pytest.importorskip("distributed")
    ref = _fit("sync")
    threads = _fit("threads")
    # the session's cluster of 2 worker processes, through a Client of this test that is
    # Dask's default while it is open
    with distributed.Client(dask_client.scheduler.address) as client:
        dist = _fit(client)
        dist_default = _fit(None)  # the active client is Dask's default
    assert ref.coef_.shape[0] > 0
    for other in (threads, dist, dist_default):
        assert np.array_equal(ref.coef_, other.coef_)
        assert ref.n_iter_ == other.n_iter_
    Xt = np.random.default_rng(9).normal(size=(50, 4)).astype(np.float32)
    assert np.array_equal(ref.decision_function(Xt), dist.decision_function(Xt))


def test_models_do_not_depend_on_the_callers_blas_threads():
    """OpenBLAS results change in the last bits with its thread count (distributed workers
    run with one thread); chunk tasks pin one BLAS thread, so the model is the same."""
    from threadpoolctl import threadpool_info, threadpool_limits

    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 32)).astype(np.float32)
    y = (np.sum(X[:, :3] ** 2, axis=1) > 2.4).astype(int)
    params = dict(n_features=4096, block_size=128, batch_size=64, max_iter=1, tol=None, chunk_size=2000,
                  random_state=0, scheduler="sync")
    with threadpool_limits(limits=2, user_api="blas"):
        two = ok.DSGClassifier(**params).fit(X, y)
        after = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    with threadpool_limits(limits=1, user_api="blas"):
        one = ok.DSGClassifier(**params).fit(X, y)
    assert np.array_equal(one.coef_, two.coef_)
    assert np.array_equal(one.decision_function(X), two.decision_function(X))
    assert after == [2] * len(after)        # the caller's setting is restored after the fit


def test_a_fit_on_a_client_points_its_bar_at_the_dask_dashboard(capsys):
    """On a distributed Client the bar names the dashboard, Dask's own progress display of
    the fit's tasks; locally there is no link."""
    distributed = pytest.importorskip("distributed")
    from ooc_kernels.parallel.engine import _dashboard_link

    assert _dashboard_link("sync") is None
    X = np.random.default_rng(0).normal(size=(40, 2))
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        assert _dashboard_link(None) == client.dashboard_link == _dashboard_link(client)
        ok.DSGRegressor(n_features=64, block_size=16, batch_size=8, max_iter=1, tol=None,
                        random_state=0, progress=True).fit(X, X[:, 0])
    assert f"dashboard: {client.dashboard_link}" in capsys.readouterr().err
