"""Per-input bandwidths: an array ``bandwidth`` and automatic relevance determination.

Oracles: central finite differences for the ARD criterion's gradient; an explicit rescaling
of the rows with an isotropic width for an array bandwidth; a planted problem whose
irrelevant inputs are known; the model file written before per-input bandwidths existed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.data.generators import nonlinear_binary_label
from ooc_kernels.exceptions import InvalidParameterError, ValidationError
from ooc_kernels.features.ard import ard_scales, validation_error

DATA = Path(__file__).parent / "data"

#: The planted problem's irrelevant inputs must get widths at least this many times the
#: largest width of a relevant input (the kernel's exponent then weighs them at most
#: 1/25 as much per unit of squared distance).
SWITCHED_OFF = 5.0


def _planted(n, seed, d=10, informative=5):
    X = np.random.default_rng(seed).normal(size=(n, d))
    return X, nonlinear_binary_label(X, informative)


def test_the_criterion_gradient_is_the_finite_difference_one():
    rng = np.random.default_rng(1)
    X, T, w = rng.normal(size=(60, 3)), rng.normal(size=(60, 2)), rng.uniform(0.5, 2, 60)
    parts = (X[:40], T[:40], w[:40], X[40:], T[40:], w[40:])
    omega, phase = rng.normal(size=(3, 32)), rng.uniform(0, 2 * np.pi, 32)
    log_s, log_lam = 0.3 * rng.normal(size=3), -2.0
    _, grad_s, grad_lam = validation_error(log_s, log_lam, parts, omega, phase)

    def error(ls, ll):
        return validation_error(ls, ll, parts, omega, phase, gradient=False)

    h = 1e-6
    numeric = [(error(log_s + h * e, log_lam) - error(log_s - h * e, log_lam)) / (2 * h)
               for e in np.eye(3)]
    np.testing.assert_allclose(grad_s, numeric, rtol=1e-6, atol=1e-10)
    assert grad_lam == pytest.approx((error(log_s, log_lam + h) - error(log_s, log_lam - h))
                                     / (2 * h), rel=1e-6)


def test_ard_switches_off_the_irrelevant_inputs_of_a_planted_problem():
    X, y = _planted(1000, 0)
    scales, history = ard_scales(X, np.where(y == 1, 1.0, -1.0), np.ones(len(X)),
                                 start=4.0, seed=0, return_history=True)
    assert scales[5:].min() > SWITCHED_OFF * scales[:5].max(), scales
    assert min(history) < 0.9 * history[0]  # the steps lowered the held-out error


@pytest.mark.slow
@pytest.mark.parametrize("bandwidth, n", [("ard", 1000)])
def test_per_input_widths_switch_off_the_noise_and_beat_an_exact_isotropic_svm(bandwidth, n):
    """``"ard"`` on 1,000 rows (the overall width by GCV): the 5 noise inputs get widths above ``SWITCHED_OFF`` times the
    signal inputs', and the exact kernel machine (``SVC``) with the chosen relative widths
    beats the exact machine with one width, each at the best overall width of a grid."""
    from sklearn.svm import SVC

    X, y = _planted(n, 1)
    Xt, yt = _planted(2000, 2)
    # the widths are chosen at setup: one epoch is enough to read them
    clf = ok.DSGClassifier(bandwidth=bandwidth, n_features=1024, max_iter=1, tol=None,
                           random_state=0, progress=False, scheduler="sync").fit(X, y)
    widths = clf.bandwidth_
    assert widths.shape == (10,)
    assert widths[5:].min() > SWITCHED_OFF * widths[:5].max(), widths
    mean, sd = X.mean(axis=0), X.std(axis=0)
    Z, Zt = (X - mean) / sd, (Xt - mean) / sd
    one_width = max(SVC(gamma=g).fit(Z, y).score(Zt, yt) for g in (0.025, 0.05, 0.1, 0.2, 0.4))
    # the widths' relative sizes are ARD's; the overall size gets the same grid
    per_input = max(SVC(gamma=g).fit(Z / widths, y).score(Zt / widths, yt)
                    for g in (0.125, 0.25, 0.5, 1.0, 2.0))
    assert per_input > one_width + 0.02, (per_input, one_width)


def test_an_array_bandwidth_is_an_explicit_rescaling_of_the_rows():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4)) * [1.0, 3.0, 0.5, 2.0]
    y = np.sin(X[:, 0]) + X[:, 1] ** 2 / 9
    s = np.array([0.7, 2.5, 4.0, 1.3])
    params = dict(n_features=256, block_size=32, batch_size=32, max_iter=3, tol=None,
                  dtype="float64", random_state=0, progress=False, scheduler="sync")
    per_input = ok.DSGRegressor(bandwidth=s, standardize=False, **params).fit(X, y)
    rescaled = ok.DSGRegressor(bandwidth=1.0, standardize=False, **params).fit(X / s, y)
    np.testing.assert_allclose(per_input.predict(X), rescaled.predict(X / s), rtol=1e-9,
                               atol=1e-9)
    np.testing.assert_array_equal(per_input.bandwidth_, s)
    # with standardization the widths are in standardized units: every row is read here,
    # so the standardization is the data's mean and standard deviation
    standardized = ok.DSGRegressor(bandwidth=s, **params).fit(X, y)
    Z = (X - X.mean(axis=0)) / (X.std(axis=0) * s)
    reference = ok.DSGRegressor(bandwidth=1.0, standardize=False, **params).fit(
        Z, (y - y.mean()) / y.std())
    np.testing.assert_allclose(standardized.predict(X),
                               reference.predict(Z) * y.std() + y.mean(), rtol=1e-8,
                               atol=1e-8)


@pytest.mark.parametrize("bandwidth, match", [
    ([1.0, -2.0, 1.0], r"bandwidth\[1\] = -2.0 is not a positive finite number"),
    ([1.0, np.nan, 1.0], r"bandwidth\[1\] = nan is not a positive finite number"),
    ([1.0, 0.0, np.inf], r"bandwidth\[1\] = 0.0 is not a positive finite number"),
    ([[1.0, 2.0, 3.0]], r"bandwidth has shape \(1, 3\); pass one positive width per input"),
])
def test_bad_per_input_bandwidths_are_refused_before_any_data_is_read(bandwidth, match):
    with pytest.raises(ValidationError, match=match):
        ok.DSGClassifier(bandwidth=bandwidth).fit(np.zeros((4, 3)), [0, 1, 0, 1])


def test_a_per_input_bandwidth_of_the_wrong_length_names_both_lengths():
    with pytest.raises(ValidationError,
                       match=r"bandwidth has shape \(2,\), the data has 3 input features; "
                             r"pass one positive width per input, shape \(3,\)"):
        ok.DSGRegressor(bandwidth=[1.0, 2.0], progress=False).fit(
            np.random.default_rng(0).normal(size=(20, 3)), np.arange(20.0))


def test_an_unknown_bandwidth_name_lists_the_options():
    with pytest.raises(InvalidParameterError, match=r"'ard', 'auto', 'median'"):
        ok.DSGClassifier(bandwidth="relevance").fit(np.zeros((4, 2)), [0, 1, 0, 1])


def test_per_input_widths_are_saved_with_the_model(tmp_path):
    X, y = _planted(400, 4)
    clf = ok.DSGClassifier(bandwidth=np.linspace(1.0, 3.0, 10), n_features=256,
                           block_size=32, max_iter=2, tol=None, random_state=0, progress=False,
                           scheduler="sync").fit(X, y)
    clf.save(tmp_path / "m.zarr")
    loaded = ok.load(tmp_path / "m.zarr")
    np.testing.assert_array_equal(loaded.bandwidth_, np.linspace(1.0, 3.0, 10))
    np.testing.assert_array_equal(loaded.decision_function(X), clf.decision_function(X))


def test_a_model_saved_before_per_input_widths_loads_with_its_one_width():
    expected = np.load(DATA / "dsg_classifier_format3_expected.npz")
    clf = ok.load(DATA / "dsg_classifier_format3.zarr")
    assert np.ndim(clf.bandwidth_) == 0 and clf._config.input_bandwidths is None
    np.testing.assert_array_equal(clf.decision_function(expected["X"]), expected["decision"])
