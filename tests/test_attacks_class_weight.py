"""Attack on ``class_weight`` values: a weight that is NaN, infinite or negative is refused
by every classifier with an error that names ``class_weight`` and the value (not the
``sample_weight`` the user did not pass), before any training."""

from __future__ import annotations

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import ValidationError

rng = np.random.default_rng(0)
X = rng.normal(size=(60, 3))
Y = (X[:, 0] > 0).astype(int)
MAKERS = {
    "DSGClassifier": lambda cw: ok.DSGClassifier(n_features=256, max_iter=1, tol=None,
                                                 class_weight=cw, progress=False,
                                                 random_state=0),
    "DSPDCClassifier": lambda cw: ok.DSPDCClassifier(max_iter=1, tol=None, class_weight=cw,
                                                     progress=False, random_state=0),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("bad", [np.nan, np.inf, -1.0])
def test_a_class_weight_that_is_not_a_finite_number_at_least_0_is_refused(name, bad):
    with pytest.raises(ValidationError,
                       match=rf"class_weight \{{0: {bad!r}, 1: 1.0\}} holds {bad!r}"):
        MAKERS[name]({0: bad, 1: 1.0}).fit(X, Y)


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_finite_class_weights_are_the_rows_weighted(name):
    """Weights 3 and 1: the model of the rows of class 0 weighted 3 by ``sample_weight``."""
    by_class = MAKERS[name]({0: 3.0, 1: 1.0}).fit(X, Y)
    by_row = MAKERS[name](None).fit(X, Y, sample_weight=np.where(Y == 0, 3.0, 1.0))
    np.testing.assert_allclose(by_class.decision_function(X), by_row.decision_function(X),
                               rtol=1e-12, atol=1e-12)
