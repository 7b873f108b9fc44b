"""The library's one weighted median (ooc_kernels._moments.weighted_median), against
NumPy's median of the values repeated: unit weights, even and odd counts, integer weights
as repeated rows, zero weights as left-out rows; and its two users, the median heuristic
and the robust target standardization, take that same median."""

import numpy as np
import pytest
from scipy.stats import median_abs_deviation

from ooc_kernels._moments import weighted_median
from ooc_kernels.families.dsg._robust_targets import robust_target_moments


@pytest.mark.parametrize("n", [1, 2, 7, 8, 51, 52])
def test_unit_weights_give_numpys_median(n):
    values = np.random.default_rng(n).normal(size=n)
    assert weighted_median(values, np.ones(n)) == np.median(values)
    assert weighted_median(values) == np.median(values)


@pytest.mark.parametrize("seed", range(30))
def test_integer_weights_are_repeated_rows(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 20))
    values = rng.integers(-5, 6, size=n).astype(float)  # ties too
    w = rng.integers(0, 4, size=n)
    w[rng.integers(n)] += 1                             # a positive total
    expected = np.median(np.repeat(values, w))
    assert weighted_median(values, w.astype(float)) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize("seed", range(10))
def test_robust_targets_take_the_median_of_repeated_rows_for_an_even_total(seed):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=40)
    w = rng.integers(1, 4, size=len(y)).astype(float)
    w[0] += w.sum() % 2                                 # an even total: two middle rows
    repeated = np.repeat(y, w.astype(int))
    shift, scale = robust_target_moments(y, w)
    assert shift == pytest.approx(np.median(repeated), rel=1e-14)
    assert scale == pytest.approx(median_abs_deviation(repeated, scale="normal"), rel=1e-12)
    # unit weights: the unweighted standardization
    assert robust_target_moments(y, np.ones(len(y))) == robust_target_moments(y)
