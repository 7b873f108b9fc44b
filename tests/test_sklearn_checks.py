"""scikit-learn's own estimator checks on the DSG estimators.

Checks run on small in-memory data; the estimators are given a small batch so that a few
epochs over ~100 samples take enough steps to learn (the defaults target large data).
Checks that cannot apply are listed in EXPECTED_FAILED with their reason.
"""

from sklearn.utils.estimator_checks import parametrize_with_checks

from ooc_kernels import DSGClassifier, DSGRegressor

_SMALL = dict(batch_size=8, n_features=512, block_size=64, n_epochs=10, random_state=0,
              scheduler="sync")

ESTIMATORS = [
    DSGClassifier(**_SMALL),
    DSGClassifier(loss="hinge", **_SMALL),
    DSGClassifier(loss="softmax", **_SMALL),
    DSGRegressor(**_SMALL),
]

EXPECTED_FAILED: dict = {}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=lambda est: EXPECTED_FAILED)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
