"""Generators: determinism, chunk independence, formulas, splits and chunk-wise memory."""

from __future__ import annotations

import hashlib
import tracemalloc

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.svm import SVC

from ooc_kernels.data import (
    available_generators,
    digits_source_split,
    generate_chunk,
    iter_chunks,
    make_dataset,
    open_zarr_dataset,
)
from ooc_kernels.data.generators import chunk_rng, get_generator
from ooc_kernels.exceptions import ValidationError

SMALL = {"digits_deformed": {}, "synthetic_krr_2d": {}, "nonlinear_binary": {"n_features": 5}}


def _xy(chunk):
    """A generated chunk (a dict by variable name) as its ``X`` and ``y``."""
    return chunk["X"], chunk["y"]


def _digest(path) -> str:
    ds = open_zarr_dataset(path)
    h = hashlib.sha256()
    for i in range(len(ds.X.chunks[0])):  # chunk by chunk
        a = sum(ds.X.chunks[0][:i])
        b = a + ds.X.chunks[0][i]
        h.update(ds.X[a:b].values.tobytes())
        h.update(ds.y[a:b].values.tobytes())
    return h.hexdigest()


def test_registry():
    assert available_generators() == ["digits_deformed", "nonlinear_binary", "sparse_recovery",
                                      "synthetic_krr_2d"]
    with pytest.raises(ValidationError, match=r"unknown generator 'mnist'.*'digits_deformed'"):
        make_dataset("mnist", "unused.zarr", 10)


@pytest.mark.parametrize(
    "name, params, match",
    [
        ("synthetic_krr_2d", {"nosie": 0.1}, r"unknown parameter\(s\) \['nosie'\].*noise=0.1"),
        ("synthetic_krr_2d", {"noise": -1.0}, r"noise=-1.0 must lie in \[0.0, inf\]"),
        ("digits_deformed", {"alpha": "big"}, r"alpha='big' must be a number"),
        ("nonlinear_binary", {"n_informative": 9, "n_features": 4}, r"n_informative=9 must be <= n_features=4"),
        ("nonlinear_binary", {"flip": 0.7}, r"flip=0.7 must lie in"),
        ("nonlinear_binary", {"n_features": 2.5}, r"n_features=2.5 must be an integer"),
    ],
)
def test_invalid_params(tmp_path, name, params, match):
    with pytest.raises(ValidationError, match=match):
        make_dataset(name, tmp_path / "x.zarr", 10, **params)
    assert not (tmp_path / "x.zarr").exists()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"split": "valid"}, r"split='valid' is not supported; use one of \['train', 'test'\]"),
        ({"random_state": -3}, r"random_state must be a non-negative integer"),
        ({"random_state": None}, r"random_state must be a non-negative integer"),
        ({"chunk_size": 0}, r"chunk_size must be a positive integer, got 0"),
    ],
)
def test_invalid_arguments(tmp_path, kwargs, match):
    with pytest.raises(ValidationError, match=match):
        make_dataset("synthetic_krr_2d", tmp_path / "x.zarr", 10, **kwargs)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_determinism(tmp_path, name):
    p = SMALL[name]
    a = make_dataset(name, tmp_path / "a.zarr", 230, chunk_size=100, random_state=3, **p)
    b = make_dataset(name, tmp_path / "b.zarr", 230, chunk_size=100, random_state=3, **p)
    c = make_dataset(name, tmp_path / "c.zarr", 230, chunk_size=100, random_state=4, **p)
    d = make_dataset(name, tmp_path / "d.zarr", 230, chunk_size=100, random_state=3,
                     split="test", **p)
    assert _digest(a) == _digest(b)
    assert _digest(a) != _digest(c)
    assert _digest(a) != _digest(d)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_chunk_independence(name):
    """Chunk i depends only on (random_state, split, i, its number of rows, params)."""
    p = SMALL[name]
    streamed = list(iter_chunks(name, 350, chunk_size=100, random_state=5, **p))
    # the same chunks generated alone, in reverse order (as a parallel scheduler might)
    direct = [generate_chunk(name, i, rows, random_state=5, **p)
              for i, rows in reversed(list(enumerate([100, 100, 100, 50])))][::-1]
    for s, d in zip(streamed, direct, strict=True):
        assert list(s) == list(d) == ["X", "y"]  # chunks are dicts by variable name
        np.testing.assert_array_equal(s["X"], d["X"])
        np.testing.assert_array_equal(s["y"], d["y"])
    # full chunks do not depend on n_samples
    longer = list(iter_chunks(name, 1000, chunk_size=100, random_state=5, **p))
    for i in range(3):
        np.testing.assert_array_equal(longer[i]["X"], streamed[i]["X"])
    # chunks are distinct from each other
    assert not np.array_equal(streamed[0]["X"], streamed[1]["X"])


