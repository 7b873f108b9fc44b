"""Data by named variables: schemas as declarations, a user's own names and dims,
optional library attributes, every problem at once with the fix for the input at hand,
writers and generators by variable name."""

from __future__ import annotations

import os
import warnings

import dask.array as da
import numpy as np
import pytest
import xarray as xr
import zarr

import ooc_kernels as ok
from ooc_kernels.data import (
    FACTORIZED,
    SUPERVISED,
    TRIPLETS,
    generate_chunk,
    iter_chunks,
    make_attrs,
    make_dataset,
    open_dataset,
    open_zarr_dataset,
    validate_dataset,
    write_chunks,
)
from ooc_kernels.data.catalog import list_datasets, load_catalog
from ooc_kernels.data.inputs import as_chunked
from ooc_kernels.exceptions import CorruptChunkError, SchemaError, ValidationError

# exactly two epochs (tol=None: no stopping rule)
FAST = dict(n_features=128, block_size=64, batch_size=16, random_state=0, scheduler="sync",
            progress=False, max_iter=2, tol=None)


def _sensors(n=120, seed=0):
    """A user's dataset: features(time, channel) float64, label(time), a time coordinate."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    label = (X[:, 0] * X[:, 1] > 0).astype(np.int64)
    time = np.arange(n) * 10 + 1000
    return xr.Dataset({"features": (("time", "channel"), X), "label": (("time",), label)},
                      coords={"time": time, "channel": ["a", "b", "c"]})


@pytest.fixture
def plain_store(tmp_path):
    """A store written with plain ``ds.to_zarr()``: no library attribute at all."""
    path = tmp_path / "sensors.zarr"
    _sensors().chunk({"time": 40}).to_zarr(path, zarr_format=3)
    return path


def _intake_catalog(tmp_path, store, metadata=None):
    """An entry written with Intake's own API (not register_dataset)."""
    from intake.readers.datatypes import Zarr
    from intake.readers.entry import Catalog
    from intake.readers.readers import XArrayDatasetReader

    reader = XArrayDatasetReader(Zarr(url=str(store)), engine="zarr",
                                 metadata=metadata or {})
    cat = Catalog()
    cat.add_entry(reader, name="sensors")
    path = tmp_path / "cat.yaml"
    cat.to_yaml_file(str(path))
    return path


# --------------------------------------------------------------------------- user names
def test_dataarrays_of_a_plain_store_fit_and_predict_on_its_time_coordinate(plain_store):
    ds = xr.open_zarr(plain_store)
    clf = ok.DSGClassifier(**FAST).fit(ds["features"], ds["label"])
    pred = clf.predict(ds["features"])
    assert isinstance(pred, xr.DataArray) and isinstance(pred.data, da.Array)  # lazy
    assert pred.dims == ("time",)
    np.testing.assert_array_equal(pred["time"].values, ds["time"].values)
    np.testing.assert_array_equal(pred.values, clf.predict(ds["features"].values))
    proba = clf.predict_proba(ds["features"])
    assert proba.dims == ("time", "class") and proba["class"].values.tolist() == [0, 1]
    # the same model as from plain Dask arrays with the same chunks
    ref = ok.DSGClassifier(**FAST).fit(ds["features"].data, ds["label"].data)
    np.testing.assert_array_equal(clf.coef_, ref.coef_)
    # opened without Dask, the DataArrays are read chunk by chunk (chunk_size), never
    # loaded whole into memory
    raw = xr.open_dataset(plain_store, engine="zarr")
    assert raw["features"].chunks is None and not raw["features"].variable._in_memory
    est = ok.DSGClassifier(**FAST, chunk_size=40).fit(raw["features"], raw["label"])
    pred = est.predict(raw["features"])
    assert isinstance(pred.data, da.Array) and pred.data.chunks == ((40, 40, 40),)
    assert not raw["features"].variable._in_memory and not raw["label"].variable._in_memory
    np.testing.assert_array_equal(est.coef_, clf.coef_)


