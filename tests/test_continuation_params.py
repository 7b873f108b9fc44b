"""A continuation (``warm_start``, ``partial_fit``) and a save describe the model that was
fitted: a hyperparameter changed with ``set_params`` since then (other than how long,
where and how the fit runs) is refused with the fitted and the new value, instead of being
ignored by the continuation or saved into a file that cannot be loaded."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification

import ooc_kernels as ok
from ooc_kernels.exceptions import ValidationError

X, Y = make_classification(300, 5, random_state=0)
FAST = dict(max_iter=2, tol=None, random_state=0, n_features=256, block_size=64,
            progress=False, scheduler="sync")


@pytest.mark.parametrize("change", [dict(alpha=10.0), dict(loss="hinge"),
                                    dict(kernel="laplacian"), dict(n_features=512),
                                    dict(batch_size=32)],
                         ids=lambda c: next(iter(c)))
def test_a_changed_hyperparameter_is_refused_by_a_continuation_and_a_save(tmp_path, change):
    est = ok.DSGClassifier(warm_start=True, **FAST).fit(X, Y)
    before = est.decision_function(X)
    fitted = {k: est.get_params()[k] for k in change}
    est.set_params(**change)
    name, value = next(iter(change.items()))
    message = (rf"DSGClassifier was fitted with {name}={fitted[name]!r}, and its parameters "
               rf"now say {name}={value!r}; ")
    with pytest.raises(ValidationError, match=message + r"a warm_start fit continues"):
        est.fit(X, Y)
    with pytest.raises(ValidationError, match=message + r"partial_fit continues .*fit\(\) "
                                                        r"starts a new model"):
        est.partial_fit(X, Y)
    with pytest.raises(ValidationError, match=message + r"the saved parameters would "
                                                        r"describe another model"):
        est.save(tmp_path / "m.zarr")
    assert not (tmp_path / "m.zarr").exists()
    assert np.array_equal(est.decision_function(X), before)  # the model is untouched
    est.set_params(**fitted, max_iter=3)  # set back, and how long to run: continues
    est.fit(X, Y)
    est.save(tmp_path / "m.zarr")
    assert np.array_equal(ok.load(tmp_path / "m.zarr").decision_function(X),
                          est.decision_function(X))


def test_a_loaded_model_keeps_the_parameters_it_was_fitted_with(tmp_path):
    ok.DSGRegressor(warm_start=True, **FAST).fit(X, X[:, 0]).save(tmp_path / "m.zarr")
    loaded = ok.load(tmp_path / "m.zarr")
    loaded.set_params(alpha=1.0)
    with pytest.raises(ValidationError, match=r"fitted with alpha='auto'"):
        loaded.fit(X, X[:, 0])
    loaded.set_params(alpha="auto", max_iter=1, n_jobs=2, chunk_size=100)  # run settings
    assert loaded.fit(X, X[:, 0]).n_iter_ == 3


def test_a_new_fit_takes_any_hyperparameter():
    est = ok.DSGClassifier(**FAST).fit(X, Y)
    est.set_params(alpha=10.0, kernel="laplacian").fit(X, Y)
    ref = ok.DSGClassifier(**dict(FAST, alpha=10.0, kernel="laplacian")).fit(X, Y)
    assert np.array_equal(est.decision_function(X), ref.decision_function(X))


def test_an_online_stream_refuses_a_changed_basis():
    est = ok.OnlineKernelRidge(random_state=0).partial_fit(X[:100], X[:100, 0])
    est.set_params(alpha=2.0)
    with pytest.raises(ValidationError, match=r"OnlineKernelRidge was fitted with alpha="):
        est.partial_fit(X[100:], X[100:, 0])


def test_dsgs_update_mode_switches_in_a_continuation_but_is_refused_unfitted_by_a_save(
        tmp_path):
    """DSG applies a changed ``update`` from a continuation's next step (a warm start may
    switch to reusing old random features); saved unfitted, it would not describe the
    model."""
    est = ok.DSGRegressor(warm_start=True, **FAST).fit(X, X[:, 0])
    est.set_params(update="check")
    with pytest.raises(ValidationError, match=r"fitted with update='new', and its parameters "
                                              r"now say update='check'; the saved"):
        est.save(tmp_path / "m.zarr")
    est.fit(X, X[:, 0])                                   # continues in the new mode
    assert est._config.update == "check"
    est.save(tmp_path / "m.zarr")
    assert ok.load(tmp_path / "m.zarr")._config.update == "check"
    est.set_params(update="uniform").partial_fit(X, X[:, 0])
    assert est._config.update == "uniform"


def test_projected_kernel_ridge_solves_a_continuation_with_a_new_alpha(tmp_path):
    """Its statistics do not depend on ``alpha``: ``partial_fit`` after ``set_params(alpha=)``
    gives the model of a stream fitted with that alpha throughout."""
    params = dict(basis="nystrom-fixed", n_components=32, chunks_per_round=1,
                  random_state=0, progress=False, scheduler="sync")
    est = ok.ProjectedKernelRidge(alpha=1.0, **params).partial_fit(X[:150], X[:150, 0])
    est.set_params(alpha=3.0).partial_fit(X[150:], X[150:, 0])
    ref = ok.ProjectedKernelRidge(**dict(params, alpha=3.0))
    ref.partial_fit(X[:150], X[:150, 0]).partial_fit(X[150:], X[150:, 0])
    np.testing.assert_allclose(est.predict(X), ref.predict(X), rtol=1e-10, atol=1e-12)
    est.set_params(n_components=64)
    with pytest.raises(ValidationError, match=r"fitted with n_components=32"):
        est.partial_fit(X[:10], X[:10, 0])


def test_a_continuation_on_new_labels_says_how_to_learn_them():
    """A warm_start fit (and a later partial_fit) keeps the classes of the first fit;
    scikit-learn's SGDClassifier refuses a new label to a continuation too (the reference
    below).  The refusal names that rule and the fix, fit again with warm_start=False."""
    from sklearn.linear_model import SGDClassifier

    with pytest.raises(ValueError, match="classes should include all valid labels"):
        SGDClassifier().partial_fit(X, Y, classes=[0, 1]).partial_fit(X, Y + 1)
    est = ok.DSGClassifier(warm_start=True, **FAST).fit(X, Y)
    with pytest.raises(ValidationError, match=r"label 2 .* not one of the classes \[0, 1\]; "
                                              r".*keeps the classes of the first fit: to "
                                              r"learn new ones, fit again with "
                                              r"warm_start=False"):
        est.fit(X, Y + 1)
    assert ok.DSGClassifier(**FAST).fit(X, Y + 1).classes_.tolist() == [1, 2]
