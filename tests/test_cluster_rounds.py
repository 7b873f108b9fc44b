"""Rounds on a ``distributed.Client``: named tasks, chained futures with callbacks in round
order, progress driven by finished tasks, a bounded lineage, and results equal to the local
schedulers'."""

from __future__ import annotations

import contextlib
import gc
import re
import time

import dask
import dask.array as da
import numpy as np
import pytest
from dask.utils import key_split

import ooc_kernels as ok
from ooc_kernels import _progress
from ooc_kernels.data.inputs import as_chunked
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.parallel import engine
from ooc_kernels.parallel.cluster import active_client, cluster_rounds
from ooc_kernels.parallel.engine import RoundGraph, RoundInfo, run_rounds
from ooc_kernels.parallel.plan import plan_epoch

distributed = pytest.importorskip("distributed")


class _Mean:
    """Toy algorithm whose state depends on the order of everything: a running hash-like
    value of the rows, the task and the round (any change of order changes the result)."""

    def make_tasks(self, state, info):
        return [(info.epoch, info.round, i) for i in range(len(info.groups))]

    def chunk_step(self, state, batch, task):
        X = batch["X"]
        return np.array([state[0] * 0.5 + X.sum() * (1 + task[2]) + task[1], len(X)])

    def combine(self, a, b):
        return a * 1.25 + b

    def apply(self, state, delta, info):
        return np.array([state[0] + np.sin(delta[0]), state[1] + delta[1]])


def _data(n_chunks=9, rows=5):
    X = da.from_array(np.arange(n_chunks * rows * 2, dtype=float).reshape(-1, 2) % 7,
                      chunks=(rows, 2))
    return as_chunked(X)


def _run(scheduler, data=None, **kw):
    kw = {"n_epochs": 3, "chunks_per_round": 2, "seed": 3, **kw}
    return run_rounds(_Mean(), np.zeros(2), data if data is not None else _data(),
                      scheduler=scheduler, **kw)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, set_as_default=False, timeout="30s") as c:
        yield c


# ---------------------------------------------------------------------- names
def test_a_round_graph_names_its_tasks_by_epoch_round_and_chunk():
    data = _data()
    graph = RoundGraph(_Mean(), data, shuffle_chunks=1)
    info = RoundInfo(epoch=1, round=3, groups=((4,), (7,), (2,)), sizes=((5,), (5,), (5,)),
                     seed=0)
    delta = graph.local_round(np.zeros(2), info)
    keys = set(delta.__dask_graph__())
    token = delta.key.rsplit("-", 1)[1]
    assert len(token) == 16
    named = {k for k in keys if isinstance(k, str) and k.startswith("mean-")}
    assert named == {f"mean-chunk-step-e1-r3-c{c}-{token}" for c in (4, 7, 2)} | {
        f"mean-combine-e1-r3-l1-n0-{token}", f"mean-combine-e1-r3-l2-n0-{token}",
        f"mean-state-e1-r3-{token}"}
    assert delta.key == f"mean-combine-e1-r3-l2-n0-{token}"      # the root of the tree
    assert {key_split(k) for k in named} == {"mean-chunk-step", "mean-combine", "mean-state"}
    # deterministic: the same round gives the same keys; another state, other keys
    again = graph.local_round(np.zeros(2), info)
    other = graph.local_round(np.ones(2), info)
    assert set(again.__dask_graph__()) == keys
    assert other.key != delta.key and other.key.startswith("mean-combine-e1-r3-l2-n0-")


def test_groups_of_chunks_are_read_by_named_tasks():
    data = _data()
    graph = RoundGraph(_Mean(), data, shuffle_chunks=2)
    info = RoundInfo(epoch=0, round=0, groups=((4, 1), (7, 0)), sizes=((5, 5), (5, 5)),
                     seed=0)
    keys = {k for k in graph.local_round(np.zeros(2), info).__dask_graph__()
            if isinstance(k, str)}
    assert {key_split(k) for k in keys} == {"mean-chunk-step", "mean-combine",
                                            "mean-state", "mean-read-group"}
    assert any(k.startswith("mean-read-group-e0-r0-c4_1-X-") for k in keys)
    assert any(k.startswith("mean-chunk-step-e0-r0-c7_0-") for k in keys)


