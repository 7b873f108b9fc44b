"""The logistic loss's start in memory (families/dspdc/_logistic_start.py): Newton's method in
the ``p``-space against scipy's minimizer of the same objective, the duals optimal for its
``x_0`` against NumPy, and fits (weighted, class-weighted, breast cancer) certified at that
start before their first iteration."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit

import ooc_kernels as ok
from ooc_kernels.exceptions import InvalidDataError, ValidationError
from ooc_kernels.families.dspdc import _logistic_start, _memory_start, _squared_start
from tests._dspdc_solver_space import (record_start, round_iterations, solver_rows,
                                       solver_x)


def _data(n=600, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * np.linspace(0.5, 3.0, p) + 2.0
    y = (X @ rng.normal(size=p) + 1.5 * rng.normal(size=n) > 2.0 * X.mean()).astype(int)
    w = rng.uniform(0.0, 3.0, size=n)
    return X, y, w


def _reference(A, b, ww, lam2):
    """The minimizer of ``P`` by scipy's L-BFGS-B with the exact gradient, to a gradient of
    1e-13, and ``P``."""
    n = len(b)

    def P(v):
        m = b * (A @ v)
        g = A.T @ (ww * -b * expit(-m)) / n + lam2 * v
        return np.sum(ww * np.logaddexp(0.0, -m)) / n + 0.5 * lam2 * v @ v, g

    res = minimize(P, np.zeros(A.shape[1]), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-13, "ftol": 1e-16, "maxiter": 100_000})
    return res.x, lambda v: P(v)[0]


def _conjugate(y, b):
    """``phi*(y) = (-b y) log(-b y) + (1 + b y) log(1 + b y)``."""
    u = -b * y
    return u * np.log(u) + (1.0 - u) * np.log1p(-u)


@pytest.mark.parametrize("weighted", [False, True])
def test_newton_start_is_scipys_minimizer(weighted):
    rng = np.random.default_rng(1)
    n, p = 2000, 6         # enough rows that the first iterations take the subsampled Hessian
    A = np.column_stack([rng.normal(size=(n, p - 1)) * 2.0, np.ones(n)])
    b = np.sign(A @ rng.normal(size=p) + rng.normal(size=n))
    w = rng.uniform(0.0, 2.0, size=n) if weighted else None
    ww = np.ones(n) if w is None else w
    x, iterations = _logistic_start.logistic_newton(A, b, w, 1e-3, 1e-14)
    assert 0 < iterations < _logistic_start.MAX_NEWTON
    ref, P = _reference(A, b, ww, 1e-3)
    np.testing.assert_allclose(x, ref, rtol=1e-6, atol=1e-7)
    assert P(x) <= P(ref) + 1e-15
    # the gap at the duals phi'(A x): the iterations' stopping rule
    g = A.T @ (ww * -b * expit(-b * (A @ x))) / n + 1e-3 * x
    assert g @ g / 2e-3 <= _logistic_start.GAP_FRACTION * 1e-14 * P(x)


def _separate(A, b, ww, x, stride):
    """The losses, the gradient's sum and the Hessian's sum over every ``stride``-th row at
    ``x``, each from its own NumPy expression (``ww`` the weights, zeros allowed)."""
    m = b * (A @ x)
    loss = np.sum(ww * np.logaddexp(0.0, -m))
    s = expit(-m)
    g = A.T @ (ww * -b * s)
    keep = slice(None, None, stride)
    H = A[keep].T @ ((ww * s * (1.0 - s))[keep][:, None] * A[keep])
    return loss, g, H, len(A[keep])


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("stride", [0, 1, 4])
def test_logistic_rows_is_its_twin_and_numpys_separate_sums(weighted, stride):
    """The numba pass over a range of rows against its NumPy twin and against the losses,
    gradient and Hessian each computed alone; margins of both signs and beyond exp's range,
    weights of zero; ``stride`` 0: no scaled rows."""
    from ooc_kernels.families.dspdc import kernels_newton

    rng = np.random.default_rng(stride + 10 * weighted)
    n, p = 203, 5
    A = rng.normal(size=(n, p)) * rng.choice([1.0, 300.0], size=(n, 1), p=[0.9, 0.1])
    b = np.sign(rng.normal(size=n))
    w = rng.uniform(0.0, 2.0, size=n) if weighted else None
    if weighted:
        w[::7] = 0.0
    ww = np.ones(n) if w is None else w
    x = rng.normal(size=p)
    lo, hi = 8, 190                     # a range: rows outside it are neither read nor written
    outs = []
    for kernel in (kernels_newton.logistic_rows, kernels_newton.logistic_rows_ref):
        z, g, scaled = np.full(n, -1.0), np.full(p, 0.5), np.empty((n, p))
        loss, count = kernel(A, lo, hi, b, w, x, stride, z, g, scaled)
        outs.append((loss, count, z, g, scaled[:count]))
    (loss, count, z, g, scaled), (loss_r, count_r, z_r, g_r, scaled_r) = outs
    assert count == count_r
    assert loss == pytest.approx(loss_r, rel=1e-13)
    np.testing.assert_allclose(z, z_r, rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(g, g_r, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(scaled, scaled_r, rtol=1e-13, atol=1e-15)
    assert np.all(z[:lo] == -1.0) and np.all(z[hi:] == -1.0)
    rows = np.arange(lo, hi)
    sl, sg, sH, size = _separate(A[lo:hi], b[lo:hi], ww[lo:hi], x, 1)
    keep = rows[rows % stride == 0] if stride else rows[:0]
    _, _, sH, size = _separate(A[keep], b[keep], ww[keep], x, 1)
    assert count == size
    assert loss == pytest.approx(sl, rel=1e-12)
    np.testing.assert_allclose(z[lo:hi], A[lo:hi] @ x, rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(g - 0.5, sg, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(scaled.T @ scaled, sH, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("stride", [1, 4])
@pytest.mark.parametrize("block", [7, 64, 1000])
def test_newton_pass_by_blocks_is_numpys(stride, block):
    """One read of the rows at ``x``, run by run of a block's scaled rows (a last run
    shorter than the others), against NumPy's separate losses, gradient and Hessian of the
    rows it names."""
    rng = np.random.default_rng(stride * 100 + block)
    A = rng.normal(size=(203, 5))
    b = np.sign(rng.normal(size=203))
    w = rng.uniform(0.0, 2.0, size=203)
    x = rng.normal(size=5)
    z = np.empty(203)
    loss, g, H, count = _logistic_start.newton_pass(A, b, w, x, stride, z,
                                                    np.empty((block, 5)))
    sl, sg, sH, size = _separate(A, b, w, x, stride)
    assert count == size and loss == pytest.approx(sl, rel=1e-12)
    np.testing.assert_allclose(g, sg, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(H, sH, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(z, A @ x, rtol=1e-13, atol=1e-13)


def _count_reads(monkeypatch, scaled=None):
    """A list that receives the rows each call of the Newton kernel reads (and ``scaled``,
    the rows of the Hessian it scaled)."""
    from ooc_kernels.families.dspdc import kernels_newton

    reads, real = [], kernels_newton.logistic_rows

    def counted(rows, lo, hi, *args):
        reads.append(hi - lo)
        out = real(rows, lo, hi, *args)
        if scaled is not None:
            scaled.append(out[1])
        return out

    monkeypatch.setattr(kernels_newton, "logistic_rows", counted)
    return reads


@pytest.mark.parametrize("weighted", [False, True])
def test_a_full_newton_step_reads_the_rows_once(weighted, monkeypatch):
    """Every iteration whose full step is accepted reads each row once: the iterations and
    the pass at ``x = 0`` read ``(k + 1) n`` rows, and the margins handed back are ``A x``.
    The Hessians: of every 4th row far from the solution, then of every row, and none at the
    last pass (predicted the last by the quadratic rate)."""
    scaled = []
    reads = _count_reads(monkeypatch, scaled)
    rng = np.random.default_rng(1)
    n, p = 3000, 6
    A = np.column_stack([rng.normal(size=(n, p - 1)), np.ones(n)])
    b = np.sign(A @ rng.normal(size=p) + rng.normal(size=n))
    w = rng.uniform(0.0, 2.0, size=n) if weighted else None
    margins = np.empty(n)
    x, k = _logistic_start.logistic_newton(A, b, w, 1e-3, 1e-12, margins=margins)
    assert k >= 4
    assert sum(reads) == (k + 1) * n
    assert scaled[0] == n // 4 and scaled[-2] == n and scaled[-1] == 0
    np.testing.assert_allclose(margins, A @ x, rtol=1e-12, atol=1e-12)
    ref, _ = _reference(A, b, np.ones(n) if w is None else w, 1e-3)
    np.testing.assert_allclose(x, ref, rtol=1e-6, atol=1e-7)


def test_newton_start_backtracks_where_a_full_step_would_raise_the_objective(monkeypatch):
    """A problem (a tenth of the rows 20 times longer, labels noisy) where the pure Newton
    iteration raises ``P`` at its fourth step: the backtracking keeps ``P`` from increasing
    at every iteration and the start is scipy's minimizer."""
    rng = np.random.default_rng(15)
    n, p = 40, 2
    A = rng.normal(size=(n, p)) * rng.choice([1, 20], size=(n, 1), p=[0.9, 0.1])
    b = np.sign(rng.normal(size=n) + A[:, 0])
    lam2 = 1e-4

    def P(v):
        return np.logaddexp(0.0, -b * (A @ v)).mean() + 0.5 * lam2 * v @ v

    x = np.zeros(p)
    for k in range(4):          # the pure Newton steps, in NumPy: the fourth raises P
        s = expit(-b * (A @ x))
        H = (A * (s * (1 - s))[:, None]).T @ A / n + lam2 * np.eye(p)
        step = np.linalg.solve(H, A.T @ (-b * s) / n + lam2 * x)
        assert (P(x - step) > P(x)) == (k == 3)
        x = x - step
    values = [P(_logistic_start.logistic_newton(A, b, None, lam2, 1e-14, max_iter=k)[0])
              for k in range(12)]
    assert all(later <= earlier for earlier, later in zip(values, values[1:]))
    ref, _ = _reference(A, b, np.ones(n), lam2)
    reads = _count_reads(monkeypatch)
    x, k = _logistic_start.logistic_newton(A, b, None, lam2, 1e-14)
    np.testing.assert_allclose(x, ref, rtol=1e-6, atol=1e-6)
    # a rejected full step costs one more read: the pass at the step taken
    assert (k + 1) * n < sum(reads) <= (2 * k + 1) * n


