"""The saved configuration of a DSPDC model: written (its work store by its folder name
only), and read back with its loss and its local problems checked, with errors that say the
model file is damaged.

Examples
--------
>>> from ooc_kernels.families.dspdc._saved import _local_problems
>>> _local_problems([[100, 1, 2.0, 0.5, 0.25]], "model.zarr")
{(100, 1): (2.0, 0.5, 0.25)}
"""

from __future__ import annotations

import math
import os

import numpy as np

from ooc_kernels._saved_fields import check_fields, is_int, is_real
from ooc_kernels.exceptions import ModelFormatError
from ooc_kernels.losses import get_loss, loss_by_id, losses_for

#: The loss ids of a saved configuration that names no loss (ooc_kernels 0.2.0 numbered
#: DSPDC's three losses 0, 1, 2).
_SAVED_IDS_WITHOUT_NAME = {0: "squared", 1: "smoothed_hinge", 2: "logistic"}
_REGRESSION_LOSSES = losses_for("dspdc", target="real")
_CLASSIFICATION_LOSSES = losses_for("dspdc", target="binary")


def _saved_loss_id(config: dict, where: str) -> int:
    """The loss-table id of a saved configuration (its ``"loss"`` entry is removed).

    The configuration names its loss; one that names none (written by ooc_kernels 0.2.0)
    numbers it as :data:`_SAVED_IDS_WITHOUT_NAME` does."""
    name = config.pop("loss", None)
    saved = config.get("loss_id")
    named = name is not None
    if not named and isinstance(saved, int) and not isinstance(saved, bool):
        name = _SAVED_IDS_WITHOUT_NAME.get(saved)
    valid = _REGRESSION_LOSSES + _CLASSIFICATION_LOSSES
    if name not in valid:
        raise ModelFormatError(
            f"{where}: the metadata's loss {_short(name)} (id {_short(saved)}) is not one of "
            f"DSPDC's losses {list(valid)}; the model file is damaged."
        )
    loss_id = get_loss(name).loss_id
    if named and saved != loss_id:
        raise ModelFormatError(f"{where}: the metadata names loss {name!r} with id "
                               f"{_short(saved)}, not its id {loss_id}; the model file is "
                               "damaged.")
    return loss_id


def _short(value, limit: int = 80) -> str:
    """``repr(value)``, cut at ``limit`` characters (metadata may be anything)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _local_problems(entries, where: str) -> dict:
    """``{(rows, tasks): (theta, tau, sigma)}`` from a model's metadata, checked."""
    if not isinstance(entries, list):
        raise ModelFormatError(
            f"{where}: the metadata has no list of local problems (got "
            f"{_short(entries)}); the "
            "model was not written by this version of the library: fit it again."
        )
    out = {}
    for entry in entries:
        ok = (isinstance(entry, list) and len(entry) == 5
              and all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                      for v in entry[:2])
              and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                      and math.isfinite(v) and v >= 0 for v in entry[2:]))
        if not ok:
            raise ModelFormatError(
                f"{where}: local problem {_short(entry)} is not [rows, tasks, theta, tau, "
                "sigma] "
                "with positive counts and finite parameters; the model file is damaged."
            )
        out[(entry[0], entry[1])] = tuple(float(v) for v in entry[2:])
    return out



def _optional_positive(v) -> bool:
    return v is None or is_real(v, 0.0, strict=True)


def _reals(v, positive: bool = False) -> bool:
    return v is None or (isinstance(v, (list, tuple)) and all(
        is_real(e, 0.0, strict=True) if positive else is_real(e, -math.inf) for e in v))


#: The plain fields of a saved DSPDC configuration: what each must be, and its test.
_CONFIG_FIELDS = {
    "n_samples": ("an integer >= 1", lambda v: is_int(v, 1)),
    "n_features": ("an integer >= 1", lambda v: is_int(v, 1)),
    "lam1": ("a finite number >= 0", lambda v: is_real(v, 0.0)),
    "lam2": ("a finite number > 0", lambda v: is_real(v, 0.0, strict=True)),
    "Lambda": ("a finite number > 0", lambda v: is_real(v, 0.0, strict=True)),
    "m": ("an integer >= 1", lambda v: is_int(v, 1)),
    "q": ("an integer >= 1", lambda v: is_int(v, 1)),
    "local_passes": ("a finite number > 0", lambda v: is_real(v, 0.0, strict=True)),
    "max_local_passes": ("None or a finite number > 0", _optional_positive),
    "mode": ("'gap' or 'distance'", lambda v: v in ("gap", "distance")),
    "theta": ("None or a finite number > 0", _optional_positive),
    "tau": ("None or a finite number > 0", _optional_positive),
    "sigma": ("None or a finite number > 0", _optional_positive),
    "work_store": ("a string", lambda v: isinstance(v, str)),
    "factorized": ("true or false", lambda v: isinstance(v, bool)),
    "intercept_scaling": ("a finite number >= 0 (0: no intercept)",
                          lambda v: is_real(v, 0.0)),
    "weighted": ("true or false", lambda v: isinstance(v, bool)),
    "class_weight": ("None or two finite numbers >= 0",
                     lambda v: _reals(v) and (v is None or len(v) == 2)
                     and all(e >= 0 for e in (v or ()))),
    "weight_scale": ("a finite number > 0", lambda v: is_real(v, 0.0, strict=True)),
    "x_shift": ("None or a list of finite numbers", _reals),
    "x_scale": ("None or a list of finite numbers > 0",
                lambda v: _reals(v, positive=True)),
    "step_boost": ("a finite number >= 1", lambda v: is_real(v, 1.0)),
    "x_spread": ("None or an integer >= 0", lambda v: v is None or is_int(v, 0)),
    "mean_lambda": ("true or false", lambda v: isinstance(v, bool)),
    "permuted_rows": ("true or false", lambda v: isinstance(v, bool)),
    "start_x": ("None or a list of finite numbers", _reals),
    "start_w": ("None or a list of finite numbers", _reals),
    "start_conj": ("None or a finite number", lambda v: v is None or is_real(v, -math.inf)),
    "y_shift": ("a finite number", lambda v: is_real(v, -math.inf)),
}


