"""Random Fourier feature blocks, the block cache and the median heuristic."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
from scipy import stats
from scipy.spatial.distance import pdist

from ooc_kernels.families.dsg.kernels import dsg_predict
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.features import cache as cache_mod
from ooc_kernels.features.bandwidth import median_heuristic
from ooc_kernels.features.cache import BlockCache, default_cache, set_cache_budget
from ooc_kernels.features.blocks import block_cache_key, rff_map, stacked_block_params
from ooc_kernels.features.rbf import (
    block_params,
    feature_scale,
    philox_normals,
    philox_uniforms,
    rbf_kernel,
)


# ---------------------------------------------------------------------------------------
# the counter-based stream
# ---------------------------------------------------------------------------------------
def test_golden_values_of_the_documented_recipe():
    """Pins Philox's raw stream and the recipe: a change here would change saved models."""
    words = np.random.Philox(key=np.array([12345, 7], dtype=np.uint64)).random_raw(3)
    assert words.tolist() == [751819530719010057, 6128695344906083465, 6599494311358180441]
    W, b = block_params(12345, 7, 3, 2, 1.0)
    np.testing.assert_allclose(
        W,
        [[-0.1425154653102971, 0.25081747762675843],
         [-0.5324919367481101, 0.7759101720088899],
         [-0.592584904766834, 0.6846251967129977]],
        rtol=1e-14,
    )
    np.testing.assert_allclose(b, [2.9572162665774275, 2.7592644798762307], rtol=1e-14)


def test_block_matches_scalar_transcription_of_recipe():
    seed, bid, d, r, sigma = 3, 2**63 + 5, 3, 3, 0.7  # d r odd: one normal of the last pair unused
    words = [int(w) for w in np.random.Philox(key=np.array([seed, bid], dtype=np.uint64)).random_raw(20)]
    u = [(w >> 11) * 2.0**-53 for w in words]
    normals = []
    for i in range(5):  # ceil(9 / 2) pairs
        rho = math.sqrt(-2.0 * math.log(1.0 - u[2 * i]))
        th = 2.0 * math.pi * u[2 * i + 1]
        normals += [rho * math.cos(th), rho * math.sin(th)]
    W_expect = np.array(normals[:9]).reshape(3, 3) / sigma
    b_expect = [2.0 * math.pi * u[10 + k] for k in range(r)]
    W, b = block_params(seed, bid, d, r, sigma)
    np.testing.assert_allclose(W, W_expect, rtol=1e-13)
    np.testing.assert_allclose(b, b_expect, rtol=1e-15)


def test_box_muller_normals_distribution():
    z = philox_normals(2024, 1, 100_000)
    assert abs(z.mean()) < 0.015  # 5 sigma of the mean
    assert abs(z.var() - 1.0) < 0.025
    assert stats.kstest(z, "norm").pvalue > 1e-3
    # pairs are independent: no correlation between the two members of a Box-Muller pair
    assert abs(np.corrcoef(z[0::2], z[1::2])[0, 1]) < 0.02


def test_phases_uniform():
    _, b = block_params(7, 0, 1, 50_000, 1.0)
    assert b.min() >= 0.0 and b.max() < 2 * np.pi
    assert stats.kstest(b / (2 * np.pi), "uniform").pvalue > 1e-3
    u = philox_uniforms(7, 0, 10, skip=5)
    assert ((u >= 0) & (u < 1)).all()


def test_bandwidth_scaling_and_column_normals():
    W1, b1 = block_params(1, 4, 40, 500, 1.0)
    W2, b2 = block_params(1, 4, 40, 500, 2.5)
    np.testing.assert_allclose(W2 * 2.5, W1, rtol=1e-15)
    np.testing.assert_array_equal(b1, b2)
    assert W1.std() == pytest.approx(1.0, abs=0.02)


# ---------------------------------------------------------------------------------------
# block_params / stacked_block_params
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_block_params_shapes_and_dtype(dtype):
    W, b = block_params(0, 3, 5, 7, 1.0, dtype)
    assert W.shape == (5, 7) and b.shape == (7,)
    assert W.dtype == dtype and b.dtype == dtype and W.flags.c_contiguous
    W64, b64 = block_params(0, 3, 5, 7, 1.0)
    np.testing.assert_array_equal(W, W64.astype(dtype))  # generated in float64, then cast
    np.testing.assert_array_equal(b, b64.astype(dtype))


