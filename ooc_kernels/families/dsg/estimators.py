"""Kernel machines trained out of core with doubly stochastic functional gradients.

The estimators keep their hyperparameters and their solver (:mod:`ooc_kernels.families.dsg.solver`);
inputs, fitting through the engine, checkpoints, lazy predictions and saving come from
:class:`~ooc_kernels.estimators.base.ChunkedEstimator`.

Examples
--------
>>> import numpy as np
>>> import ooc_kernels as ok
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(400, 2))
>>> y = (X[:, 0] * X[:, 1] > 0).astype(int)          # XOR: not linearly separable
>>> clf = ok.DSGClassifier(random_state=0, scheduler="sync").fit(X, y)
>>> clf.score(X, y) > 0.95
True
"""

from __future__ import annotations

from dataclasses import replace
from numbers import Integral, Real

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin

from ooc_kernels._progress import logger
from ooc_kernels._seeds import derive_seed
from ooc_kernels._threads import task_threads
from ooc_kernels._capabilities import Capabilities
from ooc_kernels.estimators._constraints import Interval, StrOptions
from ooc_kernels.estimators._inputs import checked_class_weights
from ooc_kernels.families.dsg._common import (N_JOBS_CONSTRAINTS,
                                               N_JOBS_DOC, DSGModelMixin, check_dtype_scales,
                                               check_bandwidth_sample, weighted_moments,
                                               with_run_settings)
from ooc_kernels.families.dsg._estimator_docs import (_ATTRIBUTES_DOC, _CLASSIFIER_DOC,
                                                     _STANDARDIZE_AUTO_DOC)
from ooc_kernels.families.dsg._average_start import (AVERAGE_START_DOC, AverageStartMixin,
                                                     fit_average)
from ooc_kernels.families.dsg._ard import (bandwidth_mode, check_bandwidth_param,
                                            fold_scales, per_input_shape)
from ooc_kernels.families.dsg._bandwidth import (ALPHA_FACTORS, GCV_MAX_ROWS,
                                                   TIE, _standardized, common_scale,
                                                   gcv_targets, scales_differ,
                                                   select_bandwidth, select_setup_gcv,
                                                   select_scale_and_alpha)
from ooc_kernels.families.dsg._setup_loo import SetupLOOAhead, use_loo_setup
from ooc_kernels.families.dsg._large_data import (auto_n_features, large_data_alpha_factor,
                                                   large_data_average, large_data_multiple)
from ooc_kernels.families.dsg._loss_params import (EPSILON, LOSS_PARAM_CONSTRAINTS,
                                                    LOSS_PARAMS_DOC, QUANTILE, loss_param)
from ooc_kernels.families.dsg._memory import check_fit_memory
from ooc_kernels.families.dsg._robust_targets import clip_targets, target_moments
from ooc_kernels.families.dsg._saved_config import check_saved_config
from ooc_kernels.families.dsg._schedule import (curvature_estimate, growth_step_eigenvalue,
                                                  resolve_schedule, robust_batch_size,
                                                  small_data_step_factor)
from ooc_kernels.estimators._registry import register_estimator
from ooc_kernels.estimators._stopping import TOL_LOSS_SCALE
from ooc_kernels.estimators.base import (
    BASE_CONSTRAINTS,
    STOPPING_CONSTRAINTS,
    ChunkedClassifierMixin,
    ChunkedEstimator,
    ChunkedRegressorMixin,
)
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.features.bandwidth import median_heuristic
from ooc_kernels.features.rbf import MAX_BANDWIDTH, MIN_BANDWIDTH
from ooc_kernels.features.cache import default_cache
from ooc_kernels.features import Kernel
from ooc_kernels.features.maps import available_kernels, kernel_spec
from ooc_kernels.losses import get_loss, losses_for
from ooc_kernels.parallel.chunked import ChunkedData
from ooc_kernels.parallel.cluster import compute
from ooc_kernels.families.dsg._setup_sample import sample_draw, setup_sample
from ooc_kernels.families.dsg._update_param import (UPDATE_CONSTRAINTS, UPDATE_DOC,
                                                   UpdateMixin)
