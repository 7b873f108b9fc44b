"""``bandwidth="auto"`` choosing between one width and per-input widths (ARD).

Oracles: a planted problem whose irrelevant inputs are known and an isotropic problem
where no input is irrelevant; leave-one-out predictions by refitting kernel ridge
regression without each row; counts of the criterion evaluations the setup runs.
"""

from __future__ import annotations

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.data.generators import nonlinear_binary_label
from ooc_kernels.families.dsg import _ard
from ooc_kernels.features import ard
from ooc_kernels.features.ard import loo_score

#: Irrelevant inputs must get widths at least this many times the largest relevant one.
SWITCHED_OFF = 5.0
SMALL = dict(n_features=256, max_iter=1, tol=None, random_state=0, progress=False,
             scheduler="sync")


def _binary(n, seed, d=10, informative=5):
    X = np.random.default_rng(seed).normal(size=(n, d))
    return X, nonlinear_binary_label(X, informative)


def _loo_reference(Z, t, w, width):
    """Leave-one-out predictions of ``min sum_j w_j (t_j - f(x_j))^2 + ||f||^2`` (weights
    of mean 1), each by a fit without its row."""
    w = w / w.mean()
    K = np.exp(-((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1) / (2 * width ** 2))
    out = np.empty_like(t)
    for i in range(len(Z)):
        keep = np.arange(len(Z)) != i
        Kk, D = K[np.ix_(keep, keep)], np.diag(w[keep])
        a = np.linalg.solve(D @ Kk + np.eye(len(Kk)), D @ t[keep])
        out[i] = K[i, keep] @ a
    return out


def test_the_leave_one_out_score_is_that_of_refits_without_each_row():
    from scipy.spatial.distance import pdist

    rng = np.random.default_rng(3)
    Z, w = rng.normal(size=(40, 3)), rng.uniform(0.2, 3.0, 40)
    t = (np.sin(2 * Z[:, :1]) + 0.3 * rng.normal(size=(40, 1)))
    width = float(np.median(pdist(Z)))
    pred = _loo_reference(Z, t, w, width)
    r2 = 1 - np.sum(w[:, None] * (t - pred) ** 2) / np.sum(
        w[:, None] * (t - np.average(t, axis=0, weights=w)) ** 2)
    assert loo_score(Z, t, w, classification=False, multiples=(1.0,)) == pytest.approx(
        r2, rel=1e-9)
    labels = np.where(t > 0, 1.0, -1.0)
    pred = _loo_reference(Z, labels, w, 0.5 * width)
    accuracy = np.average((pred[:, 0] > 0) == (labels[:, 0] > 0), weights=w)
    assert loo_score(Z, labels, w, classification=True, multiples=(0.5,)) == pytest.approx(
        accuracy, rel=1e-12)


def _counting(monkeypatch):
    calls = {"ard criterion": 0, "leave-one-out": 0}
    criterion, grid, loo = ard.validation_error, ard.grid_errors, _ard.loo_score
    steps = ard._Float32Criterion.__call__  # the search's steps evaluate it directly

    def counted_criterion(*args, **kwargs):
        calls["ard criterion"] += 1
        return criterion(*args, **kwargs)

    def counted_step(self, *args, **kwargs):
        calls["ard criterion"] += 1
        return steps(self, *args, **kwargs)

    def counted_grid(log_widths, log_lams, *args, **kwargs):
        calls["ard criterion"] += len(log_widths) * len(log_lams)
        return grid(log_widths, log_lams, *args, **kwargs)

    def counted_loo(*args, **kwargs):
        calls["leave-one-out"] += 1
        return loo(*args, **kwargs)

    monkeypatch.setattr(ard, "validation_error", counted_criterion)
    monkeypatch.setattr(ard._Float32Criterion, "__call__", counted_step)
    monkeypatch.setattr(ard, "grid_errors", counted_grid)
    monkeypatch.setattr(_ard, "loo_score", counted_loo)
    return calls


@pytest.mark.parametrize("informative, taken", [(5, True), (10, False)])
def test_auto_switches_off_planted_noise_inputs_at_a_bounded_cost(monkeypatch, tmp_path,
                                                                  informative, taken):
    """Inputs 5-9 carry nothing (``informative=5``): per-input widths, the noise ones wide,
    saved with the model; every input carries the label (``informative=10``): one width.
    Either way the choice costs a bounded number of criterion evaluations."""
    calls = _counting(monkeypatch)
    X, y = _binary(800, 0, informative=informative)
    clf = ok.DSGClassifier(**SMALL).fit(X, y)
    widths = np.asarray(clf.bandwidth_)
    if taken:
        assert widths.shape == (10,)
        # the quick search's widths (no full search): every noise input wider than every
        # signal input, most of them switched off (the full search of "ard" separates them
        # by more than SWITCHED_OFF: tests/test_ard.py)
        assert widths[5:].min() > widths[:5].max(), widths
        assert np.median(widths[5:]) > SWITCHED_OFF * widths[:5].max(), widths
        clf.save(tmp_path / "m.zarr")
        loaded = ok.load(tmp_path / "m.zarr")
        np.testing.assert_array_equal(loaded.bandwidth_, widths)
        np.testing.assert_array_equal(loaded.decision_function(X), clf.decision_function(X))
    else:
        assert widths.ndim == 0, widths
    # the quick search only: its isotropic grid (4 widths x 3 ridges), at most
    # AUTO_ARD_STEPS steps and its last point (its widths are the ones taken)
    assert 12 < calls["ard criterion"] <= 12 + _ard.AUTO_ARD_STEPS + 1, calls
    # two leave-one-out comparisons: one width, the quick search's widths
    assert calls["leave-one-out"] == 2, calls


@pytest.mark.parametrize("X, why", [
    (np.random.default_rng(0).normal(size=(600, 1)), "one input"),
    (np.random.default_rng(0).normal(size=(_ard.AUTO_MIN_ROWS - 1, 4)), "too few rows"),
])
def test_nothing_is_searched_with_one_input_or_few_rows(monkeypatch, X, why):
    calls = _counting(monkeypatch)
    clf = ok.DSGClassifier(**SMALL).fit(X, (X[:, 0] > 0).astype(int))
    assert calls == {"ard criterion": 0, "leave-one-out": 0}, why
    assert np.ndim(clf.bandwidth_) == 0


def test_a_kernel_other_than_the_gaussian_keeps_one_width(monkeypatch):
    calls = _counting(monkeypatch)
    X, y = _binary(400, 0)
    clf = ok.DSGClassifier(kernel="laplacian", **SMALL).fit(X, y)
    assert calls["ard criterion"] == 0 and np.ndim(clf.bandwidth_) == 0
