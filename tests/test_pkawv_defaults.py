"""The PKAWV estimators at their defaults on raw tabular data: inputs in any units and
targets far from 0 (standardization from the setup rows, the bandwidth trials), against
exact kernel ridge regression on standardized data (scikit-learn's ``KernelRidge``)."""

import dask.array as da
import numpy as np
import pytest
from sklearn.datasets import make_friedman2
from sklearn.kernel_ridge import KernelRidge

import ooc_kernels as ok
from ooc_kernels.exceptions import ModelFormatError


def _r2(pred, y):
    return 1 - np.mean((pred - y) ** 2) / np.var(y)


def _standardized(X, y, Xt):
    mx, sx, my, sy = X.mean(0), X.std(0), y.mean(), y.std()
    return (X - mx) / sx, (y - my) / sy, (Xt - mx) / sx, (lambda p: p * sy + my)


def _best_exact_krr(X, y, Xt, yt):
    """Held-out R^2 of exact kernel ridge on standardized inputs and targets, the best of a
    grid of widths and alphas (an upper reference no default is tuned on)."""
    Z, t, Zt, back = _standardized(X, y, Xt)
    best = -np.inf
    for sigma in (0.25, 0.5, 1.0, 2.0, 4.0):
        for alpha in (1e-3, 1e-2, 1e-1, 1.0):
            krr = KernelRidge(alpha=alpha, kernel="rbf", gamma=1 / (2 * sigma ** 2)).fit(Z, t)
            best = max(best, _r2(back(krr.predict(Zt)), yt))
    return best


def test_projected_kernel_ridge_defaults_on_raw_friedman2_match_exact_kernel_ridge():
    X, y = make_friedman2(n_samples=1400, noise=0.0, random_state=0)   # inputs up to 1700
    Xtr, ytr, Xte, yte = X[:800], y[:800], X[800:], y[800:]
    reference = _best_exact_krr(Xtr, ytr, Xte, yte)
    model = ok.ProjectedKernelRidge(random_state=0, scheduler="sync").fit(Xtr, ytr)
    assert reference > 0.95
    assert _r2(model.predict(Xte), yte) > reference - 0.02


def test_projected_kernel_ridge_default_bandwidth_fits_the_projects_2d_generator():
    from ooc_kernels.data.generators import generate_chunk

    c = generate_chunk("synthetic_krr_2d", 0, 1600, random_state=0)
    X, y = c["X"].astype(np.float64), c["y"].astype(np.float64)
    Xtr, ytr, Xte, yte = X[:1000], y[:1000], X[1000:], y[1000:]
    reference = _best_exact_krr(Xtr, ytr, Xte, yte)     # about 0.85 (the noise's share)
    model = ok.ProjectedKernelRidge(random_state=0, scheduler="sync").fit(Xtr, ytr)
    assert _r2(model.predict(Xte), yte) > reference - 0.03
    assert set(model.bandwidth_scores_) == {0.125, 0.25, 0.5, 1.0, 2.0}


def _problem(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) * [1.0, 50.0, 0.01] + [0.0, 300.0, -2.0]
    y = 1e4 + 30 * np.sin(X[:, 0]) + 0.2 * X[:, 1] + 500 * X[:, 2]
    return X, y


def test_projected_kernel_ridge_standardizes_as_exact_kernel_ridge_on_prescaled_data():
    """Every row is a setup row here (400 rows, 4 chunks): the model is kernel ridge
    regression (a dictionary of every row) on the standardized inputs and targets, in the
    original units."""
    X, y = _problem()
    Xt, _ = _problem(50, seed=1)
    model = ok.ProjectedKernelRidge(basis="nystrom-fixed", n_components=400, bandwidth=1.3,
                                    alpha=0.5, chunk_size=100, random_state=0,
                                    scheduler="sync").fit(X, y)
    Z, t, Zt, back = _standardized(X, y, Xt)
    exact = KernelRidge(alpha=0.5, kernel="rbf", gamma=1 / (2 * 1.3 ** 2)).fit(Z, t)
    np.testing.assert_allclose(model.predict(Xt), back(exact.predict(Zt)), rtol=0,
                               atol=1e-6 * y.std())
    np.testing.assert_allclose(model.x_shift_, X.mean(0), rtol=1e-12)
    np.testing.assert_allclose([model.y_shift_, model.y_scale_], [y.mean(), y.std()],
                               rtol=1e-12)


@pytest.mark.parametrize("basis", ["taylor", "nystrom-fixed"])
def test_projected_kernel_ridge_predictions_follow_target_shifts_and_input_units(basis):
    X, y = _problem()
    params = dict(basis=basis, n_components=100, random_state=0, scheduler="sync")
    base = ok.ProjectedKernelRidge(**params).fit(X, y)
    shifted = ok.ProjectedKernelRidge(**params).fit(X, y - 1e4)
    units = np.array([1e3, 1e-3, 7.0])
    rescaled = ok.ProjectedKernelRidge(**params).fit(X * units, y)
    np.testing.assert_allclose(shifted.predict(X) + 1e4, base.predict(X), rtol=1e-9)
    np.testing.assert_allclose(rescaled.predict(X * units), base.predict(X), rtol=1e-9)


