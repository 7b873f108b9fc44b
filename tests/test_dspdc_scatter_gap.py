"""The squared loss's certificate from the set-up's scatter (families/dspdc/_scatter_gap.py):
the gap at the start from ``G``, ``c`` and ``b^T W b`` against NumPy on the rows, the
elastic net's start against scikit-learn, one read of the store where the scatter's gap and
its error bound certify ``tol``, the read over the rows where the bound is too large, and a
resume from a fit certified at the set-up."""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import ElasticNet

import ooc_kernels as ok
from ooc_kernels.families.dspdc import _scatter_gap
from ooc_kernels.families.dspdc._scaling import combine_moments, standardization
from ooc_kernels.families.dspdc._squared_start import chunk_scatter, squared_start

from _interrupt import assert_same_continuations


def _data(n=1200, p=4, seed=0, offset=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * np.array([1.0, 30.0, 0.01, 2.0]) + np.array(
        [0.0, 500.0, 0.0, 1.0])
    y = X @ rng.normal(size=p) + 0.3 * rng.normal(size=n) + 2.0 + offset
    return X, y, rng.uniform(0.0, 2.0, size=n)


def _rows(X, scaled, scaling):
    A = (X - np.asarray(scaled["x_shift"])) / np.asarray(scaled["x_scale"])
    return np.column_stack([A, np.full(len(X), scaling)]) if scaling else A


def _gap_on_rows(A, b, w, x, lam1, lam2):
    """``n (P - D)`` at ``x`` and the duals ``y = A x - b``, summed over the rows."""
    n = len(b)
    y = A @ x - b
    primal = 0.5 * np.sum(w * y ** 2) + n * np.sum(lam1 * np.abs(x) + 0.5 * lam2 * x ** 2)
    conj = np.sum(w * (0.5 * y ** 2 + b * y))
    u = -(A.T @ (w * y)) / n
    dual = -conj - n * np.sum(np.maximum(np.abs(u) - lam1, 0.0) ** 2 / (2 * lam2))
    return primal - dual, 0.5 * np.sum(w * y ** 2)


@pytest.mark.parametrize("scaling, weighted, center, lam1, start_lam2", [
    (1.0, False, True, 0.0, 1e-2), (0.0, True, True, 3e-3, 1e-2), (2.0, True, False, 0.0, 1.0),
    (1.0, True, True, 1e-2, 1e-3)])   # the last: the elastic net's own start (gap ~ 0)
def test_the_scatter_gap_is_the_gap_summed_over_the_rows(scaling, weighted, center, lam1,
                                                         start_lam2):
    """At a start solved for another ``lam2`` (a gap far from 0) the scatter's gap is the
    rows' to 1e-10; at the problem's own solution it is within the bound of it."""
    from ooc_kernels.families.dspdc.solver import DSPDCConfig, init_state

    X, y, w = _data()
    n, lam2 = len(y), 1e-3
    w = w * n / w.sum() if weighted else np.ones(n)
    cuts = [0, 500, 900, n]
    scatter = combine_moments(*[chunk_scatter(X[a:b], y[a:b], w[a:b] if weighted else None)
                                for a, b in zip(cuts[:-1], cuts[1:])])
    p = X.shape[1]
    scaled = standardization((scatter[0], scatter[1][:p], np.diag(scatter[2])[:p]), center)
    start = squared_start(scatter, scaled, scaling, start_lam2, n, lam1)
    loss, bound = _scatter_gap.scatter_gap(scatter, scaled, scaling, start["start_x"], lam1,
                                           lam2, n, chunk_rows=500, n_chunks=3)
    cfg = DSPDCConfig(loss_id=0, n_samples=n, n_features=p + (1 if scaling else 0),
                      lam1=lam1, lam2=lam2, Lambda=1.0, **start)
    x = np.asarray(start["start_x"])
    gap = loss + n * np.sum(lam1 * np.abs(x) + 0.5 * lam2 * x ** 2) \
        - n * init_state(cfg, 1).dual_value(cfg)
    exact, rows_loss = _gap_on_rows(_rows(X, scaled, scaling), y, w, x, lam1, lam2)
    assert loss == pytest.approx(rows_loss, rel=1e-10)
    if start_lam2 != lam2:
        assert gap == pytest.approx(exact, rel=1e-10)
    assert 0.0 < abs(gap - exact) <= bound < 1e-4 * rows_loss
    # the scatter's rounding grows with the rows a chunk sums (one chunk of all the rows)
    _, whole = _scatter_gap.scatter_gap(scatter, scaled, scaling, start["start_x"], lam1,
                                        lam2, n, chunk_rows=n, n_chunks=1)
    assert whole > 1.5 * bound


def _counted(X, y, chunk, reads, w=None):
    """Dask arrays of ``X`` and ``y`` whose ``X`` blocks count their reads."""
    def read(block):
        reads.append(len(block))
        return block

    Xd = da.from_array(X, chunks=(chunk, X.shape[1])).map_blocks(read, dtype=X.dtype)
    return Xd, da.from_array(y, chunks=chunk), None if w is None else da.from_array(
        w, chunks=chunk)


@pytest.mark.parametrize("weighted, fit_intercept", [(False, True), (True, True),
                                                    (True, False)])
def test_the_elastic_net_out_of_core_is_certified_after_one_read(weighted, fit_intercept):
    X, y, w = _data(seed=1)
    n, alpha, l1_ratio = len(y), 1e-2, 0.5
    reads = []
    est = ok.DSPDCRegressor(alpha=alpha, l1_ratio=l1_ratio, tol=1e-8, scheduler="sync",
                            progress=False, random_state=0, fit_intercept=fit_intercept)
    est.fit(*_counted(X, y, 300, reads, w if weighted else None))
    assert sum(reads) == n and est._setup_reads == 1   # the set-up's read, and no other
    assert est.n_iter_ == 1 and len(est.gap_history_) == 1
    assert est.stop_reason_.startswith("tol") and est.gap_history_[0]["relative_gap"] <= 1e-8
    cfg = est._config
    A = _rows(X, {"x_shift": cfg.x_shift, "x_scale": cfg.x_scale}, cfg.intercept_scaling)
    ww = w * n / w.sum() if weighted else None
    # with an intercept the targets less their weighted mean, which the intercept gets back
    ybar = np.average(y, weights=ww) if fit_intercept else 0.0
    ref = ElasticNet(alpha=alpha, l1_ratio=l1_ratio, fit_intercept=False, tol=1e-14,
                     max_iter=100_000).fit(A, y - ybar, sample_weight=ww)
    # the fit's shift is that mean (its own rounding: the solver's intercept coefficient is
    # taken off the intercept with it, so that an exact 0 stays one)
    assert cfg.y_shift == pytest.approx(ybar, rel=1e-12, abs=0.0)
    x = est.coef_ * np.asarray(cfg.x_scale)
    if fit_intercept:
        x = np.append(x, (est.intercept_ - cfg.y_shift + est.coef_ @ np.asarray(cfg.x_shift))
                      / cfg.intercept_scaling)
    np.testing.assert_allclose(x, ref.coef_, rtol=1e-7, atol=1e-9)
    assert np.sum(x == 0.0) == np.sum(ref.coef_ == 0.0)


@pytest.mark.parametrize("tol, max_iter", [(None, 2), (1e-300, 2)])
def test_no_tol_or_a_tol_below_the_rounding_reads_the_rows(tol, max_iter):
    """``tol=None`` runs ``max_iter`` epochs by request, and a ``tol`` below the bound on
    the scatter's rounding is left to the rows (whose gap of the start, 0 up to rounding,
    may still meet it): both read the rows after the set-up, from the same start."""
    X, y, _ = _data(seed=1)
    reads = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)   # 1e-300: not reached
        est = ok.DSPDCRegressor(alpha=1e-2, l1_ratio=0.5, tol=tol, max_iter=max_iter,
                                scheduler="sync", progress=False, random_state=0).fit(
            *_counted(X, y, 300, reads))
    assert est._config.start_x is not None
    assert sum(reads) > est._setup_reads * len(y)
    assert est.n_iter_ == max_iter or est.gap_history_[0]["relative_gap"] <= tol


