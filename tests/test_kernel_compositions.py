"""Sums of any kernels of the table (concatenated feature maps, kernel objects) and
hierarchical features ``phi(psi(x))``: their features against oracles built from the terms'
own maps, their exact forms against independent computations, the mutants the rate check
must catch, and the estimator round trips (clone, save and load, lazy input)."""

from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics.pairwise import polynomial_kernel, rbf_kernel

import ooc_kernels as ok
from ooc_kernels._jit.hierarchical import inner_rows, inner_rows_ref
from ooc_kernels._jit.rff import COS_WIDE, RELU, features_inplace_ref
from ooc_kernels.exceptions import ModelFormatError, ValidationError
from ooc_kernels.features import Kernel
from ooc_kernels.features.blocks import rff_map
from ooc_kernels.features.maps import get_feature_map, kernel_spec
from ooc_kernels.features.mixed import term_seed

MIXED = kernel_spec("sum", {"terms": "0.3*rbf+0.7*poly(degree=2)@2"})
HIER = kernel_spec("hierarchical", {"inner": "arccos(order=1)", "inner_features": 64,
                                    "inner_seed": 3})


def _points(n=12, d=3):
    return np.random.default_rng(0).normal(size=(n, d))


def _rel_error(fmap, X, bandwidth, n_blocks=128, block=32, seeds=range(4)):
    """Relative RMS error of the Monte Carlo Gram matrix (``n_blocks * block`` features),
    averaged over seeds."""
    exact = fmap.gram(X, X, bandwidth)
    errs = [math.sqrt(np.mean((Z @ Z.T / n_blocks - exact) ** 2))
            for Z in (rff_map(X, s, np.arange(n_blocks), bandwidth, block, np.float64,
                              kernel=fmap) for s in seeds)]
    return float(np.mean(errs)) / math.sqrt(np.mean(exact ** 2))


def test_a_mixed_sum_is_the_weighted_concatenation_of_the_terms_own_features():
    """Block j of 0.3 rbf + 0.7 poly: its first round(0.3 r) columns are sqrt(0.3) times the
    rbf features of block j with the first term seed, the others sqrt(0.7) times the poly
    features (inputs at twice the bandwidth) with the second term seed."""
    X = _points()
    fmap = get_feature_map(MIXED)
    Z = rff_map(X, 5, [2], 1.3, 20, np.float64, kernel=fmap)
    k = 6  # floor(20 * 0.3 + 1/2)
    rbf_part = rff_map(X, term_seed(5, 0), [2], 1.3, k, np.float64, kernel="rbf")
    poly_part = rff_map(X, term_seed(5, 1), [2], 2.6, 20 - k, np.float64,
                        kernel="poly(degree=2,coef0=1.0)")
    np.testing.assert_allclose(Z[:, :k], math.sqrt(0.3) * rbf_part, rtol=1e-12)
    np.testing.assert_allclose(Z[:, k:], math.sqrt(0.7) * poly_part, rtol=1e-12)


def test_the_exact_mixed_sum_is_the_weighted_sum_of_scikit_learn_kernels():
    X = _points()
    want = 0.3 * rbf_kernel(X, X, gamma=1 / (2 * 1.3 ** 2)) + 0.7 * polynomial_kernel(
        X, X, degree=2, gamma=1 / 2.6 ** 2, coef0=1.0)
    np.testing.assert_allclose(get_feature_map(MIXED).gram(X, X, 1.3), want, rtol=1e-12)


def _with_layout(fmap, change):
    """``fmap`` with term entries of its layout replaced: ``change(t, kind, end, w, c)``."""
    lay = list(fmap.nonlinearity)
    for t in range(int(lay[0])):
        lay[1 + 4 * t:5 + 4 * t] = change(t, *lay[1 + 4 * t:5 + 4 * t])
    return dataclasses.replace(fmap, nonlinearity=tuple(lay))


def test_mutants_of_the_mixed_layout_fail_the_monte_carlo_check():
    """The correct map reaches the exact kernel (error below 6 / sqrt(4096)); ignoring the
    terms' weights (every term at weight 1), or passing the polynomial term's columns through
    the cosine of the shift-invariant rows, converges to another kernel."""
    X = _points()
    fmap = get_feature_map(MIXED)
    unweighted = _with_layout(fmap, lambda t, kind, end, w, c: [kind, end, 1.0, c])
    as_cosine = _with_layout(fmap, lambda t, kind, end, w, c:
                             [kind, end, w, c] if t == 0 else [COS_WIDE, end, w, 2.0])
    assert _rel_error(fmap, X, 1.3) < 6 / math.sqrt(4096)
    assert _rel_error(unweighted, X, 1.3) > 0.3
    assert _rel_error(as_cosine, X, 1.3) > 0.3


