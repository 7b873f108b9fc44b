"""The algorithm half of the contract suite (see :mod:`ooc_kernels.testing`).

Every check takes a registered :class:`~ooc_kernels.families.SolverSpec` (and, for the
scheduler check, an optional ``distributed.Client``) and raises ``AssertionError`` when the
family breaks the contract.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator

import dask.array as da
import numpy as np

from ooc_kernels.parallel.chunked import ChunkedData
from ooc_kernels.parallel.engine import RoundInfo, run_rounds
from ooc_kernels.families import SOLVERS, SolverSpec
from ooc_kernels.testing._problems import NotApplicable

__all__ = ["algorithm_checks", "check_algorithm_reference", "check_combine",
           "check_algorithm_pickles", "check_algorithm_schedulers", "case_data"]


def case_data(case) -> ChunkedData:
    """The chunks of an :class:`~ooc_kernels.families.AlgorithmCase` as engine input."""
    variables = {}
    for name in case.chunks[0]:
        parts = [np.asarray(c[name]) for c in case.chunks]
        variables[name] = da.concatenate([da.from_array(p, chunks=p.shape) for p in parts])
    return ChunkedData(variables, dims=case.dims, whole=dict(case.whole))


def _run(case, *, k: int, scheduler, shuffle: bool = False, n_epochs: int = 1,
         execution: str = "rounds"):
    return run_rounds(case.algorithm, case.state, case_data(case), n_epochs=n_epochs,
                      execution=execution, chunks_per_round=k, seed=case.seed,
                      shuffle=shuffle, shuffle_chunks=1, scheduler=scheduler).state


def _assert_states(spec: SolverSpec, a, b, *, exact: bool, what: str, rtol=1e-10) -> None:
    left, right = spec.state_arrays(a), spec.state_arrays(b)
    assert sorted(left) == sorted(right), f"{spec.name}: {what}: different state arrays"
    for name in left:
        x, y = np.asarray(left[name]), np.asarray(right[name])
        if exact:
            assert x.shape == y.shape and np.array_equal(x, y), \
                f"{spec.name}: {what}: state array {name!r} differs"
        else:
            np.testing.assert_allclose(x, y, rtol=rtol, atol=rtol * max(1.0, np.abs(y).max(
                initial=0.0)), err_msg=f"{spec.name}: {what}: state array {name!r}")


def check_algorithm_reference(spec: SolverSpec, client=None) -> None:
    """One pass through the engine with ``K = 1`` and no shuffling (in the family's declared
    execution) equals the family's sequential reference over the same chunks."""
    if spec.reference is None:
        raise AssertionError(f"solver {spec.name!r} registers no sequential reference")
    case = spec.make_case(seed=0, shuffle=False)
    engine = _run(case, k=1, scheduler="sync", execution=spec.execution)
    _assert_states(spec, engine, spec.reference(case), exact=False,
                   what="K = 1 against the sequential reference")


def _deltas(case, n: int):
    alg = case.algorithm
    groups = tuple((i,) for i in range(n))
    info = RoundInfo(epoch=0, round=0, groups=groups,
                     sizes=tuple((len(next(iter(case.chunks[i].values()))),)
                                 for i in range(n)), seed=case.seed)
    tasks = alg.make_tasks(case.state, info)
    return alg, info, [alg.chunk_step(case.state, {**case.chunks[i], **case.whole}, tasks[i])
                       for i in range(n)]


def check_combine(spec: SolverSpec, client=None) -> None:
    """``combine`` is associative, and a task that saw no rows is its identity (for
    families that run parallel rounds; a sequential family never combines)."""
    if spec.execution == "sequential":
        raise NotApplicable(f"solver {spec.name!r} runs one chunk a round in storage order: "
                            "the engine never combines its deltas")
    case = spec.make_case(seed=1, shuffle=True)
    alg, info, (a, b, c) = _deltas(case, 3)
    left = alg.apply(case.state, alg.combine(alg.combine(a, b), c), info)
    right = alg.apply(case.state, alg.combine(a, alg.combine(b, c)), info)
    _assert_states(spec, left, right, exact=False, what="(a + b) + c against a + (b + c)",
                   rtol=1e-12)
    empty = {name: np.asarray(v)[:0] for name, v in case.chunks[0].items()}
    tasks = alg.make_tasks(case.state, info)
    nothing = alg.chunk_step(case.state, {**empty, **case.whole}, tasks[0])
    alone = alg.apply(case.state, a, info)
    for merged in (alg.combine(a, nothing), alg.combine(nothing, a)):
        _assert_states(spec, alg.apply(case.state, merged, info), alone, exact=True,
                       what="combining with a task that saw no rows")


def _round_trip(spec: SolverSpec, obj, what: str):
    """``obj`` pickled and unpickled; a failure is the family's, named."""
    try:
        return pickle.loads(pickle.dumps(obj))
    except (pickle.PicklingError, AttributeError, TypeError) as err:
        raise AssertionError(f"{spec.name}: {what} does not pickle ({err}); the objects "
                             "that travel to workers hold data, not functions or "
                             "handles") from err


def check_algorithm_pickles(spec: SolverSpec, client=None) -> None:
    """States, tasks, deltas and the algorithm survive pickling (they travel between
    processes)."""
    case = spec.make_case(seed=2, shuffle=True)
    alg, info, deltas = _deltas(case, 2)
    state = _round_trip(spec, case.state, "the state")
    _assert_states(spec, state, case.state, exact=True, what="pickled state")
    again = _round_trip(spec, deltas[0], "a delta")
    _assert_states(spec, alg.apply(case.state, again, info),
                   alg.apply(case.state, deltas[0], info), exact=True, what="pickled delta")
    _round_trip(spec, alg.make_tasks(case.state, info), "the tasks")
    _round_trip(spec, alg, "the algorithm")


def check_algorithm_schedulers(spec: SolverSpec, client=None) -> None:
    """Two epochs bit-identical on the synchronous and threaded schedulers, and on
    ``client`` (a ``distributed.Client``) when given: with ``K = 2`` and shuffling for a
    family of parallel rounds, one chunk a round in storage order for a sequential one."""
    rounds = spec.execution == "rounds"
    case = spec.make_case(seed=3, shuffle=rounds)
    settings = dict(k=2 if rounds else 1, shuffle=rounds, n_epochs=2,
                    execution=spec.execution)
    ref = _run(case, scheduler="sync", **settings)
    others = {"threads": _run(case, scheduler="threads", **settings)}
    if client is not None:
        others["distributed"] = _run(case, scheduler=client, **settings)
    for name, state in others.items():
        _assert_states(spec, state, ref, exact=True, what=f"{name} against sync")


_CHECKS = (check_algorithm_reference, check_combine, check_algorithm_pickles,
           check_algorithm_schedulers)


def algorithm_checks() -> Iterator[tuple[str, Callable]]:
    """``(solver name, check)`` for every registered solver and every check; call
    ``check(SOLVERS.get(name), client=...)``."""
    for name, _spec in SOLVERS.items():
        for check in _CHECKS:
            yield name, check
