"""Regularized linear models solved out of core by DSPDC with a certified duality gap.

:class:`DSPDCRegressor` (squared loss) and :class:`DSPDCClassifier` (logistic or smoothed
hinge, two classes) minimize

    P(x) = (1/W) sum_i w_i phi(a_i^T x, y_i) + alpha * (l1_ratio * ||x||_1
           + (1 - l1_ratio) / 2 * ||x||_2^2)

(the meaning of ``alpha`` and ``l1_ratio`` in scikit-learn's ``SGDClassifier`` and
``ElasticNet``), with row weights ``w_i`` (``sample_weight``, times ``class_weight`` for the
classifier; 1 by default) and ``W = sum_i w_i`` (``n`` without weights): a weight of ``k``
counts as ``k`` copies of the row and a weight of 0 as no row.  It is solved on dense data ``X`` or on factorized data ``A = U V``
(:class:`~ooc_kernels.data.factorized.Factorized`, or a dataset with ``U`` and ``V``).  Every
``gap_every`` epochs the duality gap of an epoch's end is evaluated: its primal value from the
losses that the next epoch's tasks sum on the rows they read (no pass of its own), its dual
value from the state.  The fit stops when the relative duality gap ``(P - D) / |P|`` is at
most ``tol`` and returns that iterate (a certificate: ``P(coef_) - P* <= P - D``), or after
``max_iter`` epochs (the last iterate's gap from a pass of its own), or after
``max_time`` seconds, whichever comes first (``stop_reason_`` says which).  See
``docs/algorithms/dspdc_rounds.md`` and ``docs/dspdc.md``.
"""

from __future__ import annotations

import time
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels._capabilities import Capabilities
from ooc_kernels._paths import PATH_TYPES
from ooc_kernels.estimators._constraints import Interval, StrOptions
from ooc_kernels.estimators._hyperparams import TOL_CONSTRAINT
from ooc_kernels.estimators._inputs import checked_class_weights, weight_scale
from ooc_kernels.families.dspdc._chunk_tasks import (
    _chunk_weights,
    _factorized_block,
    _is_lazy,
)
from ooc_kernels.families.dspdc._direct import held_in_memory
from ooc_kernels.families.dspdc import _memory_inputs as _inputs
from ooc_kernels.families.dspdc._gap_report import DualityGapReport
from ooc_kernels.families.dspdc._docstrings import _ATTRIBUTES_DOC, _BASE_DOC, _PARAMS_DOC
from ooc_kernels.families.dspdc._saved import (
    _check_config_fields,
    _counters,
    _local_problems,
    _restored_start,
    _saved_config,
    _saved_loss_id,
    _saved_state,
    _start_arrays,
    _store_name,
    _tail_sums,
)
from ooc_kernels.families.dspdc._ooc_newton import logistic_start_out_of_core
from ooc_kernels.families.dspdc._setup_pass import (
    resolve_local_passes,
    resolve_max_local_passes,
    resolve_permuted_rows,
    rows_in_memory,
    setup_statistics,
)
from ooc_kernels.families.dspdc._step_rule import final_entries
from ooc_kernels.families.dspdc._work import WorkStores
from ooc_kernels.estimators._registry import register_estimator
from ooc_kernels.estimators.base import (
    BASE_CONSTRAINTS,
    ChunkedClassifierMixin,
    ChunkedEstimator,
    ChunkedRegressorMixin,
)
from ooc_kernels.exceptions import (
    DivergenceError,
    ModelFormatError,
    ValidationError,
)
from ooc_kernels.losses import get_loss, losses_for
from ooc_kernels.parallel.cluster import compute

__all__ = ["DSPDCRegressor", "DSPDCClassifier"]

#: The losses of the table that DSPDC offers, by target kind.
_REGRESSION_LOSSES = losses_for("dspdc", target="real")
_CLASSIFICATION_LOSSES = losses_for("dspdc", target="binary")

