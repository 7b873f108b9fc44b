"""Schema validation, the chunk-by-chunk Zarr writer and lazy opening."""

from __future__ import annotations

import os
import tracemalloc

import dask.array as da
import numpy as np
import pytest
import xarray as xr
import zarr

from ooc_kernels.data import (
    SCHEMA_VERSION,
    generate_chunk,
    make_attrs,
    make_dataset,
    open_zarr_dataset,
    validate_dataset,
    write_chunks,
)
from ooc_kernels.data.zarr_io import chunk_bounds, n_chunks
from ooc_kernels.exceptions import (
    DatasetExistsError,
    SchemaError,
    ValidationError,
)


def _valid(n=10, d=3, chunk=4, task="classification"):
    rng = np.random.default_rng(0)
    X = rng.random((n, d), dtype=np.float32)
    if task == "classification":
        y = (np.arange(n) % 2).astype(np.int32)
        attrs = make_attrs(task, classes=[0, 1])
    else:
        y = rng.random(n, dtype=np.float32)
        attrs = make_attrs(task)
    ds = xr.Dataset({"X": (("sample", "feature"), X), "y": (("sample",), y)}, attrs=attrs)
    return ds.chunk({"sample": chunk})


def test_valid_dataset_passes_and_is_returned():
    ds = _valid()
    assert validate_dataset(ds) is ds
    assert validate_dataset(_valid(task="regression")) is not None


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda ds: ds.drop_vars("X"), r"variable 'X': expected a data variable"),
        (lambda ds: ds.drop_vars("y"), r"variable 'y': expected a data variable.*require_y"),
        (lambda ds: ds.rename({"feature": "f"}), r"'X': expected dims \('sample', 'feature'\)"),
        (lambda ds: ds.assign(X=ds.X.transpose()), r"'X': expected dims.*found dims \('feature', 'sample'\)"),
        (lambda ds: ds.assign(X=ds.X.astype("float64")), r"'X': expected dtype float32, found float64.*astype"),
        (lambda ds: ds.assign(y=ds.y.astype("float32")), r"'y': expected an integer dtype.*found float32"),
        (lambda ds: ds.chunk({"feature": 1}), r"'X': expected a single chunk along 'feature'.*ds.chunk\(\{'feature': -1\}\)"),
        (lambda ds: ds.assign(y=ds.y.chunk({"sample": 5})), r"'y': expected the same sample chunks as 'X' \(4, 4, 2\), found \(5, 5\)"),
        (lambda ds: ds.isel(sample=slice(0, 0)), r"'X': expected at least one sample.*empty"),
        (lambda ds: xr.Dataset({"X": ds.X, "y": ds.y.isel(sample=slice(0, 7)).rename(sample="s2")}, attrs=ds.attrs),
         r"'y': expected dims \('sample',\)"),
        (lambda ds: ds.assign_attrs(task="ranking"), r"'task' must be one of.*'ranking'"),
        (lambda ds: ds.assign_attrs(classes=[1, 0]), r"'classes' must be sorted"),
    ],
)
def test_each_violation_raises_schema_error(mutate, match):
    with pytest.raises(SchemaError, match=match):
        validate_dataset(mutate(_valid()))


def test_length_mismatch_in_store(tmp_path):
    # xarray cannot even hold X and y of different lengths along 'sample': the check
    # happens on the Zarr metadata, before xarray sees the store
    g = zarr.open_group(str(tmp_path / "m.zarr"), mode="w", zarr_format=3)
    g.create_array("X", shape=(10, 3), chunks=(5, 3), dtype="float32",
                   dimension_names=("sample", "feature"))
    g.create_array("y", shape=(7,), chunks=(5,), dtype="float32", dimension_names=("sample",))
    g.attrs.update(make_attrs("regression"))
    with pytest.raises(SchemaError, match=r"'y': expected 10 samples \(the length of 'X'\), found 7"):
        open_zarr_dataset(tmp_path / "m.zarr")


@pytest.mark.parametrize(
    "attrs, match",
    [
        ({"ooc_kernels_schema_version": 99, "task": "regression"}, r"unsupported schema version.*99"),
        ({"ooc_kernels_schema_version": "1", "task": "regression"}, r"must be an int, found '1'"),
    ],
)
def test_attribute_violations(attrs, match):
    ds = _valid(task="regression") if attrs["task"] == "regression" else _valid()
    with pytest.raises(SchemaError, match=match):
        validate_dataset(ds.drop_attrs().assign_attrs(attrs))


