"""DSGOneClassSVM on a Nystrom basis (``basis="nystroem"``).

* The map's Gram matrix ``phi(X) phi(Y)^T`` is the Nystrom approximation ``K_XL K_LL^+
  K_LY`` computed in plain NumPy (``np.linalg.pinv``), and the exact kernel when the
  landmarks are the rows themselves.
* The landmark draw is reproducible by seed, independent of the chunking, and reads the
  chunks of the store, not a sample of a few of them.
* The fixed-basis kernel equals its NumPy twin, and a fit through the chunk engine equals
  the twin's steps on the model's own features.
* Saved and loaded, the model scores the same; a file with landmarks missing or changed is
  refused.
* On a small problem the Nystrom basis ranks test rows closer to the exact
  ``OneClassSVM`` than random features of the same number.
"""

import dask.array as da
import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.svm import OneClassSVM

import ooc_kernels as ok
from ooc_kernels.exceptions import InvalidParameterError, ModelFormatError, ValidationError
from ooc_kernels.families.dsg.kernels_one_class import (one_class_fixed_update,
                                                        one_class_fixed_update_ref)
from ooc_kernels.families.dsg.one_class_solver import fixed_features
from ooc_kernels.features.nystroem import FixedNystromBasis
from ooc_kernels.parallel.sampling import sample_dictionary

pytestmark = pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")
FAST = dict(random_state=0, scheduler="sync", progress=False)


def _gauss(A, B, sigma):
    """The Gaussian kernel, written out."""
    sq = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return np.exp(-sq / (2 * sigma ** 2))


def _blobs(n, rng, d=3):
    centers = np.array([[-2.0, 0.0, 1.0], [2.0, 1.0, -1.0], [0.0, -2.0, 0.0]])[:, :d]
    return centers[rng.integers(0, 3, n)] + 0.7 * rng.normal(size=(n, d))


# --------------------------------------------------------------------------- the map
def test_gram_of_the_map_is_the_nystrom_approximation():
    rng = np.random.default_rng(0)
    L, X, Y = rng.normal(size=(12, 3)), rng.normal(size=(20, 3)), rng.normal(size=(9, 3))
    basis = FixedNystromBasis(L, bandwidth=1.3)
    want = _gauss(X, L, 1.3) @ np.linalg.pinv(_gauss(L, L, 1.3)) @ _gauss(L, Y, 1.3)
    np.testing.assert_allclose(basis.transform(X) @ basis.transform(Y).T, want, atol=1e-8)
    exact = FixedNystromBasis(X, bandwidth=1.3)          # landmarks = the rows: exact
    np.testing.assert_allclose(exact.transform(X) @ exact.transform(X).T,
                               _gauss(X, X, 1.3), atol=1e-8)


def test_repeated_landmarks_are_floored_not_inverted():
    rng = np.random.default_rng(1)
    L = rng.normal(size=(5, 2))
    basis = FixedNystromBasis(np.vstack([L, L[:2]]), bandwidth=0.9)
    assert basis.n_components == 5
    X = rng.normal(size=(7, 2))
    want = _gauss(X, L, 0.9) @ np.linalg.solve(_gauss(L, L, 0.9), _gauss(L, X, 0.9))
    np.testing.assert_allclose(basis.transform(X) @ basis.transform(X).T, want, atol=1e-7)


def test_fixed_features_standardize_the_rows_first():
    rng = np.random.default_rng(2)
    det = ok.DSGOneClassSVM(nu=0.2, basis="nystroem", n_features=32, block_size=16,
                            max_iter=1, tol=None, **FAST).fit(3.0 + 5.0 * _blobs(300, rng))
    cfg, X = det._config, rng.normal(size=(6, 3))
    Z = (X - np.array(cfg.x_shift)) / np.array(cfg.x_scale)
    L = det.landmarks_
    want = _gauss(Z, L, cfg.bandwidth) @ np.linalg.pinv(_gauss(L, L, cfg.bandwidth)) @ \
        _gauss(L, Z, cfg.bandwidth)
    F = fixed_features(det._basis, cfg, X)
    np.testing.assert_allclose(F @ F.T, want, atol=1e-8)


