"""DSPDC on 1 to 3 rows at the defaults: every fit is certified at ``tol`` within
``max_iter``, at the exact optimum of the standardized problem (ridge: its closed form;
logistic: Newton's method in NumPy) within the distance its gap allows; a degenerate
problem (no column with a spread, or two equal rows with both labels) ends certified at its
closed-form answer.  ``local_passes="auto"`` takes enough passes per epoch for
``MIN_EPOCH_ITERATIONS`` iterations where one task holds all the rows."""

from __future__ import annotations

import math

import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.families.dspdc import _setup_pass

FAST = dict(scheduler="sync", random_state=0, progress=False)
ALPHA = 1e-4                              # the estimators' default


def _rows(n, seed=0):
    """``n`` rows of 3 raw columns on scales 1 to 100, offset by 5."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 3)) * np.array([1.0, 10.0, 100.0]) + 5.0, rng


def _problem(X):
    """The standardized rows with the intercept's column (value 1), and the moments."""
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale == 0] = 1.0                   # a column without spread keeps the scale 1
    return np.hstack([(X - mean) / scale, np.ones((len(X), 1))]), mean, scale


def _model_x(est, mean, scale, y_mean=0.0):
    """The model on the standardized rows; ``y_mean``: the targets' mean, which the squared
    loss's targets are less and a regressor's intercept holds."""
    return np.append(est.coef_ * scale, est.intercept_ - y_mean + mean @ est.coef_)


def _ridge(A, y):
    """``P``, the exact minimizer of ``mean((A x - b)^2) / 2 + alpha / 2 ||x||^2`` with
    ``b = y - mean(y)`` (the targets the squared loss is fit to), and ``mean(y)``."""
    n, p = A.shape
    b = y - y.mean()
    x = np.linalg.solve(A.T @ A / n + ALPHA * np.eye(p), A.T @ b / n)

    def P(v):
        return 0.5 * np.mean((A @ v - b) ** 2) + ALPHA / 2 * v @ v
    return P, x, y.mean()


def _logistic(A, b):
    """``P`` and the minimizer of ``mean(log(1 + exp(-b A x))) + alpha / 2 ||x||^2`` by
    Newton's method with backtracking, to a gradient of norm 1e-13."""
    n, p = A.shape

    def P(v):
        return np.mean(np.logaddexp(0.0, -b * (A @ v))) + ALPHA / 2 * v @ v

    x = np.zeros(p)
    for _ in range(200):
        s = 1.0 / (1.0 + np.exp(b * (A @ x)))              # sigmoid(-b a x)
        g = -(A.T @ (b * s)) / n + ALPHA * x
        if np.linalg.norm(g) < 1e-13:
            break
        H = (A.T * (s * (1.0 - s))) @ A / n + ALPHA * np.eye(p)
        d, t = np.linalg.solve(H, g), 1.0
        while P(x - t * d) > P(x) - 0.25 * t * g @ d and t > 1e-12:
            t /= 2.0
        x = x - t * d
    return P, x


def _check_certified(est, P, x_star, mean, scale, y_mean=0.0):
    """Stopped on ``tol``, ``0 <= P(model) - P* <= gap`` (weak duality, to rounding), and
    the model within ``sqrt(2 gap / alpha)`` of the optimum (``P`` is alpha-strongly
    convex)."""
    assert est.stop_reason_.startswith("tol:"), est.stop_reason_
    gap = est.duality_gap_
    assert est.gap_history_[-1]["relative_gap"] <= est.tol
    x = _model_x(est, mean, scale, y_mean)
    slack = 1e-12 * max(1.0, abs(P(x_star)))
    assert -slack <= P(x) - P(x_star) <= gap + slack
    assert np.linalg.norm(x - x_star) <= math.sqrt(2.0 * max(gap, 0.0) / ALPHA) + 1e-9


@pytest.mark.parametrize("n", [1, 2, 3])
def test_ridge_on_one_to_three_rows_is_certified_at_the_closed_form(n):
    X, rng = _rows(n)
    y = X @ np.array([0.3, -0.02, 0.01]) + rng.normal(size=n)
    est = ok.DSPDCRegressor(**FAST).fit(X, y)
    assert est.local_passes_ == math.ceil(_setup_pass.MIN_EPOCH_ITERATIONS / n)
    A, mean, scale = _problem(X)
    P, x_star, y_mean = _ridge(A, y)
    _check_certified(est, P, x_star, mean, scale, y_mean)


