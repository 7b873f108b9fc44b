"""A fitted estimator scored (``score``, ``evaluate``) or writing its predictions
(``write_predictions``) on lazy data through a ``distributed.Client`` whose scheduler is
already gone raises the library's ``SchedulerLostError`` within seconds, as a fit does,
rather than waiting out the Client's reconnection timeout (20 s here) and then raising
Dask's ``FutureCancelledError``, its message naming the call (not a fit); lazy predictions (``predict``, ``predict_proba``,
``decision_function``) send nothing to the Client and come back at once."""

import time

import dask
import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.evaluation import evaluate, write_predictions
from ooc_kernels.exceptions import SchedulerLostError

distributed = pytest.importorskip("distributed")

#: The Client's timeout, how long it tries to reconnect to a lost scheduler: a computation
#: that waits for it ends after 20 s, far beyond the 10 s the error must arrive in.
CLIENT_TIMEOUT = "20s"
#: The cluster, whose scheduler is gone, closes in seconds.
FAST_CLOSE = {"distributed.comm.timeouts.connect": "2s"}


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    return da.from_array(X, chunks=50), da.from_array(y, chunks=50)


def _classifier():
    X, y = _data()
    return ok.DSGClassifier(n_features=64, block_size=32, batch_size=16, max_iter=1,
                            tol=None, bandwidth=1.0, loss="logistic", random_state=0,
                            progress=False, scheduler="sync").fit(X, y)


def _regressor():
    X, y = _data()
    return ok.DSPDCRegressor(max_iter=1, random_state=0, progress=False,
                             scheduler="sync").fit(X, y.astype(np.float64))


FITTED = {"classifier": _classifier, "regressor": _regressor}
#: (the fitted estimator, lazy X, lazy y, a path for a store that does not exist yet)
CALLS = {
    "score": lambda est, X, y, out: est.score(X, y),
    "score-weighted": lambda est, X, y, out: est.score(X, y, sample_weight=da.ones_like(
        y, dtype=np.float64)),
    "evaluate": lambda est, X, y, out: evaluate(est, X, y, progress=False),
    "write_predictions": lambda est, X, y, out: write_predictions(est, X, out,
                                                                  progress=False),
}

#: The operation each call's error names (``ooc-kernels predict --out`` is write_predictions).
OPERATION = {"score": "score", "score-weighted": "score", "evaluate": "evaluate",
             "write_predictions": "write_predictions"}


def _with_a_lost_scheduler(est, call, out=None):
    """``call(est, X, y, out)`` on lazy data, ``est`` set to a Client whose scheduler has just
    been closed (and the Client has seen it); what it returned, the error it raised (or
    None) and the seconds it took."""
    X, y = _data()
    if isinstance(est, ok.DSPDCRegressor):
        y = y.astype(np.float64)
    with dask.config.set(FAST_CLOSE), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                     dashboard_address=None) as cluster, \
            distributed.Client(cluster, timeout=CLIENT_TIMEOUT,
                               set_as_default=False) as client:
        est.set_params(scheduler=client)
        cluster.sync(cluster.scheduler.close)
        lost_at = time.monotonic()
        while client.status == "running" and time.monotonic() < lost_at + 5:
            time.sleep(0.01)  # the Client has seen its connection go down
        start = time.monotonic()
        value = err = None
        try:
            value = call(est, X, y, out)
        except Exception as caught:  # noqa: BLE001 - checked by the caller
            err = caught
        seconds = time.monotonic() - start
    return value, err, seconds


@pytest.mark.slow
@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("task", list(FITTED))
def test_scoring_with_a_lost_scheduler_is_reported_promptly(tmp_path, task, call):
    out = tmp_path / "predictions.zarr"
    _, err, seconds = _with_a_lost_scheduler(FITTED[task](), CALLS[call], out)
    assert isinstance(err, SchedulerLostError), repr(err)
    assert "the Dask scheduler at inproc://" in str(err)
    # the message names the call that lost it, not a fit
    with pytest.raises(SchedulerLostError, match=f"was lost during {OPERATION[call]} "):
        raise err
    assert seconds < 10, seconds
    # nothing half-written is left where the predictions were to go
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("method", ["predict", "predict_proba", "decision_function"])
def test_lazy_predictions_with_a_lost_scheduler_come_back_lazy_at_once(method):
    """A lazy prediction is a graph for the caller to compute: made with the scheduler
    gone, it sends nothing and computes, on a scheduler that runs, what the same
    prediction made before the scheduler was set gives."""
    est = _classifier()
    X, _ = _data()
    expected = getattr(est, method)(X).compute(scheduler="sync")
    value, err, seconds = _with_a_lost_scheduler(est, lambda e, X, y, out: getattr(e, method)(X))
    assert err is None, repr(err)
    assert seconds < 2, seconds
    assert isinstance(value, da.Array)
    np.testing.assert_array_equal(value.compute(scheduler="sync"), expected)

