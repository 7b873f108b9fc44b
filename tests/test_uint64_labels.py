"""Integer labels that float64 cannot hold (uint64 at or above 2**63) stay exact: a
classifier fits them from NumPy and Dask inputs and predicts the original values."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.families.dsg._targets import class_array
from ooc_kernels.families.dsg.kernels_targets import (BINARY, class_targets,
                                                      class_targets_ref)

LABELS = np.array([1, 2**63 + 5], dtype=np.uint64)
rng = np.random.default_rng(0)
X = rng.normal(size=(300, 3))
Y = LABELS[(X[:, 0] > 0).astype(int)]


@pytest.mark.parametrize("lazy", [False, True])
def test_uint64_labels_beyond_float64_are_fitted_and_predicted_exactly(lazy, tmp_path):
    Xf, yf = (da.from_array(X, chunks=(100, 3)), da.from_array(Y, chunks=100)) if lazy \
        else (X, Y)
    clf = ok.DSGClassifier(n_features=256, max_iter=2, tol=None, random_state=0,
                           progress=False, scheduler="sync").fit(Xf, yf)
    assert clf.classes_.dtype == np.uint64
    assert clf.classes_.tolist() == [1, 2**63 + 5]
    predicted = clf.predict(X)
    assert predicted.dtype == np.uint64 and set(predicted.tolist()) == set(LABELS.tolist())
    assert np.mean(predicted == Y) > 0.9
    clf.save(tmp_path / "m.zarr")
    np.testing.assert_array_equal(ok.load(tmp_path / "m.zarr").predict(X), predicted)


def test_classes_of_a_config_keep_integers_beyond_int64():
    assert class_array((1, 2**63 + 5)).tolist() == [1, 2**63 + 5]
    assert class_array((-1, 2**63 + 5)).tolist() == [-1, 2**63 + 5]   # objects
    assert class_array((0.5, 2.0)).dtype == np.float64


@pytest.mark.parametrize("encode", [class_targets, class_targets_ref])
def test_the_target_kernel_and_its_twin_encode_uint64_labels_beyond_2_63(encode):
    out = np.zeros((len(Y), 1))
    assert encode(Y, LABELS, BINARY, out) == -1
    np.testing.assert_array_equal(out[:, 0], np.where(Y == LABELS[1], 1.0, -1.0))


def test_a_class_weight_keyed_by_uint64_labels_beyond_2_63_is_saved_exactly(tmp_path):
    weights = {LABELS[0]: 1.0, LABELS[1]: 3.0}
    clf = ok.DSGClassifier(n_features=256, max_iter=2, tol=None, random_state=0,
                           class_weight=weights, progress=False, scheduler="sync").fit(X, Y)
    clf.save(tmp_path / "m.zarr")
    back = ok.load(tmp_path / "m.zarr")
    assert back.class_weight == weights
    assert [type(k) for k in back.class_weight] == [np.uint64, np.uint64]
    np.testing.assert_array_equal(back.predict(X), clf.predict(X))
