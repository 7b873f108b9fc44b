"""``ok.MultiTaskLMNN``'s defaults: per-feature standardization and a relative ``tol``.

References: scikit-learn's ``StandardScaler`` (the per-feature scaling), the relative
duality gap ``(P - D) / |P|`` recomputed from the primal and dual values of every gap
check (the stopping rule), the primal value (33) from the raw points, and Euclidean k-NN
(scikit-learn's ``KNeighborsClassifier``, with and without ``StandardScaler``) on the
same split (the quality floor).
"""

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler

import ooc_kernels as ok
from ooc_kernels.data.matrix_data import multitask_classes
from ooc_kernels.families.dspdc.in_memory.mtlmnn import build_triplets, mtlmnn_dspdc

#: Column scales far apart, as in data whose features come in different units.
UNITS = np.array([1.0, 300.0, 0.01, 40.0])


@pytest.fixture(scope="module")
def two_tasks():
    """Two tasks, four columns in different units, one of them constant."""
    X, y, task = multitask_classes(2, 30, 3, 2, seed=2, n_shared=1, n_specific=1)
    X = np.column_stack([X, np.full(len(y), 5.0)]) * UNITS
    return X, y, task


def test_per_feature_scaling_is_standard_scalers(two_tasks):
    """``standardize=True`` divides every column by its standard deviation on the training
    rows (a constant column by 1): the fit equals ``StandardScaler`` followed by the same
    fit without standardization, with the metrics in the input's units."""
    X, y, task = two_tasks
    est = ok.MultiTaskLMNN(random_state=0).fit(X, y, task=task)
    scaler = StandardScaler().fit(X)
    ref = ok.MultiTaskLMNN(standardize=False, random_state=0).fit(
        scaler.transform(X), y, task=task)
    np.testing.assert_allclose(est.scale_, scaler.scale_, rtol=1e-12)
    assert est.scale_[3] == 1.0                               # the constant column
    assert est.n_iter_ == ref.n_iter_
    unscale = np.outer(1.0 / scaler.scale_, 1.0 / scaler.scale_)
    np.testing.assert_allclose(est.metrics_, ref.metrics_ * unscale, rtol=1e-6,
                               atol=1e-9 * np.abs(ref.metrics_ * unscale).max())
    Xnew = X + np.random.default_rng(0).normal(size=X.shape) * X.std(axis=0)
    np.testing.assert_array_equal(est.predict(Xnew, task=task),
                                  ref.predict(scaler.transform(Xnew), task=task))


def test_columns_in_other_units_give_the_same_predictions(two_tasks):
    """Multiplying the columns by different constants changes nothing but the units of
    the metrics: the same predictions, ``metrics_`` divided by the constants' products
    (on the columns that vary: a constant column is left as it is, and its entries never
    meet a nonzero difference)."""
    X, y, task = two_tasks
    D = np.array([7.0, 1e-3, 250.0, 3.0])
    a = ok.MultiTaskLMNN(random_state=0).fit(X, y, task=task)
    b = ok.MultiTaskLMNN(random_state=0).fit(X * D, y, task=task)
    Xnew = X + np.random.default_rng(1).normal(size=X.shape) * X.std(axis=0)
    np.testing.assert_array_equal(a.predict(Xnew, task=task),
                                  b.predict(Xnew * D, task=task))
    np.testing.assert_allclose((b.metrics_ * np.outer(D, D))[:, :3, :3],
                               a.metrics_[:, :3, :3], rtol=1e-6,
                               atol=1e-9 * np.abs(a.metrics_).max())


def test_scalar_standardization_divides_by_the_root_mean_variance(two_tasks):
    """``standardize="scalar"`` divides all columns by one number, the root mean column
    variance (NumPy's), and is the fit without standardization on the divided data."""
    X, y, task = two_tasks
    s = np.sqrt(X.var(axis=0).mean())
    est = ok.MultiTaskLMNN(standardize="scalar", random_state=0).fit(X, y, task=task)
    ref = ok.MultiTaskLMNN(standardize=False, random_state=0).fit(X / s, y, task=task)
    np.testing.assert_allclose(est.scale_, np.full(X.shape[1], s), rtol=1e-12)
    np.testing.assert_allclose(est.metrics_, ref.metrics_ / s ** 2, rtol=1e-6,
                               atol=1e-9 * np.abs(ref.metrics_).max() / s ** 2)
    np.testing.assert_array_equal(est.predict(X, task=task), ref.predict(X / s, task=task))


def test_tol_bounds_the_relative_gap_at_the_first_check_that_meets_it(two_tasks):
    """The fit stops at the first gap check whose relative gap ``(P - D) / |P|``,
    recomputed here from the check's primal and dual values, is at most ``tol``; the
    primal values are those of (33) from the raw points.  The primal value of this problem
    is far below 1, so an absolute gap ``tol`` stops earlier."""
    X, y, task = two_tasks
    tol = 1e-3
    est = ok.MultiTaskLMNN(tol=tol, random_state=0).fit(X, y, task=task)
    twin = [(h["primal"] - h["dual"]) / abs(h["primal"]) for h in est.gap_history_]
    first = next((i for i, r in enumerate(twin) if r <= tol), None)
    assert est.converged_ and first == len(twin) - 1, (first, twin[-3:])
    assert est.n_iter_ == est.gap_history_[first]["iteration"]
    np.testing.assert_allclose([h["relative_gap"] for h in est.gap_history_], twin,
                               rtol=1e-12)
    assert any(h["primal"] - h["dual"] <= tol for h in est.gap_history_[:first])
    # the solver's own result, and the primal of its last check from the raw points
    Xs = X / StandardScaler().fit(X).scale_
    tr = build_triplets(Xs, y, task, 3)
    res = mtlmnn_dspdc(tr, 0.01, 0.1, tol=tol, seed=5)
    last = res.history[-1]
    assert res.converged and res.relative_gap == pytest.approx(
        (last["primal"] - last["dual"]) / abs(last["primal"]), rel=1e-12)
    d = X.shape[1]
    S, T = res.shared, res.task_metrics
    primal = 0.005 * np.sum((S - np.eye(d)) ** 2) + 0.05 * np.sum(T ** 2)
    for (u, v, w), j in zip(tr.index, tr.task):
        M = S + T[j]
        duv = (Xs[u] - Xs[v]) @ M @ (Xs[u] - Xs[v])
        s = (Xs[u] - Xs[w]) @ M @ (Xs[u] - Xs[w]) - duv
        hinge = 0.0 if s >= 1 else (0.5 - s if s <= 0 else 0.5 * (1 - s) ** 2)
        primal += (duv + hinge) / tr.n
    assert res.primal == pytest.approx(primal, rel=1e-10)


def test_defaults_beat_euclidean_knn_on_the_wine_data():
    """On the wine data (13 columns in units from 0.1 to 1000) the default fit is at least
    as accurate on held-out rows as Euclidean 3-NN on the raw columns and after
    ``StandardScaler``, on the same split."""
    X, y = load_wine(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    raw = KNeighborsClassifier(3).fit(Xtr, ytr).score(Xte, yte)
    scaler = StandardScaler().fit(Xtr)
    scaled = KNeighborsClassifier(3).fit(scaler.transform(Xtr), ytr).score(
        scaler.transform(Xte), yte)
    est = ok.MultiTaskLMNN(random_state=0).fit(Xtr, ytr)
    assert est.converged_
    assert est.score(Xte, yte) >= max(raw, scaled), (est.score(Xte, yte), raw, scaled)
