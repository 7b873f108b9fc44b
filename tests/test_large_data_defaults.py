"""Many rows (more than ``LARGE_DATA_ROWS``): ``n_features="auto"`` grows like ``sqrt(n)``,
the trials' width leans to the narrow side and ``alpha / 10`` wins ties
(``docs/defaults.md``, "Many rows").

The rules are checked against their closed forms, where they apply and where they do not,
and through a fit whose threshold is lowered to a few thousand rows: the fit holds the
features the formula gives, uses the narrowed width of its own trials, and is more accurate
than the same fit with 4,096 features at the trials' width.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ooc_kernels as ok
import ooc_kernels.families.dsg._large_data as large
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dsg._large_data import (auto_n_features, large_data_alpha_factor,
                                                   large_data_multiple)

SCORES = {0.125: 0.115, 0.25: 0.321, 0.5: 0.397, 1.0: 0.244, 2.0: 0.149}


@pytest.mark.parametrize("n_rows, block_size", [
    (0, 256), (1347, 256), (50_000, 256), (50_001, 256), (100_000, 256), (300_000, 256),
    (800_000, 256), (5_000_000, 256), (300_000, 100), (120_000, 5000), (10, 8192)])
def test_auto_n_features_is_the_documented_formula(n_rows, block_size):
    """4096 up to 50,000 rows, ``4096 sqrt(n / 50,000)`` above, at most 16,384, rounded
    down to whole blocks (at least one)."""
    if n_rows <= 50_000:
        target = 4096.0
    else:
        target = min(16_384.0, 4096.0 * math.sqrt(n_rows / 50_000))
    expected = max(block_size, math.floor(target / block_size) * block_size)
    assert auto_n_features(n_rows, block_size) == expected
    assert expected % block_size == 0


def test_auto_n_features_at_the_benchmarks_sizes():
    assert [auto_n_features(n, 256) for n in (20_000, 100_000, 300_000, 10**7)] == \
        [4096, 5632, 9984, 16384]


@pytest.mark.parametrize("scores, multiple, n_rows, expected", [
    (SCORES, 0.5, 300_000, 0.5 / math.sqrt(2)),              # leans narrow: narrowed
    (SCORES, 0.5, 50_001, 0.5 / math.sqrt(2)),
    (SCORES, 0.5, 50_000, 0.5),                              # too few rows
    ({0.25: 0.30, 0.5: 0.40, 1.0: 0.35}, 0.5, 300_000, 0.5),   # leans wide
    ({0.25: 0.35, 0.5: 0.40, 1.0: 0.35}, 0.5, 300_000, 0.5),   # symmetric
    ({0.125: 0.5, 0.25: 0.3}, 0.125, 300_000, 0.125),        # narrowest: nothing below
    ({1.0: 0.3, 2.0: 0.5}, 2.0, 300_000, 2.0 / math.sqrt(2)),  # widest, leans narrow
])
def test_the_width_leans_narrow_only_where_documented(scores, multiple, n_rows, expected):
    assert large_data_multiple(scores, multiple, n_rows=n_rows) == pytest.approx(
        expected, rel=1e-12)


@pytest.mark.parametrize("scores, factor, scaling, n_rows, expected", [
    ({("per-input", 1.0): 0.397, ("per-input", 0.1): 0.396}, 1.0, "per-input", 300_000, 0.1),
    ({("per-input", 1.0): 0.397, ("per-input", 0.1): 0.392}, 1.0, "per-input", 300_000, 0.1),
    ({("per-input", 1.0): 0.397, ("per-input", 0.1): 0.391}, 1.0, "per-input", 300_000, 1.0),
    ({("per-input", 1.0): 0.397, ("per-input", 0.1): 0.396}, 1.0, "per-input", 50_000, 1.0),
    ({("per-input", 1.0): 0.40, ("per-input", 0.1): 0.39, ("common", 1.0): 0.45,
      ("common", 0.1): 0.449}, 1.0, "common", 300_000, 0.1),
    ({("per-input", 1.0): 0.40, ("per-input", 0.1): 0.42}, 0.1, "per-input", 300_000, 0.1),
    (None, 1.0, "per-input", 300_000, 1.0),               # alpha / 10 not tried
])
def test_alpha_over_10_wins_ties_only_on_many_rows(scores, factor, scaling, n_rows, expected):
    assert large_data_alpha_factor(scores, factor, scaling=scaling, n_rows=n_rows,
                                   tie=0.005) == expected


def test_auto_is_accepted_only_as_documented():
    with pytest.raises(ValidationError, match="n_features"):
        ok.DSGClassifier(n_features="many").fit(np.zeros((4, 1)), [0, 1, 0, 1])
    clf = ok.DSGClassifier(block_size=100, max_iter=1, tol=None, scheduler="sync",
                           random_state=0).fit(np.arange(20.0)[:, None], [0, 1] * 10)
    assert clf.n_features_ == 4000          # 4096 rounded down to blocks of 100
    assert ok.DSGRegressor().n_features == 4096


def _rings(n, seed, band):
    """Concentric rings of width ``band`` in 2-D, alternating classes."""
    rng = np.random.default_rng(seed)
    r = rng.uniform(0.0, 10.0, size=n)
    angle = rng.uniform(0.0, 2 * np.pi, size=n)
    X = np.column_stack([r * np.cos(angle), r * np.sin(angle)])
    X += 0.05 * rng.normal(size=X.shape)
    return X, np.floor(r / band).astype(int) % 2


@pytest.fixture
def small_large(monkeypatch):
    """The rules at a unit test's scale: "many rows" from 2,000, 1,024 features below."""
    monkeypatch.setattr(large, "LARGE_DATA_ROWS", 2000)
    monkeypatch.setattr(large, "BASE_FEATURES", 1024)


