"""Attacks on DSPDC's standardization: the streaming column moments and the one-pass rows
(``families/dspdc/_scaling.py``, ``kernels_scaling.py``) against NumPy's two-pass
``mean``/``std`` on constant columns, huge and tiny scales, and rows with NaN refused."""

from __future__ import annotations

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import InvalidDataError, ValidationError
from ooc_kernels.families.dspdc._scaling import chunk_moments, combine_moments, standardization
from ooc_kernels.families.dspdc.kernels_scaling import standardize_rows, standardize_rows_ref

FAST = dict(scheduler="sync", progress=False, max_iter=3, tol=None, random_state=0)


def _columns(n=301, seed=0):
    """Columns with a constant, a huge and a tiny scale, a large mean against its spread,
    and an ordinary one."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 5))
    return np.column_stack([np.full(n, 7.25), z[:, 1] * 1e150, z[:, 2] * 1e-150,
                            1e8 + z[:, 3], z[:, 4]])


@pytest.mark.parametrize("splits", [[301], [1, 300], [100, 100, 101], [7] * 43])
@pytest.mark.parametrize("center", [True, False])
def test_streaming_moments_give_numpys_two_pass_mean_and_std(splits, center):
    X = _columns()
    parts, start = [], 0
    for size in splits:
        parts.append(chunk_moments(X[start:start + size], None))
        start += size
    got = standardization(combine_moments(*parts), center=center)
    mean = X.mean(axis=0)
    std = X.std(axis=0) if center else np.sqrt((X ** 2).mean(axis=0))
    std[0] = 1.0 if center else std[0]          # a constant column keeps the scale 1 centred
    np.testing.assert_allclose(got["x_shift"], mean if center else 0.0, rtol=1e-12)
    np.testing.assert_allclose(got["x_scale"], std, rtol=1e-9)


def test_weighted_moments_are_numpys_weighted_mean_and_std():
    X = _columns(120, seed=1)
    w = np.random.default_rng(2).uniform(0.0, 3.0, size=len(X))
    got = standardization(combine_moments(chunk_moments(X[:50], w[:50]),
                                          chunk_moments(X[50:], w[50:])), center=True)
    mean = np.average(X, axis=0, weights=w)
    std = np.sqrt(np.average((X - mean) ** 2, axis=0, weights=w))
    std[0] = 1.0
    np.testing.assert_allclose(got["x_shift"], mean, rtol=1e-12)
    np.testing.assert_allclose(got["x_scale"], std, rtol=1e-9)


def test_a_constant_column_standardizes_to_zero_not_nan():
    X = _columns()
    cfg = standardization(combine_moments(chunk_moments(X, None)), center=True)
    assert cfg["x_scale"][0] == 1.0
    rows = standardize_rows(np.ascontiguousarray(X), np.asarray(cfg["x_shift"]),
                            np.asarray(cfg["x_scale"]), 1.0)
    assert np.isfinite(rows).all()
    np.testing.assert_array_equal(rows[:, 0], 0.0)
    # the others have mean 0 and standard deviation 1 on the rows the solver sees
    np.testing.assert_allclose(rows[:, 1:5].mean(axis=0), 0.0, atol=1e-7)
    np.testing.assert_allclose(rows[:, 1:5].std(axis=0), 1.0, rtol=1e-9)
    np.testing.assert_array_equal(rows[:, 5], 1.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_pass_rows_on_extreme_scales_equal_numpys_bit_for_bit(dtype):
    X = _columns().astype(dtype) if dtype == np.float64 else \
        np.column_stack([np.full(301, 7.25), np.random.default_rng(3).normal(size=(301, 2))
                         * [1e30, 1e-30]]).astype(dtype)
    shift = np.asarray(X, dtype=np.float64).mean(axis=0)
    scale = np.asarray(X, dtype=np.float64).std(axis=0)
    scale[scale == 0] = 1.0
    for intercept in (0.0, 1.0):
        got = standardize_rows(X, shift, scale, intercept)
        np.testing.assert_array_equal(got, standardize_rows_ref(X, shift, scale, intercept))
        assert np.isfinite(got).all()


def test_a_fit_on_huge_and_tiny_columns_is_the_fit_on_rescaled_columns():
    """Standardization makes the model independent of the columns' units: scaling a column
    by 1e150 divides its coefficient by 1e150 and leaves the predictions."""
    rng = np.random.default_rng(4)
    Z = rng.normal(size=(200, 3))
    y = Z @ [1.0, -2.0, 0.5] + 0.1 * rng.normal(size=200)
    units = np.array([1e150, 1e-150, 1.0])
    a = ok.DSPDCRegressor(alpha=1e-3, **FAST).fit(Z, y)
    b = ok.DSPDCRegressor(alpha=1e-3, **FAST).fit(Z * units, y)
    np.testing.assert_allclose(b.coef_ * units, a.coef_, rtol=1e-9)
    np.testing.assert_allclose(b.predict(Z * units), a.predict(Z), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_rows_with_nan_or_inf_are_refused(bad):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 3))
    y = X[:, 0].copy()
    X[17, 1] = bad
    with pytest.raises(ValidationError, match=r"(?i)(nan|infinit|finite)"):
        ok.DSPDCRegressor(**FAST).fit(X, y)


@pytest.mark.parametrize("value", [7.1, 0.1, 123456.789, -1 / 3])
def test_a_constant_column_under_weights_and_many_chunks_has_no_spread(value):
    """A constant whose weighted mean rounds (7.1 times random weights, over many chunks)
    is still a constant column: scale 1, not its rounding error."""
    rng = np.random.default_rng(6)
    X = np.full((20000, 1), value)
    w = rng.uniform(0.0, 3.0, size=len(X))
    parts = [chunk_moments(X[a:a + 10], w[a:a + 10]) for a in range(0, len(X), 10)]
    W, mean, m2 = combine_moments(*parts)
    assert mean[0] == value and m2[0] == 0.0
    assert standardization((W, mean, m2), center=True)["x_scale"] == (1.0,)


def test_a_weighted_fit_with_a_constant_column_is_the_fit_without_it():
    rng = np.random.default_rng(7)
    Z = rng.normal(size=(2000, 2))
    y = Z @ [1.0, 2.0] + 0.1 * rng.normal(size=len(Z))
    w = rng.uniform(0.0, 3.0, size=len(Z))
    kw = dict(alpha=1e-3, chunk_size=20, **FAST)
    with_const = ok.DSPDCRegressor(**kw).fit(np.column_stack([Z, np.full(len(Z), 7.1)]), y,
                                             sample_weight=w)
    without = ok.DSPDCRegressor(**kw).fit(Z, y, sample_weight=w)
    assert with_const.coef_[2] == 0.0
    # the same solution to rounding, relative to its norm (the squared loss's start is a
    # product of the rows: its rounding depends on their number of columns)
    found = np.append(with_const.coef_[:2], with_const.intercept_)
    expected = np.append(without.coef_, without.intercept_)
    assert np.linalg.norm(found - expected) <= 1e-12 * np.linalg.norm(expected)


@pytest.mark.parametrize("unit", [1e160, 1e250])
@pytest.mark.parametrize("chunk_size", [50, 1000])
def test_a_column_whose_spread_overflows_is_refused_not_zeroed(unit, chunk_size):
    """A finite column whose squares overflow float64 (values beyond about 1e154) has no
    finite standard deviation in the streaming moments: the fit names the column and the
    fix instead of dividing it by infinity (a coefficient of exactly 0, the column's signal
    silently dropped), in memory and out of core."""
    rng = np.random.default_rng(8)
    Z = rng.normal(size=(200, 3))
    y = Z @ [1.0, -2.0, 0.5] + 0.1 * rng.normal(size=200)
    with pytest.raises(InvalidDataError, match=r"column 1 of X .*overflow.*rescale"):
        ok.DSPDCRegressor(alpha=1e-3, chunk_size=chunk_size, **FAST).fit(
            Z * [1.0, unit, 1.0], y)
    import dask.array as da
    with pytest.raises(InvalidDataError, match=r"column 1 of X .*overflow.*rescale"):
        ok.DSPDCRegressor(alpha=1e-3, **FAST).fit(
            da.from_array(Z * [1.0, unit, 1.0], chunks=(chunk_size, 3)),
            da.from_array(y, chunks=chunk_size))


def test_the_standardization_of_overflowed_moments_is_refused():
    """The merged moments of a column whose sum of squares overflowed (M2 = inf, or NaN
    from inf - inf) never give a scale of inf."""
    for m2 in (np.inf, np.nan):
        with pytest.raises(InvalidDataError, match=r"column 0 of X .*overflow.*rescale"):
            standardization((10.0, np.array([1e200, 0.0]), np.array([m2, 1.0])), center=True)


@pytest.mark.parametrize("lazy", [False, True])
def test_targets_whose_squared_loss_overflows_are_refused_by_name(lazy):
    """A finite regression target beyond about 1e150 makes the squared loss overflow float64:
    the fit names the target, its chunk and row, and the fix (rescale y) instead of
    reporting a divergence of the steps; targets up to 1e140 give the model of the targets
    scaled down."""
    import dask.array as da

    rng = np.random.default_rng(9)
    Z = rng.normal(size=(200, 3))
    y = Z @ [1.0, -2.0, 0.5] + 0.1 * rng.normal(size=200)
    big = y * 1e160
    X_in, y_in = (da.from_array(Z, chunks=(50, 3)), da.from_array(big, chunks=50)) if lazy \
        else (Z, big)
    with pytest.raises(InvalidDataError, match=r"target -?[0-9.]+e\+160 in chunk \d+, row "
                                               r"\d+ is beyond 1e\+150 .*overflow.*Rescale y"):
        ok.DSPDCRegressor(alpha=1e-3, **FAST).fit(X_in, y_in)
    a = ok.DSPDCRegressor(alpha=1e-3, **FAST).fit(Z, y)
    b = ok.DSPDCRegressor(alpha=1e-3, **FAST).fit(Z, y * 1e140)
    np.testing.assert_allclose(b.predict(Z) / 1e140, a.predict(Z), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("unit", [1e-160, 1e-200, 1e-300])
@pytest.mark.parametrize("lazy", [False, True])
def test_a_column_whose_spread_underflows_is_refused_not_dropped(unit, lazy):
    """A column of values whose spread is below 1e-140 has squares that underflow float64
    (subnormal, then 0): the standardization would take it for a constant and drop it
    (a coefficient of 0) or lose its digits; the fit names the column and the fix."""
    import dask.array as da

    rng = np.random.default_rng(4)
    Z = rng.normal(size=(200, 3))
    y = Z @ [1.0, -2.0, 0.5] + 0.1 * rng.normal(size=200)
    X = Z * [1.0, unit, 1.0]
    X_in, y_in = (da.from_array(X, chunks=(50, 3)), da.from_array(y, chunks=50)) if lazy \
        else (X, y)
    with pytest.raises(InvalidDataError, match=r"column 1 of X .*spread.*underflow.*rescale"):
        ok.DSPDCRegressor(alpha=1e-3, **FAST).fit(X_in, y_in)


def test_chunks_each_constant_whose_means_differ_by_an_underflowing_spread_are_refused():
    """Each chunk constant, the chunks' values 1e-200 apart: the merged spread underflows."""
    X = np.repeat([[1e-200], [2e-200], [3e-200]], 10, axis=0)
    parts = [chunk_moments(X[a:a + 10], None) for a in (0, 10, 20)]
    with pytest.raises(InvalidDataError, match=r"column 0 of X .*spread.*underflow"):
        standardization(combine_moments(*parts), center=True)


