"""The DSPDC baselines of the paper's Section 6: SPDC and mini-batch prox-SDCA.

* SDCA's duality gap goes to zero for every loss, with l2 and with elastic net, dense and
  factorized;
* SDCA's objective matches scikit-learn's solution (Ridge, ElasticNet, LogisticRegression)
  on the same problem to 1e-6 relative;
* SPDC is DSPDC with ``q = p``: its iterates are those of the plain-NumPy oracle
  :func:`~ooc_kernels.families.dspdc.in_memory.paper.dspdc_reference` run with ``q = p`` on the same
  random stream;
* the numba kernels equal their NumPy twins.
"""

import numpy as np
import pytest
from sklearn.linear_model import ElasticNet, LogisticRegression, Ridge

from ooc_kernels.families.dspdc.in_memory.kernels_sdca import (
    primal_from_dual,
    primal_from_dual_ref,
    sdca_dense_iterations,
    sdca_dense_iterations_ref,
    sdca_factorized_iterations,
    sdca_factorized_iterations_ref,
)
from ooc_kernels.exceptions import DivergenceError, ValidationError
from ooc_kernels.families.dspdc.in_memory.baselines import dspdc_solve, objective_values, sdca, spdc
from ooc_kernels.families.dspdc.in_memory.paper import dspdc_reference, primal_value
from ooc_kernels.losses import get_loss

LOSSES = ["squared", "smoothed_hinge", "logistic"]


class _F:
    def __init__(self, U, V):
        self.U, self.V = U, V


def _problem(loss, n=150, p=8, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, p))
    t = A @ rng.normal(size=p) + 0.5 * rng.normal(size=n)
    return A, (t if loss == "squared" else np.where(t > 0, 1.0, -1.0))


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("lam1", [0.0, 0.02])
@pytest.mark.parametrize("m", [1, 4])
def test_sdca_gap_goes_to_zero(loss, lam1, m):
    A, b = _problem(loss)
    res = sdca(A, b, loss=loss, lam1=lam1, lam2=0.05, m=m, tol=1e-11, max_epochs=400)
    gaps = [h["gap"] for h in res.history]
    assert res.stop_reason.startswith("tol:"), res.stop_reason
    assert gaps[0] > 1e-3 and gaps[-1] <= 1e-11
    # the gap certifies the primal: the history's dual values never decrease (prox-SDCA with
    # nu = m is a dual ascent method)
    duals = [h["dual"] for h in res.history]
    assert np.all(np.diff(duals) >= -1e-12)
    # x is x(y) = grad g*(-A^T y / n), and P, D are the oracle's
    P, D = objective_values(A, b, res.x, res.y, loss=loss, lam1=lam1, lam2=0.05)
    assert P == pytest.approx(res.history[-1]["primal"], rel=1e-12)
    w = -(A.T @ res.y) / len(b)
    np.testing.assert_allclose(res.x, np.sign(w) * np.maximum(np.abs(w) - lam1, 0) / 0.05,
                               atol=1e-12)


