"""DSPDC penalizes its intercept (docs/dspdc.md, "Standardization"): with the squared loss
the fitted intercept is ``c^2 / (c^2 + alpha)`` times the targets' mean, and
``intercept_scaling=100`` makes a target far from 0 fit as unpenalized least squares does."""

import numpy as np
import pytest
from sklearn.datasets import make_friedman1
from sklearn.linear_model import LinearRegression

import ooc_kernels as ok

SHIFT = 1e5


def _problem():
    X, y = make_friedman1(800, noise=0.5, random_state=1)
    return X[:600], y[:600] + SHIFT, X[600:], y[600:] + SHIFT


def test_the_default_intercept_is_shrunk_by_c2_over_c2_plus_alpha():
    Xtr, ytr, Xte, _ = _problem()
    model = ok.DSPDCRegressor(random_state=0).fit(Xtr, ytr)
    mean_prediction = model.predict(Xtr).mean()  # = the intercept on centred columns
    assert mean_prediction == pytest.approx(ytr.mean() / (1 + model.alpha), abs=0.05)


def test_a_large_intercept_scaling_fits_a_far_target_as_least_squares():
    Xtr, ytr, Xte, yte = _problem()
    model = ok.DSPDCRegressor(intercept_scaling=100.0, random_state=0).fit(Xtr, ytr)
    ols = LinearRegression().fit(Xtr, ytr)
    np.testing.assert_allclose(model.predict(Xte), ols.predict(Xte), atol=0.05)
