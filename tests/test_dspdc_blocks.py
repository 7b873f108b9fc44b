"""Block DSPDC (``docs/specs/dspdc.md`` §4.1, 4.2, 7.3): block proxes, block Lambda, solver,
matrix risk.

Every oracle is independent of the code under test: proxes by their first-order optimality
conditions over the PSD cone and by brute-force minimization over ``Q = L L^T``, conjugates
by the Fenchel-Young equality at prox points and by brute-force maximization, ``Lambda`` by
enumerating block subsets with SVDs, the solver by the closed-form ridge solution and by
L-BFGS on the primal (PSD by the ``L L^T`` parametrization, no eigendecomposition).
"""

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar

from ooc_kernels.data.matrix_data import matrix_risk
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dspdc.in_memory.block_prox import L2Block, PSDBlock, SeparableLoss, psd_projection
from ooc_kernels.families.dspdc.in_memory.blocks import (
    block_dspdc,
    block_lambda,
    block_objectives,
    block_partition,
)
from ooc_kernels.families.dspdc.in_memory.matrix_risk import matrix_risk_dspdc


def _psd_case(rng, d, kind):
    center = {"none": None, "identity": "identity",
              "matrix": (lambda M: M @ M.T)(rng.normal(size=(d, d)))}[kind]
    linear = None if kind == "none" else rng.normal(size=(d, d))
    return PSDBlock(0.7, d, center=center, linear=linear)


def _smooth_part(g, Q, V, tau):
    """``lam/2 ||Q - C||^2 + <L, Q> + ||Q - V||^2 / (2 tau)`` and its gradient (no PSD)."""
    C = 0.0 if g.center is None else g.center
    L = 0.0 if g.linear is None else g.linear
    val = 0.5 * g.lam * np.sum((Q - C) ** 2) + np.sum(L * Q) + np.sum((Q - V) ** 2) / (2 * tau)
    return val, g.lam * (Q - C) + L + (Q - V) / tau


# ------------------------------------------------------------------------ block proxes

@pytest.mark.parametrize("kind", ["none", "identity", "matrix"])
@pytest.mark.parametrize("seed", [0, 1])
def test_psd_prox_satisfies_the_optimality_conditions_of_the_cone(kind, seed):
    # Q = argmin over the PSD cone of a smooth convex f iff Q is PSD, sym(grad f(Q)) is PSD
    # and <grad f(Q), Q> = 0 (the normal cone of the PSD cone at Q)
    rng = np.random.default_rng(seed)
    d, tau = 4, 0.9
    g = _psd_case(rng, d, kind)
    V = rng.normal(size=(d, d)) * 2.0          # not symmetric
    Q = g.prox(V.ravel(), tau).reshape(d, d)
    assert np.array_equal(Q, Q.T)
    assert np.linalg.eigvalsh(Q).min() > -1e-12
    assert np.linalg.eigvalsh(Q).min() < 1e-8 or kind == "matrix"   # the cone is active
    _, G = _smooth_part(g, Q, V, tau)
    assert np.linalg.eigvalsh(0.5 * (G + G.T)).min() > -1e-10
    assert abs(np.sum(G * Q)) < 1e-10


@pytest.mark.parametrize("kind", ["none", "identity", "matrix"])
def test_psd_prox_matches_a_brute_force_minimization_over_L_LT(kind):
    rng = np.random.default_rng(5)
    d, tau = 3, 1.3
    g = _psd_case(rng, d, kind)
    V = rng.normal(size=(d, d)) * 2.0

    def f(flat):
        L = flat.reshape(d, d)
        val, G = _smooth_part(g, L @ L.T, V, tau)
        return val, ((G + G.T) @ L).ravel()

    best = min((minimize(f, rng.normal(size=d * d), jac=True, method="L-BFGS-B",
                         options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 5000})
                for _ in range(3)), key=lambda r: r.fun)
    Lb = best.x.reshape(d, d)
    Q = g.prox(V.ravel(), tau).reshape(d, d)
    assert _smooth_part(g, Q, V, tau)[0] <= best.fun + 1e-10
    np.testing.assert_allclose(Q, Lb @ Lb.T, atol=1e-5)


