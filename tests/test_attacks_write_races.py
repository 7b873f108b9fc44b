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
    return ok.DSGRegressor(n_features=64, block_size=32, batch_size=10, max_iter=1, tol=None,
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


def test_a_resume_while_another_fit_writes_the_checkpoint_reads_one_whole_checkpoint(
        tmp_path, monkeypatch):
    """A checkpoint written (swapped in) between the resume's reading of its metadata and
    of its arrays: the resume reads the old or the new checkpoint, never a false checksum
    error telling the user to remove a valid checkpoint."""
    from ooc_kernels.parallel.checkpoint import read_checkpoint, write_checkpoint

    path = tmp_path / "ck.zarr"
    write_checkpoint(path, {"coef": np.ones(3)}, {"position": {"epoch": 1, "round": 0}})
    read_arrays = _checksums.read_arrays
    swaps = []

    def written_meanwhile(group, manifest, **kwargs):
        if not swaps:
            swaps.append(1)
            write_checkpoint(path, {"coef": np.full(3, 2.0)},
                             {"position": {"epoch": 1, "round": 1}})
        return read_arrays(group, manifest, **kwargs)

    monkeypatch.setattr(_checksums, "read_arrays", written_meanwhile)
    ck = read_checkpoint(path)
    assert swaps
    np.testing.assert_array_equal(ck.arrays["coef"], np.full(3, 2.0))
    assert ck.meta["position"] == {"epoch": 1, "round": 1}
    assert sorted(os.listdir(tmp_path)) == ["ck.zarr"]


def _refuse(monkeypatch, function, err, when):
    """Make ``os.<function>`` raise ``OSError(err)`` for the paths ``when`` accepts."""
    original = getattr(os, function)

    def refused(target, *args, **kwargs):
        if when(os.fspath(target)):
            raise OSError(err, os.strerror(err), os.fspath(target))
        return original(target, *args, **kwargs)

    monkeypatch.setattr(os, function, refused)


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EACCES, errno.EROFS])
@pytest.mark.parametrize("step", ["lock", "writer lock", "folder"])
def test_a_refusal_at_the_first_file_of_a_write_is_write_failed_error(tmp_path, monkeypatch,
                                                                      err, step):
    """The lock file, the writer's lock file and the parent folder are the first things a
    write creates: a full disk or a forbidden folder there is the library's error too."""
    from ooc_kernels._atomic import write_json_atomic
    from ooc_kernels.exceptions import WriteFailedError
    from ooc_kernels.parallel.checkpoint import write_checkpoint

    model, X = _fitted(1), np.random.default_rng(3).normal(size=(20, 3))
    kept = tmp_path / "kept.zarr"
    model.save(kept)
    folder = tmp_path if step != "folder" else tmp_path / "new"
    writes = {
        "model": lambda: model.save(folder / ("kept.zarr" if step != "folder" else "m.zarr")),
        "checkpoint": lambda: write_checkpoint(folder / "ck.zarr", {"a": np.ones(3)}, {}),
        "dataset": lambda: ok.make_dataset("synthetic_krr_2d", folder / "d.zarr", 20,
                                           chunk_size=10, progress=False),
        "metrics file": lambda: write_json_atomic(folder / "metrics.json", {"r2": 1.0},
                                                  kind="metrics"),
    }
    if step == "writer lock":  # a file is written aside without one
        del writes["metrics file"]
    if step == "folder":
        _refuse(monkeypatch, "mkdir", err, lambda p: p == str(folder))
    else:  # .NAME.lock, or the writer's .NAME.tmp-ID.lock
        writer = step == "writer lock"
        _refuse(monkeypatch, "open", err, lambda p: p.endswith(".lock")
                and (".tmp-" in os.path.basename(p)) == writer)
    for what, write in writes.items():
        with pytest.raises(WriteFailedError, match=rf"could not write the {what} '.*': "
                                                   rf"{os.strerror(err)} \(") as info:
            write()
        assert info.value.errno == err, what
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == ["kept.zarr"]
    np.testing.assert_array_equal(ok.load(kept).predict(X), model.predict(X))


