"""The ``ooc-kernels`` command line: a thin layer over the Python API.

Every failure exits non-zero with a one-line reason on standard error (set
``OOC_KERNELS_DEBUG=1`` for the traceback).  Long work shows progress bars on a terminal;
without one (a batch job's log), one line per stage, per epoch and per tenth of a long pass
on standard error instead, each with its time (``--quiet``: neither).  ``evaluate`` and ``run`` print their metrics as
one JSON object on the last line of standard output.

Examples
--------
>>> from click.testing import CliRunner
>>> from ooc_kernels.cli import main
>>> result = CliRunner().invoke(main, ["data", "generators"])
>>> "digits_deformed" in result.output
True
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import threading
from pathlib import Path
from typing import NamedTuple

import click

from ooc_kernels._version import __version__

_SCHEDULER_HELP = ("Where tasks run: sync, threads, processes, or the tcp:// or tls:// "
                   "address of a Dask scheduler (default: Dask's default).")
_ALLOW_OUTSIDE_HELP = ("Allow catalog entries whose data lies outside the catalog's folder "
                       "(only for catalogs you trust).")
_DATA_ROOT_HELP = ("Also allow catalog entries to read data under this folder, e.g. a data "
                   "disk (repeatable).")
_ALLOW_ENV_HELP = ("Let the catalog read this environment variable through {env(NAME)} "
                   "templates (repeatable; --trusted allows all).")


class _Terminated(KeyboardInterrupt):
    """SIGTERM during a command (a batch system stopping the job, ``kill PID``)."""


def _raise_terminated(signum, frame):
    raise _Terminated()


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """While a command runs, SIGTERM interrupts it as Ctrl-C does (its one line on how to
    continue, no temporary left), with exit status 143; the previous handler is put back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


class _Group(click.Group):
    """Turns every library or OS error into a one-line message and exit status 1."""

    def invoke(self, ctx):
        try:
            with _sigterm_as_interrupt():
                return super().invoke(ctx)
        except _Terminated as err:  # a command without its own line on how to continue
            _exit_interrupted(err, "terminated (SIGTERM)")
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as err:
            if os.environ.get("OOC_KERNELS_DEBUG"):
                raise
            msg = " ".join(str(err).split()) or type(err).__name__
            raise click.ClickException(f"{type(err).__name__}: {msg}") from err


def _common(f):
    """``--quiet`` and the scheduler options, passed to the command as ``quiet`` and ``sched``."""
    f = click.option("--quiet", "-q", is_flag=True, help="No progress bars (and, without "
                     "a terminal, no stage, epoch and progress lines).")(f)
    f = click.option("--tls-key", type=click.Path(dir_okay=False, path_type=Path),
                     default=None, help="PEM private key of the client certificate, if not "
                     "inside --tls-cert.")(f)
    f = click.option("--tls-cert", type=click.Path(dir_okay=False, path_type=Path),
                     default=None, help="PEM client certificate for a tls:// scheduler.")(f)
    f = click.option("--tls-ca-file", type=click.Path(dir_okay=False, path_type=Path),
                     default=None, help="PEM certificate authority that signed the "
                     "scheduler's certificate; with --tls-cert, connections require TLS.")(f)
    f = click.option("--scheduler-file", type=click.Path(dir_okay=False, path_type=Path),
                     default=None, help="Dask scheduler file (from `dask scheduler "
                     "--scheduler-file`) to connect to instead of --scheduler.")(f)
    f = click.option("--scheduler", default=None, help=_SCHEDULER_HELP)(f)
    return f


def _scheduler(scheduler, scheduler_file, tls_ca_file, tls_cert, tls_key):
    """The scheduler context of the scheduler and TLS options (see ``parallel.scheduling``)."""
    from ooc_kernels.parallel.scheduler import make_security, scheduler_context

    return scheduler_context(scheduler, scheduler_file=scheduler_file,
                             security=make_security(tls_ca_file, tls_cert, tls_key))


def _progress(quiet: bool):
    return False if quiet else None


def _log_lines(quiet: bool):
    """Where no progress bar is shown (standard error is not a terminal: a batch job's
    log) and not ``--quiet``: the library's stage, epoch and progress lines on standard
    error, one line each, with the time (:func:`ooc_kernels._progress.log_to_stderr`)."""
    from ooc_kernels._progress import log_to_stderr, progress_enabled

    return log_to_stderr(not quiet and not progress_enabled(None))


