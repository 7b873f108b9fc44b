"""DSPDCRegressor's intercept is free of the penalty on the targets' mean: the squared loss is
fit to the targets centred on their weighted mean, so that with standardized (centred)
columns the model is StandardScaler + Ridge / ElasticNet with ``fit_intercept=True``, and a
shift of ``y`` shifts the predictions and nothing else (docs/dspdc.md, "Standardization").

References: scikit-learn's ``Ridge`` and ``ElasticNet`` on ``StandardScaler``'d columns (with
the same sample weights), compared within the distance the fit's certified duality gap
allows, ``||x - x*|| <= sqrt(2 gap / lam2)`` on the standardized problem with the
intercept's column."""

from __future__ import annotations

import dataclasses
import json
import os
import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn.datasets import make_friedman1
from sklearn.linear_model import ElasticNet, Ridge
from sklearn.preprocessing import StandardScaler

import ooc_kernels as ok

from _tamper import edit_attrs

FAST = dict(random_state=0, progress=False, scheduler="sync", max_iter=300)
ALPHA = 1e-2


def _problem(n=240, seed=1):
    X, y = make_friedman1(n, noise=0.5, random_state=seed)
    return X, y


def _radius(est, lam2):
    """The certified distance of the solver's ``x`` to the optimum (``P`` is
    ``lam2``-strongly convex in every coordinate, the intercept's included)."""
    return np.sqrt(2.0 * max(float(est.gap_history_[-1]["gap"]), 0.0) / lam2)


def _reference(X, y, w, l1_ratio):
    """StandardScaler (weighted moments) + Ridge / ElasticNet with a free intercept: the
    standardized coefficients and the intercept on the standardized columns."""
    scaler = StandardScaler().fit(X, sample_weight=w)
    Z = scaler.transform(X)
    if l1_ratio == 0:
        W = len(y) if w is None else float(np.sum(w))
        model = Ridge(alpha=ALPHA * W, fit_intercept=True, solver="cholesky")
    else:
        model = ElasticNet(alpha=ALPHA, l1_ratio=l1_ratio, fit_intercept=True, tol=1e-14,
                           max_iter=100_000)
    model.fit(Z, y, sample_weight=w)
    return scaler, np.ravel(model.coef_), float(model.intercept_)


def _check_against_reference(est, X, y, w, l1_ratio):
    scaler, coef, intercept = _reference(X, y, w, l1_ratio)
    lam2 = ALPHA * (1 - l1_ratio)
    r = _radius(est, lam2)
    mean, scale = scaler.mean_, scaler.scale_
    found = est.coef_ * scale                       # the standardized coefficients
    found_intercept = est.intercept_ + float(mean @ est.coef_)
    slack = 1e-7 * (1.0 + np.abs(coef))               # the reference's own tolerance
    assert np.linalg.norm(found - coef) <= r + np.linalg.norm(slack)
    # the intercept: c x'_0 + y_shift, with x'_0 within r of its optimum 0
    assert abs(found_intercept - intercept) <= r * est.intercept_scaling \
        + 1e-9 * (1.0 + abs(intercept))


@pytest.mark.parametrize("shift", [1e4, 1e6])
def test_predictions_shift_exactly_with_the_targets(shift):
    X, y = _problem()
    base = ok.DSPDCRegressor(alpha=ALPHA, tol=1e-12, **FAST).fit(X, y)
    moved = ok.DSPDCRegressor(alpha=ALPHA, tol=1e-12, **FAST).fit(X, y + shift)
    assert moved.stop_reason_.startswith("tol")
    np.testing.assert_allclose(moved.coef_, base.coef_, rtol=0, atol=1e-6)
    # each model is within its certified radius of the same standardized optimum
    rows = np.column_stack([StandardScaler().fit_transform(X), np.ones(len(X))])
    bound = np.linalg.norm(rows, axis=1) * (_radius(base, ALPHA) + _radius(moved, ALPHA))
    diff = moved.predict(X) - (base.predict(X) + shift)
    assert np.all(np.abs(diff) <= bound + 1e-9 * shift)


@pytest.mark.parametrize("l1_ratio", [0.0, 0.5])
@pytest.mark.parametrize("weighted", [False, True])
def test_the_fit_is_standard_scaler_and_sklearn_with_a_free_intercept(l1_ratio, weighted):
    X, y = _problem()
    y = y + 1e4                                      # a mean far from 0
    w = np.random.default_rng(2).uniform(0.2, 3.0, size=len(y)) if weighted else None
    est = ok.DSPDCRegressor(alpha=ALPHA, l1_ratio=l1_ratio, tol=1e-12, **FAST)
    est.fit(X, y, sample_weight=w)
    _check_against_reference(est, X, y, w, l1_ratio)


@pytest.mark.parametrize("weighted", [False, True])
def test_dask_input_out_of_core_fits_the_same_problem(weighted):
    X, y = _problem()
    y = y + 1e5
    w = np.random.default_rng(3).uniform(0.2, 3.0, size=len(y)) if weighted else None
    Xd, yd = da.from_array(X, chunks=(60, -1)), da.from_array(y, chunks=60)
    wd = None if w is None else da.from_array(w, chunks=60)
    est = ok.DSPDCRegressor(alpha=ALPHA, tol=1e-12, **FAST).fit(Xd, yd, sample_weight=wd)
    _check_against_reference(est, X, y, w, 0.0)


