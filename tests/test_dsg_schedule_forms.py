"""The DSG schedules' documented closed forms, written here from the estimator's docstring
(``learning_rate="inverse"`` with ``t0="auto"``: the first step is the stable one,
``1 / (L lambda)`` with ``L`` the loss's curvature bound) and from the many-row rule's
``average``: a number of samples seen before averaging starts (``large_data_average``),
so with ``n`` rows in batches of ``b`` (``b`` dividing ``n``) ``average = e n`` averages from
the first step of epoch ``e + 1``, global step ``e n / b + 1``."""

from __future__ import annotations

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dsg._large_data import large_data_average
from ooc_kernels.families.dsg._schedule import resolve_schedule

#: Second-derivative bounds of the losses in the decision value (squared: 1; logistic:
#: sigmoid' <= 1/4), written here rather than read from the loss table.
CURVATURE = {"squared": 1.0, "logistic": 0.25}


@pytest.mark.parametrize("loss", sorted(CURVATURE))
@pytest.mark.parametrize("eta0, lam", [(40.0, 0.25), (7.0, 0.8), (1e4, 0.01)])
def test_inverse_schedule_with_auto_t0_starts_at_the_stable_step(loss, eta0, lam):
    stable = 1.0 / (CURVATURE[loss] * lam)
    plan = resolve_schedule(learning_rate="inverse", eta0=eta0, t0="auto", alpha=1.0 / eta0,
                            average=False, loss=loss, eigenvalue=lam, batch_size=4,
                            n_samples=100)
    expected = min(stable, eta0)                 # t0 >= 0: never above eta0
    assert plan.eta0 == eta0
    assert plan.eta0 / (1.0 + plan.t0) == pytest.approx(expected, rel=1e-12)
    assert plan.first_step == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("n, b, epochs", [(100, 4, 2), (100, 4, 8), (96, 32, 1), (60, 1, 3)])
def test_averaging_from_a_sample_count_starts_after_those_samples(n, b, epochs):
    average = epochs * n
    plan = resolve_schedule(learning_rate="constant", eta0=0.5, t0="auto", alpha=0.01,
                            average=average, loss="squared", eigenvalue=1.0, batch_size=b,
                            n_samples=n)
    steps_per_epoch = n // b
    assert plan.average == epochs * steps_per_epoch + 1   # epoch (epochs + 1)'s first step


def test_the_many_row_rule_averages_from_the_ninth_epoch():
    n, b = 300_000, 256 * 25                      # 46.875 batches: n is not a multiple
    average = large_data_average("auto", n, loss="logistic")
    assert average == 8 * n
    plan = resolve_schedule(learning_rate="constant", eta0=0.5, t0="auto", alpha=0.01,
                            average=average, loss="logistic", eigenvalue=1.0, batch_size=b,
                            n_samples=n)
    # 8 n = 2,400,000 samples = 375 whole batches: averaging starts with step 376
    assert 8 * n % b == 0 and plan.average == 8 * n // b + 1


@pytest.mark.parametrize("average, start", [(True, 1), (False, 0), (0, 0)])
def test_boolean_average_and_zero(average, start):
    plan = resolve_schedule(learning_rate="constant", eta0=0.5, t0="auto", alpha=0.01,
                            average=average, loss="squared", eigenvalue=1.0, batch_size=4,
                            n_samples=100)
    assert plan.average == start


@pytest.mark.parametrize("make", [
    lambda: ok.DSGClassifier(alpha=1e-320),                   # subnormal: 1 / alpha = inf
    lambda: ok.DSGRegressor(alpha=5e-324),
    pytest.param(lambda: ok.DSGClassifier(class_weight={0: 1e308, 1: 1e308}),  # 'auto': 1 / inf
                 marks=pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")),
], ids=["classifier", "regressor", "weights"])
def test_an_alpha_whose_inverse_overflows_is_refused_with_the_fix(make):
    """learning_rate='optimal' takes theta = 1 / alpha: for an alpha below 1 / the largest
    float (about 5.6e-309) theta is inf, which no step schedule can use (not Python's
    'cannot convert float NaN to integer' from inside the fit).  A fit just above the bound
    runs."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] > 0).astype(np.int64)
    with pytest.raises(ValidationError, match=r"1 / alpha finite \(alpha >= 5\.56e-309\)"):
        make().set_params(n_features=256, max_iter=1, tol=None, scheduler="sync").fit(X, y)
    assert 1.0 / 6e-309 < np.finfo(np.float64).max                   # the bound's reference
    ok.DSGClassifier(alpha=6e-309, n_features=256, max_iter=1, tol=None,
                     scheduler="sync").fit(X, y)
