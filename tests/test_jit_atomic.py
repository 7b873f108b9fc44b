"""The atomic counter of the parallel kernels (``ooc_kernels._jit.atomic.claim``)."""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ooc_kernels._jit._cache import njit
from ooc_kernels._jit.atomic import claim


@njit(parallel=True)   # cached with the library's kernels: compiled once, not every run
def _take_all(n_items, n_iterations, counter, taken):
    """Every iteration takes items until none is left; ``taken[t]`` counts the takes of t
    (each take with a little work, so that the threads overlap)."""
    for k in prange(n_iterations):
        t = claim(counter, 1)
        while t < n_items:
            acc = 0.0
            for q in range(200):
                acc += np.sqrt(q + t)
            taken[t] += 1 if acc > 0.0 else 2
            t = claim(counter, 1)


def test_each_item_is_taken_exactly_once_by_the_threads_of_a_region():
    before = numba.get_num_threads()
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    try:
        for n_items in (0, 1, 7, 50_000):
            counter = np.array([5, 0, 9], dtype=np.int64)   # counter[1] is used
            taken = np.zeros(n_items, dtype=np.int64)
            _take_all(n_items, 8, counter, taken)
            assert np.array_equal(taken, np.ones(n_items, dtype=np.int64))
            # one take per item and one failed take per iteration; the others untouched
            assert counter.tolist() == [5, n_items + 8, 9]
    finally:
        numba.set_num_threads(before)


def test_claim_returns_the_value_before_the_addition():
    @numba.njit
    def twice(counter):
        return claim(counter, 0), claim(counter, 0)

    counter = np.array([41], dtype=np.int64)
    assert twice(counter) == (41, 42) and counter[0] == 43
