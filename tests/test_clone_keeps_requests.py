"""``clone`` keeps what scikit-learn's own ``clone`` keeps: the metadata requests.

With ``sklearn.set_config(enable_metadata_routing=True)``, ``est.set_fit_request(
sample_weight=True)`` is how a user asks meta-estimators (``Pipeline``, ``GridSearchCV``,
``cross_validate``) to route ``sample_weight`` to ``est.fit``.  Those meta-estimators work
on clones, so a clone that forgot the request made every such call fail with
scikit-learn's ``UnsetMetadataPassedError``.
"""

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

import ooc_kernels as ok

#: Every registered estimator whose ``fit`` takes ``sample_weight``, with small settings.
WEIGHTED = {
    "DSGClassifier": dict(n_features=128, block_size=64, batch_size=16, max_iter=2,
                          tol=None, random_state=0, scheduler="sync"),
    "DSGRegressor": dict(n_features=128, block_size=64, batch_size=16, max_iter=2,
                         tol=None, random_state=0, scheduler="sync"),
    "DSGOneClassSVM": dict(max_iter=2, tol=None, random_state=0, scheduler="sync"),
    "DSPDCClassifier": dict(max_iter=3, random_state=0, scheduler="sync"),
    "DSPDCRegressor": dict(max_iter=3, random_state=0, scheduler="sync"),
    "ProjectedKernelRidge": dict(scheduler="sync"),
}


@pytest.fixture
def routing():
    sklearn.set_config(enable_metadata_routing=True)
    yield
    sklearn.set_config(enable_metadata_routing=False)


def _data(name):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    if "Classifier" in name:
        return X, (X[:, 0] + X[:, 1] > 0).astype(np.int64)
    return X, X[:, 0] - 2.0 * X[:, 2]


@pytest.mark.parametrize("name", sorted(WEIGHTED))
def test_a_clone_keeps_the_metadata_requests(name, routing):
    est = getattr(ok, name)(**WEIGHTED[name]).set_fit_request(sample_weight=True)
    if hasattr(est, "set_score_request"):
        est = est.set_score_request(sample_weight=False)
    twin = clone(est)
    assert str(twin.get_metadata_routing()) == str(est.get_metadata_routing())
    assert twin.get_metadata_routing().fit.requests["sample_weight"] is True
    assert twin.scheduler == est.scheduler


@pytest.mark.parametrize("name", ["DSGRegressor", "DSPDCClassifier"])
def test_sample_weight_is_routed_through_a_pipeline_in_a_grid_search(name, routing):
    """The refitted best model of a search whose sample weights are routed through a
    Pipeline is the model of a direct weighted fit of the same pipeline."""
    X, y = _data(name)
    sw = np.random.default_rng(1).uniform(0.2, 3.0, len(y))
    est = getattr(ok, name)(**WEIGHTED[name]).set_fit_request(sample_weight=True)
    est = est.set_score_request(sample_weight=True)
    pipe = Pipeline([("scale", StandardScaler().set_fit_request(sample_weight=True)),
                     ("est", est)])
    search = GridSearchCV(pipe, {"est__max_iter": [2, 3]}, cv=KFold(2)).fit(
        X, y, sample_weight=sw)
    best = search.best_params_["est__max_iter"]
    sklearn.set_config(enable_metadata_routing=False)
    direct = Pipeline([("scale", StandardScaler()),
                       ("est", getattr(ok, name)(**dict(WEIGHTED[name], max_iter=best)))])
    direct.fit(X, y, scale__sample_weight=sw, est__sample_weight=sw)
    np.testing.assert_array_equal(search.predict(X), direct.predict(X))
