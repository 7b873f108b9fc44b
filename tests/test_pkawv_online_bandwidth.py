"""``OnlineKernelRidge(bandwidth="auto")``: the width from the set-up pass's rows by the
leave-one-out trials ``ProjectedKernelRidge`` uses, decided once, kept by the stream and
saved with the model."""

import math

import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics import r2_score

import ooc_kernels as ok

QUIET = {"progress": False, "scheduler": "sync"}


def _onehot(n, seed=0):
    """3 normal inputs and one-hot blocks of 5, 10 and 20 categories (38 inputs), each
    category with a N(0, 1) effect."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, 3))
    blocks, effect = [], 0.0
    for k in (5, 10, 20):
        c = rng.integers(k, size=n)
        blocks.append(np.eye(k)[c])
        effect = effect + rng.normal(size=k)[c]
    X = np.column_stack([Z, *blocks])
    y = np.sin(Z[:, 0]) + Z[:, 1] * Z[:, 2] / 2 + effect + 0.3 * rng.normal(size=n)
    return X, y


def test_default_width_learns_many_inputs_as_exact_kernel_ridge_does():
    """38 inputs mapped onto [-1, 1]: at sigma = 1 the kernel between two rows is about
    exp(-12) and the learner forecasts the mean; the default's width scores within 0.15
    of scikit-learn's exact KernelRidge at the best of a grid of widths (on the same
    mapped inputs and standardized targets), and far above the mean."""
    X, y = _onehot(1200)
    Xtr, ytr, Xte, yte = X[:800], y[:800], X[800:], y[800:]
    lo, hi = Xtr.min(0), Xtr.max(0)
    mid, half = (lo + hi) / 2, np.where(hi > lo, (hi - lo) / 2, 1.0)
    m, s = ytr.mean(), ytr.std()
    reference = max(
        r2_score(yte, KernelRidge(kernel="rbf", gamma=1 / (2 * w ** 2), alpha=a).fit(
            (Xtr - mid) / half, (ytr - m) / s).predict((Xte - mid) / half) * s + m)
        for w in (1, 2, 3, 4, 6, 8) for a in (0.1, 1.0, 10.0))
    assert reference > 0.85
    model = ok.OnlineKernelRidge(random_state=0, **QUIET).fit(Xtr, ytr)
    assert model.bandwidth_ > 2.0
    assert r2_score(yte, model.predict(Xte)) > reference - 0.15
    paper = ok.OnlineKernelRidge(bandwidth=1.0, random_state=0, **QUIET).fit(Xtr, ytr)
    assert r2_score(yte, paper.predict(Xte)) < 0.05   # the mean, as said above


@pytest.mark.parametrize("basis, params", [
    ("nystrom-fixed", {"n_components": 150}),
    ("taylor", {"degree": 3, "n_components": 500}),
])
def test_width_is_projected_kernel_ridges_choice_on_the_same_rows(basis, params):
    """Raw rows (``standardize=False``), the same ``random_state``, ``alpha`` and basis (a
    Taylor basis around the origin): both estimators draw the same rows and score the
    trial widths alike; the online learner also tries the paper's sigma = 1."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(2500, 4)) * 3.0
    y = np.sin(X[:, 0] / 2) + X[:, 1] * X[:, 2] / 10 + 0.1 * rng.normal(size=2500)
    common = dict(basis=basis, alpha=0.5, standardize=False, random_state=7, **params, **QUIET)
    online = ok.OnlineKernelRidge(**common).fit(X, y)
    batch = ok.ProjectedKernelRidge(center=False, **common).fit(X, y)
    tried = online.bandwidth_scores_
    assert set(batch.bandwidth_scores_) <= set(tried) and len(tried) == 6
    for mult, score in batch.bandwidth_scores_.items():
        assert tried[mult] == pytest.approx(score, rel=1e-9, abs=1e-12)
    assert online.bandwidth_ == pytest.approx(batch.bandwidth_, rel=1e-12)
    assert max(tried.values()) == max(batch.bandwidth_scores_.values())


def test_paper_width_kept_where_the_trials_prefer_it():
    """One skewed input mapped onto [-1, 1] (most rows near -1): the median distance is
    small, the trials' scores rise with the width, and sigma = 1 is taken, bit for bit
    the learner of ``bandwidth=1``."""
    rng = np.random.default_rng(2)
    x = rng.lognormal(size=600)
    X, y = x[:, None], 0.5 * x + np.sqrt(x) + 0.2 * rng.normal(size=600)
    auto = ok.OnlineKernelRidge(random_state=0, **QUIET).fit(X, y)
    one = ok.OnlineKernelRidge(bandwidth=1.0, random_state=0, **QUIET).fit(X, y)
    assert auto.bandwidth_ == 1.0
    np.testing.assert_array_equal(auto.online_predictions_, one.online_predictions_)


def test_width_is_decided_once_saved_and_continued(tmp_path):
    X, y = _onehot(900, seed=1)
    model = ok.OnlineKernelRidge(chunk_size=100, random_state=3, **QUIET)
    model.partial_fit(X[:400], y[:400])
    first = model.bandwidth_
    assert first != 1.0 and len(model.bandwidth_scores_) == 6
    model.save(tmp_path / "m.zarr")
    loaded = ok.load(tmp_path / "m.zarr")
    assert loaded.bandwidth_ == first and loaded.bandwidth_scores_ is None
    for m in (model, loaded):
        m.partial_fit(X[400:], y[400:])
        assert m.bandwidth_ == first
    np.testing.assert_array_equal(model.online_predictions_, loaded.online_predictions_)
    np.testing.assert_array_equal(model.predict(X[:50]), loaded.predict(X[:50]))
    # the stream in two calls, and one fit of the rows of the first call, take one width
    single = ok.OnlineKernelRidge(chunk_size=100, random_state=3, **QUIET).fit(X[:400], y[:400])
    assert single.bandwidth_ == first


def test_widths_whose_taylor_state_does_not_fit_are_not_tried():
    """200 rows of 3 inputs and a budget of 300,000 features: at the narrow widths
    Theorem 4's degree reaches the budget's cap (295,240 features, a state of 1.3 TiB,
    beyond any machine), so those trials are skipped (scored -inf) instead of computing
    their features; the fit runs at a width whose degree fits."""
    X = np.random.default_rng(0).normal(size=(200, 3))
    model = ok.OnlineKernelRidge(n_components=300_000, standardize=False, random_state=0,
                                 **QUIET).fit(X, X[:, 0])
    scores = model.bandwidth_scores_
    assert [scores[k] for k in (0.125, 0.25, 0.5)] == [-np.inf] * 3
    assert np.isfinite(scores[1.0]) and np.isfinite(scores[2.0])
    assert model.n_components_ == math.comb(model.degree_ + 3, 3) < 10_000
