"""DSPDC on data held in memory (``families/dspdc/_direct.py``): the rounds run without Dask
and without the duals store, and give the iterates of the out-of-core path: bit for bit in
general, to rounding with the fused tasks of ``m = 1, q = p`` (the defaults,
``families/dspdc/_memory_task.py``), whose sums run in another order.  The squared loss's
line of duals, which only the in-memory tasks have (``tests/test_dspdc_squared_line.py``),
and its ridge start, which only the out-of-core path has
(``tests/test_dspdc_squared_start.py``), are turned off where a fit is compared with its
out-of-core twin (:func:`same_rounds`)."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import ooc_kernels as ok
from ooc_kernels._chunk_store import INITIAL
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dspdc._direct import MemoryDuals, held_in_memory


def _data(seed=0, n=600, p=5, classify=False):
    rng = np.random.default_rng(seed)
    X = (rng.normal(size=(n, p)) * [1.0, 10.0, 0.1, 1.0, 3.0][:p] + 2.0).astype(np.float32)
    s = X @ rng.normal(size=p) + rng.normal(size=n)
    y = np.where(s > np.median(s), 1, 0) if classify else s
    return X, y, rng.uniform(0.0, 3.0, size=n)


@pytest.fixture
def same_rounds(monkeypatch):
    """The in-memory tasks without the squared loss's line of duals, and the out-of-core
    rounds without the squared loss's ridge start (``families/dspdc/_squared_start.py``):
    the same rounds from the same zero start."""
    from ooc_kernels.families.dspdc import _memory_task, _squared_start

    monkeypatch.setattr(_memory_task.MemoryTasks, "_line_start", lambda *args: None)
    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)


CASES = [   # (estimator, parameters, classification, sample weights)
    (ok.DSPDCRegressor, {"alpha": 1e-3}, False, False),
    (ok.DSPDCRegressor, {"alpha": 1e-3, "l1_ratio": 0.5}, False, True),
    (ok.DSPDCClassifier, {"alpha": 1e-3}, True, False),
    (ok.DSPDCClassifier, {"alpha": 1e-3, "loss": "smoothed_hinge", "class_weight": "balanced"},
     True, True),
]


@pytest.mark.parametrize("Est, params, classify, weighted", CASES)
@pytest.mark.parametrize("m", [1, 2])
def test_in_memory_fit_gives_the_out_of_core_iterates(Est, params, classify, weighted, m,
                                                      monkeypatch, same_rounds):
    """The same data as a NumPy array (in memory: no Dask round, duals in memory, the gap
    from the rows held) and as a Dask array (out of core): the same chunk plan, row
    sampling and steps, so the same epochs, passes and step boosts and the same
    coefficients: bit for bit with ``m = 2`` (the out-of-core task on the rows held), to
    rounding with ``m = 1`` (the fused tasks), and primal values within rounding (summed in
    another order)."""
    from ooc_kernels.families.dspdc.solver import DSPDCAlgorithm

    # out of core the task that completes a certified start skips its iterations (its later
    # duals differ from the in-memory path's): every task iterates in both here
    monkeypatch.setattr(DSPDCAlgorithm, "certifies_start", lambda *args: False)
    X, y, w = _data(classify=classify)
    sw = w if weighted else None
    common = dict(params, tol=1e-5, max_iter=60, chunk_size=100, shuffle_chunks=2,
                  random_state=3, progress=False, m=m, local_passes=1.0,
                  sampling="permutation" if m == 1 else "uniform")   # "auto" in memory
    mem = Est(**common).fit(X, y, sample_weight=sw)
    ooc = Est(**common).fit(da.from_array(X, chunks=(100, -1)), da.from_array(y, chunks=100),
                            sample_weight=None if sw is None else da.from_array(sw, 100))
    assert mem._direct_fit and not ooc._direct_fit
    same = np.testing.assert_array_equal if m == 2 else _to_rounding
    same(mem.coef_, ooc.coef_)
    same(mem.intercept_, ooc.intercept_)
    assert mem.n_iter_ == ooc.n_iter_ and mem.stop_reason_[:4] == ooc.stop_reason_[:4]
    assert len(mem.gap_history_) == len(ooc.gap_history_) > 3
    for a, b in zip(mem.gap_history_, ooc.gap_history_):
        assert (a["iterations"], a["passes"], a["step_boost"]) == \
            (b["iterations"], b["passes"], b["step_boost"])
        np.testing.assert_allclose(a["primal"], b["primal"], rtol=1e-12)
        np.testing.assert_allclose(a["dual"], b["dual"], rtol=1e-12)


def _to_rounding(got, want):
    """The fused in-memory tasks against the out-of-core ones: the same iterates up to the
    order of their sums."""
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_in_memory_fit_stops_and_warns_as_out_of_core(same_rounds):
    """``max_iter`` reached above ``tol``: the same ConvergenceWarning, stop reason and
    history in both paths."""
    X, y, _ = _data(1)
    fits = []
    for data, target in ((X, y), (da.from_array(X, chunks=(200, -1)), da.from_array(y, 200))):
        est = ok.DSPDCRegressor(alpha=1e-4, tol=1e-12, max_iter=2, chunk_size=200,
                                random_state=0, progress=False, local_passes=1.0,
                                sampling="permutation")
        with pytest.warns(ConvergenceWarning, match="relative duality gap"):
            est.fit(data, target)
        fits.append(est)
    assert fits[0]._direct_fit and not fits[1]._direct_fit
    assert fits[0].stop_reason_ == fits[1].stop_reason_
    assert [h["epoch"] for h in fits[0].history_] == [h["epoch"] for h in fits[1].history_]
    _to_rounding(fits[0].coef_, fits[1].coef_)


def test_in_memory_path_is_not_taken_where_the_duals_must_be_on_disk(tmp_path, same_rounds):
    """A checkpoint (and so a resume), several tasks per round or a lazy input keep the
    out-of-core path; the checkpointed fit still equals the in-memory one."""
    X, y, _ = _data(2)
    kw = dict(alpha=1e-3, tol=1e-6, chunk_size=150, random_state=1, progress=False,
              local_passes=1.0, sampling="permutation")   # "auto": none with a checkpoint
    plain = ok.DSPDCRegressor(**kw).fit(X, y)
    saved = ok.DSPDCRegressor(**kw).fit(X, y, checkpoint=str(tmp_path / "ck"))
    two = ok.DSPDCRegressor(chunks_per_round=2, **kw).fit(X, y)
    assert plain._direct_fit and not saved._direct_fit and not two._direct_fit
    _to_rounding(plain.coef_, saved.coef_)


def test_memory_duals_refuse_a_version_they_do_not_hold():
    duals = MemoryDuals()
    np.testing.assert_array_equal(duals.read("y", 4, INITIAL, n_rows=3), np.zeros(3))
    duals.write("y", 4, (0, 1), np.arange(3.0))
    np.testing.assert_array_equal(duals.read("y", 4, (0, 1), n_rows=3), np.arange(3.0))
    with pytest.raises(ValidationError, match=r"chunk 4 are at version \(0, 1\), not \(0, 0\)"):
        duals.read("y", 4, (0, 0), n_rows=3)


def test_held_in_memory_knows_arrays_frames_and_lazy_inputs():
    import pandas as pd

    X = np.zeros((4, 2))
    assert held_in_memory(X, np.zeros(4), None)
    assert held_in_memory(pd.DataFrame(X), pd.Series(np.zeros(4)))
    assert not held_in_memory(X, da.zeros(4))
    assert not held_in_memory(da.from_array(X))


@pytest.mark.parametrize("Est, classify", [(ok.DSPDCRegressor, False),
                                           (ok.DSPDCClassifier, True)])
def test_lists_fit_the_model_of_the_same_arrays(Est, classify):
    """Rows, targets and weights given as Python lists are held in memory as NumPy arrays
    are: the fit takes the same path and gives the arrays' model bit for bit."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 3))
    y = X @ [1.0, -2.0, 0.5] + 0.3 * rng.normal(size=120)
    y = (y > 0).astype(int) if classify else y
    w = rng.uniform(0.5, 2.0, size=120)
    params = dict(alpha=0.05, max_iter=4, tol=None, random_state=0, progress=False)
    arrays = Est(**params).fit(X, y, sample_weight=w)
    lists = Est(**params).fit(X.tolist(), y.tolist(), sample_weight=w.tolist())
    assert np.array_equal(lists.coef_, arrays.coef_)
    assert lists.intercept_ == arrays.intercept_
    assert held_in_memory(X.tolist(), tuple(y), None)
