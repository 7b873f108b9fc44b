"""Pipeline files: a YAML description of one training job, validated before any work starts.

A pipeline has five stages, run in order: ``data`` (open the catalog entries, generating
missing datasets), ``model`` (the estimator and its hyperparameters), ``fit``, ``evaluate``
and ``save`` (model, metrics JSON and predictions).  Relative paths are resolved against
``base_dir``, itself relative to the pipeline file's folder (default: that folder).

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
    fit: {scheduler: threads, checkpoint_every: 5, resume: true}
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

from ooc_kernels._atomic import write_text_atomic
from ooc_kernels.exceptions import PipelineConfigError

__all__ = ["PipelineSpec", "load_pipeline", "run_pipeline", "ESTIMATORS"]

ESTIMATORS = ("DSGClassifier", "DSGRegressor")


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


class DataSpec(_Strict):
    catalog: str
    train: str
    test: str | None = None
    trusted: bool = False
    allow_outside: bool = False  # catalog entries may point outside the catalog's folder
    generate: dict[str, GenerateSpec] = Field(default_factory=dict)


class ModelSpec(_Strict):
    estimator: Literal["DSGClassifier", "DSGRegressor"]
    params: dict[str, Any] = Field(default_factory=dict)


class FitSpec(_Strict):
    scheduler: str | None = None
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
    allow_outside: bool = False  # pipeline paths may leave base_dir
    data: DataSpec
    model: ModelSpec
    fit: FitSpec = Field(default_factory=FitSpec)
    evaluate: EvaluateSpec = Field(default_factory=EvaluateSpec)
    save: SaveSpec


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
        Unreadable file, invalid YAML, unknown key, wrong type or missing value; the
        message names the key and the problem.
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
    try:
        spec = PipelineSpec.model_validate(raw)
    except PydanticValidationError as err:
        raise PipelineConfigError(_format_errors(str(path), err)) from None
    # Hyperparameters are checked by building the estimator now, before any work.
    _build_estimator(spec, validate_only=True, where=str(path))
    base = (path.parent / spec.base_dir).resolve()
    return spec, base


def _build_estimator(spec: PipelineSpec, *, validate_only: bool = False, where: str = ""):
    import ooc_kernels as ok

    cls = getattr(ok, spec.model.estimator)
    valid = set(cls().get_params())
    unknown = sorted(set(spec.model.params) - valid)
    if unknown:
        raise PipelineConfigError(
            f"invalid pipeline {where}: unknown key 'model.params.{unknown[0]}' for "
            f"{spec.model.estimator}; valid keys: {', '.join(sorted(valid))}."
        )
    est = cls(**spec.model.params)
    try:
        est._check_params()
    except ValueError as err:
        raise PipelineConfigError(f"invalid pipeline {where}: model.params: {err}") from err
    return None if validate_only else est


def _resolve(base: Path, p: str, *, allow_outside: bool = False, key: str = "") -> Path:
    """``p`` relative to ``base``; a path leaving ``base`` (``..``, absolute, symlink) is
    refused unless the pipeline sets ``allow_outside: true``."""
    q = Path(p).expanduser()
    out = q if q.is_absolute() else base / q
    if not allow_outside and not out.resolve().is_relative_to(base.resolve()):
        raise PipelineConfigError(
            f"pipeline key {key!r} = {p!r} resolves to {str(out.resolve())!r}, outside "
            f"base_dir {str(base)!r}; use a path inside base_dir or set "
            "'allow_outside: true' in the pipeline file."
        )
    return out


def _ensure_datasets(spec: PipelineSpec, base: Path, catalog: Path, progress) -> None:
    """Generate every catalog entry named under ``data.generate`` whose store is missing."""
    from ooc_kernels.data.catalog import entry_path
    from ooc_kernels.data.generators import make_dataset

    for entry, gen in spec.data.generate.items():
        store = entry_path(catalog, entry, trusted=spec.data.trusted,
                           allow_outside=spec.data.allow_outside)
        if store.exists():
            continue
        make_dataset(gen.generator, store, gen.n_samples, chunk_size=gen.chunk_size,
                     random_state=gen.random_state, split=gen.split, progress=progress,
                     **gen.params)


def run_pipeline(path: str | os.PathLike, *, scheduler: Any = None,
                 progress: bool | None = None) -> dict:
    """Run a pipeline file end to end and return its metrics.

    Writes ``model.zarr``, ``metrics.json`` and (with ``evaluate.predictions``)
    ``predictions.zarr`` into ``save.output_dir``, each atomically.  The fit writes
    ``checkpoint.zarr`` there every ``fit.checkpoint_every`` rounds; with ``fit.resume``
    (the default) running the same pipeline again continues from it and gives exactly the
    model of an uninterrupted run.
    """
    from ooc_kernels.data.catalog import open_dataset
    from ooc_kernels.evaluation import evaluate, write_predictions
    from ooc_kernels.parallel.scheduling import scheduler_context

    spec, base = load_pipeline(path)
    catalog = _resolve(base, spec.data.catalog, allow_outside=spec.allow_outside,
                       key="data.catalog")
    out_dir = _resolve(base, spec.save.output_dir, allow_outside=spec.allow_outside,
                       key="save.output_dir")
    where = dict(trusted=spec.data.trusted, allow_outside=spec.data.allow_outside)
    sched = scheduler if scheduler is not None else spec.fit.scheduler
    with scheduler_context(sched):
        _ensure_datasets(spec, base, catalog, progress)
        train = open_dataset(catalog, spec.data.train, **where)
        test = (open_dataset(catalog, spec.data.test, **where)
                if spec.data.test else None)
        est = _build_estimator(spec)
        est.set_params(progress=progress)
        t0 = time.perf_counter()
        est.fit(train, checkpoint=out_dir / spec.save.checkpoint,
                checkpoint_every=spec.fit.checkpoint_every, resume=spec.fit.resume)
        fit_seconds = time.perf_counter() - t0
        out_dir.mkdir(parents=True, exist_ok=True)
        est.save(out_dir / spec.save.model)
        metrics = {"pipeline": spec.name, "estimator": spec.model.estimator,
                   "n_train": int(train.sizes["sample"]),
                   "fit_seconds": round(fit_seconds, 3)}
        metrics.update({f"train_{k}": v for k, v in evaluate(est, train).items()})
        if test is not None:
            metrics["n_test"] = int(test.sizes["sample"])
            metrics.update({f"test_{k}": v for k, v in evaluate(est, test).items()})
            if spec.evaluate.predictions:
                write_predictions(est, test, out_dir / spec.save.predictions)
    write_text_atomic(out_dir / spec.save.metrics,
                      json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    return metrics