@pytest.mark.parametrize("loss", LOSSES)
def test_sdca_factorized_gap_goes_to_zero_and_matches_dense(loss):
    rng = np.random.default_rng(3)
    U, V = rng.normal(size=(120, 4)), rng.normal(size=(4, 15)) / 2
    A = U @ V
    b = A @ rng.normal(size=15)
    b = b if loss == "squared" else np.where(b > 0, 1.0, -1.0)
    kw = dict(loss=loss, lam1=0.01, lam2=0.05, m=2, max_epochs=300, seed=5)
    fac = sdca(_F(U, V), b, tol=1e-10, **kw)
    assert fac.stop_reason.startswith("tol:")
    dense = sdca(A, b, tol=None, **{**kw, "max_epochs": fac.n_iter * 2 / len(b)})
    # same stream, same iterations: the same iterates up to rounding
    np.testing.assert_allclose(fac.y, dense.y, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(fac.x, dense.x, rtol=1e-7, atol=1e-9)


def _sdca_solution(A, b, loss, lam1, lam2):
    res = sdca(A, b, loss=loss, lam1=lam1, lam2=lam2, tol=1e-13, max_epochs=3000,
               eval_every=5)
    assert res.stop_reason.startswith("tol:"), res.stop_reason
    return res.x


def test_sdca_matches_sklearn_ridge():
    A, b = _problem("squared", n=200, p=10, seed=1)
    n, alpha = len(b), 0.03
    x = _sdca_solution(A, b, "squared", 0.0, alpha)
    # Ridge: ||b - A w||^2 + a ||w||^2 = 2 n P(w) with a = n alpha
    ref = Ridge(alpha=n * alpha, fit_intercept=False).fit(A, b).coef_
    p_sdca = primal_value(A, b, x, loss="squared", lam1=0.0, lam2=alpha)
    p_ref = primal_value(A, b, ref, loss="squared", lam1=0.0, lam2=alpha)
    assert abs(p_sdca - p_ref) <= 1e-6 * abs(p_ref)
    np.testing.assert_allclose(x, ref, atol=1e-5)
    # the closed form, independently
    np.testing.assert_allclose(ref, np.linalg.solve(A.T @ A + n * alpha * np.eye(10), A.T @ b),
                               atol=1e-10)


def test_sdca_matches_sklearn_elastic_net():
    A, b = _problem("squared", n=200, p=10, seed=2)
    alpha, l1_ratio = 0.05, 0.5
    lam1, lam2 = alpha * l1_ratio, alpha * (1 - l1_ratio)
    x = _sdca_solution(A, b, "squared", lam1, lam2)
    # ElasticNet: (1/2n) ||b - A w||^2 + alpha l1_ratio |w|_1 + alpha (1 - l1_ratio)/2 |w|^2
    ref = ElasticNet(alpha=alpha, l1_ratio=l1_ratio, fit_intercept=False, tol=1e-14,
                     max_iter=100_000).fit(A, b).coef_
    p_sdca = primal_value(A, b, x, loss="squared", lam1=lam1, lam2=lam2)
    p_ref = primal_value(A, b, ref, loss="squared", lam1=lam1, lam2=lam2)
    assert abs(p_sdca - p_ref) <= 1e-6 * abs(p_ref)
    np.testing.assert_allclose(x, ref, atol=1e-5)


def test_sdca_matches_sklearn_logistic():
    A, b = _problem("logistic", n=200, p=10, seed=4)
    n, alpha = len(b), 0.02
    x = _sdca_solution(A, b, "logistic", 0.0, alpha)
    # LogisticRegression: C sum_i log(1 + exp(-b_i a_i^T w)) + |w|^2 / 2 = C n P(w)
    ref = LogisticRegression(C=1.0 / (n * alpha), fit_intercept=False, tol=1e-12,
                             max_iter=10_000).fit(A, b).coef_.ravel()
    p_sdca = primal_value(A, b, x, loss="logistic", lam1=0.0, lam2=alpha)
    p_ref = primal_value(A, b, ref, loss="logistic", lam1=0.0, lam2=alpha)
    assert abs(p_sdca - p_ref) <= 1e-6 * abs(p_ref)
    np.testing.assert_allclose(x, ref, atol=1e-4)


@pytest.mark.parametrize("loss", LOSSES)
def test_spdc_is_dspdc_with_q_equal_p(loss):
    A, b = _problem(loss, n=60, p=7, seed=6)
    m, lam1, lam2, epochs = 3, 0.01, 0.1, 5
    res = spdc(A, b, loss=loss, lam1=lam1, lam2=lam2, m=m, max_epochs=epochs, seed=11,
               eval_every=epochs)
    assert res.params["q"] == A.shape[1]
    T = res.n_iter
    row_u = np.random.default_rng(11).random((T, m))
    x, y = dspdc_reference(A, b, loss=loss, lam1=lam1, lam2=lam2, m=m, q=A.shape[1],
                           theta=res.params["theta"], tau=res.params["tau"],
                           sigma=res.params["sigma"], n_iter=T, seed=0,
                           uniforms=(row_u, np.zeros((T, A.shape[1]))))
    np.testing.assert_allclose(res.x, x, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(res.y, y, rtol=1e-9, atol=1e-11)
    # the parameters are DSPDC's at q = p, and a DSPDC run with q = p has the same ones
    full = dspdc_solve(A, b, loss=loss, lam1=lam1, lam2=lam2, m=m, q=A.shape[1],
                       max_epochs=1)
    for key in ("Lambda", "theta", "tau", "sigma"):
        assert full.params[key] == res.params[key]


def test_dspdc_solve_follows_the_reference_and_converges():
    A, b = _problem("logistic", n=50, p=9, seed=8)
    res = dspdc_solve(A, b, loss="logistic", lam1=0.01, lam2=0.1, m=2, q=3, max_epochs=4,
                      seed=2, eval_every=4)
    x, y = dspdc_reference(A, b, loss="logistic", lam1=0.01, lam2=0.1, m=2, q=3,
                           theta=res.params["theta"], tau=res.params["tau"],
                           sigma=res.params["sigma"], n_iter=res.n_iter, seed=2)
    np.testing.assert_allclose(res.x, x, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(res.y, y, rtol=1e-9, atol=1e-11)
    rng = np.random.default_rng(0)
    U, V = rng.normal(size=(100, 3)), rng.normal(size=(3, 12))
    bf = np.where(U @ V @ rng.normal(size=12) > 0, 1.0, -1.0)
    fac = dspdc_solve(_F(U, V), bf, loss="smoothed_hinge", lam1=1e-3, lam2=1e-2, q=4,
                      tol=1e-9, max_epochs=2000, eval_every=10)
    assert fac.stop_reason.startswith("tol:"), fac.stop_reason
    P, D = objective_values(U @ V, bf, fac.x, fac.y, loss="smoothed_hinge", lam1=1e-3,
                            lam2=1e-2)
    assert P - D <= 1e-9 and P == pytest.approx(fac.history[-1]["primal"], rel=1e-10)


@pytest.mark.parametrize("loss", LOSSES)
def test_sdca_kernels_equal_numpy_twins(loss):
    rng = np.random.default_rng(9)
    n, p, d, m = 40, 6, 3, 3
    U, V = rng.normal(size=(n, d)), rng.normal(size=(d, p))
    A = U @ V
    b = A @ rng.normal(size=p)
    b = b if loss == "squared" else np.where(b > 0, 1.0, -1.0)
    lid = get_loss(loss).loss_id
    sigmas = 0.05 * n * n / (m * np.einsum("ij,ij->i", A, A))
    uni = rng.random((200, m))
    out = []
    for fn in (sdca_dense_iterations, sdca_dense_iterations_ref):
        y, x, w = np.zeros(n), np.zeros(p), np.zeros(p)
        fn(A, b, y, x, w, n, uni, m, lid, 0.01, 0.05, sigmas)
        out.append((y, x, w))
    for a, r in zip(*out):
        np.testing.assert_allclose(a, r, rtol=1e-10, atol=1e-12)
    assert np.abs(out[0][0]).max() > 0.01                 # the duals did move
    fout = []
    for fn in (sdca_factorized_iterations, sdca_factorized_iterations_ref):
        y, x, u, v = np.zeros(n), np.zeros(p), np.zeros(d), np.zeros(d)
        fn(U, V, b, y, x, u, v, n, uni, m, lid, 0.01, 0.05, sigmas)
        fout.append((y, x, u, v))
    for a, r in zip(*fout):
        np.testing.assert_allclose(a, r, rtol=1e-9, atol=1e-11)
    # factorized on U, V = dense on A = U V
    np.testing.assert_allclose(fout[0][0], out[0][0], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(fout[0][1], out[0][1], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(fout[0][3], V @ fout[0][1], rtol=1e-9, atol=1e-11)


def test_primal_from_dual_is_the_soft_threshold():
    w = np.linspace(-5, 5, 41)
    got = np.array([primal_from_dual(v, 2, 1.0, 0.5) for v in w])
    expected = np.sign(-w / 2) * np.maximum(np.abs(w / 2) - 1.0, 0) / 0.5
    np.testing.assert_array_equal(got, primal_from_dual_ref(w, 2, 1.0, 0.5))
    np.testing.assert_allclose(got, expected, atol=1e-15)


def test_errors():
    A, b = _problem("logistic", n=20, p=3)
    with pytest.raises(ValidationError, match=r"lam2 > 0"):
        sdca(A, b, loss="logistic", lam1=0.0, lam2=0.0)
    with pytest.raises(ValidationError, match=r"labels in \{-1, \+1\}"):
        sdca(A, b + 1.0, loss="logistic", lam1=0.0, lam2=0.1)
    with pytest.raises(ValidationError, match=r"1 <= m <= n = 20"):
        sdca(A, b, loss="logistic", lam1=0.0, lam2=0.1, m=21)
    with pytest.raises(ValidationError, match=r"unknown DSPDC loss"):
        spdc(A, b, loss="hinge", lam1=0.0, lam2=0.1)
    with pytest.raises(ValidationError, match=r"1 <= q <= p = 3"):
        dspdc_solve(A, b, loss="logistic", lam1=0.0, lam2=0.1, q=4)
    with pytest.raises(ValidationError, match=r"U must be \(n, d\) and V \(d, p\)"):
        sdca(_F(np.ones((20, 2)), np.ones((3, 3))), b, loss="logistic", lam1=0.0, lam2=0.1)
    with pytest.raises(ValidationError, match=r"SDCA iterations: sigmas"):
        sdca_dense_iterations(A, b, np.zeros(20), np.zeros(3), np.zeros(3), 20,
                              np.zeros((1, 1)), 1, 2, 0.0, 0.1, np.ones(3))
    with pytest.raises(DivergenceError, match=r"spdc diverged after \d+ iterations"):
        spdc(A, A @ np.ones(3), loss="squared", lam1=0.0, lam2=0.1, tau=1e3, sigma=1e3,
             max_epochs=200)
