"""DSPDC with row weights (``sample_weight``, ``class_weight``), and the package's public names.

The weighted problem ``(1/W) sum_i w_i phi_i(a_i^T x) + g(x)`` (``W = sum_i w_i``) is checked
against scikit-learn's ``Ridge`` and ``LogisticRegression`` (``alpha`` matched: ``Ridge``'s
``alpha`` is ``alpha * W``, ``LogisticRegression``'s ``C`` is ``1 / (alpha * W)``; no
intercept, since DSPDC regularizes its intercept as liblinear does), against the fits on
repeated and on dropped rows, and the weighted kernels and rounds against their plain-NumPy
twins and the sequential oracle.
"""

import dask.array as da
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.utils.class_weight import compute_class_weight

import ooc_kernels as ok
from ooc_kernels import DSPDCClassifier, DSPDCRegressor
from ooc_kernels.families.dspdc import kernels as kern
from ooc_kernels.losses import LOSS_LOGISTIC, LOSS_SMOOTHED_HINGE, LOSS_SQUARED
from ooc_kernels.exceptions import InvalidDataError, ValidationError

ALPHA = 0.2
# the raw problem (its references below; standardization: tests/test_dspdc_scaling.py), to
# a relative gap of 1e-12, which the theorems' steps reach (adaptive steps slow down near
# 1e-10: tests/test_dspdc_steps.py)
TIGHT = dict(tol=1e-12, max_iter=300, local_passes=3, random_state=0, scheduler="sync",
             standardize=False, steps="theorem")


def _data(seed=0, n=80, p=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ rng.normal(size=p) + 0.3 * rng.normal(size=n)
    labels = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0.3, "yes", "no")
    sw = rng.integers(0, 4, size=n).astype(np.float64)
    return X, y, labels, sw


# ---------------------------------------------------------------------------- kernels
@pytest.mark.parametrize("loss_id", [LOSS_SQUARED, LOSS_SMOOTHED_HINGE, LOSS_LOGISTIC])
def test_weighted_kernels_match_their_numpy_twins(loss_id):
    rng = np.random.default_rng(1)
    n, d, p, m, q = 12, 3, 5, 2, 3
    U, V = rng.normal(size=(n, d)), rng.normal(size=(d, p))
    A = U @ V
    b = rng.normal(size=n) if loss_id == 0 else np.where(rng.random(n) > 0.5, 1.0, -1.0)
    w = np.array([0.0, 1.0, 2.5, 0.5, 3.0, 0.0, 1.0, 1.0, 2.0, 0.25, 1.5, 4.0])
    ru, cu = rng.random((40, m)), rng.random((40, q))
    args = (n, ru, cu, m, q, 1.5, 0.2, 1.1, loss_id, 0.01, 0.1)

    out = {}
    for fn in (kern.dspdc_dense_iterations, kern.dspdc_dense_iterations_ref):
        y, x, xbar, z = np.zeros(n), np.zeros(p), np.zeros(p), np.zeros(p)
        fn(A, b, y, x, xbar, z, *args, None, w)
        out[fn.__name__] = (y, x, z)
        # z is the weighted product A^T (w * y), maintained incrementally
        np.testing.assert_allclose(z, A.T @ (w * y), rtol=1e-10, atol=1e-12)
    for a, b_ in zip(out["dspdc_dense_iterations"], out["dspdc_dense_iterations_ref"]):
        np.testing.assert_allclose(a, b_, rtol=1e-10, atol=1e-12)

    fact = {}
    for fn in (kern.dspdc_factorized_iterations, kern.dspdc_factorized_iterations_ref):
        y, x, u = np.zeros(n), np.zeros(p), np.zeros(d)
        v, vbar = np.zeros(d), np.zeros(d)
        fn(U, V, b, y, x, u, v, vbar, *args, None, w)
        np.testing.assert_allclose(u, U.T @ (w * y), rtol=1e-10, atol=1e-12)
        fact[fn.__name__] = (y, x)
    for a, b_ in zip(fact["dspdc_factorized_iterations"],
                     fact["dspdc_factorized_iterations_ref"]):
        np.testing.assert_allclose(a, b_, rtol=1e-10, atol=1e-12)
    # Algorithm 2 on U V gives Algorithm 1's iterates on A = U V, weights included
    np.testing.assert_allclose(fact["dspdc_factorized_iterations"][1],
                               out["dspdc_dense_iterations"][1], rtol=1e-8, atol=1e-10)


