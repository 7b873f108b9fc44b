"""Declaring a store's own variable names in a catalog, or for one command: the Python API
(register_dataset, declare_dataset, open_dataset), the command line (catalog add, catalog
declare, train/evaluate/predict --var) and pipelines (data.variables), on a store whose
variables are features/label written with xarray's to_zarr."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import xarray as xr
import yaml
from click.testing import CliRunner

import ooc_kernels as ok
from ooc_kernels.cli import main
from ooc_kernels.data import declare_dataset, open_dataset, register_dataset
from ooc_kernels.exceptions import (
    CatalogError,
    PipelineConfigError,
    SchemaError,
    UnknownEntryError,
    UntrustedCatalogError,
)
from ooc_kernels.pipeline import load_pipeline, run_pipeline

_EST = ok.DSGClassifier().get_params()
FAST = dict(n_features=128, block_size=64, batch_size=16, random_state=0,
            **({"max_iter": 2} if "max_iter" in _EST else {}),
            **({"tol": None} if "tol" in _EST else {}))
VARS = {"X": "features", "y": "label"}


def _sensors(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    label = (X[:, 0] * X[:, 1] > 0).astype(np.int64)
    return xr.Dataset({"features": (("time", "channel"), X), "label": (("time",), label)},
                      coords={"time": np.arange(n) * 10 + 1000})


@pytest.fixture
def store(tmp_path):
    """A user's store: features(time, channel), label(time), no library attribute."""
    path = tmp_path / "data" / "sensors.zarr"
    _sensors().chunk({"time": 40}).to_zarr(path, zarr_format=3)
    return path


def _reference(store):
    """The model fitted on the store's DataArrays, named by hand (the oracle)."""
    raw = xr.open_zarr(store)
    return ok.DSGClassifier(**FAST, scheduler="sync", progress=False).fit(
        raw["features"], raw["label"])


def _fit(ds):
    return ok.DSGClassifier(**FAST, scheduler="sync", progress=False).fit(ds)


def _intake_catalog(tmp_path, store, metadata=None):
    """Two entries made with Intake's own API (not register_dataset), undeclared."""
    from intake.readers.datatypes import Zarr
    from intake.readers.entry import Catalog
    from intake.readers.readers import XArrayDatasetReader

    cat = Catalog()
    cat.add_entry(XArrayDatasetReader(Zarr(url=str(store)), engine="zarr",
                                      metadata=dict(metadata or {})), name="sensors")
    cat.add_entry(XArrayDatasetReader(Zarr(url=str(store)), engine="zarr",
                                      metadata={"description": "kept as it is"}),
                  name="other")
    path = tmp_path / "cat.yaml"
    cat.to_yaml_file(str(path))
    return path


def _spec(path):
    return yaml.safe_load(path.read_text())


def _no_temp_files(folder):
    return not [p for p in os.listdir(folder) if ".tmp-" in p]


# --------------------------------------------------------------------------- Python API
def test_register_dataset_declares_the_variables_and_keeps_the_other_entries(tmp_path,
                                                                             store):
    cat = tmp_path / "cat.yaml"
    register_dataset(cat, "first", store, description="undeclared")
    register_dataset(cat, "sensors", store, variables=VARS, task="classification",
                     classes=[0, 1])
    spec = _spec(cat)
    assert spec["entries"]["sensors"]["metadata"]["ooc_kernels"] == {
        "variables": VARS, "task": "classification", "classes": [0, 1]}
    assert spec["entries"]["first"]["metadata"] == {"description": "undeclared"}
    ds = open_dataset(cat, "sensors")
    assert set(ds.data_vars) == {"features", "label"}
    np.testing.assert_array_equal(_fit(ds).coef_, _reference(store).coef_)
    # the undeclared entry still cannot be opened: its error says how to declare it
    with pytest.raises(SchemaError, match=r"ooc-kernels catalog declare .*cat\.yaml first "
                                          r"--var X=features"):
        open_dataset(cat, "first")