# ---------------------------------------------------------------------- settings
def test_cluster_settings_come_from_arguments_then_dask_config():
    assert cluster_rounds() == cluster_rounds(True, 1, 8)
    with dask.config.set({"ooc-kernels.cluster.chain": 3, "ooc-kernels.cluster.pipeline":
                          False}):
        assert cluster_rounds() == cluster_rounds(False, 1, 3)
        assert cluster_rounds(chain=5).chain == 5
    with pytest.raises(ValidationError, match=r"chain must be an integer >= 1, got 0"):
        cluster_rounds(chain=0)
    with pytest.raises(ValidationError, match=r"lookahead must be an integer >= 0"):
        cluster_rounds(lookahead=-1)


def test_the_active_client_is_the_one_dask_compute_would_use(client):
    assert active_client("sync") is None and active_client("threads") is None
    assert active_client(client) is client
    assert active_client(None) is None          # this client is not the default one
    with dask.config.set(scheduler=client):
        assert active_client(None) is client
    with client.as_current(), dask.config.set(scheduler="sync"):
        assert active_client(None) is None


# ---------------------------------------------------------------------- results
@pytest.mark.parametrize("settings", [dict(), dict(lookahead=0), dict(lookahead=3, chain=2),
                                      dict(chain=1), dict(pipeline=False)])
def test_rounds_on_a_client_equal_the_local_schedulers(client, settings):
    ref = _run("sync")
    got = _run(client, **settings)
    assert np.array_equal(ref.state, got.state)
    assert (got.epoch, got.round, got.n_rounds, got.stopped) == (3, 0, ref.n_rounds, False)
    resumed = _run(client, start_epoch=1, start_round=2, **settings)
    assert np.array_equal(resumed.state, _run("sync", start_epoch=1, start_round=2).state)


@pytest.mark.parametrize("k", [1, 3, 4, 5])
def test_every_reduction_tree_gives_the_local_result_on_a_client(client, k):
    """The root combine runs inside the apply task; the tree and its order do not change."""
    ref = _run("sync", chunks_per_round=k)
    with distributed.get_task_stream(client) as ts:
        got = _run(client, chunks_per_round=k)
    assert np.array_equal(ref.state, got.state)
    combines = {k2 for t in ts.data if isinstance(k2 := t["key"], str)
                and k2.startswith("mean-combine-e0-r0-")}
    assert len(combines) == max(k - 2, 0)      # K - 1 combines, the root one in apply


def test_callbacks_see_every_state_in_round_order_and_a_stop_runs_nothing_after_it(client):
    def record(scheduler, **kw):
        seen = []
        res = _run(scheduler, n_epochs=4,
                   callback=lambda s, info: seen.append(("round", info.epoch, info.round,
                                                         s.copy())),
                   epoch_callback=lambda s, e: seen.append(("epoch", e, s.copy())) or e == 1,
                   **kw)
        return res, seen

    ref, ref_seen = record("sync")
    with distributed.get_task_stream(client) as ts:
        got, got_seen = record(client, lookahead=2, chain=2)
    assert got.stopped and (got.epoch, got.round) == (ref.epoch, ref.round) == (2, 0)
    assert got.n_rounds == ref.n_rounds == 10
    assert [x[:-1] for x in got_seen] == [x[:-1] for x in ref_seen]
    assert all(np.array_equal(a[-1], b[-1]) for a, b in zip(got_seen, ref_seen))
    keys = [t["key"] for t in ts.data]
    assert keys and not any("-e2-" in k for k in keys if isinstance(k, str))
    # K = 2: the root combine runs inside the apply task
    assert {key_split(k) for k in keys if isinstance(k, str)} == {
        "mean-chunk-step", "mean-apply", "mean-state"}


def test_a_failing_callback_stops_the_run_and_cancels_the_queued_rounds(client):
    class Boom(Exception):
        pass

    calls = []

    def callback(state, info):
        calls.append((info.epoch, info.round))
        if len(calls) == 2:
            raise Boom("stop here")

    with pytest.raises(Boom, match="stop here"):
        _run(client, callback=callback, lookahead=3, chain=8)
    assert calls == [(0, 0), (0, 1)]
    # nothing of the cancelled rounds is left on the cluster (the scheduler forgets them
    # shortly after the cancel)
    assert _forgotten(client, timeout=30) == []


def _mean_keys(client, prefix: str = "mean-") -> list:
    return client.run_on_scheduler(lambda dask_scheduler: [
        k for k in dask_scheduler.tasks if isinstance(k, str) and k.startswith(prefix)])