_CONSTRAINTS = {
    **BASE_CONSTRAINTS,
    "alpha": [Interval(Real, 0, None, closed="neither")],
    "l1_ratio": [Interval(Real, 0, 1, closed="left")],
    "fit_intercept": ["boolean"],
    "standardize": ["boolean"],
    "intercept_scaling": [Interval(Real, 0, None, closed="neither")],
    "m": [Interval(Integral, 1, None, closed="left")],
    "q": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
    "local_passes": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
    "Lambda": [Interval(Real, 0, None, closed="neither"),
               StrOptions({"exact", "upper_bound", "heuristic"})],
    "mode": [StrOptions({"gap", "distance"})],
    "steps": [StrOptions({"adaptive", "theorem"})],
    "sampling": [StrOptions({"auto", "uniform", "permutation"})],
    "theta": [Interval(Real, 0, None, closed="left"), None],
    "tau": [Interval(Real, 0, None, closed="neither"), None],
    "sigma": [Interval(Real, 0, None, closed="neither"), None],
    "tol": TOL_CONSTRAINT,
    "max_time": [Interval(Real, 0, None, closed="neither"), None],
    "gap_every": [Interval(Integral, 1, None, closed="left")],
    "work_dir": [*PATH_TYPES, None],     # str, bytes, os.PathLike: _paths.user_path
}
_CONSTRAINTS.pop("on_invalid")

