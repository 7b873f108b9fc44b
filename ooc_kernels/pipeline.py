"""Pipeline files: a YAML description of one training job, validated before any work starts.

A pipeline has five stages, run in order: ``data`` (open the catalog entries, generating
missing datasets), ``model`` (the estimator and its hyperparameters), ``fit``, ``evaluate``
and ``save`` (model, metrics JSON and predictions).  Relative paths are resolved against
``base_dir``, itself relative to the pipeline file's folder (default: that folder).

A pipeline file describes *what* to compute, never how much to trust it: the scheduler,
``trusted`` (catalog readers outside the allow-list) and ``allow_outside`` (paths outside
``base_dir`` or the catalog's folder) come from the person running it, as arguments of
:func:`run_pipeline` or flags of ``ooc-kernels run`` (``--scheduler``, ``--trusted``,
``--allow-outside``).  A file that still sets ``fit.scheduler``, ``data.trusted``,
``data.allow_outside`` or ``allow_outside`` is refused with a :class:`PipelineConfigError`
naming the flag to use instead.

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
        digits_deformed: {generator: digits_deformed, n_samples: 200000, split: train}
        digits_deformed_test: {generator: digits_deformed, n_samples: 20000, split: test}
    model:
      estimator: DSGClassifier
      params: {loss: logistic, n_features: 8192, random_state: 0}
    fit: {checkpoint_every: 5, resume: true}
    evaluate: {predictions: true}
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
import time
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError as PydanticValidationError
from pydantic import field_validator

from ooc_kernels._atomic import write_text_atomic
from ooc_kernels._params import coerce_number, coerce_numbers, unknown_key_hint
from ooc_kernels.exceptions import PipelineConfigError, ValidationError

__all__ = ["PipelineSpec", "load_pipeline", "run_pipeline"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


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
        return coerce_number(value)  # 2e5 as written in YAML (read as a string by YAML 1.1)

    @field_validator("params", mode="before")
    @classmethod
    def _numbers(cls, value):
        return coerce_numbers(value) if isinstance(value, dict) else value


class DataSpec(_Strict):
    catalog: str
    train: str
    test: str | None = None
    generate: dict[str, GenerateSpec] = Field(default_factory=dict)


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


class EvaluateSpec(_Strict):
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


#: Keys that pipeline files no longer set: trust and schedulers come from the person running
#: the command.  ``key path -> (command-line flag, run_pipeline argument)``.
_REMOVED_KEYS = {
    ("allow_outside",): ("--allow-outside", "allow_outside=True"),
    ("data", "trusted"): ("--trusted", "trusted=True"),
    ("data", "allow_outside"): ("--allow-outside", "allow_outside=True"),
    ("fit", "scheduler"): ("--scheduler NAME_OR_ADDRESS", "scheduler=..."),
}


def _removed_keys(raw: dict) -> list[str]:
    """One message per key of ``_REMOVED_KEYS`` that the raw pipeline mapping sets."""
    found = []
    for keys, (flag, argument) in _REMOVED_KEYS.items():
        node = raw
        for k in keys[:-1]:
            node = node.get(k) if isinstance(node, dict) else None
        if isinstance(node, dict) and keys[-1] in node:
            name = ".".join(keys)
            found.append(
                f"key '{name}' (= {node[keys[-1]]!r}) is no longer read from pipeline files: "
                "trust and schedulers come from the person running the command, not from "
                f"the file; remove it and pass {flag} to `ooc-kernels run` ({argument} to "
                "run_pipeline) instead"
            )
    return found


def _format_errors(path: str, err: PydanticValidationError) -> str:
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
        if e["type"] == "extra_forbidden":
            lines.append(f"unknown key '{loc}': remove it or check its spelling")
        elif e["type"] == "missing":
            lines.append(f"missing key '{loc}': it is required")
        else:
            lines.append(f"key '{loc}': {e['msg']} (got {e.get('input')!r})")
    return f"invalid pipeline {path}: " + "; ".join(lines)


def load_pipeline(path: str | os.PathLike) -> tuple[PipelineSpec, Path]:
    """Read and validate a pipeline file.  Returns the spec and its resolved base folder.

    Raises
    ------
    PipelineConfigError
        Unreadable file, invalid YAML, unknown key, wrong type or missing value; a key
        that pipeline files no longer set (``fit.scheduler``, ``data.trusted``,
        ``data.allow_outside``, ``allow_outside``: the message names the flag to pass
        instead); an unknown hyperparameter (the message suggests the closest valid one).
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise PipelineConfigError(f"cannot read pipeline {str(path)!r}: {err.strerror}.") \
            from err
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise PipelineConfigError(f"pipeline {str(path)!r} is not valid YAML: {err}") from err
    if not isinstance(raw, dict):
        raise PipelineConfigError(
            f"pipeline {str(path)!r} must be a mapping with keys name, data, model, fit, "
            f"evaluate, save; got {type(raw).__name__}."
        )
    removed = _removed_keys(raw)
    if removed:
        raise PipelineConfigError(f"invalid pipeline {path}: " + "; ".join(removed) + ".")
    try:
        spec = PipelineSpec.model_validate(raw)
    except PydanticValidationError as err:
        raise PipelineConfigError(_format_errors(str(path), err)) from None
    # Hyperparameters are checked by building the estimator now, before any work.
    _build_estimator(spec, validate_only=True, where=str(path))
    base = (path.parent / spec.base_dir).resolve()
    return spec, base