def test_a_catalog_entry_written_with_intakes_api_declares_the_variables(plain_store,
                                                                         tmp_path):
    cat = _intake_catalog(tmp_path, plain_store,
                          {"ooc_kernels": {"variables": {"X": "features", "y": "label"}}})
    assert list_datasets(cat) == ["sensors"]  # plain data: the trust check accepts it
    ds = open_dataset(cat, "sensors")
    assert set(ds.data_vars) == {"features", "label"}  # the user's names are kept
    assert ds.attrs["ooc_kernels_variables"] == {"X": "features", "y": "label"}
    a = ok.DSGClassifier(**FAST).fit(ds)
    raw = xr.open_zarr(plain_store)
    b = ok.DSGClassifier(**FAST).fit(raw["features"], raw["label"])
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.classes_, [0, 1])  # found in y: no attribute
    pred = a.predict(ds)  # a Dataset: a lazy DataArray on its sample coordinate
    assert isinstance(pred.data, da.Array) and pred.dims == ("time",)
    np.testing.assert_array_equal(pred["time"].values, raw["time"].values)
    # the Intake reader itself: the entry's declaration is applied as well
    c = ok.DSGClassifier(**FAST).fit(load_catalog(cat)["sensors"])
    np.testing.assert_array_equal(a.coef_, c.coef_)
    assert ok.DSGClassifier(**FAST).fit(ds).score(ds) == pytest.approx(a.score(ds))


def test_an_undeclared_store_lists_what_it_has(plain_store, tmp_path):
    cat = _intake_catalog(tmp_path, plain_store)
    with pytest.raises(SchemaError) as info:
        open_dataset(cat, "sensors")
    msg = str(info.value)
    assert "has 2 problems" in msg
    assert "found variables ['features', 'label']" in msg
    assert "ooc_kernels: {variables: {X: features}}" in msg  # the one 2-D candidate
    assert "ooc_kernels: {variables: {y: label}}" in msg
    ds = open_zarr_dataset(plain_store, variables={"X": "features", "y": "label"})
    assert ds.attrs["ooc_kernels_variables"] == {"X": "features", "y": "label"}
    ok.DSGClassifier(**FAST).fit(ds)


def test_in_memory_dataarrays_are_chunked_and_aligned_on_their_coordinate(tmp_path):
    ds = _sensors(n=50)
    data = as_chunked(ds["features"], ds["label"], chunk_size=20)
    assert data.chunk_sizes == (20, 20, 10)
    assert data.dims["X"] == ("sample", "feature")  # canonical for the engine
    shuffled = ds["label"].isel(time=np.r_[1:50, 0])
    with pytest.raises(SchemaError, match=r"y is not aligned with X: their coordinates 'time' "
                                          r"differ \(first difference at position 0: X has "
                                          r"1000, y has 1010\).*xr.align"):
        as_chunked(ds["features"], shuffled)
    with pytest.raises(SchemaError, match=r"variable 'y': expected dims \('time',\).*found "
                                          r"dims \('t',\); rename them: y = y.rename"):
        as_chunked(ds["features"], ds["label"].rename(time="t"))
    # X given as features x samples: the fix transposes X, not y
    with pytest.raises(SchemaError, match=r"variable 'y': expected dims \('channel',\).*found "
                                          r"dims \('time',\); the dims of 'X' look transposed "
                                          r"\(\('channel', 'time'\)\): transpose it: X = "
                                          r"X.transpose\('time', 'channel'\)"):
        as_chunked(ds["features"].T, ds["label"])
    # the same in a store chunked along its samples: one problem, X's dims, and no advice
    # to put the samples in one chunk
    store = tmp_path / "transposed.zarr"
    ds.transpose("channel", "time").chunk({"time": 20}).to_zarr(store, zarr_format=3,
                                                                consolidated=False)
    with pytest.raises(SchemaError) as info:
        open_zarr_dataset(store, variables={"X": "features", "y": "label"})
    assert len(info.value.problems) == 1, str(info.value)
    assert "the dims of 'features' look transposed (('channel', 'time')): rewrite the store" \
        in str(info.value)
    declared = ds.assign_attrs(ooc_kernels_variables={"X": "features"})
    with pytest.raises(SchemaError, match=r"y has dims \('t',\), expected \('time',\).*"
                                          r"y = y.rename\(\{'t': 'time'\}\)"):
        as_chunked(declared, ds["label"].rename(time="t"))
    assert as_chunked(declared, ds["label"], chunk_size=20).y is not None


def test_a_dataset_declaring_its_names_in_its_attributes(tmp_path):
    ds = _sensors().assign_attrs(ooc_kernels_variables={"X": "features", "y": "label"})
    clf = ok.DSGClassifier(**FAST, chunk_size=40).fit(ds)
    pred = clf.predict(ds)
    assert pred.dims == ("time",) and "channel" not in pred.coords
    np.testing.assert_array_equal(pred["time"].values, ds["time"].values)
    # the predictions writer keeps the sample dim and coordinate of the input
    from ooc_kernels.evaluation import write_predictions

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = xr.open_zarr(write_predictions(clf, ds, tmp_path / "pred.zarr"))
    assert out["prediction"].dims == ("time",) and out["proba"].dims == ("time", "class")
    np.testing.assert_array_equal(out["time"].values, ds["time"].values)