#: The first ``step_boost`` of ``steps="adaptive"`` by loss: the steps of a problem 100 (squared
#: loss) or 30 times more strongly convex (``benchmarks/dspdc_steps.py --sweep``,
#: ``benchmarks/dspdc_first_boost.py``).
STEP_BOOST = {"squared": 100.0, "logistic": 30.0, "smoothed_hinge": 30.0}
class _DSPDCEstimator(DualityGapReport, ChunkedEstimator):
    """Shared machinery of the DSPDC estimators."""

    _sgd_stopping = False
    _lazy_data_token = True      # a fit on rows held in memory never asks for the token
    # where a fit writes belongs to whoever runs it: never saved; a file's work_dir dropped
    _runtime_params = ("scheduler", "progress", "work_dir")
    _dropped_params = ("work_dir",)
    _resumable_params = ("max_iter", "tol", "max_time", "gap_every")
    # checkpoints and models written before ``standardize``, ``steps`` and ``sampling``
    # existed solved the raw problem with the theorems' steps, rows drawn independently
    # (what ``sampling="auto"`` gives a checkpointed fit)
    _absent_params = {"standardize": False, "steps": "theorem", "sampling": "auto"}
    _saved_arrays = {"x": True, "w": True, "versions": True, "V": False, "start_x": False,
                     "start_w": False, "start_versions": False}
    # the contract suite's small problems, solved to tol within max_iter (no warning)
    _test_params = {"alpha": 0.1, "max_iter": 40, "tol": 1e-4}
    # the duality-gap rule ends the contract suite's fit after 4-5 epochs
    _stopping_test_params = {"alpha": 0.05, "tol": 0.05}

    # ------------------------------------------------------------------ set-up
    def _factorized(self, data) -> bool:
        return "U" in data

    def _resolve_shuffle_chunks(self, data) -> int:
        if _inputs.one_group_in_memory(self, data):   # rows in memory: one task per round
            return int(data.n_chunks)
        return super()._resolve_shuffle_chunks(data)

    def fit(self, X, y=None, sample_weight=None, *, checkpoint=None, checkpoint_every=1,
            resume=False):
        """Fit to a relative duality gap ``tol`` (see the class docstring).

        Parameters are those of :meth:`ChunkedEstimator.fit`.  ``sample_weight`` (in memory,
        or a Dask array such as ``ds["weight"].data``, read chunk by chunk with the rows)
        weighs each row's loss: the problem is ``(1/W) sum_i w_i phi_i(a_i^T x) + g(x)``
        with ``W = sum_i w_i``, so a weight of ``k`` is ``k`` copies of the row and a weight
        of 0 removes it; the duality gap certifies that weighted problem.  The duals live in
        a work store private to this fit (in ``work_dir``, or beside ``checkpoint``), locked
        while the fit runs, so that concurrent fits never share one and a resumed fit
        continues exactly (``ooc_kernels/families/dspdc/_work.py``).

        Raises
        ------
        CheckpointInUseError
            Another fit is writing ``checkpoint`` right now.
        ForeignPathError
            ``checkpoint + ".work"`` exists and is not a work folder of this library.
        ValidationError
            The weights (``sample_weight`` times ``class_weight``) sum to 0, or
            ``class_weight`` names a label that is not a class.
        InvalidDataError
            A sample weight in a lazy input is negative or not finite (named by chunk and
            row).

        Warns
        -----
        ConvergenceWarning
            The fit stopped at ``max_iter`` or ``max_time`` with a relative duality gap
            above ``tol``.
        """
        self._validate_params()
        self._checkpoint_path = checkpoint
        self._checkpointed = None      # versions the last checkpoint needs (set on resume)
        self._fit_start = time.perf_counter()
        self._work = WorkStores(self.work_dir, checkpoint)
        self._in_memory_input = held_in_memory(X, y, sample_weight)
        self._rows_in_memory = rows_in_memory(X)   # local_passes="auto"
        self._memory_inputs = (X, y, sample_weight) if self._in_memory_input else None
        try:
            if checkpoint is not None:
                self._work.claim_checkpoint()
            # one BLAS limit for the set-up and the rounds: their own limits are then
            # nested, and the loaded libraries are looked up once per fit, not twice
            with single_threaded_blas():
                super().fit(X, y, sample_weight=sample_weight, checkpoint=checkpoint,
                            checkpoint_every=checkpoint_every, resume=resume)
        finally:
            self._work.close()
            self._work = None
            self._direct_rows = None      # the in-memory path's rows: this fit's only
            self._memory_inputs = self._memory = None   # (its chunks: fit_memory_chunks)
        self._warn_unconverged()
        return self

    def _warn_unconverged(self) -> None:
        """A :class:`~sklearn.exceptions.ConvergenceWarning` when the fit stopped at
        ``max_iter`` or ``max_time`` with a relative gap above ``tol``."""
        reason = getattr(self, "stop_reason_", None) or ""
        if self.tol is None or not reason.startswith(("max_iter", "max_time")):
            return
        last = self.gap_history_[-1] if self.gap_history_ else None
        if last is not None and last["relative_gap"] <= self.tol:
            return
        reached = ("no duality gap was evaluated" if last is None else
                   f"the relative duality gap (P - D) / |P| is {last['relative_gap']:.3g} "
                   f"(gap {last['gap']:.3g}, primal {last['primal']:.6g})")
        stopped = reason.split(": ", 1)[-1]
        warnings.warn(
            f"{type(self).__name__} stopped ({stopped}) after {self.n_iter_} epochs before "
            f"converging: {reached}, above tol={self.tol}. Raise max_iter (or max_time), "
            "loosen tol, " + ("or raise alpha (the problem is ill-conditioned when alpha * "
                              "n_samples is small against the squared norms of the "
                              "standardized rows)." if self.standardize else
                              "raise alpha, or set standardize=True (columns on very "
                              "different scales make the problem ill-conditioned)."),
            ConvergenceWarning, stacklevel=2)

    def _partial_fit_available(self) -> bool:
        raise AttributeError(
            f"{type(self).__name__} has no partial_fit: DSPDC solves one regularized "
            "problem over the whole data (its duals belong to the rows); call fit on all "
            "of the data, which is read chunk by chunk."
        )

    def _initialize(self, data, sched, classes=None) -> None:
        from ooc_kernels.families.dspdc.solver import LOSSES, DSPDCConfig, init_state

        factorized = self._factorized(data)
        p = data.n_features + (1 if self.fit_intercept else 0)
        q = p if self.q == "auto" else min(int(self.q), p)
        m = int(self.m)
        scaling = float(self.intercept_scaling) if self.fit_intercept else 0.0
        weighting = self._weighting(data, classes, sched)
        chunks, defer, value = _inputs.setup_inputs(self, data, sched)  # in memory: no Dask
        whole = data.delayed_whole()
        name = "U" if factorized else "X"
        sws = chunks.get("sample_weight", [None] * data.n_chunks)
        rows_weighting = {**weighting, "classes": None if classes is None
                          else tuple(np.asarray(classes).tolist())}
        row_w = [defer(_chunk_weights)(rows_weighting, sw, yk) if weighting else None
                 for sw, yk in zip(sws, chunks["y"])]
        V = None
        if factorized:
            V = np.asarray(compute(whole["V"], scheduler=sched)[0], dtype=np.float64)
        # the column moments and Lambda's statistics: one read of the rows, or two (the
        # first checks a lazy X for NaN/inf; U is checked as its chunks are read)
        checked = factorized or _inputs.fit_memory_chunks(self, data) is not None
        scaled, Lambda, self._setup_reads = setup_statistics(
            self, chunks[name], row_w, defer, value, V=V, n_features=data.n_features, m=m,
            q=q, scaling=scaling, factorized=factorized, ys=chunks["y"],
            check=None if checked else name)
        local_passes = resolve_local_passes(self, data)
        self._config = DSPDCConfig(
            loss_id=LOSSES[self.loss], n_samples=data.n_samples, n_features=p,
            lam1=self.alpha * self.l1_ratio, lam2=self.alpha * (1 - self.l1_ratio),
            Lambda=float(Lambda), m=m, q=q, local_passes=local_passes,
            max_local_passes=resolve_max_local_passes(self, local_passes),
            mode=self.mode, theta=self.theta, tau=self.tau, sigma=self.sigma,
            classes=None if classes is None else tuple(np.asarray(classes).tolist()),
            work_store=self._work.new_store(), factorized=factorized,
            intercept_scaling=scaling, **weighting, **scaled,
            step_boost=STEP_BOOST[self.loss] if self.steps == "adaptive" else 1.0,
            mean_lambda=self.steps == "adaptive", permuted_rows=resolve_permuted_rows(self))
        self._config = logistic_start_out_of_core(self, self._config, chunks[name],
                                                  chunks["y"], row_w, defer, value)
        self._V = V
        rank = None if V is None else V.shape[0] + (1 if self.fit_intercept else 0)
        self._state = init_state(self._config, data.n_chunks, rank=rank)
        self.gap_history_, self._final_gaps = [], []
        self._local_problems = {}
        self._certified = None

    def _class_weights(self, data, classes, sched, sums) -> tuple | None:
        """The weights of ``classes`` (``class_weight``), or None (regression: none)."""
        return None

    def _weighting(self, data, classes, sched) -> dict:
        """The weighting fields of :class:`~ooc_kernels.families.dspdc.solver.DSPDCConfig`
        (``weighted``, ``class_weight``, ``weight_scale``), from one pass over
        ``sample_weight`` and ``y`` (never ``X``); empty when the problem is unweighted.

        Raises
        ------
        ValidationError
            The weights sum to 0 (nothing to learn from).
        InvalidDataError
            A sample weight is negative or not finite.
        """
        wanted = getattr(self, "class_weight", None) is not None
        if "sample_weight" not in data and not wanted:
            return {}
        sums = _inputs.weight_sums(self, data, classes, sched)   # over b = -1, over b = +1
        class_weight = self._class_weights(data, classes, sched, sums)
        total = float(sums @ (np.ones(2) if class_weight is None else class_weight))
        if not total > 0:
            raise ValidationError(
                "the row weights (sample_weight"
                + ("" if class_weight is None else
                   f" times class_weight {list(class_weight)}")
                + ") sum to 0, so there is nothing to learn from; give some samples a "
                "positive weight."
            )
        scale = weight_scale(
            total, data.n_samples, f"all {data.n_samples} rows"
            + ("" if class_weight is None else f", times class_weight {list(class_weight)}"),
            "rescale the weights, e.g. divide them by their largest: only their ratios "
            "matter to the model")
        return {"weighted": True, "class_weight": class_weight, "weight_scale": scale}

    def _make_algorithm(self):
        from ooc_kernels.families.dspdc.solver import DSPDCAlgorithm

        self._algorithm = DSPDCAlgorithm(self._config, V=self._augmented_V())
        self._algorithm.stop_rule = (self.tol, self.gap_every)
        return self._algorithm

    def _augmented_V(self):
        from ooc_kernels.families.dspdc.solver import augment_V

        return None if self._V is None else augment_V(self._V, self._config)

    def _after_round(self, state, info) -> None:
        if not (np.all(np.isfinite(state.x)) and np.isfinite(state.conj_sum)):
            raise DivergenceError(
                f"DSPDC produced non-finite coefficients in epoch {info.epoch}, round "
                f"{info.round} (Lambda={self._config.Lambda:.6g}); check the data for huge "
                "values, or give Lambda a larger value or smaller tau and sigma."
            )
        self._record_local_problems(info, state)
        # duals kept: the state's, the epoch start's, the tail's, a stopped fit's model's
        keep = [s.versions for s in (state, state.epoch_start, state.tail_state,
                                     getattr(self, "_certified", None)) if s is not None]
        if getattr(self, "_checkpointed", None) is not None:
            keep.append(self._checkpointed)
        if not getattr(self, "_direct_fit", False):   # in memory: the store holds nothing
            self._config.store.prune("y", keep, chunks=info.chunk_ids)

    def _record_local_problems(self, info, state=None) -> None:
        """The step parameters of the round's tasks, by (rows, tasks in the round): what
        :meth:`DSPDCAlgorithm.chunk_step` ran with (``state.local_steps``), or computed from
        the configuration when the state does not carry them."""
        from ooc_kernels.families.dspdc._local import local_step_parameters

        if state is not None and getattr(state, "local_steps", ()):
            for n_k, k, theta, tau, sigma in state.local_steps:
                self._local_problems[(n_k, k)] = (theta, tau, sigma)
            return
        k = len(info.groups)
        for n_k in info.group_rows:
            if n_k:   # the latest steps (adaptive steps change during a fit)
                _, theta, tau, sigma = local_step_parameters(self._config, n_k, k)
                self._local_problems[(n_k, k)] = (float(theta), float(tau), float(sigma))

    def _on_checkpoint(self, state) -> None:
        self._checkpointed = _saved_state(self).versions
        if getattr(self, "_work", None) is not None:
            self._work.checkpoint_written()

    def _rounds_runner(self, data, sched, *, writer, start):
        """The in-memory rounds (:mod:`ooc_kernels.families.dspdc._direct`) for data held in
        memory on a local scheduler, else the out-of-core engine."""
        from ooc_kernels.families.dspdc._direct import direct_applies, direct_runner
        from ooc_kernels.families.dspdc._memory_start import held_rows
        from ooc_kernels.families.dspdc._scatter_gap import setup_runner
        from ooc_kernels.parallel.cluster import active_client

        self._direct_rows, self._direct_fit = None, False
        if (runner := setup_runner(self, start)) is not None:   # certified at the set-up
            return runner
        if getattr(self, "_in_memory_input", False) and direct_applies(
                self._config, data, self._state, tasks_per_round=self._tasks_per_round,
                client=active_client(sched), writer=writer, start=start):
            self._direct_rows = held_rows(self, data)   # with the squared loss's start
            self._direct_fit = True
            return direct_runner(self._direct_rows)
        return super()._rounds_runner(data, sched, writer=writer, start=start)

    def _publish(self) -> None:
        from ooc_kernels.families.dspdc._scaling import raw_coefficients

        if getattr(self, "_certified", None) is not None:   # the iterate whose gap stopped
            self._state, self._certified = self._certified, None  # the fit: the model
        cfg, state = self._config, self._state
        self.coef_, self.intercept_ = raw_coefficients(cfg, state.x)
        self.Lambda_, self.local_passes_ = cfg.Lambda, cfg.local_passes
        self.max_local_passes_ = float(getattr(cfg, "max_local_passes", None)
                                       or cfg.local_passes)
        self.sampling_ = "permutation" if cfg.permuted_rows and cfg.m == 1 else "uniform"
        keys = sorted(self._local_problems)
        values = np.array([self._local_problems[key] for key in keys],
                          dtype=np.float64).reshape(-1, 3)
        self.local_rows_ = np.array([n_k for n_k, _ in keys], dtype=np.int64)
        self.local_tasks_ = np.array([k for _, k in keys], dtype=np.int64)
        self.theta_, self.tau_, self.sigma_ = (values[:, 0].copy(), values[:, 1].copy(),
                                               values[:, 2].copy())
        if getattr(self, "stop_reason_", None) and self.stop_reason_.startswith("max_iter="):
            self.stop_reason_ = f"max_iter: {self.stop_reason_}"

    # ------------------------------------------------------------------ prediction
    @property
    def _n_outputs(self) -> int:
        return 1

    @staticmethod
    def _predict_block(X, payload):
        coef, intercept = payload
        return (np.asarray(X, dtype=np.float64) @ coef + intercept)[:, None]

    def _predict_payload(self):
        return self.coef_, self.intercept_

    def _decision_2d(self, X):
        """Dense rows: ``X coef_ + intercept_``; factorized ``U V``: ``U (V coef_) +
        intercept_`` without forming ``U V``."""
        from ooc_kernels.data.factorized import Factorized

        check_is_fitted(self, "_state")
        data, lazy = self._predict_data(X)    # factorized by its variables, whatever names
        if lazy and "U" in data:
            V = np.asarray(compute(data.delayed_whole()["V"])[0], dtype=np.float64)
            U = data["U"]
            out = U.map_blocks(_factorized_block, V @ self.coef_, self.intercept_,
                               chunks=(U.chunks[0], (1,)), dtype=np.float64)
            return out if not isinstance(X, Factorized) or _is_lazy(X.U) else out.compute()
        return self._block_outputs(data, lazy, type(self)._predict_block,
                                   self._predict_payload(), 1, self._predict_dtype)

    # ------------------------------------------------------------------ persistence
    def _fitted_arrays(self) -> dict:
        state = _saved_state(self)
        arrays = {"x": np.asarray(state.x, dtype=np.float64),
                  "w": np.asarray(state.w, dtype=np.float64),
                  "versions": np.asarray(state.versions.table)}
        if self._V is not None:
            arrays["V"] = np.asarray(self._V, dtype=np.float64)
        arrays.update(_start_arrays(state))   # a checkpoint within an epoch: its start
        return arrays

    def _fitted_meta(self) -> dict:
        state = _saved_state(self)
        start = state.epoch_start
        return {"config": _saved_config(self._config),
                "state": {**_counters(state), "start_loss": float(state.start_loss),
                          "start_rows": int(state.start_rows), **_tail_sums(state)},
                "epoch_start": None if start is None else _counters(start),
                "gap_history": list(getattr(self, "gap_history_", [])),
                "final_gaps": list(getattr(self, "_final_gaps", [])),
                "local_problems": [[int(n_k), int(k), *params] for (n_k, k), params
                                   in sorted(self._local_problems.items())]}

    def _restore_fitted(self, arrays: dict, meta: dict, where: str) -> None:
        from ooc_kernels._chunk_store import ChunkVersions
        from ooc_kernels.families.dspdc.solver import DSPDCConfig, DSPDCState

        config = dict(meta["config"])
        _check_config_fields(config, where)
        config["loss_id"] = _saved_loss_id(config, where)
        config["classes"] = None if config.get("classes") is None else tuple(config["classes"])
        config["class_weight"] = None if config.get("class_weight") is None \
            else tuple(config["class_weight"])
        if "x_scale" not in config:   # written before standardization: the raw problem
            self.standardize = False
        for key in ("x_shift", "x_scale"):
            config[key] = None if config.get(key) is None else tuple(config[key])
        if getattr(self, "_work", None) is not None:   # resuming: this fit's store, locked
            config["work_store"] = self._work.resume_store(config["work_store"])
        else:              # a loaded model has no store: the name its file gives, no folder
            config["work_store"] = _store_name(config["work_store"])
        self._config = DSPDCConfig(**config)
        x = np.asarray(arrays["x"], dtype=np.float64)
        if x.shape != (self._config.n_features,):
            raise ModelFormatError(f"{where}: x has shape {x.shape}, the metadata says "
                                   f"({self._config.n_features},).")
        table = np.asarray(arrays["versions"], dtype=np.int64)
        table.setflags(write=False)
        self._V = None if "V" not in arrays else np.asarray(arrays["V"], dtype=np.float64)
        self._state = DSPDCState(x=x, w=np.asarray(arrays["w"], dtype=np.float64),
                                 versions=ChunkVersions(table),
                                 epoch_start=_restored_start(arrays, meta, where),
                                 **meta["state"])
        self._certified = None
        self.gap_history_ = list(meta.get("gap_history") or [])
        if self.gap_history_:                     # the restored model's certificate
            self.duality_gap_ = float(self.gap_history_[-1]["gap"])
        self._final_gaps = final_entries(meta.get("final_gaps"), len(self.gap_history_), where)
        self._local_problems = _local_problems(meta.get("local_problems"), where)
        self._checkpointed = self._state.versions   # a resumed fit keeps what it came from
        self._publish()