from ooc_kernels.families.dsg.solver import (DSGAlgorithm, DSGConfig, encode_targets,
                                     init_state, numeric_targets, predict_chunk)

__all__ = ["DSGClassifier", "DSGRegressor"]

#: The losses of the table that DSG offers, by target kind.
_REGRESSION_LOSSES = losses_for("dsg", target="real")
_CLASSIFICATION_LOSSES = tuple(n for n in losses_for("dsg") if n not in _REGRESSION_LOSSES)


def _row_weights(class_weight, w, y, classes) -> np.ndarray:
    """Each sampled row's weight: its sample weight times its class's weight."""
    w = np.asarray(w, dtype=np.float64)
    if class_weight is not None and classes is not None and len(w):
        classes = np.asarray(classes)
        order = np.argsort(classes)
        w = w * np.asarray(class_weight)[order[np.searchsorted(classes[order], y)]]
    return w


#: The classifier and the regressor also accept ``standardize="auto"`` (the bandwidth
#: trials may choose one common scale); the other DSG machines scale per input or not at all.
_STANDARDIZE_AUTO = {"standardize": ["boolean", StrOptions({"auto"})]}

_DSG_CONSTRAINTS = {
    **BASE_CONSTRAINTS,
    **STOPPING_CONSTRAINTS,
    "kernel": [StrOptions(set(available_kernels())), Kernel],
    "kernel_params": [dict, None],
    "bandwidth": [Interval(Real, MIN_BANDWIDTH, MAX_BANDWIDTH, closed="both"),
                  StrOptions({"auto", "ard", "median"}), "array-like"],
    "standardize": ["boolean"],
    "dtype": [StrOptions({"auto", "float32", "float64"})],
    "median_multiplier": [Interval(Real, 0, None, closed="neither")],
    "alpha": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
    "n_features": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
    "block_size": [Interval(Integral, 1, None, closed="left")],
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "learning_rate": [StrOptions({"optimal", "inverse", "constant"})],
    "eta0": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
    "t0": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
    "average": ["boolean", Interval(Integral, 0, None, closed="left"),
                StrOptions({"auto"})],
}


