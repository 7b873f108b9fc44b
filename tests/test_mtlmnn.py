"""Multi-task LMNN by DSPDC (``docs/specs/dspdc.md`` §4.3, Algorithm 3) and ``ok.MultiTaskLMNN``.

Oracles: the neighbour sets by brute-force loops over the points, the objective (33) from the
raw points (distances ``(z_u - z_v)^T M (z_u - z_v)``, no ``Z`` matrices), the optimum by
L-BFGS over ``X_k = L_k L_k^T`` (no eigendecomposition), the ``W_j`` bookkeeping recomputed
from explicit ``Z_i`` after every iteration, and Euclidean k-NN (scikit-learn) per task.
"""

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import KNeighborsClassifier

import ooc_kernels as ok
from ooc_kernels.data.matrix_data import multitask_classes
from ooc_kernels.estimators import available_estimators
from ooc_kernels.exceptions import InvalidParameterError, ValidationError
from ooc_kernels.families.dspdc.in_memory.mtlmnn import build_triplets, mtlmnn_dspdc


def _brute_triplets(X, y, task, l):
    """``(u, v, w)`` by loops: targets by (distance, index), impostor by (distance, index)."""
    out = []
    for j in range(task.max() + 1):
        rows = [i for i in range(len(y)) if task[i] == j]
        for u in rows:
            def dist(k):
                return float(sum((X[u, c] - X[k, c]) ** 2 for c in range(X.shape[1])))
            same = sorted((dist(k), k) for k in rows if k != u and y[k] == y[u])
            other = min((dist(k), k) for k in rows if y[k] != y[u])
            out += [(u, v, other[1]) for _, v in same[:l]]
    return out


def _hinge(s):
    return np.where(s >= 1, 0.0, np.where(s <= 0, 0.5 - s, 0.5 * (1 - s) ** 2))


def _hinge_der(s):
    return np.where(s >= 1, 0.0, np.where(s <= 0, -1.0, -(1 - s)))


def _objective_33(X, trips, task, shared, task_metrics, lam0, lam_t):
    """(33) from the raw points: regularizers + (target distances + hinge(margins)) / n."""
    n = len(trips)
    d = X.shape[1]
    val = lam0 / 2 * np.sum((shared - np.eye(d)) ** 2) + lam_t / 2 * np.sum(task_metrics ** 2)
    for u, v, w in trips:
        M = task_metrics[task[u]] + shared
        duv = (X[u] - X[v]) @ M @ (X[u] - X[v])
        duw = (X[u] - X[w]) @ M @ (X[u] - X[w])
        val += (duv + _hinge(duw - duv)) / n
    return float(val)


@pytest.fixture(scope="module")
def tiny():
    X, y, task = multitask_classes(2, 12, 3, 2, seed=3, n_shared=1, n_specific=1)
    return X / X.std(), y, task


# ------------------------------------------------------------------------ triplets

def test_triplet_builder_matches_brute_force_with_ties():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(40, 2)).astype(float)      # many equal distances
    y = rng.integers(0, 3, size=40)
    task = np.repeat([0, 1], 20)
    y[task == 1] += 3
    for l in (1, 3):
        tr = build_triplets(X, y, task, n_neighbors=l)
        assert sorted(map(tuple, tr.index.tolist())) == sorted(_brute_triplets(X, y, task, l))
        for j in range(2):
            pairs = {(u, v) for u, v, _ in tr.index.tolist() if task[u] == j}
            C = sum(np.outer(X[u] - X[v], X[u] - X[v]) for u, v in pairs)
            np.testing.assert_allclose(tr.C[j], C, atol=1e-12)
        np.testing.assert_array_equal(tr.task, task[tr.index[:, 0]])


