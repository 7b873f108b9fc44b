"""DSPDC's standardization: the problem on standardized columns, solved on raw, unscaled
columns (scales 1e-3 to 1e3), checked against exact solvers of that problem; the moments
against NumPy; factorized data against the materialized matrix; weights as copies."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.linear_model import ElasticNet

import ooc_kernels as ok
from ooc_kernels.families.dspdc._scaling import (
    chunk_moments,
    combine_moments,
    standardization,
)

FAST = dict(scheduler="sync", random_state=0, progress=False)


def _raw_columns(n=300, p=6, seed=0):
    """Columns on scales 1e-3 .. 1e3, some far from 0 (a pressure near 1000, a 0/1 flag)."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, p))
    scales = np.logspace(-3, 3, p)
    X = Z * scales
    X[:, -1] += 1000.0
    X[:, 0] = (Z[:, 0] > 0.3).astype(float)
    return X, Z, rng


def _standardized(X, center=True, w=None):
    """The columns the problem is defined on, from NumPy's weighted moments."""
    mean = np.average(X, axis=0, weights=w) if center else np.zeros(X.shape[1])
    scale = np.sqrt(np.average((X - mean) ** 2, axis=0, weights=w))
    return (X - mean) / scale, mean, scale


def _standardized_x(est, mean, scale):
    """The standardized problem's x of a fitted model (the inverse of the reported map)."""
    return np.append(est.coef_ * scale, est.intercept_ + mean @ est.coef_)


def _certified_distance(est, alpha):
    """``||x - x*|| <= sqrt(2 gap / alpha)``: P is alpha-strongly convex."""
    return np.sqrt(2 * max(est.duality_gap_, 0.0) / alpha)


# --------------------------------------------------------------------------- moments
@pytest.mark.parametrize("weighted", [False, True])
def test_chunk_moments_combined_equal_numpy(weighted):
    X, _, rng = _raw_columns(n=97)
    w = rng.integers(0, 4, size=len(X)).astype(float) if weighted else None
    parts = [chunk_moments(X[a:a + 20], None if w is None else w[a:a + 20])
             for a in range(0, len(X), 20)]
    W, mean, m2 = combine_moments(*parts)
    np.testing.assert_allclose(mean, np.average(X, axis=0, weights=w), rtol=1e-12)
    np.testing.assert_allclose(m2 / W, np.average((X - mean) ** 2, axis=0, weights=w),
                               rtol=1e-10)
    found = standardization((W, mean, m2), center=False)
    np.testing.assert_allclose(found["x_scale"],
                               np.sqrt(np.average(X ** 2, axis=0, weights=w)), rtol=1e-10)
    assert found["x_shift"] == (0.0,) * X.shape[1]


