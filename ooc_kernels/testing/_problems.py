"""What the estimator checks read from a family's declaration, and the data they fit.

Every check of :mod:`ooc_kernels.testing` reads the family's
:class:`~ooc_kernels._capabilities.Capabilities` (:func:`capabilities_of`) to choose
whether it applies (otherwise it raises :class:`NotApplicable` with the reason), which data to
fit (:func:`problem`: labelled classes, real targets, unlabelled rows or two samples), how
many tasks a round may have and how many rounds an epoch has (:func:`rounds_per_epoch`).

Examples
--------
>>> import numpy as np
>>> from ooc_kernels._capabilities import Capabilities
>>> from ooc_kernels.testing import problem, rounds_per_epoch
>>> from ooc_kernels.estimators import ESTIMATORS
>>> X, y = problem(ESTIMATORS.get("DSGClassifier"))
>>> X.shape, np.unique(y).tolist()
((240, 3), ['even', 'far', 'odd'])
>>> rounds_per_epoch(Capabilities(), n_chunks=6, chunks_per_round=4)
2
>>> rounds_per_epoch(Capabilities(execution="sequential"), n_chunks=6, chunks_per_round=1)
6
"""

from __future__ import annotations

import math

import dask.array as da
import numpy as np

from ooc_kernels._capabilities import Capabilities

__all__ = ["NotApplicable", "capabilities_of", "problem", "rounds_per_epoch", "lazy",
           "make", "outputs", "CHUNK", "FINISH_HOOK"]

#: Rows per chunk of the checks' lazy inputs (:func:`lazy`): 240 rows make 6 chunks.
CHUNK = 40

#: The methods whose results make a fitted model's outputs, compared by the checks.
OUTPUT_METHODS = ("decision_function", "predict", "predict_proba", "transform",
                  "score_samples")


#: The hook a family with ``finishing=True`` runs once after the last round.
FINISH_HOOK = "_finish"


class NotApplicable(Exception):  # noqa: N818  (a verdict, like unittest.SkipTest)
    """A check does not apply to a family, by what the family declares.

    The message is the reason; ``tests/test_contract.py`` reports the check as skipped with
    it, so that a check that does not run is visible, never counted as passed.
    """


def capabilities_of(cls) -> Capabilities:
    """The :class:`~ooc_kernels._capabilities.Capabilities` the estimator class
    declares in its ``capabilities`` attribute.

    Raises
    ------
    AssertionError
        ``capabilities`` is missing or is not a ``Capabilities``.
    """
    declared = cls.capabilities
    if not isinstance(declared, Capabilities):
        raise AssertionError(
            f"{cls.__name__}.capabilities must be a Capabilities (what the family supports: "
            f"execution, inputs, task ...), got {declared!r}; declare it on the class.")
    return declared


def _multi_class(cls) -> bool:
    """scikit-learn's tag: False for binary-only classifiers."""
    tags = cls().__sklearn_tags__()
    return tags.classifier_tags is None or tags.classifier_tags.multi_class


def problem(cls, seed: int = 0, n: int = 240) -> tuple:
    """A small problem of the family's declared inputs and task: the positional arguments of
    ``fit``.

    ``inputs="supervised"``: ``(X, y)``, ``y`` class labels for ``task="classification"``
    (two classes for a binary-only classifier, three otherwise), real targets for any other
    task.  ``inputs="unsupervised"``: ``(X,)``, rows from one distribution (for novelty
    detection, the inliers).  ``inputs="two_sample"``: ``(X_p, X_q)``, ``n`` rows each from
    two distributions that overlap (for density-ratio estimation, ``X_q`` is shifted and
    wider).  ``X`` has 3 columns.

    Parameters
    ----------
    cls : type
        A registered estimator class.
    seed : int, default=0
    n : int, default=240
        Rows of each sample (240 rows are 6 chunks of :data:`CHUNK` rows).

    Returns
    -------
    tuple of ndarray

    Examples
    --------
    >>> from ooc_kernels.estimators import ESTIMATORS
    >>> X, y = problem(ESTIMATORS.get("DSGRegressor"), n=5)
    >>> X.shape, y.dtype
    ((5, 3), dtype('float64'))
    """
    caps = capabilities_of(cls)
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    if caps.inputs == "unsupervised":
        return (X,)
    if caps.inputs == "two_sample":
        return X, 0.5 + 1.5 * rng.normal(size=(n, 3))
    if caps.task == "classification":
        y = np.where(X[:, 0] * X[:, 1] > 0, "odd", "even")
        if _multi_class(cls):
            y[np.abs(X[:, 2]) > 1.3] = "far"
        return X, y
    return X, np.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2]


def lazy(args: tuple, chunk: int = CHUNK) -> tuple:
    """The arrays of ``args`` as Dask arrays of ``chunk`` rows per chunk."""
    return tuple(da.from_array(a, chunks=(chunk,) + a.shape[1:]) for a in args)


def rounds_per_epoch(caps: Capabilities, *, n_chunks: int, chunks_per_round: int) -> int:
    """Rounds of one epoch over ``n_chunks`` chunks, one chunk per task
    (``shuffle_chunks=1``).

    ``execution="rounds"``: ``ceil(n_chunks / chunks_per_round)`` rounds of up to
    ``chunks_per_round`` tasks; ``execution="sequential"``: one chunk a round, ``n_chunks``
    rounds.
    """
    if caps.execution == "sequential":
        return n_chunks
    return math.ceil(n_chunks / chunks_per_round)


def make(cls, **params):
    """The estimator with its fast test settings (``_test_params``), ``random_state=0``,
    the synchronous scheduler, no progress bar, and ``params`` over them."""
    return cls(**{**cls._test_params, "random_state": 0, "scheduler": "sync",
                  "progress": False, **params})


def outputs(est, X) -> dict:
    """``{method: result}`` of every output method the fitted ``est`` has
    (:data:`OUTPUT_METHODS`; ``predict_proba`` only where it is available)."""
    return {name: getattr(est, name)(X) for name in OUTPUT_METHODS if hasattr(est, name)}
