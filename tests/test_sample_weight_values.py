"""Invalid sample weights are refused by one shared check, naming the offending weight:
in memory before any work (its index and value), lazily chunk by chunk when read (its chunk,
row and value), for every estimator that takes ``sample_weight``; weights that are all zero
leave nothing to learn from and are refused rather than fitted into a model of zeros."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
from sklearn.linear_model import Ridge

import ooc_kernels as ok
from ooc_kernels.exceptions import InvalidDataError, ValidationError

FAST = dict(random_state=0, scheduler="sync", progress=False, chunk_size=20)
DSG = dict(n_features=128, block_size=32, batch_size=8, max_iter=2, tol=None)
WEIGHTED = {
    "DSGRegressor": lambda: ok.DSGRegressor(**DSG, **FAST),
    "DSGClassifier": lambda: ok.DSGClassifier(**DSG, **FAST),
    "DSGOneClassSVM": lambda: ok.DSGOneClassSVM(**DSG, **FAST),
    "DSPDCRegressor": lambda: ok.DSPDCRegressor(max_iter=5, **FAST),
    "ProjectedKernelRidge": lambda: ok.ProjectedKernelRidge(degree=2, **FAST),
}
N = 60


def _data(lazy: bool):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=N)
    if lazy:
        return da.from_array(X, chunks=(20, 3)), da.from_array(y, chunks=20)
    return X, y


def _fit(name, X, y, w):
    est = WEIGHTED[name]()
    if name == "DSGOneClassSVM":
        return est.fit(X, sample_weight=w)
    return est.fit(X, (y > 0).astype(int) if name == "DSGClassifier" else y, sample_weight=w)


@pytest.mark.parametrize("name", sorted(WEIGHTED))
@pytest.mark.parametrize("value", [-2.5, np.nan, np.inf])
def test_an_invalid_in_memory_weight_is_named_by_index_and_value(name, value):
    X, y = _data(lazy=False)
    w = np.ones(N)
    w[[31, 40]] = value
    with pytest.raises(ValidationError, match=rf"sample_weight\[31\] is {value!r} \(2 of "
                                              rf"the 60 weights are\b.*\); .*fix or drop"):
        _fit(name, X, y, w)


@pytest.mark.parametrize("name", sorted(WEIGHTED))
def test_a_negative_lazy_weight_is_named_by_chunk_and_row(name):
    X, y = _data(lazy=True)
    w = np.ones(N)
    w[45] = -5.0
    with pytest.raises(InvalidDataError, match=r"sample_weight -5.0 in chunk 2, row 5 is not "
                                               r"a finite number >= 0; fix or drop"):
        _fit(name, X, y, da.from_array(w, chunks=20))


def test_lazy_weights_that_are_all_zero_are_refused():
    X, y = _data(lazy=True)
    with pytest.raises(ValidationError, match=r"sample_weight.*0 for every row|nothing to "
                                              r"learn"):
        _fit("ProjectedKernelRidge", X, y, da.zeros(N, chunks=20))


def test_valid_lazy_weights_give_the_weighted_ridge():
    """The shared check lets valid weights through unchanged: a zero-weight row is a row
    left out, as scikit-learn's weighted Ridge on the same normal equations."""
    X, y = _data(lazy=False)
    w = np.r_[np.zeros(5), np.full(N - 5, 2.0)]
    est = ok.DSPDCRegressor(alpha=0.1, standardize=False, fit_intercept=False, tol=1e-12,
                            max_iter=2000, **FAST)
    est.fit(da.from_array(X, chunks=(20, 3)), da.from_array(y, chunks=20),
            sample_weight=da.from_array(w, chunks=20))
    ref = Ridge(alpha=0.1 * w.sum(), fit_intercept=False).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(est.coef_.ravel(), ref.coef_, atol=1e-8)


