"""Chunk-local state: arrays that belong to one chunk (the dual variables of DSPDC), kept in
a work store beside the model instead of in the state that every task receives.

An engine feature usable by any chunk algorithm; it sits in the base layer (NumPy and Zarr
only, no Dask) so that the algorithms of :mod:`ooc_kernels.families`
read and write it inside their tasks.

A task reads its chunk's arrays at the version its state names, updates them and writes them
under a *new* version, ``(epoch, round)`` of the round that wrote them; the state then
records that version for the chunk (:class:`ChunkVersions`).  Nothing is ever overwritten in
place, so

* a retried task (a worker lost half way, a task run twice by the scheduler) reads exactly
  what the first attempt read and writes the same bytes under the same version;
* a resumed fit reads the versions its checkpoint recorded, whatever later rounds wrote
  after that checkpoint;
* a half-written version is never read: only a round whose tasks have all returned makes
  the state point to it.

Every version is one file, written aside and renamed into place (``os.replace``): a short
header, then the array in NumPy's ``.npy`` format (a fit writes and reads one per chunk and
round, so a version costs one file, not a Zarr array's folder and metadata).  The header
names the version's identity, ``<store>/<name>/c<chunk>/e<epoch>_r<round>`` (``<store>``
the name of the store's folder, unique per fit), and carries a CRC-32C-like checksum
(``zlib.crc32``) of that identity and the array's bytes, both checked when read: a damaged
version, or one copied or renamed from another chunk, version or store (whatever its
length), is a :class:`~ooc_kernels.exceptions.CorruptChunkError` that names the chunk, the
version and the store.  Versions written without that identity (the earlier formats: a
file whose checksum covers the values only, or a Zarr array of ooc_kernels 0.2) cannot be
shown to belong to their chunk and are refused like a version without a checksum.  :meth:`ChunkStore.prune` removes the versions no state and no checkpoint points to.
The store must be reachable from every worker: a local folder for the local schedulers and a
``LocalCluster``, a shared file system for a cluster of several machines.

Examples
--------
>>> import tempfile
>>> import numpy as np
>>> from ooc_kernels._chunk_store import ChunkStore, ChunkVersions
>>> store = ChunkStore(tempfile.mkdtemp() + "/work.zarr")
>>> versions = ChunkVersions.initial(n_chunks=3)
>>> store.read("y", 1, versions[1], n_rows=4).tolist()      # never written: the initial zeros
[0.0, 0.0, 0.0, 0.0]
>>> store.write("y", 1, (0, 0), np.arange(4.0))
>>> versions = versions.updated([1], (0, 0))
>>> store.read("y", 1, versions[1], n_rows=4).tolist()
[0.0, 1.0, 2.0, 3.0]
>>> store.versions("y", 1)
[(0, 0)]
"""

from __future__ import annotations

import errno
import io
import os
import shutil
import stat
import struct
import uuid
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ooc_kernels._atomic import write_failed
from ooc_kernels._untrusted import open_regular
from ooc_kernels.exceptions import CorruptChunkError, ForeignPathError, ValidationError

__all__ = ["INITIAL", "WORK_MARKER", "ChunkStore", "ChunkVersions", "FolderLock",
           "is_work_folder", "mark_work_folder"]

#: The version of an array never written: read as the algorithm's initial value (zeros).
INITIAL = (-1, -1)
#: The file that marks a folder as a work store (or a folder of work stores) of this
#: library: only such folders are ever emptied or removed by a fit.
WORK_MARKER = ".ooc_kernels_work"
_LOCK_FILE = ".lock"
_CHECKSUM = "ooc_kernels_crc32"
#: The first bytes of a version's file (then its checksum, the length of its identity, the
#: identity, then the array as ``.npy``).
_MAGIC = b"OOCKCHK2"
#: The first bytes of a version written without its identity (the checksum of the values
#: only): refused when read.
_MAGIC_UNTIED = b"OOCKCHNK"