def test_the_numba_layout_matches_its_numpy_twin_and_a_shift_invariant_sum_keeps_its_map():
    X = _points().astype(np.float32)
    fmap = get_feature_map("sum(terms='0.5*laplacian@1.0+0.5*arccos(order=1)@1.0')")
    W, phase = fmap.block(1, 0, 3, 24, 1.0, np.float32)
    got, want = X @ W, X @ W
    from ooc_kernels._jit.rff import features_inplace
    features_inplace(fmap.nonlinearity, got, phase, 1.0)
    features_inplace_ref(fmap.nonlinearity, want, phase, 1.0)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    assert (got[:, 12:] >= 0).all() and (got[:, :12] < 0).any()  # ReLU half, cosine half
    assert isinstance(get_feature_map(kernel_spec("sum")).nonlinearity, int)


def test_a_block_too_small_for_a_term_is_refused_with_the_fix():
    fmap = get_feature_map(kernel_spec("sum", {"terms": "0.95*rbf+0.05*chi2"}))
    with pytest.raises(ValidationError, match=r"block_size=16 gives the term 'chi2' of the "
                                              r"sum 1 columns.*an even number, at least 2; "
                                              r"raise block_size"):
        fmap.block(0, 0, 2, 16, 1.0)
    assert fmap.block(0, 0, 2, 40, 1.0)[0].shape == (2, 40)  # 2 columns: one pair
    with pytest.raises(ValidationError, match=r"'hierarchical' is not a kernel of the table "
                                              r"that a sum holds"):
        kernel_spec("sum", {"terms": "rbf+hierarchical"})


def test_kernel_objects_clone_compare_and_survive_save_and_load(tmp_path):
    terms = 0.5 * Kernel("rbf") + Kernel("poly", degree=2, weight=0.5,
                                         bandwidth_multiplier=2)
    assert terms == "0.5*rbf@1.0+0.5*poly(degree=2,coef0=1.0)@2.0"
    model = ok.DSGRegressor(kernel="sum", kernel_params={"terms": terms}, n_features=128,
                            block_size=32, max_iter=2, tol=None, progress=False, random_state=0,
                            scheduler="sync")
    twin = clone(model)
    assert twin.get_params()["kernel_params"] == {"terms": terms}
    twin.set_params(kernel_params={"terms": Kernel("rbf") + Kernel("laplacian")})
    assert twin.get_params()["kernel_params"]["terms"] == "1.0*rbf@1.0+1.0*laplacian@1.0"
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(120, 2))
    y = X[:, 0] ** 2 + np.sin(3 * X[:, 1])
    model.fit(X, y)
    assert model._config.kernel == f"sum(terms={str(terms)!r})"
    model.save(tmp_path / "m.ooc")
    loaded = ok.load(tmp_path / "m.ooc")
    assert loaded.kernel_params == model.kernel_params
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    with pytest.raises(ValidationError, match=r"multiplied by a positive number"):
        -1 * Kernel("rbf")


def test_a_kernel_object_passed_as_kernel_is_the_sum_of_its_terms(tmp_path):
    """``kernel=Kernel(...)`` fits the model of ``kernel="sum"`` with the same terms bit for
    bit, is cloned as itself, is saved and loaded, and refuses ``kernel_params`` beside it."""
    terms = 0.5 * Kernel("rbf") + Kernel("poly", degree=2, weight=0.5)
    common = dict(n_features=128, block_size=32, max_iter=2, tol=None, progress=False,
                  random_state=0, scheduler="sync")
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(120, 2))
    y = X[:, 0] ** 2 + np.sin(3 * X[:, 1])
    direct = ok.DSGRegressor(kernel=terms, **common)
    assert clone(direct).get_params()["kernel"] is terms
    direct.fit(X, y)
    as_sum = ok.DSGRegressor(kernel="sum", kernel_params={"terms": str(terms)},
                             **common).fit(X, y)
    assert direct._config.kernel == as_sum._config.kernel == f"sum(terms={str(terms)!r})"
    np.testing.assert_array_equal(direct.predict(X), as_sum.predict(X))
    direct.save(tmp_path / "m.ooc")
    loaded = ok.load(tmp_path / "m.ooc")
    assert loaded.kernel == terms
    np.testing.assert_array_equal(loaded.predict(X), direct.predict(X))
    with pytest.raises(ValidationError, match=r"carries its own parameters.*degree=3"):
        ok.DSGRegressor(kernel=terms, kernel_params={"degree": 3}, **common).fit(X, y)
    with pytest.raises(ValidationError, match=r"'kernel' parameter"):
        ok.DSGRegressor(kernel=3, **common).fit(X, y)
    from ooc_kernels.estimators.persistence import _construct
    with pytest.raises(ModelFormatError, match=r"not a valid kernel.*edited or damaged"):
        _construct(ok.DSGRegressor, {"kernel": {"Kernel": "0.5*nope"}}, "m.ooc")