def test_factorized_moments_are_those_of_the_materialized_columns():
    rng = np.random.default_rng(3)
    U, V = rng.normal(size=(90, 3)) + 5.0, rng.normal(size=(3, 7)) * np.logspace(-2, 2, 7)
    parts = [chunk_moments(U[a:a + 25], None, V) for a in range(0, 90, 25)]
    found = standardization(combine_moments(*parts), center=True, V=V)
    A = U @ V
    np.testing.assert_allclose(found["x_shift"], A.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(found["x_scale"], A.std(axis=0), rtol=1e-9)


def test_a_constant_column_keeps_the_scale_one():
    X = np.column_stack([np.arange(6.0), np.full(6, 7.0)])
    found = standardization(combine_moments(chunk_moments(X, None)), center=True)
    assert found["x_scale"][1] == 1.0 and found["x_shift"][1] == 7.0


# --------------------------------------------------------------------------- exactness
def test_ridge_on_raw_columns_solves_the_standardized_problem_exactly():
    """Closed form of the standardized ridge with its regularized intercept column, on the
    targets less their mean (the intercept gets the mean back)."""
    X, Z, rng = _raw_columns()
    y = Z @ rng.normal(size=Z.shape[1]) + 3.0 + 0.3 * rng.normal(size=len(X))
    n, alpha = len(X), 0.05
    est = ok.DSPDCRegressor(alpha=alpha, tol=1e-10, max_iter=100, **FAST).fit(X, y)
    assert est.stop_reason_.startswith("tol"), est.stop_reason_
    Xs, mean, scale = _standardized(X)
    A = np.column_stack([Xs, np.ones(n)])
    ybar, y = y.mean(), y - y.mean()
    x = np.linalg.solve(A.T @ A / n + alpha * np.eye(A.shape[1]), A.T @ y / n)
    # the reported model is the standardized problem's solution, as close as its gap says
    found = _standardized_x(est, mean, scale) - np.eye(A.shape[1])[-1] * ybar
    assert np.linalg.norm(found - x) <= _certified_distance(est, alpha) + 1e-9
    assert np.linalg.norm(found - x) <= 1e-4 * np.linalg.norm(x)
    # the certificate is that of the standardized problem
    def P(v):
        return 0.5 * np.mean((A @ v - y) ** 2) + 0.5 * alpha * v @ v
    assert 0 <= P(found) - P(x) <= est.duality_gap_ + 1e-12


def test_logistic_on_raw_columns_solves_the_standardized_problem_exactly():
    X, Z, rng = _raw_columns()
    yb = np.where(Z @ rng.normal(size=Z.shape[1]) + 0.5 * rng.normal(size=len(X)) > 0, 1, -1)
    n, alpha = len(X), 0.05
    est = ok.DSPDCClassifier(alpha=alpha, tol=1e-10, max_iter=100, **FAST).fit(X, yb)
    assert est.stop_reason_.startswith("tol"), est.stop_reason_
    Xs, mean, scale = _standardized(X)
    A = np.column_stack([Xs, np.ones(n)])

    def P(v):
        z = A @ v
        return np.mean(np.logaddexp(0.0, -yb * z)) + 0.5 * alpha * v @ v

    def grad(v):
        s = -yb / (1.0 + np.exp(yb * (A @ v)))
        return A.T @ s / n + alpha * v

    x = minimize(P, np.zeros(A.shape[1]), jac=grad, method="L-BFGS-B",
                 options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10_000}).x
    found = _standardized_x(est, mean, scale)
    assert np.linalg.norm(found - x) <= _certified_distance(est, alpha) + 1e-6
    assert np.linalg.norm(found - x) <= 1e-3 * np.linalg.norm(x)
    assert P(found) - P(x) <= est.duality_gap_ + 1e-12


def test_elastic_net_without_intercept_scales_by_the_root_mean_square():
    """fit_intercept=False: the columns are scaled, not centred (no intercept to absorb a
    shift); scikit-learn's ElasticNet on those columns is the oracle."""
    X, Z, rng = _raw_columns()
    y = Z @ rng.normal(size=Z.shape[1]) + 0.3 * rng.normal(size=len(X))
    alpha, l1 = 0.05, 0.5
    est = ok.DSPDCRegressor(alpha=alpha, l1_ratio=l1, fit_intercept=False, tol=1e-10,
                            max_iter=100, **FAST).fit(X, y)
    assert est.stop_reason_.startswith("tol"), est.stop_reason_
    Xs, _, scale = _standardized(X, center=False)
    ref = ElasticNet(alpha=alpha, l1_ratio=l1, fit_intercept=False, tol=1e-14,
                     max_iter=100_000).fit(Xs, y).coef_
    np.testing.assert_allclose(est.coef_, ref / scale, rtol=1e-5, atol=1e-9)
    assert est.intercept_ == 0.0


def test_standardize_false_solves_the_raw_problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2)) * [1.0, 2.0] + [0.5, 0.0]  # the raw problem converges
    y = X @ [1.0, -0.5] + 0.3 * rng.normal(size=len(X))
    n, alpha = len(X), 0.1
    est = ok.DSPDCRegressor(alpha=alpha, standardize=False, tol=1e-9, max_iter=100,
                            **FAST).fit(X, y)
    assert est.stop_reason_.startswith("tol"), est.stop_reason_
    assert est._config.x_scale is None
    A = np.column_stack([X, np.ones(n)])
    # the targets less their mean, which the intercept gets back
    x = np.linalg.solve(A.T @ A / n + alpha * np.eye(3), A.T @ (y - y.mean()) / n)
    found = np.append(est.coef_, est.intercept_ - y.mean())
    assert np.linalg.norm(found - x) <= _certified_distance(est, alpha) + 1e-12
    assert np.linalg.norm(found - x) <= 1e-4 * np.linalg.norm(x)


