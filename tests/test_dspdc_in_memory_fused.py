"""DSPDC's fused in-memory tasks (``families/dspdc/_memory_task.py``, ``kernels_memory.py``):
the iterations on the rows held (``row_map``) equal those on the gathered rows bit for bit,
the one pass after them equals its NumPy twin, a fit gives the out-of-core model to rounding
(ridge, elastic net, logistic, smoothed hinge; weighted rows; with and without intercept),
and a fit on NumPy input computes no Dask graph at all."""

from __future__ import annotations

import dask
import dask.array as da
import dask.base
import dask.local
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dspdc import _memory_task
from ooc_kernels.families.dspdc._local import task_uniform_blocks
from ooc_kernels.families.dspdc.kernels import _all_columns_one_row, dspdc_dense_iterations
from ooc_kernels._jit.losses import W_HIGH, W_LOW, dual_prox, loss_conjugate
from ooc_kernels.families.dspdc.kernels_memory import (
    logistic_dual_step,
    logistic_dual_step_ref,
    margins_loss_sum,
    margins_loss_sum_ref,
    row_conjugates,
    row_conjugates_ref,
    rows_loss_sum,
    rows_loss_sum_ref,
    task_sweep,
    task_sweep_ref,
    visits_once,
    visits_once_ref,
)
from ooc_kernels.losses.reference import loss_conjugate_ref

LOSSES = {"squared": 0, "logistic": 2, "smoothed_hinge": 4}


def _rows(seed, n=40, p=6, loss=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, p))
    b = A @ rng.normal(size=p) if loss == 0 else np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return rng, A, b


def _duals(rng, b, loss):
    """Duals inside every loss's domain: ``b y`` in ``(-1, 0)`` for the classification
    losses."""
    if loss == 0:
        return rng.normal(size=len(b))
    return -b * rng.uniform(0.05, 0.95, size=len(b))


@pytest.mark.parametrize("loss", sorted(LOSSES.values()))
@pytest.mark.parametrize("lam1", [0.0, 0.03])
@pytest.mark.parametrize("weighted", [False, True])
def test_iterations_on_mapped_rows_equal_those_on_the_gathered_rows(loss, lam1, weighted):
    """The all-columns kernel with ``row_map`` on the whole rows, against the public kernel
    on ``A[row_map]`` gathered (with their labels, duals and weights): the same duals,
    iterate, extrapolation and ``A^T y``, bit for bit, with a tilt of the regularizer."""
    rng, A, b = _rows(1 + loss, loss=loss)
    row_map = np.concatenate([np.arange(25, 40), np.arange(5, 15)]).astype(np.int64)
    weights = rng.uniform(0.0, 2.0, size=len(A)) if weighted else None
    weights = None if weights is None else np.where(weights < 0.3, 0.0, weights)
    y0, shift = _duals(rng, b, loss), rng.normal(size=A.shape[1])
    start = [rng.normal(size=A.shape[1]) for _ in range(3)]
    u = rng.random((70, 1))
    args = (0.8, 0.2, 1.5, loss, lam1, 0.1)
    y = y0.copy()
    mapped = [s.copy() for s in start]
    _all_columns_one_row(A, b, y, *mapped, len(row_map), u, *args, shift, weights, row_map)
    y_k = y0[row_map].copy()
    gathered = [s.copy() for s in start]
    dspdc_dense_iterations(A[row_map], b[row_map], y_k, *gathered, len(row_map), u,
                           np.zeros((len(u), A.shape[1])), 1, A.shape[1], *args, shift,
                           None if weights is None else weights[row_map])
    np.testing.assert_array_equal(y[row_map], y_k)
    others = np.setdiff1d(np.arange(len(A)), row_map)
    np.testing.assert_array_equal(y[others], y0[others])     # rows outside the task
    for got, want in zip(mapped, gathered):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("loss", sorted(LOSSES.values()))
