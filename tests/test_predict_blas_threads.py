"""Predictions do not depend on the BLAS thread count: a lazy prediction (one task per
chunk, ``map_blocks``) and an in-memory one run each chunk under one BLAS thread, so the
caller's ``threadpool_limits`` (or ``OPENBLAS_NUM_THREADS``) changes no bit of them.

The Nystroem bases predict by matrix products large enough for OpenBLAS to split over
threads, which gives other last bits (about 1e-14 here) with 1 and 2 threads.  The bits
are compared with each other, and the values with a plain NumPy evaluation of the fitted
model (the in-memory ``ProjectedKernelRidge`` formula, written out)."""

import dask.array as da
import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import ooc_kernels as ok

N_TRAIN, N_TEST, D, CHUNK = 1500, 3000, 8, 1000


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N_TRAIN, D))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2]
    return X, y, rng.normal(size=(N_TEST, D))


def _predictions(est, X_test):
    """``{(input, threads): predictions}`` for a lazy and an in-memory input under one and
    two BLAS threads (the lazy one on the threaded scheduler, chunks in parallel)."""
    lazy = da.from_array(X_test, chunks=(CHUNK, D))
    out = {}
    for threads in (1, 2):
        with threadpool_limits(threads):
            out["lazy", threads] = np.asarray(est.predict(lazy).compute(scheduler="threads"))
            out["memory", threads] = np.asarray(est.predict(X_test))
    return out


@pytest.mark.parametrize("make", [
    lambda: ok.ProjectedKernelRidge(basis="nystrom-fixed", n_components=300, random_state=0,
                                    scheduler="sync", progress=False, chunk_size=CHUNK),
    lambda: ok.OnlineKernelRidge(basis="nystrom-fixed", n_components=300, random_state=0,
                                 scheduler="sync", progress=False, chunk_size=CHUNK),
], ids=["ProjectedKernelRidge", "OnlineKernelRidge"])
def test_predictions_are_bit_identical_under_one_and_two_blas_threads(make):
    X, y, X_test = _data()
    est = make().fit(X, y)
    out = _predictions(est, X_test)
    reference = out["lazy", 1]
    for key, value in out.items():
        assert value.shape == (N_TEST,)
        assert np.array_equal(value, reference), (
            f"{key}: differs from the lazy prediction under one BLAS thread by "
            f"{np.abs(value - reference).max():.3g}")


def test_the_predictions_are_the_models():
    """The values compared above are the fitted ridge model's: ``ProjectedKernelRidge``
    with ``basis="nystrom-fixed"`` predicts ``phi(x) coef_`` in the targets' units, with
    ``phi`` its Nystroem basis (``basis_.transform``) of the standardized rows."""
    X, y, X_test = _data()
    est = ok.ProjectedKernelRidge(basis="nystrom-fixed", n_components=300, random_state=0,
                                  scheduler="sync", progress=False, chunk_size=CHUNK).fit(X, y)
    with threadpool_limits(1):
        lazy = np.asarray(est.predict(da.from_array(X_test, chunks=(CHUNK, D))).compute())
    Z = (X_test - est.x_shift_) / est.x_scale_
    expected = (est.basis_.transform(Z) @ est.coef_) * est.y_scale_ + est.y_shift_
    np.testing.assert_allclose(lazy, expected, rtol=1e-10, atol=1e-10)
