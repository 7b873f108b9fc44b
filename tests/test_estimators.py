"""DSG estimators: every accepted input, partial_fit, probabilities, lazy outputs, errors."""

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from scipy.spatial.distance import pdist

import ooc_kernels as ok
from ooc_kernels.exceptions import InvalidDataError, SchemaError, ValidationError
from ooc_kernels.features.cache import default_cache, set_cache_budget

SMALL = dict(n_features=512, block_size=64, batch_size=16, max_iter=3, tol=None, random_state=0,
             scheduler="sync")


def _xor(n=300, d=3, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(dtype)
    y = (X[:, 0] * X[:, 1] > 0).astype(np.int64)
    return X, y


def test_numpy_dask_and_dataset_inputs_give_the_same_model():
    X, y = _xor(dtype=np.float32)
    params = dict(SMALL, max_iter=10, tol=None)
    ref = ok.DSGClassifier(chunk_size=100, **params).fit(X, y)
    lazy = ok.DSGClassifier(**params).fit(da.from_array(X, chunks=(100, 3)),
                                          da.from_array(y, chunks=100))
    ds = xr.Dataset({"X": (("sample", "feature"), X), "y": (("sample",), y)}).chunk(
        {"sample": 100})
    from_ds = ok.DSGClassifier(**params).fit(ds)
    for other in (lazy, from_ds):
        assert np.array_equal(ref.coef_, other.coef_)
    assert ref.score(X, y) > 0.85


def test_catalog_entry_and_intake_reader_inputs(tmp_path):
    from ooc_kernels.data.catalog import load_catalog, register_dataset

    store = ok.make_dataset("nonlinear_binary", tmp_path / "nb.zarr", 400, chunk_size=100,
                            n_features=4, progress=False)
    register_dataset(tmp_path / "cat.yaml", "nb", store)
    ds = ok.open_dataset(tmp_path / "cat.yaml", "nb")
    a = ok.DSGClassifier(**SMALL).fit(ds)
    reader = load_catalog(tmp_path / "cat.yaml")["nb"]          # an Intake reader
    b = ok.DSGClassifier(**SMALL).fit(reader)
    assert np.array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.classes_, [0, 1])           # from the store's attrs


def test_lazy_inputs_give_lazy_outputs_equal_to_eager():
    X, y = _xor()
    # float64 features: float32 matrix products may round differently for another number of
    # rows (BLAS kernels), which is not what this test is about
    clf = ok.DSGClassifier(**SMALL, dtype="float64").fit(X, y)
    Xd = da.from_array(X, chunks=(70, 3))
    for method in ("predict", "predict_proba", "decision_function"):
        lazy = getattr(clf, method)(Xd)
        assert isinstance(lazy, da.Array)
        np.testing.assert_allclose(lazy.compute(), getattr(clf, method)(X), rtol=1e-12)
    assert clf.score(Xd, da.from_array(y, chunks=70)) == pytest.approx(clf.score(X, y))


@pytest.mark.parametrize("loss", ["logistic", "softmax"])
def test_predict_proba_is_a_distribution_consistent_with_predict(loss):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(240, 2))
    y = np.digitize(X[:, 0], [-0.5, 0.5])                    # three classes
    clf = ok.DSGClassifier(loss=loss, **SMALL).fit(X, y)
    proba = clf.predict_proba(X)
    assert proba.shape == (240, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(clf.classes_[proba.argmax(axis=1)], clf.predict(X))
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(X)), proba, rtol=1e-12)


def test_hinge_has_no_predict_proba_and_one_vs_rest_outputs():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 2))
    y = np.digitize(X[:, 1], [0.0])
    clf = ok.DSGClassifier(loss="hinge", **SMALL).fit(X, np.where(y, "b", "a"))
    assert not hasattr(clf, "predict_proba")
    assert set(clf.predict(X)) <= {"a", "b"} and clf.decision_function(X).shape == (200,)


def test_partial_fit_epochs_equal_fit_epochs():
    X, y = _xor()
    params = dict(SMALL, max_iter=2, tol=None)
    full = ok.DSGClassifier(**params).fit(X, y)
    inc = ok.DSGClassifier(**params)
    inc.partial_fit(X, y, classes=[0, 1]).partial_fit(X, y)
    assert np.array_equal(full.coef_, inc.coef_) and inc.n_iter_ == full.n_iter_


