"""The Taylor basis's truncation bound past the float64 range: wide rows over a narrow width
(one skewed input, as income in statsmodels' ``engel``) give a bound of inf, and
``ProjectedKernelRidge()`` fits such data instead of failing with Python's OverflowError
while it picks the degree."""

import math
import sys
from fractions import Fraction

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.families.pkawv.taylor import truncation_bound


def _exact(degree, radius, bandwidth):
    """Lemma 13's bound in exact rational arithmetic."""
    ratio = Fraction(radius) / Fraction(bandwidth)
    return ratio ** (2 * degree + 2) / math.factorial(degree + 1)


@pytest.mark.parametrize("degree, radius", [(2, 1.0), (40, 3.5), (120, 12.0), (150, 12.0),
                                            (300, 50.0), (998, 9.0)])
def test_truncation_bound_matches_exact_arithmetic_or_is_inf_past_float64(degree, radius):
    exact = _exact(degree, radius, 1.0)
    got = truncation_bound(degree, radius, 1.0)
    if exact > Fraction(sys.float_info.max):
        assert got == math.inf
    else:
        assert got == pytest.approx(float(exact), rel=1e-9)


def test_projected_kernel_ridge_fits_one_skewed_input():
    rng = np.random.default_rng(0)
    x = np.exp(rng.normal(size=(235, 1)))            # lognormal: a row 10 sd out
    x[0] = 40.0
    y = 0.5 * x[:, 0] + 0.1 * rng.normal(size=235)
    model = ok.ProjectedKernelRidge(random_state=0, scheduler="sync", progress=False)
    model.fit(x, y)
    assert np.isfinite(model.predict(x)).all()
