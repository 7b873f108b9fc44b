"""Numba kernels of ``ooc_kernels._jit`` against their numpy twins and against Algorithm 1."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ooc_kernels.families.dsg.kernels import (
    _tile_rows,
    dsg_chunk_update,
    dsg_chunk_update_ref,
    dsg_predict,
    dsg_predict_ref,
)
from ooc_kernels.families.dsg.kernels_full import dsg_full_update, dsg_full_update_ref
from ooc_kernels._jit.losses import loss_gradient
from ooc_kernels._jit.rff import (
    cos_affine_inplace,
    cos_affine_inplace_ref,
    rff_transform,
    rff_transform_ref,
)
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.losses.reference import loss_gradient_ref
from ooc_kernels.features.blocks import stacked_block_params
from ooc_kernels.features.rbf import feature_scale

DTYPES = [np.float32, np.float64]
TOL = {np.float32: {"rtol": 1e-4, "atol": 1e-5}, np.float64: {"rtol": 1e-12, "atol": 1e-13}}
LOSS_IDS = [0, 1, 2, 3]


def _targets(rng, loss_id, n, C, dtype):
    if loss_id == 0:
        Y = rng.normal(size=(n, C))
    elif loss_id in (1, 2):
        Y = rng.choice([-1.0, 1.0], size=(n, C))
    else:
        Y = np.eye(C)[rng.integers(0, C, n)]
    return np.ascontiguousarray(Y, dtype=dtype)


def _problem(dtype, loss_id, C, n=23, d=5, r=6, b=4, seed=0):
    rng = np.random.default_rng(seed)
    X = np.ascontiguousarray(rng.normal(size=(n, d)), dtype=dtype)
    Y = _targets(rng, loss_id, n, C, dtype)
    m = math.ceil(n / b)
    W, ph = stacked_block_params(seed + 11, np.arange(m), d, r, 1.3, dtype)
    F0 = np.ascontiguousarray(0.3 * rng.normal(size=(n, C)), dtype=dtype)
    gammas = 0.8 / np.sqrt(1.0 + np.arange(m))
    return X, Y, F0, W, ph, gammas


def _close(a, b, dtype):
    np.testing.assert_allclose(a, b, **TOL[dtype])


# The kernels take (X, Y, sw, F, W, phase, (gammas, averaged), params); these wrappers keep
# the older tests' argument order (no weights, no averaging) and return what they check.
def _steps(gammas, averaged=None):
    return np.asarray(gammas, dtype=np.float64), (
        np.zeros(len(gammas), dtype=bool) if averaged is None else averaged)


def _chunk(X, Y, F, W, ph, gammas, alpha, b, loss_id, scale, loss_param=0.0):
    out = dsg_chunk_update(X, Y, np.ones(len(X)), F, W, ph, _steps(gammas),
                           (alpha, b, loss_id, scale, loss_param))
    return out[0], out[1]


def _chunk_ref(X, Y, F, W, ph, gammas, alpha, b, loss_id, scale, loss_param=0.0):
    out = dsg_chunk_update_ref(X, Y, np.ones(len(X)), F, W, ph, _steps(gammas),
                               (alpha, b, loss_id, scale, loss_param))
    return out[0], out[1]


def _full(X, Y, W, ph, coef, gammas, alpha, b, loss_id, scale, loss_param=0.0,
          max_buffer_bytes=1 << 26):
    empty = np.zeros((0,) + coef.shape[1:])
    return dsg_full_update(X, Y, np.ones(len(X)), W, ph, coef, empty, 0, _steps(gammas),
                           (alpha, b, loss_id, scale, loss_param), max_buffer_bytes)[0]


def _full_ref(X, Y, W, ph, coef, gammas, alpha, b, loss_id, scale, loss_param=0.0):
    empty = np.zeros((0,) + coef.shape[1:])
    return dsg_full_update_ref(X, Y, np.ones(len(X)), W, ph, coef, empty, 0,
                               _steps(gammas), (alpha, b, loss_id, scale, loss_param))[0]


# ---------------------------------------------------------------------------------------
# rff / cosine
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 7, 130])
def test_rff_transform_matches_twin(dtype, n):
    rng = np.random.default_rng(1)
    r = 8192  # tiles of 64 rows: n = 130 spans three tiles, the last one ragged
    X = np.ascontiguousarray(rng.normal(size=(n, 3)), dtype=dtype)
    W = np.ascontiguousarray(rng.normal(size=(3, r)), dtype=dtype)
    ph = rng.uniform(0, 2 * np.pi, r).astype(dtype)
    Z = rff_transform(X, W, ph, feature_scale(r))
    assert Z.dtype == dtype and Z.shape == (n, r)
    _close(Z, rff_transform_ref(X, W, ph, feature_scale(r)), dtype)


def test_float32_cosine_accuracy():
    x = np.linspace(-1000.0, 1000.0, 400_001).astype(np.float32)[None, :]
    ph = np.zeros(x.shape[1], np.float32)
    P = x.copy()
    cos_affine_inplace(P, ph, 1.0)
    err = np.abs(P.astype(np.float64) - np.cos(x.astype(np.float64)))
    assert err.max() < 1e-6
    # phases are added in float32 before the cosine, like the twin
    ph = np.linspace(0, 2 * np.pi, x.shape[1], dtype=np.float32)
    P = x.copy()
    cos_affine_inplace(P, ph, 0.5)
    Q = x.copy()
    cos_affine_inplace_ref(Q, ph, 0.5)
    assert np.abs(P - Q).max() < 1e-6


def test_float64_cosine_is_libm():
    rng = np.random.default_rng(0)
    x = rng.normal(scale=20, size=(3, 50))
    ph = rng.uniform(0, 6, 50)
    P = x.copy()
    cos_affine_inplace(P, ph, 2.0)
    np.testing.assert_allclose(P, 2.0 * np.cos(x + ph), rtol=0, atol=1e-15)


def test_rff_transform_shape_error():
    with pytest.raises(ValidationError, match="rff_transform"):
        rff_transform(np.zeros((2, 3)), np.zeros((4, 2)), np.zeros(2), 1.0)


# ---------------------------------------------------------------------------------------
# losses
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("loss_id", LOSS_IDS)
@pytest.mark.parametrize("C", [1, 3])
def test_loss_gradient_matches_twin(dtype, loss_id, C):
    rng = np.random.default_rng(loss_id)
    F = np.ascontiguousarray(3 * rng.normal(size=(40, C)), dtype=dtype)
    F[0] = 200.0  # large values must stay finite (stable sigmoid / softmax)
    F[1] = -200.0
    Y = _targets(rng, loss_id, 40, C, dtype)
    out = np.empty_like(F)
    loss_gradient(loss_id, F, Y, out)
    assert np.isfinite(out).all()
    _close(out, loss_gradient_ref(loss_id, F, Y).astype(dtype), dtype)


def test_loss_gradient_unknown_id():
    F = np.zeros((2, 1))
    with pytest.raises(ValidationError, match="unknown loss_id"):
        loss_gradient(9, F, F, np.empty_like(F))
    with pytest.raises(ValidationError, match="unknown loss_id"):
        loss_gradient_ref(9, F, F)


def test_hinge_kink_gives_zero():
    F = np.array([[1.0], [-1.0], [0.999]])
    Y = np.array([[1.0], [-1.0], [1.0]])
    out = np.empty_like(F)
    loss_gradient(1, F, Y, out)
    assert out.ravel().tolist() == [0.0, 0.0, -1.0]


# ---------------------------------------------------------------------------------------
# dsg_predict
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("C", [1, 3])
@pytest.mark.parametrize("n,r", [(23, 6), (150, 8192)])
def test_dsg_predict_matches_twin(dtype, C, n, r):
    rng = np.random.default_rng(2)
    X = np.ascontiguousarray(rng.normal(size=(n, 4)), dtype=dtype)
    W, ph = stacked_block_params(3, [0, 5, 2], 4, r, 0.9, dtype)
    coef = np.ascontiguousarray(rng.normal(size=(3, r, C)) / r, dtype=dtype)
    if r == 8192:
        assert _tile_rows(r, np.dtype(dtype).itemsize) < n  # several row tiles, ragged last
    F = dsg_predict(X, W, ph, coef, feature_scale(r))
    assert F.dtype == dtype and F.shape == (n, C)
    _close(F, dsg_predict_ref(X, W, ph, coef, feature_scale(r)), dtype)


def test_dsg_predict_empty_model_and_errors():
    X = np.zeros((4, 2))
    F = dsg_predict(X, np.zeros((0, 2, 3)), np.zeros((0, 3)), np.zeros((0, 3, 2)), 1.0)
    assert F.shape == (4, 2) and not F.any()
    with pytest.raises(ValidationError, match=r"W must be \(m, d, r\)"):
        dsg_predict(X, np.zeros((1, 3, 3)), np.zeros((1, 3)), np.zeros((1, 3, 2)), 1.0)
    with pytest.raises(ValidationError, match=r"coef must be \(m, r, C\)"):
        dsg_predict(X, np.zeros((1, 2, 3)), np.zeros((1, 3)), np.zeros((2, 3, 2)), 1.0)


# ---------------------------------------------------------------------------------------
# dsg_chunk_update vs twin
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("loss_id", LOSS_IDS)
@pytest.mark.parametrize("C", [1, 3])
def test_chunk_update_matches_twin(dtype, loss_id, C):
    if loss_id == 3 and C == 1:
        C = 2  # softmax with one class has a zero gradient; use two
    X, Y, F0, W, ph, gammas = _problem(dtype, loss_id, C)  # n = 23, b = 4: last batch has 3 rows
    r = W.shape[2]
    coef, decay = _chunk(X, Y, F0.copy(), W, ph, gammas, 0.1, 4, loss_id, feature_scale(r))
    coef_ref, decay_ref = _chunk_ref(X, Y, F0, W, ph, gammas, 0.1, 4, loss_id, feature_scale(r))
    assert coef.dtype == np.float64 and coef.shape == (6, r, C)  # coefficients: float64
    assert np.abs(coef).max() > 1e-3  # the test data produce real updates
    _close(coef, coef_ref, dtype)
    assert decay == pytest.approx(decay_ref, rel=1e-15)
    assert decay == pytest.approx(np.prod(1 - 0.1 * gammas), rel=1e-15)


@pytest.mark.parametrize("dtype", DTYPES)
def test_chunk_update_many_tiles_matches_twin(dtype):
    # r = 8192 gives tiles of 64 rows; b = 40 with n = 150: ragged batches and tiles
    r = 8192
    assert _tile_rows(r, np.dtype(dtype).itemsize) < 110
    X, Y, F0, W, ph, gammas = _problem(dtype, 2, 2, n=150, d=3, r=r, b=40, seed=4)
    coef, _ = _chunk(X, Y, F0.copy(), W, ph, gammas, 0.05, 40, 2, feature_scale(r))
    coef_ref, _ = _chunk_ref(X, Y, F0, W, ph, gammas, 0.05, 40, 2, feature_scale(r))
    _close(coef, coef_ref, dtype)


def test_chunk_update_zero_factor_wipes_older_blocks():
    # gamma_s * alpha = 1 at step 2: blocks 0, 1 and the model's past are wiped exactly
    X, Y, F0, W, ph, _ = _problem(np.float64, 0, 1, n=20, b=4)
    gammas = np.array([0.5, 0.5, 2.0, 0.5, 0.5])
    coef, decay = _chunk(X, Y, F0.copy(), W, ph, gammas, 0.5, 4, 0, feature_scale(6))
    coef_ref, _ = _chunk_ref(X, Y, F0, W, ph, gammas, 0.5, 4, 0, feature_scale(6))
    assert decay == 0.0
    assert not coef[:2].any() and coef[2:].any()
    _close(coef, coef_ref, np.float64)


def test_chunk_update_returns_progressive_predictions_in_F():
    X, Y, F0, W, ph, gammas = _problem(np.float64, 0, 2)
    F = F0.copy()
    _chunk(X, Y, F, W, ph, gammas, 0.1, 4, 0, feature_scale(6))
    # batch s of F holds the model after steps 0..s-1: recompute for the last batch
    s = 5
    coef_prefix, decay_prefix = _chunk_ref(
        X[:20], Y[:20], F0[:20], W[:s], ph[:s], gammas[:s], 0.1, 4, 0, feature_scale(6)
    )
    expect = F0[20:] * decay_prefix + dsg_predict_ref(X[20:], W[:s], ph[:s], coef_prefix, feature_scale(6))
    np.testing.assert_allclose(F[20:], expect, rtol=1e-12, atol=1e-13)


def test_chunk_update_shape_errors():
    X, Y, F0, W, ph, gammas = _problem(np.float64, 0, 1)
    sc = feature_scale(6)
    with pytest.raises(ValidationError, match="ceil"):
        _chunk(X, Y, F0, W[:3], ph[:3], gammas[:3], 0.1, 4, 0, sc)
    with pytest.raises(ValidationError, match="gammas"):
        _chunk(X, Y, F0, W, ph, gammas[:2], 0.1, 4, 0, sc)
    with pytest.raises(ValidationError, match="agree"):
        _chunk(X, Y[:5], F0, W, ph, gammas, 0.1, 4, 0, sc)
    with pytest.raises(ValidationError, match="batch_size"):
        _chunk(X, Y, F0, W, ph, gammas, 0.1, 0, 0, sc)


# ---------------------------------------------------------------------------------------
# Algorithm 1 / 2 of the paper, transcribed literally (batch 1, one feature per block)
# ---------------------------------------------------------------------------------------
def _phi(x, w, b):
    return math.sqrt(2.0) * math.cos(float(np.dot(w, x)) + b)


def _algorithm1(X, Y, omegas, phases, gammas, nu, loss_id, alphas=None, omegas_old=(), phases_old=()):
    """Algorithm 1 on the rows of X; ``alphas`` (list of C-vectors) continues an older model."""
    alphas = [] if alphas is None else alphas
    all_w = list(omegas_old)
    all_b = list(phases_old)
    preds = []
    for i in range(X.shape[0]):
        # step 4: f(x_i) = Predict(x_i, {alpha_j}), Algorithm 2
        f = np.zeros(Y.shape[1])
        for a, w, b in zip(alphas, all_w, all_b):
            f = f + a * _phi(X[i], w, b)
        preds.append(f)
        g = loss_gradient_ref(loss_id, f[None, :], Y[i][None, :])[0]
        new = -gammas[i] * g * _phi(X[i], omegas[i], phases[i])  # step 5
        alphas = [(1.0 - gammas[i] * nu) * a for a in alphas]  # step 6
        alphas.append(new)
        all_w.append(omegas[i])
        all_b.append(phases[i])
    return alphas, np.array(preds)


@pytest.mark.parametrize("loss_id,C", [(0, 1), (1, 1), (2, 1), (2, 3), (3, 3)])
def test_batch1_block1_equals_algorithm1(loss_id, C):
    rng = np.random.default_rng(10 + loss_id)
    n, d = 25, 3
    X = rng.normal(size=(n, d))
    Y = _targets(rng, loss_id, n, C, np.float64)
    W, ph = stacked_block_params(99, np.arange(n), d, 1, 1.0, np.float64)
    theta, nu = 2.0, 0.1
    gammas = theta / np.arange(1, n + 1)
    F = np.zeros((n, C))
    coef, _ = _chunk(X, Y, F, W, ph, gammas, nu, 1, loss_id, feature_scale(1))
    alphas, preds = _algorithm1(X, Y, W[:, :, 0], ph[:, 0], gammas, nu, loss_id)
    np.testing.assert_allclose(coef[:, 0, :], np.array(alphas), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(F, preds, rtol=1e-12, atol=1e-12)  # progressive predictions
    # Algorithm 2 on fresh points equals dsg_predict
    Xt = rng.normal(size=(6, d))
    f_alg2 = np.array([[sum(a[c] * _phi(x, w, b) for a, w, b in zip(alphas, W[:, :, 0], ph[:, 0]))
                        for c in range(C)] for x in Xt])
    np.testing.assert_allclose(dsg_predict(Xt, W, ph, coef, feature_scale(1)), f_alg2, rtol=1e-12, atol=1e-12)


def test_two_chunks_with_caller_rule_equal_algorithm1():
    """Old coefficients times ``decay`` plus the new blocks = Algorithm 1 over both chunks."""
    rng = np.random.default_rng(3)
    n1, n2, d, C = 12, 9, 4, 1
    X = rng.normal(size=(n1 + n2, d))
    Y = _targets(rng, 2, n1 + n2, C, np.float64)
    W, ph = stacked_block_params(5, np.arange(n1 + n2), d, 1, 1.5, np.float64)
    gammas = 1.0 / (1.0 + 0.3 * np.arange(n1 + n2))
    nu, sc = 0.2, feature_scale(1)
    coef1, _ = _chunk(X[:n1], Y[:n1], np.zeros((n1, C)), W[:n1], ph[:n1], gammas[:n1], nu, 1, 2, sc)
    F2 = dsg_predict(X[n1:], W[:n1], ph[:n1], coef1, sc)
    coef2, decay2 = _chunk(X[n1:], Y[n1:], F2, W[n1:], ph[n1:], gammas[n1:], nu, 1, 2, sc)
    model = np.concatenate([coef1 * decay2, coef2])
    alphas, _ = _algorithm1(X, Y, W[:, :, 0], ph[:, 0], gammas, nu, 2)
    np.testing.assert_allclose(model[:, 0, :], np.array(alphas), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------
# dsg_full_update (all blocks updated: the capped phase) vs twin
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("loss_id", LOSS_IDS)
@pytest.mark.parametrize("C", [1, 3])
@pytest.mark.parametrize("keep_features", [True, False])
def test_full_update_matches_twin(dtype, loss_id, C, keep_features):
    if loss_id == 3 and C == 1:
        C = 2
    rng = np.random.default_rng(loss_id + 10 * C)
    n, d, r, m, b = 23, 5, 6, 4, 4                       # ragged: the last batch has 3 rows
    X = np.ascontiguousarray(rng.normal(size=(n, d)), dtype=dtype)
    Y = _targets(rng, loss_id, n, C, dtype)
    W, ph = stacked_block_params(3, np.arange(m), d, r, 1.1, dtype)
    coef = np.ascontiguousarray(0.2 * rng.normal(size=(m, r, C)), dtype=dtype)
    gammas = 0.9 / np.sqrt(1.0 + np.arange(math.ceil(n / b)))
    budget = 1 << 30 if keep_features else 0           # 0: recompute features for the gradient
    got = _full(X, Y, W, ph, coef, gammas, 0.1, b, loss_id, feature_scale(r), 0.0,
                          budget)
    ref = _full_ref(X, Y, W, ph, coef, gammas, 0.1, b, loss_id, feature_scale(r))
    assert got.dtype == np.float64 and got.shape == coef.shape  # float64 master copy
    assert np.abs(got - coef).max() > 1e-3             # the steps changed the model
    _close(got, ref, dtype)


def test_full_update_keeps_small_late_steps_in_float64():
    """float32 data, float64 coefficients: 300 updates of ~1e-9 on coefficients of ~1
    accumulate (each is below float32's resolution at 1, so a float32 state keeps none)."""
    rng = np.random.default_rng(5)
    n, d, r, m, b = 300, 3, 4, 2, 1
    X = np.ascontiguousarray(rng.normal(size=(n, d)), dtype=np.float32)
    Y = np.full((n, 1), -1.0, dtype=np.float32)                 # squared loss, residual ~ m r
    W, ph = stacked_block_params(1, np.arange(m), d, r, 1.0, np.float32)
    coef = np.ones((m, r, 1))
    gammas = np.full(n, 1e-9)
    got = _full(X, Y, W, ph, coef, gammas, 0.0, b, 0, feature_scale(r))
    change = got - coef
    assert np.abs(change).max() > 1e-8                          # the updates were kept
    # reference: the same steps with every product in float64 (features from float32 X)
    Z = [feature_scale(r) * np.cos(X.astype(np.float64) @ W[j].astype(np.float64)
                                   + ph[j].astype(np.float64)) for j in range(m)]
    ref = coef.copy()
    for s in range(n):
        f = sum(Z[j][s] @ ref[j] for j in range(m))
        ref = np.stack([ref[j] - gammas[s] / m * np.outer(Z[j][s], f - Y[s, 0].astype(float))
                        for j in range(m)])
    np.testing.assert_allclose(change, ref - coef, rtol=1e-4)
    # the same steps on a float32 state keep nothing: every update is below half an ulp
    state32 = coef.astype(np.float32)
    for s in range(n):
        f = sum(Z[j][s] @ state32[j] for j in range(m))
        state32 = np.stack([state32[j] - np.float32(gammas[s] / m) * np.outer(
            Z[j][s], f - Y[s, 0]).astype(np.float32) for j in range(m)])
    assert np.array_equal(state32, coef.astype(np.float32))


def test_full_update_step_is_the_averaged_kernel_gradient():
    """One step of batch 1, r = 1: alpha_j <- (1 - g nu) alpha_j - g/m l'(f(x)) phi_j(x)."""
    rng = np.random.default_rng(0)
    m, d = 5, 3
    X = rng.normal(size=(1, d))
    Y = np.array([[0.7]])
    W, ph = stacked_block_params(9, np.arange(m), d, 1, 1.0, np.float64)
    coef = rng.normal(size=(m, 1, 1))
    phi = np.sqrt(2.0) * np.cos(X[0] @ W[:, :, 0].T + ph[:, 0])      # phi_j(x), j = 1..m
    f = float(phi @ coef[:, 0, 0])
    expected = (1 - 0.3 * 0.2) * coef[:, 0, 0] - 0.3 / m * (f - 0.7) * phi
    got = _full(X, Y, W, ph, coef, np.array([0.3]), 0.2, 1, 0, np.sqrt(2.0))
    np.testing.assert_allclose(got[:, 0, 0], expected, rtol=0, atol=1e-14)


# ---------------------------------------------------------------------------------------
# compilation flags and threads
# ---------------------------------------------------------------------------------------
def test_every_kernel_is_cached_and_nogil():
    import importlib

    import numba
    from numba.core.caching import FunctionCache

    from ooc_kernels._jit._cache import cache_dir

    from pathlib import Path

    import ooc_kernels

    root = Path(ooc_kernels.__file__).parent
    family_kernels = sorted(root.glob("families/**/kernels*.py"))   # a family's numba code
    names = [f"ooc_kernels._jit.{name}" for name in ("losses", "rff", "rows")] + [
        ".".join(("ooc_kernels", *p.relative_to(root).with_suffix("").parts))
        for p in family_kernels]
    mods = [importlib.import_module(name) for name in names]
    kernels = [
        obj
        for mod in mods
        for obj in vars(mod).values()
        if isinstance(obj, numba.core.registry.CPUDispatcher) and obj.py_func.__module__ == mod.__name__
    ]
    assert len(kernels) >= 30
    for k in kernels:
        assert k.targetoptions.get("nogil") is True, k
        # cached on disk, in the per-user kernel cache, not next to the module
        assert isinstance(k._cache, FunctionCache), k
        assert k.stats.cache_path == str(cache_dir()), k


def test_chunk_update_in_two_threads_gives_same_result():
    from concurrent.futures import ThreadPoolExecutor

    X, Y, F0, W, ph, gammas = _problem(np.float32, 3, 3, n=200, d=8, r=64, b=16, seed=6)
    args = (W, ph, gammas, 0.01, 16, 3, feature_scale(64))
    expect = _chunk(X, Y, F0.copy(), *args)[0]
    with ThreadPoolExecutor(2) as ex:
        results = list(ex.map(lambda _: _chunk(X, Y, F0.copy(), *args)[0], range(4)))
    for res in results:
        np.testing.assert_allclose(res, expect, rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------------------
# permute_rows_inplace vs twin
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000])
def test_permute_rows_inplace_matches_twin(dtype, n):
    from ooc_kernels._jit.rows import permute_rows_inplace, permute_rows_ref

    rng = np.random.default_rng(n)
    X = np.ascontiguousarray(rng.normal(size=(n, 5)), dtype=dtype)
    for order in (rng.permutation(n), np.arange(n), np.arange(n)[::-1].copy()):
        expected = permute_rows_ref(X, order)
        got = X.copy()
        permute_rows_inplace(got, order.astype(np.int64))
        np.testing.assert_array_equal(got, expected)


