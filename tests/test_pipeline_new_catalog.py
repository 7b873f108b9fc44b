"""A first pipeline with ``data.generate`` in a folder without a catalog file runs: the
catalog is created listing the generated entries (``data/ENTRY.zarr`` next to it).  A
catalog that exists is never rewritten: one listing the entries is byte-identical after
the run, and one lacking an entry gives the exact ``ooc-kernels data make`` command that
adds it, after which the pipeline runs."""

from __future__ import annotations

import re
import shlex

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

import ooc_kernels as ok
from ooc_kernels.cli import main
from ooc_kernels.data.catalog import create_catalog, list_datasets, open_dataset
from ooc_kernels.exceptions import PipelineConfigError
from ooc_kernels.pipeline import run_pipeline

PIPELINE = """\
name: first
data:
  catalog: {catalog}
  train: {train}
  generate:
    {entry}: {{generator: nonlinear_binary, n_samples: 60, chunk_size: 30, random_state: 3,
             params: {{flip: 0.1}}}}
model:
  estimator: DSGClassifier
  params: {{max_iter: 1, tol: null, n_features: 256, random_state: 0}}
save:
  output_dir: out
"""


def _pipeline(folder, catalog="catalog.yaml", entry="blobs"):
    path = folder / "p.yaml"
    path.write_text(PIPELINE.format(catalog=catalog, train=entry, entry=entry))
    return path


@pytest.mark.parametrize("catalog", ["catalog.yaml", "catalogs/mine.yaml"])
def test_a_first_pipeline_creates_its_catalog(tmp_path, catalog):
    metrics = run_pipeline(_pipeline(tmp_path, catalog), progress=False)
    assert metrics["n_train"] == 60
    cat = tmp_path / catalog
    assert list_datasets(cat) == ["blobs"]
    text = yaml.safe_load(cat.read_text())
    (data,) = text["data"].values()
    assert data["kwargs"]["url"] == "{CATALOG_DIR}/data/blobs.zarr"
    # the entry is the dataset data.generate describes: the generator's own store
    ref = ok.make_dataset("nonlinear_binary", tmp_path / "ref.zarr", 60, chunk_size=30,
                          random_state=3, flip=0.1, progress=False)
    got = open_dataset(cat, "blobs")
    want = open_dataset(_register(tmp_path, ref), "ref")
    np.testing.assert_array_equal(got["X"].values, want["X"].values)
    np.testing.assert_array_equal(got["y"].values, want["y"].values)


def _register(tmp_path, store):
    from ooc_kernels.data.catalog import register_dataset

    register_dataset(tmp_path / "ref.yaml", "ref", store)
    return tmp_path / "ref.yaml"


def test_a_catalog_that_lists_the_entries_is_byte_identical_after_the_run(tmp_path):
    run_pipeline(_pipeline(tmp_path), progress=False)
    cat = tmp_path / "catalog.yaml"
    cat.write_text("# my notes\n" + cat.read_text())
    before = cat.read_bytes()
    run_pipeline(_pipeline(tmp_path), progress=False)
    assert cat.read_bytes() == before


def test_a_catalog_lacking_the_entry_is_kept_and_the_error_gives_the_command(tmp_path):
    run_pipeline(_pipeline(tmp_path), progress=False)
    cat = tmp_path / "catalog.yaml"
    cat.write_text("# my notes\n" + cat.read_text())
    before = cat.read_bytes()
    path = _pipeline(tmp_path, entry="other")
    with pytest.raises(PipelineConfigError, match=r"the catalog '.*catalog\.yaml' exists and "
                                                  r"has no entry 'other', and a pipeline "
                                                  r"never rewrites") as info:
        run_pipeline(path, progress=False)
    assert cat.read_bytes() == before
    assert not (tmp_path / "data" / "other.zarr").exists()
    (command,) = re.findall(r"run `(ooc-kernels data make [^`]*)`", str(info.value))
    words = shlex.split(command)
    assert words[:3] == ["ooc-kernels", "data", "make"]
    r = CliRunner().invoke(main, words[1:] + ["-q"])
    assert r.exit_code == 0, r.output
    assert run_pipeline(path, progress=False)["n_train"] == 60
    assert list_datasets(cat) == ["blobs", "other"]


def test_create_catalog_never_replaces_a_file(tmp_path):
    cat = tmp_path / "c.yaml"
    cat.write_bytes(b"not: a catalog\n")
    assert create_catalog(cat, {"a": tmp_path / "data" / "a.zarr"}) is False
    assert cat.read_bytes() == b"not: a catalog\n"
    link = tmp_path / "l.yaml"
    link.symlink_to(tmp_path / "missing.yaml")
    assert create_catalog(link, {"a": tmp_path / "data" / "a.zarr"}) is False
    assert link.is_symlink() and not (tmp_path / "missing.yaml").exists()


def test_create_catalog_refuses_a_store_outside_the_catalog_folder(tmp_path):
    from ooc_kernels.exceptions import PathEscapeError

    with pytest.raises(PathEscapeError, match="outside the catalog's folder"):
        create_catalog(tmp_path / "sub" / "c.yaml", {"a": tmp_path / "a.zarr"})
    assert not (tmp_path / "sub" / "c.yaml").exists()