def test_a_path_starting_with_tilde_is_in_the_home_folder_for_every_write_and_read(
        tmp_path, monkeypatch):
    """'~/...' names the home folder for models, checkpoints, metrics and DSPDC work stores
    as it does for datasets: never a folder named '~' in the working folder."""
    from ooc_kernels._atomic import write_json_atomic
    from ooc_kernels.data import open_zarr_dataset

    from ooc_kernels._jit._cache import CACHE_DIR_ENV_VAR, cache_dir

    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    # the compiled kernels stay where they are (their cache is in the home folder)
    monkeypatch.setenv(CACHE_DIR_ENV_VAR, str(cache_dir().parent.parent))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    ok.make_dataset("synthetic_krr_2d", "~/d.zarr", 40, chunk_size=20, progress=False)
    data = open_zarr_dataset("~/d.zarr")
    model = ok.DSGRegressor(n_features=64, block_size=32, batch_size=10, max_iter=1, tol=None,
                            random_state=0, scheduler="sync")
    model.fit(data, checkpoint="~/ck.zarr", resume=True)
    model.save("~/m.zarr")
    X = np.random.default_rng(3).normal(size=(5, 2))
    np.testing.assert_array_equal(ok.load("~/m.zarr").predict(X), model.predict(X))
    write_json_atomic("~/metrics.json", {"r2": 1.0}, kind="metrics")
    r = CliRunner().invoke(main, ["predict", "~/m.zarr", "--catalog", "c.yaml", "--entry",
                                  "d", "--out", "~/m.zarr"])       # checked before any work
    assert r.exit_code == 1 and "already exists; pass --overwrite" in r.output, r.output
    ok.DSPDCRegressor(max_iter=1, random_state=0, scheduler="sync").fit(
        data, checkpoint="~/dspdc.zarr", resume=True)
    assert os.listdir(cwd) == []
    assert sorted(os.listdir(home)) == ["ck.zarr", "d.zarr", "dspdc.zarr", "dspdc.zarr.work",
                                        "m.zarr", "metrics.json"]


def test_a_store_the_reading_process_cannot_see_says_so(tmp_path):
    """A distributed worker on a machine that does not mount the data's folder reads a
    store that is not there for it: the error names that cause and the host, besides a
    store removed meanwhile."""
    import socket

    from ooc_kernels.data import open_zarr_dataset
    from ooc_kernels.exceptions import DataChangedError

    store = ok.make_dataset("synthetic_krr_2d", tmp_path / "d.zarr", 40, chunk_size=20,
                            progress=False)
    data = open_zarr_dataset(store)
    shutil.move(store, tmp_path / "elsewhere.zarr")      # not there for this process
    with pytest.raises(DataChangedError) as info:
        data.y.values
    msg = str(info.value)
    assert f"'y/zarr.json') is gone (not there for the process that reads it, on host " \
           f"{socket.gethostname()!r})" in msg, msg
    assert "every worker of a dask.distributed cluster must see the store at the same " \
           "path" in msg, msg


_SIGTERM_AFTER_A_CHECKPOINT = """
import os, signal, sys
from ooc_kernels.cli import main
from ooc_kernels.estimators._checkpointing import CheckpointWriter

write = CheckpointWriter.write
def write_then_terminated(self, state, position):
    write(self, state, position)
    os.kill(os.getpid(), signal.SIGTERM)     # a batch system stops the job
CheckpointWriter.write = write_then_terminated
main(sys.argv[1:])
"""


def test_sigterm_is_handled_as_ctrl_c_with_status_143(tmp_path):
    """A batch system's stop (SIGTERM, `kill`) ends `train` as Ctrl-C does: one line on how
    to continue, exit status 143, the checkpoint whole."""
    import subprocess
    import sys

    from ooc_kernels.parallel.checkpoint import read_checkpoint

    out, ck = tmp_path / "m.zarr", tmp_path / "ck.zarr"
    args = _train_args(tmp_path, "--out", str(out), "--checkpoint", str(ck),
                       "--checkpoint-every", "1")
    r = subprocess.run([sys.executable, "-c", _SIGTERM_AFTER_A_CHECKPOINT, *args],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 143, (r.returncode, r.stderr[-2000:])
    assert r.stderr.strip().splitlines()[-1] == (
        "terminated (SIGTERM): re-running the same command resumes from the last checkpoint, "
        f"{str(ck)!r}"), r.stderr[-2000:]
    assert read_checkpoint(ck).meta["position"] in ({"epoch": 0, "round": 1},  # the first
                                                    {"epoch": 1, "round": 0})
    assert not out.exists()


def test_a_dataset_swap_killed_between_its_renames_is_put_back_when_the_data_is_opened(
        tmp_path):
    """`data make --overwrite` killed between its two renames leaves the previous store at
    .NAME.old-ID and nothing at NAME: opening the data puts it back, as ok.load does."""
    from ooc_kernels.data import open_zarr_dataset

    store = ok.make_dataset("synthetic_krr_2d", tmp_path / "d.zarr", 40, chunk_size=20,
                            progress=False)
    expected = open_zarr_dataset(store).X.values
    os.replace(store, tmp_path / f".d.zarr.old-{'ab' * 16}")    # the first rename only
    np.testing.assert_array_equal(open_zarr_dataset(store).X.values, expected)
    assert sorted(os.listdir(tmp_path)) == ["d.zarr"]


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EROFS])
def test_a_catalog_the_file_system_refuses_to_write_is_write_failed_error(tmp_path,
                                                                          monkeypatch, err):
    """A registration that cannot write the catalog (full disk, read-only folder) is the
    library's WriteFailedError naming the catalog; the catalog is left as it was."""
    from ooc_kernels.data.catalog import register_dataset
    from ooc_kernels.exceptions import WriteFailedError

    cat = tmp_path / "c.yaml"
    store = ok.make_dataset("synthetic_krr_2d", tmp_path / "data" / "d.zarr", 20,
                            chunk_size=10, progress=False)
    register_dataset(cat, "a", store)
    before = cat.read_bytes()
    _refuse(monkeypatch, "replace", err, lambda p: ".c.yaml.tmp-" in p)
    with pytest.raises(WriteFailedError, match=rf"could not write the catalog '.*c.yaml': "
                                               rf"{os.strerror(err)} .*the previous catalog "
                                               r"there is intact"):
        register_dataset(cat, "b", store)
    monkeypatch.undo()
    assert cat.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["c.yaml", "data"]


