"""The Gaussian kernel's Taylor basis against its closed forms (Lemmas 11-13 of the paper).

Oracles: the exact Gaussian kernel, the degree-``j`` closed form ``Q_j(x, x') =
exp(-(||x||^2 + ||x'||^2) / 2 sigma^2) (x . x' / sigma^2)^j / j!`` (multinomial theorem),
Lemma 13's truncation bound, a brute-force enumeration of the multi-indices, and the
features computed from their product formula (``transform_ref``).
"""

import itertools
import math

import numpy as np
import pytest

from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.pkawv.kernels_taylor import taylor_features, taylor_features_ref
from ooc_kernels.families.pkawv.taylor import (
    TaylorBasis,
    auto_degree,
    multi_indices,
    n_components,
    truncation_bound,
)


def _gauss(X, Z, sigma):
    sq = np.sum((X[:, None, :] - Z[None, :, :]) ** 2, axis=2)
    return np.exp(-sq / (2 * sigma ** 2))


@pytest.mark.parametrize("d,M", [(1, 0), (1, 5), (2, 3), (3, 4), (5, 2), (18, 2)])
def test_multi_indices_are_all_of_degree_at_most_M(d, M):
    k = multi_indices(d, M)
    brute = {t for t in itertools.product(range(M + 1), repeat=d) if sum(t) <= M} \
        if d <= 5 else None
    assert k.shape == (math.comb(M + d, M), d) == (n_components(d, M), d)
    assert len({tuple(row) for row in k.tolist()}) == k.shape[0]
    assert (k.sum(axis=1) <= M).all() and (k >= 0).all()
    assert np.all(np.diff(k.sum(axis=1)) >= 0)          # by total degree
    if brute is not None:
        assert {tuple(row) for row in k.tolist()} == brute
    assert n_components(d, M) <= math.e ** d * (1 + M / d) ** d


def test_paper_feature_counts():
    assert n_components(18, 2) == 190            # the SUSY figure
    assert n_components(22, 2) == 276
    assert n_components(18, 2, ordered_tuples=True) == 1 + 18 + 18 ** 2


@pytest.mark.parametrize("sigma", [0.7, 1.0, 2.5])
def test_numba_equals_twin_and_formula(sigma):
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(7, 3))
    basis = TaylorBasis(3, 5, sigma)
    fast = basis.transform(X)
    twin = taylor_features_ref(X, basis._parent, basis._var, basis._div, sigma)
    np.testing.assert_allclose(fast, twin, rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(fast, basis.transform_ref(X), rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(
        fast, taylor_features(X, basis._parent, basis._var, basis._div, sigma))


def test_degree_groups_equal_the_multinomial_closed_form():
    """Lemma 12: sum over |k| = j of g_k(x) g_k(x') equals Q_j(x, x')."""
    rng = np.random.default_rng(2)
    X, Z = rng.uniform(-1, 1, size=(4, 3)), rng.uniform(-1, 1, size=(5, 3))
    sigma, M = 0.9, 6
    basis = TaylorBasis(3, M, sigma)
    deg = basis.indices_.sum(axis=1)
    PX, PZ = basis.transform(X), basis.transform(Z)
    pre = np.exp(-(np.sum(X ** 2, 1)[:, None] + np.sum(Z ** 2, 1)[None, :]) / (2 * sigma ** 2))
    for j in range(M + 1):
        sel = deg == j
        closed = pre * (X @ Z.T / sigma ** 2) ** j / math.factorial(j)
        np.testing.assert_allclose(PX[:, sel] @ PZ[:, sel].T, closed, rtol=1e-12, atol=1e-16)


def test_gram_converges_to_the_gaussian_kernel_within_lemma_13():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(30, 2))
    sigma = 1.0
    R = float(np.max(np.linalg.norm(X, axis=1)))
    exact = _gauss(X, X, sigma)
    errors = []
    for M in (1, 2, 4, 8, 16, 30):
        Phi = TaylorBasis(2, M, sigma).transform(X)
        err = float(np.abs(Phi @ Phi.T - exact).max())
        assert err <= truncation_bound(M, R, sigma) * (1 + 1e-9) + 1e-14  # + rounding
        errors.append(err)
    assert all(b < a for a, b in zip(errors, errors[1:-1]))
    assert errors[-1] < 1e-13


@pytest.mark.parametrize("d,M", [(2, 3), (4, 3), (3, 4)])
def test_ordered_tuples_give_the_same_gram_matrix(d, M):
    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, size=(9, d))
    multi = TaylorBasis(d, M, 1.2)
    paper = TaylorBasis(d, M, 1.2, ordered_tuples=True)
    assert paper.n_components == sum(d ** k for k in range(M + 1))
    A, B = multi.transform(X), paper.transform(X)
    assert B.shape[1] > A.shape[1]
    np.testing.assert_allclose(A @ A.T, B @ B.T, rtol=1e-12, atol=1e-15)


def test_auto_degree_is_theorem_4():
    # 2 log(n / (lambda ^ 1)) branch, and the 8 R^2 / sigma^2 branch the complexity hides
    assert auto_degree(1000, 1.0, 0.5, 1.0) == math.ceil(2 * math.log(1000))
    assert auto_degree(1000, 0.1, 0.5, 1.0) == math.ceil(2 * math.log(10000))
    assert auto_degree(1000, 5.0, 0.5, 1.0) == math.ceil(2 * math.log(1000))
    assert auto_degree(100, 1.0, 3.0, 1.0) == 72
    assert auto_degree(100, 1.0, 3.0, 2.0) == 18


def test_bad_arguments_are_refused():
    with pytest.raises(ValidationError, match=r"degree must be an integer >= 0, got -1"):
        TaylorBasis(2, -1, 1.0)
    with pytest.raises(ValidationError, match=r"bandwidth must be a finite number > 0, got 0"):
        TaylorBasis(2, 2, 0)
    with pytest.raises(ValidationError, match=r"has 2160153123141 features, more than"):
        TaylorBasis(50, 12, 1.0)
    with pytest.raises(ValidationError, match=r"X must have shape \(n_samples, 2\), got \(3, 4\)"):
        TaylorBasis(2, 2, 1.0).transform(np.zeros((3, 4)))
    with pytest.raises(ValidationError, match=r"radius must be a finite number >= 0"):
        auto_degree(10, 1.0, -1.0, 1.0)
