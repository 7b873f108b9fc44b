"""Kernel machines trained out of core with doubly stochastic functional gradients.

The estimators keep their hyperparameters and their solver (:mod:`ooc_kernels.solvers.dsg`);
inputs, fitting through the engine, checkpoints, lazy predictions and saving come from
:class:`~ooc_kernels.estimators.base.ChunkedEstimator`.

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

from numbers import Integral, Real

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ooc_kernels._checks import non_finite_error
from ooc_kernels._seeds import derive_seed
from ooc_kernels.estimators._constraints import Interval, StrOptions
from ooc_kernels.estimators._registry import register_estimator
from ooc_kernels.estimators.base import (
    BASE_CONSTRAINTS,
    BASE_PARAMS_DOC,
    ChunkedClassifierMixin,
    ChunkedEstimator,
    ChunkedRegressorMixin,
)
from ooc_kernels.exceptions import DivergenceError, ModelFormatError, ValidationError
from ooc_kernels.features.bandwidth import median_heuristic
from ooc_kernels.losses import get_loss
from ooc_kernels.parallel.chunked import ChunkedData
from ooc_kernels.parallel.sampling import sample_rows
from ooc_kernels.solvers.dsg import DSGAlgorithm, DSGConfig, DSGState, init_state, predict_chunk

__all__ = ["DSGClassifier", "DSGRegressor"]

_DSG_CONSTRAINTS = {
    **BASE_CONSTRAINTS,
    "kernel": [StrOptions({"rbf"})],
    "bandwidth": [Interval(Real, 0, None, closed="neither"), StrOptions({"median"})],
    "median_multiplier": [Interval(Real, 0, None, closed="neither")],
    "alpha": [Interval(Real, 0, None, closed="left")],
    "n_features": [Interval(Integral, 1, None, closed="left")],
    "block_size": [Interval(Integral, 1, None, closed="left")],
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "learning_rate": [StrOptions({"inverse", "constant"})],
    "eta0": [Interval(Real, 0, None, closed="neither")],
    "t0": [Interval(Real, 0, None, closed="left")],
}

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
    learning_rate : {"inverse", "constant"}, default="inverse"
        ``"inverse"``: ``gamma_t = eta0 / (t + t0)`` (the paper's ``theta / t`` with
        ``t0 = 0``); ``"constant"``: ``gamma_t = eta0``.  ``t`` counts steps.  ``gamma_t``
        multiplies the gradient averaged over the batch, so with large batches much larger
        values than the default (about 1 at first) often train faster; the quickstart uses
        ``eta0=2e5, t0=1e3`` with ``batch_size=256``.
    eta0 : float, default=100.0
    t0 : float, default=100.0
""" + BASE_PARAMS_DOC

_ATTRIBUTES_DOC = """
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
    shuffle_chunks_ : int
        Chunks whose rows one task mixed (the resolved ``shuffle_chunks``).
"""


