"""The set-up of ``bandwidth="auto"`` on small data: the quick ARD search's float32 cosines
and float32 products against the float64 criterion, its criterion object evaluated again
and again against fresh ones, its isotropic grid (on 1 and 2 threads) against the
criterion at every pair, the search and the leave-one-out score on 2 threads against 1,
the eigenvalues computed on the scan's thread against those computed after it,
the leave-one-out scan run ahead on a second thread against the scan run when asked, and
the per-input decision on two threads against the decision on one."""

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.families.dsg import _ard, _bandwidth, _setup_loo
from ooc_kernels.families.dsg._setup_loo import SetupLOOAhead, select_setup_loo
from ooc_kernels.families.dsg.solver import DSGConfig
from ooc_kernels.features import ard
from ooc_kernels.features.ard import grid_errors, validation_error


def _criterion_inputs(seed=3, n=200, d=3, D=64):
    rng = np.random.default_rng(seed)
    X, T, w = rng.normal(size=(n, d)), rng.normal(size=(n, 2)), rng.uniform(0.5, 2, n)
    k = (2 * n) // 3
    parts = (X[:k], T[:k], w[:k], X[k:], T[k:], w[k:])
    return rng, parts, rng.normal(size=(d, D)), rng.uniform(0, 2 * np.pi, D)


@pytest.mark.parametrize("narrow", [0.0, 6.0])
def test_the_float32_cosines_give_the_float64_criterion_and_gradient(narrow):
    """Widths ``exp(-narrow)``: phases up to about 10 (``narrow=0``) and 3,500 (``6``), where
    casting unreduced phases to float32 would lose 2e-5 of the gradient."""
    rng, parts, omega, phase = _criterion_inputs()
    log_s = np.full(3, -narrow) + 0.1 * rng.normal(size=3)
    e64, g64, l64 = validation_error(log_s, -3.0, parts, omega, phase)
    e32, g32, l32 = validation_error(log_s, -3.0, parts, omega, phase, fast_trig=True)
    assert e32 == pytest.approx(e64, rel=1e-8)
    np.testing.assert_allclose(g32, g64, rtol=0, atol=1e-6 * np.abs(g64).max())
    assert l32 == pytest.approx(l64, rel=1e-6)


@pytest.mark.parametrize("narrow", [0.0, 6.0])
def test_the_float32_products_give_the_float64_criterion_and_gradient(narrow):
    """The search's setting: the features' products in float32 too (phases, factorization
    and solves in float64); 256 features of 1,000 rows, as the quick search has them."""
    rng, parts, omega, phase = _criterion_inputs(seed=4, n=1000, d=6, D=256)
    log_s = np.full(6, -narrow) + 0.1 * rng.normal(size=6)
    e64, g64, l64 = validation_error(log_s, -5.0, parts, omega, phase)
    e32, g32, l32 = validation_error(log_s, -5.0, parts, omega, phase, float32=True)
    assert e32 == pytest.approx(e64, rel=1e-7)
    np.testing.assert_allclose(g32, g64, rtol=0, atol=1e-5 * np.abs(g64).max())
    assert l32 == pytest.approx(l64, rel=1e-6)


def test_a_nearly_singular_float32_update_is_factored_in_float64():
    """Very wide widths make the features nearly collinear: with the smallest ridge the
    search allows (1e-8), the float32 ``Z^T D Z`` is indefinite; the criterion then
    factors the same features' ``Z^T D Z`` formed in float64, as the float64 one does."""
    rng = np.random.default_rng(0)
    X, T = rng.normal(size=(600, 5)), np.sign(rng.normal(size=(600, 1)))
    parts = (X[:400], T[:400], np.ones(400), X[400:], T[400:], np.ones(200))
    omega, phase = rng.normal(size=(5, 256)), rng.uniform(0, 2 * np.pi, 256)
    log_s, log_lam = np.full(5, np.log(2000.0)), np.log(1e-8)
    criterion = ard._Float32Criterion(parts, omega, phase)
    criterion.prepare(log_s)
    upper = np.triu(criterion.gram)
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        np.linalg.cholesky(upper + np.triu(upper, 1).T + 1e-8 * np.eye(256))
    e64 = validation_error(log_s, log_lam, parts, omega, phase, gradient=False)
    assert criterion(log_s, log_lam, gradient=False) == pytest.approx(e64, rel=1e-5)


