"""What every DSG estimator shares, whatever its inputs and outputs: the model is a stack of
random-feature coefficient blocks (:class:`~ooc_kernels.families.dsg.solver.DSGState`) under
a configuration (:class:`~ooc_kernels.families.dsg.solver.DSGConfig` or a subclass), so the
parameter checks, the precision, the published attributes, the per-epoch figures, the
prediction payload, the divergence check and the saved form are the same code for all of
them (:class:`DSGModelMixin`).

Examples
--------
>>> check_whole_blocks("n_features", 1000, 256, "the model holds whole feature blocks")
Traceback (most recent call last):
...
ooc_kernels.exceptions.ValidationError: n_features=1000 is not a multiple of block_size=256; the model holds whole feature blocks. Use e.g. n_features=768.
>>> describe_steps(DSGConfig(loss_id=0, target="regression", n_outputs=1, n_features_in=1,
...     block_size=8, n_blocks=1, bandwidth=1.0, feature_seed=0, alpha=0.01, batch_size=8,
...     learning_rate="optimal", eta0=0.5, t0=200.0, dtype="float32"))
'gamma_t = 0.5 / (t + 200), alpha=0.01'
"""

from __future__ import annotations

import dataclasses
from numbers import Integral

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ooc_kernels._checks import non_finite_error
from ooc_kernels._moments import TINY_VALUES, weighted_moments
from ooc_kernels.estimators._constraints import Interval
from ooc_kernels.exceptions import (DivergenceError, InvalidDataError, ModelFormatError,
                                    ValidationError)
from ooc_kernels.families.dsg._ard import published_bandwidth
from ooc_kernels.families.dsg._memory import check_fit_memory
from ooc_kernels.families.dsg._large_data import auto_n_features
from ooc_kernels.families.dsg._saved_config import check_saved_fields
from ooc_kernels.families.dsg.solver import DSGConfig, DSGState, predict_chunk, step_sizes
from ooc_kernels.features.maps import get_feature_map, kernel_spec
from ooc_kernels.features.structured import (centered_input_message, check_nonnegative_rows,
                                             nonnegative_block)

__all__ = ["KERNEL_PARAMS_DOC", "N_JOBS_CONSTRAINTS", "N_JOBS_DOC", "DSGModelMixin",
           "TINY_VALUES", "check_bandwidth_sample", "check_dtype_scales",
           "check_whole_blocks", "describe_steps", "float32_offset_column",
           "finite_sample_rows", "weighted_moments", "with_run_settings"]


#: The farthest a column's values may lie from 0, in standard deviations of the column, for
#: ``dtype="auto"`` to fit in float32: float32 values near ``1e6`` standard deviations are
#: 0.06 of one apart (24 bits), near ``1e7`` 0.6, and the rows cast to float32 lose what
#: sets them apart (docs/defaults.md, "Precision").
FLOAT32_MAX_OFFSET = 1e6

#: Values of one block of rows that :func:`float32_offset_column` holds in float64.
_MOMENT_BLOCK = 2**16