class _DSGEstimator(ChunkedEstimator):
    """What the DSG classifier and regressor share: hyperparameters and the solver."""

    _parameter_constraints = _DSG_CONSTRAINTS
    _test_params = dict(n_features=256, block_size=32, batch_size=8, n_epochs=2)

    def _check_params(self) -> None:
        if self.n_features % self.block_size:
            raise ValidationError(
                f"n_features={self.n_features} is not a multiple of block_size="
                f"{self.block_size}; the model holds whole feature blocks. Use e.g. "
                f"n_features={max(1, self.n_features // self.block_size) * self.block_size}."
            )

    # ------------------------------------------------------------------ model setup
    def _bandwidth(self, data: ChunkedData, sched) -> float:
        if not isinstance(self.bandwidth, str):
            return float(self.bandwidth)
        if data.n_samples < 2:
            raise ValidationError(
                f"bandwidth='median' needs at least 2 samples, got {data.n_samples} "
                "sample; pass a numeric bandwidth or more data."
            )
        sample, chunk_of, row_of = sample_rows(data, n_rows=2000, max_chunks=8,
                                               seed=derive_seed(self.random_seed_, 3),
                                               scheduler=sched, return_index=True)
        bad = ~np.isfinite(sample).all(axis=1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise non_finite_error("X", None, int(chunk_of[i]), int(row_of[i]),
                                   context=" (found while estimating the median bandwidth)")
        return median_heuristic(sample, self.median_multiplier,
                                random_state=derive_seed(self.random_seed_, 4) % 2**32)

    def _initialize(self, data: ChunkedData, sched, classes=None) -> None:
        n_classes = 0 if classes is None else len(classes)
        target, n_outputs, loss_id = self._target_spec(self.loss, n_classes)
        self._config = DSGConfig(
            loss_id=loss_id, target=target, n_outputs=n_outputs,
            n_features_in=data.n_features, block_size=self.block_size,
            n_blocks=self.n_features // self.block_size,
            bandwidth=self._bandwidth(data, sched),
            feature_seed=derive_seed(self.random_seed_, 1), alpha=float(self.alpha),
            batch_size=self.batch_size, learning_rate=self.learning_rate,
            eta0=float(self.eta0), t0=float(self.t0),
            dtype="float32" if data.dtype == np.float32 else "float64",
            classes=None if classes is None else tuple(np.asarray(classes).tolist()),
            shuffle=bool(self.shuffle), on_invalid=self.on_invalid)
        self._state = init_state(self._config)
        self._publish()

    def _make_algorithm(self) -> DSGAlgorithm:
        return DSGAlgorithm(self._config)

    def _engine_data(self, data: ChunkedData) -> ChunkedData:
        if data.dtype == np.dtype(self._config.dtype):
            return data
        variables = dict(data.variables, X=data.X.astype(self._config.dtype))
        return data.replace(variables=variables)

    def _after_round(self, state, info) -> None:
        # the model is small: checking it every round costs nothing next to a chunk
        if not np.isfinite(state.coef).all():
            raise DivergenceError(
                f"the fit produced non-finite coefficients in epoch {info.epoch}, round "
                f"{info.round} (step sizes eta0={self.eta0}, t0={self.t0}); lower eta0, "
                "raise t0, or standardize X (and y for regression)."
            )

    def _publish(self) -> None:
        state, config = self._state, self._config
        self.bandwidth_ = config.bandwidth
        self.feature_seed_ = config.feature_seed
        self.n_iter_ = state.n_iter
        self.n_blocks_seen_ = state.n_blocks_seen
        self.n_samples_seen_ = state.n_samples_seen
        self.n_samples_skipped_ = state.n_samples_skipped

    # ------------------------------------------------------------------ prediction
    @property
    def _n_outputs(self) -> int:
        return self._config.n_outputs

    @staticmethod
    def _predict_block(X, payload):
        config, state = payload
        return predict_chunk(config, state, X)  # one chunk in, its decision values out

    def _predict_payload(self):
        return self._config, self._state

    @property
    def _predict_dtype(self) -> np.dtype:
        return np.dtype(self._config.dtype)

    @property
    def coef_(self) -> np.ndarray:
        """Coefficient blocks in use, shape (n_blocks_used, block_size, n_outputs)."""
        check_is_fitted(self, "_state")
        return self._state.coef[: self._state.n_blocks_used].copy()

    # ------------------------------------------------------------------ persistence
    def _fitted_arrays(self) -> dict:
        return {"coef": np.asarray(self._state.coef, dtype=np.float64)}

    def _fitted_meta(self) -> dict:
        import dataclasses

        config = dataclasses.asdict(self._config)
        config["feature_seed"] = str(config["feature_seed"])  # 64 bits: JSON-safe as text
        config["classes"] = None if config["classes"] is None else list(config["classes"])
        state = self._state
        return {"config": config,
                "state": {"n_iter": int(state.n_iter),
                          "n_blocks_seen": int(state.n_blocks_seen),
                          "n_samples_seen": int(state.n_samples_seen),
                          "n_samples_skipped": int(state.n_samples_skipped)}}

    def _restore_fitted(self, arrays: dict, meta: dict, where: str) -> None:
        config = dict(meta["config"])
        config["feature_seed"] = int(config["feature_seed"])
        config["classes"] = None if config.get("classes") is None \
            else tuple(config["classes"])
        self._config = DSGConfig(**config)
        coef = np.asarray(arrays["coef"], dtype=np.float64)
        expected = (self._config.n_blocks, self._config.block_size, self._config.n_outputs)
        if coef.shape != expected:
            raise ModelFormatError(
                f"{where}: coef has shape {coef.shape}, the metadata says {expected}."
            )
        self._state = DSGState(coef=coef, **meta["state"])
        self._publish()

    @classmethod
    def _upgrade_saved(cls, meta: dict, version: int) -> dict:
        """Model format 1 (ooc_kernels 0.1, DSG only) as format 2 metadata."""
        if version != 1:
            return meta
        classes = meta.get("classes")
        config = dict(meta["config"])
        config["classes"] = None if classes is None else list(classes["values"])
        fitted = meta["fitted"]
        return {**meta, "format_version": 2,
                "base": {"n_features_in_": fitted["n_features_in_"],
                         "random_seed_": fitted["random_seed_"],
                         "data_seed": fitted["data_seed"],
                         "n_epochs_done": fitted["n_epochs_done"], "classes": classes},
                "fitted": {"config": config, "state": meta["state"]}}


@register_estimator
class DSGClassifier(ChunkedClassifierMixin, ClassifierMixin, _DSGEstimator):
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
    classes_ : ndarray of shape (n_classes,)""" + _ATTRIBUTES_DOC + """
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

    _parameter_constraints = {**_DSG_CONSTRAINTS,
                              "loss": [StrOptions({"logistic", "hinge", "softmax"})]}

    def __init__(self, loss="logistic", *, kernel="rbf", bandwidth="median",
                 median_multiplier=1.0, alpha=1e-5, n_features=4096, block_size=256,
                 batch_size=256, n_epochs=5, learning_rate="inverse", eta0=100.0, t0=100.0,
                 chunks_per_round=1, chunk_size=10_000, shuffle=True, shuffle_chunks="auto",
                 on_invalid="error", random_state=None, scheduler=None, progress=None):
        self.loss = loss
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.median_multiplier = median_multiplier
        self.alpha = alpha
        self.n_features = n_features
        self.block_size = block_size
        self.batch_size = batch_size
        self.n_epochs = n_epochs
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.t0 = t0
        self.chunks_per_round = chunks_per_round
        self.chunk_size = chunk_size
        self.shuffle = shuffle
        self.shuffle_chunks = shuffle_chunks
        self.on_invalid = on_invalid
        self.random_state = random_state
        self.scheduler = scheduler
        self.progress = progress

    def _target_spec(self, loss, n_classes):
        if loss == "softmax" or (loss == "logistic" and n_classes > 2):
            return "softmax", n_classes, get_loss("softmax").loss_id
        if n_classes == 2:
            return "binary", 1, get_loss(loss).loss_id
        return "ovr", n_classes, get_loss(loss).loss_id

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
        from ooc_kernels.data.inputs import wrap_prediction

        return wrap_prediction(X, self._proba(X), classes=self.classes_)

    @available_if(_has_proba)
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))

    @staticmethod
    def _proba_from_decision(dec):
        dec = np.asarray(dec, dtype=np.float64)  # one chunk of decision values
        if dec.shape[1] == 1:
            p = 1.0 / (1.0 + np.exp(-dec[:, 0]))
            return np.column_stack([1.0 - p, p])
        z = dec - dec.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)


