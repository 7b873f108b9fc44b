"""Task mixins of the chunked estimators: classes, labels, probabilities and accuracy for
classifiers; predictions and R^2 for regressors (lazy for lazy inputs).

A family's classifier is ``class C(ChunkedClassifierMixin, ClassifierMixin, Base)`` where
``Base`` subclasses :class:`~ooc_kernels.estimators.base.ChunkedEstimator`; its regressor
uses :class:`ChunkedRegressorMixin` the same way.

Examples
--------
>>> from ooc_kernels.estimators._mixins import ChunkedClassifierMixin, ChunkedRegressorMixin
>>> ChunkedClassifierMixin._is_classifier, ChunkedRegressorMixin._is_classifier
(True, False)
"""

from __future__ import annotations

import numbers
import warnings

import dask.array as da
import numpy as np
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets

from ooc_kernels._checks import check_plain_array
from ooc_kernels.data.inputs import as_chunked, model_input, wrap_prediction
from ooc_kernels.estimators._feature_coords import check_feature_coords, opened_input
from ooc_kernels.estimators._inputs import (
    _is_chunked_input,
    _with_sample_weight,
    check_row_input,
    sklearn_validated,
)
from ooc_kernels.estimators._labels import any_missing, check_lazy_missing_labels
from ooc_kernels.exceptions import InputTypeError, ValidationError
from ooc_kernels.parallel.chunked import ChunkedData
from ooc_kernels.parallel.cluster import compute, scheduler_loss_during
from ooc_kernels.parallel.sampling import labels_and_rows
from ooc_kernels.parallel.scheduler import scheduler_context

__all__ = ["ChunkedClassifierMixin", "ChunkedRegressorMixin"]

#: scikit-learn's warning of a target with more classes than half its rows.
_MANY_CLASSES = "The number of unique classes is greater than 50% of the number of samples"


