"""ProjectedKernelRidge and the fixed-dictionary Nystrom basis against independent oracles:
NumPy solves of the normal equations on features computed by the Taylor basis' plain-NumPy
formula, the Nystrom approximation's closed form ``K_nm K_mm^{-1} K_mn``, KRR restricted to
the span of the dictionary, and scikit-learn's exact ``KernelRidge``."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge

import ooc_kernels as ok
from ooc_kernels.exceptions import (
    InvalidDataError,
    InvalidParameterError,
    ModelFormatError,
    ValidationError,
)
from ooc_kernels.families.pkawv.nystrom_fixed import FixedNystromBasis, sample_dictionary
from ooc_kernels.families.pkawv.taylor import TaylorBasis
from ooc_kernels.features.rbf import rbf_kernel


def _data(n=300, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, -1] + 0.1 * rng.normal(size=n)
    return X, y


def _taylor_solve(X, y, *, degree, bandwidth, alpha, center, w=None):
    """The in-memory answer: features from the Taylor basis' formula (its NumPy twin),
    normal equations solved by numpy.linalg.solve."""
    phi = TaylorBasis(X.shape[1], degree, bandwidth).transform_ref(X - center)
    w = np.ones(len(X)) if w is None else w
    a = phi.T @ (phi * w[:, None]) + alpha * np.eye(phi.shape[1])
    return np.linalg.solve(a, phi.T @ (w * y))


def _restricted_krr(X, y, Xt, D, bandwidth, alpha):
    """KRR restricted to span{k(d_j, .)}: ``f(x) = k_xm (K_mn K_nm + alpha K_mm)^{-1} K_mn y``
    (the minimizer of ``||y - K_nm a||^2 + alpha a^T K_mm a``)."""
    knm, kmm = rbf_kernel(X, D, bandwidth), rbf_kernel(D, D, bandwidth)
    a = np.linalg.solve(knm.T @ knm + alpha * kmm, knm.T @ y)
    return rbf_kernel(Xt, D, bandwidth) @ a


# --------------------------------------------------------------------------- Nystrom basis
def test_nystrom_gram_equals_the_nystrom_formula():
    rng = np.random.default_rng(1)
    D = rng.uniform(-1, 1, size=(15, 2))
    X = rng.uniform(-1, 1, size=(40, 2))
    basis = FixedNystromBasis(D, bandwidth=0.7)
    phi = basis.transform(X)
    knm = rbf_kernel(X, D, 0.7)
    expected = knm @ np.linalg.solve(rbf_kernel(D, D, 0.7), knm.T)
    assert basis.n_components == 15
    np.testing.assert_allclose(phi @ phi.T, expected, rtol=0, atol=1e-10)


def test_nystrom_repeated_points_are_dropped_by_the_floor():
    rng = np.random.default_rng(2)
    U = rng.uniform(-1, 1, size=(8, 3))
    D = np.concatenate([U, U[:3]])          # K_mm singular: 11 points, 8 distinct
    X = rng.uniform(-1, 1, size=(25, 3))
    basis = FixedNystromBasis(D, bandwidth=0.8)
    phi = basis.transform(X)
    knu = rbf_kernel(X, U, 0.8)
    expected = knu @ np.linalg.solve(rbf_kernel(U, U, 0.8), knu.T)
    assert basis.n_components == 8
    assert np.isfinite(phi).all()
    np.testing.assert_allclose(phi @ phi.T, expected, rtol=0, atol=1e-9)


def test_full_dictionary_reproduces_exact_kernel_ridge():
    X, y = _data(n=80, d=2, seed=3)
    Xt, _ = _data(n=30, d=2, seed=4)
    model = ok.ProjectedKernelRidge(basis="nystrom-fixed", n_components=200, bandwidth=0.2,
                                        standardize=False,
                                    alpha=0.3, chunk_size=17, scheduler="sync").fit(X, y)
    # every row in the dictionary, K_mm of full rank above the floor
    assert model.dictionary_.shape == (80, 2) and model.n_components_ == 80
    exact = KernelRidge(alpha=0.3, kernel="rbf", gamma=1 / (2 * 0.2 ** 2)).fit(X, y)
    np.testing.assert_allclose(model.predict(Xt), exact.predict(Xt), rtol=0, atol=1e-8)


def test_nystrom_fit_equals_krr_restricted_to_the_dictionary():
    X, y = _data(n=200, d=3, seed=5)
    Xt, _ = _data(n=40, d=3, seed=6)
    model = ok.ProjectedKernelRidge(basis="nystrom-fixed", n_components=25, bandwidth=0.6,
                                        standardize=False,
                                    alpha=1.0, chunk_size=30, chunks_per_round=3,
                                    random_state=0, scheduler="sync").fit(X, y)
    D = model.dictionary_
    assert D.shape == (25, 3)
    assert all(np.any(np.all(X == row, axis=1)) for row in D)   # training rows
    np.testing.assert_allclose(model.predict(Xt),
                               _restricted_krr(X, y, Xt, D, 0.6, 1.0), rtol=0, atol=1e-8)


def test_sample_dictionary_is_uniform_and_reads_only_the_chunks_it_needs():
    reads = []

    def record(block, block_info=None):
        reads.append(block_info[0]["chunk-location"][0])
        return block

    X = da.from_array(np.arange(2000.0).reshape(1000, 2), chunks=(10, 2))
    D = sample_dictionary(X.map_blocks(record, dtype=X.dtype), 3, seed=7, scheduler="sync")
    assert D.shape == (3, 2) and len(set(reads)) <= 3
    assert np.array_equal(D[:, 1] - D[:, 0], np.ones(3))        # whole rows of X
    # the same rows whatever the chunking
    same = sample_dictionary(X.rechunk((333, 2)), 3, seed=7, scheduler="sync")
    np.testing.assert_array_equal(D, same)
    # every row drawn with probability m / n (binomial: mean 500, sd 19.4 over 2000 draws)
    small = np.arange(20.0)[:, None]
    counts = np.zeros(20)
    for seed in range(2000):
        counts[sample_dictionary(small, 5, seed=seed).astype(int)[:, 0]] += 1
    assert counts.sum() == 10_000 and np.all(np.abs(counts - 500) < 100)


# --------------------------------------------------------------------------- the batch solve
@pytest.mark.parametrize("chunk_size, chunks_per_round", [(300, 1), (37, 1), (37, 3),
                                                          (10, 7)])
def test_taylor_solution_equals_the_in_memory_solve(chunk_size, chunks_per_round):
    X, y = _data()
    w = np.random.default_rng(8).uniform(0.2, 2.0, size=len(y))
    model = ok.ProjectedKernelRidge(degree=3, alpha=0.5, chunk_size=chunk_size,
                                    standardize=False,
                                    chunks_per_round=chunks_per_round, random_state=0,
                                    scheduler="sync").fit(X, y, sample_weight=w)
    expected = _taylor_solve(X, y, degree=3, bandwidth=model.bandwidth_, alpha=0.5,
                             center=model.center_, w=w)
    assert model.n_components_ == 20 and model.n_samples_seen_ == 300
    np.testing.assert_allclose(model.coef_, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("scheduler", ["threads", "distributed"])
def test_lazy_fit_on_other_schedulers_equals_the_in_memory_solve(scheduler, request):
    sched = request.getfixturevalue("dask_client") if scheduler == "distributed" \
        else scheduler
    X, y = _data(n=250, d=2, seed=9)
    Xd, yd = da.from_array(X, chunks=(23, 2)), da.from_array(y, chunks=23)
    model = ok.ProjectedKernelRidge(degree=4, bandwidth=1.0, center=False, chunks_per_round=4,
                                    standardize=False, alpha=1.0,
                                    random_state=0, scheduler=sched).fit(Xd, yd)
    expected = _taylor_solve(X, y, degree=4, bandwidth=1.0, alpha=1.0, center=0.0)
    np.testing.assert_allclose(model.coef_, expected, rtol=1e-10, atol=1e-12)
    pred = model.predict(Xd)
    assert isinstance(pred, da.Array)
    np.testing.assert_allclose(pred.compute(scheduler="sync"), model.predict(X), rtol=1e-12)


def test_partial_fit_stream_equals_one_fit_on_the_concatenation():
    X, y = _data(n=240, seed=10)
    params = dict(degree=3, bandwidth=0.9, center=False, standardize=False, chunk_size=25,
                  alpha=1.0, scheduler="sync")
    stream = ok.ProjectedKernelRidge(**params)
    for lo in range(0, 240, 80):
        stream.partial_fit(X[lo:lo + 80], y[lo:lo + 80])
    whole = ok.ProjectedKernelRidge(**params).fit(X, y)
    expected = _taylor_solve(X, y, degree=3, bandwidth=0.9, alpha=1.0, center=0.0)
    np.testing.assert_allclose(stream.coef_, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(whole.coef_, expected, rtol=1e-10, atol=1e-12)


def test_large_degree_converges_to_exact_kernel_ridge():
    X, y = _data(n=120, d=2, seed=11)
    Xt, _ = _data(n=30, d=2, seed=12)
    model = ok.ProjectedKernelRidge(degree=18, bandwidth=1.5, alpha=0.5, center=False,
                                    standardize=False,
                                    scheduler="sync").fit(X, y)
    exact = KernelRidge(alpha=0.5, kernel="rbf", gamma=1 / (2 * 1.5 ** 2)).fit(X, y)
    np.testing.assert_allclose(model.predict(Xt), exact.predict(Xt), rtol=0, atol=1e-8)


def test_skipped_rows_give_the_fit_of_the_clean_rows():
    X, y = _data(n=100, seed=13)
    Xbad = X.copy()
    Xbad[[5, 60], 1] = np.nan
    keep = np.setdiff1d(np.arange(100), [5, 60])
    params = dict(degree=2, bandwidth=1.0, center=False, standardize=False, chunk_size=30,
                  alpha=1.0, scheduler="sync")
    Xd = da.from_array(Xbad, chunks=(30, 3))
    with pytest.raises(InvalidDataError, match=r"row (5|0) of the group of chunks \[(0|2)\] has NaN or inf in X"):
        ok.ProjectedKernelRidge(**params).fit(Xd, da.from_array(y, chunks=30))
    model = ok.ProjectedKernelRidge(**params, on_invalid="skip").fit(
        Xd, da.from_array(y, chunks=30))
    expected = _taylor_solve(X[keep], y[keep], degree=2, bandwidth=1.0, alpha=1.0,
                             center=0.0)
    assert model.n_samples_skipped_ == 2 and model.n_samples_seen_ == 98
    np.testing.assert_allclose(model.coef_, expected, rtol=1e-10, atol=1e-12)


def test_save_and_load_a_nystrom_model(tmp_path):
    X, y = _data(n=120, seed=14)
    model = ok.ProjectedKernelRidge(basis="nystrom-fixed", n_components=30, random_state=1,
                                    scheduler="sync").fit(X, y)
    model.save(tmp_path / "m.zarr")
    loaded = ok.load(tmp_path / "m.zarr")
    np.testing.assert_array_equal(loaded.dictionary_, model.dictionary_)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_restore_refuses_a_model_without_its_dictionary():
    X, y = _data(n=60, seed=15)
    model = ok.ProjectedKernelRidge(basis="nystrom-fixed", n_components=10, random_state=0,
                                    scheduler="sync").fit(X, y)
    arrays = model._fitted_arrays()
    del arrays["dictionary"]
    with pytest.raises(ModelFormatError, match="has the array 'dictionary'"):
        model._restore_fitted(arrays, model._fitted_meta(), "model.zarr")


# --------------------------------------------------------------------------- bad input
def test_bad_parameters_and_inputs_get_library_errors():
    X, y = _data(n=40, d=30)
    with pytest.raises(InvalidParameterError, match="'basis' parameter"):
        ok.ProjectedKernelRidge(basis="nystrom").fit(X, y)
    with pytest.raises(InvalidParameterError, match="'alpha' parameter"):
        ok.ProjectedKernelRidge(alpha=0.0).fit(X, y)
    with pytest.raises(ValidationError, match="has 46376 features, more than the 10000"):
        ok.ProjectedKernelRidge(degree=4, scheduler="sync").fit(X, y)
    with pytest.raises(InvalidDataError, match="dictionary has NaN or inf in row 1"):
        FixedNystromBasis([[0.0, 1.0], [np.nan, 0.0]], bandwidth=1.0)
    with pytest.raises(ValidationError, match="bandwidth must be a positive finite"):
        FixedNystromBasis([[0.0, 1.0]], bandwidth=0.0)
    with pytest.raises(ValidationError, match="n_components must be a positive integer"):
        sample_dictionary(X, 0, seed=0)
    with pytest.raises(InvalidDataError, match=r"row 3 of X \(drawn for the Nystrom"):
        Xn = np.zeros((5, 2))
        Xn[3, 0] = np.inf
        sample_dictionary(Xn, 10, seed=0)
    with pytest.raises(ValidationError, match="the Nystrom dictionary has 2 features"):
        FixedNystromBasis([[0.0, 1.0]], bandwidth=1.0).transform(np.zeros((3, 5)))


def test_default_fit_is_computed_out_of_core():
    """Only chunk tasks read X: a fit on a Dask array never materializes it whole."""
    X, y = _data(n=200, seed=16)
    Xd = da.from_array(X, chunks=(20, 3))
    sizes = []

    def record(block):
        sizes.append(len(block))
        return block

    with dask.config.set(scheduler="sync"):
        ok.ProjectedKernelRidge(basis="nystrom-fixed", n_components=15, random_state=0,
                                scheduler="sync").fit(
            Xd.map_blocks(record, dtype=Xd.dtype), da.from_array(y, chunks=20))
    assert sizes and max(sizes) == 20


def test_auto_degree_follows_the_truncation_bound_and_the_budget():
    import math

    rng = np.random.default_rng(17)
    x = rng.uniform(-2, 2, size=(400, 1))
    model = ok.ProjectedKernelRidge(bandwidth=1.0, center=False, standardize=False,
                                    scheduler="sync").fit(
        x, np.sin(x[:, 0]))
    radius = np.abs(x).max()
    expected = next(m for m in range(1, 200)
                    if radius ** (2 * m + 2) / math.factorial(m + 1) <= 1e-6)
    assert model.degree_ == expected and model.n_components_ == expected + 1
    X18 = rng.uniform(-1, 1, size=(50, 18))
    wide = ok.ProjectedKernelRidge(scheduler="sync").fit(X18, X18[:, 0])
    assert (wide.degree_, wide.n_components_) == (2, 190)   # C(20, 2); C(21, 3) > 1000
    small = ok.ProjectedKernelRidge(n_components=10, scheduler="sync").fit(X18, X18[:, 0])
    assert (small.degree_, small.n_components_) == (1, 19)   # never below degree 1


def test_batch_model_equals_the_online_krr_learner_after_its_last_row():
    """Online KRR-mode PKAWV after the last row holds ``(Phi^T Phi + alpha I)^{-1} Phi^T
    y`` (Sherman-Morrison row by row): the batch solve of the same basis predicts alike."""
    X, y = _data(n=200, d=2, seed=18)
    Xt, _ = _data(n=20, d=2, seed=19)
    batch = ok.ProjectedKernelRidge(degree=5, bandwidth=0.8, alpha=0.7, center=False,
                                    standardize=False,
                                    scheduler="sync").fit(X, y)
    online = ok.OnlineKernelRidge(degree=5, bandwidth=0.8, alpha=0.7, mode="krr",
                                  standardize=False, chunk_size=64, scheduler="sync").fit(X, y)
    np.testing.assert_allclose(batch.predict(Xt), online.predict(Xt), rtol=0, atol=1e-9)
