"""The solver's rows in one pass (``families/dspdc/kernels_scaling.py``): bit for bit the
rows NumPy builds in two passes, for every dtype and layout ``model_rows`` receives."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from ooc_kernels.families.dspdc._scaling import model_rows
from ooc_kernels.families.dspdc.kernels_scaling import standardize_rows, standardize_rows_ref


def _rows(dtype, seed=0, n=257, p=7):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, p)) * np.logspace(-3, 3, p) + 1000.0).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("intercept", [0.0, 1.0, 2.5])
def test_one_pass_rows_equal_numpys_two_passes_bit_for_bit(dtype, intercept):
    rows = _rows(dtype)
    rng = np.random.default_rng(1)
    shift = rng.normal(size=rows.shape[1]) * 1000.0
    scale = rng.uniform(1e-3, 1e3, size=rows.shape[1])
    got = standardize_rows(rows, shift, scale, intercept)
    ref = standardize_rows_ref(rows, shift, scale, intercept)
    assert got.dtype == np.float64 and got.flags.c_contiguous
    assert got.shape == (rows.shape[0], rows.shape[1] + (intercept != 0))
    np.testing.assert_array_equal(got, ref)
    # an independent check of the formula: float64 values, subtraction then division
    np.testing.assert_array_equal(got[:, :rows.shape[1]],
                                  (rows.astype(np.float64) - shift) / scale)


@pytest.mark.parametrize("make", [
    lambda: _rows(np.float32), lambda: _rows(np.float64),
    lambda: np.asfortranarray(_rows(np.float32)), lambda: _rows(np.float64)[::2],
    lambda: _rows(np.float64).astype(np.int64), lambda: _rows(np.float32)[:0]])
def test_model_rows_are_numpys_for_every_layout_and_dtype(make):
    rows = make()
    p = rows.shape[1]
    rng = np.random.default_rng(2)
    cfg = SimpleNamespace(x_shift=tuple(rng.normal(size=p)),
                          x_scale=tuple(rng.uniform(0.5, 2.0, size=p)),
                          intercept_scaling=1.0, factorized=False)
    np.testing.assert_array_equal(
        model_rows(cfg, rows), standardize_rows_ref(rows, cfg.x_shift, cfg.x_scale, 1.0))
