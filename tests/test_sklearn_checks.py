"""scikit-learn's own estimator checks on every registered estimator, default-constructed.

The estimators are checked exactly as a user gets them (``Estimator()``): the checks' small
in-memory problems (20 to 200 rows) are where defaults tuned only for large data fail, so
nothing here is set to help them.  Classifiers are checked once more with every other loss
(``loss`` is the one parameter that changes what they compute).  The in-memory
``MultiTaskLMNN`` (not registered) is checked too, with the settings its comment below
gives.  No check is skipped or expected to fail.
"""

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from ooc_kernels.estimators._registry import ESTIMATORS
from ooc_kernels.estimators.mtlmnn import MultiTaskLMNN


def _estimators():
    out = []
    for name in ESTIMATORS.names():
        cls = ESTIMATORS.get(name)
        out.append(cls())
        losses = getattr(cls, "_parameter_constraints", {}).get("loss", [])
        for constraint in losses:
            options = getattr(constraint, "options", ())
            default = cls().get_params()["loss"]
            out.extend(cls(loss=loss) for loss in sorted(options) if loss != default)
    return out


# The checks fit tiny problems (often ill-conditioned at the default alpha) with the
# defaults: an iterative solver that stops at max_iter there says so with a
# ConvergenceWarning, as scikit-learn's own solvers do, and scikit-learn's own test suite
# ignores that warning in these checks too.  Any other warning still fails.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_checks(_estimators())
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


# MultiTaskLMNN (in memory, not registered): checked with every triplet and both metrics in
# each iteration (m, q at their maximum), which solves the same problem to the same gap in
# fewer (Python-level) iterations than the default sampling, so that the checks' fits stay
# fast; without ``task`` every row is one task.
@parametrize_with_checks([MultiTaskLMNN(m=10**6, q=2, tol=1e-4, random_state=0)])
def test_sklearn_compatible_multitask_lmnn(estimator, check):
    check(estimator)
