"""The robust regression losses standardize the target robustly: the median and 1.4826
times the median absolute deviation (scipy's ``median_abs_deviation(scale="normal")``),
and at their defaults they stay robust to gross outliers in the target, as scikit-learn's
``HuberRegressor`` does (docs/defaults.md, "Standardization"; docs/benchmarks.md, "Robust
losses on targets with outliers")."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import median_abs_deviation

import ooc_kernels as ok
from ooc_kernels.families.dsg._robust_targets import robust_target_moments

ROBUST = ("huber", "epsilon_insensitive", "quantile")


def _gross(n: int, seed: int):
    """``y = sin(x_1) + x_2^2 / 2 + x_3 + 0.3 N(0, 1)``, 1% of the targets off by +-1,000;
    returns the inputs, the targets and the clean function."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    f = np.sin(X[:, 0]) + X[:, 1] ** 2 / 2 + X[:, 2]
    e = 0.3 * rng.normal(size=n)
    bad = rng.choice(n, n // 100, replace=False)
    e[bad] += rng.choice([-1.0, 1.0], len(bad)) * 1000.0
    return X, f + e, f


def test_robust_target_moments_are_the_median_and_the_normal_scaled_mad():
    rng = np.random.default_rng(0)
    y = np.concatenate([rng.normal(3.0, 2.0, size=999), [1e6]])
    shift, scale = robust_target_moments(y)
    assert shift == pytest.approx(np.median(y), rel=1e-14)
    assert scale == pytest.approx(median_abs_deviation(y, scale="normal"), rel=1e-12)
    # integer weights act as repeated rows (an odd total: one middle row, no averaging)
    w = rng.integers(1, 4, size=len(y)).astype(float)
    w[0] += 1 - w.sum() % 2
    repeated = np.repeat(y, w.astype(int))
    shift_w, scale_w = robust_target_moments(y, w)
    assert shift_w == pytest.approx(np.median(repeated), rel=1e-14)
    assert scale_w == pytest.approx(median_abs_deviation(repeated, scale="normal"),
                                    rel=1e-12)


def test_targets_mostly_equal_fall_back_to_the_standard_deviation():
    y = np.array([2.0] * 7 + [3.0, 5.0])
    assert robust_target_moments(y) == (2.0, pytest.approx(np.std(y), rel=1e-14))
    assert robust_target_moments(np.full(5, 4.0)) == (4.0, 1.0)


@pytest.mark.parametrize("loss, robust", [("squared", False), ("huber", True),
                                          ("epsilon_insensitive", True), ("quantile", True)])
def test_the_fit_standardizes_the_target_of_a_robust_loss_robustly(loss, robust):
    """On 500 rows (every row sampled) the fit's target shift and scale are NumPy's mean and
    standard deviation for the squared loss, the median and the normal-scaled MAD for the
    robust losses."""
    X, y, _ = _gross(500, 3)
    cfg = ok.DSGRegressor(loss=loss, max_iter=1, tol=None, bandwidth=1.0, random_state=0,
                          scheduler="sync", progress=False).fit(X, y)._config
    if robust:
        expected = (np.median(y), median_abs_deviation(y, scale="normal"))
    else:
        expected = (np.mean(y), np.std(y))
    assert (cfg.y_shift, cfg.y_scale) == (pytest.approx(expected[0], rel=1e-12),
                                          pytest.approx(expected[1], rel=1e-12))


@pytest.mark.parametrize("loss", ROBUST)
def test_robust_losses_at_their_defaults_are_as_robust_as_huber_regressor(loss):
    """1% of 2,000 training targets off by +-1,000: each robust loss at its defaults
    predicts the clean function on fresh rows with an R^2 at least that of scikit-learn's
    ``HuberRegressor`` (a linear fit on standardized inputs; 0.71 here).  Standardizing the
    target by its mean and standard deviation gave 0.19 (huber), -0.02
    (epsilon-insensitive) and -89 (quantile); robustly 0.93, 0.96 and 0.92."""
    from sklearn.linear_model import HuberRegressor
    from sklearn.metrics import r2_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y, _ = _gross(2000, 9)
    Xt, _, ft = _gross(2000, 10)
    peer = r2_score(ft, make_pipeline(StandardScaler(), HuberRegressor()).fit(X, y)
                    .predict(Xt))
    ours = r2_score(ft, ok.DSGRegressor(loss=loss, random_state=0, scheduler="sync",
                                        progress=False).fit(X, y).predict(Xt))
    assert peer > 0.6, peer                          # the linear fit ignores the outliers
    assert ours >= peer, (loss, ours, peer)
