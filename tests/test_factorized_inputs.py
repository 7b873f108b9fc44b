"""Which estimators read factorized data ``A = U V``: the DSPDC linear models predict on it
under any declared variable names; every other estimator refuses it with one error of the
library, before any chunk is read; ``ooc-kernels train`` picks DSPDC for a factorized
entry."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner

import ooc_kernels as ok
from ooc_kernels.cli import main
from ooc_kernels.exceptions import ValidationError

REFUSAL = r"takes dense rows X, but X(_p)? is factorized data A = U V \(U: 120 x 3, V: 3 x 5\)"


def _factors(n=120, seed=0):
    rng = np.random.default_rng(seed)
    U, V = rng.normal(size=(n, 3)), rng.normal(size=(3, 5))
    return U, V, U @ V @ rng.normal(size=5)


def _named(U, V, y):
    """A factorized Dataset under names of its own, declared in its attributes."""
    return xr.Dataset({"left": (("obs", "r"), U), "right": (("r", "f"), V),
                       "resp": (("obs",), y)},
                      coords={"obs": np.arange(len(y)) * 10},
                      attrs={"ooc_kernels_schema": "factorized",
                             "ooc_kernels_variables": {"U": "left", "V": "right",
                                                       "y": "resp"}})


def test_dspdc_predicts_on_a_factorized_dataset_with_declared_names():
    U, V, y = _factors()
    named = _named(U, V, y)
    reg = ok.DSPDCRegressor(alpha=1e-2, random_state=0, scheduler="sync").fit(named)
    pred = reg.predict(named)
    assert pred.dims == ("obs",) and pred.obs.values[-1] == 1190
    np.testing.assert_allclose(pred.values, reg.predict(ok.Factorized(U, V)), atol=1e-12)
    labels = named.assign(resp=("obs", (y > 0).astype(int)))
    clf = ok.DSPDCClassifier(random_state=0, scheduler="sync").fit(labels)
    F = ok.Factorized(U, V)
    for method in ("predict", "predict_proba", "decision_function"):
        out = getattr(clf, method)(labels)
        assert out.dims[0] == "obs", method
        np.testing.assert_allclose(np.asarray(out), getattr(clf, method)(F), atol=1e-12)


def test_dspdc_predicts_on_a_catalog_entry_declared_factorized(tmp_path):
    from ooc_kernels.data.catalog import register_dataset

    U, V, y = _factors()
    store = tmp_path / "f.zarr"
    _named(U, V, y).drop_attrs().chunk({"obs": 40}).to_zarr(store)
    register_dataset(tmp_path / "cat.yaml", "f", store, schema="factorized",
                     variables={"U": "left", "V": "right", "y": "resp"})
    ds = ok.open_dataset(tmp_path / "cat.yaml", "f")
    reg = ok.DSPDCRegressor(alpha=1e-2, random_state=0, scheduler="sync").fit(ds)
    pred = reg.predict(ds)
    assert pred.dims == ("obs",)
    np.testing.assert_allclose(pred.values, reg.predict(ok.Factorized(U, V)), atol=1e-5)


def _unread(block):
    raise AssertionError("a chunk of U was read")


@pytest.mark.parametrize("make, kind", [
    (lambda: ok.DSGRegressor(n_features=256, max_iter=1), "supervised"),
    (lambda: ok.DSGClassifier(n_features=256, max_iter=1), "labels"),
    (lambda: ok.ProjectedKernelRidge(degree=2), "supervised"),
    (lambda: ok.OnlineKernelRidge(degree=2), "supervised"),
    (lambda: ok.DSGGaussianProcessRegressor(noise=0.1, bandwidth=1.0), "supervised"),
    (lambda: ok.DSGOneClassSVM(n_features=256, max_iter=1), "unsupervised"),
    (lambda: ok.DSGDensityRatio(n_features=256, max_iter=1), "two_sample"),
])
def test_row_estimators_refuse_factorized_data_before_reading_it(make, kind):
    U, V, y = _factors()
    lazy_U = da.from_array(U, chunks=(40, 3)).map_blocks(_unread, dtype=U.dtype)
    F = ok.Factorized(lazy_U, V)
    args = {"supervised": (F, y), "labels": (F, (y > 0).astype(int)),
            "unsupervised": (F,), "two_sample": (F, U @ V)}[kind]
    est = make()
    with pytest.raises(ValidationError, match=REFUSAL) as info:
        est.fit(*args)
    message = str(info.value)
    assert type(est).__name__ in message
    assert "(DSPDCClassifier, DSPDCRegressor)" in message
    assert "X = U @ V" in message and "ooc_kernels.data.materialize" in message


@pytest.mark.parametrize("make", [
    lambda: ok.DSGRegressor(n_features=256, max_iter=1, tol=None, random_state=0),
    lambda: ok.ProjectedKernelRidge(degree=2),
    lambda: ok.OnlineKernelRidge(degree=2),
])
def test_a_model_fitted_on_rows_refuses_factorized_data_to_predict(make):
    U, V, y = _factors()
    est = make().set_params(scheduler="sync").fit(U @ V, y)
    named = _named(U, V, y)
    for call in (lambda: est.predict(ok.Factorized(U, V)),
                 lambda: est.score(ok.Factorized(U, V), y),
                 lambda: est.predict(named), lambda: est.score(named)):
        with pytest.raises(ValidationError, match=REFUSAL):
            call()


def _factorized_entry(tmp_path, task):
    from ooc_kernels.data.catalog import register_dataset

    U, V, y = _factors()
    store = tmp_path / f"{task}.zarr"
    _named(U, V, y).drop_attrs().chunk({"obs": 40}).to_zarr(store)
    register_dataset(tmp_path / "cat.yaml", task, store, schema="factorized", task=task,
                     variables={"U": "left", "V": "right", "y": "resp"})


def _train(tmp_path, *extra):
    return CliRunner().invoke(main, ["train", "--catalog", str(tmp_path / "cat.yaml"),
                                     "--entry", "regression", "--scheduler", "sync",
                                     "--quiet", *extra])


def test_train_picks_dspdc_for_a_factorized_entry(tmp_path):
    _factorized_entry(tmp_path, "regression")
    r = _train(tmp_path, "-p", "random_state=0", "--out", str(tmp_path / "m.zarr"))
    assert r.exit_code == 0, r.output
    assert type(ok.load(tmp_path / "m.zarr")) is ok.DSPDCRegressor
    r = _train(tmp_path, "--estimator", "DSGRegressor", "--out", str(tmp_path / "d.zarr"))
    assert r.exit_code == 1
    assert "ValidationError: DSGRegressor takes dense rows X, but X is factorized data" \
        in " ".join(r.output.split())
    assert not (tmp_path / "d.zarr").exists()
