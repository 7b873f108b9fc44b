"""Attack on DSPDC's adaptive steps through a checkpoint: a fit stopped at a smaller
``max_iter`` and resumed with a larger one must run the steps of the fit that never
stopped.  The stopped fit evaluates its final iterate on a pass of its own; the fit that
runs on evaluates that iterate again one epoch later (the lagged gap).  The referee of the
adaptive steps (``_step_rule.gap_stalled``) judges the lagged evaluations only, so the
extra one can neither shrink the steps nor shift the evaluations it counts."""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning

import ooc_kernels as ok
from ooc_kernels.exceptions import ModelFormatError
from ooc_kernels.families.dspdc._step_rule import final_entries, judged_entries

X_RAW, Y = load_breast_cancer(return_X_y=True)
X = da.from_array(X_RAW, chunks=150)          # out of core: the checkpoint's path
FAST = dict(progress=False, random_state=0, tol=None, scheduler="sync")


def _fit(max_iter, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return ok.DSPDCClassifier(max_iter=max_iter, **FAST).fit(X, Y, **kw)


def test_resumed_fit_shrinks_its_steps_where_the_uninterrupted_one_does(tmp_path, monkeypatch):
    """From the zero start: Newton's start out of core is this problem's solution to
    rounding, where the steps shrink on the rounding of the gaps."""
    from ooc_kernels.families.dspdc import _squared_start

    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    whole = _fit(8)
    boosts = [e["step_boost"] for e in whole.gap_history_]
    shrunk = [i for i in range(1, len(boosts)) if boosts[i] < boosts[i - 1]]
    assert shrunk, f"no shrink of the steps in 8 epochs ({boosts}): pick another problem"
    first = shrunk[0]               # the first evaluation with the shrunk steps
    assert first >= 2
    for k in (first - 1,):          # stopped just before the evaluation that shrinks them
        ck = tmp_path / f"ck{k}.zarr"
        _fit(k, checkpoint=ck)
        resumed = _fit(8, checkpoint=ck, resume=True)
        np.testing.assert_array_equal(resumed.coef_, whole.coef_)
        # the stopped fit's final evaluation is entry k - 1; the rest are the whole fit's
        history = resumed.gap_history_[:k - 1] + resumed.gap_history_[k:]
        assert [(e["iterations"], e["gap"], e["step_boost"]) for e in history] == \
            [(e["iterations"], e["gap"], e["step_boost"]) for e in whole.gap_history_]


def test_final_entries_are_checked():
    assert judged_entries([{"gap": 1}, {"gap": 2}], [0]) == [{"gap": 2}]
    for bad in ([5], [0, 0], ["0"], [True], {"0": 1}):
        with pytest.raises(ModelFormatError, match="final_gaps .* is not a list of distinct"):
            final_entries(bad, 3, "ck.zarr")
