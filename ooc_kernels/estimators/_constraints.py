"""Hyperparameters validated declaratively, as scikit-learn validates its own.

Every estimator declares ``_parameter_constraints`` (scikit-learn's format: a list of
accepted types, :class:`Interval`, :class:`StrOptions` ...) and :func:`validate_params`
checks them with scikit-learn's validator, so every estimator of the library reports a bad
value the same way, in the library's hierarchy (:class:`InvalidParameterError`).  No check
contacts anything (the scheduler is checked by its form, never connected to).

Examples
--------
>>> from ooc_kernels.estimators._constraints import Interval, Real, validate_params
>>> class Toy:
...     _parameter_constraints = {"alpha": [Interval(Real, 0, None, closed="left")]}
...     def get_params(self, deep=False):
...         return {"alpha": -1}
>>> validate_params(Toy())
Traceback (most recent call last):
...
ooc_kernels.exceptions.InvalidParameterError: The 'alpha' parameter of Toy must be a float in the range [0.0, inf). Got -1 instead.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np

from sklearn.utils._param_validation import (
    HasMethods,
    Interval as _SklearnInterval,
    InvalidParameterError as _SklearnInvalidParameterError,
    Options,
    StrOptions as _SklearnStrOptions,
    validate_parameter_constraints,
)

from ooc_kernels.exceptions import InvalidParameterError

__all__ = ["HasMethods", "Integral", "Interval", "Options", "RANDOM_STATE", "Real",
           "SchedulerSpec", "StrOptions", "validate_params"]


class Interval(_SklearnInterval):
    """scikit-learn's ``Interval``, refusing ``True`` and ``False``: a bool is an ``int`` to
    Python, so ``max_iter=True`` would otherwise be read as 1.

    Examples
    --------
    >>> Interval(Integral, 1, None, closed="left").is_satisfied_by(True)
    False
    >>> Interval(Real, 0, None, closed="neither").is_satisfied_by(2)
    True
    """

    def is_satisfied_by(self, val: Any) -> bool:
        if isinstance(val, (bool, np.bool_)):
            return False
        return super().is_satisfied_by(val)


#: The constraints of a ``random_state`` parameter: scikit-learn's ``"random_state"`` (a
#: seed in ``[0, 2**32 - 1]``, a ``RandomState`` or None) with this module's
#: :class:`Interval`, so that ``random_state=True`` is refused instead of read as the seed 1.
RANDOM_STATE = [Interval(Integral, 0, 2**32 - 1, closed="both"), np.random.RandomState, None]


class StrOptions(_SklearnStrOptions):
    """scikit-learn's ``StrOptions``, listing its options in sorted order in messages (a
    ``set`` iterates in an order that changes between interpreter runs).

    Examples
    --------
    >>> str(StrOptions({"median", "auto"}))
    "a str among {'auto', 'median'}"
    """

    def __str__(self) -> str:
        shown = ", ".join(self._mark_if_deprecated(o) for o in sorted(self.options))
        return f"a str among {{{shown}}}"


class SchedulerSpec(Options):
    """A ``scheduler`` value: None, a local scheduler name, an address or a Client.

    Checked by its form only (:func:`ooc_kernels.parallel.scheduler.check_scheduler`):
    validation never connects.  (An :class:`Options` subclass: scikit-learn's validator
    accepts only its own constraint kinds.)
    """

    def __init__(self):
        super().__init__(object, set())

    def is_satisfied_by(self, val: Any) -> bool:
        from ooc_kernels.exceptions import ValidationError
        from ooc_kernels.parallel.scheduler import check_scheduler

        try:
            check_scheduler(val)
        except ValidationError:
            return False
        return True

    def __str__(self) -> str:
        return ("'sync', 'threads', 'processes', a 'tcp://host:port' or 'tls://host:port' "
                "address or a distributed.Client")


def validate_params(estimator: Any) -> None:
    """Check ``estimator.get_params()`` against its ``_parameter_constraints``.

    Raises
    ------
    InvalidParameterError
        "The 'NAME' parameter of CLASS must be ... Got VALUE instead."
    """
    params = estimator.get_params(deep=False)
    for name, value in params.items():
        # a Python int beyond 64 bits: in the range of every unbounded interval, but no
        # count, size or seed of the model's arithmetic (NumPy cannot even compare it)
        if (name in estimator._parameter_constraints and isinstance(value, int)
                and not isinstance(value, bool) and not -2**63 <= value < 2**63):
            raise InvalidParameterError(
                f"The {name!r} parameter of {type(estimator).__name__} is {value}, beyond "
                "the 64-bit integers (-2**63 to 2**63 - 1) the model computes with; give a "
                "value in that range.")
    try:
        validate_parameter_constraints(estimator._parameter_constraints, params,
                                       caller_name=type(estimator).__name__)
    except _SklearnInvalidParameterError as err:
        raise InvalidParameterError(str(err)) from None
