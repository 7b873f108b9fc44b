"""``bandwidth="auto"`` up to 50,000 rows: the setup chosen by leave-one-out of kernel ridge
regression on the fit's random features (``ooc_kernels/families/dsg/_setup_loo.py``),
checked against brute force: refits without each row, the features written out with
NumPy's cosine, every candidate scored."""

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.families.dsg import _bandwidth, _large_data
from ooc_kernels.families.dsg._bandwidth import CANDIDATES, TIE
from ooc_kernels.families.dsg._setup_loo import (LOO_RIDGE, WIDTH_TIE, loo_predictions,
                                                 random_feature_gram, scan_candidates,
                                                 select_setup_loo)
from ooc_kernels.families.dsg.solver import DSGConfig
from ooc_kernels.features.bandwidth import median_heuristic
from ooc_kernels.features.maps import get_feature_map


def _refit_loo(M, T, w, ridge):
    """Leave-one-out predictions by refitting weighted kernel ridge regression n times:
    minimize ``sum_j w_j (t_j - f(x_j))^2 + ridge ||f||^2`` over the other rows, with
    ``K = D^-1/2 M D^-1/2``."""
    root = np.sqrt(w)
    K = M / root[:, None] / root[None, :]
    out = np.empty_like(T)
    for i in range(len(T)):
        keep = np.flatnonzero(np.arange(len(T)) != i)
        Kk, wk = K[np.ix_(keep, keep)], w[keep]
        # f = K c with (W K + ridge I) c = W t
        c = np.linalg.solve(wk[:, None] * Kk + ridge * np.eye(len(keep)), wk[:, None] * T[keep])
        out[i] = K[i, keep] @ c
    return out


def test_loo_predictions_match_refits_without_each_row():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(40, 3))
    K = get_feature_map("rbf").gram(Z, Z, 1.5)
    w = rng.uniform(0.2, 3.0, size=40)
    T = np.column_stack([np.sin(2 * Z[:, 0]), np.where(Z[:, 1] > 0, 1.0, -1.0)])
    M = np.sqrt(w)[:, None] * K * np.sqrt(w)[None, :]
    for ridge in (0.05, 1.0, 10.0):
        np.testing.assert_allclose(loo_predictions(M, T, w, ridge=ridge),
                                   _refit_loo(M, T, w, ridge), rtol=1e-7, atol=1e-9)


def test_random_feature_gram_is_the_fits_features_written_out():
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(30, 4))
    fmap = get_feature_map("rbf")
    n_blocks, r = 3, 64
    G = random_feature_gram(fmap, Z, 2.0, feature_seed=7, block_size=r, n_blocks=n_blocks)
    ref = np.zeros((30, 30))
    for j in range(n_blocks):
        W, phase = fmap.block(7, j, 4, r, 2.0)
        P = np.sqrt(2.0 / r) * np.cos(Z @ W + phase)
        ref += P @ P.T / n_blocks
    np.testing.assert_allclose(G, ref, atol=1e-5)           # float32 features
    many = random_feature_gram(fmap, Z, 2.0, feature_seed=7, block_size=512, n_blocks=16)
    assert np.abs(many - fmap.gram(Z, Z, 2.0)).max() < 0.03  # an unbiased estimate


def _rule(scores, tie=TIE):
    best = max(scores.values())
    return max(m for m, v in scores.items() if v >= best - tie)


@pytest.mark.parametrize("peak", [0, 1, 2, 3, 4])
def test_scan_picks_what_scoring_every_candidate_picks(peak):
    rng = np.random.default_rng(peak)
    keys = sorted(CANDIDATES)
    for _ in range(200):
        # one-peaked curves with plateaus and near-ties around the peak
        steps = rng.choice([0.0, 0.002, 0.004, 0.01, 0.1], size=len(keys))
        curve = {m: 0.9 - sum(steps[:abs(i - peak)]) for i, m in enumerate(keys)}
        for tie in (TIE, 0.0):
            calls = []
            scores = scan_candidates(lambda m: calls.append(m) or curve[m], tie=tie)
            assert _rule(scores, tie) == _rule(curve, tie), (curve, scores)
            assert len(calls) == len(set(calls))              # nothing scored twice


