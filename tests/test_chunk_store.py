"""Chunk-local state (the work store of duals): versions, checksums, pruning, pickling."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from ooc_kernels.exceptions import CorruptChunkError, ValidationError
from ooc_kernels._chunk_store import INITIAL, ChunkStore, ChunkVersions


def test_versions_are_written_aside_and_read_back_exactly(tmp_path):
    store = ChunkStore(tmp_path / "work.zarr")
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=7), rng.normal(size=7)
    store.write("y", 3, (0, 1), a)
    store.write("y", 3, (1, 0), b)
    np.testing.assert_array_equal(store.read("y", 3, (0, 1), n_rows=7), a)
    np.testing.assert_array_equal(store.read("y", 3, (1, 0), n_rows=7), b)
    assert store.versions("y", 3) == [(0, 1), (1, 0)]
    assert store.versions("y", 2) == []
    assert not [p for p in (tmp_path / "work.zarr" / "y").rglob(".*")]


def test_the_initial_version_is_zeros_of_the_chunk_length(tmp_path):
    store = ChunkStore(tmp_path / "w")
    out = store.read("y", 0, INITIAL, n_rows=5)
    assert out.dtype == np.float64 and not out.any() and out.shape == (5,)
    assert not (tmp_path / "w").exists()                  # reading writes nothing


def test_a_rewritten_version_replaces_the_old_bytes_whole(tmp_path):
    """A retried task writes the same version again: the last complete write wins."""
    store = ChunkStore(tmp_path / "w")
    store.write("y", 0, (0, 0), np.ones(4))
    store.write("y", 0, (0, 0), np.full(4, 2.0))
    np.testing.assert_array_equal(store.read("y", 0, (0, 0), n_rows=4), np.full(4, 2.0))


def test_a_damaged_or_missing_version_is_a_corrupt_chunk_error(tmp_path):
    store = ChunkStore(tmp_path / "w")
    store.write("y", 1, (0, 0), np.arange(64.0))
    folder = tmp_path / "w" / "y" / "c0000001"
    (version_file,) = list(folder.iterdir())
    raw = bytearray(version_file.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    version_file.write_bytes(bytes(raw))
    with pytest.raises(CorruptChunkError, match=r"chunk 1 at version \(0, 0\).*damaged"):
        store.read("y", 1, (0, 0), n_rows=64)
    with pytest.raises(CorruptChunkError, match=r"chunk 2 .*\(3, 4\).*cannot be read"):
        store.read("y", 2, (3, 4), n_rows=64)
    with pytest.raises(CorruptChunkError, match="damaged"):      # wrong length
        store.read("y", 1, (0, 0), n_rows=63)


def test_prune_keeps_what_a_state_or_a_checkpoint_points_to(tmp_path):
    store = ChunkStore(tmp_path / "w")
    v = ChunkVersions.initial(2)
    checkpoint = None
    for epoch in range(3):
        for chunk in range(2):
            store.write("y", chunk, (epoch, chunk), np.full(3, epoch + chunk / 10))
            v = v.updated([chunk], (epoch, chunk))
        if epoch == 1:
            checkpoint = v
    assert store.prune("y", [v, checkpoint], chunks=[1]) == 1      # epoch 0 of chunk 1
    assert store.versions("y", 0) == [(0, 0), (1, 0), (2, 0)]
    assert store.prune("y", [v, checkpoint]) == 1                  # and of chunk 0
    assert store.versions("y", 0) == [(1, 0), (2, 0)]
    assert store.versions("y", 1) == [(1, 1), (2, 1)]
    np.testing.assert_array_equal(store.read("y", 1, checkpoint[1], n_rows=3), np.full(3, 1.1))


def test_version_tables_are_immutable_and_the_store_pickles(tmp_path):
    v = ChunkVersions.initial(3)
    w = v.updated([0, 2], (4, 5))
    assert v[0] == INITIAL and w[0] == (4, 5) and w[1] == INITIAL
    with pytest.raises(ValueError, match="read-only"):
        w.table[0, 0] = 1
    store = ChunkStore(tmp_path / "w")
    assert pickle.loads(pickle.dumps(store)) == store
    with pytest.raises(ValidationError, match="identifiers"):
        store.write("../escape", 0, (0, 0), np.zeros(1))


def test_a_version_written_as_a_zarr_array_is_refused_rewritten_and_pruned(tmp_path):
    """Stores of ooc_kernels 0.2 hold each version as a Zarr array with the checksum of its
    values in the attributes, which names no chunk: refused when read (nothing shows it is
    this chunk's), replaced by a new write of the same version, and pruned like a file."""
    import zarr

    from ooc_kernels._chunk_store import _checksum

    store = ChunkStore(tmp_path / "w")
    a = np.arange(5.0)
    where = tmp_path / "w" / "y" / "c0000000"
    for version in ("e000000_r000000", "e000001_r000000"):
        zarr.create_array(str(where / version), data=a, chunks=a.shape,
                          attributes={"ooc_kernels_crc32": _checksum(a),
                                      "ooc_kernels_store": "chunk-local"})
    with pytest.raises(CorruptChunkError,
                       match=r"chunk 0 at version \(0, 0\).*without its chunk's identity.*"
                             r"Delete the work store.*resume=False"):
        store.read("y", 0, (0, 0), n_rows=5)
    store.write("y", 0, (0, 0), a + 1)
    assert (where / "e000000_r000000").is_file()
    np.testing.assert_array_equal(store.read("y", 0, (0, 0), n_rows=5), a + 1)
    assert store.prune("y", [ChunkVersions.initial(1).updated([0], (0, 0))]) == 1
    assert sorted(p.name for p in where.iterdir()) == ["e000000_r000000"]


def _version_file(store_path, name, chunk, version):
    return store_path / name / f"c{chunk:07d}" / f"e{version[0]:06d}_r{version[1]:06d}"


@pytest.mark.parametrize("source", ["another chunk", "another version", "another store"])
def test_a_version_copied_from_another_chunk_version_or_store_is_refused(tmp_path, source):
    """A version file copied onto another chunk's (or version's, or store's) name, with the
    same number of rows: its checksum is of its own identity, so the read refuses it and
    says what to do."""
    rng = np.random.default_rng(0)
    store, other = ChunkStore(tmp_path / "w"), ChunkStore(tmp_path / "v")
    mine, theirs = rng.normal(size=6), rng.normal(size=6)
    store.write("y", 2, (1, 0), mine)
    origin = {"another chunk": (store, 1, (1, 0)), "another version": (store, 2, (0, 0)),
              "another store": (other, 2, (1, 0))}[source]
    origin[0].write("y", origin[1], origin[2], theirs)
    target = _version_file(tmp_path / "w", "y", 2, (1, 0))
    target.write_bytes(_version_file(origin[0].path, "y", origin[1], origin[2]).read_bytes())
    with pytest.raises(CorruptChunkError,
                       match=r"chunk 2 at version \(1, 0\).*holds the values of .*copied or "
                             r"renamed.*Delete the work store.*resume=False"):
        store.read("y", 2, (1, 0), n_rows=6)
    np.testing.assert_array_equal(origin[0].read("y", origin[1], origin[2], n_rows=6), theirs)


def test_a_version_whose_named_identity_was_edited_fails_its_checksum(tmp_path):
    """The identity in the header edited to the chunk it was copied onto (the same length):
    the checksum covers the identity it was written with."""
    store = ChunkStore(tmp_path / "w")
    store.write("y", 1, (0, 0), np.arange(6.0))
    raw = _version_file(tmp_path / "w", "y", 1, (0, 0)).read_bytes()
    _version_file(tmp_path / "w", "y", 2, (0, 0)).parent.mkdir(parents=True)
    _version_file(tmp_path / "w", "y", 2, (0, 0)).write_bytes(
        raw.replace(b"/y/c0000001/", b"/y/c0000002/", 1))
    with pytest.raises(CorruptChunkError, match=r"chunk 2 .*damaged.*checksum mismatch"):
        store.read("y", 2, (0, 0), n_rows=6)


def test_a_version_of_the_earlier_file_format_is_refused(tmp_path):
    """A file whose checksum covers the values only (the format before the identity) cannot
    be shown to belong to its chunk: refused, as a version without a checksum is."""
    import io
    import struct

    from ooc_kernels._chunk_store import _checksum

    a = np.arange(4.0)
    buffer = io.BytesIO()
    buffer.write(b"OOCKCHNK" + struct.pack("<I", _checksum(a)))
    np.lib.format.write_array(buffer, a, allow_pickle=False)
    where = _version_file(tmp_path / "w", "y", 0, (0, 0))
    where.parent.mkdir(parents=True)
    where.write_bytes(buffer.getvalue())
    with pytest.raises(CorruptChunkError, match="without its chunk's identity"):
        ChunkStore(tmp_path / "w").read("y", 0, (0, 0), n_rows=4)


def test_a_link_or_a_foreign_folder_in_place_of_a_version_is_never_removed(tmp_path):
    """A folder that is not a chunk-local version of ooc_kernels 0.2, or a link to a user's
    folder, where a version's name is expected: writing or pruning that version raises and
    leaves the folder and everything it holds in place."""
    store = ChunkStore(tmp_path / "w")
    where = tmp_path / "w" / "y" / "c0000000"
    where.mkdir(parents=True)
    users = tmp_path / "users"
    users.mkdir()
    (users / "keep.txt").write_text("data")
    (where / "e000000_r000000").symlink_to(users, target_is_directory=True)
    foreign = where / "e000001_r000000"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    for version in ((0, 0), (1, 0)):
        with pytest.raises(CorruptChunkError, match="is not a chunk-local version"):
            store.write("y", 0, version, np.arange(3.0))
    with pytest.raises(CorruptChunkError, match="is not a chunk-local version"):
        store.prune("y", [ChunkVersions.initial(1)])
    assert (users / "keep.txt").read_text() == "data"
    assert (foreign / "notes.txt").read_text() == "mine"


def test_a_chunk_folder_that_is_a_link_is_never_written_through(tmp_path):
    """A chunk's folder replaced by a link to a user's folder: a write raises, and nothing
    is written or replaced outside the work store."""
    store = ChunkStore(tmp_path / "w")
    users = tmp_path / "users"
    users.mkdir()
    (users / "e000000_r000000").write_text("the user's file")
    (tmp_path / "w" / "y").mkdir(parents=True)
    (tmp_path / "w" / "y" / "c0000000").symlink_to(users, target_is_directory=True)
    with pytest.raises(CorruptChunkError, match="is a link"):
        store.write("y", 0, (0, 0), np.arange(3.0))
    assert sorted(p.name for p in users.iterdir()) == ["e000000_r000000"]
    assert (users / "e000000_r000000").read_text() == "the user's file"


def test_a_full_disk_is_the_librarys_error_and_the_earlier_bytes_stay(tmp_path, monkeypatch):
    """A write the file system refuses names the file; the version written before it is
    read back unchanged and no temporary is left."""
    import errno
    import os
    from pathlib import Path

    from ooc_kernels.exceptions import WriteFailedError

    store = ChunkStore(tmp_path / "w")
    store.write("y", 0, (0, 0), np.ones(4))

    def full(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "write_bytes", full)
    with pytest.raises(WriteFailedError, match=r"could not write the chunk-local array "
                                               r"'.*e000000_r000000': No space left on device \(ENOSPC\); "
                                               r"nothing was replaced: the previous "
                                               r"chunk-local array there is intact") as info:
        store.write("y", 0, (0, 0), np.full(4, 2.0))
    assert info.value.errno == errno.ENOSPC
    monkeypatch.undo()
    np.testing.assert_array_equal(store.read("y", 0, (0, 0), n_rows=4), np.ones(4))
    assert not [p for p in (tmp_path / "w").rglob("*.tmp")]


@pytest.mark.parametrize("edited", [b"'>f8'", b"'<i8'"])
def test_a_version_whose_header_names_another_dtype_is_a_corrupt_chunk_error(tmp_path,
                                                                              edited):
    """The checksum covers the values' bytes, not the .npy header: a header edited to read
    the same bytes as big-endian floats or as integers (same length, same checksum) is
    refused, not read as other numbers."""
    store = ChunkStore(tmp_path / "w")
    values = np.linspace(-1.0, 1.0, 8)
    store.write("y", 0, (1, 2), values)
    (version_file,) = list((tmp_path / "w" / "y" / "c0000000").iterdir())
    raw = version_file.read_bytes()
    assert raw.count(b"'<f8'") == 1
    version_file.write_bytes(raw.replace(b"'<f8'", edited))
    with pytest.raises(CorruptChunkError, match=r"chunk 0 at version \(1, 2\).*damaged.*"
                       r"dtype '(>f8|<i8)', expected '<f8'; checksum ok"):
        store.read("y", 0, (1, 2), n_rows=8)
    version_file.write_bytes(raw)
    np.testing.assert_array_equal(store.read("y", 0, (1, 2), n_rows=8), values)


@pytest.mark.parametrize("what", ["link", "folder"])
def test_a_lock_file_that_is_a_link_or_a_folder_is_refused_and_never_followed(tmp_path,
                                                                                what):
    """A work folder's ``.lock`` that is a link to a file elsewhere: taking the lock created
    (or locked) that file; a folder there was a raw IsADirectoryError."""
    from ooc_kernels._chunk_store import FolderLock
    from ooc_kernels.exceptions import ForeignPathError

    folder = tmp_path / "work"
    folder.mkdir()
    target = tmp_path / "elsewhere.txt"
    if what == "link":
        (folder / ".lock").symlink_to(target)
    else:
        (folder / ".lock").mkdir()
    with pytest.raises(ForeignPathError, match=r"\.lock' is not a lock file of this library"):
        FolderLock(folder).acquire()
    assert not target.exists()
    assert (folder / ".lock").is_symlink() == (what == "link")


@pytest.mark.parametrize("what", ["named pipe", "link"])
def test_a_pipe_or_a_link_in_place_of_a_version_is_refused_without_reading(tmp_path, what):
    """A named pipe where a version file belongs would block a read until some process
    writes to it (a device such as /dev/zero would be read without end), and a link leads
    to a file the store did not write: the read is a CorruptChunkError at once, never a
    wait, and the link's target is left as it was."""
    import os
    import threading

    if what == "named pipe" and not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes here")
    store = ChunkStore(tmp_path / "w")
    store.write("y", 0, (0, 0), np.arange(4.0))
    where = _version_file(tmp_path / "w", "y", 0, (0, 0))
    target = tmp_path / "elsewhere"
    target.write_bytes(where.read_bytes())
    where.unlink()
    if what == "named pipe":
        os.mkfifo(where)
    else:
        where.symlink_to(target)
    outcome = []

    def read():
        try:
            store.read("y", 0, (0, 0), n_rows=4)
            outcome.append("read")
        except CorruptChunkError as err:
            outcome.append(err)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=10)
    if reader.is_alive():     # blocked on the pipe: let it end, then fail
        with open(where, "wb"):
            pass
        reader.join(timeout=10)
        pytest.fail(f"the read of a {what} in place of a version blocked")
    (err,) = outcome
    assert isinstance(err, CorruptChunkError), err
    assert "cannot be read from the work store" in str(err)
    assert target.read_bytes()[:8] == b"OOCKCHK2"