class ChunkedClassifierMixin:
    """Classes, labels, probabilities and lazy accuracy for chunked classifiers.

    A family lists the losses that give probabilities in ``_proba_losses`` and maps one
    chunk of decision values to probabilities in ``_proba_from_decision``.
    """

    _is_classifier = True
    #: Losses with class probabilities (``predict_proba`` exists only for them).
    _proba_losses: tuple = ()

    def _has_proba(self) -> bool:
        if self.loss not in self._proba_losses:
            raise AttributeError(
                f"predict_proba is not available for loss={self.loss!r}; use loss="
                + " or ".join(repr(loss) for loss in self._proba_losses)
                + ", or decision_function."
            )
        return True

    @available_if(lambda self: self._has_proba())
    def predict_proba(self, X):
        """Class probabilities, shape (n_samples, n_classes); lazy for lazy input."""
        return wrap_prediction(X, self._proba(X), classes=self.classes_)

    @available_if(lambda self: self._has_proba())
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))

    def _resolve_classes(self, data: ChunkedData, classes, sched) -> np.ndarray:
        try:
            if classes is not None:
                found = np.unique(np.asarray(classes))
            elif "classes" in data.attrs:
                found = np.asarray(data.attrs["classes"])
            else:  # a small reduction over y (never X): the distinct labels
                found = self._read_classes(data, sched)
        except TypeError as err:  # labels that cannot be ordered: dicts, None, str and int
            if classes is None:   # a missing label among text ones: named by chunk and row
                check_lazy_missing_labels(data.y, sched)
            raise InputTypeError(
                f"the class labels cannot be sorted ({err}); labels must be all numbers or "
                "all strings: convert y, e.g. y.astype(str)."
            ) from None
        if classes is None and found.dtype.kind == "O" and any_missing(found):
            check_lazy_missing_labels(data.y, sched)   # a pass over y to say where
        if getattr(self, "on_invalid", "error") == "skip" and found.dtype.kind == "f":
            found = found[np.isfinite(found)]  # NaN/inf labels are skipped rows, not classes
        _check_object_labels(found)
        with warnings.catch_warnings():
            # ``found`` holds each label once, so scikit-learn's "more classes than half the
            # samples" test would fire for any 21 classes: it is made on the rows below
            warnings.filterwarnings("ignore", message=_MANY_CLASSES, category=UserWarning)
            sklearn_validated(check_classification_targets, found)
        n_rows = data.n_samples  # (classes=: labels the user declared, not a target's)
        if classes is None and n_rows > 20 and len(found) > round(0.5 * n_rows):
            warnings.warn(
                f"The number of unique classes is greater than 50% of the number of samples "
                f"({len(found)} classes in {n_rows} rows). `y` could represent a regression "
                "problem, not a classification problem.", UserWarning, stacklevel=5)
        if len(found) < 2:
            later = ("; if the others come in later data, pass every class to the first "
                     "partial_fit call: partial_fit(X, y, classes=[...])"
                     if classes is None and hasattr(self, "partial_fit") else "")
            raise ValidationError(
                f"{'classes' if classes is not None else 'y'} has only 1 class "
                f"({found.tolist()}); a classifier needs samples of at least two "
                f"classes{later}."
            )
        return found

    def _read_classes(self, data: ChunkedData, sched) -> np.ndarray:
        """The distinct labels of ``y``, and in the same computation (one task per chunk,
        :func:`~ooc_kernels.parallel.sampling.labels_and_rows`) the rows the set-up samples
        (:meth:`_setup_draw`), kept in ``_setup_sample_read`` for the set-up, and under
        ``class_weight="balanced"`` the count of every label (``_setup_label_counts``): one
        round trip to a ``distributed`` scheduler instead of two or three."""
        draw = self._setup_draw(data)
        if draw is None:
            # the distinct labels: a reduction whose result is a few values, not the data
            return np.asarray(compute(da.unique(data.y), scheduler=sched)[0])
        counted = isinstance(getattr(self, "class_weight", None), str)  # "balanced"
        found, counts, self._setup_sample_read = labels_and_rows(
            data, draw, counts=counted, scheduler=sched)
        if counted:
            self._setup_label_counts = (found, counts)
        return found

    def decision_function(self, X):
        """Decision values: shape (n_samples,) for two classes, else (n_samples, n_classes).

        For two classes the value is the score of ``classes_[1]`` against ``classes_[0]``
        (positive: ``classes_[1]``), as scikit-learn expects; with two outputs (softmax) it
        is their difference, the log-odds.  NumPy in, NumPy out; lazy in, lazy out (a
        DataArray for a DataArray).
        """
        dec = self._decision_2d(X)
        if len(self.classes_) == 2:
            dec = dec[:, 0] if dec.shape[1] == 1 else dec[:, 1] - dec[:, 0]
        return wrap_prediction(X, dec)

    def predict(self, X):
        """Predicted class labels (lazy for lazy inputs)."""
        dec = self._decision_2d(X)
        classes = self.classes_
        if isinstance(dec, da.Array):
            labels = dec.map_blocks(_labels_from_decision, classes, drop_axis=1,
                                    dtype=classes.dtype)
        else:
            labels = _labels_from_decision(dec, classes)
        return wrap_prediction(X, labels)

    def _proba(self, X):
        dec = self._decision_2d(X)
        link = type(self)._proba_from_decision
        if isinstance(dec, da.Array):
            n = len(self.classes_)
            return dec.map_blocks(link, chunks=(dec.chunks[0], (n,)), dtype=np.float64)
        return link(dec)

    def score(self, X, y=None, sample_weight=None):
        """Mean accuracy; lazy inputs are scored chunk by chunk as a Dask reduction."""
        if not _is_chunked_input(X):
            from sklearn.base import ClassifierMixin

            return _in_memory_score(ClassifierMixin.score, self, X, y, sample_weight)
        data = _scored_data(self, X, y, sample_weight)
        with scheduler_context(self.scheduler) as sched, scheduler_loss_during("score"):
            return self._score_chunked(data, sched)

    def _score_chunked(self, data: ChunkedData, sched) -> float:
        hits = (self.predict(model_input(data)) == data.y).astype(np.float64)
        w = data.get("sample_weight")
        # the bounded waits of ``compute``: a lost scheduler is a SchedulerLostError
        if w is not None:
            return float(compute(da.sum(hits * w) / da.sum(w), scheduler=sched)[0])
        return float(compute(hits.mean(), scheduler=sched)[0])


