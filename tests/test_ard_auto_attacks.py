"""Attacks on ``bandwidth="auto"`` when it takes per-input widths: a constant input, an
input with a single non-zero value, missing values (refused, or skipped with
``on_invalid="skip"``), and the widths saved and loaded with the model."""

from __future__ import annotations

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.data.generators import nonlinear_binary_label
from ooc_kernels.exceptions import ValidationError

pytestmark = pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")
SMALL = dict(n_features=256, max_iter=1, tol=None, random_state=0, progress=False,
             scheduler="sync")


@pytest.fixture(scope="module")
def planted():
    """Five informative inputs of ten: ``auto`` takes per-input widths."""
    X = np.random.default_rng(0).normal(size=(1500, 10))
    y = nonlinear_binary_label(X, 5)
    return X, y, ok.DSGClassifier(**SMALL).fit(X, y)


def _per_input(clf, d):
    widths = np.asarray(clf.bandwidth_)
    assert widths.shape == (d,), widths
    assert np.isfinite(widths).all() and (widths > 0).all(), widths
    return widths


@pytest.mark.parametrize("edit", ["constant", "one value"])
def test_a_degenerate_input_gives_finite_widths_and_finite_scores(planted, edit):
    X, y, base = planted
    X = X.copy()
    if edit == "constant":
        X[:, 7] = 3.0
    else:
        X[:, 7] = 0.0
        X[5, 7] = 1.0
    clf = ok.DSGClassifier(**SMALL).fit(X, y)
    _per_input(clf, 10)
    scores = clf.decision_function(X)
    assert np.isfinite(scores).all()
    # the input carries nothing: the model is as accurate as the one fitted without the edit
    assert np.mean(clf.predict(X) == y) >= np.mean(base.predict(planted[0]) == y) - 0.03


def test_missing_values_are_refused_by_default(planted):
    X, y, _ = planted
    X = X.copy()
    X[::7, 2] = np.nan
    with pytest.raises(ValidationError, match=r"Input X contains NaN"):
        ok.DSGClassifier(**SMALL).fit(X, y)


def test_rows_with_missing_values_are_skipped_before_the_widths_are_chosen(planted):
    X, y, _ = planted
    X = X.copy()
    X[::7, 2] = np.nan
    clf = ok.DSGClassifier(on_invalid="skip", **SMALL).fit(X, y)
    widths = np.asarray(clf.bandwidth_)
    assert np.isfinite(widths).all() and (widths > 0).all(), widths
    keep = np.isfinite(X).all(axis=1)
    assert np.isfinite(clf.decision_function(X[keep])).all()


def test_per_input_widths_are_saved_and_loaded_as_an_array(planted, tmp_path):
    X, y, clf = planted
    widths = _per_input(clf, 10)
    # the noise inputs are switched off against the informative ones (the quick search's
    # widths: every noise input wider than every signal input, most by more than 5 times)
    assert widths[5:].min() > widths[:5].max(), widths
    assert np.median(widths[5:]) > 5 * widths[:5].max(), widths
    clf.save(tmp_path / "m")
    back = ok.load(tmp_path / "m")
    assert isinstance(back.bandwidth_, np.ndarray)
    np.testing.assert_array_equal(back.bandwidth_, clf.bandwidth_)
    assert back.bandwidth == "auto"
    np.testing.assert_array_equal(back.decision_function(X), clf.decision_function(X))
    np.testing.assert_array_equal(back.predict(X), clf.predict(X))
