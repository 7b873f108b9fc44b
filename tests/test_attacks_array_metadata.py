"""Attacks on the metadata file of one array (``NAME/zarr.json``) of a saved model and of a
checkpoint: truncated, garbled, an unknown codec, another or an unknown data type, another
or a malformed shape.  zarr parses that file before any check of the library; whatever is
wrong with it must be the library's error (``ModelFormatError``, ``CheckpointError``)
naming the array, and the file is left as it is."""

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
from _tamper import copy_without_checksums  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")
X = np.random.default_rng(0).normal(size=(300, 2))
Y = X[:, 0]
P = dict(n_features=256, random_state=0, scheduler="sync", progress=False)


def _text(edit):
    """A damage of the text of a ``zarr.json``."""
    def damage(path):
        path.write_text(edit(path.read_text()))
    return damage


def _doc(edit):
    """A damage of the parsed document of a ``zarr.json``, written back as JSON."""
    def damage(path):
        doc = json.loads(path.read_text())
        edit(doc)
        path.write_text(json.dumps(doc))
    return damage


def _set(key, value):
    return _doc(lambda doc: doc.__setitem__(key, value))


def _codec_name(doc):
    doc["codecs"][1]["name"] = "blosx"


DAMAGES = {
    "truncated": _text(lambda s: s[: len(s) // 2]),
    "emptied": _text(lambda s: ""),
    "not an object": _text(lambda s: "[1, 2]"),
    "unknown codec": _doc(_codec_name),
    "unknown compressor": _text(lambda s: s.replace('"zstd"', '"zstx"')),
    "unknown data type": _set("data_type", "float65"),
    "other data type": _set("data_type", "float32"),
    "shape as text": _set("shape", "big"),
    "shape of another rank": _set("shape", [256]),
    "shape of another size": _set("shape", [1, 512, 1]),
    "no shape": _doc(lambda doc: doc.pop("shape")),
}


def _files(path: Path) -> list:
    return sorted((p.relative_to(path), p.read_bytes()) for p in path.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """A saved DSG model and the checkpoint of its fit."""
    folder = tmp_path_factory.mktemp("stores")
    ok.DSGRegressor(max_iter=1, tol=None, **P).fit(X, Y, checkpoint=folder / "ck.zarr",
                                         checkpoint_every=1).save(folder / "m.zarr")
    return folder


#: What reads each store back, the library error it must raise and the message's fix.
READS = {
    "model": ("m.zarr", lambda path: ok.load(path), ModelFormatError,
              r"m\.zarr.*: array 'coef' .*; re-save the model"),
    "checkpoint": ("ck.zarr", lambda path: ok.DSGRegressor(max_iter=2, tol=None, **P).fit(
        X, Y, checkpoint=path, resume=True), CheckpointError,
        r"checkpoint '.*ck\.zarr': array 'coef' .*; remove it \(or pass resume=False "
        r"\(command line: --no-resume; pipeline file: fit: \{resume: false\}\)\)"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
@pytest.mark.parametrize("kind", sorted(READS))
def test_a_damaged_array_metadata_file_is_the_stores_own_error(stores, tmp_path, kind,
                                                               damage):
    """A saved model: ModelFormatError; a checkpoint: CheckpointError; each naming the
    array, the damaged store left as it was and the good copy still read."""
    name, read, error, message = READS[kind]
    path = tmp_path / name
    shutil.copytree(stores / name, path)
    DAMAGES[damage](path / "coef" / "zarr.json")
    before = _files(path)
    with pytest.raises(error, match=message):
        read(path)
    assert _files(path) == before
    if kind == "model":
        ok.load(stores / name)                           # the good copy still loads


def test_the_damaged_array_is_the_one_named(tmp_path):
    """A model of several arrays names the one whose metadata file is damaged."""
    path = tmp_path / "pkr.zarr"
    ok.ProjectedKernelRidge(basis="nystrom-fixed", n_components=16, chunk_size=100,
                            random_state=0, scheduler="sync", progress=False
                            ).fit(X, Y).save(path)
    names = sorted(zarr.open_group(str(path), mode="r").array_keys())
    assert len(names) > 1
    for name in names:
        damaged = tmp_path / f"{name}.zarr"
        shutil.copytree(path, damaged)
        DAMAGES["truncated"](damaged / name / "zarr.json")
        with pytest.raises(ModelFormatError, match=rf"array '{name}' cannot be read: its "
                                                   rf"metadata file '{name}/zarr.json' is "
                                                   r"damaged \(JSONDecodeError"):
            ok.load(damaged)


def test_a_damaged_array_metadata_file_of_a_model_without_checksums(stores, tmp_path):
    """A model of format 2 (no checksums) is read through the same check."""
    path = copy_without_checksums(stores / "m.zarr", tmp_path / "m.zarr")
    ok.load(path)
    DAMAGES["unknown codec"](path / "coef" / "zarr.json")
    with pytest.raises(ModelFormatError, match=r"array 'coef' cannot be read: its metadata "
                                               r"file 'coef/zarr.json' is damaged"):
        ok.load(path)


@pytest.mark.parametrize("error", [MemoryError, ImportError, PermissionError])
def test_errors_that_are_not_damage_are_not_reported_as_damage(stores, monkeypatch, error):
    """Out of memory, a missing module or an unreadable disk while an array is opened is
    that error, not a damaged model."""
    def fail(self, name):
        raise error("not the file's fault")

    monkeypatch.setattr(zarr.Group, "__getitem__", fail)
    with pytest.raises(error, match="not the file's fault"):
        ok.load(stores / "m.zarr")
