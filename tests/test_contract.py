"""The contract suite of :mod:`ooc_kernels.testing`, run against every registered solver and
estimator: a new family is checked by registering, nothing here names it.  A check that the
family's declared capabilities rule out is reported as skipped, with the reason.  That every
check can fail is shown in tests/test_contract_mutants.py."""

import pytest
from _example_families import FAMILIES, LMS_SOLVER, registered, registered_solvers

from ooc_kernels.estimators import ESTIMATORS
from ooc_kernels.families import SOLVERS
from ooc_kernels.testing import NotApplicable, algorithm_checks, estimator_checks

_DISTRIBUTED = {"check_algorithm_schedulers", "check_estimator_schedulers"}


def _run(check, registry, name, request):
    """Run ``check`` on the entry ``name`` of ``registry`` (with the test cluster for the
    scheduler checks); a check the entry's declarations rule out is a skip, with the reason."""
    client = request.getfixturevalue("dask_client") if check.__name__ in _DISTRIBUTED \
        else None
    try:
        check(registry.get(name), client=client)
    except NotApplicable as reason:
        pytest.skip(str(reason))


@pytest.mark.parametrize("name, check", list(algorithm_checks()),
                         ids=lambda v: v if isinstance(v, str) else v.__name__)
def test_algorithm_contract(name, check, request):
    _run(check, SOLVERS, name, request)


@pytest.mark.parametrize("name, check", list(estimator_checks()),
                         ids=lambda v: v if isinstance(v, str) else v.__name__)
def test_estimator_contract(name, check, request):
    _run(check, ESTIMATORS, name, request)


# the example families of the engine's modes (sequential, finishing, y-less, two-sample),
# registered only while their checks run
with registered():
    _EXAMPLES = [(name, check) for name, check in estimator_checks()
                 if name in {cls.__name__ for cls in FAMILIES}]


@pytest.mark.parametrize("name, check", _EXAMPLES,
                         ids=lambda v: v if isinstance(v, str) else v.__name__)
def test_example_family_contract(name, check, request):
    with registered():
        _run(check, ESTIMATORS, name, request)


with registered_solvers():
    _EXAMPLE_SOLVERS = [(name, check) for name, check in algorithm_checks()
                        if name == LMS_SOLVER.name]


@pytest.mark.parametrize("name, check", _EXAMPLE_SOLVERS,
                         ids=lambda v: v if isinstance(v, str) else v.__name__)
def test_example_solver_contract(name, check, request):
    with registered_solvers():
        _run(check, SOLVERS, name, request)


@pytest.mark.parametrize("name", ESTIMATORS.names())
def test_every_estimators_chunk_algorithm_is_a_registered_solver(name):
    """The algorithm half of the contract reaches every estimator: the chunk algorithm a
    fitted estimator runs is the algorithm of a registered solver."""
    from ooc_kernels.testing import problem

    cls = ESTIMATORS.get(name)
    params = cls().get_params()
    # the GP's DSG mean: its default exact mean runs no epoch (max_iter, tol: no effect)
    est = cls(**{k: v for k, v in dict(max_iter=1, tol=None, scheduler="sync",
                                       progress=False, chunk_size=40, mean="dsg",
                                       noise=0.1).items() if k in params})
    est.fit(*problem(cls))
    algorithms = {SOLVERS.get(solver).algorithm for solver in SOLVERS.names()}
    assert type(est._make_algorithm()) in algorithms, (
        f"{name} runs {type(est._make_algorithm()).__name__}, which no SolverSpec registers: "
        "the algorithm contract never checks it")