def test_a_regression_task_is_inferred_from_the_targets_dtype(tmp_path):
    ds = _sensors().assign(label=lambda d: d.features[:, 0] ** 2)
    ds.chunk({"time": 40}).to_zarr(tmp_path / "r.zarr", zarr_format=3)
    opened = open_zarr_dataset(tmp_path / "r.zarr", variables={"X": "features", "y": "label"})
    reg = ok.DSGRegressor(**FAST).fit(opened)
    assert reg.predict(opened).dims == ("time",)
    # a given task is checked against the targets
    with pytest.raises(SchemaError, match=r"variable 'label' \(y\): expected a bool, integer, "
                                          r"string, bytes or object dtype for "
                                          r"task='classification', found float64"):
        validate_dataset(opened.assign_attrs(task="classification"))


# --------------------------------------------------------------------------- all problems
def test_three_problems_are_reported_in_one_error():
    ds = xr.Dataset({"X": (("sample", "feature"), np.zeros((10, 4), np.float64)),
                     "y": (("sample",), np.zeros(10, np.int32))},
                    attrs={**make_attrs("classification"), "classes": [1, 0]})
    ds = ds.chunk({"sample": 5, "feature": 2})
    with pytest.raises(SchemaError) as info:
        validate_dataset(ds)
    err = info.value
    assert len(err.problems) == 3
    assert str(err).startswith("the dataset has 3 problems:\n  1. ")
    for part in (r"'classes' must be sorted and unique, found [1, 0]",
                 r"'X': expected dtype float32, found float64; convert with "
                 r"ds['X'] = ds.X.astype('float32')",
                 r"'X': expected a single chunk along 'feature', found 2 chunks (2, 2); "
                 r"rechunk with ds.chunk({'feature': -1})"):
        assert part in str(err)


def _chunked_along_channel(path):
    ds = _sensors(n=40).chunk({"time": 20, "channel": 1})
    ds.to_zarr(path, zarr_format=3)
    return ds


def test_fixes_differ_by_input_kind(tmp_path):
    path = tmp_path / "c.zarr"
    ds = _chunked_along_channel(path)
    names = {"X": "features", "y": "label"}
    # an xarray Dataset in hand: rechunk it in memory
    with pytest.raises(SchemaError, match=r"rechunk with ds.chunk\(\{'channel': -1\}\)"):
        as_chunked(ds, variables=names)
    # a DataArray: its own chunk method, by dim name
    with pytest.raises(SchemaError, match=r"rechunk with X = X.chunk\(\{'channel': -1\}\)"):
        as_chunked(ds["features"], ds["label"])
    # Dask arrays: rechunk by axis
    with pytest.raises(SchemaError, match=r"X = X.rechunk\(\{1: -1\}\)"):
        as_chunked(ds["features"].data, ds["label"].data)
    # a store on disk: opening raises before the caller holds anything; rewrite the store
    with pytest.raises(SchemaError, match=r"rewrite the store: xr.open_zarr\('.*c.zarr'\)"
                                          r".chunk\(\{'channel': -1\}\).drop_encoding\(\)"
                                          r".to_zarr\(NEW_PATH\)") as info:
        open_zarr_dataset(path, variables=names)
    assert "ds.chunk(" not in str(info.value)
    # a catalog entry: the same, and point the entry at the new store
    cat = _intake_catalog(tmp_path, path, {"ooc_kernels": {"variables": names}})
    with pytest.raises(SchemaError, match=r"\.to_zarr\(NEW_PATH\) and point the entry at "
                                          r"NEW_PATH"):
        open_dataset(cat, "sensors")
    # attributes: in memory ds.attrs, on disk the store's group attributes
    bad = ds.chunk({"channel": -1}).assign_attrs(task="ranking")
    with pytest.raises(SchemaError, match=r"set ds.attrs\['task'\] = 'classification', or "
                                          r"delete it"):
        validate_dataset(bad, variables=names)
    bad.drop_encoding().to_zarr(tmp_path / "t.zarr", zarr_format=3)
    with pytest.raises(SchemaError, match=r"set it in the store: g = zarr.open_group\('.*t.zarr"
                                          r"', mode='r\+'\); g.attrs\['task'\] = "
                                          r"'classification'; zarr.consolidate_metadata"):
        open_zarr_dataset(tmp_path / "t.zarr", variables=names)
    # and that fix works
    g = zarr.open_group(str(tmp_path / "t.zarr"), mode="r+")
    g.attrs["task"] = "classification"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.consolidate_metadata(str(tmp_path / "t.zarr"))
    assert open_zarr_dataset(tmp_path / "t.zarr", variables=names).attrs["task"] == \
        "classification"


