"""Saving and loading fitted models as Zarr groups: JSON metadata plus arrays, never pickle.

Layout of a saved model (format 3)::

    model.zarr/
      zarr.json        attrs["ooc_kernels"]: format, format_version, library_version,
                       estimator (its registered name), params (JSON hyperparameters),
                       base (what every estimator has: n_features_in_, classes, seeds),
                       fitted (the family's JSON: kernel spec, counters ...),
                       checksums (every array's shape, dtype and CRC32C, and the CRC32C
                       of the metadata: :mod:`ooc_kernels._checksums`)
      <arrays>/        the family's arrays (DSG: coef, float64), every chunk with its CRC32C

Hyperparameters are saved as JSON by :func:`~ooc_kernels.estimators._param_json.json_param`:
a mapping keyed by labels (``class_weight={0: 1.0, 1: 2.0}``, keys of any label type, NumPy
ones included) is tagged with its keys' types and loads with keys equal and of the same
type; a value with no JSON form is a :class:`~ooc_kernels.exceptions.ModelFormatError`
naming the parameter before anything is written.

Loading verifies everything it reads: the metadata's checksum, then only the arrays the
checksums list and the family knows (``_saved_arrays``), each against its shape, dtype and
CRC32C; a mismatch is a :class:`~ooc_kernels.exceptions.ModelFormatError` naming what is
wrong.  The hyperparameters go through the constructor's validation and the fitted
metadata through the family's checks, so an edited file gives the library's error, never
a raw one or a model that predicts nonsense.  Models of formats 1 and 2 (ooc_kernels 0.1
and the versions before checksums) carry no checksums: they load with the same checks but
without checksum verification (a file of format 1 or 2 that carries checksums was edited
and is refused).

The estimator class is found in the registry (:mod:`ooc_kernels.estimators._registry`), so
this module names no family.  Where tasks run (``scheduler``), whether bars are shown
(``progress``) and the estimator's other ``_runtime_params`` (where a fit writes its work
files, a ``work_dir``) are never saved: a loaded model has ``scheduler=None``.  A save
writes into a temporary sibling folder and renames it into place, so an interrupted save
never leaves a half-written model at ``path``; an existing ``path`` is replaced only if it
is a model this library wrote (anything else raises
:class:`~ooc_kernels.exceptions.ModelPathError`), and what a killed save left beside
``path`` is removed by the next save or load of ``path`` (:mod:`ooc_kernels._atomic`).
Models of format 1 (ooc_kernels 0.1) load through their family's ``_upgrade_saved``;
formats 2 and 3 differ only by the checksums.

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
import warnings
from pathlib import Path

import numpy as np
import zarr

from ooc_kernels import _checksums
from ooc_kernels._atomic import (KIND_ATTR, atomic_dir, expand_user, read_consistent,
                                 sweep_stale)
from ooc_kernels._untrusted import refuse_special_files
from ooc_kernels._version import __version__
from ooc_kernels.estimators._feature_coords import (restore_feature_coords,
                                                   saved_feature_coords)
from ooc_kernels.estimators._param_json import MAPPING_TAG, decoded_mapping, json_param
from ooc_kernels.estimators._registry import ESTIMATORS
from ooc_kernels.exceptions import (ModelFormatError, OocKernelsWarning, RegistryError,
                                    ValidationError)

__all__ = ["save_model", "load", "model_metadata", "restore_model", "json_params",
           "FORMAT_VERSION"]

FORMAT = "ooc_kernels-model"
FORMAT_VERSION = 3
#: The first format whose files carry checksums.
CHECKSUMS_SINCE = 3
_META_KEY = "ooc_kernels"


def json_params(estimator) -> dict:
    """The estimator's hyperparameters as JSON, without those of whoever runs it."""
    return {k: json_param(k, v) for k, v in estimator.get_params(deep=False).items()
            if k not in estimator._runtime_params}


