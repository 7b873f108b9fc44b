"""The cost of a DSPDC epoch: the kernels' all-columns path (``q = p``) against the sampled
algorithm, and the standardized rows of a task against a plain-NumPy oracle."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from ooc_kernels.families.dspdc._scaling import model_rows
from ooc_kernels.families.dspdc.kernels import (
    dspdc_dense_iterations,
    dspdc_dense_iterations_ref,
    primal_prox,
    sample_without_replacement_ref,
)
from ooc_kernels.losses import LOSS_LOGISTIC, LOSS_SMOOTHED_HINGE, LOSS_SQUARED
from ooc_kernels._jit.losses import dual_prox

LOSSES = [LOSS_SQUARED, LOSS_SMOOTHED_HINGE, LOSS_LOGISTIC]


def _problem(loss, n, p, seed, dtype=np.float64):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, p))
    s = A @ rng.normal(size=p) + 0.3 * rng.normal(size=n)
    b = s if loss == LOSS_SQUARED else np.where(s > 0, 1.0, -1.0)
    return A.astype(dtype), b


def _sampled_loops(A, b, y, x, xbar, z, n_total, ru, cu, m, q, theta, tau, sigma, loss, lam1,
                   lam2, shift=None, weights=None):
    """Algorithm 1 as the sampled kernel runs it, one scalar at a time in Python (IEEE double,
    the same operations in the same order): ``I`` and ``J`` drawn by Floyd's sampler, then
    the dual step, the primal step on ``J``, ``z += A_I^T dy`` and the extrapolation."""
    n_rows, p = A.shape
    ext = float(n_rows) / float(m)
    prev = None
    for t in range(len(ru)):
        I = sample_without_replacement_ref(n_rows, m, ru[t])
        J = sample_without_replacement_ref(p, q, cu[t])
        dy = []
        for i in I:
            c = 0.0
            for j in range(p):
                c += float(A[i, j]) * xbar[j]
            y_new = dual_prox(loss, c, y[i], float(b[i]), sigma, float(n_total))
            d = y_new - y[i]
            y[i] = y_new
            dy.append(d * weights[i] if weights is not None else d)
        xold = []
        for j in J:
            s = 0.0
            for k, i in enumerate(I):
                s += float(A[i, j]) * dy[k]
            xold.append(x[j])
            v = x[j] - tau * (z[j] + ext * s) / float(n_total)
            if shift is not None:
                v += tau * shift[j]
            x[j] = primal_prox(v, tau, lam1, lam2)
        for k, i in enumerate(I):
            if dy[k] != 0.0:
                for j in range(p):
                    z[j] += float(A[i, j]) * dy[k]
        if prev is None:
            xbar[:] = x
        else:
            xbar[prev] = x[prev]
        for l, j in enumerate(J):
            xbar[j] = xold[l] + (theta + 1.0) * (x[j] - xold[l])
        prev = J


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("m", [1, 3])
@pytest.mark.parametrize("lam1", [0.0, 0.02])
@pytest.mark.parametrize("layout", ["C", "F", "float32"])
def test_all_columns_path_is_the_sampled_algorithm_bit_for_bit(loss, m, lam1, layout):
    """With ``q = p`` Floyd's sampler lists every coordinate, ``0 .. p - 1`` in order
    whatever the uniforms; the kernel's fused loop over them gives the iterates of the
    sampled algorithm bit for bit, with a tilt and weights too, smooth (``lam1 = 0``) or
    not, on rows in C or Fortran order (the prefetch of the next row with ``m = 1`` steps
    by cache lines or by entries) and on float32 rows."""
    n, p, T = 23, 7 if layout == "C" else 11, 80
    A, b = _problem(loss, n, p, seed=m)
    if layout == "F":
        A = np.asfortranarray(A)
    elif layout == "float32":
        A = A.astype(np.float32)
    rng = np.random.default_rng(10 + m)
    ru, cu = rng.random((T, m)), rng.random((T, p))
    assert all(np.array_equal(sample_without_replacement_ref(p, p, u), np.arange(p))
               for u in cu)
    shift, weights = rng.normal(size=p), rng.uniform(0.0, 2.0, size=n)
    for extra in ({}, {"shift": shift, "weights": weights}):
        start = (rng.normal(size=n) * (loss == LOSS_SQUARED), rng.normal(size=p),
                 rng.normal(size=p), rng.normal(size=p))
        fast = tuple(a.copy() for a in start)
        slow = tuple(a.copy() for a in start)
        args = (40, ru, cu, m, p, 1.7, 0.3, 0.8, loss, lam1, 0.1)
        dspdc_dense_iterations(A, b, *fast, *args, **extra)
        _sampled_loops(A, b, *slow, *args, **extra)
        for got, want in zip(fast, slow):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_all_columns_path_equals_the_twin_and_reads_no_column_uniform(dtype):
    """The vectorised twin (sampled ``J``) agrees to rounding; column uniforms of NaN change
    nothing, since none is read when ``q = p``."""
    n, p, T, m = 30, 6, 90, 2
    A, b = _problem(LOSS_LOGISTIC, n, p, seed=4, dtype=dtype)
    rng = np.random.default_rng(5)
    ru, cu = rng.random((T, m)), rng.random((T, p))
    runs = [tuple(np.zeros(k) for k in (n, p, p, p)) for _ in range(3)]
    args = (50, ru, cu, m, p, 0.9, 0.5, 2.0, LOSS_LOGISTIC, 0.0, 0.05)
    dspdc_dense_iterations(A, b, *runs[0], *args)
    dspdc_dense_iterations(A, b, *runs[1], *args[:2], np.full((T, p), np.nan), *args[3:])
    dspdc_dense_iterations_ref(A, b, *runs[2], *args)
    for a, nan, twin in zip(*runs):
        np.testing.assert_array_equal(a, nan)
        np.testing.assert_allclose(a, twin, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("standardize, intercept", [(True, 1.0), (True, 0.0), (False, 2.5),
                                                    (False, 0.0)])
def test_model_rows_equal_the_plain_numpy_rows(dtype, standardize, intercept):
    """A task's rows, written once into one float64 array, are exactly
    ``[(a - shift) / scale, c]`` computed the plain way (float64 first, then each step);
    factorized rows ``U`` only get the constant column."""
    rng = np.random.default_rng(3)
    X = (rng.normal(size=(9, 4)) * [1e-3, 1.0, 1e3, 5.0] + [0.0, 1000.0, 0.0, 1.0]).astype(dtype)
    shift, scale = tuple(rng.normal(size=4)), tuple(rng.uniform(0.5, 3.0, size=4))
    for factorized in (False, True):
        cfg = SimpleNamespace(x_shift=shift if standardize else None,
                              x_scale=scale if standardize else None,
                              intercept_scaling=intercept, factorized=factorized)
        want = X.astype(np.float64)
        if standardize and not factorized:
            want = (want - np.array(shift)) / np.array(scale)
        if intercept:
            want = np.column_stack([want, np.full(len(X), intercept)])
        got = model_rows(cfg, X)
        assert got.dtype == np.float64 and got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)


def test_a_duals_file_cut_short_or_of_another_kind_is_a_corrupt_chunk_error(tmp_path):
    """A version's file is its header (the checksum) then the array: a file cut short, or one
    that is not such a file, is refused with the chunk and the version named."""
    from ooc_kernels._chunk_store import ChunkStore
    from ooc_kernels.exceptions import CorruptChunkError

    store = ChunkStore(tmp_path / "w")
    y = np.linspace(-1.0, 1.0, 40)
    store.write("y", 2, (3, 1), y)
    (version_file,) = (tmp_path / "w" / "y" / "c0000002").iterdir()
    raw = version_file.read_bytes()
    np.testing.assert_array_equal(store.read("y", 2, (3, 1), n_rows=40), y)
    version_file.write_bytes(raw[:-8])
    with pytest.raises(CorruptChunkError, match=r"chunk 2 at version \(epoch, round\) = "
                                                r"\(3, 1\) cannot be read"):
        store.read("y", 2, (3, 1), n_rows=40)
    np.save(version_file.with_suffix(".npy"), y)
    version_file.with_suffix(".npy").replace(version_file)      # a bare .npy: no checksum
    with pytest.raises(CorruptChunkError, match=r"chunk 2 at version \(3, 1\).*damaged"):
        store.read("y", 2, (3, 1), n_rows=40)
