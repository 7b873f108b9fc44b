"""Small example families for the engine's modes, used only by the tests that register them.

Each is a complete family (an algorithm with the engine's four methods and a
:class:`~ooc_kernels.estimators.base.ChunkedEstimator` subclass with its capabilities) whose
answer has an exact in-memory NumPy twin:

- :class:`OnlineLMS`: sequential execution; least-mean-squares updates row by row in storage
  order (the result depends on the order of the rows).
- :class:`RidgeStatistics`: parallel rounds reduce ``X^T X``, ``X^T y`` and the row count;
  the finishing hook solves ridge regression from them once, after the last round.
- :class:`MeanCovariance`: unsupervised, ``fit(X)``; its own output is ``transform(X)``.
- :class:`MeanDifference`: two samples, ``fit(X_p, X_q)``; its own output is a density
  ratio estimate ``predict(X)``.

They are registered with :meth:`ooc_kernels._registry.Registry.temporarily` (see
:func:`registered`), so the library's registries list them only inside the tests' blocks.
"""

from __future__ import annotations

import contextlib
from numbers import Real

import numpy as np
from sklearn.base import RegressorMixin

from ooc_kernels._capabilities import Capabilities
from ooc_kernels.data.inputs import wrap_prediction
from ooc_kernels.estimators._constraints import Interval, StrOptions
from ooc_kernels.estimators._registry import ESTIMATORS
from ooc_kernels.estimators.base import (
    BASE_CONSTRAINTS,
    SEQUENTIAL_CONSTRAINTS,
    ChunkedEstimator,
    ChunkedRegressorMixin,
)
from ooc_kernels.exceptions import ModelFormatError
from ooc_kernels.families import SOLVERS, AlgorithmCase, SolverSpec


# --------------------------------------------------------------------------- algorithms
class LMSAlgorithm:
    """``w <- w - eta (x.w - y) x`` for every row, in the order of the rows."""

    def __init__(self, eta: float):
        self.eta = eta

    def make_tasks(self, state, info):
        return [None] * len(info.groups)

    def chunk_step(self, state, batch, task):
        w = state["w"].copy()
        X, y = batch["X"], batch["y"]
        for i in range(len(X)):
            w = w - self.eta * (X[i] @ w - y[i]) * X[i]
        return w, len(X)

    def combine(self, a, b):
        raise RuntimeError("OnlineLMS runs one task per round: there is nothing to combine")

    def apply(self, state, delta, info):
        w, n = delta
        return {**state, "w": w, "n_seen": state["n_seen"] + n}


class SumAlgorithm:
    """Sums of per-chunk statistics ``stats(batch)`` (a dict of arrays) over all rounds."""

    def __init__(self, stats):
        self.stats = stats

    def make_tasks(self, state, info):
        return [None] * len(info.groups)

    def chunk_step(self, state, batch, task):
        return self.stats(batch)

    def combine(self, a, b):
        return {k: a[k] + b[k] for k in a}

    def apply(self, state, delta, info):
        return {**state, **{k: state[k] + v for k, v in delta.items()}}


def _ridge_stats(batch):
    X, y = batch["X"].astype(np.float64), batch["y"].astype(np.float64)
    return {"xtx": X.T @ X, "xty": X.T @ y, "n": np.float64(len(X))}


def _moment_stats(batch):
    X = batch["X"].astype(np.float64)
    return {"s1": X.sum(axis=0), "s2": X.T @ X, "n": np.float64(len(X))}


def _two_sample_stats(batch):
    P, Q = batch["X_p"].astype(np.float64), batch["X_q"].astype(np.float64)
    return {"sp": P.sum(axis=0), "sq": Q.sum(axis=0), "np": np.float64(len(P)),
            "nq": np.float64(len(Q))}


# --------------------------------------------------------------------------- estimators
class _ExampleEstimator(ChunkedEstimator):
    """State: a dict of float64 arrays, saved as they are."""

    capabilities = Capabilities(tol=False)

    def _fitted_arrays(self) -> dict:
        return {k: np.asarray(v, dtype=np.float64) for k, v in self._state.items()}

    def _fitted_meta(self) -> dict:
        return {}

    def _restore_fitted(self, arrays: dict, meta: dict, where: str) -> None:
        if meta:
            raise ModelFormatError(f"{where}: unexpected metadata {sorted(meta)}")
        self._state = {k: np.asarray(v, dtype=np.float64) for k, v in arrays.items()}
        self._publish()


