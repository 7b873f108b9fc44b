"""DSPDC's row order (``sampling``): with ``permuted_rows`` and ``m = 1`` a task's row
uniforms visit its rows in random permutations, one per ``n_k`` iterations, through the
samplers' own map ``floor(u n_k)``; ``sampling="auto"`` resolves to permutations with
``m = 1``, in memory (with one group of all the chunks) and out of core, where a task
with the pass rule visits its rows in one permutation per pass and checkpoints resume with
the sampling they were written with."""

from __future__ import annotations

from types import SimpleNamespace

import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dspdc import _local
from ooc_kernels.families.dspdc._local import task_uniform_blocks
from ooc_kernels.families.dspdc.kernels import _one_row, sample_without_replacement_ref


def _rows_of(blocks, n_k):
    """The rows that the reference sampler (Floyd's, ``m = 1``) draws from the uniforms."""
    return np.array([int(sample_without_replacement_ref(n_k, 1, u)[0])
                     for r, _ in blocks for u in r])


@pytest.mark.parametrize("q", [2, 3])
def test_permuted_uniforms_visit_every_row_once_per_pass(monkeypatch, q):
    """Blocks cut across the passes (a small ``UNIFORM_BLOCK``), a partial last pass:
    every full pass is a permutation, the last pass has no repeat, the passes differ, the
    numba map gives the same rows, a buffer receives the same values, and the column
    uniforms (``q < p``) follow from the same stream."""
    monkeypatch.setattr(_local, "UNIFORM_BLOCK", 16)
    n_k = 37
    cfg = SimpleNamespace(local_passes=2.5, q=q, n_features=3, permuted_rows=True)
    blocks = [(r.copy(), c) for r, c in task_uniform_blocks(cfg, 5, 1, 2, 0, n_k, 1)]
    rows = _rows_of(blocks, n_k)
    assert len(rows) == 93 and max(len(r) for r, _ in blocks) <= 16
    for start in (0, 37):
        np.testing.assert_array_equal(np.sort(rows[start:start + n_k]), np.arange(n_k))
    assert len(set(rows[74:].tolist())) == 19
    assert not np.array_equal(rows[:37], rows[37:74])
    assert [_one_row(u, n_k) for r, _ in blocks for u in r[:, 0]] == rows.tolist()
    buffer = np.empty((16, 1))
    fused = [r.copy() for r, _ in task_uniform_blocks(cfg, 5, 1, 2, 0, n_k, 1,
                                                      columns=False, out=buffer)]
    for a, (b, _) in zip(fused, blocks, strict=True):
        np.testing.assert_array_equal(a, b)
    again = list(task_uniform_blocks(cfg, 5, 1, 2, 0, n_k, 1))
    for (a, ca), (b, cb) in zip(again, blocks, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(ca, cb)
        assert ca.shape == (len(a), q) and (q == 3 or 0 < ca.min() < ca.max() < 1)


def test_a_permutation_of_many_rows_orders_blocks_of_consecutive_rows():
    """5,003 rows: blocks of 4 consecutive rows (the last one 3 rows) in a random order,
    every pass a permutation of the rows, the passes different."""
    from ooc_kernels.families.dspdc._local import permuted_rows

    rows = permuted_rows(np.random.default_rng(1), 5003, 2 * 5003)
    for one in (rows[:5003], rows[5003:]):
        np.testing.assert_array_equal(np.sort(one), np.arange(5003))
        pos, firsts = 0, []
        while pos < 5003:                        # block after block
            first = int(one[pos])
            size = min(4, 5003 - first)
            assert first % 4 == 0
            np.testing.assert_array_equal(one[pos:pos + size], np.arange(first, first + size))
            firsts.append(first)
            pos += size
        assert sorted(firsts) == list(range(0, 5003, 4)) and firsts != sorted(firsts)
    assert not np.array_equal(rows[:5003], rows[5003:])
    small = permuted_rows(np.random.default_rng(1), 2047, 2047)      # one row per block
    np.testing.assert_array_equal(small, np.random.default_rng(1).permutation(2047))


def test_permuted_uniforms_map_exactly_on_many_rows():
    """``(pi + 1/2) / n_k`` maps back to ``pi`` for every row of a large task."""
    n_k = 1_000_003
    cfg = SimpleNamespace(local_passes=1.0, q=1, n_features=1, permuted_rows=True)
    u = np.concatenate([r[:, 0] for r, _ in task_uniform_blocks(cfg, 0, 0, 0, 0, n_k, 1,
                                                                columns=False)])
    rows = np.minimum((u * n_k).astype(np.int64), n_k - 1)
    np.testing.assert_array_equal(np.sort(rows), np.arange(n_k))
    assert np.max(np.abs(u * n_k - (rows + 0.5))) < 1e-6   # far from the floor's steps


def test_uniform_draws_without_permuted_rows():
    """``m > 1`` or no ``permuted_rows``: the stream's uniforms, as drawn before."""
    from ooc_kernels._seeds import task_rng

    for m, permuted in ((1, False), (2, True)):
        cfg = SimpleNamespace(local_passes=1.0, q=3, n_features=3, permuted_rows=permuted)
        (rows, _), = task_uniform_blocks(cfg, 7, 0, 1, 2, 20, m)
        np.testing.assert_array_equal(rows, task_rng(7, 0, 1, 2).random((rows.shape)))


def _data(n=240):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 4))
    return X, X @ np.arange(1.0, 5.0) + rng.normal(size=n)


