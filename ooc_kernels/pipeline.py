"""Pipeline files: a YAML description of one training job, validated before any work starts.

A pipeline has five stages, run in order: ``data`` (open the catalog entries, generating
missing datasets), ``model`` (the estimator and its hyperparameters), ``fit``, ``evaluate``
and ``save`` (model, metrics JSON and predictions).  Relative paths are resolved against
``base_dir``, itself relative to the pipeline file's folder (default: that folder).  Every
path goes through one check before any work: ``base_dir`` must lie in the pipeline file's
folder, ``data.catalog`` and ``save.output_dir`` in ``base_dir``, and the ``save`` files
strictly below ``save.output_dir`` (``..``, ``~``, absolute paths and symbolic links
resolved), unless the person running it allows more (``--data-root FOLDER``,
``--allow-outside``).

A pipeline file describes *what* to compute, never how much to trust it: the scheduler,
``trusted`` (catalog readers outside the allow-list) and ``allow_outside`` (paths outside
``base_dir`` or the catalog's folder) come from the person running it, as arguments of
:func:`run_pipeline` or flags of ``ooc-kernels run`` (``--scheduler``, ``--trusted``,
``--allow-outside``).  A file that sets ``scheduler``, ``trusted``, ``allow_outside`` (or
another key of ``_CALLER_KEYS``) at any place, e.g. ``fit.scheduler`` or
``model.params.scheduler``, is refused with a :class:`PipelineConfigError` naming the flag
to use instead.  The file is parsed without YAML aliases and with at most 100 levels of
nesting (:func:`ooc_kernels._untrusted.load_yaml`).

Numbers in ``model.params`` and ``data.generate.*.params`` (and the integer settings of a
``generate`` entry) may be written in exponent notation (``eta0: 2e5``, ``t0: 1e3``), which
YAML 1.1 reads as strings; they are read as numbers (see :mod:`ooc_kernels._params`).

Example (``pipelines/quickstart.yaml``)::

    name: quickstart
    base_dir: ..
    data:
      catalog: catalogs/examples.yaml
      train: digits_deformed
      test: digits_deformed_test
      generate:
        digits_deformed: {generator: digits_deformed, n_samples: 200000, split: train,
                          random_state: 0}
        digits_deformed_test: {generator: digits_deformed, n_samples: 20000, split: test,
                               random_state: 1}
    model:
      estimator: DSGClassifier
      params: {n_features: 8192, max_iter: 3, tol: null, chunks_per_round: 2,
               random_state: 0}
    fit: {checkpoint_every: 5, resume: true}
    evaluate: {train: false, predictions: true}   # train: true also scores the train set
    save: {output_dir: outputs/quickstart}

Examples
--------
>>> from ooc_kernels.pipeline import PipelineSpec
>>> spec = PipelineSpec.model_validate({
...     "name": "demo", "data": {"catalog": "c.yaml", "train": "a"},
...     "model": {"estimator": "DSGRegressor"}, "save": {"output_dir": "out"}})
>>> spec.model.estimator
'DSGRegressor'
"""

from __future__ import annotations

import json
import os
import shlex
import time
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError as PydanticValidationError
from pydantic import field_validator

from ooc_kernels._atomic import write_failed, write_json_atomic
from ooc_kernels._folder_pin import pin, pinning
from ooc_kernels._output_owner import (FOLDER_ID_FILE, claim_folder, folder_id,
                                       new_folder_id, owned_by, pipeline_owner)
from ooc_kernels._paths import is_path, user_path
from ooc_kernels._progress import logger, warnings_to_log
from ooc_kernels._untrusted import clip, load_yaml, short_repr
from ooc_kernels._params import coerce_numbers, parse_count, unknown_key_hint
from ooc_kernels.exceptions import DatasetExistsError, PipelineConfigError, ValidationError

