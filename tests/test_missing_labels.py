"""Class labels with missing values (``None``, ``NaN`` in text labels, pandas ``NA`` of a
string or categorical column) are refused by one shared check naming the first missing
label, its row (its chunk and row for lazy labels) and the fix, in memory and from Dask,
for every classifier; labels without missing values fit as before."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import InvalidDataError

FAST = dict(random_state=0, scheduler="sync", progress=False)
CLASSIFIERS = {
    "DSGClassifier": lambda: ok.DSGClassifier(n_features=128, block_size=32, batch_size=8,
                                              max_iter=2, tol=None, **FAST),
    "DSPDCClassifier": lambda: ok.DSPDCClassifier(max_iter=5, **FAST),
}
N = 60


def _labels(kind: str) -> pd.Series:
    text = np.where(np.arange(N) % 2 == 0, "b", "a")
    keep = np.arange(N) != 23
    if kind == "string":
        return pd.Series(text, dtype="string").where(keep)
    if kind == "pyarrow":
        return pd.Series(text, dtype="string[pyarrow]").where(keep)
    if kind == "categorical":
        return pd.Series(pd.Categorical(text)).where(keep)
    if kind == "none":
        return pd.Series(text, dtype=object).where(keep, None)
    return pd.Series(text, dtype=object).where(keep, np.nan)  # "nan"


KINDS = ["string", "pyarrow", "categorical", "none", "nan"]


def _X():
    return np.random.default_rng(0).normal(size=(N, 3))


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
@pytest.mark.parametrize("kind", KINDS)
def test_a_missing_label_in_memory_is_named_by_row(name, kind):
    with pytest.raises(InvalidDataError, match=r"y has a missing label \((None|nan|<NA>)\) "
                                               r"at row 23 \(1 of the 60 labels\).*drop"):
        CLASSIFIERS[name]().fit(_X(), _labels(kind))


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
@pytest.mark.parametrize("kind", KINDS)
def test_a_missing_lazy_label_is_named_by_chunk_and_row(name, kind):
    X = dd.from_pandas(pd.DataFrame(_X()), npartitions=3)     # 20 rows a partition
    y = dd.from_pandas(_labels(kind), npartitions=3)
    with pytest.raises(InvalidDataError, match=r"y has a missing label \((None|nan|<NA>)\) "
                                               r"in chunk 1, row 3.*drop"):
        CLASSIFIERS[name]().fit(X, y)


def test_labels_without_missing_values_keep_their_classes():
    y = _labels("string").fillna("b")
    clf = CLASSIFIERS["DSGClassifier"]().fit(_X(), y)
    assert clf.classes_.tolist() == ["a", "b"]
    assert set(clf.predict(_X()).tolist()) <= {"a", "b"}


def test_none_among_integer_labels_is_a_missing_label_for_fit_and_partial_fit():
    """``None`` is no class, whatever the other labels are: named as missing rather than
    as labels that cannot be sorted."""
    labels = np.array([None] * 30 + [1] * 30, dtype=object)
    with pytest.raises(InvalidDataError, match=r"y has a missing label \(None\) at row 0 "
                                               r"\(30 of the 60 labels\)"):
        CLASSIFIERS["DSGClassifier"]().fit(_X(), labels)
    with pytest.raises(InvalidDataError, match=r"y has a missing label \(None\) at row 0"):
        CLASSIFIERS["DSGClassifier"]().partial_fit(_X(), labels, classes=[0, 1])
