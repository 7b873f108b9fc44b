"""``nu`` bounds the share of training rows that ``DSGOneClassSVM.predict`` calls outliers
(its documentation, scikit-learn's ``OneClassSVM`` bound): the offset is the
``ceil(nu n)``-th smallest training score, so that row has a decision value of exactly 0,
which scikit-learn's rule (``decision_function >= 0``: inlier) counts as an inlier.  With
``nu n`` not an integer the share of outliers is then ``(ceil(nu n) - 1) / n < nu``."""

from __future__ import annotations

import numpy as np
import pytest

import ooc_kernels as ok


@pytest.mark.parametrize("nu, n", [(0.1, 405), (0.3, 301)])
def test_predicted_outliers_on_the_training_rows_are_at_most_nu(nu, n):
    X = np.random.default_rng(6).normal(size=(n, 2))
    det = ok.DSGOneClassSVM(nu=nu, n_features=64, block_size=16, max_iter=3, tol=None,
                            random_state=0, scheduler="sync", progress=False).fit(X)
    scores = det.score_samples(X)
    k = int(np.ceil(nu * n))
    assert det.offset_ == np.sort(scores)[k - 1]
    labels = det.predict(X)
    np.testing.assert_array_equal(labels, np.where(scores - det.offset_ >= 0, 1, -1))
    assert labels[np.argsort(scores, kind="stable")[k - 1]] == 1   # decision value 0
    assert np.mean(labels == -1) == (k - 1) / n < nu
