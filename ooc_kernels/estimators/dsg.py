"""Kernel machines trained out of core with doubly stochastic functional gradients.

Examples
--------
>>> import numpy as np
>>> import ooc_kernels as ok
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(400, 2))
>>> y = (X[:, 0] * X[:, 1] > 0).astype(int)          # XOR: not linearly separable
>>> clf = ok.DSGClassifier(n_features=1024, batch_size=16, n_epochs=10, eta0=1000.0,
...                        random_state=0, scheduler="sync").fit(X, y)
>>> clf.score(X, y) > 0.95
True
"""

from __future__ import annotations

import dask.array as da
import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.metaestimators import available_if

from ooc_kernels.estimators.base import BaseDSG, _sklearn_validated
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.losses import get_loss
from ooc_kernels.parallel.chunked import ChunkedData

__all__ = ["DSGClassifier", "DSGRegressor"]

_PARAMS_DOC = """
    kernel : {"rbf"}, default="rbf"
        Gaussian RBF kernel ``exp(-||x - x'||^2 / (2 bandwidth^2))``.
    bandwidth : float or "median", default="median"
        Kernel bandwidth sigma.  ``"median"``: ``median_multiplier`` times the median
        pairwise distance of up to 2000 rows drawn from up to 8 random chunks.
    median_multiplier : float, default=1.0
    alpha : float, default=1e-5
        Regularization strength (the paper's nu): every step multiplies the existing
        coefficients by ``1 - gamma_t * alpha``.
    n_features : int, default=4096
        How many random features the model may hold (a multiple of ``block_size``).  Each
        step adds a block of ``block_size`` new features (Algorithm 1) until the model holds
        ``n_features``; from then on each step estimates the kernel with all the blocks and
        updates every coefficient, so the prediction cost stops growing.
    block_size : int, default=256
        Random features per block (one block per mini-batch step).
    batch_size : int, default=256
        Samples per step.
    n_epochs : int, default=5
        Passes over the data in :meth:`fit`.
    learning_rate : {"inverse", "constant"}, default="inverse"
        ``"inverse"``: ``gamma_t = eta0 / (t + t0)`` (the paper's ``theta / t`` with
        ``t0 = 0``); ``"constant"``: ``gamma_t = eta0``.  ``t`` counts steps.  ``gamma_t``
        multiplies the gradient averaged over the batch, so with large batches much larger
        values than the default (about 1 at first) often train faster; the quickstart uses
        ``eta0=2e5, t0=1e3`` with ``batch_size=256``.
    eta0 : float, default=100.0
    t0 : float, default=100.0
    chunks_per_round : int, default=1
        ``K``: chunks processed in parallel per round; their local models are averaged.
        ``K = 1`` is the sequential algorithm.  Results depend on ``K`` but not on the
        scheduler.
    chunk_size : int, default=10000
        Rows per chunk for in-memory inputs (Dask/Zarr inputs keep their chunks).
    shuffle : bool, default=True
        Visit the rows in a new random order every epoch: the chunks are permuted and cut
        into groups of ``shuffle_chunks`` chunks; a task reads one group and visits its rows
        in one random order, so rows of different chunks are mixed (a store sorted by label,
        time or source is not seen in that order).  ``False``: the rows in storage order.
    shuffle_chunks : int or "auto", default="auto"
        Chunks whose rows one task mixes (memory: ``chunks_per_round * shuffle_chunks``
        chunks, twice that while a group is gathered).  Groups hold at most that many
        chunks and are balanced so that every round has ``chunks_per_round`` tasks.
        ``"auto"``: the largest groups that fit in 8 MiB of ``X`` per task while every round
        keeps its ``K`` tasks (fewest rounds); 1 without ``shuffle``.  The value used is
        ``shuffle_chunks_``.
    on_invalid : {"error", "skip"}, default="error"
        Rows with NaN or inf in ``X`` (or in ``y`` for regression): ``"error"`` stops the fit
        with the chunk and row; ``"skip"`` leaves them out and counts them in
        ``n_samples_skipped_``.
    random_state : int, RandomState instance or None, default=None
        Seeds the random features, the chunk order and the row order.
    scheduler : None, "sync", "threads", "processes", "tcp://..." or distributed.Client
        Where the chunk tasks run; ``None`` uses Dask's default (an active Client if any).
    progress : bool or None, default=None
        Show a progress bar (``None``: only on a terminal).
"""


