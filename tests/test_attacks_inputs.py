"""Attacks by a careless or hostile user on what a fit accepts: widths whose square
overflows, class labels that cannot be sorted, thread counts of every type, and data that
is chunked the wrong way or bad in its last chunk only.  Each must end in the library's
own error (``ooc_kernels.exceptions``) before any work, or work as documented."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels._threads import task_threads
from ooc_kernels.exceptions import (DivergenceError, InputTypeError, InvalidParameterError,
                                    SchemaError, ValidationError)
from ooc_kernels.features.rbf import MAX_BANDWIDTH, MIN_BANDWIDTH, rbf_kernel

pytestmark = pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")

RNG = np.random.default_rng(0)
X = RNG.normal(size=(120, 3))
Y = X[:, 0] > 0
FAST = dict(random_state=0, scheduler="sync", progress=False)
DSG = dict(n_features=64, block_size=32, batch_size=16, max_iter=1, tol=None, chunk_size=40, **FAST)

ESTIMATORS = {
    "DSGClassifier": lambda bw: ok.DSGClassifier(bandwidth=bw, **DSG).fit(X, Y),
    "DSGOneClassSVM": lambda bw: ok.DSGOneClassSVM(bandwidth=bw, basis="nystroem", **DSG)
    .fit(X),
    "DSGDensityRatio": lambda bw: ok.DSGDensityRatio(bandwidth=bw, n_features=64,
                                                     block_size=32, max_iter=1, tol=None, **FAST)
    .fit(X, X + 0.5),
    "ProjectedKernelRidge": lambda bw: ok.ProjectedKernelRidge(
        bandwidth=bw, basis="nystrom-fixed", n_components=16, **FAST).fit(X, X[:, 0]),
    "OnlineKernelRidge": lambda bw: ok.OnlineKernelRidge(bandwidth=bw, **FAST)
    .fit(X, X[:, 0]),
}


@pytest.mark.parametrize("bandwidth", [1e200, 1e-200, 1e308, 5e-324])
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_a_width_whose_square_overflows_is_refused_by_the_parameter_check(name, bandwidth):
    # sigma**2 overflows (OverflowError) or 1 / sigma**2 divides by zero in float64
    with pytest.raises(InvalidParameterError, match=r"'bandwidth' parameter .* \[1e-30, 1e\+30\]"):
        ESTIMATORS[name](bandwidth)


@pytest.mark.parametrize("name", ["DSGClassifier", "DSGOneClassSVM", "ProjectedKernelRidge"])
def test_the_widest_and_narrowest_accepted_widths_end_in_a_model_or_the_librarys_error(name):
    # meaningless widths: the fit may diverge, but says so in the library's own words
    for bandwidth in (MIN_BANDWIDTH, MAX_BANDWIDTH):
        try:
            ESTIMATORS[name](bandwidth)
        except DivergenceError as err:
            assert "non-finite coefficients" in str(err)


@pytest.mark.parametrize("bandwidth", [1e-200, 1e200])
def test_a_per_input_width_outside_the_range_is_refused(bandwidth):
    with pytest.raises(ValidationError, match=r"bandwidth\[0\] = 1e[+-]200 .*within "
                                              r"\[1e-30, 1e\+30\]"):
        ok.DSGRegressor(bandwidth=[bandwidth, 1.0, 1.0], **DSG).fit(X, X[:, 0])


def test_the_exact_kernel_refuses_an_unusable_width_and_keeps_the_edge_ones():
    with pytest.raises(ValidationError, match=r"outside \[1e-30, 1e\+30\]"):
        rbf_kernel(X[:2], X[:2], 1e200)
    # the edges of the range still give the closed form exp(-d^2 / (2 sigma^2))
    d2 = ((X[0] - X[1]) ** 2).sum()
    K = rbf_kernel(X[:2] * MIN_BANDWIDTH, X[:2] * MIN_BANDWIDTH, MIN_BANDWIDTH)
    assert K[0, 1] == pytest.approx(np.exp(-d2 / 2.0), rel=1e-12)
    assert rbf_kernel(X[:2], X[:2], MAX_BANDWIDTH)[0, 1] == 1.0


@pytest.mark.parametrize("labels", [
    np.array([{}] * 60 + [{"a": 1}] * 60, dtype=object),
    np.array([1] * 60 + ["a"] * 60, dtype=object),
], ids=["dicts", "int and str"])   # None among labels: a missing label, test_missing_labels.py
def test_class_labels_that_cannot_be_sorted_are_an_input_type_error(labels):
    with pytest.raises(InputTypeError, match=r"class labels cannot be sorted .* all "
                                             r"numbers or all strings"):
        ok.DSGClassifier(**DSG).fit(X, labels)
    with pytest.raises(InputTypeError, match=r"class labels cannot be sorted"):
        ok.DSGClassifier(**DSG).partial_fit(X, labels, classes=labels)


def test_labels_as_objects_of_one_kind_are_classes():
    labels = np.where(Y, "yes", "no").astype(object)
    clf = ok.DSGClassifier(**DSG).fit(X, labels)
    assert clf.classes_.tolist() == ["no", "yes"]


@pytest.mark.parametrize("n_jobs", [np.int64(2), np.int32(-1), 10**6, -10**6])
def test_any_integer_thread_count_is_accepted_and_gives_the_one_thread_model(n_jobs):
    one = ok.DSGClassifier(n_jobs=1, **DSG).fit(X, Y)
    many = ok.DSGClassifier(n_jobs=n_jobs, **DSG).fit(X, Y)
    np.testing.assert_array_equal(many.coef_, one.coef_)


@pytest.mark.parametrize("n_jobs", [0, 2.0, "2", None.__class__])
def test_a_thread_count_that_is_not_one_is_refused_before_the_fit(n_jobs):
    with pytest.raises(InvalidParameterError, match=r"'n_jobs' parameter of DSGClassifier"):
        ok.DSGClassifier(n_jobs=n_jobs, **DSG).fit(X, Y)


@pytest.mark.parametrize("n_jobs", [True, np.bool_(True), 0, 1.0, "1"])
def test_task_threads_refuses_what_is_not_a_count(n_jobs):
    with pytest.raises(ValidationError, match=r"is not a thread count"):
        task_threads(n_jobs)


def test_task_threads_takes_numpy_integers_as_ints():
    assert task_threads(np.int64(3)) == 3 and type(task_threads(np.int64(3))) is int
    assert task_threads(np.int8(-1)) >= 1


def test_a_dask_array_of_unknown_chunk_sizes_is_refused_with_the_fix():
    dX = da.from_array(X, chunks=(40, 3))
    unknown = dX[dX[:, 0] > -100]
    with pytest.raises(ValidationError, match=r"unknown chunk sizes .*compute_chunk_sizes"):
        ok.DSGClassifier(**DSG).fit(unknown, Y)
    clf = ok.DSGClassifier(**DSG).fit(X, Y)
    with pytest.raises(ValidationError, match=r"unknown chunk sizes"):
        clf.predict(unknown)


def test_a_dask_array_chunked_along_features_is_refused_with_the_fix():
    dX = da.from_array(X, chunks=(40, 2))
    with pytest.raises(SchemaError, match=r"chunked along the feature axis .*rechunk"):
        ok.DSGClassifier(**DSG).fit(dX, Y)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_bad_value_in_the_last_chunk_only_is_refused_before_a_checkpoint_is_written(
        tmp_path, bad):
    Xb = X.copy()
    Xb[-1, 2] = bad
    dX = da.from_array(Xb, chunks=(40, 3))
    checkpoint = tmp_path / "ckpt.zarr"
    with pytest.raises(ValidationError, match=r"Input X contains (NaN|infinity)|non-finite"):
        ok.DSGClassifier(**DSG).fit(dX, Y, checkpoint=checkpoint, checkpoint_every=1)
    assert not checkpoint.exists() and list(tmp_path.iterdir()) == []


def test_y_of_the_wrong_length_or_shape_is_refused():
    with pytest.raises(ValidationError, match=r"inconsistent numbers of samples"):
        ok.DSGClassifier(**DSG).fit(X, Y[:-1])
    with pytest.raises(ValidationError, match=r"y has 2 columns \(shape \(120, 2\)\), and "
                       r"DSGClassifier fits one target.*MultiOutputClassifier"):
        ok.DSGClassifier(**DSG).fit(X, np.array([[1, 2]] * len(X), dtype=object))
