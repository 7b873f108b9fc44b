"""A DSPDC logistic fit against scikit-learn's ``LogisticRegression`` on the problem its
duality gap certifies: the columns standardized (ddof 0), a penalized intercept on a
constant column of ``intercept_scaling = 1``, ``C = 1 / (alpha n)``, no intercept of
scikit-learn's own.  The certified ``x`` lies within ``sqrt(2 gap / alpha)`` of the optimum
and the reference within ``||g(x_ref)|| / alpha`` (strong convexity), so the two lie within
the sum of both."""

from __future__ import annotations

import numpy as np
from scipy.special import expit
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler


def gradient(A, b, w, lam2, x):
    """The gradient of ``sum_i w_i log(1 + exp(-b_i a_i^T x)) / n + lam2 / 2 ||x||^2``."""
    s = expit(-b * (A @ x))
    return A.T @ (w * -b * s) / len(b) + lam2 * x


def reference(A, b, w, lam2, solver="newton-cholesky"):
    """scikit-learn's fit of the problem above on the rows ``A`` (``tol=1e-12``), its
    solution and the bound ``||g(x_ref)|| / lam2`` on that solution's distance to the
    optimum.  ``solver="newton-cg"`` where ``A`` has many columns: as exact there and far
    faster than newton-cholesky (its Hessian of ``p x p`` per iteration)."""
    ref = LogisticRegression(C=1.0 / (lam2 * len(b)), fit_intercept=False, solver=solver,
                             tol=1e-12, max_iter=1000)
    ref.fit(A, b, sample_weight=w)
    x = ref.coef_.ravel()
    return ref, x, float(np.linalg.norm(gradient(A, b, w, lam2, x))) / lam2


def check_certified_fit(model, X, y, solver="newton-cholesky"):
    """Assert that ``model`` (a fitted ``DSPDCClassifier`` with the logistic loss, on ``X``
    and ``y`` with unit weights) stopped on its tolerance and lies within the distance its
    certified gap allows of scikit-learn's solution, a distance below 1% of that solution's
    norm; returns ``(the fitted LogisticRegression, the scaler, the rows A, the signs b)``
    for further comparisons."""
    assert model.stop_reason_.startswith("tol:"), model.stop_reason_
    assert model.n_iter_ < model.max_iter
    last = model.gap_history_[-1]
    assert last["relative_gap"] <= model.tol
    n = len(y)
    # the computed gap is within the rounding of its sums over the n rows of the exact one
    # (at most n eps |P|; a gap at that level may come out below 0)
    gap = max(float(last["gap"]), 0.0) + n * np.finfo(np.float64).eps * abs(last["primal"])
    scaler = StandardScaler().fit(X)
    A = np.hstack([scaler.transform(X), np.ones((n, 1))])
    b = np.where(y == model.classes_[1], 1.0, -1.0)
    ref, x_ref, ref_error = reference(A, b, np.ones(n), model.alpha, solver)
    x_fit = np.append(model.coef_.ravel() * scaler.scale_,
                      float(np.ravel(model.intercept_)[0]) + model.coef_.ravel() @ scaler.mean_)
    bound = np.sqrt(2.0 * gap / model.alpha) + ref_error
    assert np.linalg.norm(x_fit - x_ref) <= bound
    assert bound < 1e-2 * np.linalg.norm(x_ref)
    return ref, scaler, A, b
