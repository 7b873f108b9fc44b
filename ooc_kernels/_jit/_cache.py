"""Where the compiled kernels are cached: a per-user folder, never the package folder.

``numba.njit(cache=True)`` writes its cache (``__pycache__/*.nbi`` and ``*.nbc``) next to
the module's source.  For an installed package that is ``site-packages/ooc_kernels``: files
that ``pip uninstall`` does not know about, so the folder survives an uninstall and shadows a
later (editable) install of the package.  The library's kernels therefore use
:func:`njit`, which compiles with ``numba.njit`` and caches in :func:`cache_dir` instead:

1. ``$OOC_KERNELS_JIT_CACHE_DIR`` when set;
2. else ``$NUMBA_CACHE_DIR/ooc_kernels`` when numba's own cache folder is configured
   (``numba.config.CACHE_DIR``);
3. else the per-user cache folder: ``$XDG_CACHE_HOME/ooc_kernels`` (``~/.cache/ooc_kernels``)
   on Linux, ``~/Library/Caches/ooc_kernels`` on macOS, ``%LOCALAPPDATA%\\ooc_kernels`` on
   Windows,

each followed by ``jit/<version>-<digest>``, where ``<digest>`` is the SHA-256 of the source
of every kernel module: every module of ``ooc_kernels._jit`` and every ``kernels*.py`` of a
family (``ooc_kernels/families/**/kernels*.py``, where a family keeps its numba code).  A kernel's cache entry is thus only ever read by
the very sources that wrote it: another version of the library, or an edit to any kernel
module (a kernel inlines the kernels it calls from other modules, which numba's own
per-file check does not see), gives another folder.  Folders of versions no longer
installed can be deleted at any time.

When the folder cannot be created or written (a read-only home folder), the kernels are
compiled in every process, without a disk cache (set ``OOC_KERNELS_JIT_CACHE_DIR`` to a
writable folder to keep the cache).

numba's cache files are pickles, and loading a pickle can run any code, so the cache is
only used in a folder that no other user can write (:func:`cache_problem`): the three
folders the library creates (``<root>``, ``jit``, ``<version>-<digest>``) are created with
mode ``0o700`` and must be owned by the user, not links, and writable by nobody else, and
every folder above them must be owned by the user or by root and be writable by nobody
else unless it has the sticky bit (``/tmp``).  A folder that fails this (a shared
``NUMBA_CACHE_DIR``, ``OOC_KERNELS_JIT_CACHE_DIR=/shared/cache`` writable by a group) is
never read: the kernels are compiled in every process and an
:class:`~ooc_kernels.exceptions.OocKernelsWarning` names the folder and the fix, once per
folder and process.

Every index and data file the cache writes starts with a header and the CRC32C of the
pickle that follows (:func:`ooc_kernels._checksums.crc32c`), checked before the pickle is
read: a truncated file or a flipped byte (a damaged disk, a half-copied folder) is ignored
with an :class:`~ooc_kernels.exceptions.OocKernelsWarning` naming the file, and the kernel is
compiled again and its entry rewritten.  The checksum detects damage, not an attacker (who
can recompute it); the folder's permissions are what keep other users' files out.

Examples
--------
>>> from ooc_kernels._jit._cache import cache_dir
>>> cache_dir().parent.name
'jit'
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import pickle
import stat
import struct
import sys
import warnings
from pathlib import Path

import numba
from numba.core import config as numba_config
from numba.core.caching import (
    CompileResultCacheImpl,
    FunctionCache,
    IndexDataCacheFile,
    _CacheLocator,
    _SourceFileBackedLocatorMixin,
)

from ooc_kernels._checksums import crc32c
from ooc_kernels._version import __version__
from ooc_kernels.exceptions import OocKernelsWarning

__all__ = ["CACHE_DIR_ENV_VAR", "cache_dir", "cache_problem", "kernel_sources", "njit"]

#: The environment variable that names the folder of the compiled-kernel cache.
CACHE_DIR_ENV_VAR = "OOC_KERNELS_JIT_CACHE_DIR"

_JIT_DIR = Path(__file__).resolve().parent
_PACKAGE_DIR = _JIT_DIR.parent


def kernel_sources() -> list[Path]:
    """The kernel modules whose sources key the cache: ``_jit/*.py`` and the families'
    ``kernels*.py``, sorted by their path inside the package."""
    paths = [*_JIT_DIR.glob("*.py"), *(_PACKAGE_DIR / "families").rglob("kernels*.py")]
    return sorted(paths, key=lambda p: p.relative_to(_PACKAGE_DIR).as_posix())


@functools.cache
def _sources_digest() -> str:
    """SHA-256 (16 hex digits) of the path and bytes of every kernel module
    (:func:`kernel_sources`)."""
    h = hashlib.sha256()
    for path in kernel_sources():
        h.update(path.relative_to(_PACKAGE_DIR).as_posix().encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:16]


def _user_cache_root() -> Path:
    """The per-user cache folder of the platform (before ``ooc_kernels`` is appended)."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA")
        return Path(base) if base else Path.home() / "AppData" / "Local"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches"
    base = os.environ.get("XDG_CACHE_HOME")
    return Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"


def cache_dir() -> Path:
    """The folder that holds the compiled kernels of this installation of the library.

    Returns
    -------
    pathlib.Path
        ``<root>/jit/<version>-<digest of the kernel sources>``; ``<root>`` is
        ``$OOC_KERNELS_JIT_CACHE_DIR``, else ``$NUMBA_CACHE_DIR/ooc_kernels``, else the
        platform's per-user cache folder followed by ``ooc_kernels`` (see the module
        docstring).  The folder is not created here.
    """
    chosen = os.environ.get(CACHE_DIR_ENV_VAR)
    if chosen:
        root = Path(chosen).expanduser()
    elif numba_config.CACHE_DIR:
        root = Path(numba_config.CACHE_DIR).expanduser() / "ooc_kernels"
    else:
        root = _user_cache_root() / "ooc_kernels"
    return root.absolute() / "jit" / f"{__version__}-{_sources_digest()}"


_WARNED: set[str] = set()


def _warn_once(path: Path, message: str) -> None:
    if str(path) not in _WARNED:
        _WARNED.add(str(path))
        warnings.warn(message, OocKernelsWarning, stacklevel=3)


def _others_can_write(st: os.stat_result) -> bool:
    """Whether users other than the owner may write the folder ``st`` describes."""
    if st.st_mode & 0o002:
        return True
    return bool(st.st_mode & 0o020) and not _private_group(st.st_gid)


@functools.cache
def _private_group(gid: int) -> bool:
    """Whether ``gid`` is the user's private group: named as the user, the user's primary
    group, with no other listed members."""
    try:
        import grp
        import pwd

        user = pwd.getpwuid(os.getuid()).pw_name
        group = grp.getgrgid(gid)
    except (ImportError, KeyError):
        return False
    return gid == os.getgid() and group.gr_name == user and set(group.gr_mem) <= {user}


def cache_problem(path: str | os.PathLike) -> str | None:
    """Why another user could write the cache folder ``path``, or ``None`` when only the user
    (and root) can.

    ``path`` and its two parents (the folders the library creates: ``<root>/jit/<version>``)
    must be folders (``jit`` and ``<version>`` not links), owned by the user and writable by
    nobody else; every folder above them, and every folder of the path with its links
    resolved, must be owned by the user or by root and be writable by nobody else unless it
    has the sticky bit (``/tmp``, where no one can rename another's folder).  A folder
    writable by its group counts as writable by nobody else when that group is the user's
    private group (named as the user, the user's primary group, no other members: the
    ``umask 002`` homes of Debian and Ubuntu).  Always ``None`` where there are no POSIX
    owners (Windows keeps the cache in the user's own ``LOCALAPPDATA``).

    Examples
    --------
    >>> import os, tempfile
    >>> root = tempfile.mkdtemp()
    >>> for sub in ("jit", "jit/v"):
    ...     os.mkdir(os.path.join(root, sub), 0o700)
    >>> cache_problem(os.path.join(root, "jit", "v")) is None
    True
    >>> os.chmod(os.path.join(root, "jit"), 0o777)
    >>> cache_problem(os.path.join(root, "jit", "v"))      # doctest: +ELLIPSIS
    "the folder '...jit' can be written by other users (mode 0o777)"
    """
    if not hasattr(os, "getuid"):
        return None
    uid = os.getuid()
    path = Path(os.path.abspath(path))
    # the root may be a link (its target and the folders above both are checked)
    own = [(path, os.lstat), (path.parent, os.lstat), (path.parent.parent, os.stat)]
    for folder, stat_of in own:
        st = stat_of(folder)
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            return f"{str(folder)!r} is not a folder (a link, or a file)"
        if st.st_uid != uid:
            return f"the folder {str(folder)!r} belongs to user id {st.st_uid}, not {uid}"
        if _others_can_write(st):
            return (f"the folder {str(folder)!r} can be written by other users "
                    f"(mode {oct(stat.S_IMODE(st.st_mode))})")
    above = [*path.parent.parent.parents, *Path(os.path.realpath(path)).parents]
    for folder in above:
        st = os.stat(folder)
        if st.st_uid not in (uid, 0):
            return f"the folder {str(folder)!r} belongs to user id {st.st_uid}"
        if _others_can_write(st) and not st.st_mode & stat.S_ISVTX:
            return (f"the folder {str(folder)!r} can be written by other users "
                    f"(mode {oct(stat.S_IMODE(st.st_mode))}, no sticky bit)")
    return None


class _KernelCacheLocator(_SourceFileBackedLocatorMixin, _CacheLocator):
    """Numba cache locator: every kernel of ``ooc_kernels._jit`` in :func:`cache_dir`.

    The file names numba derives (``<module>.<function>-<line>.pyXY.nbi``) are unique
    within the kernel package, so one flat folder holds them all.  Entries are still checked
    against the hash of their source file and of the function's bytecode by numba.
    """

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(cache_dir())

    def get_cache_path(self) -> str:
        return self._cache_path

    def ensure_cache_path(self) -> None:
        """Create the cache folder (mode ``0o700``) and check that only the user can write
        it; ``OSError`` (numba: no disk cache) when it cannot be made or is not private."""
        path = Path(self._cache_path)
        path.parent.parent.parent.mkdir(parents=True, exist_ok=True)
        for folder in (path.parent.parent, path.parent, path):
            folder.mkdir(mode=0o700, exist_ok=True)
        problem = cache_problem(path)
        if problem is not None:
            _warn_once(path, f"the compiled-kernel cache folder {str(path)!r} is not used: "
                       f"{problem}. numba's cache files are pickles, which run code when "
                       "read, so the kernels are compiled in this process instead. Set "
                       f"{CACHE_DIR_ENV_VAR} to a folder only you can write (e.g. one made "
                       "by `mktemp -d`), or remove write access for others "
                       "(`chmod go-w FOLDER`).")
            raise PermissionError(problem)
        super().ensure_cache_path()


class _KernelCacheImpl(CompileResultCacheImpl):
    _locator_classes = [_KernelCacheLocator]


class _KeyedDataCacheFile(IndexDataCacheFile):
    """numba's index and data files, safe for processes that compile at the same time.

    numba names a new entry's data file by the first free number in the index it has just
    read (``<base>.1.nbc``, ``<base>.2.nbc`` ...).  Two processes that compile two signatures
    of one kernel at once (Dask worker processes, parallel test workers) both read the
    same index, both pick ``<base>.1.nbc``, and the index of one can end up naming the code
    of the other: a later process then runs the machine code of another signature.  Here
    a data file is named by a digest of its key (signature, target, bytecode), so every
    name holds the code of its own key; the data file is written before the index names it,
    and the index is read again just before it is written, so that a concurrent writer
    costs at most a missed entry (compiled again later), never a wrong one.
    """

    def save(self, key, data):
        data_name = self._keyed_data_name(key)
        self._save_data(data_name, data)
        overloads = self._load_index()
        if overloads.get(key) != data_name:
            overloads[key] = data_name
            self._save_index(overloads)

    def _keyed_data_name(self, key) -> str:
        digest = hashlib.sha256(repr(key).encode()).hexdigest()[:16]
        return self._index_name[: -len(".nbi")] + f".{digest}.nbc"

    # Every file: _MAGIC, the CRC32C of the rest, then numba's pickle (checked before it is
    # unpickled; a damaged file is a cache miss, compiled again and rewritten).

    def _write_framed(self, path: str, payload: bytes) -> None:
        with self._open_for_write(path) as f:
            f.write(_framed(payload))

    def _read_framed(self, path: str) -> bytes | None:
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return None
        payload = _unframed(raw)
        if payload is None:
            warnings.warn(
                f"the compiled-kernel cache file {path!r} is damaged (truncated, or its "
                "CRC32C checksum does not match); it is ignored, and the kernel is compiled "
                "again and the file rewritten. Delete the folder "
                f"{self._cache_path!r} if this repeats.", OocKernelsWarning, stacklevel=2)
        return payload

    def _load_index(self):
        payload = self._read_framed(self._index_path)
        if payload is None:
            return {}
        stream = io.BytesIO(payload)
        if pickle.load(stream) != self._version:
            return {}
        stamp, overloads = pickle.loads(stream.read())
        return overloads if stamp == self._source_stamp else {}

    def _save_index(self, overloads) -> None:
        payload = pickle.dumps(self._version, protocol=-1)
        self._write_framed(self._index_path,
                           payload + self._dump((self._source_stamp, overloads)))

    def _load_data(self, name):
        payload = self._read_framed(self._data_path(name))
        return None if payload is None else pickle.loads(payload)

    def _save_data(self, name, data) -> None:
        self._write_framed(self._data_path(name), self._dump(data))


#: The first bytes of every file of the kernel cache (then the CRC32C of the rest).
_MAGIC = b"OOCKJIT1"
_HEAD = len(_MAGIC) + 4


def _framed(payload: bytes) -> bytes:
    """``payload`` behind :data:`_MAGIC` and its CRC32C."""
    return _MAGIC + struct.pack("<I", crc32c(payload)) + payload


def _unframed(raw: bytes) -> bytes | None:
    """The payload of a :func:`_framed` file, or ``None`` when it is not one or fails its
    checksum."""
    if len(raw) < _HEAD or raw[:len(_MAGIC)] != _MAGIC:
        return None
    payload = raw[_HEAD:]
    return payload if struct.unpack("<I", raw[len(_MAGIC):_HEAD])[0] == crc32c(payload) \
        else None


class _KernelFunctionCache(FunctionCache):
    """numba's on-disk function cache, located by :class:`_KernelCacheLocator` only, with
    data files named by their key (:class:`_KeyedDataCacheFile`)."""

    _impl_class = _KernelCacheImpl

    def __init__(self, py_func):
        super().__init__(py_func)
        self._cache_file = _KeyedDataCacheFile(
            cache_path=self._cache_path, filename_base=self._impl.filename_base,
            source_stamp=self._impl.locator.get_source_stamp())


def _enable_cache(dispatcher) -> None:
    """Cache ``dispatcher``'s compiled code in :func:`cache_dir` (what numba's
    ``enable_caching`` does with its own locators).  An unwritable folder leaves the
    dispatcher without a disk cache: it compiles once per process."""
    try:
        dispatcher._cache = _KernelFunctionCache(dispatcher.py_func)
    except RuntimeError:  # numba: "cannot cache function ...: no locator available"
        return


def njit(*, cache: bool = True, **options):
    """``numba.njit`` whose ``cache=True`` caches in :func:`cache_dir`, not next to the source.

    Parameters
    ----------
    cache : bool, default True
        Keep the compiled code on disk, in :func:`cache_dir`.
    **options
        Passed to ``numba.njit`` (``nogil``, ``fastmath`` ...).

    Returns
    -------
    callable
        A decorator that compiles a function into a numba dispatcher.
    """
    def decorate(func):
        dispatcher = numba.njit(**options)(func)
        if cache:
            _enable_cache(dispatcher)
        return dispatcher

    return decorate