def test_a_bad_declaration_is_refused(plain_store, tmp_path):
    ds = xr.open_zarr(plain_store)
    with pytest.raises(SchemaError, match=r"names \['Z'\], which the 'supervised' schema does "
                                          r"not have \(its variables: \['X', 'y'\]\)"):
        validate_dataset(ds, variables={"Z": "features"})
    with pytest.raises(SchemaError, match=r"variable 'feats' \(X\): expected a data variable "
                                          r".*found variables \['features', 'label'\]"):
        validate_dataset(ds, variables={"X": "feats", "y": "label"})
    cat = _intake_catalog(tmp_path, plain_store, {"ooc_kernels": {"varaibles": {}}})
    with pytest.raises(SchemaError, match=r"keys among \['schema', 'variables', 'task', "
                                          r"'classes'\].*unknown keys \['varaibles'\]"):
        open_dataset(cat, "sensors")


# --------------------------------------------------------------------------- other schemas
def _factorized(n=12, rank=3, d=5, chunk=4, names=("U", "V", "y"), dims=None):
    dims = dims or (("sample", "rank"), ("rank", "feature"), ("sample",))
    rng = np.random.default_rng(0)
    ds = xr.Dataset({names[0]: (dims[0], rng.random((n, rank), np.float32)),
                     names[1]: (dims[1], rng.random((rank, d), np.float32)),
                     names[2]: (dims[2], rng.random(n, np.float32))})
    return ds.chunk({dims[0][0]: chunk})


def test_the_factorized_schema():
    good = _factorized()
    assert validate_dataset(good, FACTORIZED) is good
    data = as_chunked(good, schema="factorized")
    assert sorted(data.variables) == ["U", "y"] and list(data.whole) == ["V"]
    assert data.chunk_sizes == (4, 4, 4) and data.sizes == {"sample": 12, "rank": 3,
                                                           "feature": 5}
    # any names and dims, declared
    user = _factorized(names=("left", "right", "t"),
                       dims=(("obs", "k"), ("k", "var"), ("obs",)))
    decl = {"U": "left", "V": "right", "y": "t"}
    assert as_chunked(user, schema=FACTORIZED, variables=decl).dims["V"] == ("rank", "feature")
    # refused: V transposed, U chunked along its rank, no y to fit
    bad = good.assign(V=good.V.T).chunk({"rank": 1}).drop_vars("y")
    with pytest.raises(SchemaError) as info:
        validate_dataset(bad, FACTORIZED)
    msg = str(info.value)
    assert len(info.value.problems) == 3, msg
    assert "variable 'V': expected dims ('rank', 'feature') (its dims by position, shared " \
           "with 'U'), found dims ('feature', 'rank'); transpose it: ds['V'] = " \
           "ds.V.transpose('rank', 'feature')" in msg
    assert "variable 'U': expected a single chunk along 'rank'" in msg
    assert "variable 'y': expected a data variable (the target)" in msg
    # a rank that differs between the two factors, in a store: xarray cannot even open it
    # (one dim, two lengths), the checker names the problem from the Zarr metadata


def test_factors_of_different_ranks_in_a_store(tmp_path):
    g = zarr.open_group(str(tmp_path / "uv.zarr"), mode="w", zarr_format=3)
    for name, shape, dims in (("U", (12, 3), ("sample", "rank")), ("y", (12,), ("sample",)),
                              ("V", (2, 5), ("rank", "feature"))):
        g.create_array(name, shape=shape, dtype="float32", dimension_names=dims)
    with pytest.raises(SchemaError, match=r"variable 'V': expected 3 entries along 'rank' "
                                          r"\(the length of 'U'\), found 2; the store is "
                                          r"inconsistent"):
        open_zarr_dataset(tmp_path / "uv.zarr", schema="factorized")


