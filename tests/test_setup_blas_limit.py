"""The BLAS limit is held for a fit's whole set-up.

Two fits in threads of one process each enter and leave :func:`single_threaded_blas` many
times during their set-up (bandwidth trials, per-input width search); a limit that ended
between two of those steps let the other fit's BLAS calls run multi-threaded beside it, and
OpenBLAS then spun (two fits with ``bandwidth="auto"`` took 20 to 40 CPU seconds against
about 1.3 s alone).  Holding the limit from the start of the set-up to its end removes the
windows; these tests fail if the set-up runs outside it.
"""

from __future__ import annotations

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels import _blas


def _record_depth(monkeypatch, cls):
    seen = []
    original = cls._initialize

    def spy(self, *args, **kwargs):
        seen.append(_blas._depth)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(cls, "_initialize", spy)
    return seen


@pytest.mark.parametrize("cls, y_kind", [(ok.DSGRegressor, "real"),
                                          (ok.DSGClassifier, "label"),
                                          (ok.DSPDCRegressor, "real")])
def test_the_set_up_runs_inside_the_blas_limit(monkeypatch, cls, y_kind):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = X[:, 0] if y_kind == "real" else (X[:, 0] > 0).astype(int)
    seen = _record_depth(monkeypatch, cls)
    params = dict(max_iter=1, random_state=0, progress=False, tol=None)
    if cls is not ok.DSPDCRegressor:
        params.update(n_features=64, block_size=32, bandwidth=1.0)
    cls(**params).fit(X, y)
    assert seen and all(depth >= 1 for depth in seen), seen
    assert _blas._depth == 0   # and released after the fit


# ---------------------------------------------------------------- the limit across threads
def _blas_threads() -> int:
    from threadpoolctl import threadpool_info

    return max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")


@pytest.fixture
def two_blas_threads():
    """The caller's setting: 2 BLAS threads (a limit of 1 must then be seen)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=2, user_api="blas"):
        if _blas_threads() < 2:
            pytest.skip("this BLAS runs one thread at most")
        yield


def test_a_limit_entered_in_a_thread_holds_after_the_main_thread_held_one(two_blas_threads):
    # threadpoolctl obeys only the first thread that set OpenBLAS's threads; the main thread
    # holding the limit once must not make every later limit in another thread a no-op
    import threading

    with _blas.single_threaded_blas():
        assert _blas_threads() == 1
    assert _blas_threads() == 2
    seen = []

    def in_thread():
        with _blas.single_threaded_blas():
            seen.append(_blas_threads())
        seen.append(_blas_threads())

    worker = threading.Thread(target=in_thread)
    worker.start()
    worker.join()
    assert seen == [1, 2]


def test_a_limit_begun_in_one_thread_and_ended_in_another_restores_the_setting(
        two_blas_threads):
    import threading

    first_in, second_in, first_out = (threading.Event() for _ in range(3))
    seen = {}

    def first():
        with _blas.single_threaded_blas():
            seen["first, alone"] = _blas_threads()
            first_in.set()
            second_in.wait(30)
        first_out.set()

    def second():
        first_in.wait(30)
        with _blas.single_threaded_blas():
            second_in.set()
            first_out.wait(30)
            seen["second, after the first left"] = _blas_threads()
        seen["after both"] = _blas_threads()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"first, alone": 1, "second, after the first left": 1, "after both": 2}
    assert _blas._depth == 0 and _blas_threads() == 2


def _two_fits_in_threads(X, y, params):
    import threading

    barrier = threading.Barrier(2, timeout=60)
    seen, models = [], {}
    original = ok.DSGRegressor._initialize

    def spy(self, *args, **kwargs):
        barrier.wait()                 # both set-ups under way
        seen.append(("start", _blas_threads()))
        try:
            return original(self, *args, **kwargs)
        finally:
            seen.append(("end", _blas_threads()))

    def fit(seed):
        models[seed] = ok.DSGRegressor(**params, random_state=seed).fit(X, y)

    ok.DSGRegressor._initialize = spy
    try:
        threads = [threading.Thread(target=fit, args=(s,)) for s in (1, 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        ok.DSGRegressor._initialize = original
    return seen, models


def test_two_fits_in_threads_each_set_up_under_one_blas_thread(two_blas_threads):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 6))
    y = np.sin(X[:, 0]) + X[:, 1] ** 2
    params = dict(max_iter=1, progress=False, tol=None, n_features=256, bandwidth="auto")
    alone = {s: ok.DSGRegressor(**params, random_state=s).fit(X, y) for s in (1, 2)}
    seen, models = _two_fits_in_threads(X, y, params)
    assert sorted(seen) == [("end", 1)] * 2 + [("start", 1)] * 2, seen
    assert _blas._depth == 0 and _blas_threads() == 2      # the caller's setting is back
    for s in (1, 2):                                       # and the fits are the same bits
        np.testing.assert_array_equal(models[s].bandwidth_, alone[s].bandwidth_)
        np.testing.assert_array_equal(models[s].coef_, alone[s].coef_)


def test_a_fit_in_a_thread_gives_the_main_threads_bits(two_blas_threads):
    # bandwidth="auto"'s set-up (per-input widths: Cholesky solves on the sample) differs in
    # the last bits with the BLAS thread count; a fit in a thread must run it on one thread
    import threading

    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 8))
    y = (np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] > 0).astype(int)
    params = dict(max_iter=1, tol=None, n_features=512, block_size=128, random_state=0,
                  progress=False)
    main = ok.DSGClassifier(**params).fit(X, y)
    result = {}
    worker = threading.Thread(
        target=lambda: result.setdefault("model", ok.DSGClassifier(**params).fit(X, y)))
    worker.start()
    worker.join()
    model = result["model"]
    for name in ("bandwidth_", "t0_", "alpha_", "eta0_", "coef_"):
        np.testing.assert_array_equal(np.asarray(getattr(model, name)),
                                      np.asarray(getattr(main, name)), err_msg=name)
