"""The stopping rule with a loss scale: ``tol * max(1, best_loss / loss_scale)`` on the
training loss (DSGClassifier: ``loss_scale=0.1``), against a plain-Python twin of the rule,
hand-computed histories, its boundaries, ``tol=None``, warm starts and a small fit."""

import math
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.exceptions import ConvergenceWarning

import ooc_kernels as ok
from ooc_kernels.estimators._stopping import TOL_LOSS_SCALE, EpochMonitor

FAST = dict(n_features=256, block_size=64, scheduler="sync", random_state=0, progress=False)


def reference_stop(losses, tol, patience, scale):
    """The epoch (from 1) at which the rule stops ``losses``, or None: an epoch does not
    improve when its loss is above the best before it minus the tolerance, which is ``tol``
    (no scale, or no best yet) or ``tol * max(1, best / scale)``."""
    best, bad = math.inf, 0
    for k, loss in enumerate(losses):
        need = tol if scale is None or best == math.inf else tol * max(1.0, best / scale)
        bad = bad + 1 if loss > best - need else 0
        best = min(best, loss)
        if bad == patience:
            return k + 1
    return None


def monitor_stop(losses, tol=1e-3, patience=3, scale=TOL_LOSS_SCALE):
    mon = EpochMonitor(tol=tol, n_iter_no_change=patience, early_stopping=False,
                       loss_scale=scale)
    for k, loss in enumerate(losses):
        if mon.end_epoch(k, loss, None, 0.0):
            return k + 1, mon.stop_reason
    return None, mon.stop_reason


# a loss near 0.6 that gains 0.004 an epoch: less than 10 * tol of the loss (0.006)
HIGH = [1.0, 0.8, 0.7, 0.65, 0.62, 0.616, 0.612, 0.608, 0.604, 0.600]
# the same gains on a loss near 0.06: more than tol (0.001), the fit goes on
LOW = [v - 0.54 for v in HIGH]


def test_the_scaled_tolerance_stops_a_high_loss_that_gains_a_small_share():
    # by hand: from epoch 6 on every epoch gains 0.004 < 0.001 * 0.62 / 0.1 = 0.0062 (and
    # the tolerance stays above 0.006 while the best loss is above 0.6): 3 in a row -> 8
    assert reference_stop(HIGH, 1e-3, 3, 0.1) == 8
    epoch, reason = monitor_stop(HIGH)
    assert epoch == 8
    assert reason == ("the training loss improved by less than 0.00612 (tol=0.001 times the "
                      "best loss 0.612 over loss_scale=0.1) for n_iter_no_change=3 epochs")
    # the absolute rule does not stop it: 0.004 > tol
    assert monitor_stop(HIGH, scale=None) == (None, None)


def test_the_scaled_tolerance_is_tol_below_the_loss_scale():
    # the best loss is below 0.1 from epoch 3: gains of 0.004 > tol keep the fit going
    assert reference_stop(LOW, 1e-3, 3, 0.1) is None
    assert monitor_stop(LOW) == (None, None)
    flat = LOW[:6] + [LOW[5] - 0.0005 * k for k in range(1, 5)]  # gains of 0.0005 < tol
    assert reference_stop(flat, 1e-3, 3, 0.1) == 9
    epoch, reason = monitor_stop(flat)
    assert epoch == 9
    assert reason == "the training loss improved by less than tol=0.001 for n_iter_no_change=3 epochs"


@pytest.mark.parametrize("seed", range(20))
def test_the_monitor_matches_its_twin_on_random_histories(seed):
    rng = np.random.default_rng(seed)
    # decreasing losses with noise, levels from 0.02 to 2: both sides of the scale
    level = 10 ** rng.uniform(-1.7, 0.3)
    losses = (level * (1 + 1 / np.arange(1, 41) ** rng.uniform(0.5, 2))
              + rng.normal(0, level * 3e-3, 40)).tolist()
    for patience in (1, 2, 5):
        for scale in (None, 0.1, 0.5):
            expected = reference_stop(losses, 1e-3, patience, scale)
            assert monitor_stop(losses, patience=patience, scale=scale)[0] == expected


