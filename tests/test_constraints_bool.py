"""A number-valued hyperparameter refuses ``True`` and ``False`` (Python reads a bool as the
int 1 or 0, so ``max_iter=True`` would silently be one epoch), on every estimator; the
parameters that take a bool say so with the ``"boolean"`` constraint and keep taking it."""

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.estimators._constraints import Interval, validate_params
from ooc_kernels.exceptions import InvalidParameterError


def _numeric_and_boolean():
    numeric, boolean = [], []
    for name in ok._ESTIMATORS:
        cls = getattr(ok, name)
        for param, constraints in cls._parameter_constraints.items():
            if "boolean" in constraints or bool in constraints:
                boolean.append((name, param))
            elif any(isinstance(c, Interval) for c in constraints):
                numeric.append((name, param))
    return numeric, boolean


NUMERIC, BOOLEAN = _numeric_and_boolean()


def test_the_lists_are_not_empty():
    assert len(NUMERIC) > 20 and len(BOOLEAN) > 5
    assert ("DSPDCRegressor", "local_passes") in NUMERIC
    assert ("DSGClassifier", "max_iter") in NUMERIC


@pytest.mark.parametrize("name, param", NUMERIC)
@pytest.mark.parametrize("value", [True, np.False_])
def test_a_bool_for_a_number_is_refused(name, param, value):
    estimator = getattr(ok, name)(**{param: value})
    with pytest.raises(InvalidParameterError, match=f"'{param}' parameter of {name}"):
        validate_params(estimator)


@pytest.mark.parametrize("name, param", BOOLEAN)
def test_a_bool_where_one_is_declared_is_taken(name, param):
    validate_params(getattr(ok, name)(**{param: True}))


def test_a_fit_with_a_bool_number_is_refused_before_any_work():
    X = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.raises(InvalidParameterError, match="'local_passes' parameter"):
        ok.DSPDCRegressor(local_passes=True).fit(X, X[:, 0])


RANDOM_STATE = [name for name in ok._ESTIMATORS + ("MultiTaskLMNN",)
                if "random_state" in getattr(ok, name)._parameter_constraints]


def test_every_estimator_with_a_random_state_is_listed():
    assert {"DSGClassifier", "DSPDCRegressor", "MultiTaskLMNN",
            "OnlineKernelRidge"} <= set(RANDOM_STATE)


@pytest.mark.parametrize("name", RANDOM_STATE)
def test_a_bool_random_state_is_refused_and_a_seed_taken(name):
    """``random_state=True`` is not a seed (Python reads it as 1): refused like every other
    number-valued parameter; a seed, a ``RandomState`` and None are taken."""
    cls = getattr(ok, name)
    for value in (True, False):
        with pytest.raises(InvalidParameterError, match=f"'random_state' parameter of {name}"):
            validate_params(cls(random_state=value))
    for value in (0, 2**32 - 1, np.int64(7), np.random.RandomState(0), None):
        validate_params(cls(random_state=value))
    with pytest.raises(InvalidParameterError, match="'random_state' parameter"):
        validate_params(cls(random_state=-1))