def _check_config_fields(config: dict, where: str) -> None:
    """Refuse a saved DSPDC configuration with an entry no fit writes: an unknown name, or
    a plain field of another type or value (a negative ``intercept_scaling``, a count that
    is not a positive integer ...); the loss, the classes and the local problems have their
    own checks.

    Raises
    ------
    ModelFormatError
        Naming the field, its value and what it must be.

    Examples
    --------
    >>> _check_config_fields({"intercept_scaling": -1.0}, "m.zarr")
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.ModelFormatError: m.zarr: the metadata's fitted.config has intercept_scaling=-1.0; it must be a finite number >= 0 (0: no intercept); re-save the model or restore it from a backup.
    """
    known = set(_CONFIG_FIELDS) | {"loss", "loss_id", "classes"}
    unknown = sorted(str(k) for k in config if k not in known)
    if unknown:
        raise ModelFormatError(
            f"{where}: the metadata's fitted.config has entries no fit writes "
            f"({_short(unknown)}); re-save the model or restore it from a backup.")
    check_fields("config", _CONFIG_FIELDS, config, where)


def _store_name(path: str) -> str:
    """The folder name of a work store (``""`` for none): what a model file or a checkpoint
    records of it.  The folder it is in belongs to the machine that wrote it; a resume looks
    the name up in its own (:meth:`~ooc_kernels.families.dspdc._work.WorkStores.resume_store`).

    Examples
    --------
    >>> _store_name("/home/alice/work/dspdc-0123456789ab-x1y2z3w4"), _store_name("")
    ('dspdc-0123456789ab-x1y2z3w4', '')
    """
    return os.path.basename(os.path.normpath(path)) if path else ""


def _saved_config(config) -> dict:
    """``fitted.config`` of a model file or a checkpoint: the solver's configuration
    (:class:`~ooc_kernels.families.dspdc.solver.DSPDCConfig`) as JSON, its loss by name and
    id, its work store by its folder name only (:func:`_store_name`)."""
    import dataclasses

    saved = dataclasses.asdict(config)
    saved["loss"] = loss_by_id(saved["loss_id"]).name
    for key in ("classes", "class_weight"):
        saved[key] = None if saved[key] is None else list(saved[key])
    saved["work_store"] = _store_name(saved["work_store"])
    return saved


def _counters(state) -> dict:
    """The scalars of a DSPDC state, as a model's metadata keeps them."""
    return {"conj_sum": float(state.conj_sum), "n_iter": int(state.n_iter),
            "n_dual_updates": int(state.n_dual_updates), "n_rounds": int(state.n_rounds),
            "step_boost": float(state.step_boost)}


def _saved_state(estimator):
    """The state a checkpoint holds: the iterate whose gap stopped the fit (the model the
    fit returns, so that a fit resumed from a checkpoint written at its stop returns it
    too), else the rounds' state."""
    return getattr(estimator, "_certified", None) or estimator._state


def _tail_sums(state) -> dict:
    """The losses an epoch's first round summed at its tail (``DSPDCState.tail_state``
    None: the state itself), as a checkpoint between the two rounds keeps them."""
    if state.tail_state is not None or not state.tail_rows:
        return {}
    return {"tail_loss": float(state.tail_loss), "tail_rows": int(state.tail_rows)}


def _start_arrays(state) -> dict:
    """The arrays of ``state.epoch_start`` a checkpoint keeps (none when there is none)."""
    start = state.epoch_start
    if start is None:
        return {}
    return {"start_x": np.asarray(start.x, dtype=np.float64),
            "start_w": np.asarray(start.w, dtype=np.float64),
            "start_versions": np.asarray(start.versions.table)}


def _restored_start(arrays: dict, meta: dict, where: str):
    """The ``epoch_start`` state of a saved model or checkpoint, or None (none saved).

    Raises
    ------
    ModelFormatError
        The metadata has an ``epoch_start`` but the arrays are missing.
    """
    from ooc_kernels._chunk_store import ChunkVersions
    from ooc_kernels.families.dspdc.solver import DSPDCState

    start = meta.get("epoch_start")
    if start is None:
        return None
    if "start_x" not in arrays:
        raise ModelFormatError(
            f"{where}: the metadata has an epoch_start but the arrays start_x, start_w and "
            "start_versions are missing; the file is damaged: fit again from the start.")
    unknown = sorted(set(start) - {"conj_sum", "n_iter", "n_dual_updates", "n_rounds",
                                   "step_boost"}) if isinstance(start, dict) else [start]
    shapes = [np.shape(arrays[k]) for k in ("x", "w", "versions")]
    if unknown or [np.shape(arrays[f"start_{k}"]) for k in ("x", "w", "versions")] != shapes:
        raise ModelFormatError(
            f"{where}: the saved epoch start does not match the model (unknown entries "
            f"{unknown}, or arrays shaped unlike x, w and versions); the file is damaged: "
            "fit again from the start.")
    table = np.asarray(arrays["start_versions"], dtype=np.int64)
    table.setflags(write=False)
    return DSPDCState(x=np.asarray(arrays["start_x"], dtype=np.float64),
                      w=np.asarray(arrays["start_w"], dtype=np.float64),
                      versions=ChunkVersions(table), **start)
