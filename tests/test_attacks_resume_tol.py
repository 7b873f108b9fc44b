"""Attack on resuming a DSPDC fit that stopped on its duality gap or its time limit:
``tol`` and ``max_time`` are parameters that may change on resume, so a checkpoint written
when the gap reached a looser ``tol`` is final only for a ``tol`` that gap also meets, and
one written at ``max_time`` never is (the limit is on one call's time).  Resumed with a
smaller ``tol`` (or ``tol=None``), the fit goes on from the checkpoint until the gap meets
the new one; resumed with the same or a larger ``tol``, it returns the finished model
without iterating; resumed after ``max_time``, it reaches the model of the fit that was
never stopped."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import ooc_kernels as ok

rng = np.random.default_rng(0)
X = rng.normal(size=(400, 6))
Y = X @ rng.normal(size=6) + 0.3 * rng.normal(size=400)
FAST = dict(alpha=0.01, chunk_size=100, scheduler="sync", random_state=0, progress=False,
            max_iter=200)


@pytest.mark.parametrize("cls, y", [(ok.DSPDCRegressor, Y),
                                    (ok.DSPDCClassifier, (Y > 0).astype(int))])
def test_a_fit_resumed_with_a_smaller_tol_goes_on_to_it(tmp_path, cls, y, monkeypatch):
    from ooc_kernels.families.dspdc import _squared_start

    # from the zero start: the squared loss's start certifies 1e-7 at once
    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    ck = tmp_path / "ck.zarr"
    loose = cls(tol=1e-2, **FAST).fit(X, y, checkpoint=ck)
    assert loose.stop_reason_.startswith("tol")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        tight = cls(tol=1e-7, **FAST).fit(X, y, checkpoint=ck, resume=True)
    assert tight.n_iter_ > loose.n_iter_
    assert tight.stop_reason_.startswith("tol")
    assert tight.gap_history_[-1]["relative_gap"] <= 1e-7
    assert tight.gap_history_[:len(loose.gap_history_)] == loose.gap_history_
    # the gap certifies the model: the exact solution is within the gap's bound
    whole = cls(tol=1e-9, **FAST).fit(X, y)
    np.testing.assert_allclose(tight.coef_, whole.coef_, atol=1e-3)


def test_a_fit_resumed_with_the_same_or_a_larger_tol_is_the_finished_model(tmp_path):
    ck = tmp_path / "ck.zarr"
    done = ok.DSPDCRegressor(tol=1e-2, **FAST).fit(X, Y, checkpoint=ck)
    for tol in (1e-2, 5e-2):
        again = ok.DSPDCRegressor(tol=tol, **FAST).fit(X, Y, checkpoint=ck, resume=True)
        assert again.n_iter_ == done.n_iter_
        assert again.gap_history_ == done.gap_history_
        assert np.array_equal(again.coef_, done.coef_)


def test_a_fit_resumed_without_tol_runs_to_max_iter(tmp_path):
    ck = tmp_path / "ck.zarr"
    done = ok.DSPDCRegressor(tol=1e-2, **FAST).fit(X, Y, checkpoint=ck)
    more = dict(FAST, max_iter=done.n_iter_ + 3)
    resumed = ok.DSPDCRegressor(tol=None, **more).fit(X, Y, checkpoint=ck, resume=True)
    assert resumed.n_iter_ == done.n_iter_ + 3


@pytest.mark.parametrize("cls, y", [(ok.DSPDCRegressor, Y),
                                    (ok.DSPDCClassifier, (Y > 0).astype(int))])
@pytest.mark.parametrize("max_time", [None, 1e-9, 3600.0])
def test_a_fit_stopped_at_max_time_resumes_to_the_uninterrupted_model(tmp_path, cls, y,
                                                                      max_time):
    """``max_time=1e-9`` stops the first fit after its first epoch (on any machine); the
    resumed fit, whatever its own ``max_time``, goes on and ends where the fit that never
    stopped ends, with its model bit for bit."""
    params = dict(FAST, tol=None, max_iter=5)
    whole = cls(**params).fit(X, y, checkpoint=tmp_path / "whole.zarr")
    ck = tmp_path / "ck.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        stopped = cls(max_time=1e-9, **params).fit(X, y, checkpoint=ck)
    assert stopped.stop_reason_.startswith("max_time") and stopped.n_iter_ == 1
    resumed = cls(max_time=max_time, **params).fit(X, y, checkpoint=ck, resume=True)
    if max_time == 1e-9:                  # its own limit: one more epoch
        assert resumed.n_iter_ == 2 and resumed.stop_reason_.startswith("max_time")
        return
    assert resumed.n_iter_ == whole.n_iter_ == 5
    assert np.array_equal(resumed.coef_, whole.coef_)
    assert resumed.intercept_ == whole.intercept_
