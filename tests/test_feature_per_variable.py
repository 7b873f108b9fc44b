"""A Dataset that holds one 1-D variable per feature (``temp(time)``, ``pres(time)``, the
common xarray layout) and no 2-D ``X``: the refusal says to stack them, with the line that
does it, and following it fits the model of the same columns as an array."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import ooc_kernels as ok
from ooc_kernels.exceptions import SchemaError

FAST = dict(n_features=128, block_size=32, batch_size=8, max_iter=2, tol=None,
            random_state=0, scheduler="sync", progress=False)


def _dataset():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(int)
    return X, y, xr.Dataset({"temp": ("time", X[:, 0]), "pres": ("time", X[:, 1]),
                             "y": ("time", y)})


def test_one_variable_per_feature_is_told_to_stack_them():
    X, y, ds = _dataset()
    with pytest.raises(SchemaError, match=r"its 1-D variables along 'time' \('temp', 'pres'\) "
                                          r"look like one feature each: stack them into X, "
                                          r"e.g. ds\['X'\] = ds\[\['temp', 'pres'\]\]\."
                                          r"to_array\('feature'\)\.transpose\('time', "
                                          r"'feature'\)"):
        ok.DSGClassifier(**FAST).fit(ds)
    ds["X"] = ds[["temp", "pres"]].to_array("feature").transpose("time", "feature")
    stacked = ok.DSGClassifier(**FAST).fit(ds)
    ref = ok.DSGClassifier(**FAST).fit(X, y)
    np.testing.assert_array_equal(stacked.decision_function(X), ref.decision_function(X))
