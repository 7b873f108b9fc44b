"""The set-up's statistics of a chunk in numba (``families/dspdc/kernels_scaling.py``):
the column moments and the standardized rows' squared norms against their NumPy twins, and
the twins against a direct two-pass computation."""

from __future__ import annotations

import numpy as np
import pytest

from ooc_kernels.families.dspdc.kernels_scaling import (
    column_moments,
    column_moments_ref,
    standardized_norms,
    standardized_norms_ref,
)


def _chunk(dtype, weighted, seed=0, n=257, p=7):
    rng = np.random.default_rng(seed)
    X = (rng.normal(size=(n, p)) * rng.uniform(0.1, 10, p) + rng.normal(0, 100, p))
    X[:, 2] = 3.25                                   # a constant column: no spread at all
    w = rng.uniform(0, 3, n) if weighted else None
    if weighted:
        w[::5] = 0.0
    return X.astype(dtype), w


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
def test_column_moments_equal_their_twin_and_the_two_pass_moments(dtype, weighted):
    X, w = _chunk(dtype, weighted)
    W, mean, m2 = column_moments(X, w)
    W_ref, mean_ref, m2_ref = column_moments_ref(X, w)
    assert W == W_ref
    np.testing.assert_allclose(mean, mean_ref, rtol=1e-14, atol=0)
    np.testing.assert_allclose(m2, m2_ref, rtol=1e-12, atol=0)
    assert mean[2] == 3.25 and m2[2] == 0.0          # exact for the constant column
    x64 = X.astype(np.float64)                       # the direct two-pass moments
    ww = np.ones(len(X)) if w is None else w
    direct_mean = (ww[:, None] * x64).sum(axis=0) / ww.sum()
    np.testing.assert_allclose(mean, direct_mean, rtol=1e-12)
    np.testing.assert_allclose(m2, (ww[:, None] * (x64 - direct_mean) ** 2).sum(axis=0),
                               rtol=1e-10, atol=1e-9)
    # other layouts go through the twin: the same numbers bit for bit
    F = np.asfortranarray(X)
    assert all(np.array_equal(a, b) for a, b in zip(column_moments(F, w),
                                                    column_moments_ref(F, w)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
def test_standardized_norms_equal_their_twin(dtype, weighted):
    X, w = _chunk(dtype, weighted, seed=1)
    rng = np.random.default_rng(2)
    shift, scale = rng.normal(0, 50, X.shape[1]), rng.uniform(0.5, 5, X.shape[1])
    h = standardized_norms(X, w, shift, scale)
    ref = standardized_norms_ref(X, w, shift, scale)
    np.testing.assert_allclose(h, ref, rtol=1e-14, atol=0)
    x64 = X.astype(np.float64)
    direct = np.array([sum(((x64[i, j] - shift[j]) / scale[j]) ** 2
                           for j in range(X.shape[1])) for i in range(len(X))])
    np.testing.assert_allclose(h, direct if w is None else w * direct, rtol=1e-13)
    F = np.asfortranarray(X)
    assert np.array_equal(standardized_norms(F, w, shift, scale),
                          standardized_norms_ref(F, w, shift, scale))


@pytest.mark.parametrize("dtype, standardize, scaling", [
    (np.float32, True, 1.0), (np.float64, True, 0.0), (np.int64, True, 2.0),
    (np.float64, False, 1.0), (np.float64, False, 0.0)])
def test_model_rows_written_into_a_slice_equal_the_new_array(dtype, standardize, scaling):
    """The solver's rows written into rows of a larger array (``out=``) are the rows
    returned as a new array, bit for bit, and the rest of the array is left alone."""
    from ooc_kernels.families.dspdc._scaling import model_rows
    from ooc_kernels.families.dspdc.solver import DSPDCConfig

    X, _ = _chunk(np.float64, False, seed=3, n=40, p=4)
    X = X.astype(dtype)
    p = X.shape[1] + (1 if scaling else 0)
    cfg = DSPDCConfig(loss_id=0, n_samples=40, n_features=p, lam1=0.0, lam2=1.0,
                      Lambda=1.0, intercept_scaling=scaling,
                      x_shift=tuple(np.linspace(-1, 1, 4)) if standardize else None,
                      x_scale=tuple(np.linspace(0.5, 2, 4)) if standardize else None)
    whole = np.full((60, p), -7.0)
    got = model_rows(cfg, X, out=whole[10:50])
    assert np.shares_memory(got, whole)
    np.testing.assert_array_equal(whole[10:50], model_rows(cfg, X))
    assert (whole[:10] == -7.0).all() and (whole[50:] == -7.0).all()
