"""``duality_gap_`` (documented: the last evaluated gap, of the returned model) is there on
a DSPDC model loaded with ``ok.load`` and on a fit resumed from the checkpoint of a fit that
had already stopped on ``tol``, as on the fit itself: the gap of ``gap_history_[-1]``, and
a bound on the model's distance from the optimum (``P(x) - P* <= gap``) that scikit-learn's
``Ridge`` with a free intercept on the standardized columns confirms."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import Ridge

import ooc_kernels as ok

rng = np.random.default_rng(4)
X = rng.normal(size=(300, 5)) * np.array([1.0, 3.0, 0.5, 10.0, 2.0]) + 7.0
Y = X @ rng.normal(size=5) + 40.0 + 0.3 * rng.normal(size=300)
ALPHA = 1e-2
FAST = dict(alpha=ALPHA, tol=1e-3, chunk_size=100, scheduler="sync", random_state=0,
            progress=False)


def _suboptimality(est):
    """``P(model) - P*`` of the standardized ridge with a free intercept, ``P*`` from
    scikit-learn (its objective is ``2 n`` times this one)."""
    mean, scale = X.mean(axis=0), X.std(axis=0)
    A, n = (X - mean) / scale, len(Y)
    ref = Ridge(alpha=ALPHA * n, solver="cholesky").fit(A, Y)

    def P(w, b):
        return 0.5 * np.mean((A @ w + b - Y) ** 2) + ALPHA / 2 * w @ w

    w = est.coef_ * scale
    return P(w, est.intercept_ + mean @ est.coef_) - P(ref.coef_, ref.intercept_)


def _check(restored, fitted):
    assert restored.duality_gap_ == fitted.duality_gap_
    assert restored.duality_gap_ == restored.gap_history_[-1]["gap"]
    assert -1e-12 <= _suboptimality(restored) <= restored.duality_gap_ + 1e-12


def test_a_loaded_model_has_its_duality_gap(tmp_path):
    fitted = ok.DSPDCRegressor(**FAST).fit(X, Y)
    assert fitted.stop_reason_.startswith("tol")
    fitted.save(tmp_path / "model")
    _check(ok.load(tmp_path / "model"), fitted)


@pytest.mark.parametrize("tol", [1e-3, 1e-2])
def test_a_fit_resumed_after_it_stopped_has_its_duality_gap(tmp_path, tol):
    ck = tmp_path / "ck.zarr"
    fitted = ok.DSPDCRegressor(**FAST).fit(X, Y, checkpoint=ck)
    assert fitted.stop_reason_.startswith("tol")
    resumed = ok.DSPDCRegressor(**dict(FAST, tol=tol)).fit(X, Y, checkpoint=ck, resume=True)
    assert resumed.n_iter_ == fitted.n_iter_            # nothing run: the finished model
    _check(resumed, fitted)
