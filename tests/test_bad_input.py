"""The catalogue of bad inputs (docs/bad_input.md): each one gets a clear library error.

Every test goes through the public API (estimators, ``ok.open_dataset``, ``ok.make_dataset``,
``open_zarr_dataset``, ``load_pipeline``) and matches a meaningful part of the message: the
problem, the offending value (chunk, row, dtype, shape ...) and, where it matters, the fix.
"""

import os
import re
import shutil
import warnings
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
import xarray as xr
import zarr

import ooc_kernels as ok
from ooc_kernels.data import make_attrs, open_zarr_dataset, write_chunks
from ooc_kernels.exceptions import (
    CatalogError,
    CorruptChunkError,
    DatasetExistsError,
    InvalidDataError,
    OocKernelsError,
    PipelineConfigError,
    SchemaError,
    UnknownEntryError,
    ValidationError,
)

TINY = dict(n_features=64, block_size=16, batch_size=4, max_iter=1, tol=None, random_state=0,
            scheduler="sync", chunk_size=8)


def _reg(**kw):
    return ok.DSGRegressor(**dict(TINY, **kw))


def _clf(**kw):
    return ok.DSGClassifier(**dict(TINY, **kw))


def _data(n=30, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] > 0).astype(np.int64), X[:, 0].copy()


def _lazy(a, chunk=8):
    a = np.asarray(a)
    return da.from_array(a, chunks=(chunk,) + (-1,) * (a.ndim - 1))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A small classification store (3 chunks of 20 rows) written by the library."""
    path = tmp_path_factory.mktemp("bad") / "b.zarr"
    return ok.make_dataset("nonlinear_binary", path, 50, chunk_size=20, n_features=4)


def _to_zarr(ds, path):
    """xarray's own writer (not the library's): no checksums, consolidated metadata."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr: consolidated metadata is not in the v3 spec
        ds.to_zarr(path, zarr_format=3)


def _copy(store, tmp_path, name="copy.zarr"):
    dst = tmp_path / name
    shutil.copytree(store, dst)
    return dst


# --------------------------------------------------------------------------- NaN / inf
@pytest.mark.parametrize("value, match", [(np.nan, "Input X contains NaN"),
                                          (np.inf, "Input X contains infinity")])
def test_non_finite_X_numpy_goes_through_check_array(value, match):
    X, _, y = _data()
    X[5, 1] = value
    with pytest.raises(ValidationError, match=match):
        _reg().fit(X, y)


def test_non_finite_y_numpy():
    X, _, y = _data()
    y[20] = np.nan
    with pytest.raises(ValidationError, match="Input y contains NaN"):
        _reg().fit(X, y)


@pytest.mark.parametrize("bandwidth", [1.0, "median"])
def test_non_finite_X_dask_names_chunk_and_row(bandwidth):
    X, _, y = _data()
    X[17, 2] = np.inf  # chunk 2 (rows 16..23), row 1
    with pytest.raises(InvalidDataError, match=r"non-finite value.* in chunk 2, row 1"):
        _reg(bandwidth=bandwidth, shuffle=False).fit(_lazy(X), _lazy(y))


def test_non_finite_y_dask_regressor_names_chunk_and_row():
    X, _, y = _data()
    y[20] = np.nan
    with pytest.raises(InvalidDataError, match=r"y has a non-finite value \(nan\) in chunk 2, "
                                               r"row 4; remove or impute"):
        _reg(bandwidth=1.0).fit(_lazy(X), _lazy(y))


def test_non_finite_y_dask_classifier_names_chunk_and_row():
    # used to escape as scikit-learn's raw "Input y contains infinity" while finding classes
    X, yc, _ = _data()
    y = yc.astype(np.float64)
    y[3] = np.inf
    with pytest.raises(InvalidDataError, match=r"y has a non-finite value \(inf\) in chunk 0, "
                                               r"row 3"):
        _clf().fit(_lazy(X), _lazy(y))


