"""DSPDC's set-up in one read and ``local_passes="auto"``.

The one-read ``Lambda`` (``families/dspdc/_setup_pass.py``) is checked against the two
passes it replaces (the column moments, then ``Lambda``'s statistics on the standardized
rows) and against ``R^2`` of the standardized rows written out in NumPy, including stores
whose chunks' own moments are far from the whole data's (there the second pass must run).
``local_passes="auto"`` is checked case by case against the rule, against the fit with the
value it resolves to, through a checkpoint and a saved model.
"""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import CheckpointMismatchError, ValidationError
from ooc_kernels.families.dspdc import _setup_pass
from ooc_kernels.families.dspdc._chunk_tasks import _lambda_stats, _moments_chunk
from ooc_kernels.families.dspdc._scaling import combine_moments, standardization
from ooc_kernels.families.dspdc._setup_pass import setup_statistics
from ooc_kernels.families.dspdc.lambda_stats import combine_lambda_stats, lambda_from_stats

FAST = dict(scheduler="sync", random_state=0, progress=False)


class _Est:
    """The parameters :func:`setup_statistics` reads."""

    def __init__(self, **kw):
        self.standardize, self.fit_intercept, self.Lambda = True, True, "upper_bound"
        self.__dict__.update(kw)


def _now(fn):          # the set-up's calls made now (as for data held in memory)
    return fn


def _value(result):
    return result


def _two_passes(chunks, weights, est, m, q, scaling):
    """The moments' pass, then the statistics' pass: the set-up of two reads."""
    moments = combine_moments(*[_moments_chunk(c, None, w) for c, w in zip(chunks, weights)])
    scaled = standardization(moments, center=est.fit_intercept)
    stats = combine_lambda_stats(*[_lambda_stats(c, None, m, q, scaling, False, w,
                                                 scaled["x_shift"], scaled["x_scale"])
                                   for c, w in zip(chunks, weights)])
    return scaled, lambda_from_stats(stats, est.Lambda)


def _numpy_R2(chunks, weights, scaled, scaling):
    """``max_i w_i ||a'_i||^2`` of the standardized rows with the intercept's column."""
    X = np.vstack(chunks).astype(np.float64)
    A = (X - np.asarray(scaled["x_shift"])) / np.asarray(scaled["x_scale"])
    if scaling:
        A = np.hstack([A, np.full((len(A), 1), scaling)])
    w = np.ones(len(A)) if weights[0] is None else np.concatenate(weights)
    return float((w * (A ** 2).sum(axis=1)).max())


def _setup(chunks, weights, est, m=1, q=None, scaling=1.0):
    p = chunks[0].shape[1]
    q = p + (1 if scaling else 0) if q is None else q
    return setup_statistics(est, chunks, weights, _now, _value, V=None, n_features=p, m=m,
                            q=q, scaling=scaling, factorized=False)


def _raw_chunks(seed, n=900, p=6, chunk=150, dtype=np.float32):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * np.logspace(-2, 2, p) + np.r_[1000.0, np.zeros(p - 1)]
    X[:, 1] = rng.random(n) < 0.3                     # an indicator column
    X = X.astype(dtype)
    return [X[lo:lo + chunk] for lo in range(0, n, chunk)]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("fit_intercept, scaling", [(True, 1.0), (True, 2.5), (False, 0.0)])
@pytest.mark.parametrize("mode", ["upper_bound", "exact", "heuristic"])
def test_one_read_gives_the_lambda_and_moments_of_two(weighted, fit_intercept, scaling, mode):
    chunks = _raw_chunks(0)
    rng = np.random.default_rng(1)
    weights = [rng.random(len(c)) * 3 if weighted else None for c in chunks]
    est = _Est(fit_intercept=fit_intercept, Lambda=mode)
    scaled, Lambda, reads = _setup(chunks, weights, est, scaling=scaling)
    ref_scaled, ref_Lambda = _two_passes(chunks, weights, est, 1, 7 if scaling else 6,
                                         scaling)
    assert reads == 1
    assert scaled == ref_scaled and Lambda == ref_Lambda          # bit for bit
    assert Lambda == pytest.approx(_numpy_R2(chunks, weights, scaled, scaling), rel=1e-12)