def test_weights_standardize_as_copies_of_rows():
    """Integer sample weights are copies of rows for the moments as for the losses."""
    X, Z, rng = _raw_columns(n=120)
    y = Z @ rng.normal(size=Z.shape[1]) + 0.3 * rng.normal(size=len(X))
    k = rng.integers(0, 3, size=len(X))
    params = dict(alpha=0.05, tol=1e-12, max_iter=100, **FAST)
    weighted = ok.DSPDCRegressor(**params).fit(X, y, sample_weight=k.astype(float))
    copies = ok.DSPDCRegressor(**params).fit(np.repeat(X, k, axis=0), np.repeat(y, k))
    Xs, mean, scale = _standardized(np.repeat(X, k, axis=0))
    for est in (weighted, copies):   # the moments of the copies, by NumPy
        np.testing.assert_allclose(est._config.x_shift, mean, rtol=1e-12)
        np.testing.assert_allclose(est._config.x_scale, scale, rtol=1e-12)
    # one problem: the two solutions are as close as their two certificates allow
    apart = np.linalg.norm(_standardized_x(weighted, mean, scale)
                           - _standardized_x(copies, mean, scale))
    assert apart <= _certified_distance(weighted, 0.05) + _certified_distance(copies, 0.05)
    assert apart <= 1e-5


def test_factorized_standardized_equals_the_materialized_matrix(monkeypatch):
    from ooc_kernels.families.dspdc import _memory_task

    from ooc_kernels.families.dspdc import _squared_start

    # the dense rows in memory without the squared loss's line of duals and its start,
    # which the factorized rounds do not have (tests/test_dspdc_squared_line.py,
    # tests/test_dspdc_memory_start.py)
    monkeypatch.setattr(_memory_task.MemoryTasks, "_line_start", lambda *args: None)
    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    rng = np.random.default_rng(1)
    U = rng.normal(size=(200, 3)) + 2.0
    V = rng.normal(size=(3, 8)) * np.logspace(-2, 2, 8)
    A = U @ V
    y = (A / A.std(axis=0)) @ rng.normal(size=8) + 0.1 * rng.normal(size=200)
    params = dict(alpha=0.1, q=9, max_iter=4, tol=None, chunk_size=50, **FAST)
    fact = ok.DSPDCRegressor(**params).fit(ok.Factorized(U, V), y)
    dense = ok.DSPDCRegressor(**params).fit(A, y)
    np.testing.assert_allclose(fact.coef_, dense.coef_, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(fact.intercept_, dense.intercept_, rtol=1e-8)


def test_lazy_input_is_standardized_like_memory(monkeypatch):
    from ooc_kernels.families.dspdc import _squared_start

    # the zero start in memory too: the logistic loss's start in memory (Newton's), which
    # the lazy input's rounds do not have (tests/test_dspdc_logistic_start.py)
    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    X, Z, rng = _raw_columns(n=240)
    y = np.where(Z[:, 1] + Z[:, 2] > 0, 1, 0)
    params = dict(alpha=0.05, chunk_size=40, max_iter=4, tol=None, local_passes=1.0,
                  sampling="permutation", shuffle_chunks=6)   # "auto": by input
    memory = ok.DSPDCClassifier(**params, **FAST).fit(X, y)
    lazy = ok.DSPDCClassifier(**params, **FAST).fit(
        da.from_array(X, chunks=(40, X.shape[1])), da.from_array(y, chunks=40))
    assert (memory._config.x_shift, memory._config.x_scale) == \
        (lazy._config.x_shift, lazy._config.x_scale)                 # the same standardization
    # the same model; the in-memory tasks sum in another order (families/dspdc/_memory_task)
    np.testing.assert_allclose(memory.coef_, lazy.coef_, rtol=1e-9)
    np.testing.assert_allclose(memory.intercept_, lazy.intercept_, rtol=1e-9)


def test_a_standardized_model_saves_and_loads_with_its_scaling(tmp_path):
    X, Z, rng = _raw_columns(n=120)
    y = Z @ rng.normal(size=Z.shape[1])
    est = ok.DSPDCRegressor(alpha=0.05, max_iter=3, tol=None, **FAST).fit(X, y)
    est.save(tmp_path / "m.zarr")
    loaded = ok.load(tmp_path / "m.zarr")
    assert loaded.standardize is True
    assert loaded._config.x_shift == est._config.x_shift
    assert loaded._config.x_scale == est._config.x_scale
    assert loaded._config.step_boost == est._config.step_boost
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    np.testing.assert_allclose(est.predict(X), X @ est.coef_ + est.intercept_, rtol=1e-12)
