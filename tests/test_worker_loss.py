"""Distributed fits survive a lost worker; data errors stop them with the chunk and cause."""

import threading
import time

import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import InvalidDataError

distributed = pytest.importorskip("distributed")

PARAMS = dict(n_features=2048, block_size=128, batch_size=32, max_iter=3, tol=None, chunks_per_round=3,
              random_state=0)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("wl") / "nb.zarr"
    return ok.make_dataset("nonlinear_binary", path, 24_000, chunk_size=1000, n_features=16,
                           progress=False)


def _kill_a_worker_mid_fit(store, params):
    """SIGKILL a worker once the fit's tasks run; the fit must give the sync model."""
    from ooc_kernels.data.schema import open_zarr_dataset

    ds = open_zarr_dataset(store)
    reference = ok.DSGClassifier(**params, scheduler="sync").fit(ds)
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        client.wait_for_workers(3)
        result, done = {}, threading.Event()

        def fit():
            try:
                result["model"] = ok.DSGClassifier(**params, scheduler=client).fit(ds)
            except BaseException as err:          # reported below
                result["error"] = err
            finally:
                done.set()

        runner = threading.Thread(target=fit)
        runner.start()
        # wait until tasks run on the workers, then SIGKILL one worker process
        deadline = time.time() + 60
        while time.time() < deadline and not done.is_set():
            busy = [w for w, ts in client.processing().items() if ts]
            if busy:
                break
            time.sleep(0.01)
        assert not done.is_set(), "the fit ended before a worker could be killed"
        victim = next(n for n in cluster.workers.values() if n.worker_address == busy[0])
        victim.process.process.kill()
        killed_at = time.time()
        runner.join(timeout=300)
        assert done.is_set(), "the fit did not finish after the worker loss"
    assert "error" not in result, repr(result.get("error"))
    assert result["model"].n_samples_seen_ == reference.n_samples_seen_
    assert np.array_equal(result["model"].coef_, reference.coef_)
    assert killed_at < time.time()


@pytest.mark.slow
def test_killing_a_worker_mid_fit_gives_the_undisturbed_model(store):
    # the bandwidth given: the worker is killed while the fit's rounds run
    _kill_a_worker_mid_fit(store, dict(PARAMS, bandwidth=1.0))


@pytest.mark.slow
def test_killing_a_worker_during_the_set_up_gives_the_undisturbed_model(store):
    # bandwidth="auto": the worker is killed while the set-up reads its sample; the set-up's
    # own computations run in the fitting thread, on one BLAS thread like the reference's
    _kill_a_worker_mid_fit(store, PARAMS)


@pytest.mark.slow
def test_data_error_on_a_cluster_stops_with_chunk_and_cause():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    y = (X[:, 0] > 0).astype(int)
    X[432, 2] = np.inf
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        start = time.time()
        with pytest.raises(InvalidDataError, match=r"chunk 4, row 32, feature 2"):
            ok.DSGClassifier(**dict(PARAMS, bandwidth=1.0, shuffle=False),
                             scheduler=client).fit(da.from_array(X, chunks=(100, 4)),
                                                   da.from_array(y, chunks=100))
        assert time.time() - start < 60          # no retry loop