class OnlineLMS(ChunkedRegressorMixin, RegressorMixin, _ExampleEstimator):
    """Least mean squares over the rows in storage order, from random initial weights."""

    capabilities = Capabilities(execution="sequential", task="regression", tol=False)
    _parameter_constraints = {**SEQUENTIAL_CONSTRAINTS,
                              "eta": [Interval(Real, 0, None, closed="neither")],
                              "on_invalid": [StrOptions({"error"})]}
    _saved_arrays = {"w": True, "n_seen": True, "w_init": True}

    def __init__(self, eta=0.05, *, max_iter=2, chunk_size=20, on_invalid="error",
                 random_state=0, scheduler=None, progress=False):
        self.eta = eta
        self.max_iter = max_iter
        self.chunk_size = chunk_size
        self.on_invalid = on_invalid
        self.random_state = random_state
        self.scheduler = scheduler
        self.progress = progress

    def _initialize(self, data, sched, classes=None):
        w = np.random.default_rng(self.random_seed_).normal(scale=0.1, size=data.n_features)
        self._state = {"w": w, "n_seen": np.float64(0.0), "w_init": w.copy()}

    def _make_algorithm(self):
        return LMSAlgorithm(self.eta)

    def _publish(self):
        self.coef_ = self._state["w"]
        self.coef_init_ = self._state["w_init"]

    @property
    def _n_outputs(self):
        return 1

    @staticmethod
    def _predict_block(X, w):
        return (X @ w)[:, None]

    def _predict_payload(self):
        return self.coef_


class RidgeStatistics(ChunkedRegressorMixin, RegressorMixin, _ExampleEstimator):
    """Ridge regression ``(X^T X / n + alpha I) w = X^T y / n`` from statistics reduced in
    parallel rounds, solved by the finishing hook."""

    capabilities = Capabilities(task="regression", tol=False, finishing=True)
    _parameter_constraints = {**BASE_CONSTRAINTS,
                              "alpha": [Interval(Real, 0, None, closed="neither")],
                              "on_invalid": [StrOptions({"error"})]}
    _saved_arrays = {"xtx": True, "xty": True, "n": True, "coef": True}
    _finish_after_partial_fit = True

    def __init__(self, alpha=1.0, *, max_iter=1, chunks_per_round=2, chunk_size=20,
                 shuffle=True, shuffle_chunks=1, on_invalid="error", random_state=0,
                 scheduler=None, progress=False):
        self.alpha = alpha
        self.max_iter = max_iter
        self.chunks_per_round = chunks_per_round
        self.chunk_size = chunk_size
        self.shuffle = shuffle
        self.shuffle_chunks = shuffle_chunks
        self.on_invalid = on_invalid
        self.random_state = random_state
        self.scheduler = scheduler
        self.progress = progress

    def _initialize(self, data, sched, classes=None):
        d = data.n_features
        self._state = {"xtx": np.zeros((d, d)), "xty": np.zeros(d), "n": np.float64(0.0),
                       "coef": np.zeros(d)}

    def _make_algorithm(self):
        return SumAlgorithm(_ridge_stats)

    def _finish(self, state, data, sched):
        d = len(state["xty"])
        n = state["n"]
        coef = np.linalg.solve(state["xtx"] / n + self.alpha * np.eye(d), state["xty"] / n)
        return {**state, "coef": coef}

    def _publish(self):
        self.coef_ = self._state["coef"]

    @property
    def _n_outputs(self):
        return 1

    @staticmethod
    def _predict_block(X, w):
        return (X @ w)[:, None]

    def _predict_payload(self):
        return self.coef_


class MeanCovariance(_ExampleEstimator):
    """Mean and (population) covariance of ``X``, learnt without targets."""

    capabilities = Capabilities(inputs="unsupervised", task="transform", tol=False)
    _parameter_constraints = {**BASE_CONSTRAINTS, "on_invalid": [StrOptions({"error"})]}
    _saved_arrays = {"s1": True, "s2": True, "n": True}

    def __init__(self, *, max_iter=1, chunks_per_round=2, chunk_size=20, shuffle=True,
                 shuffle_chunks=1, on_invalid="error", random_state=0, scheduler=None,
                 progress=False):
        self.max_iter = max_iter
        self.chunks_per_round = chunks_per_round
        self.chunk_size = chunk_size
        self.shuffle = shuffle
        self.shuffle_chunks = shuffle_chunks
        self.on_invalid = on_invalid
        self.random_state = random_state
        self.scheduler = scheduler
        self.progress = progress

    def _initialize(self, data, sched, classes=None):
        d = data.n_features
        self._state = {"s1": np.zeros(d), "s2": np.zeros((d, d)), "n": np.float64(0.0)}

    def _make_algorithm(self):
        return SumAlgorithm(_moment_stats)

    def _publish(self):
        n = self._state["n"]
        self.mean_ = self._state["s1"] / n
        self.covariance_ = self._state["s2"] / n - np.outer(self.mean_, self.mean_)

    @staticmethod
    def _center_block(X, mean):
        return X - mean

    def transform(self, X):
        """``X - mean_``: NumPy for in-memory input, lazy for lazy input."""
        out = self._chunk_outputs(X, type(self)._center_block, self.mean_,
                                  self.n_features_in_)
        return wrap_prediction(X, out)