def _parse_params(pairs) -> dict:
    """``-p KEY=VALUE`` pairs: values read as YAML, numbers as written (2e5, 1e-3, 1_000)."""
    from ooc_kernels._params import parse_param_value

    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--param")
        key, value = pair.split("=", 1)
        out[key.strip()] = parse_param_value(value)
    return out


_VAR_HELP = ("Which store variable holds a schema variable, SCHEMA_VAR=STORE_VAR (repeatable): "
             "--var X=features --var y=label for a store whose variables are named "
             "features and label.")


def _parse_vars(pairs, option: str = "--var") -> dict | None:
    """``--var X=features`` pairs as a ``variables`` mapping (None when there are none)."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise click.BadParameter(f"{pair!r} is not SCHEMA_VAR=STORE_VAR; e.g. "
                                     f"{option} X=features {option} y=label",
                                     param_hint=option)
        if key in out and out[key] != value:
            raise click.BadParameter(f"{key} is given twice, as {out[key]!r} and {value!r}; "
                                     "give each schema variable once", param_hint=option)
        out[key] = value
    return out or None


def _parse_classes(text: str | None) -> list | None:
    """``--classes 0,1`` (or ``cat,dog``) as a list, each value read as YAML."""
    from ooc_kernels._params import parse_param_value

    if text is None:
        return None
    return [parse_param_value(v.strip()) for v in text.split(",")]


def _declaration_options(f):
    """``--var``, ``--schema``, ``--task`` and ``--classes`` of the catalog commands."""
    f = click.option("--classes", default=None, metavar="A,B,...",
                     help="The sorted label values, comma-separated, when the store does "
                     "not record them.")(f)
    f = click.option("--task", type=click.Choice(["classification", "regression"]),
                     default=None, help="The task, when the store does not record it.")(f)
    f = click.option("--schema", "schema", default=None,
                     help="The store's schema (supervised, factorized, triplets), when the "
                     "store does not record it.")(f)
    f = click.option("--var", "var", multiple=True, metavar="SCHEMA_VAR=STORE_VAR",
                     help=_VAR_HELP)(f)
    return f


def _exit_interrupted(err: BaseException, default: str) -> None:
    """Print how to continue an interrupted command (one line) and exit with status 130
    (143 and "terminated (SIGTERM)" instead of "interrupted" for SIGTERM)."""
    import logging

    notes = getattr(err, "__notes__", None) or [default]
    line, status = notes[-1], 130
    if isinstance(err, _Terminated) or isinstance(err.__context__, _Terminated):
        line, status = line.replace("interrupted", "terminated (SIGTERM)", 1), 143
    click.echo(line, err=True)
    # Zarr's I/O runs on an asyncio loop in a background thread; the reads the interrupt cut
    # short are destroyed at interpreter exit, and asyncio logs each one ("Task was destroyed
    # but it is pending!"). They are expected and harmless: keep the one line above the last.
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    raise click.exceptions.Exit(status)


def _echo_metrics(metrics: dict) -> None:
    click.echo(json.dumps(metrics, sort_keys=True))


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="ooc-kernels")
def main():
    """Train kernel machines on data larger than memory (Zarr + Intake + Dask + numba)."""


@main.command("estimators")
def estimators_list():
    """List the registered estimators."""
    from ooc_kernels.estimators._registry import ESTIMATORS

    for name, cls in ESTIMATORS.items():
        summary = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        click.echo(f"{name:<22} {summary}")


# ---------------------------------------------------------------------------- data
class _Count(click.ParamType):
    """A whole count of rows, samples or rounds, at least ``minimum``, written as an integer
    or in exponent notation (``--n 1e6``, ``--n 2.5e5``;
    :func:`ooc_kernels._params.parse_count`).  ``1.5``, a negative value and anything that
    is not a number are refused by click, with the option and the value named."""

    name = "count"

    def __init__(self, minimum: int = 1):
        self.minimum = minimum

    def convert(self, value, param, ctx):
        from ooc_kernels._params import parse_count

        try:
            return parse_count(value, minimum=self.minimum)
        except ValueError as err:
            self.fail(str(err), param, ctx)


@main.group()
def data():
    """Generate example datasets."""


@data.command("generators")
def data_generators():
    """List the dataset generators."""
    from ooc_kernels.data.generators import available_generators

    for name in available_generators():
        click.echo(name)


@data.command("make")
@click.argument("name")
@click.option("--n", "n_samples", type=_Count(), required=True,
              help="Number of samples: a whole number, e.g. 100000 or 1e5.")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path),
              help="Store path (ending in .zarr) or a folder (the store is NAME.zarr in it).")
@click.option("--split", default="train", type=click.Choice(["train", "test"]))
@click.option("--seed", default=0, type=int, help="Random seed.")
@click.option("--chunk-size", default=10_000, type=_Count(),
              help="Samples per chunk (a whole number, e.g. 10000 or 1e4).")
@click.option("--param", "-p", "params", multiple=True, help="Generator parameter KEY=VALUE.")
@click.option("--catalog", type=click.Path(path_type=Path), default=None,
              help="Register the store in this Intake catalog (created if missing).")
@click.option("--entry", default=None, help="Catalog entry name (default: NAME, or "
              "NAME_test for the test split).")
@click.option("--overwrite", is_flag=True, help="Replace an existing store.")
@click.option("--exist-ok", is_flag=True, help="Keep an existing store written with the same "
              "generator, parameters, seed, split, size and chunk size (with --overwrite, "
              "replace it only if it differs); otherwise fail.")
@click.option("--allow-outside", is_flag=True, help="Register the store in --catalog even if "
              "it is outside the catalog's folder (readers then need --allow-outside too).")
@click.option("--data-root", "data_root", multiple=True, type=click.Path(path_type=Path),
              help="Register the store in --catalog if it is under this folder, even outside "
              "the catalog's folder (repeatable; readers then need --data-root too).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def data_make(name, n_samples, out, split, seed, chunk_size, params, catalog, entry,
              overwrite, exist_ok, allow_outside, data_root, quiet):
    """Write dataset NAME to a Zarr store chunk by chunk (and register it in a catalog)."""
    from ooc_kernels.data.catalog import (check_catalog_target, check_entry_name,
                                          register_dataset)
    from ooc_kernels.data.generators import make_dataset

    # a name of the catalog's rule: it is the store's file name too (no separator, no '..')
    entry = check_entry_name(entry or (name if split == "train" else f"{name}_{split}"))
    store = out if out.suffix == ".zarr" else out / f"{entry}.zarr"
    allow = _catalog_allow_outside(allow_outside, data_root)
    if catalog is not None:
        check_catalog_target(catalog)  # before the store: a catalog it cannot be written to
    if catalog is not None and allow is not True:
        # refuse before writing anything: the same check register_dataset makes afterwards
        from ooc_kernels.exceptions import PathEscapeError

        base = Path(catalog).expanduser().absolute().parent.resolve()
        roots = [base] + [Path(r).expanduser().resolve() for r in data_root]
        target = Path(store).expanduser().absolute().resolve()
        if not any(target.is_relative_to(r) for r in roots):
            extra = f" or the --data-root folders {[str(r) for r in roots[1:]]}" \
                if data_root else ""
            raise PathEscapeError(
                f"cannot register entry {entry!r} in catalog {str(catalog)!r}: the store "
                f"{str(store)!r} is outside the catalog's folder {str(base)!r}{extra}; write "
                f"it under that folder (e.g. --out {str(base / 'data')!r}) or pass "
                f"--data-root {str(target.parent)} or --allow-outside (readers then need the "
                "same)"
            )
    with _log_lines(quiet):  # without a terminal: a line every tenth of the writing
        path = make_dataset(name, store, n_samples, chunk_size=chunk_size,
                            random_state=seed, split=split, overwrite=overwrite,
                            exist_ok=exist_ok, progress=_progress(quiet),
                            **_parse_params(params))
    if catalog is not None:
        register_dataset(catalog, entry, path,
                         description=f"{name} ({split}), {n_samples} samples, seed {seed}",
                         allow_outside=allow)
    click.echo(str(path))


# ---------------------------------------------------------------------------- catalog
@main.group()
def catalog():
    """Inspect Intake catalogs and add or declare their entries."""


@catalog.command("list")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--trusted", is_flag=True, help="Trust the whole catalog: other readers, any "
              "environment variable, any path.")
@click.option("--allow-outside", is_flag=True, help=_ALLOW_OUTSIDE_HELP)
@click.option("--data-root", "data_root", multiple=True, type=click.Path(path_type=Path),
              help=_DATA_ROOT_HELP)
@click.option("--allow-env", "allow_env", multiple=True, metavar="NAME", help=_ALLOW_ENV_HELP)
def catalog_list(file, trusted, allow_outside, data_root, allow_env):
    """List the datasets of catalog FILE."""
    from ooc_kernels.data.catalog import describe_catalog

    rows = describe_catalog(file, trusted=trusted,
                            allow_outside=_catalog_allow_outside(allow_outside, data_root),
                            allow_env=allow_env)
    width = max([len(r["name"]) for r in rows] + [4])
    for r in rows:
        paths = r["path"] if isinstance(r["path"], (list, tuple)) else [r["path"]]
        exists = "yes" if paths and all(isinstance(p, str) and Path(p).exists()
                                        for p in paths) else "no"
        click.echo(f"{r['name']:<{width}}  exists={exists:<3}  {r['path']}  "
                   f"{r.get('description') or ''}".rstrip())


@catalog.command("add")
@click.argument("file", type=click.Path(path_type=Path))
@click.argument("name")
@click.argument("store", type=click.Path(path_type=Path))
@_declaration_options
@click.option("--description", default=None, help="Shown by `ooc-kernels catalog list`.")
@click.option("--allow-outside", is_flag=True, help="Register the store even if it is "
              "outside the catalog's folder (readers then need --allow-outside too).")
@click.option("--data-root", "data_root", multiple=True, type=click.Path(path_type=Path),
              help="Register the store if it is under this folder, even outside the "
              "catalog's folder (repeatable; readers then need --data-root too).")
def catalog_add(file, name, store, var, schema, task, classes, description, allow_outside,
                data_root):
    """Add (or replace) entry NAME for the Zarr STORE in catalog FILE (created if missing).

    For a store written with plain ``ds.to_zarr()`` whose variables have their own names,
    declare them: ooc-kernels catalog add cat.yaml sensors sensors.zarr --var X=features
    --var y=label.  An existing store is opened with the declaration first; the file is
    rewritten atomically and keeps its other entries.
    """
    from ooc_kernels.data.catalog import register_dataset

    register_dataset(file, name, store, description=description, variables=_parse_vars(var),
                     schema=schema, task=task, classes=_parse_classes(classes),
                     allow_outside=_catalog_allow_outside(allow_outside, data_root))
    click.echo(f"{file}: {name}")


@catalog.command("declare")
@click.argument("file", type=click.Path(path_type=Path))
@click.argument("name")
@_declaration_options
@click.option("--trusted", is_flag=True, help="Trust the whole catalog: other readers, any "
              "environment variable, any path.")
@click.option("--allow-outside", is_flag=True, help=_ALLOW_OUTSIDE_HELP)
@click.option("--data-root", "data_root", multiple=True, type=click.Path(path_type=Path),
              help=_DATA_ROOT_HELP)
@click.option("--allow-env", "allow_env", multiple=True, metavar="NAME", help=_ALLOW_ENV_HELP)
def catalog_declare(file, name, var, schema, task, classes, trusted, allow_outside,
                    data_root, allow_env):
    """Declare how to read entry NAME of catalog FILE (its metadata ooc_kernels: ...).

    For an entry made with Intake's own API or by hand over a store whose variables have
    their own names: ooc-kernels catalog declare cat.yaml sensors --var X=features --var
    y=label.  Adds to what the entry declares; the entry is opened with the declaration
    first, then the file is rewritten atomically with every other entry kept (YAML comments
    are not kept).  Prints the entry's declaration as JSON.
    """
    from ooc_kernels.data.catalog import declare_dataset

    declaration = declare_dataset(
        file, name, variables=_parse_vars(var), schema=schema, task=task,
        classes=_parse_classes(classes), trusted=trusted,
        allow_outside=_catalog_allow_outside(allow_outside, data_root), allow_env=allow_env)
    click.echo(json.dumps(declaration, sort_keys=True))


# ---------------------------------------------------------------------------- training
def _catalog_allow_outside(allow_outside: bool, data_root) -> bool | list[Path]:
    """``--allow-outside`` and ``--data-root`` as the library's ``allow_outside``."""
    return True if allow_outside else list(data_root)


