"""The contract suite of :mod:`ooc_kernels.testing`, run against every registered solver and
estimator: a new family is checked by registering, nothing here names it."""

import pytest

from ooc_kernels.estimators import ESTIMATORS
from ooc_kernels.families import SOLVERS
from ooc_kernels.testing import algorithm_checks, estimator_checks

_DISTRIBUTED = {"check_algorithm_schedulers", "check_estimator_schedulers"}


@pytest.mark.parametrize("name, check", list(algorithm_checks()),
                         ids=lambda v: v if isinstance(v, str) else v.__name__)
def test_algorithm_contract(name, check, request):
    client = request.getfixturevalue("dask_client") if check.__name__ in _DISTRIBUTED \
        else None
    check(SOLVERS.get(name), client=client)


@pytest.mark.parametrize("name, check", list(estimator_checks()),
                         ids=lambda v: v if isinstance(v, str) else v.__name__)
def test_estimator_contract(name, check, request):
    client = request.getfixturevalue("dask_client") if check.__name__ in _DISTRIBUTED \
        else None
    check(ESTIMATORS.get(name), client=client)


# --------------------------------------------------------------------- the checks can fail
def _mutant(**changes):
    """The DSG solver spec with some of its parts broken."""
    import dataclasses

    return dataclasses.replace(SOLVERS.get("dsg"), **changes)


def test_a_wrong_reference_or_a_lossy_combine_is_caught():
    import dataclasses

    from ooc_kernels.families.dsg.solver import DSGAlgorithm
    from ooc_kernels.testing import check_algorithm_reference, check_combine

    spec = SOLVERS.get("dsg")

    def off_by_a_step(case):
        state = spec.reference(case)
        return dataclasses.replace(state, n_iter=state.n_iter + 1)

    with pytest.raises(AssertionError, match="state array 'n_iter'"):
        check_algorithm_reference(_mutant(reference=off_by_a_step))

    class Lossy(DSGAlgorithm):
        def combine(self, a, b):                     # forgets b's new blocks
            both, k = super().combine(a, b), len(a.block_ids)
            return dataclasses.replace(
                both, coefs=both.coefs[:k], block_ids=both.block_ids[:k],
                avg_coefs=None if both.avg_coefs is None else both.avg_coefs[:k])

    def lossy_case(seed=0, shuffle=False):
        case = spec.make_case(seed, shuffle=shuffle)
        return dataclasses.replace(case, algorithm=Lossy(case.algorithm.config))

    with pytest.raises(AssertionError, match="state array 'coef'"):
        check_combine(_mutant(make_case=lossy_case))


def test_an_estimator_whose_saved_model_differs_is_caught():
    from ooc_kernels.families.dsg.estimators import DSGRegressor
    from ooc_kernels.testing import check_estimator_partial_fit_loop, check_estimator_save_load

    class Forgetful(DSGRegressor):
        def _restore_fitted(self, arrays, meta, where):
            super()._restore_fitted({"coef": arrays["coef"] * 0.5}, meta, where)

        def partial_fit(self, X, y=None, classes=None):   # one pass too many
            super().partial_fit(X, y)
            return super().partial_fit(X, y)

    from ooc_kernels.estimators._registry import ESTIMATORS as registry

    registry.register("Forgetful", Forgetful)   # ok.load finds classes by registered name
    try:
        with pytest.raises(AssertionError, match="loaded: array 'coef' differs"):
            check_estimator_save_load(Forgetful)
        with pytest.raises(AssertionError, match="partial_fit loop: array 'coef' differs"):
            check_estimator_partial_fit_loop(Forgetful)
    finally:
        registry._entries.pop("Forgetful")


def test_an_estimator_that_starts_over_instead_of_resuming_is_caught():
    from ooc_kernels.families.dsg.estimators import DSGRegressor
    from ooc_kernels.testing import check_estimator_resume

    class StartsOver(DSGRegressor):               # ignores resume: refits from scratch
        def fit(self, X, y=None, sample_weight=None, *, checkpoint=None, checkpoint_every=1,
                resume=False):
            return super().fit(X, y, sample_weight, checkpoint=checkpoint,
                               checkpoint_every=checkpoint_every)

    with pytest.raises(AssertionError, match=r"StartsOver resumed in epoch \d+, round \d+: "
                                             r"ran \d+ rounds, but only \d+ of"):
        check_estimator_resume(StartsOver)