def _base_meta(estimator) -> dict:
    classes = getattr(estimator, "classes_", None)
    names = getattr(estimator, "feature_names_in_", None)
    return {
        "n_features_in_": int(estimator.n_features_in_),
        "feature_names_in_": None if names is None else [str(n) for n in names],
        "feature_coords_": saved_feature_coords(estimator),
        "random_seed_": int(estimator.random_seed_),
        "data_seed": str(estimator._data_seed),
        "n_epochs_done": int(estimator._n_epochs_done),
        "monitor": getattr(estimator, "_monitor_state", None),
        "validation_chunks": getattr(estimator, "validation_chunks_", None),
        "shuffle_chunks": getattr(estimator, "shuffle_chunks_", None),
        "chunks_per_round": getattr(estimator, "chunks_per_round_", None),
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


def save_model(estimator, path, *, overwrite: bool = True) -> None:
    """Write a fitted estimator to ``path`` (a Zarr group).  See the module docstring.

    With ``overwrite=False`` an existing ``path`` is never replaced, also when it appears
    while the model is written (checked under the path's lock right before the swap):
    :class:`~ooc_kernels.exceptions.DatasetExistsError`.
    """
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(estimator, "_state")
    path = Path(expand_user(path))  # a str, bytes or os.PathLike path; '~' is the home
    arrays = {name: np.asarray(value) for name, value in estimator._fitted_arrays().items()}
    meta = _checksums.seal(model_metadata(estimator), arrays)
    # only a model of this library is ever replaced (anything else: ModelPathError)
    with atomic_dir(path, kind="model", overwrite=overwrite) as tmp:
        group = zarr.open_group(str(tmp), mode="w")
        _checksums.write_arrays(group, arrays)
        group.attrs.update({_META_KEY: meta, KIND_ATTR: "model"})


def load(path):
    """Load a model written by ``estimator.save(path)``.

    Parameters
    ----------
    path : str or os.PathLike
        The model's folder (a Zarr group).  Its arrays and metadata are verified against
        their checksums before anything is used (``docs/reliability.md``, *Verified models*).

    Returns
    -------
    estimator
        A fitted estimator of the class that saved it, with ``scheduler=None``.

    Raises
    ------
    ModelFormatError
        The path holds no model, a corrupt one, one of a newer format version, one of an
        estimator this installation does not have, or a file that sets what a model file
        may not choose (``scheduler``, ``progress``).

    Warns
    -----
    OocKernelsWarning
        The file sets a parameter of the estimator's ``_dropped_params`` (where a fit
        writes, a ``work_dir``) to a value other than None: it is ignored, the loaded model
        has None.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> import ooc_kernels as ok
    >>> X = np.random.default_rng(0).normal(size=(60, 2))
    >>> reg = ok.DSGRegressor(n_features=256, batch_size=8, max_iter=2, tol=None,
    ...                       random_state=0, scheduler="sync").fit(X, X[:, 0])
    >>> path = os.path.join(tempfile.mkdtemp(), "reg.zarr")
    >>> reg.save(path)
    >>> loaded = ok.load(path)
    >>> type(loaded).__name__, np.array_equal(loaded.predict(X), reg.predict(X))
    ('DSGRegressor', True)
    """
    path = Path(expand_user(path))  # '~/m.zarr' is in the home folder, as save writes it
    sweep_stale(path)  # a save killed part way: its leftovers go, a half-done swap is undone
    try:
        found = path.exists()
    except (OSError, ValueError) as err:  # a name too long, a NUL character
        raise ModelFormatError(f"no model at {str(path)!r}: {getattr(err, 'strerror', err)}."
                               ) from None
    if not found:
        raise ModelFormatError(f"no model at {str(path)!r}: the path does not exist.")
    # a named pipe in the folder would make zarr's read wait without end
    refuse_special_files(path, what=repr(str(path)), error=ModelFormatError, fix=_FIX)
    # metadata and arrays of one folder, also while another process saves to the path
    meta, arrays = read_consistent(path, lambda: _read_model(path))
    return restore_model(meta, arrays, where=str(path))


def _read_model(path: Path) -> tuple[dict, dict]:
    """The metadata and the verified arrays of the model folder at ``path``."""
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
    return meta, _read_model_arrays(group, meta, str(path))


_FIX = "re-save the model or restore it from a backup"


def _read_model_arrays(group, meta: dict, where: str) -> dict:
    """The arrays of a model file, verified against its checksums (format 3 on), and only
    those its family knows: an array nobody asked for is never read."""
    version = _check_version(meta, where)
    cls = _estimator_class(meta, where)
    if version >= CHECKSUMS_SINCE:
        manifest = _checksums.verify_metadata(meta, where=where, error=ModelFormatError,
                                              fix=_FIX)
        _check_array_names(cls, manifest, where)
        return _checksums.read_arrays(group, manifest, where=where, error=ModelFormatError,
                                      fix=_FIX)
    if _checksums.KEY in meta:
        raise ModelFormatError(
            f"{where} says model format {version}, which has no checksums, but carries "
            f"{_checksums.KEY!r}: the format version was edited; {_FIX}."
        )
    opened = _checksums.open_arrays(group, where=where, error=ModelFormatError, fix=_FIX)
    names = sorted(opened)
    _check_array_names(cls, names, where)
    _checksums.check_sizes(opened, where=where, error=ModelFormatError, fix=_FIX)
    try:
        return {name: np.asarray(opened[name][...]) for name in names}  # the model
    except Exception as err:
        raise ModelFormatError(
            f"{where}: an array of the model is missing or corrupt ({err}); {_FIX}."
        ) from err


def _check_array_names(cls, names, where: str) -> None:
    """Refuse arrays the family does not know and missing arrays it needs (by name only)."""
    known = cls._saved_arrays
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise ModelFormatError(
            f"{where} holds array(s) {unknown} that a {cls.__name__} model does not have "
            f"(it has {sorted(known)}); {_FIX}."
        )
    missing = sorted(name for name, required in known.items()
                     if required and name not in names)
    if missing:
        raise ModelFormatError(
            f"{where}: the array(s) {missing} of a {cls.__name__} model are missing; {_FIX}."
        )


def _check_version(meta: dict, where: str) -> int:
    version = meta.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ModelFormatError(
            f"{where}: unknown model format version {version!r}; load a folder written by "
            "estimator.save()."
        )
    if version > FORMAT_VERSION:
        raise ModelFormatError(
            f"{where} was written with model format {version} by "
            f"ooc_kernels {meta.get('library_version')}; this is ooc_kernels {__version__} "
            f"(format {FORMAT_VERSION}). Upgrade ooc_kernels to load it."
        )
    return version


def _estimator_class(meta: dict, where: str) -> type:
    name = meta.get("estimator")
    try:
        if not isinstance(name, str):
            raise RegistryError(name)
        return ESTIMATORS.get(name)
    except RegistryError:
        raise ModelFormatError(
            f"{where} holds an unknown estimator {name!r}; this installation has "
            f"{ESTIMATORS.names()}. Install the version of ooc_kernels that wrote it."
        ) from None


def _decoded_param(name, value, where: str):
    """A saved hyperparameter as the estimator takes it: the tagged form ``{"Kernel":
    terms}`` of :func:`~ooc_kernels.estimators._param_json.json_param` becomes the
    :class:`~ooc_kernels.features.Kernel`, the tagged form ``{"Mapping": [[key, type,
    value], ...]}`` the mapping with keys of their saved type."""
    if isinstance(value, dict) and set(value) == {MAPPING_TAG}:
        return decoded_mapping(name, value, where)
    if not (isinstance(value, dict) and set(value) == {"Kernel"}):
        return value
    from ooc_kernels.features.objects import Kernel
    try:
        return Kernel(value["Kernel"])
    except (ValidationError, TypeError) as err:
        raise ModelFormatError(
            f"{where}: the model file's {name}={value!r} is not a valid kernel: {err} The "
            f"file was edited or damaged; {_FIX}.") from err


def _without_dropped(cls, params: dict, where: str) -> dict:
    """``params`` without the runtime parameters that a model file may hold but never
    chooses (``cls._dropped_params``, such as a ``work_dir``): a file's value is never
    used; a value other than None is dropped with an
    :class:`~ooc_kernels.exceptions.OocKernelsWarning` naming it."""
    dropped = set(getattr(cls, "_dropped_params", ())) & set(params)
    for name in sorted(dropped):
        if params[name] is not None:
            shown = repr(params[name])
            shown = shown if len(shown) <= 200 else shown[:200] + "..."
            warnings.warn(
                f"{where}: the model file sets {name}={shown}, which a model file does not "
                "choose (where a fit writes belongs to the person running it): it is ignored "
                f"and the loaded model has {name}=None. Pass your own with "
                f"model.set_params({name}=...) before fitting; estimator.save() writes "
                "files without it.", OocKernelsWarning, stacklevel=5)  # ok.load's caller
    return {k: v for k, v in params.items() if k not in dropped}


def _construct(cls, params, where: str):
    """The estimator of a model file, built from its saved hyperparameters only.

    Where tasks run (``scheduler``) and whether bars are shown (``progress``) belong to the
    person using the model, never to the file: a file that sets them is refused (this
    library never writes them), and the loaded estimator has ``scheduler=None``.  Where a
    fit writes (``cls._dropped_params``, a ``work_dir``) belongs to that person too:
    a file's value is dropped (:func:`_without_dropped`), the loaded estimator has None.
    """
    if not isinstance(params, dict):
        raise ModelFormatError(f"{where}: 'params' must be a mapping, found {params!r}.")
    params = _without_dropped(cls, params, where)
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
    est = cls(**{k: _decoded_param(k, v, where) for k, v in params.items()})
    try:  # the constructor's validation: a file cannot hold what fit() would refuse
        est._validate_params()
    except ValidationError as err:
        raise ModelFormatError(
            f"{where}: the model file's hyperparameters are invalid: {err} The file was "
            f"edited or damaged; {_FIX}."
        ) from err
    return est


def _mapping(meta: dict, key: str, where: str, prefix: str = "") -> dict:
    value = meta.get(key)
    if not isinstance(value, dict):
        raise ModelFormatError(
            f"{where}: the metadata's {prefix}{key!r} must be a mapping, found {value!r}; "
            f"{_FIX}."
        )
    return value


def _count(base: dict, key: str, where: str, minimum: int = 0) -> int:
    value = base.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ModelFormatError(
            f"{where}: the metadata's base.{key} must be an integer >= {minimum}, found "
            f"{value!r}; {_FIX}."
        )
    return value


def _classes(spec, where: str) -> np.ndarray:
    """The class labels of a model file: at least two distinct JSON scalars, sorted (as
    ``np.unique`` gives them), of a NumPy dtype of labels."""
    def bad(why):
        return ModelFormatError(f"{where}: the metadata's base.classes {why}; {_FIX}.")

    if not isinstance(spec, dict) or not isinstance(spec.get("values"), list) \
            or not isinstance(spec.get("dtype"), str):
        raise bad(f"must be a mapping with a list 'values' and a str 'dtype', found {spec!r}")
    values = spec["values"]
    odd = [v for v in values if not isinstance(v, (str, int, float))]
    if odd:
        raise bad(f"must be labels (strings or numbers), found {odd[0]!r}")
    try:
        dtype = np.dtype(spec["dtype"])
    except TypeError:
        raise bad(f"has an unknown dtype {spec['dtype']!r}") from None
    if dtype.kind not in "biufUSO":
        raise bad(f"has dtype {spec['dtype']!r}, which is not a dtype of labels")
    try:
        classes = np.asarray(values, dtype=dtype)
        ordered = np.unique(classes)
    except (TypeError, ValueError) as err:
        raise bad(f"cannot be read as labels of dtype {spec['dtype']!r} ({err})") from None
    if classes.ndim != 1 or len(classes) < 2 or len(ordered) != len(classes) \
            or not np.array_equal(ordered, classes):
        raise bad(f"must be at least two distinct labels in sorted order, found {values!r}")
    return classes


def _check_has_classes(est, where: str) -> None:
    """A classifier has classes, a regressor none."""
    has = getattr(est, "classes_", None) is not None
    if has != bool(est._is_classifier):
        kind = "a classifier" if est._is_classifier else "a regressor"
        raise ModelFormatError(
            f"{where}: the metadata {'gives classes to' if has else 'gives no classes to'} "
            f"{type(est).__name__}, {kind}; {_FIX}."
        )


def _check_outputs(est, where: str) -> None:
    """Classes and decision columns agree: one column for two classes, else one per class."""
    if not est._is_classifier:
        return
    classes = est.classes_
    n_out, n_cls = int(est._n_outputs), len(classes)
    if not (n_out == n_cls or (n_out == 1 and n_cls == 2)):
        raise ModelFormatError(
            f"{where}: the model has {n_out} decision column(s) for {n_cls} classes "
            f"{classes.tolist()!r} (one column for two classes, else one per class); {_FIX}."
        )


def restore_model(meta: dict, arrays: dict, *, where: str = "model", estimator=None):
    """Rebuild a fitted estimator from :func:`model_metadata` and its arrays.

    With ``estimator``, its fitted state is set in place (its parameters are kept).
    """
    if not isinstance(meta, dict):
        raise ModelFormatError(f"{where}: the model metadata must be a mapping, found "
                               f"{type(meta).__name__}; {_FIX}.")
    version = _check_version(meta, where)
    cls = type(estimator) if estimator is not None else _estimator_class(meta, where)
    if version < FORMAT_VERSION:
        try:
            meta = cls._upgrade_saved(meta, version)
        except ModelFormatError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
            raise ModelFormatError(
                f"{where}: the metadata does not have the layout of model format {version} "
                f"({type(err).__name__}: {err}); {_FIX}."
            ) from err
    est = estimator if estimator is not None else \
        _construct(cls, _mapping(meta, "params", where), where)
    base = _mapping(meta, "base", where)
    fitted = _mapping(meta, "fitted", where)
    try:
        est.n_features_in_ = _count(base, "n_features_in_", where, minimum=1)
        names = base.get("feature_names_in_")
        if names is not None:
            if not isinstance(names, list) or len(names) != est.n_features_in_ \
                    or not all(isinstance(n, str) for n in names):
                raise ModelFormatError(
                    f"{where}: the metadata's base.feature_names_in_ must be "
                    f"{est.n_features_in_} strings, found {names!r}; {_FIX}."
                )
            est.feature_names_in_ = np.asarray(names, dtype=object)
        restore_feature_coords(est, base.get("feature_coords_"), est.n_features_in_, where)
        est.random_seed_ = _count(base, "random_seed_", where)
        est._data_seed = int(base["data_seed"])
        est._n_epochs_done = _count(base, "n_epochs_done", where)
        est.n_iter_ = est._n_epochs_done
        est._monitor_state = base.get("monitor")
        est.history_ = list((base.get("monitor") or {}).get("history") or [])
        if base.get("validation_chunks") is not None:
            est.validation_chunks_ = list(base["validation_chunks"])
        if base.get("shuffle_chunks") is not None:
            est.shuffle_chunks_ = _count(base, "shuffle_chunks", where, minimum=1)
        if base.get("chunks_per_round") is not None:
            est.chunks_per_round_ = _count(base, "chunks_per_round", where, minimum=1)
        if base.get("classes") is not None:
            est.classes_ = _classes(base["classes"], where)
        elif hasattr(est, "classes_"):
            del est.classes_
        _check_has_classes(est, where)
        _check_array_names(cls, arrays, where)
        est._restore_fitted(arrays, fitted, where)
        _check_outputs(est, where)
    except ModelFormatError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
        raise ModelFormatError(
            f"{where}: the model's metadata is incomplete or corrupt ({type(err).__name__}: "
            f"{err}); {_FIX}."
        ) from err
    if hasattr(est, "_model_params"):  # the parameters it was fitted with: what it keeps
        est._fitted_params = est._model_params()
    return est
