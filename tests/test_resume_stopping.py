"""A resumed fit stops where an uninterrupted one does: same history, epochs, stop reason
and model, wherever the interruption fell (half way through an epoch, or right after the
stopping rule ended the fit)."""

import dask.array as da
import numpy as np
import pytest

from ooc_kernels.families.dsg.estimators import DSGRegressor
from ooc_kernels.exceptions import CheckpointError
from ooc_kernels.parallel.checkpoint import read_checkpoint, write_checkpoint
from _interrupt import _interrupt_after, _Stop

# 600 rows in 12 chunks, one chunk per round: 12 rounds per epoch; the rule stops the fit
# as soon as one epoch improves the training loss by less than tol
PARAMS = dict(n_features=256, block_size=32, batch_size=8, max_iter=50, n_iter_no_change=1,
              shuffle_chunks=1, random_state=0, scheduler="sync", progress=False)
ROUNDS = 12


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.normal(size=600)
    return da.from_array(X, chunks=(50, 4)), da.from_array(y, chunks=(50,))


def _history(est):
    """``history_`` without the wall-clock seconds (the only figure that may differ)."""
    return [{k: v for k, v in entry.items() if k != "seconds"} for entry in est.history_]


def _assert_same_fit(resumed, reference):
    assert _history(resumed) == _history(reference)
    assert resumed.n_iter_ == reference.n_iter_
    assert resumed.stop_reason_ == reference.stop_reason_
    ours, theirs = resumed._fitted_arrays(), reference._fitted_arrays()
    assert sorted(ours) == sorted(theirs)
    for name in ours:
        assert np.array_equal(np.asarray(ours[name]), np.asarray(theirs[name])), name


@pytest.fixture(scope="module")
def reference():
    X, y = _data()
    est = DSGRegressor(**PARAMS).fit(X, y)
    # the stopping rule, not max_iter, ends the uninterrupted fit, after a few epochs
    assert "improved by less than tol" in est.stop_reason_
    assert 3 <= est.n_iter_ < PARAMS["max_iter"]
    return est


@pytest.mark.parametrize("where", ["mid-epoch", "at the stop"])
def test_a_resumed_fit_stops_where_the_uninterrupted_one_does(reference, where, tmp_path,
                                                              monkeypatch):
    X, y = _data()
    ck = tmp_path / "ck.zarr"
    # round 35 is the last round but one of epoch 2; the other write is the one right
    # after the round in which the rule stopped the fit
    n_writes = 35 if where == "mid-epoch" else reference.n_iter_ * ROUNDS
    _interrupt_after(monkeypatch, n_writes)
    with pytest.raises(_Stop, match="simulated crash"):
        DSGRegressor(**PARAMS).fit(X, y, checkpoint=ck, checkpoint_every=1)
    monkeypatch.undo()
    expected = {"epoch": 2, "round": 11} if where == "mid-epoch" \
        else {"epoch": reference.n_iter_, "round": 0}
    assert read_checkpoint(ck).meta["position"] == expected
    resumed = DSGRegressor(**PARAMS).fit(X, y, checkpoint=ck, resume=True)
    _assert_same_fit(resumed, reference)


def test_a_mid_epoch_checkpoint_without_the_epoch_start_totals_is_refused(tmp_path,
                                                                          monkeypatch):
    X, y = _data()
    ck = tmp_path / "ck.zarr"
    _interrupt_after(monkeypatch, 5)
    with pytest.raises(_Stop, match="simulated crash"):
        DSGRegressor(**PARAMS).fit(X, y, checkpoint=ck, checkpoint_every=1)
    monkeypatch.undo()
    saved = read_checkpoint(ck)
    meta = saved.meta
    meta["model"]["base"]["monitor"]["epoch_start"] = None
    write_checkpoint(ck, saved.arrays, {k: v for k, v in meta.items()
                                        if k not in ("format_version", "library_version")})
    with pytest.raises(CheckpointError,
                       match=r"epoch 0, round 5, but holds no training-loss totals"):
        DSGRegressor(**PARAMS).fit(X, y, checkpoint=ck, resume=True)