def test_a_store_is_on_disk_before_it_replaces_the_previous_one(tmp_path, monkeypatch):
    """A power cut right after a save or a checkpoint must not leave a renamed store whose
    files were never written to the disk (the previous one is deleted by then): every file
    and folder of the new store is fsync'ed before the swap, and its parent folder after."""
    from ooc_kernels.parallel.checkpoint import write_checkpoint

    synced, renames = [], []
    fsync, replace = os.fsync, os.replace

    def recorded_fsync(fd):
        synced.append((os.readlink(f"/proc/self/fd/{fd}"), len(renames)))
        return fsync(fd)

    def recorded_replace(src, dst, *args, **kwargs):
        renames.append((os.fspath(src), os.fspath(dst)))
        return replace(src, dst, *args, **kwargs)

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc to name a descriptor's file")
    model = _fitted(1)
    model.save(tmp_path / "m.zarr")
    for path, write in [
            (tmp_path / "m.zarr", lambda p: _fitted(2).save(p)),
            (tmp_path / "ck.zarr", lambda p: write_checkpoint(p, {"a": np.ones(3)}, {}))]:
        synced.clear()
        renames.clear()
        monkeypatch.setattr(os, "fsync", recorded_fsync)
        monkeypatch.setattr(os, "replace", recorded_replace)
        write(path)
        monkeypatch.undo()
        swap = max(i for i, (_, dst) in enumerate(renames) if dst == str(path))
        tmp = renames[swap][0]
        before = {name for name, at in synced if at <= swap}
        expected = {os.path.join(tmp, os.path.relpath(os.path.join(d, f), path))
                    for d, dirs, files in os.walk(path) for f in [*files, *dirs, "."]}
        assert {os.path.normpath(p) for p in expected} <= before, sorted(
            {os.path.normpath(p) for p in expected} - before)
        assert any(name == str(tmp_path) and at > swap for name, at in synced), synced


def test_a_users_own_folder_at_a_tilde_path_survives_and_a_pipeline_cannot_reach_home(
        tmp_path, monkeypatch):
    """'~/own.zarr' is the user's folder in the home folder: a save there is refused and
    leaves it as it was; a pipeline's output '~/...' leaves its folder and is refused."""
    from ooc_kernels.exceptions import ForeignPathError, PipelineConfigError
    from ooc_kernels.pipeline import _resolve

    from ooc_kernels._jit._cache import CACHE_DIR_ENV_VAR, cache_dir

    home = tmp_path / "home"
    (home / "own.zarr").mkdir(parents=True)
    (home / "own.zarr" / "notes.txt").write_text("mine")
    # the compiled kernels stay where they are (their cache is in the home folder)
    monkeypatch.setenv(CACHE_DIR_ENV_VAR, str(cache_dir().parent.parent))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ForeignPathError, match="refusing to replace"):
        _fitted(1).save("~/own.zarr")
    assert (home / "own.zarr" / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in home.iterdir()) == ["own.zarr"]
    folder = tmp_path / "pipe"
    folder.mkdir()
    with pytest.raises(PipelineConfigError, match="outside"):
        _resolve(folder, "~/m.zarr", key="save.model", output=True)
