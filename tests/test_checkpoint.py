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
from ooc_kernels.estimators._checkpointing import CheckpointWriter
from ooc_kernels.parallel.checkpoint import CheckpointMismatchError, read_checkpoint

# 12 chunks in groups of 2 (rows mixed across chunks), 2 groups per round: 3 rounds/epoch
PARAMS = dict(n_features=256, block_size=32, batch_size=16, max_iter=3, tol=None, chunks_per_round=2,
              shuffle_chunks=2, random_state=0, scheduler="sync")


def _store(tmp_path, name="nb.zarr", seed=0):
    return ok.make_dataset("nonlinear_binary", tmp_path / name, 1200, chunk_size=100,
                           random_state=seed, n_features=4, progress=False)


class _Stop(Exception):
    pass


def _interrupt_after(monkeypatch, n_writes):
    real = CheckpointWriter.write
    count = {"n": 0}

    def write(self, state, position):
        real(self, state, position)
        count["n"] += 1
        if count["n"] == n_writes:
            raise _Stop("simulated crash right after a checkpoint")

    monkeypatch.setattr(CheckpointWriter, "write", write)


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
    group = zarr.open_group(str(ck), mode="r+")
    meta = dict(group.attrs["ooc_kernels_checkpoint"])
    meta["library_version"] = "0.0.1"
    group.attrs["ooc_kernels_checkpoint"] = meta
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
    again = subprocess.run(cmd + [str(killed)], env=env, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stderr
    straight = subprocess.run(cmd + [str(_pipeline(tmp_path, "straight"))], env=env,
                              capture_output=True, text=True, timeout=300)
    assert straight.returncode == 0, straight.stderr
    resumed = ok.load(tmp_path / "killed" / "model.zarr")
    reference = ok.load(tmp_path / "straight" / "model.zarr")
    assert np.array_equal(resumed.coef_, reference.coef_)
    assert resumed.n_iter_ == reference.n_iter_
