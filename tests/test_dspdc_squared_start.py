"""The squared loss's start out of core (families/dspdc/_squared_start.py): the set-up's read
gathers the scatter of ``[X, b]``, the fit starts from the ridge solution of the
standardized problem and from the duals optimal for it.  Checked against NumPy on the rows
(the start's ``x``, ``A^T (w y)`` and ``sum w phi*(y)``), and whole fits against the
closed-form ridge solution and a fit from the zero start."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.families.dspdc import _squared_start as start_mod
from ooc_kernels.families.dspdc._scaling import combine_moments, standardization


def _data(n=1500, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * np.array([1.0, 30.0, 0.01, 1.0, 2.0]) + np.array(
        [0.0, 500.0, 0.0, -3.0, 1.0])
    y = X @ rng.normal(size=p) + 0.3 * rng.normal(size=n) + 2.0
    w = rng.uniform(0.0, 2.0, size=n)
    return X, y, w


def _model_rows(X, scaled, scaling):
    A = (X - np.asarray(scaled["x_shift"])) / np.asarray(scaled["x_scale"])
    return np.column_stack([A, np.full(len(X), scaling)]) if scaling else A


@pytest.mark.parametrize("scaling, weighted, center", [
    (1.0, False, True), (0.0, True, True), (2.0, True, True),
    (0.0, True, False), (2.0, False, False)])   # columns not centred: their means enter
def test_start_is_the_ridge_solution_and_its_duals(scaling, weighted, center):
    X, y, w = _data()
    w = w * len(w) / w.sum() if weighted else None
    cuts = [0, 400, 1000, 1500]
    parts = [start_mod.chunk_scatter(X[a:b], y[a:b], None if w is None else w[a:b])
             for a, b in zip(cuts[:-1], cuts[1:])]
    scatter = combine_moments(*parts)
    p = X.shape[1]
    scaled = standardization((scatter[0], scatter[1][:p], np.diag(scatter[2])[:p]), center)
    lam2, n = 1e-3, len(y)
    start = start_mod.squared_start(scatter, scaled, scaling, lam2, n)
    A = _model_rows(X, scaled, scaling)
    ww = np.ones(n) if w is None else w
    exact = np.linalg.solve(A.T @ (ww[:, None] * A) / n + lam2 * np.eye(A.shape[1]),
                            A.T @ (ww * y) / n)
    np.testing.assert_allclose(start["start_x"], exact, rtol=1e-9, atol=1e-12)
    duals = A @ np.asarray(start["start_x"]) - y
    np.testing.assert_allclose(start["start_w"], A.T @ (ww * duals), rtol=1e-7, atol=1e-8)
    conj = np.sum(ww * (0.5 * duals ** 2 + y * duals))
    assert start["start_conj"] == pytest.approx(conj, rel=1e-10)


def test_no_start_for_values_that_are_not_finite():
    X, y, _ = _data(n=50)
    scatter = start_mod.chunk_scatter(X, y, None)
    scaled = standardization((scatter[0], scatter[1][:5], np.diag(scatter[2])[:5]), True)
    broken = (scatter[0], scatter[1], np.full_like(scatter[2], np.nan))
    assert start_mod.squared_start(broken, scaled, 1.0, 1e-3, 50) == {}


def _fit(X, y, w=None, **kw):
    params = dict(alpha=1e-3, tol=1e-8, max_iter=30, shuffle_chunks=2, scheduler="sync",
                  random_state=0, progress=False)
    est = ok.DSPDCRegressor(**{**params, **kw})
    dw = None if w is None else da.from_array(w, chunks=300)
    return est.fit(da.from_array(X, chunks=(300, X.shape[1])), da.from_array(y, chunks=300),
                   sample_weight=dw)


@pytest.mark.parametrize("weighted", [False, True])
def test_fit_from_the_start_is_the_closed_form_ridge(weighted):
    X, y, w = _data()
    est = _fit(X, y, w if weighted else None)
    cfg = est._config
    assert cfg.start_x is not None
    n, alpha = len(y), 1e-3
    A = _model_rows(X, {"x_shift": cfg.x_shift, "x_scale": cfg.x_scale},
                    cfg.intercept_scaling)
    ww = np.ones(n) if not weighted else w * n / w.sum()
    ybar = np.average(y, weights=ww)                 # fit to the targets less their mean
    x = np.linalg.solve(A.T @ (ww[:, None] * A) / n + alpha * np.eye(A.shape[1]),
                        A.T @ (ww * (y - ybar)) / n)
    coef = x[:-1] / np.asarray(cfg.x_scale)
    intercept = cfg.intercept_scaling * x[-1] - coef @ np.asarray(cfg.x_shift) + ybar
    np.testing.assert_allclose(est.coef_, coef, rtol=1e-6, atol=1e-9)
    assert est.intercept_ == pytest.approx(intercept, rel=1e-6)
    # the start is certified by the first gap evaluated: the first epoch's reads
    assert len(est.gap_history_) == 1 and est.gap_history_[0]["relative_gap"] <= 1e-8


def test_elastic_net_from_the_start_matches_the_zero_start(monkeypatch):
    X, y, _ = _data(seed=1)
    started = _fit(X, y, l1_ratio=0.5, tol=1e-9, max_iter=200)
    monkeypatch.setattr(start_mod, "START_MAX_FEATURES", 0)    # no start: x = 0, y = 0
    plain = _fit(X, y, l1_ratio=0.5, tol=1e-9, max_iter=200)
    assert plain._config.start_x is None and started._config.start_x is not None
    assert started.n_iter_ < plain.n_iter_
    cfg = plain._config
    A = _model_rows(X, {"x_shift": cfg.x_shift, "x_scale": cfg.x_scale},
                    cfg.intercept_scaling)

    def primal(est):   # the standardized problem's objective at the fit's solver vector
        x = np.append(est.coef_ * np.asarray(cfg.x_scale),
                      (est.intercept_ + est.coef_ @ np.asarray(cfg.x_shift))
                      / cfg.intercept_scaling)
        return (np.sum((A @ x - y) ** 2) / (2 * len(y)) + cfg.lam1 * np.abs(x).sum()
                + cfg.lam2 / 2 * x @ x)

    # both certified within a relative 1e-9 of the optimum: the same objective value
    assert primal(started) == pytest.approx(primal(plain), rel=2e-9)


@pytest.mark.parametrize("at_setup", [True, False])
def test_a_fit_from_the_start_killed_and_resumed_is_the_uninterrupted_one(tmp_path,
                                                                          monkeypatch,
                                                                          at_setup):
    """Killed after its first checkpoint and resumed: the checkpoint keeps the start, the
    resumed rounds compute the same initial duals, and the model, gaps and passes are the
    uninterrupted fit's, bit for bit.  The start certified from the set-up's scatter
    (``at_setup``: no checkpoint inside that epoch, the first is the last) or by the first
    epoch's rows (killed after its first round, the second round's chunks still at their
    initial version)."""
    from ooc_kernels.estimators._checkpointing import CheckpointWriter
    from ooc_kernels.families.dspdc import _scatter_gap

    if not at_setup:
        monkeypatch.setattr(_scatter_gap, "setup_runner", lambda est, start: None)

    X, y, _ = _data(seed=3)
    kw = dict(alpha=1e-3, tol=1e-8, max_iter=30, shuffle_chunks=3, scheduler="sync",
              random_state=2, progress=False)
    lazy = (da.from_array(X, chunks=(250, X.shape[1])), da.from_array(y, chunks=250))
    whole = ok.DSPDCRegressor(**kw).fit(*lazy)
    real = CheckpointWriter.__call__

    def call(self, state, info):
        real(self, state, info)
        raise KeyboardInterrupt("killed after round 1")

    ck = tmp_path / "ck.zarr"
    with monkeypatch.context() as m:
        m.setattr(CheckpointWriter, "__call__", call)
        with pytest.raises(KeyboardInterrupt, match="killed after round 1"):
            ok.DSPDCRegressor(**kw).fit(*lazy, checkpoint=ck)
    resumed = ok.DSPDCRegressor(**kw).fit(*lazy, checkpoint=ck, resume=True)
    assert resumed._config.start_x == whole._config.start_x is not None
    np.testing.assert_array_equal(resumed.coef_, whole.coef_)
    assert resumed.intercept_ == whole.intercept_
    assert [(h["passes"], h["primal"], h["dual"]) for h in resumed.gap_history_] == \
        [(h["passes"], h["primal"], h["dual"]) for h in whole.gap_history_]


def test_a_fit_that_stops_reads_no_rows_for_a_round_it_never_runs(monkeypatch):
    """The task that certifies the fit's stop does not start the read ahead of the next
    round's rows (``DSPDCAlgorithm.starts_read_ahead``): the read ahead reads the second
    round of the first epoch only, and the model is the one of a fit whose rounds start
    every read before they run, bit for bit."""
    from ooc_kernels.families.dspdc import _scatter_gap
    from ooc_kernels.families.dspdc.solver import DSPDCAlgorithm
    from ooc_kernels.parallel.read_ahead import ReadAhead

    X, y, _ = _data(seed=4)
    lazy = (da.from_array(X, chunks=(250, X.shape[1])), da.from_array(y, chunks=250))
    kw = dict(alpha=1e-3, tol=1e-8, max_iter=30, shuffle_chunks=3, scheduler="sync",
              random_state=1, progress=False)
    real, started = ReadAhead.start, []

    def start(self, groups):
        if groups:
            started.append(tuple(groups))
        real(self, groups)

    monkeypatch.setattr(ReadAhead, "start", start)
    # the start certified by the first epoch's rows, not at the set-up (which reads none)
    monkeypatch.setattr(_scatter_gap, "setup_runner", lambda est, start: None)
    est = ok.DSPDCRegressor(**kw).fit(*lazy)
    assert est.n_iter_ == 1 and len(started) == 1      # two rounds: one read ahead
    monkeypatch.setattr(DSPDCAlgorithm, "starts_read_ahead", False)
    started.clear()
    every = ok.DSPDCRegressor(**kw).fit(*lazy)
    assert len(started) == 2                            # and the next epoch's first round
    np.testing.assert_array_equal(est.coef_, every.coef_)
    assert [(h["passes"], h["primal"], h["dual"]) for h in est.gap_history_] == \
        [(h["passes"], h["primal"], h["dual"]) for h in every.gap_history_]


@pytest.mark.parametrize("scheduler", ["sync", "threads"])
def test_a_fit_that_stops_after_its_first_round_reads_no_rows_ahead(monkeypatch, scheduler):
    """An epoch of one round (every chunk in one group) whose task certifies the start:
    the round reads its rows in the calling thread and its task, which certifies the fit's
    stop, starts no read ahead, so each chunk is read twice (the set-up's read and the
    epoch's); the model is the one of a fit whose rounds start every read before they run,
    bit for bit."""
    from ooc_kernels.families.dspdc import _scatter_gap
    from ooc_kernels.families.dspdc.solver import DSPDCAlgorithm

    X, y, _ = _data(seed=5)
    reads: list = []

    def counted(block, block_info=None):
        reads.append(block_info[0]["chunk-location"][0])
        return block

    lazy = (da.from_array(X, chunks=(250, X.shape[1])).map_blocks(counted, dtype=X.dtype),
            da.from_array(y, chunks=250))
    kw = dict(alpha=1e-3, tol=1e-8, max_iter=30, shuffle_chunks=6, scheduler=scheduler,
              random_state=1, progress=False)
    # the start certified by the first epoch's rows, not at the set-up (which reads none)
    monkeypatch.setattr(_scatter_gap, "setup_runner", lambda est, start: None)
    est = ok.DSPDCRegressor(**kw).fit(*lazy)
    assert est.n_iter_ == 1 and est.gap_history_[0]["iterations"] == 0
    assert sorted(reads) == sorted(list(range(6)) * 2)
    monkeypatch.setattr(DSPDCAlgorithm, "starts_read_ahead", False)
    reads.clear()
    every = ok.DSPDCRegressor(**kw).fit(*lazy)
    assert sorted(reads) == sorted(list(range(6)) * 3)    # the next epoch's round, unused
    np.testing.assert_array_equal(est.coef_, every.coef_)
    assert [(h["passes"], h["primal"], h["dual"]) for h in est.gap_history_] == \
        [(h["passes"], h["primal"], h["dual"]) for h in every.gap_history_]