class _DSGEstimator(DSGModelMixin, ChunkedEstimator):
    """What the DSG classifier and regressor share: hyperparameters and the solver (the
    plumbing every DSG estimator shares is :class:`~ooc_kernels.families.dsg._common.DSGModelMixin`)."""

    _parameter_constraints = _DSG_CONSTRAINTS
    _test_params = dict(n_features=256, block_size=32, batch_size=8, max_iter=2, tol=None)
    # the default tol ends the contract suite's fit after a few epochs
    _stopping_test_params = dict(n_iter_no_change=1)

    _saved_arrays = {"coef": True, "avg": False}

    def _check_params(self) -> None:
        super()._check_params()
        check_bandwidth_param(self.bandwidth)
        loss_param(self.loss, self)  # the loss's parameter in its range, before any data

    # ------------------------------------------------------------------ model setup
    def _setup_draw(self, data: ChunkedData):
        return sample_draw(self, data) if self._needs_sample(data) else None

    def _sample(self, data: ChunkedData, sched):
        """The set-up's sample (:func:`~ooc_kernels.families.dsg._setup_sample.setup_sample`),
        read with the classes when :meth:`_start` read them together."""
        read = self.__dict__.pop("_setup_sample_read", None)
        return setup_sample(self, data, sched, read=read)

    def _standardization(self, sample, y, target, weights) -> dict:
        """Shifts and scales of X (and y for regression) from the sample, the rows weighted
        as the fit weighs them."""
        if not self._standardizes() or len(sample) == 0:
            return {}
        X = np.asarray(sample, dtype=np.float64)
        w = np.asarray(weights, dtype=np.float64)
        if not (w > 0).any() or (w == w[0]).all():
            w = None  # unweighted: the plain mean and standard deviation
        shift, scale = weighted_moments(X, w)   # finite for every finite column
        scale[~(scale > 0)] = 1.0  # constant features: left as they are
        out = {"x_shift": tuple(shift.tolist()), "x_scale": tuple(scale.tolist())}
        if target == "regression":  # robust losses: the median and a robust spread
            y_shift, y_scale = target_moments(self.loss, y, w)
            out.update(y_shift=y_shift, y_scale=y_scale)
        return out

    def _needs_sample(self, data: ChunkedData) -> bool:
        """Whether setting up reads a sample of rows: a bandwidth from the data,
        standardization, a step size from the kernel (``eta0`` or ``t0`` "auto"), or the
        mean row weight (weights are relative)."""
        if isinstance(self.bandwidth, str) or self._standardizes():
            return True
        if "sample_weight" in data or getattr(self, "class_weight", None) is not None:
            return True
        if self.learning_rate == "inverse":
            return self.t0 == "auto"
        return self.eta0 == "auto"

    def _publish(self) -> None:
        super()._publish()
        self.n_features_ = self._config.n_blocks * self._config.block_size

    def _n_features(self, n_rows: int) -> int:
        """``n_features`` resolved for ``n_rows`` training rows (``"auto"``:
        :func:`~ooc_kernels.families.dsg._large_data.auto_n_features`)."""
        if self.n_features == "auto":
            return auto_n_features(n_rows, self.block_size)
        return int(self.n_features)

    def _initialize(self, data: ChunkedData, sched, classes=None) -> None:
        n_features = self._n_features(data.n_samples)
        n_classes = 0 if classes is None else len(classes)
        target, n_outputs, loss_id = self._target_spec(self.loss, n_classes)
        sampled = self._needs_sample(data)
        if sampled:
            sample, y_sample, w_sample, origin = self._sample(data, sched)
        else:  # every setting given: nothing is read before the fit's own tasks
            sample, y_sample, w_sample, origin = np.empty((0, data.n_features)), \
                np.empty(0), np.empty(0), None
        if sampled and target == "regression":
            y_sample = numeric_targets(y_sample, np.float64, origin.describe())
        check_bandwidth_sample(self.bandwidth, len(sample))
        loss_name = "softmax" if target == "softmax" else self.loss
        # a robust loss on one batch of rows: several steps an epoch (robust_batch_size)
        batch_size = robust_batch_size(loss=loss_name, n_rows=data.n_samples,
                                       batch_size=self.batch_size)
        class_weight = self._class_weights(data, classes, sched)
        # Row weights are relative: scaled to mean 1 on the sample, and alpha="auto" counts
        # their sum (n times that mean), so weights act as numbers of copies of a row.
        row_w = _row_weights(class_weight, w_sample, y_sample, classes)
        positive = row_w[row_w > 0]
        mean_w = float(row_w.mean()) if len(positive) else 1.0
        dtype = self._resolve_dtype(data, sample)   # float64 where float32 loses the rows
        base = DSGConfig(
            loss_id=loss_id, target=target, n_outputs=n_outputs,
            n_features_in=data.n_features, block_size=self.block_size,
            n_blocks=n_features // self.block_size, bandwidth=1.0,
            feature_seed=derive_seed(self.random_seed_, 1), alpha=0.0,
            batch_size=batch_size, learning_rate="constant", eta0=1.0, t0=0.0,
            dtype=dtype,
            classes=None if classes is None else tuple(np.asarray(classes).tolist()),
            shuffle=bool(self.shuffle), on_invalid=self.on_invalid,
            class_weight=class_weight, weight_scale=1.0 / mean_w,
            loss_param=loss_param(loss_name, self),
            # the client's budget fixes every task's full-phase plan (not the workers')
            feature_budget=default_cache().max_bytes, kernel=kernel_spec(self.kernel, self.kernel_params),
            n_jobs=getattr(self, "n_jobs", None),
            **check_dtype_scales(self._standardization(sample, y_sample, target, row_w),
                                 dtype))   # float32: scales it holds
        if sampled and classes is not None:  # labels outside the classes: named where
            encode_targets(base, y_sample, origin)
        seen = _standardized(base, sample)
        mode = bandwidth_mode(self.bandwidth)
        # per-input widths (an array, or ARD's relative widths): folded into the
        # standardization, so that everything below sees the rows x / widths
        targets = None if mode not in ("auto", "ard") or not sampled else gcv_targets(
            clip_targets((y_sample - base.y_shift) / base.y_scale, loss_name)
            if classes is None else y_sample, None if classes is None else np.asarray(classes))
        # Every row was read (a small data set): bandwidth by GCV on all of them.
        every_row = sampled and data.n_samples <= GCV_MAX_ROWS and len(positive) >= 2
        threads = task_threads(getattr(self, "n_jobs", None))

        def step_eigenvalue(rows, bandwidth, batch_size):
            # the operator of the fit's first growth steps, on batches of the sampled rows
            # (all of them when the data is one batch) as ``rows`` shows them
            return growth_step_eigenvalue(
                rows, row_w / mean_w, bandwidth=bandwidth, feature_seed=base.feature_seed,
                block_size=self.block_size, batch_size=batch_size,
                seed=derive_seed(self.random_seed_, 7), kernel=kernel_spec(self.kernel, self.kernel_params)) if sampled else None

        def eigenvalues(answer):  # on the scan's thread, once its answer is known
            rows = _standardized(answer[0], sample)
            return (step_eigenvalue(rows, answer[1], batch_size),
                    self._curvature(loss_name, n_outputs, rows, row_w, answer[1]))
        loo = None if mode not in ("auto", "ard") or every_row or not use_loo_setup(
            data.n_samples, len(positive)) else SetupLOOAhead(  # beside the width decision
            threads if mode == "auto" else 1, base, self._common(base, None), sample,
            y_sample, w_sample, then=eigenvalues,
            classes=None if classes is None else np.asarray(classes),
            alpha=None if isinstance(self.alpha, str) else float(self.alpha),
            alpha_factors=ALPHA_FACTORS if isinstance(self.alpha, str) else (1.0,),
            seed=derive_seed(self.random_seed_, 6), kernel=kernel_spec(self.kernel, self.kernel_params))
        try:
            shape = per_input_shape(self.bandwidth, seen, targets, row_w,
                                    seed=derive_seed(self.random_seed_, 9),
                                    kernel=kernel_spec(self.kernel, self.kernel_params),
                                    classification=classes is not None, threads=threads)
        except BaseException:  # an error or Ctrl-C: the early scan ends with the fit
            if loo is not None:
                loo.close()
            raise
        if shape is not None:
            base, seen = fold_scales(base, shape), seen / shape

        def schedule(bandwidth, n_samples, batch_size, alpha_factor=1.0, rows=None,
                     eigenvalue=None, average=None):
            # ``rows`` default: the fit's standardization; ``alpha_factor`` scales
            # alpha="auto"; ``eigenvalue``: the step's, when computed already
            if eigenvalue is None:
                eigenvalue = step_eigenvalue(seen if rows is None else rows, bandwidth,
                                             batch_size)
            alpha = self.alpha if alpha_factor == 1.0 else \
                alpha_factor / max(n_samples * mean_w, 1e-12)
            return resolve_schedule(
                learning_rate=self.learning_rate, eta0=self.eta0, t0=self.t0,
                alpha=alpha, average=self.average if average is None else average,
                loss=loss_name,
                eigenvalue=eigenvalue, batch_size=batch_size, n_samples=n_samples * mean_w,
                owner=type(self).__name__, step_factor=step_factor,
                min_t0=base.n_blocks)

        # small data, bounded-derivative loss: a larger first step (the fit's rows decide,
        # for the trials too)
        step_factor = small_data_step_factor(
            loss=loss_name, n_rows=data.n_samples, batch_size=batch_size,
            learning_rate=self.learning_rate, eta0=self.eta0)

        self.bandwidth_scores_ = self.setup_scores_ = None
        alpha_factor = 1.0
        if mode in ("auto", "ard") and every_row:
            median = median_heuristic(seen, 1.0, sample_weight=row_w)
            alpha = schedule(median, data.n_samples, batch_size).alpha
            bandwidth, self.bandwidth_scores_, alpha_factor, self.setup_scores_ = select_setup_gcv(
                seen, targets, row_w, alpha=alpha, median=median, kernel=kernel_spec(self.kernel, self.kernel_params),
                alpha_factors=ALPHA_FACTORS if isinstance(self.alpha, str) else (1.0,), scoring=(
                    base, y_sample, w_sample, None if classes is None else np.asarray(classes)))
        elif loo is not None:
            # up to 50,000 rows: leave-one-out of kernel ridge regression, no trial fit
            base, bandwidth, alpha_factor, self.bandwidth_scores_, self.setup_scores_ = \
                loo.result(base, self._common(base, shape))
            seen = _standardized(base, sample)
        elif mode in ("auto", "ard"):
            if self.progress is not False:  # minutes on large data: say so in a batch log
                logger.info("%s: choosing the bandwidth by short trial fits on %d sampled "
                            "rows", type(self).__name__, len(sample))
            bandwidth, scores = select_bandwidth(
                base, sample, y_sample, w_sample,
                classes=None if classes is None else np.asarray(classes),
                make_schedule=schedule, n_features=n_features,
                seed=derive_seed(self.random_seed_, 6))
            self.bandwidth_scores_ = scores
            per_input = base
            base, seen, bandwidth, alpha_factor, self.setup_scores_ = self._scale_and_alpha(
                base, seen, sample, y_sample, w_sample, classes, schedule, bandwidth,
                scores, shape, n_features)
            if self.n_features == "auto":  # many rows: docs/defaults.md, "Many rows"
                bandwidth, alpha_factor = self._large_data(
                    data.n_samples, "per-input" if base is per_input else
                    "common", scores, bandwidth, alpha_factor)
            if self.progress is not False:
                logger.info("%s: bandwidth %.6g chosen", type(self).__name__, bandwidth)
        elif mode == "median":
            bandwidth = median_heuristic(seen, self.median_multiplier,
                                         random_state=derive_seed(self.random_seed_, 4)
                                         % 2**32, sample_weight=row_w)
        else:
            bandwidth = 1.0 if mode == "array" else float(self.bandwidth)
        early = None if loo is None else loo.then_value  # the scan's thread computed them
        plan = schedule(bandwidth, data.n_samples, batch_size, alpha_factor,
                        eigenvalue=None if early is None else early[0], average=self.average
                        if self.n_features != "auto" else large_data_average(
                            self.average, data.n_samples, loss=loss_name))
        self._config = replace(base, bandwidth=bandwidth, alpha=plan.alpha,
                               input_bandwidths=None if shape is None else
                               tuple(float(v) for v in bandwidth * shape),
                               learning_rate=plan.learning_rate, eta0=plan.eta0, t0=plan.t0,
                               average=fit_average(plan.average, average=self.average,
                                                   loss=loss_name, tol=self.tol),
                               curvature=self._curvature(
                                   loss_name, n_outputs, seen, row_w, bandwidth)
                               if early is None else early[1])
        check_fit_memory(self, n_outputs=n_outputs, n_features_in=data.n_features,
                         n_samples=data.n_samples, average=bool(self._config.average),
                         n_features=n_features)
        self._state = init_state(self._config)
        self._publish()

    def _large_data(self, n_rows, scaling, scores, bandwidth, alpha_factor):
        """``(bandwidth, alpha factor)`` after the trials chose ``bandwidth`` (from
        ``scores``), the ``scaling`` and ``alpha_factor``, with the many-row rules of
        :mod:`~ooc_kernels.families.dsg._large_data` (``n_features="auto"``)."""
        best = max(scores.values())
        multiple = max(m for m, v in scores.items() if v >= best - TIE)
        narrow = large_data_multiple(scores, multiple, n_rows=n_rows)
        if isinstance(self.alpha, str):  # alpha="auto"
            alpha_factor = large_data_alpha_factor(self.setup_scores_, alpha_factor,
                                                   scaling=scaling, n_rows=n_rows, tie=TIE)
        return bandwidth * narrow / multiple, alpha_factor

    def _scale_and_alpha(self, base, seen, sample, y, w, classes, schedule, bandwidth,
                         scores, shape, n_features):
        """After the bandwidth trials, the same trials at the chosen width try one common
        scale for every input (``standardize="auto"``, per-input scales that differ) and
        ``alpha / 10`` (``alpha="auto"``): ``(config, rows as it sees them, bandwidth,
        alpha factor, scores or None)``
        (:func:`~ooc_kernels.families.dsg._bandwidth.select_scale_and_alpha`)."""
        common = self._common(base, shape)
        factors = ALPHA_FACTORS if isinstance(self.alpha, str) else (1.0,)
        if common is None and len(factors) == 1:
            return base, seen, bandwidth, 1.0, None
        multiple = max(m for m, v in scores.items() if v >= max(scores.values()) - TIE)
        config, bandwidth, factor, setup = select_scale_and_alpha(
            base, common, sample, y, w, classes=None if classes is None else
            np.asarray(classes), make_schedule=schedule, n_features=n_features,
            seed=derive_seed(self.random_seed_, 6), multiple=multiple,
            best=scores[multiple], alpha_factors=factors)
        return config, _standardized(config, sample), bandwidth, factor, setup

    def _common(self, base, shape):
        """The one-common-scale alternative the set-up tries, or None."""
        if (self.standardize == "auto" and self._standardizes() and shape is None
                and scales_differ(base)):
            return common_scale(base)
        return None

    def _curvature(self, loss: str, n_outputs: int, seen: np.ndarray, weights: np.ndarray,
                   bandwidth: float) -> float:
        """:func:`~ooc_kernels.families.dsg._schedule.curvature_estimate` of the fit."""
        return curvature_estimate(loss, n_outputs, seen, weights, bandwidth,
                                  seed=derive_seed(self.random_seed_, 8),
                                  kernel=kernel_spec(self.kernel, self.kernel_params))

    def _class_weights(self, data, classes, sched):
        return None

    def _make_algorithm(self) -> DSGAlgorithm:
        return DSGAlgorithm(with_run_settings(self, self._config))

    # ------------------------------------------------------------------ prediction
    @staticmethod
    def _predict_block(X, payload):
        config, state = payload
        return predict_chunk(config, state, X)  # one chunk in, its decision values out

    # ------------------------------------------------------------------ persistence
    def _check_saved_config(self, config: DSGConfig, where: str) -> None:
        """Refuse a saved configuration this estimator could not have written
        (:func:`~ooc_kernels.families.dsg._saved_config.check_saved_config`)."""
        check_saved_config(self, config, where)

    @classmethod
    def _upgrade_saved(cls, meta: dict, version: int) -> dict:
        """Model format 1 (ooc_kernels 0.1, DSG only) as format 2 metadata."""
        if version != 1:
            return meta
        classes = meta.get("classes")
        config = dict(meta["config"])
        config["classes"] = None if classes is None else list(classes["values"])
        fitted = meta["fitted"]
        params = dict(meta["params"])
        if "n_epochs" in params:  # renamed max_iter; 0.1 ran exactly that many epochs
            params["max_iter"] = params.pop("n_epochs")
            params["tol"] = None
        if params.get("learning_rate") == "inverse":
            params.setdefault("average", False)
        return {**meta, "format_version": 2, "params": params,
                "base": {"n_features_in_": fitted["n_features_in_"],
                         "random_seed_": fitted["random_seed_"],
                         "data_seed": fitted["data_seed"],
                         "n_epochs_done": fitted["n_epochs_done"], "classes": classes},
                "fitted": {"config": config, "state": meta["state"]}}