def _build_estimator(spec: PipelineSpec, *, validate_only: bool = False, where: str = ""):
    from ooc_kernels.estimators._registry import get_estimator

    cls = get_estimator(spec.model.estimator)
    valid = set(cls().get_params())
    unknown = sorted(set(spec.model.params) - valid)
    if unknown:
        raise PipelineConfigError(
            f"invalid pipeline {where}: unknown key 'model.params.{unknown[0]}' for "
            f"{spec.model.estimator}; {unknown_key_hint(unknown[0], valid)}."
        )
    est = cls(**spec.model.params)
    try:
        est._validate_params()
    except ValueError as err:
        raise PipelineConfigError(f"invalid pipeline {where}: model.params: {err}") from err
    return None if validate_only else est


def _allowed_folders(allow_outside: Any) -> list[Path]:
    """The extra folders of an ``allow_outside`` value other than ``True``."""
    if allow_outside is False or allow_outside is None:
        return []
    if isinstance(allow_outside, (str, os.PathLike)):
        allow_outside = [allow_outside]
    try:
        return [Path(os.fspath(f)).expanduser().resolve() for f in allow_outside]
    except TypeError:
        raise ValidationError(
            f"allow_outside must be True, False, a folder or a list of folders, got "
            f"{allow_outside!r}."
        ) from None


def _resolve(base: Path, p: str, *, allow_outside: Any = False, key: str = "") -> Path:
    """``p`` relative to ``base``; a path leaving ``base`` (``..``, absolute, symlink) is
    refused unless the caller passes ``allow_outside`` (True, or folders it may lie in)."""
    q = Path(p).expanduser()
    out = q if q.is_absolute() else base / q
    if allow_outside is True:
        return out
    roots = [base.resolve(), *_allowed_folders(allow_outside)]
    if not any(out.resolve().is_relative_to(root) for root in roots):
        raise PipelineConfigError(
            f"pipeline key {key!r} = {p!r} resolves to {str(out.resolve())!r}, outside "
            f"base_dir {str(base)!r}; use a path inside base_dir, or, if you trust this "
            "pipeline, pass --allow-outside to `ooc-kernels run` (allow_outside=True or a "
            "list of folders to run_pipeline)."
        )
    return out


def _ensure_datasets(spec: PipelineSpec, base: Path, catalog: Path, progress,
                     where: dict) -> None:
    """Generate every catalog entry named under ``data.generate`` whose store is missing."""
    from ooc_kernels.data.catalog import entry_path
    from ooc_kernels.data.generators import make_dataset

    for entry, gen in spec.data.generate.items():
        store = entry_path(catalog, entry, **where)
        if store.exists():
            continue
        make_dataset(gen.generator, store, gen.n_samples, chunk_size=gen.chunk_size,
                     random_state=gen.random_state, split=gen.split, progress=progress,
                     **gen.params)


