"""``average="auto"`` of the classifier on many rows (``n_features="auto"``, more than
``LARGE_DATA_ROWS`` rows, logistic or softmax loss): the iterates are averaged from the step
after ``AVERAGE_FROM_EPOCH`` epochs of rows; anywhere else ``"auto"`` keeps its meaning.

The row threshold is lowered for the fits here so that small data exercise the rule."""

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.families.dsg import _large_data
from ooc_kernels.families.dsg._large_data import AVERAGE_FROM_EPOCH, large_data_average


@pytest.mark.parametrize("average, n_rows, loss, expected", [
    ("auto", 300_000, "logistic", AVERAGE_FROM_EPOCH * 300_000),
    ("auto", 300_000, "softmax", AVERAGE_FROM_EPOCH * 300_000),
    ("auto", 50_000, "softmax", "auto"),          # not more than LARGE_DATA_ROWS
    ("auto", 300_000, "squared", "auto"),
    ("auto", 300_000, "hinge", "auto"),
    (False, 300_000, "logistic", False),          # given by the user: kept
    (True, 300_000, "logistic", True),
    (1000, 300_000, "logistic", 1000),
])
def test_the_rule(average, n_rows, loss, expected):
    assert large_data_average(average, n_rows, loss=loss) == expected


def _rows(n, classes, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (np.floor((X[:, 0] + 3) * classes / 6).clip(0, classes - 1)).astype(int)
    return X, y


@pytest.fixture
def few_rows_are_many(monkeypatch):
    monkeypatch.setattr(_large_data, "LARGE_DATA_ROWS", 300)


@pytest.mark.parametrize("classes", [2, 3])
def test_a_classifier_on_many_rows_averages_after_the_epochs(few_rows_are_many, classes):
    X, y = _rows(600, classes)
    clf = ok.DSGClassifier(max_iter=1, tol=None, batch_size=32, random_state=0).fit(X, y)
    # the schedule's first averaged step: the samples of AVERAGE_FROM_EPOCH epochs, in steps
    assert clf._config.average == AVERAGE_FROM_EPOCH * 600 // 32 + 1


@pytest.mark.parametrize("params, n", [
    ({}, 250),                                    # not many rows
    ({"average": False}, 600),                    # the user's choice
    ({"n_features": 512}, 600),                   # the many-row rules are off
])
def test_elsewhere_the_last_iterate_predicts(few_rows_are_many, params, n):
    X, y = _rows(n, 2)
    clf = ok.DSGClassifier(max_iter=1, tol=None, batch_size=32, random_state=0, **params).fit(X, y)
    assert clf._config.average == 0


def test_the_regressor_keeps_the_last_iterate_on_many_rows(few_rows_are_many):
    X, _ = _rows(600, 2)
    reg = ok.DSGRegressor(n_features="auto", max_iter=1, tol=None, batch_size=32,
                          random_state=0).fit(X, X[:, 0])
    assert reg._config.average == 0
