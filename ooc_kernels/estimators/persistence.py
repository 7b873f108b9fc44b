"""Saving and loading fitted models as Zarr groups: JSON metadata plus arrays, never pickle.

Layout of a saved model (format 2)::

    model.zarr/
      zarr.json        attrs["ooc_kernels"]: format, format_version, library_version,
                       estimator (its registered name), params (JSON hyperparameters),
                       base (what every estimator has: n_features_in_, classes, seeds),
                       fitted (the family's JSON: kernel spec, counters ...)
      <arrays>/        the family's arrays (DSG: coef, float64)

The estimator class is found in the registry (:mod:`ooc_kernels.estimators._registry`), so
this module names no family.  Where tasks run (``scheduler``) and whether bars are shown
(``progress``) are never saved: a loaded model has ``scheduler=None``.  A save writes into a
temporary sibling folder and renames it into place, so an interrupted save never leaves a
half-written model at ``path``; an existing ``path`` is replaced only if it is a model this
library wrote (anything else raises :class:`~ooc_kernels.exceptions.ModelPathError`), and what
a killed save left beside ``path`` is removed by the next save or load of ``path``
(:mod:`ooc_kernels._atomic`).  Models of format 1 (ooc_kernels 0.1) load through their
family's ``_upgrade_saved``.

Examples
--------
>>> import numpy as np, tempfile, os
>>> import ooc_kernels as ok
>>> X = np.random.default_rng(0).normal(size=(50, 3)); y = X[:, 0] > 0
>>> clf = ok.DSGClassifier(n_features=256, batch_size=8, random_state=0,
...                        scheduler="sync").fit(X, y)
>>> path = os.path.join(tempfile.mkdtemp(), "clf.zarr")
>>> clf.save(path)
>>> np.array_equal(ok.load(path).predict(X), clf.predict(X))
True
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import zarr

from ooc_kernels._atomic import KIND_ATTR, atomic_dir, sweep_stale
from ooc_kernels._version import __version__
from ooc_kernels.estimators._registry import ESTIMATORS
from ooc_kernels.exceptions import ModelFormatError, RegistryError

__all__ = ["save_model", "load", "model_metadata", "restore_model", "json_params",
           "FORMAT_VERSION"]

FORMAT = "ooc_kernels-model"
FORMAT_VERSION = 2
_META_KEY = "ooc_kernels"


def _json_param(name, value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    raise ModelFormatError(
        f"parameter {name}={value!r} cannot be saved as JSON; set it to an int or None "
        "before saving (e.g. random_state=0)."
    )


def json_params(estimator) -> dict:
    """The estimator's hyperparameters as JSON, without those of whoever runs it."""
    return {k: _json_param(k, v) for k, v in estimator.get_params(deep=False).items()
            if k not in estimator._runtime_params}


def _base_meta(estimator) -> dict:
    classes = getattr(estimator, "classes_", None)
    names = getattr(estimator, "feature_names_in_", None)
    return {
        "n_features_in_": int(estimator.n_features_in_),
        "feature_names_in_": None if names is None else [str(n) for n in names],
        "random_seed_": int(estimator.random_seed_),
        "data_seed": str(estimator._data_seed),
        "n_epochs_done": int(estimator._n_epochs_done),
        "monitor": getattr(estimator, "_monitor_state", None),
        "validation_chunks": getattr(estimator, "validation_chunks_", None),
        "shuffle_chunks": getattr(estimator, "shuffle_chunks_", None),
        "classes": None if classes is None else {
            "values": np.asarray(classes).tolist(), "dtype": np.asarray(classes).dtype.str},
    }


def model_metadata(estimator) -> dict:
    """JSON metadata describing a fitted estimator (everything but its arrays)."""
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "estimator": type(estimator).__name__,
        "params": json_params(estimator),
        "base": _base_meta(estimator),
        "fitted": estimator._fitted_meta(),
    }
    json.dumps(meta)  # fail before anything is written if it is not JSON
    return meta