def test_the_float32_criterion_keeps_no_state_between_evaluations():
    """The search evaluates one criterion object at every step, writing its arrays in
    place: each evaluation is the one a fresh object gives, whatever came before."""
    rng, parts, omega, phase = _criterion_inputs(seed=6, n=150, d=4, D=32)
    points = [(0.3 * rng.normal(size=4), lam) for lam in (-2.0, -4.0, -3.0)]
    fresh = [validation_error(s, lam, parts, omega, phase, float32=True) for s, lam in points]
    criterion = ard._Float32Criterion(parts, omega, phase)
    for _ in range(2):
        for (log_s, lam), (e, g, gl) in zip(points, fresh):
            assert criterion(log_s, lam, gradient=False) == e
            e2, g2, gl2 = criterion(log_s, lam)
            assert (e2, gl2) == (e, gl)
            np.testing.assert_array_equal(g2, g)


@pytest.mark.parametrize("precision,threads", [("float64", 1), ("fast_trig", 1),
                                               ("fast_trig", 2), ("float32", 1),
                                               ("float32", 2)])
def test_the_grid_is_the_criterion_at_every_pair(precision, threads):
    _, parts, omega, phase = _criterion_inputs(seed=5)
    kw = {"fast_trig": precision == "fast_trig", "float32": precision == "float32"}
    log_widths, log_lams = [-0.5, 0.0, 1.0], np.log([1e-2, 1e-3, 1e-4])
    E = grid_errors(log_widths, log_lams, parts, omega, phase, threads=threads, **kw)
    for i, log_width in enumerate(log_widths):
        for j, log_lam in enumerate(log_lams):
            assert E[i, j] == pytest.approx(validation_error(
                np.full(3, log_width), log_lam, parts, omega, phase, gradient=False,
                **kw), rel=1e-12)


def _config(d, x_scale):
    return DSGConfig(loss_id=1, target="binary", n_outputs=1, n_features_in=d, block_size=64,
                     n_blocks=16, bandwidth=1.0, feature_seed=3, alpha=0.0, batch_size=32,
                     learning_rate="constant", eta0=1.0, t0=0.0, dtype="float64",
                     classes=(0, 1), x_shift=(0.0,) * d, x_scale=x_scale)


def _same(a, b):
    """Two answers of select_setup_loo: the same configuration, width, factor, scores."""
    assert a[0] == b[0] and a[1:4] == b[1:4] and a[4] == b[4]


def test_the_scan_run_ahead_answers_what_the_scan_answers(monkeypatch):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(120, 2)) * np.array([1.0, 4.0])
    y = (np.sin(2.0 * X[:, 0]) + 0.1 * X[:, 1] > 0).astype(int)
    w = rng.uniform(0.5, 2.0, size=120)
    base = _config(2, (1.0, 4.0))
    common, other = _bandwidth.common_scale(base), _config(2, (2.0, 1.0))
    kw = dict(classes=np.array([0, 1]), alpha=None, alpha_factors=(1.0, 0.1), seed=5)
    direct = select_setup_loo(base, common, X, y, w, **kw)
    runs = []
    real = _setup_loo.select_setup_loo

    def counted(*args, **kwargs):
        runs.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(_setup_loo, "select_setup_loo", counted)
    for threads in (1, 2):
        runs.clear()
        _same(SetupLOOAhead(threads, base, common, X, y, w, **kw).result(base, common),
              direct)
        assert len(runs) == 1  # run once: ahead (2 threads) or when asked (1)
    runs.clear()  # other configurations asked: the early answer is not the one returned
    got = SetupLOOAhead(2, base, common, X, y, w, **kw).result(other, None)
    _same(got, real(other, None, X, y, w, **kw))
    assert runs == [base, other]


def test_the_decision_on_two_threads_is_the_decision_on_one():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    t = np.where(np.sin(2 * X[:, :1]) > 0, 1.0, -1.0)
    one = _ard.auto_ard(X, t, np.ones(400), seed=0, classification=True, threads=1)
    two = _ard.auto_ard(X, t, np.ones(400), seed=0, classification=True, threads=2)
    np.testing.assert_array_equal(one[0], two[0])
    assert one[1] == two[1]
    # 400 rows: the comparison's rows are all of them, in order
    assert two[1]["one width"] == ard.loo_score(X, t, np.ones(400), classification=True)