def test_Z_has_the_corrected_sign():
    # <Z_i, M> = d_M^2(u, w) - d_M^2(u, v) (impostor minus target), the correction of
    # docs/specs/dspdc.md §8, pitfall 9
    X, y, task = multitask_classes(2, 10, 4, 2, seed=1)
    tr = build_triplets(X, y, task, n_neighbors=2)
    A = np.random.default_rng(2).normal(size=(4, 4))
    M = A @ A.T
    for i in range(0, tr.n, 7):
        u, v, w = tr.index[i]
        expected = (X[u] - X[w]) @ M @ (X[u] - X[w]) - (X[u] - X[v]) @ M @ (X[u] - X[v])
        assert np.sum(tr.Z(i) * M) == pytest.approx(expected, rel=1e-12)


def test_triplet_builder_rejects_a_task_with_one_class():
    X = np.arange(8.0).reshape(4, 2)
    with pytest.raises(ValidationError, match="task 1 has a single class"):
        build_triplets(X, [0, 1, 2, 2], [0, 0, 1, 1])


# ------------------------------------------------------------------------ Algorithm 3

def test_incremental_W_equals_the_sum_over_ybar_after_every_iteration(tiny):
    X, y, task = tiny
    tr = build_triplets(X, y, task, n_neighbors=2)
    Z = np.stack([np.outer(X[u] - X[w], X[u] - X[w]) - np.outer(X[u] - X[v], X[u] - X[v])
                  for u, v, w in tr.index])
    errors, reset_ok = [], []
    prev_X = {}

    def watch(t, s):
        ybar = s["y"] + s["ybar_shift"]
        W = np.zeros_like(s["W"])
        for i in range(tr.n):
            W[tr.task[i] + 1] += ybar[i] * Z[i]
        W[0] = W[1:].sum(axis=0)
        errors.append(np.abs(W - s["W"]).max())
        # (40): Xbar = X on the blocks that did not move in this iteration
        if prev_X:
            moved = [j for j in range(3) if not np.array_equal(prev_X[j], s["X"][j])]
            reset_ok.append(all(np.array_equal(s["Xbar"][j], s["X"][j])
                                for j in range(3) if j not in moved))
        prev_X.update({j: s["X"][j].copy() for j in range(3)})

    mtlmnn_dspdc(tr, 0.1, 0.2, m=5, q=1, tol=0.0, max_iter=80, check_every=10 ** 6, seed=4,
                 callback=watch)
    assert len(errors) == 80 and max(errors) < 1e-10
    assert all(reset_ok)


def _lbfgs_reference(X, trips, task, lam0, lam_t, d, p):
    n = len(trips)
    Zuv = np.stack([np.outer(X[u] - X[v], X[u] - X[v]) for u, v, _ in trips])
    Zi = np.stack([np.outer(X[u] - X[w], X[u] - X[w]) for u, _, w in trips]) - Zuv
    T = np.array([task[u] for u, _, _ in trips])

    def f(flat):
        L = flat.reshape(p + 1, d, d)
        Xs = L @ L.transpose(0, 2, 1)
        M = Xs[T + 1] + Xs[0]
        c = np.einsum("ikl,ikl->i", Zi, M)
        dist = np.einsum("ikl,ikl->i", Zuv, M)
        val = lam0 / 2 * np.sum((Xs[0] - np.eye(d)) ** 2) + lam_t / 2 * np.sum(Xs[1:] ** 2) \
            + np.mean(dist + _hinge(c))
        per = (Zuv + _hinge_der(c)[:, None, None] * Zi) / n
        G = np.zeros_like(Xs)
        G[0] = lam0 * (Xs[0] - np.eye(d)) + per.sum(axis=0)
        for j in range(p):
            G[j + 1] = lam_t * Xs[j + 1] + per[T == j].sum(axis=0)
        return val, ((G + G.transpose(0, 2, 1)) @ L).ravel()

    start = np.concatenate([np.eye(d)[None], 0.3 * np.eye(d)[None].repeat(p, 0)]).ravel()
    r = minimize(f, start, jac=True, method="L-BFGS-B",
                 options={"gtol": 1e-13, "ftol": 1e-16, "maxiter": 20000, "maxcor": 30})
    L = r.x.reshape(p + 1, d, d)
    return L @ L.transpose(0, 2, 1), r.fun