def test_projected_kernel_ridge_partial_fit_keeps_the_first_batch_statistics():
    X, y = _problem(300)
    model = ok.ProjectedKernelRidge(degree=3, bandwidth=1.1, scheduler="sync")
    for lo in range(0, 300, 100):
        model.partial_fit(X[lo:lo + 100], y[lo:lo + 100])
    mx, sx = X[:100].mean(0), X[:100].std(0)
    my, sy = y[:100].mean(), y[:100].std()
    ref = ok.ProjectedKernelRidge(degree=3, bandwidth=1.1, standardize=False, center=False,
                                  scheduler="sync").fit((X - mx) / sx, (y - my) / sy)
    np.testing.assert_allclose(model.coef_, ref.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.predict(X), ref.predict((X - mx) / sx) * sy + my,
                               rtol=1e-9)


def test_projected_kernel_ridge_lazy_input_saves_and_loads_standardized(tmp_path):
    X, y = _problem()
    lazy = ok.ProjectedKernelRidge(random_state=0, chunk_size=100, scheduler="sync").fit(
        da.from_array(X, chunks=(100, 3)), da.from_array(y, chunks=100))
    memory = ok.ProjectedKernelRidge(random_state=0, chunk_size=100, scheduler="sync").fit(X, y)
    np.testing.assert_allclose(lazy.predict(X), memory.predict(X), rtol=1e-9)
    lazy.save(tmp_path / "m.zarr")
    loaded = ok.load(tmp_path / "m.zarr")
    np.testing.assert_array_equal(loaded.predict(X), lazy.predict(X))
    np.testing.assert_array_equal(loaded.x_scale_, lazy.x_scale_)
    assert loaded.y_shift_ == lazy.y_shift_ and loaded.standardize


def test_projected_kernel_ridge_refuses_a_file_with_part_of_the_standardization(tmp_path):
    import zarr

    X, y = _problem(200)
    ok.ProjectedKernelRidge(degree=2, scheduler="sync").fit(X, y).save(tmp_path / "m.zarr")
    group = zarr.open_group(str(tmp_path / "m.zarr"), mode="a")
    arrays = group["arrays"] if "arrays" in group else group
    del arrays["x_scale"]
    with pytest.raises(ModelFormatError, match="x_scale"):
        ok.load(tmp_path / "m.zarr")


# --------------------------------------------------------------------------- online
def test_online_kernel_ridge_defaults_on_raw_friedman2_match_exact_kernel_ridge():
    X, y = make_friedman2(n_samples=1400, noise=0.0, random_state=0)
    Xtr, ytr, Xte, yte = X[:800], y[:800], X[800:], y[800:]
    reference = _best_exact_krr(Xtr, ytr, Xte, yte)
    model = ok.OnlineKernelRidge(scheduler="sync").fit(Xtr, ytr)
    assert _r2(model.predict(Xte), yte) > reference - 0.03
    # the online forecasts beat the running mean of the targets seen so far
    running_mean = np.concatenate([[0.0], np.cumsum(ytr)[:-1] / np.arange(1, 800)])
    assert model.cumulative_loss_ < 0.2 * np.sum((ytr - running_mean) ** 2)


def test_online_kernel_ridge_standardize_is_the_paper_learner_on_prescaled_data():
    """The online forecasts with the targets far from 0 and inputs in other units are the
    paper's learner run on the inputs mapped onto [-1, 1] and the standardized targets."""
    X, y = _problem(300)
    model = ok.OnlineKernelRidge(degree=3, bandwidth=1.0, chunk_size=70,
                                 scheduler="sync").fit(X, y)
    lo, hi = X.min(0), X.max(0)
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    my, sy = y.mean(), y.std()
    ref = ok.OnlineKernelRidge(degree=3, bandwidth=1.0, chunk_size=70, standardize=False,
                               scheduler="sync").fit((X - mid) / half, (y - my) / sy)
    np.testing.assert_allclose(model.online_predictions_,
                               ref.online_predictions_ * sy + my, rtol=1e-10)
    np.testing.assert_allclose(model.cumulative_loss_, ref.cumulative_loss_ * sy ** 2,
                               rtol=1e-9)
    np.testing.assert_allclose(model.predict(X), ref.predict((X - mid) / half) * sy + my,
                               rtol=1e-10)
    shifted = ok.OnlineKernelRidge(degree=3, bandwidth=1.0, chunk_size=70,
                                   scheduler="sync").fit(X, y - 1e4)
    np.testing.assert_allclose(shifted.predict(X) + 1e4, model.predict(X), rtol=1e-10)


def test_online_kernel_ridge_auto_leaves_data_in_the_unit_box_as_it_is():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(200, 2))
    y = np.sin(2 * X[:, 0]) * X[:, 1]
    auto = ok.OnlineKernelRidge(degree=4, bandwidth=1.0, scheduler="sync").fit(X, y)
    raw = ok.OnlineKernelRidge(degree=4, bandwidth=1.0, standardize=False,
                               scheduler="sync").fit(X, y)
    np.testing.assert_array_equal(auto.online_predictions_, raw.online_predictions_)
    assert auto.x_shift_ is None and (auto.y_shift_, auto.y_scale_) == (0.0, 1.0)


def test_online_kernel_ridge_stream_keeps_the_first_batch_statistics(tmp_path):
    X, y = _problem(300)
    model = ok.OnlineKernelRidge(degree=3, scheduler="sync")
    model.partial_fit(X[:100], y[:100])
    lo, hi = X[:100].min(0), X[:100].max(0)
    np.testing.assert_allclose(model.x_shift_, (lo + hi) / 2, rtol=1e-12)
    np.testing.assert_allclose(model.y_scale_, y[:100].std(), rtol=1e-12)
    model.save(tmp_path / "m.zarr")
    loaded = ok.load(tmp_path / "m.zarr")
    for m in (model, loaded):
        m.partial_fit(X[100:], y[100:])
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_allclose(model.x_shift_, (lo + hi) / 2, rtol=1e-12)