def test_boundary_a_gain_of_exactly_the_tolerance_improves():
    # powers of two: best 0.5, scale 0.125, tol 2**-10 -> tolerance 2**-8, exactly
    tol, scale = 2.0 ** -10, 0.125
    mon = EpochMonitor(tol=tol, n_iter_no_change=1, early_stopping=False, loss_scale=scale)
    assert mon.tolerance() == tol  # no best yet: tol
    assert mon.end_epoch(0, 0.5, None, 0.0) is False  # the first epoch always improves
    assert mon.tolerance() == 2.0 ** -8
    assert mon.end_epoch(1, 0.5 - 2.0 ** -8, None, 0.0) is False  # exactly the tolerance
    assert mon.no_improve == 0
    # best 0.49609375 = 127 / 256: tolerance 2**-10 * 127 / 32 = 127 / 32768, exactly
    assert mon.tolerance() == 127 / 32768
    assert mon.end_epoch(2, mon.best - 127 / 32768 + 2.0 ** -30, None, 0.0) is True
    assert mon.stop_reason == ("the training loss improved by less than 0.00388 (tol="
                               "0.0009765625 times the best loss 0.4961 over loss_scale="
                               "0.125) for n_iter_no_change=1 epochs")


def test_boundary_at_the_loss_scale_the_tolerance_is_tol():
    mon = EpochMonitor(tol=1e-3, n_iter_no_change=1, early_stopping=False, loss_scale=0.1)
    mon.end_epoch(0, 0.1, None, 0.0)
    assert mon.tolerance() == 1e-3
    mon.end_epoch(1, 0.05, None, 0.0)  # below the scale: still tol, never less
    assert mon.tolerance() == 1e-3
    mon = EpochMonitor(tol=0.0, n_iter_no_change=1, early_stopping=False, loss_scale=0.1)
    mon.end_epoch(0, 3.0, None, 0.0)
    assert mon.tolerance() == 0.0  # tol=0 scaled is 0: only a loss that rises stops
    assert mon.end_epoch(1, 2.999, None, 0.0) is False
    assert mon.end_epoch(2, 2.999, None, 0.0) is False  # level: not above the best
    assert mon.end_epoch(3, 2.9991, None, 0.0) is True


def test_the_validation_score_of_early_stopping_keeps_the_absolute_tol():
    mon = EpochMonitor(tol=1e-3, n_iter_no_change=2, early_stopping=True, loss_scale=0.1)
    # scores near 0.6: a loss-scaled tolerance would be 0.006 and stop at the third epoch
    stops = [mon.end_epoch(k, 0.9, s, 0.0) for k, s in enumerate([0.6, 0.602, 0.604, 0.606])]
    assert stops == [False, False, False, False]
    assert mon.tolerance() == 1e-3


def test_tol_none_never_stops():
    mon = EpochMonitor(tol=None, n_iter_no_change=1, early_stopping=False, loss_scale=0.1)
    assert not any(mon.end_epoch(k, 0.7, None, 0.0) for k in range(10))
    assert mon.stop_reason is None


def _noisy_moons(n=2000):
    X, y = make_moons(n, noise=0.3, random_state=0)
    flip = np.random.default_rng(0).random(n) < 0.1  # a loss near 0.43: above the scale
    y[flip] = 1 - y[flip]
    return X, y


def _history(est):
    return [{k: v for k, v in h.items() if k != "seconds"} for h in est.history_]


