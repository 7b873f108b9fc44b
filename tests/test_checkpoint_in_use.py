"""A fit holds its checkpoint while it runs: a second fit on the same path, in another
thread or another process, is refused with ``CheckpointInUseError`` before it writes
anything (the two would otherwise overwrite each other's checkpoints, the last writer
winning).  The hold ends with the fit, and with its process: a killed holder blocks
nobody."""

import errno
import re
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.estimators._checkpointing import CheckpointWriter
from ooc_kernels.exceptions import CheckpointInUseError
from ooc_kernels.parallel.checkpoint import read_checkpoint

# 8 chunks of 50 rows, one chunk per round: 8 checkpoints per epoch
PARAMS = dict(n_features=64, block_size=32, batch_size=16, max_iter=2, tol=None,
              bandwidth=1.0, random_state=0, progress=False, scheduler="sync")

_DATA = """
import dask.array as da
import numpy as np

def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    return da.from_array(X, chunks=50), da.from_array(y, chunks=50)
"""

#: A fit in its own process that, after each checkpoint it writes, says so (touches
#: ``ready``) and waits until ``go`` exists.
_HOLDER = _DATA + """
import pathlib, sys, time
import ooc_kernels as ok
from ooc_kernels.estimators._checkpointing import CheckpointWriter

ck, ready, go = map(pathlib.Path, sys.argv[1:4])
real = CheckpointWriter.write

def write(self, state, position):
    real(self, state, position)
    ready.touch()
    while not go.exists():
        time.sleep(0.02)

CheckpointWriter.write = write
X, y = data()
ok.DSGClassifier(**PARAMS).fit(X, y, checkpoint=ck)
"""


def _data():
    scope = {}
    exec(_DATA, scope)
    return scope["data"]()


def _lock_file(ck):
    return ck.with_name(f".{ck.name}.fit-lock")


def _refused(ck):
    """The error of a second fit (another seed) on checkpoint ``ck``: CheckpointInUseError
    naming the path and what to do."""
    X, y = _data()
    with pytest.raises(CheckpointInUseError, match=re.escape(repr(str(ck))) +
                       ".* is in use by another fit.*Wait until that fit ends.*another "
                       "checkpoint path.*GridSearchCV with n_jobs.*give each fit its own "
                       "path, or none"):
        ok.DSGClassifier(**dict(PARAMS, random_state=1)).fit(X, y, checkpoint=ck)


def test_a_second_thread_is_refused_while_a_fit_holds_the_checkpoint(tmp_path, monkeypatch):
    ck = tmp_path / "ck.zarr"
    written, go = threading.Event(), threading.Event()
    real = CheckpointWriter.write
    X, y = _data()
    out = {}
    first = threading.Thread(target=lambda: out.setdefault("model", ok.DSGClassifier(
        **PARAMS).fit(X, y, checkpoint=ck)), daemon=True)

    def write(self, state, position):
        real(self, state, position)
        if threading.current_thread() is first:  # the first fit waits after each write
            written.set()
            assert go.wait(60)

    monkeypatch.setattr(CheckpointWriter, "write", write)
    first.start()
    assert written.wait(120), "the first fit wrote no checkpoint"
    try:
        _refused(ck)
        # the refused fit wrote nothing: the checkpoint is the first fit's
        assert read_checkpoint(ck).meta["model"]["params"]["random_state"] == 0
    finally:
        go.set()
        first.join(120)
    assert not first.is_alive() and "model" in out
    assert not _lock_file(ck).exists()
    meta = read_checkpoint(ck).meta
    assert (meta["model"]["params"]["random_state"], meta["position"]) == \
        (0, {"epoch": 2, "round": 0})
    # let go when the fit ends: the next fit on the path runs
    monkeypatch.undo()
    again = ok.DSGClassifier(**PARAMS).fit(X, y, checkpoint=ck)
    np.testing.assert_array_equal(again.coef_, out["model"].coef_)