class _CatalogAccess(NamedTuple):
    """What the catalog options allow, and the ``--var`` names; passed to the command as
    ``allow_outside``."""

    allow_outside: bool | list
    allow_env: tuple = ()
    variables: dict | None = None


def _open(catalog_file, entry, trusted, allow_outside):
    from ooc_kernels.data.catalog import open_dataset

    access = allow_outside if isinstance(allow_outside, _CatalogAccess) else \
        _CatalogAccess(allow_outside)
    return open_dataset(catalog_file, entry, trusted=trusted,
                        allow_outside=access.allow_outside, allow_env=access.allow_env,
                        variables=access.variables)


def _data_options(f):
    """``--catalog --entry --var --trusted --allow-outside --data-root --allow-env``.

    The command receives ``catalog_file, entry, trusted, allow_outside``; ``allow_outside``
    is a :class:`_CatalogAccess` that also carries ``--data-root``, ``--allow-env`` and the
    ``--var`` names, for :func:`_open`.
    """
    command = f

    @functools.wraps(command)
    def f(*args, allow_outside, data_root, allow_env, var, **kwargs):
        access = _CatalogAccess(_catalog_allow_outside(allow_outside, data_root),
                                tuple(allow_env), _parse_vars(var))
        return command(*args, allow_outside=access, **kwargs)

    f = click.option("--var", "var", multiple=True, metavar="SCHEMA_VAR=STORE_VAR",
                     help=_VAR_HELP + " For an entry whose metadata does not declare "
                     "them; a name the entry declares otherwise is an error.")(f)
    f = click.option("--allow-env", "allow_env", multiple=True, metavar="NAME",
                     help=_ALLOW_ENV_HELP)(f)
    f = click.option("--data-root", "data_root", multiple=True,
                     type=click.Path(path_type=Path), help=_DATA_ROOT_HELP)(f)
    f = click.option("--allow-outside", is_flag=True, help=_ALLOW_OUTSIDE_HELP)(f)
    f = click.option("--trusted", is_flag=True, help="Trust the whole catalog: other "
                     "readers, any environment variable, any path.")(f)
    f = click.option("--entry", required=True, help="Catalog entry.")(f)
    f = click.option("--catalog", "catalog_file", required=True,
                     type=click.Path(path_type=Path), help="Intake catalog file.")(f)
    return f


