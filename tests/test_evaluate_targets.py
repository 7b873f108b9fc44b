"""evaluate() scores only targets that can be what the model predicts: a label outside a
classifier's classes (its log loss is undefined: scikit-learn's ``log_loss`` refuses it),
labels of another kind than the classes (text against numbers) and text targets for a
regressor are an ``InvalidDataError`` naming the value; labels that equal the classes
(float 1.0 for the class 1) score as scikit-learn scores them."""

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, log_loss, r2_score

import ooc_kernels as ok
from ooc_kernels.evaluation import evaluate
from ooc_kernels.exceptions import InvalidDataError


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = (X[:, 0] > 0).astype(np.int64)
    clf = ok.DSGClassifier(n_features=256, max_iter=2, tol=None, chunk_size=40,
                           random_state=0, scheduler="sync").fit(X, y)
    return X, y, clf


def test_labels_equal_to_the_classes_score_as_scikit_learn(data):
    X, y, clf = data
    proba = clf.predict_proba(X)
    for labels in (y, y.astype(np.float64)):
        out = evaluate(clf, X, labels)
        assert out["accuracy"] == pytest.approx(accuracy_score(y, clf.predict(X)))
        assert out["log_loss"] == pytest.approx(log_loss(y, proba, labels=[0, 1]))


def test_a_label_outside_the_classes_is_refused_as_scikit_learn_refuses_it(data):
    X, y, clf = data
    y2 = y.copy()
    y2[50] = 2                                    # chunk 1, row 10
    with pytest.raises(ValueError, match=r"not belonging to the passed labels"):  # reference
        log_loss(y2, clf.predict_proba(X), labels=clf.classes_)
    with pytest.raises(InvalidDataError, match=r"label 2 in chunk 1, row 10 is not one of "
                                               r"the classes \[0, 1\]"):
        evaluate(clf, X, y2)


def test_text_labels_against_numeric_classes_are_refused(data):
    X, y, clf = data
    with pytest.raises(InvalidDataError, match=r"y holds text \(dtype <U1\), but "
                                               r"DSGClassifier was fitted on classes of "
                                               r"numbers \(\[0, 1\]\)"):
        evaluate(clf, X, np.where(y == 1, "b", "a"))


def test_a_regressor_refuses_text_targets(data):
    X, y, _ = data
    reg = ok.DSGRegressor(n_features=256, max_iter=2, tol=None, random_state=0,
                          scheduler="sync").fit(X, X[:, 0])
    with pytest.raises(InvalidDataError, match=r"y holds text .* DSGRegressor is a "
                                               r"regressor: its targets are numbers"):
        evaluate(reg, X, np.where(y == 1, "up", "down"))
    with pytest.raises(InvalidDataError, match="cannot be read as numbers"):
        evaluate(reg, X, np.array(["up"] * len(y), dtype=object))


def test_r2_of_constant_targets_is_scikit_learns():
    X = np.random.default_rng(1).normal(size=(60, 2))
    constant = np.full(60, 1.5)
    for est, y in ((ok.DSGRegressor(n_features=256, max_iter=2, tol=None, random_state=0,
                                    scheduler="sync"), X[:, 0]),        # predictions vary
                   (ok.ProjectedKernelRidge(), constant)):              # predictions exact
        est.fit(X, y)
        pred = est.predict(X)
        out = evaluate(est, X, constant)
        assert out["r2"] == r2_score(constant, pred)   # 0.0 / 1.0, not -inf / nan
        assert np.isfinite(out["r2"])
