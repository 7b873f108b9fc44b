"""Labels of a single class are refused with advice the estimator can follow: the
``partial_fit(..., classes=...)`` route only for a classifier that has ``partial_fit``."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import ValidationError

FAST = dict(random_state=0, scheduler="sync", progress=False)


def _one_class():
    X = np.random.default_rng(0).normal(size=(40, 2))
    return da.from_array(X, chunks=(20, 2)), da.from_array(np.ones(40, dtype=int), chunks=20)


def test_a_classifier_without_partial_fit_is_not_told_to_use_it():
    X, y = _one_class()
    assert not hasattr(ok.DSPDCClassifier(), "partial_fit")
    with pytest.raises(ValidationError, match=r"y has only 1 class \(\[1\]\); a classifier "
                                              r"needs samples of at least two classes\.$"):
        ok.DSPDCClassifier(max_iter=2, **FAST).fit(X, y)


def test_a_classifier_with_partial_fit_is_told_to_pass_every_class():
    X, y = _one_class()
    with pytest.raises(ValidationError, match=r"pass every class to the first partial_fit "
                                              r"call"):
        ok.DSGClassifier(n_features=64, block_size=32, max_iter=1, **FAST).fit(X, y)
