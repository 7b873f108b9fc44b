"""The family-neutral estimator: inputs, fit and resume through the engine, lazy predictions,
scores and saving, for every algorithm family.

A family is a solver module (:mod:`ooc_kernels.families`) plus an estimator module that
subclasses :class:`ChunkedEstimator`, declares its hyperparameters
(``_parameter_constraints``) and implements the hooks below; registered with
:func:`~ooc_kernels.estimators._registry.register_estimator`, it is found by persistence,
checkpoints, ``ok.load``, the pipeline runner, the command line and the contract suite
without any of them naming it.

What a family declares
----------------------
``capabilities``
    A :class:`~ooc_kernels._capabilities.Capabilities`.  The base reads three of
    its fields: ``execution`` (``"rounds"``: shuffled rounds of ``chunks_per_round`` tasks;
    ``"sequential"``: the chunks once per epoch in storage order, one task a round, and the
    family declares :data:`SEQUENTIAL_CONSTRAINTS`, without the order parameters),
    ``inputs`` (``fit(X, y)``, ``fit(X)`` or ``fit(X_p, X_q)``: see :meth:`_fit_data`) and
    ``finishing`` (the :meth:`_finish` hook).

Hooks a family implements
-------------------------
``_initialize(data, sched, classes=None)``
    Set up the model for ``data`` (a :class:`~ooc_kernels.parallel.chunked.ChunkedData`):
    ``self._config`` (small, frozen) and ``self._state`` (the initial state).
``_make_algorithm()``
    The chunk algorithm for :func:`~ooc_kernels.parallel.engine.run_rounds`.
``_after_round(state, info)``
    Optional check after every round (e.g. divergence).
``_publish()``
    Set the public fitted attributes (``coef_``, ``n_iter_`` ...) from ``self._state``.
``_predict_block`` (a picklable function) and ``_predict_payload()``
    ``_predict_block(X_chunk, payload)`` returns decision values ``(n, n_outputs)``.  A
    family's own outputs (a ratio estimate, a mean and a standard deviation) are computed
    the same way by :meth:`_chunk_outputs` from a block function of the family's.
``_finish(state, data, sched)``
    With ``capabilities.finishing``: the finished state, run once after the last round.
``_fitted_arrays()``, ``_fitted_meta()``, ``_restore_fitted(arrays, meta)``
    The arrays and JSON that make the fitted model (saved models and checkpoints);
    ``_saved_arrays`` names the arrays (name -> required): a file is read for these only.
    ``_restore_fitted`` checks the JSON it is given as strictly as the constructor checks
    hyperparameters (raising :class:`~ooc_kernels.exceptions.ModelFormatError`).
``_upgrade_saved(meta, version)``
    Optional: the metadata of an older model format as the current one.

``_training_loss(state)``
    Optional: the running totals ``(loss_sum, weight_sum)`` of the progressive training
    loss, from which ``history_`` and the ``tol`` rule read each epoch's loss.
``_epoch_report(state, epoch, data, sched)``
    Optional: figures of the epoch for ``history_`` (a streaming pass over ``data`` if the
    family needs one, e.g. a duality gap) and a stop reason, or None to go on.  Families
    with their own rule set ``_sgd_stopping = False`` (``tol`` then means what they say).
``_on_checkpoint(state)``
    Optional: called after a checkpoint of ``state`` is written (e.g. to prune chunk-local
    state that no checkpoint needs any more).

Shared hyperparameters (every family has them): ``max_iter``, ``chunk_size``,
``on_invalid``, ``random_state``, ``scheduler``, ``progress``, and in the ``"rounds"``
execution mode ``chunks_per_round``, ``shuffle``, ``shuffle_chunks``; families that stop like scikit-learn's SGD add
:data:`STOPPING_CONSTRAINTS` (``tol``, ``n_iter_no_change``, ``early_stopping``,
``validation_fraction``) and ``warm_start`` and ``verbose``.
"""

from __future__ import annotations

import math
import time

