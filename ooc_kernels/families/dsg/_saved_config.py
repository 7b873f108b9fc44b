"""The check of a saved DSG configuration on load: a configuration that the loading
estimator could not have written (other hyperparameters, classes or input dimension, or
values no fit produces) is refused with a :class:`~ooc_kernels.exceptions.ModelFormatError`
naming the field.

Examples
--------
>>> import numpy as np
>>> import ooc_kernels as ok
>>> from dataclasses import replace
>>> X = np.random.default_rng(0).normal(size=(20, 2))
>>> reg = ok.DSGRegressor(n_features=64, block_size=32, max_iter=1, tol=None,
...                       scheduler="sync", progress=False, random_state=0).fit(X, X[:, 0])
>>> try:
...     check_saved_config(reg, replace(reg._config, y_scale=0.0), "model.ooc")
... except ok.exceptions.ModelFormatError as e:
...     print(str(e).split(";")[0])
model.ooc: the metadata's fitted.config has y_scale=0.0
"""

from __future__ import annotations

import math

from ooc_kernels.exceptions import ModelFormatError
from ooc_kernels._saved_fields import check_fields, is_int, is_real
from ooc_kernels.families.dsg._loss_params import loss_param
from ooc_kernels.features.maps import kernel_spec
from ooc_kernels.features.rbf import MAX_BANDWIDTH, MIN_BANDWIDTH

__all__ = ["check_saved_config", "check_saved_fields"]


def check_saved_config(estimator, config, where: str) -> None:
    """Refuse a saved configuration (:class:`~ooc_kernels.families.dsg.solver.DSGConfig`)
    that the DSG ``estimator`` could not have written: one that disagrees with its
    hyperparameters, its classes or its input dimension, or holds values no fit produces
    (a zero scale, a non-finite shift ...).

    Raises
    ------
    ModelFormatError
        Naming the field, its value and what the estimator expects.
    """
    def bad(what):
        return ModelFormatError(f"{where}: the metadata's fitted.config {what}; re-save "
                                "the model or restore it from a backup.")

    classes = getattr(estimator, "classes_", None)
    target, n_outputs, loss_id = estimator._target_spec(
        estimator.loss, 0 if classes is None else len(classes))
    if (config.target, config.n_outputs, config.loss_id) != (target, n_outputs, loss_id):
        raise bad(f"has target {config.target!r} with {config.n_outputs} output(s) and "
                  f"loss id {config.loss_id}; loss={estimator.loss!r} with "
                  f"{0 if classes is None else len(classes)} classes has {target!r}, "
                  f"{n_outputs} and {loss_id}")
    if (None if classes is None else tuple(classes.tolist())) != config.classes:
        raise bad(f"has classes {config.classes!r}, the model's are "
                  f"{None if classes is None else classes.tolist()!r}")
    spec = kernel_spec(estimator.kernel, getattr(estimator, "kernel_params", None))
    if config.kernel != spec:
        raise bad(f"has kernel={config.kernel!r}, the model's parameters say "
                  f"kernel={spec!r}")
    if config.loss_param != loss_param(estimator.loss, estimator):
        raise bad(f"has loss_param={config.loss_param!r}, the model's parameters give "
                  f"{loss_param(estimator.loss, estimator)!r} for loss={estimator.loss!r}")
    if config.n_features_in != estimator.n_features_in_:
        raise bad(f"has n_features_in={config.n_features_in!r}, the model "
                  f"{estimator.n_features_in_}")
    for name in ("n_blocks", "block_size"):
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise bad(f"has {name}={value!r}; it must be a positive integer")
    if config.dtype not in ("float32", "float64"):
        raise bad(f"has dtype={config.dtype!r}; it must be 'float32' or 'float64'")
    if not isinstance(config.bandwidth, (int, float)) \
            or not MIN_BANDWIDTH <= config.bandwidth <= MAX_BANDWIDTH:
        raise bad(f"has bandwidth={config.bandwidth!r}; it must be a positive finite number in "
                  f"[{MIN_BANDWIDTH:g}, {MAX_BANDWIDTH:g}]")
    if not isinstance(config.y_scale, (int, float)) or not 0 < config.y_scale < math.inf:
        raise bad(f"has y_scale={config.y_scale!r}; it must be a positive finite number")
    if not isinstance(config.y_shift, (int, float)) or not math.isfinite(config.y_shift):
        raise bad(f"has y_shift={config.y_shift!r}; it must be a finite number")
    if (config.x_shift is None) != (config.x_scale is None):
        raise bad("has only one of x_shift and x_scale; a standardized model has both")
    for name in ("x_shift", "x_scale"):
        value = getattr(config, name)
        if value is None:
            continue
        if len(value) != estimator.n_features_in_ or not all(
                isinstance(v, (int, float)) and math.isfinite(v) for v in value):
            raise bad(f"has {name} of length {len(value)}; it must be "
                      f"{estimator.n_features_in_} finite numbers (one per feature)")
        if name == "x_scale" and min(value) <= 0:
            raise bad(f"has x_scale {list(value)!r}; every scale must be > 0")
    widths = getattr(config, "input_bandwidths", None)
    if widths is not None and (config.x_scale is None or len(widths) != estimator.n_features_in_
                               or not all(isinstance(v, (int, float)) and 0 < v < math.inf
                                          for v in widths)):
        raise bad(f"has input_bandwidths {list(widths)!r}; they must be "
                  f"{estimator.n_features_in_} positive finite numbers (one per feature), "
                  "folded into x_scale")