def test_rows_dropped_by_a_chunk_are_bounded_or_read_again(monkeypatch):
    """Heavy-tailed chunks whose moments differ (shifted and scaled columns, as in a store
    sorted by a column), each keeping its 1 row of the largest norm under its own moments:
    the largest norm is that of two reads, from one read where the bounds exclude the
    dropped rows (most problems here), else from the second pass."""
    monkeypatch.setattr(_setup_pass, "KEEP_ROWS", 1)
    monkeypatch.setattr(_setup_pass, "MIN_KEEP_ROWS", 1)
    one_read = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        X = rng.standard_t(5, size=(400, 4))
        X[:, 0] += np.repeat([0.0, 0.3, 0.6, 0.9], 100)
        X[:, 1] *= np.repeat([1.0, 1.2, 1.4, 1.6], 100)
        chunks = [X[lo:lo + 100] for lo in range(0, 400, 100)]
        est = _Est()
        scaled, Lambda, reads = _setup(chunks, [None] * 4, est)
        assert (scaled, Lambda) == _two_passes(chunks, [None] * 4, est, 1, 5, 1.0), seed
        assert Lambda == pytest.approx(_numpy_R2(chunks, [None] * 4, scaled, 1.0), rel=1e-12)
        one_read += reads == 1
    assert one_read >= 20