@register_estimator
class DSGRegressor(ChunkedRegressorMixin, RegressorMixin, _DSGEstimator):
    __doc__ = """Kernel regressor trained with doubly stochastic functional gradients.

    Parameters
    ----------
    loss : {"squared"}, default="squared"
        Kernel ridge regression: ``l(u, y) = (u - y)^2 / 2``.
    """ + _PARAMS_DOC + """
    Attributes
    ----------""" + _ATTRIBUTES_DOC + """
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

    _parameter_constraints = {**_DSG_CONSTRAINTS, "loss": [StrOptions({"squared"})]}

    def __init__(self, loss="squared", *, kernel="rbf", bandwidth="median",
                 median_multiplier=1.0, alpha=1e-5, n_features=4096, block_size=256,
                 batch_size=256, n_epochs=5, learning_rate="inverse", eta0=100.0, t0=100.0,
                 chunks_per_round=1, chunk_size=10_000, shuffle=True, shuffle_chunks="auto",
                 on_invalid="error", random_state=None, scheduler=None, progress=None):
        self.loss = loss
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.median_multiplier = median_multiplier
        self.alpha = alpha
        self.n_features = n_features
        self.block_size = block_size
        self.batch_size = batch_size
        self.n_epochs = n_epochs
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.t0 = t0
        self.chunks_per_round = chunks_per_round
        self.chunk_size = chunk_size
        self.shuffle = shuffle
        self.shuffle_chunks = shuffle_chunks
        self.on_invalid = on_invalid
        self.random_state = random_state
        self.scheduler = scheduler
        self.progress = progress

    def _target_spec(self, loss, n_classes):
        return "regression", 1, get_loss(loss).loss_id