def save_model(estimator, path) -> None:
    """Write a fitted estimator to ``path`` (a Zarr group).  See the module docstring."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(estimator, "_state")
    path = Path(path)
    meta = model_metadata(estimator)
    arrays = estimator._fitted_arrays()
    # only a model of this library is ever replaced (anything else: ModelPathError)
    with atomic_dir(path, kind="model") as tmp:
        group = zarr.open_group(str(tmp), mode="w")
        for name, value in arrays.items():
            group.create_array(name, data=np.asarray(value))
        group.attrs.update({_META_KEY: meta, KIND_ATTR: "model"})


def load(path):
    """Load a model written by ``estimator.save(path)``.

    Raises
    ------
    ModelFormatError
        The path holds no model, a corrupt one, one of a newer format version, one of an
        estimator this installation does not have, or a file that sets what a model file
        may not choose (``scheduler``, ``progress``).
    """
    path = Path(path)
    sweep_stale(path)  # a save killed part way: its leftovers go, a half-done swap is undone
    if not path.exists():
        raise ModelFormatError(f"no model at {str(path)!r}: the path does not exist.")
    try:
        group = zarr.open_group(str(path), mode="r")
        meta = dict(group.attrs[_META_KEY])
    except Exception as err:
        raise ModelFormatError(
            f"{str(path)!r} is not an ooc_kernels model ({type(err).__name__}: {err}); "
            "load a folder written by estimator.save()."
        ) from err
    if meta.get("format") != FORMAT:
        raise ModelFormatError(f"{str(path)!r} has format {meta.get('format')!r}, "
                               f"expected {FORMAT!r}.")
    try:
        arrays = {name: np.asarray(arr[...]) for name, arr in group.arrays()}  # the model
    except Exception as err:
        raise ModelFormatError(
            f"{str(path)!r}: an array of the model is missing or corrupt ({err}); "
            "re-save the model or restore it from a backup."
        ) from err
    return restore_model(meta, arrays, where=str(path))


def _check_version(meta: dict, where: str) -> int:
    try:
        version = int(meta.get("format_version", -1))
    except (TypeError, ValueError):
        version = -1
    if version > FORMAT_VERSION:
        raise ModelFormatError(
            f"{where} was written with model format {meta.get('format_version')} by "
            f"ooc_kernels {meta.get('library_version')}; this is ooc_kernels {__version__} "
            f"(format {FORMAT_VERSION}). Upgrade ooc_kernels to load it."
        )
    if version < 1:
        raise ModelFormatError(
            f"{where}: unknown model format version {meta.get('format_version')!r}; load a "
            "folder written by estimator.save()."
        )
    return version


def _estimator_class(meta: dict, where: str) -> type:
    name = meta.get("estimator")
    try:
        return ESTIMATORS.get(name)
    except RegistryError:
        raise ModelFormatError(
            f"{where} holds an unknown estimator {name!r}; this installation has "
            f"{ESTIMATORS.names()}. Install the version of ooc_kernels that wrote it."
        ) from None


def _construct(cls, params, where: str):
    """The estimator of a model file, built from its saved hyperparameters only.

    Where tasks run (``scheduler``) and whether bars are shown (``progress``) belong to the
    person using the model, never to the file: a file that sets them is refused (this
    library never writes them), and the loaded estimator has ``scheduler=None``.
    """
    if not isinstance(params, dict):
        raise ModelFormatError(f"{where}: 'params' must be a mapping, found {params!r}.")
    forbidden = sorted(set(params) & set(cls._runtime_params))
    if forbidden:
        raise ModelFormatError(
            f"{where}: the model file sets {forbidden}, which a model file may not choose "
            "(where tasks run and progress display come from the person loading it; "
            "ooc_kernels never writes them). Remove these keys from the file's metadata, or "
            "re-save the model with estimator.save(); pass a scheduler after loading with "
            "model.set_params(scheduler=...)."
        )
    valid = set(cls().get_params())
    unknown = sorted(set(params) - valid)
    if unknown:
        raise ModelFormatError(
            f"{where}: unknown hyperparameter(s) {unknown} for {cls.__name__}; the file was "
            "not written by this version of ooc_kernels or was edited."
        )
    return cls(**params)


def restore_model(meta: dict, arrays: dict, *, where: str = "model", estimator=None):
    """Rebuild a fitted estimator from :func:`model_metadata` and its arrays.

    With ``estimator``, its fitted state is set in place (its parameters are kept).
    """
    version = _check_version(meta, where)
    cls = type(estimator) if estimator is not None else _estimator_class(meta, where)
    if version < FORMAT_VERSION:
        meta = cls._upgrade_saved(meta, version)
    est = estimator if estimator is not None else _construct(cls, meta["params"], where)
    base = meta["base"]
    try:
        est.n_features_in_ = int(base["n_features_in_"])
        if base.get("feature_names_in_") is not None:
            est.feature_names_in_ = np.asarray(base["feature_names_in_"], dtype=object)
        est.random_seed_ = int(base["random_seed_"])
        est._data_seed = int(base["data_seed"])
        est._n_epochs_done = int(base["n_epochs_done"])
        est.n_iter_ = est._n_epochs_done
        est._monitor_state = base.get("monitor")
        est.history_ = list((base.get("monitor") or {}).get("history") or [])
        if base.get("validation_chunks") is not None:
            est.validation_chunks_ = list(base["validation_chunks"])
        if base.get("shuffle_chunks") is not None:
            est.shuffle_chunks_ = int(base["shuffle_chunks"])
        if base.get("classes") is not None:
            est.classes_ = np.asarray(base["classes"]["values"],
                                      dtype=np.dtype(base["classes"]["dtype"]))
        est._restore_fitted(arrays, meta["fitted"], where)
    except ModelFormatError:
        raise
    except (KeyError, TypeError, ValueError) as err:
        raise ModelFormatError(
            f"{where}: the model's metadata is incomplete or corrupt ({type(err).__name__}: "
            f"{err}); re-save the model or restore it from a backup."
        ) from err
    return est
