"""The squared loss's start in memory (families/dspdc/_memory_start.py): the ridge solution
from one product of the rows held, the fused tasks' duals at it, and fits that check the
start's certificate before their first iteration, against the closed-form ridge solution and
scikit-learn's ElasticNet."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import InvalidDataError
from ooc_kernels.families.dspdc import _memory_start, _memory_task, _squared_start
from ooc_kernels.families.dspdc.kernels_start import gram_elastic_net, gram_elastic_net_ref
from tests._dspdc_solver_space import (record_start, round_iterations, solver_rows,
                                       solver_x)


def _data(n=600, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * np.linspace(0.5, 3.0, p) + 2.0
    y = X @ rng.normal(size=p) + 0.3 * rng.normal(size=n) - 1.0
    w = rng.uniform(0.0, 3.0, size=n)
    return X, y, w


def _centred(y, sw=None, fit_intercept=True):
    """The squared loss's targets: less their weighted mean when there is an intercept."""
    return y - np.average(y, weights=sw) if fit_intercept else y


@pytest.mark.parametrize("weighted", [False, True])
def test_memory_start_is_numpys_ridge_solution_and_its_duals_sums(weighted):
    rng = np.random.default_rng(1)
    A, b = rng.normal(size=(300, 4)), rng.normal(size=300)
    w = rng.uniform(0.0, 2.0, size=300) if weighted else None
    ww = np.ones(300) if w is None else w
    start = _memory_start.memory_start(A, b, w, 0.05)
    x = np.linalg.solve(A.T @ (ww[:, None] * A) / 300 + 0.05 * np.eye(4),
                        A.T @ (ww * b) / 300)
    np.testing.assert_allclose(start["start_x"], x, rtol=1e-12, atol=1e-14)
    y = A @ x - b                                      # the duals optimal for x
    np.testing.assert_allclose(start["start_w"], A.T @ (ww * y), rtol=1e-9, atol=1e-10)
    assert start["start_conj"] == pytest.approx(np.sum(ww * (0.5 * y ** 2 + b * y)),
                                                rel=1e-10)


@pytest.mark.parametrize("lam1", [0.0, 0.01, 0.3, 10.0])
def test_gram_elastic_net_is_its_twin_and_elasticnets_solution(lam1):
    """The kernel against its NumPy twin bit for bit, and its minimizer against
    scikit-learn's ElasticNet on rows whose ``A^T A / n`` is the kernel's ``H`` (a large
    ``lam1``: every coefficient 0)."""
    from sklearn.linear_model import ElasticNet

    rng = np.random.default_rng(int(lam1 * 100))
    A = rng.normal(size=(400, 6)) @ rng.normal(size=(6, 6))
    b = A @ rng.normal(size=6) + rng.normal(size=400)
    lam2 = 0.05
    Q, c = A.T @ A / 400 + lam2 * np.eye(6), A.T @ b / 400
    x, x_ref = np.zeros(6), np.zeros(6)
    sweeps = gram_elastic_net(Q, c, lam1, x, 5000, 1e-14)
    assert sweeps < 5000 and gram_elastic_net_ref(Q, c, lam1, x_ref, 5000, 1e-14) == sweeps
    np.testing.assert_array_equal(x, x_ref)
    alpha = lam1 + lam2
    ref = ElasticNet(alpha=alpha, l1_ratio=lam1 / alpha, fit_intercept=False, tol=1e-15,
                     max_iter=1_000_000).fit(A, b).coef_
    np.testing.assert_allclose(x, ref, rtol=1e-8, atol=1e-10)
    if lam1 == 10.0:
        assert not x.any()


def test_memory_start_refuses_values_that_are_not_finite():
    A, b = np.ones((4, 2)), np.array([1.0, np.inf, 0.0, 2.0])
    assert _memory_start.memory_start(A, b, None, 0.1) == {}