@pytest.mark.parametrize("kind", ["none", "identity", "matrix"])
def test_psd_conjugate_fenchel_young(kind):
    rng = np.random.default_rng(7)
    d, tau = 4, 0.6
    g = _psd_case(rng, d, kind)
    for _ in range(5):
        # at Q = prox(V), W = (V - Q)/tau is a subgradient of g at Q: equality
        V = rng.normal(size=(d, d)) * 3.0
        Q = g.prox(V.ravel(), tau)
        W = (V.ravel() - Q) / tau
        assert g.value(Q) + g.conjugate(W) == pytest.approx(W @ Q, abs=1e-9)
        # anywhere else: the inequality (Q' PSD, W' arbitrary)
        M = rng.normal(size=(d, d))
        Q2 = (M @ M.T).ravel()
        W2 = rng.normal(size=d * d) * 2.0
        assert g.value(Q2) + g.conjugate(W2) >= W2 @ Q2 - 1e-9


def test_psd_conjugate_matches_a_brute_force_maximization():
    rng = np.random.default_rng(8)
    d = 3
    g = _psd_case(rng, d, "identity")
    W = rng.normal(size=(d, d)) * 2.0

    def neg(flat):
        L = flat.reshape(d, d)
        Q = L @ L.T
        val, G = _smooth_part(g, Q, np.zeros((d, d)), np.inf)
        return -(np.sum(W * Q) - val), ((-(W - G) - (W - G).T) @ L).ravel()

    best = min((minimize(neg, rng.normal(size=d * d), jac=True, method="L-BFGS-B",
                         options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 5000})
                for _ in range(3)), key=lambda r: r.fun)
    assert g.conjugate(W.ravel()) == pytest.approx(-best.fun, abs=1e-7)


def test_psd_value_is_infinite_off_the_cone_and_projection_is_idempotent():
    g = PSDBlock(1.0, 2)
    assert g.value(np.array([1.0, 0.0, 0.0, -1e-3])) == np.inf
    assert g.value(np.array([1.0, 0.5, 0.0, 1.0])) == np.inf          # not symmetric
    P = psd_projection(np.array([[2.0, 3.0], [1.0, -4.0]]))
    np.testing.assert_allclose(psd_projection(P), P, atol=1e-14)


def test_l2_block_prox_and_conjugate():
    g = L2Block(0.3)
    v, tau = np.array([1.5, -2.0]), 0.8
    for k in range(2):
        ref = minimize_scalar(lambda a: 0.15 * a * a + (a - v[k]) ** 2 / (2 * tau)).x
        assert g.prox(v, tau)[k] == pytest.approx(ref, abs=1e-7)
    w = (v - g.prox(v, tau)) / tau
    assert g.value(g.prox(v, tau)) + g.conjugate(w) == pytest.approx(w @ g.prox(v, tau))


@pytest.mark.parametrize("loss, b", [("smoothed_hinge", 1.0), ("smoothed_hinge", -1.0),
                                     ("squared", 0.7), ("logistic", -1.0)])
def test_loss_prox_conjugate_by_brute_force(loss, b):
    f = SeparableLoss(loss, [b])
    for v in (-2.0, -0.4, 0.1, 1.5):
        eta = 0.7
        lo, hi = ((-5.0, 5.0) if loss == "squared" else sorted((0.0, -b)))
        # phi* on its domain from the definition sup_z beta z - phi(z), numerically
        def conj(beta):
            return -minimize_scalar(lambda z: -(beta * z - f.value(np.array([z]))),
                                    bounds=(-60, 60), method="bounded",
                                    options={"xatol": 1e-12}).fun
        ref = minimize_scalar(lambda beta: eta * conj(beta) + 0.5 * (beta - v) ** 2,
                              bounds=(lo, hi), method="bounded", options={"xatol": 1e-10}).x
        assert f.prox_conjugate(np.array([v]), eta)[0] == pytest.approx(ref, abs=1e-4)


# ------------------------------------------------------------------------ partitions, Lambda

def test_block_partition_rejects_what_is_not_a_partition():
    with pytest.raises(ValidationError, match="add up to 4"):
        block_partition([2, 2], 5)
    with pytest.raises(ValidationError, match="exactly once"):
        block_partition([[0, 1], [1, 2]], 3)
    with pytest.raises(ValidationError, match="integers >= 1"):
        block_partition([2, 0, 1], 3)


def _lambda_by_enumeration(A, rb, cb, m, q):
    best = 0.0
    for I in itertools.combinations(range(len(rb)), m):
        for J in itertools.combinations(range(len(cb)), q):
            sub = A[np.ix_(np.concatenate([rb[i] for i in I]),
                           np.concatenate([cb[j] for j in J]))]
            best = max(best, np.linalg.svd(sub, compute_uv=False)[0] ** 2)
    return best


