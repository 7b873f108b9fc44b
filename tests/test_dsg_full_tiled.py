"""The DSG full phase under a memory budget: tiled blocks, super-steps in row
space.

The tiled path must give the iterates of the sequential steps: it is checked against the
literal step over all blocks (``dsg_full_update_ref``) and against today's stacked kernel
(``dsg_full_update``) with the package's twin tolerances (float64 ``rtol 1e-12``: rounding
in another order; float32 ``rtol 1e-4``: float32 features and the fast cosine, as every
float32 twin test), for every loss, with and without averaging, with a ragged last batch,
with super-steps of one and of several batches, and with tiles of one block.  Its three
kernels are checked against their numpy twins, the piecewise block generator bit for bit
against the one-shot formula, and its memory with tracemalloc.  The plan follows the
client's budget recorded in ``DSGConfig.feature_budget``, never the cache budget of the
process running the task (the model is bit-identical whatever the workers' budgets).
"""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.families.dsg.kernels_full import (
    dsg_full_update,
    dsg_full_update_ref,
    dsg_superstep,
    dsg_superstep_ref,
    dsg_tile_apply,
    dsg_tile_apply_ref,
    dsg_tile_forward,
    dsg_tile_forward_ref,
)
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.features.cache import BlockCache, default_cache, set_cache_budget
from ooc_kernels.features.blocks import BlockSource, _affine_block, stacked_block_params
from ooc_kernels.features.rbf import BlockWriter, _generate_block_ref, feature_scale
from ooc_kernels.families.dsg._full_phase import FullPhasePlan, full_phase_update, plan_full_phase

TOL = {np.float32: {"rtol": 1e-4, "atol": 1e-5}, np.float64: {"rtol": 1e-12, "atol": 1e-13}}
DTYPES = [np.float32, np.float64]
# (loss_id, C): squared, hinge, logistic (binary), softmax over 3 classes, squared 2 outputs
LOSSES = [(0, 1), (1, 1), (2, 1), (3, 3), (0, 2)]


def _targets(rng, loss_id, n, C, dtype):
    if loss_id == 0:
        Y = rng.normal(size=(n, C))
    elif loss_id in (1, 2):
        Y = rng.choice([-1.0, 1.0], size=(n, C))
    else:
        Y = np.eye(C)[rng.integers(0, C, n)]
    return np.ascontiguousarray(Y, dtype=dtype)


def _problem(dtype, loss_id, C, averaging, n=23, d=5, r=8, b=4, m=6, seed=0):
    rng = np.random.default_rng(seed + 7 * loss_id + C)
    X = np.ascontiguousarray(rng.normal(size=(n, d)), dtype=dtype)
    Y = _targets(rng, loss_id, n, C, dtype)
    sw = rng.uniform(0.5, 1.5, n)
    n_steps = math.ceil(n / b)
    averaged = np.arange(n_steps) >= 2 if averaging else np.zeros(n_steps, dtype=bool)
    steps = (0.8 / np.sqrt(1.0 + np.arange(n_steps)), averaged)
    params = (0.05, b, loss_id, feature_scale(r), 0.0)
    coef = 0.3 * rng.normal(size=(m, r, C))
    avg = 0.3 * rng.normal(size=(m, r, C)) if averaging else np.zeros((0, r, C))
    source = BlockSource(4, d, r, 1.2, dtype)
    W, ph = stacked_block_params(4, np.arange(m), d, r, 1.2, dtype)
    return X, Y, sw, coef, avg, steps, params, source, W, ph


def _assert_same_model(got, ref, dtype):
    np.testing.assert_allclose(got[0], ref[0], **TOL[dtype])
    np.testing.assert_allclose(got[1], ref[1], **TOL[dtype])
    assert got[2] == ref[2]
    assert got[3] == pytest.approx(ref[3], rel=TOL[dtype]["rtol"])
    assert got[4] == pytest.approx(ref[4], rel=1e-12)


