"""The feature-map table: every map's random features against its exact kernel, the numba
nonlinearities against their NumPy twins, cache keys, and the kernel saved with a model."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels._jit.rff import NONLINEARITIES, features_inplace, features_inplace_ref
from ooc_kernels.exceptions import InvalidParameterError, ValidationError
from ooc_kernels.families.dsg.solver import DSGConfig, DSGState, predict_chunk
from ooc_kernels.features import maps
from ooc_kernels.features.blocks import block_cache_key, rff_map, stacked_block_params
from ooc_kernels.features.cache import BlockCache
from ooc_kernels.features.maps import FEATURE_MAPS, GAUSSIAN, get_feature_map
from ooc_kernels.features.rbf import BlockWriter

DATA = Path(__file__).parent / "data"


def _mc_error(fmap, X, bandwidth, n_features, r, seeds):
    """RMS error of the ``n_features``-feature Monte Carlo Gram matrix against the exact
    kernel, averaged over ``seeds``."""
    exact = fmap.gram(X, X, bandwidth)
    errors = []
    for seed in seeds:
        Z = rff_map(X, seed, np.arange(n_features // r), bandwidth, r, np.float64,
                    kernel=fmap)
        K_hat = Z @ Z.T / (n_features // r)
        errors.append(math.sqrt(np.mean((K_hat - exact) ** 2)))
    return float(np.mean(errors))


@pytest.mark.parametrize("name", ["rbf"])
def test_monte_carlo_gram_converges_to_the_exact_kernel(name):
    """Error ~ 1/sqrt(features): 16 times the features, about a quarter of the error (every
    row of the table: tests/test_kernels_table.py)."""
    fmap = FEATURE_MAPS[name]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    bandwidth = 1.3
    r, n = 32, 256
    err_n = _mc_error(fmap, X, bandwidth, n, r, seeds=range(6))
    err_16n = _mc_error(fmap, X, bandwidth, 16 * n, r, seeds=range(6))
    assert err_n < 2.0 / math.sqrt(n)              # the size 1/sqrt(r) predicts
    assert 2.5 < err_n / err_16n < 6.5             # sqrt(16) = 4


def test_monte_carlo_check_fails_for_a_map_whose_exact_kernel_is_wrong():
    """The convergence test's mutant: an exact kernel with another bandwidth is a bias the
    features never average away."""
    wrong = dataclasses.replace(
        GAUSSIAN, exact=lambda X, Y, bw, dtype=np.float64: GAUSSIAN.exact(X, Y, 1.2 * bw, dtype))
    X = np.random.default_rng(0).normal(size=(12, 3))
    err_n = _mc_error(wrong, X, 1.3, 256, 32, seeds=range(6))
    err_16n = _mc_error(wrong, X, 1.3, 16 * 256, 32, seeds=range(6))
    assert not err_n / err_16n > 2.5


@pytest.mark.parametrize("name", sorted(NONLINEARITIES))
@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-12), (np.float32, 2e-6)])
def test_numba_nonlinearity_matches_its_numpy_twin(name, dtype, tol):
    kind = NONLINEARITIES[name]
    rng = np.random.default_rng(1)
    P = (20.0 * rng.normal(size=(7, 9))).astype(dtype)
    phase = rng.uniform(0, 2 * np.pi, 9).astype(dtype)
    got, want = P.copy(), P.copy()
    features_inplace(kind, got, phase, 0.7)
    features_inplace_ref(kind, want, phase, 0.7)
    np.testing.assert_allclose(got, want, rtol=0, atol=tol)
    assert not np.array_equal(got, P)  # it did write the features


def test_an_unknown_nonlinearity_id_raises_in_both_twins():
    P = np.zeros((1, 1))
    with pytest.raises(ValidationError, match="unknown nonlinearity id"):
        features_inplace(99, P, np.zeros(1), 1.0)
    with pytest.raises(ValidationError, match=r"unknown nonlinearity id 99; the ids are"):
        features_inplace_ref(99, P, np.zeros(1), 1.0)


def _doubled_writer(seed, d, r, input_scale, dtype, affine):
    """A test map's sampler: the Gaussian frequencies at half the bandwidth."""
    return BlockWriter(seed, d, r, input_scale / 2.0, dtype, affine)


DOUBLED = dataclasses.replace(GAUSSIAN, name="rbf_test_half", writer=_doubled_writer,
                              exact=lambda X, Y, bw, dtype=np.float64:
                              GAUSSIAN.exact(X, Y, bw / 2.0, dtype))


def test_cache_keys_differ_between_maps_and_parameters():
    key = block_cache_key(1, 2, 3, 4, 0.5, np.float32)
    assert key != block_cache_key(1, 2, 3, 4, 0.5, np.float32, kernel=DOUBLED)
    assert key != block_cache_key(1, 2, 3, 4, 0.25, np.float32)
    # a shared cache serves each map its own blocks (same seed, id and bandwidth)
    cache = BlockCache(1 << 20)
    W1, _ = stacked_block_params(3, [0], 2, 4, 1.0, cache=cache)
    W2, _ = stacked_block_params(3, [0], 2, 4, 1.0, cache=cache, kernel=DOUBLED)
    np.testing.assert_array_equal(W2, 2.0 * W1)
    assert len(cache) == 2


