"""The step kernel's variants that ``benchmarks/threads_task_lists.py`` times: each gives its
sequential kernel's model and sums bit for bit, on any thread count and any number of task
lists, more lists than threads included (in one parallel region a thread waits only for tasks
that running threads have taken, so a smaller team still finishes)."""

from __future__ import annotations

import sys
from pathlib import Path

import numba
import numpy as np
import pytest

from ooc_kernels._jit.rff import COS_AFFINE
from ooc_kernels.families.dsg.kernels_full import dsg_full_update
from ooc_kernels.families.dsg.kernels_tasks import full_tile_width

ROOT = Path(__file__).resolve().parents[1]
#: Thread counts this process can run (numba's pool is fixed at import: the cores).
THREADS = sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)})


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import threads_task_lists
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return threads_task_lists


@pytest.fixture(scope="module")
def problem(bench):
    """5 blocks of 256 features (tiles of 32 columns: 40 tasks), 700 rows in batches of 64
    (the last one of 60 rows)."""
    return bench.problem(700, 5, 64)


@pytest.fixture(autouse=True)
def _numba_threads():
    before = numba.get_num_threads()
    yield
    numba.set_num_threads(before)


def _same(got, want):
    assert len(got) == len(want) == 5
    for a, b in zip(got, want):
        assert np.array_equal(a, b)


def test_the_problem_moves_the_model(problem):
    coef, _, n_avg, loss_sum, _ = dsg_full_update(*problem)
    assert np.abs(coef).max() > 1e-3 and n_avg == 11 and loss_sum > 0


@pytest.mark.parametrize("lists", [1, 2, 7])
def test_one_region_gives_the_sequential_model(bench, problem, lists):
    want = dsg_full_update(*problem)
    for t in THREADS:
        numba.set_num_threads(t)
        _same(bench.one_region(*problem, lists, 200_000), want)
        _same(bench.one_region(*problem, lists, 0), want)  # naps from the first wait


@pytest.mark.parametrize("lists", [1, 2, 7])
def test_features_computed_ahead_give_the_sequential_model(bench, problem, lists):
    want = dsg_full_update(*problem)
    for t in THREADS:
        numba.set_num_threads(t)
        counted = np.zeros(1, dtype=np.int64)
        for _ in range(3):  # which tasks are computed ahead changes from run to run
            _same(bench.ahead(*problem, lists, 200_000, counted), want)
            _same(bench.ahead(*problem, lists, 0, counted), want)
        assert 0 <= counted[0] <= 6 * 40 * 10  # at most every task of steps 1 to 10


@pytest.mark.parametrize("lists", [1, 2, 7])
def test_tiles_of_half_the_width_give_their_sequential_model(bench, problem, lists):
    half = full_tile_width(5, 256, COS_AFFINE) // 2
    want = bench.sequential_width(*problem, half)
    for t in THREADS:
        numba.set_num_threads(t)
        _same(bench.lists_width(*problem, lists, half, True), want)
        _same(bench.lists_width(*problem, lists, half, False), want)
    library = dsg_full_update(*problem)
    assert not np.array_equal(want[0], library[0])  # another partition, other roundings
    np.testing.assert_allclose(want[0], library[0], rtol=1e-4, atol=1e-6)


def test_the_tasks_in_order_give_the_library_model(bench, problem):
    _same(bench.sequential_width(*problem, 0), dsg_full_update(*problem))
