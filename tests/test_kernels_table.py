"""Every kernel of the table (:func:`ooc_kernels.features.maps.kernel_settings`, so a new row
is covered with no change here): the Monte Carlo Gram matrix converges to the exact kernel at
the ``1 / sqrt(r)`` rate, the exact kernel agrees with an independent formula, the numba
nonlinearity with its twin, blocks are addressed by ``(seed, block id)``, a DSG fit with the
kernel reaches the exact kernel ridge solution's accuracy, and the kernel survives save and
load.  Sums of any rows and hierarchical features are rows too (their own checks are in
``tests/test_kernel_compositions.py``).  Mutants (a wrong sampler, a wrong normalization, the misprinted rows of the paper's
table) fail the same checks."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import Matern
from sklearn.kernel_ridge import KernelRidge
from scipy.spatial.distance import cdist
from scipy.special import rel_entr
from scipy.stats import spearmanr
from sklearn.metrics.pairwise import (additive_chi2_kernel, laplacian_kernel,
                                      pairwise_kernels, polynomial_kernel, rbf_kernel)

import ooc_kernels as ok
from ooc_kernels._jit.rff import RELU, features_inplace, features_inplace_ref
from ooc_kernels.exceptions import InvalidDataError, ValidationError
from ooc_kernels.features import spectral
from ooc_kernels.features.blocks import rff_map
from ooc_kernels.features.maps import get_feature_map, kernel_settings, kernel_spec

SETTINGS = kernel_settings()
SIZES = (64, 256, 1024, 4096)
BLOCK = 32
#: The slope of log(error) against log(features) is -1/2 for an unbiased map; averaged over
#: 12 seeds the fitted slope stays within this of -1/2 (measured -0.41 .. -0.52 over the
#: table; a biased map flattens towards 0).
SLOPE_TOL = 0.15


def _name_params(spec):
    """``(row name, kernel_params)`` of a setting of :func:`kernel_settings`."""
    fmap = get_feature_map(spec)
    params = dict(getattr(fmap.exact, "keywords", None) or {})
    return spec.split("(")[0], params


def _points(d=3, n=12, spec=None):
    """Standard normal rows; their absolute values for a kernel of non-negative inputs."""
    X = np.random.default_rng(0).normal(size=(n, d))
    return np.abs(X) if spec and get_feature_map(spec).nonnegative_inputs else X


def _mc_errors(fmap, X, bandwidth, sizes=SIZES, seeds=range(12)):
    """Relative RMS error of the Monte Carlo Gram matrix at each size, averaged over seeds."""
    exact = fmap.gram(X, X, bandwidth)
    norm = math.sqrt(np.mean(exact ** 2))
    out = []
    for n in sizes:
        errs = []
        for seed in seeds:
            Z = rff_map(X, seed, np.arange(n // BLOCK), bandwidth, BLOCK, np.float64,
                        kernel=fmap)
            errs.append(math.sqrt(np.mean((Z @ Z.T / (n // BLOCK) - exact) ** 2)) / norm)
        out.append(float(np.mean(errs)))
    return out


def _slope(errors, sizes=SIZES):
    return float(np.polyfit(np.log(sizes), np.log(errors), 1)[0])


@pytest.mark.parametrize("spec", SETTINGS)
def test_monte_carlo_gram_converges_at_the_inverse_square_root_rate(spec):
    errors = _mc_errors(get_feature_map(spec), _points(spec=spec), 1.3)
    assert abs(_slope(errors) + 0.5) < SLOPE_TOL, errors
    assert errors[-1] < 6.0 / math.sqrt(SIZES[-1]), errors  # 0.094 at 4096 features


def _mutant_sampler(fmap, factor):
    """``fmap`` with every frequency multiplied by ``factor`` (a wrong sampler)."""
    inner = fmap.writer

    def writer(seed, d, r, input_scale, dtype, affine):
        return inner(seed, d, r, input_scale / factor, dtype, affine)

    return dataclasses.replace(fmap, writer=writer)


@pytest.mark.parametrize("spec", SETTINGS)
def test_a_wrong_sampler_or_normalization_fails_the_rate_check(spec):
    """The rate test's mutants: frequencies 1.5 times too large (for the scale-free order-0
    arc-cosine kernel, frequencies through the wrong nonlinearity instead) and features
    scaled by 1 / sqrt(2) too little are biases the features never average away."""
    fmap = get_feature_map(spec)
    X = _points(spec=spec)
    wrong_scale = dataclasses.replace(
        fmap, feature_scale=lambda r: fmap.feature_scale(r) / math.sqrt(2.0))
    wrong_sampler = (dataclasses.replace(fmap, nonlinearity=RELU)
                     if spec == "arccos(order=0)" else _mutant_sampler(fmap, 1.5))
    for mutant in (wrong_scale, wrong_sampler):
        errors = _mc_errors(mutant, X, 1.3, seeds=range(4))
        assert not (abs(_slope(errors) + 0.5) < SLOPE_TOL
                    and errors[-1] < 6.0 / math.sqrt(SIZES[-1])), (spec, errors)


def _independent(spec, X, Y, bw):
    """The kernel by another library's formula (scikit-learn), or by numerical quadrature of
    Cho and Saul's expectation for the arc-cosine kernels; a sum, the weighted sum of its
    terms' independent formulas."""
    if spec.startswith("sum"):
        from ooc_kernels.features.sums import parse_terms
        terms = parse_terms(get_feature_map(spec).exact.keywords["terms"])
        return sum(w * _independent(term, X, Y, bw * m) for w, term, m in terms)
    if spec.startswith("hierarchical"):  # the outer formula on psi from the inner block 0
        p = get_feature_map(spec).exact.keywords
        psi = [rff_map(A, p["inner_seed"], [0], p["inner_bandwidth"], p["inner_features"],
                       np.float64, kernel=p["inner"]) for A in (X, Y)]
        return _independent(p["outer"], *psi, bw)
    if spec in ("rbf", "rbf_orthogonal"):
        return rbf_kernel(X, Y, gamma=1.0 / (2 * bw ** 2))
    if spec == "laplacian":
        return laplacian_kernel(X, Y, gamma=1.0 / bw)
    if spec.startswith("matern"):
        nu = float(spec.split("=")[1].rstrip(")"))
        return Matern(length_scale=bw, nu=nu)(X, Y)
    if spec.startswith("poly"):
        p = get_feature_map(spec).exact.keywords
        return polynomial_kernel(X, Y, degree=p["degree"], gamma=1.0 / bw ** 2,
                                 coef0=p["coef0"])
    X, Y = X / bw, Y / bw
    if spec == "chi2":  # 2xy / (x + y) = (x + y - (x - y)^2 / (x + y)) / 2
        return 0.5 * (X.sum(1)[:, None] + Y.sum(1)[None, :] + additive_chi2_kernel(X, Y))
    if spec == "intersection":  # min(x, y) = (x + y - |x - y|) / 2
        return 0.5 * (X.sum(1)[:, None] + Y.sum(1)[None, :] - cdist(X, Y, "cityblock"))
    if spec == "hellinger":
        return pairwise_kernels(np.sqrt(X), np.sqrt(Y), metric="linear")
    if spec == "js":  # -(x log(x / (x + y)) + y log(y / (x + y))) / (2 log 2), summed
        S = X[:, None, :] + Y[None, :, :]
        return -(rel_entr(X[:, None, :], S) + rel_entr(Y[None, :, :], S)).sum(2) / (
            2 * math.log(2))
    X, Y = X * bw, Y * bw
    if spec == "cauchy":  # the d-fold product of scikit-learn's RationalQuadratic, alpha=1
        from sklearn.gaussian_process.kernels import RationalQuadratic
        G = np.ones((len(X), len(Y)))
        for i in range(X.shape[1]):
            G *= RationalQuadratic(length_scale=bw / math.sqrt(2), alpha=1.0)(
                X[:, i:i + 1], Y[:, i:i + 1])
        return G
    order = int(spec.split("=")[1].rstrip(")"))
    # 2 E[Theta(w.x) Theta(w.y) (w.x)^n (w.y)^n], w ~ N(0, I), in the plane of x and y:
    # by symmetry an integral over the angle phi of w in that plane and its radius.
    G = np.empty((len(X), len(Y)))
    phi = np.linspace(0, 2 * np.pi, 400001)[:-1]
    radial = {0: 1.0, 1: 2.0, 2: 8.0}[order]  # E[rho^(2n)] for rho ~ Rayleigh(1)
    for i, x in enumerate(X / bw):
        for j, y in enumerate(Y / bw):
            nx, ny = np.linalg.norm(x), np.linalg.norm(y)
            theta = math.acos(np.clip(x @ y / (nx * ny), -1, 1))
            a, b = np.cos(phi), np.cos(phi - theta)
            pos = (a > 0) & (b > 0)
            G[i, j] = 2 * radial * np.mean(pos * (a * b) ** order) * (nx * ny) ** order
    return G


