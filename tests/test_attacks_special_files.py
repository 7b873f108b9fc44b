"""Named pipes and devices where a catalog reads a file: the catalog file itself, a file
inside the store an entry reads (``zarr.json``, a chunk), the end of a link inside that
store, and a reference file; and in a saved model or a checkpoint.  ``open()`` of a named pipe waits for a writer without end and
``/dev/zero`` never ends, so each is refused with the library's error naming the file.

Before the refusal existed these reads hung; each test runs a feeder thread that writes
garbage into the pipe whenever a reader waits on it, so that a reader that opens the pipe
gets an error other than the expected one instead of hanging the test."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import threading
import time

import numpy as np
import pytest
import yaml

import ooc_kernels as ok
from ooc_kernels.data import register_dataset
from ooc_kernels.exceptions import (CatalogError, CheckpointError, ModelFormatError,
                                    UntrustedCatalogError)

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes")


@contextlib.contextmanager
def _fed(fifo):
    """Write a few bytes into ``fifo`` each time a reader has it open, until the block ends."""
    stop = threading.Event()

    def feed():
        while not stop.is_set():
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as err:  # ENXIO: no reader yet
                if err.errno != errno.ENXIO:
                    return
                time.sleep(0.05)
                continue
            with contextlib.suppress(OSError):
                os.write(fd, b"[not, what, was, expected")
            os.close(fd)
            time.sleep(0.05)

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)


@pytest.fixture()
def world(tmp_path):
    store = ok.make_dataset("synthetic_krr_2d", tmp_path / "data" / "x.zarr", 20,
                            chunk_size=10, progress=False)
    register_dataset(tmp_path / "c.yaml", "x", store)
    return tmp_path


def test_a_catalog_file_that_is_a_named_pipe_is_refused(world):
    fifo = world / "pipe.yaml"
    os.mkfifo(fifo)
    with _fed(fifo):
        for call in (ok.list_datasets, lambda c: ok.open_dataset(c, "x")):
            with pytest.raises(CatalogError, match=r"catalog file '.*pipe\.yaml' is a named "
                                                   r"pipe \(FIFO\), not a regular file"):
                call(fifo)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_a_catalog_file_that_is_a_device_is_refused():
    with pytest.raises(CatalogError, match=r"catalog file '/dev/zero' is a character device"):
        ok.list_datasets("/dev/zero")


@pytest.mark.parametrize("where", ["X/zarr.json", "y/c/0"])
@pytest.mark.parametrize("how", ["in place", "link to it"])
def test_a_named_pipe_in_the_store_of_an_entry_is_refused(world, where, how):
    """A pipe at an array's metadata file or chunk file, or a link there to a pipe elsewhere
    in the catalog's folder."""
    path = world / "data" / "x.zarr" / where
    os.remove(path)
    fifo = world / "pipe" if how == "link to it" else path
    os.mkfifo(fifo)
    if how == "link to it":
        os.symlink(fifo, path)
    with _fed(fifo), pytest.raises(UntrustedCatalogError,
                                   match=rf"holds '.*x\.zarr/{where}'.* a named pipe"):
        ok.open_dataset(world / "c.yaml", "x")


