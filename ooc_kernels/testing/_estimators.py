"""The estimator half of the contract suite (see :mod:`ooc_kernels.testing`).

Every check takes a registered estimator class (and an optional ``distributed.Client``),
fits it with the fast settings it declares (``_test_params``, as river's
``_unit_test_params``) on a small problem of its task, and raises ``AssertionError`` when
the estimator breaks the contract.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from unittest import mock

import dask.array as da
import numpy as np

from ooc_kernels.estimators._registry import ESTIMATORS

__all__ = ["estimator_checks", "check_estimator_schedulers", "check_estimator_resume",
           "check_estimator_save_load", "check_estimator_partial_fit_loop",
           "check_estimator_lazy_predictions", "problem"]

_CHUNK = 40


def _multi_class(cls) -> bool:
    """scikit-learn's tag: False for binary-only classifiers."""
    tags = cls().__sklearn_tags__()
    return tags.classifier_tags is None or tags.classifier_tags.multi_class


def problem(cls, seed: int = 0, n: int = 240):
    """A small problem of the estimator's task: ``(X, y)`` with ``n`` rows (two classes
    for a binary-only classifier, three otherwise)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    if cls._is_classifier:
        y = np.where(X[:, 0] * X[:, 1] > 0, "odd", "even")
        if _multi_class(cls):
            y[np.abs(X[:, 2]) > 1.3] = "far"
        return X, y
    return X, np.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2]


def _lazy(X, y):
    return (da.from_array(X, chunks=(_CHUNK, X.shape[1])),
            da.from_array(y, chunks=(_CHUNK,)))


def _make(cls, **params):
    settings = {**cls._test_params, "random_state": 0, "scheduler": "sync",
                "progress": False, **params}
    return cls(**settings)


def _arrays(est) -> dict:
    return {k: np.asarray(v) for k, v in est._fitted_arrays().items()}


def _assert_same(a: dict, b: dict, what: str) -> None:
    assert sorted(a) == sorted(b), f"{what}: different arrays {sorted(a)} and {sorted(b)}"
    for name in a:
        assert a[name].shape == b[name].shape and np.array_equal(a[name], b[name]), \
            f"{what}: array {name!r} differs"


def _decision(est, X):
    method = getattr(est, "decision_function", None) or est.predict
    return np.asarray(method(X))  # the contract suite's small in-memory problem


def check_estimator_schedulers(cls, client=None) -> None:
    """``K = 2`` tasks per round: the same model on the synchronous and threaded
    schedulers, and on ``client`` when given."""
    X, y = problem(cls)
    Xd, yd = _lazy(X, y)
    ref = _arrays(_make(cls, chunks_per_round=2).fit(Xd, yd))
    runs = {"threads": "threads"} | ({"distributed": client} if client is not None else {})
    for name, sched in runs.items():
        _assert_same(_arrays(_make(cls, chunks_per_round=2, scheduler=sched).fit(Xd, yd)),
                     ref, f"{cls.__name__} fitted on {name} against sync")


class _Stop(Exception):
    """Raised by the patched checkpoint writer to interrupt a fit right after a write."""


def _history(est) -> list[dict]:
    """``history_`` without the wall-clock seconds (the one figure that may differ)."""
    return [{k: v for k, v in entry.items() if k != "seconds"} for entry in est.history_]


def _resume_params(cls) -> dict:
    """The family's stopping rule switched on (its default ``tol``, never None), with the
    settings it declares to end a fit within a few epochs (``_stopping_test_params``)."""
    return {"max_iter": 10, "tol": cls().get_params()["tol"], "shuffle_chunks": 1,
            **cls._stopping_test_params}


def check_estimator_resume(cls, client=None) -> None:
    """A fit interrupted half way through an epoch, right after a checkpoint, and resumed
    from it ends exactly as an uninterrupted fit: the same ``history_`` (but its seconds),
    ``n_iter_``, ``stop_reason_`` and model, with the family's default stopping rule; and
    the resumed fit runs only the rounds the interrupted one had left (a fit that ignores
    the checkpoint and starts over is caught even though it ends with the same model)."""
    from ooc_kernels.estimators._checkpointing import CheckpointWriter

    X, y = problem(cls)
    Xd, yd = _lazy(X, y)
    params = _resume_params(cls)
    rounds = {"n": 0}
    real_after_round = cls._after_round

    def counted(self, state, info):
        rounds["n"] += 1
        return real_after_round(self, state, info)

    with mock.patch.object(cls, "_after_round", counted):
        reference = _make(cls, **params).fit(Xd, yd)
    assert reference.n_iter_ < params["max_iter"], \
        f"{cls.__name__}: the stopping rule did not end the fit with {params} " \
        f"({reference.stop_reason_}); declare _stopping_test_params under which it does"
    total = rounds["n"]
    per_epoch = total // reference.n_iter_
    assert per_epoch * reference.n_iter_ == total and per_epoch >= 2, \
        f"{cls.__name__}: {total} rounds in {reference.n_iter_} epochs"
    # half way through an epoch after the first one (or through the first if it is the last)
    epoch = min(reference.n_iter_ - 1, max(1, reference.n_iter_ // 2))
    done = epoch * per_epoch + per_epoch // 2
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
                _make(cls, **params).fit(Xd, yd, checkpoint=ck, checkpoint_every=1)
            except _Stop:  # the interruption: the checkpoint on disk is what resumes
                interrupted = True
            if not interrupted:
                raise AssertionError(f"{cls.__name__}: the interruption did not happen")
        rounds["n"] = 0
        with mock.patch.object(cls, "_after_round", counted):
            resumed = _make(cls, **params).fit(Xd, yd, checkpoint=ck, resume=True)
    what = f"{cls.__name__} resumed in epoch {epoch}, round {per_epoch // 2}"
    assert rounds["n"] <= total - done, \
        f"{what}: ran {rounds['n']} rounds, but only {total - done} of the uninterrupted " \
        f"fit's {total} were left (the checkpoint was not resumed from)"
    assert rounds["n"] == total - done, \
        f"{what}: ran {rounds['n']} rounds, but the uninterrupted fit ran {total - done} " \
        "more after that point (the resumed fit stopped at another epoch)"
    assert _history(resumed) == _history(reference), \
        f"{what}: history_ differs: {_history(resumed)} against {_history(reference)}"
    assert resumed.n_iter_ == reference.n_iter_, \
        f"{what}: n_iter_ is {resumed.n_iter_}, uninterrupted {reference.n_iter_}"
    assert resumed.stop_reason_ == reference.stop_reason_, \
        f"{what}: stop_reason_ is {resumed.stop_reason_!r}, uninterrupted " \
        f"{reference.stop_reason_!r}"
    _assert_same(_arrays(resumed), _arrays(reference), what)


def check_estimator_save_load(cls, client=None) -> None:
    """Save and load: the same arrays, the same predictions, no scheduler from the file."""
    import ooc_kernels as ok

    X, y = problem(cls)
    est = _make(cls).fit(X, y)
    with tempfile.TemporaryDirectory() as tmp:
        est.save(Path(tmp) / "model.zarr")
        loaded = ok.load(Path(tmp) / "model.zarr")
    assert type(loaded) is cls and loaded.scheduler is None
    _assert_same(_arrays(loaded), _arrays(est), f"{cls.__name__} loaded")
    Xt, _ = problem(cls, seed=9, n=50)
    assert np.array_equal(_decision(loaded, Xt), _decision(est, Xt)), \
        f"{cls.__name__}: the loaded model predicts differently"
    assert np.array_equal(np.asarray(loaded.predict(Xt)), np.asarray(est.predict(Xt)))


def check_estimator_partial_fit_loop(cls, client=None) -> None:
    """``fit`` with ``max_iter = 2`` (no early stop) equals two ``partial_fit`` calls
    (dask-ml's oracle for incremental learners).  An estimator without ``partial_fit``
    (a solver with no incremental form) must say so: ``hasattr`` is False and the error
    explains why."""
    X, y = problem(cls)
    if not hasattr(_make(cls), "partial_fit"):
        try:
            _make(cls).partial_fit
        except AttributeError as err:
            reason = str(err.__cause__ or err)     # scikit-learn's available_if chains it
            assert cls.__name__ in reason and len(reason) > 60, \
                f"{cls.__name__}: no partial_fit, and no reason given: {reason}"
        return
    Xd, yd = _lazy(X, y)
    fitted = _make(cls, max_iter=2, tol=None).fit(Xd, yd)
    loop = _make(cls, max_iter=2, tol=None)
    extra = {"classes": np.unique(y)} if cls._is_classifier else {}
    for _ in range(2):
        loop.partial_fit(Xd, yd, **extra)
    _assert_same(_arrays(loop), _arrays(fitted), f"{cls.__name__} partial_fit loop")


def check_estimator_lazy_predictions(cls, client=None) -> None:
    """Predictions of a Dask input are lazy and equal the in-memory ones (labels exactly;
    real values to the last bits of their precision: chunks of other lengths change BLAS's
    blocking)."""
    X, y = problem(cls)
    est = _make(cls).fit(X, y)
    Xt, _ = problem(cls, seed=5, n=90)
    lazy = est.predict(da.from_array(Xt, chunks=(25, Xt.shape[1])))
    assert isinstance(lazy, da.Array), f"{cls.__name__}: lazy input gave {type(lazy)}"
    values, expected = lazy.compute(scheduler="sync"), np.asarray(est.predict(Xt))
    if cls._is_classifier:
        assert np.array_equal(values, expected), f"{cls.__name__}: lazy labels differ"
    else:
        eps = np.finfo(np.asarray(expected).dtype).eps
        np.testing.assert_allclose(values, expected, rtol=16 * eps, atol=16 * eps,
                                   err_msg=f"{cls.__name__}: lazy predictions differ")


_CHECKS = (check_estimator_schedulers, check_estimator_resume, check_estimator_save_load,
           check_estimator_partial_fit_loop, check_estimator_lazy_predictions)


def estimator_checks() -> Iterator[tuple[str, Callable]]:
    """``(estimator name, check)`` for every registered estimator and every check; call
    ``check(ESTIMATORS.get(name), client=...)``."""
    for name, _cls in ESTIMATORS.items():
        for check in _CHECKS:
            yield name, check