def _config(d, classes, seed=3, x_scale=None):
    return DSGConfig(loss_id=1, target="binary", n_outputs=1, n_features_in=d, block_size=64,
                     n_blocks=16, bandwidth=1.0, feature_seed=seed, alpha=0.0,
                     batch_size=32, learning_rate="constant", eta0=1.0, t0=0.0,
                     dtype="float64", classes=tuple(classes), x_shift=(0.0,) * d,
                     x_scale=x_scale or (1.0,) * d)


def test_select_setup_loo_against_brute_force():
    """Every candidate scored by refitting without each row, on the same random features,
    and the trials' rule applied: the same scores, width, scaling and ``alpha``."""
    rng = np.random.default_rng(2)
    n, d = 70, 2
    X = rng.normal(size=(n, d)) * np.array([1.0, 4.0])
    y = (np.sin(2.0 * X[:, 0]) + 0.1 * X[:, 1] > 0).astype(int)
    w = rng.uniform(0.5, 2.0, size=n)
    classes = np.array([0, 1])
    base = _config(d, classes, x_scale=(1.0, 4.0))
    common = _bandwidth.common_scale(base)
    config, bandwidth, factor, curve, setup = select_setup_loo(
        base, common, X, y, w, classes=classes, alpha=None, alpha_factors=(1.0, 0.1),
        seed=5)
    fmap = get_feature_map("rbf")
    T = np.where(y == 1, 1.0, -1.0)[:, None]
    wn = w / w.mean()

    def brute(cfg, multiple, factor):
        Z = _bandwidth._standardized(cfg, X)
        med = median_heuristic(Z, 1.0, random_state=5, sample_weight=w)
        G = random_feature_gram(fmap, Z, multiple * med, feature_seed=3, block_size=64,
                                n_blocks=16)
        M = np.sqrt(wn)[:, None] * G * np.sqrt(wn)[None, :]
        loo = _refit_loo(M, T, wn, LOO_RIDGE * factor)
        return float(np.average((loo[:, 0] > 0) == (y == 1), weights=w)), multiple * med

    full = {m: brute(base, m, 1.0)[0] for m in CANDIDATES}
    for m, v in curve.items():
        assert v == pytest.approx(full[m], abs=1e-12)
    multiple = _rule(full, WIDTH_TIE)
    assert _rule(curve, WIDTH_TIE) == multiple
    options = {("per-input", f): brute(base, multiple, f) for f in (1.0, 0.1)}
    options.update({("common", f): brute(common, multiple, f) for f in (1.0, 0.1)})
    assert {k: v[0] for k, v in options.items()} == pytest.approx(setup, abs=1e-12)
    top = max(options, key=lambda k: options[k][0])
    if options[top][0] <= full[multiple] + TIE:
        top = ("per-input", 1.0)
    assert (config is common) == (top[0] == "common") and factor == top[1]
    assert bandwidth == pytest.approx(options[top][1])


def test_select_setup_loo_finds_the_planted_width():
    """A target that oscillates on the scale of a quarter of the median distance: the
    widest candidates cannot follow it, the narrowest are beyond what the random features
    represent; the choice is the planted scale's neighbourhood."""
    rng = np.random.default_rng(4)
    X = rng.uniform(-3.0, 3.0, size=(600, 1))
    y = (np.sin(3.0 * X[:, 0]) > 0).astype(int)
    classes = np.array([0, 1])
    config, bandwidth, factor, curve, setup = select_setup_loo(
        _config(1, classes), None, X, y, np.ones(600), classes=classes, alpha=None,
        seed=0)
    med = median_heuristic(X, 1.0, random_state=0, sample_weight=np.ones(600))
    assert bandwidth / med in (0.125, 0.25), curve
    assert max(curve.values()) > 0.9


def test_default_fit_uses_no_trial_fit_up_to_the_limit(monkeypatch):
    def no_trials(*args, **kwargs):
        raise AssertionError("a trial fit ran")

    monkeypatch.setattr(_bandwidth, "_run_trials", no_trials)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 4))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    kw = dict(random_state=0, tol=None, n_features=512, block_size=64, progress=False,
              scheduler="sync")
    clf = ok.DSGClassifier(max_iter=3, **kw).fit(X, y)
    assert set(clf.bandwidth_scores_) <= set(CANDIDATES)
    assert clf.score(X, y) > 0.8
    monkeypatch.setattr(_large_data, "LARGE_DATA_ROWS", 1000)      # above it: the trials
    with pytest.raises(AssertionError, match="a trial fit ran"):
        ok.DSGClassifier(max_iter=1, **kw).fit(X, y)