@pytest.mark.parametrize("weighted", [False, True])
def test_the_fused_tasks_start_at_the_ridge_duals(weighted, monkeypatch):
    """The duals, conjugates and chunk products the fused tasks hold at the start are those
    of ``y = A x_0 - b`` in NumPy, and the state's ``w`` and ``sum w phi*`` their sums."""
    X, y, w = _data(seed=2)
    sw = w if weighted else None
    est = ok.DSPDCRegressor(alpha=1e-2, tol=None, max_iter=1, chunk_size=150,
                            random_state=0, progress=False)
    tasks = record_start(monkeypatch)
    est.fit(X, y, sample_weight=sw)
    duals, conj, products, _, state = tasks[0]
    cfg = est._config
    A = solver_rows(est, X)
    ww = np.ones(len(y)) if sw is None else sw * len(y) / sw.sum()
    y = _centred(y, sw)
    x0 = np.linalg.solve(A.T @ (ww[:, None] * A) / len(y) + cfg.lam2 * np.eye(A.shape[1]),
                         A.T @ (ww * y) / len(y))
    np.testing.assert_allclose(cfg.start_x, x0, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(duals, A @ x0 - y, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(conj, 0.5 * duals ** 2 + y * duals, rtol=1e-12)
    for c in range(4):
        lo, hi = 150 * c, 150 * (c + 1)
        np.testing.assert_allclose(products[c], A[lo:hi].T @ (ww[lo:hi] * duals[lo:hi]),
                                   rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(state.w, products.sum(axis=0), rtol=1e-12, atol=1e-12)
    assert state.conj_sum == pytest.approx(np.sum(ww * conj), rel=1e-12)
    np.testing.assert_array_equal(state.x, cfg.start_x)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("m", [1, 2])
def test_ridge_in_memory_is_certified_at_its_start(weighted, fit_intercept, m, monkeypatch):
    """Ridge starts at its solution: the first task sums the start's losses, certifies it
    and runs no iterations (the fused tasks with ``m = 1``, the solver's task with ``m =
    2``); one epoch, one gap (that of the start), the closed-form ridge solution."""
    iterations = round_iterations(monkeypatch)
    X, y, w = _data(seed=3)
    sw = w if weighted else None
    est = ok.DSPDCRegressor(alpha=1e-3, m=m, fit_intercept=fit_intercept, tol=1e-10,
                            max_iter=30, chunk_size=200, random_state=0,
                            progress=False).fit(X, y, sample_weight=sw)
    assert est._config.start_x is not None
    assert est.stop_reason_.startswith("tol") and est.n_iter_ == 1
    (entry,) = est.gap_history_
    assert entry["iterations"] == 0 and entry["passes"] == 0.0 and iterations == [0]
    assert entry["relative_gap"] <= 1e-10
    A = solver_rows(est, X)
    n = len(y)
    ww = np.ones(n) if sw is None else sw * n / sw.sum()
    ybar = np.average(y, weights=sw) if fit_intercept else 0.0
    y = y - ybar                              # the targets the squared loss is fit to
    x = np.linalg.solve(A.T @ (ww[:, None] * A) / n + 1e-3 * np.eye(A.shape[1]),
                        A.T @ (ww * y) / n)
    np.testing.assert_allclose(solver_x(est, ybar), x, rtol=1e-10, atol=1e-12)
    P = np.sum(ww * 0.5 * (A @ x - y) ** 2) / n + 0.5e-3 * x @ x
    assert entry["primal"] == pytest.approx(P, rel=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("m", [1, 2])
def test_the_elastic_net_in_memory_is_certified_at_its_start(weighted, m, monkeypatch):
    """The elastic net starts at its solution (coordinate descent on ``A^T W A / n``): no
    iteration, one gap, ElasticNet's objective value."""
    from sklearn.linear_model import ElasticNet

    iterations = round_iterations(monkeypatch)
    X, y, w = _data(seed=9)
    sw = w if weighted else None
    est = ok.DSPDCRegressor(alpha=1e-2, l1_ratio=0.7, m=m, tol=1e-10, random_state=0,
                            chunk_size=200, progress=False).fit(X, y, sample_weight=sw)
    assert est.n_iter_ == 1 and iterations == [0] and len(est.gap_history_) == 1
    n = len(y)
    ww = np.ones(n) if sw is None else sw * n / sw.sum()
    ybar = np.average(y, weights=sw)
    y = y - ybar                              # the targets the squared loss is fit to
    A = solver_rows(est, X)
    ref = ElasticNet(alpha=1e-2, l1_ratio=0.7, fit_intercept=False, tol=1e-15,
                     max_iter=1_000_000).fit(A, y, sample_weight=ww).coef_

    def P(v):
        return (np.sum(ww * 0.5 * (A @ v - y) ** 2) / n + 0.7e-2 * np.abs(v).sum()
                + 0.15e-2 * v @ v)

    x = solver_x(est, ybar)
    assert abs(P(x) - P(ref)) <= 1e-12 * P(ref)
    assert est.gap_history_[0]["primal"] == pytest.approx(P(x), rel=1e-12)
    np.testing.assert_allclose(x, ref, rtol=1e-7, atol=1e-9)


def test_ridge_out_of_core_is_certified_at_its_start():
    """The same check out of core (the set-up's scatter): one epoch whose task runs no
    iterations."""
    X, y, _ = _data(seed=4)
    est = ok.DSPDCRegressor(alpha=1e-3, tol=1e-10, max_iter=30, scheduler="sync",
                            random_state=0, progress=False)
    est.fit(da.from_array(X, chunks=(200, X.shape[1])), da.from_array(y, chunks=200))
    assert est._config.start_x is not None
    assert est.n_iter_ == 1 and [h["iterations"] for h in est.gap_history_] == [0]


@pytest.mark.parametrize("weighted", [False, True])
def test_elastic_net_from_the_start_is_elasticnets_solution_in_fewer_epochs(weighted,
                                                                          monkeypatch):
    from sklearn.linear_model import ElasticNet

    X, y, w = _data(seed=5)
    sw = w if weighted else None
    kw = dict(alpha=1e-2, l1_ratio=0.5, tol=1e-10, max_iter=300, random_state=0,
              progress=False)
    started = ok.DSPDCRegressor(**kw).fit(X, y, sample_weight=sw)
    assert started._config.start_x is not None and started.stop_reason_.startswith("tol")
    assert started.gap_history_[0]["iterations"] == 0     # the start's own gap first
    n = len(y)
    ww = np.ones(n) if sw is None else sw * n / sw.sum()
    A = solver_rows(started, X)
    b = _centred(y, sw)
    x0 = np.asarray(started._config.start_x)
    assert started.gap_history_[0]["primal"] == pytest.approx(
        np.sum(ww * 0.5 * (A @ x0 - b) ** 2) / n + 0.5e-2 * np.abs(x0).sum()
        + 0.25e-2 * x0 @ x0, rel=1e-12)
    ref = ElasticNet(alpha=1e-2, l1_ratio=0.5, fit_intercept=False, tol=1e-14,
                     max_iter=100_000).fit(A, b, sample_weight=ww)
    x = solver_x(started, np.average(y, weights=sw))
    lam1, lam2 = 0.5e-2, 0.5e-2

    def P(v):
        return (np.sum(ww * 0.5 * (A @ v - b) ** 2) / n + lam1 * np.abs(v).sum()
                + lam2 / 2 * v @ v)

    assert 0.0 <= P(x) - P(ref.coef_) + 1e-14 and P(x) - P(ref.coef_) <= 1e-10 * P(x)
    assert all(h["dual"] <= P(ref.coef_) * (1 + 1e-12) for h in started.gap_history_)
    np.testing.assert_allclose(x, ref.coef_, rtol=1e-4, atol=1e-5)
    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)     # x = 0, y = 0
    plain = ok.DSPDCRegressor(**kw).fit(X, y, sample_weight=sw)
    assert plain._config.start_x is None
    assert started.n_iter_ < plain.n_iter_


@pytest.mark.parametrize("start", [True, False])
def test_tiny_targets_are_refused_with_or_without_the_start(start, monkeypatch):
    """Targets whose squares underflow float64: the start's certificate names the fix as
    the zero start's does (a primal value in the subnormal range), not a gap of 0."""
    if not start:
        monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    X, y, _ = _data(seed=7)
    est = ok.DSPDCRegressor(alpha=1e-3, tol=1e-6, random_state=0, progress=False)
    with pytest.raises(InvalidDataError, match="rescale"):
        est.fit(X, y * 1e-160)
    assert (est._config.start_x is not None) == start


@pytest.mark.parametrize("start", [True, False])
def test_huge_targets_are_refused_with_or_without_the_start(start, monkeypatch):
    if not start:
        monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    X, y, _ = _data(seed=8)
    with pytest.raises(InvalidDataError, match="Rescale y"):
        ok.DSPDCRegressor(alpha=1e-3, tol=1e-6, random_state=0,
                          progress=False).fit(X, y * 1e155)


@pytest.mark.parametrize("cls, target", [(ok.DSPDCRegressor, "y"), (ok.DSPDCClassifier, "labels")])
def test_the_first_task_certifies_the_start_from_its_own_losses_without_a_second_pass(
        cls, target, monkeypatch):
    """The start's losses are summed where the start's products are taken (``start_at``):
    the first task certifies the start without summing them again, with the losses of
    NumPy at ``x_0``."""
    X, y, w = _data(seed=5)
    if target == "labels":
        y = (y > np.median(y)).astype(int)
    seen = []
    real = _memory_task.MemoryTasks._no_iterations

    def no_iterations(self, config, state, task, n_k, loss):
        seen.append((loss, np.array(state.x)))
        return real(self, config, state, task, n_k, loss)

    monkeypatch.setattr(_memory_task.MemoryTasks, "_no_iterations", no_iterations)
    monkeypatch.setattr(_memory_task.MemoryTasks, "primal_loss",
                        lambda *args: pytest.fail("the start's losses summed twice"))
    est = cls(alpha=1e-2, tol=1e-4, random_state=0, progress=False).fit(
        X, y, sample_weight=w)
    (loss, x0), = seen
    A = solver_rows(est, X)
    z = A @ x0
    if target == "labels":
        values = np.logaddexp(0.0, -np.where(y == 1, 1.0, -1.0) * z)
    else:
        values = 0.5 * (z - _centred(y, w)) ** 2
    ww = w * len(y) / w.sum()        # the solver's weights: mean 1
    assert loss == pytest.approx(float(ww @ values), rel=1e-10)
