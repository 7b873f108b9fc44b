"""An Intake catalog entry is data read from a store: DSPDC's ``local_passes="auto"``
treats it as the Dataset the entry opens (``AUTO_LOCAL_PASSES`` passes per read), never as
rows held in memory, so the two inputs give one model."""

from __future__ import annotations

import numpy as np

import ooc_kernels as ok
from ooc_kernels.data.catalog import load_catalog, register_dataset
from ooc_kernels.families.dspdc import _setup_pass

FAST = dict(scheduler="sync", random_state=0, progress=False, max_iter=1, tol=None)


def test_an_intake_reader_fits_as_the_dataset_it_opens(tmp_path):
    store = ok.make_dataset("synthetic_krr_2d", tmp_path / "k.zarr", 400, chunk_size=100,
                            progress=False)
    catalog = tmp_path / "cat.yaml"
    register_dataset(catalog, "k", store)
    reader = load_catalog(catalog)["k"]
    assert not _setup_pass.rows_in_memory(reader)

    from_reader = ok.DSPDCRegressor(**FAST).fit(reader)
    from_dataset = ok.DSPDCRegressor(**FAST).fit(ok.open_dataset(catalog, "k"))
    # one task holds the 4 chunks read from the store: AUTO_LOCAL_PASSES passes per read
    # (MIN_EPOCH_ITERATIONS / 400 rows needs fewer)
    assert from_dataset.local_passes_ == _setup_pass.AUTO_LOCAL_PASSES
    assert from_reader.local_passes_ == _setup_pass.AUTO_LOCAL_PASSES
    assert np.array_equal(from_reader.coef_, from_dataset.coef_)
    assert from_reader.intercept_ == from_dataset.intercept_