@dataclass(frozen=True)
class ChunkVersions:
    """The version ``(epoch, round)`` of every chunk's local arrays that a state stands on.

    An ``(n_chunks, 2)`` int64 array wrapped so that it is immutable: a new round makes a
    new object (:meth:`updated`), so states before and after a round never share it.
    """

    table: np.ndarray

    @classmethod
    def initial(cls, n_chunks: int) -> ChunkVersions:
        """Every chunk at :data:`INITIAL`."""
        table = np.full((int(n_chunks), 2), -1, dtype=np.int64)
        table.setflags(write=False)
        return cls(table)

    def __getitem__(self, chunk: int) -> tuple[int, int]:
        e, r = self.table[int(chunk)]
        return int(e), int(r)

    def __len__(self) -> int:
        return len(self.table)

    def updated(self, chunks: Iterable[int], version: tuple[int, int]) -> ChunkVersions:
        """The table with ``chunks`` moved to ``version``."""
        table = self.table.copy()
        table[list(chunks)] = version
        table.setflags(write=False)
        return ChunkVersions(table)


def _chunk_dir(chunk: int) -> str:
    return f"c{int(chunk):07d}"


def _key(version: tuple[int, int]) -> str:
    return f"e{int(version[0]):06d}_r{int(version[1]):06d}"


def _parse(key: str) -> tuple[int, int] | None:
    parts = key.split("_")
    if len(parts) != 2 or parts[0][:1] != "e" or parts[1][:1] != "r":
        return None
    try:
        return int(parts[0][1:]), int(parts[1][1:])
    except ValueError:
        return None


def _checksum(array: np.ndarray, identity: bytes = b"") -> int:
    """The CRC-32 of ``identity`` followed by the array's bytes."""
    crc = zlib.crc32(identity)
    return zlib.crc32(np.ascontiguousarray(array).view(np.uint8).reshape(-1), crc) & 0xFFFFFFFF


def _identity(store: Path, name: str, chunk: int, version: tuple[int, int]) -> bytes:
    """The identity a version's header names and its checksum covers: the store's folder
    name, the array's name, the chunk and the version."""
    return f"{store.name}/{name}/{_chunk_dir(chunk)}/{_key(version)}".encode()


def _read_version(where: Path) -> tuple[np.ndarray, int | None, bytes | None]:
    """``(array, checksum, identity)`` of one version: a file (:data:`_MAGIC`, the checksum,
    the identity's length and the identity, then the array in NumPy's ``.npy`` format).
    Versions of the earlier formats, a file of :data:`_MAGIC_UNTIED` or a Zarr array with
    the checksum in its attributes (ooc_kernels 0.2), have no identity (None); a file of
    neither magic has no checksum either."""
    if where.is_symlink():   # never followed: a version is a file the store wrote itself
        raise OSError(f"{str(where)!r} is a symbolic link, not a version file")
    if where.is_dir():
        import zarr

        arr = zarr.open_array(str(where), mode="r")
        return arr[...], arr.attrs.get(_CHECKSUM), None
    # a regular file only: a named pipe or a device in its place is refused, never read
    with open_regular(where, what=repr(str(where)), error=OSError) as f:
        raw = f.read()
    if raw[:len(_MAGIC_UNTIED)] == _MAGIC_UNTIED:
        head = len(_MAGIC_UNTIED) + 4
        data = np.lib.format.read_array(io.BytesIO(raw[head:]), allow_pickle=False)
        return data, struct.unpack("<I", raw[len(_MAGIC_UNTIED):head])[0], None
    if raw[:len(_MAGIC)] != _MAGIC:
        return np.empty(0), None, None
    at = len(_MAGIC)
    crc, length = struct.unpack("<IH", raw[at:at + 6])
    identity = raw[at + 6:at + 6 + length]
    data = np.lib.format.read_array(io.BytesIO(raw[at + 6 + length:]), allow_pickle=False)
    return data, crc, identity


def _remove_earlier_format(where: Path) -> None:
    """Remove a version written as a Zarr array (the format of version 0.2), only if it is
    one: a real folder whose ``zarr.json`` names it a chunk-local array, never a link or a
    folder of anything else."""
    from ooc_kernels._atomic import store_kind

    if where.is_symlink() or store_kind(where) != "chunk-local":
        raise CorruptChunkError(
            f"{str(where)!r} is not a chunk-local version written by ooc_kernels (a link, or "
            "a folder of something else) and is left alone; remove it by hand if it is not "
            "yours, or give the fit another work folder.")
    shutil.rmtree(where)