class DSGClassifier(ClassifierMixin, BaseDSG):
    __doc__ = """Kernel classifier trained with doubly stochastic functional gradients.

    Parameters
    ----------
    loss : {"logistic", "hinge", "softmax"}, default="logistic"
        ``"logistic"``: binary logistic regression, multinomial (softmax) for more than two
        classes.  ``"hinge"``: SVM, one-vs-rest for more than two classes (features shared).
        ``"softmax"``: multinomial for any number of classes.
    """ + _PARAMS_DOC + """
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_blocks_used, block_size, n_outputs)
    bandwidth_ : float
    feature_seed_ : int
        Seed from which every random-feature block is regenerated.
    n_iter_ : int
        Steps taken so far (global ``t``).
    n_blocks_seen_, n_samples_seen_ : int
    n_samples_skipped_ : int
        Rows left out by ``on_invalid="skip"``.
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from ooc_kernels import DSGClassifier
    >>> X, y = make_moons(300, noise=0.1, random_state=0)
    >>> clf = DSGClassifier(batch_size=16, n_epochs=10, n_features=1024, random_state=0,
    ...                     scheduler="sync").fit(X, y)
    >>> clf.predict(X[:3]).shape
    (3,)
    """

    _losses = ("logistic", "hinge", "softmax")
    _is_classifier = True

    def __init__(self, loss="logistic", *, kernel="rbf", bandwidth="median",
                 median_multiplier=1.0, alpha=1e-5, n_features=4096, block_size=256,
                 batch_size=256, n_epochs=5, learning_rate="inverse", eta0=100.0, t0=100.0,
                 chunks_per_round=1, chunk_size=10_000, shuffle=True,
                 shuffle_chunks="auto", on_invalid="error",
                 random_state=None, scheduler=None, progress=None):
        super().__init__(loss=loss, kernel=kernel, bandwidth=bandwidth,
                         median_multiplier=median_multiplier, alpha=alpha,
                         n_features=n_features, block_size=block_size,
                         batch_size=batch_size, n_epochs=n_epochs,
                         learning_rate=learning_rate, eta0=eta0, t0=t0,
                         chunks_per_round=chunks_per_round, chunk_size=chunk_size,
                         shuffle=shuffle,
                         shuffle_chunks=shuffle_chunks, on_invalid=on_invalid, random_state=random_state,
                         scheduler=scheduler, progress=progress)

    def _target_spec(self, loss, n_classes):
        if loss == "softmax" or (loss == "logistic" and n_classes > 2):
            return "softmax", n_classes, get_loss("softmax").loss_id
        if n_classes == 2:
            return "binary", 1, get_loss(loss).loss_id
        return "ovr", n_classes, get_loss(loss).loss_id

    def _resolve_classes(self, data: ChunkedData, classes) -> np.ndarray:
        if classes is not None:
            found = np.unique(np.asarray(classes))
        elif "classes" in data.attrs:
            found = np.asarray(data.attrs["classes"])
        elif isinstance(data.y, da.Array):
            # A small reduction over y (never X): the distinct labels.
            found = np.asarray(da.unique(data.y).compute(scheduler=_sched(self)))
        else:  # pragma: no cover - as_chunked always gives a dask y
            found = np.unique(np.asarray(data.y))
        if self.on_invalid == "skip" and found.dtype.kind == "f":
            found = found[np.isfinite(found)]  # NaN/inf labels are skipped rows, not classes
        _sklearn_validated(check_classification_targets, found)
        if len(found) < 2:
            raise ValidationError(
                f"y has only 1 class ({found.tolist()}); a classifier needs samples of at "
                "least two classes."
            )
        return found

    def decision_function(self, X):
        """Decision values: shape (n_samples,) for two classes, else (n_samples, n_classes).

        For two classes the value is the score of ``classes_[1]`` against ``classes_[0]``
        (positive: ``classes_[1]``), as scikit-learn expects; with ``loss="softmax"`` it is
        the difference of the two outputs, the log-odds.  NumPy in, NumPy out; Dask/xarray
        in, a lazy Dask array out.
        """
        dec = self._decision_2d(X)
        if len(self.classes_) != 2:
            return dec
        if self._config.n_outputs == 1:
            return dec[:, 0]
        return dec[:, 1] - dec[:, 0]  # softmax over two outputs: the log-odds

    def predict(self, X):
        """Predicted class labels."""
        dec = self._decision_2d(X)
        classes = self.classes_
        if isinstance(dec, da.Array):
            return dec.map_blocks(_labels_from_decision, classes, drop_axis=1,
                                  dtype=classes.dtype)
        return _labels_from_decision(dec, classes)

    def _has_proba(self):
        if self.loss not in ("logistic", "softmax"):
            raise AttributeError(
                f"predict_proba is not available for loss={self.loss!r}; use "
                "loss='logistic' or 'softmax', or decision_function."
            )
        return True

    @available_if(_has_proba)
    def predict_proba(self, X):
        """Class probabilities, shape (n_samples, n_classes) (losses logistic, softmax)."""
        dec = self._decision_2d(X)
        if isinstance(dec, da.Array):
            n = len(self.classes_)
            return dec.map_blocks(_proba_from_decision, chunks=(dec.chunks[0], (n,)),
                                  dtype=np.float64)
        return _proba_from_decision(dec)

    @available_if(_has_proba)
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        proba = self.predict_proba(X)
        return da.log(proba) if isinstance(proba, da.Array) else np.log(proba)

    def score(self, X, y=None, sample_weight=None):
        """Mean accuracy; lazy inputs are scored chunk by chunk as a Dask reduction."""
        y_true, pred, lazy = _targets_and_predictions(self, X, y)
        if not lazy:
            return super().score(X, y, sample_weight=sample_weight)
        hits = (pred == y_true).astype(np.float64)
        if sample_weight is not None:
            w = da.asarray(sample_weight)
            return float((da.sum(hits * w) / da.sum(w)).compute(scheduler=_sched(self)))
        return float(hits.mean().compute(scheduler=_sched(self)))


