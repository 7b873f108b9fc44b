"""The loss registry: numpy reference values and gradients, and agreement with numba."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

from ooc_kernels._jit.losses import loss_gradient
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.losses import Loss, available_losses, get_loss, register_loss

NAMES = ["squared", "hinge", "logistic", "softmax", "smoothed_hinge"]


def _targets(name, rng, n, C):
    if name == "squared":
        return rng.normal(size=(n, C))
    if name in ("hinge", "logistic", "smoothed_hinge"):
        return rng.choice([-1.0, 1.0], size=(n, C))
    return np.eye(C)[rng.integers(0, C, n)]


def _cases():
    for name in NAMES:
        for C in (1, 3):
            if name == "softmax" and C == 1:
                C = 2
            yield name, C


def test_registry_contents():
    assert available_losses() == tuple(NAMES)
    ids = {name: get_loss(name).loss_id for name in NAMES}
    assert ids == {"squared": 0, "hinge": 1, "logistic": 2, "softmax": 3, "smoothed_hinge": 4}
    assert get_loss("squared").task == "regression"
    assert {get_loss(n).task for n in NAMES[1:]} == {"classification"}
    assert get_loss("softmax").multiclass == "joint" and get_loss("hinge").multiclass == "ovr"
    assert [get_loss(n).target for n in NAMES] == ["real", "binary", "binary", "classes",
                                                   "binary"]
    loss = get_loss("hinge")
    assert get_loss(loss) is loss
    with pytest.raises(dataclasses.FrozenInstanceError):
        loss.loss_id = 5


def test_unknown_loss_lists_valid_names():
    with pytest.raises(ValidationError) as err:
        get_loss("huberr")
    msg = str(err.value)
    assert "huberr" in msg and all(repr(n) in msg for n in NAMES)
    with pytest.raises(ValidationError, match=r"unknown loss 3; valid names are"):
        get_loss(3)


def test_register_refuses_duplicates_and_bad_entries():
    grad = lambda F, Y, p: F - Y
    with pytest.raises(ValidationError, match="already registered"):
        register_loss(Loss("squared", 50, "regression", "none", _value=grad, _gradient=grad))
    with pytest.raises(ValidationError, match="loss_id"):
        register_loss(Loss("new_one", 0, "regression", "none", _value=grad, _gradient=grad))
    with pytest.raises(ValidationError, match="task"):
        register_loss(Loss("new_two", 51, "ranking", "none", _value=grad, _gradient=grad))
    with pytest.raises(ValidationError, match="value and gradient"):
        register_loss(Loss("new_three", 52, "regression", "none"))
    assert available_losses() == tuple(NAMES)


@pytest.mark.parametrize("name,C", list(_cases()))
def test_gradient_matches_finite_differences(name, C):
    rng = np.random.default_rng(0)
    loss = get_loss(name)
    Y = _targets(name, rng, 30, C)
    F = rng.normal(scale=2.0, size=(30, C))
    if name == "hinge":  # stay away from the kink y u = 1
        margin = Y * F
        F = np.where(np.abs(margin - 1.0) < 1e-3, F + 0.01 * Y, F)
    h = 1e-6
    num = np.empty_like(F)
    for c in range(C):
        E = np.zeros_like(F)
        E[:, c] = h
        num[:, c] = (loss.value(F + E, Y) - loss.value(F - E, Y)) / (2 * h)
    np.testing.assert_allclose(loss.gradient(F, Y), num, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name,C", list(_cases()))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numba_matches_numpy(name, C, dtype):
    rng = np.random.default_rng(1)
    loss = get_loss(name)
    F = (3.0 * rng.normal(size=(50, C))).astype(dtype)
    Y = _targets(name, rng, 50, C).astype(dtype)
    out = np.empty_like(F)
    loss_gradient(loss.loss_id, F, Y, out, loss.param)
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-13, "atol": 1e-14}
    np.testing.assert_allclose(out, loss.gradient(F, Y), **tol)


def test_known_values():
    F = np.array([[0.0], [2.0], [-3.0]])
    Y = np.array([[1.0], [1.0], [-1.0]])
    np.testing.assert_allclose(get_loss("hinge").value(F, Y), [1.0, 0.0, 0.0])
    np.testing.assert_allclose(get_loss("hinge").gradient(F, Y).ravel(), [-1.0, 0.0, 0.0])
    np.testing.assert_allclose(get_loss("logistic").value(F, Y), np.log1p(np.exp([0.0, -2.0, -3.0])))
    np.testing.assert_allclose(get_loss("squared").gradient(F, Y).ravel(), [-1.0, 1.0, -2.0])
    S = np.array([[1.0, 2.0, 3.0]])
    T = np.array([[0.0, 0.0, 1.0]])
    p = np.exp(S) / np.exp(S).sum()
    np.testing.assert_allclose(get_loss("softmax").gradient(S, T), p - T)
    np.testing.assert_allclose(get_loss("softmax").value(S, T), [-np.log(p[0, 2])])


def test_stability_for_large_decision_values():
    F = np.array([[1e4, -1e4], [-1e4, 1e4], [800.0, -800.0]])
    Y = np.array([[1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in ("logistic", "softmax"):
            loss = get_loss(name)
            T = Y if name == "logistic" else (Y > 0).astype(float) / (Y > 0).sum(1, keepdims=True)
            assert np.isfinite(loss.value(F, T)).all()
            assert np.isfinite(loss.gradient(F, T)).all()
            assert np.isfinite(loss.predict_proba(F)).all()
    g = get_loss("logistic").gradient(F, Y)
    np.testing.assert_allclose(g[1], [-1.0, 0.0], atol=1e-300)
    np.testing.assert_allclose(get_loss("logistic").value(F, Y)[1], 1e4)


def test_links_and_probabilities():
    F = np.array([[0.0], [3.0]])
    P = get_loss("logistic").predict_proba(F)
    assert P.shape == (2, 2)
    np.testing.assert_allclose(P[0], [0.5, 0.5])
    np.testing.assert_allclose(P[1, 1], 1 / (1 + np.exp(-3.0)))
    F3 = np.random.default_rng(2).normal(size=(5, 3))
    for name in ("logistic", "softmax"):
        P = get_loss(name).predict_proba(F3)
        assert P.shape == (5, 3)
        np.testing.assert_allclose(P.sum(1), 1.0)
        assert (np.argmax(P, 1) == np.argmax(F3, 1)).all()
    np.testing.assert_allclose(get_loss("squared").link(F3), F3)
    np.testing.assert_allclose(get_loss("softmax").link(F3).sum(1), 1.0)
    assert not get_loss("hinge").has_proba and get_loss("softmax").has_proba
    with pytest.raises(ValidationError, match="probabilities"):
        get_loss("hinge").predict_proba(F)


def test_shape_validation():
    loss = get_loss("squared")
    with pytest.raises(ValidationError, match="2-D"):
        loss.value(np.zeros(3), np.zeros(3))
    with pytest.raises(ValidationError, match="must match"):
        loss.gradient(np.zeros((3, 1)), np.zeros((3, 2)))