@pytest.mark.parametrize("spec", SETTINGS)
def test_the_exact_kernel_agrees_with_an_independent_formula(spec):
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(6, 3)), rng.normal(size=(5, 3))
    if get_feature_map(spec).nonnegative_inputs:
        X, Y = np.abs(X), np.abs(Y)
        X[0, 1] = Y[1, 2] = 0.0  # a zero bin
    name, params = _name_params(spec)
    got = ok.features.kernel_function(name, bandwidth=1.7, **params)(X, Y)
    np.testing.assert_allclose(got, _independent(spec, X, Y, 1.7), rtol=1e-4, atol=1e-6)


def test_the_misprinted_rows_of_the_paper_would_not_converge():
    """The paper's table prints the arc-cosine feature as (w.x)^n max(0, w.x) without
    sqrt(2), the Cauchy kernel with the unnormalized mass 2^d and the Matern density in the
    exp(-2 pi i w.x) convention; sampled as printed, each converges to another kernel."""
    X = _points()
    arccos1 = get_feature_map("arccos(order=1)")
    printed_arccos = dataclasses.replace(  # one more power, no sqrt(2): (w.x) max(0, w.x)
        arccos1, nonlinearity=get_feature_map("arccos(order=2)").nonlinearity,
        feature_scale=lambda r: math.sqrt(1.0 / r))
    printed_cauchy = dataclasses.replace(  # prod 2 / (1 + d^2) against the features
        get_feature_map("cauchy"),
        exact=lambda X, Y, bw, dtype=np.float64: 2.0 ** X.shape[1] * spectral.cauchy_kernel(
            X, Y, bw, dtype))
    printed_matern = _mutant_sampler(get_feature_map("matern(nu=2.5)"), 1.0 / (2 * np.pi))
    for fmap in (arccos1, get_feature_map("cauchy"), get_feature_map("matern(nu=2.5)")):
        assert _mc_errors(fmap, X, 1.3, sizes=(4096,), seeds=range(4))[0] < 0.08
    for printed in (printed_arccos, printed_cauchy, printed_matern):
        assert _mc_errors(printed, X, 1.3, sizes=(4096,), seeds=range(4))[0] > 0.3