def test_gap_to_zero_and_the_independent_objective_and_optimum(tiny):
    X, y, task = tiny
    lam0, lam_t = 0.1, 0.2
    tr = build_triplets(X, y, task, n_neighbors=2)
    res = mtlmnn_dspdc(tr, lam0, lam_t, m=8, q=1, tol=1e-9, max_iter=200_000, seed=0)
    assert res.converged and res.relative_gap <= 1e-9
    assert min(h["gap"] for h in res.history) >= -1e-12
    trips = _brute_triplets(X, y, task, 2)
    # (33) from the raw points: at the start (X_0 = I, X_j = 0) and at the end
    start = _objective_33(X, trips, task, np.eye(3), np.zeros((2, 3, 3)), lam0, lam_t)
    final = _objective_33(X, trips, task, res.shared, res.task_metrics, lam0, lam_t)
    assert res.history[0]["primal"] == pytest.approx(start, rel=1e-12)
    assert final == pytest.approx(res.primal, rel=1e-12)
    assert final < start
    Xs_ref, P_ref = _lbfgs_reference(X, trips, task, lam0, lam_t, 3, 2)
    assert final <= P_ref + 1e-9 and res.dual <= P_ref + 1e-12
    np.testing.assert_allclose(res.shared, Xs_ref[0], atol=1e-4)
    np.testing.assert_allclose(res.task_metrics, Xs_ref[1:], atol=1e-4)
    for M in [res.shared, *res.task_metrics]:
        assert np.linalg.eigvalsh(M).min() > -1e-12


# ------------------------------------------------------------------------ the estimator

def _euclidean_knn_accuracy(X, y, task, test, k=3):
    right = 0
    for j in np.unique(task):
        tr, te = (~test) & (task == j), test & (task == j)
        right += np.sum(KNeighborsClassifier(k).fit(X[tr], y[tr]).predict(X[te]) == y[te])
    return right / test.sum()


def test_learned_metrics_beat_euclidean_knn_on_held_out_rows():
    X, y, task = multitask_classes(3, 60, 8, 3, seed=0)
    test = np.random.default_rng(1).random(len(y)) < 0.4
    est = ok.MultiTaskLMNN(tol=1e-3, random_state=0).fit(X[~test], y[~test], task=task[~test])
    assert est.converged_ and est.gap_history_[-1]["relative_gap"] <= 1e-3
    euclid = _euclidean_knn_accuracy(X, y, task, test)
    learned = est.score(X[test], y[test], task=task[test])
    assert learned >= euclid + 0.04, (learned, euclid)
    assert est.metrics_.shape == (3, 8, 8)
    np.testing.assert_allclose(est.metrics_, est.task_metrics_ + est.shared_metric_)
    assert min(np.linalg.eigvalsh(M).min() for M in est.metrics_) > -1e-12
    # predict is k-NN under the metric: the transformed Euclidean k-NN of task 0
    j0 = test & (task == 0)
    tr0 = ~test & (task == 0)
    Xt = est.transform(X[tr0], task=task[tr0])
    ref = KNeighborsClassifier(3).fit(Xt, y[tr0]).predict(est.transform(X[j0], task=task[j0]))
    np.testing.assert_array_equal(est.predict(X[j0], task=task[j0]), ref)


def test_metrics_are_reported_in_the_input_units():
    X, y, task = multitask_classes(2, 20, 3, 2, seed=2, n_shared=1, n_specific=1)
    a = ok.MultiTaskLMNN(tol=1e-3, random_state=0).fit(X, y, task=task)
    b = ok.MultiTaskLMNN(tol=1e-3, random_state=0).fit(10.0 * X, y, task=task)
    np.testing.assert_allclose(100.0 * b.metrics_, a.metrics_, rtol=1e-6, atol=1e-9)