def test_weighted_rounds_match_the_sequential_oracle():
    """One pass of the chunk algorithm (K = 1) on weighted rows (integer weights with
    zeros, class weights) equals the oracle that solves the problem on the scaled rows
    ``sqrt(w_i) a_i`` with the scaled losses, written independently."""
    from ooc_kernels.families import get_solver
    from ooc_kernels.families.dspdc.solver import make_case
    from ooc_kernels.families.dspdc.reference import sequential_dspdc
    from ooc_kernels.testing._algorithms import _assert_states, _run

    spec = get_solver("dspdc")
    case = make_case(0, weighted=True)
    assert np.any(np.concatenate([c["sample_weight"] for c in case.chunks]) == 0)
    engine = _run(case, k=1, scheduler="sync", n_epochs=2)
    _assert_states(spec, engine, sequential_dspdc(case, n_epochs=2), exact=False,
                   what="weighted rounds against the oracle")
    # and the weights matter: the unweighted problem ends elsewhere
    plain = _run(make_case(0), k=1, scheduler="sync", n_epochs=2)
    assert np.abs(plain.x - engine.x).max() > 1e-3


# ---------------------------------------------------------------------------- against scikit-learn
def test_regressor_sample_weight_matches_ridge():
    X, y, _, sw = _data()
    reg = DSPDCRegressor(alpha=ALPHA, fit_intercept=False, **TIGHT).fit(X, y,
                                                                         sample_weight=sw)
    ref = Ridge(alpha=ALPHA * sw.sum(), fit_intercept=False).fit(X, y, sample_weight=sw)
    assert reg.stop_reason_.startswith("tol:")
    np.testing.assert_allclose(reg.coef_, ref.coef_, atol=1e-6)
    # the certificate is of the weighted problem: P(coef_) is Ridge's objective / (2 W)
    resid = y - X @ ref.coef_
    p_star = (sw @ resid ** 2 / 2) / sw.sum() + ALPHA / 2 * ref.coef_ @ ref.coef_
    assert reg.gap_history_[-1]["primal"] == pytest.approx(p_star, rel=1e-9)
    assert reg.gap_history_[-1]["dual"] <= p_star * (1 + 1e-12)


@pytest.mark.parametrize("class_weight", [None, "balanced", {"no": 3.0}])
def test_classifier_weights_match_logistic_regression(class_weight):
    X, _, labels, sw = _data()
    clf = DSPDCClassifier(alpha=ALPHA, fit_intercept=False, class_weight=class_weight,
                          **TIGHT).fit(X, labels, sample_weight=sw)
    classes = np.array(["no", "yes"])
    cw = compute_class_weight(class_weight, classes=classes, y=labels, sample_weight=sw)
    W = float(np.sum(sw * cw[np.searchsorted(classes, labels)]))
    ref = LogisticRegression(C=1.0 / (ALPHA * W), fit_intercept=False, tol=1e-12,
                             max_iter=10_000, class_weight=class_weight).fit(
        X, labels, sample_weight=sw)
    assert clf.stop_reason_.startswith("tol:")
    np.testing.assert_allclose(clf.class_weight_, cw, rtol=1e-12)
    np.testing.assert_allclose(clf.coef_, ref.coef_[0], atol=1e-6)
    np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(X), atol=1e-6)