@pytest.mark.parametrize("attrs", [
    {"task": "regression"},                                   # no schema version
    {"ooc_kernels_schema_version": 1, "task": "classification"},  # no classes
    {},                                                       # nothing at all
])
def test_library_attributes_are_optional(attrs):
    # the version, task and classes are recorded when known, inferred otherwise
    for task in ("regression", "classification"):
        ds = _valid(task=task)
        validate_dataset(ds.drop_attrs().assign_attrs(attrs if attrs.get("task", task) == task
                                                      else {}))


def test_not_a_dataset():
    with pytest.raises(SchemaError, match="expected an xarray.Dataset, found ndarray"):
        validate_dataset(np.zeros((2, 2)))


def test_validation_is_lazy_never_computes():
    X = da.from_delayed(
        __import__("dask").delayed(lambda: 1 / 0)(), shape=(6, 2), dtype=np.float32
    ).rechunk((3, 2))
    ds = xr.Dataset({"X": (("sample", "feature"), X),
                     "y": (("sample",), da.zeros(6, chunks=3, dtype=np.float32))},
                    attrs=make_attrs("regression"))
    validate_dataset(ds)  # would raise ZeroDivisionError if any data were read


# --- writer ----------------------------------------------------------------------------

def _chunks_of(X, y, size):
    for i in range(n_chunks(len(X), size)):
        a, b = chunk_bounds(i, len(X), size)
        yield X[a:b], y[a:b]