# ---------------------------------------------------------------------------------------
# the tiled path against the sequential steps
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("loss_id,C", LOSSES)
@pytest.mark.parametrize("averaging", [False, True])
@pytest.mark.parametrize("batches,tile", [(1, 1), (3, 1), (3, 4), (6, 6)])
def test_tiled_path_gives_the_sequential_iterates(dtype, loss_id, C, averaging, batches,
                                                  tile):
    X, Y, sw, coef, avg, steps, params, source, W, ph = _problem(dtype, loss_id, C,
                                                                 averaging)
    ref = dsg_full_update_ref(X, Y, sw, W, ph, coef, avg, 3, steps, params)
    stacked = dsg_full_update(X, Y, sw, W, ph, coef, avg, 3, steps, params)
    assert np.abs(ref[0] - coef).max() > 1e-2           # the steps changed the model
    if averaging:
        assert np.abs(ref[1] - avg).max() > 1e-2
    plan = FullPhasePlan(False, batches * params[1], tile, 0, 0)
    got = full_phase_update(X, Y, sw, coef.copy(), avg.copy(), 3, steps, params, source,
                            plan=plan)
    _assert_same_model(got, ref, dtype)
    _assert_same_model(got, stacked, dtype)
    twin = full_phase_update(X, Y, sw, coef.copy(), avg.copy(), 3, steps, params, source,
                             plan=plan, kernels="ref")
    _assert_same_model(twin, ref, dtype)


def test_tiled_path_is_not_the_model_before_or_a_wrong_step():
    """The comparison can fail: one step size changed gives another model."""
    X, Y, sw, coef, avg, steps, params, source, W, ph = _problem(np.float64, 2, 1, True)
    plan = FullPhasePlan(False, 3 * params[1], 2, 0, 0)
    got = full_phase_update(X, Y, sw, coef.copy(), avg.copy(), 3, steps, params, source,
                            plan=plan)
    gammas = steps[0].copy()
    gammas[3] *= 1.01
    other = dsg_full_update_ref(X, Y, sw, W, ph, coef, avg, 3, (gammas, steps[1]), params)
    assert np.abs(got[0] - other[0]).max() > 1e-6


def test_tiny_budget_tiles_hold_one_block_and_give_the_same_model():
    X, Y, sw, coef, avg, steps, params, source, W, ph = _problem(np.float64, 0, 1, True)
    m, r, _ = coef.shape
    budget = 3 * source.block_nbytes                   # the blocks do not fit (6 blocks)
    plan = plan_full_phase(budget, m, X.shape[1], r, 1, params[1], len(X), 8,
                           source.writer.scratch_nbytes)
    assert not plan.stacked and plan.tile_blocks == 1
    got = full_phase_update(X, Y, sw, coef.copy(), avg.copy(), 3, steps, params, source,
                            budget=budget)
    ref = dsg_full_update_ref(X, Y, sw, W, ph, coef, avg, 3, steps, params)
    _assert_same_model(got, ref, np.float64)


def test_affine_blocks_in_tiles_match_the_stacked_affine_blocks():
    X, Y, sw, coef, avg, steps, params, _, _, _ = _problem(np.float32, 3, 3, True)
    rng = np.random.default_rng(5)
    d, (m, r, _) = X.shape[1], coef.shape
    affine = (rng.normal(size=d), rng.uniform(0.5, 2.0, d))
    source = BlockSource(4, d, r, 1.2, np.float32, cache=BlockCache(2 * 2**10),
                         affine=affine)
    W, ph = stacked_block_params(4, np.arange(m), d, r, 1.2, np.float32, affine=affine)
    ref = dsg_full_update_ref(X, Y, sw, W, ph, coef, avg, 3, steps, params)
    got = full_phase_update(X, Y, sw, coef.copy(), avg.copy(), 3, steps, params, source,
                            plan=FullPhasePlan(False, 8, 2, 3, 0))
    _assert_same_model(got, ref, np.float32)
    assert len(source.cache) == 3                      # blocks 0, 1, 2 kept; the rest not