def run_pipeline(path: str | os.PathLike, *, scheduler: Any = None, trusted: bool = False,
                 allow_outside: Any = False, allow_env: Any = (),
                 progress: bool | None = None) -> dict:
    """Run a pipeline file end to end and return its metrics.

    Writes ``model.zarr``, ``metrics.json`` and (with ``evaluate.predictions``)
    ``predictions.zarr`` into ``save.output_dir``, each atomically.  The fit writes
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
        Let the pipeline's paths (``data.catalog``, ``save.output_dir``) leave ``base_dir``
        and the catalog's entries read data outside the catalog's folder: ``True`` anywhere,
        folders only there.  Only for pipelines and catalogs you trust.
    allow_env : str or sequence of str, default ()
        Environment variables the catalog's ``{env(NAME)}`` templates may read (an
        untrusted catalog reads none; see ``docs/security.md``).
    progress : bool, optional
        Progress bars (default: on a terminal or in a notebook).

    Returns
    -------
    dict
        The metrics (also written to ``save.metrics`` as JSON).

    Raises
    ------
    PipelineConfigError
        Invalid pipeline file (before any work), or a path outside ``base_dir`` without
        ``allow_outside``.
    KeyboardInterrupt
        Re-raised on interruption with a note (``err.__notes__``) saying how to continue:
        running the same pipeline again resumes from the last checkpoint.
    """
    from ooc_kernels.parallel.scheduler import scheduler_context

    spec, base = load_pipeline(path)
    catalog = _resolve(base, spec.data.catalog, allow_outside=allow_outside,
                       key="data.catalog")
    out_dir = _resolve(base, spec.save.output_dir, allow_outside=allow_outside,
                       key="save.output_dir")
    where = dict(trusted=trusted, allow_outside=allow_outside, allow_env=allow_env)
    checkpoint = out_dir / spec.save.checkpoint
    try:
        with scheduler_context(scheduler):
            metrics = _run(spec, base, catalog, out_dir, checkpoint, where, progress)
    except KeyboardInterrupt as err:
        err.add_note(_interrupted_note(spec, checkpoint))
        raise
    write_text_atomic(out_dir / spec.save.metrics,
                      json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    return metrics


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


def _run(spec: PipelineSpec, base: Path, catalog: Path, out_dir: Path, checkpoint: Path,
         where: dict, progress: bool | None) -> dict:
    """The stages of :func:`run_pipeline` after validation (inside its scheduler context)."""
    from ooc_kernels.data.catalog import open_dataset
    from ooc_kernels.data.schema import sample_dim
    from ooc_kernels._atomic import check_replaceable
    from ooc_kernels.evaluation import evaluate, write_predictions

    _ensure_datasets(spec, base, catalog, progress, where)
    train = open_dataset(catalog, spec.data.train, **where)
    test = open_dataset(catalog, spec.data.test, **where) if spec.data.test else None
    est = _build_estimator(spec)
    est.set_params(progress=progress)
    # before the fit: a re-run replaces only its own model and prediction store
    check_replaceable(out_dir / spec.save.model, "model")
    if test is not None and spec.evaluate.predictions:
        check_replaceable(out_dir / spec.save.predictions, "predictions")
    t0 = time.perf_counter()
    est.fit(train, checkpoint=checkpoint, checkpoint_every=spec.fit.checkpoint_every,
            resume=spec.fit.resume)
    fit_seconds = time.perf_counter() - t0
    out_dir.mkdir(parents=True, exist_ok=True)
    est.save(out_dir / spec.save.model)
    metrics = {"pipeline": spec.name, "estimator": spec.model.estimator,
               "n_train": int(train.sizes[sample_dim(train)]),
               "fit_seconds": round(fit_seconds, 3)}
    metrics.update({f"train_{k}": v for k, v in evaluate(est, train).items()})
    if test is not None:
        metrics["n_test"] = int(test.sizes[sample_dim(test)])
        metrics.update({f"test_{k}": v for k, v in evaluate(est, test).items()})
        if spec.evaluate.predictions:
            # a re-run replaces its own prediction store (never anything else)
            write_predictions(est, test, out_dir / spec.save.predictions, overwrite=True)
    return metrics