def test_chunk_rng_scheme():
    expected = np.random.default_rng(np.random.SeedSequence(11, spawn_key=(1, 4))).random(3)
    np.testing.assert_array_equal(chunk_rng(11, "test", 4).random(3), expected)


# --- digits_deformed -------------------------------------------------------------------

def test_digits_source_split_is_disjoint_stratified_and_fixed():
    split = digits_source_split()
    train, test = split["train"], split["test"]
    assert len(np.intersect1d(train, test)) == 0
    assert len(train) + len(test) == 1797
    np.testing.assert_array_equal(np.union1d(train, test), np.arange(1797))
    target = load_digits().target
    for c in range(10):
        frac = np.mean(target[test] == c) / np.mean(target == c)
        assert 0.9 < frac < 1.1
    assert abs(len(test) / 1797 - 0.2) < 0.01
    assert np.array_equal(digits_source_split()["test"], test)  # fixed


def _nearest_source(X, images):
    """Index of the closest undeformed source image for each generated sample."""
    d2 = (X**2).sum(1)[:, None] - 2 * X @ images.T + (images**2).sum(1)[None, :]
    return np.argmin(d2, axis=1)


@pytest.mark.parametrize("split", ["train", "test"])
def test_digits_draw_from_their_split_only(split):
    # with no deformation at all, every sample equals a source image exactly
    X, y = _xy(generate_chunk("digits_deformed", 0, 400, split=split, alpha=0.0, max_shift=0.0,
                              noise=0.0))
    digits = load_digits()
    images = (digits.data / 16.0).astype(np.float32)
    src = _nearest_source(X.astype(np.float64), images.astype(np.float64))
    np.testing.assert_allclose(X, images[src], atol=1e-6)
    assert set(src) <= set(digits_source_split()[split])
    np.testing.assert_array_equal(y, digits.target[src])


def test_digits_values_classes_and_deformation():
    X, y = _xy(generate_chunk("digits_deformed", 0, 5000, random_state=1))
    assert X.shape == (5000, 64) and X.dtype == np.float32 and y.dtype == np.int32
    assert X.min() >= 0.0 and X.max() <= 1.0
    counts = np.bincount(y, minlength=10)
    assert counts.min() > 400 and counts.max() < 600  # ~500 each
    # deformed: no sample equals a source image, but each stays close to its class
    images = load_digits().data / 16.0
    src = _nearest_source(X.astype(np.float64), images)
    dist = np.sqrt(((X - images[src]) ** 2).sum(1))
    assert dist.min() > 0.05
    assert np.mean(load_digits().target[src] == y) > 0.9


def test_digits_are_learnable_across_splits():
    Xtr, ytr = _xy(generate_chunk("digits_deformed", 0, 3000, random_state=0, split="train"))
    Xte, yte = _xy(generate_chunk("digits_deformed", 0, 1000, random_state=0, split="test"))
    acc = SVC(kernel="rbf", gamma=0.08, C=10).fit(Xtr, ytr).score(Xte, yte)
    assert acc > 0.95, acc


# --- synthetic_krr_2d ------------------------------------------------------------------

