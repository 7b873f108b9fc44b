"""``class_weight`` of the DSG classifier weighs every row of the automatic set-up as the
fit weighs it: a fit with ``class_weight="balanced"`` is the fit with scikit-learn's
``compute_sample_weight("balanced", y)`` as ``sample_weight``, in every set-up path
(generalized cross-validation on at most 1,000 rows, leave-one-out up to 50,000 rows, the
trial fits above)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.utils.class_weight import compute_sample_weight

import ooc_kernels as ok
from ooc_kernels.families.dsg import estimators as dsg_estimators

FAST = dict(random_state=0, scheduler="sync", n_features=256, block_size=64, max_iter=3,
            tol=None)


def _rare_class(n_rows):
    # about 5% positives: the class weights move the weighted median distance
    return make_classification(n_samples=n_rows, n_features=6, n_informative=4,
                               weights=[0.95], flip_y=0, random_state=0)


@pytest.mark.parametrize("n_rows, path", [(600, "gcv"), (3000, "loo"), (3000, "trials")])
def test_balanced_class_weight_is_the_balanced_sample_weight(n_rows, path, monkeypatch):
    if path == "trials":  # the path of more than 50,000 rows, on few rows
        monkeypatch.setattr(dsg_estimators, "use_loo_setup", lambda *a: False)
    X, y = _rare_class(n_rows)
    by_class = ok.DSGClassifier(class_weight="balanced", **FAST).fit(X, y)
    by_row = ok.DSGClassifier(**FAST).fit(
        X, y, sample_weight=compute_sample_weight("balanced", y))
    np.testing.assert_array_equal(by_class.bandwidth_, by_row.bandwidth_)
    np.testing.assert_allclose(by_class.decision_function(X), by_row.decision_function(X),
                               rtol=1e-6, atol=1e-6)