@pytest.mark.parametrize("n", [2, 3])
def test_logistic_on_two_and_three_rows_is_certified_at_newtons_optimum(n):
    X, _ = _rows(n, seed=1)
    y = np.arange(n) % 2
    est = ok.DSPDCClassifier(**FAST).fit(X, y)
    A, mean, scale = _problem(X)
    _check_certified(est, *_logistic(A, np.where(y == 1, 1.0, -1.0)), mean, scale)


def test_three_rows_from_a_dask_array_are_certified_like_memory():
    """Out of core (one group holds the rows: ``"auto"`` takes 3 passes per read, or more
    where that is fewer than ``MIN_EPOCH_ITERATIONS`` iterations)."""
    X, rng = _rows(3, seed=2)
    y = X @ np.array([0.3, -0.02, 0.01]) + rng.normal(size=3)
    est = ok.DSPDCRegressor(**FAST).fit(da.from_array(X, chunks=(2, 3)),
                                        da.from_array(y, chunks=2))
    assert est.local_passes_ == math.ceil(_setup_pass.MIN_EPOCH_ITERATIONS / 3)
    A, mean, scale = _problem(X)
    P, x_star, y_mean = _ridge(A, y)
    _check_certified(est, P, x_star, mean, scale, y_mean)


def test_degenerate_rows_end_certified_at_the_closed_form_answer():
    """Two equal rows (no column has a spread, so only the intercept's coefficient is
    fitted): ridge's intercept is ``mean(y)`` (the squared loss is fit to the targets less
    their mean, whose optimum has a zero coefficient); with both labels on the same
    row the logistic optimum is 0 (``P* = log 2``)."""
    X = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    reg = ok.DSPDCRegressor(**FAST).fit(X, np.array([1.0, 4.0]))
    assert reg.stop_reason_.startswith("tol:")
    assert np.all(reg.coef_ == 0.0)
    assert reg.intercept_ == pytest.approx(2.5, abs=math.sqrt(
        2.0 * reg.duality_gap_ / ALPHA) + 1e-12)
    clf = ok.DSPDCClassifier(**FAST).fit(X, np.array([0, 1]))
    assert clf.stop_reason_.startswith("tol:")
    assert np.all(clf.coef_ == 0.0)
    assert abs(clf.intercept_) <= math.sqrt(2.0 * clf.duality_gap_ / ALPHA) + 1e-12
    assert clf.gap_history_[-1]["primal"] == pytest.approx(math.log(2.0), rel=1e-6)


def test_auto_passes_per_epoch_where_one_task_holds_the_rows():
    """``ceil(MIN_EPOCH_ITERATIONS m / n)`` passes per epoch where one task holds all the
    rows; the value of the other rules where that is larger or the rows are split among
    tasks; a number given is kept."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 3))
    y = X @ np.ones(3)
    one = ok.DSPDCRegressor(max_iter=1, tol=None, **FAST).fit(X, y)
    assert one.local_passes_ == math.ceil(_setup_pass.MIN_EPOCH_ITERATIONS / 40)
    blocks = ok.DSPDCRegressor(max_iter=1, tol=None, m=4, **FAST).fit(X, y)
    assert blocks.local_passes_ == math.ceil(_setup_pass.MIN_EPOCH_ITERATIONS * 4 / 40)
    given = ok.DSPDCRegressor(max_iter=1, tol=None, local_passes=1.0, **FAST).fit(X, y)
    assert given.local_passes_ == 1.0
    split = ok.DSPDCRegressor(max_iter=1, tol=None, chunk_size=10, chunks_per_round=2,
                              **FAST).fit(da.from_array(X, chunks=(10, 3)),
                                          da.from_array(y, chunks=10))
    assert split.local_passes_ == _setup_pass.AUTO_LOCAL_PASSES       # groups drawn anew
    X_big = rng.normal(size=(_setup_pass.MIN_EPOCH_ITERATIONS, 3))
    big = ok.DSPDCRegressor(max_iter=1, tol=None, **FAST).fit(X_big, X_big @ np.ones(3))
    assert big.local_passes_ == 1.0
