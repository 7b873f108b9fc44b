"""Inputs that other tools hand the library: Zarr stores written by xarray itself (Zarr
format 2 or 3), Dask frames of categorical labels, pandas columns of dates, data of
extreme scales and lazy data with invalid values for the online ridge.  Each one gives the
model of the same values as a plain float64 NumPy array, or the library's own error naming
the problem and the fix."""

from __future__ import annotations

import numpy as np
import pytest

import ooc_kernels as ok

pytestmark = pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")

RNG = np.random.default_rng(0)
X = RNG.normal(size=(60, 3))
Y_REG = X[:, 0] - 2 * X[:, 1] + 0.1 * RNG.normal(size=60)
FAST = dict(random_state=0, scheduler="sync", progress=False)
DSG = dict(n_features=64, block_size=32, max_iter=2, tol=None, chunk_size=20, **FAST)


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("consolidated", [True, False])
def test_a_store_written_by_xarray_opens_and_fits_like_its_arrays(tmp_path, zarr_format,
                                                                  consolidated):
    """``ds.to_zarr(path, zarr_format=2)``: a valid store of the older format, its arrays
    described by ``.zarray`` files rather than ``zarr.json``, is a dataset like any other,
    not a 'damaged' store whose arrays are missing."""
    import xarray as xr

    from ooc_kernels.data import open_zarr_dataset

    path = tmp_path / "plain.zarr"
    ds = xr.Dataset({"X": (("sample", "feature"), X), "y": (("sample",), Y_REG)})
    ds.chunk({"sample": 20}).to_zarr(path, zarr_format=zarr_format,
                                     consolidated=consolidated)
    opened = open_zarr_dataset(path)
    assert opened.X.chunks == ((20, 20, 20), (3,))
    model = ok.DSGRegressor(**DSG).fit(opened)
    reference = ok.DSGRegressor(**DSG).fit(X, Y_REG)
    np.testing.assert_array_equal(model.predict(X), reference.predict(X))


def test_a_damaged_array_metadata_file_of_a_zarr_2_store_is_named(tmp_path):
    import xarray as xr

    from ooc_kernels.data import open_zarr_dataset
    from ooc_kernels.exceptions import SchemaError

    path = tmp_path / "plain.zarr"
    ds = xr.Dataset({"X": (("sample", "feature"), X), "y": (("sample",), Y_REG)})
    ds.to_zarr(path, zarr_format=2, consolidated=False)
    (path / "X" / ".zarray").write_text("{garbled")
    with pytest.raises(SchemaError, match=r"array 'X' cannot be read: its metadata file "
                                          r"'X/\.zarray' is damaged"):
        open_zarr_dataset(path)


def _with(value, row=25, column=1):
    out = X.copy()
    out[row, column] = value
    return out


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_online_ridge_names_a_non_finite_value_of_a_lazy_x_by_chunk_and_row(value):
    """The automatic Taylor degree reads the rows' largest norm first: a NaN or inf there
    is the chunk-and-row error every lazy input gets."""
    import dask.array as da

    from ooc_kernels.exceptions import InvalidDataError

    lazy = da.from_array(_with(value), chunks=(20, 3))
    with pytest.raises(InvalidDataError, match=r"X has a non-finite value \((nan|inf)\) in "
                                               r"chunk 1, row 5, feature 1"):
        ok.OnlineKernelRidge(chunk_size=20, **FAST).fit(lazy, Y_REG)


@pytest.mark.parametrize("lazy", [False, True], ids=["numpy", "dask"])
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_online_ridge_skips_invalid_rows_like_the_same_data_without_them(lazy, value):
    """``on_invalid="skip"``: the row is left out of the degree's radius as of the fit
    and the fit equals the fit on the same data without it."""
    import dask.array as da

    kw = dict(chunk_size=20, on_invalid="skip", **FAST)
    bad = _with(value)
    model = ok.OnlineKernelRidge(**kw).fit(
        da.from_array(bad, chunks=(20, 3)) if lazy else bad, Y_REG)
    keep = np.arange(60) != 25
    # the same rows without the bad one: chunks of 20, 19 and 20 rows
    parts = (20, 19, 20)
    reference = ok.OnlineKernelRidge(**kw).fit(
        da.from_array(X[keep], chunks=(parts, 3)), Y_REG[keep])
    assert model.n_samples_skipped_ == 1
    assert model.degree_ == reference.degree_
    np.testing.assert_allclose(model.predict(X), reference.predict(X), rtol=1e-12,
                               atol=1e-12)