def test_partial_fit_errors():
    X, y = _xor()
    clf = ok.DSGClassifier(**SMALL).partial_fit(X, y, classes=[0, 1, 2])
    with pytest.raises(ValidationError, match=r"classes=\[0, 1\] differs"):
        clf.partial_fit(X, y, classes=[0, 1])
    with pytest.raises(ValidationError, match="X has 2 features, but DSGClassifier is expecting 3"):
        clf.partial_fit(X[:, :2], y)


@pytest.mark.parametrize("params, match", [
    # every setting given: nothing sampled, the chunk's task finds it
    (dict(bandwidth=1.0, standardize=False, learning_rate="constant", eta0=0.1),
     r"\(nan\) in chunk 2, row 17, feature 1; remove[^(]*$"),
    # the defaults sample rows first (bandwidth, standardization, step size)
    ({}, r"chunk 2, row 17, feature 1 \(found while sampling rows for the bandwidth and the "
         r"step size\)"),
])
def test_invalid_values_in_a_lazy_chunk_name_the_chunk_and_row(params, match):
    X, y = _xor(n=300)
    X[217, 1] = np.nan
    with pytest.raises(InvalidDataError, match=match):
        ok.DSGClassifier(**dict(SMALL, shuffle=False, **params)).fit(
            da.from_array(X, chunks=(100, 3)), da.from_array(y, chunks=100))


def test_label_outside_declared_classes_in_a_chunk():
    X, y = _xor(n=200)
    y[150] = 7
    with pytest.raises(InvalidDataError, match=r"label 7 in chunk 1, row 50"):
        ok.DSGClassifier(**dict(SMALL, shuffle=False)).partial_fit(
            da.from_array(X, chunks=(100, 3)), da.from_array(y, chunks=100), classes=[0, 1])


@pytest.mark.parametrize("params, match", [
    (dict(n_features=100, block_size=64), r"n_features=100 is not a multiple of block_size=64"),
    (dict(loss="squared"), r"The 'loss' parameter of DSGClassifier must be a str among "
                           r"\{.*'hinge'.*\}\. Got 'squared' instead\."),
    (dict(kernel="laplace"), r"The 'kernel' parameter of DSGClassifier must be a str among "
                             r"\{'arccos', 'cauchy', .*'rbf', 'rbf_orthogonal', 'sum'\} or an instance "
                             r"of 'ooc_kernels.features.objects.Kernel'\. Got 'laplace' "
                             r"instead\."),
    (dict(kernel="arccos", kernel_params={"order": 3}),
     r"kernel_params=\{'order': 3\} is not valid for kernel='arccos': 'order' must be one "
     r"of \[0, 1, 2\]; got 3"),
    (dict(bandwidth=-1.0), r"The 'bandwidth' parameter of DSGClassifier must be a float in "
                           r"the range \[1e-30, 1e\+30\], a str among \{'ard', 'auto', 'median'\} or an "
                           r"array-like\. Got -1.0 instead\."),
    (dict(batch_size=0), r"The 'batch_size' parameter of DSGClassifier must be an int in the "
                         r"range \[1, inf\)\. Got 0 instead\."),
    (dict(learning_rate="adaptive"), r"The 'learning_rate' parameter.*Got 'adaptive' instead"),
    (dict(scheduler="gpu"), r"The 'scheduler' parameter of DSGClassifier must be None or "
                            r"'sync', 'threads'.*Got 'gpu' instead\."),
    (dict(shuffle="yes"), r"The 'shuffle' parameter of DSGClassifier must be an instance of "
                          r"'bool'.*Got 'yes' instead\."),
])
def test_bad_hyperparameters(params, match):
    """One message format for every hyperparameter (scikit-learn's), in the library's
    hierarchy, raised before any data is read and without contacting a cluster."""
    from ooc_kernels.exceptions import InvalidParameterError

    X, y = _xor(n=50)
    with pytest.raises(ValidationError, match=match) as info:
        ok.DSGClassifier(**dict(SMALL, **params)).fit(X, y)
    if "n_features" not in params:
        assert isinstance(info.value, InvalidParameterError)
        assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)


def test_validation_never_contacts_a_scheduler(monkeypatch):
    """A tcp:// address is checked by its form; only fit connects (and closes)."""
    import distributed

    def refuse(*args, **kwargs):
        raise AssertionError("validation tried to connect")

    monkeypatch.setattr(distributed.Client, "__init__", refuse)
    est = ok.DSGRegressor(scheduler="tcp://127.0.0.1:1")
    est._validate_params()
    from sklearn.base import clone

    clone(est)._validate_params()