def test_estimator_errors_and_export():
    X, y, task = multitask_classes(2, 20, 3, 2, seed=2, n_shared=1, n_specific=1)
    est = ok.MultiTaskLMNN(tol=1e-2, random_state=0).fit(X, y, task=["a"] * 20 + ["b"] * 20)
    assert est.tasks_.tolist() == ["a", "b"]
    with pytest.raises(ValidationError, match="task 'c' was not seen in fit"):
        est.predict(X[:2], task=["a", "c"])
    with pytest.raises(ValidationError, match="one value per row"):
        est.predict(X[:2], task=["a"])
    with pytest.raises(InvalidParameterError, match="n_neighbors"):
        ok.MultiTaskLMNN(n_neighbors=0).fit(X, y, task=task)
    with pytest.raises(ValidationError, match="q=5 exceeds"):
        ok.MultiTaskLMNN(q=5).fit(X, y, task=task)
    assert "MultiTaskLMNN" in ok.__all__
    assert "MultiTaskLMNN" not in available_estimators()       # in memory, not registered


def test_transform_gives_the_learned_distances_and_task_is_a_keyword():
    """``transform`` (``components_``) against distances computed from ``metrics_`` directly;
    ``task`` may be omitted only for a one-task model, and ``fit(X, y)`` is one task."""
    X, y, task = multitask_classes(2, 20, 3, 2, seed=2, n_shared=1, n_specific=1)
    est = ok.MultiTaskLMNN(tol=1e-3, random_state=0).fit(X, y, task=task)
    Z = est.transform(X, task=task)
    for i, k in [(0, 1), (3, 17), (20, 31), (25, 39)]:
        assert task[i] == task[k]
        diff = X[i] - X[k]
        np.testing.assert_allclose(np.sum((Z[i] - Z[k]) ** 2),
                                   diff @ est.metrics_[task[i]] @ diff, rtol=1e-9)
    np.testing.assert_allclose(np.einsum("tji,tjk->tik", est.components_, est.components_),
                               est.metrics_, atol=1e-12)
    with pytest.raises(ValidationError, match="task is required: the model was fitted on 2 "
                                              "tasks"):
        est.predict(X)
    with pytest.raises(ValidationError, match="task is required"):
        est.transform(X)
    # fit(X, y): one task, the same problem as fit(X, y, task=<one value>)
    one = ok.MultiTaskLMNN(tol=1e-3, random_state=0).fit(X, y)
    ref = ok.MultiTaskLMNN(tol=1e-3, random_state=0).fit(X, y, task=np.full(len(y), 7))
    assert one.tasks_.tolist() == [0] and ref.tasks_.tolist() == [7]
    np.testing.assert_allclose(one.metrics_, ref.metrics_)
    np.testing.assert_array_equal(one.predict(X), ref.predict(X, task=np.full(len(y), 7)))
    with pytest.raises(ValidationError, match="task values must be integers or strings; "
                                              "got dtype float64"):
        ok.MultiTaskLMNN().fit(X, y, task=task + 0.5)
    with pytest.raises(ValidationError, match="y has one class"):
        ok.MultiTaskLMNN().fit(X, np.zeros(len(y)))
    with pytest.raises(ValidationError, match="X has 2 features, but MultiTaskLMNN is "
                                              "expecting 3 features"):
        one.predict(X[:, :2])


def test_a_fit_stopped_before_its_tolerance_warns():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = (X[:, 0] > 0).astype(int)
    task = rng.integers(0, 2, 120)
    with pytest.warns(ConvergenceWarning, match=r"MultiTaskLMNN stopped \(max_iter: 200 "
                                                r"iterations\) before converging: the relative "
                                                r"duality gap \(P - D\) / \|P\| is .* above "
                                                r"tol=0.001"):
        est = ok.MultiTaskLMNN(max_iter=200, random_state=0).fit(X, y, task=task)
    assert not est.converged_
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # converged: no warning
        assert ok.MultiTaskLMNN(random_state=0).fit(X, y, task=task).converged_