def _forgotten(client, timeout: float = 10.0, prefix: str = "mean-") -> list:
    """Wait until the scheduler holds no key of an earlier run (it forgets released futures
    shortly after the client drops them, later on a loaded machine); what is left then."""
    deadline = time.monotonic() + timeout
    while (left := _mean_keys(client, prefix)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


class _Slow(_Mean):
    def chunk_step(self, state, batch, task):
        time.sleep(0.1)               # several looks at the connection per round
        return super().chunk_step(state, batch, task)


def test_waits_that_outlast_a_look_at_the_connection_leave_no_future_behind(client,
                                                                              monkeypatch):
    """The client looks at its connection many times while it waits for a round; no future
    is left in a reference cycle that only Python's cyclic garbage collector frees (off
    here; in a long process it runs rarely), so the scheduler forgets the run's keys as
    soon as the run returns."""
    from ooc_kernels.parallel import cluster as cl

    monkeypatch.setattr(cl, "POLL_SECONDS", 0.02)
    assert _forgotten(client, prefix="slow-") == []
    ref = run_rounds(_Slow(), np.zeros(2), _data(n_chunks=4), scheduler="sync", n_epochs=1,
                     chunks_per_round=2, seed=3)
    gc.collect()
    gc.disable()
    try:
        got = run_rounds(_Slow(), np.zeros(2), _data(n_chunks=4), scheduler=client,
                         n_epochs=1, chunks_per_round=2, seed=3)
        left = _forgotten(client, timeout=5, prefix="slow-")
    finally:
        gc.enable()
    assert np.array_equal(ref.state, got.state) and got.n_rounds == 2
    assert left == []


def test_the_lineage_kept_on_the_scheduler_is_bounded_by_the_chain(client):
    def tasks_on_scheduler(chain):
        assert _forgotten(client) == []      # count this run's keys only
        counts = []

        def callback(state, info):
            counts.append(client.run_on_scheduler(lambda dask_scheduler: sum(
                1 for k in dask_scheduler.tasks if isinstance(k, str)
                and k.startswith("mean-"))))

        _run(client, data=_data(n_chunks=40), n_epochs=1, chunks_per_round=1,
             callback=callback, chain=chain, lookahead=1)
        return counts

    long, short = tasks_on_scheduler(1000), tasks_on_scheduler(3)
    assert len(long) == len(short) == 40
    assert max(short) <= 5 * 3               # chain + lookahead + 1 rounds of <= 3 keys
    assert long[-1] > 3 * max(short)         # without synchronization points it grows


def test_dsg_on_a_client_keeps_its_models_and_names_its_tasks(client):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 3)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    params = dict(n_features=128, block_size=16, batch_size=8, max_iter=2, tol=None,
                  chunks_per_round=2, chunk_size=30, shuffle_chunks=1, random_state=1)
    ref = ok.DSGClassifier(**params, scheduler="sync").fit(X, y)
    with distributed.get_task_stream(client) as ts:
        got = ok.DSGClassifier(**params, scheduler=client).fit(X, y)
    assert np.array_equal(ref.coef_, got.coef_) and ref.t_ == got.t_
    keys = [t["key"] for t in ts.data if isinstance(t["key"], str)]
    assert sum(k.startswith("dsg-chunk-step-e1-r3-c") for k in keys) == 2
    plan = plan_epoch(8, chunks_per_round=2, seed=got._data_seed, epoch=1, shuffle=True)
    assert {k.rsplit("-", 1)[0] for k in keys if k.startswith("dsg-chunk-step-e1-r3-")} == {
        f"dsg-chunk-step-e1-r3-c{g[0]}" for g in plan[3]}


def test_chunk_tasks_keep_their_worker_and_read_their_next_group_ahead(client, monkeypatch):
    """Task slot i runs on the same worker every round, and reads the group it gets next
    round in the background: every group is read once, all but the first round's ahead."""
    from ooc_kernels.parallel import cluster as cl

    reads, loads = [], []
    real_read, real_load = cl._read_group, cl._load

    def read(*readers):
        reads.append(tuple(r.key[1] for r in readers))
        return real_read(*readers)

    def load(readers):
        with cl._PREFETCH_LOCK:
            ahead = cl._group_key(readers) in cl._PREFETCHED
        loads.append(ahead)
        return real_load(readers)

    monkeypatch.setattr(cl, "_read_group", read)
    monkeypatch.setattr(cl, "_load", load)
    cl._PREFETCHED.clear()
    ref = _run("sync", n_epochs=2, chunks_per_round=2)
    with distributed.get_task_stream(client) as ts:
        got = _run(client, n_epochs=2, chunks_per_round=2)
    assert np.array_equal(ref.state, got.state)
    assert sorted(reads) == sorted([(c,) for c in range(9)] * 2)   # each chunk once an epoch
    # 9 groups an epoch in rounds of 2, 2, 2, 2, 1: read ahead but the fit's first round
    # and slot 1 of epoch 1's first round (no slot 1 in the round before it)
    assert len(loads) == 18 and loads[:2] == [False, False] and loads.count(False) == 3
    slot = {}
    for epoch in range(2):
        plan = plan_epoch(9, chunks_per_round=2, seed=3, epoch=epoch, shuffle=True)
        slot.update({(epoch, r, g[0]): i for r, grp in enumerate(plan)
                     for i, g in enumerate(grp)})
    where = {}
    for t in ts.data:
        if isinstance(t["key"], str) and t["key"].startswith("mean-chunk-step-"):
            e, r, c = t["key"].split("-")[3:6]
            where.setdefault(slot[int(e[1:]), int(r[1:]), int(c[1:])], set()).add(t["worker"])
    assert len(where) == 2 and all(len(w) == 1 for w in where.values())
    assert where[0] != where[1]