def test_dataset_without_X_is_refused():
    ds = xr.Dataset({"features": (("s", "f"), np.zeros((4, 2)))})
    with pytest.raises(SchemaError, match="needs a 2-D variable 'X'"):
        ok.DSGRegressor(**SMALL).fit(ds)


def test_single_class_is_refused():
    X, _ = _xor(n=50)
    with pytest.raises(ValueError, match="only 1 class"):
        ok.DSGClassifier(**SMALL).fit(da.from_array(X, chunks=(25, 3)),
                                      da.from_array(np.ones(50, int), chunks=25))


def test_median_bandwidth_is_the_median_pairwise_distance():
    """Small data (< 2000 rows, <= 8 chunks): the sample is every row, so this is exact."""
    X, y = _xor(n=120)
    for c in (1.0, 0.5):
        clf = ok.DSGClassifier(bandwidth="median", median_multiplier=c, standardize=False,
                               chunk_size=40, **SMALL).fit(X, y)
        assert clf.bandwidth_ == pytest.approx(c * np.median(pdist(X)), rel=1e-12)


def test_constant_step_size_is_used():
    X = np.random.default_rng(4).normal(size=(30, 2))
    y = X[:, 0]
    reg = ok.DSGRegressor(bandwidth=1.0, alpha=0.0, n_features=64, block_size=1, batch_size=1,
                          max_iter=1, tol=None, shuffle=False, learning_rate="constant", eta0=0.3,
                          standardize=False, dtype="float64", random_state=0,
                          scheduler="sync").fit(X, y)
    from ooc_kernels.features.rbf import block_params

    # the first coefficient is -gamma * l'(0, y_1) * phi_1(x_1) with gamma = eta0, nu = 0
    W, b = block_params(reg.feature_seed_, 0, 2, 1, 1.0)
    phi = np.sqrt(2.0) * np.cos(X[0] @ W[:, 0] + b[0])
    assert reg.coef_[0, 0, 0] == pytest.approx(-0.3 * (0.0 - y[0]) * phi, rel=1e-12)


