"""Intake 2 catalogs: listing, opening, errors, the trust rule and registration."""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path

import dask.array as da
import intake
import numpy as np
import pytest
import yaml

from ooc_kernels.data import (
    describe_catalog,
    entry_path,
    list_datasets,
    load_catalog,
    make_dataset,
    open_dataset,
    open_zarr_dataset,
    register_dataset,
)
from ooc_kernels.exceptions import (
    CatalogError,
    SchemaError,
    UnknownEntryError,
    UntrustedCatalogError,
)

EXAMPLES = Path(__file__).resolve().parents[1] / "catalogs" / "examples.yaml"
EXAMPLE_ENTRIES = ["digits_deformed", "digits_deformed_test", "nonlinear_binary",
                   "synthetic_krr_2d"]


@pytest.fixture
def project(tmp_path):
    """A copy of catalogs/examples.yaml next to small generated data in catalogs/data/."""
    (tmp_path / "catalogs").mkdir()
    shutil.copy(EXAMPLES, tmp_path / "catalogs" / "examples.yaml")
    data = tmp_path / "catalogs" / "data"
    make_dataset("digits_deformed", data / "digits_deformed.zarr", 120, chunk_size=50)
    make_dataset("digits_deformed", data / "digits_deformed_test.zarr", 60, chunk_size=50,
                 split="test")
    make_dataset("synthetic_krr_2d", data / "synthetic_krr_2d.zarr", 100, chunk_size=40)
    make_dataset("nonlinear_binary", data / "nonlinear_binary.zarr", 90, chunk_size=30)
    return tmp_path


# --- the shipped example catalog -------------------------------------------------------

def test_examples_catalog_loads_with_intake_itself():
    cat = intake.from_yaml_file(str(EXAMPLES))
    assert sorted(cat.entries) == EXAMPLE_ENTRIES
    for name in EXAMPLE_ENTRIES:
        url = describe_catalog(EXAMPLES)[EXAMPLE_ENTRIES.index(name)]["path"]
        assert Path(url) == EXAMPLES.parent / "data" / f"{name}.zarr"


def test_examples_catalog_passes_the_trust_check():
    assert list_datasets(EXAMPLES) == EXAMPLE_ENTRIES


def test_open_every_example_entry(project):
    cat = project / "catalogs" / "examples.yaml"
    for name in EXAMPLE_ENTRIES:
        ds = open_dataset(cat, name)
        direct = open_zarr_dataset(project / "catalogs" / "data" / f"{name}.zarr")
        assert isinstance(ds.X.data, da.Array)
        assert ds.X.chunks == direct.X.chunks  # Dask chunks = Zarr chunks
        assert ds.y.chunks == direct.y.chunks
        np.testing.assert_array_equal(ds.X[:5].values, direct.X[:5].values)
        assert ds.attrs == direct.attrs
    assert open_dataset(cat, "digits_deformed_test").attrs["split"] == "test"


def test_relative_paths_follow_the_catalog_folder(project, tmp_path_factory):
    moved = tmp_path_factory.mktemp("elsewhere") / "proj"
    shutil.copytree(project, moved)
    shutil.rmtree(project / "catalogs" / "data")  # the original data is gone
    ds = open_dataset(moved / "catalogs" / "examples.yaml", "synthetic_krr_2d")
    assert ds.sizes["sample"] == 100


def test_describe_catalog(project):
    rows = describe_catalog(project / "catalogs" / "examples.yaml")
    assert [r["name"] for r in rows] == EXAMPLE_ENTRIES
    krr = rows[EXAMPLE_ENTRIES.index("synthetic_krr_2d")]
    assert Path(krr["path"]) == project / "catalogs" / "data" / "synthetic_krr_2d.zarr"
    assert krr["reader"] == "intake.readers.readers:XArrayDatasetReader"
    assert "cos" in krr["description"]


def test_entry_path(project):
    cat = project / "catalogs" / "examples.yaml"
    assert entry_path(cat, "digits_deformed_test") == \
        project / "catalogs" / "data" / "digits_deformed_test.zarr"
    with pytest.raises(UnknownEntryError, match="available entries"):
        entry_path(cat, "nope")


def test_loaded_intake_catalog_is_accepted(project):
    cat = intake.from_yaml_file(str(project / "catalogs" / "examples.yaml"))
    assert list_datasets(cat) == EXAMPLE_ENTRIES
    assert open_dataset(cat, "nonlinear_binary").sizes["feature"] == 20


# --- errors ----------------------------------------------------------------------------

def test_unknown_entry_lists_available(project):
    with pytest.raises(UnknownEntryError, match=r"no entry 'digits'.*\['digits_deformed', "
                                                r"'digits_deformed_test', 'nonlinear_binary', "
                                                r"'synthetic_krr_2d'\]") as info:
        open_dataset(project / "catalogs" / "examples.yaml", "digits")
    assert isinstance(info.value, KeyError)