def float32_offset_column(sample) -> int | None:
    """The first column of the set-up's ``sample`` whose values lie more than
    :data:`FLOAT32_MAX_OFFSET` of their standard deviations from 0 (a spread that float32
    cannot resolve at that magnitude), or None; constant columns do not count.

    >>> rows = np.array([[1.0, 1e9 + 1.0], [2.0, 1e9 - 1.0], [3.0, 1e9]])
    >>> float32_offset_column(rows), float32_offset_column(rows[:, :1] + 1e5)
    (1, None)
    """
    X = np.asarray(sample)
    if X.ndim != 2 or len(X) < 2:
        return None
    # moments summed in float64 a block of rows at a time: never a float64 copy of X
    mean = X.mean(axis=0, dtype=np.float64)
    squares = np.zeros(X.shape[1])
    step = max(1, _MOMENT_BLOCK // max(X.shape[1], 1))
    for start in range(0, len(X), step):
        centered = X[start:start + step].astype(np.float64) - mean
        squares += np.einsum("ij,ij->j", centered, centered)
    spread = np.sqrt(squares / len(X))
    # constant: all values equal (a constant's float64 mean may not be its value, leaving
    # a spread of rounding errors)
    varies = X.max(axis=0) > X.min(axis=0)
    far = np.flatnonzero(varies & (np.abs(mean) > FLOAT32_MAX_OFFSET * spread))
    return int(far[0]) if far.size else None


def check_whole_blocks(name: str, value: int, block_size: int, why: str) -> None:
    """Refuse a feature count ``value`` (the parameter ``name``) that is not a multiple of
    ``block_size``, with the nearest count that is."""
    if value % block_size:
        raise ValidationError(
            f"{name}={value} is not a multiple of block_size={block_size}; {why}. Use e.g. "
            f"{name}={max(1, value // block_size) * block_size}.")


def check_bandwidth_sample(bandwidth, n_rows: int) -> None:
    """A bandwidth measured from the data (``"median"``, ``"auto"``) needs two rows."""
    if n_rows < 2 and isinstance(bandwidth, str):
        raise ValidationError(
            f"bandwidth={bandwidth!r} needs at least 2 valid samples to measure "
            f"distances, the data has {n_rows} sample{'' if n_rows == 1 else 's'}; pass a "
            "numeric bandwidth or more data.")


def finite_sample_rows(sample, y, chunk_of, row_of, on_invalid: str):
    """The rows of a setup sample to keep: None when every value is finite, the mask of the
    finite rows with ``on_invalid="skip"``; otherwise an
    :class:`~ooc_kernels.exceptions.InvalidDataError` naming the first non-finite value, its
    chunk and row (``y``: the sampled targets, or None)."""
    bad = ~np.isfinite(sample).all(axis=1)
    if y is not None and y.dtype.kind in "fc":
        bad |= ~np.isfinite(y)
    if not bad.any():
        return None
    if on_invalid == "skip":
        return ~bad
    i = int(np.flatnonzero(bad)[0])
    row_bad = ~np.isfinite(sample[i])
    var, feature = ("X", int(np.flatnonzero(row_bad)[0])) if row_bad.any() else ("y", None)
    value = sample[i][feature] if var == "X" else y[i]
    raise non_finite_error(var, np.asarray(value).item(), int(chunk_of[i]), int(row_of[i]),
                           feature, context=" (found while sampling rows for the bandwidth "
                                            "and the step size)")


def check_dtype_scales(standardization: dict, dtype) -> dict:
    """``standardization`` (the fit's ``x_scale``, ``y_scale``), refused when a scale is
    below the smallest normal number of the fit's dtype.

    In float32 (about 1.2e-38) the values cast to float32 would be subnormal or 0 (the
    standardized rows or targets NaN).  In float64 (about 2.2e-308) a column of ``X`` whose
    spread is subnormal has lost digits, and the feature blocks, which fold the
    standardization in (``W / scale``), overflow; float64 targets are only divided by
    their scale, so ``y_scale`` is checked in float32 alone.

    >>> check_dtype_scales({"y_scale": 1e-30}, "float32")
    {'y_scale': 1e-30}
    >>> check_dtype_scales({"x_scale": (1.0, 1e-310)}, "float64")
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.InvalidDataError: column 1 of X has a standard deviation of ...
    """
    dt = np.dtype(dtype)
    if dt not in (np.float32, np.float64):
        return standardization
    tiny = float(np.finfo(dt).tiny)
    for name in ("x_scale", "y_scale") if dt == np.float32 else ("x_scale",):
        scale = np.atleast_1d(np.asarray(standardization.get(name, ()), dtype=np.float64))
        low = np.flatnonzero(scale < tiny)
        if not low.size:
            continue
        what = "the regression target y" if name == "y_scale" else \
            f"column {int(low[0])} of X"
        if dt == np.float32:
            raise InvalidDataError(
                f"{what} has a standard deviation of {float(scale[low[0]])!r}, below "
                f"float32's smallest normal number ({tiny:.3g}): its values cast to float32 "
                "lose their digits or become 0. Fit with dtype='float64', or rescale those "
                "values (for instance multiply them by 1e30)."
            )
        raise InvalidDataError(
            f"{what} has a standard deviation of {float(scale[low[0]])!r}, below float64's "
            f"smallest normal number ({tiny:.3g}): its values are subnormal, with fewer "
            "digits, and the random features of its standardized values overflow float64. "
            "Rescale those values (for instance multiply them by 1e300)."
        )
    return standardization


def describe_steps(config: DSGConfig) -> str:
    """The step sizes of a resolved configuration, as a formula with its numbers."""
    if config.learning_rate == "constant":
        return f"gamma_t = {config.eta0:.6g}, alpha={config.alpha:.6g}"
    return f"gamma_t = {config.eta0:.6g} / (t + {config.t0:.6g}), alpha={config.alpha:.6g}"


#: The ``kernel`` and ``kernel_params`` entries of every DSG estimator's docstring.
KERNEL_PARAMS_DOC = """
    kernel : str or Kernel, default="rbf"
        A registered feature map (:func:`ooc_kernels.features.maps.available_kernels`):
        ``"rbf"``, the Gaussian RBF kernel ``exp(-||x - x'||^2 / (2 bandwidth^2))``;
        ``"laplacian"``, ``"cauchy"``, ``"matern"``, ``"arccos"``, ``"poly"``, ``"chi2"``,
        ``"intersection"``, ``"js"``, ``"hellinger"``, ``"sum"`` (``docs/kernels.md``); or a
        :class:`~ooc_kernels.features.Kernel` object such as ``Kernel("rbf") +
        Kernel("poly", degree=2)``, the same as ``"sum"`` with those terms.  Saved with the
        model.
    kernel_params : dict or None, default=None
        Parameters of ``kernel`` besides the bandwidth, as scikit-learn's ``Nystroem`` takes
        them: ``{"nu": 0.5, 1.5 or 2.5}`` for ``"matern"`` (default 1.5), ``{"order": 0, 1 or
        2}`` for ``"arccos"`` (default 1), ``{"degree": 2, 3 or 4, "coef0": c >= 0}`` for
        ``"poly"`` (defaults 2 and 1.0), ``{"terms": "0.5*rbf+0.5*rbf@4"}`` for ``"sum"``
        (weights, shift-invariant kernels, bandwidth multipliers; default
        ``"0.5*rbf+0.5*laplacian"``); the other kernels take none.  Checked at ``fit``
        (a :class:`~ooc_kernels.exceptions.ValidationError` names the bad key or value and
        the allowed ones) and saved with the model.  See ``docs/kernels.md``.
"""


#: The ``n_jobs`` entry of the docstrings of the DSG estimators that take it.
N_JOBS_DOC = """    n_jobs : int or None, default=None
        Threads of each chunk task's kernels (a step's blocks of features and tiles of rows
        are shared by the threads; ``docs/threads.md``).  ``None``: all the threads where
        the task runs (a ``distributed`` worker's ``nthreads``, the threaded scheduler's
        pool, or the cores), divided by the tasks of a round that run there at once
        (``chunks_per_round``); an int ``>= 1``: that many (at most ``NUMBA_NUM_THREADS``,
        the cores by default); ``-1``: every core.  The model does not depend on it: any
        thread count gives the one-thread model bit for bit.  With 2 threads or more,
        ``bandwidth="auto"`` on 1,001 to 50,000 rows also runs its set-up's per-input width
        decision and its leave-one-out scan side by side (the same choices on any count).
        Saved with the other hyperparameters; it can be changed on a loaded model.
"""

#: The constraint of ``n_jobs`` (None, a count >= 1, or -1, -2 ... as in scikit-learn).
N_JOBS_CONSTRAINTS = {"n_jobs": [None, Interval(Integral, 1, None, closed="left"),
                                 Interval(Integral, None, -1, closed="right")]}


#: The fields of a DSG config that say how a fit runs and reads its rows, not which model it
#: fits: hyperparameters a continuation may change (``CONTINUATION_PARAMS``).
RUN_SETTINGS = ("n_jobs", "on_invalid", "shuffle")


def with_run_settings(estimator, config):
    """``config`` with the estimator's current :data:`RUN_SETTINGS` (``n_jobs``,
    ``on_invalid``, ``shuffle``): a loaded, warm-started or ``partial_fit`` model runs and
    reads its rows with the values set now.  A setting the estimator or the config lacks is
    left as it is."""
    changes = {}
    for name in RUN_SETTINGS:
        if hasattr(estimator, name) and hasattr(config, name):
            value = getattr(estimator, name)
            value = bool(value) if name == "shuffle" else value
            if getattr(config, name) != value:
                changes[name] = value
    return dataclasses.replace(config, **changes) if changes else config


def nonnegative_kernel(kernel) -> str | None:
    """The name of ``kernel`` (a kernel spec) when it is defined on non-negative inputs
    only (the additive kernels of histograms, a sum with one of them), else None."""
    fmap = get_feature_map(kernel)
    return fmap.name if fmap.nonnegative_inputs else None


def nonnegative_variables(data, names, kernel):
    """``data`` whose variables ``names`` raise, chunk by chunk as they are read, on a
    negative value when ``kernel`` takes non-negative inputs only (unchanged otherwise)."""
    kernel_name = nonnegative_kernel(kernel)
    if kernel_name is None:
        return data
    checked = {name: data[name].map_blocks(nonnegative_block, kernel_name, name,
                                           dtype=data[name].dtype, meta=data[name]._meta)
               for name in names}
    return data.replace(variables=dict(data.variables, **checked))


class DSGModelMixin:
    """The DSG estimators' common plumbing, placed before
    :class:`~ooc_kernels.estimators.base.ChunkedEstimator` in the bases.

    The estimator sets ``self._config`` and ``self._state`` in ``_initialize``; it has the
    parameters ``n_features``, ``block_size``, ``dtype`` and ``batch_size``.  Its
    ``_config_type`` is the configuration class its saved metadata is read back as, and
    ``_feature_variables`` the data variables that hold rows of features (cast to the
    configuration's precision for the engine).
    """

    _config_type = DSGConfig
    _feature_variables = ("X",)

    # ------------------------------------------------------------------ parameters
    def _standardizes(self) -> bool:
        """Whether the model standardizes its inputs: ``standardize`` True, or ``"auto"``
        with a kernel defined on any real input (a kernel of non-negative inputs, such as
        chi2, takes them as they are: centering would make some negative)."""
        setting = getattr(self, "standardize", False)
        if setting == "auto":
            return nonnegative_kernel(kernel_spec(self.kernel, self.kernel_params)) is None
        return bool(setting)

    def _check_params(self) -> None:
        kernel = kernel_spec(self.kernel, self.kernel_params)  # kernel_params valid for it
        name = nonnegative_kernel(kernel)
        if name is not None and self._standardizes():
            raise ValidationError(centered_input_message(name, repr(self.standardize)))
        if self.n_features != "auto":  # "auto" is whole blocks (_large_data)
            check_whole_blocks("n_features", self.n_features, self.block_size,
                               "the model holds whole feature blocks")
        # before any data is read: the least the fit could need (one output, one input
        # feature, no averaged copy, "auto"'s fewest features); _initialize checks again
        # with the data's numbers
        check_fit_memory(self, n_outputs=1, n_features_in=1, n_samples=0, average=False,
                         n_features=auto_n_features(0, self.block_size)
                         if self.n_features == "auto" else None)

    def _resolve_dtype(self, data, sample=None) -> str:
        """``dtype`` resolved: ``"auto"`` is float64 when the data set is one batch (one
        chunk of at most ``batch_size`` rows) or when a column of the set-up's ``sample``
        lies farther from 0 than float32 resolves its spread
        (:func:`float32_offset_column`), float32 otherwise."""
        if self.dtype != "auto":
            return self.dtype
        one_batch = data.n_chunks == 1 and data.n_samples <= self.batch_size
        far = sample is not None and float32_offset_column(sample) is not None
        return "float64" if one_batch or far else "float32"

    # ------------------------------------------------------------------ fitting
    def _start(self, data, sched, classes=None) -> None:
        # the set-up's rows are read through the check of non-negative inputs
        data = nonnegative_variables(data, self._feature_variables,
                                     kernel_spec(self.kernel, self.kernel_params))
        super()._start(data, sched, classes=classes)

    def _engine_data(self, data):
        data = nonnegative_variables(data, self._feature_variables, self._config.kernel)
        dtype = np.dtype(self._config.dtype)
        cast = {name: data[name].astype(dtype) for name in self._feature_variables
                if data[name].dtype != dtype}
        if not cast:
            return data
        return data.replace(variables=dict(data.variables, **cast))

    def _after_round(self, state, info) -> None:
        # the model is small: checking it every round costs nothing next to a chunk
        if not np.isfinite(state.coef).all():
            raise DivergenceError(
                f"the fit produced non-finite coefficients in epoch {info.epoch}, round "
                f"{info.round} (steps {describe_steps(self._config)}); lower eta0, raise t0, "
                "or keep standardize=True.")

    def _publish(self) -> None:
        state, config = self._state, self._config
        self.bandwidth_ = published_bandwidth(config)
        self.dtype_ = config.dtype
        self.feature_seed_ = config.feature_seed
        self.alpha_, self.eta0_, self.t0_ = config.alpha, config.eta0, config.t0
        self.t_ = state.n_iter
        self.n_blocks_seen_ = state.n_blocks_seen
        self.n_samples_seen_ = state.n_samples_seen
        self.n_samples_skipped_ = state.n_samples_skipped

    def _training_loss(self, state):
        return state.loss_sum, state.loss_weight

    def _history_extra(self, state) -> dict:
        return {"step_size": float(step_sizes(self._config, np.asarray([state.n_iter]))[0]),
                "steps": int(state.n_iter)}

    def _monitor(self):
        monitor = super()._monitor()
        monitor.min_steps = self._min_tol_steps()
        monitor.overshoot_steps = self._unstable_steps()
        return monitor

    def _min_tol_steps(self) -> int:
        """The steps before ``tol`` may end the fit (none)."""
        return 0

    def _unstable_steps(self) -> int:
        """The steps whose size ``eta0 / (t + t0)`` is above ``1 / curvature``
        (``curvature``: the data term's largest Hessian eigenvalue; ``1 / curvature`` is
        the stable step, half the bound of gradient steps): in them an epoch whose loss
        rises is not counted by ``tol``'s rule.  A first step above the bound (the
        small-data step of ``eta0="auto"``) can make the loss oscillate above the starting
        model's until the steps are back below it; on a small data set, of a few steps an
        epoch, that can outlast ``n_iter_no_change`` epochs of a model that has learned
        nothing yet (docs/defaults.md, "Stopping")."""
        cfg = self._config
        if cfg.learning_rate != "inverse" or not cfg.curvature > 0:
            return 0
        return max(0, int(np.ceil(float(cfg.eta0) * float(cfg.curvature) - float(cfg.t0))))

    # ------------------------------------------------------------------ prediction
    @property
    def _n_outputs(self) -> int:
        return self._config.n_outputs

    @staticmethod
    def _predict_block(X, payload):
        config, state = payload
        return predict_chunk(config, state, X)  # one chunk in, its decision values out

    def _predict_payload(self):
        return with_run_settings(self, self._config), self._state

    def _predict_data(self, X):
        """The base's prediction input, checked for negative values (chunk by chunk for a
        lazy input) when the model's kernel takes non-negative inputs only."""
        data, lazy = super()._predict_data(X)
        name = nonnegative_kernel(self._config.kernel)
        if name is None:
            return data, lazy
        if lazy:
            return nonnegative_variables(data, ("X",), self._config.kernel), True
        check_nonnegative_rows(data, name)
        return data, False

    @property
    def _predict_dtype(self) -> np.dtype:
        if self._config.target == "regression":
            return np.dtype(np.float64)  # predict_chunk's regression values
        return np.dtype(self._config.dtype)

    @property
    def coef_(self) -> np.ndarray:
        """Coefficient blocks in use, shape (n_blocks_used, block_size, n_outputs): the
        averaged iterate with ``average``."""
        check_is_fitted(self, "_state")
        return self._state.model_coef[: self._state.n_blocks_used].copy()

    # ------------------------------------------------------------------ persistence
    def _fitted_arrays(self) -> dict:
        arrays = {"coef": np.asarray(self._state.coef, dtype=np.float64)}
        if self._state.avg is not None:
            arrays["avg"] = np.asarray(self._state.avg, dtype=np.float64)
        return arrays

    def _fitted_meta(self) -> dict:
        config = dataclasses.asdict(self._config)
        config["feature_seed"] = str(config["feature_seed"])  # 64 bits: JSON-safe as text
        for key in ("classes", "class_weight"):
            config[key] = None if config[key] is None else list(config[key])
        state = self._state
        return {"config": config,
                "state": {"n_iter": int(state.n_iter),
                          "n_blocks_seen": int(state.n_blocks_seen),
                          "n_samples_seen": int(state.n_samples_seen),
                          "n_samples_skipped": int(state.n_samples_skipped),
                          "n_avg": int(state.n_avg), "loss_sum": float(state.loss_sum),
                          "loss_weight": float(state.loss_weight)}}

    def _read_config(self, saved: dict, where: str):
        """The saved ``fitted.config`` as a ``_config_type`` (JSON lists back to tuples,
        the feature seed back to an int)."""
        config = dict(saved)
        config["feature_seed"] = int(config["feature_seed"])
        for key in ("classes", "class_weight", "x_shift", "x_scale", "input_bandwidths"):
            if key in config:
                config[key] = None if config[key] is None else tuple(config[key])
        return self._config_type(**config)

    def _restore_fitted(self, arrays: dict, meta: dict, where: str) -> None:
        self._config = self._read_config(meta["config"], where)
        check_saved_fields(self._config, meta["state"], where)
        self._check_saved_config(self._config, where)
        cfg = self._config
        expected = (cfg.n_blocks, cfg.block_size, cfg.n_outputs)
        coef = np.asarray(arrays["coef"], dtype=np.float64)
        if coef.shape != expected:
            raise ModelFormatError(
                f"{where}: coef has shape {coef.shape}, the metadata says {expected}.")
        avg = arrays.get("avg")
        if avg is not None and np.shape(avg) != expected:
            raise ModelFormatError(
                f"{where}: avg has shape {np.shape(avg)}, the metadata says {expected}.")
        self._state = DSGState(coef=coef, avg=None if avg is None else
                               np.asarray(avg, dtype=np.float64), **meta["state"])
        self._publish()

    def _check_saved_config(self, config, where: str) -> None:
        """Refuse a saved configuration this estimator could not have written (raise
        :class:`~ooc_kernels.exceptions.ModelFormatError`); each estimator defines it."""
        raise NotImplementedError(f"{type(self).__name__} must define _check_saved_config")
