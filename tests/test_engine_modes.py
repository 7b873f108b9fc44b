"""The engine's modes through small example families (tests/_example_families.py): the
sequential mode (storage order, exact resume), the finishing hook, fits without ``y`` and
with two samples, and family outputs that are not decision values.  Every answer is compared
with the exact in-memory NumPy computation."""

import dask.array as da
import numpy as np
import pytest
import xarray as xr

import ooc_kernels as ok
from _example_families import (
    MeanCovariance,
    MeanDifference,
    OnlineLMS,
    RidgeStatistics,
    registered,
)
from _interrupt import _interrupt_after, _Stop
from ooc_kernels.data.inputs import as_chunked, pair_samples
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.parallel.chunked import ChunkedData
from ooc_kernels.parallel.engine import run_rounds


@pytest.fixture(autouse=True)
def _families():
    with registered():
        yield


def _regression(n=90, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X @ np.linspace(1.0, -1.0, d) + 0.1 * rng.normal(size=n)


def _lms_numpy(X, y, w, eta, epochs):
    """Least mean squares over the rows in the given order (the exact twin)."""
    w = w.copy()
    for _ in range(epochs):
        for i in range(len(X)):
            w = w - eta * (X[i] @ w - y[i]) * X[i]
    return w


def _store(path, X, chunk):
    xr.Dataset({"X": (("sample", "feature"), X)}).chunk({"sample": chunk}).to_zarr(path)
    return xr.open_zarr(path)


# --------------------------------------------------------------------------- sequential
def test_sequential_equals_the_row_by_row_numpy_loop():
    X, y = _regression()
    est = OnlineLMS(max_iter=2, chunk_size=20).fit(X, y)       # chunks of 20, 20, ..., 10
    ref = _lms_numpy(X, y, est.coef_init_, est.eta, epochs=2)
    np.testing.assert_allclose(est.coef_, ref, rtol=1e-13, atol=1e-15)
    assert est.n_iter_ == 2 and est._state["n_seen"] == 2 * len(X)
    np.testing.assert_allclose(est.predict(X), X @ ref, rtol=1e-12)


def test_sequential_follows_storage_order():
    X, y = _regression()
    perm = np.random.default_rng(1).permutation(len(X))
    stored = OnlineLMS(chunk_size=20).fit(da.from_array(X, chunks=20),
                                          da.from_array(y, chunks=20))
    permuted = OnlineLMS(chunk_size=20).fit(da.from_array(X[perm], chunks=20),
                                            da.from_array(y[perm], chunks=20))
    w0 = stored.coef_init_
    np.testing.assert_allclose(permuted.coef_init_, w0)
    np.testing.assert_allclose(stored.coef_, _lms_numpy(X, y, w0, 0.05, 2), rtol=1e-13)
    np.testing.assert_allclose(permuted.coef_, _lms_numpy(X[perm], y[perm], w0, 0.05, 2),
                               rtol=1e-13)
    assert np.abs(stored.coef_ - permuted.coef_).max() > 1e-6   # the order matters here


def test_sequential_mode_refuses_rounds_settings():
    data = ChunkedData({"X": da.ones((10, 2), chunks=(3, 2))})
    with pytest.raises(ValidationError, match="so chunks_per_round must be 1, got 2"):
        run_rounds(None, None, data, n_epochs=1, execution="sequential", chunks_per_round=2)
    with pytest.raises(ValidationError, match="so shuffle must be False, got True"):
        run_rounds(None, None, data, n_epochs=1, execution="sequential")
    with pytest.raises(ValidationError, match="execution must be one of"):
        run_rounds(None, None, data, n_epochs=1, execution="ordered")

    class LMSWithRounds(OnlineLMS):   # a sequential family that exposes an order setting
        _parameter_constraints = {**OnlineLMS._parameter_constraints,
                                  "chunks_per_round": [int]}

        def __init__(self, eta=0.05, *, chunks_per_round=1, max_iter=2, chunk_size=20,
                     on_invalid="error", random_state=0, scheduler=None, progress=False):
            super().__init__(eta, max_iter=max_iter, chunk_size=chunk_size,
                             on_invalid=on_invalid, random_state=random_state,
                             scheduler=scheduler, progress=progress)
            self.chunks_per_round = chunks_per_round

    X, y = _regression()
    with pytest.raises(ValidationError, match=r"execution 'sequential'\), so "
                                              r"chunks_per_round must be 1 or 'auto', got 4"):
        LMSWithRounds(chunks_per_round=4).fit(X, y)
    LMSWithRounds(chunks_per_round=1).fit(X, y)


def test_sequential_checkpoint_resumes_bit_for_bit_mid_epoch(tmp_path, monkeypatch):
    X, y = _regression()
    Xd, yd = da.from_array(X, chunks=20), da.from_array(y, chunks=20)    # 5 chunks
    full = OnlineLMS(max_iter=2).fit(Xd, yd)
    path = tmp_path / "ck"
    with monkeypatch.context() as m:
        _interrupt_after(m, 3)                     # after round 3 of epoch 0's five
        with pytest.raises(_Stop, match="simulated crash"):
            OnlineLMS(max_iter=2).fit(Xd, yd, checkpoint=path)
    rounds = []
    real_apply = OnlineLMS._make_algorithm

    def counting(self):
        alg = real_apply(self)
        apply = alg.apply
        alg.apply = lambda state, delta, info: (rounds.append((info.epoch, info.round)),
                                                apply(state, delta, info))[1]
        return alg

    monkeypatch.setattr(OnlineLMS, "_make_algorithm", counting)
    resumed = OnlineLMS(max_iter=2).fit(Xd, yd, checkpoint=path, resume=True)
    assert rounds[0] == (0, 3) and len(rounds) == 7          # only the rounds left
    np.testing.assert_array_equal(resumed.coef_, full.coef_)
    assert resumed.n_iter_ == full.n_iter_ == 2


# --------------------------------------------------------------------------- finishing
@pytest.fixture
def finish_calls(monkeypatch):
    calls = []
    real = RidgeStatistics._finish

    def counted(self, state, data, sched):
        calls.append(state["n"].copy())
        return real(self, state, data, sched)

    monkeypatch.setattr(RidgeStatistics, "_finish", counted)
    return calls


def _ridge_numpy(X, y, alpha):
    n, d = X.shape
    return np.linalg.solve(X.T @ X / n + alpha * np.eye(d), X.T @ y / n)


def test_finishing_hook_solves_once_after_the_last_round(finish_calls):
    X, y = _regression()
    est = RidgeStatistics(alpha=0.5, max_iter=3, chunks_per_round=2).fit(X, y)
    np.testing.assert_allclose(est.coef_, _ridge_numpy(X, y, 0.5), rtol=1e-10)
    assert finish_calls == [3 * len(X)]           # once, with the statistics of all rounds
    np.testing.assert_allclose(est.predict(X), X @ est.coef_)


def test_finishing_hook_after_partial_fit_only_when_the_family_says_so(finish_calls):
    X, y = _regression()
    est = RidgeStatistics(alpha=0.5)
    est.partial_fit(X[:40], y[:40]).partial_fit(X[40:], y[40:])
    assert finish_calls == [40, len(X)]
    np.testing.assert_allclose(est.coef_, _ridge_numpy(X, y, 0.5), rtol=1e-10)

    class NoFinishOnPartial(RidgeStatistics):
        _finish_after_partial_fit = False

    finish_calls.clear()
    NoFinishOnPartial(alpha=0.5).partial_fit(X, y).partial_fit(X, y)
    assert finish_calls == []


def test_finishing_hook_runs_once_after_a_resumed_fit(tmp_path, monkeypatch, finish_calls):
    X, y = _regression()
    full = RidgeStatistics(max_iter=2).fit(X, y)
    finish_calls.clear()
    path = tmp_path / "ck"
    with monkeypatch.context() as m:
        _interrupt_after(m, 2)                     # round 2 of epoch 0's three
        with pytest.raises(_Stop, match="simulated crash"):
            RidgeStatistics(max_iter=2).fit(X, y, checkpoint=path)
    assert finish_calls == []
    resumed = RidgeStatistics(max_iter=2).fit(X, y, checkpoint=path, resume=True)
    assert finish_calls == [2 * len(X)]
    np.testing.assert_array_equal(resumed.coef_, full.coef_)
    # the last checkpoint holds the rounds' state: resuming it finishes once more, alike
    again = RidgeStatistics(max_iter=2).fit(X, y, checkpoint=path, resume=True)
    assert finish_calls == [2 * len(X)] * 2
    np.testing.assert_array_equal(again.coef_, full.coef_)


# --------------------------------------------------------------------------- inputs
def test_unsupervised_fit_takes_X_alone(tmp_path):
    X, _ = _regression(n=70, d=4)
    for given in (X, da.from_array(X, chunks=15), _store(tmp_path / "x.zarr", X, 15)):
        est = MeanCovariance(chunks_per_round=2, max_iter=2).fit(given)
        np.testing.assert_allclose(est.mean_, X.mean(axis=0), rtol=1e-12)
        np.testing.assert_allclose(est.covariance_, np.cov(X.T, bias=True), atol=1e-12)
        assert est._state["n"] == 2 * len(X)
    # a Dataset that also holds y: y is not read
    ds = xr.Dataset({"X": (("sample", "feature"), X),
                     "y": (("sample",), np.full(len(X), np.nan))})
    np.testing.assert_allclose(MeanCovariance().fit(ds).mean_, X.mean(axis=0), rtol=1e-12)


def test_family_outputs_that_are_not_decision_values():
    X, _ = _regression(n=70, d=4)
    est = MeanCovariance().fit(X)
    np.testing.assert_allclose(est.transform(X), X - X.mean(axis=0), atol=1e-12)
    lazy = est.transform(da.from_array(X, chunks=25))
    assert isinstance(lazy, da.Array) and lazy.chunks == ((25, 25, 20), (4,))
    np.testing.assert_allclose(lazy.compute(), X - X.mean(axis=0), atol=1e-12)


def test_two_sample_fit_reads_both_stores(tmp_path):
    rng = np.random.default_rng(3)
    P, Q = rng.normal(size=(50, 3)), rng.normal(loc=1.0, size=(23, 3))
    est = MeanDifference(max_iter=2, chunks_per_round=2).fit(
        _store(tmp_path / "p.zarr", P, 10), _store(tmp_path / "q.zarr", Q, 23))
    np.testing.assert_allclose(est.mean_p_, P.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(est.mean_q_, Q.mean(axis=0), rtol=1e-12)
    # an epoch is one pass over both samples, whatever their lengths
    assert (est._state["np"], est._state["nq"], est.n_iter_) == (100, 46, 2)
    mp, mq = P.mean(axis=0), Q.mean(axis=0)
    expected = np.exp(-0.5 * ((P - mp) ** 2).sum(1) + 0.5 * ((P - mq) ** 2).sum(1))
    np.testing.assert_allclose(est.predict(P), expected, rtol=1e-10)
    np.testing.assert_allclose(est.predict(da.from_array(P, chunks=20)).compute(),
                               expected, rtol=1e-10)


def test_two_sample_fit_refuses_samples_of_other_features():
    with pytest.raises(ValidationError, match="X_q has 2 features, X_p has 3"):
        MeanDifference().fit(np.zeros((5, 3)), np.zeros((5, 2)))
    with pytest.raises(ValidationError, match="needs X_q, got None"):
        MeanDifference().fit(np.zeros((5, 3)), None)


def test_pair_samples_pairs_chunks_by_index():
    p = as_chunked(da.arange(20.0, chunks=4).reshape(10, 2).rechunk((4, 2)))  # 3 chunks
    q = as_chunked(da.from_array(np.ones((7, 2)), chunks=(7, 2)))             # 1 chunk
    both = pair_samples(p, q)
    assert both["X_p"].chunks[0] == (4, 4, 2) and both["X_q"].chunks[0] == (3, 2, 2)
    assert both.dims["X_q"] == ("sample_q", "feature") and both.sizes["sample_q"] == 7
    readers = both.chunk_readers()
    assert [r.n_rows for r in readers["X_q"]] == [3, 2, 2]
    np.testing.assert_array_equal(readers["X_p"][1](), np.arange(8.0, 16.0).reshape(4, 2))


# --------------------------------------------------------------------------- registry
def test_temporary_registration_ends_with_its_block(tmp_path):
    from ooc_kernels.estimators._registry import ESTIMATORS

    class ScratchLMS(OnlineLMS):
        pass

    assert "ScratchLMS" not in ok.available_estimators()
    with ESTIMATORS.temporarily("ScratchLMS", ScratchLMS):
        assert "ScratchLMS" in ok.available_estimators()
        X, y = _regression()
        est = ScratchLMS().fit(X, y)
        est.save(tmp_path / "m")
        np.testing.assert_array_equal(ok.load(tmp_path / "m").predict(X), est.predict(X))
    assert "ScratchLMS" not in ok.available_estimators()


def test_temporary_registration_keeps_the_registry_consistent():
    from ooc_kernels._registry import Registry
    from ooc_kernels.exceptions import RegistryError

    class First:
        pass

    class Second:
        pass

    reg = Registry("thing", package=None)
    reg.register("a", First)
    with pytest.raises(RegistryError, match="'a' is registered twice"):
        with reg.temporarily("a", Second):
            pass
    assert reg.get("a") is First
    with reg.temporarily("a", First):     # the same object again: kept after the block
        pass
    assert reg.names() == ["a"] and reg.get("a") is First
