"""A process killed (SIGKILL) while it fits with Dask's ``"processes"`` scheduler leaves no
worker process behind: the pool's workers end with it (``ooc_kernels.parallel.worker_exit``),
and the pool's resource tracker then ends too."""

import os
import signal
import subprocess
import sys
import time

import pytest

psutil = pytest.importorskip("psutil")

#: A fit long enough to be killed in its rounds: every round is a computation on a pool of
#: worker processes.
FIT = r"""
import dask.array as da
import numpy as np
import ooc_kernels as ok

rng = np.random.default_rng(0)
X = rng.normal(size=(2000, 4))
y = (X[:, 0] * X[:, 1] > 0).astype(int)
ok.DSGClassifier(n_features=64, block_size=32, batch_size=16, max_iter=1000, tol=None,
                 random_state=0, progress=False, scheduler="processes",
                 chunks_per_round=2).fit(da.from_array(X, chunks=100),
                                         da.from_array(y, chunks=100))
"""


def _workers(proc) -> list:
    """The pool's worker processes among ``proc``'s children (not its resource tracker)."""
    out = []
    for child in proc.children(recursive=True):
        try:
            if "resource_tracker" not in " ".join(child.cmdline()):
                out.append(child)
        except psutil.Error:  # ended meanwhile
            pass
    return out


def _running(children) -> list:
    out = []
    for child in children:
        try:
            if child.is_running() and child.status() != psutil.STATUS_ZOMBIE:
                out.append(child)
        except psutil.Error:
            pass
    return out


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGKILL and /proc: Linux")
def test_killing_a_fit_on_the_processes_scheduler_leaves_no_worker_running():
    fit = subprocess.Popen([sys.executable, "-c", FIT], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    children = []
    try:
        proc = psutil.Process(fit.pid)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and len(_workers(proc)) < 2 and fit.poll() is None:
            time.sleep(0.1)
        assert fit.poll() is None, "the fit ended before it was killed"
        assert len(_workers(proc)) >= 2, "the fit started no worker processes in 180 s"
        time.sleep(2.0)  # the workers run the round's tasks (or still start)
        children = proc.children(recursive=True)
        os.kill(fit.pid, signal.SIGKILL)
        fit.wait(timeout=30)
        end = time.monotonic() + 30  # a busy machine starts the workers slowly
        while _running(children) and time.monotonic() < end:
            time.sleep(0.1)
        left = _running(children)
        assert not left, [" ".join(c.cmdline())[-80:] for c in left]
    finally:
        if fit.poll() is None:
            fit.kill()
        for child in _running(children):
            child.kill()
