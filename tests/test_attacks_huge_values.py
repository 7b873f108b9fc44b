"""Attack on the DSG estimators' standardization with finite values whose squares overflow
(beyond about 1e154, with ``dtype="float64"``): the column's standard deviation must stay
finite, so that the column is standardized like any other instead of being divided by
infinity (every value 0: an input carrying the label silently dropped)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.families.dsg._bandwidth import common_scale
from ooc_kernels.families.dsg._common import weighted_moments
from ooc_kernels.families.dsg.solver import DSGConfig


def _exact_moments(column, weights):
    """Mean and variance in exact rational arithmetic."""
    v = [Fraction(float(x)) for x in column]
    w = [Fraction(float(x)) for x in weights]
    mean = sum(a * b for a, b in zip(w, v)) / sum(w)
    var = sum(b * (a - mean) ** 2 for a, b in zip(v, w)) / sum(w)
    return mean, var


@pytest.mark.parametrize("weighted", [False, True])
def test_weighted_moments_of_huge_columns_are_finite_and_exact(weighted):
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=7) * 1e300, rng.normal(size=7) * 1e155,
                         rng.normal(size=7)])
    w = rng.random(7) + 0.5 if weighted else np.ones(7)
    mean, sd = weighted_moments(X, w if weighted else None)
    for j in range(3):
        m, var = _exact_moments(X[:, j], w)
        assert float((Fraction(float(mean[j])) - m) / Fraction(float(sd[j]))) == \
            pytest.approx(0.0, abs=1e-12)
        assert float(Fraction(float(sd[j])) ** 2 / var) == pytest.approx(1.0, rel=1e-12)
    # an ordinary column: the plain formula, bit for bit
    plain = X[:, 2]
    w_ = w if weighted else None
    plain_mean = np.average(plain, weights=w_)
    assert mean[2] == plain_mean
    assert sd[2] == np.sqrt(np.average((plain - plain_mean) ** 2, weights=w_))


def test_common_scale_of_huge_scales_is_their_root_mean_square():
    c = DSGConfig(loss_id=0, target="regression", n_outputs=1, n_features_in=2,
                  block_size=4, n_blocks=1, bandwidth=1.0, feature_seed=0, alpha=0.1,
                  batch_size=4, learning_rate="constant", eta0=0.1, t0=0.0,
                  dtype="float64", x_shift=(0.0, 0.0), x_scale=(3e200, 4e200))
    assert common_scale(c).x_scale == pytest.approx((12.5 ** 0.5 * 1e200,) * 2, rel=1e-15)


def test_an_input_of_huge_values_that_carries_the_label_is_used():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 2] > 0).astype(int)            # only the last input carries the label
    huge = X.copy()
    huge[:, 2] *= 1e200                      # finite in float64; its square is not
    kw = dict(dtype="float64", max_iter=2, tol=None, n_features=256, block_size=128, progress=False,
              random_state=0)
    with np.errstate(over="raise", invalid="raise"):   # no overflow in the set-up
        model = ok.DSGClassifier(**kw).fit(huge, y)
    assert np.isfinite(model._config.x_scale).all() and model._config.x_scale[2] > 1e199
    assert model.score(huge, y) > 0.9        # dropped, the label is at chance (0.5)


def test_r2_score_of_huge_targets_is_that_of_the_targets_scaled_down():
    from types import SimpleNamespace

    from ooc_kernels.families.dsg._bandwidth import LOSS_SQUARED, score

    rng = np.random.default_rng(1)
    y, F, w = rng.normal(size=50), rng.normal(size=(50, 1)), rng.random(50)
    config = SimpleNamespace(loss_id=LOSS_SQUARED, class_weight=None)
    plain = 1.0 - np.sum(w * (y - F[:, 0]) ** 2) / np.sum(w * (y - np.average(y, weights=w)) ** 2)
    assert score(config, F, y, w, None) == pytest.approx(plain, rel=1e-12)
    assert score(config, F * 1e200, y * 1e200, w, None) == pytest.approx(plain, rel=1e-12)


def test_a_regression_target_of_huge_values_is_fitted_as_the_same_target_scaled_down():
    """Above 1,000 rows the width is chosen by leave-one-out scores, R^2 on the targets'
    own scale: finite for targets whose squares overflow, and the same choice."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1100, 2))
    y = np.sin(2 * X[:, 0])
    kw = dict(dtype="float64", max_iter=1, tol=None, n_features=256, block_size=128, progress=False,
              random_state=0)
    small = ok.DSGRegressor(**kw).fit(X, y)
    huge = ok.DSGRegressor(**kw).fit(X, y * 1e200)
    assert huge.bandwidth_ == small.bandwidth_
    assert huge.bandwidth_scores_ == pytest.approx(small.bandwidth_scores_, rel=1e-9)
    np.testing.assert_allclose(huge.predict(X) / 1e200, small.predict(X), rtol=1e-6,
                               atol=1e-9)