#: The fields of a saved DSG configuration and state that no estimator-specific check
#: covers: each with what a fit can write.  A field a configuration does not have (an
#: older model, another DSG estimator) is skipped.
_CONFIG_FIELDS = {
    "feature_seed": ("an integer in [0, 2**64)", lambda v: is_int(v, 0, 2**64)),
    "n_outputs": ("an integer >= 1", lambda v: is_int(v, 1)),
    "alpha": ("a finite number >= 0", lambda v: is_real(v, 0.0)),
    "batch_size": ("an integer >= 1", lambda v: is_int(v, 1)),
    "learning_rate": ("'optimal', 'inverse' or 'constant'",
                      lambda v: v in ("optimal", "inverse", "constant")),
    "eta0": ("a positive finite number", lambda v: is_real(v, 0.0, strict=True)),
    "t0": ("a finite number >= 0", lambda v: is_real(v, 0.0)),
    "dtype": ("'float32' or 'float64'", lambda v: v in ("float32", "float64")),
    "shuffle": ("true or false", lambda v: isinstance(v, bool)),
    "on_invalid": ("'error' or 'skip'", lambda v: v in ("error", "skip")),
    "average": ("an integer >= 0", lambda v: is_int(v, 0)),
    "class_weight": ("null or finite numbers >= 0", lambda v: v is None or (
        isinstance(v, tuple) and all(is_real(w, 0.0) for w in v))),
    "loss_param": ("a finite number", lambda v: is_real(v, -math.inf)),
    "weight_scale": ("a positive finite number", lambda v: is_real(v, 0.0, strict=True)),
    "curvature": ("a positive finite number", lambda v: is_real(v, 0.0, strict=True)),
    "feature_budget": ("null or an integer >= 1", lambda v: v is None or is_int(v, 1)),
    "update": ("'new', 'uniform' or 'check'", lambda v: v in ("new", "uniform", "check")),
    "n_jobs": ("null or a non-zero integer", lambda v: v is None or (
        is_int(v, -2**31, 2**31) and v != 0)),
}
_STATE_FIELDS = {
    "n_iter": ("an integer >= 0", lambda v: is_int(v, 0)),
    "n_blocks_seen": ("an integer >= 0", lambda v: is_int(v, 0)),
    "n_samples_seen": ("an integer >= 0", lambda v: is_int(v, 0)),
    "n_samples_skipped": ("an integer >= 0", lambda v: is_int(v, 0)),
    "n_avg": ("an integer >= 0", lambda v: is_int(v, 0)),
    "loss_sum": ("a finite number", lambda v: is_real(v, -math.inf)),
    "loss_weight": ("a finite number >= 0", lambda v: is_real(v, 0.0)),
}


def check_saved_fields(config, state: dict, where: str) -> None:
    """Refuse a saved DSG configuration or state whose plain fields have a type or value
    no fit writes (a list, a negative count, a string for a number ...), whichever DSG
    estimator wrote it; :func:`check_saved_config` and the estimators' own checks compare
    the rest with the model's hyperparameters.

    Raises
    ------
    ModelFormatError
        Naming the field, its value and what it must be.

    Examples
    --------
    >>> from ooc_kernels.families.dsg.solver import DSGConfig
    >>> c = DSGConfig(loss_id=0, target="regression", n_outputs=1, n_features_in=2,
    ...               block_size=4, n_blocks=1, bandwidth=1.0, feature_seed=0, alpha=0.1,
    ...               batch_size=4, learning_rate="constant", eta0=0.1, t0=0.0,
    ...               dtype="float64")
    >>> check_saved_fields(c, {"n_iter": 3, "n_blocks_seen": -1}, "m.zarr")
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.ModelFormatError: m.zarr: the metadata's fitted.state has n_blocks_seen=-1; it must be an integer >= 0; re-save the model or restore it from a backup.
    """
    check_fields("config", _CONFIG_FIELDS,
                 {name: getattr(config, name) for name in _CONFIG_FIELDS
                  if hasattr(config, name)}, where)
    check_fields("state", _STATE_FIELDS, state, where)
    weights, classes = getattr(config, "class_weight", None), getattr(config, "classes", None)
    if weights is not None and (classes is None or len(weights) != len(classes)):
        raise ModelFormatError(
            f"{where}: the metadata's fitted.config has class_weight={list(weights)!r} for "
            f"the classes {classes!r}; it must hold one weight per class; re-save the model "
            "or restore it from a backup.")