class ChunkStore:
    """A folder of arrays, one file per version: ``NAME/c<chunk>/e<epoch>_r<round>`` (a
    version written as a Zarr array, by ooc_kernels 0.2, is refused when read, and replaced
    or pruned like a file).

    Parameters
    ----------
    path : str or os.PathLike
        The work store's folder (created when first written).  Picklable: tasks get the
        object and open the arrays themselves.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"ChunkStore({str(self.path)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChunkStore) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    def _folder(self, name: str) -> Path:
        if not name.isidentifier():
            raise ValidationError(f"chunk-local array names are identifiers, got {name!r}.")
        return self.path / name

    def read(self, name: str, chunk: int, version: tuple[int, int], *, n_rows: int,
             dtype: str | np.dtype = "float64") -> np.ndarray:
        """The array ``name`` of ``chunk`` at ``version`` (zeros of ``n_rows`` at
        :data:`INITIAL`, and for a chunk without rows), checked against its checksum and
        its header: the identity of this store, ``name``, ``chunk`` and ``version`` (which
        the checksum covers too, so a version copied from another chunk, version or store
        is refused), and ``n_rows`` values of ``dtype`` (the checksum covers the values'
        bytes, so an edited header, ``<f8`` made ``>f8``, is caught here).

        Raises
        ------
        CorruptChunkError
            The version is missing, unreadable or damaged, belongs to another chunk,
            version or store, or was written without its identity (an earlier format)."""
        if tuple(version) == INITIAL or int(n_rows) == 0:
            return np.zeros(int(n_rows), dtype=dtype)
        where = self._folder(name) / _chunk_dir(chunk) / _key(version)
        try:
            data, expected, identity = _read_version(where)
        except Exception as exc:  # noqa: BLE001 - missing or unreadable: one clear error
            raise CorruptChunkError(
                f"chunk-local array {name!r} of chunk {chunk} at version (epoch, round) = "
                f"{tuple(version)} cannot be read from the work store {str(self.path)!r} "
                f"({type(exc).__name__}: {exc}). The work store was removed or damaged: "
                "start the fit again without resume (or from an earlier checkpoint whose "
                "work store is intact)."
            ) from None
        wanted = _identity(self.path, name, chunk, version)
        if expected is not None and identity is None:
            raise CorruptChunkError(
                f"chunk-local array {name!r} of chunk {chunk} at version {tuple(version)} in "
                f"the work store {str(self.path)!r} was written without its chunk's identity "
                "(by an earlier version of ooc_kernels), so nothing shows that it holds this "
                "chunk's values, and it is refused. Delete the work store (the fit's work_dir, "
                "or PATH.work beside its checkpoint) and fit again with resume=False."
            )
        if identity is not None and identity != wanted:
            raise CorruptChunkError(
                f"chunk-local array {name!r} of chunk {chunk} at version {tuple(version)} in "
                f"the work store {str(self.path)!r} holds the values of "
                f"{identity.decode(errors='replace')!r}, not of {wanted.decode()!r}: the file "
                "was copied or renamed from another chunk, version or work store, or its "
                "header is damaged. Delete the work store (the fit's work_dir, or PATH.work "
                "beside its checkpoint) and fit again with resume=False."
            )
        crc = "missing" if expected is None else \
            "ok" if _checksum(data, wanted) == expected else "mismatch"
        if data.shape != (int(n_rows),) or data.dtype != np.dtype(dtype) or crc != "ok":
            raise CorruptChunkError(
                f"chunk-local array {name!r} of chunk {chunk} at version {tuple(version)} in "
                f"the work store {str(self.path)!r} is damaged (shape {data.shape}, expected "
                f"({int(n_rows)},); dtype {data.dtype.str!r}, expected "
                f"{np.dtype(dtype).str!r}; checksum {crc}). Start the fit again without "
                "resume."
            )
        return data

    def write(self, name: str, chunk: int, version: tuple[int, int],
              array: np.ndarray) -> None:
        """Write ``array`` as ``name`` of ``chunk`` at ``version`` (aside, then renamed into
        place; rewriting a version replaces it whole)."""
        array = np.ascontiguousarray(array)
        target = self._folder(name) / _chunk_dir(chunk) / _key(version)
        for folder in (self.path, target.parent.parent, target.parent):
            if folder.is_symlink():  # writing through it would leave the work store
                raise CorruptChunkError(
                    f"{str(folder)!r} in the work store is a link; chunk-local arrays are "
                    "never written through one. Remove the link, or give the fit another "
                    "work folder.")
        target.parent.mkdir(parents=True, exist_ok=True)
        identity = _identity(self.path, name, chunk, version)
        buffer = io.BytesIO()
        buffer.write(_MAGIC + struct.pack("<IH", _checksum(array, identity), len(identity))
                     + identity)
        np.lib.format.write_array(buffer, array, allow_pickle=False)
        tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
        existed = target.exists()
        try:
            tmp.write_bytes(buffer.getvalue())
            if target.is_dir() or target.is_symlink():
                _remove_earlier_format(target)     # the same version in the earlier format
            os.replace(tmp, target)
        except OSError as err:  # a full disk, a quota: the library's error, naming the file
            failed = write_failed(err, target, "chunk-local array", existed)
            if failed is err:
                raise
            raise failed from err
        finally:
            tmp.unlink(missing_ok=True)

    def versions(self, name: str, chunk: int) -> list[tuple[int, int]]:
        """The versions of ``name`` of ``chunk`` present in the store, sorted."""
        folder = self._folder(name) / _chunk_dir(chunk)
        if not folder.is_dir():
            return []
        return sorted(v for v in (_parse(p.name) for p in folder.iterdir()) if v is not None)

    def prune(self, name: str, keep: Sequence[ChunkVersions],
              chunks: Iterable[int] | None = None) -> int:
        """Remove the versions of ``name`` that none of ``keep`` points to, in ``chunks``
        (default: every chunk; a round prunes only its own); return how many."""
        folder = self._folder(name)
        if not folder.is_dir():
            return 0
        if chunks is None:
            chunks = [int(p.name[1:]) for p in folder.iterdir()
                      if p.name[:1] == "c" and p.name[1:].isdigit()]
        removed = 0
        for chunk in chunks:
            wanted = {v[int(chunk)] for v in keep}
            for version in self.versions(name, chunk):
                if version not in wanted:
                    where = folder / _chunk_dir(chunk) / _key(version)
                    if where.is_dir() and not where.is_symlink():
                        _remove_earlier_format(where)
                    else:
                        where.unlink(missing_ok=True)
                    removed += 1
        return removed

    def remove(self) -> None:
        """Delete the whole work store."""
        shutil.rmtree(self.path, ignore_errors=True)


def mark_work_folder(folder: str | os.PathLike) -> Path:
    """Create ``folder`` (and its parents) and mark it as a work folder of this library."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / WORK_MARKER
    if not marker.is_file():
        marker.write_text("chunk-local arrays of ooc_kernels fits; removed by the fits\n")
    return folder