class MeanDifference(_ExampleEstimator):
    """The means of two samples and the density ratio ``p(x) / q(x)`` of two Gaussians of
    unit covariance centred on them."""

    capabilities = Capabilities(inputs="two_sample", task="density_ratio", tol=False,
                                partial_fit=False)
    _parameter_constraints = {**BASE_CONSTRAINTS, "on_invalid": [StrOptions({"error"})]}
    _saved_arrays = {"sp": True, "sq": True, "np": True, "nq": True}

    def __init__(self, *, max_iter=1, chunks_per_round=2, chunk_size=20, shuffle=True,
                 shuffle_chunks=1, on_invalid="error", random_state=0, scheduler=None,
                 progress=False):
        self.max_iter = max_iter
        self.chunks_per_round = chunks_per_round
        self.chunk_size = chunk_size
        self.shuffle = shuffle
        self.shuffle_chunks = shuffle_chunks
        self.on_invalid = on_invalid
        self.random_state = random_state
        self.scheduler = scheduler
        self.progress = progress

    def fit(self, X_p, X_q, *, checkpoint=None, checkpoint_every=1, resume=False):
        """Learn from the samples ``X_p`` (numerator) and ``X_q`` (denominator)."""
        return super().fit(X_p, X_q, checkpoint=checkpoint,
                           checkpoint_every=checkpoint_every, resume=resume)

    def _partial_fit_available(self) -> bool:
        raise AttributeError(
            "MeanDifference has no partial_fit: it learns from two samples, and partial_fit "
            "takes one batch of rows; call fit(X_p, X_q), which reads both chunk by chunk.")

    def _initialize(self, data, sched, classes=None):
        d = data.n_features
        self._state = {"sp": np.zeros(d), "sq": np.zeros(d), "np": np.float64(0.0),
                       "nq": np.float64(0.0)}

    def _make_algorithm(self):
        return SumAlgorithm(_two_sample_stats)

    def _publish(self):
        self.mean_p_ = self._state["sp"] / self._state["np"]
        self.mean_q_ = self._state["sq"] / self._state["nq"]

    @staticmethod
    def _ratio_block(X, means):
        mp, mq = means
        return np.exp(X @ (mp - mq) - 0.5 * (mp @ mp - mq @ mq))[:, None]

    def predict(self, X):
        """The density ratio estimate at every row of ``X`` (lazy for lazy input)."""
        out = self._chunk_outputs(X, type(self)._ratio_block, (self.mean_p_, self.mean_q_), 1)
        return wrap_prediction(X, out[:, 0])


FAMILIES = (OnlineLMS, RidgeStatistics, MeanCovariance, MeanDifference)


# --------------------------------------------------------------------------- solvers
def _lms_case(seed: int = 0, shuffle: bool = False) -> AlgorithmCase:
    """Five chunks of a small least-squares problem (row order matters to LMS)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(47, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=47)
    cuts = [0, 10, 20, 30, 40, 47]
    chunks = [{"X": X[a:b], "y": y[a:b]} for a, b in zip(cuts, cuts[1:])]
    state = {"w": np.zeros(3), "n_seen": np.float64(0.0)}
    return AlgorithmCase(algorithm=LMSAlgorithm(0.05), state=state, chunks=chunks,
                         dims={"X": ("sample", "feature"), "y": ("sample",)}, seed=seed)


def lms_reference(case: AlgorithmCase) -> dict:
    """LMS over every row of ``case.chunks`` in storage order, written again in NumPy."""
    X = np.concatenate([c["X"] for c in case.chunks])
    y = np.concatenate([c["y"] for c in case.chunks])
    w = case.state["w"].copy()
    for x, t in zip(X, y):
        w -= case.algorithm.eta * (x @ w - t) * x
    return {"w": w, "n_seen": np.float64(len(X))}


#: A sequential solver (one chunk a round, storage order) for the algorithm-level checks.
LMS_SOLVER = SolverSpec(
    name="example_lms", algorithm=LMSAlgorithm,
    state_arrays=lambda state: {k: np.asarray(v) for k, v in state.items()},
    make_case=_lms_case, reference=lms_reference, execution="sequential",
    description="least mean squares in storage order (a test family)")


@contextlib.contextmanager
def registered(*classes):
    """Register ``classes`` (default: all example families) in the estimator registry for
    the duration of the block."""
    with contextlib.ExitStack() as stack:
        for cls in classes or FAMILIES:
            stack.enter_context(ESTIMATORS.temporarily(cls.__name__, cls))
        yield


@contextlib.contextmanager
def registered_solvers():
    """Register the example solvers (:data:`LMS_SOLVER`) for the duration of the block."""
    with SOLVERS.temporarily(LMS_SOLVER.name, LMS_SOLVER):
        yield
