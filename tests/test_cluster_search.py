"""Searches on a ``dask.distributed`` cluster: a fit that runs inside a worker's task runs
its rounds in that task (never waits on the cluster that runs it), and gives the model of
the same fit on the synchronous scheduler."""

from __future__ import annotations

import dask
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_moons
from sklearn.model_selection import GridSearchCV

import ooc_kernels as ok
from ooc_kernels.parallel.scheduler import scheduler_context, task_worker

distributed = pytest.importorskip("distributed")

#: Small and fast; ``scheduler`` is left to the search (the default: Dask's choice).
PARAMS = dict(n_features=256, block_size=64, max_iter=3, tol=None, random_state=0)
GRID = {"alpha": [1e-4, 1e-2]}


def _moons():
    return make_moons(n_samples=240, noise=0.2, random_state=0)


@pytest.fixture(scope="module")
def cluster_client():
    """Two single-threaded workers: one fit per worker thread holds the whole cluster."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, timeout="30s") as client:
        yield client


def _sync_scores():
    X, y = _moons()
    ref = GridSearchCV(ok.DSGClassifier(**PARAMS, scheduler="sync"), GRID, cv=2,
                       refit=False)
    ref.fit(X, y)
    return ref.cv_results_["mean_test_score"], ref.cv_results_["split0_test_score"]


def test_task_worker_is_none_outside_a_task(cluster_client):
    assert task_worker() is None


def test_inside_a_task_the_default_scheduler_and_the_own_cluster_run_synchronously(
        cluster_client):
    address = cluster_client.scheduler.address

    def schedulers(addr):
        got = {}
        for name, spec in (("default", None), ("address", addr), ("threads", "threads")):
            with scheduler_context(spec) as sched:
                got[name] = (sched, dask.config.get("scheduler"))
        return got, task_worker() is not None

    got, in_task = cluster_client.submit(schedulers, address, pure=False).result(timeout=60)
    assert in_task
    assert got == {"default": ("sync", "sync"), "address": ("sync", "sync"),
                   "threads": ("threads", "threads")}


def test_inside_a_task_the_scheduler_configured_when_the_block_starts_is_kept(
        cluster_client):
    """Dask's configuration is one per process: another task's block may name "sync" while
    this task chooses, then give the cluster back before this task's rounds run.  The task
    keeps the scheduler it saw; deferring to the configuration sent its rounds to the
    cluster that runs it, where they waited for its own thread."""
    def chosen():
        got = []
        for name in ("sync", "threads", "single-threaded"):
            with dask.config.set(scheduler=name):  # another task's block, still open
                with scheduler_context(None) as sched:
                    got.append((sched, dask.config.get("scheduler")))
        return got

    got = cluster_client.submit(chosen, pure=False).result(timeout=60)
    assert got == [("sync", "sync"), ("threads", "threads"), ("sync", "sync")]
    with dask.config.set(scheduler="threads"), scheduler_context(None) as sched:
        assert sched is None  # outside a task the configuration is left alone


@pytest.mark.timeout(180)
def test_a_fit_in_a_worker_task_equals_the_synchronous_fit(cluster_client):
    X, y = _moons()
    ref = ok.DSGClassifier(**PARAMS, scheduler="sync").fit(X, y)
    est = ok.DSGClassifier(**PARAMS)

    def fit(e, X, y):
        return clone(e).fit(X, y)

    # both workers busy with a fit at once: before, each waited for chunk tasks forever
    futures = [cluster_client.submit(fit, est, X, y, pure=False) for _ in range(2)]
    for got in cluster_client.gather(futures):
        assert np.array_equal(ref.coef_, got.coef_)
        assert np.array_equal(ref.decision_function(X), got.decision_function(X))


@pytest.mark.timeout(180)
def test_scikit_learn_grid_search_with_joblibs_dask_backend_finishes(cluster_client):
    """The recipe of docs/search.md: ``joblib.parallel_backend("dask")`` and ``n_jobs=-1``."""
    import joblib

    X, y = _moons()
    search = GridSearchCV(ok.DSGClassifier(**PARAMS), GRID, cv=2, n_jobs=-1, refit=False)
    with joblib.parallel_backend("dask"):
        search.fit(X, y)
    mean, split0 = _sync_scores()
    assert np.array_equal(search.cv_results_["mean_test_score"], mean)
    assert np.array_equal(search.cv_results_["split0_test_score"], split0)


@pytest.mark.timeout(180)
def test_dask_ml_grid_search_on_a_client_finishes(cluster_client):
    pytest.importorskip("dask_ml", reason="dask-ml is not installed (the test extra has it)")
    from dask_ml.model_selection import GridSearchCV as DaskGridSearchCV

    X, y = _moons()
    search = DaskGridSearchCV(ok.DSGClassifier(**PARAMS), GRID, cv=2, refit=False)
    search.fit(X, y)
    mean, split0 = _sync_scores()
    assert np.array_equal(search.cv_results_["mean_test_score"], mean)
    assert np.array_equal(search.cv_results_["split0_test_score"], split0)
