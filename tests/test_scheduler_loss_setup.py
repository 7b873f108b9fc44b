"""A Dask scheduler lost as a fit's set-up (or its closing pass) sends a computation to a
``distributed.Client`` ends the fit with the library's ``SchedulerLostError`` within seconds,
in every family: each such computation goes through the bounded waits of
``ooc_kernels.parallel.cluster.compute`` (it looks at the Client's connection before it
sends and while it waits), never waiting for the Client's reconnection timeout (20 s here).

Each case closes the scheduler of an in-process ``LocalCluster`` at the moment the
computation under test is handed to the Client (``Client.get`` or ``Client.compute`` called
from the library function that computes it), then times the error."""

import sys
import time

import dask
import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import SchedulerLostError

distributed = pytest.importorskip("distributed")

#: The Client's timeout, how long it tries to reconnect to a lost scheduler: a computation
#: that waits for it ends after 20 s, far beyond the 10 s the error must arrive in.
CLIENT_TIMEOUT = "20s"
#: The cluster, whose scheduler is gone, closes in seconds.
FAST_CLOSE = {"distributed.comm.timeouts.connect": "2s"}


def _data(n=1200, chunks=50):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 4))
    y = X[:, 0] * X[:, 1] + 0.1 * rng.normal(size=n)
    return da.from_array(X, chunks=(chunks, 4)), da.from_array(y, chunks=chunks)


def _one_class(client):
    X, _ = _data()
    ok.DSGOneClassSVM(n_features=64, block_size=32, batch_size=16, max_iter=1, tol=None,
                      random_state=0, progress=False, scheduler=client).fit(X)


def _density_ratio(client):
    X, _ = _data()
    ok.DSGDensityRatio(n_features=64, block_size=32, batch_size=16, max_iter=1, tol=None,
                       random_state=0, progress=False, scheduler=client).fit(X, X + 0.5)


def _gaussian_process(client):
    X, y = _data()
    ok.DSGGaussianProcessRegressor(n_features=64, block_size=32, random_state=0,
                                   progress=False, scheduler=client).fit(X, y)


def _dspdc(client):
    X, y = _data()
    ok.DSPDCRegressor(max_iter=1, random_state=0, progress=False,
                      scheduler=client).fit(X, y)


def _dspdc_final_gap(client):
    X, y = _data()
    # tol=None: the final iterate's duality gap is a pass over the rows of its own
    ok.DSPDCRegressor(max_iter=1, tol=None, random_state=0, progress=False,
                      scheduler=client).fit(X, y)


def _balanced_given_classes(client):
    X, y = _data()
    # classes given: the set-up reads no labels, the counts of "balanced" are read apart
    ok.DSGClassifier(n_features=64, block_size=32, batch_size=16, bandwidth=1.0,
                     class_weight="balanced", random_state=0, progress=False,
                     scheduler=client).partial_fit(X, (y > 0).astype(int), classes=[0, 1])


def _online(client):
    X, y = _data()
    # two columns: the degree that 500 Taylor features allow (30) is above the one the
    # rows' count alone gives, so the degree needs the rows' radius (a pass over X)
    ok.OnlineKernelRidge(degree="auto", chunk_size=50, random_state=0, progress=False,
                         scheduler=client).fit(X[:, :2], y)


#: (the fit, the library module and the function in it that sends the computation under
#: test)
CASES = {
    "dsg-one-class-offset": (_one_class, "ooc_kernels/families/dsg/one_class.py", "_finish"),
    "dsg-density-ratio-sample": (_density_ratio, "ooc_kernels/families/dsg/density_ratio.py",
                                 "_sample"),
    "dsg-gp-variance-statistics": (_gaussian_process,
                                   "ooc_kernels/families/dsg/_gp_variance.py",
                                   "statistics_pass"),
    "dspdc-setup-statistics": (_dspdc, "ooc_kernels/families/dspdc/_setup_pass.py", "read"),
    "dspdc-duality-gap": (_dspdc_final_gap, "ooc_kernels/families/dspdc/_gap_report.py",
                          "_primal_value"),
    "dsg-balanced-label-counts": (_balanced_given_classes,
                                  "ooc_kernels/families/dsg/estimators.py", "_class_weights"),
    "pkawv-online-radius": (_online, "ooc_kernels/families/pkawv/online.py", "radius"),
}


def _sent_from(path: str, function: str) -> bool:
    """Whether the calling thread is inside ``function`` of the library file ``path``."""
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if code.co_name == function and code.co_filename.endswith(path):
            return True
        frame = frame.f_back
    return False


def _losing_the_scheduler_when_sent(monkeypatch, cluster, path, function) -> dict:
    """Patch ``Client.get`` (``dask.compute``) and ``Client.compute`` (the bounded compute)
    to close ``cluster``'s scheduler, wait until the Client has seen its connection go
    down, then send as usual, when called from ``function`` of ``path``; the dict gets the
    monotonic time of the close (``"lost_at"``)."""
    seen = {}

    def closing(send):
        def send_after_closing(client, *args, **kwargs):
            if "lost_at" not in seen and _sent_from(path, function):
                seen["lost_at"] = time.monotonic()
                cluster.sync(cluster.scheduler.close)
                while client.status == "running" and time.monotonic() < seen["lost_at"] + 5:
                    time.sleep(0.01)  # the Client has seen its connection go down
            return send(client, *args, **kwargs)
        return send_after_closing

    for name in ("get", "compute"):
        monkeypatch.setattr(distributed.Client, name, closing(getattr(distributed.Client,
                                                                      name)))
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_a_scheduler_lost_as_a_set_up_computation_is_sent_is_reported_promptly(monkeypatch,
                                                                              case):
    fit, path, function = CASES[case]
    out = {}
    with dask.config.set(FAST_CLOSE), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                     dashboard_address=None) as cluster, \
            distributed.Client(cluster, timeout=CLIENT_TIMEOUT, set_as_default=False) as client:
        seen = _losing_the_scheduler_when_sent(monkeypatch, cluster, path, function)
        try:
            fit(client)
        except Exception as err:  # noqa: BLE001 - checked below
            out["error"] = err
        end = time.monotonic()
    assert "lost_at" in seen, f"{function} of {path} sent nothing to the Client: {out}"
    assert isinstance(out.get("error"), SchedulerLostError), out
    assert "was lost during the fit" in str(out["error"])
    assert end - seen["lost_at"] < 10, end - seen["lost_at"]
