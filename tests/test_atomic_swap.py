"""The swap of an atomic write, where it can go wrong: a folder of the user's that appears
at the target while the store is being written is never replaced (the check under the
lock right before the swap), the previous store is back in place when the rename of the
new one fails (as the error says), and a metrics file is on the disk before it replaces
the previous one."""

from __future__ import annotations

import errno
import json
import os

import pytest
import zarr

from ooc_kernels._atomic import KIND_ATTR, atomic_dir, store_kind, write_json_atomic
from ooc_kernels.exceptions import ForeignPathError, WriteFailedError


def _write_store(target, value):
    with atomic_dir(target, kind="predictions") as tmp:
        group = zarr.open_group(str(tmp), mode="w")
        group.attrs[KIND_ATTR] = "predictions"
        group.attrs["value"] = value


def test_a_user_folder_that_appears_during_the_write_is_never_replaced(tmp_path):
    target = tmp_path / "store"
    with pytest.raises(ForeignPathError, match="refusing to replace"):
        with atomic_dir(target, kind="predictions") as tmp:
            zarr.open_group(str(tmp), mode="w").attrs[KIND_ATTR] = "predictions"
            target.mkdir()                                   # the user's, meanwhile
            (target / "notes.txt").write_text("mine")
    assert sorted(os.listdir(target)) == ["notes.txt"]
    assert (target / "notes.txt").read_text() == "mine"
    assert not [p for p in os.listdir(tmp_path) if ".old-" in p or ".tmp-" in p]


def test_a_failed_rename_of_the_new_store_puts_the_previous_one_back(tmp_path, monkeypatch):
    target = tmp_path / "store"
    _write_store(target, "old")
    replace = os.replace

    def refuse_the_new_store(src, dst, *args, **kwargs):
        if ".tmp-" in os.fspath(src) and os.fspath(dst) == str(target):
            raise OSError(errno.ENOSPC, "No space left on device")
        return replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", refuse_the_new_store)
    with pytest.raises(WriteFailedError, match="the previous prediction store there is intact"):
        _write_store(target, "new")
    monkeypatch.undo()
    assert store_kind(target) == "predictions"
    assert zarr.open_group(str(target), mode="r").attrs["value"] == "old"
    assert not [p for p in os.listdir(tmp_path) if ".old-" in p or ".tmp-" in p]


def test_a_metrics_file_is_on_the_disk_before_it_replaces_the_previous_one(tmp_path,
                                                                           monkeypatch):
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc to name a descriptor's file")
    path = tmp_path / "metrics.json"
    write_json_atomic(path, {"score": 0.5}, kind="metrics")
    events = []
    fsync, replace = os.fsync, os.replace

    def recorded_fsync(fd):
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        return fsync(fd)

    def recorded_replace(src, dst, *args, **kwargs):
        events.append(("replace", os.fspath(src), os.fspath(dst)))
        return replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "fsync", recorded_fsync)
    monkeypatch.setattr(os, "replace", recorded_replace)
    write_json_atomic(path, {"score": 0.75}, kind="metrics", overwrite=True)
    monkeypatch.undo()
    swaps = [i for i, e in enumerate(events) if e[0] == "replace" and e[2] == str(path)]
    assert len(swaps) == 1
    tmp = events[swaps[0]][1]
    assert ("fsync", tmp) in events[:swaps[0]], events
    assert json.loads(path.read_text())["score"] == 0.75
