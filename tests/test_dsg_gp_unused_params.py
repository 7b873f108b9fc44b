"""DSGGaussianProcessRegressor with mean="features" warns about the DSG iteration
parameters set away from their defaults that have no effect on its fit, and only about
those: the reference is the experiment, two fits that differ in one parameter compared bit
for bit (the fitted arrays, the chosen bandwidth and its scores, the noise, the predicted
mean and standard deviation)."""

import re
import warnings

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import OocKernelsWarning
from ooc_kernels.families.dsg import _gp_unused, _large_data

# one value away from the default for every DSG iteration parameter ("auto" dtype is
# float32 here: several chunks)
OTHER = dict(dtype="float64", n_features=512, batch_size=16, learning_rate="constant",
             eta0=0.5, t0=10.0, average=False, max_iter=5, tol=None, n_iter_no_change=2,
             early_stopping=True, validation_fraction=0.3, chunks_per_round=2,
             shuffle=False, shuffle_chunks=2)
assert set(OTHER) == set(_gp_unused.ITERATION_PARAMS)

# (variance, bandwidth, rows): the set-up by GCV (<= 1000 rows), by leave-one-out, and by
# DSG trial fits ("trials": the many-row threshold lowered to 1000 rows)
CONFIGS = [("features", 1.5, 300), ("operator", 1.5, 300), ("features", "ard", 300),
           ("features", "auto", 1500), ("operator", "auto", 1500),
           ("features", "auto", "trials")]


def _data(n):
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(n, 3))
    return X, np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.normal(size=n)


def _model(est, grid):
    mean, std = est.predict(grid, return_std=True)
    arrays = {k: np.asarray(v).tobytes() for k, v in est._fitted_arrays().items()}
    return (arrays, np.asarray(est.bandwidth_).tobytes(), repr(est.bandwidth_scores_),
            repr(est.setup_scores_), est.noise_, mean.tobytes(), std.tobytes())


def _fit(X, y, **params):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = ok.DSGGaussianProcessRegressor(
            noise=0.1, n_variance_features=64, block_size=32, chunk_size=X.shape[0] // 6,
            random_state=0, scheduler="sync", **params).fit(X, y)
    messages = [str(w.message) for w in caught if issubclass(w.category, OocKernelsWarning)
                and "no effect" in str(w.message)]
    assert len(messages) <= 1
    return est, messages[0] if messages else ""


@pytest.mark.parametrize("variance, bandwidth, rows", CONFIGS)
def test_warned_parameters_are_exactly_those_without_effect(monkeypatch, variance,
                                                            bandwidth, rows):
    if rows == "trials":
        rows = 1500
        monkeypatch.setattr(_large_data, "LARGE_DATA_ROWS", 1000)
        monkeypatch.setattr(_gp_unused, "LARGE_DATA_ROWS", 1000)
    X, y = _data(rows)
    grid = np.random.default_rng(1).uniform(-3, 3, size=(20, 3))
    # operator: a few passes (max_iter applies there; 5 against 2)
    base = dict(variance=variance, bandwidth=bandwidth,
                **({"max_iter": 2} if variance == "operator" else {}))
    ref, message = _fit(X, y, **base)
    assert message == ""                            # the defaults: no warning
    inverse = dict(learning_rate="inverse", eta0=0.5)  # t0 is set with this schedule
    ref_inverse = _model(_fit(X, y, **base, **inverse)[0], grid)
    effect, warned = {}, {}
    for name, value in OTHER.items():
        extra = inverse if name == "t0" else {}
        est, message = _fit(X, y, **{**base, **extra, name: value})
        effect[name] = _model(est, grid) != (ref_inverse if extra else _model(ref, grid))
        warned[name] = re.search(rf"\b{name}=", message) is not None
    assert {k for k in OTHER if warned[k]} == {k for k in OTHER if not effect[k]}
    # and where they apply, some do apply
    assert any(effect.values()) == (variance == "operator" or rows > 1000)


def test_no_warning_with_the_dsg_mean():
    X, y = _data(300)
    _, message = _fit(X, y, mean="dsg", max_iter=3, tol=None, n_features=256, batch_size=16)
    assert message == ""


def test_the_warning_names_the_fix():
    X, y = _data(300)
    with pytest.warns(OocKernelsWarning, match=r"max_iter=50 has no effect .*mean='dsg'"):
        ok.DSGGaussianProcessRegressor(max_iter=50, random_state=0,
                                       scheduler="sync").fit(X, y)
