"""Attacks on resuming: a ``warm_start`` continuation interrupted and resumed (from the same
estimator or from the model loaded again), a checkpoint whose recorded end was edited, and
two fits writing the same checkpoint folder at once.  A resumed fit must give the model of
the uninterrupted one, bit for bit, and end at the same epoch."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import zarr

import ooc_kernels as ok
from ooc_kernels.estimators._checkpointing import resume_end
from ooc_kernels.exceptions import (
    CheckpointError,
    CheckpointInUseError,
    CheckpointMismatchError,
)
from ooc_kernels.parallel.checkpoint import read_checkpoint

sys.path.insert(0, str(Path(__file__).parent))
from _interrupt import _interrupt_after  # noqa: E402
from _tamper import reseal  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")
X = np.random.default_rng(0).normal(size=(400, 3))
Y = X[:, 0] > 0
P = dict(n_features=64, block_size=32, batch_size=16, chunk_size=100, random_state=0,
         scheduler="sync", progress=False, tol=None)


@pytest.fixture(scope="module")
def two_epochs(tmp_path_factory):
    path = tmp_path_factory.mktemp("m") / "m2.zarr"
    ok.DSGClassifier(max_iter=2, **P).fit(X, Y).save(path)
    return path


def _continuation(path, max_iter=4):
    est = ok.load(path)
    est.set_params(warm_start=True, max_iter=max_iter, scheduler="sync", progress=False)
    return est


@pytest.fixture(scope="module")
def uninterrupted(two_epochs, tmp_path_factory):
    ck = tmp_path_factory.mktemp("ref") / "ck.zarr"
    return _continuation(two_epochs).fit(X, Y, checkpoint=ck, checkpoint_every=1)


@pytest.mark.parametrize("n_writes, same_object", [(1, True), (3, False)])
def test_an_interrupted_warm_start_resumes_to_the_uninterrupted_model(
        two_epochs, uninterrupted, tmp_path, monkeypatch, n_writes, same_object):
    ck = tmp_path / "ck.zarr"
    est = _continuation(two_epochs)
    _interrupt_after(monkeypatch, n_writes, KeyboardInterrupt("stopped after a checkpoint"))
    with pytest.raises(KeyboardInterrupt, match="stopped after a checkpoint"):
        est.fit(X, Y, checkpoint=ck, checkpoint_every=1)
    monkeypatch.undo()
    again = est if same_object else _continuation(two_epochs)
    again.fit(X, Y, checkpoint=ck, checkpoint_every=1, resume=True)
    assert again.n_iter_ == uninterrupted.n_iter_ == 6            # 2 epochs, then 4 more
    np.testing.assert_array_equal(again.coef_, uninterrupted.coef_)


def test_a_resumed_warm_start_may_grow_max_iter(two_epochs, uninterrupted, tmp_path,
                                                 monkeypatch):
    ck = tmp_path / "ck.zarr"
    _interrupt_after(monkeypatch, 2, KeyboardInterrupt("stopped after a checkpoint"))
    with pytest.raises(KeyboardInterrupt, match="stopped after a checkpoint"):
        _continuation(two_epochs).fit(X, Y, checkpoint=ck, checkpoint_every=1)
    monkeypatch.undo()
    longer = _continuation(two_epochs, max_iter=5).fit(X, Y, checkpoint=ck,
                                                        checkpoint_every=1, resume=True)
    uninterrupted.save(tmp_path / "six.zarr")
    reference = _continuation(tmp_path / "six.zarr", max_iter=1).fit(X, Y)   # epoch 7
    assert longer.n_iter_ == reference.n_iter_ == 7
    np.testing.assert_array_equal(longer.coef_, reference.coef_)


def test_resume_end_reads_the_start_of_the_fit_from_the_checkpoint(uninterrupted, tmp_path):
    meta = {"end_epoch": 6, "model": {"params": {"max_iter": 4}}}
    assert resume_end(ok.DSGClassifier(max_iter=4), meta, "ck") == 6
    assert resume_end(ok.DSGClassifier(max_iter=9), meta, "ck") == 11
    for bad in ({"end_epoch": "6", "model": {"params": {"max_iter": 4}}},
                {"end_epoch": 3, "model": {"params": {"max_iter": 4}}},
                {"end_epoch": 6, "model": {"params": {"max_iter": None}}}):
        with pytest.raises(CheckpointError, match=r"end_epoch|max_iter"):
            resume_end(ok.DSGClassifier(max_iter=4), bad, "ck")


def test_a_checkpoint_edited_to_end_elsewhere_is_refused(two_epochs, tmp_path, monkeypatch):
    ck = tmp_path / "ck.zarr"
    _interrupt_after(monkeypatch, 3, KeyboardInterrupt("stopped after a checkpoint"))
    with pytest.raises(KeyboardInterrupt, match="stopped after a checkpoint"):
        _continuation(two_epochs).fit(X, Y, checkpoint=ck, checkpoint_every=1)
    monkeypatch.undo()
    group = zarr.open_group(str(ck), mode="r+")
    key = next(k for k in group.attrs if isinstance(group.attrs[k], dict)
               and "end_epoch" in group.attrs[k])
    meta = dict(group.attrs[key])
    meta["end_epoch"] = 1                                        # before its max_iter 4
    group.attrs[key] = reseal(meta)
    with pytest.raises((CheckpointError, CheckpointMismatchError),
                       match=r"end_epoch|checksum"):
        _continuation(two_epochs).fit(X, Y, checkpoint=ck, checkpoint_every=1, resume=True)


def test_two_fits_writing_one_checkpoint_at_once_leave_one_complete_checkpoint(tmp_path):
    """Two threads fit with one checkpoint path: while one fit holds it the other is refused
    (CheckpointInUseError, tests/test_checkpoint_in_use.py); fits that do not overlap both
    run.  Either way one fit's whole last checkpoint is left."""
    ck = tmp_path / "ck.zarr"
    params = {"a": dict(alpha=1e-2), "b": dict(alpha=1e-3)}
    models, errors = {}, []

    def fit(name):
        try:
            models[name] = ok.DSGClassifier(max_iter=3, **params[name], **P).fit(
                X, Y, checkpoint=ck, checkpoint_every=1)
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=fit, args=(name,)) for name in params]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) <= 1 and all(isinstance(e, CheckpointInUseError) for e in errors), \
        errors
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.zarr"]   # no leftovers
    assert read_checkpoint(ck) is not None
    # the checkpoint is one fit's last one, whole: that fit resumes to its own model, the
    # other is told that it belongs to other hyperparameters
    outcomes = {}
    for name in models:  # the fits that ran
        try:
            resumed = ok.DSGClassifier(max_iter=3, **params[name], **P).fit(
                X, Y, checkpoint=ck, checkpoint_every=1, resume=True)
            outcomes[name] = np.array_equal(resumed.coef_, models[name].coef_)
        except CheckpointMismatchError as err:
            assert "alpha" in str(err)
            outcomes[name] = None
    assert sorted(outcomes.values(), key=str) == ([True] if errors else [None, True]), \
        outcomes