__all__ = ["PipelineSpec", "load_pipeline", "run_pipeline"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


def _count(value: Any) -> int:
    """A count of a pipeline file read as the command line reads its counts
    (:func:`~ooc_kernels._params.parse_count`): a whole number written in any form (``2e5``
    and ``1_000``, which YAML 1.1 reads as strings, ``2.0e+5``); ``true`` and ``false`` are
    refused, not taken as 1 and 0."""
    if isinstance(value, float) and value == value and abs(value) != float("inf"):
        value = repr(value)   # a whole float (2.0e+5) is a count, 1.5 is refused by name
    return parse_count(value)


class GenerateSpec(_Strict):
    """How to create a missing dataset with :func:`ooc_kernels.make_dataset`."""

    generator: str
    n_samples: int = Field(gt=0)
    split: Literal["train", "test"] = "train"
    random_state: int = 0
    chunk_size: int = Field(default=10_000, gt=0)
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("n_samples", "random_state", "chunk_size", mode="before")
    @classmethod
    def _number(cls, value):
        return _count(value)

    @field_validator("params", mode="before")
    @classmethod
    def _numbers(cls, value):
        return coerce_numbers(value) if isinstance(value, dict) else value


class DataSpec(_Strict):
    """The ``data`` stage: the catalog, its entries, how to generate missing ones, and
    ``variables`` (schema variable -> store variable, e.g. ``{X: features, y: label}``)
    for entries whose metadata does not declare them (a name an entry declares otherwise
    is an error when it is opened)."""

    catalog: str
    train: str
    test: str | None = None
    generate: dict[str, GenerateSpec] = Field(default_factory=dict)
    variables: dict[str, str] | None = None

    @field_validator("variables")
    @classmethod
    def _declared(cls, value):
        from ooc_kernels.data.schema import make_declaration
        from ooc_kernels.exceptions import SchemaError

        if value is None:
            return value
        try:
            return make_declaration(value, where="data.variables")["variables"]
        except SchemaError as err:
            raise ValueError(str(err)) from None


class ModelSpec(_Strict):
    estimator: str
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("estimator")
    @classmethod
    def _registered(cls, value):
        from ooc_kernels.estimators._registry import ESTIMATORS

        if value not in ESTIMATORS:
            raise ValueError(f"unknown estimator; registered: {', '.join(ESTIMATORS.names())}")
        return value

    @field_validator("params", mode="before")
    @classmethod
    def _numbers(cls, value):
        return coerce_numbers(value) if isinstance(value, dict) else value


class FitSpec(_Strict):
    checkpoint_every: int = Field(default=5, gt=0)
    resume: bool = True

    @field_validator("checkpoint_every", mode="before")
    @classmethod
    def _number(cls, value):
        return _count(value)


class EvaluateSpec(_Strict):
    """What the ``evaluate`` stage computes: test metrics always (with ``data.test``),
    training-set metrics only with ``train: true`` (one more pass over the training set),
    the test set's predictions with ``predictions: true`` (the default)."""

    train: bool = False
    predictions: bool = True


class SaveSpec(_Strict):
    output_dir: str
    model: str = "model.zarr"
    metrics: str = "metrics.json"
    predictions: str = "predictions.zarr"
    checkpoint: str = "checkpoint.zarr"


class PipelineSpec(_Strict):
    """The validated content of a pipeline YAML file."""

    name: str
    base_dir: str = "."
    data: DataSpec
    model: ModelSpec
    fit: FitSpec = Field(default_factory=FitSpec)
    evaluate: EvaluateSpec = Field(default_factory=EvaluateSpec)
    save: SaveSpec


#: Keys that no pipeline file may set, at any place in it (``fit.scheduler``,
#: ``model.params.scheduler``, ``data.trusted`` ...): trust, the allowed folders and where
#: tasks run come from the person running the command.  ``key -> (command-line flag,
#: run_pipeline argument)``.
_CALLER_KEYS = {
    "scheduler": ("--scheduler NAME_OR_ADDRESS", "scheduler=..."),
    "scheduler_file": ("--scheduler-file PATH", "scheduler=distributed.Client(...)"),
    "tls_ca_file": ("--tls-ca-file PEM", "scheduler=distributed.Client(..., security=...)"),
    "tls_cert": ("--tls-cert PEM", "scheduler=distributed.Client(..., security=...)"),
    "tls_key": ("--tls-key PEM", "scheduler=distributed.Client(..., security=...)"),
    "security": ("--tls-ca-file/--tls-cert/--tls-key",
                 "scheduler=distributed.Client(..., security=...)"),
    "trusted": ("--trusted", "trusted=True"),
    "allow_outside": ("--allow-outside", "allow_outside=True"),
    "data_root": ("--data-root PATH", "allow_outside=[PATH]"),
    "allow_env": ("--allow-env NAME", "allow_env=[NAME]"),
    "progress": ("--quiet", "progress=False"),
}


def _caller_keys(raw: Any, where: tuple = ()) -> list[str]:
    """One message per place where the raw pipeline sets a key of ``_CALLER_KEYS``."""
    found = []
    if isinstance(raw, dict):
        for key, value in raw.items():
            if key in _CALLER_KEYS:
                flag, argument = _CALLER_KEYS[key]
                name = ".".join(map(str, (*where, key)))
                found.append(
                    f"key '{name}' (= {short_repr(value)}) cannot be set in a pipeline file: "
                    "trust, the folders it may use and where tasks run come from the person "
                    f"running the command, not from the file; remove it and pass {flag} to "
                    f"`ooc-kernels run` ({argument} to run_pipeline) instead"
                )
            else:
                found += _caller_keys(value, (*where, key))
    elif isinstance(raw, list):
        for i, value in enumerate(raw):
            found += _caller_keys(value, (*where, i))
    return found


def _format_errors(path: str, err: PydanticValidationError) -> str:
    lines = []
    errors = err.errors()
    for e in errors[:10]:
        loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
        if e["type"] == "extra_forbidden":
            lines.append(f"unknown key '{clip(loc)}': remove it or check its "
                         "spelling")
        elif e["type"] == "missing":
            lines.append(f"missing key '{loc}': it is required")
        else:
            lines.append(f"key '{clip(loc)}': {clip(e['msg'], 500)} "
                         f"(got {short_repr(e.get('input'))})")
    if len(errors) > 10:
        lines.append(f"and {len(errors) - 10} more")
    return f"invalid pipeline {path}: " + "; ".join(lines)


def load_pipeline(path: str | os.PathLike) -> tuple[PipelineSpec, Path]:
    """Read and validate a pipeline file.  Returns the spec and its resolved base folder.

    Raises
    ------
    PipelineConfigError
        Unreadable file, not UTF-8, invalid YAML, a YAML alias, a key set twice in one
        mapping or nesting deeper than 100 levels,
        unknown key, wrong type or missing value; a key that only the person running the
        pipeline sets (``scheduler``, ``trusted``, ``allow_outside`` ... anywhere, e.g.
        ``model.params.scheduler``: the message names the flag to pass instead); an unknown
        hyperparameter (the message suggests the closest valid one).  The returned base
        folder is not checked here: :func:`run_pipeline` checks every path.
    """
    path = user_path(path, "the pipeline path")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise PipelineConfigError(f"cannot read pipeline {str(path)!r}: {err.strerror}.") \
            from err
    except UnicodeDecodeError as err:
        raise PipelineConfigError(
            f"pipeline {str(path)!r} is not UTF-8 text (byte {err.start}: {err.reason}); "
            "save it as UTF-8.") from None
    try:
        raw = load_yaml(text, source=f"pipeline {str(path)!r}", error=PipelineConfigError)
    except yaml.YAMLError as err:
        raise PipelineConfigError(f"pipeline {str(path)!r} is not valid YAML: {err}") from None
    if not isinstance(raw, dict):
        raise PipelineConfigError(
            f"pipeline {str(path)!r} must be a mapping with keys name, data, model, fit, "
            f"evaluate, save; got {type(raw).__name__}."
        )
    removed = _caller_keys(raw)
    if removed:
        raise PipelineConfigError(f"invalid pipeline {path}: " + "; ".join(removed[:10]) + ".")
    try:
        spec = PipelineSpec.model_validate(raw)
    except PydanticValidationError as err:
        raise PipelineConfigError(_format_errors(str(path), err)) from None
    # Hyperparameters are checked by building the estimator now, before any work.
    _build_estimator(spec, validate_only=True, where=str(path))
    base = (path.parent / spec.base_dir).resolve()
    return spec, base


def _check_fits_and_scores(cls, spec: PipelineSpec, where: str) -> None:
    """Refuse, before any work, an estimator that the fit stage cannot fit (two samples)
    or that the evaluate stage would be asked to score without metrics for it."""
    from ooc_kernels.evaluation import scored_task

    name = spec.model.estimator
    if cls.capabilities.inputs == "two_sample":
        raise PipelineConfigError(
            f"invalid pipeline {where}: model.estimator {name} learns from two samples, "
            f"fit(X_p, X_q), and a pipeline fits one training entry (data.train); use it "
            f"from Python: ok.{name}().fit(X_p, X_q), each sample opened with "
            "ok.open_dataset(catalog, entry).")
    if spec.data.test or spec.evaluate.train:
        try:
            scored_task(cls)
        except ValidationError as err:
            raise PipelineConfigError(
                f"invalid pipeline {where}: model.estimator: {err} To fit and save it "
                "without scores, drop data.test and leave evaluate.train false.") from None


def _build_estimator(spec: PipelineSpec, *, validate_only: bool = False, where: str = ""):
    from ooc_kernels.estimators._registry import get_estimator

    cls = get_estimator(spec.model.estimator)
    _check_fits_and_scores(cls, spec, where)
    valid = set(cls().get_params())
    unknown = sorted(set(spec.model.params) - valid)
    if unknown:
        raise PipelineConfigError(
            f"invalid pipeline {where}: unknown key 'model.params.{clip(unknown[0])}' "
            f"for {spec.model.estimator}; {clip(unknown_key_hint(unknown[0], valid), 500)}."
        )
    est = cls(**spec.model.params)
    try:
        est._validate_params()
    except ValueError as err:
        raise PipelineConfigError(
            f"invalid pipeline {where}: model.params: {clip(err, 1000)}"
        ) from err
    return None if validate_only else est


def _allowed_folders(allow_outside: Any) -> list[Path]:
    """The extra folders of an ``allow_outside`` value other than ``True``."""
    if allow_outside is False or allow_outside is None:
        return []
    if is_path(allow_outside):
        allow_outside = [allow_outside]
    try:
        return [user_path(f).resolve() for f in allow_outside]
    except TypeError:
        raise ValidationError(
            f"allow_outside must be True, False, a folder or a list of folders, got "
            f"{allow_outside!r}."
        ) from None


def _resolve(folder: Path, p: str, *, allow_outside: Any = False, key: str = "",
             within: str = "base_dir", strict: bool = False, output: bool = False) -> Path:
    """The one check of every path a pipeline reads or writes: ``p`` relative to
    ``folder`` must lie inside ``folder`` (``..``, absolute paths, ``~`` and symbolic links
    resolved) unless the caller passes ``allow_outside`` (True, or folders it may lie in
    as well).  ``strict``: it must lie *below* ``folder``, not be ``folder`` itself.  The
    result is resolved, so a link changed later does not move it; for an ``output`` file
    or store, all but its last part: a link at the output itself is kept, to be refused
    (never written through)."""
    if not p.strip() or "\0" in p:
        raise PipelineConfigError(
            f"pipeline key {key!r} = {short_repr(p)} is not a usable path; write a relative "
            f"path such as 'outputs/run1'."
        )
    q = Path(p).expanduser()
    full = q if q.is_absolute() else folder / q
    if output and full.name not in ("", ".", ".."):
        out = full.parent.resolve() / full.name
    else:
        out = full.resolve()
    if allow_outside is True:
        return out
    roots = [folder.resolve(), *_allowed_folders(allow_outside)]
    inside = any(out.is_relative_to(root) for root in roots)
    if not inside or (strict and out == folder.resolve()):
        where = "outside" if not inside else "equal to"
        raise PipelineConfigError(
            f"pipeline key {key!r} = {short_repr(p)} resolves to {short_repr(str(out))}, "
            f"{where} {within} {str(folder)!r}; use a path inside {within}, or, if you trust "
            f"this pipeline, pass --data-root {clip(out.parent, 500)} or --allow-outside to "
            "`ooc-kernels run` (allow_outside=[folder] or allow_outside=True to run_pipeline)."
        )
    return out


def _paths(spec: PipelineSpec, path: Path, allow_outside: Any) -> dict[str, Path]:
    """Every path the pipeline reads or writes, each through :func:`_resolve`, before any
    work: ``base_dir`` inside the pipeline file's folder, ``data.catalog`` and
    ``save.output_dir`` inside ``base_dir``, the ``save`` files below ``output_dir`` and
    apart from each other."""
    home = path.absolute().parent
    base = _resolve(home, spec.base_dir, allow_outside=allow_outside, key="base_dir",
                    within="the pipeline file's folder")
    out = {"base_dir": base,
           "data.catalog": _resolve(base, spec.data.catalog, allow_outside=allow_outside,
                                    key="data.catalog"),
           "save.output_dir": _resolve(base, spec.save.output_dir,
                                       allow_outside=allow_outside, key="save.output_dir")}
    _check_not_in_store(spec, out["save.output_dir"], base)
    seen: dict[Path, str] = {}
    for name in ("model", "metrics", "predictions", "checkpoint"):
        key = f"save.{name}"
        target = _resolve(out["save.output_dir"], getattr(spec.save, name),
                          allow_outside=allow_outside, key=key, within="save.output_dir",
                          strict=True, output=True)
        if target.is_symlink():
            raise PipelineConfigError(
                f"pipeline key {key!r} = {short_repr(getattr(spec.save, name))} is a symbolic "
                f"link (to {short_repr(os.readlink(target))}); an output that is a link is "
                "never followed, replaced or removed: remove the link yourself or give the "
                "output another name in save.output_dir."
            )
        for other, other_key in seen.items():
            if target == other or target.is_relative_to(other) or other.is_relative_to(target):
                raise PipelineConfigError(
                    f"pipeline keys {other_key!r} ({short_repr(str(other))}) and {key!r} "
                    f"({short_repr(str(target))}) are the same path or nested in one "
                    "another, so writing one would replace the other; give each output its "
                    "own name in save.output_dir."
                )
        if target == out["save.output_dir"] / FOLDER_ID_FILE:
            raise PipelineConfigError(
                f"pipeline key {key!r} = {short_repr(getattr(spec.save, name))} is the file "
                f"that holds the output folder's id ({FOLDER_ID_FILE}); give the output "
                "another name in save.output_dir."
            )
        seen[target] = key
        out[key] = target
    return out


#: Files that make a folder a Zarr store (format 3, and format 2 groups and arrays).
_STORE_MARKERS = ("zarr.json", ".zgroup", ".zarray")


def _check_not_in_store(spec: PipelineSpec, out_dir: Path, base: Path) -> None:
    """Refuse a ``save.output_dir`` that is, or lies inside, a Zarr store (a dataset, a
    model, a checkpoint ...): the outputs would be written into that store, and go with it
    when it is rewritten (``data make --overwrite``) or removed."""
    for folder in (out_dir, *out_dir.parents):
        if any((folder / marker).is_file() for marker in _STORE_MARKERS):
            raise PipelineConfigError(
                f"pipeline key 'save.output_dir' = {short_repr(spec.save.output_dir)} "
                f"resolves to {short_repr(str(out_dir))}, "
                f"{'which is' if folder == out_dir else 'inside'} the Zarr store "
                f"{short_repr(str(folder))}; the model, predictions, checkpoint and metrics "
                "would be written into that store and go with it when it is rewritten or "
                "removed: choose an output folder outside every store, e.g. 'outputs/run1'."
            )
        if folder == base:
            return


def _make_command(entry: str, gen: GenerateSpec, catalog: Path, store: Path) -> str:
    """The ``ooc-kernels data make`` command that writes ``gen`` to ``store`` and adds it to
    ``catalog`` as ``entry``, quoted for a POSIX shell."""
    words = ["ooc-kernels", "data", "make", gen.generator, "--n", str(gen.n_samples),
             "--split", gen.split, "--seed", str(gen.random_state), "--chunk-size",
             str(gen.chunk_size)]
    for key, value in gen.params.items():
        words += ["-p", f"{key}={json.dumps(value)}"]
    words += ["--out", str(store), "--catalog", str(catalog), "--entry", entry]
    return "`" + " ".join(shlex.quote(w) for w in words) + "`"


def _ensure_datasets(spec: PipelineSpec, catalog: Path, progress, where: dict) -> None:
    """Generate every catalog entry named under ``data.generate`` whose store is missing.

    A catalog file that does not exist is created listing these entries, each in
    ``data/ENTRY.zarr`` next to it.  A catalog that exists is never rewritten: an entry it
    lacks is a :class:`PipelineConfigError` giving the ``ooc-kernels data make`` command
    that adds it.

    An existing store is kept when it is the dataset its entry describes (generator,
    parameters, seed, split, size, chunk size: ``make_dataset(..., exist_ok=True)``), and
    refused otherwise: a pipeline never trains on, or replaces, another dataset.
    """
    from ooc_kernels.data.catalog import create_catalog, entry_path
    from ooc_kernels.data.generators import make_dataset
    from ooc_kernels.exceptions import UnknownEntryError

    stores = {entry: catalog.parent / "data" / f"{entry}.zarr" for entry in spec.data.generate}
    if stores and create_catalog(catalog, stores):  # only where no file is
        logger.info("pipeline %s: created the catalog %s with the entries %s", spec.name,
                    catalog, ", ".join(stores))
    for entry, gen in spec.data.generate.items():
        try:
            store = entry_path(catalog, entry, **where)
        except UnknownEntryError:
            raise PipelineConfigError(
                f"pipeline key 'data.generate.{entry}': the catalog {str(catalog)!r} exists "
                f"and has no entry {short_repr(entry)}, and a pipeline never rewrites a "
                f"catalog that exists; to add the entry and write its data, run "
                f"{_make_command(entry, gen, catalog, stores[entry])} (or add a store you "
                f"have with `ooc-kernels catalog add {shlex.quote(str(catalog))} "
                f"{shlex.quote(entry)} STORE`), then run the pipeline again"
            ) from None
        try:  # an existing store is kept only when it is the dataset the entry describes
            make_dataset(gen.generator, store, gen.n_samples, chunk_size=gen.chunk_size,
                         random_state=gen.random_state, split=gen.split, progress=progress,
                         exist_ok=True, **gen.params)
        except DatasetExistsError as err:
            if not hasattr(err, "differences"):
                raise
            raise PipelineConfigError(
                f"pipeline key 'data.generate.{entry}' describes a dataset that the store "
                f"{str(store)!r} does not hold ({'; '.join(err.differences)}); a pipeline "
                "never replaces a dataset: delete that store to generate it again, or change "
                f"data.generate.{entry} to match it."
            ) from None


def run_pipeline(path: str | os.PathLike, *, scheduler: Any = None, trusted: bool = False,
                 allow_outside: Any = False, allow_env: Any = (),
                 progress: bool | None = None, adopt_outputs: bool = False) -> dict:
    """Run a pipeline file end to end and return its metrics.

    Writes ``model.zarr``, ``metrics.json`` and (with ``evaluate.predictions``)
    ``predictions.zarr`` into ``save.output_dir``, each atomically, each recording the
    pipeline that wrote it (its name and the id of its output folder, kept in the folder's
    ``.ooc_kernels_output_folder.json``, so a project copied or moved as a whole keeps its
    outputs).  A run replaces only what runs of the same pipeline wrote there: a model saved
    by hand (``est.save``), another pipeline's output, an output copied from another output
    folder or one that records no pipeline at one of these paths (or at the checkpoint's) is
    refused before any work, unless ``adopt_outputs`` takes it.  The ``evaluate`` stage
    scores the test set, and the training set only with ``evaluate.train: true``.  Each
    stage writes a line to the ``ooc_kernels`` logger (INFO), the fit one per epoch, and
    scoring and predictions their progress when no bar is shown: ``ooc-kernels run``
    shows them on standard error when that is not a terminal.  The fit writes
    ``checkpoint.zarr`` there every ``fit.checkpoint_every`` rounds; with ``fit.resume``
    (the default) running the same pipeline again continues from it and gives exactly the
    model of an uninterrupted run.

    Parameters
    ----------
    path : str or path-like
        The pipeline YAML file.
    scheduler : None, str or distributed.Client, optional
        Where tasks run: ``"sync"``, ``"threads"``, ``"processes"``, a ``tcp://`` or
        ``tls://`` address, or a connected ``Client`` (used as is).  ``None`` (default)
        leaves Dask's configuration alone: Dask's default threaded scheduler, or the
        ``distributed.Client`` already created in this process.
    trusted : bool, default False
        Open the pipeline's catalog even if it uses readers outside the allow-list (see
        ``docs/security.md``).  Only for catalogs you trust.
    allow_outside : bool, folder or list of folders, default False
        Let the pipeline's ``base_dir`` leave the pipeline file's folder, its other paths
        (``data.catalog``, ``save.output_dir``, the ``save`` files) leave their folder, and
        the catalog's entries read data outside the catalog's folder: ``True`` anywhere,
        folders only there.  Only for pipelines and catalogs you trust.
    allow_env : str or sequence of str, default ()
        Environment variables the catalog's ``{env(NAME)}`` templates may read (an
        untrusted catalog reads none; see ``docs/security.md``).
    progress : bool, optional
        Progress bars (default: on a terminal or in a notebook); ``False`` also silences
        the per-epoch and progress log lines.
    adopt_outputs : bool, default False
        Take the outputs found at this pipeline's output paths as its own when they record
        no pipeline (written by an ooc_kernels version that records none, or saved by hand)
        or a pipeline of the same name (copied from another output folder): the fit resumes
        from such a checkpoint and the run replaces them.  An output of a pipeline with
        another name is refused all the same.  Only when asked (``ooc-kernels run
        --adopt-outputs``); the refusals name it where it applies.

    Returns
    -------
    dict
        The metrics (also written to ``save.metrics`` as JSON), and under ``outputs`` the
        paths written: ``model``, ``metrics`` and (when written) ``predictions``.

    Raises
    ------
    PipelineConfigError
        Invalid pipeline file, or a path outside its folder without ``allow_outside``
        (both before any work).
    ForeignPathError
        An output path holds something this pipeline's runs did not write (before any
        work; :class:`~ooc_kernels.exceptions.ModelPathError` for the model), or the
        output folder's id file is not one.
    KeyboardInterrupt
        Re-raised on interruption with a note (``err.__notes__``) saying how to continue:
        running the same pipeline again resumes from the last checkpoint.
    """
    from ooc_kernels.parallel.scheduler import scheduler_context

    spec, _ = load_pipeline(path)
    paths = _paths(spec, user_path(path, "the pipeline path"), allow_outside)
    where = dict(trusted=trusted, allow_outside=allow_outside, allow_env=allow_env)
    # its outputs record this pipeline and its output folder's id (a new one, written after
    # the checks, when the folder has none), and a run replaces only what its own runs wrote
    out_dir = paths["save.output_dir"]
    owner = pipeline_owner(spec.name, folder_id(out_dir) or new_folder_id())
    outputs = [paths[f"save.{name}"] for name in _OUTPUTS]
    # pinning: the output folder, pinned once claimed, is checked at every write (never
    # written through if it is swapped for a link during the run)
    with owned_by(owner, outputs, folder=out_dir, adopt=adopt_outputs), pinning():
        try:
            with scheduler_context(scheduler):
                metrics = _run(spec, paths, where, progress)
        except KeyboardInterrupt as err:
            err.add_note(_interrupted_note(spec, paths["save.checkpoint"]))
            raise
        # a re-run replaces only its own metrics file (checked before any work too)
        write_json_atomic(paths["save.metrics"], metrics, kind="metrics", overwrite=True)
    logger.info("pipeline %s: saved the metrics to %s", spec.name, paths["save.metrics"])
    return metrics


#: The files a run writes in ``save.output_dir`` (keys of ``save``).
_OUTPUTS = ("model", "metrics", "predictions", "checkpoint")


def _interrupted_note(spec: PipelineSpec, checkpoint: Path) -> str:
    """One line telling how to continue an interrupted pipeline run."""
    if not spec.fit.resume:
        return (f"interrupted: this pipeline sets fit.resume: false, so running it again "
                f"starts the fit over; set fit.resume: true to continue from the checkpoint "
                f"{str(checkpoint)!r} instead")
    if checkpoint.exists():
        return (f"interrupted: re-running the same command resumes from the last "
                f"checkpoint, {str(checkpoint)!r}")
    return (f"interrupted before the first checkpoint ({str(checkpoint)!r}) was written: "
            "re-running the same command starts the fit again (generated datasets are kept)")


def _run(spec: PipelineSpec, paths: dict[str, Path], where: dict,
         progress: bool | None) -> dict:
    """The stages of :func:`run_pipeline` after validation (inside its scheduler context);
    ``paths``: what :func:`_paths` checked."""
    from ooc_kernels.data.catalog import open_dataset
    from ooc_kernels.data.schema import sample_dim
    from ooc_kernels._atomic import check_replaceable, check_replaceable_file
    from ooc_kernels.evaluation import evaluate, write_predictions
    from sklearn.exceptions import ConvergenceWarning

    catalog, out_dir = paths["data.catalog"], paths["save.output_dir"]
    # before any work: a re-run replaces only its own model, checkpoint, metrics file and
    # prediction store, never what someone else wrote there (_output_owner)
    check_replaceable(paths["save.model"], "model")
    check_replaceable(paths["save.checkpoint"], "checkpoint")
    check_replaceable_file(paths["save.metrics"], "metrics")
    if spec.data.test and spec.evaluate.predictions:
        check_replaceable(paths["save.predictions"], "predictions")
    try:
        claim_folder(out_dir)  # the folder's id, which its outputs record
    except OSError as err:     # a full disk, a read-only folder: the library's error
        failed = write_failed(err, out_dir / FOLDER_ID_FILE, "output folder's id file", False)
        if failed is err:
            raise
        raise failed from err
    pin(out_dir)
    logger.info("pipeline %s: data stage (catalog %s)", spec.name, catalog)
    _ensure_datasets(spec, catalog, progress, where)
    train = open_dataset(catalog, spec.data.train, variables=spec.data.variables, **where)
    test = open_dataset(catalog, spec.data.test, variables=spec.data.variables, **where) \
        if spec.data.test else None
    for role, entry, ds in (("train", spec.data.train, train), ("test", spec.data.test, test)):
        if ds is not None:
            logger.info("pipeline %s: %s set %r: %d rows", spec.name, role, entry,
                        ds.sizes[sample_dim(ds)])
    est = _build_estimator(spec)
    est.set_params(progress=progress)
    logger.info("pipeline %s: fit stage, %s(%s)", spec.name, spec.model.estimator,
                ", ".join(f"{k}={v!r}" for k, v in spec.model.params.items()))
    t0 = time.perf_counter()
    # a fit that stops at max_iter before its tol says so in one log line (WARNING)
    with warnings_to_log(ConvergenceWarning, f"pipeline {spec.name}: "):
        est.fit(train, checkpoint=paths["save.checkpoint"],
                checkpoint_every=spec.fit.checkpoint_every,
                resume=spec.fit.resume)
    fit_seconds = time.perf_counter() - t0
    logger.info("pipeline %s: fit done in %.1f s", spec.name, fit_seconds)
    est.save(paths["save.model"])
    logger.info("pipeline %s: saved the model to %s", spec.name, paths["save.model"])
    metrics = {"pipeline": spec.name, "estimator": spec.model.estimator,
               "n_train": int(train.sizes[sample_dim(train)]),
               "fit_seconds": round(fit_seconds, 3)}
    outputs = {"model": str(paths["save.model"]), "metrics": str(paths["save.metrics"])}
    if spec.evaluate.train:
        logger.info("pipeline %s: evaluate stage, scoring the training set", spec.name)
        metrics.update({f"train_{k}": v for k, v in
                        evaluate(est, train, progress=progress, desc="score train").items()})
    if test is not None:
        logger.info("pipeline %s: evaluate stage, scoring the test set", spec.name)
        metrics["n_test"] = int(test.sizes[sample_dim(test)])
        metrics.update({f"test_{k}": v for k, v in
                        evaluate(est, test, progress=progress, desc="score test").items()})
        if spec.evaluate.predictions:
            # a re-run replaces its own prediction store (never anything else)
            write_predictions(est, test, paths["save.predictions"], overwrite=True,
                              progress=progress, desc="predictions test")
            outputs["predictions"] = str(paths["save.predictions"])
            logger.info("pipeline %s: saved the test set's predictions to %s", spec.name,
                        paths["save.predictions"])
    metrics["outputs"] = outputs
    return metrics