def test_missing_data_is_a_clear_error(tmp_path):
    shutil.copy(EXAMPLES, tmp_path / "examples.yaml")
    with pytest.raises(CatalogError, match=r"'synthetic_krr_2d'.*synthetic_krr_2d.zarr"):
        open_dataset(tmp_path / "examples.yaml", "synthetic_krr_2d")


def test_entry_violating_schema(tmp_path):
    import xarray as xr

    xr.Dataset({"X": (("sample", "feature"), np.zeros((4, 2)))}).to_zarr(
        tmp_path / "bad.zarr", zarr_format=3, consolidated=False)
    register_dataset(tmp_path / "c.yaml", "bad", tmp_path / "bad.zarr")
    # the library's attributes are optional: what is wrong is the missing target,
    # and the fix is one that works for a catalog entry
    with pytest.raises(SchemaError, match=r"variable 'y': expected a data variable.*found "
                                          r"variables \['X'\].*declare the names in the "
                                          r"entry's metadata ooc_kernels: \{variables:") as info:
        open_dataset(tmp_path / "c.yaml", "bad")
    assert "ooc_kernels_schema_version" not in str(info.value)


@pytest.mark.parametrize(
    "text, match",
    [
        ("version: 2\nentries: {a: [unclosed\n", r"cannot be read as YAML \(\w*Error"),
        ("- just\n- a list\n", r"expected a YAML mapping, found list"),
        ("version: 1\nsources: {}\n", r"'version' is 1, expected 2"),
        ("version: 2\nentries: {}\nbogus: 1\n", r"unknown top-level key\(s\) \['bogus'\]"),
        ("version: 2\nentries: [1, 2]\n", r"'entries' must be a mapping"),
    ],
)
def test_invalid_yaml(tmp_path, text, match):
    f = tmp_path / "broken.yaml"
    f.write_text(text)
    with pytest.raises(CatalogError, match=match) as info:
        list_datasets(f)
    assert "broken.yaml" in str(info.value)


def test_missing_catalog_file(tmp_path):
    with pytest.raises(CatalogError, match=r"nope.yaml' does not exist"):
        list_datasets(tmp_path / "nope.yaml")


# --- trust rule ------------------------------------------------------------------------

MARKER_MODULE = """
import pathlib
pathlib.Path({marker!r}).write_text("imported")

from intake.readers.readers import XArrayDatasetReader


class Reader(XArrayDatasetReader):
    pass


def boom(*args, **kwargs):
    pathlib.Path({marker!r}).write_text("called")
"""


@pytest.fixture
def evil(tmp_path, monkeypatch, project):
    """A module that writes a marker file when imported, importable from sys.path."""
    name = f"ooc_evil_{tmp_path.name.replace('-', '_')}"
    marker = tmp_path / "MARKER"
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / f"{name}.py").write_text(
        textwrap.dedent(MARKER_MODULE.format(marker=str(marker))))
    monkeypatch.syspath_prepend(str(tmp_path / "mods"))
    yield name, marker, project / "catalogs" / "examples.yaml"
    sys.modules.pop(name, None)


def _tamper(src: Path, dst: Path, edit) -> Path:
    spec = yaml.safe_load(src.read_text())
    edit(spec)
    dst.write_text(yaml.safe_dump(spec))
    return dst


def _data_token(spec, entry):
    return spec["entries"][entry]["kwargs"]["args"][0][len("{data("):-2]


