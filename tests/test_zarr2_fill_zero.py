"""A Zarr 2 store written with zarr-python (fill value 0) and opened with ``xr.open_zarr``:
xarray reads every 0 as NaN.  The fit says why, naming the variable and the fix
(``mask_and_scale=False``), instead of reporting (or, with ``on_invalid="skip"``, silently
dropping) missing values the data does not hold; the fix gives the model of the arrays."""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pytest
import xarray as xr
import zarr

import ooc_kernels as ok
from ooc_kernels.exceptions import OocKernelsWarning

FAST = dict(n_features=128, block_size=32, batch_size=8, max_iter=2, tol=None,
            random_state=0, scheduler="sync", progress=False)
N, CHUNK = 60, 20


def _arrays():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 3))
    X[::4, 1] = 0.0                      # real zeros, as one-hot or count columns hold
    return X, (X[:, 0] > 0).astype(np.int32) + 1    # labels 1 and 2: no zero among them


def _zarr_python_store(path):
    X, y = _arrays()
    group = zarr.open_group(path, mode="w", zarr_format=2)
    for name, values, dims in (("X", X, ["sample", "feature"]), ("y", y, ["sample"])):
        arr = group.create_array(name, shape=values.shape, dtype=values.dtype,
                                 chunks=(CHUNK,) + values.shape[1:],
                                 attributes={"_ARRAY_DIMENSIONS": dims})
        arr[:] = values
    zarr.consolidate_metadata(path)
    return X, y


def test_zeros_read_as_missing_are_explained_and_the_fix_fits_the_arrays(tmp_path):
    X, y = _zarr_python_store(tmp_path / "s.zarr")
    opened = xr.open_zarr(tmp_path / "s.zarr")
    with pytest.warns(OocKernelsWarning, match=r"was decoded by xarray with the store's "
                                               r"fill value 0.*mask_and_scale=False") as got:
        skipped = ok.DSGClassifier(on_invalid="skip", **FAST).fit(opened)
    assert sorted({str(w.message).split()[0] for w in got}) == ["X", "y"]
    assert skipped.n_samples_skipped_ > 0      # what the warning is about
    raw = xr.open_zarr(tmp_path / "s.zarr", mask_and_scale=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", OocKernelsWarning)
        fixed = ok.DSGClassifier(**FAST).fit(raw)
    ref = ok.DSGClassifier(**FAST).fit(da.from_array(X, chunks=(CHUNK, 3)),
                                       da.from_array(y, chunks=CHUNK))
    np.testing.assert_array_equal(fixed.decision_function(X), ref.decision_function(X))


def test_a_store_written_by_xarray_in_zarr_2_gives_no_warning(tmp_path):
    X, y = _arrays()
    xr.Dataset({"X": (("sample", "feature"), X), "y": (("sample",), y)}).chunk(
        {"sample": CHUNK}).to_zarr(tmp_path / "x.zarr", zarr_format=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", OocKernelsWarning)
        ok.DSGClassifier(**FAST).fit(xr.open_zarr(tmp_path / "x.zarr"))
        ok.DSGClassifier(**FAST).fit(ok.data.open_zarr_dataset(tmp_path / "x.zarr"))
