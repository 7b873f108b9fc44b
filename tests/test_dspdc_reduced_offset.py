"""Factorized data whose columns have a large mean: the row space of ``V`` path
(``q = p``, ``l1_ratio = 0``) solves the standardized problem, which does not depend on the
mean, as the exact solution on the explicit ``A = U V`` does, at any offset of ``U``
(``families/dspdc/_reduced.py``, :func:`centred_factors`)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

N, D, P, ALPHA, TOL, MAX_ITER = 600, 3, 5, 1e-2, 1e-8, 100


def _data(offset: float, loss: str):
    rng = np.random.default_rng(0)
    Z, V = rng.normal(size=(N, D)), rng.normal(size=(D, P))
    U = Z + offset
    A = U @ V                          # only for the reference
    z = (A - A.mean(0)) @ np.arange(1.0, P + 1) + rng.normal(size=N)
    y = z if loss == "squared" else (z > 0).astype(int)
    return U, V, A, y


def _exact(A, y, loss):
    """The solution ``x'`` (the coefficients of the standardized columns, then the
    intercept's on the constant column 1) of the standardized problem, by scikit-learn on
    the explicit matrix."""
    from sklearn.linear_model import LogisticRegression, Ridge

    mean, std = A.mean(0), A.std(0)
    As = np.hstack([(A - mean) / std, np.ones((len(A), 1))])
    if loss == "squared":
        model = Ridge(alpha=ALPHA * len(A), fit_intercept=False, solver="svd")
    else:
        model = LogisticRegression(C=1.0 / (ALPHA * len(A)), fit_intercept=False,
                                   solver="newton-cholesky", tol=1e-13, max_iter=100)
    return np.ravel(model.fit(As, y).coef_), mean, std


@pytest.mark.parametrize("lazy", [False, True], ids=["memory", "dask"])
@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("offset", [0.0, 1e3, 1e5])
def test_row_space_path_converges_to_the_exact_solution_at_any_mean(offset, loss, lazy):
    import ooc_kernels as ok
    from sklearn.exceptions import ConvergenceWarning

    U, V, A, y = _data(offset, loss)
    want, mean, std = _exact(A, y, loss)
    if lazy:
        import dask.array as da

        U = da.from_array(U, chunks=(N // 3, D))
    Est = ok.DSPDCRegressor if loss == "squared" else ok.DSPDCClassifier
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = Est(alpha=ALPHA, tol=TOL, max_iter=MAX_ITER, random_state=0,
                  progress=False).fit(ok.Factorized(U, V), y)
    assert est.n_iter_ < MAX_ITER
    assert est.gap_history_[-1]["relative_gap"] <= TOL
    got = np.append(est.coef_ * std, est.intercept_ + mean @ est.coef_)
    bound = np.sqrt(2.0 * est.duality_gap_ / ALPHA)     # ||x' - x'*|| from the certificate
    assert np.linalg.norm(got - want) <= bound + 1e-9 * np.linalg.norm(want)


def test_reduced_rows_keep_the_intercept_direction_at_a_large_mean():
    """With the shift row of a mean of 1e5, ``V V^T`` has a condition number near 1e22;
    the reduced rows still see ``x`` as the rows ``[u_i, c] V`` do, on the whole row space."""
    from ooc_kernels.families.dspdc._reduced import ReducedRows

    rng = np.random.default_rng(1)
    U, V = rng.normal(size=(50, D)) + 1e5, rng.normal(size=(D, P))
    mean = U.mean(0) @ V
    c = 0.7
    Vaug = np.zeros((D + 1, P + 1))
    Vaug[:D, :P], Vaug[D, :P], Vaug[D, P] = V, -mean / c, 1.0
    rows = np.column_stack([U, np.full(len(U), c)])
    red = ReducedRows(rows, Vaug, c)
    assert red.rows.shape == (50, D + 1)
    x = rng.normal(size=P + 1)
    w, perp = red.split(x)
    want = np.column_stack([U @ V - mean, np.full(len(U), c)]) @ x   # a'_i . x, centred
    np.testing.assert_allclose(red.rows @ w, want, rtol=1e-6, atol=1e-6 * np.abs(want).max())
    np.testing.assert_allclose(Vaug @ perp, 0, atol=1e-6)
    np.testing.assert_allclose(red.join(w, perp, 1.0), x, atol=1e-12)
