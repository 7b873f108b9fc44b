"""Checkpoints and exact resume: interrupted fits end with the uninterrupted model."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml
import zarr

import ooc_kernels as ok
from ooc_kernels.exceptions import CheckpointError
from ooc_kernels.parallel.checkpoint import CheckpointMismatchError, read_checkpoint

from _tamper import edit_attrs, set_at
from _interrupt import _interrupt_after, _Stop
from _side_by_side import run_side_by_side

# 12 chunks in groups of 2 (rows mixed across chunks), 2 groups per round: 3 rounds/epoch
PARAMS = dict(n_features=256, block_size=32, batch_size=16, max_iter=3, tol=None, chunks_per_round=2,
              shuffle_chunks=2, random_state=0, scheduler="sync")


def _store(tmp_path, name="nb.zarr", seed=0):
    return ok.make_dataset("nonlinear_binary", tmp_path / name, 1200, chunk_size=100,
                           random_state=seed, n_features=4, progress=False)


def test_resume_after_interruption_is_bit_identical(tmp_path, monkeypatch):
    from ooc_kernels.data.schema import open_zarr_dataset

    ds = open_zarr_dataset(_store(tmp_path))
    reference = ok.DSGClassifier(**PARAMS).fit(ds)
    ck = tmp_path / "ck.zarr"
    _interrupt_after(monkeypatch, 7)                     # epoch 2, in the middle
    with pytest.raises(_Stop):
        ok.DSGClassifier(**PARAMS).fit(ds, checkpoint=ck, checkpoint_every=1)
    monkeypatch.undo()
    position = read_checkpoint(ck).meta["position"]
    assert position == {"epoch": 2, "round": 1}          # 3 rounds per epoch
    resumed = ok.DSGClassifier(**PARAMS).fit(ds, checkpoint=ck, resume=True)
    assert np.array_equal(resumed.coef_, reference.coef_)
    assert resumed.n_iter_ == reference.n_iter_
    assert read_checkpoint(ck).meta["position"] == {"epoch": 3, "round": 0}


def test_more_epochs_continue_from_a_finished_checkpoint(tmp_path):
    from ooc_kernels.data.schema import open_zarr_dataset

    ds = open_zarr_dataset(_store(tmp_path))
    ck = tmp_path / "ck.zarr"
    ok.DSGClassifier(**dict(PARAMS, max_iter=2, tol=None)).fit(ds, checkpoint=ck, checkpoint_every=4)
    longer = ok.DSGClassifier(**dict(PARAMS, max_iter=3, tol=None)).fit(ds, checkpoint=ck, resume=True)
    reference = ok.DSGClassifier(**dict(PARAMS, max_iter=3, tol=None)).fit(ds)
    assert np.array_equal(longer.coef_, reference.coef_)


def test_resume_refuses_other_data_hyperparameters_and_versions(tmp_path):
    from ooc_kernels.data.schema import open_zarr_dataset

    ds = open_zarr_dataset(_store(tmp_path))
    other = open_zarr_dataset(_store(tmp_path, "other.zarr", seed=1))
    ck = tmp_path / "ck.zarr"
    ok.DSGClassifier(**PARAMS).fit(ds, checkpoint=ck)
    with pytest.raises(CheckpointMismatchError, match=r"dataset attrs.random_state: "
                                                      r"checkpoint has 0, this fit has 1"):
        ok.DSGClassifier(**PARAMS).fit(other, checkpoint=ck, resume=True)
    with pytest.raises(CheckpointMismatchError,
                       match=r"hyperparameter alpha: checkpoint has 'auto', this fit has 0.1"):
        ok.DSGClassifier(**dict(PARAMS, alpha=0.1)).fit(ds, checkpoint=ck, resume=True)
    # the fix in the spelling of each way in: Python, the command line, a pipeline file
    with pytest.raises(CheckpointMismatchError,
                       match=r"pass resume=False \(command line: --no-resume; pipeline file: "
                             r"fit: \{resume: false\}\)"):
        ok.DSGClassifier(**dict(PARAMS, alpha=0.1)).fit(ds, checkpoint=ck, resume=True)
    edit_attrs(ck, "ooc_kernels_checkpoint", set_at("library_version", value="0.0.1"))
    with pytest.raises(CheckpointMismatchError, match=r"written by ooc_kernels 0.0.1"):
        ok.DSGClassifier(**PARAMS).fit(ds, checkpoint=ck, resume=True)
    with pytest.raises(ValueError, match="resume=True needs the checkpoint path"):
        ok.DSGClassifier(**PARAMS).fit(ds, resume=True)
    with pytest.raises(ValueError, match="checkpoint_every must be a positive number"):
        ok.DSGClassifier(**PARAMS).fit(ds, checkpoint=tmp_path / "x.zarr", checkpoint_every=0)


def test_resume_refuses_fewer_epochs_than_already_done(tmp_path):
    from ooc_kernels.data.schema import open_zarr_dataset

    ds = open_zarr_dataset(_store(tmp_path))
    ck = tmp_path / "ck.zarr"
    ok.DSGClassifier(**PARAMS).fit(ds, checkpoint=ck)              # 3 epochs
    with pytest.raises(CheckpointMismatchError, match=r"already at epoch 3, round 0, past "
                                                      r"this fit's max_iter=2"):
        ok.DSGClassifier(**dict(PARAMS, max_iter=2, tol=None)).fit(ds, checkpoint=ck, resume=True)


def test_crash_while_writing_a_checkpoint_keeps_the_previous_one(tmp_path, monkeypatch):
    from ooc_kernels.data.schema import open_zarr_dataset

    ds = open_zarr_dataset(_store(tmp_path))
    ck = tmp_path / "ck.zarr"
    calls = {"n": 0}
    real = zarr.Group.create_array

    def flaky(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 4:                                  # the 4th checkpoint write
            raise OSError("disk full")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(zarr.Group, "create_array", flaky)
    with pytest.raises(OSError, match="disk full"):
        ok.DSGClassifier(**PARAMS).fit(ds, checkpoint=ck, checkpoint_every=1)
    monkeypatch.undo()
    assert read_checkpoint(ck).meta["position"] == {"epoch": 1, "round": 0}  # 3rd write
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.zarr", "nb.zarr"]
    resumed = ok.DSGClassifier(**PARAMS).fit(ds, checkpoint=ck, resume=True)
    assert np.array_equal(resumed.coef_, ok.DSGClassifier(**PARAMS).fit(ds).coef_)


def _pipeline(tmp_path, out):
    spec = {
        "name": "killme",
        "data": {"catalog": "cat.yaml", "train": "nb",
                 "generate": {"nb": {"generator": "nonlinear_binary", "n_samples": 6000,
                                     "chunk_size": 100, "params": {"n_features": 8}}}},
        "model": {"estimator": "DSGClassifier",
                  "params": {"n_features": 1024, "block_size": 64, "batch_size": 20,
                             "max_iter": 4, "tol": None, "random_state": 3}},
        "fit": {"checkpoint_every": 1},
        "evaluate": {"predictions": False},
        "save": {"output_dir": out},
    }
    path = tmp_path / f"{out}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _position(ck):
    try:
        found = read_checkpoint(ck)
    except Exception:                                        # being swapped in right now
        return None
    return None if found is None else found.meta["position"]


@pytest.mark.slow
def test_sigkill_then_same_command_resumes_to_the_uninterrupted_model(tmp_path):
    from ooc_kernels.data.catalog import register_dataset

    register_dataset(tmp_path / "cat.yaml", "nb", tmp_path / "nb.zarr")
    cmd = [sys.executable, "-m", "ooc_kernels.cli", "run", "--quiet", "--scheduler", "sync"]
    env = dict(os.environ, OOC_KERNELS_PROGRESS="0")
    killed = _pipeline(tmp_path, "killed")
    proc = subprocess.Popen(cmd + [str(killed)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    ck = tmp_path / "killed" / "checkpoint.zarr"
    deadline = time.time() + 240
    while time.time() < deadline:
        pos = _position(ck)
        if pos is not None and (pos["epoch"], pos["round"]) >= (1, 0):
            break
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    at_kill = _position(ck)
    assert at_kill is not None and at_kill["epoch"] < 4       # killed part way
    assert not (tmp_path / "killed" / "model.zarr").exists()
    # the resumed and the uninterrupted runs side by side (the data is there: neither
    # writes it; each writes its own output folder)
    again, straight = run_side_by_side([cmd + [str(killed)],
                                         cmd + [str(_pipeline(tmp_path, "straight"))]], env)
    assert again.returncode == 0, again.stderr
    assert straight.returncode == 0, straight.stderr
    resumed = ok.load(tmp_path / "killed" / "model.zarr")
    reference = ok.load(tmp_path / "straight" / "model.zarr")
    assert np.array_equal(resumed.coef_, reference.coef_)
    assert resumed.n_iter_ == reference.n_iter_


# ---------------------------------------------------------------- verified resume
def _rewrite_rows(store, values):
    """Rewrite rows 0..99 of X through zarr: a store regenerated in place, same path,
    shape, chunks and attributes, other contents."""
    X = zarr.open_array(str(store / "X"), mode="r+")
    X[0:100] = values


def test_a_store_regenerated_at_the_same_path_is_another_dataset(tmp_path, monkeypatch):
    """A checkpoint of a library store (chunks with CRC32C) is refused once the store holds
    other values, though its path, shape, chunks and attributes are the same."""
    from ooc_kernels.data.schema import open_zarr_dataset

    store = _store(tmp_path)
    ck = tmp_path / "ck.zarr"
    _interrupt_after(monkeypatch, 4)
    with pytest.raises(_Stop):
        ok.DSGClassifier(**PARAMS).fit(open_zarr_dataset(store), checkpoint=ck)
    monkeypatch.undo()
    other = zarr.open_array(str(_store(tmp_path, "other.zarr", seed=1) / "X"))[0:100]
    _rewrite_rows(store, other)
    with pytest.raises(CheckpointMismatchError, match=r"dataset content.X: checkpoint has "
                                                      r"'[0-9a-f]{64}', this fit has"):
        ok.DSGClassifier(**PARAMS).fit(open_zarr_dataset(store), checkpoint=ck, resume=True)


def test_a_plain_store_regenerated_at_the_same_path_is_another_dataset(tmp_path, monkeypatch):
    """The same for a store written by another tool, without chunk checksums: its stored
    bytes are what identifies it."""
    import xarray as xr

    from ooc_kernels.data.schema import open_zarr_dataset

    source = open_zarr_dataset(_store(tmp_path)).load()
    for var in source.variables.values():
        var.encoding = {"compressors": None} if var.ndim else {}
    plain = tmp_path / "plain.zarr"
    source.to_zarr(plain, mode="w", consolidated=False)
    assert "crc32c" not in (plain / "X" / "zarr.json").read_text()
    ck = tmp_path / "ck.zarr"
    _interrupt_after(monkeypatch, 4)
    with pytest.raises(_Stop):
        ok.DSGClassifier(**PARAMS).fit(xr.open_zarr(plain, consolidated=False), checkpoint=ck)
    monkeypatch.undo()
    # the same store resumes to the uninterrupted model
    resumed = ok.DSGClassifier(**PARAMS).fit(xr.open_zarr(plain, consolidated=False),
                                             checkpoint=ck, resume=True)
    reference = ok.DSGClassifier(**PARAMS).fit(xr.open_zarr(plain, consolidated=False))
    assert np.array_equal(resumed.coef_, reference.coef_)
    _interrupt_after(monkeypatch, 4)
    with pytest.raises(_Stop):
        ok.DSGClassifier(**PARAMS).fit(xr.open_zarr(plain, consolidated=False), checkpoint=ck)
    monkeypatch.undo()
    _rewrite_rows(plain, source.X.values[100:200][::-1])      # 100 rows: a small store
    with pytest.raises(CheckpointMismatchError, match=r"dataset content.X: checkpoint has "):
        ok.DSGClassifier(**PARAMS).fit(xr.open_zarr(plain, consolidated=False),
                                       checkpoint=ck, resume=True)


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    """A store and the checkpoint of a fit interrupted at epoch 2, round 1 (3 rounds per
    epoch), copied by each test before it is edited."""
    root = tmp_path_factory.mktemp("interrupted")
    from ooc_kernels.data.schema import open_zarr_dataset

    store = _store(root)
    with pytest.MonkeyPatch.context() as mp:
        _interrupt_after(mp, 7)
        with pytest.raises(_Stop):
            ok.DSGClassifier(**PARAMS).fit(open_zarr_dataset(store), checkpoint=root / "ck.zarr")
    assert read_checkpoint(root / "ck.zarr").meta["position"] == {"epoch": 2, "round": 1}
    return root


def _edit_ck(*keys, value=None, drop=False, seal=True):
    return lambda ck: edit_attrs(ck, "ooc_kernels_checkpoint",
                                 set_at(*keys, value=value, drop=drop), seal=seal)


def _flip_coef_byte(ck):
    chunk = sorted(p for p in (ck / "coef").rglob("*") if p.is_file() and p.name != "zarr.json")[0]
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0x01
    chunk.write_bytes(bytes(data))


def _add_array(ck):
    zarr.open_group(str(ck), mode="r+").create_array("junk", shape=(2**28,), dtype="float64",
                                                     chunks=(2**20,))


TAMPERED_CHECKPOINTS = {
    "no dataset": (_edit_ck("dataset", drop=True), CheckpointError,
                   r"no 'dataset' mapping \(found None\)"),
    "no position": (_edit_ck("position", drop=True), CheckpointError,
                    r"no 'position' mapping \(found None\)"),
    "no params": (_edit_ck("model", "params", drop=True), CheckpointError,
                  r"no 'model.params' mapping \(found None\)"),
    "no model": (_edit_ck("model", drop=True), CheckpointError,
                 r"no 'model' mapping \(found None\)"),
    "negative epoch": (_edit_ck("position", "epoch", value=-1), CheckpointError,
                       r"position epoch must be an integer >= 0, found -1"),
    "round as text": (_edit_ck("position", "round", value="1"), CheckpointError,
                      r"position round must be an integer >= 0, found '1'"),
    "round 999": (_edit_ck("position", "round", value=999), CheckpointError,
                  r"round 999 of epoch 2, but an epoch of this fit has 3 rounds \(0 to 2\)"),
    "epoch other than the model's": (_edit_ck("position", "epoch", value=1), CheckpointError,
                                     r"position is epoch 1, but its model has 2 epochs done"),
    "empty classes": (_edit_ck("model", "base", "classes", "values", value=[]),
                      CheckpointError, r"cannot resume: .*base.classes must be at least two "
                                       r"distinct labels"),
    "short x_shift": (_edit_ck("model", "fitted", "config", "x_shift", value=[0.0]),
                      CheckpointError, r"cannot resume: .*has x_shift of length 1; it must "
                                       r"be 4 finite numbers"),
    "estimator as a list": (_edit_ck("model", "estimator", value=["DSGClassifier"]),
                            CheckpointMismatchError,
                            r"estimator: checkpoint has \['DSGClassifier'\]"),
    "format 1": (_edit_ck("format_version", value=1), CheckpointError,
                 r"has format version 1 .* resumes from checkpoints of format 2 \(with "
                 r"checksums\) only"),
    "metadata edited without its checksum": (
        _edit_ck("position", "round", value=2, seal=False), CheckpointError,
        r"the metadata fails its CRC32C checksum"),
    "a byte flipped in a coef chunk": (_flip_coef_byte, CheckpointError,
                                       r"array 'coef' cannot be read: a chunk is missing, "
                                       r"truncated or fails its CRC32C checksum"),
    "an extra huge array": (_add_array, CheckpointError,
                            r"holds array\(s\) \['junk'\] that its checksums do not list"),
}


@pytest.mark.parametrize("case", sorted(TAMPERED_CHECKPOINTS))
def test_tampered_or_damaged_checkpoints_are_refused_with_the_reason(interrupted, tmp_path,
                                                                     case):
    """Every edit or damage of a checkpoint is the library's error naming what is wrong,
    never a raw KeyError or a resume from a position the fit does not have; the checkpoint
    is left as it is."""
    import shutil

    from ooc_kernels.data.schema import open_zarr_dataset

    tamper, error, message = TAMPERED_CHECKPOINTS[case]
    ck = tmp_path / "ck.zarr"
    shutil.copytree(interrupted / "ck.zarr", ck)
    tamper(ck)
    before = sorted((p.relative_to(ck), p.read_bytes()) for p in ck.rglob("*") if p.is_file())
    ds = open_zarr_dataset(interrupted / "nb.zarr")
    with pytest.raises(error, match=message):
        ok.DSGClassifier(**PARAMS).fit(ds, checkpoint=ck, resume=True)
    assert sorted((p.relative_to(ck), p.read_bytes())
                  for p in ck.rglob("*") if p.is_file()) == before
