"""ProjectedKernelRidge's ``alpha="auto"`` (default): the ridge of the smallest generalized
cross-validation error, checked against a direct NumPy GCV and against scikit-learn's
``Ridge`` on a problem with more inputs than rows."""

import math

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import ooc_kernels as ok
from ooc_kernels.families.pkawv._setup import ALPHAS


def _taylor_kernel(A, B, degree, sigma):
    """The truncated Taylor kernel by the multinomial theorem."""
    t = A @ B.T / sigma ** 2
    series = sum(t ** m / math.factorial(m) for m in range(degree + 1))
    return series * np.exp(-0.5 * (A * A).sum(1)[:, None] / sigma ** 2
                           - 0.5 * (B * B).sum(1)[None, :] / sigma ** 2)


@pytest.mark.parametrize("seed", [0, 1])
def test_default_scores_like_ridge_with_more_inputs_than_rows(seed):
    """200 rows, 1,000 inputs, a dense linear target: the Gaussian kernel at a width near
    the median distance follows it only with a small ridge, which the trials find."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(1200, 1000))
    y = X @ (rng.normal(size=1000) / np.sqrt(1000)) + 0.1 * rng.normal(size=1200)
    ridge = make_pipeline(StandardScaler(), Ridge()).fit(X[:200], y[:200])
    model = ok.ProjectedKernelRidge(random_state=0, scheduler="sync").fit(X[:200], y[:200])
    assert model.alpha_ < 1.0
    assert model.score(X[200:], y[200:]) > ridge.score(X[200:], y[200:]) - 0.02


def test_auto_alpha_is_the_smallest_gcv_error_of_the_grid():
    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, size=(300, 2))
    y = np.sin(3 * X[:, 0]) * X[:, 1] + 0.3 * rng.normal(size=300)
    params = dict(degree=6, bandwidth=0.7, standardize=False, center=False,
                  scheduler="sync", random_state=0)
    model = ok.ProjectedKernelRidge(alpha="auto", **params).fit(X, y)
    K = _taylor_kernel(X, X, 6, 0.7)
    gcv = []
    for alpha in ALPHAS:
        H = K @ np.linalg.inv(K + alpha * np.eye(300))
        gcv.append(np.mean((y - H @ y) ** 2) / (1 - np.trace(H) / 300) ** 2)
    assert model.alpha_ == ALPHAS[int(np.argmin(gcv))]
    fixed = ok.ProjectedKernelRidge(alpha=model.alpha_, **params).fit(X, y)
    np.testing.assert_allclose(model.coef_, fixed.coef_, rtol=1e-12)


def test_the_chosen_alpha_is_saved_and_kept_by_a_continuation(tmp_path):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 3))
    y = X[:, 0] - X[:, 1] ** 2 + 0.1 * rng.normal(size=400)
    model = ok.ProjectedKernelRidge(random_state=0, scheduler="sync").partial_fit(
        X[:200], y[:200])
    model.save(tmp_path / "m.zarr")
    loaded = ok.load(tmp_path / "m.zarr")
    assert loaded.alpha_ == model.alpha_
    model.partial_fit(X[200:], y[200:])
    loaded.partial_fit(X[200:], y[200:])
    fixed = ok.ProjectedKernelRidge(random_state=0, scheduler="sync",
                                    alpha=model.alpha_, bandwidth=model.bandwidth_)
    fixed.partial_fit(X[:200], y[:200]).partial_fit(X[200:], y[200:])
    for other in (loaded, fixed):
        np.testing.assert_allclose(other.predict(X), model.predict(X), rtol=1e-10)


def test_auto_alpha_moves_up_the_grid_when_the_solve_is_not_positive_definite(monkeypatch):
    import scipy.linalg

    from ooc_kernels.families.pkawv import batch

    rng = np.random.default_rng(6)
    X = rng.normal(size=(300, 2))
    y = X[:, 0] * X[:, 1] + 0.1 * rng.normal(size=300)
    params = dict(random_state=0, scheduler="sync", bandwidth=1.0, degree=4)
    chosen = ok.ProjectedKernelRidge(**params).fit(X, y).alpha_
    calls, original = [], scipy.linalg.cho_factor

    def failing_once(a, *args, **kwargs):   # the first solve is not positive definite
        calls.append(1)
        if len(calls) == 1:
            raise np.linalg.LinAlgError("not positive definite")
        return original(a, *args, **kwargs)

    monkeypatch.setattr(batch.scipy.linalg, "cho_factor", failing_once)
    model = ok.ProjectedKernelRidge(**params).fit(X, y)
    monkeypatch.undo()
    assert chosen < ALPHAS[-1] and model.alpha_ == ALPHAS[ALPHAS.index(chosen) + 1]
    fixed = ok.ProjectedKernelRidge(**dict(params, alpha=model.alpha_)).fit(X, y)
    np.testing.assert_allclose(model.coef_, fixed.coef_, rtol=1e-12)
