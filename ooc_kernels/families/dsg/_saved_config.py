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
>>> reg = ok.DSGRegressor(n_features=64, block_size=32, max_iter=1, scheduler="sync",
...                       progress=False, random_state=0).fit(X, X[:, 0])
>>> try:
...     check_saved_config(reg, replace(reg._config, y_scale=0.0), "model.ooc")
... except ok.exceptions.ModelFormatError as e:
...     print(str(e).split(";")[0])
model.ooc: the metadata's fitted.config has y_scale=0.0
"""

from __future__ import annotations

import math

from ooc_kernels.exceptions import ModelFormatError
from ooc_kernels.families.dsg._loss_params import loss_param
from ooc_kernels.features.maps import kernel_spec

__all__ = ["check_saved_config"]


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
    for name in ("bandwidth", "y_scale"):
        value = getattr(config, name)
        if not isinstance(value, (int, float)) or not (0 < value < math.inf):
            raise bad(f"has {name}={value!r}; it must be a positive finite number")
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