class _EstimatorName(click.ParamType):
    """A registered estimator name (the registry is read when the option is parsed, so
    ``--help`` stays fast and a new family needs no edit here)."""

    name = "estimator"

    def convert(self, value, param, ctx):
        from ooc_kernels.estimators._registry import ESTIMATORS

        if value not in ESTIMATORS:
            self.fail(f"{value!r} is not a registered estimator; choose from "
                      f"{', '.join(ESTIMATORS.names())}", param, ctx)
        return value


@main.command()
@_data_options
@click.option("--estimator", default=None, type=_EstimatorName(),
              help="A registered estimator (see `ooc-kernels estimators`).  Default: from "
              "the entry's task, DSGRegressor for regression and DSGClassifier for "
              "classification; without a declared task, DSGClassifier for integer or "
              "string labels (floating-point targets need --estimator or a declared "
              "task).  A factorized entry (A = U V, the factorized schema) gets the DSPDC "
              "linear models, the estimators that read it: DSPDCRegressor and "
              "DSPDCClassifier.")
@click.option("--param", "-p", "params", multiple=True, help="Hyperparameter KEY=VALUE.")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Model path.")
@click.option("--overwrite", is_flag=True, help="Replace an existing model at --out.")
@click.option("--checkpoint", type=click.Path(path_type=Path), default=None,
              help="Zarr folder for the fit's checkpoints; with it, re-running the same "
              "command after an interruption resumes from the last checkpoint.")
