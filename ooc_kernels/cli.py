"""The ``ooc-kernels`` command line: a thin layer over the Python API.

Every failure exits non-zero with a one-line reason on standard error (set
``OOC_KERNELS_DEBUG=1`` for the traceback).  ``evaluate`` and ``run`` print their metrics as
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

import json
import os
from pathlib import Path

import click
import yaml

from ooc_kernels._version import __version__

_SCHEDULER_HELP = ("Where tasks run: sync, threads, processes, or the tcp:// or tls:// "
                   "address of a Dask scheduler (default: Dask's default).")
_ALLOW_OUTSIDE_HELP = ("Allow catalog entries whose data lies outside the catalog's folder "
                       "(only for catalogs you trust).")


class _Group(click.Group):
    """Turns every library or OS error into a one-line message and exit status 1."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as err:
            if os.environ.get("OOC_KERNELS_DEBUG"):
                raise
            msg = " ".join(str(err).split()) or type(err).__name__
            raise click.ClickException(f"{type(err).__name__}: {msg}") from err


def _common(f):
    """``--quiet`` and the scheduler options, passed to the command as ``quiet`` and ``sched``."""
    f = click.option("--quiet", "-q", is_flag=True, help="No progress bars.")(f)
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
    from ooc_kernels.parallel.scheduling import make_security, scheduler_context

    return scheduler_context(scheduler, scheduler_file=scheduler_file,
                             security=make_security(tls_ca_file, tls_cert, tls_key))


def _progress(quiet: bool):
    return False if quiet else None


def _parse_params(pairs) -> dict:
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--param")
        key, value = pair.split("=", 1)
        out[key.strip()] = yaml.safe_load(value)
    return out


def _echo_metrics(metrics: dict) -> None:
    click.echo(json.dumps(metrics, sort_keys=True))


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="ooc-kernels")
def main():
    """Train kernel machines on data larger than memory (Zarr + Intake + Dask + numba)."""


# ---------------------------------------------------------------------------- data
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
@click.option("--n", "n_samples", type=int, required=True, help="Number of samples.")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path),
              help="Store path (ending in .zarr) or a folder (the store is NAME.zarr in it).")
@click.option("--split", default="train", type=click.Choice(["train", "test"]))
@click.option("--seed", default=0, type=int, help="Random seed.")
@click.option("--chunk-size", default=10_000, type=int, help="Samples per chunk.")
@click.option("--param", "-p", "params", multiple=True, help="Generator parameter KEY=VALUE.")
@click.option("--catalog", type=click.Path(path_type=Path), default=None,
              help="Register the store in this Intake catalog (created if missing).")
@click.option("--entry", default=None, help="Catalog entry name (default: NAME, or "
              "NAME_test for the test split).")
@click.option("--overwrite", is_flag=True, help="Replace an existing store.")
@click.option("--allow-outside", is_flag=True, help="Register the store in --catalog even if "
              "it is outside the catalog's folder (readers then need --allow-outside too).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def data_make(name, n_samples, out, split, seed, chunk_size, params, catalog, entry,
              overwrite, allow_outside, quiet):
    """Write dataset NAME to a Zarr store chunk by chunk (and register it in a catalog)."""
    from ooc_kernels.data.catalog import register_dataset
    from ooc_kernels.data.generators import make_dataset

    entry = entry or (name if split == "train" else f"{name}_{split}")
    store = out if out.suffix == ".zarr" else out / f"{entry}.zarr"
    if catalog is not None and not allow_outside:
        # refuse before writing anything: the same check register_dataset makes afterwards
        from ooc_kernels.data.catalog import PathEscapeError

        base = Path(catalog).expanduser().absolute().parent.resolve()
        target = Path(store).expanduser().absolute().resolve()
        if not target.is_relative_to(base):
            raise PathEscapeError(
                f"cannot register entry {entry!r} in catalog {str(catalog)!r}: the store "
                f"{str(store)!r} is outside the catalog's folder {str(base)!r}; write it "
                f"under that folder (e.g. --out {str(base / 'data')!r}) or pass "
                "--allow-outside (readers then need --allow-outside too)"
            )
    path = make_dataset(name, store, n_samples, chunk_size=chunk_size, random_state=seed,
                        split=split, overwrite=overwrite, progress=_progress(quiet),
                        **_parse_params(params))
    if catalog is not None:
        register_dataset(catalog, entry, path,
                         description=f"{name} ({split}), {n_samples} samples, seed {seed}",
                         allow_outside=allow_outside)
    click.echo(str(path))


