"""A Zarr metadata file larger than ``MAX_METADATA_BYTES`` (64 MiB) in a saved model, a
checkpoint or a dataset is refused with the library's error naming the file and its size
before Zarr reads it whole into memory; a sparse file of a terabyte takes no disk and made
``ok.load`` raise NumPy's bare ``MemoryError`` (or, at a size below the memory, read
gigabytes)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels._untrusted import MAX_METADATA_BYTES
from ooc_kernels.data import open_zarr_dataset
from ooc_kernels.data.catalog import open_dataset, register_dataset
from ooc_kernels.exceptions import CheckpointError, ModelFormatError, SchemaError

X = np.random.default_rng(0).normal(size=(60, 2))
Y = (X[:, 0] > 0).astype(int)
FAST = dict(n_features=256, max_iter=1, tol=None, random_state=0, scheduler="sync")
TIB = 2**40


def _swell(path, size=TIB) -> None:
    """Make the file at ``path`` ``size`` bytes long (a sparse file: no disk used)."""
    with open(path, "r+b") as f:
        f.truncate(size)


def _message(path, size=TIB) -> str:
    return (rf"holds '{path}', a metadata file of {size} bytes, more than the "
            rf"{MAX_METADATA_BYTES} read of one")


@pytest.mark.parametrize("rel", ["zarr.json", "coef/zarr.json"])
def test_a_model_with_a_huge_metadata_file_is_refused(tmp_path, rel):
    est = ok.DSGClassifier(**FAST).fit(X, Y)
    est.save(tmp_path / "m.zarr")
    _swell(tmp_path / "m.zarr" / rel)
    with pytest.raises(ModelFormatError, match=_message(tmp_path / "m.zarr" / rel)):
        ok.load(tmp_path / "m.zarr")


def test_a_model_metadata_file_at_the_bound_is_read(tmp_path):
    """Padding JSON with spaces up to the bound keeps the same model (the reference: the
    model as saved)."""
    est = ok.DSGClassifier(**FAST).fit(X, Y)
    est.save(tmp_path / "m.zarr")
    meta = tmp_path / "m.zarr" / "coef" / "zarr.json"
    text = meta.read_bytes()
    meta.write_bytes(text + b" " * (4096 - len(text)))
    assert meta.stat().st_size <= MAX_METADATA_BYTES
    np.testing.assert_array_equal(ok.load(tmp_path / "m.zarr").predict(X), est.predict(X))


def test_a_checkpoint_with_a_huge_metadata_file_is_refused(tmp_path):
    ck = tmp_path / "ck.zarr"
    ok.DSGClassifier(**FAST).fit(X, Y, checkpoint=ck)
    _swell(ck / "zarr.json")
    with pytest.raises(CheckpointError, match=_message(ck / "zarr.json")):
        ok.DSGClassifier(**FAST).fit(X, Y, checkpoint=ck, resume=True)


def test_a_dataset_with_a_huge_metadata_file_is_refused(tmp_path):
    store = ok.make_dataset("nonlinear_binary", tmp_path / "d.zarr", 40, progress=False)
    register_dataset(tmp_path / "c.yaml", "d", store)
    shutil.copytree(store, tmp_path / "copy.zarr")
    _swell(store / "X" / "zarr.json")
    with pytest.raises(SchemaError, match=_message(store / "X" / "zarr.json")):
        open_dataset(tmp_path / "c.yaml", "d")
    with pytest.raises(SchemaError, match=_message(store / "X" / "zarr.json")):
        open_zarr_dataset(store)
    # the untouched copy opens: the same rows (the reference: zarr's own read of them)
    import zarr

    np.testing.assert_array_equal(open_zarr_dataset(tmp_path / "copy.zarr")["X"].values,
                                  zarr.open_group(str(tmp_path / "copy.zarr"), mode="r")["X"][:])