def test_writer_round_trip_and_lazy_open(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.random((25, 4), dtype=np.float32)
    y = rng.integers(0, 3, 25).astype(np.int64)
    p = write_chunks(tmp_path / "d.zarr", _chunks_of(X, y, 10), n_samples=25, n_features=4,
                     chunk_size=10, y_dtype="int16", attrs=make_attrs("classification",
                                                                       classes=[0, 1, 2]))
    ds = open_zarr_dataset(p)
    assert isinstance(ds.X.data, da.Array)
    assert ds.X.chunks == ((10, 10, 5), (4,))
    assert ds.y.chunks == ((10, 10, 5),)
    assert ds.y.dtype == np.int16
    np.testing.assert_array_equal(ds.X.values, X)
    np.testing.assert_array_equal(ds.y.values, y)
    assert ds.attrs["ooc_kernels_schema_version"] == SCHEMA_VERSION
    # xarray's own opener sees the dimension names (written natively)
    raw = xr.open_zarr(p, chunks={})
    assert raw.X.dims == ("sample", "feature")
    # the Zarr chunking itself is along samples only
    assert zarr.open_group(str(p), mode="r")["X"].chunks == (10, 4)


def test_generated_store_equals_direct_chunk_generation(tmp_path):
    params = dict(n_features=6, n_informative=2, flip=0.1)
    p = make_dataset("nonlinear_binary", tmp_path / "nb.zarr", 250, chunk_size=100,
                     random_state=7, **params)
    ds = open_zarr_dataset(p)
    for i, (a, b) in enumerate([(0, 100), (100, 200), (200, 250)]):
        chunk = generate_chunk("nonlinear_binary", i, b - a, random_state=7, **params)
        np.testing.assert_array_equal(ds.X[a:b].values, chunk["X"])
        np.testing.assert_array_equal(ds.y[a:b].values, chunk["y"])
    assert ds.attrs["generator"] == "nonlinear_binary"
    assert ds.attrs["generator_params"] == params
    assert ds.attrs["classes"] == [0, 1]


class Boom(RuntimeError):
    pass


def _failing(n_ok):
    for i in range(n_ok):
        yield np.zeros((5, 2), np.float32), np.zeros(5, np.float32)
    raise Boom("simulated failure mid-write")


def _leftovers(folder):
    return sorted(n for n in os.listdir(folder) if n.startswith("."))


def test_interrupted_write_leaves_nothing(tmp_path):
    target = tmp_path / "d.zarr"
    with pytest.raises(Boom, match="simulated failure"):
        write_chunks(target, _failing(2), n_samples=20, n_features=2, chunk_size=5,
                     y_dtype="float32", attrs=make_attrs("regression"))
    assert not target.exists()
    assert _leftovers(tmp_path) == []


def test_interrupted_overwrite_keeps_previous_dataset(tmp_path):
    target = tmp_path / "d.zarr"
    make_dataset("synthetic_krr_2d", target, 30, chunk_size=10)
    before = open_zarr_dataset(target).X.values
    with pytest.raises(Boom, match="simulated failure"):
        write_chunks(target, _failing(2), n_samples=20, n_features=2, chunk_size=5,
                     y_dtype="float32", attrs=make_attrs("regression"), overwrite=True)
    np.testing.assert_array_equal(open_zarr_dataset(target).X.values, before)
    assert _leftovers(tmp_path) == []


def test_overwrite_semantics(tmp_path):
    target = tmp_path / "d.zarr"
    make_dataset("synthetic_krr_2d", target, 30, chunk_size=10, random_state=0)
    with pytest.raises(DatasetExistsError, match="already exists; pass overwrite=True"):
        make_dataset("synthetic_krr_2d", target, 30, chunk_size=10, random_state=1)
    assert isinstance(DatasetExistsError("x"), FileExistsError)
    make_dataset("synthetic_krr_2d", target, 40, chunk_size=10, random_state=1, overwrite=True)
    ds = open_zarr_dataset(target)
    assert ds.sizes["sample"] == 40 and ds.attrs["random_state"] == 1
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize(
    "chunks, match",
    [
        ([(np.zeros((5, 3), np.float32), np.zeros(5))], r"chunk 0: X has shape \(5, 3\), expected \(5, 2\)"),
        ([(np.zeros((5, 2), np.float32), np.zeros(4))], r"chunk 0: y has shape \(4,\), expected \(5,\)"),
        ([(np.zeros((5, 2), np.float32), np.zeros(5))], r"stopped after 5 of n_samples=10"),
        ([(np.zeros((5, 2), np.float32), np.zeros(5))] * 3, r"more than the 2 chunks"),
    ],
)
def test_writer_rejects_bad_chunks(tmp_path, chunks, match):
    with pytest.raises(ValidationError, match=match):
        write_chunks(tmp_path / "d.zarr", iter(chunks), n_samples=10, n_features=2,
                     chunk_size=5, y_dtype="float32", attrs=make_attrs("regression"))
    assert not (tmp_path / "d.zarr").exists() and _leftovers(tmp_path) == []


def test_writer_holds_one_chunk_at_a_time(tmp_path):
    n, d, size = 40_000, 64, 2_000  # 10 MB of float32 in total, 0.5 MB per chunk

    def chunks():
        for i in range(n // size):
            yield (np.full((size, d), i, np.float32), np.zeros(size, np.int32))

    tracemalloc.start()
    try:
        write_chunks(tmp_path / "big.zarr", chunks(), n_samples=n, n_features=d,
                     chunk_size=size, y_dtype="int32", attrs=make_attrs("classification",
                                                                         classes=[0]))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 0.4 * n * d * 4, peak


# --- opening ----------------------------------------------------------------------------

def test_open_missing_path(tmp_path):
    with pytest.raises(ValidationError, match=r"does not exist.*make_dataset"):
        open_zarr_dataset(tmp_path / "nope.zarr")


def test_open_not_a_zarr_group(tmp_path):
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "file.txt").write_text("hello")
    with pytest.raises(SchemaError, match="is not a Zarr group"):
        open_zarr_dataset(tmp_path / "plain")


@pytest.mark.parametrize("damage", ["truncated", "unknown data type", "unknown codec"])
def test_open_a_store_whose_array_metadata_is_damaged(tmp_path, damage):
    path = make_dataset("synthetic_krr_2d", tmp_path / "d.zarr", 40, chunk_size=20,
                        progress=False)
    meta = path / "X" / "zarr.json"
    text = meta.read_text()
    assert '"float32"' in text and '"zstd"' in text
    meta.write_text({"truncated": text[: len(text) // 2],
                     "unknown data type": text.replace('"float32"', '"flaot32"'),
                     "unknown codec": text.replace('"zstd"', '"zstx"')}[damage])
    with pytest.raises(SchemaError, match=r"dataset '.*d.zarr': array 'X' cannot be read: its "
                                          r"metadata file 'X/zarr.json' is damaged .*; the "
                                          r"store is damaged: regenerate it"):
        open_zarr_dataset(path)


def test_open_store_violating_schema(tmp_path):
    ds = _valid().assign(X=lambda d: d.X.astype("float64"))
    ds.to_zarr(tmp_path / "bad.zarr", zarr_format=3, consolidated=False)
    with pytest.raises(SchemaError, match="expected dtype float32, found float64"):
        open_zarr_dataset(tmp_path / "bad.zarr")
