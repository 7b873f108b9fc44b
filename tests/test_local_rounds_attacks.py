"""Attacks on the local rounds that run their one task in the calling thread once its rows
were read ahead: a chunk failing part way through a fit, a fit cancelled by
``KeyboardInterrupt`` and resumed from its checkpoint, two fits at once on one store, and
the read-ahead thread never outliving a fit.  References: the same fit uninterrupted, on
the synchronous scheduler, or with a Dask graph every round (read-ahead off)."""

from __future__ import annotations

import threading

import dask
import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from _interrupt import _interrupt_after
from ooc_kernels.families.dspdc import _squared_start

pytestmark = pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")
PREFIX = "ooc-kernels-read-ahead"
FITS = [
    (ok.DSPDCRegressor, dict(alpha=1e-3, tol=1e-6, max_iter=40)),
    (ok.DSGRegressor, dict(n_features=64, block_size=32, max_iter=3, tol=None,
                           bandwidth=1.0)),
]


def _data(seed=0, n=600, p=6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    return X, X @ rng.normal(size=p) + 0.1 * rng.normal(size=n)


def _readers():
    return [t for t in threading.enumerate() if t.name.startswith(PREFIX) and t.is_alive()]


class _FlakyChunk:
    """Chunk 2 of the rows fails (``OSError``) from its ``fail_after + 1``-th read on, and
    records the threads that read it."""

    def __init__(self, fail_after):
        self.fail_after, self.reads, self.threads = fail_after, 0, set()

    def __call__(self, x, block_info=None):
        if block_info[0]["chunk-location"][0] == 2:
            self.reads += 1
            self.threads.add(threading.current_thread().name)
            if self.reads > self.fail_after:
                raise OSError(f"disk error reading chunk 2 (read {self.reads})")
        return x


@pytest.mark.parametrize("Est, params", FITS)
def test_a_chunk_failing_part_way_raises_its_error_and_leaves_no_reader(Est, params,
                                                                       monkeypatch):
    # from the zero start: the squared loss's start certifies this ridge at epoch 0, and
    # the rounds under test would not run (tests/test_dspdc_memory_start.py)
    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    X, y = _data()
    flaky = _FlakyChunk(10 ** 9)
    Xd = da.from_array(X, chunks=(150, -1)).map_blocks(flaky, dtype=float)
    yd = da.from_array(y, chunks=150)
    kw = dict(params, chunk_size=150, random_state=2, progress=False)
    Est(**kw).fit(Xd, yd)                          # the default (threaded) scheduler
    before = threading.active_count()              # Dask's pool started by now
    assert any(name.startswith(PREFIX) for name in flaky.threads), flaky.threads
    ok_reads = flaky.reads
    assert ok_reads > 3
    flaky.reads, flaky.fail_after = 0, ok_reads // 2
    with pytest.raises(OSError, match=r"disk error reading chunk 2"):
        Est(**kw).fit(Xd, yd)
    assert _readers() == []
    assert threading.active_count() <= before


def _cancel_after(monkeypatch, n_writes):
    _interrupt_after(monkeypatch, n_writes, KeyboardInterrupt("cancelled by the user"))


@pytest.mark.parametrize("Est, params", FITS)
def test_a_cancelled_fit_resumes_to_the_uninterrupted_model(monkeypatch, tmp_path, Est,
                                                            params):
    # from the zero start: the squared loss's start certifies this ridge at epoch 0, and
    # the rounds under test would not run (tests/test_dspdc_memory_start.py)
    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    X, y = _data(1)
    Xd, yd = da.from_array(X, chunks=(150, -1)), da.from_array(y, chunks=150)
    kw = dict(params, chunk_size=150, random_state=3, progress=False)
    ref = Est(**kw).fit(Xd, yd)
    with monkeypatch.context() as m:
        _cancel_after(m, 3)
        with pytest.raises(KeyboardInterrupt, match="cancelled by the user"):
            Est(**kw).fit(Xd, yd, checkpoint=tmp_path / "ck")
    assert _readers() == []
    back = Est(**kw).fit(Xd, yd, checkpoint=tmp_path / "ck", resume=True)
    assert back.n_iter_ == ref.n_iter_
    np.testing.assert_array_equal(back.predict(X), ref.predict(X))
    np.testing.assert_array_equal(np.asarray(back.coef_), np.asarray(ref.coef_))


@pytest.mark.parametrize("Est, params", FITS)
def test_two_fits_at_once_on_one_store_give_the_synchronous_model(tmp_path, Est, params):
    X, y = _data(2)
    da.from_array(X, chunks=(150, 6)).to_zarr(str(tmp_path / "X.zarr"))
    da.from_array(y, chunks=150).to_zarr(str(tmp_path / "y.zarr"))
    kw = dict(params, chunk_size=150, random_state=4, progress=False)
    Xd, yd = da.from_zarr(str(tmp_path / "X.zarr")), da.from_zarr(str(tmp_path / "y.zarr"))
    with dask.config.set({"ooc-kernels.local.read_ahead": False}):
        ref = Est(scheduler="sync", **kw).fit(Xd, yd)
    out, errors = [None, None], []

    def fit(k):
        try:
            out[k] = Est(**kw).fit(da.from_zarr(str(tmp_path / "X.zarr")),
                                   da.from_zarr(str(tmp_path / "y.zarr")))
        except BaseException as err:   # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=fit, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == [] and all(m is not None for m in out), errors
    for m in out:
        np.testing.assert_array_equal(np.asarray(m.coef_), np.asarray(ref.coef_))
        np.testing.assert_array_equal(m.predict(X), ref.predict(X))
    assert _readers() == []