def test_non_finite_X_in_a_zarr_dataset_names_chunk_and_row(store):
    ds = open_zarr_dataset(store)
    X = ds.X.where(np.arange(50)[:, None] != 23)  # NaN on every feature of sample 23
    with pytest.raises(InvalidDataError, match=r"non-finite value \(nan\) in chunk 1, row 3"):
        _clf(bandwidth=1.0, shuffle=False).fit(ds.assign(X=X))


# --------------------------------------------------------------------------- dtypes
@pytest.mark.parametrize("X, match", [
    (np.array([["a", "b"]] * 30), "could not convert string to float"),
    (np.ones((30, 2)) + 1j, "Complex data not supported"),
    (np.array([[{}, 1.0]] * 30, dtype=object), "must be a string or a real number"),
])
def test_wrong_X_dtype_numpy(X, match):
    with pytest.raises(ValidationError, match=match):
        _reg().fit(X, np.zeros(30))


@pytest.mark.parametrize("dtype", ["<U1", object, np.complex128])
def test_wrong_X_dtype_dask(dtype):
    X = da.from_array(np.ones((30, 2)).astype(dtype), chunks=(8, -1))
    with pytest.raises(ValidationError,
                       match=rf"X must hold numbers, got dtype {np.dtype(dtype)}; convert it"):
        _reg().fit(X, np.zeros(30))


def test_wrong_X_dtype_in_a_zarr_dataset(store):
    ds = open_zarr_dataset(store)
    with pytest.raises(SchemaError, match=r"'X': expected dtype float32, found float64; "
                                          r"convert with"):
        _clf().fit(ds.assign(X=ds.X.astype("float64")))


@pytest.mark.parametrize("lazy", [False, True])
def test_string_targets_for_a_regressor(lazy):
    X, _, _ = _data()
    y = np.array(["a"] * 30)
    with pytest.raises(InvalidDataError, match=r"y holds values that are not numbers "
                                               r"\(dtype <U1, e.g. 'a' in chunk \d+, row \d+\).*a "
                                               r"regressor needs"):
        _reg(bandwidth=1.0).fit(_lazy(X) if lazy else X, _lazy(y) if lazy else y)


@pytest.mark.parametrize("dtype", [np.complex128, "datetime64[s]"])
def test_complex_or_datetime_targets_dask(dtype):
    X, _, y = _data()
    with pytest.raises(ValidationError, match=re.escape(f"got dtype {np.dtype(dtype)}; "
                                                        "convert it")):
        _reg().fit(_lazy(X), _lazy(y.astype(dtype)))


def test_labels_of_another_type_than_the_classes():
    X, yc, _ = _data()
    with pytest.raises(InvalidDataError, match=r"label '[ab]' in chunk \d+, row \d+ is not one "
                                               r"of the classes \[0, 1\]"):
        _clf(bandwidth=1.0).partial_fit(_lazy(X), _lazy(np.where(yc == 1, "a", "b")),
                                        classes=[0, 1])
    # objects that cannot even be ordered against the classes (used to be a raw TypeError)
    with pytest.raises(InvalidDataError, match=r"labels of dtype object \(e.g. None\) in chunk "
                                               r"\d+, row 0 cannot be compared with the "
                                               r"classes \[0, 1\]"):
        _clf(bandwidth=1.0).partial_fit(_lazy(X), _lazy(np.full(30, None, dtype=object)),
                                        classes=[0, 1])
    # the culprit among comparable labels, named by its chunk and row in a group of chunks
    labels = np.zeros(30, dtype=object)
    labels[17] = None
    with pytest.raises(InvalidDataError, match=r"\(e.g. None\) in chunk 2, row 1 cannot be"):
        _clf(bandwidth=1.0, shuffle=False, shuffle_chunks=3).partial_fit(
            _lazy(X), _lazy(labels), classes=[0, 1])


@pytest.mark.parametrize("lazy", [False, True])
def test_continuous_labels_for_a_classifier(lazy):
    X, _, y = _data()
    with pytest.raises(ValidationError, match="Unknown label type: continuous"):
        _clf().fit(_lazy(X) if lazy else X, _lazy(y) if lazy else y)


def test_float_labels_in_a_classification_store(store):
    ds = open_zarr_dataset(store)
    with pytest.raises(SchemaError, match=r"'y': expected an integer dtype for "
                                          r"task='classification', found float32"):
        _clf().fit(ds.assign(y=ds.y.astype("float32")))


