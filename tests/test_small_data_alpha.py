"""``alpha="auto"`` on small data sets (at most 1,000 rows): ``alpha / 10`` when the exact
leave-one-out predictions of the set-up's kernel ridge regression score it more than 0.005
above ``alpha`` (``docs/defaults.md``, "``alpha / 10``, chosen by the bandwidth trials").

Checked against scikit-learn's ``LogisticRegression`` on a problem of many classes and few
rows per class, and against the leave-one-out accuracies computed with plain NumPy from
the hat matrix of kernel ridge regression.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from sklearn.datasets import make_blobs, make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import ooc_kernels as ok


def _many_classes(seed=2):
    """40 classes of 10 training (and 10 test) rows each, 20 informative inputs."""
    X, y = make_classification(800, n_features=20, n_informative=20, n_redundant=0,
                               n_classes=40, n_clusters_per_class=1, class_sep=1.5,
                               random_state=seed)
    X, Xt, y, yt = train_test_split(X, y, test_size=0.5, stratify=y, random_state=seed)
    scaler = StandardScaler().fit(X)
    return scaler.transform(X), y, scaler.transform(Xt), yt


def _overlapping_classes(seed=0):
    """40 overlapping Gaussian classes of 10 training (and 10 test) rows each."""
    X, y = make_blobs(800, centers=40, n_features=10, cluster_std=4.0, random_state=seed)
    X, Xt, y, yt = train_test_split(X, y, test_size=0.5, stratify=y, random_state=seed)
    scaler = StandardScaler().fit(X)
    return scaler.transform(X), y, scaler.transform(Xt), yt


def _fit(X, y):
    return ok.DSGClassifier(random_state=0, progress=False, n_jobs=1,
                            scheduler="sync").fit(X, y)


def test_the_default_reaches_logistic_regression_with_40_classes_of_10_rows():
    X, y, Xt, yt = _many_classes()
    linear = LogisticRegression(max_iter=5000).fit(X, y).score(Xt, yt)
    clf = _fit(X, y)
    assert clf.score(Xt, yt) >= linear
    assert clf.alpha_ * len(X) == pytest.approx(0.1)


def _twin_loo_accuracy(X, y, bandwidth, ridge):
    """Leave-one-out accuracy of kernel ridge regression on one +-1 column per class, from
    the hat matrix ``H = K (K + ridge I)^-1``: row ``i`` refitted without itself predicts
    ``(H t - diag(H) t)_i / (1 - H_ii)``."""
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    K = np.exp(-cdist(Z, Z, "sqeuclidean") / (2 * bandwidth ** 2))
    classes = np.unique(y)
    T = np.where(y[:, None] == classes[None, :], 1.0, -1.0)
    H = np.linalg.solve(K + ridge * np.eye(len(Z)), K).T
    h = np.diag(H)[:, None]
    loo = (H @ T - h * T) / (1.0 - h)
    return float(np.mean(classes[np.argmax(loo, axis=1)] == y))


@pytest.mark.parametrize("make, factor", [(_many_classes, 0.1), (_overlapping_classes, 1.0)])
def test_the_alpha_choice_matches_leave_one_out_accuracies_computed_with_numpy(make, factor):
    X, y, _, _ = make()
    clf = _fit(X, y)
    n = len(X)
    # alpha = 1 / n on n rows of weight 1: the ridge of the kernel matrix is n alpha = 1
    twin = {f: _twin_loo_accuracy(X, y, float(clf.bandwidth_), f) for f in (1.0, 0.1)}
    for f, value in twin.items():
        assert clf.setup_scores_[("per-input", f)] == pytest.approx(value, abs=1e-12), f
    expected = 0.1 if twin[0.1] > twin[1.0] + 0.005 else 1.0
    assert expected == factor          # each case is the one it is meant to be
    assert clf.alpha_ * n == pytest.approx(expected)


def test_a_given_alpha_is_used_as_given_on_small_data():
    X, y, _, _ = _many_classes()
    clf = ok.DSGClassifier(alpha=1e-3, random_state=0, progress=False, n_jobs=1,
                           scheduler="sync", max_iter=2, tol=None).fit(X, y)
    assert clf.alpha_ == 1e-3 and clf.setup_scores_ is None
