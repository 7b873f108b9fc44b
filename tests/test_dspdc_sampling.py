"""DSPDC's row order (``sampling``): with ``permuted_rows`` and ``m = 1`` a task's row
uniforms visit its rows in random permutations, one per ``n_k`` iterations, through the
samplers' own map ``floor(u n_k)``; ``sampling="auto"`` resolves to permutations (and one
group of all the chunks) when the rows are held in memory, to independent draws otherwise."""

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
    """In memory: permutations and one group of all the chunks (the memory budget of
    ``shuffle_chunks="auto"``, here two chunks, applies to rows read from a store)."""
    from ooc_kernels.estimators import base

    monkeypatch.setattr(base, "SHUFFLE_BYTES", 5000)   # chunks of 60 x 4 + 60: 2400 bytes
    X, y = _data()
    kw = dict(alpha=1e-2, tol=1e-5, chunk_size=60, random_state=0, progress=False)
    mem = ok.DSPDCRegressor(**kw).fit(X, y)
    assert (mem.sampling_, mem.shuffle_chunks_, list(mem.local_rows_)) == \
        ("permutation", 4, [240])
    lazy = ok.DSPDCRegressor(**kw).fit(da.from_array(X, chunks=(60, -1)),
                                       da.from_array(y, chunks=60))
    assert (lazy.sampling_, lazy.shuffle_chunks_) == ("uniform", 2)
    assert ok.DSPDCRegressor(**kw, m=2).fit(X, y).sampling_ == "uniform"
    kept = ok.DSPDCRegressor(**kw, sampling="uniform", shuffle_chunks=2).fit(X, y)
    assert (kept.sampling_, kept.shuffle_chunks_) == ("uniform", 2)
    chosen = ok.DSPDCRegressor(**kw, sampling="permutation").fit(
        da.from_array(X, chunks=(60, -1)), da.from_array(y, chunks=60))
    assert chosen.sampling_ == "permutation"
    for est in (mem, lazy, kept, chosen):      # every one certified at tol
        assert est.gap_history_[-1]["relative_gap"] <= 1e-5


def test_permutation_with_several_rows_per_iteration_is_refused():
    X, y = _data(60)
    with pytest.raises(ValidationError, match=r"sampling='permutation' .* m=2: set m=1"):
        ok.DSPDCRegressor(sampling="permutation", m=2, progress=False).fit(X, y)
