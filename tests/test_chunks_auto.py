"""``chunks_per_round="auto"``: one chunk task per worker of a ``distributed.Client``, 1 on
the local schedulers; the resolved ``K`` is published (``chunks_per_round_``), saved, and
kept by a resumed fit and by a continued one (``partial_fit``)."""

from __future__ import annotations

import re

import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.estimators._constraints import InvalidParameterError
from ooc_kernels.exceptions import OocKernelsError
from ooc_kernels.parallel.cluster import auto_tasks_per_round
from _interrupt import _interrupt_after, _Stop

distributed = pytest.importorskip("distributed")

# small enough for a second a fit: 8 chunks of 60 rows (4 rounds an epoch with K = 2)
PARAMS = dict(n_features=128, block_size=32, batch_size=16, bandwidth=1.0, max_iter=2,
              tol=None, shuffle_chunks=1, random_state=0, progress=False)


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(480, 3))
    y = np.where(X[:, 0] ** 2 + X[:, 1] > 0.8, 1, 0)
    return da.from_array(X, chunks=(60, 3)), da.from_array(y, chunks=(60,))


def _arrays(est):
    return {k: np.asarray(v) for k, v in est._fitted_arrays().items()}


def _assert_same_model(a, b):
    ours, theirs = _arrays(a), _arrays(b)
    assert sorted(ours) == sorted(theirs)
    for name in ours:
        assert np.array_equal(ours[name], theirs[name]), name


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as c:
        yield c


@pytest.fixture(scope="module")
def client(cluster):
    with distributed.Client(cluster, set_as_default=False, timeout="30s") as c:
        yield c


@pytest.fixture(scope="module")
def two_tasks_reference():
    """The explicit ``K = 2`` model, fitted on the synchronous scheduler."""
    return ok.DSGClassifier(**PARAMS, chunks_per_round=2, scheduler="sync").fit(*_data())


def _chunk_steps_by_round(stream) -> dict:
    """``{(epoch, round): [worker of each chunk task]}`` from a task stream."""
    rounds: dict = {}
    for task in stream:
        m = re.match(r"dsg-chunk-step-e(\d+)-r(\d+)-c\d+-", str(task["key"]))
        if m:
            rounds.setdefault((int(m[1]), int(m[2])), []).append(task["worker"])
    return rounds


def test_a_default_fit_on_a_client_with_two_workers_runs_two_tasks_per_round(cluster,
                                                                           two_tasks_reference):
    X, y = _data()
    # the Client is the default one: a default fit (scheduler=None) uses it
    with distributed.Client(cluster, set_as_default=True, timeout="30s") as c:
        with distributed.get_task_stream(c) as ts:
            clf = ok.DSGClassifier(**PARAMS).fit(X, y)
        stream = ts.data
    assert clf.chunks_per_round == "auto" and clf.chunks_per_round_ == 2
    rounds = _chunk_steps_by_round(stream)
    # 8 chunks, K = 2: 4 rounds an epoch, 2 epochs, every round two tasks on two workers
    assert sorted(rounds) == [(e, r) for e in range(2) for r in range(4)]
    for key, workers in rounds.items():
        assert len(workers) == 2, (key, workers)
        assert len(set(workers)) == 2, (key, workers)
    # the same model as the explicit K = 2 fit on the synchronous scheduler
    _assert_same_model(clf, two_tasks_reference)


@pytest.mark.parametrize("scheduler", ["sync", "threads"])
def test_auto_is_one_task_per_round_on_the_local_schedulers(scheduler):
    X, y = _data()
    auto = ok.DSGClassifier(**PARAMS, scheduler=scheduler).fit(X, y)
    one = ok.DSGClassifier(**PARAMS, chunks_per_round=1, scheduler="sync").fit(X, y)
    assert auto.chunks_per_round_ == 1
    _assert_same_model(auto, one)


def test_auto_tasks_per_round_counts_the_workers(client):
    assert auto_tasks_per_round(client) == 2
    assert [auto_tasks_per_round(s) for s in ("sync", "threads", "processes")] == [1, 1, 1]


def test_a_fit_resumed_elsewhere_keeps_the_checkpointed_tasks_per_round(
        client, two_tasks_reference, tmp_path, monkeypatch):
    X, y = _data()
    ck = tmp_path / "ck.zarr"
    _interrupt_after(monkeypatch, 3)  # epoch 0, round 3 of 4
    with pytest.raises(_Stop, match="simulated crash"):
        ok.DSGClassifier(**PARAMS, scheduler=client).fit(X, y, checkpoint=ck)
    monkeypatch.undo()
    # resumed on the synchronous scheduler, where "auto" alone would give K = 1
    resumed = ok.DSGClassifier(**PARAMS, scheduler="sync").fit(X, y, checkpoint=ck,
                                                               resume=True)
    assert resumed.chunks_per_round_ == 2
    _assert_same_model(resumed, two_tasks_reference)


def test_partial_fit_keeps_the_tasks_per_round_of_its_first_call(client):
    X, y = _data()
    params = {**PARAMS, "max_iter": 1}
    est = ok.DSGClassifier(**params, scheduler=client)
    est.partial_fit(X, y, classes=[0, 1])
    est.set_params(scheduler="sync")
    est.partial_fit(X, y)
    ref = ok.DSGClassifier(**params, chunks_per_round=2, scheduler="sync")
    ref.partial_fit(X, y, classes=[0, 1]).partial_fit(X, y)
    assert est.chunks_per_round_ == 2
    _assert_same_model(est, ref)


def test_a_saved_model_keeps_its_tasks_per_round(two_tasks_reference, tmp_path):
    two_tasks_reference.save(tmp_path / "m.zarr")
    assert ok.load(tmp_path / "m.zarr").chunks_per_round_ == 2


def test_chunks_per_round_accepts_auto_and_integers_only():
    X, y = _data()
    with pytest.raises(InvalidParameterError, match=r"chunks_per_round.*'auto'.*'many'"):
        ok.DSGClassifier(**PARAMS, chunks_per_round="many").fit(X, y)
    with pytest.raises(OocKernelsError, match="resolved when a fit starts"):
        ok.DSGClassifier(**PARAMS)._tasks_per_round


def test_an_unfitted_auto_estimator_lists_its_attributes():
    """dask-ml and scikit-learn call ``dir()`` (which calls ``hasattr`` on every attribute)
    on unfitted estimators: the unresolved ``K`` must read as absent, not raise."""
    est = ok.DSGClassifier(**PARAMS)
    assert not hasattr(est, "_tasks_per_round")
    assert "chunks_per_round" in dir(est)
    assert not [name for name in dir(est) if name.endswith("_") and not name.startswith("_")]