import dask.array as da
import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, check_random_state, validate_data

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels._seeds import derive_seed
from ooc_kernels._threads import kernel_threads, task_threads
from ooc_kernels.data.inputs import as_chunked
from ooc_kernels._capabilities import Capabilities
from ooc_kernels.estimators._constraints import validate_params
from ooc_kernels.estimators._hyperparams import (
    BASE_CONSTRAINTS,
    BASE_PARAMS_DOC,
    ORDER_PARAMS,
    SEQUENTIAL_CONSTRAINTS,
    SHUFFLE_BYTES,
    STOPPING_CONSTRAINTS,
    STOPPING_PARAMS_DOC,
)
from ooc_kernels.estimators._inputs import (
    _is_chunked_input,
    _with_sample_weight,
    check_row_input,
    named_sample,
    numeric_targets,
    sklearn_validated,
    two_sample_data,
    unsupervised_data,
    validated_xy,
    zero_weights_error,
)
from ooc_kernels.estimators._continuation import check_unchanged_params, model_params
from ooc_kernels.estimators._feature_coords import (check_feature_coords, opened_input,
                                                    record_feature_coords)
from ooc_kernels.estimators._family_hooks import FamilyHooks
from ooc_kernels.estimators._mixins import ChunkedClassifierMixin, ChunkedRegressorMixin
from ooc_kernels.estimators._prediction import ChunkedPrediction
from ooc_kernels.estimators._stopping import EpochMonitor, max_iter_reason
from ooc_kernels.exceptions import (CheckpointError, ModelFormatError,
                                    UnresolvedParameterError, ValidationError)
from ooc_kernels.parallel.checkpoint import START_OVER
from ooc_kernels.parallel.chunked import ChunkedData
from ooc_kernels.parallel.cluster import auto_tasks_per_round, reporting_scheduler_loss
from ooc_kernels.parallel.engine import run_rounds
from ooc_kernels.parallel.scheduler import scheduler_context

__all__ = ["ChunkedEstimator", "ChunkedClassifierMixin", "ChunkedRegressorMixin",
           "SHUFFLE_BYTES", "BASE_CONSTRAINTS", "SEQUENTIAL_CONSTRAINTS",
           "STOPPING_CONSTRAINTS", "BASE_PARAMS_DOC", "STOPPING_PARAMS_DOC",
           "sklearn_validated"]