def test_the_triplets_schema():
    rng = np.random.default_rng(0)
    points = rng.random((20, 4), np.float32)
    good = xr.Dataset({"triplets": (("triplet", "corner"), rng.integers(0, 20, (30, 3))),
                       "X": (("sample", "feature"), points),
                       "y": (("sample",), np.arange(20) % 2)}).chunk(
        {"triplet": 10, "sample": 8})
    assert validate_dataset(good, TRIPLETS) is good
    data = as_chunked(good, schema=TRIPLETS)
    assert list(data.variables) == ["triplets"] and sorted(data.whole) == ["X", "y"]
    assert data.chunk_sizes == (10, 10, 10) and data.n_features == 4
    bad = good.drop_vars("triplets").assign(
        triplets=(("triplet", "corner"), np.zeros((30, 2), np.float32))).chunk({"feature": 2})
    with pytest.raises(SchemaError) as info:
        validate_dataset(bad, TRIPLETS)
    msg = str(info.value)
    assert len(info.value.problems) == 3, msg
    assert "variable 'triplets': expected an integer dtype, found float32" in msg
    assert "variable 'triplets': expected length 3 along 'corner', found 2" in msg
    assert "variable 'X': expected a single chunk along 'feature'" in msg


def test_schema_declarations():
    assert str(SUPERVISED) == "supervised: X(sample, feature), y(sample) [to fit]"
    assert SUPERVISED.required("predict") == {"X"}
    assert TRIPLETS["X"].single_chunk_dims == ("feature",)
    assert FACTORIZED["V"].single_chunk_dims == ()
    with pytest.raises(ValidationError, match=r"unknown schema 'graph'"):
        validate_dataset(_factorized(), "graph")


# --------------------------------------------------------------------------- writers
def test_write_chunks_by_variable_name(tmp_path):
    X = np.arange(30, dtype=np.float32).reshape(10, 3)
    y = np.arange(10, dtype=np.int32) % 2
    chunks = [{"X": X[i:i + 4], "y": y[i:i + 4]} for i in range(0, 10, 4)]
    attrs = make_attrs("classification")  # no classes: optional
    p = write_chunks(tmp_path / "d.zarr", iter(chunks), n_samples=10, chunk_size=4,
                     sizes={"feature": 3}, dtypes={"y": "int32"}, attrs=attrs)
    ds = open_zarr_dataset(p)
    np.testing.assert_array_equal(ds.X.values, X)
    assert ds.attrs["ooc_kernels_schema"] == "supervised"
    # (X, y) tuples still work for the supervised schema
    write_chunks(tmp_path / "t.zarr", ((c["X"], c["y"]) for c in chunks), n_samples=10,
                 n_features=3, chunk_size=4, y_dtype="int32", attrs=attrs)
    # a chunk without one of the variables
    with pytest.raises(ValidationError, match=r"chunk 0 holds the variables \['X'\], expected "
                                              r"\['X', 'y'\]"):
        write_chunks(tmp_path / "m.zarr", iter([{"X": X[:4]}]), n_samples=10, chunk_size=4,
                     sizes={"feature": 3}, dtypes={"y": "int32"}, attrs=attrs)
    # a declaration breaking the schema is refused before anything is written
    with pytest.raises(ValidationError, match=r"'y' as float64 breaks the 'supervised' "
                                              r"schema, whose stores hold dtype float32 for "
                                              r"task='regression'"):
        write_chunks(tmp_path / "f.zarr", iter([]), n_samples=10, chunk_size=4,
                     sizes={"feature": 3}, dtypes={"y": "float64"},
                     attrs=make_attrs("regression"))
    assert sorted(os.listdir(tmp_path)) == ["d.zarr", "t.zarr"]


