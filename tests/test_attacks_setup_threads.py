"""Attacks on the set-up work a fit shares among its threads: a set-up that fails or is
interrupted (Ctrl-C) while the leave-one-out scan runs early on a thread of its own, and
errors raised inside :func:`~ooc_kernels._threads.map_in_order`'s workers.  What a fit
started must have ended when it raises, and nothing of it (a thread, the BLAS limit)
outlives it."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels import _blas
from ooc_kernels._blas import single_threaded_blas
from ooc_kernels._threads import map_in_order
from ooc_kernels.families.dsg import _setup_loo
from ooc_kernels.families.dsg import estimators as dsg_estimators

RNG = np.random.default_rng(0)
X = RNG.normal(size=(1100, 3))     # above GCV_MAX_ROWS: the leave-one-out scan runs early
Y = (X[:, 0] * X[:, 1] > 0).astype(int)


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_failed_width_decision_ends_the_early_scan(monkeypatch, error):
    """The per-input width decision raises while the early scan runs: the fit raises that
    error only once the scan has ended, and the scan's BLAS limit is gone with it."""
    started, release, ended = threading.Event(), threading.Event(), threading.Event()

    def scan(*args, **kwargs):     # the early scan, holding the BLAS limit as the real one
        started.set()
        with single_threaded_blas():
            release.wait(10)
        ended.set()
        return None

    def decision(*args, **kwargs):
        assert started.wait(10)
        threading.Timer(0.2, release.set).start()   # the scan ends after the fit raised
        raise error("the width decision failed")

    monkeypatch.setattr(_setup_loo, "select_setup_loo", scan)
    monkeypatch.setattr(dsg_estimators, "per_input_shape", decision)
    with pytest.raises(error, match="the width decision failed"):
        ok.DSGClassifier(n_jobs=2, max_iter=1, progress=False, random_state=0).fit(X, Y)
    assert ended.is_set()
    assert _blas._depth == 0


def test_setup_loo_ahead_close_discards_the_early_answer(monkeypatch):
    """close() marks the early answer unwanted, waits for the run and skips its
    follow-up; closing again does nothing."""
    started, gate, calls = threading.Event(), threading.Event(), []

    def scan(*args, **kwargs):
        started.set()
        assert gate.wait(10)
        return "answer"

    monkeypatch.setattr(_setup_loo, "select_setup_loo", scan)
    ahead = _setup_loo.SetupLOOAhead(2, "base", None, then=calls.append)
    assert started.wait(10)
    threading.Timer(0.2, gate.set).start()
    ahead.close()
    assert ahead._future.done() and ahead._future.result() == ("answer", None)
    assert calls == [] and ahead.then_value is None
    ahead.close()


def test_map_in_order_raises_the_first_error_in_order_and_stops():
    """An error in a worker is raised in the caller (the first in the items' order), items
    not started are not run, and the next call works."""
    ran = []
    gate = threading.Event()

    def work(i):
        ran.append(i)
        if i == 1:
            gate.set()
            raise ValueError(f"item {i} is bad")
        if i == 3:
            raise KeyError(i)
        if i == 0:
            assert gate.wait(10)
        return i

    with pytest.raises(ValueError, match="item 1 is bad"):
        map_in_order(work, range(40), threads=2)
    assert len(ran) < 40
    assert map_in_order(lambda x: -x, range(5), threads=3) == [0, -1, -2, -3, -4]