# ---------------------------------------------------------------------------------------
# kernels against their twins
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_tile_kernels_match_their_twins(dtype):
    rng = np.random.default_rng(3)
    R, d, r, C, t, b = 11, 5, 8, 3, 3, 4              # batches of 4, 4, 3
    X = np.ascontiguousarray(rng.normal(size=(R, d)), dtype=dtype)
    W, ph = stacked_block_params(2, np.arange(t), d, r, 1.1, dtype)
    coef = rng.normal(size=(t, r, C))
    F0, K = np.zeros((R, C)), np.zeros((R, R))
    F0r, Kr = F0.copy(), K.copy()
    work = (np.empty((R, r), dtype), np.empty((R, C), dtype), np.empty((r, C), dtype),
            np.empty(b * (R - b), dtype))
    dsg_tile_forward(X, W, ph, coef, feature_scale(r), b, F0, K, work)
    dsg_tile_forward_ref(X, W, ph, coef, feature_scale(r), b, F0r, Kr)
    np.testing.assert_allclose(F0, F0r, **TOL[dtype])
    np.testing.assert_allclose(K, Kr, **TOL[dtype])
    assert np.all(K[:b, :] == 0) and np.all(K[b:2 * b, b:] == 0)  # strictly block-lower
    assert np.all(K[b:, :b] != 0)

    Y = _targets(rng, 3, R, C, dtype)
    sw = rng.uniform(0.5, 1.5, R)
    steps = (np.array([0.5, 0.4, 0.3]), np.array([False, True, True]))
    params = (0.1, b, 3, feature_scale(r), 0.0)
    ws = (np.empty((R, C), dtype), np.empty((b, C), dtype), np.empty((R, C)),
          np.empty((R, C)), np.empty((R, C), dtype), np.empty((R, C), dtype))
    out = dsg_superstep(F0, K, Y, sw, steps, params, 7, 2, ws)
    ref = dsg_superstep_ref(F0, K, Y, sw, steps, params, 7, 2, dtype)
    np.testing.assert_allclose(ws[4], ref[0], **TOL[dtype])
    np.testing.assert_allclose(ws[5], ref[1], **TOL[dtype])
    np.testing.assert_allclose(out[:3], ref[2:5], rtol=1e-15)
    assert out[3] == ref[5] == 4
    assert out[4] == pytest.approx(ref[6], rel=TOL[dtype]["rtol"])
    assert abs(out[2]) > 0 and np.abs(ws[5]).max() > 0

    avg = rng.normal(size=(t, r, C))
    c1, a1, c2, a2 = coef.copy(), avg.copy(), coef.copy(), avg.copy()
    dsg_tile_apply(X, W, ph, c1, a1, ws[4], ws[5], out[:3], feature_scale(r),
                   (np.empty((R, r), dtype), np.empty((r, C), dtype)))
    dsg_tile_apply_ref(X, W, ph, c2, a2, ws[4], ws[5], out[:3], feature_scale(r))
    np.testing.assert_allclose(c1, c2, **TOL[dtype])
    np.testing.assert_allclose(a1, a2, **TOL[dtype])
    assert np.abs(c1 - coef).max() > 1e-3


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("d,r", [(276, 256), (3, 5), (7, 3), (1, 1), (129, 130)])
def test_block_writer_is_bit_identical_to_the_one_shot_formula(dtype, d, r):
    rng = np.random.default_rng(d)
    affine = (rng.normal(size=d), rng.uniform(0.5, 2.0, d))
    for aff in (None, affine):
        writer = BlockWriter(9, d, r, 1.3, dtype, affine=aff)
        W, ph = np.empty((d, r), dtype), np.empty(r, dtype)
        for bid in (0, 5, 2**40):
            writer.write(bid, W, ph)
            W2, ph2 = _generate_block_ref(9, bid, d, r, 1.3, np.dtype(dtype))
            if aff is not None:
                W2, ph2 = _affine_block((W2, ph2), aff, np.dtype(dtype))
            assert np.array_equal(W, W2) and np.array_equal(ph, ph2)