def test_krr_formula_without_noise():
    X, y = _xy(generate_chunk("synthetic_krr_2d", 2, 1000, random_state=9, noise=0.0))
    assert X.dtype == np.float32 and y.dtype == np.float32
    assert X.min() >= -5 and X.max() <= 5 and X.min() < -4.9 and X.max() > 4.9
    r = np.hypot(X[:, 0].astype(np.float64), X[:, 1].astype(np.float64))
    expected = np.cos(0.5 * np.pi * r) * np.exp(-0.1 * np.pi * r)
    np.testing.assert_allclose(y, expected, rtol=0, atol=1e-6)


def test_krr_noise_level():
    X, y = _xy(generate_chunk("synthetic_krr_2d", 0, 20000, noise=0.1))
    X0, y0 = _xy(generate_chunk("synthetic_krr_2d", 0, 20000, noise=0.0))
    np.testing.assert_array_equal(X, X0)  # noise does not change the inputs
    resid = y.astype(np.float64) - y0
    assert abs(resid.std() - 0.1) < 0.005 and abs(resid.mean()) < 0.005


# --- nonlinear_binary ------------------------------------------------------------------

def test_nonlinear_binary_formula_and_balance():
    X, y = _xy(generate_chunk("nonlinear_binary", 0, 4000, n_features=7, n_informative=3))
    assert X.shape == (4000, 7) and set(np.unique(y)) == {0, 1}
    sq = (X[:, :3].astype(np.float64) ** 2).sum(1)
    np.testing.assert_array_equal(y, (sq > 2.365973884375338).astype(int))  # chi2_3 median
    assert abs(y.mean() - 0.5) < 0.03


def test_nonlinear_binary_flip_rate():
    _, y0 = _xy(generate_chunk("nonlinear_binary", 0, 20000, flip=0.0))
    _, y1 = _xy(generate_chunk("nonlinear_binary", 0, 20000, flip=0.2))
    assert abs(np.mean(y0 != y1) - 0.2) < 0.015


def test_nonlinear_binary_not_linearly_separable_but_kernel_learnable():
    Xtr, ytr = _xy(generate_chunk("nonlinear_binary", 0, 2000, random_state=0))
    Xte, yte = _xy(generate_chunk("nonlinear_binary", 0, 1000, random_state=0, split="test"))
    linear = LogisticRegression().fit(Xtr, ytr).score(Xte, yte)
    kernel = SVC(kernel="rbf", gamma=0.03, C=10).fit(Xtr, ytr).score(Xte, yte)
    assert linear < 0.6, linear
    assert kernel > 0.8, kernel


# --- memory ----------------------------------------------------------------------------

def _peak_bytes(path, n, size):
    tracemalloc.start()
    try:
        make_dataset("digits_deformed", path, n, chunk_size=size)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_generation_is_chunk_by_chunk(tmp_path):
    size = 500
    generate_chunk("digits_deformed", 0, 10)  # warm the source-image cache
    small = _peak_bytes(tmp_path / "s.zarr", 10_000, size)
    n = 60_000  # 15 MB of float32 X, 128 KB per chunk
    peak = _peak_bytes(tmp_path / "d.zarr", n, size)
    assert peak < 0.4 * n * 64 * 4, peak
    assert peak < 1.25 * small + 1e6, (peak, small)  # does not grow with n_samples
    assert open_zarr_dataset(tmp_path / "d.zarr").sizes["sample"] == n


def test_make_dataset_attrs(tmp_path):
    p = make_dataset("digits_deformed", tmp_path / "d.zarr", 50, chunk_size=20,
                     random_state=2, split="test", noise=0.0)
    ds = open_zarr_dataset(p)
    spec = get_generator("digits_deformed")
    assert ds.attrs["task"] == "classification" and ds.attrs["classes"] == list(range(10))
    assert ds.attrs["split"] == "test" and ds.attrs["random_state"] == 2
    assert ds.attrs["generator_params"] == {**spec.defaults, "noise": 0.0}
    assert ds.X.chunks == ((20, 20, 10), (64,))