def is_work_folder(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` is a folder that :func:`mark_work_folder` marked (never a
    symbolic link)."""
    folder = Path(folder)
    return (folder.is_dir() and not folder.is_symlink()
            and (folder / WORK_MARKER).is_file())


def _try_lock(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


class FolderLock:
    """An exclusive lock on a folder: ``flock`` on its ``.lock`` file, so that one fit at a
    time uses a work store or a checkpoint.

    The lock belongs to one open file, so two threads of one process exclude each other as
    two processes do; it is released when :meth:`release` is called or the process ends
    (a killed fit never leaves a stale lock).  On a network file system the lock is as good
    as that file system's ``flock``.

    Parameters
    ----------
    folder : str or os.PathLike
        An existing folder.

    Examples
    --------
    >>> import tempfile
    >>> from ooc_kernels._chunk_store import FolderLock
    >>> folder = tempfile.mkdtemp()
    >>> first, second = FolderLock(folder), FolderLock(folder)
    >>> first.acquire(), second.acquire()
    (True, False)
    >>> first.release(); second.acquire()
    True
    >>> second.release()
    """

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Take the lock if no one holds it; False if another holder has it.

        Raises
        ------
        ForeignPathError
            The folder's ``.lock`` is a symbolic link (never followed: opening it would
            create or lock a file elsewhere), a folder or anything but a regular file.
        """
        if self._fd is not None:
            return True
        where = self.folder / _LOCK_FILE
        try:
            fd = os.open(where, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except OSError as err:
            if err.errno not in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
                raise
            fd = None
        if fd is None or not stat.S_ISREG(os.fstat(fd).st_mode):
            if fd is not None:
                os.close(fd)
            raise ForeignPathError(
                f"{str(where)!r} is not a lock file of this library (a symbolic link, a folder "
                "or another kind of file; a link is never followed); the fit keeps its lock "
                "there. Remove it, or give the fit another work folder or checkpoint path.")
        if not _try_lock(fd):
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        """Let the lock go (closing its file releases it)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)
