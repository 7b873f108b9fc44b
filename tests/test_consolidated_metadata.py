"""A store's consolidated metadata (the copy of every array's metadata in the root
``zarr.json``, which xarray opens the store by) must agree with the arrays' own metadata
files, by path and through a catalog: otherwise xarray reads the rows, dtype or chunks the
copy says, or a missing array as zeros."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import xarray as xr

import ooc_kernels as ok
from ooc_kernels.data import make_dataset, open_zarr_dataset, register_dataset
from ooc_kernels.exceptions import SchemaError


@pytest.fixture
def store(tmp_path):
    path = make_dataset("nonlinear_binary", tmp_path / "nb.zarr", 60, chunk_size=20,
                        n_features=5)
    cat = tmp_path / "c.yaml"
    register_dataset(cat, "nb", path)
    return path, cat


def _edit_consolidated(path, edit):
    root = json.loads((path / "zarr.json").read_text())
    for name, meta in root["consolidated_metadata"]["metadata"].items():
        edit(name, meta)
    (path / "zarr.json").write_text(json.dumps(root))


def _open_by_path(path, cat):
    return open_zarr_dataset(path)


def _open_by_catalog(path, cat):
    return ok.open_dataset(cat, "nb")


OPENERS = [_open_by_path, _open_by_catalog]


@pytest.mark.parametrize("opener", OPENERS)
def test_a_consolidated_copy_with_fewer_rows_is_refused(store, opener):
    """Both arrays declared 40 rows in the copy (60 in their files): xarray read 40 rows
    and dropped the last 20 without an error."""
    path, cat = store
    assert opener(path, cat)["X"].shape == (60, 5)
    _edit_consolidated(path, lambda name, meta: meta["shape"].__setitem__(0, 40))
    with pytest.raises(SchemaError, match=r"consolidated metadata of .*nb\.zarr' describes "
                       r"variable '(X|y)' otherwise .*shape \[40.*there, \[60.* in the "
                       r"array's file.*zarr\.consolidate_metadata"):
        opener(path, cat)


@pytest.mark.parametrize("opener", OPENERS)
def test_a_consolidated_copy_with_another_dtype_or_codecs_is_refused(store, opener):
    path, cat = store

    def edit(name, meta):
        if name == "X":
            meta["codecs"] = meta["codecs"][:-1]      # the chunk checksum dropped
    _edit_consolidated(path, edit)
    with pytest.raises(SchemaError, match=r"variable 'X' otherwise .*codecs"):
        opener(path, cat)


def test_a_catalog_entry_whose_store_lost_an_array_is_refused(store):
    """The copy lists ``y``, its folder is gone: through the catalog, ``y`` was read as
    zeros (every label 0); by path it was already refused."""
    path, cat = store
    labels = np.asarray(open_zarr_dataset(path)["y"])
    assert set(np.unique(labels)) == {0, 1}
    shutil.rmtree(path / "y")
    for opener in OPENERS:
        with pytest.raises(SchemaError, match=r"'y' is listed in the consolidated metadata "
                           r"of .*missing from the store"):
            opener(path, cat)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_stores_written_by_xarray_with_nan_fill_values_still_open(tmp_path, zarr_format):
    """No false alarm: a consolidated store written by xarray (float arrays whose fill value
    is NaN, which is not equal to itself) opens by path and through a catalog."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = (X[:, 0] > 0).astype(np.int64)
    path = tmp_path / "own.zarr"
    xr.Dataset({"X": (("sample", "feature"), X.astype(np.float32)), "y": ("sample", y)}) \
        .chunk({"sample": 10}).to_zarr(path, consolidated=True, zarr_format=zarr_format)
    np.testing.assert_array_equal(np.asarray(open_zarr_dataset(path)["y"]), y)
    cat = tmp_path / "c.yaml"
    register_dataset(cat, "own", path)
    np.testing.assert_array_equal(np.asarray(ok.open_dataset(cat, "own")["X"]),
                                  X.astype(np.float32))
