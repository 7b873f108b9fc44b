"""Regression targets far from 0 (Unix times, readings near a large constant): the DSG
regressors subtract the targets' mean before anything is rounded to the fit's float32, and
add it back in float64, so a target offset by 1.7e9 (where float32 values are 128 apart)
gives the model of the same targets near 0, shifted."""

import numpy as np
import pytest

import ooc_kernels as ok

OFFSET = 1.7e9
SETTINGS = dict(bandwidth=0.5, n_features=512, max_iter=5, tol=None, random_state=0)


def _problem():
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(1200, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=1200)
    return X[:800], y[:800], X[800:], y[800:]


@pytest.mark.parametrize("loss", ["squared", "huber"])
def test_a_target_offset_by_1_7e9_keeps_the_model_of_the_centred_target(loss):
    Xtr, ytr, Xte, yte = _problem()
    near0 = ok.DSGRegressor(loss=loss, **SETTINGS).fit(Xtr, ytr)
    far = ok.DSGRegressor(loss=loss, **SETTINGS).fit(Xtr, ytr + OFFSET)
    assert far.dtype_ == "float32"  # the fast path, where the rounding would bite
    pred = far.predict(Xte)
    assert pred.dtype == np.float64
    # float64 residuals against the known targets: R^2 as the model near 0 reaches it
    r2_far = 1 - np.mean((pred - OFFSET - yte) ** 2) / np.var(yte)
    r2_near0 = 1 - np.mean((near0.predict(Xte) - yte) ** 2) / np.var(yte)
    assert r2_near0 > 0.9
    assert r2_far > r2_near0 - 0.01
    np.testing.assert_allclose(pred - OFFSET, near0.predict(Xte), atol=0.02)


def test_the_regressor_predicts_in_float64_as_scikit_learn_regressors_do():
    Xtr, ytr, Xte, _ = _problem()
    model = ok.DSGRegressor(**SETTINGS).fit(Xtr, ytr)
    assert model.predict(Xte).dtype == np.float64