def _init_params(self, loss, alpha, l1_ratio, fit_intercept, intercept_scaling, standardize,
                 m, q, local_passes, Lambda, mode, steps, sampling, theta, tau, sigma, tol,
                 max_iter, max_time, gap_every, work_dir, chunks_per_round, chunk_size,
                 shuffle, shuffle_chunks, random_state, scheduler, progress):
    self.loss = loss
    self.alpha = alpha
    self.l1_ratio = l1_ratio
    self.fit_intercept = fit_intercept
    self.intercept_scaling = intercept_scaling
    self.standardize = standardize
    self.m = m
    self.q = q
    self.local_passes = local_passes
    self.Lambda = Lambda
    self.mode = mode
    self.steps = steps
    self.sampling = sampling
    self.theta = theta
    self.tau = tau
    self.sigma = sigma
    self.tol = tol
    self.max_iter = max_iter
    self.max_time = max_time
    self.gap_every = gap_every
    self.work_dir = work_dir
    self.chunks_per_round = chunks_per_round
    self.chunk_size = chunk_size
    self.shuffle = shuffle
    self.shuffle_chunks = shuffle_chunks
    self.random_state = random_state
    self.scheduler = scheduler
    self.progress = progress


@register_estimator
class DSPDCRegressor(ChunkedRegressorMixin, RegressorMixin, _DSPDCEstimator):
    __doc__ = """Ridge / elastic-net regression solved out of core by DSPDC.

    Parameters
    ----------
    loss : {""" + ", ".join(f'"{n}"' for n in _REGRESSION_LOSSES) + """}, default="squared"
        ``phi(z, y) = (z - y)^2 / 2`` (:mod:`ooc_kernels.losses`).
    """ + _PARAMS_DOC + _BASE_DOC + """
    Attributes
    ----------""" + _ATTRIBUTES_DOC + """
    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels import DSPDCRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 5)); y = X @ np.arange(1.0, 6.0) + 0.1 * rng.normal(size=400)
    >>> reg = DSPDCRegressor(alpha=1e-2, random_state=0, scheduler="sync").fit(X, y)
    >>> reg.stop_reason_[:4], reg.gap_history_[-1]["relative_gap"] <= 1e-6
    ('tol:', True)
    >>> np.round(reg.coef_, 1).tolist()
    [1.0, 2.0, 3.0, 4.0, 5.0]
    """

    _parameter_constraints = {**_CONSTRAINTS, "loss": [StrOptions(set(_REGRESSION_LOSSES))]}
    # no partial_fit (see _partial_fit_available)
    capabilities = Capabilities(execution="rounds", inputs="supervised", task="regression",
                                partial_fit=False, tol=True, factorized=True)
    # below the set-up certificate's rounding bound on the contract problem: the start is
    # certified by the first epoch's rounds, which the resume check interrupts
    _stopping_test_params = {"alpha": 0.05, "tol": 1e-13}

    def __init__(self, loss="squared", *, alpha=1e-4, l1_ratio=0.0, fit_intercept=True,
                 intercept_scaling=1.0, standardize=True, m=1, q="auto", local_passes="auto",
                 Lambda="upper_bound", mode="gap", steps="adaptive", sampling="auto",
                 theta=None, tau=None, sigma=None,
                 tol=1e-6, max_iter=100, max_time=None, gap_every=1, work_dir=None,
                 chunks_per_round=1, chunk_size=10_000, shuffle=True, shuffle_chunks="auto",
                 random_state=None, scheduler=None, progress=None):
        _init_params(self, loss, alpha, l1_ratio, fit_intercept, intercept_scaling, standardize,
                     m, q, local_passes, Lambda, mode, steps, sampling, theta, tau, sigma, tol,
                     max_iter, max_time, gap_every, work_dir, chunks_per_round, chunk_size,
                     shuffle, shuffle_chunks, random_state, scheduler, progress)