def test_a_reference_file_that_is_a_named_pipe_is_refused(world):
    fifo = world / "refs.json"
    os.mkfifo(fifo)
    spec = yaml.safe_load((world / "c.yaml").read_text())
    (data,) = spec["data"].values()
    data["kwargs"]["url"] = "reference::{CATALOG_DIR}/refs.json"
    (world / "r.yaml").write_text(yaml.safe_dump(spec))
    with _fed(fifo), pytest.raises(UntrustedCatalogError, match=r"through the reference file "
                                                                r"'.*refs\.json', which is a "
                                                                r"named pipe"):
        ok.list_datasets(world / "r.yaml")


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A saved DSG model and the checkpoint of its fit."""
    folder = tmp_path_factory.mktemp("saved")
    X = np.random.default_rng(0).normal(size=(100, 2))
    ok.DSGRegressor(n_features=256, max_iter=1, tol=None, random_state=0, scheduler="sync",
                    progress=False).fit(X, X[:, 0], checkpoint=folder / "ck.zarr",
                                        checkpoint_every=1).save(folder / "m.zarr")
    return folder, X


def _resume(path, X):
    ok.DSGRegressor(n_features=256, max_iter=2, tol=None, random_state=0, scheduler="sync",
                    progress=False).fit(X, X[:, 0], checkpoint=path, resume=True)


@pytest.mark.parametrize("where", ["zarr.json", "coef/zarr.json", "coef/c/0/0/0",
                                   "link to it"])
@pytest.mark.parametrize("kind", ["model", "checkpoint"])
def test_a_named_pipe_in_a_saved_model_or_checkpoint_is_refused(saved, tmp_path, kind,
                                                                 where):
    """A pipe at the metadata file, an array's metadata file or a chunk file, or a link
    at the chunk file to a pipe beside the folder: the library's error naming it."""
    folder, X = saved
    name = "m.zarr" if kind == "model" else "ck.zarr"
    path = tmp_path / name
    shutil.copytree(folder / name, path)
    member = path / ("coef/c/0/0/0" if where == "link to it" else where)
    os.remove(member)
    fifo = tmp_path / "pipe" if where == "link to it" else member
    os.mkfifo(fifo)
    if where == "link to it":
        os.symlink(fifo, member)
    error = ModelFormatError if kind == "model" else CheckpointError
    with _fed(fifo), pytest.raises(error, match=r"holds '.*/c/0/0/0', a named pipe|holds "
                                                r"'.*zarr\.json', a named pipe"):
        ok.load(path) if kind == "model" else _resume(path, X)


@pytest.mark.parametrize("target", ["metrics.json", "model.zarr"])
def test_a_named_pipe_swapped_in_after_the_check_never_hangs_a_writer(tmp_path, monkeypatch,
                                                                      target):
    """The check saw a file (``is_file`` reports one), then a FIFO is there: at a metrics
    path, or as the ``zarr.json`` of a store at a model's path.  The writer refuses it at
    once.  A feeder writes a document of the library's kind into the pipe after 3 s, so a
    reader that blocked on it returns (and is caught by the time and the missing refusal)
    instead of hanging the test."""
    from pathlib import Path

    from ooc_kernels._atomic import check_replaceable, write_json_atomic
    from ooc_kernels.exceptions import ForeignPathError, ModelPathError

    if target == "metrics.json":
        fifo = tmp_path / target
        doc = b'{"ooc_kernels_file": "metrics"}'
        error, match = ForeignPathError, "named pipe"

        def write():
            write_json_atomic(fifo, {"r2": 1.0}, kind="metrics", overwrite=True)
    else:
        (tmp_path / target).mkdir()
        fifo = tmp_path / target / "zarr.json"
        doc = b'{"zarr_format": 3, "attributes": {"ooc_kernels_store": "model"}}'
        error, match = ModelPathError, "not an ooc_kernels model"

        def write():
            check_replaceable(tmp_path / target, "model")
    os.mkfifo(fifo)
    real_is_file = Path.is_file
    monkeypatch.setattr(Path, "is_file",
                        lambda self: True if self == fifo else real_is_file(self))
    stop = threading.Event()

    def feeder():
        if stop.wait(3.0):
            return
        while not stop.is_set():
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # no reader waiting (ENXIO), or no longer a pipe
                time.sleep(0.02)
                continue
            try:
                os.write(fd, doc)
            except OSError:
                pass
            os.close(fd)

    thread = threading.Thread(target=feeder, daemon=True)
    thread.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(error, match=match):
            write()
    finally:
        elapsed = time.monotonic() - t0
        stop.set()
        thread.join(5)
    assert elapsed < 3.0
    assert os.path.exists(fifo) and not real_is_file(fifo)      # the pipe is left there