def test_a_round_of_one_task_is_one_task_on_a_client(client, monkeypatch):
    """K = 1: the chunk step and apply run in one task a round (named as the chunk task),
    the state is the local schedulers', the next group is read ahead, and the workers are
    asked for once an epoch, not once a round."""
    from ooc_kernels.parallel import cluster as cl

    asked, loads, real_workers, real_load = [], [], cl._workers, cl._load

    def workers(c):
        asked.append(1)
        return real_workers(c)

    def load(readers):
        with cl._PREFETCH_LOCK:
            loads.append(cl._group_key(readers) in cl._PREFETCHED)
        return real_load(readers)

    monkeypatch.setattr(cl, "_workers", workers)
    monkeypatch.setattr(cl, "_load", load)
    cl._PREFETCHED.clear()
    ref = _run("sync", chunks_per_round=1, shuffle_chunks=2)
    with distributed.get_task_stream(client) as ts:
        got = _run(client, chunks_per_round=1, shuffle_chunks=2)
    assert np.array_equal(ref.state, got.state) and got.n_rounds == ref.n_rounds == 15
    keys = [t["key"] for t in ts.data if isinstance(t["key"], str)
            and t["key"].startswith("mean-")]
    per_round = {}
    for k in keys:
        if key_split(k) != "mean-state":
            per_round.setdefault(re.search(r"-e\d+-r\d+-", k).group(), []).append(
                key_split(k))
    assert len(per_round) == 15
    assert all(v == ["mean-chunk-step"] for v in per_round.values())
    assert len(asked) == 3                       # one look at the workers an epoch
    assert len(loads) == 15 and loads.count(False) == 1    # all but the first read ahead


# ---------------------------------------------------------------------- progress
class _Bar:
    def __init__(self, *a, **kw):
        self.updates, self.disable, self.postfix = [], False, None

    def update(self, n):
        self.updates.append(n)

    def set_postfix_str(self, s):
        self.postfix = s


def test_progress_on_a_client_advances_as_chunk_tasks_finish(client, monkeypatch):
    bars = []

    @contextlib.contextmanager
    def fake(total, desc, enabled=None, unit="it"):
        bar = _Bar()
        bar.total = total
        bars.append(bar)
        yield bar

    monkeypatch.setattr(engine, "progress_bar", fake)
    _run("sync", chunks_per_round=3, shuffle_chunks=1)
    _run(client, chunks_per_round=3, shuffle_chunks=1)
    local, cluster = bars
    assert sum(local.updates) == sum(cluster.updates) == local.total == 27
    assert local.updates == [3] * 9               # a round at a time
    assert cluster.updates == [1] * 27            # a chunk task at a time


def test_a_fit_on_a_client_shows_a_bar_unless_progress_is_off(client, capsys, monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    params = dict(n_features=32, block_size=8, batch_size=8, max_iter=1, tol=None,
                  chunk_size=20, random_state=0, scheduler=client)
    ok.DSGRegressor(**params, progress=True).fit(X, X[:, 0])
    err = capsys.readouterr().err
    assert "DSGRegressor:" in err and "/3 [" in err               # a tqdm bar over 3 chunks
    monkeypatch.setenv("OOC_KERNELS_PROGRESS", "0")
    ok.DSGRegressor(**params).fit(X, X[:, 0])
    monkeypatch.delenv("OOC_KERNELS_PROGRESS")
    _progress.set_progress(False)
    try:
        ok.DSGRegressor(**params).fit(X, X[:, 0])
    finally:
        _progress.set_progress(None)
    assert capsys.readouterr().err == ""
