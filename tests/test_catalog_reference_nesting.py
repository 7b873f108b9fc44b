"""A kerchunk/fsspec reference file (``reference::{CATALOG_DIR}/refs.json``) that is JSON
nested deeper than Python's parser goes is a ``CatalogError`` saying the entry could not be
opened, as for any other reference file that cannot be loaded, instead of Python's bare
``RecursionError`` from the check of its targets."""

from __future__ import annotations

import json

import pytest
import yaml

import ooc_kernels as ok
from ooc_kernels.data.catalog import open_dataset, register_dataset
from ooc_kernels.exceptions import CatalogError

DEEP = 100_000


@pytest.mark.parametrize("text", ["[" * DEEP + "]" * DEEP,
                                  '{"a": ' * DEEP + "1" + "}" * DEEP,
                                  '{"version": 1, "refs": ' + "[" * DEEP + "]" * DEEP + "}"])
def test_a_reference_file_nested_too_deep_is_a_catalog_error(tmp_path, text):
    # the reference: Python's own parser cannot read it
    with pytest.raises(RecursionError, match="maximum recursion depth"):
        json.loads(text)
    store = ok.make_dataset("nonlinear_binary", tmp_path / "d.zarr", 20, progress=False)
    register_dataset(tmp_path / "cat.yaml", "d", store)
    doc = yaml.safe_load((tmp_path / "cat.yaml").read_text())
    (key,) = doc["data"]
    doc["data"][key]["kwargs"]["url"] = "reference::{CATALOG_DIR}/refs.json"
    (tmp_path / "cat.yaml").write_text(yaml.safe_dump(doc))
    (tmp_path / "refs.json").write_text(text)
    with pytest.raises(CatalogError, match=r"catalog entry 'd' .*could not be opened"):
        open_dataset(tmp_path / "cat.yaml", "d")
