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
DSG = dict(n_features=64, block_size=32, max_iter=2, chunk_size=20, **FAST)


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("consolidated", [True, False])
def test_a_store_written_by_xarray_opens_and_fits_like_its_arrays(tmp_path, zarr_format,
                                                                  consolidated):
    """``ds.to_zarr(path, zarr_format=2)``: a valid store of the older format, its arrays
    described by ``.zarray`` files rather than ``zarr.json``, is a dataset like any other
    (it was refused as 'damaged': its arrays were not found)."""
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
