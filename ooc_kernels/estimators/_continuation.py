"""What a continuation of a fit keeps: the hyperparameters a model was fitted with.

A ``warm_start`` fit and ``partial_fit`` continue the fitted model, and ``save`` writes it
with its hyperparameters; a hyperparameter changed with ``set_params`` since the fit would
be ignored by the first two and misdescribe the model in the third.  :func:`model_params`
gives the hyperparameters that define the model (all but :data:`CONTINUATION_PARAMS`: how
long, where and how a fit runs, and the estimator's ``_runtime_params``), recorded when a
model is set up or restored, and :func:`check_unchanged_params` refuses a change.

Examples
--------
>>> _same_value(1, 1.0), _same_value("auto", 0.1)
(True, False)
"""

from __future__ import annotations

import numpy as np

from ooc_kernels.exceptions import ValidationError

__all__ = ["CONTINUATION_PARAMS", "check_unchanged_params", "model_params", "switchable"]

#: The hyperparameters that a continuation (``warm_start``, ``partial_fit``) may change: how
#: long, where and how it runs and reads its rows, not the model it continues.
CONTINUATION_PARAMS = frozenset({"max_iter", "tol", "max_time", "warm_start", "progress",
                                 "verbose", "scheduler", "n_jobs", "chunks_per_round",
                                 "chunk_size", "shuffle", "shuffle_chunks", "on_invalid",
                                 "early_stopping", "n_iter_no_change", "validation_fraction"})


def _same_value(a, b) -> bool:
    """Whether two hyperparameter values are the same setting (arrays by their values)."""
    if a is b:
        return True
    try:
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return np.array_equal(np.asarray(a), np.asarray(b))
        return bool(a == b)
    except Exception:  # values that cannot be compared: compared by how they print
        return repr(a) == repr(b)


def model_params(estimator) -> dict:
    """The hyperparameters of ``estimator`` that define its model (all but
    :data:`CONTINUATION_PARAMS` and the estimator's ``_runtime_params``: where it runs and
    writes, which are never saved with it)."""
    runtime = frozenset(getattr(estimator, "_runtime_params", ()))
    return {k: v for k, v in estimator.get_params(deep=False).items()
            if k not in CONTINUATION_PARAMS and k not in runtime}


def switchable(estimator) -> frozenset:
    """The model hyperparameters that a continuation of ``estimator`` applies from its next
    step (the family's ``_switchable_params``, e.g. DSG's ``update``: a warm start may
    switch to reusing old random features); a save still refuses them changed unfitted."""
    return frozenset(getattr(estimator, "_switchable_params", ()))


def check_unchanged_params(estimator, action: str) -> None:
    """Refuse hyperparameters of ``estimator`` changed (``set_params``) since its model was
    fitted (``estimator._fitted_params``), before ``action`` (``"a warm_start fit"``,
    ``"partial_fit"`` or ``"save"``), which would otherwise ignore them or describe another
    model than the one fitted.

    Raises
    ------
    ValidationError
        Naming each changed hyperparameter with its fitted and its new value, and the fix.
    """
    fitted = estimator.__dict__.get("_fitted_params")
    if fitted is None:
        return
    now = model_params(estimator)
    allowed = frozenset() if action == "save" else switchable(estimator)
    changed = [k for k in sorted(now) if k in fitted and k not in allowed
               and not _same_value(now[k], fitted[k])]
    if not changed:
        return
    was = ", ".join(f"{k}={fitted[k]!r}" for k in changed)
    is_now = ", ".join(f"{k}={now[k]!r}" for k in changed)
    if action == "save":
        fix = ("the saved parameters would describe another model than the one fitted: "
               f"set them back (set_params({was})) before saving, or fit again")
    else:
        new = ("fit() starts a new model with them" if action == "partial_fit" else
               "fit a new model with them (warm_start=False, or a new estimator)")
        fix = (f"{action} continues that model and cannot change them: set them back "
               f"(set_params({was})), or {new}")
    raise ValidationError(f"{type(estimator).__name__} was fitted with {was}, and its "
                          f"parameters now say {is_now}; {fix}.")
