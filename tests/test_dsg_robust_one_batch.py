"""The robust losses on a data set of one batch of rows take several steps an epoch
(``robust_batch_size``): with every row in one batch each epoch was one full subgradient
step and epsilon-insensitive stopped after a few of them, far below scikit-learn's ``SVR``
(the same loss, exact) on the same rows."""

import numpy as np
import pytest
from sklearn.compose import TransformedTargetRegressor
from sklearn.metrics import r2_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVR

import ooc_kernels as ok


def _problem(seed):
    """150 training rows (one batch of the default 256), 1,000 held out."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(1150, 5))
    y = X @ np.array([1.0, 0.5, -0.5, 0.25, 0.0]) + np.sin(2 * X[:, 0]) / 2 \
        + 0.1 * rng.normal(size=1150)
    return X[:150], y[:150], X[150:], y[150:]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("loss", ["epsilon_insensitive", "quantile", "huber"])
def test_robust_losses_on_one_batch_come_near_an_exact_svr(loss, seed):
    X, y, Xt, yt = _problem(seed)
    svr = TransformedTargetRegressor(make_pipeline(StandardScaler(), SVR()),
                                     transformer=StandardScaler()).fit(X, y)
    model = ok.DSGRegressor(loss=loss, random_state=0, progress=False,
                            scheduler="sync").fit(X, y)
    assert r2_score(yt, model.predict(Xt)) > r2_score(yt, svr.predict(Xt)) - 0.02
