"""The check that a family's declared capabilities are true (see :mod:`ooc_kernels.testing`).

The other checks believe the declaration (they skip what it rules out), so this one makes
sure that it does not hide anything: every field is compared with what the class really
has.
"""

from __future__ import annotations

import inspect

import numpy as np
from sklearn.base import is_classifier, is_outlier_detector, is_regressor

from ooc_kernels.data.factorized import Factorized
from ooc_kernels.exceptions import OocKernelsError, ValidationError
from ooc_kernels.testing._problems import FINISH_HOOK, capabilities_of, make, problem

__all__ = ["check_estimator_capabilities"]


def _agree(cls, field: str, declared: bool, actual: bool, fact: str) -> None:
    assert declared == actual, \
        f"{cls.__name__} declares {field}={declared}, but {fact} is {actual}"


def check_estimator_capabilities(cls, client=None) -> None:
    """What the family declares (``cls.capabilities``) is what its estimator does.

    ``partial_fit`` agrees with ``hasattr(est, "partial_fit")`` (and a missing
    ``partial_fit`` says why); ``tol`` with the ``tol`` parameter; ``task`` with
    scikit-learn's kind of estimator (classifier, regressor, outlier detector, transformer,
    an estimator that predicts); ``probabilistic`` with ``predict_proba`` (classifiers) or
    ``return_std`` in ``predict`` (regressors); ``checkpoints`` with the ``checkpoint``
    argument of ``fit``; ``finishing`` with a finishing step of the family's own;
    ``inputs="supervised"`` with an error of the library for a fit without ``y``;
    ``execution="rounds"`` with a ``chunks_per_round`` parameter; ``factorized`` with a fit
    on ``Factorized(X, I)`` (``A = X``) that works (True) or raises the library's
    ``ValidationError`` (False).
    """
    from ooc_kernels.estimators.base import ChunkedEstimator

    caps = capabilities_of(cls)
    est = make(cls)
    params = est.get_params()
    _agree(cls, "partial_fit", caps.partial_fit, hasattr(est, "partial_fit"),
           "hasattr(estimator, 'partial_fit')")
    if not caps.partial_fit:
        try:
            est.partial_fit  # noqa: B018  (the error says why there is none)
        except AttributeError as err:
            reason = str(err.__cause__ or err)     # scikit-learn's available_if chains it
            assert cls.__name__ in reason and len(reason) > 60, \
                f"{cls.__name__}: no partial_fit, and no reason given: {reason}"
    _agree(cls, "tol", caps.tol, "tol" in params, "'tol' in get_params()")
    kinds = {"classification": ("is_classifier(estimator)", is_classifier(est)),
             "regression": ("is_regressor(estimator)", is_regressor(est)),
             "novelty": ("is_outlier_detector(estimator)", is_outlier_detector(est)),
             "transform": ("hasattr(estimator, 'transform')", hasattr(est, "transform")),
             "density_ratio": ("hasattr(estimator, 'predict')", hasattr(est, "predict"))}
    fact, actual = kinds[caps.task]
    assert actual, f"{cls.__name__} declares task={caps.task!r}, but {fact} is False"
    for task in ("classification", "regression"):
        if caps.task != task:
            fact, actual = kinds[task]
            assert not actual, \
                f"{cls.__name__} declares task={caps.task!r}, but {fact} is True"
    if caps.task == "classification":
        _agree(cls, "probabilistic", caps.probabilistic, hasattr(est, "predict_proba"),
               "hasattr(estimator, 'predict_proba')")
    elif caps.task == "regression":
        _agree(cls, "probabilistic", caps.probabilistic,
               "return_std" in inspect.signature(est.predict).parameters,
               "'return_std' in the parameters of predict")
    else:
        assert not caps.probabilistic, \
            f"{cls.__name__} declares probabilistic=True for task={caps.task!r}; " \
            "probabilistic outputs are predict_proba (classification) or return_std " \
            "(regression)"
    _agree(cls, "checkpoints", caps.checkpoints,
           "checkpoint" in inspect.signature(est.fit).parameters,
           "'checkpoint' in the parameters of fit")
    own_finish = getattr(cls, FINISH_HOOK, None) is not getattr(ChunkedEstimator,
                                                                 FINISH_HOOK, None)
    _agree(cls, "finishing", caps.finishing, own_finish,
           f"'the class defines its own {FINISH_HOOK}'")
    if caps.parallel_rounds:
        assert "chunks_per_round" in params, \
            f"{cls.__name__} declares execution='rounds', but has no chunks_per_round " \
            "parameter to set the tasks of a round"
    if caps.inputs == "supervised":
        refused = False
        try:
            est.fit(problem(cls, n=80)[0])
        except OocKernelsError:  # the library's error for the missing targets
            refused = True
        assert refused, f"{cls.__name__} declares inputs='supervised', but fit(X) without " \
                        "y raised no error of the library"
    _check_factorized(cls, caps)


def _check_factorized(cls, caps) -> None:
    """``caps.factorized`` against a fit on ``Factorized(X, I)``: the rows ``X`` given by
    their factors."""
    X, *rest = problem(cls, n=80)
    args = (Factorized(X, np.eye(X.shape[1])), *rest)
    try:
        make(cls).fit(*args)
    except ValidationError as err:
        assert not caps.factorized, \
            f"{cls.__name__} declares factorized=True, but fit(Factorized(X, I), ...) " \
            f"raised {err}"
        return
    assert caps.factorized, f"{cls.__name__} declares factorized=False, but " \
                            "fit(Factorized(X, I), ...) raised no ValidationError"