def test_online_ridge_on_rows_whose_norm_overflows_takes_the_largest_degree():
    """Finite rows beyond about 1e154 have squared norms that overflow float64: Theorem 4's
    degree for them is past any budget, so the fit takes the largest degree that the
    budget allows, as for any radius beyond it."""
    big = ok.OnlineKernelRidge(chunk_size=20, **FAST).fit(_with(1e200), Y_REG)
    wide = ok.OnlineKernelRidge(chunk_size=20, **FAST).fit(_with(1e3), Y_REG)
    assert big.degree_ == wide.degree_ > 0
    assert np.isfinite(big.predict(X)).all()


@pytest.mark.parametrize("column", ["datetime", "timedelta", "datetime_tz"])
def test_a_pandas_column_of_dates_or_durations_is_named(column):
    """A date or duration column converts to float on its own (nanoseconds), but not
    with the other columns: it is named like a text column, with a way to make it a
    number, in fit and in predict."""
    import pandas as pd

    from ooc_kernels.exceptions import ValidationError

    values = {"datetime": pd.date_range("2020", periods=60, freq="h"),
              "timedelta": pd.to_timedelta(np.arange(60), "s"),
              "datetime_tz": pd.date_range("2020", periods=60, freq="h", tz="UTC")}[column]
    df = pd.DataFrame(X, columns=["a", "b", "c"]).assign(when=values)
    expected = (r"X has non-numeric columns: 'when' \(.*(datetime|timedelta).*\); the "
                r"estimators need numbers\..*total_seconds")
    with pytest.raises(ValidationError, match=expected):
        ok.DSGRegressor(**DSG).fit(df, Y_REG)
    with pytest.raises(ValidationError, match=expected):
        ok.DSPDCRegressor(max_iter=1, **FAST).fit(df, Y_REG)
    model = ok.DSGRegressor(**DSG).fit(df.drop(columns="when").assign(when=1.0), Y_REG)
    with pytest.raises(ValidationError, match=expected):
        model.predict(df)


Y_CLS = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int) * 5 + 2      # labels 2 and 7


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_dask_categorical_labels_of_numbers_are_the_numbers():
    """A Dask Series of categories whose categories are numbers holds those numbers as
    labels, as a pandas one does in memory: the values, not the codes of the categories."""
    import dask.dataframe as dd
    import pandas as pd

    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    reference = ok.DSGClassifier(**DSG).fit(
        dd.from_pandas(frame, npartitions=3), dd.from_pandas(pd.Series(Y_CLS), npartitions=3))
    # categories in another order than the values: the labels are the values, not codes
    labels = pd.Series(pd.Categorical(Y_CLS, categories=[7, 2]))
    for est in (ok.DSGClassifier(**DSG), ok.DSPDCClassifier(max_iter=2, **FAST)):
        model = est.fit(dd.from_pandas(frame, npartitions=3),
                        dd.from_pandas(labels, npartitions=3))
        assert model.classes_.tolist() == [2, 7]
        assert model.classes_.dtype.kind == "i"
        if isinstance(est, ok.DSGClassifier):
            np.testing.assert_array_equal(model.predict(frame), reference.predict(frame))


@pytest.mark.parametrize("kind", ["category", "Int64", "boolean"])
def test_a_missing_dask_integer_label_is_named_by_chunk_and_row(kind):
    """NA in a Dask Series of nullable integers or booleans, or of categories of integers:
    NumPy's integers hold no NaN, so the row is named, with the fix."""
    import dask.dataframe as dd
    import pandas as pd

    from ooc_kernels.exceptions import InvalidDataError

    values = Y_CLS == 7 if kind == "boolean" else Y_CLS
    labels = pd.Series(pd.Categorical(values) if kind == "category" else
                       pd.array(values, dtype=kind))
    labels[45] = None
    for est in (ok.DSGClassifier(**DSG), ok.DSGRegressor(**DSG)):
        with pytest.raises(InvalidDataError, match=r"y has a missing value \(NA\) in chunk "
                                                   r"2, row 5; .*y\.astype\('float64'\)"):
            est.fit(dd.from_pandas(pd.DataFrame(X), npartitions=3),
                    dd.from_pandas(labels, npartitions=3))


