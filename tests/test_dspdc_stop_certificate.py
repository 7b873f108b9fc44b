"""What a DSPDC fit that stops on ``tol`` certifies, checked from outside: the primal
value of the returned coefficients is written here from the definitions, the optimum comes
from scikit-learn, and the documented stopping rule is ``(P - D) / |P| <= tol`` with
``duality_gap_ = P(coef_) - D(y)``.  A problem whose ``P`` is below 1 tells the relative
gap from any other normalization (``|P| + 1``, ``max(|P|, 1)``)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

import ooc_kernels as ok

FAST = dict(scheduler="sync", random_state=0, progress=False, standardize=False)


def _problem(n=200, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    return X, (X @ rng.normal(size=p) + 0.5 * rng.normal(size=n) > 0).astype(int)


def _primal(X, y, coef, alpha):
    b = 2.0 * y - 1.0
    return float(np.mean(np.logaddexp(0.0, -b * (X @ coef))) + 0.5 * alpha * coef @ coef)


@pytest.mark.parametrize("tol", [1e-2, 1e-3, 1e-5])
def test_a_fit_stopped_on_tol_certifies_the_relative_gap_of_its_coefficients(tol):
    X, y = _problem()
    n, alpha = len(X), 0.05
    est = ok.DSPDCClassifier(alpha=alpha, fit_intercept=False, tol=tol, max_iter=400,
                             **FAST).fit(X, y)
    assert est.stop_reason_.startswith("tol"), est.stop_reason_
    coef = est.coef_.ravel()
    P = _primal(X, y, coef, alpha)
    assert P < 1.0
    last = est.gap_history_[-1]
    assert last["primal"] == pytest.approx(P, rel=1e-9)
    assert last["gap"] == pytest.approx(last["primal"] - last["dual"], rel=1e-12, abs=1e-15)
    assert last["relative_gap"] == pytest.approx(last["gap"] / abs(P), rel=1e-9, abs=1e-15)
    assert est.duality_gap_ == last["gap"]
    assert est.duality_gap_ <= tol * abs(P)
    best = LogisticRegression(C=1.0 / (n * alpha), fit_intercept=False, tol=1e-12,
                              solver="newton-cholesky", max_iter=1000).fit(X, y).coef_[0]
    P_star = _primal(X, y, best, alpha)
    assert -1e-12 <= P - P_star <= est.duality_gap_ + 1e-12      # the certificate
