"""What the library does to a catalog file it is asked to write (``register_dataset``,
``declare_dataset``, ``ooc-kernels data make --catalog``): a symbolic link there is never
followed or replaced, a file that is not a catalog is refused before any store is written,
and two registrations at once both land."""

from __future__ import annotations

import os
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
