"""The contract every chunk algorithm and every estimator of the library must pass.

One suite, parametrized over every registered solver (:data:`ooc_kernels.families.SOLVERS`)
and estimator (:data:`ooc_kernels.estimators.ESTIMATORS`), as xarray's backend tests and
zarr-python's ``StoreTests`` run one suite against every backend: a new family gets all of
it by registering.

Every check reads what the family declares: an estimator class's ``capabilities``
(:class:`~ooc_kernels._capabilities.Capabilities`: parallel rounds or sequential
streaming, supervised, unsupervised or two-sample inputs, its task, ``partial_fit``, a
stopping tolerance, probabilistic outputs, a finishing step, checkpoints).  A check that the
declaration rules out raises :class:`NotApplicable` with the reason (``tests/test_contract.py``
reports it as skipped); :func:`check_estimator_capabilities` checks that the declaration is
true.

Algorithm contract (:func:`algorithm_checks`)
    One pass with ``K = 1`` equals the family's sequential reference; ``combine`` is
    associative and a task without work leaves a round unchanged; states and deltas
    survive pickling; results are bit-identical on the synchronous, threaded and
    distributed schedulers (``K = 2`` with shuffling for parallel rounds, ``K = 1`` in
    storage order for a sequential family).
Estimator contract (:func:`estimator_checks`)
    The declaration is true; bit-identical models on every scheduler (``K = 1`` and
    ``K = 2``, or ``K = 1`` for a sequential family, whose tasks must receive the rows in
    storage order); an interrupted fit resumed from its checkpoint equals the
    uninterrupted one, after the rounds per epoch that the chunking and the execution
    give; a finishing step runs once, also in a resumed fit; save and load give identical
    outputs; ``fit`` equals the loop of ``partial_fit`` over the epochs; lazy and
    in-memory outputs agree; probabilities sum to one, standard deviations are
    non-negative; a model fitted on xarray features with coordinate labels refuses them in
    another order (every output, ``score``, ``partial_fit``, a ``warm_start`` fit, after
    save and load too) and reads unlabelled features by position.  The data (:func:`problem`) follows the declared inputs and task:
    labelled classes, real targets, unlabelled rows or two samples.
    scikit-learn's ``check_estimator`` runs on the *default-constructed* estimator (see
    ``tests/test_sklearn_checks.py``).

Examples
--------
>>> from ooc_kernels.testing import algorithm_checks, estimator_checks
>>> sorted({name for name, _ in algorithm_checks()})  # doctest: +NORMALIZE_WHITESPACE
['dsg', 'dsg_check', 'dsg_density_ratio', 'dsg_one_class', 'dsg_uniform', 'dspdc', 'pkawv-batch',
 'pkawv-online']
>>> [check.__name__ for name, check in estimator_checks() if name == "DSGRegressor"][:3]
['check_estimator_capabilities', 'check_estimator_schedulers', 'check_estimator_storage_order']
"""

from ooc_kernels.testing._algorithms import (
    algorithm_checks,
    check_algorithm_pickles,
    check_algorithm_reference,
    check_algorithm_schedulers,
    check_combine,
)
from ooc_kernels.testing._coords import check_estimator_feature_coords
from ooc_kernels.testing._declared import check_estimator_capabilities
from ooc_kernels.testing._estimators import (
    check_estimator_finishing,
    check_estimator_lazy_predictions,
    check_estimator_partial_fit_loop,
    check_estimator_probabilistic,
    check_estimator_resume,
    check_estimator_save_load,
    check_estimator_schedulers,
    check_estimator_storage_order,
    estimator_checks,
)
from ooc_kernels.testing._problems import (
    NotApplicable,
    capabilities_of,
    problem,
    rounds_per_epoch,
)

__all__ = [
    "NotApplicable",
    "algorithm_checks",
    "capabilities_of",
    "check_algorithm_pickles",
    "check_algorithm_reference",
    "check_algorithm_schedulers",
    "check_combine",
    "check_estimator_capabilities",
    "check_estimator_feature_coords",
    "check_estimator_finishing",
    "check_estimator_lazy_predictions",
    "check_estimator_partial_fit_loop",
    "check_estimator_probabilistic",
    "check_estimator_resume",
    "check_estimator_save_load",
    "check_estimator_schedulers",
    "check_estimator_storage_order",
    "estimator_checks",
    "problem",
    "rounds_per_epoch",
]