def test_a_bound_too_large_for_tol_falls_back_to_the_read_over_the_rows(monkeypatch):
    """Targets near ``1e4`` with an intercept column of 100: ``b^T W b`` is ``1e8`` per row
    against residuals of ``0.1``, so the bound on the cancellation is above ``tol |P|`` while
    the scatter's gap alone is below it; the first epoch sums the losses over the rows and
    certifies the start there: the reads and the model of a fit without the set-up's
    certificate."""
    X, y, _ = _data(seed=2, offset=1e4)
    n, tol = len(y), 1e-7
    kw = dict(alpha=1e-3, tol=tol, intercept_scaling=100.0, scheduler="sync",
              progress=False, random_state=0)
    found, real = [], _scatter_gap.scatter_gap
    monkeypatch.setattr(_scatter_gap, "scatter_gap", lambda *a, **kw: found.append(
        real(*a, **kw)) or found[-1])
    reads = []
    est = ok.DSPDCRegressor(**kw).fit(*_counted(X, y, 300, reads))
    loss, bound = found[0]
    first = est.gap_history_[0]          # the gap over the rows, at the start
    x0 = np.asarray(est._config.start_x)
    gap = loss + n * np.sum(0.5 * est._config.lam2 * x0 ** 2) - n * first["dual"]
    assert gap <= tol * n * first["primal"] < bound      # certified but for the bound
    assert est.n_iter_ == 1 and first["relative_gap"] <= tol and first["iterations"] == 0
    monkeypatch.setattr(_scatter_gap, "setup_runner", lambda est, start: None)
    plain_reads = []
    plain = ok.DSPDCRegressor(**kw).fit(*_counted(X, y, 300, plain_reads))
    assert sum(reads) == sum(plain_reads) > n          # the rows read after the set-up
    np.testing.assert_array_equal(est.coef_, plain.coef_)
    assert est.gap_history_ == [{**h, "seconds": first["seconds"]}
                                for h in plain.gap_history_]


