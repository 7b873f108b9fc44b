"""Writers and readers of the same path at the same moment, and writes the file system
refuses at their first step (docs/security.md, section 4)."""

import errno
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import ooc_kernels as ok
from ooc_kernels import _checksums
from ooc_kernels.cli import main


def _fitted(seed):
    X = np.random.default_rng(0).normal(size=(60, 3))
    return ok.DSGRegressor(n_features=64, block_size=32, batch_size=10, max_iter=1,
                           random_state=seed, scheduler="sync").fit(X, X[:, 0] + 0.1)


def _train_args(tmp_path, *extra):
    from ooc_kernels.data.catalog import register_dataset

    cat = tmp_path / "c.yaml"
    store = ok.make_dataset("synthetic_krr_2d", tmp_path / "data" / "k.zarr", 200,
                            chunk_size=100, progress=False)
    register_dataset(cat, "k", store)
    return ["train", "--catalog", str(cat), "--entry", "k", "--estimator", "DSGRegressor",
            "-p", "n_features=64", "-p", "block_size=32", "-p", "batch_size=20", "-p",
            "max_iter=1", "-p", "random_state=0", "--scheduler", "sync", "-q", *extra]


def _files(folder):
    return {os.path.relpath(os.path.join(d, f), folder): Path(d, f).read_bytes()
            for d, _, names in os.walk(folder) for f in names}


def test_train_without_overwrite_never_replaces_a_model_that_appears_during_its_save(
        tmp_path, monkeypatch):
    """Another job writes the same --out while this one saves: without --overwrite this
    one must not replace it (checked under the path's lock, as write_chunks does)."""
    other = tmp_path / "other.zarr"
    _fitted(7).save(other)
    out = tmp_path / "m.zarr"
    args = _train_args(tmp_path, "--out", str(out))
    write_arrays = _checksums.write_arrays

    def another_job_finishes_first(group, arrays):
        if not out.exists():
            shutil.copytree(other, out)       # the other job's complete model lands
        write_arrays(group, arrays)

    monkeypatch.setattr(_checksums, "write_arrays", another_job_finishes_first)
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 1, r.output
    assert "DatasetExistsError" in r.output and "--overwrite" in r.output, r.output
    assert _files(out) == _files(other)                   # the other job's model, untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml", "data", "m.zarr",
                                                          "other.zarr"]


def test_a_load_while_another_process_replaces_the_model_gives_one_whole_model(
        tmp_path, monkeypatch):
    """A save that swaps the folder between the load's reading of the metadata and of the
    arrays: the load gives the old or the new model, never a false checksum error."""
    old, new = _fitted(1), _fitted(2)
    X = np.random.default_rng(3).normal(size=(20, 3))
    path = tmp_path / "m.zarr"
    old.save(path)
    read_arrays = _checksums.read_arrays
    swaps = []

    def saved_meanwhile(group, manifest, **kwargs):
        if not swaps:
            swaps.append(1)
            new.save(path)                 # what `ok.save` in another process does
        return read_arrays(group, manifest, **kwargs)

    monkeypatch.setattr(_checksums, "read_arrays", saved_meanwhile)
    loaded = ok.load(path)
    assert swaps
    np.testing.assert_array_equal(loaded.predict(X), new.predict(X))
    assert sorted(os.listdir(tmp_path)) == ["m.zarr"]
