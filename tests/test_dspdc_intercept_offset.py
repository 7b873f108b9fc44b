"""DSPDCRegressor's intercept is not shrunk towards 0 (docs/dspdc.md, "Standardization"):
the squared loss is fit to the targets less their mean, so on Friedman #1 shifted by 1e5
(a mean far from 0 against a spread of about 5) the default model predicts as unpenalized
least squares does (``LinearRegression``), whatever ``intercept_scaling``."""

import numpy as np
import pytest
from sklearn.datasets import make_friedman1
from sklearn.linear_model import LinearRegression

import ooc_kernels as ok

SHIFT = 1e5


def _problem():
    X, y = make_friedman1(800, noise=0.5, random_state=1)
    return X[:600], y[:600] + SHIFT, X[600:], y[600:] + SHIFT


def test_the_mean_prediction_is_the_targets_mean():
    Xtr, ytr, _, _ = _problem()
    model = ok.DSPDCRegressor(random_state=0, progress=False).fit(Xtr, ytr)
    # on centred columns the mean prediction is the intercept: the targets' mean, unshrunk
    # (a penalized intercept on these targets is ytr.mean() / (1 + alpha), 10 less)
    assert model.predict(Xtr).mean() == pytest.approx(ytr.mean(), abs=1e-3)


@pytest.mark.parametrize("intercept_scaling", [1.0, 100.0])
def test_a_far_target_fits_as_least_squares(intercept_scaling):
    Xtr, ytr, Xte, yte = _problem()
    model = ok.DSPDCRegressor(intercept_scaling=intercept_scaling, random_state=0,
                              progress=False).fit(Xtr, ytr)
    ols = LinearRegression().fit(Xtr, ytr)
    np.testing.assert_allclose(model.predict(Xte), ols.predict(Xte), atol=0.05)
