"""DSPDC's adaptive steps: the steps of a more strongly convex problem, shrunk toward the
theorems' when the duality gap stops falling; every result still certified by the gap."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.families.dspdc import estimators as dspdc_estimators
from ooc_kernels.families.dspdc._local import local_parameters
from ooc_kernels.families.dspdc.estimators import gap_stalled
from ooc_kernels.families.dspdc.solver import DSPDCConfig

FAST = dict(scheduler="sync", random_state=0, progress=False)


def _theorem_steps(n, p, m, q, Lambda, lam, gamma):
    """(15), (16) and (18) of the paper written out here (the square root outside)."""
    rn, rp = n / m, p / q
    s = (n * p / (m * q)) * math.sqrt(Lambda / (n * lam * gamma))
    S = math.sqrt((rn - rp) ** 2 + 4 * s ** 2)
    K = max(rn, rp) + s
    return rp * (1 - 1 / (2 * K)), (p / (q * lam)) / ((rn - rp) + S), \
        (n ** 2 / (m * gamma)) / ((rp - rn) + S)


@pytest.mark.parametrize("boost, lam, applied", [
    (1.0, 4e-3, 1.0), (30.0, 4e-3, 30.0),
    (30.0, 0.04, 1.0),     # Lambda = 9 <= n_k lam gamma = 10: the theorems' steps
])
def test_the_steps_are_the_theorems_for_boost_times_the_strong_convexity(boost, lam, applied):
    cfg = DSPDCConfig(loss_id=0, n_samples=500, n_features=7, lam1=0.0, lam2=1e-3,
                      Lambda=9.0, m=2, q=3, step_boost=boost)
    m, theta, tau, sigma = local_parameters(cfg, 250, lam)
    assert m == 2
    np.testing.assert_allclose((theta, tau, sigma),
                               _theorem_steps(250, 7, 2, 3, 9.0, applied * lam, 1.0),
                               rtol=1e-12)


def _history(gaps, boost=30.0):
    return [{"gap": g, "relative_gap": g / 2, "step_boost": boost} for g in gaps]


@pytest.mark.parametrize("gaps, stalled", [
    ([1.0], False),
    ([1.0, 0.5, 0.25, 0.1], False),                 # falling
    ([1.0, 0.5, 0.6, 0.4], False),                  # one blip, then a new best
    ([1.0, 0.5, 0.6, 0.55, 0.5], True),             # three evaluations without a new best
    ([1.0, 0.9, 0.8, 0.7], False),                  # falling slowly: still progress
    ([200.0, 190.0, 180.0], False),                 # relative gap >= 1, but not for long
    ([200.0, 190.0, 180.0, 170.0], True),           # no better than the zero model's, slow
    ([200.0, 90.0, 40.0, 20.0], False),             # relative gap >= 1, falling fast
    ([1.0, 0.5, 6.0], True),                        # ten times the best: diverging
])
def test_gap_stalled(gaps, stalled):
    assert gap_stalled(_history(gaps)) is stalled


def test_only_the_evaluations_of_the_current_steps_count():
    old = _history([1.0, 0.5, 0.6, 0.55, 0.5], boost=30.0)
    assert gap_stalled(old) is True
    assert gap_stalled(old + _history([0.5, 0.6], boost=3.0)) is False
    assert gap_stalled(old + _history([0.5, 0.4, 0.3, 0.2], boost=3.0)) is False
    assert gap_stalled(old + _history([0.5, 0.6, 0.7, 0.8], boost=3.0)) is True


def _ridge(n=2000, p=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * np.logspace(-2, 2, p) + 50.0
    return X, X @ (rng.normal(size=p) / np.logspace(-2, 2, p)) + rng.normal(size=n)


def _exact(X, y, alpha):
    """The standardized ridge with its regularized intercept column, in closed form."""
    mean, scale = X.mean(axis=0), X.std(axis=0)
    A = np.column_stack([(X - mean) / scale, np.ones(len(X))])
    x = np.linalg.solve(A.T @ A / len(X) + alpha * np.eye(A.shape[1]), A.T @ y / len(X))
    return x, mean, scale


def _passes(est, tol):
    return next((e["passes"] for e in est.gap_history_ if e["relative_gap"] <= tol), None)


@pytest.mark.slow
def test_adaptive_steps_need_fewer_passes_and_solve_the_same_problem():
    X, y = _ridge()
    alpha = 1e-3
    kw = dict(alpha=alpha, tol=1e-6, max_iter=30, **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # the theorems' steps stop at max_iter
        theorem = ok.DSPDCRegressor(steps="theorem", **kw).fit(X, y)
    adaptive = ok.DSPDCRegressor(**kw).fit(X, y)
    assert adaptive.stop_reason_.startswith("tol"), adaptive.stop_reason_
    assert _passes(adaptive, 1e-4) <= 20
    assert _passes(theorem, 1e-4) is None or _passes(theorem, 1e-4) > 2 * _passes(adaptive,
                                                                                    1e-4)
    x, mean, scale = _exact(X, y, alpha)
    found = np.append(adaptive.coef_ * scale, adaptive.intercept_ + mean @ adaptive.coef_)
    assert np.linalg.norm(found - x) <= np.sqrt(2 * adaptive.duality_gap_ / alpha) + 1e-9


def test_steps_too_large_shrink_and_the_fit_still_converges(monkeypatch):
    """A first boost far too large: the gap stops falling, the boost shrinks by 10 until it
    falls again, and the fit ends certified at the exact solution."""
    monkeypatch.setitem(dspdc_estimators.STEP_BOOST, "squared", 1e6)
    X, y = _ridge(n=400, p=5)
    alpha = 1e-2
    est = ok.DSPDCRegressor(alpha=alpha, tol=1e-8, max_iter=100, **FAST).fit(X, y)
    boosts = [e["step_boost"] for e in est.gap_history_]
    assert boosts[0] == 1e6 and boosts[-1] < 1e6
    assert all(b / a in (1.0, 0.1) or a == 1.0 for a, b in zip(boosts, boosts[1:])
               if b != a) and boosts == sorted(boosts, reverse=True)
    assert est.stop_reason_.startswith("tol"), est.stop_reason_
    x, mean, scale = _exact(X, y, alpha)
    found = np.append(est.coef_ * scale, est.intercept_ + mean @ est.coef_)
    assert np.linalg.norm(found - x) <= np.sqrt(2 * est.duality_gap_ / alpha) + 1e-9
    # the published steps are those the last rounds ran with
    m, theta, tau, sigma = local_parameters(est._config, 400, alpha)
    assert (est.theta_[-1], est.tau_[-1], est.sigma_[-1]) == (theta, tau, sigma)


def _small_problem(seed, n=4000, p=20):
    """Raw columns of scales 1e-2 .. 1e2 offset by 50, a linear target plus noise."""
    return _ridge(n=n, p=p, seed=seed)


def _exact_elastic_net(X, y, alpha, l1_ratio):
    """The standardized elastic net with its regularized intercept column, by scikit-learn's
    coordinate descent to a tight tolerance (the same objective: mean squared loss / 2)."""
    from sklearn.linear_model import ElasticNet

    mean, scale = X.mean(axis=0), X.std(axis=0)
    A = np.column_stack([(X - mean) / scale, np.ones(len(X))])
    ref = ElasticNet(alpha=alpha, l1_ratio=l1_ratio, fit_intercept=False, tol=1e-14,
                     max_iter=100_000).fit(A, y)
    return ref.coef_, mean, scale


#: Passes to a relative gap of 1e-4 that the squared loss's first boost of 100 stays within
#: on the 4,000 x 20 problems of :func:`_small_problem` (seeds 0-2, ``alpha = 1e-4``), and
#: that a first boost of 30 exceeds (docs/dspdc.md, Adaptive steps).
PASSES_TO_1E4 = {0.0: 24, 0.5: 30}


@pytest.mark.parametrize("l1_ratio", [0.0, 0.5])
def test_squared_loss_first_boost_reaches_1e4_within_the_documented_passes(monkeypatch,
                                                                           l1_ratio):
    alpha, bound = 1e-4, PASSES_TO_1E4[l1_ratio]
    kw = dict(alpha=alpha, l1_ratio=l1_ratio, tol=1e-6, max_iter=40, **FAST)
    for seed in range(3):
        X, y = _small_problem(seed)
        est = ok.DSPDCRegressor(**kw).fit(X, y)
        assert est.gap_history_[0]["step_boost"] == 100.0
        assert est.stop_reason_.startswith("tol"), est.stop_reason_
        assert _passes(est, 1e-4) <= bound, (seed, _passes(est, 1e-4))
        # the certified iterate is the exact solution, within what its gap allows
        if l1_ratio == 0.0:
            x, mean, scale = _exact(X, y, alpha)
        else:
            x, mean, scale = _exact_elastic_net(X, y, alpha, l1_ratio)
        found = np.append(est.coef_ * scale, est.intercept_ + mean @ est.coef_)
        lam2 = alpha * (1 - l1_ratio)
        assert np.linalg.norm(found - x) <= np.sqrt(2 * est.duality_gap_ / lam2) + 1e-7
        # a first boost of 30 (the logistic loss's) does not reach 1e-4 within the bound
        with monkeypatch.context() as patch:
            patch.setitem(dspdc_estimators.STEP_BOOST, "squared", 30.0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")          # may stop at max_iter
                old = ok.DSPDCRegressor(**kw).fit(X, y)
        assert _passes(old, 1e-4) is None or _passes(old, 1e-4) > bound, seed