class ChunkedRegressorMixin:
    """Lazy predictions and R^2 for chunked regressors."""

    _is_classifier = False

    def predict(self, X):
        """Predicted targets, shape (n_samples,) (lazy for lazy inputs)."""
        return wrap_prediction(X, self._decision_2d(X)[:, 0])

    def score(self, X, y=None, sample_weight=None):
        """Coefficient of determination R^2; lazy inputs are scored as a Dask reduction."""
        if not _is_chunked_input(X):
            from sklearn.base import RegressorMixin

            return _in_memory_score(RegressorMixin.score, self, X, y, sample_weight)
        data = _scored_data(self, X, y, sample_weight)
        with scheduler_context(self.scheduler) as sched, scheduler_loss_during("score"):
            return self._score_chunked(data, sched)

    def _score_chunked(self, data: ChunkedData, sched) -> float:
        pred = self.predict(model_input(data))
        y_true = data.y.astype(np.float64)
        w = data.get("sample_weight")
        w = da.ones_like(y_true) if w is None else w
        sw = da.sum(w)
        mean = da.sum(w * y_true) / sw
        ss_res = da.sum(w * (y_true - pred) ** 2)
        ss_tot = da.sum(w * (y_true - mean) ** 2)
        ss_res, ss_tot = compute(ss_res, ss_tot, scheduler=sched)  # bounded waits
        return float(1.0 - ss_res / ss_tot) if ss_tot > 0 else 0.0


def _scored_data(estimator, X, y, sample_weight) -> ChunkedData:
    """The chunks a fitted ``estimator`` scores for lazy ``X``: checked as ``predict``
    checks them (rows or factorized data as the family reads, the number of features and,
    when both have them, the column names in fit's order), with ``y`` and
    ``sample_weight``."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(estimator, "_state")
    X = opened_input(X)
    data = check_row_input(estimator, as_chunked(X, y, chunk_size=estimator.chunk_size,
                                                 require_y=True))
    estimator._check_lazy_features(data)
    check_feature_coords(estimator, X)
    return _with_sample_weight(data, sample_weight)


def _check_object_labels(found: np.ndarray) -> None:
    """Refuse labels that are numbers held as Python objects (an object column of a frame):
    scikit-learn types them as 'unknown'; the message says how to convert them."""
    if found.dtype.kind != "O" or not len(found):
        return
    values = found.tolist()   # the distinct labels: a few values
    if any(isinstance(v, str) for v in values) or not all(
            isinstance(v, numbers.Number) for v in values):
        return
    kinds = ", ".join(sorted({type(v).__name__ for v in values}))
    raise InputTypeError(
        f"y holds numbers as Python objects (dtype object, {kinds}), which scikit-learn "
        "cannot tell apart from other objects ('Unknown label type: unknown'); convert "
        "them to a NumPy dtype, e.g. y = np.asarray(y, dtype=np.int64) (for a Dask array "
        "y = y.astype(np.int64)), or to text labels, y.astype(str)."
    )


def _in_memory_score(score, estimator, X, y, sample_weight) -> float:
    """scikit-learn's ``score`` of in-memory data, its errors (``y`` of another length, say)
    in the library's hierarchy; masked or structured arrays refused first."""
    for name, value in (("X", X), ("y", y), ("sample_weight", sample_weight)):
        check_plain_array(value, name)
    return sklearn_validated(score, estimator, X, y, sample_weight=sample_weight)


def _labels_from_decision(dec, classes):
    if dec.shape[1] == 1:
        return classes[(dec[:, 0] > 0).astype(np.intp)]
    return classes[np.argmax(dec, axis=1)]
