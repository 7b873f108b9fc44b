"""The logistic fit out of core starts from Newton's solution in the p-space, one read of the
rows per pass (``families/dspdc/_ooc_newton.py``): on a Dask array of 50,000 x 50
``make_classification`` rows (its defaults but ``tol=1e-8``: at the default ``1e-6`` the
certified gap allows a distance of about 2% of the solution's norm, above the 1% checked) it
is certified to ``tol`` where DSPDC's iterations from zero stopped at ``max_iter``, and it
matches scikit-learn's ``LogisticRegression`` on the same problem (standardized columns and
a penalized intercept column, ``C = 1 / (alpha n)``) within the distance the certified gap
allows.  The start is part of the checkpoint: a
fit killed after a checkpoint and resumed reads no rows for it and ends bit for bit where
the uninterrupted fit does."""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning

from ooc_kernels.families.dspdc import DSPDCClassifier

from _interrupt import _interrupt_after
from _logistic_reference import check_certified_fit


def _lazy(X, y, chunks):
    rows = -(-len(y) // chunks)
    return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows)


@pytest.mark.parametrize("n, p, seed, tol", [(50_000, 50, 1, 1e-8), (2_000, 300, 0, 1e-6)])
def test_out_of_core_defaults_are_certified_and_match_logistic_regression(n, p, seed, tol):
    """At the defaults but ``tol`` (``1e-8`` where the start certifies it at the set-up: its
    gap, at most ``0.9 tol``, then bounds the distance to the solution well below 1% of its
    norm)."""
    X, y = make_classification(n_samples=n, n_features=p, random_state=seed)
    model = DSPDCClassifier(random_state=0, scheduler="sync", progress=False, tol=tol)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model.fit(*_lazy(X, y, 4))
    check_certified_fit(model, X, y)


def test_the_start_is_read_chunk_by_chunk_and_kept_by_a_resumed_fit(tmp_path, monkeypatch):
    """Newton's start stopped after one iteration (not certified, so the fit's rounds go
    on from it): killed after its first checkpoint and resumed, the fit reads no rows for
    the start, and its model, gaps and passes are the uninterrupted fit's, bit for bit."""
    from ooc_kernels.families.dspdc import _logistic_start, _ooc_newton

    monkeypatch.setattr(_logistic_start, "MAX_NEWTON", 1)
    calls = []
    real_sums = _ooc_newton.chunk_sums

    def counted(config, rows, *args):
        calls.append(len(rows))
        return real_sums(config, rows, *args)

    monkeypatch.setattr(_ooc_newton, "chunk_sums", counted)
    X, y = make_classification(n_samples=1_200, n_features=20, random_state=4)
    kw = dict(tol=1e-10, max_iter=6, shuffle_chunks=2, scheduler="sync", random_state=2,
              progress=False)
    lazy = _lazy(X, y, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        whole = DSPDCClassifier(**kw).fit(*lazy)
    assert whole._config.start_x is not None
    assert len(calls) % 4 == 0 and len(calls) >= 8 and max(calls) == 300   # a chunk a task
    x0 = np.asarray(whole._config.start_x)
    assert np.linalg.norm(x0) > 0

    ck = tmp_path / "ck.zarr"
    with monkeypatch.context() as m:
        _interrupt_after(m, 1, KeyboardInterrupt("killed after round 1"))
        with pytest.raises(KeyboardInterrupt, match="killed after round 1"):
            DSPDCClassifier(**kw).fit(*lazy, checkpoint=ck)
    calls.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        resumed = DSPDCClassifier(**kw).fit(*lazy, checkpoint=ck, resume=True)
    assert calls == []
    assert resumed._config.start_x == whole._config.start_x
    np.testing.assert_array_equal(resumed.coef_, whole.coef_)
    assert resumed.intercept_ == whole.intercept_
    assert [(h["passes"], h["primal"], h["dual"]) for h in resumed.gap_history_] == \
        [(h["passes"], h["primal"], h["dual"]) for h in whole.gap_history_]


def _standardized(model, X):
    """The solver's rows of ``X`` for the fitted ``model``: its standardization, then the
    intercept's constant column."""
    cfg = model._config
    A = (X - np.asarray(cfg.x_shift)) / np.asarray(cfg.x_scale)
    return np.hstack([A, np.full((len(X), 1), cfg.intercept_scaling)])


def test_newtons_passes_start_from_the_solution_on_an_evenly_spread_sample(monkeypatch):
    """Before its passes over every row, the start solves the problem on the chunks of
    ``sample_chunks`` (here the middle one of 4: 50 rows per column need one chunk of
    12,500) in memory, which matches ``LogisticRegression`` on those rows (``C = 1 /
    (alpha n_s)``) within the two points' strong-convexity bounds; from there 4 passes over
    the rows certify the fit (``tol = 1e-10``, to which the sample's solution is computed
    too), where 7 from zero do."""
    from _logistic_reference import gradient, reference

    from ooc_kernels.families.dspdc import _ooc_newton

    n, p = 50_000, 50
    assert _ooc_newton.sample_chunks(n, 4, p + 1) == [2]
    X, y = make_classification(n_samples=n, n_features=p, random_state=1)
    starts, runs = [], []
    real_warm, real_passes = _ooc_newton.warm_start, _ooc_newton.newton_passes
    monkeypatch.setattr(_ooc_newton, "warm_start",
                        lambda *a: starts.append(real_warm(*a)) or starts[-1])

    def recorded(config, parts, *args, **kw):
        out = real_passes(config, parts, *args, **kw)
        runs.append((len(parts), out[2]))
        return out

    monkeypatch.setattr(_ooc_newton, "newton_passes", recorded)
    model = DSPDCClassifier(random_state=0, scheduler="sync", progress=False, tol=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model.fit(*_lazy(X, y, 4))
    check_certified_fit(model, X, y)
    (x_s,) = starts
    sample = slice(25_000, 37_500)
    A, b = _standardized(model, X[sample]), np.where(y[sample] == 1, 1.0, -1.0)
    lam2, w = model._config.lam2, np.ones(len(b))
    _, x_ref, ref_err = reference(A, b, w, lam2)
    own_err = float(np.linalg.norm(gradient(A, b, w, lam2, x_s))) / lam2
    assert np.linalg.norm(x_s - x_ref) <= own_err + ref_err + 1e-9
    assert own_err + ref_err < 1e-3 * np.linalg.norm(x_ref)
    # the sample's iterations in memory, then the passes over the 4 chunks
    assert [parts for parts, _ in runs] == [4]
    assert runs[0][1] <= 4