def test_permute_rows_inplace_refuses_what_is_not_a_permutation():
    from ooc_kernels._jit.rows import permute_rows_inplace

    X = np.zeros((3, 2))
    with pytest.raises(ValidationError, match="not a permutation"):
        permute_rows_inplace(X, np.array([0, 0, 1]))
    with pytest.raises(ValidationError, match="one entry per row"):
        permute_rows_inplace(X, np.array([0, 1]))


# ---------------------------------------------------------------------------------------
# sample weights, progressive loss and averaged iterates vs the twins
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("loss_id", LOSS_IDS)
def test_chunk_update_weights_loss_and_average_match_twin(dtype, loss_id):
    C = 3 if loss_id == 3 else 1
    X, Y, F0, W, ph, gammas = _problem(dtype, loss_id, C)
    r = W.shape[2]
    rng = np.random.default_rng(7)
    sw = rng.uniform(0.2, 2.0, len(X))
    averaged = np.array([False, False, True, True, False, True])   # any pattern
    params = (0.1, 4, loss_id, feature_scale(r), 0.0)
    got = dsg_chunk_update(X, Y, sw, F0.copy(), W, ph, (gammas, averaged), params)
    ref = dsg_chunk_update_ref(X, Y, sw, F0, W, ph, (gammas, averaged), params)
    for a, b in zip(got, ref):
        _close(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), dtype)
    assert got[4] == 3 and got[6] == pytest.approx(sw.sum())
    assert got[5] > 0 and np.abs(got[2]).max() > 1e-4      # real losses and averages