@pytest.mark.parametrize("m, q", [(1, 1), (2, 1), (1, 2), (2, 2), (3, 3), (4, 3)])
def test_block_lambda_exact_and_upper_bound(m, q):
    rng = np.random.default_rng(m * 10 + q)
    rows, cols = [1, 2, 1, 2], [2, 1, 2]
    A = rng.normal(size=(6, 5))
    rb, cb = block_partition(rows, 6), block_partition(cols, 5)
    ref = _lambda_by_enumeration(A, rb, cb, m, q)
    assert block_lambda(A, m, q, "exact", row_blocks=rows, col_blocks=cols) == \
        pytest.approx(ref, rel=1e-10)
    upper = block_lambda(A, m, q, "upper_bound", row_blocks=rows, col_blocks=cols)
    assert upper >= ref * (1 - 1e-9)
    # never looser than the sum of the m q largest block norms, nor than ||A||_2^2
    norms = sorted((np.linalg.svd(A[np.ix_(r, c)], compute_uv=False)[0] ** 2
                    for r in rb for c in cb), reverse=True)
    assert upper <= sum(norms[:m * q]) * (1 + 1e-12)
    assert upper <= np.linalg.svd(A, compute_uv=False)[0] ** 2 * (1 + 1e-9)


def test_block_lambda_exact_refuses_large_enumerations():
    A = np.random.default_rng(0).normal(size=(30, 30))
    with pytest.raises(ValidationError, match="max_subsets"):
        block_lambda(A, 5, 5, "exact", col_blocks=[2] * 15)


# ------------------------------------------------------------------------ the solver

@pytest.mark.parametrize("rows, cols, m, q", [
    (None, [2, 3, 1], 3, 1),          # n/m >= p/q: A^T y is maintained
    ([2] * 6, [1, 2, 1, 2], 1, 2),    # n/m > p/q with dual blocks of size 2
    ([3, 3, 3, 3], None, 2, 1),       # n/m < p/q: A x is maintained
])
def test_block_dspdc_solves_ridge_with_blocks(rows, cols, m, q):
    # squared loss + l2: x* = (A^T A + n lam I)^{-1} A^T b, n = the number of DUAL BLOCKS
    rng = np.random.default_rng(3)
    A = rng.normal(size=(12, 6))
    b = rng.normal(size=12)
    lam = 0.2
    n_blocks = 12 if rows is None else len(rows)
    x_star = np.linalg.solve(A.T @ A + n_blocks * lam * np.eye(6), A.T @ b)
    res = block_dspdc(A, SeparableLoss("squared", b), L2Block(lam), row_blocks=rows,
                      col_blocks=cols, m=m, q=q, tol=1e-13, max_iter=200_000, seed=1)
    assert res.converged and res.stop_reason == "tol"
    assert res.params.n == n_blocks and res.params.m == m
    np.testing.assert_allclose(res.x, x_star, atol=1e-6)
    np.testing.assert_allclose(res.y, A @ x_star - b, atol=1e-5)    # y* = phi'(A x*)
    assert all(h["gap"] >= -1e-12 for h in res.history)


def test_block_dspdc_per_block_regularizers_and_max_iter():
    rng = np.random.default_rng(4)
    A = rng.normal(size=(10, 4))
    b = np.sign(rng.normal(size=10))
    lams = [0.1, 0.4]
    res = block_dspdc(A, SeparableLoss("smoothed_hinge", b), [L2Block(v) for v in lams],
                      col_blocks=[2, 2], m=2, q=1, tol=0.0, max_iter=50, seed=0)
    assert res.stop_reason == "max_iter" and res.n_iter == 50 and not res.converged
    assert res.params.lam == 0.1                      # min over the blocks
    P, D = block_objectives(A, res.x, res.y, SeparableLoss("smoothed_hinge", b),
                            [L2Block(v) for v in lams], col_blocks=[2, 2])
    ref_P = np.mean(np.maximum(0, 1 - b * (A @ res.x)) ** 2 / 2
                    * (b * (A @ res.x) > 0) + (0.5 - b * (A @ res.x)) * (b * (A @ res.x) <= 0)) \
        + 0.05 * res.x[:2] @ res.x[:2] + 0.2 * res.x[2:] @ res.x[2:]
    assert P == pytest.approx(ref_P, rel=1e-12) and P == res.primal and D == res.dual
    with pytest.raises(ValidationError, match="one regularizer per primal block"):
        block_dspdc(A, SeparableLoss("smoothed_hinge", b), [L2Block(1.0)] * 3,
                    col_blocks=[2, 2])
    with pytest.raises(ValidationError, match="tol must be a number >= 0; got 'x'"):
        block_dspdc(A, SeparableLoss("smoothed_hinge", b), L2Block(1.0), tol="x")
    with pytest.raises(ValidationError, match=r"m must be an integer in \[1, 10\]"):
        block_dspdc(A, SeparableLoss("smoothed_hinge", b), L2Block(1.0), m=11)


