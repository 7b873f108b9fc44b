"""How the DSG tasks of one round share block ids and how their local models are combined:
no feature seed is used twice, every trained block is part of the model, a round with small
steps is the sequential run to first order in the step, and a round whose tasks overshoot
averages their local models."""

import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.parallel.engine import RoundInfo
from ooc_kernels.families.dsg.solver import DSGAlgorithm

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
    # the six rows, once; their visits are not in the 3 epochs' n_samples_seen_
    assert reg.n_samples_skipped_ == 6 and reg.n_samples_seen_ == 3 * 114


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


@pytest.mark.parametrize("n_rows, k, n_features", [(40, 2, 4096), (60, 3, 4096),
                                                    (120, 2, 160)])
def test_a_round_with_small_steps_is_the_sequential_run_to_first_order(n_rows, k,
                                                                     n_features):
    """With small steps a round of K tasks adds their increments (the weight reaches 1) and
    differs from the sequential K = 1 run over the same chunks in the same order only by
    the staleness of each task's gradients, which is second order in the step: the
    relative difference of the model and of the averaged iterate is about proportional to
    the step, ten times smaller for a ten times smaller step.  (120 rows with 20 blocks
    cross into the full phase.)"""
    X, y = _regression(n_rows, seed=2)
    gaps = []
    for eta0 in (1e-3, 1e-4):
        params = dict(PARAMS, n_features=n_features, learning_rate="constant", eta0=eta0,
                      average=True, shuffle=False, max_iter=1, tol=None)
        rounds = ok.DSGRegressor(chunks_per_round=k, **params).fit(X, y)._state
        sequential = ok.DSGRegressor(chunks_per_round=1, **params).fit(X, y)._state
        assert rounds.n_iter == sequential.n_iter == n_rows // PARAMS["batch_size"]
        assert rounds.n_avg == sequential.n_avg == rounds.n_iter
        gaps.append([np.abs(a - b).max() / np.abs(b).max()
                     for a, b in ((rounds.coef, sequential.coef),
                                  (rounds.avg, sequential.avg))])
    gaps = np.asarray(gaps)
    assert (gaps[0] < 1e-2).all() and (gaps[1] < 1e-3).all(), gaps
    np.testing.assert_allclose(gaps[0] / gaps[1], 10.0, rtol=0.05)


def test_a_round_whose_tasks_overshoot_averages_their_local_models():
    """When one task's steps already overshoot along the top eigendirection of the data
    term (here one step per task with gamma lambda = 1.5), the round averages the tasks'
    local models.  Without regularization (alpha = 0) the next model is then exactly the
    mean of the local runs, each computed alone from the same state (as the only task of
    its round, with the step counter and block ids the round gave it), and the averaged
    iterate takes in the round's iterates ``x + (s_j - x) / K``, ``s_j`` the sequential
    composition of the local runs up to step ``j`` (here ``x`` plus the first ``j`` local
    increments)."""
    from dataclasses import replace

    X, y = _regression(80, seed=2)
    params = dict(PARAMS, alpha=0.0, learning_rate="constant", eta0=0.1, average=True,
                  max_iter=1, tol=None)
    reg = ok.DSGRegressor(**params).fit(X[:60], y[:60])
    cfg = replace(reg._config, eta0=1.5 / reg._config.curvature)
    alg = DSGAlgorithm(cfg)
    state = reg._state
    sizes = (5, 4, 5)                               # one batch (batch_size=5) per task
    bounds = np.concatenate([[60], 60 + np.cumsum(sizes)])
    info = RoundInfo(epoch=1, round=0, groups=((0,), (1,), (2,)),
                     sizes=tuple((n,) for n in sizes), seed=reg._data_seed)
    tasks = alg.make_tasks(state, info)
    batches = [{"X": X[a:b], "y": y[a:b]} for a, b in zip(bounds[:-1], bounds[1:])]
    local = [alg.apply(state, alg.chunk_step(state, batch, replace(t, n_tasks=1, mix=1.0)),
                       info).coef for batch, t in zip(batches, tasks)]
    combined = alg.chunk_step(state, batches[0], tasks[0])
    for batch, t in zip(batches[1:], tasks[1:]):
        combined = alg.combine(combined, alg.chunk_step(state, batch, t))
    got = alg.apply(state, combined, info)
    x, k = state.coef, len(sizes)
    np.testing.assert_allclose(got.coef, np.mean(local, axis=0), rtol=1e-12, atol=1e-15)
    composed = [x + sum(loc - x for loc in local[:j + 1]) for j in range(k)]     # s_j
    iterates = [x + (s_j - x) / k for s_j in composed]
    expected = (state.avg * state.n_avg + np.sum(iterates, axis=0)) / (state.n_avg + k)
    np.testing.assert_allclose(got.avg, expected, rtol=1e-12, atol=1e-15)
    assert got.n_avg == state.n_avg + k and got.n_iter == state.n_iter + k


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
