"""The PKAWV models do not depend on how the rows are chunked: the set-up
statistics (the Taylor centre, the standardization, the rows of the bandwidth trials) are
those of all the rows, the same whatever the chunks, and the model equals kernel ridge
regression on the truncated Taylor kernel written in closed form, solved by NumPy."""

import math

import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok

N, D = 500, 3
CHUNKS = (37, 200, N)     # 14 chunks, 3 chunks, one chunk


def _data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(N, D)) * [1.0, 2.0, 0.5] + [3.0, -1.0, 0.0]
    y = np.sin(X[:, 0]) + 0.1 * X[:, 1] ** 2 + 0.1 * rng.normal(size=N) + 5.0
    w = rng.uniform(0.2, 2.0, size=N)
    return X, y, w


def _fit(chunk, X, y, w, **params):
    lazy = (da.from_array(X, chunks=(chunk, D)), da.from_array(y, chunks=chunk),
            da.from_array(w, chunks=chunk))
    return ok.ProjectedKernelRidge(scheduler="sync", random_state=0, **params).fit(
        lazy[0], lazy[1], sample_weight=lazy[2])


def _taylor_kernel(A, B, degree, sigma):
    """``sum_{|k| <= M} g_k(a) g_k(b)`` by the multinomial theorem: ``exp(-(|a|^2 +
    |b|^2) / (2 sigma^2)) sum_{m <= M} (a . b / sigma^2)^m / m!``."""
    t = A @ B.T / sigma ** 2
    series = sum(t ** m / math.factorial(m) for m in range(degree + 1))
    return series * np.exp(-0.5 * (A * A).sum(1)[:, None] / sigma ** 2
                           - 0.5 * (B * B).sum(1)[None, :] / sigma ** 2)


def _weighted_ridge(K, K_test, y, w, alpha):
    """``f = k(x, X) w`` of ``min sum_i w_i (y_i - f(x_i))^2 + alpha ||f||^2`` (dual:
    ``(Phi^T W Phi + alpha I)^-1 Phi^T W = Phi^T W (K W + alpha I)^-1``)."""
    return K_test @ (w * np.linalg.solve(K * w[None, :] + alpha * np.eye(len(y)), y))


def test_taylor_expansion_centre_is_the_weighted_mean_of_all_rows_whatever_the_chunks():
    X, y, w = _data()
    params = dict(degree=3, bandwidth=2.0, alpha=0.5, standardize=False, center=True)
    models = [_fit(c, X, y, w, **params) for c in CHUNKS]
    centre = np.average(X, axis=0, weights=w)
    Xc = X - centre
    expected = _weighted_ridge(_taylor_kernel(Xc, Xc, 3, 2.0), _taylor_kernel(Xc, Xc, 3, 2.0),
                               y, w, 0.5)
    for model in models:
        np.testing.assert_allclose(model.center_, centre, rtol=1e-12)
        np.testing.assert_allclose(model.coef_, models[-1].coef_, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(model.predict(X), expected, rtol=1e-9)


def test_standardized_model_uses_the_moments_of_all_rows_whatever_the_chunks():
    X, y, w = _data()
    params = dict(degree=3, bandwidth=1.0, alpha=0.5)
    models = [_fit(c, X, y, w, **params) for c in CHUNKS]
    x_mean = np.average(X, axis=0, weights=w)
    x_sd = np.sqrt(np.average((X - x_mean) ** 2, axis=0, weights=w))
    y_mean = np.average(y, weights=w)
    y_sd = np.sqrt(np.average((y - y_mean) ** 2, weights=w))
    Z = (X - x_mean) / x_sd
    K = _taylor_kernel(Z, Z, 3, 1.0)
    expected = y_sd * _weighted_ridge(K, K, (y - y_mean) / y_sd, w, 0.5) + y_mean
    for model in models:
        np.testing.assert_allclose(model.x_shift_, x_mean, rtol=1e-12)
        np.testing.assert_allclose(model.x_scale_, x_sd, rtol=1e-12)
        np.testing.assert_allclose([model.y_shift_, model.y_scale_], [y_mean, y_sd],
                                   rtol=1e-12)
        np.testing.assert_allclose(model.coef_, models[-1].coef_, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(model.predict(X), expected, rtol=1e-9)


@pytest.mark.parametrize("params", [{}, {"standardize": False}])
def test_default_model_is_the_same_whatever_the_chunks(params):
    """The data-driven defaults (bandwidth trials, Taylor degree) read the same rows."""
    X, y, w = _data()
    models = [_fit(c, X, y, w, **params) for c in CHUNKS]
    for model in models:
        assert model.degree_ == models[-1].degree_
        np.testing.assert_allclose(model.bandwidth_, models[-1].bandwidth_, rtol=1e-12)
        np.testing.assert_allclose(model.coef_, models[-1].coef_, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(model.predict(X), models[-1].predict(X), rtol=1e-10)


@pytest.mark.parametrize("standardize", ["auto", True])
def test_online_learner_maps_the_inputs_by_the_range_of_all_rows_whatever_the_chunks(
        standardize):
    X, y, _ = _data()
    models = [ok.OnlineKernelRidge(degree=3, standardize=standardize, scheduler="sync",
                                   random_state=0).fit(da.from_array(X, chunks=(c, D)),
                                                       da.from_array(y, chunks=c))
              for c in CHUNKS]
    lo, hi = X.min(axis=0), X.max(axis=0)
    for model in models:
        np.testing.assert_allclose(model.x_shift_, (lo + hi) / 2, rtol=1e-12)
        np.testing.assert_allclose(model.x_scale_, (hi - lo) / 2, rtol=1e-12)
        np.testing.assert_allclose([model.y_shift_, model.y_scale_], [y.mean(), y.std()],
                                   rtol=1e-12)
        np.testing.assert_allclose(model.online_predictions_,
                                   models[-1].online_predictions_, rtol=1e-10)
        np.testing.assert_allclose(model.predict(X), models[-1].predict(X), rtol=1e-10)
