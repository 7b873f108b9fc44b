"""Where a DSPDC fit keeps its duals: a work store private to the fit, locked while in use.

Every fit gets a folder of its own, created with :func:`tempfile.mkdtemp` semantics (a
new, unique name) inside a parent folder:

* ``work_dir`` when it is given;
* else ``PATH.work`` beside the checkpoint ``PATH`` when the fit writes one;
* else the system's temporary folder.

The store is locked (:class:`~ooc_kernels._chunk_store.FolderLock`) for the whole fit, so
two fits never share one, whatever their ``work_dir`` and ``random_state``.  A fit without a
checkpoint removes its store when it ends (returns or raises).  A fit with a checkpoint keeps
the store that its last checkpoint points to (a resumed fit reads those duals): the store's
name is recorded in the checkpoint and looked up in the same parent folder on resume.  Once
a fit has written its first checkpoint, the stores of earlier fits on that checkpoint are
removed; until then they are left as they were, so a fit that fails early leaves the previous
checkpoint resumable.

A checkpoint is itself locked while a fit writes it: the folder ``PATH.work`` holds the lock
(and, without ``work_dir``, the stores).  A second fit on the same checkpoint path, fresh or
resumed, is refused with :class:`~ooc_kernels.exceptions.CheckpointInUseError` before it
reads or writes anything.  Only folders this library marked as work folders are ever emptied
or removed; anything else at ``PATH.work`` is refused
(:class:`~ooc_kernels.exceptions.ForeignPathError`).

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> from ooc_kernels.families.dspdc._work import WorkStores
>>> parent = tempfile.mkdtemp()
>>> first, second = WorkStores(parent, None), WorkStores(parent, None)
>>> a, b = first.new_store(), second.new_store()
>>> a != b and Path(a).parent == Path(b).parent == Path(parent)
True
>>> first.close(); second.close()
>>> sorted(Path(parent).iterdir())
[]
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from ooc_kernels._atomic import KINDS, expand_user, store_around
from ooc_kernels._paths import user_path
from ooc_kernels._chunk_store import (
    WORK_MARKER,
    FolderLock,
    is_work_folder,
    mark_work_folder,
)
from ooc_kernels.exceptions import (
    CheckpointError,
    CheckpointInUseError,
    ForeignPathError,
    WorkStoreInUseError,
)
from ooc_kernels.parallel.checkpoint import START_OVER

__all__ = ["WorkStores", "checkpoint_work_folder"]

_PREFIX = "dspdc-"


def checkpoint_work_folder(checkpoint: str | os.PathLike) -> Path:
    """``PATH.work``: the folder beside the checkpoint ``PATH`` that holds its lock."""
    return Path(str(checkpoint) + ".work")


def _only_markers(folder: Path) -> bool:
    return all(p.name in (WORK_MARKER, ".lock") for p in folder.iterdir())


class WorkStores:
    """The work store of one DSPDC fit and the locks the fit holds.

    Parameters
    ----------
    work_dir : str, bytes, os.PathLike or None
        The estimator's ``work_dir`` (read by :func:`~ooc_kernels._paths.user_path`).
    checkpoint : str, path or None
        The checkpoint the fit writes (or resumes from).
    """

    def __init__(self, work_dir, checkpoint) -> None:
        self.work_dir = None if work_dir is None else user_path(work_dir, "work_dir")
        self.checkpoint = None if checkpoint is None else Path(expand_user(checkpoint))
        self.store: Path | None = None
        self._locks: list[FolderLock] = []
        self._keep = False            # a checkpoint points to the store
        self._swept = False
        self._created_companion = False

    # ------------------------------------------------------------------ where
    @property
    def _parent(self) -> Path:
        if self.work_dir is not None:
            return self.work_dir
        if self.checkpoint is not None:
            return checkpoint_work_folder(self.checkpoint)
        return Path(tempfile.gettempdir())

    @property
    def _prefix(self) -> str:
        if self.checkpoint is None:
            return _PREFIX
        where = str(Path(os.path.abspath(self.checkpoint)))
        return f"{_PREFIX}{hashlib.sha256(where.encode()).hexdigest()[:12]}-"

    # ------------------------------------------------------------------ claims
    def claim_checkpoint(self) -> None:
        """Lock the checkpoint (its ``PATH.work`` folder) for this fit, before anything is
        read or written.

        Raises
        ------
        CheckpointInUseError
            Another fit holds the lock.
        ForeignPathError
            ``PATH.work`` exists and is not a work folder of this library.
        """
        folder = checkpoint_work_folder(self.checkpoint)
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            self._foreign(folder, "it is a file or a symbolic link")
        if folder.is_dir() and not is_work_folder(folder):
            if any(folder.iterdir()):
                self._foreign(folder, "it holds files and has no work-folder marker")
        self._created_companion = not folder.exists()
        mark_work_folder(folder)
        lock = FolderLock(folder)
        if not lock.acquire():
            raise CheckpointInUseError(
                f"checkpoint {str(self.checkpoint)!r} is in use by another fit (it holds the "
                f"lock in {str(folder)!r}). Wait until that fit ends, then resume from the "
                "checkpoint, or give this fit another checkpoint path."
            )
        self._locks.append(lock)

    def _foreign(self, folder: Path, why: str) -> None:
        raise ForeignPathError(
            f"{str(folder)!r} is not a work folder of this library ({why}); a DSPDC fit with "
            f"checkpoint {str(self.checkpoint)!r} keeps its lock and its duals there and never "
            "replaces anything else. Move that path aside, or choose another checkpoint path."
        )

    def _lock(self, folder: Path) -> None:
        lock = FolderLock(folder)
        if not lock.acquire():
            raise WorkStoreInUseError(
                f"the work store {str(folder)!r} is in use by another fit. Wait until that fit "
                "ends, or resume from another checkpoint."
            )
        self._locks.append(lock)

    def new_store(self) -> str:
        """A new store for a fresh fit: a unique folder in the parent folder, marked and
        locked."""
        parent = self._parent
        inside = store_around(parent)
        if inside is not None:
            raise ForeignPathError(
                f"work_dir {str(parent)!r} lies inside {str(inside[0])!r}, a "
                f"{KINDS[inside[1]]} that ooc_kernels wrote: the fit's work store would be "
                "removed with it when that store is replaced or removed. Give work_dir a "
                "folder outside every store.")
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):   # a file on the way
            blocking = next(p for p in (parent, *parent.parents) if p.exists())
            raise ForeignPathError(
                f"work_dir {str(parent)!r} is not a folder: {str(blocking)!r} is a file; a "
                "DSPDC fit keeps the duals of its rows in a new folder inside work_dir and "
                "never replaces a file. Give work_dir a folder (it is created when missing)."
            ) from None
        store = Path(tempfile.mkdtemp(prefix=self._prefix, dir=parent))
        mark_work_folder(store)
        self._lock(store)
        self.store = store
        return str(store)

    def resume_store(self, recorded: str) -> str:
        """The store a checkpoint recorded (looked up by name in the parent folder), locked.

        Raises
        ------
        CheckpointError
            The store is missing or is not a work folder of this library.
        """
        store = self._parent / Path(recorded).name
        if not (Path(recorded).name.startswith(_PREFIX) and is_work_folder(store)):
            raise CheckpointError(
                f"the work store {str(store)!r} that checkpoint {str(self.checkpoint)!r} "
                "needs (the duals of its rows) is missing or was replaced. Resume with the "
                "work_dir of the fit that wrote the checkpoint, or start the fit again with "
                f"{START_OVER}."
            )
        self._lock(store)
        self.store, self._keep = store, True
        return str(store)

    # ------------------------------------------------------------------ life cycle
    def checkpoint_written(self) -> None:
        """A checkpoint now points to this fit's store: keep it, and remove the stores of
        earlier fits on the same checkpoint (those no one has locked)."""
        self._keep = True
        if self._swept or self.store is None:
            return
        self._swept = True
        for other in self._parent.iterdir():
            if (other == self.store or not other.name.startswith(self._prefix)
                    or not is_work_folder(other)):
                continue
            lock = FolderLock(other)
            if lock.acquire():
                try:
                    shutil.rmtree(other, ignore_errors=True)
                finally:
                    lock.release()

    def close(self) -> None:
        """End of the fit: remove the store unless a checkpoint points to it, and release
        every lock."""
        try:
            if self.store is not None and not self._keep:
                shutil.rmtree(self.store, ignore_errors=True)
            if self.checkpoint is not None and self._created_companion:
                folder = checkpoint_work_folder(self.checkpoint)
                if folder.is_dir() and _only_markers(folder) and not self._keep:
                    shutil.rmtree(folder, ignore_errors=True)
        finally:
            for lock in reversed(self._locks):
                lock.release()
            self._locks = []