# --------------------------------------------------------------------------- shapes
@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("shape, match_np, match_lazy", [
    ((30,), "Expected 2D array, got 1D array", r"X must be 2-D .* shape \(30,\); reshape"),
    ((30, 3, 1), "Found array with dim 3", r"X must be 2-D .* shape \(30, 3, 1\)"),
])
def test_wrong_X_dimensionality(lazy, shape, match_np, match_lazy):
    X = np.ones(shape)
    with pytest.raises(ValidationError, match=match_lazy if lazy else match_np):
        _reg().fit(da.from_array(X) if lazy else X, np.zeros(30))


@pytest.mark.parametrize("lazy", [False, True])
def test_y_with_several_columns(lazy):
    X, _, y = _data()
    Y = np.c_[y, y]
    match = re.escape(
        "y has 2 columns (shape (30, 2)), and the estimators fit one target: fit one model "
        "per column with sklearn.multioutput's MultiOutputRegressor or "
        "MultiOutputClassifier, or pass one column, y[:, j].") if lazy else re.escape(
        "y has 2 columns (shape (30, 2)), and DSGRegressor fits one target: a 1-D y of 30 "
        "values. Fit one model per column with sklearn.multioutput.MultiOutputRegressor("
        "DSGRegressor()), or pass one column, y[:, j].")
    with pytest.raises(ValidationError, match=match):
        _reg().fit(_lazy(X) if lazy else X, _lazy(Y) if lazy else Y)


@pytest.mark.parametrize("make", [lambda: _reg(), lambda: ok.DSPDCRegressor(random_state=0),
                                  lambda: ok.ProjectedKernelRidge()])
def test_the_wrapper_a_several_column_y_is_pointed_to_fits_one_model_per_column(make):
    """The fix the message above names, ``MultiOutputRegressor(estimator)``, gives every
    column the model that a fit on that column alone gives."""
    from sklearn.multioutput import MultiOutputRegressor

    X, _, y = _data()
    Y = np.c_[y, 2.0 * y + X[:, 0]]
    both = MultiOutputRegressor(make()).fit(X, Y).predict(X)
    for j in range(2):
        np.testing.assert_array_equal(both[:, j], make().fit(X, Y[:, j]).predict(X))


@pytest.mark.parametrize("kind", ["numpy", "dask", "dask X, numpy y"])
def test_mismatched_lengths(kind):
    X, _, y = _data()
    X_in = X if kind == "numpy" else _lazy(X)
    y_in = _lazy(y[:20]) if kind == "dask" else y[:20]
    match = r"inconsistent numbers of samples: \[30, 20\]" if kind == "numpy" else \
        r"X and y have different numbers of samples: 30 and 20"
    with pytest.raises(ValidationError, match=match):
        _reg().fit(X_in, y_in)


def test_mismatched_lengths_in_a_zarr_store(tmp_path):
    path = tmp_path / "m.zarr"
    _to_zarr(xr.Dataset({"X": (("sample", "feature"), np.zeros((6, 2), np.float32))},
               attrs=make_attrs("regression")), path)
    root = zarr.open_group(path, mode="a")
    root.create_array("y", shape=(5,), dtype="float32", dimension_names=("sample",))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.consolidate_metadata(path)
    with pytest.raises(SchemaError, match=r"'y': expected 6 samples \(the length of 'X'\), "
                                          r"found 5; the store is inconsistent"):
        open_zarr_dataset(path)


def test_chunks_along_the_feature_axis(store):
    X, _, y = _data()
    with pytest.raises(SchemaError, match=r"chunked along the feature axis .*rechunk"):
        _reg().fit(da.from_array(X, chunks=(8, 1)), _lazy(y))
    with pytest.raises(SchemaError, match=r"single chunk along 'feature', found 4 chunks"):
        _clf().fit(open_zarr_dataset(store).chunk({"feature": 1}))


