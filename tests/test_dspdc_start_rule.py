"""One start rule for every input (families/dspdc/_start_rule.py): the squared loss's fit
starts from the solution of its problem whether the rows are a NumPy array or a Dask array,
whatever ``chunks_per_round`` and ``standardize``.  The start is checked against
scikit-learn's ``Ridge`` on the same problem, and the iterates of the same rounds (NumPy
and Dask, several tasks per round: both out of core) against each other."""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.preprocessing import StandardScaler

import ooc_kernels as ok
from ooc_kernels.families.dspdc._start_rule import start_kind
from ooc_kernels.losses import LOSS_LOGISTIC, LOSS_SMOOTHED_HINGE, LOSS_SQUARED

ALPHA, CHUNK = 1e-2, 300


def _data(n=1200, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * np.array([1.0, 30.0, 0.1, 1.0, 2.0]) + np.array(
        [0.0, 50.0, 0.0, -3.0, 1.0])
    y = X @ rng.normal(size=p) + 0.3 * rng.normal(size=n) + 2.0
    return X, y


def _inputs(X, y, kind):
    if kind == "numpy":
        return X, y
    return da.from_array(X, chunks=(CHUNK, -1)), da.from_array(y, chunks=CHUNK)


def _reference_start(X, y, standardize):
    """The solver's start for the regressor (``intercept_scaling = 1``) from scikit-learn:
    ``Ridge`` with a free intercept on the standardized columns (the intercept's
    coefficient is then 0), or on the raw columns with the intercept's column of ones
    penalized, the targets less their mean."""
    n = len(y)
    if standardize:
        Z = StandardScaler().fit_transform(X)
        coef = Ridge(alpha=ALPHA * n, fit_intercept=True).fit(Z, y).coef_
        return np.append(coef, 0.0)
    A = np.column_stack([X, np.ones(n)])
    return Ridge(alpha=ALPHA * n, fit_intercept=False).fit(A, y - y.mean()).coef_


@pytest.mark.parametrize("standardize", [True, False])
@pytest.mark.parametrize("K", [1, 3])
@pytest.mark.parametrize("kind", ["numpy", "dask"])
def test_the_squared_loss_starts_from_its_solution_on_every_input(standardize, K, kind):
    X, y = _data()
    est = ok.DSPDCRegressor(alpha=ALPHA, standardize=standardize, chunks_per_round=K,
                            max_iter=2, tol=None, chunk_size=CHUNK, random_state=0,
                            progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(*_inputs(X, y, kind))
    want = _reference_start(X, y, standardize)
    assert est._config.start_x is not None
    np.testing.assert_allclose(est._config.start_x, want, rtol=1e-8, atol=1e-10)
    # the start's certificate: the first gap evaluated is the start's, at rounding
    assert est.gap_history_[0]["iterations"] == 0
    assert abs(est.gap_history_[0]["relative_gap"]) < 1e-10


@pytest.mark.parametrize("standardize", [True, False])
def test_numpy_and_dask_run_the_same_rounds_from_the_same_start(standardize):
    """Several tasks per round: NumPy input runs out of core too, so with the same chunks,
    sampling and passes the two fits are the same iterates, gap for gap (with one task
    per round the NumPy fit runs in memory, which visits the rows in another order and
    moves the duals along a line: there the start alone is the same, above)."""
    X, y = _data(seed=1)
    X[:, 1] *= 0.01                       # a problem the start does not solve to rounding
    fits = []
    for kind in ("numpy", "dask"):
        est = ok.DSPDCRegressor(alpha=1e-4, standardize=standardize, chunks_per_round=3,
                                max_iter=2, tol=None, chunk_size=CHUNK, random_state=0,
                                progress=False, sampling="uniform", local_passes=1.0,
                                shuffle_chunks=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits.append(est.fit(*_inputs(X, y, kind)))
    a, b = fits
    assert a._config.start_x is not None and b._config.start_x is not None
    np.testing.assert_allclose(a._config.start_x, b._config.start_x, rtol=1e-10)
    assert len(a.gap_history_) == len(b.gap_history_) == 3
    for ga, gb in zip(a.gap_history_, b.gap_history_):
        assert (ga["iterations"], ga["passes"]) == (gb["iterations"], gb["passes"])
        np.testing.assert_allclose(ga["primal"], gb["primal"], rtol=1e-10)
        np.testing.assert_allclose(ga["dual"], gb["dual"], rtol=1e-10)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-9, atol=1e-12)


def test_the_rule_depends_on_the_problem_only():
    assert start_kind(LOSS_SQUARED, 0.01, 0.1, 512, False) == "squared"
    assert start_kind(LOSS_SQUARED, 0.0, 0.1, 513, False) is None
    assert start_kind(LOSS_LOGISTIC, 0.0, 0.1, 128, False) == "logistic"
    assert start_kind(LOSS_LOGISTIC, 0.0, 0.1, 129, False) is None
    assert start_kind(LOSS_LOGISTIC, 1e-3, 0.1, 10, False) is None
    assert start_kind(LOSS_SMOOTHED_HINGE, 0.0, 0.1, 10, False) is None
    assert start_kind(LOSS_SQUARED, 0.0, 0.1, 10, True) is None