@click.option("--checkpoint-every", type=_Count(), default=5, show_default=True,
              help="Rounds between checkpoints (a round runs chunks_per_round chunk tasks, "
              "each of one or more chunks; the last round of the fit is always written).")
@click.option("--resume/--no-resume", default=None, help="Continue from --checkpoint if it "
              "exists (default when --checkpoint is given); --no-resume starts over.")
@_common
def train(catalog_file, entry, trusted, allow_outside, estimator, params, out, overwrite,
          checkpoint, checkpoint_every, resume, quiet, **sched):
    """Train an estimator on a catalog entry and save it.

    Without --estimator, the entry's task picks it: DSGRegressor for regression,
    DSGClassifier for classification; DSPDCRegressor and DSPDCClassifier for a factorized
    entry (see --estimator).
    """
    from sklearn.exceptions import ConvergenceWarning

    from ooc_kernels._folder_pin import pin, pinning
    from ooc_kernels._params import unknown_key_hint
    from ooc_kernels._paths import user_path
    from ooc_kernels._progress import warnings_to_log
    from ooc_kernels.exceptions import ValidationError

    from ooc_kernels.estimators._registry import get_estimator
    from ooc_kernels.estimators.persistence import json_params, save_model

    hyper = _parse_params(params)
    data = None
    if estimator is None:  # opening is lazy: nothing but metadata is read here
        data = _open(catalog_file, entry, trusted, allow_outside)
        estimator = _default_estimator(data, entry, catalog_file)
    cls = get_estimator(estimator)
    if cls.capabilities.inputs == "two_sample":
        raise ValidationError(
            f"{estimator} learns from two samples, fit(X_p, X_q), and train fits one "
            f"catalog entry (--entry); use it from Python: ok.{estimator}().fit(X_p, X_q), "
            "each sample opened with ok.open_dataset(catalog, entry)."
        )
    valid = set(cls().get_params())
    unknown = sorted(set(hyper) - valid)
    if unknown:  # the pipeline's message for the same typo (pipeline._build_estimator)
        raise ValidationError(
            f"unknown hyperparameter '-p {unknown[0]}' for {estimator}; "
            f"{unknown_key_hint(unknown[0], valid)}."
        )
    if resume and checkpoint is None:
        raise click.UsageError("--resume needs --checkpoint PATH (the checkpoint to resume "
                               "from).")
    resume = checkpoint is not None if resume is None else resume
    if checkpoint is not None:
        _refuse_same_or_nested(out, checkpoint)
    _refuse_existing(out, overwrite, "model")
    est = cls(**hyper)
    est._validate_params()
    json_params(est)  # what cannot be saved is refused before the fit, not after it
    try:
        with _scheduler(**sched), _log_lines(quiet), pinning():
            for target in (out, checkpoint):   # never written through a folder swapped
                if target is not None:         # for a link during the fit
                    pin(user_path(target).parent)
            est.set_params(progress=_progress(quiet))
            if data is None:
                data = _open(catalog_file, entry, trusted, allow_outside)
            # a fit that stops at max_iter before its tol: one log line, as in run
            with warnings_to_log(ConvergenceWarning, "train: "):
                est.fit(data, checkpoint=checkpoint, checkpoint_every=checkpoint_every,
                        resume=resume)
            _refuse_existing(out, overwrite, "model")  # written by someone else meanwhile?
            save_model(est, out, overwrite=overwrite)  # and again under the path's lock
    except KeyboardInterrupt as err:
        _exit_interrupted(err, _train_interrupted_message(checkpoint, resume))
    click.echo(str(out))