def test_averaged_sums_give_the_mean_of_the_iterates():
    """avg_old * older + avg_new = sum of the models after the averaged steps, checked on
    an explicit sequence of models (float64)."""
    X, Y, F0, W, ph, gammas = _problem(np.float64, 0, 1, n=20, b=4)
    older = np.random.default_rng(1).normal(size=(2, W.shape[2], 1))   # two older blocks
    Wo, pho = stacked_block_params(77, np.arange(2), X.shape[1], W.shape[2], 1.3, np.float64)
    sc = feature_scale(W.shape[2])
    F = dsg_predict(X, Wo, pho, older, sc)
    averaged = np.ones(5, dtype=bool)
    coef, decay, avg_new, avg_old, n_avg, _, _ = dsg_chunk_update(
        X, Y, np.ones(20), F.copy(), W, ph, (gammas, averaged), (0.2, 4, 0, sc, 0.0))
    # the models after steps 0..4, rebuilt from their definitions
    models, blocks, current_old = [], [], older.copy()
    for s in range(5):
        current_old = current_old * (1 - gammas[s] * 0.2)
        blocks = [blk * (1 - gammas[s] * 0.2) for blk in blocks]
        # the block of step s at its creation: the last block of the prefix run
        blocks.append(_chunk_ref(X[:4 * (s + 1)], Y[:4 * (s + 1)], F[:4 * (s + 1)],
                                 W[:s + 1], ph[:s + 1], gammas[:s + 1], 0.2, 4, 0, sc)[0][-1])
        padded = np.zeros((2 + 5,) + older.shape[1:])
        padded[:2], padded[2:3 + s] = current_old, np.stack(blocks)
        models.append(padded)
    np.testing.assert_allclose(models[-1][2:], coef, rtol=1e-10)   # the final model
    total = sum(models)
    np.testing.assert_allclose(avg_old * older, total[:2], rtol=1e-10)
    np.testing.assert_allclose(avg_new, total[2:], rtol=1e-10, atol=1e-14)
    assert n_avg == 5


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("loss_id", LOSS_IDS)
def test_full_update_weights_loss_and_average_match_twin(dtype, loss_id):
    C = 3 if loss_id == 3 else 1
    rng = np.random.default_rng(loss_id)
    n, d, r, m, b = 23, 5, 6, 4, 4
    X = np.ascontiguousarray(rng.normal(size=(n, d)), dtype=dtype)
    Y = _targets(rng, loss_id, n, C, dtype)
    W, ph = stacked_block_params(3, np.arange(m), d, r, 1.1, dtype)
    coef = 0.2 * rng.normal(size=(m, r, C))
    avg = 0.1 * rng.normal(size=(m, r, C))
    sw = rng.uniform(0.2, 2.0, n)
    gammas = 0.9 / np.sqrt(1.0 + np.arange(6))
    averaged = np.array([True, False, True, True, True, False])
    params = (0.1, b, loss_id, feature_scale(r), 0.0)
    got = dsg_full_update(X, Y, sw, W, ph, coef, avg, 7, (gammas, averaged), params)
    ref = dsg_full_update_ref(X, Y, sw, W, ph, coef, avg, 7, (gammas, averaged), params)
    for a, b_ in zip(got, ref):
        _close(np.asarray(a, dtype=np.float64), np.asarray(b_, dtype=np.float64), dtype)
    assert got[2] == 11 and not np.allclose(got[1], avg)


def test_loss_grad_value_matches_twin_and_the_registry():
    from ooc_kernels._jit.losses import loss_grad_value
    from ooc_kernels.losses.reference import loss_grad_value_ref
    from ooc_kernels.losses import get_loss

    rng = np.random.default_rng(0)
    for name, loss_id, C in [("squared", 0, 2), ("hinge", 1, 1), ("logistic", 2, 3),
                             ("softmax", 3, 4)]:
        F = 3 * rng.normal(size=(9, C))
        Y = _targets(rng, loss_id, 9, C, np.float64)
        sw = rng.uniform(0, 2, 9)
        out = np.empty_like(F)
        value = loss_grad_value(loss_id, F, Y, sw, out)
        grad_ref, value_ref = loss_grad_value_ref(loss_id, F, Y, sw)
        np.testing.assert_allclose(out, grad_ref, rtol=1e-12)
        assert value == pytest.approx(value_ref, rel=1e-12)
        loss = get_loss(name)  # the registry's numpy loss: an independent formula
        assert value == pytest.approx(float(sw @ loss.value(F, Y)), rel=1e-12)
        np.testing.assert_allclose(out, sw[:, None] * loss.gradient(F, Y), rtol=1e-12)
