"""ProjectedKernelRidge's ``alpha="auto"`` (default): the ridge of the smallest exact
leave-one-out error, checked against NumPy refits without each row and against
scikit-learn's ``Ridge`` on a problem with more inputs than rows."""

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


def _loo_by_refits(K, y, alpha):
    """The mean squared error of kernel ridge refitted without each row in turn."""
    n = len(y)
    pred = [K[i, np.arange(n) != i] @ np.linalg.solve(
        np.delete(np.delete(K, i, 0), i, 1) + alpha * np.eye(n - 1), np.delete(y, i))
        for i in range(n)]
    return float(np.mean((y - np.array(pred)) ** 2))


@pytest.mark.parametrize("seed", [0, 1])
def test_auto_alpha_is_the_smallest_leave_one_out_error_of_the_grid(seed):
    """Against refits without each row.  On these 40 rows of heavy-tailed inputs
    generalized cross-validation takes 1.0 where leaving each row out takes 0.1."""
    rng = np.random.default_rng(seed)
    X = rng.standard_t(2.0, size=(40, 3))
    y = np.sin(X[:, 0]) + 0.3 * rng.normal(size=40)
    params = dict(degree=6, bandwidth=1.0, standardize=False, center=False,
                  scheduler="sync", random_state=0)
    model = ok.ProjectedKernelRidge(alpha="auto", **params).fit(X, y)
    K = _taylor_kernel(X, X, 6, 1.0)
    loo = [_loo_by_refits(K, y, alpha) for alpha in ALPHAS]
    assert model.alpha_ == ALPHAS[int(np.argmin(loo))]
    fixed = ok.ProjectedKernelRidge(alpha=model.alpha_, **params).fit(X, y)
    np.testing.assert_allclose(model.coef_, fixed.coef_, rtol=1e-12)


def test_auto_alpha_of_integer_weights_is_that_of_the_repeated_rows():
    """A weight of k counts as k copies: the choice is that of the refits on the repeated
    rows, each copy left out in turn."""
    rng = np.random.default_rng(3)
    X = rng.standard_t(2.0, size=(30, 2))
    y = np.sin(X[:, 0]) + 0.3 * rng.normal(size=30)
    w = rng.integers(1, 4, size=30)
    copies = np.repeat(np.arange(30), w)
    params = dict(degree=5, bandwidth=1.0, standardize=False, center=False,
                  scheduler="sync", random_state=0)
    model = ok.ProjectedKernelRidge(alpha="auto", **params).fit(X, y, sample_weight=w)
    K = _taylor_kernel(X[copies], X[copies], 5, 1.0)
    loo = [_loo_by_refits(K, y[copies], alpha) for alpha in ALPHAS]
    assert model.alpha_ == ALPHAS[int(np.argmin(loo))]


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