def test_transform_output_names_and_pandas_output_as_scikit_learns_transformers():
    """A transformer names its output columns (``get_feature_names_out``) and takes
    ``set_output(transform="pandas")``, alone and as a step of a ``Pipeline``; names as
    scikit-learn's ``NeighborhoodComponentsAnalysis`` gives them: the lowercased class name
    and the column index."""
    pd = pytest.importorskip("pandas")
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y, _ = multitask_classes(1, 60, 4, 2, seed=0)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    names = [f"multitasklmnn{i}" for i in range(4)]
    est = ok.MultiTaskLMNN(m=10**6, q=2, tol=1e-4, random_state=0).fit(frame, y)
    assert est.get_feature_names_out().tolist() == names
    assert est.get_feature_names_out(["a", "b", "c", "d"]).tolist() == names
    out = est.set_output(transform="pandas").transform(frame)
    assert isinstance(out, pd.DataFrame) and out.columns.tolist() == names
    np.testing.assert_allclose(out.to_numpy(), X @ est.components_[0].T)
    pipe = make_pipeline(StandardScaler(), ok.MultiTaskLMNN(m=10**6, q=2, tol=1e-4,
                                                            random_state=0))
    out = pipe.set_output(transform="pandas").fit(frame, y).transform(frame)
    assert isinstance(out, pd.DataFrame) and out.columns.tolist() == names


def test_the_solver_runs_its_small_eigendecompositions_on_one_blas_thread(monkeypatch):
    """Each iteration eigendecomposes ``d x d`` metrics (``d`` = the features, tens): BLAS
    threads only spin there, and on busy cores a 30 x 30 ``eigh`` measured 25 ms with two
    OpenBLAS threads against 0.05 ms with one (a default fit on the standardized breast
    cancer data: 600 iterations in 10 s against 7,000).  The solver holds one BLAS thread
    (as the library's other small-matrix steps do) and gives the caller's setting back."""
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads():
        return {lib["num_threads"] for lib in threadpoolctl.threadpool_info()
                if lib["user_api"] == "blas"}

    import ooc_kernels.families.dspdc.in_memory.mtlmnn as solver

    X, y, task = multitask_classes(2, 30, 4, 2, seed=0)
    tr = build_triplets(X, y, task, 2)
    seen, in_lambda = [], []
    power = solver.power_iteration_sq

    def spy(*args, **kwargs):  # the power iteration that bounds Lambda, at the set-up
        in_lambda.append(blas_threads())
        return power(*args, **kwargs)

    monkeypatch.setattr(solver, "power_iteration_sq", spy)
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        before = blas_threads()
        mtlmnn_dspdc(tr, 0.1, 0.1, max_iter=3, tol=0.0, seed=0,
                     callback=lambda t, state: seen.append(blas_threads()))
        after = blas_threads()
    assert before == {2} and after == {2}
    assert in_lambda == [{1}]
    assert seen and all(s == {1} for s in seen)


