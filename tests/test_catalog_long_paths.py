"""A catalog entry whose path is longer than the file system allows (a name past its 255
bytes, a path past ``PATH_MAX``) is the catalog's ``CatalogError``, with the path cut short
in the message, instead of Python's bare ``OSError`` (``ENAMETOOLONG``) from the check of
the links inside the store, or a message as long as the path."""

from __future__ import annotations

import errno
import os

import pytest
import yaml

import ooc_kernels as ok
from ooc_kernels.data.catalog import open_dataset, register_dataset
from ooc_kernels.exceptions import CatalogError


@pytest.mark.parametrize("name", ["a" * 100_000, "a" * 300 + ".zarr",
                                  "/".join(["b" * 200] * 40)])
def test_a_path_too_long_for_the_file_system_is_a_catalog_error(tmp_path, name):
    store = ok.make_dataset("nonlinear_binary", tmp_path / "d.zarr", 20, progress=False)
    register_dataset(tmp_path / "cat.yaml", "d", store)
    doc = yaml.safe_load((tmp_path / "cat.yaml").read_text())
    (key,) = doc["data"]
    doc["data"][key]["kwargs"]["url"] = "{CATALOG_DIR}/" + name
    (tmp_path / "cat.yaml").write_text(yaml.safe_dump(doc))
    # the reference: the operating system refuses the path itself
    with pytest.raises(OSError) as refused:
        os.stat(tmp_path / name)
    assert refused.value.errno == errno.ENAMETOOLONG
    with pytest.raises(CatalogError, match="catalog entry 'd'") as info:
        open_dataset(tmp_path / "cat.yaml", "d")
    assert len(str(info.value)) < 2000
