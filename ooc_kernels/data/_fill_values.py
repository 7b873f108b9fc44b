"""A variable that xarray decoded with a fill value of 0 as its ``_FillValue``: every 0 of
it reads as NaN.

xarray takes a Zarr 2 array's ``fill_value`` for the variable's ``_FillValue`` and masks the
values equal to it; zarr-python writes ``fill_value=0`` by default, so a store written with
zarr-python (and opened with ``xr.open_zarr``) has each of its zeros read as a missing
value: a fit then refuses the first one, or leaves out its row under
``on_invalid="skip"``, and the user's data holds no NaN at all.  Stores written by xarray
carry no such fill value (NaN for floats, none for integers), and a Zarr 3 array's fill
value is not a ``_FillValue``; a fill value other than 0 is taken to be the missing-value
marker it was chosen to be.  :func:`warn_masked_zeros` says so when a variable is read.

Examples
--------
>>> import warnings, numpy as np, xarray as xr
>>> v = xr.DataArray(np.ones(3))
>>> v.encoding["_FillValue"] = np.int32(0)
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     warn_masked_zeros(v, "y")
>>> "mask_and_scale=False" in str(caught[0].message)
True
"""

from __future__ import annotations

import warnings
from typing import Any

from ooc_kernels.exceptions import OocKernelsWarning

__all__ = ["warn_masked_zeros"]


def warn_masked_zeros(var: Any, name: str) -> None:
    """Warn (:class:`~ooc_kernels.exceptions.OocKernelsWarning`) when the xarray variable
    ``var``, read as ``name``, was decoded with ``_FillValue`` 0: its zeros read as NaN."""
    fill = getattr(var, "encoding", {}).get("_FillValue")
    try:
        zero = fill is not None and float(fill) == 0.0
    except (TypeError, ValueError):
        return
    if not zero:
        return
    label = name if var.name is None or str(var.name) == name else f"{name} ({var.name!r})"
    warnings.warn(
        f"{label} was decoded by xarray with the store's fill value 0 as its _FillValue, so "
        "every value equal to 0 reads as NaN (a missing value): the fit refuses the first "
        "one, or leaves its row out with on_invalid='skip'. A Zarr 2 array written with "
        "zarr-python has fill value 0 unless told otherwise; if 0 is a real value there, "
        "open the store with xr.open_zarr(path, mask_and_scale=False), or write it with "
        "xarray (ds.to_zarr), which gives numbers no such fill value.",
        OocKernelsWarning, stacklevel=4)
