"""``benchmarks/real_data_classifiers.py``: its generated problems have the traits its
docstring names, it runs every registered classifier, and its scores are scikit-learn's."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location(
        "real_data_bench", ROOT / "benchmarks" / "real_data_classifiers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_registered_classifier_is_run(bench):
    from sklearn.base import is_classifier, is_regressor

    import ooc_kernels as ok

    names = set(bench.classifiers())
    assert {"DSGClassifier", "DSPDCClassifier"} <= names
    for name in ok.available_estimators():
        est = getattr(ok, name)()
        assert (name in names) == is_classifier(est)
        assert not (name in names and is_regressor(est))


def test_generated_problems_have_their_traits(bench):
    X, Xt, y, yt = bench.problem("scales", 0)
    spread = X.std(axis=0)
    assert spread.max() / spread.min() > 1e6
    X, Xt, y, yt = bench.problem("offset", 0)
    assert abs(X[:, 0].mean() - 1e7) < 1 and 0.5 < X[:, 0].std() < 2
    X, Xt, y, yt = bench.problem("dup_const", 0)
    assert (X.std(axis=0) == 0).sum() == 5
    assert sum(np.array_equal(X[:, 0], X[:, j]) for j in range(1, X.shape[1])) == 4
    assert ((X[:, -3:] != 0).mean(axis=0) < 0.05).all()
    X, Xt, y, yt = bench.problem("categorical", 0)
    assert set(y) == {"no", "yes"}
    assert all(np.array_equal(X[:, j], np.round(X[:, j])) for j in range(3))
    assert [len(np.unique(X[:, j])) for j in range(3)] == [5, 12, 30]
    assert (X[:, 3:13].sum(axis=1) == 1).all()
    X, Xt, y, yt = bench.problem("heavy_tails", 0)
    kurtosis = ((X - X.mean(0)) ** 4).mean(0) / X.var(0) ** 2
    assert (kurtosis[:5] > 10).all()
    X, Xt, y, yt = bench.problem("many_classes", 0)
    labels, counts = np.unique(y, return_counts=True)
    assert len(labels) == 60 and (counts == 9).all() and labels.dtype.kind == "U"
    assert set(bench.problem("strings3", 0)[2]) == {"low", "mid", "high"}


def test_scores_are_scikit_learns(bench):
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, log_loss

    split = bench.problem("strings3", 1)
    row = bench.run_one(LogisticRegression(max_iter=1000), split)
    ref = LogisticRegression(max_iter=1000).fit(split[0], split[2])
    assert row["accuracy"] == pytest.approx(accuracy_score(split[3], ref.predict(split[1])))
    assert row["log_loss"] == pytest.approx(log_loss(split[3], ref.predict_proba(split[1])))
    assert row["cpu_seconds"] >= 0