# ---------------------------------------------------------------------------- copies of rows
@pytest.mark.parametrize("cls", [DSPDCRegressor, DSPDCClassifier])
def test_integer_weights_equal_repeated_rows_and_zero_equals_dropped(cls):
    X, y, labels, sw = _data(seed=3)
    target = y if cls is DSPDCRegressor else labels
    weighted = cls(alpha=ALPHA, **TIGHT).fit(X, target, sample_weight=sw)
    repeated = cls(alpha=ALPHA, **TIGHT).fit(X.repeat(sw.astype(int), axis=0),
                                              target.repeat(sw.astype(int)))
    kept = sw > 0
    dropped = cls(alpha=ALPHA, **TIGHT).fit(X[kept], target[kept],
                                             sample_weight=sw[kept])
    assert (sw == 0).any() and (sw > 1).any()
    for other in (repeated, dropped):
        assert other.stop_reason_.startswith("tol:")
        np.testing.assert_allclose(weighted.coef_, other.coef_, atol=1e-6)
        assert weighted.intercept_ == pytest.approx(other.intercept_, abs=1e-6)


def test_weights_scale_free_and_lazy_weights():
    """Weights are relative (doubling all of them changes nothing) and a Dask array of
    weights, chunked unlike X, gives the in-memory weights' model."""
    X, y, _, sw = _data(seed=4)
    base = DSPDCRegressor(alpha=ALPHA, **TIGHT).fit(X, y, sample_weight=sw)
    doubled = DSPDCRegressor(alpha=ALPHA, **TIGHT).fit(X, y, sample_weight=2 * sw)
    lazy = DSPDCRegressor(alpha=ALPHA, **TIGHT).fit(
        da.from_array(X, chunks=(30, 4)), da.from_array(y, chunks=30),
        sample_weight=da.from_array(sw, chunks=17))
    np.testing.assert_allclose(doubled.coef_, base.coef_, atol=1e-6)
    np.testing.assert_allclose(lazy.coef_, base.coef_, atol=1e-6)


# ---------------------------------------------------------------------------- bad weights
def test_bad_weights_are_named():
    X, y, labels, sw = _data(seed=5)
    lazy_bad = sw.copy()
    lazy_bad[37] = -1.0
    with pytest.raises(InvalidDataError,
                       match=r"sample_weight -1\.0 in chunk 1, row 7 is not a finite number"):
        DSPDCRegressor(alpha=ALPHA, scheduler="sync", chunk_size=30).fit(
            da.from_array(X, chunks=(30, 4)), da.from_array(y, chunks=30),
            sample_weight=da.from_array(lazy_bad, chunks=30))
    with pytest.raises(ValidationError, match=r"sum to 0, so there is nothing to learn"):
        DSPDCClassifier(alpha=ALPHA, scheduler="sync", class_weight={"no": 0, "yes": 0}
                        ).fit(X, labels, sample_weight=sw)
    with pytest.raises(ValidationError, match=r"class_weight names label\(s\) \['maybe'\]"):
        DSPDCClassifier(alpha=ALPHA, scheduler="sync", class_weight={"maybe": 2.0}
                        ).fit(X, labels)


def test_weighted_model_saves_and_loads(tmp_path):
    X, _, labels, sw = _data(seed=6)
    clf = DSPDCClassifier(alpha=ALPHA, class_weight="balanced", **TIGHT).fit(
        X, labels, sample_weight=sw)
    clf.save(tmp_path / "m.zarr")
    back = ok.load(tmp_path / "m.zarr")
    np.testing.assert_array_equal(back.predict_proba(X), clf.predict_proba(X))
    np.testing.assert_array_equal(back.class_weight_, clf.class_weight_)


# ---------------------------------------------------------------------------- public names
def test_all_lists_every_public_name():
    from ooc_kernels.estimators import available_estimators

    for name in ok.__all__:
        assert getattr(ok, name) is not None, name
    missing = sorted(set(available_estimators()) - set(ok.__all__))
    assert not missing, f"estimators missing from ooc_kernels.__all__: {missing}"
    assert {"DSGClassifier", "DSGRegressor", "DSPDCClassifier", "DSPDCRegressor",
            "MultiTaskLMNN", "Factorized", "open_dataset", "load", "set_progress"} \
        <= set(ok.__all__)
    namespace = {}
    exec("from ooc_kernels import *", namespace)
    assert set(ok.__all__) <= set(namespace)