# ---------------------------------------------------------------------------- catalog
@main.group()
def catalog():
    """Inspect Intake catalogs."""


@catalog.command("list")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--trusted", is_flag=True, help="Allow readers outside the allow-list.")
@click.option("--allow-outside", is_flag=True, help=_ALLOW_OUTSIDE_HELP)
def catalog_list(file, trusted, allow_outside):
    """List the datasets of catalog FILE."""
    from ooc_kernels.data.catalog import describe_catalog

    rows = describe_catalog(file, trusted=trusted, allow_outside=allow_outside)
    width = max([len(r["name"]) for r in rows] + [4])
    for r in rows:
        exists = "yes" if Path(r["path"]).exists() else "no"
        click.echo(f"{r['name']:<{width}}  exists={exists:<3}  {r['path']}  "
                   f"{r.get('description') or ''}".rstrip())


# ---------------------------------------------------------------------------- training
def _open(catalog_file, entry, trusted, allow_outside):
    from ooc_kernels.data.catalog import open_dataset

    return open_dataset(catalog_file, entry, trusted=trusted, allow_outside=allow_outside)


def _data_options(f):
    f = click.option("--allow-outside", is_flag=True, help=_ALLOW_OUTSIDE_HELP)(f)
    f = click.option("--trusted", is_flag=True, help="Trust the catalog.")(f)
    f = click.option("--entry", required=True, help="Catalog entry.")(f)
    f = click.option("--catalog", "catalog_file", required=True,
                     type=click.Path(path_type=Path), help="Intake catalog file.")(f)
    return f


@main.command()
@_data_options
@click.option("--estimator", default="DSGClassifier",
              type=click.Choice(["DSGClassifier", "DSGRegressor"]))
@click.option("--param", "-p", "params", multiple=True, help="Hyperparameter KEY=VALUE.")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Model path.")
@_common
def train(catalog_file, entry, trusted, allow_outside, estimator, params, out, quiet,
          **sched):
    """Train an estimator on a catalog entry and save it."""
    import ooc_kernels as ok

    est = getattr(ok, estimator)(**_parse_params(params))
    est._check_params()
    with _scheduler(**sched):
        est.set_params(progress=_progress(quiet))
        est.fit(_open(catalog_file, entry, trusted, allow_outside))
        est.save(out)
    click.echo(str(out))


@main.command()
@click.argument("model", type=click.Path(path_type=Path))
@_data_options
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Also write the metrics JSON to this file.")
@_common
def evaluate(model, catalog_file, entry, trusted, allow_outside, out, quiet, **sched):
    """Evaluate a saved MODEL on a catalog entry; prints the metrics as JSON."""
    import ooc_kernels as ok
    from ooc_kernels._atomic import write_text_atomic
    from ooc_kernels.evaluation import evaluate as _evaluate

    est = ok.load(model)
    with _scheduler(**sched):
        metrics = _evaluate(est, _open(catalog_file, entry, trusted, allow_outside))
    metrics = {"model": str(model), "entry": entry, **metrics}
    if out is not None:
        write_text_atomic(out, json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    _echo_metrics(metrics)


@main.command()
@click.argument("model", type=click.Path(path_type=Path))
@_data_options
@click.option("--out", required=True, type=click.Path(path_type=Path),
              help="Zarr store for the predictions.")
@_common
def predict(model, catalog_file, entry, trusted, allow_outside, out, quiet, **sched):
    """Write the predictions of a saved MODEL on a catalog entry to a Zarr store."""
    import ooc_kernels as ok
    from ooc_kernels.evaluation import write_predictions

    est = ok.load(model)
    with _scheduler(**sched):
        write_predictions(est, _open(catalog_file, entry, trusted, allow_outside), out)
    click.echo(str(out))


@main.command()
@click.argument("pipeline", type=click.Path(path_type=Path))
@_common
def run(pipeline, quiet, **sched):
    """Run a PIPELINE YAML file: data, model, fit, evaluate, save."""
    from ooc_kernels.pipeline import run_pipeline

    scheduler = sched["scheduler"]
    if any(sched[k] is not None for k in ("scheduler_file", "tls_ca_file", "tls_cert",
                                           "tls_key")):
        # connect here and hand the connected Client to the pipeline (which uses it as is)
        with _scheduler(**sched) as client:
            metrics = run_pipeline(pipeline, scheduler=client, progress=_progress(quiet))
    else:
        metrics = run_pipeline(pipeline, scheduler=scheduler, progress=_progress(quiet))
    _echo_metrics(metrics)


if __name__ == "__main__":  # pragma: no cover
    main()