def test_the_hellinger_row_printed_with_a_factor_2_estimates_four_times_the_kernel():
    """Table 1 prints the Hellinger feature as 2 w^T sqrt(x) with Rademacher w: its Monte
    Carlo average is 4 sum_i sqrt(x_i y_i); w^T sqrt(x) estimates the kernel, as does the
    sampled-coordinate feature of the table row."""
    X = np.abs(_points())
    exact = ok.features.kernel_function("hellinger")(X, X)
    w = np.where(np.random.default_rng(0).random((200_000, X.shape[1])) < 0.5, -1.0, 1.0)
    corrected = np.sqrt(X) @ w.T
    printed = 2.0 * corrected
    np.testing.assert_allclose(corrected @ corrected.T / len(w), exact, atol=0.03)
    np.testing.assert_allclose(printed @ printed.T / len(w), 4.0 * exact, atol=0.12)
    assert _mc_errors(get_feature_map("hellinger"), X, 1.0, sizes=(4096,),
                      seeds=range(4))[0] < 0.05


@pytest.mark.parametrize("spec", SETTINGS)
@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-12), (np.float32, 2e-5)])
def test_the_features_of_the_numba_kernel_match_the_numpy_twin(spec, dtype, tol):
    fmap = get_feature_map(spec)
    X = _points(spec=spec).astype(dtype)
    W, phase = fmap.block(4, 1, 3, 16, 0.9, dtype)
    X = fmap.map_rows(X, None, dtype)  # psi(X) for hierarchical features
    got, want = X @ W, X @ W
    features_inplace(fmap.nonlinearity, got, phase, fmap.feature_scale(16))
    features_inplace_ref(fmap.nonlinearity, want, phase, fmap.feature_scale(16))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert np.abs(got).max() > 0  # it did write features


