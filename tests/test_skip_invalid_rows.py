"""``on_invalid="skip"``: rows with NaN or inf in ``X`` or in a regression target are left out
whether the input is a NumPy or a Dask array, and ``n_samples_skipped_`` counts each such
row once, however many epochs visit it (``n_samples_seen_`` counts the visits)."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok

rng = np.random.default_rng(0)
X = rng.normal(size=(300, 3))
Y = np.sin(X[:, 0])
BAD_Y = Y.copy()
BAD_Y[[7, 150]] = [np.nan, np.inf]
BAD_X = X.copy()
BAD_X[5, 1] = np.nan
QUIET = dict(random_state=0, progress=False, scheduler="sync")
REGRESSORS = {
    "DSGRegressor": lambda: ok.DSGRegressor(n_features=256, max_iter=2, tol=None,
                                            chunk_size=100, on_invalid="skip", **QUIET),
    "DSGGaussianProcessRegressor": lambda: ok.DSGGaussianProcessRegressor(  # exact mean:
        chunk_size=100, on_invalid="skip", **QUIET),                         # no epochs
    "OnlineKernelRidge": lambda: ok.OnlineKernelRidge(chunk_size=100, on_invalid="skip",
                                                      **QUIET),
    "ProjectedKernelRidge": lambda: ok.ProjectedKernelRidge(chunk_size=100,
                                                            on_invalid="skip", **QUIET),
}


@pytest.mark.parametrize("name", sorted(REGRESSORS))
def test_numpy_targets_with_nan_or_inf_are_skipped_as_dask_ones_are(name):
    numpy = REGRESSORS[name]().fit(X, BAD_Y)
    lazy = REGRESSORS[name]().fit(da.from_array(X, chunks=(100, 3)),
                                  da.from_array(BAD_Y, chunks=100))
    assert numpy.n_samples_skipped_ == lazy.n_samples_skipped_ == 2
    np.testing.assert_allclose(numpy.predict(X), lazy.predict(X), rtol=1e-12, atol=1e-12)


def test_a_numpy_target_of_another_length_is_still_refused():
    with pytest.raises(ok.exceptions.ValidationError, match="inconsistent numbers"):
        REGRESSORS["DSGRegressor"]().fit(X, BAD_Y[:-1])


@pytest.mark.parametrize("max_iter", [1, 3])
def test_an_invalid_row_is_counted_once_however_many_epochs_visit_it(max_iter):
    reg = ok.DSGRegressor(n_features=256, max_iter=max_iter, tol=None, chunk_size=100,
                          on_invalid="skip", **QUIET).fit(BAD_X, Y)
    assert reg.n_samples_skipped_ == 1
    assert reg.n_samples_seen_ == max_iter * (len(X) - 1)
    clf = ok.DSGClassifier(n_features=256, max_iter=max_iter, tol=None, chunk_size=100,
                           chunks_per_round=2, on_invalid="skip", **QUIET)
    assert clf.fit(BAD_X, Y > 0).n_samples_skipped_ == 1
    ocsvm = ok.DSGOneClassSVM(n_features=256, max_iter=max_iter, tol=None, chunk_size=100,
                              on_invalid="skip", **QUIET)
    assert ocsvm.fit(BAD_X).n_samples_skipped_ == 1


def test_online_kernel_ridge_counts_the_rows_it_skips(tmp_path):
    model = ok.OnlineKernelRidge(chunk_size=100, on_invalid="skip", max_iter=2, **QUIET)
    model.fit(BAD_X, BAD_Y)
    assert model.n_samples_skipped_ == 3
    model.save(tmp_path / "m.zarr")
    assert ok.load(tmp_path / "m.zarr").n_samples_skipped_ == 3
    assert ok.OnlineKernelRidge(**QUIET).fit(X, Y).n_samples_skipped_ == 0