def test_mismatched_sample_chunks_in_a_dataset(store):
    ds = open_zarr_dataset(store)
    with pytest.raises(SchemaError, match=r"'y': expected the same sample chunks as 'X' "
                                          r"\(20, 20, 10\)"):
        _clf().fit(ds.assign(y=ds.y.chunk({"sample": 7})))


def test_predict_with_the_wrong_number_of_features():
    X, _, y = _data()
    model = _reg(bandwidth=1.0).fit(X, y)
    for X_in in (X[:, :2], _lazy(X[:, :2])):
        with pytest.raises(ValidationError, match="X has 2 features, but DSGRegressor is "
                                                  "expecting 3"):
            model.predict(X_in)


# --------------------------------------------------------------------------- empty data
def test_empty_datasets(store):
    with pytest.raises(ValidationError, match=r"Found array with 0 sample\(s\)"):
        _reg().fit(np.zeros((0, 3)), np.zeros(0))
    with pytest.raises(ValidationError, match=r"the dataset is empty \(0 samples\)"):
        _reg().fit(da.zeros((0, 3), chunks=(8, -1)), da.zeros(0, chunks=8))
    with pytest.raises(ValidationError, match=r"X has 0 features \(shape \(10, 0\)\)"):
        _reg().fit(da.zeros((10, 0), chunks=(8, -1)), da.zeros(10, chunks=8))
    with pytest.raises(SchemaError, match=r"at least one sample .*found shape \(0, 4\)"):
        _clf().fit(open_zarr_dataset(store).isel(sample=slice(0, 0)))


def test_an_empty_chunk_is_a_no_op():
    X, yc, y = _data()
    sizes = (8, 0, 8, 8, 6)
    with_gap = da.from_array(X, chunks=(sizes, (3,)))
    y_gap = da.from_array(y, chunks=(sizes,))
    assert with_gap.chunks[0] == sizes
    params = dict(bandwidth=1.0, shuffle=False)
    ref = _reg(**params).fit(_lazy(X), _lazy(y))
    gap = _reg(**params).fit(with_gap, y_gap)
    # the empty chunk takes a slot of the epoch plan, so the chunk order (and hence the
    # model) may differ from the run without it; the fit must work and predict finitely
    assert gap.n_samples_seen_ == ref.n_samples_seen_ == 30
    pred = gap.predict(with_gap).compute()
    assert pred.shape == (30,) and np.isfinite(pred).all()
    clf = _clf(**params).fit(with_gap, y_gap > 0)
    assert clf.predict(with_gap).compute().shape == (30,)


# --------------------------------------------------------------------------- labels
@pytest.mark.parametrize("lazy", [False, True])
def test_a_single_class(lazy):
    X, _, _ = _data()
    y = np.zeros(30, np.int64)
    with pytest.raises(ValidationError, match=r"y has only 1 class \(\[0\]\); a classifier "
                                              r"needs .* two classes"):
        _clf().fit(_lazy(X) if lazy else X, _lazy(y) if lazy else y)
    with pytest.raises(ValidationError, match=r"y has only 1 class .*pass every class to the "
                                              r"first partial_fit call: partial_fit\(X, y, "
                                              r"classes=\[...\]\)"):
        _clf().partial_fit(_lazy(X) if lazy else X, _lazy(y) if lazy else y)
    with pytest.raises(ValidationError, match=r"^classes has only 1 class \(\[0\]\); a "
                                              r"classifier needs .* two classes\.$"):
        _clf().partial_fit(X, y, classes=[0])
    clf = _clf().partial_fit(X, y, classes=[0, 1])  # the other class comes later
    assert clf.classes_.tolist() == [0, 1]


def test_a_single_declared_class_in_a_store(store):
    ds = open_zarr_dataset(store)
    ds = ds.assign(y=ds.y * 0).assign_attrs(classes=[0])
    with pytest.raises(ValidationError, match=r"y has only 1 class \(\[0\]\)"):
        _clf().fit(ds)