def test_register_dataset_refuses_a_declaration_that_does_not_fit_the_store(tmp_path,
                                                                           store):
    cat = tmp_path / "cat.yaml"
    register_dataset(cat, "first", store)
    before = cat.read_bytes()
    with pytest.raises(SchemaError, match=r"cannot register entry 'sensors' with the "
                                          r"declaration .*catalog file .* is unchanged: it "
                                          r"names 'featurs' as X, but the store .* has no data "
                                          r"variable 'featurs'; its data variables are "
                                          r"\['features', 'label'\]"):
        register_dataset(cat, "sensors", store, variables={"X": "featurs", "y": "label"})
    with pytest.raises(SchemaError, match=r"names the schema variable 'x', which is not a "
                                          r"variable of the registered schemas"):
        register_dataset(cat, "sensors", store, variables={"x": "features"})
    with pytest.raises(SchemaError, match=r"task must be one of \['classification', "
                                          r"'regression'\], found 'clasification'"):
        register_dataset(cat, "sensors", store, variables=VARS, task="clasification")
    with pytest.raises(SchemaError, match=r"classes must be sorted and unique, found "
                                          r"\[1, 0\]; use \[0, 1\]"):
        register_dataset(cat, "sensors", store, variables=VARS, classes=[1, 0])
    assert cat.read_bytes() == before and _no_temp_files(tmp_path)
    # a store written later is not opened: the declaration is checked when it is opened
    register_dataset(cat, "later", tmp_path / "data" / "later.zarr", variables=VARS)
    assert _spec(cat)["entries"]["later"]["metadata"]["ooc_kernels"] == {"variables": VARS}


def test_declare_dataset_on_an_entry_made_with_intakes_api(tmp_path, store):
    cat = _intake_catalog(tmp_path, store)
    with pytest.raises(SchemaError, match=r"declare the names in the entry's metadata "
                                          r"ooc_kernels: \{variables: \{X: features\}\}: "
                                          r"ooc-kernels catalog declare .*cat\.yaml sensors "
                                          r"--var X=features"):
        open_dataset(cat, "sensors")
    other_before = _spec(cat)["entries"]["other"]
    data_before = _spec(cat)["data"]
    assert declare_dataset(cat, "sensors", variables={"X": "features"}) == {
        "variables": {"X": "features"}}
    # adds to what the entry declares
    assert declare_dataset(cat, "sensors", variables={"y": "label"}, task="classification") \
        == {"variables": VARS, "task": "classification"}
    spec = _spec(cat)
    assert spec["entries"]["other"] == other_before and spec["data"] == data_before
    ds = open_dataset(cat, "sensors")
    assert ds.attrs["ooc_kernels_variables"] == VARS and ds.attrs["task"] == "classification"
    np.testing.assert_array_equal(_fit(ds).coef_, _reference(store).coef_)
    # a variable given again takes its new name (checked against the store first)
    with pytest.raises(SchemaError, match=r"cannot declare .* for entry 'sensors', the "
                                          r"catalog file .* is unchanged: it names 'lab' as y, "
                                          r"but the store .* has no data variable 'lab'"):
        declare_dataset(cat, "sensors", variables={"y": "lab"})
    assert _spec(cat) == spec and _no_temp_files(tmp_path)


def test_declare_dataset_on_a_hand_written_catalog_keeps_every_other_entry(tmp_path, store):
    cat = tmp_path / "hand.yaml"
    cat.write_text(
        "version: 2\n"
        "data:\n"
        "  d1: {datatype: 'intake.readers.datatypes:Zarr', metadata: {},\n"
        "       kwargs: {url: '{CATALOG_DIR}/data/sensors.zarr'}, user_parameters: {}}\n"
        "entries:\n"
        "  sensors:\n"
        "    reader: intake.readers.readers:XArrayDatasetReader\n"
        "    output_instance: xarray:Dataset\n"
        "    kwargs: {args: ['{data(d1)}'], engine: zarr}\n"
        "    metadata: {description: my sensors}\n"
        "    user_parameters: {}\n"
        "  raw:\n"
        "    reader: intake.readers.readers:XArrayDatasetReader\n"
        "    output_instance: xarray:Dataset\n"
        "    kwargs: {args: ['{data(d1)}'], engine: zarr}\n"
        "    metadata: {}\n"
        "    user_parameters: {}\n"
        "aliases: {s: sensors}\n"
        "metadata: {owner: me}\n"
        "user_parameters: {}\n"
    )
    before = _spec(cat)
    declare_dataset(cat, "s", variables=VARS)  # an alias declares the entry it names
    after = _spec(cat)
    assert after["entries"]["sensors"]["metadata"] == {
        "description": "my sensors", "ooc_kernels": {"variables": VARS}}
    del after["entries"]["sensors"]["metadata"]
    del before["entries"]["sensors"]["metadata"]
    assert after["entries"] == before["entries"]
    for key in ("data", "aliases", "metadata"):
        assert after[key] == before[key]
    np.testing.assert_array_equal(_fit(open_dataset(cat, "s")).coef_,
                                  _reference(store).coef_)