ATTACKS = {
    "reader class": lambda spec, mod: spec["entries"]["synthetic_krr_2d"].update(
        reader=f"{mod}:Reader"),
    "func template in kwargs": lambda spec, mod: spec["entries"]["synthetic_krr_2d"]["kwargs"]
    .update(preprocess=f"{{func({mod}:boom)}}"),
    "import template in data": lambda spec, mod: spec["data"][_data_token(
        spec, "synthetic_krr_2d")]["kwargs"].update(storage_options={"x": f"{{import({mod})}}"}),
    "entry cls": lambda spec, mod: spec["entries"]["nonlinear_binary"].update(cls=f"{mod}:Reader"),
    "datatype": lambda spec, mod: spec["data"][_data_token(spec, "nonlinear_binary")].update(
        datatype=f"{mod}:Reader"),
    "user parameter cls": lambda spec, mod: spec["user_parameters"].update(
        p={"cls": f"{mod}:Reader", "default": 1}),
    "user parameter dtype": lambda spec, mod: spec["user_parameters"].update(
        p={"cls": "intake.readers.user_parameters:SimpleUserParameter", "dtype": "exec",
           "default": f"import {mod}"}),
    "bare template in user parameter default": lambda spec, mod: spec["user_parameters"].update(
        p={"cls": "intake.readers.user_parameters:BaseUserParameter",
           "default": f"func({mod}:boom)"}),
    "pickle template": lambda spec, mod: spec["entries"]["synthetic_krr_2d"]["kwargs"].update(
        engine="{pickle64(gASVCAAAAAAAAACMAm9zlC4=)}"),
    "attribute access template": lambda spec, mod: spec["entries"]["synthetic_krr_2d"]["kwargs"]
    .update(engine="{CATALOG_DIR.__class__}"),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_untrusted_catalog_is_refused_before_any_import(evil, tmp_path, attack):
    mod, marker, examples = evil
    bad = _tamper(examples, tmp_path / "bad.yaml", lambda s: ATTACKS[attack](s, mod))
    for call in (lambda: list_datasets(bad), lambda: open_dataset(bad, "synthetic_krr_2d"),
                 lambda: describe_catalog(bad), lambda: load_catalog(bad)):
        with pytest.raises(UntrustedCatalogError, match="pass trusted=True if you trust this"):
            call()
    assert not marker.exists()
    assert mod not in sys.modules


def test_untrusted_error_names_entry_and_reference(evil, tmp_path):
    mod, marker, examples = evil
    bad = _tamper(examples, tmp_path / "bad.yaml", lambda s: ATTACKS["reader class"](s, mod))
    with pytest.raises(UntrustedCatalogError,
                       match=rf"entry 'synthetic_krr_2d' uses reader '{mod}:Reader'"):
        open_dataset(bad, "synthetic_krr_2d")


def test_untrusted_loaded_catalog_object_is_refused(evil, tmp_path):
    mod, marker, examples = evil
    bad = _tamper(examples, tmp_path / "bad.yaml", lambda s: ATTACKS["reader class"](s, mod))
    cat = intake.from_yaml_file(str(bad))  # intake itself does not import readers on load
    with pytest.raises(UntrustedCatalogError, match=f"{mod}:Reader"):
        open_dataset(cat, "synthetic_krr_2d")
    assert not marker.exists()


def test_trusted_catalog_may_use_other_readers(evil, tmp_path):
    mod, marker, examples = evil
    good = _tamper(examples, examples.parent / "custom.yaml",
                   lambda s: ATTACKS["reader class"](s, mod))
    ds = open_dataset(good, "synthetic_krr_2d", trusted=True)
    assert ds.sizes["sample"] == 100
    assert marker.read_text() == "imported"  # the custom reader really ran


# --- register_dataset ------------------------------------------------------------------

def test_register_creates_and_updates(tmp_path):
    a = make_dataset("synthetic_krr_2d", tmp_path / "cats" / "data" / "a.zarr", 30,
                     chunk_size=10)
    b = make_dataset("nonlinear_binary", tmp_path / "cats" / "data" / "b.zarr", 20,
                     chunk_size=10, n_features=3)
    cat = tmp_path / "cats" / "mine.yaml"
    register_dataset(cat, "first", a, description="one")
    register_dataset(cat, "second", b)
    spec = yaml.safe_load(cat.read_text())
    urls = sorted(d["kwargs"]["url"] for d in spec["data"].values())
    assert urls == ["{CATALOG_DIR}/data/a.zarr", "{CATALOG_DIR}/data/b.zarr"]
    assert list_datasets(cat) == ["first", "second"]
    assert open_dataset(cat, "second").sizes["feature"] == 3
    # update: "first" now points at b; a's data description is dropped, "second" kept
    register_dataset(cat, "first", b, description="now b")
    spec = yaml.safe_load(cat.read_text())
    assert [d["kwargs"]["url"] for d in spec["data"].values()] == ["{CATALOG_DIR}/data/b.zarr"]
    assert open_dataset(cat, "first").sizes["feature"] == 3
    assert describe_catalog(cat)[0]["description"] == "now b"
    assert sorted(intake.from_yaml_file(str(cat)).entries) == ["first", "second"]
    assert sorted(p.name for p in cat.parent.iterdir()) == ["data", "mine.yaml"]  # no temp


def test_register_rejects_bad_name_and_bad_file(tmp_path):
    with pytest.raises(CatalogError, match=r"invalid entry name 'a b'"):
        register_dataset(tmp_path / "c.yaml", "a b", tmp_path / "x.zarr")
    (tmp_path / "old.yaml").write_text("version: 1\nsources: {}\n")
    with pytest.raises(CatalogError, match="expected 2"):
        register_dataset(tmp_path / "old.yaml", "a", tmp_path / "x.zarr")
    assert (tmp_path / "old.yaml").read_text() == "version: 1\nsources: {}\n"