def _serial_correlations(fmap, vary):
    """Spearman correlation, per entry of a block (W and phase; d = 2, r = 4, or 10 for a
    sum that gives each term its share of the columns), between the blocks of consecutive
    ids (``vary="block"``) or seeds (``vary="seed"``) over 200 of them; entries that never
    vary (structural zeros) are left out."""
    draws = []
    r = 10 if isinstance(fmap.nonlinearity, tuple) else 4
    for j in range(200):
        seed, block_id = (5, j) if vary == "block" else (j, 3)
        W, phase = fmap.block(seed, block_id, 2, r, 1.0)
        draws.append(np.concatenate([W.ravel(), phase]))
    B = np.array(draws)
    return [spearmanr(B[:-1, i], B[1:, i]).statistic
            for i in range(B.shape[1]) if np.ptp(B[:, i]) > 0]


@pytest.mark.parametrize("spec", SETTINGS)
def test_blocks_are_addressed_by_seed_and_block_id(spec):
    """The same (seed, block) gives the same block in any order and any dtype; blocks of
    consecutive ids or seeds are independent draws: every entry's correlation between them
    is that of independent samples (|rho| < 4.5 / sqrt(199))."""
    fmap = get_feature_map(spec)
    a = fmap.block(5, 3, 4, 256, 1.0)
    fmap.block(5, 9, 4, 256, 1.0)
    b = fmap.block(5, 3, 4, 256, 1.0)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(fmap.block(5, 3, 4, 256, 1.0, np.float32)[0],
                                  a[0].astype(np.float32))
    assert not np.array_equal(a[0], fmap.block(5, 4, 4, 256, 1.0)[0])
    for vary in ("block", "seed"):
        rhos = _serial_correlations(fmap, vary)
        assert rhos and max(np.abs(rhos)) < 4.5 / math.sqrt(199), (vary, rhos)


def test_the_independence_check_fails_for_blocks_that_ignore_their_id():
    """Its mutant: a sampler that draws every block from block 0's stream."""
    rbf = get_feature_map("rbf")
    inner = rbf.writer

    class Stuck:
        def __init__(self, *args):
            self.w = inner(*args)
            self.d, self.r, self.dtype = self.w.d, self.w.r, self.w.dtype

        def write(self, block_id, W_out, phase_out):
            self.w.write(0, W_out, phase_out)

    stuck = dataclasses.replace(rbf, writer=lambda *args: Stuck(*args))
    assert _serial_correlations(stuck, "block") == []
    assert max(np.abs(_serial_correlations(get_feature_map("rbf"), "seed"))) < 0.32