def test_declare_dataset_errors_leave_the_file_as_it_was(tmp_path, store):
    cat = _intake_catalog(tmp_path, store)
    before = cat.read_bytes()
    with pytest.raises(UnknownEntryError, match=r"has no entry 'sensor'; available "
                                                r"entries: \['other', 'sensors'\]"):
        declare_dataset(cat, "sensor", variables=VARS)
    with pytest.raises(CatalogError, match=r"nothing to declare for entry 'sensors'"):
        declare_dataset(cat, "sensors")
    with pytest.raises(SchemaError, match=r"unknown schema 'supervized'; registered "
                                          r"schemas"):
        declare_dataset(cat, "sensors", variables=VARS, schema="supervized")
    with pytest.raises(SchemaError, match=r"names the schema variable 'U', which is not a "
                                          r"variable of the 'supervised' schema"):
        declare_dataset(cat, "sensors", variables={"U": "features"}, schema="supervised")
    with pytest.raises(CatalogError, match=r"catalog file .*missing\.yaml' does not exist; "
                                           r"create the entry with"):
        declare_dataset(tmp_path / "missing.yaml", "sensors", variables=VARS)
    assert cat.read_bytes() == before and _no_temp_files(tmp_path)


def test_declare_dataset_keeps_the_untrusted_catalog_rules(tmp_path, store):
    cat = _intake_catalog(tmp_path, store)
    spec = _spec(cat)
    spec["entries"]["sensors"]["reader"] = "mypkg.readers:Reader"
    cat.write_text(yaml.safe_dump(spec))
    before = cat.read_bytes()
    with pytest.raises(UntrustedCatalogError, match=r"uses reader 'mypkg\.readers:Reader', "
                                                    r"which could import or run code"):
        declare_dataset(cat, "sensors", variables=VARS)
    assert cat.read_bytes() == before
    # YAML aliases are refused in an untrusted file before anything is written
    cat.write_text(before.decode() + "x: &a {b: 1}\ny: *a\n")
    with pytest.raises(CatalogError, match=r"alias"):
        declare_dataset(cat, "sensors", variables=VARS)
    # a store outside the catalog's folder needs the caller's permission
    far = tmp_path / "elsewhere"
    far.mkdir()
    cat2 = _intake_catalog(far, store)
    from ooc_kernels.exceptions import PathEscapeError

    with pytest.raises(PathEscapeError, match=r"outside the catalog's folder"):
        declare_dataset(cat2, "sensors", variables=VARS)
    declare_dataset(cat2, "sensors", variables=VARS, allow_outside=[tmp_path / "data"])
    assert _spec(cat2)["entries"]["sensors"]["metadata"]["ooc_kernels"] == {
        "variables": VARS}


def test_a_failed_rewrite_leaves_the_catalog_whole(tmp_path, store, monkeypatch):
    cat = _intake_catalog(tmp_path, store)
    before = cat.read_bytes()
    import ooc_kernels.data.catalog._registering as catalog_module

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(catalog_module.os, "replace", fail)
    with pytest.raises(OSError, match=r"No space left on device"):
        declare_dataset(cat, "sensors", variables=VARS)
    assert cat.read_bytes() == before and _no_temp_files(tmp_path)


def test_open_dataset_names_the_variables_for_one_call(tmp_path, store):
    cat = _intake_catalog(tmp_path, store, {"ooc_kernels": {"variables": {"X": "features"}}})
    ds = open_dataset(cat, "sensors", variables={"y": "label"})  # added to the entry's
    assert ds.attrs["ooc_kernels_variables"] == VARS
    np.testing.assert_array_equal(_fit(ds).coef_, _reference(store).coef_)
    ds = open_dataset(cat, "other", variables=VARS)
    assert ds.attrs["ooc_kernels_variables"] == VARS
    with pytest.raises(SchemaError, match=r"catalog entry 'sensors'\'s metadata ooc_kernels "
                                          r"declares X = 'features', but the variables given "
                                          r".* say X = 'label'"):
        open_dataset(cat, "sensors", variables={"X": "label"})


