"""How the DSG tasks of one round share block ids and how their local models are combined
(issue 7, items 1 and 3): no feature seed is used twice, every trained block is part of the
model, and the round's local models are weighted by the rows they trained on."""

import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.parallel.engine import RoundInfo
from ooc_kernels.solvers.dsg import DSGAlgorithm

PARAMS = dict(bandwidth=1.0, alpha=1e-3, n_features=4096, block_size=8, batch_size=5,
              eta0=1.0, t0=1.0, learning_rate="inverse", random_state=0, scheduler="sync",
              chunk_size=20, dtype="float64")
# These tests check how rounds combine, with hand-set step sizes (outside the theorems'
# range: the StepSizeWarning that says so is expected).
pytestmark = pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")


def _regression(n, seed=0, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, np.sin(X[:, 0]) + 0.5 * X[:, 1]


@pytest.fixture
def opened(monkeypatch):
    """Records the block ids every chunk task opens."""
    seen = []
    original = DSGAlgorithm.chunk_step

    def recording(self, state, batch, task):
        delta = original(self, state, batch, task)
        seen.append([int(b) for b in delta.block_ids])
        return delta

    monkeypatch.setattr(DSGAlgorithm, "chunk_step", recording)
    return seen


def test_skipped_rows_with_k2_never_reuse_a_seed_nor_drop_a_block(opened):
    X, y = _regression(120)
    X[[0, 3, 7, 8, 11, 15]] = np.nan              # six invalid rows in chunk 0
    reg = ok.DSGRegressor(max_iter=3, tol=None, chunks_per_round=2, on_invalid="skip",
                          **PARAMS).fit(X, y)
    ids = [b for task in opened for b in task]
    assert len(ids) == len(set(ids)), "a block id (feature seed) was opened twice"
    state = reg._state
    assert max(ids) < state.n_blocks_used           # every opened block is in the model
    assert not state.coef[state.n_blocks_used:].any()   # nothing trained beyond it
    assert reg.n_samples_skipped_ == 18 and reg.n_samples_seen_ == 3 * 114


def test_a_task_without_valid_rows_does_not_dilute_the_round():
    """K = 2 over [valid chunk, all-NaN chunk] equals K = 1 over the valid chunk alone."""
    X, y = _regression(40, seed=1)
    bad = X.copy()
    bad[20:] = np.nan
    params = dict(PARAMS, shuffle=False, max_iter=1, tol=None)
    two = ok.DSGRegressor(chunks_per_round=2, on_invalid="skip", **params).fit(bad, y)
    one = ok.DSGRegressor(chunks_per_round=1, **params).fit(X[:20], y[:20])
    assert two.n_samples_skipped_ == 20
    np.testing.assert_array_equal(two._state.coef, one._state.coef)
    assert two.n_iter_ == one.n_iter_


@pytest.mark.parametrize("sizes, eta0", [((20, 5), 1.0), ((7, 20, 13), 20.0),
                                         ((60, 55), 20.0), ((60, 55), 1.0)])
def test_a_round_adds_the_local_increments_with_the_mixing_weight(sizes, eta0):
    """Issue 11: the next model is ``x + w (S - x)``, ``S`` the sequential algorithm over
    the round's steps with each task's gradients taken at its own local model.  Each local
    run is computed alone (as a K = 1 task with the step counter and block ids the round
    gave it), ``S`` is composed here from the step factors, and ``w`` is the formula of
    docs/algorithms/dsg_rounds.md.  (60, 55) reaches the full phase (20 blocks)."""
    import math
    from dataclasses import replace

    from ooc_kernels.solvers.dsg import step_sizes

    X, y = _regression(300, seed=2)
    params = dict(PARAMS, n_features=160, average=True, eta0=eta0, t0=10.0)  # 20 blocks
    reg = ok.DSGRegressor(max_iter=1, tol=None, **params).fit(X[:60], y[:60])
    cfg = reg._config
    alg = DSGAlgorithm(cfg)
    state = reg._state
    bounds = np.concatenate([[60], 60 + np.cumsum(sizes)])
    info = RoundInfo(epoch=1, round=0, groups=tuple((i,) for i in range(len(sizes))),
                     sizes=tuple((n,) for n in sizes), seed=reg._data_seed)
    tasks = alg.make_tasks(state, info)
    steps = [math.ceil(n / cfg.batch_size) for n in sizes]
    assert [t.t_start for t in tasks] == list(state.n_iter + np.cumsum([0] + steps[:-1]))
    # each task alone, as the only task of its round, from the same state
    local = [alg.apply(state, alg.chunk_step(state, {"X": X[a:b], "y": y[a:b]},
                                              replace(t, n_tasks=1, mix=1.0)), info)
             for a, b, t in zip(bounds[:-1], bounds[1:], tasks)]
    x, avg, k0 = state.coef, state.avg, state.n_avg
    S, sums, n_avg = x.copy(), np.zeros_like(x), 0
    for t, n_k, loc in zip(tasks, steps, local):
        ts = t.t_start + 1 + np.arange(n_k)
        factors = 1 - step_sizes(cfg, ts) * cfg.alpha
        d = np.prod(factors)
        increment = loc.coef - x * d                       # the task's gradients
        a_k = np.cumprod(factors).sum()                    # every step is averaged
        task_sums = loc.avg * loc.n_avg - avg * k0 - x * a_k
        sums = sums + S * a_k + task_sums                  # its iterates, from S so far
        S = S * d + increment
        n_avg += loc.n_avg - k0
    gammas = step_sizes(cfg, state.n_iter + 1 + np.arange(max(steps)))
    e = np.prod(1 - gammas * (cfg.curvature + cfg.alpha))
    w = min(1.0, max(1 / len(sizes), (1 + abs(e)) / (len(sizes) * (1 - e))))
    deltas = [alg.chunk_step(state, {"X": X[a:b], "y": y[a:b]}, t)
                         for a, b, t in zip(bounds[:-1], bounds[1:], tasks)]
    combined = deltas[0]
    for d in deltas[1:]:
        combined = alg.combine(combined, d)
    got = alg.apply(state, combined, info)
    np.testing.assert_allclose(got.coef, x + w * (S - x), rtol=1e-9, atol=1e-12)
    expected_avg = (avg * k0 + n_avg * (1 - w) * x + w * sums) / (k0 + n_avg)
    np.testing.assert_allclose(got.avg, expected_avg, rtol=1e-9, atol=1e-12)
    assert got.n_iter == state.n_iter + sum(steps)
    assert got.n_samples_seen == state.n_samples_seen + sum(sizes)
    assert 1 / len(sizes) <= w <= 1


def test_combine_is_associative_and_no_work_is_its_identity():
    X, y = _regression(100, seed=3)
    reg = ok.DSGRegressor(max_iter=1, tol=None, **PARAMS).fit(X[:40], y[:40])
    alg = DSGAlgorithm(reg._config)
    state = reg._state
    info = RoundInfo(epoch=1, round=0, groups=((0,), (1,), (2,), (3,)),
                     sizes=((20,), (15,), (5,), (1,)), seed=reg._data_seed)
    t = alg.make_tasks(state, info)
    empty = np.empty((0, X.shape[1]))
    a = alg.chunk_step(state, {"X": X[40:60], "y": y[40:60]}, t[0])
    b = alg.chunk_step(state, {"X": X[60:75], "y": y[60:75]}, t[1])
    c = alg.chunk_step(state, {"X": X[75:80], "y": y[75:80]}, t[2])
    nothing = alg.chunk_step(state, {"X": empty, "y": np.empty(0)}, t[3])
    left = alg.apply(state, alg.combine(alg.combine(a, b), c), info)
    right = alg.apply(state, alg.combine(a, alg.combine(b, c)), info)
    np.testing.assert_allclose(left.coef, right.coef, rtol=1e-12, atol=1e-15)
    for with_nothing in (alg.combine(a, nothing), alg.combine(nothing, a)):
        np.testing.assert_array_equal(alg.apply(state, with_nothing, info).coef,
                                      alg.apply(state, a, info).coef)
    assert alg.apply(state, nothing, info).coef is not state.coef
    np.testing.assert_array_equal(alg.apply(state, nothing, info).coef, state.coef)


def test_a_group_task_mixes_its_rows_in_place_with_the_same_result():
    """A task over a group of chunks gets a concatenation of its own and permutes it in
    place; a read-only view of the same rows (copied instead) gives the same delta, and the
    caller's chunk arrays are never modified."""
    X, y = _regression(90, seed=4)
    reg = ok.DSGRegressor(max_iter=1, tol=None, **PARAMS).fit(X[:30], y[:30])
    alg = DSGAlgorithm(reg._config)
    info = RoundInfo(epoch=1, round=0, groups=((0, 1, 2),), sizes=((20, 20, 20),),
                     seed=reg._data_seed)
    (task,) = alg.make_tasks(reg._state, info)
    owned = np.concatenate([X[30:50], X[50:70], X[70:90]])
    view = owned.copy()
    view.setflags(write=False)
    before = X.copy()
    a = alg.chunk_step(reg._state, {"X": owned, "y": y[30:90]}, task)
    b = alg.chunk_step(reg._state, {"X": view, "y": y[30:90]}, task)
    np.testing.assert_array_equal(a.coefs, b.coefs)
    assert a.decay == b.decay and a.weight == b.weight == 60
    assert not np.array_equal(owned, view)          # mixed in place...
    np.testing.assert_array_equal(np.sort(owned, axis=0), np.sort(view, axis=0))
    np.testing.assert_array_equal(X, before)        # ...the caller's data untouched


def test_invalid_value_in_a_group_names_its_chunk_and_row():
    from ooc_kernels.exceptions import InvalidDataError

    X, y = _regression(60, seed=5)
    X[47, 1] = np.inf                       # chunk 2 (rows 40..59), row 7
    Xd, yd = da.from_array(X, chunks=(20, 3)), da.from_array(y, chunks=20)
    with pytest.raises(InvalidDataError, match=r"chunk 2, row 7, feature 1"):
        ok.DSGRegressor(max_iter=1, tol=None, shuffle_chunks=3, **PARAMS).fit(Xd, yd)
