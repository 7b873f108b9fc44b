"""Feature coordinate labels of xarray inputs (``feature_coords_``): a model fitted on
features with labels refuses them in another order, or other labels, at every later call,
for every kind of xarray input (DataArray, Dataset with declared names, Intake entry,
factorized ``V``) and keeps the check through save and load; inputs without labels and
NumPy are read by position, as always.  Every registered estimator is checked by the contract
suite's ``check_estimator_feature_coords`` (tests/test_contract.py)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import ooc_kernels as ok
from ooc_kernels.estimators import ESTIMATORS
from ooc_kernels.estimators.persistence import model_metadata, restore_model
from ooc_kernels.exceptions import ModelFormatError, ValidationError
from ooc_kernels.families.dspdc.mtlmnn import MultiTaskLMNN
from ooc_kernels.testing import problem
from ooc_kernels.testing._coords import labelled
from ooc_kernels.testing._problems import make

DATA = Path(__file__).parent / "data"
CHANNELS = ["a", "b", "c"]


def _dataset(X, y, channels=CHANNELS):
    """A user's Dataset: ``features(time, channel)`` and ``label(time)`` declared as X and
    y, the channels labelled."""
    return xr.Dataset({"features": (("time", "channel"), X), "label": (("time",), y)},
                      coords={"channel": channels},
                      attrs={"ooc_kernels_variables": {"X": "features", "y": "label"}})


@pytest.mark.parametrize("name", ["DSGClassifier", "DSPDCClassifier", "ProjectedKernelRidge",
                                  "OnlineKernelRidge"])
def test_reordered_labels_are_refused_and_selecting_them_gives_numpys_predictions(name):
    cls = ESTIMATORS.get(name)
    X, y = problem(cls)
    Xt, yt = problem(cls, seed=3, n=80)
    est = make(cls).fit(labelled(X), y)
    moved = labelled(Xt).isel(channel=[2, 0, 1])
    with pytest.raises(ValidationError, match=r"another order: position 0 is 'c2', where "
                       rf"{name} was fitted with 'c0'.*X.sel\(\{{'channel': "
                       r"model.feature_coords_\}\)"):
        est.predict(moved)
    with pytest.raises(ValidationError, match="another order"):
        est.score(moved, yt)
    # the fix the message gives reads the columns in fit's order: NumPy's predictions
    fixed = moved.sel({"channel": est.feature_coords_})
    np.testing.assert_array_equal(np.asarray(est.predict(fixed)), est.predict(Xt))
    assert est.score(fixed, yt) == pytest.approx(est.score(Xt, yt), rel=1e-12)


def test_a_dataset_with_declared_names_is_checked_by_its_x_variable():
    X, y = problem(ESTIMATORS.get("DSGClassifier"))
    y = (y == "odd").astype(np.int64)
    clf = make(ESTIMATORS.get("DSGClassifier")).fit(_dataset(X, y))
    assert clf.feature_coords_.tolist() == CHANNELS
    assert not hasattr(clf, "feature_names_in_")
    moved = _dataset(X[:, [1, 0, 2]], y, ["b", "a", "c"])
    with pytest.raises(ValidationError, match="'channel' has the labels .* another order"):
        clf.predict(moved)
    with pytest.raises(ValidationError, match="another order"):
        clf.score(moved)
    with pytest.raises(ValidationError, match="another order"):
        clf.partial_fit(moved)
    renamed = _dataset(X, y, ["a", "b", "z"])
    with pytest.raises(ValidationError, match=r"'z' \(position 2\) is not one of them"):
        clf.predict(renamed)
    np.testing.assert_array_equal(np.asarray(clf.predict(moved.sel(channel=CHANNELS))),
                                  clf.predict(X))


def test_an_intake_entry_opening_a_labelled_dataset(tmp_path):
    from intake.readers.datatypes import Zarr
    from intake.readers.entry import Catalog
    from intake.readers.readers import XArrayDatasetReader

    from ooc_kernels.data.catalog import load_catalog

    X, y = problem(ESTIMATORS.get("DSGClassifier"))
    y = (y == "odd").astype(np.int64)
    decl = {"ooc_kernels": {"variables": {"X": "features", "y": "label"}}}
    cat = Catalog()
    for name, channels, cols in (("fit", CHANNELS, [0, 1, 2]),
                                 ("moved", ["c", "a", "b"], [2, 0, 1])):
        store = tmp_path / f"{name}.zarr"
        ds = _dataset(X[:, cols], y, channels)
        ds.attrs = {}
        ds.chunk({"time": 40}).to_zarr(store, zarr_format=3)
        cat.add_entry(XArrayDatasetReader(Zarr(url=str(store)), engine="zarr",
                                          metadata=decl), name=name)
    cat.to_yaml_file(str(tmp_path / "cat.yaml"))
    entries = load_catalog(tmp_path / "cat.yaml")
    clf = make(ESTIMATORS.get("DSGClassifier")).fit(entries["fit"])
    assert clf.feature_coords_.tolist() == CHANNELS
    with pytest.raises(ValidationError, match="position 0 is 'c', where DSGClassifier was "
                       "fitted with 'a'"):
        clf.predict(entries["moved"])
    with pytest.raises(ValidationError, match="another order"):
        clf.score(entries["moved"])
    np.testing.assert_array_equal(np.asarray(clf.predict(entries["fit"])), clf.predict(X))


def test_factorized_data_is_checked_by_the_labels_of_v():
    rng = np.random.default_rng(0)
    U, V = rng.normal(size=(120, 2)), rng.normal(size=(2, 4))
    y = U @ V @ np.array([1.0, -2.0, 0.5, 0.0])
    Vl = xr.DataArray(V, dims=("rank", "gene"), coords={"gene": ["g0", "g1", "g2", "g3"]})
    reg = make(ESTIMATORS.get("DSPDCRegressor")).fit(ok.Factorized(U, Vl), y)
    assert reg.feature_coords_.tolist() == ["g0", "g1", "g2", "g3"]
    moved = ok.Factorized(U, Vl.isel(gene=[3, 2, 1, 0]))
    with pytest.raises(ValidationError, match="'gene' has the labels .* another order"):
        reg.predict(moved)
    # rows given as A = U V in fit's order: the factorized prediction
    np.testing.assert_allclose(np.asarray(reg.predict(U @ V)),
                               np.asarray(reg.predict(ok.Factorized(U, Vl))), rtol=1e-10)


def test_multitask_lmnn_checks_the_labels_at_transform_and_predict():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    Xl = xr.DataArray(X, dims=("row", "channel"), coords={"channel": CHANNELS})
    lmnn = MultiTaskLMNN(random_state=0).fit(Xl, y)
    assert lmnn.feature_coords_.tolist() == CHANNELS
    moved = Xl.isel(channel=[1, 0, 2])
    for method in (lmnn.transform, lmnn.predict, lmnn.predict_proba):
        with pytest.raises(ValidationError, match="another order"):
            method(moved)
    # NumPy and unlabelled rows are read by position; selected labels are fit's order
    expected = X @ lmnn.components_[0].T
    np.testing.assert_allclose(lmnn.transform(moved.sel(channel=CHANNELS)), expected)
    np.testing.assert_allclose(lmnn.transform(Xl.drop_vars("channel")), expected)
    lmnn.fit(X, y)   # a fit on NumPy: no labels to check any more
    assert not hasattr(lmnn, "feature_coords_")
    lmnn.transform(moved)


def test_labels_of_numbers_and_times_survive_save_and_load(tmp_path):
    cls = ESTIMATORS.get("DSGRegressor")
    X, y = problem(cls)
    for i, coords in enumerate((
            np.array([10, 20, 30]),
            np.array(["2024-01-01", "2024-02-01", "2024-03-01"], dtype="M8[ns]"))):
        Xl = xr.DataArray(X, dims=("row", "when"), coords={"when": coords})
        reg = make(cls).fit(Xl, y)
        reg.save(tmp_path / f"m{i}.zarr")
        loaded = ok.load(tmp_path / f"m{i}.zarr")
        assert loaded.feature_coords_.dtype == coords.dtype
        np.testing.assert_array_equal(loaded.feature_coords_, coords)
        with pytest.raises(ValidationError, match="another order"):
            loaded.predict(Xl.isel(when=[1, 0, 2]))
        np.testing.assert_array_equal(np.asarray(loaded.predict(Xl)), reg.predict(X))


def test_a_corrupt_saved_entry_is_refused_and_none_means_no_labels():
    cls = ESTIMATORS.get("DSGRegressor")
    X, y = problem(cls)
    reg = make(cls).fit(labelled(X), y)
    meta, arrays = model_metadata(reg), reg._fitted_arrays()
    assert meta["base"]["feature_coords_"] == {"dtype": "|O", "values": ["c0", "c1", "c2"]}
    for bad in ({"dtype": "<U2", "values": ["c0", "c1"]},
                {"dtype": "<U2", "values": ["c0", "c1", 2]},
                {"dtype": "|V8", "values": ["c0", "c1", "c2"]},
                ["c0", "c1", "c2"]):
        meta["base"]["feature_coords_"] = bad
        with pytest.raises(ModelFormatError, match="base.feature_coords_ must be"):
            restore_model(meta, arrays)
    del meta["base"]["feature_coords_"]
    assert not hasattr(restore_model(meta, arrays), "feature_coords_")


def test_a_model_file_without_the_labels_loads_and_reads_any_input_by_position():
    """A file written before models recorded feature labels (format 3, no
    ``feature_coords_``): it loads, and a labelled DataArray is read by position."""
    expected = np.load(DATA / "dsg_classifier_format3_expected.npz")
    clf = ok.load(DATA / "dsg_classifier_format3.zarr")
    assert not hasattr(clf, "feature_coords_")
    Xl = xr.DataArray(expected["X"], dims=("row", "channel"),
                      coords={"channel": ["c", "a", "b"]})
    np.testing.assert_array_equal(np.asarray(clf.decision_function(Xl)),
                                  expected["decision"])


def test_numpy_and_unlabelled_inputs_are_read_by_position_without_a_warning():
    cls = ESTIMATORS.get("DSGClassifier")
    X, y = problem(cls)
    clf = make(cls).fit(labelled(X), y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(
            np.asarray(clf.predict(labelled(X).drop_vars("channel"))), clf.predict(X))


def test_two_samples_with_reordered_labels_are_refused():
    cls = ESTIMATORS.get("DSGDensityRatio")
    X_p, X_q = problem(cls)
    with pytest.raises(ValidationError, match="X_q's feature coordinate 'channel' has the "
                       "labels .* another order"):
        make(cls).fit(labelled(X_p), labelled(X_q).isel(channel=[2, 1, 0]))


def test_a_model_fitted_on_a_frame_compares_its_column_names_with_text_labels():
    import pandas as pd

    cls = ESTIMATORS.get("DSGRegressor")
    X, y = problem(cls)
    reg = make(cls).fit(pd.DataFrame(X, columns=CHANNELS), y)
    assert not hasattr(reg, "feature_coords_")
    Xl = xr.DataArray(X, dims=("row", "channel"), coords={"channel": CHANNELS})
    with pytest.raises(ValidationError, match=r"position 0 is 'b', where DSGRegressor was "
                       r"fitted with 'a'.*X.sel\(\{'channel': "
                       r"list\(model.feature_names_in_\)\}\)"):
        reg.predict(Xl.isel(channel=[1, 0, 2]))
    expected = reg.predict(pd.DataFrame(X, columns=CHANNELS))
    np.testing.assert_array_equal(np.asarray(reg.predict(Xl)), expected)
    # labels that are not text do not name columns: read by position
    numbered = Xl.assign_coords(channel=[0, 1, 2])
    np.testing.assert_array_equal(np.asarray(reg.predict(numbered)), expected)


def test_a_refit_on_unlabelled_input_forgets_the_labels(tmp_path):
    cls = ESTIMATORS.get("DSGRegressor")
    X, y = problem(cls)
    reg = make(cls).fit(labelled(X), y)
    reg.fit(X, y)   # NumPy: the features have no labels any more
    assert not hasattr(reg, "feature_coords_")
    moved = labelled(X).isel(channel=[1, 0, 2])
    np.testing.assert_array_equal(np.asarray(reg.predict(moved)),
                                  reg.predict(X[:, [1, 0, 2]]))
    reg.save(tmp_path / "m.zarr")
    assert not hasattr(ok.load(tmp_path / "m.zarr"), "feature_coords_")


def test_frames_with_the_labels_as_column_names_in_another_order_are_refused():
    import dask.dataframe as dd
    import pandas as pd

    cls = ESTIMATORS.get("DSGRegressor")
    X, y = problem(cls)
    reg = make(cls).fit(labelled(X), y)
    names = ["c1", "c0", "c2"]
    frame = pd.DataFrame(X[:, [1, 0, 2]], columns=names)
    for given in (frame, dd.from_pandas(frame, npartitions=2)):
        with pytest.raises(ValidationError, match=r"X's columns have the labels the model "
                           r"was fitted with in another order: position 0 is 'c1'.*"
                           r"X\[list\(model.feature_coords_\)\]"):
            with warnings.catch_warnings():   # scikit-learn's: fitted without names
                warnings.simplefilter("ignore", UserWarning)
                reg.predict(given)
    expected = reg.predict(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fixed = frame[list(reg.feature_coords_)]
        np.testing.assert_array_equal(reg.predict(fixed), expected)
        np.testing.assert_array_equal(reg.predict(pd.DataFrame(X)), expected)  # no names


def test_evaluate_and_write_predictions_check_names_and_labels(tmp_path):
    import dask.dataframe as dd
    import pandas as pd
    from sklearn.metrics import r2_score

    from ooc_kernels.evaluation import evaluate, write_predictions

    cls = ESTIMATORS.get("DSGRegressor")
    X, y = problem(cls)
    reg = make(cls).fit(labelled(X), y)
    moved = labelled(X).isel(channel=[1, 2, 0])
    with pytest.raises(ValidationError, match="another order"):
        evaluate(reg, moved, y, progress=False)
    with pytest.raises(ValidationError, match="another order"):
        write_predictions(reg, moved, tmp_path / "p.zarr", progress=False)
    assert not (tmp_path / "p.zarr").exists()
    got = evaluate(reg, moved.sel(channel=reg.feature_coords_), y, progress=False)
    assert got["r2"] == pytest.approx(r2_score(y, reg.predict(X)), rel=1e-9)
    # a model fitted on a Dask DataFrame: its column names, as predict checks them
    frame = dd.from_pandas(pd.DataFrame(X, columns=CHANNELS), npartitions=3)
    named = make(cls).fit(frame, dd.from_pandas(pd.Series(y), npartitions=3))
    with pytest.raises(ValidationError, match="The feature names should match"):
        evaluate(named, frame[["b", "a", "c"]], y, progress=False)


def test_a_resume_with_other_feature_labels_is_refused(tmp_path):
    from ooc_kernels.exceptions import CheckpointMismatchError

    cls = ESTIMATORS.get("DSGRegressor")
    X, y = problem(cls)
    Xl = labelled(X)
    ckpt = tmp_path / "fit.ckpt.zarr"
    done = make(cls, max_iter=2, tol=None).fit(Xl, y, checkpoint=ckpt)
    # the same rows (the same data token), their columns named in another order
    renamed = Xl.assign_coords(channel=["c1", "c0", "c2"])
    with pytest.raises(CheckpointMismatchError, match=r"dataset feature labels: checkpoint "
                       r"\['c0', 'c1', 'c2'\], this fit's input \['c1', 'c0', 'c2'\]"):
        make(cls, max_iter=2, tol=None).fit(renamed, y, checkpoint=ckpt, resume=True)
    resumed = make(cls, max_iter=2, tol=None).fit(Xl, y, checkpoint=ckpt, resume=True)
    np.testing.assert_array_equal(resumed.coef_, done.coef_)
    assert resumed.feature_coords_.tolist() == ["c0", "c1", "c2"]
