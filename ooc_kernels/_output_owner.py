"""Which pipeline wrote an output: a pipeline replaces only what its own runs wrote.

A pipeline run (:func:`ooc_kernels.pipeline.run_pipeline`) writes its model, checkpoint,
prediction store and metrics file inside :func:`owned_by`, with its owner record
(:func:`pipeline_owner`) and the paths of those outputs.  The record holds the pipeline's
name and the id of its output folder: a random id that the first run writing into the folder
puts in the file :data:`FOLDER_ID_FILE` there (:func:`folder_id`, :func:`claim_folder`).  The
record names no absolute path, so a project folder copied or moved as a whole (the pipeline
file with its output folder and the id file in it) keeps its outputs; an output copied on its
own into another output folder records another id there (``docs/security.md``, section 4).

For a write to one of those paths, :mod:`ooc_kernels._atomic` records the owner under
:data:`OWNER_ATTR` (in the ``zarr.json`` of a store, next to its kind; in a metrics file,
next to its marker) and replaces what is there only when it carries the same record
(:func:`check_owner`): a model saved by hand (``est.save``), another pipeline's output, an
output copied from another output folder, or an output that records no pipeline is refused.
The run's ``adopt_outputs`` (``ooc-kernels run --adopt-outputs``) takes the outputs that
record no pipeline, or a pipeline of the same name, as its own; only when asked, never an
output of a pipeline with another name.  A record that names the folder by its absolute
path (``{"pipeline": NAME, "output_dir": FOLDER}``, what versions without folder ids wrote)
is the pipeline's own when it names the same pipeline and the same resolved folder.  Every other write, inside a
pipeline or not, records and checks nothing: ``est.save(path)`` replaces a pipeline's model
as it replaces any model of this library.

Examples
--------
>>> from ooc_kernels._output_owner import owned_by, owner_for, pipeline_owner
>>> owner = pipeline_owner("demo", "5f0c9d2e8a7b4c1d9e3f2a6b7c8d9e0f")
>>> with owned_by(owner, ["/data/out/model.zarr"], folder="/data/out"):
...     owner_for("/data/out/model.zarr"), owner_for("/data/elsewhere.zarr")
({'pipeline': 'demo', 'output_folder': '5f0c9d2e8a7b4c1d9e3f2a6b7c8d9e0f'}, None)
>>> owner_for("/data/out/model.zarr") is None
True
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import uuid
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from pathlib import Path

__all__ = ["FOLDER_ID_FILE", "OWNER_ATTR", "check_owner", "claim_folder", "folder_id",
           "mark_store", "new_folder_id", "owned_by", "owner_for", "pipeline_owner"]

#: The attribute (of a store's ``zarr.json``; the key of a metrics file) that records which
#: pipeline wrote an output.
OWNER_ATTR = "ooc_kernels_owner"

#: The file in a pipeline's output folder that holds the folder's id (JSON:
#: ``{"ooc_kernels_file": "output-folder", "id": 32 hex digits}``).
FOLDER_ID_FILE = ".ooc_kernels_output_folder.json"
_FOLDER_KIND = "output-folder"
_ID = re.compile(r"[0-9a-f]{32}")

# the run in progress in this context: its owner record (claim_folder may set its folder
# id), the absolute paths it owns, its resolved output folder, whether it adopts outputs
_CURRENT: ContextVar[tuple[dict, frozenset[str], str, bool] | None] = ContextVar(
    "ooc_kernels_output_owner", default=None)


def _key(path: str | os.PathLike) -> str:
    return os.path.abspath(os.fspath(path))


def pipeline_owner(name: str, output_folder: str) -> dict:
    """The owner record of the pipeline ``name`` writing into the output folder whose id
    (:func:`folder_id`) is ``output_folder``."""
    return {"pipeline": str(name), "output_folder": str(output_folder)}


def _id_error(path: Path, what: str):
    from ooc_kernels.exceptions import ForeignPathError

    return ForeignPathError(
        f"refusing to use {str(path)!r} as the id of a pipeline's output folder: {what}. "
        "ooc_kernels writes that file itself on a pipeline's first run into the folder; "
        "move or remove what is there yourself (the pipeline's next run then takes the "
        "outputs it finds in the folder as its own only with --adopt-outputs), or set "
        "save.output_dir to another folder.")


def folder_id(folder: str | os.PathLike) -> str | None:
    """The id recorded in ``folder``'s :data:`FOLDER_ID_FILE`, or ``None`` when there is none.

    Raises
    ------
    ForeignPathError
        The file is a symbolic link (never followed), a folder, a named pipe or any file
        that is not such a record; the message names it and the fix.
    """
    from ooc_kernels._untrusted import open_regular

    path = Path(folder) / FOLDER_ID_FILE
    if path.is_symlink():
        raise _id_error(path, "it is a symbolic link (a link is never followed)")
    if not path.exists():
        return None
    try:
        with open_regular(path, what=repr(str(path)), error=ValueError) as f:
            doc = json.loads(f.read(4096))
    except (OSError, ValueError):
        doc = None
    if not (isinstance(doc, dict) and doc.get("ooc_kernels_file") == _FOLDER_KIND
            and isinstance(doc.get("id"), str) and _ID.fullmatch(doc["id"])):
        raise _id_error(path, "it is not such a record (a JSON object with "
                              f"\"ooc_kernels_file\": {_FOLDER_KIND!r} and a 32-digit hex id)")
    return doc["id"]


def new_folder_id() -> str:
    """A fresh random folder id (recorded only by :func:`claim_folder`)."""
    return uuid.uuid4().hex


def claim_folder(folder: str | os.PathLike) -> str:
    """Write the folder id of the run in progress into ``folder`` unless it has one, and
    make the run's record carry the id the folder holds (another run's, written meanwhile).

    Call it after the run's outputs were checked, before it writes any of them.
    """
    current = _CURRENT.get()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    found = folder_id(folder)
    if found is None:
        path = folder / FOLDER_ID_FILE
        text = json.dumps({"ooc_kernels_file": _FOLDER_KIND, "id": current[0]["output_folder"]})
        tmp = folder / f".{FOLDER_ID_FILE}.tmp-{uuid.uuid4().hex}"
        try:
            tmp.write_text(text + "\n")
            # never replaces a file there: linking and exclusive creation fail when one exists
            # (written meanwhile by another first run, or not ours), which is kept and is
            # read and checked below
            with contextlib.suppress(FileExistsError):
                try:
                    os.link(tmp, path)
                except FileExistsError:
                    raise
                except OSError:  # no hard links on this file system: create it exclusively
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                                 | getattr(os, "O_NOFOLLOW", 0), 0o666)
                    with os.fdopen(fd, "w") as f:
                        f.write(text + "\n")
        finally:
            tmp.unlink(missing_ok=True)
        found = folder_id(folder)
    current[0]["output_folder"] = found
    return found


@contextlib.contextmanager
def owned_by(owner: dict, paths: Iterable[str | os.PathLike], *,
             folder: str | os.PathLike = "", adopt: bool = False) -> Iterator[dict]:
    """Within the block, writes to ``paths`` record ``owner`` and replace only its outputs
    (with ``adopt``, also those that record no pipeline or a pipeline of the same name);
    ``folder``: the resolved output folder.  Yields the record the writes carry."""
    record = dict(owner)
    token = _CURRENT.set((record, frozenset(_key(p) for p in paths), os.fspath(folder),
                          bool(adopt)))
    try:
        yield record
    finally:
        _CURRENT.reset(token)


def owner_for(path: str | os.PathLike) -> dict | None:
    """The owner record a write to ``path`` carries now, or ``None`` (not a pipeline's
    output, or no pipeline run in progress)."""
    current = _CURRENT.get()
    if current is None or _key(path) not in current[1]:
        return None
    return dict(current[0])


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


def _whose(found, owner: dict, folder: str) -> tuple[str, bool]:
    """Who wrote an output recording ``found`` (for the message), and whether
    ``adopt_outputs`` may take it."""
    if not (isinstance(found, dict) and "pipeline" in found):
        return ("with no record of a pipeline that wrote it (saved by hand with est.save, "
                "written by another ooc-kernels command, or by an ooc_kernels version that "
                "records no pipeline)", True)
    name = found["pipeline"]
    if name != owner["pipeline"]:
        return f"by the pipeline {name!r}", False
    if "output_folder" in found:
        return (f"by a run of the pipeline {name!r} into another output folder (id "
                f"{found['output_folder']!r}; this folder's id, in "
                f"{os.path.join(folder, FOLDER_ID_FILE)!r}, is {owner['output_folder']!r}): "
                "copied or moved here without the rest of its output folder", True)
    return (f"by the pipeline {name!r} into the output folder {found.get('output_dir')!r} "
            "(a record of an ooc_kernels version that names the folder by its absolute "
            "path)", True)


def check_owner(path: str | os.PathLike, what: str, found, error: type[Exception]) -> None:
    """Raise ``error`` when ``path``, an output of the pipeline run in progress, holds an
    ooc_kernels ``what`` whose owner record ``found`` is not that run's.

    The message names the path, who wrote what is there and the fixes: ``--adopt-outputs``
    where that would take it, another ``save.output_dir``, or removing it.
    """
    current = _CURRENT.get()
    owner = owner_for(path)
    if owner is None or found == owner:
        return
    _, _, folder, adopt = current
    if found == {"pipeline": owner["pipeline"], "output_dir": folder}:
        return  # the record naming the folder by its path: this pipeline and folder
    by, adoptable = _whose(found, owner, folder)
    if adopt and adoptable:
        return
    fix = ("Set save.output_dir to another folder, or move or remove it yourself if it is no "
           "longer needed.")
    if adoptable:
        fix = ("If the outputs in that folder are this pipeline's (written by an earlier "
               "ooc_kernels version, or copied there to continue from them), run the same "
               "command again with --adopt-outputs (run_pipeline(..., adopt_outputs=True)) "
               "to take them as its own; otherwise " + fix[0].lower() + fix[1:])
    raise error(
        f"refusing to replace {os.fspath(path)!r}: it is an ooc_kernels {what} written {by}, "
        f"not by a run of the pipeline {owner['pipeline']!r} into its output folder "
        f"{folder!r}, and a pipeline replaces only what its own runs wrote. {fix}"
    )