def test_determinism_and_independence():
    W, b = block_params(11, 5, 4, 8, 1.0)
    W_again, b_again = block_params(11, 5, 4, 8, 1.0)
    assert W.tobytes() == W_again.tobytes() and b.tobytes() == b_again.tobytes()
    assert not np.array_equal(block_params(12, 5, 4, 8, 1.0)[0], W)  # other seed
    assert not np.array_equal(block_params(11, 6, 4, 8, 1.0)[0], W)  # other block
    assert not np.array_equal(block_params(5, 11, 4, 8, 1.0)[0], W)  # key words not symmetric
    # counter-based: independent of which other blocks were generated, and in what order
    for other in range(20):
        block_params(11, other, 4, 8, 1.0)
    Ws, bs = stacked_block_params(11, [9, 5, 0], 4, 8, 1.0)
    assert Ws[1].tobytes() == W.tobytes() and bs[1].tobytes() == b.tobytes()


def test_stacked_cached_equals_uncached_and_repeats():
    ids = np.array([3, 1, 3, 2**40, 1])
    cache = BlockCache(1 << 20)
    W1, b1 = stacked_block_params(8, ids, 6, 5, 0.5, np.float32, cache=cache)
    W2, b2 = stacked_block_params(8, ids, 6, 5, 0.5, np.float32, cache=cache)  # all hits
    W3, b3 = stacked_block_params(8, ids, 6, 5, 0.5, np.float32)
    assert W1.shape == (5, 6, 5) and b1.shape == (5, 5) and W1.flags.c_contiguous
    for A, B in [(W1, W2), (W1, W3), (b1, b2), (b1, b3)]:
        assert A.tobytes() == B.tobytes()
    np.testing.assert_array_equal(W1[0], W1[2])
    assert cache.misses == 3 and cache.hits == 3 and len(cache) == 3
    W1[0] += 1.0  # the stacked output is a copy, the cache is unaffected
    W4, _ = stacked_block_params(8, ids, 6, 5, 0.5, np.float32, cache=cache)
    np.testing.assert_array_equal(W4, W3)


def test_cache_key_distinguishes_everything():
    base = (1, 2, 3, 4, 0.5, np.float32)
    keys = {block_cache_key(*base)}
    for i, alt in enumerate([9, 9, 9, 9, 0.6, np.float64]):
        args = list(base)
        args[i] = alt
        keys.add(block_cache_key(*args))
    assert len(keys) == 7
    cache = BlockCache(1 << 20)
    Wa, _ = stacked_block_params(1, [0], 3, 4, 1.0, np.float64, cache=cache)
    Wb, _ = stacked_block_params(1, [0], 3, 4, 2.0, np.float64, cache=cache)
    np.testing.assert_allclose(Wb * 2.0, Wa)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"seed": -1}, "seed"),
        ({"seed": 2**64}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"block_id": -3}, "block_id"),
        ({"block_size": 0}, "block_size"),
        ({"n_features_in": 0}, "n_features_in"),
        ({"bandwidth": 0.0}, "bandwidth"),
        ({"bandwidth": float("nan")}, "bandwidth"),
        ({"dtype": np.int32}, "dtype"),
    ],
)
def test_block_params_validation(kwargs, match):
    args = {"seed": 0, "block_id": 0, "n_features_in": 2, "block_size": 3, "bandwidth": 1.0}
    args.update(kwargs)
    with pytest.raises(ValidationError, match=match):
        block_params(**args)


def test_stacked_validation():
    with pytest.raises(ValidationError, match="block_ids"):
        stacked_block_params(0, [[1, 2]], 2, 3, 1.0)
    with pytest.raises(ValidationError, match="integers"):
        stacked_block_params(0, [1.5], 2, 3, 1.0)
    W, b = stacked_block_params(0, [], 2, 3, 1.0)
    assert W.shape == (0, 2, 3) and b.shape == (0, 3)


# ---------------------------------------------------------------------------------------
# the estimator: unbiased, 1/sqrt(R) error, bounded
# ---------------------------------------------------------------------------------------
def test_feature_scale():
    assert feature_scale(1) == math.sqrt(2.0)
    assert feature_scale(512) == math.sqrt(2.0 / 512)
    with pytest.raises(ValidationError, match=r"block_size must be a positive integer; got 0"):
        feature_scale(0)