@register_estimator
class DSGClassifier(ChunkedClassifierMixin, ClassifierMixin, UpdateMixin, _DSGEstimator):
    __doc__ = """Kernel classifier trained with doubly stochastic functional gradients.

    Parameters
    ----------
    loss : {""" + ", ".join(f'"{n}"' for n in _CLASSIFICATION_LOSSES) + """}, default="logistic"
        ``"logistic"``: binary logistic regression, multinomial (softmax) for more than two
        classes.  ``"hinge"``: SVM, one-vs-rest for more than two classes (features shared);
        ``"squared_hinge"`` (L2-SVM, ``max(0, 1 - y u)^2 / 2``) likewise.  ``"softmax"``:
        multinomial for any number of classes.  ``predict_proba``: logistic and softmax.
    """ + _CLASSIFIER_DOC + UPDATE_DOC + N_JOBS_DOC + """
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes (multiplying the sample weights): ``{label: weight}``, or
        ``"balanced"``: ``n_samples / (n_classes * count(label))``, counted in one pass over
        ``y`` (the fit with ``compute_sample_weight("balanced", y)`` as ``sample_weight``).
        With None a class of a few percent of the rows or less weighs that little in the
        loss, and the fit predicts it on fewer rows than it holds; the automatic set-up
        (1,001 to 50,000 rows) scores such a class with a balanced score, but pass
        ``"balanced"`` when its recall counts more than accuracy (``docs/defaults.md``,
        "A rare class").

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)""" + _ATTRIBUTES_DOC + """
    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from ooc_kernels import DSGClassifier
    >>> X, y = make_moons(300, noise=0.1, random_state=0)
    >>> clf = DSGClassifier(random_state=0, scheduler="sync").fit(X, y)
    >>> clf.predict(X[:3]).shape
    (3,)
    """

    _parameter_constraints = {**_DSG_CONSTRAINTS, **UPDATE_CONSTRAINTS,
                              **_STANDARDIZE_AUTO,
                              "loss": [StrOptions(set(_CLASSIFICATION_LOSSES))],
                              "class_weight": [dict, StrOptions({"balanced"}), None],
                              **N_JOBS_CONSTRAINTS}

    def __init__(self, loss="logistic", *, kernel="rbf", kernel_params=None, bandwidth="auto",
                 median_multiplier=1.0, standardize="auto", dtype="auto", alpha="auto",
                 n_features="auto", block_size=256, update="new",
                 batch_size=256, learning_rate="optimal", eta0="auto", t0="auto",
                 average="auto", max_iter=1000, tol=1e-3, n_iter_no_change=5,
                 early_stopping=False, validation_fraction=0.1, class_weight=None,
                 warm_start=False, verbose=0, chunks_per_round="auto", chunk_size=10_000,
                 shuffle=True, shuffle_chunks="auto", on_invalid="error", random_state=None,
                 scheduler=None, progress=None, n_jobs=None):
        self.loss = loss
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.bandwidth = bandwidth
        self.median_multiplier = median_multiplier
        self.standardize = standardize
        self.dtype = dtype
        self.alpha = alpha
        self.n_features = n_features
        self.block_size = block_size
        self.update = update
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.t0 = t0
        self.average = average
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.class_weight = class_weight
        self.warm_start = warm_start
        self.verbose = verbose
        self.chunks_per_round = chunks_per_round
        self.chunk_size = chunk_size
        self.shuffle = shuffle
        self.shuffle_chunks = shuffle_chunks
        self.on_invalid = on_invalid
        self.random_state = random_state
        self.scheduler = scheduler
        self.progress = progress
        self.n_jobs = n_jobs

    def _target_spec(self, loss, n_classes):
        if loss == "softmax" or (loss == "logistic" and n_classes > 2):
            return "softmax", n_classes, get_loss("softmax").loss_id
        if n_classes == 2:
            return "binary", 1, get_loss(loss).loss_id
        return "ovr", n_classes, get_loss(loss).loss_id

    def _class_weights(self, data, classes, sched):
        """Per-class weights aligned with ``classes`` (``class_weight``), or None."""
        if self.class_weight is None:
            return None
        classes = np.asarray(classes)
        if isinstance(self.class_weight, str):  # "balanced": one pass over y (not X)
            import dask.array as da

            read = self.__dict__.pop("_setup_label_counts", None)   # read with the classes
            labels, counts = read if read is not None else compute(
                *da.unique(data.y, return_counts=True), scheduler=sched)   # bounded waits
            count = dict(zip(np.asarray(labels).tolist(), np.asarray(counts).tolist()))
            n = sum(count.values())
            return tuple(float(n / (len(classes) * count[c])) if count.get(c) else 1.0
                         for c in classes.tolist())
        unknown = sorted(set(self.class_weight) - set(classes.tolist()), key=str)
        if unknown:
            raise ValidationError(
                f"class_weight names label(s) {unknown} that are not classes "
                f"{classes.tolist()}; use the labels of y."
            )
        return checked_class_weights(self.class_weight, classes.tolist())

    # the loss rule's tolerance grows with the loss above 0.1 (docs/defaults.md, "Stopping")
    _tol_loss_scale = TOL_LOSS_SCALE
    _proba_losses = tuple(n for n in _CLASSIFICATION_LOSSES if get_loss(n).has_proba)
    # predict_proba exists under the default loss, "logistic" (see _has_proba)
    capabilities = Capabilities(execution="rounds", inputs="supervised",
                                task="classification", partial_fit=True, tol=True,
                                probabilistic=True)

    @staticmethod
    def _proba_from_decision(dec):
        # one chunk of decision values: one column is binary logistic, several the softmax
        # (the targets of _target_spec)
        dec = np.asarray(dec, dtype=np.float64)
        return get_loss("logistic" if dec.shape[1] == 1 else "softmax").predict_proba(dec)