def test_kernel_params_are_checked_with_the_allowed_values():
    with pytest.raises(ValidationError, match=r"'order' must be one of \[0, 1, 2\]; got 3"):
        kernel_spec("arccos", {"order": 3})
    with pytest.raises(ValidationError, match=r"'coef0' must be a finite number >= 0.0; "
                                              r"got -1"):
        kernel_spec("poly", {"coef0": -1})
    with pytest.raises(ValidationError, match=r"'sum' is not a kernel of the table that a "
                                              r"sum holds"):
        kernel_spec("sum", {"terms": "0.5*rbf+0.5*sum"})
    with pytest.raises(ValidationError, match=r"'-1\*rbf' needs a positive weight"):
        kernel_spec("sum", {"terms": "-1*rbf"})
    with pytest.raises(ValidationError, match=r"the chi2 kernel takes non-negative inputs"):
        ok.features.kernel_function("chi2")(-np.ones((1, 2)), np.ones((1, 2)))
    with pytest.raises(ValidationError, match=r"the js kernel takes non-negative inputs.*"
                                              r"use standardize=False"):
        ok.DSGRegressor(kernel="js", standardize=True, progress=False).fit(
            np.ones((8, 2)) + np.arange(8)[:, None], np.zeros(8))
    with pytest.raises(ValidationError, match=r"unknown parameter 'gamma'; kernel='rbf' "
                                              r"takes no kernel_params"):
        kernel_spec("rbf", {"gamma": 1.0})
    with pytest.raises(ValidationError, match=r"kernel_params=\{'nu': 3\} is not valid for "
                                              r"kernel='matern': 'nu' must be one of"):
        ok.DSGRegressor(kernel="matern", kernel_params={"nu": 3}, progress=False).fit(
            np.zeros((8, 2)), np.zeros(8))


def _fit_problem(spec):
    """A small problem each kernel should learn, and the bandwidth to learn it with: a
    smooth function for the shift-invariant kernels; one of the direction and norm of the
    input for the homogeneous arc-cosine kernels; a quadratic on inputs scaled into the unit
    box for the polynomial kernels; a monotone additive function of non-negative inputs for
    the additive kernels; for hierarchical features on Gaussian inner features (of unit
    norm) the smooth function at a narrower outer width."""
    rng = np.random.default_rng(1)
    additive = get_feature_map(spec).nonnegative_inputs
    X = rng.uniform(0 if additive else -2, 2, size=(500, 2))
    bandwidth = 1.0
    if spec.startswith("arccos"):
        angle = np.arctan2(X[:, 1], X[:, 0])
        y = np.linalg.norm(X, axis=1) ** int(spec[-2]) * np.cos(angle)
    elif spec.startswith("poly"):
        y, bandwidth = 0.5 * X[:, 0] ** 2 - X[:, 0] * X[:, 1] + X[:, 1], 2.0
    elif additive:
        y = np.sqrt(X[:, 0]) + np.minimum(X[:, 1], 1.0)
    else:
        y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] ** 2
    if spec.startswith("hierarchical") and "inner='rbf'" in spec:
        bandwidth = 0.5  # psi of unit norm: outer distances below sqrt(2)
    y = y + 0.3 * rng.normal(size=len(y))
    return X[:350], y[:350], X[350:], y[350:], bandwidth


# max_iter=30 is the budget: the fits of some kernels end at it, above tol (the warning
# that says so is expected there), the others stop earlier on tol
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("spec", SETTINGS)
def test_a_fit_with_each_kernel_reaches_the_exact_kernel_ridge_solution(spec):
    """DSG with the kernel against exact kernel ridge regression with the same kernel (the
    best of a grid of regularizations) on the same data and bandwidth: within 0.05 of its R^2."""
    X, y, Xt, yt, bandwidth = _fit_problem(spec)
    name, params = _name_params(spec)
    model = ok.DSGRegressor(kernel=name, kernel_params=params or None, bandwidth=bandwidth,
                            standardize=False, n_features=1024, block_size=128, max_iter=30,
                            progress=False, random_state=0, scheduler="sync").fit(X, y)
    k = ok.features.kernel_function(name, bandwidth=bandwidth, **params)
    exact = max(KernelRidge(alpha=a, kernel="precomputed").fit(k(X, X), y).score(k(Xt, X), yt)
                for a in (1e-3, 1e-2, 1e-1, 1.0))
    assert model._config.kernel == spec
    assert model.score(Xt, yt) > exact - 0.05, (model.score(Xt, yt), exact)


@pytest.mark.parametrize("spec", ["matern(nu=0.5)", "arccos(order=2)",
                                  "poly(degree=3,coef0=1.0)", kernel_spec("sum")])
