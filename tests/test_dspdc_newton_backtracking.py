"""The one Armijo backtracking of every logistic Newton start
(``families/dspdc/_logistic_start.armijo_step``): in memory in the ``p``-space
(``logistic_newton``), in the ``n``-space (``_wide_newton.wide_newton``) and out of core
(``_ooc_newton.newton_passes``).  The helper takes the largest halving of the step that
meets Armijo's rule (against a brute-force search), every start halves its steps through
it, and each start's solution matches scipy's ``minimize`` on problems whose full steps are
rejected."""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.datasets import make_classification

from ooc_kernels.families.dspdc import _logistic_start, _ooc_newton


def _objective(A, b, w, lam2):
    """``P`` and its gradient: ``sum_i w_i log(1 + exp(-b_i a_i^T x)) / n + lam2 |x|^2 / 2``."""
    n = len(b)
    w = np.ones(n) if w is None else w

    def P(x):
        z = A @ x
        value = float(w @ np.logaddexp(0.0, -b * z)) / n + 0.5 * lam2 * float(x @ x)
        return value, A.T @ (w * -b * expit(-b * z)) / n + lam2 * x
    return P


def _reference(A, b, w, lam2):
    """scipy's L-BFGS-B solution of ``P`` (gradient tolerance 1e-12)."""
    res = minimize(_objective(A, b, w, lam2), np.zeros(A.shape[1]), jac=True,
                   method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 0.0, "maxiter": 20000})
    return res.x


def test_the_step_is_the_largest_halving_that_meets_armijos_rule():
    """Against a brute-force search over ``1, 1/2, ..., 2^-39`` on random one-dimensional
    problems, and None where no step decreases enough."""
    rng = np.random.default_rng(0)
    ARMIJO = _logistic_start.ARMIJO
    for _ in range(200):
        a, c = rng.uniform(0.1, 50.0), rng.uniform(-3.0, 3.0)

        def f(s, a=a, c=c):
            return a * (s - c) ** 2

        P, decrease = f(0.0), 2.0 * a * c   # the slope -2 a c along the step
        tried = []
        step = _logistic_start.armijo_step(lambda s: tried.append(s) or f(s), P, decrease)
        meets = [0.5 ** k for k in range(_logistic_start.MAX_HALVINGS)
                 if f(0.5 ** k) <= P - ARMIJO * 0.5 ** k * decrease]
        assert step == (meets[0] if meets else None)
        assert tried == [0.5 ** k for k in range(len(tried))]   # in order, none skipped


def _hard_wide(seed=5):
    """60 weighted rows of 130 columns on scales 0.1 .. 1000, two rows 10 times larger."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(60, 130)) * 10.0 ** rng.uniform(-1, 3, size=130)
    A[:2] *= 10.0
    b = np.where(rng.random(60) < 0.9, 1.0, -1.0)
    return A, b, rng.uniform(0, 3, size=60)


def _close(A, b, w, lam2, x):
    """``x`` and scipy's solution lie within the sum of their strong-convexity bounds
    ``||grad P|| / lam2`` of each other, a bound below 1e-4 of the solution's norm."""
    ref = _reference(A, b, w, lam2)
    P = _objective(A, b, w, lam2)
    bound = (np.linalg.norm(P(x)[1]) + np.linalg.norm(P(ref)[1])) / lam2
    assert np.linalg.norm(x - ref) <= bound < 1e-4 * np.linalg.norm(ref)


def test_every_newton_start_backtracks_through_the_one_helper(monkeypatch):
    """In memory in the ``p``-space and the ``n``-space and out of core (from a far start),
    on problems whose full steps are rejected: each start halves its steps through
    ``armijo_step``, and its solution matches scipy's."""
    from ooc_kernels.families.dspdc._wide_newton import wide_newton

    real, halved = _logistic_start.armijo_step, []

    def counted(value_at, P, decrease):
        step = real(value_at, P, decrease)
        if step is not None and step < 1.0:
            halved.append(step)
        return step

    monkeypatch.setattr(_logistic_start, "armijo_step", counted)
    found = {}
    # the p-space in memory: standardized rows, labels almost separable, a small lam2
    X, y = make_classification(n_samples=400, n_features=5, n_informative=4, n_redundant=0,
                               class_sep=2.0, random_state=16)
    A = np.column_stack([(X - X.mean(0)) / X.std(0), np.ones(len(y))])
    b, lam2 = np.where(y == 1, 1.0, -1.0), 1e-4
    x, _ = _logistic_start.logistic_newton(A, b, None, lam2, 1e-12)
    found["p"] = (len(halved), (A, b, None, lam2, x))
    # the n-space: columns on scales 0.1 .. 1000
    Aw, bw, ww = _hard_wide()
    x, _ = wide_newton(Aw, bw, ww, 1e-2, 1e-12)
    found["n"] = (len(halved), (Aw, bw, ww, 1e-2, x))
    # out of core, in 3 chunks, from a point far from the solution
    Ao, bo, x0, cfg, parts = _far_ooc_problem(5, 3.0)
    found_o = _ooc_newton.newton_passes(cfg, parts, lambda f: f, lambda r: r, 300, 1e-3,
                                        1e-12, x0=x0)
    x, fields = found_o[0], found_o[1]
    assert fields
    found["o"] = (len(halved), (Ao, bo, None, 1e-3, x))
    counts = [found[k][0] for k in "pno"]
    assert 0 < counts[0] < counts[1] < counts[2]      # each start halved some steps
    for _, problem in found.values():
        _close(*problem)


def _far_ooc_problem(seed, far):
    """300 rows of 4 columns on scales 1 .. 100 in 3 chunks of the out-of-core passes, their
    configuration, and a start ``far`` times a typical coefficient away from 0."""
    from types import SimpleNamespace

    rng = np.random.default_rng(seed)
    A = rng.normal(size=(300, 4)) * 10.0 ** rng.uniform(0, 2, size=4)
    b = np.sign(A @ rng.normal(size=4) + 0.3 * rng.normal(size=300))
    x0 = rng.normal(size=4) * far / np.abs(A).mean(axis=0)
    cfg = SimpleNamespace(x_shift=None, x_scale=None, factorized=False, intercept_scaling=0.0,
                          classes=(-1.0, 1.0))
    parts = [(A[k:k + 100], b[k:k + 100], None) for k in range(0, 300, 100)]
    return A, b, x0, cfg, parts


def test_the_passes_keep_the_sums_of_the_last_trial_only():
    """Out of core, from a start far from the solution (steps halved up to 10 times in an
    iteration): when a pass is read, at most two earlier passes' Hessians are alive, the
    point's and the last trial's, however many trials the backtracking makes (each ``p x
    p``, up to 512 x 512); and the solution is scipy's."""
    import weakref

    A, b, x0, cfg, parts = _far_ooc_problem(35, 30.0)
    held, alive = [], []

    def value(sums):
        alive.append(sum(h() is not None for h in held))
        if sums[4] is not None:
            held.append(weakref.ref(sums[4]))
        return sums

    x, fields, passes, _ = _ooc_newton.newton_passes(cfg, parts, lambda f: f, value, 300,
                                                     1e-3, 1e-12, x0=x0)
    assert fields and passes > 20 and max(alive) <= 2
    _close(A, b, None, 1e-3, x)