@pytest.mark.parametrize("lazy", [False, True])
def test_labels_outside_the_declared_classes(lazy, store):
    X, yc, _ = _data()
    y = np.where(yc == 1, 5, 0)
    with pytest.raises(InvalidDataError, match=r"label 5 in chunk \d+, row \d+ is not one of "
                                               r"the classes \[0, 1\]"):
        _clf(bandwidth=1.0).partial_fit(_lazy(X) if lazy else X, _lazy(y) if lazy else y,
                                        classes=[0, 1])
    ds = open_zarr_dataset(store).assign_attrs(classes=[0, 2])
    with pytest.raises(InvalidDataError, match=r"label 1 in chunk \d, row \d+ is not one of "
                                               r"the classes \[0, 2\]"):
        _clf(bandwidth=1.0).fit(ds)


# --------------------------------------------------------------------------- Zarr stores
def test_missing_variables_in_a_zarr_store(store, tmp_path):
    # the array folder is gone but the consolidated metadata still lists it: xarray would
    # open the store and read the lost array as zeros
    for name in ("X", "y"):
        damaged = _copy(store, tmp_path, f"no{name}.zarr")
        shutil.rmtree(damaged / name)
        with pytest.raises(SchemaError, match=rf"variable '{name}' is listed in the "
                                              r"consolidated metadata .* missing from the "
                                              r"store; the store is damaged: regenerate"):
            open_zarr_dataset(damaged)
    # a store that never had y
    path = tmp_path / "xonly.zarr"
    _to_zarr(xr.Dataset({"X": (("sample", "feature"), np.zeros((6, 2), np.float32))},
               attrs=make_attrs("regression")), path)
    with pytest.raises(SchemaError, match=r"variable 'y': expected a data variable \(the "
                                          r"target\), found variables \['X'\]"):
        open_zarr_dataset(path)
    assert open_zarr_dataset(path, require_y=False).X.shape == (6, 2)


def test_missing_chunk_file_is_a_corrupt_chunk(store, tmp_path):
    damaged = _copy(store, tmp_path)
    os.remove(damaged / "X" / "c" / "1" / "0")
    with pytest.raises(CorruptChunkError,
                       match=r"chunk 1 of variable 'X' \(rows 20..39\) in the Zarr store "
                             r"'.*copy.zarr' is corrupt: its chunk file 'X/c/1/0' is missing"
                             r".*regenerate the store"):
        _clf(bandwidth=1.0).fit(open_zarr_dataset(damaged))
    # direct reads are checked too, and the healthy chunks still read
    ds = open_zarr_dataset(damaged)
    assert ds.X[:20].values.shape == (20, 4)
    with pytest.raises(CorruptChunkError, match=r"chunk file 'X/c/1/0' is missing"):
        ds.X.values


def test_a_store_that_cannot_say_whether_a_chunk_exists_raises_its_own_error(store,
                                                                             monkeypatch):
    """Not a missing chunk: the store's error, as it would come from the read itself."""
    import zarr

    ds = open_zarr_dataset(store)

    async def refuse(self, key):
        raise PermissionError(f"no access to {key}")

    monkeypatch.setattr(zarr.storage.LocalStore, "exists", refuse)
    with pytest.raises(PermissionError, match=r"no access to X/c/1/0"):
        ds.X[20:40].values


def test_missing_y_chunk_when_opened_with_xarray_directly(store, tmp_path):
    damaged = _copy(store, tmp_path)
    os.remove(damaged / "y" / "c" / "2")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = xr.open_zarr(damaged, chunks={})  # not through the library: found in as_chunked
    with pytest.raises(CorruptChunkError, match=r"chunk 2 of variable 'y' \(rows 40..49\).*"
                                                r"'y/c/2' is missing"):
        _clf(bandwidth=1.0).fit(ds)


def test_store_written_by_plain_to_zarr_with_skipped_empty_chunks(tmp_path):
    """Zarr leaves out chunks equal to the fill value unless told otherwise: in a store
    written with plain ds.to_zarr() (labels sorted, so the first y chunks are all 0) those
    files are missing by design and read as the fill value, not as damage."""
    y = np.repeat(np.array([0, 1], np.int32), 30)
    X = np.random.default_rng(0).normal(size=(60, 3)).astype(np.float32)
    path = tmp_path / "plain.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xr.Dataset({"X": (("sample", "feature"), X), "y": (("sample",), y)}).chunk(
            {"sample": 10}).to_zarr(path)
    assert not (path / "y" / "c" / "0").exists()       # zarr skipped the all-zero chunk
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = xr.open_zarr(path)
    clf = _clf(bandwidth=1.0).fit(ds)
    np.testing.assert_array_equal(clf.classes_, [0, 1])
    assert clf.n_samples_seen_ == 60


