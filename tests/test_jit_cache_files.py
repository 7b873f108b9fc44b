"""The compiled-kernel cache is read only from a folder no other user can write, and every
file of it is checked against its CRC32C before numba unpickles it.

numba's cache files are pickles: reading one runs whatever code it names.  The folder checks
are tested with a planted index that would create a sentinel folder when unpickled; the
checksums with a truncated and a byte-flipped file, whose kernel must still give the
NumPy result.
"""

from __future__ import annotations

import os
import pickle

import numba
import numpy as np
import pytest

from ooc_kernels._jit import _cache
from ooc_kernels._jit._cache import CACHE_DIR_ENV_VAR, cache_dir, cache_problem, njit
from ooc_kernels.exceptions import OocKernelsWarning


def _probe(x):
    return x * 2.0 + 1.0


class _Plant:
    """Unpickling it creates the folder ``path``: proof that the cache file ran code."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return os.mkdir, (str(self.path),)


def _index_name(tmp_path, monkeypatch) -> str:
    """The name numba gives the index file of :func:`_probe` (learnt in a private folder)."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    monkeypatch.setenv(CACHE_DIR_ENV_VAR, str(private))
    return os.path.basename(njit(cache=True)(_probe)._cache._cache_file._index_path)


@pytest.mark.parametrize("fmt", ["numba", "framed"])
def test_a_cache_folder_others_can_write_is_never_read(tmp_path, monkeypatch, fmt):
    """A planted index in a group- and world-writable cache folder is not unpickled (the
    sentinel is not created); the kernel is compiled in the process and gives the NumPy
    result, with a warning that names the folder and the fix."""
    name = _index_name(tmp_path, monkeypatch)
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv(CACHE_DIR_ENV_VAR, str(shared))
    folder = cache_dir()
    folder.mkdir(parents=True)
    sentinel = tmp_path / "code-ran"
    payload = pickle.dumps(numba.__version__) + pickle.dumps(_Plant(sentinel))
    # as numba writes an index, and as this library's cache writes it (a valid checksum:
    # whoever can write the folder can compute it)
    (folder / name).write_bytes(payload if fmt == "numba" else _cache._framed(payload))
    with pytest.warns(OocKernelsWarning, match=r"not used: .*shared.* can be written by "
                      r"other users \(mode 0o777\).*OOC_KERNELS_JIT_CACHE_DIR"):
        kernel = njit(cache=True)(_probe)
    x = np.arange(5.0)
    np.testing.assert_array_equal(kernel(x), x * 2.0 + 1.0)
    assert not sentinel.exists()
    assert sorted(p.name for p in folder.iterdir()) == [name]  # nothing written there either


def test_the_cache_folders_are_private_and_checked(tmp_path, monkeypatch):
    """The library creates its folders with mode 0o700; each way another user could write
    or replace one is named."""
    monkeypatch.setenv(CACHE_DIR_ENV_VAR, str(tmp_path / "root"))
    njit(cache=True)(_probe)
    folder = cache_dir()
    for f in (folder, folder.parent, folder.parent.parent):
        assert oct(os.stat(f).st_mode & 0o777) == "0o700"
    assert cache_problem(folder) is None
    os.chmod(folder.parent, 0o707)
    assert "can be written by other users (mode 0o707)" in cache_problem(folder)
    os.chmod(folder.parent, 0o700)
    above = tmp_path / "root"
    os.chmod(tmp_path, 0o777)            # the parent of the root: others could replace it
    try:
        assert "no sticky bit" in cache_problem(folder)
        os.chmod(tmp_path, 0o1777)       # sticky, as /tmp: nobody renames another's folder
        assert cache_problem(folder) is None
    finally:
        os.chmod(tmp_path, 0o700)
    link = tmp_path / "link"
    link.symlink_to(folder.parent, target_is_directory=True)
    assert "not a folder" in cache_problem(link / folder.name)
    if os.getuid() == 0:                 # root can give the folder away
        os.chown(above, 65534, -1)
        assert "belongs to user id 65534" in cache_problem(folder)


def _damage(path, how):
    raw = path.read_bytes()
    if how == "truncated":
        path.write_bytes(raw[: len(raw) // 2])
    else:
        raw = bytearray(raw)
        raw[len(raw) // 2] ^= 0x01
        path.write_bytes(bytes(raw))


@pytest.mark.parametrize("which", ["nbi", "nbc"])
@pytest.mark.parametrize("how", ["truncated", "flipped"])
def test_a_damaged_cache_file_is_ignored_and_rewritten(tmp_path, monkeypatch, which, how):
    """A truncated or byte-flipped index or data file is never unpickled: a warning names
    it, the kernel is compiled again (the NumPy result) and a good file replaces it, read
    back by the next process (here: the next dispatcher)."""
    monkeypatch.setenv(CACHE_DIR_ENV_VAR, str(tmp_path / "root"))
    x = np.arange(5.0)
    np.testing.assert_array_equal(njit(cache=True)(_probe)(x), x * 2.0 + 1.0)
    (target,) = cache_dir().glob(f"*.{which}")
    _damage(target, how)
    kernel = njit(cache=True)(_probe)
    with pytest.warns(OocKernelsWarning, match=rf"cache file '.*{target.name}' is damaged"):
        np.testing.assert_array_equal(kernel(x), x * 2.0 + 1.0)
    assert sum(kernel.stats.cache_hits.values()) == 0
    again = njit(cache=True)(_probe)
    np.testing.assert_array_equal(again(x), x * 2.0 + 1.0)
    assert sum(again.stats.cache_hits.values()) == 1


def test_a_folder_writable_by_a_shared_group_is_refused_by_the_users_own_group_not(tmp_path):
    """Group write counts as others' write unless the group is the user's private group
    (named as the user, the primary group, no other members), as in the ``umask 002`` homes
    of Debian and Ubuntu, whose ``~/.cache`` is often mode 0o775."""
    import grp
    import pwd

    folder = tmp_path / "root" / "jit" / "v"
    folder.mkdir(parents=True, mode=0o700)
    os.chmod(folder.parent.parent, 0o700)
    os.chmod(folder.parent, 0o770)
    user = pwd.getpwuid(os.getuid()).pw_name
    own = grp.getgrgid(os.getgid())
    if own.gr_name == user and set(own.gr_mem) <= {user}:
        assert cache_problem(folder) is None           # the user's private group
    if os.getuid() == 0:                               # root can hand the folder to a group
        shared = next((g for g in grp.getgrall() if g.gr_gid != os.getgid()), None)
        if shared is not None:
            os.chown(folder.parent, -1, shared.gr_gid)
            assert "can be written by other users (mode 0o770)" in cache_problem(folder)
