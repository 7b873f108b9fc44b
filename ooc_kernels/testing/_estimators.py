"""The estimator half of the contract suite (see :mod:`ooc_kernels.testing`).

Every check takes a registered estimator class (and an optional ``distributed.Client``),
reads what the family declares (:func:`~ooc_kernels.testing.capabilities_of`), fits it with
the fast settings it declares (``_test_params``, as river's ``_unit_test_params``) on a small
problem of its inputs and task (:func:`~ooc_kernels.testing.problem`), and raises
``AssertionError`` when the estimator breaks the contract, or
:class:`~ooc_kernels.testing.NotApplicable` (with the reason) when the check does not apply
to what the family declares.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from unittest import mock

import dask.array as da
import numpy as np

from ooc_kernels.estimators._registry import ESTIMATORS
from ooc_kernels.testing._coords import check_estimator_feature_coords
from ooc_kernels.testing._declared import check_estimator_capabilities
from ooc_kernels.testing._problems import (
    CHUNK,
    FINISH_HOOK,
    NotApplicable,
    capabilities_of,
    lazy,
    make,
    outputs,
    problem,
    rounds_per_epoch,
)

__all__ = ["estimator_checks", "check_estimator_capabilities", "check_estimator_schedulers",
           "check_estimator_storage_order", "check_estimator_resume",
           "check_estimator_finishing", "check_estimator_save_load",
           "check_estimator_partial_fit_loop", "check_estimator_lazy_predictions",
           "check_estimator_probabilistic", "FINISH_HOOK"]

def _arrays(est) -> dict:
    return {k: np.asarray(v) for k, v in est._fitted_arrays().items()}


def _assert_same(a: dict, b: dict, what: str) -> None:
    assert sorted(a) == sorted(b), f"{what}: different arrays {sorted(a)} and {sorted(b)}"
    for name in a:
        assert a[name].shape == b[name].shape and np.array_equal(a[name], b[name]), \
            f"{what}: array {name!r} differs"


def check_estimator_schedulers(cls, client=None) -> None:
    """The same model on the synchronous and threaded schedulers, and on ``client`` when
    given: with ``K = 1`` and ``K = 2`` tasks per round for a family of parallel rounds,
    with ``K = 1`` for a sequential one."""
    caps = capabilities_of(cls)
    args = lazy(problem(cls))
    runs = {"threads": "threads"} | ({"distributed": client} if client is not None else {})
    for k in (1, 2) if caps.parallel_rounds else (1,):
        tasks = {"chunks_per_round": k} if caps.parallel_rounds else {}
        ref = _arrays(make(cls, **tasks).fit(*args))
        for name, sched in runs.items():
            _assert_same(_arrays(make(cls, **tasks, scheduler=sched).fit(*args)),
                         ref, f"{cls.__name__} (K = {k}) fitted on {name} against sync")


class _Recording:
    """A chunk algorithm that records a copy of every batch its tasks receive."""

    def __init__(self, algorithm, seen: list):
        self._algorithm, self._seen = algorithm, seen

    def __getattr__(self, name):
        return getattr(self._algorithm, name)

    def chunk_step(self, state, batch, task):
        self._seen.append({k: np.array(v, copy=True) for k, v in batch.items()})
        return self._algorithm.chunk_step(state, batch, task)


def check_estimator_storage_order(cls, client=None) -> None:
    """A sequential family visits the rows once per epoch in storage order, chunk after
    chunk, one task a round (``K = 1``): the rows its tasks receive, in the order they
    receive them, are ``X`` once per epoch (as the model sees them, ``(X - x_shift_) /
    x_scale_``, for an estimator that maps its inputs)."""
    caps = capabilities_of(cls)
    if caps.execution != "sequential":
        raise NotApplicable(
            f"{cls.__name__} declares execution={caps.execution!r}: its chunks are "
            "reshuffled every epoch, so there is no storage order to keep")
    args = problem(cls)
    seen: list = []
    real = cls._make_algorithm

    def recording(self):
        return _Recording(real(self), seen)

    with mock.patch.object(cls, "_make_algorithm", recording):
        est = make(cls).fit(*lazy(args))
    what = f"{cls.__name__} declares execution='sequential'"
    n_chunks = -(-len(args[0]) // CHUNK)
    assert len(seen) == n_chunks * est.n_iter_, \
        f"{what}, but its {est.n_iter_} epochs over {n_chunks} chunks ran {len(seen)} " \
        f"tasks instead of {n_chunks * est.n_iter_} (one task a round, one chunk a task)"
    names = ("X_p", "X_q") if caps.inputs == "two_sample" else ("X",)
    shift = getattr(est, "x_shift_", None)   # a model of (X - x_shift_) / x_scale_
    for name, X in zip(names, args):
        rows = np.concatenate([batch[name] for batch in seen])
        expected = np.concatenate([X] * est.n_iter_)
        if shift is not None:   # the tasks get the rows as the model sees them
            expected = (expected - np.asarray(shift)) / np.asarray(est.x_scale_)
        expected = expected.astype(rows.dtype)
        assert rows.shape == expected.shape, \
            f"{what}, but its tasks received {rows.shape[0]} rows of {name} in " \
            f"{est.n_iter_} epochs, not {expected.shape[0]}"
        same = rows == expected if shift is None else np.isclose(rows, expected, rtol=1e-12)
        wrong = np.flatnonzero(~np.all(same, axis=1))
        assert wrong.size == 0, \
            f"{what}, but its tasks did not receive the rows of {name} in storage " \
            f"order: row {wrong[0] % len(X)} of epoch {wrong[0] // len(X)} is another row"


class _Stop(Exception):
    """Raised by the patched checkpoint writer to interrupt a fit right after a write."""


def _history(est) -> list[dict]:
    """``history_`` without the wall-clock seconds (the one figure that may differ)."""
    return [{k: v for k, v in entry.items() if k != "seconds"} for entry in est.history_]


def _resume_params(cls) -> dict:
    """The family's stopping rule switched on when it declares one (its default ``tol``,
    never None), with the settings it declares to end a fit within a few epochs
    (``_stopping_test_params``); ``max_iter=3`` epochs for a family without ``tol``."""
    caps = capabilities_of(cls)
    params = {"max_iter": 10, "tol": cls().get_params()["tol"]} if caps.tol \
        else {"max_iter": 3}
    if "shuffle_chunks" in cls().get_params():
        params["shuffle_chunks"] = 1
    return {**params, **cls._stopping_test_params}


def _counting(cls, name: str, counts: dict):
    """Patch the method ``name`` of ``cls`` to count its calls in ``counts[name]``."""
    real = getattr(cls, name)

    def counted(self, *args, **kwargs):
        counts[name] = counts.get(name, 0) + 1
        counts.setdefault("order", []).append(name)
        return real(self, *args, **kwargs)

    return mock.patch.object(cls, name, counted)


def _fit_counted(cls, params: dict, args: tuple, hooks: tuple, **fit_kwargs):
    """A fit with the calls of the methods ``hooks`` counted: ``(estimator, counts)``."""
    counts: dict = {}
    patches = [_counting(cls, name, counts) for name in hooks]
    for patch in patches:
        patch.start()
    try:
        est = make(cls, **params).fit(*args, **fit_kwargs)
    finally:
        for patch in reversed(patches):
            patch.stop()
    return est, counts


def _interrupt_and_resume(cls, params: dict, args: tuple, done: int, hooks: tuple):
    """Fit with a checkpoint every round, stop right after the ``done``-th write, resume:
    ``(resumed estimator, counts of the resumed fit)``."""
    from ooc_kernels.estimators._checkpointing import CheckpointWriter

    real_write = CheckpointWriter.write
    writes = {"n": 0}

    def write(self, state, position):
        real_write(self, state, position)
        writes["n"] += 1
        if writes["n"] == done:
            raise _Stop

    with tempfile.TemporaryDirectory() as tmp:
        ck = Path(tmp) / "ck.zarr"
        with mock.patch.object(CheckpointWriter, "write", write):
            interrupted = False
            try:
                make(cls, **params).fit(*args, checkpoint=ck, checkpoint_every=1)
            except _Stop:  # the interruption: the checkpoint on disk is what resumes
                interrupted = True
            if not interrupted:
                raise AssertionError(f"{cls.__name__}: the interruption did not happen")
        return _fit_counted(cls, params, args, hooks, checkpoint=ck, resume=True)


def _hooks(cls) -> tuple:
    return ("_after_round", FINISH_HOOK) if capabilities_of(cls).finishing \
        else ("_after_round",)


def check_estimator_resume(cls, client=None) -> None:
    """A fit interrupted half way through an epoch, right after a checkpoint, and resumed
    from it ends exactly as an uninterrupted fit: the same ``history_`` (but its seconds),
    ``n_iter_``, ``stop_reason_`` and model, with the family's stopping rule on when it
    declares ``tol``; an epoch has the rounds the data's chunking and the declared
    execution give; and the resumed fit runs only the rounds the interrupted one had left
    (a fit that ignores the checkpoint and starts over, or restarts the epoch, is caught
    even though it ends with the same model)."""
    caps = capabilities_of(cls)
    if not caps.checkpoints:
        raise NotApplicable(f"{cls.__name__} declares checkpoints=False: its fits write no "
                            "checkpoint to resume from")
    args = lazy(problem(cls))
    params = _resume_params(cls)
    reference, counts = _fit_counted(cls, params, args, _hooks(cls))
    if caps.tol:
        assert reference.n_iter_ < params["max_iter"], \
            f"{cls.__name__}: the stopping rule did not end the fit with {params} " \
            f"({reference.stop_reason_}); declare _stopping_test_params under which it does"
    total = counts.get("_after_round", 0)
    n_chunks = args[0].numblocks[0]
    k = reference._tasks_per_round
    per_epoch = rounds_per_epoch(caps, n_chunks=n_chunks, chunks_per_round=k)
    assert total == per_epoch * reference.n_iter_, \
        f"{cls.__name__}: {total} rounds in {reference.n_iter_} epochs, but " \
        f"{n_chunks} chunks with execution={caps.execution!r} and K = {k} make " \
        f"{per_epoch} rounds per epoch"
    assert per_epoch >= 2, f"{cls.__name__}: {per_epoch} round per epoch: nothing to " \
                           "interrupt half way; lower chunks_per_round in _test_params"
    # half way through an epoch after the first one (or through the first if it is the last)
    epoch = min(reference.n_iter_ - 1, max(1, reference.n_iter_ // 2))
    done = epoch * per_epoch + per_epoch // 2
    resumed, again = _interrupt_and_resume(cls, params, args, done, _hooks(cls))
    ran = again.get("_after_round", 0)
    what = f"{cls.__name__} resumed in epoch {epoch}, round {per_epoch // 2}"
    assert ran <= total - done, \
        f"{what}: ran {ran} rounds, but only {total - done} of the uninterrupted " \
        f"fit's {total} were left (the checkpoint was not resumed from)"
    assert ran == total - done, \
        f"{what}: ran {ran} rounds, but the uninterrupted fit ran {total - done} " \
        "more after that point (the resumed fit stopped at another epoch)"
    assert _history(resumed) == _history(reference), \
        f"{what}: history_ differs: {_history(resumed)} against {_history(reference)}"
    assert resumed.n_iter_ == reference.n_iter_, \
        f"{what}: n_iter_ is {resumed.n_iter_}, uninterrupted {reference.n_iter_}"
    assert resumed.stop_reason_ == reference.stop_reason_, \
        f"{what}: stop_reason_ is {resumed.stop_reason_!r}, uninterrupted " \
        f"{reference.stop_reason_!r}"
    _assert_same(_arrays(resumed), _arrays(reference), what)


def check_estimator_finishing(cls, client=None) -> None:
    """A family with a finishing step runs it once per fit, after the last round, and a fit
    interrupted half way and resumed from its checkpoint runs it once too and ends with the
    uninterrupted fit's model."""
    caps = capabilities_of(cls)
    if not caps.finishing:
        raise NotApplicable(f"{cls.__name__} declares finishing=False: its fit ends with "
                            "the last round")
    args = lazy(problem(cls))
    params = _resume_params(cls)
    reference, counts = _fit_counted(cls, params, args, _hooks(cls))
    order = counts.get("order", [])
    assert counts.get(FINISH_HOOK, 0) == 1, \
        f"{cls.__name__}: the finishing step {FINISH_HOOK} ran " \
        f"{counts.get(FINISH_HOOK, 0)} times in one fit, not once"
    assert order[-1] == FINISH_HOOK, \
        f"{cls.__name__}: the finishing step {FINISH_HOOK} ran before the last round"
    if not caps.checkpoints:
        return
    total = counts.get("_after_round", 0)
    assert total >= 2, f"{cls.__name__}: {total} round: nothing to interrupt"
    resumed, again = _interrupt_and_resume(cls, params, args, total // 2, _hooks(cls))
    assert again.get(FINISH_HOOK, 0) == 1, \
        f"{cls.__name__}: the resumed fit ran the finishing step {FINISH_HOOK} " \
        f"{again.get(FINISH_HOOK, 0)} times, not once"
    _assert_same(_arrays(resumed), _arrays(reference),
                 f"{cls.__name__} resumed after round {total // 2} and finished")


def _same_outputs(a: dict, b: dict, what: str) -> None:
    assert sorted(a) == sorted(b), f"{what}: outputs {sorted(a)} against {sorted(b)}"
    for name in a:
        assert np.array_equal(np.asarray(a[name]), np.asarray(b[name])), \
            f"{what}: {name} differs"


def check_estimator_save_load(cls, client=None) -> None:
    """Save and load: the same arrays, the same outputs (every output method), no
    scheduler from the file."""
    import ooc_kernels as ok

    est = make(cls).fit(*problem(cls))
    with tempfile.TemporaryDirectory() as tmp:
        est.save(Path(tmp) / "model.zarr")
        loaded = ok.load(Path(tmp) / "model.zarr")
    assert type(loaded) is cls and loaded.scheduler is None
    _assert_same(_arrays(loaded), _arrays(est), f"{cls.__name__} loaded")
    Xt = problem(cls, seed=9, n=50)[0]
    _same_outputs(outputs(loaded, Xt), outputs(est, Xt),
                  f"{cls.__name__}: the loaded model predicts differently")


def check_estimator_partial_fit_loop(cls, client=None) -> None:
    """``fit`` with ``max_iter = 2`` (no early stop) equals two ``partial_fit`` calls
    (dask-ml's oracle for incremental learners), for a family that declares
    ``partial_fit``."""
    caps = capabilities_of(cls)
    if not caps.partial_fit:
        raise NotApplicable(f"{cls.__name__} declares partial_fit=False: it has no "
                            "incremental form")
    args = lazy(problem(cls))
    params = {"max_iter": 2, **({"tol": None} if caps.tol else {})}
    fitted = make(cls, **params).fit(*args)
    loop = make(cls, **params)
    extra = {"classes": np.unique(problem(cls)[1])} if caps.task == "classification" else {}
    for _ in range(2):
        loop.partial_fit(*args, **extra)
    _assert_same(_arrays(loop), _arrays(fitted), f"{cls.__name__} partial_fit loop")


def check_estimator_lazy_predictions(cls, client=None) -> None:
    """Every output of a Dask input is lazy and equals the in-memory one (labels exactly;
    real values to the last bits of the precision they are computed in, ``dtype_`` where
    the estimator has one: chunks of other lengths change BLAS's blocking)."""
    est = make(cls).fit(*problem(cls))
    Xt = problem(cls, seed=5, n=90)[0]
    eager = outputs(est, Xt)
    assert eager, f"{cls.__name__}: no output method ({', '.join(eager) or 'none'})"
    for name, value in outputs(est, da.from_array(Xt, chunks=(25, Xt.shape[1]))).items():
        what = f"{cls.__name__}.{name}"
        assert isinstance(value, da.Array), f"{what}: lazy input gave {type(value)}"
        got, expected = value.compute(scheduler="sync"), np.asarray(eager[name])
        if expected.dtype.kind != "f":
            assert np.array_equal(got, expected), f"{what}: lazy labels differ"
        else:
            eps = np.finfo(expected.dtype).eps
            if getattr(est, "dtype_", None) is not None:  # computed in it, returned wider
                eps = max(eps, np.finfo(np.dtype(est.dtype_)).eps)
            np.testing.assert_allclose(got, expected, rtol=16 * eps, atol=16 * eps,
                                       err_msg=f"{what}: lazy predictions differ")


def check_estimator_probabilistic(cls, client=None) -> None:
    """Probabilistic outputs, for a family that declares them: a classifier's
    ``predict_proba`` has one column per class, values in [0, 1], rows that sum to one and
    the predicted class most probable; a regressor's ``predict(X, return_std=True)`` gives
    the predictions and finite, non-negative standard deviations."""
    caps = capabilities_of(cls)
    if not caps.probabilistic:
        raise NotApplicable(f"{cls.__name__} declares probabilistic=False: no "
                            "predict_proba or return_std under its test settings")
    est = make(cls).fit(*problem(cls))
    Xt = problem(cls, seed=7, n=60)[0]
    if caps.task == "classification":
        proba = np.asarray(est.predict_proba(Xt))
        what = f"{cls.__name__}.predict_proba"
        assert proba.shape == (len(Xt), len(est.classes_)), \
            f"{what}: shape {proba.shape}, expected {(len(Xt), len(est.classes_))}"
        assert np.all((proba >= 0) & (proba <= 1)), f"{what}: values outside [0, 1]"
        sums = proba.sum(axis=1)
        assert np.allclose(sums, 1.0, rtol=0, atol=1e-12), \
            f"{what}: rows do not sum to one (from {sums.min()} to {sums.max()})"
        assert np.array_equal(est.classes_[np.argmax(proba, axis=1)],
                              np.asarray(est.predict(Xt))), \
            f"{what}: the predicted class is not the most probable one"
        return
    mean, std = (np.asarray(v) for v in est.predict(Xt, return_std=True))
    what = f"{cls.__name__}.predict(X, return_std=True)"
    assert std.shape == (len(Xt),), f"{what}: std of shape {std.shape}"
    assert np.all(np.isfinite(std)) and np.all(std >= 0), \
        f"{what}: negative or non-finite standard deviations (min {std.min()})"
    assert np.array_equal(mean, np.asarray(est.predict(Xt))), \
        f"{what}: the mean differs from predict(X)"


_CHECKS = (check_estimator_capabilities, check_estimator_schedulers,
           check_estimator_storage_order, check_estimator_resume, check_estimator_finishing,
           check_estimator_save_load, check_estimator_partial_fit_loop,
           check_estimator_lazy_predictions, check_estimator_probabilistic,
           check_estimator_feature_coords)


def estimator_checks() -> Iterator[tuple[str, Callable]]:
    """``(estimator name, check)`` for every registered estimator and every check; call
    ``check(ESTIMATORS.get(name), client=...)``, which raises
    :class:`~ooc_kernels.testing.NotApplicable` when the family's declaration rules it
    out."""
    for name, _cls in ESTIMATORS.items():
        for check in _CHECKS:
            yield name, check