def test_missing_chunk_through_a_catalog_entry(store, tmp_path):
    from ooc_kernels.data.catalog import register_dataset

    damaged = _copy(store, tmp_path)
    os.remove(damaged / "X" / "c" / "0" / "0")
    cat = tmp_path / "cat.yaml"
    register_dataset(cat, "damaged", damaged)
    ds = ok.open_dataset(cat, "damaged")
    with pytest.raises(CorruptChunkError, match=r"chunk 0 of variable 'X'.*'X/c/0/0' is "
                                                r"missing"):
        _clf().fit(ds)


def _damage(path, how):
    data = bytearray(path.read_bytes())
    if how == "truncated":
        data = data[: len(data) // 2]
    else:
        data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["truncated", "flipped byte"])
def test_damaged_chunk_file_is_a_corrupt_chunk(store, tmp_path, how):
    damaged = _copy(store, tmp_path)
    _damage(damaged / "X" / "c" / "1" / "0", how)
    with pytest.raises(CorruptChunkError,
                       match=r"chunk 1 of variable 'X' \(rows 20..39\) .* is corrupt: chunk "
                             r"file\(s\) \['X/c/1/0'\] cannot be decoded \(ValueError: Stored "
                             r"and computed checksum do not match.*regenerate the store"):
        _clf(bandwidth=1.0).fit(open_zarr_dataset(damaged))


def test_truncated_chunk_in_a_store_without_checksums(tmp_path):
    # stores written before the checksum codec (or by other tools) fail inside Blosc
    path = tmp_path / "legacy.zarr"
    ds = xr.Dataset({"X": (("sample", "feature"), np.arange(40, dtype=np.float32).reshape(20, 2)),
                     "y": (("sample",), np.arange(20, dtype=np.float32))},
                    attrs=make_attrs("regression"))
    _to_zarr(ds.chunk({"sample": 10}), path)
    _damage(path / "X" / "c" / "1" / "0", "truncated")
    with pytest.raises(CorruptChunkError, match=r"chunk 1 of variable 'X' \(rows 10..19\).*"
                                                r"cannot be decoded \(RuntimeError: "
                                                r".*decompression error"):
        open_zarr_dataset(path).X.values


def test_healthy_store_reads_the_same_values_as_xarray(store):
    checked = open_zarr_dataset(store)
    assert "checked-X" in checked.X.data.name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = xr.open_zarr(store, chunks={})
    np.testing.assert_array_equal(checked.X.values, plain.X.values)
    np.testing.assert_array_equal(checked.y.values, plain.y.values)
    codecs = [type(c).__name__ for c in checked.X.encoding["compressors"]]
    assert codecs == ["BloscCodec", "Crc32cCodec"]


def test_not_a_zarr_store_and_missing_path(tmp_path):
    with pytest.raises(SchemaError, match=r"is not a Zarr group .*point to the folder"):
        open_zarr_dataset(tmp_path)
    with pytest.raises(ValidationError, match=r"does not exist; check the path or create"):
        open_zarr_dataset(tmp_path / "none.zarr")