def test_sampling_auto_resolves_by_where_the_rows_are(monkeypatch):
    """Permutations in memory and out of core; one group of all the chunks in memory only
    (the memory budget of ``shuffle_chunks="auto"``, here two chunks, applies to rows read
    from a store)."""
    from ooc_kernels.estimators import base

    monkeypatch.setattr(base, "SHUFFLE_BYTES", 5000)   # chunks of 60 x 4 + 60: 2400 bytes
    X, y = _data()
    kw = dict(alpha=1e-2, tol=1e-5, chunk_size=60, random_state=0, progress=False)
    mem = ok.DSPDCRegressor(**kw).fit(X, y)
    assert (mem.sampling_, mem.shuffle_chunks_, list(mem.local_rows_)) == \
        ("permutation", 4, [240])
    lazy = ok.DSPDCRegressor(**kw).fit(da.from_array(X, chunks=(60, -1)),
                                       da.from_array(y, chunks=60))
    assert (lazy.sampling_, lazy.shuffle_chunks_) == ("permutation", 2)
    assert ok.DSPDCRegressor(**kw, m=2).fit(X, y).sampling_ == "uniform"
    kept = ok.DSPDCRegressor(**kw, sampling="uniform", shuffle_chunks=2).fit(X, y)
    assert (kept.sampling_, kept.shuffle_chunks_) == ("uniform", 2)
    chosen = ok.DSPDCRegressor(**kw, sampling="uniform").fit(
        da.from_array(X, chunks=(60, -1)), da.from_array(y, chunks=60))
    assert chosen.sampling_ == "uniform"
    for est in (mem, lazy, kept, chosen):      # every one certified at tol
        assert est.gap_history_[-1]["relative_gap"] <= 1e-5


def test_permutation_with_several_rows_per_iteration_is_refused():
    X, y = _data(60)
    with pytest.raises(ValidationError, match=r"sampling='permutation' .* m=2: set m=1"):
        ok.DSPDCRegressor(sampling="permutation", m=2, progress=False).fit(X, y)


