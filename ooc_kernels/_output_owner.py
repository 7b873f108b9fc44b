"""Which pipeline wrote an output: a pipeline replaces only what its own runs wrote.

A pipeline run (:func:`ooc_kernels.pipeline.run_pipeline`) writes its model, checkpoint,
prediction store and metrics file inside :func:`owned_by`, with its owner record
(:func:`pipeline_owner`: the pipeline's name and its resolved output folder) and the paths of
those outputs.  For a write to one of those paths, :mod:`ooc_kernels._atomic` records the
owner under :data:`OWNER_ATTR` (in the ``zarr.json`` of a store, next to its kind; in a
metrics file, next to its marker) and replaces what is there only when it carries the same
record (:func:`check_owner`): a model saved by hand (``est.save``), another pipeline's output,
or an output that records no pipeline is refused.  Every other write, inside a pipeline or
not, records and checks nothing: ``est.save(path)`` replaces a pipeline's model as it
replaces any model of this library.

Examples
--------
>>> from ooc_kernels._output_owner import owned_by, owner_for, pipeline_owner
>>> owner = pipeline_owner("demo", "/data/out")
>>> with owned_by(owner, ["/data/out/model.zarr"]):
...     owner_for("/data/out/model.zarr"), owner_for("/data/elsewhere.zarr")
({'pipeline': 'demo', 'output_dir': '/data/out'}, None)
>>> owner_for("/data/out/model.zarr") is None
True
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from pathlib import Path

__all__ = ["OWNER_ATTR", "check_owner", "mark_store", "owned_by", "owner_for",
           "pipeline_owner"]

#: The attribute (of a store's ``zarr.json``; the key of a metrics file) that records which
#: pipeline wrote an output.
OWNER_ATTR = "ooc_kernels_owner"

# (owner record, the absolute paths it owns) of the pipeline run in progress in this context
_CURRENT: ContextVar[tuple[dict, frozenset[str]] | None] = ContextVar(
    "ooc_kernels_output_owner", default=None)


def _key(path: str | os.PathLike) -> str:
    return os.path.abspath(os.fspath(path))


def pipeline_owner(name: str, output_dir: str | os.PathLike) -> dict:
    """The owner record of the pipeline ``name`` writing into ``output_dir`` (resolved)."""
    return {"pipeline": str(name), "output_dir": os.fspath(output_dir)}


@contextlib.contextmanager
def owned_by(owner: dict, paths: Iterable[str | os.PathLike]) -> Iterator[dict]:
    """Within the block, writes to ``paths`` record ``owner`` and replace only its outputs."""
    token = _CURRENT.set((dict(owner), frozenset(_key(p) for p in paths)))
    try:
        yield owner
    finally:
        _CURRENT.reset(token)


def owner_for(path: str | os.PathLike) -> dict | None:
    """The owner record a write to ``path`` carries now, or ``None`` (not a pipeline's
    output, or no pipeline run in progress)."""
    current = _CURRENT.get()
    if current is None or _key(path) not in current[1]:
        return None
    return current[0]


def mark_store(folder: Path, path: str | os.PathLike) -> None:
    """Record :func:`owner_for` ``path`` in the ``zarr.json`` of the finished store
    ``folder`` (the temporary that replaces ``path``); nothing when there is none."""
    owner = owner_for(path)
    if owner is None:
        return
    meta = Path(folder) / "zarr.json"
    doc = json.loads(meta.read_bytes())
    doc.setdefault("attributes", {})[OWNER_ATTR] = owner
    meta.write_text(json.dumps(doc, indent=2))


def check_owner(path: str | os.PathLike, what: str, found, error: type[Exception]) -> None:
    """Raise ``error`` when ``path``, an output of the pipeline run in progress, holds an
    ooc_kernels ``what`` whose owner record ``found`` is not that run's.

    The message names the path, who wrote what is there and the fixes: another
    ``save.output_dir``, or removing it.
    """
    owner = owner_for(path)
    if owner is None or found == owner:
        return
    if isinstance(found, dict) and "pipeline" in found:
        by = (f"by the pipeline {found['pipeline']!r} with output folder "
              f"{found.get('output_dir')!r}")
    else:
        by = ("with no record of a pipeline that wrote it (saved with est.save, written by "
              "another ooc-kernels command, or by an ooc_kernels version that records no "
              "pipeline)")
    raise error(
        f"refusing to replace {os.fspath(path)!r}: it is an ooc_kernels {what} written {by}, "
        f"not by a run of the pipeline {owner['pipeline']!r} with output folder "
        f"{owner['output_dir']!r}, and a pipeline replaces only what its own runs wrote. "
        "Set save.output_dir to another folder, or move or remove it yourself if it is no "
        "longer needed."
    )