@register_estimator
class DSGRegressor(ChunkedRegressorMixin, RegressorMixin, AverageStartMixin, UpdateMixin,
                   _DSGEstimator):
    __doc__ = """Kernel regressor trained with doubly stochastic functional gradients.

    Parameters
    ----------
    loss : {""" + ", ".join(f'"{n}"' for n in _REGRESSION_LOSSES) + """}, default="squared"
        With ``r = u - y``: ``"squared"``, kernel ridge regression ``r^2 / 2``;
        ``"huber"``, robust regression ``r^2 / 2`` for ``|r| <= epsilon``, ``epsilon (|r| -
        epsilon / 2)`` beyond; ``"epsilon_insensitive"``, support vector regression
        ``max(0, |r| - epsilon)``; ``"quantile"``, quantile regression at level ``tau =
        quantile``, ``max(-tau r, (1 - tau) r)``.  See ``docs/machines/regression.md``.
    """ + LOSS_PARAMS_DOC + _STANDARDIZE_AUTO_DOC + UPDATE_DOC + N_JOBS_DOC + """
    Attributes
    ----------""" + _ATTRIBUTES_DOC + AVERAGE_START_DOC + """
    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels import DSGRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(500, 1))
    >>> y = np.sin(X[:, 0])
    >>> reg = DSGRegressor(random_state=0, scheduler="sync").fit(X, y)
    >>> reg.score(X, y) > 0.9
    True
    """

    _parameter_constraints = {**_DSG_CONSTRAINTS, **LOSS_PARAM_CONSTRAINTS,
                              **_STANDARDIZE_AUTO,
                              **UPDATE_CONSTRAINTS,
                              "loss": [StrOptions(set(_REGRESSION_LOSSES))],
                              **N_JOBS_CONSTRAINTS}
    capabilities = Capabilities(execution="rounds", inputs="supervised", task="regression",
                                partial_fit=True, tol=True)

    def __init__(self, loss="squared", *, epsilon=EPSILON, quantile=QUANTILE, kernel="rbf",
                 kernel_params=None,
                 bandwidth="auto",
                 median_multiplier=1.0, standardize="auto", dtype="auto", alpha="auto",
                 n_features=4096, block_size=256, update="new",
                 batch_size=256, learning_rate="optimal", eta0="auto", t0="auto",
                 average="auto", max_iter=1000, tol=1e-3, n_iter_no_change=5,
                 early_stopping=False, validation_fraction=0.1, warm_start=False, verbose=0, chunks_per_round="auto", chunk_size=10_000,
                 shuffle=True, shuffle_chunks="auto", on_invalid="error", random_state=None,
                 scheduler=None, progress=None, n_jobs=None):
        self.loss = loss
        self.epsilon = epsilon
        self.quantile = quantile
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.bandwidth = bandwidth
        self.median_multiplier = median_multiplier
        self.standardize = standardize
        self.dtype = dtype
        self.alpha = alpha
        self.n_features = n_features
        self.block_size = block_size
        self.update = update
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.t0 = t0
        self.average = average
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.warm_start = warm_start
        self.verbose = verbose
        self.chunks_per_round = chunks_per_round
        self.chunk_size = chunk_size
        self.shuffle = shuffle
        self.shuffle_chunks = shuffle_chunks
        self.on_invalid = on_invalid
        self.random_state = random_state
        self.scheduler = scheduler
        self.progress = progress
        self.n_jobs = n_jobs

    def _target_spec(self, loss, n_classes):
        return "regression", 1, get_loss(loss).loss_id