def _lazy(n=1200, p=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * np.linspace(0.5, 3.0, p)
    y = X @ rng.normal(size=p) + 0.3 * rng.normal(size=n)
    return da.from_array(X, chunks=(100, p)), da.from_array(y, chunks=100)


def test_the_pass_rule_visits_one_permutation_per_pass(monkeypatch):
    """Out of core at the defaults (ridge: 3 passes per read and the pass rule up to 10;
    groups of 3 chunks drawn anew): every task runs whole passes, at least 3, and the rows
    its kernel calls visit (the samplers' ``floor(u n_k)``) are one permutation of its rows
    per pass, each pass a new one."""
    from ooc_kernels.families.dspdc import kernels
    from ooc_kernels.families.dspdc.solver import DSPDCAlgorithm

    real_kernel, real_step, tasks = kernels.dspdc_dense_iterations, \
        DSPDCAlgorithm._chunk_step, []

    def kernel(rows, b, y, a, abar, z, n_k, row_u, *rest):
        tasks[-1].append(np.floor(np.asarray(row_u)[:, 0] * n_k).astype(np.int64))
        return real_kernel(rows, b, y, a, abar, z, n_k, row_u, *rest)

    def step(self, state, batch, task):
        tasks.append([])
        return real_step(self, state, batch, task)

    monkeypatch.setattr(kernels, "dspdc_dense_iterations", kernel)
    monkeypatch.setattr(DSPDCAlgorithm, "_chunk_step", step)
    reg = ok.DSPDCRegressor(alpha=1e-3, tol=None, max_iter=4, shuffle_chunks=3,
                            scheduler="sync", random_state=0, progress=False).fit(*_lazy())
    assert reg.sampling_ == "permutation" and reg.max_local_passes_ > reg.local_passes_
    counts = []
    for calls in tasks:
        passes = np.concatenate(calls).reshape(-1, 300)     # whole passes of n_k = 300
        counts.append(len(passes))
        for one in passes:
            np.testing.assert_array_equal(np.sort(one), np.arange(300))
        assert len({one.tobytes() for one in passes}) == len(passes)
    assert len(counts) == 16 and min(counts) >= 3 and max(counts) > 3   # the rule ran


@pytest.mark.parametrize("weighted, all_columns", [(False, True), (True, True),
                                                  (False, False)])
def test_rounds_with_permuted_rows_and_the_rule_equal_the_oracle(weighted, all_columns):
    """The engine's rounds (K = 1, storage order, two epochs) with the rows in permutations
    (``m = 1``) and the pass rule against the NumPy oracle that replays them, with every
    column per iteration (the pass rule's draws a pass at a time) and with ``q = 2``."""
    from dataclasses import replace

    from ooc_kernels.families.dspdc.reference import sequential_dspdc
    from ooc_kernels.families.dspdc.solver import make_case, state_arrays
    from ooc_kernels.testing._algorithms import _run

    case = make_case(0, weighted=weighted)
    cfg = case.algorithm.config
    case.algorithm.config = replace(cfg, local_passes=1.0, max_local_passes=8.0, m=1,
                                    q=cfg.n_features if all_columns else 2,
                                    permuted_rows=True)
    engine = _run(case, k=1, scheduler="sync", n_epochs=2)
    oracle = sequential_dspdc(case, n_epochs=2)
    got, want = state_arrays(engine), state_arrays(oracle)
    n = case.algorithm.config.n_samples
    iters = int(want["n_iter"])
    assert 2 * n < iters < 2 * 8 * n       # the rule chose more than 1 pass, fewer than 8
    for name in want:
        np.testing.assert_allclose(np.asarray(got[name], dtype=float),
                                   np.asarray(want[name], dtype=float), rtol=1e-9,
                                   atol=1e-12, err_msg=name)


def _interrupted_then_resumed(tmp_path, monkeypatch, kw, lazy, stop_after):
    """A fit with a checkpoint every round, killed after round ``stop_after``, then
    resumed with the code as it is."""
    from ooc_kernels.estimators._checkpointing import CheckpointWriter

    real, rounds = CheckpointWriter.__call__, {"n": 0}

    class Stop(Exception):
        pass

    def call(self, state, info):
        real(self, state, info)
        rounds["n"] += 1
        if rounds["n"] == stop_after:
            raise Stop(f"killed after round {stop_after}")

    ck = tmp_path / "ck.zarr"
    with monkeypatch.context() as m:
        m.setattr(CheckpointWriter, "__call__", call)
        with pytest.raises(Stop, match="killed after round"):
            ok.DSPDCRegressor(**kw).fit(*lazy, checkpoint=ck)
    return ok.DSPDCRegressor(**kw).fit(*lazy, checkpoint=ck, resume=True)


_RESUME = dict(alpha=1e-3, tol=1e-6, max_iter=12, shuffle_chunks=3, scheduler="sync",
               random_state=3, progress=False)


def test_a_resumed_fit_with_permuted_rows_is_the_uninterrupted_one(tmp_path, monkeypatch):
    """Out of core at the defaults: killed within its third epoch (two rounds an epoch)
    and resumed, the fit
    returns the uninterrupted fit's model, gaps and passes bit for bit (from the zero
    start: the squared loss's ridge start is certified in the first epoch)."""
    from ooc_kernels.families.dspdc import _squared_start

    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    lazy = _lazy(n=600, seed=2)
    whole = ok.DSPDCRegressor(**_RESUME).fit(*lazy)
    resumed = _interrupted_then_resumed(tmp_path, monkeypatch, _RESUME, lazy, 5)
    assert whole.sampling_ == resumed.sampling_ == "permutation"
    assert whole.n_iter_ > 3 and whole.stop_reason_.startswith("tol:")
    np.testing.assert_array_equal(resumed.coef_, whole.coef_)
    assert resumed.intercept_ == whole.intercept_
    assert [(h["passes"], h["primal"], h["dual"]) for h in resumed.gap_history_] == \
        [(h["passes"], h["primal"], h["dual"]) for h in whole.gap_history_]


def test_a_checkpoint_with_independent_draws_resumes_them(tmp_path, monkeypatch):
    """A checkpoint written by a fit whose ``sampling="auto"`` drew the rows independently
    out of core (as it did before "auto" took permutations there): resumed by this code it
    keeps drawing them independently, and returns that uninterrupted fit's model, not the
    model of a fit in permutations (from the zero start, as the test above)."""
    from ooc_kernels.families.dspdc import _squared_start, estimators

    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    lazy = _lazy(n=600, seed=2)
    permuted = ok.DSPDCRegressor(**_RESUME).fit(*lazy)
    with monkeypatch.context() as m:       # the earlier "auto" out of core
        m.setattr(estimators, "resolve_permuted_rows", lambda est: False)
        drawn = ok.DSPDCRegressor(**_RESUME).fit(*lazy)
        from ooc_kernels.estimators._checkpointing import CheckpointWriter

        real, rounds = CheckpointWriter.__call__, {"n": 0}

        def call(self, state, info):
            real(self, state, info)
            rounds["n"] += 1
            if rounds["n"] == 5:
                raise KeyboardInterrupt("killed after round 5")

        m.setattr(CheckpointWriter, "__call__", call)
        ck = tmp_path / "ck.zarr"
        with pytest.raises(KeyboardInterrupt, match="killed after round 5"):
            ok.DSPDCRegressor(**_RESUME).fit(*lazy, checkpoint=ck)
    resumed = ok.DSPDCRegressor(**_RESUME).fit(*lazy, checkpoint=ck, resume=True)
    assert (drawn.sampling_, resumed.sampling_, permuted.sampling_) == \
        ("uniform", "uniform", "permutation")
    np.testing.assert_array_equal(resumed.coef_, drawn.coef_)
    assert [h["passes"] for h in resumed.gap_history_] == \
        [h["passes"] for h in drawn.gap_history_]
    assert not np.array_equal(resumed.coef_, permuted.coef_)
