"""A store replaced (or its metadata rewritten) while a fit reads it stops the fit with
DataChangedError; an unchanged store reads and resumes as before."""

import numpy as np
import pytest
import xarray as xr
import zarr

from ooc_kernels import DSGRegressor
from ooc_kernels.data import integrity, make_dataset, open_dataset, open_zarr_dataset
from ooc_kernels.data.catalog import register_dataset
from ooc_kernels.exceptions import CorruptChunkError, DataChangedError, InvalidDataError

from _interrupt import _interrupt_after, _Stop

N, CHUNK = 1000, 250


def _model(**kw):
    return DSGRegressor(n_features=256, max_iter=3, random_state=0, tol=None,
                        scheduler="sync", **kw)


def _replace_after_epoch(monkeypatch, path, **make):
    """Regenerate the store at ``path`` (seed 1, ``make``) once, after the last round of
    epoch 0: deterministic, between two epochs."""
    real = DSGRegressor._after_round
    done = []

    def after_round(self, state, info):
        real(self, state, info)
        if not done and info.epoch == 0 and info.round == info.n_rounds_in_epoch - 1:
            done.append(info)
            make_dataset("synthetic_krr_2d", path, N, random_state=1, overwrite=True,
                         **{"chunk_size": CHUNK, **make})

    monkeypatch.setattr(DSGRegressor, "_after_round", after_round)
    return done


@pytest.fixture
def store(tmp_path):
    return make_dataset("synthetic_krr_2d", tmp_path / "d.zarr", N, chunk_size=CHUNK)


@pytest.mark.parametrize("chunk_size", [CHUNK, 200], ids=["same-chunks", "other-chunks"])
def test_a_store_replaced_between_epochs_stops_the_fit(store, monkeypatch, chunk_size):
    ds = open_zarr_dataset(store)
    done = _replace_after_epoch(monkeypatch, store, chunk_size=chunk_size)
    with pytest.raises(DataChangedError) as err:
        _model().fit(ds)
    assert done  # the store was replaced after epoch 0, and the next reads saw it
    msg = str(err.value)
    assert str(store) in msg and "changed while this fit was reading it" in msg
    assert "replaced by another file" in msg and "re-run the fit on the new store" in msg
    assert isinstance(err.value, InvalidDataError)
    assert not isinstance(err.value, CorruptChunkError)  # replaced, not corrupt


def test_a_catalog_entry_replaced_between_epochs_stops_the_fit(store, monkeypatch):
    register_dataset(store.parent / "c.yaml", "d", store)
    ds = open_dataset(store.parent / "c.yaml", "d")  # read through fsspec's local files
    _replace_after_epoch(monkeypatch, store)
    with pytest.raises(DataChangedError, match="changed while this fit was reading it"):
        _model().fit(ds)


def test_metadata_rewritten_in_place_or_a_store_removed_is_seen_by_the_next_read(store):
    ds = open_zarr_dataset(store)
    zarr.open_array(str(store / "X"), mode="r+").attrs["note"] = "edited"  # a new file
    with pytest.raises(DataChangedError, match="'X/zarr.json'.* replaced by another file"):
        ds.X.values
    ds = open_zarr_dataset(store)
    with open(store / "X" / "zarr.json", "a") as meta:  # the same file, edited in place
        meta.write(" ")
    with pytest.raises(DataChangedError, match="'X/zarr.json'.* has been rewritten"):
        ds.X.values
    ds = open_zarr_dataset(store)
    (store / "y" / "zarr.json").unlink()
    with pytest.raises(DataChangedError, match="'y/zarr.json'.* is gone"):
        ds.y.values


def test_an_unchanged_store_gives_the_same_model_as_unchecked_reads(store, monkeypatch):
    checked = _model().fit(open_zarr_dataset(store))
    again = _model().fit(open_zarr_dataset(store))  # the same store opened a second time
    monkeypatch.setattr(integrity, "store_identity", lambda zarray: None)  # no check
    unchecked = _model().fit(open_zarr_dataset(store))
    np.testing.assert_array_equal(checked.coef_, unchecked.coef_)
    np.testing.assert_array_equal(again.coef_, unchecked.coef_)


def test_kill_and_resume_on_the_unchanged_store(store, tmp_path, monkeypatch):
    whole = _model().fit(open_zarr_dataset(store))
    ck = tmp_path / "ck.zarr"
    with monkeypatch.context() as patch:
        _interrupt_after(patch, 2)
        with pytest.raises(_Stop):
            _model().fit(open_zarr_dataset(store), checkpoint=ck, checkpoint_every=1)
    resumed = _model().fit(open_zarr_dataset(store), checkpoint=ck, resume=True)
    np.testing.assert_array_equal(resumed.coef_, whole.coef_)


def test_a_store_without_inodes_is_read_unchecked():
    src = xr.Dataset({"v": ("sample", np.arange(8.0))})
    mem = zarr.storage.MemoryStore()
    src.chunk({"sample": 4}).to_zarr(mem, zarr_format=3)
    ds = integrity.guard_dataset(xr.open_zarr(mem, chunks={}))
    assert integrity.store_identity(integrity.zarr_sources(ds.v.data)[0]) is None
    np.testing.assert_array_equal(ds.v.values, np.arange(8.0))