def test_far_chunk_moments_take_the_second_pass():
    """A chunk whose column sits far from the whole data's mean on a tiny spread: its bound
    cannot exclude the rows it dropped, so the statistics' pass runs."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2_000, 3))
    X[1_000:, 0] = 10.0 + 0.01 * rng.normal(size=1_000)
    X[:1_000, 0] = 0.01 * rng.normal(size=1_000)
    chunks = [X[:1_000], X[1_000:]]
    est = _Est()
    _, Lambda, reads = _setup(chunks, [None, None], est)
    assert reads == 2 and Lambda == _two_passes(chunks, [None, None], est, 1, 4, 1.0)[1]


@pytest.mark.parametrize("case, reads", [
    ({"m": 2}, 2), ({"q": 3}, 2), ({"Lambda": 40.0}, 1), ({"standardize": False}, 1)])
def test_other_settings_keep_the_passes_they_need(case, reads):
    chunks = _raw_chunks(2)
    est = _Est(**{k: v for k, v in case.items() if k not in ("m", "q")})
    m, q = case.get("m", 1), case.get("q", 7)
    scaled, Lambda, got = _setup(chunks, [None] * len(chunks), est, m=m, q=q)
    assert got == reads
    if isinstance(est.Lambda, str) and est.standardize:
        assert (scaled, Lambda) == _two_passes(chunks, [None] * len(chunks), est, m, q, 1.0)
    elif not est.standardize:   # the raw rows
        stats = combine_lambda_stats(*[_lambda_stats(c, None, m, q, 1.0, False)
                                       for c in chunks])
        assert scaled == {} and Lambda == lambda_from_stats(stats, est.Lambda)
    else:
        assert Lambda == 40.0


# --------------------------------------------------------------------- local_passes="auto"
def _data(n=600, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    return X, X @ rng.normal(size=p) + 0.1 * rng.normal(size=n)


@pytest.mark.parametrize("lazy, params, expected", [
    (True, {"shuffle_chunks": 3}, 3.0),                 # 2 groups of 3 chunks, redrawn
    (True, {"shuffle_chunks": 2, "chunks_per_round": 2}, 3.0),
    (True, {"shuffle_chunks": 1}, 1.0),                 # a task keeps one chunk
    (True, {"shuffle_chunks": 6}, 3.0),                 # one group: the whole problem
    (True, {"shuffle_chunks": 6, "shuffle": False}, 3.0),
    (True, {"shuffle_chunks": 3, "shuffle": False}, 1.0),   # the same groups every epoch
    (True, {"shuffle_chunks": 1, "chunk_size": 600}, 3.0),  # one chunk: the whole problem
    (False, {"shuffle_chunks": 3}, 1.0),                # in memory
    (True, {"shuffle_chunks": 3, "local_passes": 2.0}, 2.0),
])
def test_auto_local_passes_follow_the_rule(lazy, params, expected, monkeypatch):
    from ooc_kernels.families.dspdc import _squared_start

    # from the zero start: the ridge start leaves the rule nothing to gain past 3 passes
    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    X, y = _data()
    params = dict(params)
    rows = params.pop("chunk_size", 100)
    inputs = (da.from_array(X, chunks=(rows, 5)), da.from_array(y, chunks=rows)) if lazy \
        else (X, y)
    kw = dict(alpha=1e-2, max_iter=2, tol=None, chunk_size=rows, **FAST)
    reg = ok.DSPDCRegressor(**kw, **params).fit(*inputs)
    assert reg.local_passes_ == expected
    if "local_passes" not in params and expected == 3.0:   # 3 passes and more by the rule
        from ooc_kernels.families.dspdc._pass_rule import AUTO_MAX_LOCAL_PASSES

        assert reg.max_local_passes_ == AUTO_MAX_LOCAL_PASSES
        assert 2 * 3.0 < reg.gap_history_[-1]["passes"] <= 2 * AUTO_MAX_LOCAL_PASSES
        return
    assert reg.max_local_passes_ == expected
    same = ok.DSPDCRegressor(**kw, **{**params, "local_passes": expected}).fit(*inputs)
    np.testing.assert_array_equal(reg.coef_, same.coef_)          # the same fit, bit for bit
    assert reg.gap_history_[-1]["passes"] == pytest.approx(2 * expected)


@pytest.mark.parametrize("lazy, expected", [(False, 1.0), (True, 3.0)])
def test_auto_local_passes_of_factorized_rows(lazy, expected):
    """``ok.Factorized(U, V)`` with ``U`` in memory is data held in memory; with ``U`` a
    Dask array, rows read chunk by chunk."""
    rng = np.random.default_rng(0)
    U, V = rng.normal(size=(600, 3)), rng.normal(size=(3, 8))
    y = U @ V @ rng.normal(size=8) + 0.1 * rng.normal(size=600)
    rows = da.from_array(U, chunks=(100, 3)) if lazy else U
    reg = ok.DSPDCRegressor(alpha=1e-2, max_iter=1, tol=None, chunk_size=100,
                            shuffle_chunks=3, **FAST).fit(ok.Factorized(rows, V), y)
    assert reg.local_passes_ == expected


def test_auto_resumes_from_its_checkpoint_and_refuses_another_value(tmp_path):
    X, y = _data()
    inputs = (da.from_array(X, chunks=(100, 5)), da.from_array(y, chunks=100))
    kw = dict(alpha=1e-2, tol=None, shuffle_chunks=3, **FAST)
    whole = ok.DSPDCRegressor(max_iter=4, **kw).fit(*inputs)
    ck = tmp_path / "ck.zarr"
    ok.DSPDCRegressor(max_iter=2, **kw).fit(*inputs, checkpoint=ck)
    resumed = ok.DSPDCRegressor(max_iter=4, **kw).fit(*inputs, checkpoint=ck, resume=True)
    assert whole.local_passes_ == resumed.local_passes_ == 3.0
    np.testing.assert_array_equal(resumed.coef_, whole.coef_)
    with pytest.raises(CheckpointMismatchError,
                       match="hyperparameter local_passes: checkpoint has 'auto', this fit "
                             "has 3.0"):
        ok.DSPDCRegressor(max_iter=4, local_passes=3.0, **kw).fit(*inputs, checkpoint=ck,
                                                                 resume=True)


def test_a_saved_model_keeps_auto_and_the_value_it_ran_with(tmp_path):
    X, y = _data()
    reg = ok.DSPDCRegressor(alpha=1e-2, max_iter=2, tol=None, shuffle_chunks=3, **FAST).fit(
        da.from_array(X, chunks=(100, 5)), da.from_array(y, chunks=100))
    reg.save(tmp_path / "m.zarr")
    back = ok.load(tmp_path / "m.zarr")
    assert back.local_passes == "auto" and back.local_passes_ == reg.local_passes_ == 3.0
    np.testing.assert_array_equal(back.predict(X), reg.predict(X))


def test_local_passes_refuses_other_strings():
    with pytest.raises(ValidationError, match="local_passes"):
        ok.DSPDCRegressor(local_passes="max", **FAST).fit(*_data())