def test_write_factorized_and_triplet_stores(tmp_path):
    rng = np.random.default_rng(0)
    V = rng.random((2, 6)).astype(np.float32)
    chunks = ({"U": rng.random((5, 2)), "y": rng.random(5)} for _ in range(2))
    p = write_chunks(tmp_path / "uv.zarr", chunks, n_samples=10, chunk_size=5,
                     schema="factorized", whole={"V": V}, attrs=make_attrs("regression"))
    ds = open_zarr_dataset(p)  # the schema comes from the store's attribute
    assert ds.attrs["ooc_kernels_schema"] == "factorized"
    assert ds.U.chunks == ((5, 5), (2,)) and ds.V.dims == ("rank", "feature")
    np.testing.assert_array_equal(ds.V.values, V)
    assert as_chunked(ds).whole["V"].shape == (2, 6)
    with pytest.raises(SchemaError, match=r"dataset attribute 'ooc_kernels_schema' is "
                                          r"'factorized', but the dataset is read with the "
                                          r"'supervised' schema; pass schema='factorized'"):
        validate_dataset(ds, "supervised")
    # triplets over whole points, chunked along the triplets
    X = rng.random((7, 3)).astype(np.float32)
    chunks = ({"triplets": rng.integers(0, 7, (4, 3))} for _ in range(3))
    p = write_chunks(tmp_path / "tri.zarr", chunks, n_samples=12, chunk_size=4,
                     schema=TRIPLETS, whole={"X": X}, dtypes={"triplets": "int32"},
                     attrs={"description": "toy"})
    ds = open_zarr_dataset(p)
    assert dict(ds.sizes) == {"triplet": 12, "corner": 3, "sample": 7, "feature": 3}
    assert ds.triplets.chunks == ((4, 4, 4), (3,)) and ds.X.chunks == ((4, 3), (3,))
    with pytest.raises(ValidationError, match=r"needs the whole variable X\(sample, feature\)"):
        write_chunks(tmp_path / "no.zarr", iter([]), n_samples=4, chunk_size=4,
                     schema=TRIPLETS, dtypes={"triplets": "int32"}, attrs={})


def test_generators_yield_dicts_and_a_new_schema_is_a_declaration(tmp_path, monkeypatch):
    chunk = generate_chunk("synthetic_krr_2d", 0, 5)
    assert list(chunk) == ["X", "y"] and chunk["X"].shape == (5, 2)
    assert all(isinstance(c, dict) for c in iter_chunks("synthetic_krr_2d", 12, chunk_size=5))
    # a factorized generator only declares its variables
    from ooc_kernels.data import generators as gen

    def whole(random_state, p):
        return {"V": gen.whole_rng(random_state).random((p["rank"], 4)).astype(np.float32)}

    def chunk_fn(rng, n, split, p):
        U = rng.random((n, p["rank"]))
        return {"U": U, "y": U.sum(1)}

    spec = gen.GeneratorSpec(
        name="toy_factorized", task="regression", description="A = U V", defaults={"rank": 2},
        sizes=lambda p: {"rank": p["rank"]}, classes=None,
        dtypes={"U": "float32", "V": "float32", "y": "float32"}, chunk=chunk_fn,
        check=lambda p: None, schema="factorized", whole=whole)
    monkeypatch.setitem(gen._REGISTRY, spec.name, spec)
    p = make_dataset("toy_factorized", tmp_path / "f.zarr", 25, chunk_size=10)
    ds = open_zarr_dataset(p)
    assert dict(ds.sizes) == {"sample": 25, "rank": 2, "feature": 4}
    assert ds.attrs["generator"] == "toy_factorized"
    np.testing.assert_array_equal(ds.U[10:20].values,
                                  generate_chunk("toy_factorized", 1, 10)["U"])
    # the same call keeps the store; another rank is a difference of U's shape
    assert make_dataset("toy_factorized", p, 25, chunk_size=10, exist_ok=True) == p
    with pytest.raises(ok.exceptions.DatasetExistsError, match=r"shape of U: the store has "
                                                               r"\(25, 2\), this call \(25, 3\)"):
        make_dataset("toy_factorized", p, 25, chunk_size=10, exist_ok=True, rank=3)


def test_integrity_checks_cover_any_declared_name(tmp_path):
    # a library store of another schema: every chunk file is promised
    chunks = ({"U": np.ones((5, 2)), "y": np.zeros(5)} for _ in range(2))
    p = write_chunks(tmp_path / "uv.zarr", chunks, n_samples=10, chunk_size=5,
                     schema="factorized", whole={"V": np.eye(2, 3)},
                     attrs=make_attrs("regression"))
    os.remove(p / "U" / "c" / "1" / "0")
    with pytest.raises(CorruptChunkError, match=r"chunk 1 of variable 'U' \(rows 5..9\).*is "
                                                r"missing"):
        as_chunked(open_zarr_dataset(p)).variables["U"].compute()
    # a plain store with the user's names: a garbled chunk is named by its variable
    store = tmp_path / "s.zarr"
    _sensors(n=40).chunk({"time": 20}).to_zarr(store, zarr_format=3)
    chunk_file = store / "features" / "c" / "1" / "0"
    chunk_file.write_bytes(b"garbage" + chunk_file.read_bytes()[7:])
    ds = open_zarr_dataset(store, variables={"X": "features", "y": "label"})
    with pytest.raises(CorruptChunkError, match=r"chunk 1 of variable 'features'"):
        as_chunked(ds).X.compute()
