"""The squared loss's line of dual points in the in-memory DSPDC tasks
(``families/dspdc/_line_dual.py``): the line's best point against a brute-force search, the
kernel's line sums against their NumPy twin, and fits whose certificates are checked against
the closed-form ridge optimum, scikit-learn's ElasticNet and the duals the fit holds."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

import ooc_kernels as ok
from ooc_kernels.families.dspdc import _memory_task
from ooc_kernels.families.dspdc._line_dual import duals_primal, line_dual_value
from ooc_kernels.families.dspdc.kernels_memory import (
    move_duals,
    move_duals_ref,
    row_conjugates,
    visits_once,
    visits_once_ref,
)


def _dual(A, b, w, y, lam1, lam2):
    """``D(y)`` of the squared loss written out."""
    n = len(b)
    v = -A.T @ (w * y) / n
    return float(-np.sum(np.maximum(np.abs(v) - lam1, 0.0) ** 2) / (2 * lam2)
                 - np.sum(w * (0.5 * y * y + b * y)) / n)


@pytest.mark.parametrize("lam1", [0.0, 0.02, 0.3])
def test_line_dual_value_is_the_lines_maximum(lam1):
    """Against Brent's search of ``D(y + t d)`` written out, on random lines (weighted rows,
    directions of three scales): the value is ``D`` at the returned ``t`` and within
    ``1e-12`` of the search's maximum, and never below ``D(y)``."""
    rng = np.random.default_rng(3)
    for _ in range(40):
        n, p, lam2 = 30, 6, 0.1
        A, b = rng.normal(size=(n, p)), rng.normal(size=n)
        w = rng.uniform(0.0, 2.0, size=n)
        y = rng.normal(size=n)
        d = rng.normal(size=n) * rng.choice([0.01, 1.0, 30.0])
        value, t = line_dual_value(A.T @ (w * y), A.T @ (w * d),
                                   float(np.sum(w * (0.5 * y * y + b * y))),
                                   float(np.sum(w * (y + b) * d)), float(np.sum(w * d * d)),
                                   n, lam1, lam2)
        assert value == pytest.approx(_dual(A, b, w, y + t * d, lam1, lam2), rel=1e-12,
                                      abs=1e-12)
        best = minimize_scalar(lambda s: -_dual(A, b, w, y + s * d, lam1, lam2),
                               bracket=(-1.0, 1.0), tol=1e-12)
        assert value >= -best.fun - 1e-12 * max(1.0, abs(best.fun))
        assert value >= _dual(A, b, w, y, lam1, lam2)


def test_line_dual_value_without_a_direction_is_the_duals_value():
    A, b, y = np.eye(2), np.array([1.0, -1.0]), np.array([0.3, 0.1])
    value, t = line_dual_value(A.T @ y, np.zeros(2), float(np.sum(0.5 * y * y + b * y)),
                               0.0, 0.0, 2, 0.0, 0.5)
    assert t == 0.0 and value == pytest.approx(_dual(A, b, np.ones(2), y, 0.0, 0.5))


def test_duals_primal_is_the_regularizers_conjugate_gradient():
    aty = np.array([-4.0, 1.0, 0.5, -0.4])
    v = -aty / 2
    want = np.array([(abs(a) - 0.25) / 0.5 * np.sign(a) if abs(a) > 0.25 else 0.0 for a in v])
    np.testing.assert_array_equal(duals_primal(aty, 2, 0.25, 0.5), want)