def test_rff_gram_error_shrinks_like_inverse_sqrt_features():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(15, 4))
    sigma = 2.0
    K = rbf_kernel(X, X, sigma)
    r = 64
    Rs = np.array([64, 256, 1024, 4096, 16384])
    errors = []
    for R in Rs:
        m = R // r
        errs = []
        for seed in range(4):
            Z = rff_map(X, seed, np.arange(m), sigma, r)
            errs.append(np.abs(Z @ Z.T / m - K).mean())
        errors.append(np.mean(errs))
    slope = np.polyfit(np.log(Rs), np.log(errors), 1)[0]
    assert -0.65 <= slope <= -0.35, (slope, errors)
    assert errors[-1] < 0.01


def test_feature_products_are_bounded():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 3)) * 5
    r = 16
    Z = rff_map(X, 4, [0, 1, 2], 0.3, r)
    prods = np.abs(Z[:, None, :] * Z[None, :, :])
    assert prods.max() <= 2.0 / r * (1 + 1e-12)
    assert prods.max() > 1.0 / r  # the bound is nearly attained


def test_rff_map_agrees_with_dsg_predict():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(9, 3))
    ids = [4, 0, 7]
    Z = rff_map(X, 5, ids, 1.2, 8)
    coef = rng.normal(size=(3, 8, 2))
    W, ph = stacked_block_params(5, ids, 3, 8, 1.2)
    np.testing.assert_allclose(Z @ coef.reshape(24, 2), dsg_predict(X, W, ph, coef, feature_scale(8)),
                               rtol=1e-12, atol=1e-13)
    assert rff_map(X.astype(np.float32), 5, ids, 1.2, 8).dtype == np.float32


