"""What the library does to a catalog file it is asked to write (``register_dataset``,
``declare_dataset``, ``ooc-kernels data make --catalog``): a symbolic link there is never
followed or replaced, a file that is not a catalog is refused before any store is written,
and two registrations at once both land."""

from __future__ import annotations

import os
import re
import threading

import pytest
from click.testing import CliRunner

import ooc_kernels as ok
from ooc_kernels.cli import main
from ooc_kernels.data.catalog import declare_dataset, list_datasets, register_dataset
from ooc_kernels.exceptions import CatalogError, ForeignPathError


def _store(tmp_path, name="a"):
    return ok.make_dataset("synthetic_krr_2d", tmp_path / "data" / f"{name}.zarr", 100,
                           chunk_size=50, progress=False)


def test_a_catalog_that_is_a_link_is_refused_and_left_alone(tmp_path):
    shared = tmp_path / "shared" / "c.yaml"
    register_dataset(shared, "a", _store(tmp_path.joinpath("shared")))
    before = shared.read_text()
    (tmp_path / "proj").mkdir()
    link = tmp_path / "proj" / "c.yaml"
    link.symlink_to(os.path.relpath(shared, link.parent))
    with pytest.raises(ForeignPathError, match=r"catalog '.*proj/c.yaml': it is a symbolic "
                                               r"link \(to '../shared/c.yaml'\)"):
        register_dataset(link, "b", tmp_path / "proj" / "data" / "b.zarr")
    with pytest.raises(ForeignPathError, match=r"it is a symbolic link"):
        declare_dataset(link, "a", task="regression")
    assert link.is_symlink() and shared.read_text() == before


def test_data_make_refuses_a_catalog_it_cannot_write_before_writing_the_store(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("name: myapp\nreplicas: 3\n")
    args = ["data", "make", "synthetic_krr_2d", "--n", "100", "--chunk-size", "50",
            "--out", str(tmp_path / "data" / "e.zarr"), "--entry", "e", "-q"]
    r = CliRunner().invoke(main, args + ["--catalog", str(config)])
    assert r.exit_code == 1 and "CatalogError" in r.output and "Intake 2 catalog" in r.output
    assert not (tmp_path / "data").exists()
    assert config.read_text() == "name: myapp\nreplicas: 3\n"
    (tmp_path / "folder.yaml").mkdir()
    r = CliRunner().invoke(main, args + ["--catalog", str(tmp_path / "folder.yaml")])
    assert r.exit_code == 1 and "is not a file" in r.output
    assert not (tmp_path / "data").exists()
    with pytest.raises(CatalogError, match="is not a file"):
        register_dataset(tmp_path / "folder.yaml", "e", tmp_path / "data" / "e.zarr")


def test_registrations_at_the_same_time_keep_every_entry(tmp_path):
    cat = tmp_path / "c.yaml"
    names = [f"e{i}" for i in range(8)]
    start = threading.Barrier(len(names))
    errors = []

    def add(name):
        try:
            start.wait(10)
            register_dataset(cat, name, tmp_path / "data" / f"{name}.zarr")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert sorted(list_datasets(cat)) == names
    assert sorted(os.listdir(tmp_path)) == ["c.yaml"]  # no lock or temporary left


def _events(monkeypatch):
    """Record every ``os.fsync`` (by the path of the flushed descriptor) and ``os.replace``."""
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        return real_fsync(fd)

    def replace(src, dst, **kw):
        events.append(("replace", os.path.realpath(src), os.path.realpath(dst)))
        return real_replace(src, dst, **kw)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return events


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_a_catalog_write_is_flushed_before_and_after_its_rename(tmp_path, monkeypatch):
    store = _store(tmp_path)
    cat = tmp_path / "c.yaml"
    events = _events(monkeypatch)
    register_dataset(cat, "a", store)
    cat_real, folder = os.path.realpath(cat), os.path.realpath(tmp_path)
    renames = [e for e in events if e[0] == "replace" and e[2] == cat_real]
    assert len(renames) == 1
    at = events.index(renames[0])
    tmp = renames[0][1]
    assert ("fsync", tmp) in events[:at]  # the file's content, before the rename
    assert ("fsync", folder) in events[at + 1:]  # the folder's entry, after it
    del events[:]
    declare_dataset(cat, "a", task="regression")
    at = next(i for i, e in enumerate(events) if e[0] == "replace" and e[2] == cat_real)
    assert ("fsync", events[at][1]) in events[:at]
    assert ("fsync", folder) in events[at + 1:]


_KILLED_AT_RENAME = """
import os, signal, sys
from ooc_kernels.data.catalog import register_dataset
real = os.replace
def replace(src, dst, **kw):
    if os.fspath(dst) == sys.argv[1]:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(src, dst, **kw)
os.replace = replace
register_dataset(sys.argv[1], "b", sys.argv[2])
"""


@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGKILL"), reason="needs SIGKILL")
def test_the_next_write_removes_what_a_killed_registration_left(tmp_path):
    import subprocess
    import sys

    import yaml

    cat = tmp_path / "c.yaml"
    register_dataset(cat, "a", _store(tmp_path, "a"))
    before = cat.read_text()
    # what is not the library's temporary of this catalog stays
    kept = {".c.yaml.tmp-notmine": "x", ".c.yaml.tmp-0123456789ab.bak": "x",
            ".d.yaml.tmp-0123456789ab": "x", "c.yaml.tmp-0123456789ab": "x"}
    for name, text in kept.items():
        (tmp_path / name).write_text(text)
    (tmp_path / ".c.yaml.tmp-aaaaaaaaaaaa").mkdir()  # a folder: not a catalog's temporary
    (tmp_path / ".c.yaml.tmp-bbbbbbbbbbbb").symlink_to(tmp_path / "c.yaml")
    p = subprocess.run([sys.executable, "-c", _KILLED_AT_RENAME, str(cat),
                        str(_store(tmp_path, "b"))], capture_output=True, text=True)
    assert p.returncode == -9, p.stderr
    left = [n for n in os.listdir(tmp_path) if re.fullmatch(r"\.c\.yaml\.tmp-[0-9a-f]{12}", n)
            and (tmp_path / n).is_file() and not (tmp_path / n).is_symlink()]
    assert len(left) == 1  # the killed writer's temporary, complete but never renamed
    assert cat.read_text() == before  # the catalog is the previous one, whole
    register_dataset(cat, "c", _store(tmp_path, "c"))
    assert not (tmp_path / left[0]).exists()
    for name, text in kept.items():
        assert (tmp_path / name).read_text() == text
    assert (tmp_path / ".c.yaml.tmp-aaaaaaaaaaaa").is_dir()
    assert (tmp_path / ".c.yaml.tmp-bbbbbbbbbbbb").is_symlink()
    spec = yaml.safe_load(cat.read_text())
    assert sorted(spec["entries"]) == ["a", "c"]
    assert sorted(list_datasets(cat)) == ["a", "c"]