def test_a_colliding_key_would_serve_the_wrong_block(monkeypatch):
    """The key test's mutant: a map whose key omits its name gets the other's blocks."""
    colliding = dataclasses.replace(DOUBLED)
    object.__setattr__(colliding, "key", lambda *a: GAUSSIAN.key(*a))
    cache = BlockCache(1 << 20)
    W1, _ = stacked_block_params(3, [0], 2, 4, 1.0, cache=cache)
    W2, _ = stacked_block_params(3, [0], 2, 4, 1.0, cache=cache, kernel=colliding)
    assert np.array_equal(W1, W2)  # served from the cache: wrong


def test_the_input_scale_is_a_per_input_vector():
    """An isotropic bandwidth is the same value per input; the sampler divides row i of W
    (input coordinate i) by entry i, bit for bit the scalar form."""
    np.testing.assert_array_equal(GAUSSIAN.input_scale(0.7, 3), [0.7, 0.7, 0.7])
    W_scalar = GAUSSIAN.block(5, 1, 3, 8, 0.7)[0]
    out_W, out_p = np.empty((3, 8)), np.empty(8)
    BlockWriter(5, 3, 8, np.array([0.7, 1.4, 0.35]), np.float64).write(1, out_W, out_p)
    np.testing.assert_array_equal(out_W, W_scalar * np.array([[1.0], [0.5], [2.0]]))
    with pytest.raises(ValidationError, match=r"one per input coordinate"):
        BlockWriter(5, 3, 8, np.array([0.7, -1.0, 1.0]), np.float64)


def test_an_unknown_kernel_is_a_library_error_naming_the_registered_ones():
    with pytest.raises(ValidationError, match=r"unknown kernel 'laplace'; the registered "
                                              r"kernels are \['arccos', 'cauchy', 'chi2', "
                                              r"'hellinger', 'hierarchical', "
                                              r"'intersection', 'js', "
                                              r"'laplacian', 'matern', 'poly', 'rbf', "
                                              r"'rbf_orthogonal', 'sum'\]"):
        get_feature_map("laplace")
    with pytest.raises(InvalidParameterError, match=r"kernel"):
        ok.DSGRegressor(kernel="laplace").fit(np.zeros((4, 2)), np.zeros(4))


def test_the_config_kernel_reaches_the_solver(monkeypatch):
    """A second map in the table is used by prediction when the config names it."""
    monkeypatch.setitem(maps.FEATURE_MAPS, DOUBLED.name, DOUBLED)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5, 2))
    coef = rng.normal(size=(3, 4, 1))
    base = DSGConfig(loss_id=0, target="regression", n_outputs=1, n_features_in=2,
                     block_size=4, n_blocks=3, bandwidth=1.0, feature_seed=9, alpha=0.0,
                     batch_size=2, learning_rate="constant", eta0=1.0, t0=0.0,
                     dtype="float64")
    state = DSGState(coef=coef, n_blocks_seen=3)
    for fmap in (GAUSSIAN, DOUBLED):
        config = dataclasses.replace(base, kernel=fmap.name)
        Z = rff_map(X, 9, np.arange(3), 1.0, 4, np.float64, kernel=fmap)
        np.testing.assert_allclose(predict_chunk(config, state, X), Z @ coef.reshape(12, 1),
                                   rtol=1e-12, atol=1e-12)


def _saved_config(path) -> dict:
    attrs = json.loads((Path(path) / "zarr.json").read_text())["attributes"]
    return attrs["ooc_kernels"]["fitted"]["config"]


def test_kernel_is_saved_and_loaded(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2)).astype(np.float32)
    y = np.sin(X[:, 0])
    reg = ok.DSGRegressor(n_features=32, block_size=8, batch_size=8, max_iter=1, tol=None,
                          bandwidth=1.0, random_state=0, progress=False).fit(X, y)
    reg.save(tmp_path / "m.zarr")
    assert _saved_config(tmp_path / "m.zarr")["kernel"] == "rbf"
    loaded = ok.load(tmp_path / "m.zarr")
    assert loaded._config.kernel == "rbf" and loaded._config == reg._config
    np.testing.assert_array_equal(loaded.predict(X), reg.predict(X))


def test_a_model_saved_without_a_kernel_loads_as_the_gaussian_map():
    """``dsg_classifier_format3.zarr`` was written by the library before models stored
    their kernel: it loads as today's Gaussian map with the same decision values."""
    path = DATA / "dsg_classifier_format3.zarr"
    assert "kernel" not in _saved_config(path)
    expected = np.load(DATA / "dsg_classifier_format3_expected.npz")
    clf = ok.load(path)
    assert clf._config.kernel == "rbf" and clf.get_params()["kernel_params"] is None
    np.testing.assert_array_equal(clf.decision_function(expected["X"]), expected["decision"])