def test_dask_nullable_integer_labels_without_na_are_integers():
    import dask.dataframe as dd
    import pandas as pd

    frame = dd.from_pandas(pd.DataFrame(X), npartitions=3)
    model = ok.DSGClassifier(**DSG).fit(
        frame, dd.from_pandas(pd.Series(Y_CLS, dtype="Int64"), npartitions=3))
    reference = ok.DSGClassifier(**DSG).fit(
        frame, dd.from_pandas(pd.Series(Y_CLS), npartitions=3))
    assert model.classes_.tolist() == [2, 7] and model.classes_.dtype.kind == "i"
    np.testing.assert_array_equal(model.predict(frame).compute(),
                                  reference.predict(frame).compute())


def _two_samples():
    rng = np.random.default_rng(1)
    P, Q = rng.normal(size=(200, 2)), rng.normal(size=(200, 2))
    Q[:, 1] += 1.5                         # only the second input tells the samples apart
    return P, Q


@pytest.mark.parametrize("unit", [1e200, 1e-200])
def test_density_ratio_standardizes_huge_and_tiny_columns_like_any_unit(unit):
    """``standardize=True`` makes the model independent of a column's unit: values beyond
    1e154 (squares overflow float64) or below 1e-154 (squares underflow) give the model of
    the same values in another unit, not a model that ignores the column."""
    P, Q = _two_samples()
    kw = dict(n_features=64, block_size=32, max_iter=2, tol=None, dtype="float64", **FAST)
    plain = ok.DSGDensityRatio(**kw).fit(P, Q)
    u = np.array([1.0, unit])
    scaled = ok.DSGDensityRatio(**kw).fit(P * u, Q * u)
    assert scaled._config.x_scale[1] == pytest.approx(plain._config.x_scale[1] * unit,
                                                      rel=1e-12)
    np.testing.assert_allclose(scaled.predict(P * u), plain.predict(P), rtol=1e-9)


@pytest.mark.parametrize("name", ["DSGRegressor", "DSGGaussianProcessRegressor",
                                  "DSGDensityRatio"])
def test_a_column_of_subnormal_values_is_refused_in_float64(name):
    """A column whose spread is below float64's smallest normal number (about 2.2e-308) has
    lost its digits, and the features of its standardized values overflow: the fit names
    the column and the fix."""
    from ooc_kernels.exceptions import InvalidDataError

    P, Q = _two_samples()
    P[:, 0] *= 1e-310
    Q[:, 0] *= 1e-310
    est = getattr(ok, name)(dtype="float64", n_features=64, block_size=32, max_iter=1,
                            **FAST)
    with pytest.raises(InvalidDataError, match=r"column 0 of X has a standard deviation of "
                                               r".*e-31\d, below float64's smallest normal "
                                               r"number .*multiply them by 1e300"):
        est.fit(P, Q) if name == "DSGDensityRatio" else est.fit(P, Q[:, 1])


def test_density_ratio_refuses_scales_below_float32s_range_in_float32():
    from ooc_kernels.exceptions import InvalidDataError

    P, Q = _two_samples()
    u = np.array([1.0, 1e-100])
    with pytest.raises(InvalidDataError, match=r"column 1 of X has a standard deviation of "
                                               r".*e-10\d, below float32's smallest normal "
                                               r".*dtype='float64'"):
        ok.DSGDensityRatio(dtype="float32", n_features=64, block_size=32, max_iter=1, tol=None,
                           **FAST).fit(P * u, Q * u)


def _masked(values, where):
    mask = np.zeros(values.shape, dtype=bool)
    if where is not None:
        mask[where] = True
    return np.ma.masked_array(values, mask=mask)


