"""Catalog entry names: names of any script are written and read back (``données``,
``温度``), two spellings of the same name (NFC and NFD) are one entry, and what could
escape a folder or hide in a name (separators, ``..``, control characters, an empty name)
is refused before anything is written."""

from __future__ import annotations

import os
import unicodedata

import pytest
import yaml
from click.testing import CliRunner

import ooc_kernels as ok
from ooc_kernels.cli import main
from ooc_kernels.data.catalog import (declare_dataset, describe_catalog, entry_path,
                                      list_datasets, open_dataset, register_dataset)
from ooc_kernels.exceptions import CatalogError

NAMES = ["données", "温度", "Температура", "तापमान", "digits_deformed.v2", "a-b", "_x", "2024"]
REFUSED = ["", "..", ".hidden", "-x", "a/b", "a\\b", "../x", "a b", "a\tb", "a\nb", "a\x00b",
           "a\u202eb", "a\u200bb", "\u0301a", "a:b"]


def _store(folder, name="s"):
    return ok.make_dataset("synthetic_krr_2d", folder / "data" / f"{name}.zarr", 60,
                           chunk_size=30, progress=False)


def _hand_written(tmp_path, names):
    """A catalog written with Intake's own API (no check of the names), one entry per name."""
    from intake.readers.datatypes import Zarr
    from intake.readers.entry import Catalog
    from intake.readers.readers import XArrayDatasetReader

    cat = Catalog()
    for name in names:
        store = _store(tmp_path, f"h{len(cat.entries)}")
        cat.add_entry(XArrayDatasetReader(Zarr(url=os.fspath(store)), engine="zarr"),
                      name=name)
    f = tmp_path / "hand.yaml"
    cat.to_yaml_file(os.fspath(f))
    return f


def test_names_of_any_script_are_written_and_read_back(tmp_path):
    cat = tmp_path / "c.yaml"
    store = _store(tmp_path)
    for name in NAMES:
        register_dataset(cat, name, store, description=name)
    assert sorted(yaml.safe_load(cat.read_text(encoding="utf-8"))["entries"]) == sorted(NAMES)
    assert list_datasets(cat) == sorted(NAMES)
    assert {r["name"]: r["description"] for r in describe_catalog(cat)} == {n: n for n in NAMES}
    for name in NAMES:
        assert entry_path(cat, name) == store.absolute()
        assert open_dataset(cat, name).sizes["sample"] == 60
    assert declare_dataset(cat, "温度", task="regression") == {"task": "regression"}


def test_the_cli_adds_and_lists_a_non_ascii_name(tmp_path):
    cat, store = tmp_path / "c.yaml", _store(tmp_path)
    r = CliRunner().invoke(main, ["catalog", "add", str(cat), "données", str(store)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["catalog", "list", str(cat)])
    assert r.exit_code == 0 and r.output.startswith("données"), r.output


def test_a_name_a_hand_written_catalog_holds_can_be_added_again(tmp_path):
    f = _hand_written(tmp_path, ["données", "温度"])
    assert list_datasets(f) == ["données", "温度"]
    store = _store(tmp_path, "new")
    for name in ("données", "温度"):  # replaced in place, as any other entry
        register_dataset(f, name, store, allow_outside=True)
        assert entry_path(f, name, allow_outside=True) == store.absolute()
    assert list_datasets(f, allow_outside=True) == ["données", "温度"]


@pytest.mark.parametrize("name", REFUSED)
def test_a_name_that_could_escape_or_hide_is_refused_before_any_write(tmp_path, name):
    cat = tmp_path / "c.yaml"
    with pytest.raises(CatalogError, match="invalid entry name"):
        register_dataset(cat, name, tmp_path / "data" / "s.zarr")
    assert not cat.exists()


@pytest.mark.parametrize("name", ["../escaped", "a/b", ".."])
def test_data_make_refuses_an_entry_that_would_name_a_path_outside_out(tmp_path, name):
    out = tmp_path / "d" / "out"
    r = CliRunner().invoke(main, ["data", "make", "synthetic_krr_2d", "--n", "60",
                                  "--chunk-size", "30", "--out", str(out), "--entry", name,
                                  "-q"])
    assert r.exit_code != 0 and "invalid entry name" in r.output, r.output
    assert not (tmp_path / "d").exists()  # no store written anywhere


def test_two_spellings_of_a_name_are_one_entry(tmp_path):
    nfc, nfd = unicodedata.normalize("NFC", "données"), unicodedata.normalize("NFD", "données")
    assert nfc != nfd
    cat = tmp_path / "c.yaml"
    first, second = _store(tmp_path, "first"), _store(tmp_path, "second")
    register_dataset(cat, nfd, first)
    keys = list(yaml.safe_load(cat.read_text(encoding="utf-8"))["entries"])
    assert keys == [nfc]  # written in normal form C
    register_dataset(cat, nfc, second)
    spec = yaml.safe_load(cat.read_text(encoding="utf-8"))
    assert list(spec["entries"]) == [nfc] and len(spec["data"]) == 1
    for spelling in (nfc, nfd):  # found by either spelling
        assert entry_path(cat, spelling) == second.absolute()
        assert open_dataset(cat, spelling).sizes["sample"] == 60
    assert declare_dataset(cat, nfd, task="regression") == {"task": "regression"}


def test_an_entry_spelled_nfd_by_hand_is_replaced_not_doubled(tmp_path):
    nfc, nfd = unicodedata.normalize("NFC", "été"), unicodedata.normalize("NFD", "été")
    f = _hand_written(tmp_path, [nfd])
    assert entry_path(f, nfc, allow_outside=True).name == "h0.zarr"  # found by NFC
    store = _store(tmp_path, "new")
    register_dataset(f, nfc, store, allow_outside=True)
    spec = yaml.safe_load(f.read_text(encoding="utf-8"))
    assert list(spec["entries"]) == [nfc]
    assert len(spec["data"]) == 1  # the old entry's data went with it
    assert entry_path(f, nfd, allow_outside=True) == store.absolute()
