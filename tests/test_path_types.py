"""Every public function that takes a file or folder takes it as :mod:`os` and
:mod:`pathlib` do: a ``str``, a :class:`pathlib.Path`, any :class:`os.PathLike` (its
``__fspath__`` returning ``str`` or ``bytes``) and a ``bytes`` path, all meaning the same
file; a value of another type is the library's :class:`InputTypeError`, naming it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import ooc_kernels as ok
from ooc_kernels.data import (declare_dataset, list_datasets, make_dataset, open_zarr_dataset,
                              register_dataset)
from ooc_kernels.data.catalog import (check_catalog_target, describe_catalog, entry_path,
                                      load_catalog, open_dataset)
from ooc_kernels.evaluation import write_predictions
from ooc_kernels.exceptions import InputTypeError
from ooc_kernels.pipeline import load_pipeline


class FsPath:
    """A user's own path type: only ``__fspath__``, as :class:`os.PathLike` asks."""

    def __init__(self, path, as_bytes=False):
        self.path, self.as_bytes = os.fspath(path), as_bytes

    def __fspath__(self):
        return os.fsencode(self.path) if self.as_bytes else self.path


KINDS = {
    "str": str,
    "pathlib": Path,
    "pathlike": FsPath,
    "pathlike_bytes": lambda p: FsPath(p, as_bytes=True),
    "bytes": lambda p: os.fsencode(os.fspath(p)),
}


@pytest.fixture(params=sorted(KINDS))
def as_kind(request):
    return KINDS[request.param]


def _sample_ids(path):
    """The rows of a store as xarray reads them itself (independent of the library)."""
    return xr.open_zarr(os.fspath(path), consolidated=False)["X"].values


def test_datasets_are_written_and_opened_through_any_path_type(tmp_path, as_kind):
    ref = make_dataset("synthetic_krr_2d", tmp_path / "ref.zarr", 60, chunk_size=30,
                       progress=False)
    out = make_dataset("synthetic_krr_2d", as_kind(tmp_path / "d.zarr"), 60, chunk_size=30,
                       progress=False)
    assert out == tmp_path / "d.zarr" and out.is_dir()
    np.testing.assert_array_equal(_sample_ids(out), _sample_ids(ref))
    ds = open_zarr_dataset(as_kind(tmp_path / "d.zarr"))
    np.testing.assert_array_equal(ds["X"].values, _sample_ids(ref))


def test_models_save_load_and_checkpoint_through_any_path_type(tmp_path, as_kind):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 2))
    y = X[:, 0] - X[:, 1]
    est = ok.DSGRegressor(n_features=256, batch_size=16, max_iter=2, tol=None, random_state=0,
                          scheduler="sync", progress=False)
    est.fit(X, y, checkpoint=as_kind(tmp_path / "ck.zarr"))
    assert (tmp_path / "ck.zarr").is_dir()
    est.save(as_kind(tmp_path / "m.zarr"))
    assert (tmp_path / "m.zarr").is_dir()
    loaded = ok.load(as_kind(tmp_path / "m.zarr"))
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    out = write_predictions(est, X, as_kind(tmp_path / "p.zarr"), progress=False)
    stored = xr.open_zarr(os.fspath(tmp_path / "p.zarr"))["prediction"].values
    np.testing.assert_array_equal(stored.reshape(-1), est.predict(X).reshape(-1))
    assert out == tmp_path / "p.zarr"


def test_catalog_functions_take_any_path_type(tmp_path, as_kind):
    store = make_dataset("synthetic_krr_2d", tmp_path / "data" / "a.zarr", 60, chunk_size=30,
                         progress=False)
    cat = tmp_path / "c.yaml"
    assert check_catalog_target(as_kind(cat)) == cat
    register_dataset(as_kind(cat), "a", as_kind(store))
    declare_dataset(as_kind(cat), "a", task="regression")
    assert list_datasets(as_kind(cat)) == ["a"]
    assert describe_catalog(as_kind(cat))[0]["name"] == "a"
    assert entry_path(as_kind(cat), "a") == store
    assert sorted(load_catalog(as_kind(cat)).entries) == ["a"]
    np.testing.assert_array_equal(open_dataset(as_kind(cat), "a")["X"].values,
                                  _sample_ids(store))
    elsewhere = make_dataset("synthetic_krr_2d", tmp_path / "far" / "b.zarr", 60,
                             chunk_size=30, progress=False)
    inner = tmp_path / "cats" / "c.yaml"
    register_dataset(inner, "b", elsewhere, allow_outside=[as_kind(tmp_path / "far")])
    assert entry_path(inner, "b", allow_outside=[as_kind(tmp_path / "far")]) == elsewhere


def test_factorized_stores_are_reduced_and_made_dense_through_any_path_type(tmp_path,
                                                                          as_kind):
    from ooc_kernels.data.reductions import instance_reduction, materialize

    src = make_dataset("sparse_recovery", tmp_path / "f.zarr", 40, chunk_size=20,
                       progress=False, n_features=6, rank=3, n_informative=2)
    dense = materialize(as_kind(src), as_kind(tmp_path / "dense.zarr"), progress=False)
    assert dense == tmp_path / "dense.zarr"
    raw = xr.open_zarr(os.fspath(src), consolidated=False)
    np.testing.assert_allclose(_sample_ids(dense), raw["U"].values @ raw["V"].values,
                               rtol=1e-5, atol=1e-6)
    small = instance_reduction(as_kind(dense), as_kind(tmp_path / "r.zarr"), 2,
                               progress=False)
    assert small == tmp_path / "r.zarr"
    assert xr.open_zarr(os.fspath(small), consolidated=False)["U"].shape == (40, 2)


def test_a_pipeline_file_is_read_through_any_path_type(tmp_path, as_kind):
    f = tmp_path / "p.yaml"
    f.write_text(json.dumps({
        "name": "p", "data": {"catalog": "c.yaml", "train": "a"},
        "model": {"estimator": "DSGRegressor", "params": {"n_features": 256}},
        "save": {"output_dir": "out"}}))
    spec, base = load_pipeline(as_kind(f))
    assert spec.name == "p" and Path(base) == tmp_path


def test_bytes_that_are_not_utf8_name_the_same_file(tmp_path):
    raw = os.fsencode(tmp_path) + b"/caf\xe9.zarr"  # Latin-1 bytes, not valid UTF-8
    out = make_dataset("synthetic_krr_2d", raw, 60, chunk_size=30, progress=False)
    assert os.fsencode(out) == raw and os.path.isdir(raw)
    assert open_zarr_dataset(raw).sizes["sample"] == 60


@pytest.mark.parametrize("call", [
    lambda bad, tmp: make_dataset("synthetic_krr_2d", bad, 10, progress=False),
    lambda bad, tmp: ok.load(bad),
    lambda bad, tmp: open_zarr_dataset(bad),
    lambda bad, tmp: register_dataset(bad, "a", tmp / "a.zarr"),
    lambda bad, tmp: register_dataset(tmp / "c.yaml", "a", bad),
    lambda bad, tmp: load_pipeline(bad),
])
def test_a_path_of_another_type_is_the_librarys_error(tmp_path, call):
    with pytest.raises(InputTypeError, match=r"must be a str, bytes or os.PathLike, got int"):
        call(12, tmp_path)