def test_a_fit_on_many_rows_narrows_its_trials_width_and_alpha(small_large):
    """On 8,000 rows (four times the lowered threshold) the default holds twice the base
    features; its trials lean narrow (0.125 and 0.5 times the median around the winner
    0.25 score 0.977 and 0.972 on these rings), so its width is the width the same trials
    choose with that many features given explicitly, over ``sqrt(2)``; ``alpha / 10``,
    within the tie of ``alpha``, is taken."""
    X, y = _rings(8000, 0, 3.5)
    kw = dict(random_state=0, scheduler="sync", max_iter=1, tol=None, n_jobs=1)
    auto = ok.DSGClassifier(**kw).fit(X, y)
    assert auto.n_features_ == auto_n_features(8000, 256) == 2048
    given = ok.DSGClassifier(n_features=2048, **kw).fit(X, y)
    assert auto.bandwidth_scores_ == given.bandwidth_scores_      # the same trials
    scores = given.bandwidth_scores_
    multiple = max(m for m, v in scores.items() if v >= max(scores.values()) - 0.005)
    lower, upper = [m for m in sorted(scores) if m < multiple], \
        [m for m in sorted(scores) if m > multiple]
    assert lower and upper and scores[lower[-1]] > scores[upper[0]]   # the case it is for
    np.testing.assert_allclose(np.asarray(auto.bandwidth_),
                               np.asarray(given.bandwidth_) / math.sqrt(2), rtol=1e-12)
    light = auto.setup_scores_[("per-input", 0.1)] >= \
        auto.setup_scores_[("per-input", 1.0)] - 0.005
    assert auto.alpha_ == pytest.approx((0.1 if light else 1.0) / 8000, rel=1e-12)


def test_more_features_on_many_rows_beat_the_base_count(small_large):
    """Narrow rings, at about the width the trials pick for them (0.21 in standardized
    units): after the same epochs, ``"auto"``'s 2,048 features score higher on held-out
    rows than the base 1,024."""
    X, y = _rings(8000, 0, 1.0)
    Xt, yt = _rings(4000, 1, 1.0)
    kw = dict(bandwidth=0.2, random_state=0, scheduler="sync", max_iter=6, tol=None,
              n_jobs=1)
    auto = ok.DSGClassifier(**kw).fit(X, y)
    base = ok.DSGClassifier(n_features=1024, **kw).fit(X, y)
    assert (auto.n_features_, base.n_features_) == (2048, 1024)
    assert auto.score(Xt, yt) > base.score(Xt, yt) + 0.01


def test_up_to_the_threshold_auto_is_the_4096_feature_model():
    """At most ``LARGE_DATA_ROWS`` rows: the default fit is the fit with 4,096 features,
    coefficient for coefficient (the width and ``alpha`` rules need more rows too: their
    own tests above)."""
    X, y = _rings(1500, 0, 2.5)
    kw = dict(bandwidth=0.5, random_state=0, scheduler="sync", max_iter=1, tol=None,
              n_jobs=1)
    auto = ok.DSGClassifier(**kw).fit(X, y)
    fixed = ok.DSGClassifier(n_features=4096, **kw).fit(X, y)
    assert auto.n_features_ == 4096
    np.testing.assert_array_equal(np.asarray(auto.bandwidth_), np.asarray(fixed.bandwidth_))
    assert auto.alpha_ == fixed.alpha_
    np.testing.assert_array_equal(auto.coef_, fixed.coef_)