def _psi_oracle(X, inner, D, inner_bw, seed):
    """psi(X) from the inner map's block 0 through the library's block table and the NumPy
    twin of the nonlinearity (not the numba row kernel)."""
    return rff_map(X, seed, [0], inner_bw, D, np.float64, kernel=inner)


def test_the_exact_hierarchical_kernel_is_the_outer_kernel_on_the_inner_features():
    X, Y = _points(6), _points(5) + 0.3
    k = ok.features.kernel_function("hierarchical", inner="rbf", inner_features=64,
                                    inner_bandwidth=0.8, inner_seed=7, outer="rbf",
                                    bandwidth=1.3)
    P, Q = (_psi_oracle(A, "rbf", 64, 0.8, 7) for A in (X, Y))
    np.testing.assert_allclose(k(X, Y), rbf_kernel(P, Q, gamma=1 / (2 * 1.3 ** 2)),
                               rtol=1e-12)
    other = ok.features.kernel_function("hierarchical", inner="rbf", inner_features=64,
                                        inner_bandwidth=0.8, inner_seed=8, outer="rbf",
                                        bandwidth=1.3)
    assert np.abs(other(X, Y) - k(X, Y)).max() > 1e-3  # the seed picks psi


def test_wide_inner_maps_reach_the_compositional_kernel():
    """As D grows, ||psi(x) - psi(y)||^2 -> k_in(x,x) + k_in(y,y) - 2 k_in(x,y): with the
    Gaussian inner and outer kernels, k -> exp(-(1 - k_in(x, y)) / s^2) (closed form); the
    error shrinks like 1 / sqrt(D)."""
    X = _points(8) * 0.7
    limit = np.exp(-(1 - rbf_kernel(X, X, gamma=0.5)) / 1.2 ** 2)
    errs = []
    for D in (256, 16384):
        k = ok.features.kernel_function("hierarchical", inner="rbf", inner_features=D,
                                        inner_seed=1, outer="rbf", bandwidth=1.2)
        errs.append(np.abs(k(X, X) - limit).max())
    assert errs[1] < 0.02 and errs[1] < errs[0] / 3, errs


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-12), (np.float32, 2e-5)])
def test_the_numba_inner_rows_match_their_twin(dtype, tol):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(2000, 5)).astype(dtype)  # several tiles
    V = rng.normal(size=(5, 300)).astype(dtype)
    c = rng.normal(size=300).astype(dtype)
    out = np.empty((2000, 300), dtype=dtype)
    inner_rows(X, V, c, 0.1, RELU, out)
    np.testing.assert_allclose(out, inner_rows_ref(X, V, c, 0.1, RELU), rtol=tol, atol=tol)


def test_the_standardization_is_folded_into_the_inner_map():
    X = _points() * 3 + 1
    shift, scale = X.mean(0), X.std(0)
    fmap = get_feature_map(HIER)
    np.testing.assert_allclose(fmap.map_rows(X, (shift, scale), np.float64),
                               fmap.map_rows((X - shift) / scale, None, np.float64),
                               rtol=1e-10, atol=1e-12)


def _problem():
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, size=(400, 2))
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.1 * rng.normal(size=400)
    return X[:300], y[:300], X[300:], y[300:]


def test_a_hierarchical_model_predicts_through_its_own_inner_seed(tmp_path):
    """Fit, save, load: predictions bit for bit and the inner seed in the saved kernel.
    Predicting with the blocks of the model on psi of another inner seed (a mutant that
    loses the seed) is far off."""
    X, y, Xt, yt = _problem()
    model = ok.DSGRegressor(kernel="hierarchical", kernel_params={"inner_seed": 3,
                                                                 "inner_features": 64},
                            n_features=256, block_size=64, max_iter=10, tol=None, progress=False,
                            random_state=0, scheduler="sync").fit(X, y)
    assert "inner_seed=3" in model._config.kernel and model.score(Xt, yt) > 0.8
    model.save(tmp_path / "m.ooc")
    loaded = ok.load(tmp_path / "m.ooc")
    np.testing.assert_array_equal(loaded.predict(Xt), model.predict(Xt))
    mutant = copy.copy(model)
    mutant._config = dataclasses.replace(model._config, kernel=model._config.kernel.replace(
        "inner_seed=3", "inner_seed=4"))
    assert mutant.score(Xt, yt) < model.score(Xt, yt) - 0.3


def test_a_hierarchical_model_reads_lazy_chunks_as_in_memory_rows():
    import dask.array as da
    X, y, Xt, _ = _problem()
    kw = dict(kernel="hierarchical", kernel_params={"inner_features": 32}, n_features=128,
              block_size=32, max_iter=2, tol=None, progress=False, random_state=0, scheduler="sync",
              chunk_size=100)
    eager = ok.DSGRegressor(**kw).fit(X, y)
    lazy = ok.DSGRegressor(**kw).fit(da.from_array(X, chunks=(100, 2)),
                                     da.from_array(y, chunks=100))
    np.testing.assert_array_equal(lazy.predict(Xt), eager.predict(Xt))