# ---------------------------------------------------------------------------------------
# memory: one budget for the cache and the task
# ---------------------------------------------------------------------------------------
_MEMORY_SCRIPT = """
import json, sys, tracemalloc
import numpy as np
from ooc_kernels.features.cache import BlockCache
from ooc_kernels.features.blocks import BlockSource
from ooc_kernels.features.rbf import feature_scale
from ooc_kernels.families.dsg._full_phase import full_phase_update, plan_full_phase

rng = np.random.default_rng(0)
n, d, r, m, b, C = 96, 24, 16, 512, 16, 1            # blocks: 512 * 25 * 16 * 8 = 1.6 MB
X, Y, sw = rng.normal(size=(n, d)), rng.normal(size=(n, C)), np.ones(n)
steps = (np.full(n // b, 0.5), np.ones(n // b, dtype=bool))
params = (0.01, b, 0, feature_scale(r), 0.0)
coef = 0.1 * rng.normal(size=(m, r, C))
budget = int(sys.argv[1])
cache = BlockCache(budget)
source = BlockSource(1, d, r, 1.0, np.float64, cache=cache)
plan = plan_full_phase(budget, m, d, r, C, b, n, 8, source.writer.scratch_nbytes)
full_phase_update(X, Y, sw, coef.copy(), coef.copy(), 0, steps, params, source)  # warm
c, a = coef.copy(), coef.copy()
tracemalloc.start()
base = tracemalloc.get_traced_memory()[0]
got = full_phase_update(X, Y, sw, c, a, 0, steps, params, source)
peak = tracemalloc.get_traced_memory()[1] - base
tracemalloc.stop()
np.save(sys.argv[2], np.stack([got[0], got[1]]))
print(json.dumps(dict(peak=peak, cache=cache.nbytes, in_place=got[0] is c and got[1] is a,
                      stacked=plan.stacked, rows=plan.rows, work=plan.work_bytes,
                      cached=plan.cached_blocks, block=source.block_nbytes)))
"""


def _measure(budget, tmp_path):
    """Peak bytes traced during one warm full phase, in a fresh interpreter (no other
    test's threads allocating meanwhile), and the model it gives."""
    out = tmp_path / f"model_{budget}.npy"
    run = subprocess.run([sys.executable, "-c", _MEMORY_SCRIPT, str(budget), str(out)],
                         capture_output=True, text=True, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1]), np.load(out)


def test_small_budget_bounds_memory_and_gives_the_model_of_a_huge_budget(tmp_path):
    budget, r = 256 * 2**10, 16                          # an eighth of the blocks
    small, model = _measure(budget, tmp_path)
    huge, reference = _measure(64 * 2**20, tmp_path)
    assert huge["stacked"] and not small["stacked"]
    assert small["work"] <= budget // 2 and small["cached"] > 0 and small["in_place"]
    np.testing.assert_allclose(model, reference, **TOL[np.float64])
    # the warm cache holds the blocks it keeps; the task allocates its working set (the
    # share of the budget it reserved) plus O(R r), never the stacked blocks
    assert 0 < small["cache"] and small["cache"] + small["work"] <= budget
    assert small["peak"] <= small["work"] + 4 * small["rows"] * r * 8
    assert small["cache"] + small["peak"] <= budget + 4 * small["rows"] * r * 8
    # the measurement can fail: the stacked path allocates the stacked blocks
    assert huge["peak"] > 512 * small["block"] > budget