# --------------------------------------------------------------------------- the draw
def test_landmark_draw_is_reproducible_and_independent_of_the_chunking():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1000, 3))
    read = []

    def record(block, block_info=None):
        read.append(block_info[0]["chunk-location"][0])
        return block

    a = sample_dictionary(da.from_array(X, chunks=(100, 3)).map_blocks(record,
                                                                       dtype=X.dtype),
                          40, seed=5, scheduler="sync")
    b = sample_dictionary(da.from_array(X, chunks=(333, 3)), 40, seed=5, scheduler="sync")
    c = sample_dictionary(X, 40, seed=5)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, sample_dictionary(X, 40, seed=6))
    rows = [int(np.flatnonzero((X == r).all(1))[0]) for r in a]
    assert rows == sorted(rows) and len(set(rows)) == 40          # distinct rows of X
    assert sorted(set(read)) == sorted(set(r // 100 for r in rows))  # only their chunks
    # the estimator's landmarks: the same rows whatever the chunk size
    fits = [ok.DSGOneClassSVM(nu=0.2, basis="nystroem", n_features=32, block_size=16,
                              chunk_size=cs, max_iter=1, tol=None, **FAST).fit(X)
            for cs in (1000, 128)]
    raw = [f.landmarks_ * np.array(f._config.x_scale) + np.array(f._config.x_shift)
           for f in fits]
    np.testing.assert_allclose(raw[0], raw[1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(raw[0], sample_dictionary(X, 32, seed=_seed13(fits[0])),
                               rtol=1e-12, atol=1e-12)


def _seed13(det):
    from ooc_kernels._seeds import derive_seed

    return derive_seed(det.random_seed_, 13)


def test_a_small_data_set_is_its_own_landmarks():
    X = np.random.default_rng(4).normal(size=(40, 2))
    det = ok.DSGOneClassSVM(nu=0.2, basis="nystroem", n_features=64, block_size=32,
                            max_iter=1, tol=None, **FAST).fit(X)
    cfg = det._config
    np.testing.assert_allclose(det.landmarks_ * np.array(cfg.x_scale) + np.array(cfg.x_shift),
                               X, atol=1e-12)
    assert cfg.n_blocks == 2 and det.coef_.shape == (2, 32, 1)


# --------------------------------------------------------------------------- the steps
@pytest.mark.parametrize("batch", [1, 4, 7])
@pytest.mark.parametrize("spread", [1.0, 1e-3])
def test_fixed_kernel_matches_its_numpy_twin(batch, spread):
    # the kernel applies the whitening C to the coefficients; the twin forms the features
    # z = K C.  spread=1e-3: landmarks in near-repeated pairs, K_LL's condition number
    # near the floor's 1e10 (a step through C C^T = K_LL^+ loses every digit there)
    rng = np.random.default_rng(5)
    n, m = 30, 10
    L = rng.normal(size=(m // 2, 2))
    L = np.vstack([L, L + spread * rng.normal(size=L.shape)])
    X = rng.normal(size=(n, 2))
    basis = FixedNystromBasis(L, bandwidth=1.0)
    K, C = _gauss(X, L, 1.0), basis.components
    sw = rng.uniform(0.5, 1.5, n)
    coef = 0.3 * rng.normal(size=basis.n_components)
    gammas = 1.0 / (np.arange(-(-n // batch)) + 2.0)
    got = one_class_fixed_update(K, sw, coef, 0.1, gammas, (0.3, batch, 0.3), C)
    want = one_class_fixed_update_ref(K, sw, coef, 0.1, gammas, (0.3, batch, 0.3), C)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(got[1:], want[1:], rtol=1e-9, atol=1e-9)
    f = K @ C @ coef
    assert (f < 0.1).any() and (f >= 0.1).any()              # both branches taken


@pytest.mark.parametrize("n, d, m, b", [(200, 3, 32, 8), (2048, 16, 256, 64)])
def test_fit_equals_the_twins_steps_on_its_own_features(n, d, m, b):
    # (2048, 16, 256, 64): the shape of the benchmark's problem (blobs in 16-D, 256
    # landmarks, batches of 64)
    rng = np.random.default_rng(6)
    centers = rng.uniform(-3, 3, size=(4, d))               # 4 blobs, the bandwidth wide
    X = _blobs(n, rng) if d == 3 else centers[rng.integers(0, 4, n)] + 0.7 * rng.normal(
        size=(n, d))
    det = ok.DSGOneClassSVM(nu=0.3, basis="nystroem", n_features=m, block_size=16,
                            learning_rate="inverse", eta0=2.0, t0=3.0, batch_size=b,
                            max_iter=2, tol=None, shuffle=False, chunk_size=n,
                            offset="paper", dtype="float64", **FAST).fit(X)
    basis, cfg = det._basis, det._config
    Z = fixed_features(basis, cfg, X)                        # z(x) = C^T k(x, L)
    coef, tau, steps = np.zeros(basis.n_components), 0.0, n // b
    for epoch in range(2):                                   # SGD on z, written out
        for s in range(steps):
            gamma = 2.0 / (epoch * steps + s + 1.0 + 3.0)       # 1-based global steps
            Zb = Z[b * s:b * s + b]
            out = (Zb @ coef < tau).astype(float)
            coef = coef * (1 - gamma * 0.3) + gamma / b * (out @ Zb)
            tau -= gamma * (out.mean() - 0.3)
    np.testing.assert_allclose(det.coef_.reshape(-1)[:basis.n_components], coef,
                               rtol=1e-8, atol=1e-10)
    assert not det.coef_.reshape(-1)[basis.n_components:].any()
    assert det.tau_ == pytest.approx(tau, rel=1e-10, abs=1e-12)
    np.testing.assert_allclose(det.score_samples(X), Z @ coef, rtol=1e-8, atol=1e-10)


# --------------------------------------------------------------------------- ranking
def test_nystroem_basis_ranks_closer_to_the_exact_solver_than_random_features():
    rng = np.random.default_rng(7)
    X, Xt = _blobs(3000, rng), rng.uniform(-4, 4, size=(1000, 3))
    corr = {}
    for basis in ("random", "nystroem"):
        det = ok.DSGOneClassSVM(nu=0.1, basis=basis, n_features=128, block_size=64,
                                **FAST).fit(X)
        cfg = det._config
        shift, scale = np.array(cfg.x_shift), np.array(cfg.x_scale)
        exact = OneClassSVM(nu=0.1, gamma=0.5 / det.bandwidth_ ** 2).fit((X - shift) / scale)
        corr[basis] = spearmanr(exact.decision_function((Xt - shift) / scale),
                                det.decision_function(Xt))[0]
    assert corr["nystroem"] > 0.99, corr
    assert corr["nystroem"] > corr["random"], corr


# --------------------------------------------------------------------------- persistence
def test_save_and_load_keep_the_basis(tmp_path):
    rng = np.random.default_rng(8)
    X = _blobs(500, rng)
    det = ok.DSGOneClassSVM(nu=0.2, basis="nystroem", n_features=64, block_size=32,
                            chunk_size=200, **FAST).fit(X)
    det.save(tmp_path / "m")
    back = ok.load(tmp_path / "m")
    np.testing.assert_array_equal(back.landmarks_, det.landmarks_)
    np.testing.assert_array_equal(back.decision_function(X), det.decision_function(X))
    assert back.offset_ == det.offset_
    plain = ok.DSGOneClassSVM(nu=0.2, basis="random", n_features=64, block_size=32,
                              max_iter=1, tol=None, **FAST).fit(X)
    plain.save(tmp_path / "plain")
    assert ok.load(tmp_path / "plain").landmarks_ is None      # a model without a basis


def test_changed_or_missing_landmarks_are_refused(tmp_path):
    import shutil

    import zarr

    X = _blobs(300, np.random.default_rng(9))
    det = ok.DSGOneClassSVM(nu=0.2, basis="nystroem", n_features=32, block_size=32,
                            max_iter=1, tol=None, **FAST).fit(X)
    det.save(tmp_path / "m")
    group = zarr.open_group(str(tmp_path / "m"), mode="r+")
    values = group["landmarks"][...]
    values[0, 0] += 1.0
    group["landmarks"][...] = values
    with pytest.raises(ModelFormatError, match=r"array 'landmarks' fails its CRC32C"):
        ok.load(tmp_path / "m")
    shutil.rmtree(tmp_path / "m" / "landmarks")
    with pytest.raises(ModelFormatError, match=r"\['landmarks'\] listed in its checksums "
                                               r"are missing"):
        ok.load(tmp_path / "m")


def test_restoring_a_basis_that_disagrees_with_the_model_is_refused():
    X = _blobs(300, np.random.default_rng(10))
    det = ok.DSGOneClassSVM(nu=0.2, basis="nystroem", n_features=32, block_size=32,
                            max_iter=1, tol=None, **FAST).fit(X)
    arrays, meta = det._fitted_arrays(), det._fitted_meta()
    other = ok.DSGOneClassSVM(nu=0.2, basis="nystroem", n_features=32, block_size=32)
    other.n_features_in_ = 3
    with pytest.raises(ModelFormatError, match=r"only one of the basis metadata and the "
                                               r"landmarks"):
        other._restore_fitted({"coef": arrays["coef"]}, meta, "m")
    with pytest.raises(ModelFormatError, match=r"landmarks has shape \(32, 2\)"):
        other._restore_fitted({**arrays, "landmarks": arrays["landmarks"][:, :2]}, meta, "m")
    with pytest.raises(ModelFormatError, match=r"the metadata says 31"):
        other._restore_fitted(arrays, {**meta, "basis": {**meta["basis"],
                                                         "n_components": 31}}, "m")
    random = ok.DSGOneClassSVM(nu=0.2, basis="random", n_features=32, block_size=32)
    random.n_features_in_ = 3
    with pytest.raises(ModelFormatError, match=r"has basis='random' but landmarks"):
        random._restore_fitted(arrays, meta, "m")


# --------------------------------------------------------------------------- bad input
def test_unknown_basis_is_refused():
    X = np.random.default_rng(0).normal(size=(50, 2))
    with pytest.raises(InvalidParameterError, match=r"'basis' parameter of DSGOneClassSVM "
                                                    r"must be a str among"):
        ok.DSGOneClassSVM(basis="landmarks", **FAST).fit(X)


def test_nystroem_basis_with_another_kernel_is_refused():
    X = np.random.default_rng(0).normal(size=(50, 2))
    with pytest.raises(ValidationError, match=r"basis='nystroem' is built for the Gaussian "
                                              r"kernel, got kernel='laplacian'"):
        ok.DSGOneClassSVM(basis="nystroem", kernel="laplacian", **FAST).fit(X)


def test_nystroem_basis_with_kernel_params_is_refused():
    X = np.random.default_rng(0).normal(size=(50, 2))
    with pytest.raises(ValidationError, match=r"basis='nystroem' is built for the Gaussian "
                                              r"kernel, got kernel='sum'"):
        ok.DSGOneClassSVM(basis="nystroem", kernel="sum",
                          kernel_params={"terms": "0.5*rbf+0.5*rbf@4"}, **FAST).fit(X)


def test_rows_with_nan_are_never_landmarks_with_skip():
    X = np.random.default_rng(0).normal(size=(200, 2))
    X[::3, 0] = np.nan
    det = ok.DSGOneClassSVM(basis="nystroem", n_features=256, block_size=64,
                            on_invalid="skip", max_iter=1, tol=None, **FAST)
    det.fit(da.from_array(X, chunks=(50, 2)))
    assert det.landmarks_.shape == (133, 2) and np.isfinite(det.landmarks_).all()
    r = det._basis.n_components          # 2-D rows: K_LL has fewer than 133 directions
    assert r <= 133 and det._config.n_blocks == -(-r // 64)