def test_the_hierarchical_kernel_refuses_bad_parameters_with_the_fix():
    with pytest.raises(ValidationError, match=r"inner must be the name of a kernel of the "
                                              r"table other than \['hierarchical'\]"):
        kernel_spec("hierarchical", {"inner": "hierarchical"})
    with pytest.raises(ValidationError, match=r"inner_features must be a positive integer; "
                                              r"got 2.5"):
        kernel_spec("hierarchical", {"inner_features": 2.5})
    k = ok.features.kernel_function("hierarchical")
    with pytest.raises(ValidationError, match=r"takes one bandwidth .*inner_bandwidth"):
        get_feature_map(HIER).block(0, 0, 2, 8, np.array([1.0, 2.0]))
    assert k(np.zeros((1, 2)), np.zeros((1, 2)))[0, 0] == pytest.approx(1.0)
    with pytest.raises(ValidationError, match=r"outer='chi2' takes non-negative inputs.*"
                                              r"inner map 'rbf' has features of both signs"):
        get_feature_map(kernel_spec("hierarchical", {"inner": "rbf", "outer": "chi2"}))
    relu = get_feature_map(kernel_spec("hierarchical", {"inner": "arccos(order=1)",
                                                         "outer": "chi2"}))
    X = _points(6)
    assert np.all(np.isfinite(relu.gram(X, X, 1.0)))


def test_the_gaussian_process_variance_reads_psi_of_the_rows():
    """DSGGaussianProcessRegressor with hierarchical features: the predictive standard
    deviation matches the exact posterior's with the kernel's exact form (psi of the
    standardized rows) within 3% (median over 40 test points)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(250, 2))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=250)
    Xt = rng.uniform(-3, 3, size=(40, 2))
    model = ok.DSGGaussianProcessRegressor(
        kernel="hierarchical", kernel_params={"inner_features": 64}, standardize=False,
        bandwidth=1.0, n_variance_features=2048, progress=False, random_state=0,
        scheduler="sync").fit(X, y)
    _, sd = model.predict(Xt, return_std=True)
    k = ok.features.kernel_function("hierarchical", inner_features=64)
    ks = k(Xt, X)
    var = np.diag(k(Xt, Xt)) - np.einsum(
        "ij,ji->i", ks, np.linalg.solve(k(X, X) + model.noise_ * np.eye(len(X)), ks.T))
    exact = np.sqrt(np.maximum(var, 0.0)) * model._config.y_scale
    assert np.median(np.abs(sd - exact) / exact) < 0.03


@pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")
def test_the_engine_with_hierarchical_features_equals_the_sequential_reference():
    """The chunk steps read psi(X) with the standardization folded into the inner block;
    the plain NumPy reference standardizes X, takes psi of it and the outer features of
    that: the same model after a pass (float64)."""
    from ooc_kernels.families.dsg import solver
    from ooc_kernels.families.dsg.reference import sequential_dsg
    from ooc_kernels.losses import get_loss
    from ooc_kernels.parallel.engine import run_rounds
    from ooc_kernels.families._spec import AlgorithmCase
    from ooc_kernels.testing._algorithms import case_data
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2)) * 2 + 1
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=30)
    config = solver.DSGConfig(
        loss_id=get_loss("squared").loss_id, target="regression", n_outputs=1,
        n_features_in=2, block_size=8, n_blocks=12, bandwidth=0.9, feature_seed=4,
        alpha=0.02, batch_size=3, learning_rate="inverse", eta0=2.0, t0=0.0,
        dtype="float64", shuffle=False, kernel=HIER, x_shift=(1.0, 1.0),
        x_scale=(2.0, 2.0))
    chunks = [{"X": X[:14], "y": y[:14]}, {"X": X[14:], "y": y[14:]}]
    case = AlgorithmCase(algorithm=solver.DSGAlgorithm(config), state=solver.init_state(config),
                         chunks=chunks, dims={"X": ("sample", "feature"), "y": ("sample",)},
                         seed=0)
    state = run_rounds(case.algorithm, case.state, case_data(case), n_epochs=1,
                       chunks_per_round=1, seed=0, shuffle=False, shuffle_chunks=1,
                       scheduler="sync").state
    ref = sequential_dsg(config, case.state, chunks)
    for name, value in solver.state_arrays(ref).items():
        np.testing.assert_allclose(solver.state_arrays(state)[name], value, rtol=1e-10,
                                   atol=1e-10 * max(1.0, np.abs(value).max()), err_msg=name)
    assert np.abs(solver.state_arrays(state)["coef"]).max() > 0