@pytest.mark.parametrize("weighted", [False, True])
def test_weighted_moments_of_tiny_columns_are_exact_not_zero(weighted):
    """Values below about 1e-154 have squares that underflow float64 (to subnormals, then
    0): the standard deviation of such a column is computed on the values over the largest,
    not returned as 0 (a column, or a regression target, then taken for a constant)."""
    rng = np.random.default_rng(2)
    X = np.column_stack([rng.normal(size=7) * 1e-300, rng.normal(size=7) * 1e-160,
                         1e-200 + rng.normal(size=7) * 1e-205, rng.normal(size=7)])
    w = rng.random(7) + 0.5 if weighted else np.ones(7)
    mean, sd = weighted_moments(X, w if weighted else None)
    for j in range(3):
        m, var = _exact_moments(X[:, j], w)
        assert float((Fraction(float(mean[j])) - m) / Fraction(float(sd[j]))) == \
            pytest.approx(0.0, abs=1e-9)
        assert float(Fraction(float(sd[j])) ** 2 / var) == pytest.approx(1.0, rel=1e-9)
    plain = X[:, 3]                          # an ordinary column: the plain formula
    w_ = w if weighted else None
    assert mean[3] == np.average(plain, weights=w_)
    assert sd[3] == np.sqrt(np.average((plain - mean[3]) ** 2, weights=w_))


def test_common_scale_of_tiny_scales_is_their_root_mean_square():
    c = DSGConfig(loss_id=0, target="regression", n_outputs=1, n_features_in=2,
                  block_size=4, n_blocks=1, bandwidth=1.0, feature_seed=0, alpha=0.1,
                  batch_size=4, learning_rate="constant", eta0=0.1, t0=0.0,
                  dtype="float64", x_shift=(0.0, 0.0), x_scale=(3e-200, 4e-200))
    assert common_scale(c).x_scale == pytest.approx((12.5 ** 0.5 * 1e-200,) * 2, rel=1e-15,
                                                     abs=0)


@pytest.mark.parametrize("unit", [1e-200, 1e-300])
def test_a_regression_target_of_tiny_values_is_fitted_as_the_same_target_scaled_up(unit):
    """A target of values whose squares underflow is standardized like any other (not
    taken for a constant, whose fit left the predictions NaN or wrong)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = np.sin(2 * X[:, 0]) + 0.1 * X[:, 1]
    kw = dict(dtype="float64", max_iter=2, tol=None, n_features=256, block_size=128, progress=False,
              random_state=0)
    plain = ok.DSGRegressor(**kw).fit(X, y)
    tiny = ok.DSGRegressor(**kw).fit(X, y * unit)
    assert tiny._config.y_scale == pytest.approx(plain._config.y_scale * unit, rel=1e-12,
                                                 abs=0)
    np.testing.assert_allclose(tiny.predict(X) / unit, plain.predict(X), rtol=1e-6,
                               atol=1e-9)


def test_an_input_of_tiny_values_that_carries_the_label_is_used():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 2] > 0).astype(int)            # only the last input carries the label
    tiny = X.copy()
    tiny[:, 2] *= 1e-200                     # its square underflows float64
    kw = dict(dtype="float64", max_iter=2, tol=None, n_features=256, block_size=128, progress=False,
              random_state=0)
    model = ok.DSGClassifier(**kw).fit(tiny, y)
    assert 0 < model._config.x_scale[2] < 1e-199
    assert model.score(tiny, y) > 0.9        # taken for a constant, the label is at chance


@pytest.mark.parametrize("where", ["y", "X"])
def test_scales_below_float32s_range_are_refused_in_float32(where):
    """In float32 (the default on many rows; asked for here) a target or an input whose
    spread is below float32's smallest normal number would be cast to subnormals or 0:
    the fit names it and the fix (dtype='float64') instead of diverging on NaN."""
    from ooc_kernels.exceptions import InvalidDataError

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = np.sin(2 * X[:, 0]) + 0.1 * X[:, 1]
    if where == "y":
        y = y * 1e-100
    else:
        X[:, 1] *= 1e-100
    kw = dict(max_iter=1, tol=None, n_features=256, block_size=128, progress=False, random_state=0)
    what = "the regression target y" if where == "y" else "column 1 of X"
    with pytest.raises(InvalidDataError, match=rf"{what} has a standard deviation of .*e-10"
                                               r"\d, below float32's smallest normal.*"
                                               r"dtype='float64'"):
        ok.DSGRegressor(dtype="float32", **kw).fit(X, y)
    model = ok.DSGRegressor(dtype="float64", **kw).fit(X, y)
    assert np.isfinite(model.predict(X)).all()