def test_a_store_of_more_columns_than_the_start_takes_fits_the_same_problem():
    """Out of core without the set-up's scatter (Lambda given: no set-up read of the rows
    for it): the targets' mean still comes from their own read."""
    X, y = _problem()
    y = y - 3e4
    Xd, yd = da.from_array(X, chunks=(60, -1)), da.from_array(y, chunks=60)
    est = ok.DSPDCRegressor(alpha=ALPHA, tol=1e-12, standardize=False, Lambda=50.0, **FAST)
    est.fit(Xd, yd)
    # standardize=False: the intercept is penalized towards the targets' mean, so a shift
    # of y shifts the predictions exactly
    moved = ok.DSPDCRegressor(alpha=ALPHA, tol=1e-12, standardize=False, Lambda=50.0,
                              **FAST).fit(Xd, yd + 1e6)
    np.testing.assert_allclose(moved.predict(X) - 1e6, est.predict(X), rtol=0, atol=1e-4)


def test_factorized_input_fits_the_same_problem():
    rng = np.random.default_rng(4)
    U, V = rng.normal(size=(240, 3)), rng.normal(size=(3, 6))
    A = U @ V
    y = A @ rng.normal(size=6) + 0.3 * rng.normal(size=240) + 5e4
    est = ok.DSPDCRegressor(alpha=ALPHA, tol=1e-12, **FAST).fit(ok.Factorized(U, V), y)
    _check_against_reference(est, A, y, None, 0.0)


def test_a_saved_model_round_trips(tmp_path):
    X, y = _problem()
    est = ok.DSPDCRegressor(alpha=ALPHA, tol=1e-10, **FAST).fit(X, y + 1e4)
    est.save(tmp_path / "m.zarr")
    again = ok.load(tmp_path / "m.zarr")
    np.testing.assert_array_equal(again.predict(X), est.predict(X))
    # the file names the fit's work store by its folder name only, never the folder it is in
    store = est._config.work_store
    assert again._config.work_store == os.path.basename(store) != store
    assert dataclasses.replace(again._config, work_store=store) == est._config


def test_a_model_file_without_the_target_shift_keeps_its_meaning(tmp_path):
    """A model saved before the targets were centred holds the solver's ``x`` of the
    problem on the targets as given: its intercept is ``c x'_0 - mean . coef_``."""
    X, y = _problem()
    est = ok.DSPDCRegressor(alpha=ALPHA, tol=1e-10, **FAST).fit(X, y + 1e4)
    path = tmp_path / "m.zarr"
    est.save(path)
    edit_attrs(path, "ooc_kernels", lambda meta: meta["fitted"]["config"].pop("y_shift"))
    old = ok.load(path)
    x = est._state.x
    mean, scale = np.asarray(est._config.x_shift), np.asarray(est._config.x_scale)
    coef = x[:-1] / scale
    np.testing.assert_allclose(old.coef_, coef, rtol=1e-15)
    assert old.intercept_ == pytest.approx(x[-1] - float(mean @ coef), rel=1e-12)


@pytest.mark.parametrize("value", ["1e4", None, float("nan")])
def test_a_damaged_target_shift_is_refused(tmp_path, value):
    X, y = _problem(60)
    path = tmp_path / "m.zarr"
    ok.DSPDCRegressor(alpha=ALPHA, **FAST).fit(X, y).save(path)
    edit_attrs(path, "ooc_kernels",
               lambda meta: meta["fitted"]["config"].update(y_shift=value))
    with pytest.raises(ok.exceptions.ModelFormatError, match="y_shift"):
        ok.load(path)


def test_a_resumed_fit_keeps_the_target_shift(tmp_path, monkeypatch):
    from ooc_kernels.families.dspdc import _squared_start

    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)   # no start: rounds to run
    X, y = _problem()
    y = y + 1e4
    Xd, yd = da.from_array(X, chunks=(60, -1)), da.from_array(y, chunks=60)
    ckpt = tmp_path / "ckpt.zarr"
    kw = dict(FAST, alpha=ALPHA, tol=1e-10, q=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # stopped at max_iter: warns
        first = ok.DSPDCRegressor(**{**kw, "max_iter": 2}).fit(Xd, yd, checkpoint=str(ckpt))
    saved = json.loads((ckpt / "zarr.json").read_text())["attributes"]
    assert saved["ooc_kernels_checkpoint"]["model"]["fitted"]["config"]["y_shift"] == pytest.approx(y.mean(), rel=1e-12)
    assert first.n_iter_ == 2 and first.stop_reason_.startswith("max_iter")
    est = ok.DSPDCRegressor(**kw).fit(Xd, yd, checkpoint=str(ckpt), resume=True)
    assert est.n_iter_ > 2 and est.stop_reason_.startswith("tol")
    _check_against_reference(est, X, y, None, 0.0)