def test_feature_cache_budget_does_not_change_the_model():
    """Caching is a performance choice: budgets on the same full-phase path give the same
    bits; a budget too small for the blocks (the tiled full phase) gives the same
    model up to rounding (docs/algorithms/dsg_full_phase.md)."""
    X, y = _xor(n=200)
    cache = default_cache()
    before = cache.max_bytes
    try:
        default_cache().clear()
        set_cache_budget(0)                      # every block regenerated from its seed
        regenerated = ok.DSGClassifier(**SMALL).fit(X, y)
        set_cache_budget(1 * 2**20)              # all blocks cached (stacked full phase)
        small = ok.DSGClassifier(**SMALL).fit(X, y)
        set_cache_budget(64 * 2**20)
        cached = ok.DSGClassifier(**SMALL).fit(X, y)
        assert default_cache().hits > 0
    finally:
        set_cache_budget(before)
    assert np.array_equal(small.coef_, cached.coef_)
    np.testing.assert_array_equal(small.decision_function(X), cached.decision_function(X))
    assert regenerated._config.dtype == "float32"   # 200 rows: float32, its twin tolerance
    np.testing.assert_allclose(regenerated.coef_, cached.coef_, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(regenerated.decision_function(X), cached.decision_function(X),
                               rtol=1e-4, atol=1e-5)


def test_processes_scheduler_gives_the_same_model():
    X, y = _xor(n=120, dtype=np.float32)
    params = dict(SMALL, max_iter=1, tol=None, chunk_size=60, chunks_per_round=2)
    ref = ok.DSGClassifier(**params).fit(X, y)
    proc = ok.DSGClassifier(**dict(params, scheduler="processes")).fit(X, y)
    assert np.array_equal(ref.coef_, proc.coef_)


def test_on_invalid_skip_leaves_out_and_counts_invalid_rows():
    X, y = _xor(n=300)
    bad = [5, 117, 250]
    Xb = X.copy()
    Xb[5, 0], Xb[117, 2], Xb[250, 1] = np.nan, np.inf, -np.inf
    # alpha="auto" is 1 / (rows of the data), counted before any row is skipped: give it
    params = dict(SMALL, shuffle=False, bandwidth=1.0, alpha=1e-3)
    keep = np.setdiff1d(np.arange(300), bad)
    for make in (lambda A: A, lambda A: da.from_array(A, chunks=(100, 3))):
        skipped = ok.DSGClassifier(on_invalid="skip", **params).fit(make(Xb), y)
        # the 3 invalid rows once; the valid rows' visits over 3 epochs
        assert skipped.n_samples_skipped_ == 3 and skipped.n_samples_seen_ == 3 * 297
    # reference: the same fit on the valid rows only, chunked the same way
    chunks = tuple(100 - sum(1 for b in bad if lo <= b < lo + 100) for lo in (0, 100, 200))
    ref = ok.DSGClassifier(**params).fit(da.from_array(X[keep], chunks=(chunks, 3)),
                                         da.from_array(y[keep], chunks=(chunks,)))
    assert np.array_equal(skipped.coef_, ref.coef_)
    with pytest.raises(ValidationError, match=r"The 'on_invalid' parameter of DSGClassifier "
                                              r"must be a str among .*Got 'drop' instead"):
        ok.DSGClassifier(on_invalid="drop", **params).fit(X, y)


def test_on_invalid_skip_for_targets_of_a_regressor():
    X, _ = _xor(n=200)
    y = X[:, 0] - X[:, 1]
    y[[3, 150]] = np.nan
    reg = ok.DSGRegressor(on_invalid="skip", **dict(SMALL, bandwidth=1.0)).fit(
        da.from_array(X, chunks=(100, 3)), da.from_array(y, chunks=100))
    assert reg.n_samples_skipped_ == 2   # the rows, not their visits over the epochs
    assert np.isfinite(reg.predict(X)).all()


def test_lazy_predict_on_invalid_values():
    X, y = _xor(n=200)
    clf = ok.DSGClassifier(**SMALL).fit(X, y)
    Xb = X.copy()
    Xb[130, 1] = np.nan
    lazy = clf.predict(da.from_array(Xb, chunks=(50, 3)))
    with pytest.raises(InvalidDataError, match=r"chunk 2, row 30"):
        lazy.compute()


def test_two_class_softmax_decision_is_the_log_odds():
    """For two classes decision_function has shape (n,) and is
    log(P(classes_[1]) / P(classes_[0])); predict agrees with its sign."""
    X, y = _xor(200)
    labels = np.where(y == 1, "b", "a")
    clf = ok.DSGClassifier(loss="softmax", **SMALL).fit(X, labels)
    dec = clf.decision_function(X)
    proba = clf.predict_proba(X)
    assert dec.shape == (200,) and proba.shape == (200, 2)
    np.testing.assert_allclose(dec, np.log(proba[:, 1] / proba[:, 0]), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(clf.predict(X), np.where(dec > 0, "b", "a"))
    lazy = clf.decision_function(da.from_array(X, chunks=(50, 3)))
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(scheduler="sync"), dec, rtol=1e-6)


def test_in_memory_prediction_reads_the_callers_array_without_a_copy(monkeypatch):
    """Prediction of a NumPy input slices the caller's array, never a full copy through a
    Dask array and np.asarray."""
    import ooc_kernels.families.dsg.estimators as base

    X, y = _xor(300)
    clf = ok.DSGClassifier(chunk_size=70, **SMALL).fit(X, y)
    seen = []
    original = base.predict_chunk

    def spy(config, state, chunk):
        seen.append((np.shares_memory(chunk, X), len(chunk)))
        return original(config, state, chunk)

    monkeypatch.setattr(base, "predict_chunk", spy)
    clf.predict(X)
    assert seen == [(True, 70)] * 4 + [(True, 20)]


@pytest.mark.slow
def test_clone_and_grid_search_with_a_distributed_client():
    """clone() must not deep-copy the scheduler: a distributed.Client cannot be copied
    (TypeError: cannot pickle '_asyncio.Task'); clones share the Client."""
    distributed = pytest.importorskip("distributed")
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV, cross_val_score

    X, y = _xor(240)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        est = ok.DSGClassifier(**dict(SMALL, scheduler=client))
        twin = clone(est)
        assert twin.scheduler is client and twin is not est
        assert twin.get_params()["n_features"] == 512
        search = GridSearchCV(est, {"alpha": [1e-5, 1e-3]}, cv=2).fit(X, y)
        assert search.best_estimator_.scheduler is client
        scores = cross_val_score(est, X, y, cv=2)
        direct = [ok.DSGClassifier(**SMALL).fit(X[tr], y[tr]).score(X[te], y[te])
                  for tr, te in [(np.arange(120, 240), np.arange(120)),
                                 (np.arange(120), np.arange(120, 240))]]
    np.testing.assert_allclose(scores, direct)   # same models as with the sync scheduler
