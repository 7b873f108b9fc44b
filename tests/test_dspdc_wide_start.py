"""The logistic fit in memory on wide rows (more columns than rows) starts from Newton's
solution solved in the n-space (families/dspdc/_wide_newton.py) and is certified to ``tol``
before ``max_iter``, at the default ``alpha``, where DSPDC's iterations from zero stop at a
relative gap near 1 after 100 epochs.  The references are scikit-learn's
``LogisticRegression`` on the same problem (the standardized columns and a penalized
intercept column, ``C = 1 / (alpha * n)``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning

from ooc_kernels.families.dspdc import DSPDCClassifier

from _logistic_reference import check_certified_fit, gradient, reference


@pytest.mark.parametrize("seed", [0, 1])
def test_default_classifier_on_wide_rows_is_certified_and_matches_logistic_regression(seed):
    X, y = make_classification(n_samples=400, n_features=1000, n_informative=20,
                               random_state=seed)
    X_train, y_train, X_test, y_test = X[:200], y[:200], X[200:], y[200:]
    model = DSPDCClassifier(random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model.fit(X_train, y_train)
    ref, scaler, A, b = check_certified_fit(model, X_train, y_train, solver="newton-cg")
    A_test = np.hstack([scaler.transform(X_test), np.ones((200, 1))])
    b_test = np.where(y_test == model.classes_[1], 1.0, -1.0)
    assert model.score(X_train, y_train) == ref.score(A, b) == 1.0
    assert model.score(X_test, y_test) == ref.score(A_test, b_test)


def test_wide_newton_matches_logistic_regression_with_weights_and_zero_weights():
    from ooc_kernels.families.dspdc._wide_newton import wide_newton

    rng = np.random.default_rng(3)
    A = rng.normal(size=(60, 300))
    b = np.where(A[:, 0] + 0.3 * rng.normal(size=60) > 0, 1.0, -1.0)
    w = rng.uniform(0.2, 3.0, size=60)
    w[:5] = 0.0
    lam2 = 1e-3
    _, x_ref, ref_error = reference(A, b, w, lam2, solver="newton-cg")
    margins = np.empty(60)
    x, iterations = wide_newton(A, b, w, lam2, 1e-12, margins=margins)
    assert iterations < 20
    # the stopping rule: the gap ||g||^2 / (2 lam2) at most 0.9 tol P, checked in NumPy
    g = gradient(A, b, w, lam2, x)
    P = float(w @ np.logaddexp(0.0, -b * (A @ x))) / 60 + 0.5 * lam2 * float(x @ x)
    assert float(g @ g) / (2.0 * lam2) <= 0.9e-12 * P
    assert np.linalg.norm(x - x_ref) <= np.linalg.norm(g) / lam2 + ref_error
    np.testing.assert_allclose(margins, A @ x, rtol=0, atol=1e-12 * np.abs(A @ x).max())


def test_wide_start_applies_only_to_rows_fewer_than_columns():
    from ooc_kernels.families.dspdc._wide_newton import wide_applies

    assert wide_applies(200, 1001)
    assert not wide_applies(1001, 1001)
    assert not wide_applies(50, 100)            # the p-space Newton's range
    assert not wide_applies(2000, 5000)         # more rows than the n-space factor allows
