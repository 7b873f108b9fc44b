"""The loss registry: numpy reference values and gradients, and agreement with numba."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

from ooc_kernels._jit.losses import loss_gradient
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.losses import Loss, available_losses, get_loss, register_loss

NAMES = ["squared", "hinge", "logistic", "softmax", "smoothed_hinge", "squared_hinge",
         "huber", "epsilon_insensitive", "quantile"]
REAL = ("squared", "huber", "epsilon_insensitive", "quantile")


def _targets(name, rng, n, C):
    if name in REAL:
        return rng.normal(size=(n, C))
    if name in ("hinge", "logistic", "smoothed_hinge", "squared_hinge"):
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
    assert ids == {"squared": 0, "hinge": 1, "logistic": 2, "softmax": 3, "smoothed_hinge": 4,
                   "squared_hinge": 5, "huber": 6, "epsilon_insensitive": 7, "quantile": 8}
    assert {get_loss(n).task for n in REAL} == {"regression"}
    assert {get_loss(n).task for n in NAMES if n not in REAL} == {"classification"}
    assert get_loss("softmax").multiclass == "joint" and get_loss("hinge").multiclass == "ovr"
    assert [get_loss(n).target for n in NAMES] == ["real", "binary", "binary", "classes",
                                                   "binary", "binary", "real", "real", "real"]
    params = {n: (get_loss(n).parameter.name, get_loss(n).param) for n in NAMES
              if get_loss(n).parameter is not None}
    assert params == {"huber": ("epsilon", 1.0), "epsilon_insensitive": ("epsilon", 0.1),
                      "quantile": ("quantile", 0.5)}
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
    if name in ("hinge", "squared_hinge"):  # stay away from the kink y u = 1
        margin = Y * F
        F = np.where(np.abs(margin - 1.0) < 1e-3, F + 0.01 * Y, F)
    if name in REAL:  # and from r = 0 and |r| = param
        r = np.abs(F - Y)
        F = np.where((r < 1e-3) | (np.abs(r - loss.param) < 1e-3), F + 0.01, F)
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


def test_new_losses_known_values():
    """Values and derivatives of the table of ``docs/specs/dsg.md`` §3, rows 2, 6, 7 and 8
    (Dai et al. 2014, section 4), written out by hand."""
    u = np.array([[-2.0], [0.2], [1.0], [3.0]])
    y = np.ones((4, 1))
    sqh = get_loss("squared_hinge")        # 1/2 max(0, 1 - u y)^2; u - y if y u < 1
    np.testing.assert_allclose(sqh.value(u, y), [4.5, 0.32, 0.0, 0.0])
    np.testing.assert_allclose(sqh.gradient(u, y).ravel(), [-3.0, -0.8, 0.0, 0.0])
    np.testing.assert_allclose(sqh.gradient(-u, -y).ravel(), [3.0, 0.8, 0.0, 0.0])
    r = np.array([[-3.0], [-0.5], [0.25], [2.0]])   # u - y with y = 0
    z = np.zeros((4, 1))
    hub = get_loss("huber").with_param(1.0)          # the paper's threshold 1
    np.testing.assert_allclose(hub.value(r, z), [2.5, 0.125, 0.03125, 1.5])
    np.testing.assert_allclose(hub.gradient(r, z).ravel(), [-1.0, -0.5, 0.25, 1.0])
    hub2 = get_loss("huber").with_param(2.0)         # epsilon (|r| - epsilon / 2)
    np.testing.assert_allclose(hub2.value(r, z), [4.0, 0.125, 0.03125, 2.0])
    np.testing.assert_allclose(hub2.gradient(r, z).ravel(), [-2.0, -0.5, 0.25, 2.0])
    eps = get_loss("epsilon_insensitive").with_param(0.5)
    np.testing.assert_allclose(eps.value(r, z), [2.5, 0.0, 0.0, 1.5])
    np.testing.assert_allclose(eps.gradient(r, z).ravel(), [-1.0, 0.0, 0.0, 1.0])
    q = get_loss("quantile").with_param(0.9)
    np.testing.assert_allclose(q.value(r, z), [2.7, 0.45, 0.025, 0.2])
    np.testing.assert_allclose(q.gradient(r, z).ravel(), [-0.9, -0.9, 0.1, 0.1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_subgradients_at_the_kinks_are_the_papers(dtype):
    """At the kinks: y u = 1 gives 0 (hinge, squared hinge); |u - y| = epsilon gives 0
    (epsilon-insensitive); u = y gives 1 - tau (quantile); sign(0) = 0 for epsilon = 0.
    Numba (loss_gradient with loss_param) and the twins alike."""
    def both(name, param, F, Y):
        loss = get_loss(name).with_param(param)
        F = np.asarray(F, dtype=dtype)[:, None]
        Y = np.asarray(Y, dtype=dtype)[:, None]
        out = np.empty_like(F)
        loss_gradient(loss.loss_id, F, Y, out, param)
        return out.ravel().tolist(), loss.gradient(F, Y).ravel().tolist()

    for name in ("hinge", "squared_hinge"):
        assert both(name, 0.0, [1.0, -1.0], [1.0, -1.0]) == ([0.0, 0.0], [0.0, 0.0])
    assert both("epsilon_insensitive", 0.5, [1.5, 0.5], [1.0, 1.0]) == ([0.0, 0.0],
                                                                          [0.0, 0.0])
    assert both("epsilon_insensitive", 0.0, [1.0, 1.5, 0.5], [1.0, 1.0, 1.0]) == (
        [0.0, 1.0, -1.0], [0.0, 1.0, -1.0])
    got, twin = both("quantile", 0.25, [2.0, 1.0], [2.0, 3.0])
    assert got == twin == [0.75, -0.25]


def test_loss_parameters_are_validated_against_the_rows_range():
    assert get_loss("huber").with_param(0.5).param == 0.5
    assert get_loss("huber").param == 1.0         # the row itself is unchanged
    with pytest.raises(ValidationError, match=r"loss 'huber': epsilon=0.0 is outside "
                                              r"\(0.0, inf\)"):
        get_loss("huber").with_param(0.0)
    assert get_loss("epsilon_insensitive").with_param(0).param == 0.0
    with pytest.raises(ValidationError, match=r"epsilon=-0.1 is outside \[0.0, inf\)"):
        get_loss("epsilon_insensitive").with_param(-0.1)
    for bad in (0.0, 1.0, 1.5, float("nan")):
        with pytest.raises(ValidationError, match=r"loss 'quantile': quantile=.* is outside "
                                                  r"\(0.0, 1.0\)"):
            get_loss("quantile").with_param(bad)
    with pytest.raises(ValidationError, match=r"loss 'quantile': quantile='0.5' is outside"):
        get_loss("quantile").with_param("0.5")
    with pytest.raises(ValidationError, match=r"loss 'squared' has no hyper-parameter; "
                                              r"got loss_param=0.3"):
        get_loss("squared").with_param(0.3)