@pytest.mark.parametrize("lam1", [0.0, 0.03])
@pytest.mark.parametrize("weighted", [False, True])
def test_visits_once_line_sums_equal_the_twin_and_leave_the_iterations(lam1, weighted):
    """Two blocks of uniforms visiting 23 of 25 rows once: the line's direction and sums
    equal the NumPy twin's (to rounding), and the duals, iterates and products are those of
    the visits without the line, bit for bit."""
    rng = np.random.default_rng(11)
    A = rng.normal(size=(40, 6))
    b = A @ rng.normal(size=6)
    row_map = np.concatenate([np.arange(25, 40), np.arange(5, 15)]).astype(np.int64)
    segment = np.repeat(np.arange(2), [15, 10]).astype(np.int64)
    weights = np.where(rng.uniform(0, 2, 40) < 0.3, 0.0, rng.uniform(0, 2, 40)) \
        if weighted else None
    y0, shift, x0, xd = rng.normal(size=40), rng.normal(size=6), rng.normal(size=6), \
        rng.normal(size=6)
    start = [rng.normal(size=6) for _ in range(3)]
    u = ((rng.permutation(25)[:23] + 0.5) / 25)[:, None]
    conj0 = np.empty(40)
    row_conjugates(y0, b, 0, conj0)
    runs = {}
    for name, fn, line in (("numba", visits_once, True), ("numpy", visits_once_ref, True),
                           ("plain", visits_once, False)):
        y, it, dw, conj = y0.copy(), [v.copy() for v in start], np.zeros((2, 6)), conj0.copy()
        dline, dwline = np.full(40, np.nan), np.zeros((2, 8))
        for part in (u[:9], u[9:]):
            fn(A, b, y, *it, 25, part, 0.8, 0.2, 1.5, 0, lam1, 0.1, shift, weights, row_map,
               segment, x0, True, dw, conj, None, *((xd, dline, dwline) if line else ()))
        runs[name] = (y, it, dw, conj, dline, dwline)
    got, twin, plain = runs["numba"], runs["numpy"], runs["plain"]
    for a, c in zip([got[0], *got[1], *got[2:]], [twin[0], *twin[1], *twin[2:]]):
        np.testing.assert_allclose(a, c, rtol=1e-10, atol=1e-12)
    for a, c in zip([got[0], *got[1], got[2], got[3]], [plain[0], *plain[1], plain[2],
                                                        plain[3]]):
        np.testing.assert_array_equal(a, c)
    seen = row_map[np.minimum((u[:, 0] * 25).astype(int), 24)]
    y = got[0]
    np.testing.assert_allclose(got[4][seen], A[seen] @ xd - b[seen] - y[seen], rtol=1e-12)
    w = np.ones(40) if weights is None else weights
    d = got[4][seen]
    np.testing.assert_allclose(got[5].sum(axis=0), np.concatenate(
        [A[seen].T @ (w[seen] * d), [np.sum(w[seen] * (y[seen] + b[seen]) * d),
                                     np.sum(w[seen] * d * d)]]), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_move_duals_equals_its_twin(weighted):
    rng = np.random.default_rng(5)
    b, y, d = rng.normal(size=30), rng.normal(size=30), rng.normal(size=30)
    w = np.where(rng.random(30) < 0.2, 0.0, rng.random(30)) if weighted else None
    conj = np.empty(30)
    row_conjugates(y, b, 0, conj)
    outs = []
    for fn in (move_duals, move_duals_ref):
        yy, cc = y.copy(), conj.copy()
        outs.append((fn(yy, b, d, w, 0.37, 0, cc), yy, cc))
    (c1, y1, k1), (c2, y2, k2) = outs
    assert c1 == pytest.approx(c2, rel=1e-12)
    np.testing.assert_allclose(y1, y + 0.37 * d, rtol=1e-15)
    np.testing.assert_allclose(k1, 0.5 * y1 ** 2 + b * y1, rtol=1e-13)
    np.testing.assert_allclose(k1, k2, rtol=1e-13)
    want = np.sum((1.0 if w is None else w) * (0.5 * y1 ** 2 + b * y1 - conj))
    assert c1 == pytest.approx(want, rel=1e-12)


def _regression(seed=0, n=600, p=8):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * rng.uniform(0.5, 3.0, p) + rng.normal(size=p)
    y = X @ rng.normal(size=p) + 0.5 * rng.normal(size=n) + 2.0
    return X, y, rng.uniform(0.2, 2.0, size=n)


def _standardized(est, X):
    mu, sd = np.asarray(est._config.x_shift), np.asarray(est._config.x_scale)
    return np.column_stack([(X - mu) / sd, np.full(len(X), est._config.intercept_scaling)])


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("l1_ratio", [0.0, 0.5])
def test_fits_with_the_line_are_certified(weighted, l1_ratio, monkeypatch):
    """Ridge against its closed form, the elastic net against scikit-learn's ElasticNet at
    ``tol=1e-12`` on the same standardized rows: every recorded dual value is below ``P*``,
    the final model within its certified gap of ``P*``, the duals the fit holds have the
    kept products ``A_c^T (w y_c)`` and conjugates, and a dual value that the last gap's
    ``D`` is at least; without the line the ridge fit takes more epochs (the elastic net has
    none: the same fit).  Ridge from the zero start (its start, the ridge solution, is
    certified before an iteration: tests/test_dspdc_memory_start.py), the elastic net from
    the squared loss's start."""
    from sklearn.linear_model import ElasticNet

    from ooc_kernels.families.dspdc import _squared_start

    if l1_ratio == 0.0:
        monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)

    X, y, w = _regression(1)
    sw = w if weighted else None
    alpha = 1e-3
    held = []
    init = _memory_task.MemoryTasks.__init__

    def kept(self, *args):
        init(self, *args)
        held.append(self)

    monkeypatch.setattr(_memory_task.MemoryTasks, "__init__", kept)
    est = ok.DSPDCRegressor(alpha=alpha, l1_ratio=l1_ratio, tol=1e-8, random_state=0,
                            progress=False, max_iter=60).fit(X, y, sample_weight=sw)
    cfg, n = est._config, len(y)
    A = _standardized(est, X)
    ww = np.ones(n) if sw is None else sw * n / np.sum(sw)
    lam1, lam2 = cfg.lam1, cfg.lam2
    ybar = np.average(y, weights=ww)
    b = y - ybar               # the squared loss's targets: less their weighted mean

    def P(x):
        return float(np.sum(ww * 0.5 * (A @ x - b) ** 2) / n + lam2 / 2 * x @ x
                     + lam1 * np.abs(x).sum())

    if l1_ratio == 0.0:
        x_star = np.linalg.solve(A.T @ (ww[:, None] * A) / n + lam2 * np.eye(A.shape[1]),
                                 A.T @ (ww * b) / n)
    else:   # ElasticNet's objective is P / (lam1 + lam2) with alpha = lam1 + lam2
        ref = ElasticNet(alpha=lam1 + lam2, l1_ratio=lam1 / (lam1 + lam2), tol=1e-12,
                         fit_intercept=False, max_iter=100_000)
        x_star = ref.fit(A, b, sample_weight=ww).coef_
    p_star = P(x_star)
    # the intercept holds the targets' mean besides its column's coefficient
    x = np.append(est.coef_ * np.asarray(cfg.x_scale),
                  (est.intercept_ - ybar + est.coef_ @ np.asarray(cfg.x_shift))
                  / cfg.intercept_scaling)
    assert est.stop_reason_.startswith("tol")
    last = est.gap_history_[-1]
    assert P(x) == pytest.approx(last["primal"], rel=1e-10)
    assert 0.0 <= P(x) - p_star <= last["gap"] + 1e-12 * p_star
    assert all(h["dual"] <= p_star + 1e-12 * p_star for h in est.gap_history_)
    (tasks,) = held
    duals = tasks.y
    np.testing.assert_allclose(tasks.conj, 0.5 * duals ** 2 + tasks.b * duals, rtol=1e-12)
    starts = tasks.starts
    for c in range(len(tasks.sizes)):
        lo, hi = starts[c], starts[c + 1]
        np.testing.assert_allclose(tasks.products[c],
                                   A[lo:hi].T @ (ww[lo:hi] * duals[lo:hi]),
                                   rtol=1e-9, atol=1e-9 * n)
    np.testing.assert_allclose(tasks.b, b, rtol=1e-12, atol=1e-12 * abs(ybar))
    assert last["dual"] >= _dual(A, b, ww, duals, lam1, lam2) - 1e-12 * p_star
    monkeypatch.setattr(_memory_task.MemoryTasks, "_line_start", lambda *a, **k: None)
    plain = ok.DSPDCRegressor(alpha=alpha, l1_ratio=l1_ratio, tol=1e-8, random_state=0,
                              progress=False, max_iter=60).fit(X, y, sample_weight=sw)
    if l1_ratio == 0.0:
        assert est.n_iter_ < plain.n_iter_
    else:       # the elastic net has no line: the same fit
        np.testing.assert_array_equal(est.coef_, plain.coef_)