def test_the_kernel_and_its_parameters_are_saved_with_the_model(spec, tmp_path):
    X, y, Xt, _, _ = _fit_problem(spec)
    name, params = _name_params(spec)
    model = ok.DSGRegressor(kernel=name, kernel_params=params, n_features=256, block_size=64,
                            max_iter=2, tol=None, progress=False, random_state=0,
                            scheduler="sync").fit(X, y)
    model.save(tmp_path / "m.ooc")
    loaded = ok.load(tmp_path / "m.ooc")
    assert loaded.kernel_params == model.kernel_params and loaded._config.kernel == spec
    np.testing.assert_array_equal(loaded.predict(Xt), model.predict(Xt))


def test_the_gaussian_process_variance_uses_the_exact_diagonal_of_the_kernel():
    """The arc-cosine kernel of order 1 has k(x, x) = ||x||^2: the predictive standard
    deviation of DSGGaussianProcessRegressor matches the exact posterior's,
    sqrt(k(x, x) - k_x^T (K + noise I)^-1 k_x) with the kernel's exact form, within 3%
    (median over 50 test points; 1 in place of k(x, x) is off by far more)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(300, 2))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=300)
    Xt = rng.uniform(-3, 3, size=(50, 2))
    model = ok.DSGGaussianProcessRegressor(
        kernel="arccos", kernel_params={"order": 1}, standardize=False, bandwidth=1.0,
        n_variance_features=2048, progress=False, random_state=0, scheduler="sync").fit(X, y)
    _, sd = model.predict(Xt, return_std=True)
    k = ok.features.kernel_function("arccos", order=1)
    ks = k(Xt, X)
    var = np.diag(k(Xt, Xt)) - np.einsum(
        "ij,ji->i", ks, np.linalg.solve(k(X, X) + model.noise_ * np.eye(len(X)), ks.T))
    exact = np.sqrt(np.maximum(var, 0.0)) * model._config.y_scale
    assert model._config.kernel == "arccos(order=1)"
    assert np.median(np.abs(sd - exact) / exact) < 0.03


@pytest.mark.parametrize("spec", ["laplacian", "matern(nu=2.5)", kernel_spec("hierarchical")])
def test_the_one_class_and_density_ratio_machines_take_the_kernel(spec):
    """Both machines fit with the kernel (its exact form in their setup, its features in
    their steps): the one-class scores rank outliers below inliers, and the density ratio's
    log estimate ranks points by the true log ratio of two Gaussians."""
    from sklearn.metrics import roc_auc_score
    name, params = _name_params(spec)
    rng = np.random.default_rng(2)
    inliers, outliers = rng.normal(size=(600, 2)), rng.uniform(-6, 6, size=(200, 2))
    outliers = outliers[np.linalg.norm(outliers, axis=1) > 3.5]
    svm = ok.DSGOneClassSVM(kernel=name, kernel_params=params or None, n_features=512,
                            block_size=64, progress=False, random_state=0,
                            scheduler="sync").fit(inliers)
    scores = svm.score_samples(np.vstack([rng.normal(size=(200, 2)), outliers]))
    labels = np.r_[np.ones(200), np.zeros(len(outliers))]
    assert svm._config.kernel == spec and roc_auc_score(labels, scores) > 0.95
    X_p, X_q = rng.normal(size=(800, 1)), rng.normal(0.5, 1.0, size=(800, 1))
    ratio = ok.DSGDensityRatio(kernel=name, kernel_params=params or None, n_features=512,
                               block_size=64, progress=False, random_state=0,
                               scheduler="sync").fit(X_p, X_q)
    grid = np.linspace(-2, 2, 41)[:, None]
    true_log = -0.5 * grid[:, 0] ** 2 + 0.5 * (grid[:, 0] - 0.5) ** 2  # log p / q
    assert ratio._config.kernel == spec
    assert spearmanr(ratio.decision_function(grid), true_log).statistic > 0.9


def test_a_multi_scale_sum_is_the_weighted_sum_of_its_terms():
    """kernel="sum" with terms at two bandwidths: its exact form is the weighted sum of the
    Gaussian kernels at those bandwidths (scikit-learn's), and its features converge to it."""
    spec = kernel_spec("sum", {"terms": "0.25*rbf+0.75*rbf@4"})
    assert spec == "sum(terms='0.25*rbf@1.0+0.75*rbf@4.0')"
    X = _points()
    want = 0.25 * rbf_kernel(X, X, gamma=1 / (2 * 1.3 ** 2)) + 0.75 * rbf_kernel(
        X, X, gamma=1 / (2 * 5.2 ** 2))
    np.testing.assert_allclose(get_feature_map(spec).gram(X, X, 1.3), want, rtol=1e-12)
    errors = _mc_errors(get_feature_map(spec), X, 1.3)
    assert abs(_slope(errors) + 0.5) < SLOPE_TOL and errors[-1] < 6.0 / math.sqrt(SIZES[-1])


def _words(seed, block_id, n):
    return np.random.Philox(key=np.array([seed, block_id], dtype=np.uint64)).random_raw(n)


def _open(words):
    return ((words >> np.uint64(11)).astype(np.float64) + 0.5) / 2.0**53


def _normals(words, n):
    u = (words >> np.uint64(11)).astype(np.float64) / 2.0**53
    rho, theta = np.sqrt(-2 * np.log(1 - u[0::2])), 2 * np.pi * u[1::2]
    return np.column_stack([rho * np.cos(theta), rho * np.sin(theta)]).ravel()[:n]


def test_the_blocks_follow_the_documented_word_layout():
    """The blocks of the samplers re-derived from the raw Philox words by the layouts their
    docstrings state (a saved model's features depend on it): d = 2, r = 4, block 3 of
    seed 7, per-input scales (0.5, 2)."""
    d, r, s = 2, 4, np.array([0.5, 2.0])
    w = _words(7, 3, 64)
    u_phase = (w[d * r:d * r + r] >> np.uint64(11)).astype(np.float64) / 2.0**53
    lap = np.tan(np.pi * (_open(w[:d * r]) - 0.5)).reshape(d, r) / s[:, None]
    c = _open(w[:d * r]) - 0.5
    cau = (-np.sign(c) * np.log1p(-2 * np.abs(c))).reshape(d, r) / s[:, None]
    for spec, W_want in (("laplacian", lap), ("cauchy", cau)):
        W, phase = get_feature_map(spec).block(7, 3, d, r, s)
        np.testing.assert_allclose(W, W_want, rtol=1e-14)
        np.testing.assert_allclose(phase, 2 * np.pi * u_phase, rtol=1e-14)
    g = _normals(w, d * r + 5 * r)  # Matern 5/2: 2 nu = 5 degrees of freedom
    chi2 = (g[d * r:].reshape(r, 5) ** 2).sum(1)
    W, _ = get_feature_map("matern(nu=2.5)").block(7, 3, d, r, s)
    np.testing.assert_allclose(W, g[:d * r].reshape(d, r) * np.sqrt(5 / chi2) / s[:, None],
                               rtol=1e-12)
    W, phase = get_feature_map("arccos(order=1)").block(7, 3, d, r, s)
    np.testing.assert_allclose(W, _normals(w, d * r).reshape(d, r) / s[:, None], rtol=1e-14)
    assert not phase.any()
    signs = np.where(w >> np.uint64(63), -1.0, 1.0)
    W, phase = get_feature_map("poly(degree=2,coef0=4.0)").block(7, 3, d, r, s)
    np.testing.assert_array_equal(W, signs[:d * r].reshape(d, r) / s[:, None])
    np.testing.assert_array_equal(phase, 2.0 * signs[d * r:d * r + r])


@pytest.mark.parametrize("spec", ["poly(degree=3,coef0=1.0)", "chi2"])
def test_a_lazy_dask_input_fits_the_same_model_as_in_memory_rows(spec):
    """The coupled nonlinearities run through the same chunk engine: a lazy Dask array in
    chunks of 100 rows gives the model of the in-memory rows read with chunk_size=100, bit
    for bit."""
    import dask.array as da
    X, y, Xt, _, bandwidth = _fit_problem(spec)
    name, params = _name_params(spec)
    kw = dict(kernel=name, kernel_params=params or None, bandwidth=bandwidth,
              standardize=False, n_features=256, block_size=64, max_iter=3, tol=None,
              progress=False, random_state=0, scheduler="sync", chunk_size=100)
    eager = ok.DSGRegressor(**kw).fit(X, y)
    lazy = ok.DSGRegressor(**kw).fit(da.from_array(X, chunks=(100, 2)),
                                     da.from_array(y, chunks=100))
    np.testing.assert_array_equal(lazy.predict(Xt), eager.predict(Xt))
    assert np.abs(eager.predict(Xt)).max() > 0


ADDITIVE = ("chi2", "hellinger", "intersection", "js")
SMALL_FIT = dict(standardize=False, bandwidth=1.0, n_features=256, block_size=64, max_iter=2,
                 tol=None, random_state=0, scheduler="sync", progress=False)


def _histograms_with_one_negative(n=120):
    rng = np.random.default_rng(9)
    X = np.abs(rng.normal(size=(n, 3)))
    bad = X.copy()
    bad[57, 1] = -1.0                      # chunk 1, row 7 of chunks of 50 rows
    return X, (X[:, 0] > 0.6).astype(int), bad


@pytest.mark.parametrize("kernel", ADDITIVE)
def test_a_negative_input_is_refused_by_every_prediction_as_by_fit(kernel):
    da = pytest.importorskip("dask.array")
    X, y, bad = _histograms_with_one_negative()
    clf = ok.DSGClassifier(kernel=kernel, **SMALL_FIT).fit(X, y)
    message = rf"the {kernel} kernel takes non-negative inputs.*X holds the value -1\.0 at "
    for method in (clf.predict, clf.decision_function, clf.predict_proba,
                   lambda Z: clf.score(Z, y)):
        with pytest.raises(InvalidDataError, match=message + "row 57, feature 1"):
            method(bad)
    lazy = da.from_array(bad, chunks=(50, 3))
    pred = clf.decision_function(lazy)                  # lazy: nothing is read yet
    with pytest.raises(InvalidDataError, match=message + "chunk 1, row 7, feature 1"):
        pred.compute()
    with pytest.raises(InvalidDataError, match=message + "chunk 1, row 7, feature 1"):
        clf.score(lazy, da.from_array(y, chunks=50))
    with pytest.raises(InvalidDataError, match=message + "chunk 1, row 7, feature 1"):
        ok.DSGClassifier(kernel=kernel, **SMALL_FIT).fit(lazy, y)


def test_the_fit_error_names_the_value_as_given_and_advice_for_the_settings():
    X, y, bad = _histograms_with_one_negative()
    # the bandwidth from the data (the set-up's exact kernel) or given: the value as it is
    for bandwidth in ("median", 1.0):
        params = dict(SMALL_FIT, bandwidth=bandwidth)
        with pytest.raises(InvalidDataError) as info:
            ok.DSGRegressor(kernel="chi2", **params).fit(bad, y)
        assert "X holds the value -1.0 at chunk 0, row 57, feature 1" in str(info.value)
        assert "standardize" not in str(info.value)
    with pytest.raises(InvalidDataError, match=r"X_q holds the value -1\.0 at chunk 0, row 57"):
        ok.DSGDensityRatio(kernel="js", **SMALL_FIT).fit(X, bad)
    # standardization on: refused before any data is read, whatever the values
    with pytest.raises(ValidationError, match=r"standardize=True centers the inputs.*use "
                                              r"standardize=False"):
        ok.DSGRegressor(kernel="hellinger", **dict(SMALL_FIT, standardize=True)).fit(X, y)
    # "auto" (the default) takes the inputs as they are with such a kernel
    auto = ok.DSGRegressor(kernel="hellinger", **dict(SMALL_FIT, standardize="auto")).fit(X, y)
    raw = ok.DSGRegressor(kernel="hellinger", **SMALL_FIT).fit(X, y)
    assert np.array_equal(auto.coef_, raw.coef_)
    assert np.array_equal(auto.predict(X), raw.predict(X))
    with pytest.raises(ValidationError, match=r"X holds the value -1\.0: give it non-negative"):
        ok.features.kernel_function("chi2", bandwidth=0.25)(bad[57:58], X[:2])