def test_a_writer_that_yields_a_wrong_chunk_leaves_nothing(tmp_path):
    chunks = [(np.zeros((2, 3)), np.zeros(2)), (np.zeros((1, 3)), np.zeros(1))]
    with pytest.raises(ValidationError, match=r"chunk 1: X has shape \(1, 3\), expected "
                                              r"\(2, 3\)"):
        write_chunks(tmp_path / "w.zarr", iter(chunks), n_samples=4, n_features=3,
                     chunk_size=2, y_dtype="float32", attrs=make_attrs("regression"))
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------- generators
@pytest.mark.parametrize("args, kwargs, exc, match", [
    (("nope",), {}, ValidationError, r"unknown generator 'nope'; available generators"),
    (("nonlinear_binary",), {"n_samples": 0}, ValidationError,
     "n_samples must be a positive integer, got 0"),
    (("nonlinear_binary",), {"foo": 1}, ValidationError,
     r"unknown parameter\(s\) \['foo'\] for generator 'nonlinear_binary'"),
    (("nonlinear_binary",), {"chunk_size": 0}, ValidationError,
     "chunk_size must be a positive integer, got 0"),
    (("nonlinear_binary",), {"split": "val"}, ValidationError, r"split='val' is not supported"),
])
def test_make_dataset_bad_arguments(tmp_path, args, kwargs, exc, match):
    kwargs = {"n_samples": 10, **kwargs}
    with pytest.raises(exc, match=match):
        ok.make_dataset(args[0], tmp_path / "g.zarr", kwargs.pop("n_samples"), **kwargs)
    assert not (tmp_path / "g.zarr").exists()


def test_make_dataset_refuses_to_overwrite(store):
    before = sorted(os.listdir(store))
    with pytest.raises(DatasetExistsError, match="already exists; pass overwrite=True"):
        ok.make_dataset("nonlinear_binary", store, 10)
    assert sorted(os.listdir(store)) == before


# --------------------------------------------------------------------------- catalogs
def test_unreadable_catalogs(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 2\ndata: [\n")
    with pytest.raises(CatalogError, match=r"cannot be read as YAML .*fix the file"):
        ok.open_dataset(bad, "x")
    with pytest.raises(CatalogError, match=r"nope.yaml' does not exist; check the path"):
        ok.open_dataset(tmp_path / "nope.yaml", "x")


def test_unknown_catalog_entry(store, tmp_path):
    from ooc_kernels.data.catalog import register_dataset

    cat = tmp_path / "cat.yaml"
    register_dataset(cat, "good", _copy(store, tmp_path))
    with pytest.raises(UnknownEntryError, match=r"catalog has no entry 'nope'; available "
                                                r"entries: \['good'\]"):
        ok.open_dataset(cat, "nope")


# --------------------------------------------------------------------------- pipelines
QUICKSTART = os.path.join(os.path.dirname(__file__), "..", "pipelines", "quickstart.yaml")


@pytest.mark.parametrize("edit, match", [
    (("fit:\n", "fitt:\n"), r"unknown key 'fitt': remove it or check its spelling"),
    (("max_iter: 3", "max_iter: three"),
     r"The 'max_iter' parameter of DSGClassifier must be an int in the range \[1, inf\)\. "
     r"Got 'three' instead"),
    (("name: quickstart", "name: [quickstart"), r"is not valid YAML"),
])
def test_invalid_pipeline_yaml(tmp_path, edit, match):
    from ooc_kernels.pipeline import load_pipeline

    text = Path(QUICKSTART).read_text()
    assert edit[0] in text
    path = tmp_path / "p.yaml"
    path.write_text(text.replace(*edit))
    with pytest.raises(PipelineConfigError, match=match):
        load_pipeline(path)
    with pytest.raises(PipelineConfigError, match=r"cannot read pipeline .*No such file"):
        load_pipeline(tmp_path / "none.yaml")


# --------------------------------------------------------------------------- hierarchy
def test_every_error_above_is_in_the_hierarchy():
    for cls in (CorruptChunkError, InvalidDataError, SchemaError, CatalogError,
                UnknownEntryError, PipelineConfigError, DatasetExistsError):
        assert issubclass(cls, OocKernelsError)
    assert issubclass(CorruptChunkError, InvalidDataError) and issubclass(CorruptChunkError,
                                                                          ValueError)


# --------------------------------------------------------------------------- overflow
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_a_diverging_fit_raises_instead_of_predicting_nan():
    from ooc_kernels.exceptions import DivergenceError

    X, _, y = _data(n=60)
    with pytest.raises(DivergenceError, match="non-finite coefficients"):
        _reg(bandwidth=1.0, max_iter=5, tol=None, learning_rate="constant", eta0=1e300,
             standardize=False).fit(X, y * 1e30)