@pytest.mark.parametrize("name", ["DSGClassifier", "DSGOneClassSVM", "DSGRegressor"])
@pytest.mark.parametrize("bandwidth", [1.0, "measured"])
def test_lazy_weights_that_are_all_zero_are_refused_by_the_dsg_estimators(name, bandwidth):
    """A data set the set-up reads whole: refused there, with a numeric bandwidth (no
    constant model) and a measured one (not a median heuristic short of rows)."""
    X, y = _data(lazy=True)
    est = WEIGHTED[name]()
    if bandwidth == "measured":
        bandwidth = "median" if name == "DSGOneClassSVM" else "auto"
    est.set_params(bandwidth=bandwidth)
    with pytest.raises(ValidationError, match=r"sample_weight is zero on every row read "
                                              r"\(.*\): every weight read is 0.*give some "
                                              r"rows a positive weight"):
        est.fit(X, *(() if name == "DSGOneClassSVM" else
                     ((y > 0).astype(int) if name == "DSGClassifier" else y,)),
                sample_weight=da.zeros(N, chunks=20))


def _large(n=1300):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, 3))
    return da.from_array(X, chunks=(100, 3)), da.from_array((X[:, 0] > 0).astype(int),
                                                            chunks=100)


@pytest.mark.parametrize("cls", [ok.DSGClassifier, ok.DSGRegressor])
def test_lazy_all_zero_weights_on_data_the_set_up_samples_end_the_first_epoch(cls):
    """More rows than the set-up reads: the first epoch sums every weight and refuses 0."""
    X, y = _large()
    est = cls(bandwidth=1.0, **DSG, **FAST)
    with pytest.raises(ValidationError, match=r"sample_weight is zero on every row read "
                                              r"\(epoch 1, a pass over every chunk"):
        est.fit(X, y, sample_weight=da.zeros(X.shape[0], chunks=100))


def test_a_bandwidth_measured_on_sampled_rows_of_weight_0_names_sample_weight():
    X, y = _large()
    with pytest.raises(ValidationError, match=r"sample_weight is zero on every one of the "
                                              r"\d+ rows sampled to measure "
                                              r"bandwidth='auto'.*numeric bandwidth"):
        ok.DSGClassifier(bandwidth="auto", **DSG, **FAST).fit(
            X, y, sample_weight=da.zeros(X.shape[0], chunks=100))


@pytest.mark.parametrize("name", ["DSGClassifier", "DSGOneClassSVM", "DSGRegressor",
                                  "DSPDCRegressor"])
@pytest.mark.parametrize("value, why", [(1e308, "the sum of the weights overflows float64"),
                                        (1e-320, r"weights this small \(subnormal")])
@pytest.mark.parametrize("lazy", [False, True])
def test_weights_whose_sum_overflows_or_are_subnormal_name_sample_weight(name, value, why,
                                                                         lazy):
    """Not column 0 of X, a zero Lambda or non-finite coefficients: the weights' scale."""
    X, y = _data(lazy=False)
    w = np.full(N, value)
    with pytest.raises(ValidationError, match=rf"^sample_weight sums to \S+ over all 60 rows"
                                              rf"\b.*: {why}.*; rescale the weights"):
        _fit(name, X, y, da.from_array(w, chunks=20) if lazy else w)


@pytest.mark.parametrize("c", [1e300, 1e-300])
def test_dspdc_weights_scaled_by_a_constant_give_the_same_weighted_ridge(c):
    """Only the weights' ratios matter to DSPDC (as the refusal above says): weights times
    1e300 or 1e-300 give scikit-learn's Ridge of the unscaled weights."""
    X, y = _data(lazy=False)
    w = np.r_[np.zeros(5), np.linspace(0.5, 2.0, N - 5)]
    est = ok.DSPDCRegressor(alpha=0.1, standardize=False, fit_intercept=False, tol=1e-12,
                            max_iter=2000, **FAST).fit(X, y, sample_weight=w * c)
    ref = Ridge(alpha=0.1 * w.sum(), fit_intercept=False).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(est.coef_.ravel(), ref.coef_, atol=1e-8)