@pytest.mark.parametrize("lam1", [0.0, 0.03])
@pytest.mark.parametrize("weighted", [False, True])
def test_visits_once_equals_its_numpy_twin_and_the_iterations_then_the_sweep(loss, lam1,
                                                                             weighted):
    """The rows of two chunks visited once in a permutation (two blocks of uniforms, 23 of
    the 25 rows): the NumPy twin's duals, iterates, products, losses and conjugates (to
    rounding), the iterates of the kernel and the sums of the sweep run after it (bit for
    bit, to rounding); the twin refuses uniforms that visit a row twice."""
    rng, A, b = _rows(7 + loss, loss=loss)
    row_map = np.concatenate([np.arange(25, 40), np.arange(5, 15)]).astype(np.int64)
    segment = np.repeat(np.arange(2), [15, 10]).astype(np.int64)
    weights = rng.uniform(0.0, 2.0, size=len(A)) if weighted else None
    weights = None if weights is None else np.where(weights < 0.3, 0.0, weights)
    y0, shift = _duals(rng, b, loss), rng.normal(size=A.shape[1])
    start = [rng.normal(size=A.shape[1]) for _ in range(3)]
    x0 = rng.normal(size=A.shape[1])
    u = ((rng.permutation(25)[:23] + 0.5) / 25)[:, None]
    args = (0.8, 0.2, 1.5, loss, lam1, 0.1, shift, weights, row_map)
    conj0 = np.empty(len(A))
    row_conjugates(y0, b, loss, conj0)
    runs = {}
    for name, fn in (("numba", visits_once), ("numpy", visits_once_ref)):
        y, it, dw, conj = y0.copy(), [v.copy() for v in start], np.zeros((2, 6)), conj0.copy()
        sums = [fn(A, b, y, *it, 25, part, *args, segment, x0, True, dw, conj)
                for part in (u[:9], u[9:])]
        runs[name] = (y, it, dw, conj, np.sum(sums, axis=0))
    (y, it, dw, conj, sums), (y_r, it_r, dw_r, conj_r, sums_r) = runs["numba"], runs["numpy"]
    for got, want in zip([y, *it, dw, conj, sums], [y_r, *it_r, dw_r, conj_r, sums_r]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    y_k, plain = y0.copy(), [v.copy() for v in start]
    _all_columns_one_row(A, b, y_k, *plain, 25, u, *args)
    for got, want in zip([y, *it], [y_k, *plain]):
        np.testing.assert_array_equal(got, want)
    dw_s, conj_s = np.empty((2, 6)), conj0.copy()
    swept = task_sweep(A, row_map, np.array([15, 25]), b, y_k, y0[row_map], weights, x0,
                       True, loss, dw_s, conj_s)
    missed = np.setdiff1d(np.arange(25), np.minimum((u[:, 0] * 25).astype(int), 24))
    unvisited = rows_loss_sum_ref(A[row_map[missed]], b[row_map[missed]],
                                  None if weights is None else weights[row_map[missed]], x0,
                                  loss)
    np.testing.assert_allclose([sums[0] + unvisited, sums[1]], swept, rtol=1e-10)
    np.testing.assert_allclose(dw, dw_s, rtol=1e-10, atol=1e-12)
    if loss == LOSSES["logistic"]:   # from the dual step's t (logistic_dual_step): ~1e-14
        np.testing.assert_allclose(conj, conj_s, rtol=0.0, atol=1e-14)
        assert not np.array_equal(y_k, y0)
    else:
        np.testing.assert_array_equal(conj, conj_s)
    with pytest.raises(ValidationError, match="visit each row at most once"):
        visits_once_ref(A, b, y0.copy(), *[v.copy() for v in start], 25,
                        np.array([[0.1], [0.11]]), *args, segment, x0, True,
                        np.zeros((2, 6)), conj0.copy())


def test_logistic_dual_step_is_the_dual_step_and_its_conjugate():
    """The in-memory logistic step: the dual of ``dual_prox`` bit for bit, the conjugate at
    it within 1e-14 of ``loss_conjugate``'s two logarithms (both forms of the one-log
    formula, ``w`` above and below -1/2, duals clipped to both ends), the ``t`` of the new
    dual (NaN where clipped); a next step started from that ``t`` reaches the root of the
    step started from the dual; and its NumPy twin."""
    rng = np.random.default_rng(3)
    k = 400
    b = np.where(rng.random(k) < 0.5, -1.0, 1.0)
    c = rng.normal(scale=4.0, size=k)
    y = -b * rng.random(k)
    y[:50] = 0.0
    cases = [(ci, yi, bi, sigma, n) for sigma, n in [(1.0, 50.0), (0.3, 2.0), (50.0, 1e4)]
             for ci, yi, bi in zip(c, y, b)] + [(800.0, -0.5, 1.0, 1e5, 1.0),
                                                (-1e4, 0.0, 1.0, 1e3, 1.0)]
    w, kept = [], 0
    for ci, yi, bi, sigma, n in cases:
        beta, conj, t = logistic_dual_step(ci, yi, bi, sigma, n, np.nan)
        assert beta == dual_prox(2, ci, yi, bi, sigma, n)
        assert abs(conj - loss_conjugate(2, beta, bi)) <= 1e-14
        w.append(bi * beta)
        if w[-1] in (-W_HIGH, -W_LOW):
            assert np.isnan(t)
            continue
        # w = -sigmoid(-t) to the last step's second-order update: h^3 / 6 <= 1e-13 |t| / 6
        assert abs(-1.0 / (1.0 + np.exp(t)) - w[-1]) <= 3e-14 * max(1.0, abs(t)) * abs(w[-1])
        c_next = ci + rng.normal(scale=0.5)      # the row's next visit, from the kept t
        again, conj2, _ = logistic_dual_step(c_next, beta, bi, sigma, n, t)
        fresh = dual_prox(2, c_next, beta, bi, sigma, n)
        assert abs(again - fresh) <= 1e-12 * abs(fresh)
        assert abs(conj2 - loss_conjugate(2, again, bi)) <= 1e-14
        kept += 1
    assert kept > 0.9 * len(cases)
    assert any(-0.5 < v < -1e-3 for v in w) and any(-0.9 > v > -W_HIGH for v in w)
    assert max(w) == -W_LOW and min(w) == -W_HIGH              # both ends: clipped duals
    for sigma, n in [(1.0, 50.0), (50.0, 1e4)]:
        got = np.array([logistic_dual_step(ci, yi, bi, sigma, n, np.nan)
                        for ci, yi, bi in zip(c, y, b)])
        want = np.array(logistic_dual_step_ref(c, y, b, sigma, n, np.nan)).T
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_visits_once_keeps_the_logistic_steps_t():
    """Four passes of a task's rows in permutations, each after the first starting its
    logistic dual steps from the ``t`` the one before kept: the duals and iterates of the
    steps started from the duals (``tdual=None``, the kernel's bit for bit) to rounding (and
    not bit for bit: the kept ``t`` are read), the NumPy twin's duals and ``t`` to rounding,
    and no ``t`` kept outside the task's rows."""
    rng, A, b = _rows(11, loss=2)
    row_map = np.concatenate([np.arange(25, 40), np.arange(5, 15)]).astype(np.int64)
    segment = np.repeat(np.arange(2), [15, 10]).astype(np.int64)
    start = [rng.normal(size=A.shape[1]) for _ in range(3)]
    x0 = rng.normal(size=A.shape[1])
    args = (0.8, 0.2, 1.5, 2, 0.0, 0.1, None, None, row_map, segment, x0, True)
    runs = {}
    for name, fn, tdual in (("kept", visits_once, np.full(len(A), np.nan)),
                            ("fresh", visits_once, None),
                            ("numpy", visits_once_ref, np.full(len(A), np.nan))):
        y, it = np.zeros(len(A)), [v.copy() for v in start]
        conj, dw = np.zeros(len(A)), np.zeros((2, 6))
        for r in range(4):
            u = ((np.random.default_rng(r).permutation(25) + 0.5) / 25)[:, None]
            fn(A, b, y, *it, 25, u, *args, dw, conj, tdual)
        runs[name] = (y, it, tdual)
    (y, it, t), (y_f, it_f, _), (y_r, it_r, t_r) = runs["kept"], runs["fresh"], runs["numpy"]
    assert not np.array_equal(y, y_f)             # the kept t's were used: other rounding
    for got, want in zip([y, *it], [y_f, *it_f]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(y, y_r, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(t[row_map], t_r[row_map], rtol=1e-10)
    assert np.isnan(np.delete(t, row_map)).all() and not np.isnan(t[row_map]).any()


@pytest.mark.parametrize("loss", sorted(LOSSES.values()))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("with_loss", [False, True])
def test_task_sweep_equals_its_numpy_twin(loss, weighted, with_loss):
    """The pass after a task's iterations (per-chunk ``A_c^T (w * dy)``, the losses at the
    epoch's first iterate, the change of ``sum w phi*``) against its plain-NumPy twin, on a
    task of three chunks (rows of weight 0 included)."""
    rng, A, b = _rows(7 + loss, n=50, loss=loss)
    row_map = np.concatenate([np.arange(30, 42), np.arange(0, 9), np.arange(12, 20)])
    seg_ends = np.array([12, 21, 29])
    y_old = _duals(rng, b, loss)[row_map]
    y = _duals(rng, b, loss)
    untouched = row_map[::3]
    y[untouched] = y_old[::3]           # rows the iterations did not visit
    weights = np.where(rng.random(len(A)) < 0.2, 0.0, rng.uniform(0.1, 3, len(A))) \
        if weighted else None
    x0 = rng.normal(size=A.shape[1])
    got, want = np.full((3, A.shape[1]), np.nan), np.zeros((3, A.shape[1]))
    kept = np.full(len(A), np.nan)      # the conjugates kept: of y_old on the task's rows
    kept[row_map] = loss_conjugate_ref(loss, y_old, b[row_map])
    kept_ref = kept.copy()
    loss_got, conj_got = task_sweep(A, row_map.astype(np.int64), seg_ends, b, y, y_old,
                                    weights, x0, with_loss, loss, got, kept)
    loss_want, conj_want = task_sweep_ref(A, row_map, seg_ends, b, y, y_old, weights, x0,
                                          with_loss, loss, want, kept_ref)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # after the pass: the conjugates of the new duals on the task's rows, the rest untouched
    np.testing.assert_allclose(kept[row_map], loss_conjugate_ref(loss, y[row_map], b[row_map]),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kept_ref[row_map], kept[row_map], rtol=1e-12, atol=1e-12)
    others = np.setdiff1d(np.arange(len(A)), row_map)
    assert np.isnan(kept[others]).all() and np.isnan(kept_ref[others]).all()
    assert loss_got == pytest.approx(loss_want, rel=1e-12, abs=1e-12)
    assert conj_got == pytest.approx(conj_want, rel=1e-12, abs=1e-12)
    if with_loss:
        assert loss_want > 0
    else:
        assert loss_got == 0.0


@pytest.mark.parametrize("loss", sorted(LOSSES.values()))
def test_row_conjugates_equal_their_numpy_twin(loss):
    """The conjugates a fit starts from (at zero duals, and inside the domain)."""
    rng, _, b = _rows(11 + loss, n=30, loss=loss)
    for y in (np.zeros(len(b)), _duals(rng, b, loss)):
        got, want = np.full(len(b), np.nan), np.full(len(b), np.nan)
        row_conjugates(y, b, loss, got)
        row_conjugates_ref(y, b, loss, want)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got, loss_conjugate_ref(loss, y, b), rtol=1e-12,
                                   atol=1e-12)


@pytest.mark.parametrize("loss", sorted(LOSSES.values()))
@pytest.mark.parametrize("weighted", [False, True])
def test_rows_loss_sum_equals_its_numpy_twin(loss, weighted):
    rng, A, b = _rows(3, loss=loss)
    weights = np.where(rng.random(len(A)) < 0.2, 0.0, 2.0) if weighted else None
    x = rng.normal(size=A.shape[1])
    assert rows_loss_sum(A, b, weights, x, loss) == pytest.approx(
        rows_loss_sum_ref(A, b, weights, x, loss), rel=1e-12)
    z = A @ x
    assert margins_loss_sum(z, b, weights, loss) == pytest.approx(
        margins_loss_sum_ref(z, b, weights, loss), rel=1e-12)
    assert margins_loss_sum(z, b, weights, loss) == pytest.approx(
        rows_loss_sum(A, b, weights, x, loss), rel=1e-12)


def test_uniforms_into_a_buffer_are_the_task_stream():
    """``columns=False`` and ``out``: the same row uniforms, block after block, and no
    block of column zeros."""
    from types import SimpleNamespace

    cfg = SimpleNamespace(local_passes=2.0, q=4, n_features=4)
    plain = [r.copy() for r, c in task_uniform_blocks(cfg, 3, 1, 2, 0, 37, 1)]
    buffer = np.empty((74, 1))
    fused = [(r.copy(), c) for r, c in task_uniform_blocks(cfg, 3, 1, 2, 0, 37, 1,
                                                            columns=False, out=buffer)]
    assert [c for _, c in fused] == [None] * len(plain)
    for a, (b, _) in zip(plain, fused):
        np.testing.assert_array_equal(a, b)


def _problem(classify, n=480, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * [1.0, 5.0, 0.2, 1.0, 2.0] + 1.0
    s = X @ rng.normal(size=p) + rng.normal(size=n)
    y = np.where(s > np.median(s), 1, 0) if classify else s
    return X, y, np.where(rng.random(n) < 0.1, 0.0, rng.uniform(0.2, 3.0, size=n))


CASES = {   # name: (estimator, parameters, classification)
    "ridge": (ok.DSPDCRegressor, {}, False),
    "elastic_net": (ok.DSPDCRegressor, {"l1_ratio": 0.5}, False),
    "logistic": (ok.DSPDCClassifier, {}, True),
    "smoothed_hinge": (ok.DSPDCClassifier, {"loss": "smoothed_hinge",
                                            "class_weight": {0: 2.0, 1: 0.5}}, True),
}


@pytest.fixture
def fused_tasks(monkeypatch):
    """Counts the fused tasks run."""
    calls = []
    run = _memory_task.MemoryTasks.run

    def counted(self, *args, **kwargs):
        calls.append(1)
        return run(self, *args, **kwargs)

    monkeypatch.setattr(_memory_task.MemoryTasks, "run", counted)
    return calls


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("weighted, fit_intercept, sampling", [
    (False, True, "permutation"), (True, True, "uniform"), (True, False, "permutation")])
def test_fused_fit_gives_the_out_of_core_model_to_rounding(name, weighted, fit_intercept,
                                                          sampling, fused_tasks, monkeypatch):
    """NumPy input (the fused tasks) against the same data as Dask arrays (the out-of-core
    tasks and their duals store), several chunks per task and several tasks per epoch, the
    rows sampled independently or in permutations: the same epochs, passes and step boosts;
    coefficients, primal and dual values equal up to the order of the sums (relative
    1e-9).  Both from the zero start (the squared loss's ridge start, out of core
    ``families/dspdc/_squared_start.py`` and in memory ``_memory_start.py``, turned off)."""
    from ooc_kernels.families.dspdc import _squared_start

    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    Est, params, classify = CASES[name]
    X, y, w = _problem(classify)
    sw = w if weighted else None
    common = dict(params, alpha=1e-3, tol=1e-5, max_iter=80, chunk_size=80,
                  shuffle_chunks=2, random_state=4, progress=False, sampling=sampling,
                  fit_intercept=fit_intercept, local_passes=1.0)   # the same in both paths
    mem = Est(**common).fit(X, y, sample_weight=sw)
    assert len(fused_tasks) == 3 * mem.n_iter_ > 0     # 6 chunks in groups of 2
    # out of core the task that completes a certified start skips its iterations (the
    # later duals differ); the fused tasks do not: every task iterates in both here
    from ooc_kernels.families.dspdc.solver import DSPDCAlgorithm

    monkeypatch.setattr(DSPDCAlgorithm, "certifies_start", lambda *args: False)
    ooc = Est(**common).fit(da.from_array(X, chunks=(80, -1)), da.from_array(y, chunks=80),
                            sample_weight=None if sw is None else da.from_array(sw, 80))
    assert len(fused_tasks) == 3 * mem.n_iter_          # none out of core
    np.testing.assert_allclose(mem.coef_, ooc.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(mem.intercept_, ooc.intercept_, rtol=1e-9, atol=1e-12)
    assert mem.n_iter_ == ooc.n_iter_ and mem.stop_reason_[:4] == ooc.stop_reason_[:4]
    assert len(mem.gap_history_) == len(ooc.gap_history_) >= 3
    for a, b in zip(mem.gap_history_, ooc.gap_history_):
        assert (a["iterations"], a["passes"], a["step_boost"]) == \
            (b["iterations"], b["passes"], b["step_boost"])
        assert a["primal"] == pytest.approx(b["primal"], rel=1e-9)
        assert a["dual"] == pytest.approx(b["dual"], rel=1e-9)


@pytest.fixture
def no_dask_compute(monkeypatch):
    """Every way of computing a Dask graph raises: ``dask.compute``, a collection's
    ``compute`` and the local schedulers."""
    def refuse(*args, **kwargs):
        raise AssertionError("a Dask graph was computed")

    for target, attr in ((dask, "compute"), (dask.base, "compute"),
                         (dask.local, "get_async"), (dask, "persist"),
                         (dask.base, "persist")):
        monkeypatch.setattr(target, attr, refuse)
    with pytest.raises(AssertionError, match="a Dask graph was computed"):
        da.ones(3).sum().compute()


@pytest.mark.parametrize("name", ["ridge", "logistic", "smoothed_hinge"])
@pytest.mark.parametrize("m", [1, 2])
def test_in_memory_fit_computes_no_dask_graph(name, m, no_dask_compute):
    """Set-up (classes, weights' sums, column moments, ``Lambda``), rounds and gap checks
    of a fit on NumPy input run without any Dask graph, fused (``m = 1``) or not."""
    Est, params, classify = CASES[name]
    X, y, w = _problem(classify, n=300)
    est = Est(**params, alpha=0.1, tol=1e-4, max_iter=40, chunk_size=60, m=m,
              random_state=0, progress=False).fit(X, y, sample_weight=w)
    assert est._direct_fit and est.stop_reason_.startswith("tol")


def test_pandas_input_uses_the_same_rows_without_dask(no_dask_compute):
    """A DataFrame and a Series are held in memory too: the same model as their arrays."""
    pd = pytest.importorskip("pandas")
    X, y, _ = _problem(False, n=200)
    kw = dict(alpha=1e-2, tol=1e-6, chunk_size=50, random_state=1, progress=False)
    frame = ok.DSPDCRegressor(**kw).fit(pd.DataFrame(X, columns=list("abcde")),
                                        pd.Series(y))
    plain = ok.DSPDCRegressor(**kw).fit(X, y)
    np.testing.assert_array_equal(frame.coef_, plain.coef_)
    assert frame.intercept_ == plain.intercept_
