"""The contract every chunk algorithm and every estimator of the library must pass.

One suite, parametrized over every registered solver (:data:`ooc_kernels.families.SOLVERS`)
and estimator (:data:`ooc_kernels.estimators.ESTIMATORS`), as xarray's backend tests and
zarr-python's ``StoreTests`` run one suite against every backend: a new family gets all of
it by registering.

Algorithm contract (:func:`algorithm_checks`)
    One pass with ``K = 1`` equals the family's sequential reference; ``combine`` is
    associative and a task without work leaves a round unchanged; states and deltas
    survive pickling; results are bit-identical on the synchronous, threaded and
    distributed schedulers.
Estimator contract (:func:`estimator_checks`)
    Bit-identical on every scheduler; an interrupted fit resumed from its checkpoint
    equals the uninterrupted one; save and load give identical predictions; ``fit`` equals
    the loop of ``partial_fit`` over the epochs; lazy and in-memory predictions agree.
    scikit-learn's ``check_estimator`` runs on the *default-constructed* estimator (see
    ``tests/test_sklearn_checks.py``).

Examples
--------
>>> from ooc_kernels.testing import algorithm_checks, estimator_checks
>>> sorted({name for name, _ in algorithm_checks()})
['dsg', 'dspdc']
>>> [check.__name__ for name, check in estimator_checks() if name == "DSGRegressor"][:2]
['check_estimator_schedulers', 'check_estimator_resume']
"""

from ooc_kernels.testing._algorithms import (
    algorithm_checks,
    check_algorithm_pickles,
    check_algorithm_reference,
    check_algorithm_schedulers,
    check_combine,
)
from ooc_kernels.testing._estimators import (
    check_estimator_lazy_predictions,
    check_estimator_partial_fit_loop,
    check_estimator_resume,
    check_estimator_save_load,
    check_estimator_schedulers,
    estimator_checks,
)

__all__ = [
    "algorithm_checks",
    "check_algorithm_pickles",
    "check_algorithm_reference",
    "check_algorithm_schedulers",
    "check_combine",
    "check_estimator_lazy_predictions",
    "check_estimator_partial_fit_loop",
    "check_estimator_resume",
    "check_estimator_save_load",
    "check_estimator_schedulers",
    "estimator_checks",
]