def test_stacked_path_reserves_its_copy_from_the_cache():
    rng = np.random.default_rng(1)
    n, d, r, m, b = 16, 4, 8, 8, 4
    X, Y = rng.normal(size=(n, d)), rng.normal(size=(n, 1))
    steps = (np.full(n // b, 0.5), np.zeros(n // b, dtype=bool))
    params = (0.01, b, 0, feature_scale(r), 0.0)
    cache = BlockCache(1 << 20)
    source = BlockSource(1, d, r, 1.0, np.float64, cache=cache)
    seen = []
    original = cache.reserve

    def spy(nbytes):
        seen.append(nbytes)
        return original(nbytes)

    cache.reserve = spy
    full_phase_update(X, Y, np.ones(n), np.zeros((m, r, 1)), np.zeros((0, r, 1)), 0, steps,
                      params, source)
    assert seen and seen[0] >= m * source.block_nbytes   # the stacked copy
    assert len(cache) == m and cache.reserved == 0


def test_plan_chooses_stacked_within_the_budget_and_tiles_past_it():
    d, r, b = 276, 256, 256
    block = (d + 1) * r * 4
    budget = 256 * 2**20
    m_fit = budget // (2 * block)
    assert plan_full_phase(budget, m_fit, d, r, 1, b, 4096, 4).stacked
    for m in (m_fit + 1, 2**20 // r):
        plan = plan_full_phase(budget, m, d, r, 1, b, 4096, 4)
        assert not plan.stacked and plan.rows % b == 0 and plan.rows >= b
        assert plan.work_bytes <= budget // 2
        assert plan.cached_blocks * block + plan.work_bytes <= budget
    # nothing cached: generation dominates, longer super-steps amortize it
    assert plan_full_phase(budget, 2**20 // r, d, r, 1, b, 4096, 4).rows > b


def test_plan_override_is_validated():
    X, Y, sw, coef, avg, steps, params, source, _, _ = _problem(np.float64, 0, 1, False)
    with pytest.raises(ValidationError, match="multiple of batch_size"):
        full_phase_update(X, Y, sw, coef, avg, 0, steps, params, source,
                          plan=FullPhasePlan(False, 6, 1, 0, 0))
    with pytest.raises(ValidationError, match="kernels"):
        full_phase_update(X, Y, sw, coef, avg, 0, steps, params, source, kernels="fast")


def test_fit_past_the_budget_gives_the_model_of_a_fit_within_it():
    """Through the estimator: a tiny feature budget (tiled full phase, blocks regenerated)
    and a large one (stacked, cached) train the same model."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=120)
    kw = dict(n_features=64, block_size=8, batch_size=8, max_iter=2, tol=None,
              learning_rate="constant", eta0=0.5, dtype="float64", random_state=0,
              average=3, scheduler="sync")
    before = default_cache().max_bytes
    try:
        default_cache().clear()
        set_cache_budget(3 * 2**10)          # 8 blocks of 256 bytes: 2 x 2 KiB > 3 KiB, tiles
        tiled = ok.DSGRegressor(**kw).fit(X, y)
        set_cache_budget(64 * 2**20)
        stacked = ok.DSGRegressor(**kw).fit(X, y)
    finally:
        set_cache_budget(before)
    assert 120 * 2 // 8 > 64 // 8                      # 30 steps: past the 8 blocks
    np.testing.assert_allclose(tiled.coef_, stacked.coef_, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------
# the plan's budget is the client's (DSGConfig.feature_budget), not the worker's cache
# ---------------------------------------------------------------------------------------
#: make_case's 8 blocks of (3 + 1) x 8 values, 256 (float64) or 128 (float32) bytes: stacked
#: iff 2 x 8 blocks fit, so 1.5 KiB tiles and 64 MiB stacks in both dtypes.
SMALL, LARGE = 3 * 2**9, 64 * 2**20


@pytest.fixture
def process_budget():
    """Set the process cache's budget (as a worker's ``OOC_KERNELS_FEATURE_CACHE_MB``
    would), restored afterwards."""
    before = default_cache().max_bytes
    default_cache().clear()
    yield set_cache_budget
    default_cache().clear()
    set_cache_budget(before)


def _run_case(config_budget, dtype="float64"):
    """One pass of make_case (8 blocks, 93 rows in batches of 4: mostly full phase)
    through the engine with ``feature_budget=config_budget``; the plans made."""
    from dataclasses import replace

    import ooc_kernels.families.dsg._full_phase as full
    from ooc_kernels.parallel.engine import run_rounds
    from ooc_kernels.families.dsg.solver import DSGAlgorithm, init_state, make_case
    from ooc_kernels.testing._algorithms import case_data

    case = make_case(seed=0, shuffle=True)
    config = replace(case.algorithm.config, feature_budget=config_budget, dtype=dtype)
    plans, original = [], full.plan_full_phase

    def spy(budget, *args, **kwargs):
        plan = original(budget, *args, **kwargs)
        plans.append((budget, plan.stacked))
        return plan

    full.plan_full_phase = spy
    try:
        state = run_rounds(DSGAlgorithm(config), init_state(config), case_data(case),
                           n_epochs=2, chunks_per_round=2, seed=case.seed, shuffle=True,
                           shuffle_chunks=1, scheduler="sync").state
    finally:
        full.plan_full_phase = original
    return state, plans


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_chunk_step_plans_from_the_config_budget_not_the_process_cache(process_budget,
                                                                       dtype):
    """A worker's cache budget (here: the process's) changes neither the plan nor a bit of
    the model: tiled under a large process budget equals tiled under a small one, stacked
    under a small one (the reservation exceeds the cache: it is emptied, not an error)
    equals stacked under a large one.  And the comparison can fail: the two paths differ
    in the last bits."""
    runs = {}
    for config_budget in (SMALL, LARGE):
        for process in (LARGE, SMALL):
            process_budget(process)
            runs[config_budget, process] = _run_case(config_budget, dtype)
    for config_budget, stacked in ((SMALL, False), (LARGE, True)):
        (a, plans_a), (b, plans_b) = runs[config_budget, LARGE], runs[config_budget, SMALL]
        assert plans_a and plans_a == plans_b
        assert set(plans_a) == {(config_budget, stacked)}
        np.testing.assert_array_equal(a.coef, b.coef)
        np.testing.assert_array_equal(a.avg, b.avg)
        assert (a.n_iter, a.n_avg, a.loss_sum) == (b.n_iter, b.n_avg, b.loss_sum)
    tiled, stacked = runs[SMALL, LARGE][0], runs[LARGE, LARGE][0]
    assert not np.array_equal(tiled.coef, stacked.coef)
    np.testing.assert_allclose(tiled.coef, stacked.coef, **TOL[np.dtype(dtype).type])
    assert default_cache().reserved == 0


def test_config_without_a_budget_plans_from_the_process_cache(process_budget):
    """``feature_budget=None`` (configs and models from before the field): the budget of
    the running process's cache, the old behavior."""
    process_budget(SMALL)
    _, plans = _run_case(None)
    assert plans and set(plans) == {(SMALL, False)}
    process_budget(LARGE)
    _, plans = _run_case(None)
    assert plans and set(plans) == {(LARGE, True)}


def test_reserving_more_than_the_cache_budget_empties_it_without_failing():
    cache = BlockCache(max_bytes=1000)
    assert cache.put("a", (np.zeros(100),))                  # 800 bytes
    with cache.reserve(5000):
        assert cache.limit == 0 and len(cache) == 0 and cache.nbytes == 0
        assert not cache.put("b", (np.zeros(1),))            # refused, not an error
        assert cache.get_or_create("c", lambda: (np.ones(2),))[0].sum() == 2.0
        assert len(cache) == 0
    assert cache.reserved == 0 and cache.limit == 1000
    assert cache.put("b", (np.zeros(1),))


@pytest.mark.parametrize("budget", [2**10, 2**20])            # tiled, stacked
def test_a_plan_past_the_cache_budget_gives_the_model_of_a_large_cache(budget):
    """full_phase_update with a budget far above its cache's (a worker with a small
    ``OOC_KERNELS_FEATURE_CACHE_MB``): the same bits as with a large cache."""
    X, Y, sw, coef, avg, steps, params, _, _, _ = _problem(np.float64, 2, 1, True)
    models = []
    for cache_bytes in (0, 300, 1 << 24):
        cache = BlockCache(cache_bytes)
        source = BlockSource(4, X.shape[1], coef.shape[1], 1.2, np.float64, cache=cache)
        models.append(full_phase_update(X, Y, sw, coef.copy(), avg.copy(), 3, steps,
                                        params, source, budget=budget))
        assert cache.reserved == 0
    for got in models[:2]:
        for a, b in zip(got, models[2]):
            np.testing.assert_array_equal(a, b)


def test_estimator_records_the_client_budget_and_keeps_it(process_budget, tmp_path):
    """fit records the client's budget; a warm start under another budget, a saved and
    loaded model keep it; a model saved before the field loads with None."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=120)
    kw = dict(n_features=64, block_size=8, batch_size=8, max_iter=1, tol=None,
              learning_rate="constant", eta0=0.5, dtype="float64", random_state=0,
              average=3, scheduler="sync", warm_start=True)
    process_budget(SMALL)
    ref = ok.DSGRegressor(**kw).fit(X, y).fit(X, y)      # tiled, both epochs
    assert ref._config.feature_budget == SMALL
    reg = ok.DSGRegressor(**kw).fit(X, y)
    process_budget(LARGE)                                # would be stacked
    reg.fit(X, y)
    assert reg._config.feature_budget == SMALL
    np.testing.assert_array_equal(reg._state.coef, ref._state.coef)
    np.testing.assert_array_equal(reg._state.avg, ref._state.avg)
    assert ok.DSGRegressor(**kw).fit(X, y)._config.feature_budget == LARGE
    reg.save(tmp_path / "model.zarr")
    assert ok.load(tmp_path / "model.zarr")._config.feature_budget == SMALL
    meta = reg._fitted_meta()
    del meta["config"]["feature_budget"]
    old = ok.DSGRegressor(**kw)
    old.n_features_in_ = reg.n_features_in_   # ok.load restores the base attributes first
    old._restore_fitted(reg._fitted_arrays(), meta, "old model")
    assert old._config.feature_budget is None
    np.testing.assert_array_equal(old.predict(X), reg.predict(X))