def _default_estimator(ds, entry: str, catalog_file: Path) -> str:
    """The estimator ``train`` uses without ``--estimator``: DSGRegressor for an entry whose
    task (the store's attribute or the catalog's declaration) is regression, DSGClassifier
    for classification; without a task, DSGClassifier unless the targets are floating
    point, which could be either.  A factorized entry (``A = U V``) gets DSPDCRegressor and
    DSPDCClassifier instead, the linear models that read factorized data (the kernel
    models take rows ``X``).  Reads metadata only.

    Raises
    ------
    ValidationError
        No task and floating-point targets: the message says to pass ``--estimator
        DSGRegressor`` (DSPDCRegressor for a factorized entry) or to declare the task.
    """
    from ooc_kernels.data.inputs import as_chunked
    from ooc_kernels.exceptions import ValidationError

    data = as_chunked(ds)
    family = "DSPDC" if data.X is None and "U" in data else "DSG"
    task = data.attrs.get("task")
    if task == "regression":
        return f"{family}Regressor"
    if task == "classification" or data.y is None or data.y.dtype.kind != "f":
        return f"{family}Classifier"
    raise ValidationError(
        f"entry {entry!r} declares no task and its targets y are floating point "
        f"({data.y.dtype}), so the default estimator cannot tell regression from "
        f"classification: pass --estimator {family}Regressor for regression (--estimator "
        f"{family}Classifier for class labels stored as floats), or declare the task once "
        f"with `ooc-kernels catalog declare {catalog_file} {entry} --task regression`"
    )