@pytest.mark.parametrize("name", ["DSGRegressor", "DSPDCRegressor", "OnlineKernelRidge"])
def test_masked_values_are_refused_not_read_as_data(name):
    """A NumPy masked array says which values are missing; NumPy's conversion drops the
    mask and keeps whatever lies under it, so the fit would learn from the hidden values.
    Masked values in X (fit, predict) or y are refused with the ways to fill or drop them;
    a masked array with nothing masked is its data."""
    from ooc_kernels.data.inputs import as_chunked
    from ooc_kernels.exceptions import ValidationError

    est = getattr(ok, name)
    kw = DSG if name == "DSGRegressor" else dict(chunk_size=20, **FAST)
    hidden = _masked(_with(1e6, 25, 1), (25, 1))
    with pytest.raises(ValidationError, match=r"X is a masked array with 1 masked value "
                                              r"\(the first at row 25, column 1\).*"
                                              r"filled\(np\.nan\)"):
        est(**kw).fit(hidden, Y_REG)
    with pytest.raises(ValidationError, match=r"y is a masked array with 1 masked value "
                                              r"\(the first at row 3\)"):
        est(**kw).fit(X, _masked(Y_REG, 3))
    model = est(**kw).fit(_masked(X, None), _masked(Y_REG, None))
    np.testing.assert_array_equal(model.predict(X), est(**kw).fit(X, Y_REG).predict(X))
    with pytest.raises(ValidationError, match=r"X is a masked array with 1 masked value"):
        model.predict(hidden)
    with pytest.raises(ValidationError, match=r"X is a masked array with 1 masked value"):
        as_chunked(hidden, Y_REG)


def test_a_structured_array_is_refused_with_the_conversion():
    """A NumPy structured (record) array holds named fields, not columns: the error names
    them and the NumPy function that makes them columns."""
    from numpy.lib import recfunctions

    from ooc_kernels.data.inputs import as_chunked
    from ooc_kernels.exceptions import ValidationError

    records = np.rec.fromarrays(X.T, names="a,b,c")
    expected = (r"X is a structured array with fields \['a', 'b', 'c'\].*"
                r"structured_to_unstructured\(X\)")
    with pytest.raises(ValidationError, match=expected):
        ok.DSGRegressor(**DSG).fit(records, Y_REG)
    with pytest.raises(ValidationError, match=expected):
        as_chunked(records, Y_REG)
    model = ok.DSGRegressor(**DSG).fit(recfunctions.structured_to_unstructured(records), Y_REG)
    np.testing.assert_array_equal(model.predict(X), ok.DSGRegressor(**DSG).fit(X, Y_REG)
                                  .predict(X))
    with pytest.raises(ValidationError, match=expected):
        model.predict(records)


@pytest.mark.parametrize("name", ["DSGRegressor", "DSGClassifier"])
def test_score_on_in_memory_data_of_other_lengths_is_the_librarys_error(name):
    from ooc_kernels.exceptions import ValidationError

    y = Y_CLS if name == "DSGClassifier" else Y_REG
    model = getattr(ok, name)(**DSG).fit(X, y)
    with pytest.raises(ValidationError, match=r"inconsistent numbers of samples"):
        model.score(X, y[:-1])
    with pytest.raises(ValidationError, match=r"y is a masked array with 1 masked value"):
        model.score(X, _masked(y, 3))


def test_a_dask_x_of_unknown_width_is_refused_with_the_fix():
    """Columns picked with a lazy mask leave the number of features unknown (NaN)."""
    import dask.array as da

    from ooc_kernels.exceptions import ValidationError

    keep = da.from_array(np.array([True, False, True]), chunks=3)
    lazy = da.from_array(X, chunks=(20, 3))[:, keep]
    with pytest.raises(ValidationError, match=r"X has an unknown number of features .*"
                                              r"compute_chunk_sizes\(\)"):
        ok.DSGRegressor(**DSG).fit(lazy, Y_REG)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_masked_factors_and_weights_are_refused():
    from ooc_kernels.exceptions import ValidationError

    with pytest.raises(ValidationError, match=r"U is a masked array with 1 masked value"):
        ok.DSPDCRegressor(max_iter=1, **FAST).fit(ok.Factorized(_masked(X, (4, 0)),
                                                                np.eye(3)), Y_REG)
    with pytest.raises(ValidationError, match=r"V is a masked array with 1 masked value"):
        ok.DSPDCRegressor(max_iter=1, **FAST).fit(ok.Factorized(X, _masked(np.eye(3), (0, 0))),
                                                  Y_REG)
    with pytest.raises(ValidationError, match=r"sample_weight is a masked array with 1 "
                                              r"masked value \(the first at row 2\)"):
        ok.DSGRegressor(**DSG).fit(X, Y_REG, sample_weight=_masked(np.ones(60), 2))