class ChunkedEstimator(FamilyHooks, ChunkedPrediction, BaseEstimator):
    """Family-neutral machinery of the library's estimators (see the module docstring)."""

    _parameter_constraints: dict = BASE_CONSTRAINTS
    #: What the family supports: its execution mode, what ``fit`` learns from, its task,
    #: ``partial_fit``, ``tol``, probabilistic outputs, a finishing step, checkpoints.  The
    #: base reads ``execution``, ``inputs`` and ``finishing``; the contract suite reads all.
    capabilities: Capabilities = Capabilities()
    #: Whether every ``partial_fit`` call ends with the finishing hook (families whose
    #: model exists only once finished); by default only ``fit`` runs it.
    _finish_after_partial_fit = False
    #: Parameters that belong to whoever runs the model, never saved in files.
    _runtime_params = ("scheduler", "progress")
    #: Parameters that may change when a fit resumes from a checkpoint.
    _resumable_params = ("max_iter",)
    #: The arrays of a fitted model (name -> whether every model has it).
    _saved_arrays: dict = {}
    _is_classifier = False
    #: Whether an in-memory ``X`` is named without hashing its contents until the data's
    #: token is asked for (``as_chunked(lazy_token=True)``): for families that use ``X``'s
    #: Dask array only as it is, never a Dask array derived from it.
    _lazy_data_token = False
    #: Whether ``tol`` / ``n_iter_no_change`` are scikit-learn's SGD rule on the epoch loss.
    _sgd_stopping = True
    #: The training-loss rule's tolerance is ``tol * max(1, best_loss / _tol_loss_scale)``
    #: (None: ``tol``; see :mod:`~ooc_kernels.estimators._stopping`).
    _tol_loss_scale: float | None = None
    #: Fast settings for the contract suite's fits (scikit-learn's checks use the defaults).
    _test_params: dict = {}
    #: Settings (over ``_test_params`` and the default ``tol``) under which the family's
    #: own stopping rule ends a contract-suite fit within a few epochs (the resume check).
    _stopping_test_params: dict = {}

    # ------------------------------------------------------------------ parameters
    def __sklearn_clone__(self):
        """scikit-learn's ``clone``, sharing the ``scheduler`` instead of copying it.

        A ``distributed.Client`` is a connection: it cannot be deep-copied (and a copy would
        be another connection), so a clone uses the same one.  This is what lets
        ``GridSearchCV`` and ``cross_val_score`` run on a cluster.  The metadata requests
        and ``set_output``'s configuration are kept, as scikit-learn's ``clone`` keeps them.
        """
        from ooc_kernels.estimators._clone import clone_sharing

        return clone_sharing(self, shared=("scheduler",))

    def _validate_params(self) -> None:
        """Declarative checks (``_parameter_constraints``), then the family's own."""
        validate_params(self)
        self._check_execution()
        self._check_params()

    def _check_execution(self) -> None:
        """A family in the ``"sequential"`` execution mode reads its chunks once per epoch in
        storage order, one task a round: order parameters it exposes must say so."""
        if self.capabilities.execution != "sequential":
            return
        params = self.get_params(deep=False)
        allowed = {"chunks_per_round": (1, "auto"), "shuffle": (False,),
                   "shuffle_chunks": (1, "auto")}
        for name in ORDER_PARAMS:
            if name in params and not any(params[name] == ok and type(params[name]) is
                                          type(ok) for ok in allowed[name]):
                raise ValidationError(
                    f"{type(self).__name__} streams its chunks once per epoch in storage "
                    f"order (execution 'sequential'), so {name} must be "
                    f"{' or '.join(repr(v) for v in allowed[name])}, got {params[name]!r}; "
                    f"leave {name} at its default."
                )

    @property
    def _tasks_per_round(self) -> int:
        """``K`` of the engine's rounds: ``chunks_per_round_`` as the fit resolved it (1 in
        the ``"sequential"`` execution mode)."""
        if self.capabilities.execution == "sequential":
            return 1
        resolved = getattr(self, "chunks_per_round_", None)
        if resolved is not None:
            return int(resolved)
        if isinstance(self.chunks_per_round, str):  # "auto" before a fit resolved it
            raise UnresolvedParameterError(
                f"{type(self).__name__}: chunks_per_round='auto' is resolved when a fit "
                "starts (from the scheduler); call fit or partial_fit first.")
        return int(self.chunks_per_round)

    def _resolve_tasks_per_round(self, sched, *, keep: bool) -> None:
        """Set ``chunks_per_round_``, the ``K`` of this fit: an integer parameter as given;
        ``"auto"``, one task per worker of a ``distributed.Client`` (its workers when the
        fit starts) and 1 on the local schedulers.  ``keep``: a model being continued
        (warm start, a later ``partial_fit``) keeps the ``K`` it was fitted with under
        ``"auto"``, so workers that joined or left since do not change its rounds."""
        if self.capabilities.execution == "sequential":
            self.chunks_per_round_ = 1
            return
        if not isinstance(self.chunks_per_round, str):
            self.chunks_per_round_ = int(self.chunks_per_round)
        elif not (keep and getattr(self, "chunks_per_round_", None) is not None):
            self.chunks_per_round_ = auto_tasks_per_round(sched)

    def _check_params(self) -> None:
        """Checks that involve several parameters (families override)."""

    # ------------------------------------------------------------------ inputs
    def _fit_data(self, X, y, *, reset: bool, sample_weight=None) -> ChunkedData:
        """Any accepted input as :class:`ChunkedData`, checked against the fit: ``X``, ``y``
        and ``sample_weight`` (supervised families), ``X`` and ``sample_weight``
        (unsupervised: ``y`` is not used, as in scikit-learn), or the two samples ``X_p =
        X`` and ``X_q = y`` paired chunk by chunk (two-sample families, see
        :func:`~ooc_kernels.estimators._inputs.two_sample_data`)."""
        inputs = self.capabilities.inputs
        if inputs == "two_sample":
            if sample_weight is not None:
                raise ValidationError(
                    f"{type(self).__name__} learns from two samples and takes no "
                    "sample_weight; drop it (or repeat rows to weight them)."
                )
            first = named_sample(self._samples(X, None, reset=reset, name="X_p"), X)
            return two_sample_data(
                first, named_sample(self._samples(y, None, reset=None, name="X_q"), y))
        if inputs == "unsupervised":
            return _with_sample_weight(unsupervised_data(self._samples(X, None, reset=reset)),
                                       sample_weight)
        return _with_sample_weight(numeric_targets(self, self._samples(X, y, reset=reset)),
                                   sample_weight)

    def _samples(self, X, y, *, reset: bool | None, name: str = "X") -> ChunkedData:
        """One input (with its targets ``y`` for supervised families) as
        :class:`ChunkedData`; ``reset``: record its features as the model's (True), check
        them against the model's (False), or neither (None)."""
        skip = getattr(self, "on_invalid", "error") == "skip"   # families without it: error
        supervised = self.capabilities.needs_y
        if X is None and self.capabilities.inputs == "two_sample":
            raise ValidationError(
                f"{type(self).__name__}.fit needs {name}, got None; pass an array, a Dask "
                "array, a Dataset or a catalog entry."
            )
        if _is_chunked_input(X):
            X = opened_input(X)   # an Intake reader is read once: its rows and its labels
            data = check_row_input(self, as_chunked(
                X, y, chunk_size=self.chunk_size, require_y=supervised, check_y=not skip),
                name)
            if reset:
                self.n_features_in_ = data.n_features
                if data.feature_names is not None:
                    self.feature_names_in_ = np.asarray(data.feature_names, dtype=object)
                elif hasattr(self, "feature_names_in_"):
                    del self.feature_names_in_
                record_feature_coords(self, X)
            elif reset is not None:
                self._check_lazy_features(data)
            check_feature_coords(self, X, name)   # xarray feature labels in fit's order
            return data
        raw = X   # a frame's column names, against the labels of an xarray fit
        if reset is None:
            from sklearn.utils.validation import check_array

            X = sklearn_validated(check_array, X, dtype=[np.float64, np.float32],
                                  ensure_all_finite=not skip, input_name=name)
        elif supervised:  # with skip, NaN/inf in y too are rows to leave out
            X, y = validated_xy(self, X, y, reset=reset, skip=skip)
        else:
            X = sklearn_validated(validate_data, self, X, reset=reset,
                                  dtype=[np.float64, np.float32], ensure_all_finite=not skip)
        if reset:
            record_feature_coords(self, raw)   # none in memory: a refit forgets them
        else:
            check_feature_coords(self, raw, name)
        chunk = self.chunk_size
        if self._holds_out_validation():  # enough whole chunks to hold some out
            chunk = min(chunk, max(1, math.ceil(len(X) * self.validation_fraction)))
        if skip:  # invalid rows are dropped chunk by chunk by the solver
            X = da.from_array(X, chunks=(chunk, X.shape[1]))
            if y is not None:
                y = da.from_array(np.asarray(y), chunks=(X.chunks[0],))
        # X in memory was checked for NaN and inf above: not twice (y keeps its lazy check,
        # whose name is part of the data's token in checkpoints written before)
        return as_chunked(X, y, chunk_size=chunk, require_y=supervised, check_y=not skip,
                          lazy_token=self._lazy_data_token, ensure_all_finite=False)

    def _check_lazy_features(self, data: ChunkedData) -> None:
        """A lazy input after fit: its number of features, and its column names when both
        it and the training data had names (as scikit-learn checks in-memory frames)."""
        if data.n_features != self.n_features_in_:
            raise ValidationError(
                f"X has {data.n_features} features, but {type(self).__name__} is "
                f"expecting {self.n_features_in_} features as input."
            )
        fitted = getattr(self, "feature_names_in_", None)
        if fitted is not None and data.feature_names is not None \
                and tuple(fitted) != data.feature_names:
            raise ValidationError(
                f"The feature names should match those that were passed during fit: "
                f"fitted with {list(fitted)}, got {list(data.feature_names)}; select and "
                "order the columns as in fit, e.g. X[list(model.feature_names_in_)]."
            )

    def _predict_data(self, X) -> tuple[ChunkedData | np.ndarray, bool]:
        """Lazy inputs as :class:`ChunkedData`; in-memory inputs as the validated array.

        Factorized data ``A = U V`` is :class:`ChunkedData` with ``U`` for a family that
        declares ``capabilities.factorized``, a ``ValidationError`` for the others."""
        check_is_fitted(self, "_state")
        if _is_chunked_input(X):
            X = opened_input(X)
            data = check_row_input(self, as_chunked(X, chunk_size=self.chunk_size))
            self._check_lazy_features(data)
            check_feature_coords(self, X)
            return data, True
        checked = sklearn_validated(validate_data, self, X, reset=False,
                                    dtype=[np.float64, np.float32])
        check_feature_coords(self, X)
        return checked, False

    def _holds_out_validation(self) -> bool:
        """Whether the fit holds whole chunks out to stop early (``early_stopping``): in-memory
        input is then cut into chunks of ``validation_fraction`` of the rows at most, and
        :meth:`_split_validation` chooses the held-out ones."""
        return bool(getattr(self, "early_stopping", False))

    def _split_validation(self, data: ChunkedData) -> tuple[ChunkedData, ChunkedData | None]:
        """``(training chunks, held-out chunks)``: whole chunks, chosen from the seed."""
        if not self._holds_out_validation():
            return data, None
        if data.n_chunks < 2:
            raise ValidationError(
                f"early_stopping holds out whole chunks, but the data has {data.n_chunks} "
                "chunk; give it more chunks (rechunk it, e.g. ds.chunk({'sample': N}) or "
                "X.rechunk({0: N})) or set early_stopping=False."
            )
        n_val = min(data.n_chunks - 1, max(1, round(self.validation_fraction * data.n_chunks)))
        rng = np.random.default_rng(derive_seed(self.random_seed_, 5) % 2**63)
        held = np.sort(rng.choice(data.n_chunks, size=n_val, replace=False))
        kept = np.setdiff1d(np.arange(data.n_chunks), held)
        self.validation_chunks_ = held.tolist()

        def pick(ids):
            return data.replace(variables={k: v.blocks[ids.tolist()]
                                           for k, v in data.variables.items()})

        return pick(kept), pick(held)

    # ------------------------------------------------------------------ fitting
    def _seed(self) -> None:
        rs = check_random_state(self.random_state)
        self.random_seed_ = int(rs.randint(0, 2**31 - 1))
        self._data_seed = derive_seed(self.random_seed_, 2)
        self._n_epochs_done = 0
        self.history_ = []
        self._monitor_state = None

    def _model_params(self) -> dict:
        """The hyperparameters that define the fitted model (:func:`model_params`)."""
        return model_params(self)

    def _check_unchanged_params(self, action: str) -> None:
        """:func:`check_unchanged_params` before ``action`` (a continuation or a save)."""
        check_unchanged_params(self, action)

    def _start(self, data: ChunkedData, sched, classes=None) -> None:
        """The family's model for ``data`` (after :meth:`_seed`)."""
        try:  # the classes of y are read with the rows of _setup_draw, in one computation
            if self._is_classifier:
                self.classes_ = self._resolve_classes(data, classes, sched)
            # one BLAS thread for the whole set-up, not only inside each of its steps: with
            # two fits in threads of one process, a limit that ends between two steps lets
            # the other fit's BLAS calls run multi-threaded against it (OpenBLAS then
            # spins); the set-up's own kernels use the fit's threads (``n_jobs``, where the
            # estimator has it)
            threads = task_threads(self.n_jobs) if "n_jobs" in self.get_params() else 1
            with single_threaded_blas(), kernel_threads(threads):
                self._initialize(data, sched, classes=getattr(self, "classes_", None))
            self._fitted_params = self._model_params()  # what a continuation must keep
        finally:
            # read for this set-up only
            for name in ("_setup_sample_read", "_setup_label_counts"):
                self.__dict__.pop(name, None)

    def _setup_draw(self, data: ChunkedData):
        """The rows the family's set-up samples, as a
        :class:`~ooc_kernels.parallel.sampling.RowDraw` (unread), for a classifier to read
        them with the classes of ``y`` in one computation (``_setup_sample_read``, and the
        labels' counts ``_setup_label_counts``, which the family's set-up takes); None
        (here): the family reads its own."""
        return None

    def _resolve_shuffle_chunks(self, data: ChunkedData) -> int:
        """Chunks whose rows one task mixes (see the ``shuffle_chunks`` parameter); 1 in the
        ``"sequential"`` execution mode."""
        if self.capabilities.execution == "sequential":
            return 1
        if not isinstance(self.shuffle_chunks, str):
            return int(min(self.shuffle_chunks, data.n_chunks))
        if not self.shuffle:
            return 1
        # the fewest whole rounds of K groups whose groups fit the memory budget
        # (the largest chunk of every sample variable: two samples have chunks of their own)
        chunk_bytes = sum(max(a.chunks[0]) * int(np.prod(a.shape[1:], dtype=np.int64))
                          * a.dtype.itemsize for a in data.variables.values())
        by_memory = max(1, SHUFFLE_BYTES // max(chunk_bytes, 1))
        k = self._tasks_per_round
        n_rounds = -(-data.n_chunks // (k * by_memory))
        n_groups = min(data.n_chunks, k * n_rounds)
        return int(-(-data.n_chunks // n_groups))

    def _monitor(self):
        mon = EpochMonitor(tol=getattr(self, "tol", None) if self._sgd_stopping else None,
                           n_iter_no_change=getattr(self, "n_iter_no_change", 1),
                           early_stopping=bool(getattr(self, "early_stopping", False)),
                           loss_scale=self._tol_loss_scale)
        return mon.restore(getattr(self, "_monitor_state", None))

    def _run(self, data: ChunkedData, sched, *, start: tuple[int, int], end_epoch: int,
             writer=None, validation: ChunkedData | None = None,
             stopping: bool = True, resumed: bool = False, finish: bool = False) -> None:
        """Run the engine from ``start`` to ``end_epoch``, then end the fit
        (:meth:`_end_fit`: the last checkpoint, the finishing hook, the public attributes)."""
        if data.n_features != self.n_features_in_:
            raise ValidationError(
                f"X has {data.n_features} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input."
            )
        monitor = self._monitor()
        totals = self._training_loss(self._state)
        if start[1] > 0 and totals is not None:
            # resumed half way through an epoch: the epoch is scored from its first round
            if monitor.epoch_start is None:
                raise CheckpointError(
                    f"the checkpoint stops in epoch {start[0]}, round {start[1]}, but holds "
                    "no training-loss totals of that epoch's start, so the epoch's loss and "
                    "the stopping rule cannot be computed; remove the checkpoint (or pass "
                    f"{START_OVER}) to start the fit again."
                )
            totals = tuple(monitor.epoch_start)
        else:
            monitor.begin_epoch(totals)
        self._monitor_state = monitor.to_json()  # checkpoints of this epoch carry its start
        if resumed and stopping and start[1] == 0 and monitor.stop_reason is not None \
                and not self._stop_holds(monitor.stop_reason):
            monitor.stop_reason = None    # tol lowered, or a time limit: the fit goes on
            self._monitor_state = monitor.to_json()
        if resumed and stopping and start[1] == 0 and monitor.stop_reason is not None:
            # the checkpoint was written when the stopping rule ended the fit: it is final
            self.shuffle_chunks_ = self._resolve_shuffle_chunks(data)
            self._n_epochs_done = self.n_iter_ = start[0]
            self.history_ = list(monitor.history)
            self.stop_reason_ = monitor.stop_reason
            self._end_fit(data, sched, writer, finish)
            return
        clock = {"epoch": time.perf_counter(), "loss": totals, "whole": start[1] == 0}

        def after_round(state, info):
            self._after_round(state, info)
            if writer is not None:
                writer(state, info)

        def after_epoch(state, epoch):
            self._state = state
            loss = _epoch_loss(clock["loss"], self._training_loss(state))
            if loss is None and clock["whole"] and "sample_weight" in data \
                    and _epoch_weight(clock["loss"], self._training_loss(state)) == 0:
                # lazy weights are read with their rows: the first whole epoch sees them all
                raise zero_weights_error(f"epoch {epoch + 1}, a pass over every chunk; "
                                         "rows left out as non-finite not counted")
            score = self._validation_score(validation, sched) if validation is not None \
                else None
            report, reason = self._epoch_report(state, epoch, data, sched)
            now = time.perf_counter()
            stop = monitor.end_epoch(epoch, loss, score, now - clock["epoch"],
                                     **self._history_extra(state), **report)
            self._epoch_ended(state, monitor)
            if reason is not None and monitor.stop_reason is None:
                monitor.stop_reason, stop = reason, True
            clock.update(epoch=now, loss=self._training_loss(state), whole=True)
            monitor.begin_epoch(clock["loss"])
            self._n_epochs_done = epoch + 1
            self._monitor_state = monitor.to_json()
            self.history_ = list(monitor.history)
            if getattr(self, "verbose", 0):
                self._print_epoch(monitor.history[-1])
            return stop and stopping

        self.shuffle_chunks_ = self._resolve_shuffle_chunks(data)
        sequential = self.capabilities.execution == "sequential"
        runner = self._rounds_runner(data, sched, writer=writer, start=start)
        result = runner(self._make_algorithm(), self._state, self._engine_data(data),
                            n_epochs=end_epoch, execution=self.capabilities.execution,
                            chunks_per_round=self._tasks_per_round, seed=self._data_seed,
                            shuffle=False if sequential else bool(self.shuffle),
                            shuffle_chunks=self.shuffle_chunks_, start_epoch=start[0],
                            start_round=start[1], scheduler=sched, progress=self.progress,
                            desc=type(self).__name__, callback=after_round,
                            epoch_callback=after_epoch)
        self._state = result.state
        self._n_epochs_done = result.epoch
        self.n_iter_ = result.epoch
        self.stop_reason_ = monitor.stop_reason if result.stopped else (
            max_iter_reason(end_epoch) if stopping else None)
        self._end_fit(data, sched, writer, finish)
        monitor.warn_unconverged(self)   # ConvergenceWarning: max_iter reached with a tol

    def _stop_holds(self, reason: str) -> bool:
        """Whether the stop that ended a checkpoint's fit (its ``stop_reason_``) still ends
        a fit resumed from it with this estimator's parameters; families whose stopping
        parameters may change on resume (``_resumable_params``) judge it again."""
        return True

    def _end_fit(self, data: ChunkedData, sched, writer, finish: bool) -> None:
        """After the engine's last round: the last checkpoint (of the rounds' state, so a
        fit resumed from it finishes once more), the finishing hook if ``finish``, and
        the public fitted attributes."""
        if not finish:
            self._publish()
        if writer is not None:
            writer.write(self._state, (self._n_epochs_done, 0))
        if finish:
            self._state = self._finish(self._state, data, sched)
            self._publish()

    def _print_epoch(self, entry: dict) -> None:
        parts = [f"-- Epoch {entry['epoch'] + 1}"]
        parts += [f"{k}: {v:.6g}" if isinstance(v, float) else f"{k}: {v}"
                  for k, v in entry.items() if k not in ("epoch",) and v is not None]
        print(", ".join(parts), flush=True)

    def _validation_score(self, data: ChunkedData, sched) -> float:
        """The estimator's score on held-out chunks (a Dask reduction)."""
        return self._score_chunked(data, sched)

    def _rounds_runner(self, data: ChunkedData, sched, *, writer, start: tuple[int, int]):
        """The function that runs the fit's rounds, with the signature of
        :func:`~ooc_kernels.parallel.engine.run_rounds` (which it is, unless a family runs
        data held in memory another way)."""
        return run_rounds

    def _engine_data(self, data: ChunkedData) -> ChunkedData:
        """The data as the algorithm reads it (families may convert dtypes here)."""
        return data

    def fit(self, X, y=None, sample_weight=None, *, checkpoint=None, checkpoint_every=1,
            resume=False):
        """Fit the model with up to ``max_iter`` passes over the data, out of core.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), pandas or Dask DataFrame, Dask
            array, xarray.Dataset or DataArray, or Intake reader
            Dask, Zarr and DataFrame inputs are read chunk by chunk, never as a whole.
        y : array-like, Dask array or Series of shape (n_samples,), optional when ``X`` is
            a Dataset with a ``y`` variable.
        sample_weight : array-like or Dask array of shape (n_samples,), optional
            Each row's weight: its gradient (and loss) is multiplied by it.
        checkpoint : str or path-like, optional
            Zarr folder where the fit's state is written every ``checkpoint_every`` rounds
            and at the end, atomically (a crash while writing keeps the previous one).  An
            existing ``checkpoint`` is replaced only if it is a checkpoint of this library;
            anything else there (a folder of other files, a file, a model, a symbolic
            link) raises :class:`~ooc_kernels.exceptions.ForeignPathError` before any work.
            A fit holds its checkpoint while it runs: a second fit on the same path (another
            process, thread or estimator) raises
            :class:`~ooc_kernels.exceptions.CheckpointInUseError` before any work.
        checkpoint_every : int, default=1
            Rounds between checkpoints.
        resume : bool, default=False
            Continue from ``checkpoint`` if it exists.  The result is bit-identical to an
            uninterrupted fit.  A checkpoint of another dataset, other hyperparameters
            (``max_iter`` may grow) or another library version is refused.

        Returns
        -------
        self
        """
        from ooc_kernels.estimators._checkpointing import (
            CheckpointWriter,
            expand_user,
            holding_checkpoint,
            lost_scheduler_hint,
            read_resume_checkpoint,
            resume_end,
            resume_position,
        )

        self._validate_params()
        checkpoint = expand_user(checkpoint)  # '~/ck.zarr' is in the home folder
        if resume and checkpoint is None:
            raise ValidationError(
                "resume=True needs the checkpoint path: pass checkpoint=PATH as well."
            )
        warm = bool(getattr(self, "warm_start", False)) and hasattr(self, "_state")
        writer = ck = None  # a lost scheduler's error says which checkpoint to resume from
        # before any work: never a user's folder, never a checkpoint another fit writes
        with holding_checkpoint(checkpoint, resume), \
                scheduler_context(self.scheduler) as sched, reporting_scheduler_loss(
                sched, lambda: lost_scheduler_hint(writer, checkpoint, ck is not None)):
            data = self._fit_data(X, y, reset=not warm, sample_weight=sample_weight)
            ck = read_resume_checkpoint(checkpoint) if (checkpoint is not None and resume) \
                else None
            end = self.max_iter
            if ck is not None:
                self.chunks_per_round_ = None  # the checkpoint's K (restored with its model)
                start = resume_position(self, ck, data, checkpoint)
                # a warm_start continuation ends max_iter epochs after where it started
                end = resume_end(self, ck.meta, f"checkpoint {str(checkpoint)!r}")
                if self.chunks_per_round_ is None:  # written with an integer parameter
                    self._resolve_tasks_per_round(sched, keep=False)
                train, val = self._split_validation(data)
            elif warm:
                self._check_unchanged_params("a warm_start fit")
                self._fitted_params = self._model_params()  # with a switched mode, if any
                self._check_lazy_features(data)
                self._resolve_tasks_per_round(sched, keep=True)
                start = (self._n_epochs_done, 0)
                end = self._n_epochs_done + self.max_iter
                train, val = self._split_validation(data)
            else:
                self._seed()
                self._resolve_tasks_per_round(sched, keep=False)
                train, val = self._split_validation(data)
                self._start(train, sched)
                start = (0, 0)
            writer = None
            if checkpoint is not None:  # validates checkpoint_every before any work
                writer = CheckpointWriter(self, data, checkpoint, checkpoint_every, end)
                if ck is not None:
                    writer.position = tuple(start)
            self._run(train, sched, start=start, end_epoch=end, writer=writer,
                      validation=val, resumed=ck is not None,
                      finish=self.capabilities.finishing)
        return self

    @classmethod
    def _upgrade_saved(cls, meta: dict, version: int) -> dict:
        """The metadata of a model of an older ``version`` as the current format.

        Formats 2 and 3 have the same metadata (3 adds checksums); format 1 existed for
        families that override this method only.
        """
        if version == 1:
            raise ModelFormatError(
                f"model format 1 holds DSG models only, not {cls.__name__}: the file's "
                "format_version was edited; re-save the model or restore it from a backup."
            )
        return meta

    def _partial_fit_available(self) -> bool:
        """Families whose solver has no incremental form override this to raise
        ``AttributeError`` with the reason (``hasattr(est, "partial_fit")`` is then False,
        as for scikit-learn's estimators without it)."""
        return True

    @available_if(lambda self: self._partial_fit_available())  # the family's override
    def partial_fit(self, X, y=None, classes=None, sample_weight=None):
        """One pass over ``X`` continuing from the current model (initializing it if needed).

        The stopping rule does not apply: every call is one epoch (``history_`` records it).

        Parameters
        ----------
        X, y, sample_weight : as in :meth:`fit`.
        classes : array-like, optional
            All the classes (classifiers): required on the first call unless ``X`` is a
            Dataset whose ``classes`` attribute lists them.

        Returns
        -------
        self
        """
        self._validate_params()
        first = not hasattr(self, "_state")
        if not first:
            self._check_unchanged_params("partial_fit")
            self._fitted_params = self._model_params()
        with scheduler_context(self.scheduler) as sched:
            data = self._fit_data(X, y, reset=first, sample_weight=sample_weight)
            self._resolve_tasks_per_round(sched, keep=not first)
            if first:
                self._seed()
                self._start(data, sched, classes=classes)
            elif classes is not None and self._is_classifier:
                given = np.unique(np.asarray(classes))
                if not np.array_equal(given, self.classes_):
                    raise ValidationError(
                        f"classes={given.tolist()} differs from the classes of the first "
                        f"partial_fit call ({self.classes_.tolist()}); pass the same list."
                    )
            self._run(data, sched, start=(self._n_epochs_done, 0),
                      end_epoch=self._n_epochs_done + 1, stopping=False,
                      finish=self.capabilities.finishing and self._finish_after_partial_fit)
        return self

    def save(self, path) -> None:
        """Write the fitted model to a Zarr group at ``path`` (atomically, no pickle).

        See :func:`ooc_kernels.load`.
        """
        from ooc_kernels.estimators.persistence import save_model

        self._check_unchanged_params("save")
        save_model(self, path)


def _epoch_weight(before, after) -> float | None:
    """The weight of one epoch's rows from two running ``(loss_sum, weight_sum)`` totals."""
    return None if before is None or after is None else after[1] - before[1]


def _epoch_loss(before, after) -> float | None:
    """Mean loss of one epoch from two running ``(loss_sum, weight_sum)`` totals."""
    if before is None or after is None:
        return None
    weight = after[1] - before[1]
    return (after[0] - before[0]) / weight if weight > 0 else None
