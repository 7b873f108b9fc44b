"""Values a caller can pass that NumPy or numba cannot take: hyperparameters beyond the
64-bit integers, and sample weights that are not numbers.  Each is the library's own error
naming the value, for every estimator, before any data is read."""

from __future__ import annotations

import inspect

import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import InvalidParameterError, ValidationError

RNG = np.random.default_rng(0)
X = RNG.normal(size=(60, 3))
Y = (X[:, 0] > 0).astype(int)


def _estimators_with(parameter):
    for name in sorted(ok.available_estimators()):
        cls = getattr(ok, name)
        if parameter in inspect.signature(cls).parameters:
            yield cls


@pytest.mark.parametrize("parameter, value", [("chunk_size", 2**70), ("batch_size", 2**70),
                                              ("batch_size", -2**64),
                                              ("median_multiplier", 2**70),
                                              ("random_state", 2**64)])
def test_an_integer_beyond_64_bits_is_refused_by_the_parameter_check(parameter, value):
    classes = list(_estimators_with(parameter))
    assert classes
    for cls in classes:
        est = cls(**{parameter: value})
        with pytest.raises(InvalidParameterError, match=rf"The '{parameter}' parameter of "
                                                        rf"{cls.__name__} is {value}, beyond "
                                                        r"the 64-bit integers"):
            est._validate_params()


def test_the_largest_64_bit_integer_is_still_checked_against_its_range():
    ok.DSGClassifier(chunk_size=2**63 - 1)._validate_params()
    with pytest.raises(InvalidParameterError, match=r"must be an int in the range \[1, inf\)"):
        ok.DSGClassifier(chunk_size=-2**63)._validate_params()


@pytest.mark.parametrize("weights", [np.array(["a"] * 60), np.array(["1.5"] * 60),
                                     np.array(["2020-01-01"] * 60, dtype="datetime64[D]"),
                                     np.array([{"w": 1}] * 60, dtype=object)],
                         ids=["text", "numbers as text", "dates", "objects"])
def test_sample_weights_that_are_not_numbers_are_refused(weights):
    for cls in (ok.DSGClassifier, ok.DSPDCClassifier):
        with pytest.raises(ValidationError, match=r"sample_weight must hold numbers"):
            cls(max_iter=1).fit(X, Y, sample_weight=weights)
    if weights.dtype.kind != "O":
        with pytest.raises(ValidationError, match=r"sample_weight must hold numbers, got "
                                                  r"dtype"):
            ok.DSGClassifier(max_iter=1).fit(X, Y, sample_weight=da.from_array(weights))


def test_weights_of_booleans_and_python_numbers_are_numbers():
    a = ok.DSGClassifier(n_features=64, block_size=32, max_iter=1, tol=None, random_state=0,
                         progress=False)
    w = np.arange(60) % 3 > 0
    coef = a.fit(X, Y, sample_weight=w).coef_
    assert np.array_equal(coef, a.fit(X, Y, sample_weight=w.astype(float)).coef_)
    assert np.array_equal(coef, a.fit(X, Y, sample_weight=np.array([float(v) for v in w],
                                                                   dtype=object)).coef_)
