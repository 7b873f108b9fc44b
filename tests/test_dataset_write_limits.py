"""A dataset whose store could not be opened (a chunk of more bytes than the machine's
memory, or more chunks than a dataset may have: ``ooc_kernels.data._store_limits``) is
refused before anything is written or allocated, by every writer of datasets
(``write_chunks``, ``make_dataset``, a pipeline's ``data.generate``), with the library's
``ValidationError`` naming the variable, its shape and chunks and the limit, instead of
NumPy's ``MemoryError`` or ``ValueError`` part way through, or a store written for minutes
that the library then refuses to open."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

import ooc_kernels as ok
import ooc_kernels._memory as memory
import ooc_kernels.data._store_limits as store_limits
from ooc_kernels.data import open_zarr_dataset, write_chunks
from ooc_kernels.exceptions import SchemaError, ValidationError
from ooc_kernels.pipeline import run_pipeline

sys.path.insert(0, str(Path(__file__).parent))
from test_attacks_pipeline_outputs import _pipeline  # noqa: E402


def test_a_chunk_larger_than_the_memory_is_refused_before_anything_is_written(tmp_path,
                                                                             monkeypatch):
    monkeypatch.setattr(memory, "physical_memory", lambda: 2**20)   # a 1 MiB machine
    path = tmp_path / "d.zarr"
    # one chunk of X: 100 rows x 10,000 float32 features = 3.8 MiB
    with pytest.raises(ValidationError, match=r"cannot write the dataset .*'X' of shape "
                                              r"\(200, 10000\) in chunks of shape \(100, "
                                              r"10000\) would have chunks of 3\.8 MiB, more "
                                              r"than the 1\.0 MiB of memory"):
        ok.make_dataset("nonlinear_binary", path, 200, chunk_size=100, n_features=10_000,
                        progress=False)
    assert os.listdir(tmp_path) == []
    # the same dataset in chunks of 10 rows (0.4 MiB) is written
    ok.make_dataset("nonlinear_binary", path, 200, chunk_size=10, n_features=10_000,
                    progress=False)
    assert open_zarr_dataset(path)["X"].shape == (200, 10_000)


def test_a_number_of_features_beyond_any_memory_is_a_validation_error(tmp_path):
    with pytest.raises(ValidationError, match=r"'X' of shape \(100, 10{20}\)"):
        ok.make_dataset("nonlinear_binary", tmp_path / "d.zarr", 100, n_features=10**20,
                        progress=False)
    assert os.listdir(tmp_path) == []


def test_a_pipeline_generating_an_impossible_dataset_says_so_before_writing(tmp_path):
    path = _pipeline(tmp_path)
    spec = yaml.safe_load(path.read_text())
    spec["data"]["generate"]["nb"]["params"]["n_features"] = 10**20
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(ValidationError, match=r"cannot write the dataset .*nb\.zarr"):
        run_pipeline(path, scheduler="sync", progress=False)
    assert not (tmp_path / "data" / "nb.zarr").exists()


def test_more_chunks_than_a_dataset_may_have_is_refused_as_the_reader_would(tmp_path,
                                                                           monkeypatch):
    monkeypatch.setattr(store_limits, "MAX_CHUNKS", 10)
    X = np.zeros((100, 2), dtype=np.float32)
    y = np.zeros(100, dtype=np.float32)
    chunks = [{"X": X[i:i + 5], "y": y[i:i + 5]} for i in range(0, 100, 5)]
    with pytest.raises(ValidationError, match=r"'X' of shape \(100, 2\) in chunks of shape "
                                              r"\(5, 2\) would have 20 chunks, more than "
                                              r"the 10 a dataset may have"):
        write_chunks(tmp_path / "d.zarr", iter(chunks), n_samples=100, chunk_size=5,
                     n_features=2, y_dtype="float32", attrs={"task": "regression"})
    assert os.listdir(tmp_path) == []
    # the reader's rule, the reference: such a store, written anyway, is refused on opening
    monkeypatch.setattr(store_limits, "MAX_CHUNKS", 10**6)
    write_chunks(tmp_path / "d.zarr", iter(chunks), n_samples=100, chunk_size=5,
                 n_features=2, y_dtype="float32", attrs={"task": "regression"})
    monkeypatch.setattr(store_limits, "MAX_CHUNKS", 10)
    with pytest.raises(SchemaError, match="20 chunks in all, more than the 10"):
        open_zarr_dataset(tmp_path / "d.zarr")