def test_a_classifier_fit_stops_where_the_twin_says_and_the_regressor_keeps_tol():
    X, y = _noisy_moons()
    clf = ok.DSGClassifier(max_iter=100, n_iter_no_change=3, **FAST).fit(X, y)
    losses = [h["loss"] for h in clf.history_]
    assert reference_stop(losses, 1e-3, 3, 0.1) == clf.n_iter_ < 100
    assert "over loss_scale=0.1) for n_iter_no_change=3 epochs" in clf.stop_reason_
    # the absolute rule would not have stopped there: the scaled tolerance ended the fit
    assert reference_stop(losses, 1e-3, 3, None) != clf.n_iter_
    assert min(losses) > 0.1
    full = ok.DSGClassifier(max_iter=6, n_iter_no_change=1, tol=None, **FAST).fit(X, y)
    assert full.n_iter_ == 6 and full.stop_reason_ == "max_iter=6 epochs reached"
    reg = ok.DSGRegressor(max_iter=20, n_iter_no_change=3, **FAST).fit(X, y.astype(float))
    rlosses = [h["loss"] for h in reg.history_]
    assert (reference_stop(rlosses, 1e-3, 3, None) or 20) == reg.n_iter_
    assert "loss_scale" not in reg.stop_reason_


def test_warm_start_one_epoch_at_a_time_stops_where_one_fit_does():
    X, y = _noisy_moons()
    one = ok.DSGClassifier(max_iter=100, n_iter_no_change=3, **FAST).fit(X, y)
    warm = ok.DSGClassifier(max_iter=1, n_iter_no_change=3, warm_start=True, **FAST)
    for _ in range(100):
        # each call that ends at its max_iter (tol set) warns, as scikit-learn's SGD does;
        # the call the rule ends does not
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warm.fit(X, y)
        unconverged = warm.stop_reason_.startswith("max_iter")
        assert [w.category for w in caught] == [ConvergenceWarning] * unconverged
        if not unconverged:
            break
    assert _history(warm) == _history(one)
    assert warm.n_iter_ == one.n_iter_ and warm.stop_reason_ == one.stop_reason_
    np.testing.assert_array_equal(warm.decision_function(X), one.decision_function(X))


def test_a_rising_loss_is_not_a_plateau_while_the_steps_overshoot():
    """Before step ``t* = eta0 * curvature - t0``, where the steps ``eta0 / (t + t0)`` fall
    to the stable step ``1 / curvature`` (``curvature``: the data term's largest Hessian
    eigenvalue), an epoch whose loss rises is not a plateau: a first step above
    ``2 / curvature`` makes the loss oscillate above the starting model's for a few steps,
    which on a small data set (2 steps an epoch) are more epochs than
    ``n_iter_no_change``.  Twin: the rule of :func:`reference_stop` on the recorded
    history, with those epochs left out of the count."""
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = make_classification(5500, n_features=100, n_informative=25, n_redundant=0,
                               random_state=2)
    Xtr, ytr, Xte, yte = X[:500], y[:500], X[500:1500], y[500:1500]
    linear = make_pipeline(StandardScaler(), LogisticRegression()).fit(Xtr, ytr)
    clf = ok.DSGClassifier(random_state=2, progress=False, scheduler="sync").fit(Xtr, ytr)
    cfg = clf._config
    first_step = cfg.eta0 / (1.0 + cfg.t0)
    assert first_step * cfg.curvature > 2.0          # the case: the first steps oscillate
    t_star = cfg.eta0 * cfg.curvature - cfg.t0
    losses = [h["loss"] for h in clf.history_]
    steps = [h["steps"] for h in clf.history_]
    # the rule of reference_stop, where an epoch before t* whose loss rises above the best
    # by more than the tolerance counts neither as a gain nor as a plateau
    best, bad, stop = math.inf, 0, None
    for k, (loss, t) in enumerate(zip(losses, steps)):
        need = 1e-3 * max(1.0, best / TOL_LOSS_SCALE) if best < math.inf else 1e-3
        if not (t < t_star and loss > best + need):
            bad = bad + 1 if loss > best - need else 0
        best = min(best, loss)
        if bad >= 5:
            stop = k + 1
            break
    assert clf.n_iter_ == stop
    assert reference_stop(losses, 1e-3, 5, TOL_LOSS_SCALE) < stop   # the plain rule: sooner
    # past the transient the fit learns: at least half a linear model's gain over chance
    assert clf.score(Xte, yte) > 0.5 + (linear.score(Xte, yte) - 0.5) / 2