def test_a_default_fit_chooses_the_same_set_up_on_one_and_two_threads():
    """Inputs 2 and 3 carry nothing: per-input widths are taken, so the scan run ahead
    (one width) is not the one used, and the fit on two threads must not use it."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1200, 4))
    y = (np.sin(2 * X[:, 0]) * X[:, 1] > 0).astype(int)
    kw = dict(random_state=0, tol=None, max_iter=1, n_features=256, block_size=64,
              progress=False, scheduler="sync")
    fits = [ok.DSGClassifier(n_jobs=n, **kw).fit(X, y) for n in (1, 2)]
    assert np.shape(fits[0].bandwidth_) == (4,) and fits[0].setup_scores_ is not None
    for name in ("bandwidth_", "bandwidth_scores_", "setup_scores_", "alpha_"):
        a, b = (getattr(f, name, None) for f in fits)
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, name


def test_the_eigenvalues_computed_on_the_scans_thread_are_those_of_the_main_thread(
        monkeypatch):
    """One width and one common scale kept: the fit on two threads takes the step size's and the curvature's
    eigenvalues its scan's thread computed once the scan's answer was known, and its
    configuration (step size, curvature, every choice) is the one of the fit on one
    thread, which computes them after the scan."""
    import threading
    from dataclasses import replace

    from ooc_kernels.families.dsg import estimators

    rng = np.random.default_rng(4)
    rng.normal(size=(2400, 3))
    # inputs 2 and 3 carry nothing on a small spread: one common scale wins, one width
    X = rng.normal(size=(1200, 4)) * np.array([2.0, 2.0, 0.02, 0.02])
    y = (np.sin(2 * X[:, 0]) * np.sin(2 * X[:, 1]) > 0).astype(int)
    kw = dict(random_state=0, tol=None, max_iter=1, n_features=256, block_size=64,
              progress=False, scheduler="sync")
    where = []
    for name in ("growth_step_eigenvalue", "curvature_estimate"):
        real = getattr(estimators, name)

        def recorded(*args, _real=real, **kwargs):
            where.append(threading.current_thread() is threading.main_thread())
            return _real(*args, **kwargs)

        monkeypatch.setattr(estimators, name, recorded)
    fits = []
    for n_jobs in (1, 2):
        where.clear()
        fits.append(ok.DSGClassifier(n_jobs=n_jobs, **kw).fit(X, y))
        assert where == [n_jobs == 1] * 2  # once each: after the scan, or on its thread
    assert np.ndim(fits[0].bandwidth_) == 0 and fits[0].setup_scores_ is not None
    assert max(fits[0].setup_scores_, key=fits[0].setup_scores_.get)[0] == "common"
    assert fits[0]._config == replace(fits[1]._config, n_jobs=1)


def test_the_quick_search_and_its_scores_on_two_threads_are_those_on_one():
    """The isotropic starts shared by 2 threads give the widths of 1 thread; the
    leave-one-out score on 2 threads is the best of each width's score alone."""
    from ooc_kernels._threads import kernel_threads

    rng = np.random.default_rng(6)
    X = rng.normal(size=(300, 3))
    t = np.where(np.sin(2 * X[:, :1]) + 0.3 * X[:, 1:2] > 0, 1.0, -1.0)
    w = rng.uniform(0.5, 2.0, size=300)
    kw = dict(start=2.0, seed=1, steps=4)
    one = ard.ard_scales(X, t, w, threads=1, **kw)
    with kernel_threads(2):  # threads=None: the block's count
        two = ard.ard_scales(X, t, w, **kw)
    np.testing.assert_array_equal(one, two)
    alone = [ard.loo_score(X, t, w, classification=True, multiples=(m,), threads=1)
             for m in ard.LOO_MULTIPLES]
    assert len(set(alone)) > 1  # the widths score differently: the best is a choice
    assert ard.loo_score(X, t, w, classification=True, threads=2) == max(alone)


def test_a_discarded_early_scan_is_not_waited_for_and_its_follow_up_never_runs(monkeypatch):
    """Other configurations asked: the scan for them starts at once (the early run, held
    back here until then, is still running), ``then`` of the early answer is skipped, and
    the early run has ended when the answer is returned."""
    import threading

    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 2))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    base, other = _config(2, (1.0, 1.0)), _config(2, (2.0, 1.0))
    kw = dict(classes=np.array([0, 1]), alpha=None, seed=5)
    release, answered, order, followed = threading.Event(), threading.Event(), [], []
    real = _setup_loo.select_setup_loo

    def held(config, *args, **kwargs):
        if config != base:
            order.append("asked")
            release.set()
            try:
                return real(config, *args, **kwargs)
            finally:
                answered.set()
        release.wait(timeout=10)
        order.append("early")
        answered.wait(timeout=10)  # the early run ends after the asked scan
        return real(config, *args, **kwargs)

    monkeypatch.setattr(_setup_loo, "select_setup_loo", held)
    ahead = SetupLOOAhead(2, base, None, X, y, np.ones(120), then=followed.append, **kw)
    got = ahead.result(other, None)
    assert order == ["asked", "early"] and ahead._future.done()
    _same(got, real(other, None, X, y, np.ones(120), **kw))
    assert followed == [] and ahead.then_value is None