def _refuse_same_or_nested(out: Path, checkpoint: Path) -> None:
    """Before any work: ``--out`` and ``--checkpoint`` name two stores, so neither may be
    the other or lie inside it (the fit would write its checkpoint where the model goes)."""
    a, b = out.expanduser().absolute(), checkpoint.expanduser().absolute()
    ra, rb = a.parent.resolve() / a.name, b.parent.resolve() / b.name
    if ra == rb or ra.is_relative_to(rb) or rb.is_relative_to(ra):
        raise click.UsageError(
            f"--out {str(out)!r} and --checkpoint {str(checkpoint)!r} are the same path or "
            "one lies inside the other; the checkpoint and the model are two stores: give "
            "them different paths side by side (e.g. --out model.zarr --checkpoint "
            "model.ckpt.zarr)"
        )


def _refuse_existing(out: Path, overwrite: bool, kind: str) -> None:
    """Before any work: refuse an existing ``out`` unless ``--overwrite``, and even then
    anything but a store of ``kind`` written by ooc-kernels."""
    from ooc_kernels._atomic import KINDS, check_replaceable, expand_user
    from ooc_kernels.exceptions import DatasetExistsError

    out = Path(expand_user(out))  # where the write goes
    if not (out.exists() or out.is_symlink()):
        return
    if not overwrite:
        raise DatasetExistsError(
            f"the output {str(out)!r} already exists; pass --overwrite to replace it (the "
            f"new {KINDS[kind]} replaces it only once complete, and only an ooc-kernels "
            f"{KINDS[kind]} is ever replaced), or choose another --out"
        )
    check_replaceable(out, kind)


def _train_interrupted_message(checkpoint: Path | None, resume: bool) -> str:
    """One line telling how to continue an interrupted ``train``."""
    if checkpoint is None:
        return ("interrupted: no --checkpoint was given, so re-running starts the fit over; "
                "pass --checkpoint PATH to make a long fit resumable")
    if not checkpoint.exists():
        return (f"interrupted before the first checkpoint ({str(checkpoint)!r}) was written: "
                "re-running the same command starts the fit again")
    if not resume:
        return (f"interrupted: re-run the command with --resume instead of --no-resume to "
                f"continue from the last checkpoint, {str(checkpoint)!r}")
    return (f"interrupted: re-running the same command resumes from the last checkpoint, "
            f"{str(checkpoint)!r}")


@main.command()
@click.argument("model", type=click.Path(path_type=Path))
@_data_options
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Also write the metrics JSON to this file.")
@click.option("--overwrite", is_flag=True, help="Replace an existing metrics file at --out "
              "(only a metrics file written by ooc-kernels is ever replaced).")
@_common
def evaluate(model, catalog_file, entry, trusted, allow_outside, out, overwrite, quiet,
             **sched):
    """Evaluate a saved MODEL on a catalog entry; prints the metrics as JSON.

    Classifiers get accuracy (and log_loss), regressors r2, rmse and mae; a novelty
    detector or a density-ratio model is refused before the data is read.
    """
    import ooc_kernels as ok
    from ooc_kernels._atomic import check_replaceable_file, write_json_atomic
    from ooc_kernels.evaluation import evaluate as _evaluate, scored_task

    if out is not None:  # before any work
        check_replaceable_file(out, "metrics", overwrite=overwrite)
    est = ok.load(model)
    scored_task(est)  # a model evaluate has no metrics for: refused before the data opens
    with _scheduler(**sched), _log_lines(quiet):
        metrics = _evaluate(est, _open(catalog_file, entry, trusted, allow_outside),
                            progress=_progress(quiet), desc=f"score {entry}")
    metrics = {"model": str(model), "entry": entry, **metrics}
    if out is not None:
        write_json_atomic(out, metrics, kind="metrics", overwrite=overwrite)
    _echo_metrics(metrics)