def test_constant_columns_and_rows_of_weight_0_are_not_an_underflow():
    """A constant column keeps the scale 1; one whose values differ only on rows of
    weight 0 is constant under the weights."""
    X = np.column_stack([np.full(40, 1e-200), np.r_[np.full(39, 5.0), 6.0],
                         np.arange(40.0)])
    w = np.r_[np.ones(39), 0.0]
    scaled = standardization(combine_moments(chunk_moments(X[:20], w[:20]),
                                             chunk_moments(X[20:], w[20:])), center=True)
    assert scaled["x_scale"][:2] == (1.0, 1.0) and scaled["x_spread"] == 1


@pytest.mark.parametrize("unit", [1e-160, 1e-300])
@pytest.mark.parametrize("lazy", [False, True])
def test_targets_whose_losses_underflow_get_no_certificate(unit, lazy):
    """Every target below about 1e-155: the squared losses underflow float64, so the
    duality gap is 0 or rounding at any iterate; the fit refuses to certify a model
    (which was off by the whole signal) and names the fix, in memory and out of core.
    Targets of 1e-150 still give the model of the targets scaled up."""
    import dask.array as da

    rng = np.random.default_rng(0)
    Z = rng.normal(size=(300, 3))
    y = np.sin(Z[:, 0]) + 0.1 * Z[:, 1]
    X_in, y_in = (da.from_array(Z, chunks=(100, 3)), da.from_array(y * unit, chunks=100)) \
        if lazy else (Z, y * unit)
    kw = dict(alpha=0.01, progress=False, random_state=0)
    with pytest.raises(InvalidDataError, match=r"primal value .* below .*rescale y"):
        ok.DSPDCRegressor(**kw).fit(X_in, y_in)
    plain = ok.DSPDCRegressor(**kw).fit(Z, y)
    small = ok.DSPDCRegressor(**kw).fit(Z, y * 1e-150)
    np.testing.assert_allclose(small.predict(Z) / 1e-150, plain.predict(Z), rtol=1e-9,
                               atol=1e-12)
