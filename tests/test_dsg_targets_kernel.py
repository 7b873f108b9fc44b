"""A classifier's labels encoded by the numba kernel: the same targets as its NumPy twin and
as the sequential reference's encoding, the same first bad row, and the same errors as the
NumPy path of ``encode_targets`` where the kernel does not apply."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from ooc_kernels.exceptions import InvalidDataError
from ooc_kernels.families.dsg._targets import encode_targets
from ooc_kernels.families.dsg.kernels_targets import (BINARY, OVR, SOFTMAX, TARGET_CODES,
                                                      class_targets, class_targets_ref)
from ooc_kernels.families.dsg.reference import _targets as reference_targets

DTYPES = [np.int8, np.int32, np.int64, np.uint8, np.uint64, np.float32, np.float64]


def _labels(dtype, k, n=257, seed=0):
    classes = np.arange(k, dtype=dtype) * 3 + 1          # 1, 4, 7, ...: not 0 .. k-1
    y = np.random.default_rng(seed).choice(classes, n)
    return y.astype(dtype), classes


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("target,k", [("binary", 2), ("softmax", 2), ("softmax", 5),
                                      ("ovr", 5)])
def test_the_kernel_equals_its_twin_and_the_reference(dtype, target, k):
    y, classes = _labels(dtype, k)
    kind = TARGET_CODES[target]
    width = 1 if kind == BINARY else k
    got = np.full((len(y), width), 9.0, dtype=np.float32)
    want = np.full((len(y), width), 7.0, dtype=np.float32)
    assert class_targets(y, classes, kind, got) == -1
    assert class_targets_ref(y, classes, kind, want) == -1
    assert np.array_equal(got, want)
    config = SimpleNamespace(target=target, classes=classes, y_shift=0.0, y_scale=1.0)
    assert np.array_equal(got, reference_targets(config, y))
    config.dtype = "float32"
    assert np.array_equal(encode_targets(config, y, 0), got)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.float32, np.float64])
@pytest.mark.parametrize("kind", [BINARY, SOFTMAX, OVR])
def test_the_first_label_that_is_not_a_class_is_found(dtype, kind):
    y, classes = _labels(dtype, 3 if kind != BINARY else 2)
    for row, value in ((0, 0), (100, 2), (256, 200)):   # below, between and above them
        bad = y.copy()
        bad[row] = value
        out = np.empty((len(y), 1 if kind == BINARY else len(classes)), dtype=np.float32)
        assert class_targets(bad, classes, kind, out) == row
        assert class_targets_ref(bad, classes, kind, out) == row


def test_nan_is_never_a_class():
    y = np.array([1.0, 4.0, np.nan, 1.0])
    out = np.empty((4, 1))
    assert class_targets(y, np.array([1.0, 4.0]), BINARY, out) == 2
    assert class_targets_ref(y, np.array([1.0, 4.0]), BINARY, out) == 2


def _config(classes, target="binary"):
    return SimpleNamespace(target=target, classes=np.asarray(classes), dtype="float32",
                           y_shift=0.0, y_scale=1.0)


def test_classes_that_the_labels_dtype_cannot_hold_are_compared_as_values():
    """300 is 44 in uint8: comparing in the labels' dtype would take the label 44 for it."""
    with pytest.raises(InvalidDataError, match=r"label 44 in chunk 3, row 1 is not one of "
                                               r"the classes \[0, 300\]"):
        encode_targets(_config([0, 300]), np.array([0, 44], dtype=np.uint8), 3)


@pytest.mark.parametrize("y,classes", [
    (np.array([1, 4, 5, 4], dtype=np.int32), [1, 4]),            # the kernel
    (np.array([1.0, 4.0, 5.0, 4.0], dtype=np.float16), [1, 4]),  # NumPy: no float16 in numba
    (np.array([1, 4, 5, 4], dtype=">i4"), [1, 4]),               # NumPy: not native
    (np.array(["1", "4", "5", "4"], dtype=object), ["1", "4"]),  # NumPy: strings
])
def test_both_paths_name_the_same_bad_label(y, classes):
    with pytest.raises(InvalidDataError, match=r"label '?5(\.0)?'? in chunk 2, row 2 is not "
                                               r"one of the classes"):
        encode_targets(_config(classes), y, 2)
    good = y[[0, 1, 3]]
    assert encode_targets(_config(classes), good, 2)[:, 0].tolist() == [-1.0, 1.0, 1.0]
