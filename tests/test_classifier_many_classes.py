"""A classifier with many classes: scikit-learn's "more unique classes than half the
samples" warning (``check_classification_targets``) is about the training rows, so it must
not fire for 30 classes of 20 rows each, and must still fire when most rows are a class of
their own (the condition scikit-learn checks on ``y`` itself)."""

import warnings

import numpy as np
import pytest
from sklearn.utils.multiclass import check_classification_targets

import ooc_kernels as ok

FAST = dict(n_features=256, bandwidth=1.0, standardize=False, max_iter=2, tol=None,
            random_state=0)


def _sklearn_warns(y) -> bool:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_classification_targets(y)
    return any("50% of the number of samples" in str(w.message) for w in caught)


def test_thirty_classes_of_twenty_rows_fit_without_the_regression_target_warning():
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(30), 20)
    X = rng.normal(size=(len(y), 3)) + y[:, None] * 0.1
    assert not _sklearn_warns(y)  # the independent expectation: scikit-learn on y
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf = ok.DSGClassifier(**FAST).fit(X, y)
    assert len(clf.classes_) == 30


def test_mostly_distinct_labels_still_get_the_warning():
    rng = np.random.default_rng(0)
    y = np.concatenate([np.arange(25), np.arange(5)])  # 30 rows, 25 classes
    X = rng.normal(size=(len(y), 2))
    assert _sklearn_warns(y)
    with pytest.warns(UserWarning, match="50% of the number of samples"):
        ok.DSGClassifier(**FAST).fit(X, y)


def test_classes_declared_to_partial_fit_are_not_taken_for_a_regression_target():
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(10), 3)  # 30 rows of 10 of the 40 declared classes
    X = rng.normal(size=(len(y), 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf = ok.DSGClassifier(**FAST).partial_fit(X, y, classes=np.arange(40))
    assert len(clf.classes_) == 40
