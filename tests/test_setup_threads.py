"""The setup's bandwidth trials run side by side on the cores, and choose what the trials
run one after the other choose: the same scores, the same bandwidth, the same model."""

from __future__ import annotations

import functools
import threading

import numpy as np
import pytest
from scipy.spatial.distance import pdist

import ooc_kernels as ok
from ooc_kernels.features import bandwidth as median_module
from ooc_kernels.features.bandwidth import median_heuristic
from ooc_kernels.families.dsg import _bandwidth
from ooc_kernels.families.dsg import estimators as dsg

# 1,600 rows: more than GCV_MAX_ROWS, so bandwidth="auto" runs the trial fits (forced below)
PARAMS = dict(n_features=256, block_size=64, max_iter=1, tol=None, random_state=0,
              scheduler="sync", progress=False)


def _data():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1600, 4))
    y = (np.sin(2 * X[:, 0]) + X[:, 1] ** 2 > 0.7).astype(int)
    return X, y


def _fit(monkeypatch, threads):
    # the trials, as on more than 50,000 rows (below, the setup is chosen by leave-one-out)
    monkeypatch.setattr(dsg, "use_loo_setup", lambda *args: False)
    # short trials (40 steps each) keep the test fast; the pool is the same
    monkeypatch.setattr(dsg, "select_bandwidth",
                        functools.partial(_bandwidth.select_bandwidth, threads=threads,
                                          steps=40))
    return ok.DSGClassifier(**PARAMS).fit(*_data())


@pytest.fixture(scope="module")
def sequential():
    """The trials one after the other (``threads=1``: no pool, one thread each)."""
    with pytest.MonkeyPatch.context() as mp:
        return _fit(mp, 1)


@pytest.mark.parametrize("threads", [2, 3, 10])
def test_trials_side_by_side_choose_what_the_sequential_trials_choose(sequential,
                                                                     monkeypatch, threads):
    clf = _fit(monkeypatch, threads)
    assert set(sequential.bandwidth_scores_) == set(_bandwidth.CANDIDATES)
    assert clf.bandwidth_scores_ == sequential.bandwidth_scores_  # every score, exactly
    np.testing.assert_array_equal(clf.bandwidth_, sequential.bandwidth_)  # one or per input
    for name, value in sequential._fitted_arrays().items():
        assert np.array_equal(np.asarray(clf._fitted_arrays()[name]), np.asarray(value)), name


@pytest.mark.parametrize("threads, at_once, each", [(3, 3, 1), (10, 5, 2)])
def test_the_trials_share_the_threads(monkeypatch, threads, at_once, each):
    # a barrier of `at_once` parties only opens if that many trials run at the same time
    barrier = threading.Barrier(at_once, timeout=20)
    seen = []
    real = _bandwidth._trial

    def trial(config, *args):
        seen.append(config.n_jobs)
        if len(seen) <= at_once:
            barrier.wait()
        return real(config, *args)

    monkeypatch.setattr(_bandwidth, "_trial", trial)
    _fit(monkeypatch, threads)
    n = len(_bandwidth.CANDIDATES)
    assert seen[:n] == [each] * n
    # then the scale and alpha trials at the chosen width, on the setup's own threads
    extra = seen[n:]
    assert len(extra) == len(_bandwidth.ALPHA_FACTORS) - 1  # one spread: no common scale
    assert extra == [_bandwidth.trial_threads(None, len(extra))[1]] * len(extra)


def test_trial_threads_splits_the_threads_over_the_trials():
    assert [_bandwidth.trial_threads(t, 5) for t in (1, 2, 5, 7, 16)] == \
        [(1, 1), (2, 1), (5, 1), (5, 1), (5, 3)]


@pytest.mark.parametrize("n", [40, 41])  # an even and an odd number of pairs
def test_unit_weights_take_the_plain_median_of_the_distances(monkeypatch, n):
    X = np.random.default_rng(n).normal(size=(n, 3))

    def no_sort(values, weights):
        raise AssertionError("unit weights sorted the distances")

    monkeypatch.setattr(median_module, "weighted_median", no_sort)
    assert median_heuristic(X, 2.0, sample_weight=np.ones(n)) == 2.0 * np.median(pdist(X))
    # a row of weight 0 is left out: the median of the other rows' distances
    w = np.ones(n)
    w[3] = 0.0
    assert median_heuristic(X, sample_weight=w) == np.median(pdist(np.delete(X, 3, axis=0)))


def test_growth_step_eigenvalue_is_the_same_on_every_thread_count(monkeypatch):
    """The draws of the first step size's operator share the threads; each is computed
    alone and the largest taken, so every thread count gives the one-thread value bit for
    bit, and it is the top eigenvalue of each draw's features (singular values, NumPy)."""
    from ooc_kernels.features.blocks import rff_map
    from ooc_kernels.families.dsg import _schedule

    rng = np.random.default_rng(3)
    Z, w = rng.normal(size=(700, 5)), rng.uniform(0.5, 1.5, 700)
    kw = dict(bandwidth=1.3, feature_seed=17, block_size=32, batch_size=64, seed=5)
    import concurrent.futures

    started = []
    pool = concurrent.futures.ThreadPoolExecutor

    def spy(workers, **kwargs):   # the pools of ooc_kernels._threads.map_in_order
        started.append(workers)
        return pool(workers, **kwargs)

    monkeypatch.setattr(concurrent.futures, "ThreadPoolExecutor", spy)
    values = [_schedule.growth_step_eigenvalue(Z, w, threads=t, **kw) for t in (1, 2, 3)]
    assert started == [2, 3]
    assert values[1] == values[0] and values[2] == values[0]
    picks = np.random.default_rng(5)
    want = 0.0
    for j in range(_schedule.STEP_DRAWS):
        rows = np.sort(picks.choice(700, size=64, replace=False))
        F = np.sqrt(w[rows])[:, None] * rff_map(Z[rows], 17, [j], 1.3, 32, np.float64)
        want = max(want, np.linalg.svd(F, compute_uv=False)[0] ** 2 / 64)
    assert values[0] == pytest.approx(want, rel=1e-10)