class DSGRegressor(RegressorMixin, BaseDSG):
    __doc__ = """Kernel regressor trained with doubly stochastic functional gradients.

    Parameters
    ----------
    loss : {"squared"}, default="squared"
        Kernel ridge regression: ``l(u, y) = (u - y)^2 / 2``.
    """ + _PARAMS_DOC + """
    Attributes
    ----------
    coef_ : ndarray of shape (n_blocks_used, block_size, 1)
    bandwidth_, feature_seed_, n_iter_, n_blocks_seen_, n_samples_seen_, n_features_in_

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels import DSGRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(500, 1))
    >>> y = np.sin(X[:, 0])
    >>> reg = DSGRegressor(batch_size=16, n_epochs=10, n_features=1024, random_state=0,
    ...                    scheduler="sync").fit(X, y)
    >>> reg.score(X, y) > 0.9
    True
    """

    _losses = ("squared",)
    _is_classifier = False

    def __init__(self, loss="squared", *, kernel="rbf", bandwidth="median",
                 median_multiplier=1.0, alpha=1e-5, n_features=4096, block_size=256,
                 batch_size=256, n_epochs=5, learning_rate="inverse", eta0=100.0, t0=100.0,
                 chunks_per_round=1, chunk_size=10_000, shuffle=True,
                 shuffle_chunks="auto", on_invalid="error",
                 random_state=None, scheduler=None, progress=None):
        super().__init__(loss=loss, kernel=kernel, bandwidth=bandwidth,
                         median_multiplier=median_multiplier, alpha=alpha,
                         n_features=n_features, block_size=block_size,
                         batch_size=batch_size, n_epochs=n_epochs,
                         learning_rate=learning_rate, eta0=eta0, t0=t0,
                         chunks_per_round=chunks_per_round, chunk_size=chunk_size,
                         shuffle=shuffle,
                         shuffle_chunks=shuffle_chunks, on_invalid=on_invalid, random_state=random_state,
                         scheduler=scheduler, progress=progress)

    def _target_spec(self, loss, n_classes):
        return "regression", 1, get_loss(loss).loss_id

    def _resolve_classes(self, data, classes):
        return None

    def predict(self, X):
        """Predicted targets, shape (n_samples,)."""
        dec = self._decision_2d(X)
        return dec[:, 0]

    def score(self, X, y=None, sample_weight=None):
        """Coefficient of determination R^2; lazy inputs are scored as a Dask reduction."""
        y_true, pred, lazy = _targets_and_predictions(self, X, y)
        if not lazy:
            return super().score(X, y, sample_weight=sample_weight)
        y_true = y_true.astype(np.float64)
        w = da.ones_like(y_true) if sample_weight is None else da.asarray(sample_weight)
        sw = da.sum(w)
        mean = da.sum(w * y_true) / sw
        ss_res = da.sum(w * (y_true - pred) ** 2)
        ss_tot = da.sum(w * (y_true - mean) ** 2)
        ss_res, ss_tot = da.compute(ss_res, ss_tot, scheduler=_sched(self))
        return float(1.0 - ss_res / ss_tot) if ss_tot > 0 else 0.0


def _sched(est):
    from ooc_kernels.parallel.engine import resolve_scheduler

    return resolve_scheduler(est.scheduler)


def _labels_from_decision(dec, classes):
    if dec.shape[1] == 1:
        return classes[(dec[:, 0] > 0).astype(np.intp)]
    return classes[np.argmax(dec, axis=1)]


def _proba_from_decision(dec):
    dec = np.asarray(dec, dtype=np.float64)
    if dec.shape[1] == 1:
        p = 1.0 / (1.0 + np.exp(-dec[:, 0]))
        return np.column_stack([1.0 - p, p])
    z = dec - dec.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _targets_and_predictions(est, X, y):
    """(y, predictions, lazy) for scoring; lazy when X is a Dask/xarray input."""
    from ooc_kernels.parallel.chunked import as_chunked, is_lazy_input

    if not (is_lazy_input(X) or (hasattr(X, "read") and callable(X.read))):
        return None, None, False
    data = as_chunked(X, y, chunk_size=est.chunk_size, require_y=True)
    pred = est.predict(data.X)
    return data.y, pred, True
