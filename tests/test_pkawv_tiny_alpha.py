"""A ridge ``alpha`` too small for float64: ``OnlineKernelRidge`` refuses one whose inverse
overflows, and a fit whose online forecasts or coefficients overflow raises a
``DivergenceError`` instead of leaving a model of infinite loss."""

import math

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import DivergenceError, ValidationError
from ooc_kernels.families.pkawv.taylor import auto_degree


def _data(n=120, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)


@pytest.mark.parametrize("basis", ["taylor", "nystrom-fixed", "exact", "nystrom"])
def test_online_kernel_ridge_refuses_an_alpha_whose_inverse_overflows(basis):
    X, y = _data()
    model = ok.OnlineKernelRidge(basis=basis, alpha=1e-320, n_components=20,
                                 scheduler="sync")
    with pytest.raises(ValidationError, match=r"\(5\.56e-309\).*alpha=1e-320"):
        model.fit(X, y)
    assert not hasattr(model, "n_samples_seen_")


def test_auto_degree_refuses_an_alpha_whose_inverse_overflows():
    assert math.isinf(1.0 / 1e-320)
    with pytest.raises(ValidationError, match=r"\(5\.56e-309\).*alpha=1e-320"):
        auto_degree(100, 1e-320, 1.0, 1.0)
    # just above the bound the degree is Theorem 4's, 2 log(n / alpha)
    expected = math.ceil(2.0 * (math.log(100) - math.log(1e-308)) - 1e-12)
    assert auto_degree(100, 1e-308, 0.0, 1.0) == expected


@pytest.mark.parametrize("basis", ["taylor", "nystrom-fixed"])
def test_online_kernel_ridge_raises_divergence_when_its_forecasts_overflow(basis):
    X, y = _data()
    model = ok.OnlineKernelRidge(basis=basis, alpha=1e-300, n_components=20,
                                 scheduler="sync")
    with np.errstate(over="ignore", invalid="ignore"):
        with pytest.raises(DivergenceError, match=r"alpha=1e-300.*raise alpha"):
            model.fit(X, y)


def test_online_kernel_ridge_with_a_small_finite_alpha_still_fits():
    # alpha = 1e-6 keeps every forecast finite: the final model (mode="krr", after the last
    # row) equals NumPy's ridge solve on the Nystrom features of its dictionary
    X, y = _data()
    model = ok.OnlineKernelRidge(basis="nystrom-fixed", alpha=1e-6, mode="krr",
                                 n_components=20, standardize=False, bandwidth=1.0,
                                 scheduler="sync").fit(X, y)
    assert np.isfinite(model.average_loss_)
    Z = model.dictionary_
    Knm = np.exp(-((X[:, None, :] - Z[None]) ** 2).sum(-1) / 2.0)
    Kmm = np.exp(-((Z[:, None, :] - Z[None]) ** 2).sum(-1) / 2.0)
    e, V = np.linalg.eigh(Kmm)
    keep = e > 1e-12 * e.max()
    Phi = Knm @ V[:, keep] / np.sqrt(e[keep])
    w = np.linalg.solve(Phi.T @ Phi + 1e-6 * np.eye(Phi.shape[1]), Phi.T @ y)
    np.testing.assert_allclose(model.predict(X), Phi @ w, rtol=1e-5, atol=1e-5)