def test_predict_proba_is_the_neighbours_vote_and_serves_scikit_learns_wrappers():
    """``predict_proba`` is the share of each class among a row's ``n_neighbors`` nearest
    training rows of its task, under the task's metric: scikit-learn's
    ``KNeighborsClassifier`` on the ``transform``ed rows of that task, with the columns of
    ``classes_`` (a class absent from a task gets 0).  With it, the wrappers that need
    probabilities or scores (``OneVsRestClassifier``, ``CalibratedClassifierCV``) take the
    estimator."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.multiclass import OneVsRestClassifier

    X, y, task = multitask_classes(2, 40, 4, 3, seed=1)   # classes 0-2 in task 0, 3-5 in 1
    y = np.where((task == 1) & (y == 5), 1, y)    # task 1: classes 1, 3, 4 (1 shared)
    est = ok.MultiTaskLMNN(m=10**6, q=3, tol=1e-4, random_state=0).fit(X, y, task=task)
    assert est.classes_.tolist() == [0, 1, 2, 3, 4]
    proba = est.predict_proba(X, task=task)
    assert proba.shape == (len(y), 5)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    for j, absent in ((0, [3, 4]), (1, [0, 2])):
        rows = task == j
        Z = est.transform(X[rows], task=task[rows])
        knn = KNeighborsClassifier(n_neighbors=3).fit(Z, y[rows])
        expected = np.zeros((rows.sum(), 5))
        expected[:, knn.classes_] = knn.predict_proba(Z)
        np.testing.assert_allclose(proba[rows], expected, atol=1e-12)
        assert np.all(proba[np.ix_(rows, absent)] == 0.0)
    np.testing.assert_array_equal(est.classes_[proba.argmax(axis=1)],
                                  est.predict(X, task=task))
    Xs, ys, _ = multitask_classes(1, 60, 4, 3, seed=2)
    single = ok.MultiTaskLMNN(m=10**6, q=2, tol=1e-3, random_state=0)
    assert OneVsRestClassifier(single).fit(Xs, ys).score(Xs, ys) > 0.5
    assert CalibratedClassifierCV(single, cv=2).fit(Xs, ys).predict_proba(Xs).shape == (60, 3)


def test_predict_warns_once_about_missing_feature_names():
    """A model fitted on a DataFrame warns once, as scikit-learn's estimators do, when
    ``predict`` or ``predict_proba`` gets an array without column names."""
    pd = pytest.importorskip("pandas")
    X, y, _ = multitask_classes(1, 40, 4, 2, seed=0)
    est = ok.MultiTaskLMNN(m=10**6, q=2, tol=1e-3, random_state=0).fit(
        pd.DataFrame(X, columns=["a", "b", "c", "d"]), y)
    for method in (est.predict, est.predict_proba):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            method(X)
        assert [str(w.message) for w in caught] == [
            "X does not have valid feature names, but MultiTaskLMNN was fitted with feature "
            "names"]


def test_the_objectives_and_the_lambda_never_hold_one_metric_per_triplet():
    """The margins ``<Z_i, X_0 + X_task(i)>`` of all triplets (each gap check, and each
    step of the power iteration that bounds ``Lambda``) are computed task by task: never an
    ``(n_triplets, d, d)`` array of per-triplet metrics, which is ``n d^2`` floats (4,041
    triplets of the 64-pixel digits: 132 MB per product, and a ``Lambda`` that took 59 s).
    Values against the margins from the raw points, triplet by triplet."""
    import tracemalloc

    from ooc_kernels.families.dspdc.in_memory.mtlmnn import (mtlmnn_lambda,
                                                             mtlmnn_objectives)

    X, y, task = multitask_classes(3, 200, 24, 3, seed=3)
    tr = build_triplets(X, y, task, 3)
    d, per_triplet = tr.d, tr.n * tr.d * tr.d * 8
    rng = np.random.default_rng(0)
    shared = np.eye(d) + 0.1 * np.diag(rng.random(d))
    metrics = np.stack([np.diag(rng.random(d)) for _ in range(tr.n_tasks)])
    duals = -rng.random(tr.n)
    tracemalloc.start()
    try:
        primal, _ = mtlmnn_objectives(tr, shared, metrics, duals, 0.01, 0.1)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        mtlmnn_lambda(tr, 60, 2)
        _, peak_lambda = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < per_triplet / 4 and peak_lambda < per_triplet / 4, (peak, peak_lambda)
    margins = np.array([a @ (shared + metrics[j]) @ a - b @ (shared + metrics[j]) @ b
                        for a, b, j in zip(tr.impostor, tr.target, tr.task)])
    hinge = np.where(margins >= 1.0, 0.0, np.where(margins <= 0.0, 0.5 - margins,
                                                   0.5 * (1.0 - margins) ** 2))
    regs = 0.005 * np.sum((shared - np.eye(d)) ** 2) + 0.05 * np.sum(metrics ** 2)
    linear = sum(np.sum(tr.C[j] * (shared + metrics[j])) for j in range(tr.n_tasks))
    np.testing.assert_allclose(primal, regs + (linear + hinge.sum()) / tr.n, rtol=1e-10)