def test_newton_start_stops_at_the_tolerance_and_refuses_values_that_are_not_finite():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(300, 3))
    b = np.sign(A[:, 0] + rng.normal(size=300))
    loose, k_loose = _logistic_start.logistic_newton(A, b, None, 1e-2, 1e-2)
    tight, k_tight = _logistic_start.logistic_newton(A, b, None, 1e-2, 1e-12)
    assert k_loose < k_tight
    A[3, 1] = np.inf
    assert _logistic_start.logistic_newton(A, b, None, 1e-2, 1e-6)[0] is None


@pytest.mark.parametrize("weighted", [False, True])
def test_logistic_memory_start_is_the_duals_optimal_for_x0(weighted):
    """The non-fused tasks' start: ``A^T (w y)`` and ``sum w phi*(y)`` of ``y = phi'(A x_0)``
    in NumPy."""
    rng = np.random.default_rng(3)
    A = rng.normal(size=(400, 4))
    b = np.sign(A @ [1.0, -1.0, 0.5, 2.0] + rng.normal(size=400))
    w = rng.uniform(0.0, 2.0, size=400) if weighted else None
    ww = np.ones(400) if w is None else w
    start = _memory_start.logistic_memory_start(A, b, w, 0.01, 1e-14)
    x0 = np.asarray(start["start_x"])
    y = -b * expit(-b * (A @ x0))
    np.testing.assert_allclose(start["start_w"], A.T @ (ww * y), rtol=1e-12, atol=1e-14)
    assert start["start_conj"] == pytest.approx(np.sum(ww * _conjugate(y, b)), rel=1e-12)
    ref, _ = _reference(A, b, ww, 0.01)
    np.testing.assert_allclose(x0, ref, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("weighted", [False, True])
def test_the_fused_tasks_start_at_the_logistic_duals(weighted, monkeypatch):
    """The duals, conjugates and chunk products the fused tasks hold at the start are those
    of ``y = phi'(A x_0)`` in NumPy, and the state's ``w`` and ``sum w phi*`` their sums."""
    X, y, w = _data(seed=4)
    sw = w if weighted else None
    est = ok.DSPDCClassifier(alpha=1e-2, tol=None, max_iter=1, chunk_size=150,
                             random_state=0, progress=False)
    tasks = record_start(monkeypatch)
    est.fit(X, y, sample_weight=sw)
    duals, conj, products, tdual, state = tasks[0]
    cfg = est._config
    A, b = solver_rows(est, X), np.where(y == 1, 1.0, -1.0)
    ww = np.ones(len(y)) if sw is None else sw * len(y) / sw.sum()
    x0 = np.asarray(cfg.start_x)
    np.testing.assert_allclose(duals, -b * expit(-b * (A @ x0)), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(conj, _conjugate(duals, b), rtol=1e-10, atol=1e-14)
    assert np.isnan(tdual).all()           # their t unknown: the first steps take the log
    for c in range(4):
        lo, hi = 150 * c, 150 * (c + 1)
        np.testing.assert_allclose(products[c], A[lo:hi].T @ (ww[lo:hi] * duals[lo:hi]),
                                   rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(state.w, products.sum(axis=0), rtol=1e-12, atol=1e-12)
    assert state.conj_sum == pytest.approx(np.sum(ww * conj), rel=1e-12)
    np.testing.assert_array_equal(state.x, cfg.start_x)
    ref, _ = _reference(A, b, ww, cfg.lam2)      # tol None: the start to a gap of 1e-10
    np.testing.assert_allclose(x0, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("weights", ["none", "sample", "class"])
@pytest.mark.parametrize("m", [1, 2])
def test_logistic_in_memory_is_certified_at_its_start(weights, m, monkeypatch):
    """The logistic loss starts at Newton's solution: the first task sums the start's losses,
    certifies it and runs no iterations (the fused tasks with ``m = 1``, the solver's task
    with ``m = 2``); one epoch, one gap, scipy's minimizer of the weighted objective."""
    iterations = round_iterations(monkeypatch)
    X, y, w = _data(seed=5)
    sw = w if weights == "sample" else None
    cw = {0: 1.0, 1: 3.0} if weights == "class" else None
    est = ok.DSPDCClassifier(alpha=1e-3, m=m, tol=1e-8, max_iter=30, chunk_size=200,
                             class_weight=cw, random_state=0,
                             progress=False).fit(X, y, sample_weight=sw)
    assert est._config.start_x is not None
    assert est.stop_reason_.startswith("tol") and est.n_iter_ == 1
    (entry,) = est.gap_history_
    assert entry["iterations"] == 0 and entry["passes"] == 0.0 and iterations == [0]
    assert entry["relative_gap"] <= 1e-8
    n = len(y)
    if sw is not None:
        ww = sw * n / sw.sum()
    elif cw is not None:
        ww = np.where(y == 1, 3.0, 1.0)
        ww = ww * n / ww.sum()
    else:
        ww = np.ones(n)
    A, b = solver_rows(est, X), np.where(y == 1, 1.0, -1.0)
    ref, P = _reference(A, b, ww, 1e-3)
    x = solver_x(est)
    assert P(x) - P(ref) <= 1e-8 * P(ref)
    assert entry["primal"] == pytest.approx(P(x), rel=1e-12)
    np.testing.assert_allclose(x, ref, rtol=1e-3, atol=1e-4)


def test_breast_cancer_is_certified_at_1e4_within_20_passes(monkeypatch):
    """scikit-learn's breast cancer (569 x 30, raw columns, the defaults): Newton's
    iterations (one Hessian pass each) and the fit's pass that sums the start's losses
    certify ``1e-4`` in at most 20 passes, with no DSPDC iteration."""
    from sklearn.datasets import load_breast_cancer

    runs = []
    real = _logistic_start.logistic_newton

    def counted(*args, **kwargs):
        x, k = real(*args, **kwargs)
        runs.append(k)
        return x, k

    monkeypatch.setattr(_logistic_start, "logistic_newton", counted)
    X, y = load_breast_cancer(return_X_y=True)
    est = ok.DSPDCClassifier(tol=1e-4, random_state=0, progress=False).fit(X, y)
    assert est.stop_reason_.startswith("tol")
    (entry,) = est.gap_history_
    assert entry["iterations"] == 0 and entry["relative_gap"] <= 1e-4
    assert len(runs) == 1 and runs[0] + 1 <= 20
    A, b = solver_rows(est, X), np.where(y == 1, 1.0, -1.0)
    ref, P = _reference(A, b, np.ones(len(y)), est._config.lam2)
    assert P(solver_x(est)) - P(ref) <= 1e-4 * P(ref)


def test_no_logistic_start_with_an_l1_part():
    X, y, _ = _data(seed=6)
    clf = ok.DSPDCClassifier(alpha=1e-2, l1_ratio=0.5, tol=1e-4, random_state=0,
                             progress=False)
    assert clf.fit(X, y)._config.start_x is None


@pytest.mark.parametrize("start", [True, False])
def test_tiny_and_huge_columns_raise_the_same_errors_with_or_without_the_start(start,
                                                                              monkeypatch):
    """Columns whose squares underflow or overflow float64: the same library errors with the
    start and from the zero start (the set-up refuses them before the start); tiny raw
    columns (``standardize=False``) are fitted to ``tol`` either way."""
    if not start:
        monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    X, y, _ = _data(seed=7)
    kw = dict(alpha=1e-3, tol=1e-8, random_state=0, progress=False)
    with pytest.raises(InvalidDataError, match="underflow float64"):
        ok.DSPDCClassifier(**kw).fit(X * 1e-160, y)
    with pytest.raises(InvalidDataError, match="overflow float64"):
        ok.DSPDCClassifier(**kw).fit(X * 1e155, y)
    with pytest.raises(ValidationError, match="non-finite values"):
        ok.DSPDCClassifier(standardize=False, **kw).fit(X * 1e155, y)
    tiny = ok.DSPDCClassifier(standardize=False, **kw).fit(X * 1e-160, y)
    assert (tiny._config.start_x is not None) == start
    assert tiny.stop_reason_.startswith("tol")
    assert tiny.gap_history_[-1]["relative_gap"] <= 1e-8