def test_a_resume_from_a_fit_certified_at_the_set_up_is_that_of_a_fit_certified_on_rows(
        tmp_path, monkeypatch):
    """The checkpoint of a fit certified at the set-up holds the start, its chunks' duals at
    their initial version: resumed with no ``tol`` it runs the epochs that the
    resume of a fit certified by the rows runs, bit for bit."""
    X, y, _ = _data(seed=3)
    # the theorems' steps: the adaptive steps' rule judges the gaps evaluated, and the
    # scatter's losses of the start differ from the rows' in their last digits
    kw = dict(alpha=1e-2, l1_ratio=0.3, scheduler="sync", progress=False, random_state=1,
              shuffle_chunks=2, steps="theorem")
    fits, reads = [], []
    for path, runner in ((tmp_path / "a.zarr", _scatter_gap.setup_runner),
                         (tmp_path / "b.zarr", lambda est, start: None)):
        monkeypatch.setattr(_scatter_gap, "setup_runner", runner)
        counted = []
        lazy = _counted(X, y, 300, counted)[:2]
        first = ok.DSPDCRegressor(tol=1e-6, **kw).fit(*lazy, checkpoint=path)
        reads.append(sum(counted))
        again = ok.DSPDCRegressor(tol=1e-6, **kw).fit(*lazy, checkpoint=path, resume=True)
        np.testing.assert_array_equal(again.coef_, first.coef_)
        more = ok.DSPDCRegressor(tol=None, max_iter=3, **kw).fit(   # two more epochs
            *lazy, checkpoint=path, resume=True)
        fits.append((first, more))
    assert reads[0] == len(y) < reads[1]     # one read; the rows' certificate reads more
    assert_same_continuations(fits)


@pytest.mark.skipif(np.finfo(np.longdouble).eps > 1e-18,
                    reason="the exact sums need NumPy's extended precision (x86)")
