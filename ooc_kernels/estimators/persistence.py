"""Saving and loading fitted models as Zarr groups: JSON metadata plus arrays, never pickle.

Layout of a saved model::

    model.zarr/
      zarr.json           attrs["ooc_kernels"]: format, versions, estimator class,
                          hyperparameters, kernel spec (bandwidth, feature seed), counters,
                          classes
      coef/               float64 (n_blocks, block_size, n_outputs)

Random features are not stored: they are regenerated from the feature seed.  A save writes
into a temporary sibling folder and renames it into place, so an interrupted save never
leaves a half-written model at ``path``.

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

import dataclasses
from pathlib import Path

import numpy as np
import zarr

from ooc_kernels._atomic import atomic_dir
from ooc_kernels._version import __version__
from ooc_kernels.exceptions import ModelFormatError, OocKernelsError

__all__ = ["save_model", "load", "model_metadata", "restore_model", "FORMAT_VERSION"]

FORMAT = "ooc_kernels-model"
FORMAT_VERSION = 1
_META_KEY = "ooc_kernels"
_SKIP_PARAMS = ("scheduler", "progress")


class ModelPathError(OocKernelsError, FileExistsError):
    """The target of a save exists and is not a model this library wrote."""


def _json_param(name, value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    raise ModelFormatError(
        f"parameter {name}={value!r} cannot be saved as JSON; set it to an int or None "
        "before saving (e.g. random_state=0)."
    )


def _is_model(path: Path) -> bool:
    try:
        group = zarr.open_group(str(path), mode="r")
    except Exception:  # not a zarr group at all
        return False
    return _META_KEY in group.attrs


def model_metadata(estimator) -> dict:
    """JSON metadata describing a fitted estimator (everything but its coefficients)."""
    config = dataclasses.asdict(estimator._config)
    classes = config.pop("classes")
    config["feature_seed"] = str(config["feature_seed"])
    state = estimator._state
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "estimator": type(estimator).__name__,
        "params": {k: _json_param(k, v) for k, v in estimator.get_params().items()
                   if k not in _SKIP_PARAMS},
        "config": config,
        "classes": None if classes is None else {
            "values": np.asarray(estimator.classes_).tolist(),
            "dtype": np.asarray(estimator.classes_).dtype.str},
        "state": {"n_iter": int(state.n_iter), "n_blocks_seen": int(state.n_blocks_seen),
                  "n_samples_seen": int(state.n_samples_seen),
                  "n_samples_skipped": int(state.n_samples_skipped)},
        "fitted": {"n_features_in_": int(estimator.n_features_in_),
                   "random_seed_": int(estimator.random_seed_),
                   "data_seed": str(estimator._data_seed),
                   "n_epochs_done": int(estimator._n_epochs_done)},
    }


def save_model(estimator, path) -> None:
    """Write a fitted estimator to ``path`` (a Zarr group).  See the module docstring."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(estimator, "_state")
    path = Path(path)
    if path.exists() and not _is_model(path):
        raise ModelPathError(
            f"refusing to overwrite {str(path)!r}: it exists and is not an ooc_kernels "
            "model; choose another path or remove it first."
        )
    meta = model_metadata(estimator)
    with atomic_dir(path) as tmp:
        group = zarr.open_group(str(tmp), mode="w")
        group.create_array("coef", data=np.asarray(estimator._state.coef, dtype=np.float64))
        group.attrs[_META_KEY] = meta


def _estimator_classes() -> dict:
    from ooc_kernels.estimators.dsg import DSGClassifier, DSGRegressor

    return {"DSGClassifier": DSGClassifier, "DSGRegressor": DSGRegressor}


def load(path):
    """Load a model written by ``estimator.save(path)``.

    Raises
    ------
    ModelFormatError
        The path holds no model, a corrupt one, or one of a newer format version.
    """
    path = Path(path)
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
    if int(meta.get("format_version", -1)) > FORMAT_VERSION:
        raise ModelFormatError(
            f"{str(path)!r} was written with model format {meta['format_version']} by "
            f"ooc_kernels {meta.get('library_version')}; this is ooc_kernels {__version__} "
            f"(format {FORMAT_VERSION}). Upgrade ooc_kernels to load it."
        )
    classes_by_name = _estimator_classes()
    if meta.get("estimator") not in classes_by_name:
        raise ModelFormatError(
            f"{str(path)!r} holds an unknown estimator {meta.get('estimator')!r}; known: "
            f"{sorted(classes_by_name)}."
        )
    try:
        coef = np.asarray(group["coef"][...], dtype=np.float64)  # the model, not data
    except Exception as err:
        raise ModelFormatError(
            f"{str(path)!r}: the coefficient array is missing or corrupt ({err})."
        ) from err
    return restore_model(meta, coef, where=str(path))


def _construct(cls, params, where: str):
    """The estimator of a model file, built from its saved hyperparameters only.

    Where tasks run (``scheduler``) and whether bars are shown (``progress``) belong to the
    person using the model, never to the file: a file that sets them is refused (this
    library never writes them), and the loaded estimator has ``scheduler=None``.
    """
    if not isinstance(params, dict):
        raise ModelFormatError(f"{where}: 'params' must be a mapping, found {params!r}.")
    forbidden = sorted(set(params) & set(_SKIP_PARAMS))
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


def restore_model(meta: dict, coef: np.ndarray, *, where: str = "model", estimator=None):
    """Rebuild a fitted estimator from :func:`model_metadata` and its coefficients.

    With ``estimator``, its fitted state is set in place (its parameters are kept).
    """
    from ooc_kernels.solvers.dsg import DSGConfig, DSGState

    classes_by_name = _estimator_classes()
    est = estimator if estimator is not None else \
        _construct(classes_by_name[meta["estimator"]], meta["params"], where)
    config = dict(meta["config"])
    config["feature_seed"] = int(config["feature_seed"])
    classes = None
    if meta["classes"] is not None:
        classes = np.asarray(meta["classes"]["values"], dtype=np.dtype(meta["classes"]["dtype"]))
        config["classes"] = tuple(classes.tolist())
    else:
        config["classes"] = None
    est._config = DSGConfig(**config)
    expected = (est._config.n_blocks, est._config.block_size, est._config.n_outputs)
    if coef.shape != expected:
        raise ModelFormatError(
            f"{where}: coef has shape {coef.shape}, the metadata says {expected}."
        )
    est._state = DSGState(coef=coef, **meta["state"])
    fitted = meta["fitted"]
    est.n_features_in_ = fitted["n_features_in_"]
    est.random_seed_ = fitted["random_seed_"]
    est._data_seed = int(fitted["data_seed"])
    est._n_epochs_done = fitted["n_epochs_done"]
    est.bandwidth_ = est._config.bandwidth
    est.feature_seed_ = est._config.feature_seed
    est.n_iter_ = est._state.n_iter
    est.n_blocks_seen_ = est._state.n_blocks_seen
    est.n_samples_seen_ = est._state.n_samples_seen
    est.n_samples_skipped_ = est._state.n_samples_skipped
    if classes is not None:
        est.classes_ = classes
    return est