def _start_holder(tmp_path):
    ck, ready, go = tmp_path / "ck.zarr", tmp_path / "ready", tmp_path / "go"
    script = tmp_path / "holder.py"
    script.write_text(f"PARAMS = {PARAMS!r}\n" + textwrap.dedent(_HOLDER))
    proc = subprocess.Popen([sys.executable, str(script), str(ck), str(ready), str(go)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the holder wrote no checkpoint: {proc.communicate()[0][-2000:]!r}")
        time.sleep(0.05)
    return proc, ck, go


def test_a_second_process_is_refused_while_a_fit_holds_the_checkpoint(tmp_path):
    proc, ck, go = _start_holder(tmp_path)
    try:
        _refused(ck)
        assert read_checkpoint(ck).meta["model"]["params"]["random_state"] == 0
    finally:
        go.touch()
        output = proc.communicate(timeout=180)[0]
    assert proc.returncode == 0, output[-2000:]
    assert not _lock_file(ck).exists()
    assert read_checkpoint(ck).meta["position"] == {"epoch": 2, "round": 0}


def test_a_killed_holder_blocks_nobody(tmp_path):
    """kill -9 of the fit that holds the checkpoint leaves its lock file behind; the next
    fit takes it, resumes from the killed fit's checkpoint to the uninterrupted model, and
    removes the lock file."""
    proc, ck, go = _start_holder(tmp_path)
    proc.kill()
    proc.communicate(timeout=60)
    assert _lock_file(ck).exists()       # stale: nobody holds its flock
    X, y = _data()
    resumed = ok.DSGClassifier(**PARAMS).fit(X, y, checkpoint=ck, resume=True)
    reference = ok.DSGClassifier(**PARAMS).fit(X, y)
    np.testing.assert_array_equal(resumed.coef_, reference.coef_)
    assert not _lock_file(ck).exists()


def test_ooc_kernels_train_is_refused_while_a_fit_holds_its_checkpoint(tmp_path):
    """``ooc-kernels train --checkpoint`` goes through the same hold: a path that a fit in
    another process holds ends the command with the library's error, before any work."""
    from click.testing import CliRunner

    from ooc_kernels.cli import main
    from ooc_kernels.data.catalog import register_dataset

    proc, ck, go = _start_holder(tmp_path)
    try:
        cat = tmp_path / "c.yaml"
        store = ok.make_dataset("synthetic_krr_2d", tmp_path / "data" / "k.zarr", 200,
                                chunk_size=100, progress=False)
        register_dataset(cat, "k", store)
        result = CliRunner().invoke(main, [
            "train", "--catalog", str(cat), "--entry", "k", "--estimator", "DSGRegressor",
            "-p", "n_features=64", "-p", "block_size=32", "-p", "max_iter=1",
            "--scheduler", "sync", "-q", "--out", str(tmp_path / "m.zarr"),
            "--checkpoint", str(ck)])
        assert result.exit_code == 1, result.output
        assert "CheckpointInUseError" in result.output, result.output
        assert f"checkpoint {str(ck)!r} is in use by another fit" in result.output.replace(
            "\n", " "), result.output
        assert read_checkpoint(ck).meta["model"]["estimator"] == "DSGClassifier"
        assert not (tmp_path / "m.zarr").exists()
    finally:
        go.touch()
        output = proc.communicate(timeout=180)[0]
    assert proc.returncode == 0, output[-2000:]


@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES, errno.ENOSPC])
@pytest.mark.parametrize("resume", [False, True])
def test_a_lock_file_the_file_system_refuses_is_a_write_failed_error(tmp_path, monkeypatch,
                                                                    code, resume):
    """The checkpoint's folder refuses new files (read-only, forbidden, full): taking the
    fit's hold is the first write, and its refusal is the library's WriteFailedError with
    the system's errno naming the checkpoint, as a checkpoint write's refusal is."""
    import os

    from ooc_kernels.exceptions import WriteFailedError

    X, y = _data()
    ck = tmp_path / "ck.zarr"
    if resume:
        ok.DSGClassifier(**PARAMS).fit(X, y, checkpoint=ck)
    real_open = os.open

    def refusing(path, flags, *args, **kwargs):
        if str(path).endswith(".fit-lock"):
            raise OSError(code, os.strerror(code), str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing)
    with pytest.raises(WriteFailedError, match=re.escape(repr(str(ck))) +
                       rf": {re.escape(os.strerror(code))} \({errno.errorcode[code]}\)") as info:
        ok.DSGClassifier(**PARAMS).fit(X, y, checkpoint=ck, resume=resume)
    assert info.value.errno == code
    assert not _lock_file(ck).exists()


@pytest.mark.parametrize("what", ["a file with content", "a symbolic link", "a folder"])
def test_what_is_at_the_name_of_a_fits_hold_is_refused_and_left_alone(tmp_path, what):
    """A fit holds its checkpoint through the empty file ``.NAME.fit-lock``, which it
    creates and removes: a user's file of that name is neither removed nor written, a link
    there is not followed (nothing is created where it leads), and no checkpoint is
    written."""
    import os

    from ooc_kernels.exceptions import ForeignPathError

    ck = tmp_path / "ck.zarr"
    lock = _lock_file(ck)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if what == "a file with content":
        lock.write_text("my notes")
    elif what == "a symbolic link":
        lock.symlink_to(elsewhere / "created")
    else:
        lock.mkdir()
    X, y = _data()
    with pytest.raises(ForeignPathError, match=rf"'.*\.ck\.zarr\.fit-lock' as the lock of "
                                               rf".*: it is {what}"):
        ok.DSGClassifier(**PARAMS).fit(X, y, checkpoint=ck)
    assert not ck.exists() and os.listdir(elsewhere) == []
    if what == "a file with content":
        assert lock.read_text() == "my notes"
    assert lock.is_symlink() if what == "a symbolic link" else lock.exists()
