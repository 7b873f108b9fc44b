"""Inputs far from 0 against their spread (a reading on a large baseline, a time in fine
units): ``dtype="auto"`` fits in float64 where float32 would round the rows together, so
the default scores as scikit-learn's kernel machine does on the same inputs, and keeps the
fast float32 path where float32 resolves the spread."""

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, SVR

import ooc_kernels as ok
from ooc_kernels.families.dsg._common import FLOAT32_MAX_OFFSET, float32_offset_column


def _problem(offset, regression=False):
    rng = np.random.default_rng(0)
    z = rng.normal(size=(3000, 3))
    f = np.sin(2 * z[:, 0]) + z[:, 1] * z[:, 2]
    y = f + 0.1 * rng.normal(size=3000) if regression else (f > 0).astype(int)
    X = z.copy()
    X[:, 0] += offset  # unit spread on a baseline of `offset`; float32 spacing at 1e7: 1
    return X[:2000], y[:2000], X[2000:], y[2000:]


def test_an_input_offset_by_1e7_of_its_spread_scores_as_svc_does():
    Xtr, ytr, Xte, yte = _problem(1e7)
    model = ok.DSGClassifier(random_state=0).fit(Xtr, ytr)
    reference = make_pipeline(StandardScaler(), SVC()).fit(Xtr, ytr).score(Xte, yte)
    assert reference > 0.95
    assert model.score(Xte, yte) > reference - 0.02   # float32 rows: 0.836 against 0.968
    assert model.dtype_ == "float64"


def test_the_regressor_with_an_input_offset_by_1e7_fits_as_svr_does():
    Xtr, ytr, Xte, yte = _problem(1e7, regression=True)
    model = ok.DSGRegressor(random_state=0).fit(Xtr, ytr)
    reference = make_pipeline(StandardScaler(), SVR()).fit(Xtr, ytr).score(Xte, yte)
    assert model.score(Xte, yte) > reference - 0.05


@pytest.mark.parametrize("offset", [0.0, 1e5])
def test_inputs_float32_resolves_keep_the_float32_path(offset):
    Xtr, ytr, _, _ = _problem(offset)
    assert ok.DSGClassifier(random_state=0, max_iter=2, tol=None).fit(Xtr, ytr).dtype_ == "float32"


def test_the_offset_rule_against_float32_rounding():
    # the rule's threshold is where float32's spacing is a small part of the spread:
    # numpy's own spacing of float32 at the threshold, in units of a unit spread
    assert np.spacing(np.float32(FLOAT32_MAX_OFFSET)) < 0.1
    assert np.spacing(np.float32(10 * FLOAT32_MAX_OFFSET)) >= 0.5
    rows = np.column_stack([np.arange(10.0), np.full(10, 1e12), 1e8 + np.arange(10.0)])
    assert float32_offset_column(rows) == 2   # the constant column does not count
    assert float32_offset_column(rows[:, :2]) is None


def test_the_offset_rule_reads_a_float32_sample_without_a_float64_copy():
    """The rule's moments are float64 sums over a float32 sample, a block of rows at a time:
    its traced memory stays below the sample's own size (a float64 copy is twice that), and
    its decision is the one of the same moments computed in float64 by NumPy."""
    import tracemalloc

    rng = np.random.default_rng(0)
    sample = rng.normal(size=(20_000, 100)).astype(np.float32)
    sample[:, 7] += np.float32(3e7)        # about 3e7 spreads from 0
    tracemalloc.start()
    try:
        found = float32_offset_column(sample)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < sample.nbytes / 2, (peak, sample.nbytes)
    X = sample.astype(np.float64)
    far = np.flatnonzero((X.std(axis=0) > 0)
                         & (np.abs(X.mean(axis=0)) > FLOAT32_MAX_OFFSET * X.std(axis=0)))
    assert found == int(far[0]) == 7


@pytest.mark.parametrize("value", [0.1, 0.3, 7.7, 123.456])
def test_a_constant_column_whose_mean_rounds_does_not_count(value):
    """A constant column's float64 mean need not be its value (``0.1`` summed 1,000 times
    and divided is not ``0.1``): its centered values are then ``1e-17``-sized, not 0, yet
    the column is constant (``np.ptp`` is 0) and keeps float32, as any constant column."""
    X, y, _, _ = _problem(0.0)
    X = np.column_stack([X, np.full(len(X), value)])
    assert np.ptp(X[:, -1]) == 0
    assert float32_offset_column(X) is None
    assert ok.DSGClassifier(random_state=0, max_iter=2, tol=None).fit(X, y).dtype_ == "float32"