def test_the_loss_sum_from_the_scatter_is_within_its_bound_on_hostile_columns():
    """Columns whose means are up to 1e9 times their spread, targets offset by up to 1e8 and
    residuals down to 1e-12 of them (the quadratic form's cancellation), weighted or not, in
    1 to 5 chunks: ``L`` from the merged scatter is within the bound ``E`` of the losses'
    sum over the rows in extended precision, for the start ``squared_start`` gives."""
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(60):
        n, p, k = int(rng.integers(5, 800)), int(rng.integers(1, 5)), int(rng.integers(1, 6))
        spread = 10.0 ** rng.uniform(-4, 4, size=p)
        X = rng.normal(size=(n, p)) * spread + 10.0 ** rng.uniform(-2, 9, size=p)
        y = (X @ rng.normal(size=p) / spread.max() + 10.0 ** rng.uniform(-12, 1)
             * rng.normal(size=n) + 10.0 ** rng.uniform(-2, 8))
        w = None if rng.uniform() < 0.5 else rng.uniform(0.0, 2.0, size=n)
        parts = [chunk_scatter(X[i], y[i], None if w is None else w[i])
                 for i in np.array_split(np.arange(n), k)]
        scatter = parts[0]
        for part in parts[1:]:
            scatter = combine_moments(scatter, part)
        scaled = standardization((scatter[0], scatter[1][:p], np.diag(scatter[2])[:p]), True)
        lam2 = 10.0 ** rng.uniform(-6, 0)
        lam1 = 0.0 if rng.uniform() < 0.5 else 10.0 ** rng.uniform(-6, -1)
        start = squared_start(scatter, scaled, 1.0, lam2, n, lam1=lam1)
        found = start and _scatter_gap.scatter_gap(
            scatter, scaled, 1.0, start["start_x"], lam1, lam2, n,
            chunk_rows=-(-n // k), n_chunks=k)
        if not found:
            continue
        L, bound = found
        x = np.asarray(start["start_x"], dtype=np.longdouble)
        A = ((X.astype(np.longdouble) - np.asarray(scaled["x_shift"], dtype=np.longdouble))
             / np.asarray(scaled["x_scale"], dtype=np.longdouble))
        r = A @ x[:p] + x[p] - y.astype(np.longdouble)
        weights = np.ones(n, dtype=np.longdouble) if w is None else w.astype(np.longdouble)
        exact = 0.5 * np.sum(weights * r * r)
        assert abs(np.longdouble(L) - exact) <= bound, (n, p, k, L, float(exact), bound)
        checked += 1
    assert checked >= 40


def test_the_chunks_scatters_are_merged_in_a_tree_of_a_few_at_a_time(monkeypatch):
    """20 chunks: their scatter matrices are merged 8 at a time (3 merges, then 1), never
    all at once, and the merged scatter is the scatter of all the rows."""
    from ooc_kernels.families.dspdc import _setup_pass, _squared_start as sq

    X, y, _ = _data(n=2000, seed=3)
    merges, seen = [], []
    real_merge, real_start = _setup_pass._merge_scatters, sq.squared_start

    def merge(*parts):
        merges.append(len(parts))
        return real_merge(*parts)

    def start(scatter, *args, **kwargs):
        seen.append(scatter)
        return real_start(scatter, *args, **kwargs)

    monkeypatch.setattr(_setup_pass, "_merge_scatters", merge)
    monkeypatch.setattr(sq, "squared_start", start)
    ok.DSPDCRegressor(alpha=1e-2, tol=1e-8, scheduler="sync", random_state=0,
                      progress=False).fit(da.from_array(X, chunks=(100, X.shape[1])),
                                          da.from_array(y, chunks=100))
    assert sorted(merges) == [3, 4, 8, 8]        # 8 + 8 + 4 chunks, then the 3 merged
    (W, mean, M2), (W0, mean0, M20) = seen[0], chunk_scatter(X, y, None)
    assert W == W0
    np.testing.assert_allclose(mean, mean0, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(M2, M20, rtol=1e-11, atol=1e-9)


def test_the_squared_loss_starts_above_the_newton_limit_and_the_logistic_loss_by_its_rows():
    """150 columns (151 with the intercept's): above the logistic loss's Newton limit for
    any rows and under the squared loss's, in memory and out of core; the ridge start is the
    closed-form solution of the standardized problem.  The logistic loss starts there from
    rows few per column (``_logistic_start.newton_applies``), out of core too."""
    from ooc_kernels.families.dspdc._logistic_start import NEWTON_MAX_FEATURES
    from ooc_kernels.families.dspdc._squared_start import START_MAX_FEATURES

    assert NEWTON_MAX_FEATURES < 151 <= START_MAX_FEATURES
    rng = np.random.default_rng(4)
    X = rng.normal(size=(600, 150)) * rng.uniform(0.5, 2.0, size=150)
    y = X @ rng.normal(size=150) / 12 + rng.normal(size=600)
    kw = dict(alpha=1e-2, tol=1e-6, max_iter=3, scheduler="sync", random_state=0,
              progress=False)
    for lazy in (False, True):
        args = (da.from_array(X, chunks=(200, 150)), da.from_array(y, chunks=200)) if lazy \
            else (X, y)
        reg = ok.DSPDCRegressor(**kw).fit(*args)
        assert reg._config.start_x is not None and reg.n_iter_ == 1
        A = (X - X.mean(axis=0)) / X.std(axis=0)
        A = np.column_stack([A, np.ones(600)])
        exact = np.linalg.solve(A.T @ A / 600 + 1e-2 * np.eye(151),
                                A.T @ (y - y.mean()) / 600)   # the targets less their mean
        np.testing.assert_allclose(reg._config.start_x, exact, rtol=1e-8, atol=1e-10)
    labels = (y > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = ok.DSPDCClassifier(**kw).fit(da.from_array(X, chunks=(200, 150)),
                                           da.from_array(labels, chunks=200))
    assert clf._config.start_x is not None     # 600 rows: at most 16 per column
