"""The logistic loss's Newton start out of core certified by its last pass
(``families/dspdc/_ooc_newton.py`` and ``_scatter_gap.setup_runner``) and its last pass
without a Hessian.

Where the last of Newton's passes over the rows certifies ``tol``, its losses' sum and the
start's duals give the gap the fit's first epoch would compute: the fit ends after the
set-up, reading no row for an epoch; the gap it reports is that of NumPy on the rows at the
start, the model that of a fit which certifies the same start on the rows, and it matches
scikit-learn's ``LogisticRegression``.  A pass that Newton's quadratic rate predicts to be
the last sums no Hessian, and the model is the one with every Hessian summed."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
from scipy.special import expit
from sklearn.datasets import make_classification

from ooc_kernels.families.dspdc import DSPDCClassifier, _logistic_start, _ooc_newton
from ooc_kernels.families.dspdc import _scatter_gap

from _interrupt import assert_same_continuations
from _logistic_reference import check_certified_fit


def _counted(X, y, chunk, reads):
    """Dask arrays of ``X`` and ``y`` whose ``X`` blocks count the rows they hand out."""
    def read(block):
        reads.append(len(block))
        return block

    return (da.from_array(X, chunks=(chunk, X.shape[1])).map_blocks(read, dtype=X.dtype),
            da.from_array(y, chunks=chunk))


def _rows(model, X):
    cfg = model._config
    A = (X - np.asarray(cfg.x_shift)) / np.asarray(cfg.x_scale)
    return np.column_stack([A, np.full(len(X), cfg.intercept_scaling)])


def _gap_on_rows(A, b, lam2, x):
    """``P(x) - D(y)`` summed in NumPy over the rows, ``y`` the duals ``phi'(A x)``
    clipped as the fit's tasks take them (``_logistic_start.logistic_duals``' interval)."""
    from ooc_kernels._jit.losses import W_HIGH, W_LOW

    n = len(b)
    z = A @ x
    primal = np.logaddexp(0.0, -b * z).mean() + 0.5 * lam2 * x @ x
    t = np.clip(expit(-b * z), W_LOW, W_HIGH)          # -b y in (0, 1)
    conj = t * np.log(t) + (1.0 - t) * np.log1p(-t)    # phi*(y) of the logistic loss
    u = A.T @ (-b * t) / n
    dual = -conj.mean() - u @ u / (2.0 * lam2)
    return primal - dual, primal


@pytest.mark.parametrize("tol", [1e-4, 1e-10])
def test_a_start_certified_by_its_last_pass_reads_no_rows_after_the_set_up(tol, monkeypatch):
    """20,000 x 20 ``make_classification`` rows in 4 chunks: the set-up's reads (the
    moments, the sample's chunk, Newton's passes) and no other read; one epoch reported,
    with no iteration, its gap the one NumPy sums on the rows at the start; the model the
    one a fit certifying the start on the rows (one more read of every row) returns, and
    scikit-learn's within the distance the gap allows (below 1% of its norm at ``tol =
    1e-10``)."""
    from _logistic_reference import reference

    X, y = make_classification(n_samples=20_000, n_features=20, random_state=2)
    n = len(y)
    kw = dict(random_state=0, scheduler="sync", progress=False, tol=tol)
    reads = []
    est = DSPDCClassifier(**kw).fit(*_counted(X, y, 5_000, reads))
    sample = 5_000 * len(_ooc_newton.sample_chunks(n, 4, 21))
    assert sample == 5_000
    assert sum(reads) == (est._setup_reads - 1) * n + sample    # no read after the set-up
    assert est.n_iter_ == 1 and len(est.gap_history_) == 1
    first = est.gap_history_[0]
    assert first["iterations"] == 0 and first["relative_gap"] <= tol
    A, b = _rows(est, X), np.where(y == 1, 1.0, -1.0)
    gap, primal = _gap_on_rows(A, b, est._config.lam2, np.asarray(est._config.start_x))
    assert first["primal"] == pytest.approx(primal, rel=1e-12)
    assert first["gap"] == pytest.approx(gap, rel=1e-6, abs=1e-14)
    if tol < 1e-8:
        check_certified_fit(est, X, y)
    else:
        _, x_ref, ref_error = reference(A, b, np.ones(n), est._config.lam2)
        bound = np.sqrt(2.0 * gap / est._config.lam2) + ref_error
        assert np.linalg.norm(np.asarray(est._config.start_x) - x_ref) <= bound
    monkeypatch.setattr(_scatter_gap, "setup_runner", lambda est, start: None)
    plain_reads = []
    plain = DSPDCClassifier(**kw).fit(*_counted(X, y, 5_000, plain_reads))
    assert sum(plain_reads) == sum(reads) + n             # the epoch's read of every row
    np.testing.assert_array_equal(est.coef_, plain.coef_)
    assert est.intercept_ == plain.intercept_


def test_the_pass_predicted_to_be_the_last_sums_no_hessian(monkeypatch):
    """Newton's quadratic rate predicts the last pass (the gap ``gap^3 / (previous
    gap)^2`` far below the one the passes stop at): its chunks sum no Hessian, and the fit
    is certified as with every Hessian summed, and matches scikit-learn."""
    X, y = make_classification(n_samples=20_000, n_features=20, random_state=2)
    flags, real = [], _ooc_newton.chunk_sums

    def recorded(config, rows, yk, w, x, hessian):
        flags.append(hessian)
        return real(config, rows, yk, w, x, hessian)

    monkeypatch.setattr(_ooc_newton, "chunk_sums", recorded)
    kw = dict(random_state=0, scheduler="sync", progress=False, tol=1e-10)
    est = DSPDCClassifier(**kw).fit(*_counted(X, y, 5_000, []))
    passes = [flags[k:k + 4] for k in range(0, len(flags), 4)]
    assert len(passes) >= 2 and all(len(set(f)) == 1 for f in passes)
    assert [f[0] for f in passes] == [True] * (len(passes) - 1) + [False]
    check_certified_fit(est, X, y)
    flags.clear()
    monkeypatch.setattr(_logistic_start, "NO_HESSIAN_BELOW", 0.0)   # every Hessian summed
    every = DSPDCClassifier(**kw).fit(*_counted(X, y, 5_000, []))
    assert all(flags) and len(flags) == 4 * len(passes)
    np.testing.assert_array_equal(est.coef_, every.coef_)


def test_a_resume_from_a_fit_certified_by_the_last_pass_is_that_of_a_fit_certified_on_rows(
        tmp_path, monkeypatch):
    """The checkpoint of a fit certified by Newton's last pass holds the start, its chunks'
    duals at their initial version: resumed at the same ``tol`` it returns the same model,
    and resumed with no ``tol`` it runs the epochs that the resume of a fit certified by the
    rows runs, bit for bit (the theorems' steps: the adaptive steps' rule judges the gaps
    evaluated, and the pass's losses of the start differ from the rows' in their last
    digits)."""
    X, y = make_classification(n_samples=4_000, n_features=10, random_state=6)
    kw = dict(scheduler="sync", progress=False, random_state=1, shuffle_chunks=2,
              steps="theorem")
    fits, reads = [], []
    for path, runner in ((tmp_path / "a.zarr", _scatter_gap.setup_runner),
                         (tmp_path / "b.zarr", lambda est, start: None)):
        monkeypatch.setattr(_scatter_gap, "setup_runner", runner)
        counted = []
        lazy = _counted(X, y, 1_000, counted)
        first = DSPDCClassifier(tol=1e-6, **kw).fit(*lazy, checkpoint=path)
        reads.append(sum(counted))
        again = DSPDCClassifier(tol=1e-6, **kw).fit(*lazy, checkpoint=path, resume=True)
        np.testing.assert_array_equal(again.coef_, first.coef_)
        more = DSPDCClassifier(tol=None, max_iter=3, **kw).fit(   # two more epochs
            *lazy, checkpoint=path, resume=True)
        fits.append((first, more))
    assert reads[0] + len(y) == reads[1]     # the rows' certificate reads them once more
    assert_same_continuations(fits)