@register_estimator
class DSPDCClassifier(ChunkedClassifierMixin, ClassifierMixin, _DSPDCEstimator):
    __doc__ = """Binary logistic regression or smoothed-hinge SVM solved out of core by DSPDC.

    Parameters
    ----------
    loss : {""" + ", ".join(f'"{n}"' for n in _CLASSIFICATION_LOSSES) + """}, default="logistic"
        ``log(1 + exp(-b z))`` or the smoothed hinge of the paper's eq. (3), with the labels
        mapped to ``b = -1, +1`` (``classes_[1]`` is ``+1``) (:mod:`ooc_kernels.losses`).
    """ + _PARAMS_DOC + """    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, multiplying ``sample_weight``: ``{label: weight}`` (1 for a
        class it does not name), or ``"balanced"``: ``sum(sample_weight) / (2 *
        sum(sample_weight of the class))`` (``n_samples / (2 * count(label))`` without
        sample weights), summed in one pass over ``y`` and the weights, as scikit-learn's
        ``LogisticRegression`` does.
""" + _BASE_DOC + """
    Attributes
    ----------
    classes_ : ndarray of shape (2,)""" + _ATTRIBUTES_DOC + """
    class_weight_ : ndarray of shape (2,)
        The weights of ``classes_`` the fit used (ones without ``class_weight``).

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from ooc_kernels import DSPDCClassifier
    >>> X, y = make_classification(500, 8, random_state=0)
    >>> clf = DSPDCClassifier(alpha=1e-2, random_state=0, scheduler="sync").fit(X, y)
    >>> clf.stop_reason_[:4], round(clf.score(X, y), 2), clf.predict_proba(X[:2]).shape
    ('tol:', 0.83, (2, 2))
    """

    _parameter_constraints = {**_CONSTRAINTS,
                              "loss": [StrOptions(set(_CLASSIFICATION_LOSSES))],
                              "class_weight": [dict, StrOptions({"balanced"}), None]}
    # the logistic loss without an l1 part is certified by Newton's start at the set-up on
    # the contract problem, leaving no epoch to interrupt: with one the fit starts from zero
    # and the duality-gap rule ends it after 3 epochs
    _stopping_test_params = {"alpha": 0.05, "tol": 0.01, "l1_ratio": 0.2}

    def __init__(self, loss="logistic", *, alpha=1e-4, l1_ratio=0.0, fit_intercept=True,
                 intercept_scaling=1.0, standardize=True, m=1, q="auto", local_passes="auto",
                 Lambda="upper_bound", mode="gap", steps="adaptive", sampling="auto",
                 theta=None, tau=None, sigma=None,
                 tol=1e-6, max_iter=100, max_time=None, gap_every=1, work_dir=None,
                 class_weight=None, chunks_per_round=1, chunk_size=10_000, shuffle=True,
                 shuffle_chunks="auto", random_state=None, scheduler=None, progress=None):
        _init_params(self, loss, alpha, l1_ratio, fit_intercept, intercept_scaling, standardize,
                     m, q, local_passes, Lambda, mode, steps, sampling, theta, tau, sigma, tol,
                     max_iter, max_time, gap_every, work_dir, chunks_per_round, chunk_size,
                     shuffle, shuffle_chunks, random_state, scheduler, progress)
        self.class_weight = class_weight

    def _class_weights(self, data, classes, sched, sums) -> tuple | None:
        """The weights of ``classes`` (``class_weight``), or None.  ``"balanced"``:
        ``sum(sample_weight) / (2 * sum of sample_weight over the class)`` from the sums
        ``sums`` of the weighting pass (the counts of the classes without
        ``sample_weight``), as scikit-learn's ``compute_class_weight``."""
        if self.class_weight is None:
            return None
        labels = np.asarray(classes).tolist()
        if isinstance(self.class_weight, str):   # "balanced"
            total = float(np.sum(sums))
            return tuple(total / (2.0 * s) if s > 0 else 1.0 for s in sums.tolist())
        unknown = sorted(set(self.class_weight) - set(labels), key=str)
        if unknown:
            raise ValidationError(
                f"class_weight names label(s) {unknown} that are not classes {labels}; "
                "use the labels of y."
            )
        return checked_class_weights(self.class_weight, labels)

    def _publish(self) -> None:
        super()._publish()
        cw = self._config.class_weight
        self.class_weight_ = np.ones(2) if cw is None else np.asarray(cw, dtype=np.float64)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def _resolve_classes(self, data, classes, sched):
        if classes is None and "classes" not in data.attrs:   # labels held in memory
            classes = _inputs.memory_classes(_inputs.fit_memory_chunks(self, data))
        found = super()._resolve_classes(data, classes, sched)
        if len(found) > 2:
            raise ValidationError(
                f"Only binary classification is supported. The type of the target is "
                f"multiclass: y has {len(found)} classes "
                f"({np.asarray(found).tolist()[:10]}), {type(self).__name__} needs exactly "
                "two. Use two classes, or a DSG classifier (multinomial) for more."
            )
        return found

    _proba_losses = tuple(n for n in _CLASSIFICATION_LOSSES if get_loss(n).has_proba)
    # no partial_fit (see _partial_fit_available); predict_proba exists under the default
    # loss, "logistic" (see _has_proba)
    capabilities = Capabilities(execution="rounds", inputs="supervised",
                                task="classification", partial_fit=False, tol=True,
                                probabilistic=True, factorized=True)

    @staticmethod
    def _proba_from_decision(dec):
        # one chunk of decision values (n, 1): the only loss with probabilities is logistic
        return get_loss("logistic").predict_proba(dec)
