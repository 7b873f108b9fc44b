"""Saved models and checkpoints whose array metadata declares absurd sizes.

An array's shape and chunk shape come from its own metadata file (``coef/zarr.json``), which
whoever writes the file controls, checksums included.  A file of a few kilobytes that
declares ``coef`` of shape ``(10**9, 256, 1)`` (its chunks missing, read as the fill value)
would make a load allocate terabytes, and a chunk shape larger than the array makes every
chunk decode to a buffer of the chunk's size.  Both must be the store's own error naming the
array, before anything is read, and the file left as it is."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import zarr

import ooc_kernels as ok
from ooc_kernels.exceptions import CheckpointError, ModelFormatError

sys.path.insert(0, str(Path(__file__).parent))
from _tamper import copy_without_checksums, edit_attrs  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")
X = np.random.default_rng(0).normal(size=(300, 2))
Y = X[:, 0]
P = dict(n_features=256, tol=None, random_state=0, scheduler="sync", progress=False)
#: Rows declared for ``coef``: 10**9 x 256 float64 values are 1.9 TiB, more than any test
#: machine's memory.
HUGE = 10**9


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """A saved DSG model and the checkpoint of its fit."""
    folder = tmp_path_factory.mktemp("stores")
    ok.DSGRegressor(max_iter=1, **P).fit(X, Y, checkpoint=folder / "ck.zarr",
                                         checkpoint_every=1).save(folder / "m.zarr")
    return folder


#: What reads each store back, the key of its metadata and the library error it raises.
READS = {
    "model": ("m.zarr", "ooc_kernels", lambda path: ok.load(path), ModelFormatError),
    "checkpoint": ("ck.zarr", "ooc_kernels_checkpoint", lambda path: ok.DSGRegressor(
        max_iter=2, **P).fit(X, Y, checkpoint=path, resume=True), CheckpointError),
}


def _files(path: Path) -> list:
    return sorted((p.relative_to(path), p.read_bytes()) for p in path.rglob("*") if p.is_file())


def _declare_shape(path: Path, key: str, shape: list) -> None:
    """Give ``coef`` the shape (and one chunk of it) ``shape``, its chunk files removed and
    the checksum entry and the metadata checksum made to agree, as an editor would."""
    meta_file = path / "coef" / "zarr.json"
    doc = json.loads(meta_file.read_text())
    doc["shape"] = shape
    doc["chunk_grid"]["configuration"]["chunk_shape"] = shape
    meta_file.write_text(json.dumps(doc))
    shutil.rmtree(path / "coef" / "c", ignore_errors=True)

    def change(meta):
        meta["checksums"]["arrays"]["coef"]["shape"] = shape

    edit_attrs(path, key, change)


@pytest.mark.parametrize("kind", sorted(READS))
def test_arrays_declared_larger_than_the_memory_are_refused_before_any_read(stores,
                                                                            tmp_path, kind):
    name, key, read, error = READS[kind]
    path = tmp_path / name
    shutil.copytree(stores / name, path)
    shape = zarr.open_group(str(path), mode="r")["coef"].shape
    _declare_shape(path, key, [HUGE, *shape[1:]])
    before = _files(path)
    with pytest.raises(error, match=r"its arrays declare 1\.9 TiB in all, more than the "
                                    r"[0-9.]+ [KMGT]iB of memory of this machine \(array "
                                    r"'coef': shape \(1000000000, 256, 1\)"):
        read(path)
    assert _files(path) == before


@pytest.mark.parametrize("kind", sorted(READS))
def test_a_chunk_larger_than_its_array_is_refused_before_it_is_decoded(stores, tmp_path,
                                                                       kind):
    """``coef`` rewritten with the same values (so its checksum entry still holds) in one
    gzip chunk of 4096 times its rows: every value is right, but decoding the chunk would
    allocate 4096 times the array."""
    name, _, read, error = READS[kind]
    path = tmp_path / name
    shutil.copytree(stores / name, path)
    group = zarr.open_group(str(path), mode="r+")
    coef = group["coef"][...]
    del group["coef"]
    big = group.create_array("coef", shape=coef.shape, dtype=coef.dtype,
                             chunks=(4096 * coef.shape[0], *coef.shape[1:]),
                             compressors=zarr.codecs.GzipCodec(), fill_value=0.0)
    big[...] = coef
    assert zarr.open_group(str(path), mode="r")["coef"][...].tobytes() == coef.tobytes()
    before = _files(path)
    with pytest.raises(error, match=r"array 'coef' of shape \(1, 256, 1\) declares stored "
                                    r"chunks of shape \(4096, 256, 1\) \(8\.0 MiB each\), "
                                    r"larger than the array"):
        read(path)
    assert _files(path) == before


def test_a_model_without_checksums_declaring_a_huge_array_is_refused(stores, tmp_path):
    """A model of format 2 (no checksums) is held to the same bound."""
    path = copy_without_checksums(stores / "m.zarr", tmp_path / "m.zarr")
    ok.load(path)
    doc = json.loads((path / "coef" / "zarr.json").read_text())
    doc["shape"] = doc["chunk_grid"]["configuration"]["chunk_shape"] = [HUGE, 256, 1]
    (path / "coef" / "zarr.json").write_text(json.dumps(doc))
    shutil.rmtree(path / "coef" / "c")
    with pytest.raises(ModelFormatError, match=r"its arrays declare 1\.9 TiB in all"):
        ok.load(path)
