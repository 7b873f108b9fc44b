"""A catalog declaration's classes are labels a classifier can hold: integers, whole floats
or strings.  NaN, inf, fractions and floats beyond 2**53 (``--classes 0,1,1e400`` reads
1e400 as inf) are a ``SchemaError`` naming the value when the declaration is made
(``register_dataset``, ``catalog add``) and when a hand-written entry is opened, not
scikit-learn's 'Input y contains infinity' or 'Unknown label type: continuous' when a fit
reads them."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
import yaml
from click.testing import CliRunner
from sklearn.utils.multiclass import type_of_target

import ooc_kernels as ok
from ooc_kernels.cli import main
from ooc_kernels.data import register_dataset
from ooc_kernels.exceptions import SchemaError


@pytest.fixture()
def store(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2)).astype("float32")
    ds = xr.Dataset({"X": (("sample", "feature"), X),
                     "y": (("sample",), (X[:, 0] > 0).astype("int64"))})
    ds.chunk({"sample": 20}).to_zarr(tmp_path / "s.zarr")
    return tmp_path / "s.zarr"


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("bad", [float("inf"), float("nan"), 0.5, 1e300])
def test_classes_that_are_no_labels_are_refused_when_declared(tmp_path, store, bad):
    labels = [0, 1, bad] if bad == bad else [0, 1]
    if bad == bad and bad != float("inf"):      # the reference: not discrete classes
        assert type_of_target(np.array(labels, dtype=float)) == "continuous"
    cat = tmp_path / "c.yaml"
    with pytest.raises(SchemaError, match=r"classes must be labels, integers or strings, "
                                          r"found (inf|nan|0\.5|1e\+300)"):
        register_dataset(cat, "s", store, classes=[0, 1, bad])
    assert not cat.exists()


def test_the_command_line_refuses_an_infinite_class(tmp_path, store):
    cat = tmp_path / "c.yaml"
    r = CliRunner().invoke(main, ["catalog", "add", str(cat), "s", str(store),
                                  "--classes", "0,1,1e400"])
    assert r.exit_code != 0 and "found inf in [0, 1, inf]" in r.output
    assert not cat.exists()


def test_a_hand_written_entry_with_an_infinite_class_is_refused_when_opened(tmp_path, store):
    cat = tmp_path / "c.yaml"
    register_dataset(cat, "s", store, classes=[0, 1])
    spec = yaml.safe_load(cat.read_text())
    spec["entries"]["s"]["metadata"]["ooc_kernels"]["classes"] = [0, 1, float("inf")]
    cat.write_text(yaml.safe_dump(spec))
    with pytest.raises(SchemaError, match=r"found inf in \[0, 1, inf\]"):
        ok.open_dataset(cat, "s")


def test_whole_float_classes_are_labels(tmp_path, store):
    cat = tmp_path / "c.yaml"
    register_dataset(cat, "s", store, classes=[0, 1.0])
    assert ok.open_dataset(cat, "s").attrs["classes"] == [0, 1.0]


def test_a_store_whose_own_classes_attribute_holds_no_label_is_refused(tmp_path, store):
    """The same rule for the store's own ``classes`` attribute (the dataset check)."""
    import zarr

    zarr.open_group(store, mode="r+").attrs["classes"] = [0, 1, 0.5]
    with pytest.raises(SchemaError, match=r"dataset attribute 'classes' must be labels, "
                                          r"integers or strings, found 0\.5"):
        ok.data.open_zarr_dataset(store)
