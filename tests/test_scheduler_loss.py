"""A fit whose Dask scheduler goes away mid-fit ends promptly with the library's
``SchedulerLostError``, naming the checkpoint to resume from; resuming from it gives the
model of an uninterrupted fit."""

import threading
import time

import dask
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import SchedulerLostError

distributed = pytest.importorskip("distributed")

# 24 chunks and 20 epochs: the fit runs for many seconds after its first checkpoint, so the
# scheduler is always closed mid-fit
PARAMS = dict(n_features=128, block_size=32, batch_size=16, max_iter=20, tol=None,
              bandwidth=1.0, random_state=0, progress=False)
#: A cluster whose scheduler is gone closes in seconds, not after the default 30 s of
#: reconnection attempts.
FAST_CLOSE = {"distributed.comm.timeouts.connect": "2s"}


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1200, 4))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    import dask.array as da

    return da.from_array(X, chunks=50), da.from_array(y, chunks=50)


def _in_a_thread(fit):
    """Run ``fit()`` in a started daemon thread; the thread and a dict that gets the error
    the call raised (``"error"``) and the monotonic time it ended (``"end"``)."""
    out = {}

    def run():
        try:
            fit()
        except BaseException as err:  # noqa: BLE001 - checked by the caller
            out["error"] = err
        out["end"] = time.monotonic()

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    return runner, out


def _fit_and_lose_the_scheduler(ck, pipeline):
    """Start a fit with a checkpoint on a LocalCluster, close its scheduler once a few
    checkpoints are written; the fit's error and the seconds it took to arrive."""
    X, y = _data()
    with dask.config.set({**FAST_CLOSE, "ooc-kernels.cluster.pipeline": pipeline}), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                     dashboard_address=None) as cluster, \
            distributed.Client(cluster, timeout="3s") as client:
        runner, out = _in_a_thread(
            lambda: ok.DSGClassifier(**PARAMS, scheduler=client).fit(X, y, checkpoint=ck))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (ck / "zarr.json").exists() \
                and runner.is_alive():
            time.sleep(0.05)
        time.sleep(0.3)
        assert runner.is_alive(), f"the fit ended before the scheduler was closed: {out}"
        lost_at = time.monotonic()
        cluster.sync(cluster.scheduler.close)
        runner.join(timeout=30)
        assert not runner.is_alive(), "the fit still waits 30 s after the scheduler closed"
    return out["error"], out["end"] - lost_at


@pytest.fixture(scope="module")
def reference():
    """The uninterrupted fit's coefficients (the same for both pipelines; computed before
    the tests that take the machine to themselves, see tests/conftest.py)."""
    X, y = _data()
    return ok.DSGClassifier(**PARAMS, scheduler="sync").fit(X, y).coef_


@pytest.mark.slow
@pytest.mark.parametrize("pipeline", [True, False], ids=["chained", "per-round"])
def test_a_lost_scheduler_is_a_library_error_naming_the_checkpoint(tmp_path, pipeline,
                                                                    reference):
    ck = tmp_path / "ck"
    err, seconds = _fit_and_lose_the_scheduler(ck, pipeline)
    assert isinstance(err, SchedulerLostError), repr(err)
    assert seconds < 10, seconds
    message = str(err)
    assert "the Dask scheduler at inproc://" in message and "was lost during the fit" \
        in message
    assert f"resume from the checkpoint {str(ck)!r} (epoch " in message
    assert f"fit(..., checkpoint={str(ck)!r}, resume=True)" in message
    # the checkpoint named is one to resume from: it ends where an uninterrupted fit ends
    X, y = _data()
    resumed = ok.DSGClassifier(**PARAMS, scheduler="sync").fit(X, y, checkpoint=ck,
                                                               resume=True)
    np.testing.assert_array_equal(resumed.coef_, reference)


@pytest.mark.slow
def test_a_lost_scheduler_without_a_checkpoint_says_so(tmp_path):
    X, y = _data()
    with dask.config.set(FAST_CLOSE), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                     dashboard_address=None) as cluster, \
            distributed.Client(cluster, timeout="3s") as client:
        est = ok.DSGClassifier(**PARAMS, scheduler=client)
        cluster.sync(cluster.scheduler.close)
        start = time.monotonic()
        with pytest.raises(SchedulerLostError, match="was lost during the fit .*no "
                                                     "checkpoint was in use"):
            est.fit(X, y)
        assert time.monotonic() - start < 10


def _slow_first_read(block, started):
    started.set()
    time.sleep(2.0)
    return block


@pytest.mark.slow
def test_a_scheduler_lost_during_the_set_up_is_reported_promptly():
    """The set-up's reads (the labels, the sampled rows) wait with the bounded waits of the
    rounds: the scheduler closed while they run is a SchedulerLostError within seconds, not
    after Dask's reconnection timeout (20 s here)."""
    X, y = _data()
    started = threading.Event()
    X = X.map_blocks(_slow_first_read, started, dtype=X.dtype)
    with dask.config.set({"distributed.comm.timeouts.connect": "20s"}), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                     dashboard_address=None) as cluster, \
            distributed.Client(cluster, timeout="3s") as client:
        runner, out = _in_a_thread(
            lambda: ok.DSGClassifier(**PARAMS, scheduler=client).fit(X, y))
        assert started.wait(120), "the set-up never read a chunk"
        lost_at = time.monotonic()
        cluster.sync(cluster.scheduler.close)
        runner.join(timeout=60)
        assert not runner.is_alive()
    assert isinstance(out.get("error"), SchedulerLostError), out
    assert out["end"] - lost_at < 10, out["end"] - lost_at