@main.command()
@click.argument("model", type=click.Path(path_type=Path))
@_data_options
@click.option("--out", required=True, type=click.Path(path_type=Path),
              help="Zarr store for the predictions.")
@click.option("--overwrite", is_flag=True, help="Replace an existing prediction store at "
              "--out (only a prediction store written by ooc-kernels is ever replaced).")
@_common
def predict(model, catalog_file, entry, trusted, allow_outside, out, overwrite, quiet,
            **sched):
    """Write the predictions of a saved MODEL on a catalog entry to a Zarr store."""
    import ooc_kernels as ok
    from ooc_kernels.evaluation import write_predictions

    _refuse_existing(out, overwrite, "predictions")
    est = ok.load(model)
    with _scheduler(**sched), _log_lines(quiet):
        write_predictions(est, _open(catalog_file, entry, trusted, allow_outside), out,
                          overwrite=overwrite, progress=_progress(quiet),
                          desc=f"predictions {entry}")
    click.echo(str(out))


@main.command()
@click.argument("pipeline", type=click.Path(path_type=Path))
@click.option("--trusted", is_flag=True, help="Trust the pipeline's catalog (readers outside "
              "the allow-list).  Pipeline files cannot set this themselves.")
@click.option("--allow-outside", is_flag=True, help="Let the pipeline's base_dir leave the "
              "pipeline file's folder, its other paths leave base_dir, and its catalog's "
              "entries read data outside the catalog's folder (only for pipelines you "
              "trust).  Pipeline files cannot set this themselves.")
@click.option("--data-root", "data_root", multiple=True, type=click.Path(path_type=Path),
              help="A folder (repeatable) where the pipeline's base_dir and paths and its "
              "catalog's data may also lie, e.g. the repository for a pipeline with "
              "base_dir: .., or a data disk; narrower than --allow-outside.")
@click.option("--allow-env", "allow_env", multiple=True, metavar="NAME",
              help="An environment variable (repeatable) the catalog's {env(NAME)} templates "
              "may read.")
@click.option("--adopt-outputs", "adopt_outputs", is_flag=True,
              help="Take the outputs found at the pipeline's output paths as its own when "
              "they record no pipeline (an ooc_kernels version that records none, a model "
              "saved by hand) or a pipeline of the same name (copied from another output "
              "folder): the fit resumes from them and the run replaces them.  Never an "
              "output of a pipeline with another name.")
@_common
def run(pipeline, trusted, allow_outside, data_root, allow_env, adopt_outputs, quiet,
        **sched):
    """Run a PIPELINE YAML file: data, model, fit, evaluate, save.

    Prints the metrics as one JSON line, with the paths written under "outputs" (model,
    metrics, predictions).  Without a terminal (a batch job's log) it writes one line per
    stage and per epoch, and the progress of scoring and predictions, to standard error.
    Interrupted (Ctrl-C), it exits with status 130 and says how to continue: running the
    same command again resumes from the last checkpoint.
    """
    from ooc_kernels.pipeline import run_pipeline

    scheduler = sched["scheduler"]
    trust = dict(trusted=trusted, allow_env=tuple(allow_env), progress=_progress(quiet),
                 allow_outside=_catalog_allow_outside(allow_outside, data_root),
                 adopt_outputs=adopt_outputs)
    try:
        if any(sched[k] is not None for k in ("scheduler_file", "tls_ca_file", "tls_cert",
                                               "tls_key")):
            # connect here and hand the connected Client to the pipeline (used as is)
            with _scheduler(**sched) as client, _log_lines(quiet):
                metrics = run_pipeline(pipeline, scheduler=client, **trust)
        else:
            with _log_lines(quiet):
                metrics = run_pipeline(pipeline, scheduler=scheduler, **trust)
    except KeyboardInterrupt as err:
        _exit_interrupted(err, "interrupted: re-running the same command resumes from the "
                               "last checkpoint, if one was written")
    _echo_metrics(metrics)


if __name__ == "__main__":  # pragma: no cover
    main()