# ------------------------------------------------------------------------ matrix risk

def _smoothed_hinge(z, b):
    s = b * z
    val = np.where(s >= 1, 0.0, np.where(s <= 0, 0.5 - s, 0.5 * (1 - s) ** 2))
    der = np.where(s >= 1, 0.0, np.where(s <= 0, -b, -b * (1 - s)))
    return val, der


def _matrix_risk_reference(D, b, lam):
    """L-BFGS on the primal (30) over X_j = L_j L_j^T: PSD without any eigendecomposition."""
    n, p, d, _ = D.shape

    def f(flat):
        L = flat.reshape(p, d, d)
        X = L @ L.transpose(0, 2, 1)
        z = np.einsum("ijkl,jkl->i", D, X)
        val, der = _smoothed_hinge(z, b)
        G = np.einsum("i,ijkl->jkl", der, D) / n + lam * X
        return val.mean() + lam / 2 * np.sum(X * X), \
            ((G + G.transpose(0, 2, 1)) @ L).ravel()

    rng = np.random.default_rng(0)
    r = minimize(f, rng.normal(size=p * d * d) * 0.3, jac=True, method="L-BFGS-B",
                 options={"gtol": 1e-13, "ftol": 1e-16, "maxiter": 20000, "maxcor": 30})
    L = r.x.reshape(p, d, d)
    return L @ L.transpose(0, 2, 1), r.fun


def test_matrix_risk_generator_follows_the_spec_reading():
    D, b = matrix_risk(200, 3, 4, seed=2)
    assert D.shape == (200, 3, 4, 4)
    assert abs(D.mean()) < 0.02 and abs(D.std() - 1.0) < 0.02
    expected = np.sign(sum(np.trace(D[:, j], axis1=1, axis2=2) for j in range(3)))
    np.testing.assert_array_equal(b, expected)
    assert 0.3 < np.mean(b == 1) < 0.7
    np.testing.assert_array_equal(matrix_risk(200, 3, 4, seed=2)[0], D)


def test_matrix_risk_gap_to_zero_matches_an_independent_solution_and_stays_psd():
    D, b = matrix_risk(40, 4, 5, seed=0)
    lam = 0.1
    min_eig = []

    def watch(t, x, y):
        if t % 97 == 0:
            min_eig.append(np.linalg.eigvalsh(x.reshape(4, 5, 5)).min())

    X, res = matrix_risk_dspdc(D, b, lam, m=4, q=1, tol=1e-10, max_iter=100_000, seed=3,
                               callback=watch)
    assert res.converged and res.gap <= 1e-10
    assert min(h["gap"] for h in res.history) >= -1e-12
    assert len(min_eig) > 10 and min(min_eig) > -1e-12                 # every iterate PSD
    np.testing.assert_array_equal(X, np.transpose(X, (0, 2, 1)))
    X_ref, P_ref = _matrix_risk_reference(D, b, lam)
    z = np.einsum("ijkl,jkl->i", D, X)
    P = _smoothed_hinge(z, b)[0].mean() + lam / 2 * np.sum(X * X)
    assert P == pytest.approx(res.primal, rel=1e-12)                    # its own value, checked
    assert P <= P_ref + 1e-9                          # at least as good as L-BFGS
    assert res.dual <= P_ref + 1e-12                  # weak duality against the reference
    np.testing.assert_allclose(X, X_ref, atol=2e-4)
    # the PSD constraint is active: some eigenvalues sit at 0
    assert np.linalg.eigvalsh(X).min() < 1e-10


def test_matrix_risk_rejects_bad_shapes():
    with pytest.raises(ValidationError, match=r"\(n, p, d, d\)"):
        matrix_risk_dspdc(np.zeros((3, 2, 2, 3)), np.ones(3))
    with pytest.raises(ValidationError, match="one label per sample"):
        matrix_risk_dspdc(np.zeros((3, 2, 2, 2)), np.ones(4))
