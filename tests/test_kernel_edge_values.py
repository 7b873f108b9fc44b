"""Numba kernels at the edge values their documentation fixes, against independent
references: the softmax loss of a row whose largest decision value is in its last column
(scipy's logsumexp and softmax), the arc-cosine features of order 0 at an input of zero
(the exact kernel is 0 there: ``Theta(0) = 0``), the CDSG test's choice between blocks
that admit the same step (the first slot, as documented), and float32 predictions summed
over blocks in float64 (an exact sum that float32 would round away)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp, softmax

from ooc_kernels._jit.losses import loss_grad_value
from ooc_kernels._jit.rff import STEP, features_inplace, features_inplace_ref
from ooc_kernels.families.dsg.kernels_reuse import check_step, check_step_ref
from ooc_kernels.features.maps import get_feature_map
from ooc_kernels.losses import get_loss


@pytest.mark.parametrize("C", [2, 3, 5])
def test_numba_softmax_value_and_gradient_are_finite_when_the_last_class_is_largest(C):
    """The max shift must scan every column: a row whose largest value is in its last
    column (1e4 above the others) overflows ``exp`` otherwise."""
    F = np.zeros((3, C))
    F[0, -1] = 1e4                                  # last column by far the largest
    F[1, :] = -1e4
    F[1, -1] = 800.0
    F[2, :] = np.linspace(-5.0, 900.0, C)           # increasing: the max is last
    Y = np.eye(C)[[0, C - 1, 1]]
    sw = np.array([1.0, 2.0, 0.5])
    out = np.empty_like(F)
    value = loss_grad_value(get_loss("softmax").loss_id, F, Y, sw, out)
    expected = float(np.sum(sw * (logsumexp(F, axis=1) - np.sum(Y * F, axis=1))))
    assert np.isfinite(value) and np.isfinite(out).all()
    assert value == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(out, sw[:, None] * (softmax(F, axis=1) - Y), atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_arc_cosine_order_0_features_of_a_zero_row_match_the_exact_kernel(dtype):
    """Order 0 is ``Theta(w . x)`` with ``Theta(0) = 0`` (``features_inplace``: 1 where
    positive, else 0); a row of zeros then has zero features, and the Monte Carlo Gram
    matrix equals the exact kernel there, 0 (a sparse data set has such rows)."""
    fmap = get_feature_map("arccos(order=0)")
    assert fmap.nonlinearity == STEP
    rng = np.random.default_rng(0)
    X = np.vstack([np.zeros((1, 3)), rng.normal(size=(4, 3))]).astype(dtype)
    r = 64
    W, phase = fmap.block(3, 0, 3, r, 1.0)
    W, phase = np.ascontiguousarray(W, dtype=dtype), np.ascontiguousarray(phase, dtype=dtype)
    P = np.ascontiguousarray(X @ W)
    Q = P.copy()
    features_inplace(fmap.nonlinearity, P, phase, fmap.feature_scale(r))
    features_inplace_ref(fmap.nonlinearity, Q, phase, fmap.feature_scale(r))
    exact = fmap.exact(X.astype(np.float64), X.astype(np.float64), 1.0)
    assert exact[0].tolist() == [0.0] * 5                 # the exact kernel at a zero row
    for Z in (P, Q):
        assert not Z[0].any()                             # Theta(0) = 0, every feature
        np.testing.assert_array_equal((Z @ Z.T)[0], exact[0])


def test_check_step_takes_the_first_of_blocks_that_admit_the_same_step():
    """Blocks with equal ``beta`` (blocks opened by steps whose loss derivative was 0 have
    ``beta = 0``) admit the same step: the documented choice is the first slot."""
    gbar, s2, gamma = np.array([0.7, -0.2]), 0.05, 0.3
    for beta in (np.zeros((4, 2)), np.tile([[0.4, 0.1]], (3, 1))):
        n = len(beta)
        a = gbar @ gbar + s2            # the smaller root of the inequality, written here
        bg, bb = beta[0] @ gbar, beta[0] @ beta[0]
        eta = (-bg - np.sqrt(bg * bg - 0.5 * a * (bb - gamma ** 2 * (gbar @ gbar)))) / a
        assert eta < 0
        for fn in (check_step, check_step_ref):
            best, step = fn(beta, n, gbar, s2, gamma)
            assert best == 0
            assert step == pytest.approx(-eta, rel=1e-9)


def test_float32_predictions_are_accumulated_across_blocks_in_float64():
    """``dsg_predict`` and its threaded twin add the blocks' contributions in float64 (their
    documentation): blocks worth 2^25, 1 and -2^25 (each exact in float32, the features
    exactly 1) give 1, where a float32 running sum gives 0 (2^25 + 1 rounds to 2^25)."""
    from ooc_kernels.families.dsg.kernels import dsg_predict
    from ooc_kernels.families.dsg.kernels_threads import dsg_predict_threads

    X = np.zeros((3, 1), np.float32)
    W = np.zeros((3, 1, 1), np.float32)
    phase = np.zeros((3, 1), np.float32)                 # cos(0) = 1
    coef = np.array([2.0 ** 25, 1.0, -(2.0 ** 25)], np.float32).reshape(3, 1, 1)
    for F in (dsg_predict(X, W, phase, coef, 1.0), dsg_predict_threads(X, W, phase, coef, 1.0)):
        assert F.dtype == np.float32
        assert F.ravel().tolist() == [1.0, 1.0, 1.0]