def test_rbf_kernel_direct():
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(5, 3)), rng.normal(size=(4, 3))
    direct = np.exp(-((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1) / (2 * 0.8**2))
    np.testing.assert_allclose(rbf_kernel(X, Y, 0.8), direct, rtol=1e-12)
    with pytest.raises(ValidationError, match=r"same number of columns; got 3 and 2"):
        rbf_kernel(X, Y[:, :2], 1.0)


# ---------------------------------------------------------------------------------------
# BlockCache
# ---------------------------------------------------------------------------------------
def _arr(nbytes):
    return (np.zeros(nbytes, dtype=np.uint8),)


def test_cache_lru_eviction_and_counters():
    c = BlockCache(300)
    assert c.put("a", _arr(100)) and c.put("b", _arr(100)) and c.put("c", _arr(100))
    assert c.nbytes == 300 and c.evictions == 0
    assert c.get("a") is not None  # "a" becomes most recently used
    assert c.put("d", _arr(100))  # evicts "b", the least recently used
    assert c.keys() == ["c", "a", "d"] and c.evictions == 1 and c.nbytes == 300
    assert c.get("b") is None
    assert (c.hits, c.misses) == (1, 1)
    assert c.put("big", _arr(160))  # needs two evictions
    assert c.keys() == ["d", "big"] and c.nbytes == 260 and c.evictions == 3
    assert not c.put("huge", _arr(400))  # larger than the budget: not stored, nothing evicted
    assert "huge" not in c and c.keys() == ["d", "big"]
    assert c.put("d", _arr(40))  # replacing a key updates its size
    assert c.nbytes == 200 and c.keys() == ["big", "d"]
    c.max_bytes = 100  # shrinking evicts at once
    assert c.keys() == ["d"] and c.nbytes == 40
    c.clear()
    assert len(c) == 0 and c.nbytes == 0
    c.reset_stats()
    assert (c.hits, c.misses, c.evictions) == (0, 0, 0)


def test_cache_zero_budget_and_readonly():
    c = BlockCache(0)
    assert not c.put("a", _arr(8))
    c = BlockCache(100)
    a = np.zeros(3)
    c.put("a", (a,))
    with pytest.raises(ValueError, match="read-only"):
        c.get("a")[0][0] = 1.0
    calls = []
    v = c.get_or_create("k", lambda: calls.append(1) or (np.ones(2),))
    v2 = c.get_or_create("k", lambda: calls.append(1) or (np.ones(2),))
    assert v2[0] is v[0] and calls == [1]
    with pytest.raises(ValidationError, match=r"non-negative integer number of bytes; got -1"):
        BlockCache(-1)
    with pytest.raises(ValidationError, match=r"non-negative integer number of bytes; got 1.5"):
        BlockCache(1.5)


def test_cache_thread_safety_smoke():
    c = BlockCache(50 * 80)  # room for 50 arrays of 10 float64
    errors = []

    def work(tid):
        try:
            rng = np.random.default_rng(tid)
            for _ in range(2000):
                k = int(rng.integers(0, 120))
                v = c.get_or_create(k, lambda k=k: (np.full(10, float(k)),))
                assert v[0][0] == k
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert c.nbytes <= c.max_bytes and c.nbytes == 80 * len(c)
    assert c.hits + c.misses == 8000


def test_default_cache_env_and_budget(monkeypatch):
    monkeypatch.setattr(cache_mod, "_default", None)
    monkeypatch.setenv("OOC_KERNELS_FEATURE_CACHE_MB", "3")
    c = default_cache()
    assert c.max_bytes == 3 * 2**20 and default_cache() is c
    assert set_cache_budget(1024) is c and c.max_bytes == 1024
    monkeypatch.setattr(cache_mod, "_default", None)
    monkeypatch.delenv("OOC_KERNELS_FEATURE_CACHE_MB")
    assert default_cache().max_bytes == 256 * 2**20
    monkeypatch.setattr(cache_mod, "_default", None)
    monkeypatch.setenv("OOC_KERNELS_FEATURE_CACHE_MB", "lots")
    with pytest.raises(ValidationError, match="OOC_KERNELS_FEATURE_CACHE_MB"):
        default_cache()
    monkeypatch.setattr(cache_mod, "_default", None)


# ---------------------------------------------------------------------------------------
# median heuristic
# ---------------------------------------------------------------------------------------
def test_median_heuristic_matches_pdist():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 5)) * [1, 2, 3, 4, 5] + 100.0  # offset: Gram-form cancellation
    assert median_heuristic(X) == pytest.approx(np.median(pdist(X)), rel=1e-9)
    assert median_heuristic(X, 4.0) == pytest.approx(4.0 * np.median(pdist(X)), rel=1e-9)
    assert median_heuristic(X[:, 0]) == pytest.approx(np.median(pdist(X[:, :1])), rel=1e-9)


def test_median_heuristic_subsample():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(500, 3))
    s1 = median_heuristic(X, max_points=100, random_state=0)
    s2 = median_heuristic(X, max_points=100, random_state=0)
    assert s1 == s2
    idx = np.sort(np.random.default_rng(0).choice(500, size=100, replace=False))
    assert s1 == pytest.approx(np.median(pdist(X[idx])), rel=1e-9)
    assert s1 == pytest.approx(median_heuristic(X), rel=0.15)


@pytest.mark.parametrize(
    "X,kwargs,match",
    [
        (np.zeros((1, 3)), {}, "at least 2 points"),
        (np.array([[0.0], [np.nan], [1.0]]), {}, "NaN"),
        (np.eye(3), {"multiplier": 0.0}, "multiplier"),
        (np.eye(3), {"max_points": 1}, "max_points"),
        (np.zeros((2, 2, 2)), {}, "2-D"),
    ],
)
def test_median_heuristic_errors(X, kwargs, match):
    with pytest.raises(ValidationError, match=match):
        median_heuristic(X, **kwargs)


def test_median_heuristic_with_duplicated_points():
    """Mostly duplicated rows: the median of the distinct pairs (pdist reference); all rows
    equal: the kernel does not depend on the bandwidth, 1 times the multiplier."""
    rng = np.random.default_rng(3)
    distinct = rng.normal(size=(5, 3))
    X = np.vstack([np.repeat(distinct[:1], 40, axis=0), distinct[1:]])   # 44 rows, 4 + 1 distinct
    d = pdist(X)
    assert np.median(d) == 0.0
    assert median_heuristic(X, 2.0) == pytest.approx(2.0 * np.median(d[d > 0]), rel=1e-12)
    assert median_heuristic(np.ones((10, 3)), 0.5) == 0.5
