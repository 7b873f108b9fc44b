"""The logistic fit in memory above 128 solver columns starts from Newton's solution in the
p-space where the rows are few per column (``_logistic_start.newton_applies``: at most
``NEWTON_ROWS_PER_COLUMN`` rows per column, up to 512 columns), and is certified to ``tol``
before ``max_iter`` at the defaults, where DSPDC's iterations from zero stop at
``max_iter`` on 2,000 x 300 rows.  The reference is scikit-learn's ``LogisticRegression``
on the same problem (the standardized columns and a penalized intercept column,
``C = 1 / (alpha * n)``)."""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning

from ooc_kernels.families.dspdc import DSPDCClassifier
from ooc_kernels.losses import LOSS_LOGISTIC

from _logistic_reference import check_certified_fit


@pytest.mark.parametrize("seed", [0, 2])
def test_default_classifier_on_300_columns_is_certified_and_matches_logistic_regression(seed):
    n = 2000
    X, y = make_classification(n_samples=n, n_features=300, random_state=seed)
    model = DSPDCClassifier(random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model.fit(X, y)
    reference, _, A, _ = check_certified_fit(model, X, y)
    np.testing.assert_array_equal(model.predict(X), np.where(reference.predict(A) > 0,
                                                             model.classes_[1],
                                                             model.classes_[0]))


def test_the_start_above_128_columns_follows_the_rows_per_column():
    from ooc_kernels.families.dspdc._logistic_start import NEWTON_ROWS_PER_COLUMN
    from ooc_kernels.families.dspdc._start_rule import start_kind

    rows = NEWTON_ROWS_PER_COLUMN * 301
    assert start_kind(LOSS_LOGISTIC, 0.0, 1e-4, 301, False, n=2000) == "logistic"
    assert start_kind(LOSS_LOGISTIC, 0.0, 1e-4, 301, False, n=rows) == "logistic"
    assert start_kind(LOSS_LOGISTIC, 0.0, 1e-4, 301, False, n=rows + 1) is None
    assert start_kind(LOSS_LOGISTIC, 0.0, 1e-4, 301, False) is None         # out of core
    assert start_kind(LOSS_LOGISTIC, 0.0, 1e-4, 513, False, n=2000) is None  # every start
    assert start_kind(LOSS_LOGISTIC, 1e-5, 1e-4, 301, False, n=2000) is None  # an l1 part


def test_the_same_rows_out_of_core_start_from_newton_too():
    """Out of core the start is computed chunk by chunk (``_ooc_newton``): Newton's
    solution of the same problem, to the fit's ``tol``."""
    X, y = make_classification(n_samples=600, n_features=150, random_state=0)
    kw = dict(max_iter=2, scheduler="sync", random_state=0, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        held = DSPDCClassifier(**kw).fit(X, y)
        lazy = DSPDCClassifier(**kw).fit(da.from_array(X, chunks=(200, 150)),
                                         da.from_array(y, chunks=200))
    assert held._config.start_x is not None and lazy._config.start_x is not None
    # both within sqrt(2 gap / alpha) of the solution, gap <= tol P <= tol log 2
    bound = 2.0 * np.sqrt(2.0 * held.tol * np.log(2.0) / held.alpha)
    assert np.linalg.norm(np.subtract(held._config.start_x, lazy._config.start_x)) <= bound
