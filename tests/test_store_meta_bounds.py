"""The check that keeps writes out of the library's stores reads the ``zarr.json`` of every
folder above the target: whatever someone placed there costs it a bounded read.

* a ``zarr.json`` larger than ``MAX_STORE_META`` is never read whole (a sparse file of
  terabytes takes no disk): the write is refused with a message that says why, and the
  check's memory stays far below the file's size;
* a named pipe there does not make the write wait for a writer of the pipe;
* JSON nested deeper than the parser goes (``[[[[...``) is no store's metadata, as other
  JSON that is not a Zarr 3 document, instead of Python's ``RecursionError``.
"""

from __future__ import annotations

import os
import threading
import tracemalloc

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels._atomic import check_replaceable, check_target, store_kind
from ooc_kernels._store_meta import MAX_STORE_META
from ooc_kernels.evaluation import write_predictions
from ooc_kernels.exceptions import ForeignPathError, ModelPathError

pytestmark = pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")

RNG = np.random.default_rng(0)
X = RNG.normal(size=(40, 2))
Y = (X[:, 0] > 0).astype(np.int64)
FAST = dict(n_features=256, max_iter=1, tol=None, random_state=0, scheduler="sync")


def _sparse_meta(folder, size: int) -> None:
    """A ``zarr.json`` of ``size`` bytes in ``folder`` that takes no disk: a valid start of
    a library model's metadata, then a hole."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "zarr.json", "wb") as f:
        f.write(b'{"zarr_format": 3, "node_type": "group", "attributes": '
                b'{"ooc_kernels_store": "model"}}')
        f.truncate(size)


@pytest.mark.parametrize("size", [MAX_STORE_META + 1, 2**40])
def test_a_huge_zarr_json_above_the_target_is_refused_clearly_without_being_read(tmp_path,
                                                                                size):
    big = tmp_path / "shared"
    _sparse_meta(big, size)
    est = ok.DSGClassifier(**FAST).fit(X, Y)
    for error, write in [
            (ModelPathError, lambda: est.save(big / "sub" / "m.zarr")),
            (ForeignPathError, lambda: write_predictions(est, X, big / "p.zarr",
                                                         progress=False))]:
        with pytest.raises(error, match=rf"cannot tell whether '{big}' is a store .* its "
                                        rf"zarr\.json is {size} bytes, more than the "
                                        rf"{MAX_STORE_META} read"):
            write()
    assert sorted(os.listdir(big)) == ["zarr.json"]      # nothing written there
    assert os.path.getsize(big / "zarr.json") == size
    # the check reads nothing of such a file: its memory is a tiny part of the file's size
    tracemalloc.start()
    try:
        with pytest.raises(ModelPathError, match=rf"its zarr\.json is {size} bytes"):
            check_target(big / "m.zarr", "model")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20, peak


def test_reading_a_small_zarr_json_costs_its_size_not_the_bound(tmp_path):
    """``read(n)`` allocates ``n`` bytes before it reads: a read of a store's small
    ``zarr.json`` asked for the whole bound (64 MiB) on every write below a store."""
    est = ok.DSGClassifier(**FAST).fit(X, Y)
    est.save(tmp_path / "m.zarr")
    assert os.path.getsize(tmp_path / "m.zarr" / "zarr.json") < 2**16
    tracemalloc.start()
    try:
        assert store_kind(tmp_path / "m.zarr") == "model"
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20, peak


def test_a_huge_zarr_json_is_not_taken_for_a_store_to_replace(tmp_path):
    big = tmp_path / "big.zarr"
    _sparse_meta(big, MAX_STORE_META + 1)
    assert store_kind(big) is None
    with pytest.raises(ModelPathError, match="refusing to replace .*not an ooc_kernels model"):
        check_replaceable(big, "model")


def test_a_named_pipe_zarr_json_above_the_target_does_not_hang_a_save(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    os.mkfifo(folder / "zarr.json")
    est = ok.DSGClassifier(**FAST).fit(X, Y)
    out = {}

    def save():
        try:
            est.save(folder / "m.zarr")
            out["done"] = True
        except BaseException as err:  # noqa: BLE001 - checked below
            out["error"] = err

    runner = threading.Thread(target=save, daemon=True)
    runner.start()
    runner.join(timeout=60)
    if runner.is_alive():   # free the waiting open() before failing
        os.close(os.open(folder / "zarr.json", os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("the save waits for a writer of the named pipe zarr.json above it")
    assert out == {"done": True}, out
    # a pipe is no store's metadata: the model is saved inside the folder, as predicted
    np.testing.assert_array_equal(ok.load(folder / "m.zarr").predict(X), est.predict(X))


def test_deeply_nested_json_above_the_target_is_no_store(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "zarr.json").write_text("[" * 200_000)
    est = ok.DSGClassifier(**FAST).fit(X, Y)
    est.save(folder / "m.zarr")
    np.testing.assert_array_equal(ok.load(folder / "m.zarr").predict(X), est.predict(X))
    with pytest.raises(ModelPathError, match=r"refusing to replace .*mine'"):
        est.save(folder)