# --------------------------------------------------------------------------- command line
def test_catalog_add_and_declare_commands(tmp_path, store):
    runner = CliRunner()
    cat = tmp_path / "cat.yaml"
    r = runner.invoke(main, ["catalog", "add", str(cat), "sensors", str(store),
                             "--var", "X=features", "--var", "y=label",
                             "--task", "classification", "--classes", "0,1",
                             "--description", "my sensors"])
    assert r.exit_code == 0, r.output
    assert _spec(cat)["entries"]["sensors"]["metadata"] == {
        "description": "my sensors",
        "ooc_kernels": {"variables": VARS, "task": "classification", "classes": [0, 1]}}
    np.testing.assert_array_equal(_fit(open_dataset(cat, "sensors")).coef_,
                                  _reference(store).coef_)
    r = runner.invoke(main, ["catalog", "add", str(cat), "bad", str(store),
                             "--var", "X=featurs"])
    assert r.exit_code == 1 and "SchemaError: cannot register entry 'bad'" in r.output
    r = runner.invoke(main, ["catalog", "add", str(cat), "bad", str(store), "--var", "X"])
    assert r.exit_code == 2 and "'X' is not SCHEMA_VAR=STORE_VAR" in r.output

    icat = _intake_catalog(tmp_path, store)
    r = runner.invoke(main, ["catalog", "declare", str(icat), "sensors",
                             "--var", "X=features", "--var", "y=label"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output.strip().splitlines()[-1]) == {"variables": VARS}
    assert sorted(_spec(icat)["entries"]) == ["other", "sensors"]
    np.testing.assert_array_equal(_fit(open_dataset(icat, "sensors")).coef_,
                                  _reference(store).coef_)
    r = runner.invoke(main, ["catalog", "declare", str(icat), "nope", "--var", "X=features"])
    assert r.exit_code == 1 and "UnknownEntryError" in r.output
    listing = runner.invoke(main, ["catalog", "--help"]).output
    assert "\n  add " in listing and "\n  declare " in listing


def test_train_evaluate_predict_name_the_variables(tmp_path, store):
    runner = CliRunner()
    cat = _intake_catalog(tmp_path, store)
    params = [a for k, v in FAST.items()
              for a in ("-p", f"{k}={'null' if v is None else v}")]
    model = tmp_path / "m.zarr"
    common = ["--catalog", str(cat), "--entry", "sensors", "-q", "--scheduler", "sync"]
    r = runner.invoke(main, ["train", *common, *params, "--out", str(model)])
    assert r.exit_code == 1 and "ooc-kernels catalog declare" in r.output
    assert "--var X=features" in r.output
    r = runner.invoke(main, ["train", *common, *params, "--out", str(model),
                             "--var", "X=features", "--var", "y=label"])
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(ok.load(model).coef_, _reference(store).coef_)
    r = runner.invoke(main, ["evaluate", str(model), *common, "--var", "X=features",
                             "--var", "y=label"])
    assert r.exit_code == 0, r.output
    ref = _reference(store)
    raw = xr.open_zarr(store)
    assert json.loads(r.output.strip().splitlines()[-1])["accuracy"] == pytest.approx(
        ref.score(raw["features"].values, raw["label"].values))
    r = runner.invoke(main, ["predict", str(model), *common, "--out", str(tmp_path / "p.zarr"),
                             "--var", "X=features", "--var", "y=label"])
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(xr.open_zarr(tmp_path / "p.zarr")["prediction"].values,
                                  ref.predict(raw["features"].values))
    # the entry's declaration and --var must agree
    declare_dataset(cat, "sensors", variables=VARS)
    r = runner.invoke(main, ["evaluate", str(model), *common, "--var", "X=label"])
    assert r.exit_code == 1
    assert "declares X = 'features', but the variables given" in r.output


# --------------------------------------------------------------------------- pipelines
def _pipeline(tmp_path, variables):
    spec = {"name": "sensors", "data": {"catalog": "cat.yaml", "train": "sensors",
                                        "test": "other"},
            "model": {"estimator": "DSGClassifier", "params": FAST},
            "evaluate": {"predictions": False}, "save": {"output_dir": "out"}}
    if variables is not None:
        spec["data"]["variables"] = variables
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_a_pipeline_names_the_variables(tmp_path, store):
    _intake_catalog(tmp_path, store)
    with pytest.raises(SchemaError, match=r"--var X=features"):
        run_pipeline(_pipeline(tmp_path, None), scheduler="sync", progress=False)
    metrics = run_pipeline(_pipeline(tmp_path, VARS), scheduler="sync", progress=False)
    ref = _reference(store)
    np.testing.assert_array_equal(ok.load(tmp_path / "out" / "model.zarr").coef_, ref.coef_)
    raw = xr.open_zarr(store)
    assert metrics["test_accuracy"] == pytest.approx(
        ref.score(raw["features"].values, raw["label"].values))
    with pytest.raises(PipelineConfigError, match=r"key 'data\.variables': .*names the schema "
                                                  r"variable 'x'"):
        load_pipeline(_pipeline(tmp_path, {"x": "features"}))
    with pytest.raises(PipelineConfigError, match=r"key 'data\.variables\.X'"):
        load_pipeline(_pipeline(tmp_path, {"X": ["features"]}))