def test_dask_categories_that_dask_does_not_know_yet_are_their_values():
    """``ddf['label'].astype('category')`` leaves the categories unknown to Dask: they are
    found in one pass over ``y`` and the labels are their values."""
    import dask.dataframe as dd
    import pandas as pd

    labels = dd.from_pandas(pd.Series(Y_CLS), npartitions=3).astype("category")
    assert not labels.cat.known
    model = ok.DSGClassifier(**DSG).fit(dd.from_pandas(pd.DataFrame(X), npartitions=3),
                                        labels)
    assert model.classes_.tolist() == [2, 7] and model.classes_.dtype.kind == "i"


@pytest.mark.parametrize("lazy", [False, True], ids=["numpy", "dask"])
def test_labels_of_numbers_held_as_python_objects_get_the_conversion(lazy):
    """``df['label'].to_numpy()`` of an object column: numbers as Python objects, which
    scikit-learn types as 'unknown'; the error says how to convert them."""
    import dask.array as da

    from ooc_kernels.exceptions import InputTypeError

    labels = Y_CLS.astype(object)
    with pytest.raises(InputTypeError, match=r"y holds numbers as Python objects \(dtype "
                                             r"object, int\).*np\.asarray\(y, dtype="
                                             r"np\.int64\)"):
        ok.DSGClassifier(**DSG).fit(X, da.from_array(labels, chunks=20) if lazy else labels)
    model = ok.DSGClassifier(**DSG).fit(X, np.asarray(labels, dtype=np.int64))
    assert model.classes_.tolist() == [2, 7]


_HAND_WRITTEN = """version: 2
entries:
  plain:
    reader: intake.readers.readers:XArrayDatasetReader
    output_instance: xarray:Dataset
    kwargs:
      args: ['{CATALOG_DIR}/data.zarr']
      engine: zarr
"""


def test_a_hand_written_entry_missing_intakes_keys_is_told_which(tmp_path):
    """Intake 2 needs top-level keys and, in every entry, ``metadata`` and
    ``user_parameters``; a catalog written by hand without them gets every missing key and
    where it is missing, not Intake's bare KeyError of the first one."""
    from ooc_kernels.exceptions import CatalogError

    path = tmp_path / "cat.yaml"
    path.write_text(_HAND_WRITTEN)
    with pytest.raises(CatalogError, match=r"the file lacks the top-level keys 'aliases', "
                                           r"'data', 'metadata', 'user_parameters'; entry "
                                           r"'plain' lacks the keys 'metadata', "
                                           r"'user_parameters'.*user_parameters: \{\}"):
        ok.list_datasets(path)


def test_a_hand_written_entry_with_a_path_for_a_data_description_is_told_how(tmp_path):
    """Intake 2's xarray reader reads a data description (``{data(TOKEN)}``), not a path:
    an entry giving the path itself gets the library's error with the ways to write it."""
    import xarray as xr

    from ooc_kernels.exceptions import CatalogError

    xr.Dataset({"X": (("s", "f"), X), "y": (("s",), Y_REG)}).to_zarr(tmp_path / "data.zarr")
    path = tmp_path / "cat.yaml"
    path.write_text(_HAND_WRITTEN.replace("      engine: zarr\n", "      engine: zarr\n"
                                          "    metadata: {}\n    user_parameters: {}\n")
                    + "aliases: {}\ndata: {}\nmetadata: {}\nuser_parameters: {}\n")
    assert ok.list_datasets(path) == ["plain"]
    with pytest.raises(CatalogError, match=r"entry 'plain' gives the path '\{CATALOG_DIR\}/"
                                           r"data\.zarr' as kwargs\.args\[0\].*"
                                           r"ooc-kernels catalog add"):
        ok.open_dataset(path, "plain")
