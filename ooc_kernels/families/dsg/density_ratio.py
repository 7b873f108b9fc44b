"""The density ratio ``p(x) / q(x)`` and the divergence ``KL(p || q)`` of two samples, out of
core, with doubly stochastic functional gradients (Dai et al. 2014, section 4, Eq. 8: the
estimator of Nguyen, Wainwright and Jordan, KL case).

:class:`DSGDensityRatio` learns ``f`` minimizing

    ``R(f) = E_{y~q}[exp f(y)] - E_{x~p}[f(x)] + alpha / 2 ||f||^2``

from ``fit(X_p, X_q)``.  Minimizing ``q e^f - p f`` pointwise gives ``e^f = p / q``: ``f``
estimates ``log(p / q)`` (the paper's text says ``log(q / p)``; its own objective gives
``log(p / q)``, which ``tests/test_dsg_density_ratio.py`` checks on known Gaussians).

Examples
--------
>>> import numpy as np
>>> import ooc_kernels as ok
>>> rng = np.random.default_rng(0)
>>> X_p = rng.normal(0.0, 1.0, size=(2000, 1))
>>> X_q = rng.normal(0.5, 1.2, size=(2000, 1))
>>> est = ok.DSGDensityRatio(random_state=0, scheduler="sync").fit(X_p, X_q)
>>> bool(est.predict([[-1.0]])[0] > est.predict([[2.0]])[0])   # p/q falls to the right
True
"""

from __future__ import annotations

import math
import warnings
from numbers import Integral, Real

import dask
import numpy as np
from sklearn.utils.validation import check_is_fitted

from ooc_kernels._capabilities import Capabilities
from ooc_kernels._seeds import derive_seed
from ooc_kernels.data.inputs import wrap_prediction
from ooc_kernels.estimators._constraints import Interval, StrOptions
from ooc_kernels.estimators._hyperparams import TOL_CONSTRAINT
from ooc_kernels.estimators._registry import register_estimator
from ooc_kernels.estimators.base import BASE_CONSTRAINTS, BASE_PARAMS_DOC, ChunkedEstimator
from ooc_kernels.exceptions import ModelFormatError, OocKernelsWarning, ValidationError
from ooc_kernels.families.dsg._common import (KERNEL_PARAMS_DOC, DSGModelMixin,
                                             check_dtype_scales, weighted_moments,
                                             with_run_settings)
from ooc_kernels.families.dsg._memory import check_fit_memory
from ooc_kernels.families.dsg._ratio_solver import RatioAlgorithm, RatioConfig
from ooc_kernels.families.dsg._schedule import growth_step_eigenvalue, resolve_schedule
from ooc_kernels.families.dsg.solver import init_state, predict_chunk
from ooc_kernels.features.bandwidth import median_heuristic
from ooc_kernels.features.rbf import MAX_BANDWIDTH, MIN_BANDWIDTH
from ooc_kernels.features.cache import default_cache
from ooc_kernels.features import Kernel
from ooc_kernels.features.maps import available_kernels, kernel_spec
from ooc_kernels.parallel.cluster import compute

__all__ = ["DSGDensityRatio"]

#: Rows sampled from each sample at setup (standardization, bandwidth, step size).
SAMPLE_ROWS = 2000


def _sample(arr, n_rows: int, seed: int, sched) -> np.ndarray:
    """Up to ``n_rows`` rows of the lazy ``arr`` drawn from up to 8 random chunks (only
    those chunks are read)."""
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(0x5B,)))
    sizes = np.asarray(arr.chunks[0])
    nonempty = np.flatnonzero(sizes > 0)
    chosen = np.sort(rng.choice(nonempty, size=min(8, len(nonempty)), replace=False))
    per_chunk = np.minimum(sizes[chosen], math.ceil(n_rows / max(len(chosen), 1)))
    blocks = arr.to_delayed(optimize_graph=True).ravel()
    picks = [np.sort(rng.choice(sizes[c], size=k, replace=False))
             for c, k in zip(chosen, per_chunk)]
    parts = [dask.delayed(_take)(blocks[c], p) for c, p in zip(chosen, picks)]
    rows = compute(*parts, scheduler=sched)
    return np.concatenate(rows)[:n_rows] if rows else np.zeros((0, arr.shape[1]))


def _take(block, rows):
    return np.asarray(block)[rows]  # one chunk in, a few of its rows out


def _divergence_terms(X, payload):
    """``[sum f, sum e^f, rows]`` over the finite rows of one chunk (a 1 x 3 block)."""
    config, state = payload
    X = np.asarray(X)  # one chunk
    X = X[np.isfinite(X).all(axis=1)]
    if not len(X):
        return np.zeros((1, 3))
    f = predict_chunk(config, state, np.ascontiguousarray(X, dtype=config.dtype))[:, 0]
    f = f.astype(np.float64)
    return np.array([[f.sum(), np.exp(f).sum(), float(len(f))]])


def _ratio_block(X, payload):
    config, state = payload
    f = predict_chunk(config, state, X)  # one chunk in, its ratios out (in f's dtype)
    return np.exp(f.astype(np.float64)).astype(f.dtype)


_PARAMS_DOC = """
""" + KERNEL_PARAMS_DOC + """    bandwidth : float or "median", default="median"
        Kernel bandwidth sigma (in standardized units with ``standardize``).  ``"median"``:
        ``median_multiplier`` times the median pairwise distance of up to 2000 rows drawn
        from both samples pooled (half from each).
    median_multiplier : float, default=1.0
    standardize : bool, default=True
        The model sees every feature centred and scaled by the mean and standard deviation
        of the pooled sample rows (folded into the random features: no extra pass).
    dtype : {"auto", "float32", "float64"}, default="auto"
        Precision of the random features (coefficients are float64); ``"auto"``: float64
        when ``X_p`` is one batch, float32 otherwise.
    alpha : float or "auto", default="auto"
        Regularization ``nu`` of ``R(f)`` (the DSG estimators' ``alpha``): every step
        multiplies the coefficients by ``1 - gamma_t alpha``.  ``"auto"``: ``min(1, 2 / d)
        / sqrt(n_p + n_q)`` for ``d`` input features.  In one and two dimensions that is
        ``1 / sqrt(n_p + n_q)`` (on the Gaussian pairs of ``benchmarks/dsg_density_ratio.py``,
        2,000 to 32,000 rows per sample, its log-ratio RMSE was 0.028-0.063 against
        0.056-0.181 for the DSG estimators' ``1 / n``: the ratio needs more smoothing than a
        classifier); with more features the median-width kernel is smoother and needs less
        (docs/benchmarks.md, "Density ratio defaults in more dimensions": 5- and 20-D
        Gaussian pairs and three real data sets).
    n_features : int, default=1024
        Random features the model may hold (a multiple of ``block_size``): a block per step
        until then, every block updated by every step after (as the DSG estimators).  The
        full phase keeps all the blocks' parameters in memory (``n_features (d + 1)``
        numbers).
    block_size : int, default=128
    batch_size : int, default=256
        Rows of ``X_p`` per step; each step also reads the matching share of ``X_q``
        (``batch_size * n_q / n_p`` rows).
    learning_rate : {"optimal", "inverse", "constant"}, default="optimal"
        As the DSG estimators: ``"optimal"`` ``gamma_t = (1 / alpha) / (t + t0)``, first
        step ``eta0``.
    eta0 : float or "auto", default="auto"
        First step; ``"auto"``: ``1 / lambda_max``, the largest eigenvalue of a growth
        step's operator on batches of ``X_q`` rows (the curvature of ``e^f`` at ``f = 0``).
    t0 : float or "auto", default="auto"
    max_iter : int, default=100
        Epochs (passes over both samples).  ``stop_reason_`` says whether ``tol`` or
        ``max_iter`` ended the fit.
    tol : float or None, default=1e-4
        Stop when the epoch's estimate of ``R(f)`` (without the penalty, at the progressive
        predictions) improved by less than ``tol`` for ``n_iter_no_change`` epochs.
        ``None``: run ``max_iter`` epochs.  ``R(f)`` is about ``-KL(p || q)``, often a few
        tenths, so ``tol=1e-3`` ends fits while the ratio still moves: on covariate shifts
        of real data with the ratio known (docs/benchmarks.md, "Density ratio under a known
        covariate shift") 1e-4 has a log-ratio RMSE 0.004 to 0.06 lower, on the Gaussian
        pairs of ``benchmarks/dsg_density_ratio.py`` it is as low or lower, for 1.4 to 2
        times the epochs.
    n_iter_no_change : int, default=3
    verbose : int, default=0
""" + BASE_PARAMS_DOC


@register_estimator
class DSGDensityRatio(DSGModelMixin, ChunkedEstimator):
    __doc__ = """Density ratio ``p(x) / q(x)`` and ``KL(p || q)`` by doubly stochastic
    functional gradients, out of core.

    ``fit(X_p, X_q)``: ``X_p`` is the sample of the numerator ``p``, ``X_q`` that of the
    denominator ``q`` (arrays, Dask arrays, Zarr-backed Datasets or catalog entries, read
    chunk by chunk).  The model ``f`` minimizes ``E_q[e^f] - E_p[f] + alpha/2 ||f||^2``
    (Nguyen, Wainwright and Jordan; Dai et al. Eq. 8), so ``f ~ log(p / q)``.

    Parameters
    ----------""" + _PARAMS_DOC + """
    Attributes
    ----------
    divergence_ : float
        ``KL(p || q)`` estimate ``mean_p f - mean_q e^f + 1`` (the variational bound of
        Nguyen et al. at the fitted ``f``), over every training row, computed in one pass
        over both samples after the last epoch.  The means over the rows stand for
        expectations: on a sample of few rows (tens, or one) the estimate can lie far above
        the divergence or below 0, which the fit reports with an
        :class:`~ooc_kernels.exceptions.OocKernelsWarning` (docs/machines/density_ratio.md,
        "Few rows").
    bandwidth_, alpha_, eta0_, t0_, dtype_, feature_seed_ : the settings used
    coef_ : ndarray of shape (n_blocks_used, block_size, 1)
    n_iter_, t_, history_, stop_reason_, n_blocks_seen_, n_samples_seen_,
    n_samples_skipped_ : as the DSG estimators
    n_features_in_ : int
    feature_coords_ : ndarray of shape (n_features_in,)
        The labels of the feature coordinate of an xarray ``X_p`` (a DataArray's second
        dimension, a Dataset's ``X`` variable's), when it has them; ``X_q`` and later
        inputs with labels must have these in this order
        (``X.sel({dim: model.feature_coords_})`` selects them), inputs without labels are
        read by position.  Not set otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels import DSGDensityRatio
    >>> rng = np.random.default_rng(1)
    >>> X_p, X_q = rng.normal(0, 1, (3000, 1)), rng.normal(1, 1, (3000, 1))
    >>> est = DSGDensityRatio(random_state=0, scheduler="sync").fit(X_p, X_q)
    >>> round(est.divergence_, 1)                     # KL(N(0,1) || N(1,1)) = 0.5
    0.5
    """

    capabilities = Capabilities(execution="rounds", inputs="two_sample",
                                task="density_ratio", partial_fit=False, tol=True,
                                finishing=True)
    _parameter_constraints = {
        **BASE_CONSTRAINTS,
        "tol": TOL_CONSTRAINT,
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "verbose": ["verbose"],
        "kernel": [StrOptions(set(available_kernels())), Kernel],
        "kernel_params": [dict, None],
        "bandwidth": [Interval(Real, MIN_BANDWIDTH, MAX_BANDWIDTH, closed="both"),
                      StrOptions({"median"})],
        "median_multiplier": [Interval(Real, 0, None, closed="neither")],
        "standardize": ["boolean"],
        "dtype": [StrOptions({"auto", "float32", "float64"})],
        "alpha": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "block_size": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [StrOptions({"optimal", "inverse", "constant"})],
        "eta0": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "t0": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
    }
    _test_params = dict(n_features=128, block_size=16, batch_size=8, max_iter=2, tol=None)
    _stopping_test_params = dict(n_iter_no_change=1)
    _saved_arrays = {"coef": True}
    _config_type = RatioConfig
    _feature_variables = ("X_p", "X_q")

    def __init__(self, *, kernel="rbf", kernel_params=None, bandwidth="median", median_multiplier=1.0,
                 standardize=True, dtype="auto", alpha="auto", n_features=1024,
                 block_size=128, batch_size=256, learning_rate="optimal", eta0="auto",
                 t0="auto", max_iter=100, tol=1e-4, n_iter_no_change=3, verbose=0,
                 chunks_per_round="auto", chunk_size=10_000, shuffle=True, shuffle_chunks="auto",
                 on_invalid="error", random_state=None, scheduler=None, progress=None):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.bandwidth = bandwidth
        self.median_multiplier = median_multiplier
        self.standardize = standardize
        self.dtype = dtype
        self.alpha = alpha
        self.n_features = n_features
        self.block_size = block_size
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.t0 = t0
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.verbose = verbose
        self.chunks_per_round = chunks_per_round
        self.chunk_size = chunk_size
        self.shuffle = shuffle
        self.shuffle_chunks = shuffle_chunks
        self.on_invalid = on_invalid
        self.random_state = random_state
        self.scheduler = scheduler
        self.progress = progress

    # ------------------------------------------------------------------ fit
    def fit(self, X_p, X_q, *, checkpoint=None, checkpoint_every=1, resume=False):
        """Learn ``f ~ log(p / q)`` from ``X_p`` (numerator) and ``X_q`` (denominator).

        Both are read chunk by chunk, every row of each once per epoch.  ``checkpoint``,
        ``checkpoint_every`` and ``resume`` as in :meth:`DSGClassifier.fit
        <ooc_kernels.DSGClassifier.fit>`.

        The columns of ``X_q`` are matched to those of ``X_p`` by position.  When both
        samples name their columns (pandas or Dask DataFrames), the names must be the same
        in the same order, else a :class:`~ooc_kernels.exceptions.ValidationError` names
        both lists (select ``X_q[list(X_p.columns)]``); when only one of them has names, an
        :class:`~ooc_kernels.exceptions.OocKernelsWarning` says that they are not checked.
        """
        return super().fit(X_p, X_q, checkpoint=checkpoint,
                           checkpoint_every=checkpoint_every, resume=resume)

    def _partial_fit_available(self) -> bool:
        raise AttributeError(
            "DSGDensityRatio has no partial_fit: it learns from two samples, and partial_fit "
            "takes one batch of rows; call fit(X_p, X_q), which reads both chunk by chunk.")

    def _initialize(self, data, sched, classes=None) -> None:
        n_p, n_q = int(data["X_p"].shape[0]), int(data["X_q"].shape[0])
        if n_p == 0 or n_q == 0:
            raise ValidationError(
                f"DSGDensityRatio needs rows in both samples; X_p has {n_p} and X_q {n_q}.")
        d = data.n_features
        dtype = self._resolve_dtype(data)
        block = 2 * self.n_features * (d + 1) * np.dtype(dtype).itemsize
        if block > default_cache().max_bytes:
            raise ValidationError(
                f"n_features={self.n_features} with {d} input features needs {block} bytes "
                f"of block parameters in the full phase, more than the feature-cache budget "
                f"({default_cache().max_bytes} bytes, OOC_KERNELS_FEATURE_CACHE_MB); lower "
                "n_features or raise the budget.")
        seed = derive_seed(self.random_seed_, 3)
        rows_p = _sample(data["X_p"], SAMPLE_ROWS // 2, seed, sched)
        rows_q = _sample(data["X_q"], SAMPLE_ROWS // 2, seed + 1, sched)
        rows_p = rows_p[np.isfinite(rows_p).all(axis=1)].astype(np.float64)
        rows_q = rows_q[np.isfinite(rows_q).all(axis=1)].astype(np.float64)
        pooled = np.concatenate([rows_p, rows_q])
        if len(rows_p) < 1 or len(rows_q) < 1 or len(pooled) < 2:
            raise ValidationError(
                "DSGDensityRatio found too few finite rows in the samples it read to set up "
                f"the fit ({len(rows_p)} of X_p, {len(rows_q)} of X_q); give both samples "
                "finite rows.")
        standard = {}
        seen_q, seen = rows_q, pooled
        if self.standardize:   # columns of huge or tiny values too (weighted_moments)
            shift, scale = weighted_moments(pooled)
            scale[~(scale > 0)] = 1.0
            standard = check_dtype_scales(
                {"x_shift": tuple(shift.tolist()), "x_scale": tuple(scale.tolist())}, dtype)
            seen, seen_q = (pooled - shift) / scale, (rows_q - shift) / scale
        if self.bandwidth == "median":
            bandwidth = median_heuristic(seen, self.median_multiplier,
                                         random_state=derive_seed(self.random_seed_, 4) % 2**32)
        else:
            bandwidth = float(self.bandwidth)
        feature_seed = derive_seed(self.random_seed_, 1)
        q_batch = max(1, round(self.batch_size * n_q / n_p))
        eigenvalue = growth_step_eigenvalue(
            seen_q, np.ones(len(seen_q)), bandwidth=bandwidth, feature_seed=feature_seed,
            block_size=self.block_size, batch_size=q_batch,
            seed=derive_seed(self.random_seed_, 7), kernel=kernel_spec(self.kernel, self.kernel_params))
        alpha = (min(1.0, 2.0 / d) / math.sqrt(n_p + n_q) if self.alpha == "auto"
                 else self.alpha)
        plan = resolve_schedule(learning_rate=self.learning_rate, eta0=self.eta0, t0=self.t0,
                                alpha=alpha, average=False, loss="squared",
                                eigenvalue=eigenvalue, batch_size=self.batch_size,
                                n_samples=n_p + n_q, owner=type(self).__name__)
        self._config = RatioConfig(
            loss_id=-1, target="density_ratio", n_outputs=1, n_features_in=d,
            block_size=self.block_size, n_blocks=self.n_features // self.block_size,
            bandwidth=bandwidth, feature_seed=feature_seed, alpha=plan.alpha,
            batch_size=self.batch_size, learning_rate=plan.learning_rate, eta0=plan.eta0,
            t0=plan.t0, dtype=dtype, shuffle=bool(self.shuffle), on_invalid=self.on_invalid,
            feature_budget=default_cache().max_bytes, kernel=kernel_spec(self.kernel, self.kernel_params),
            q_weight=n_p / n_q, **standard)
        check_fit_memory(self, n_outputs=1, n_features_in=d, n_samples=n_p, average=False)
        self._state = init_state(self._config)
        self.divergence_ = None
        self._publish()

    def _make_algorithm(self) -> RatioAlgorithm:
        return RatioAlgorithm(with_run_settings(self, self._config))

    def _finish(self, state, data, sched):
        """``divergence_``: one pass over both samples with the final model."""
        payload = dask.delayed((self._config, state), traverse=False)
        sums = []
        for name in ("X_p", "X_q"):
            arr = data[name].rechunk({1: -1})
            terms = arr.map_blocks(_divergence_terms, payload,
                                   chunks=((1,) * arr.numblocks[0], (3,)), dtype=np.float64,
                                   meta=np.empty((0, 0)))
            sums.append(terms.sum(axis=0))
        sp, sq = compute(*sums, scheduler=sched)
        self.divergence_ = float(sp[0] / sp[2] - sq[1] / sq[2] + 1.0)
        if self.divergence_ < 0:
            warnings.warn(
                f"divergence_ is {self.divergence_:.4g}, below 0, which no KL divergence is: "
                "it is the bound mean_p f - mean_q e^f + 1 on the training rows (X_p "
                f"{int(sp[2])} rows, X_q {int(sq[2])}), too few for their means to estimate "
                "it; fit on more rows of both samples for an estimate of KL(p || q).",
                OocKernelsWarning, stacklevel=2)
        return state

    # ------------------------------------------------------------------ prediction
    @staticmethod
    def _predict_block(X, payload):
        config, state = payload
        return predict_chunk(config, state, X)  # one chunk in, its values of f out

    def decision_function(self, X):
        """``f(x)``, the estimate of ``log(p(x) / q(x))`` (lazy for lazy input)."""
        return wrap_prediction(X, self._decision_2d(X)[:, 0])

    def predict(self, X):
        """The density ratio estimate ``p(x) / q(x) = exp f(x)`` (lazy for lazy input);
        ``p`` is the first sample of :meth:`fit`."""
        check_is_fitted(self, "_state")
        out = self._chunk_outputs(X, _ratio_block, self._predict_payload(), 1,
                                  self._predict_dtype)
        return wrap_prediction(X, out[:, 0])

    # ------------------------------------------------------------------ persistence
    def _fitted_meta(self) -> dict:
        return {**super()._fitted_meta(), "divergence": self.divergence_}

    def _read_config(self, saved: dict, where: str):
        try:
            return super()._read_config(saved, where)
        except (KeyError, TypeError, ValueError) as exc:
            raise _bad_config(where, f"cannot be read ({exc})") from exc

    def _check_saved_config(self, config: RatioConfig, where: str) -> None:
        if config.target != "density_ratio" or config.n_outputs != 1:
            raise _bad_config(where, f"has target {config.target!r} with "
                                     f"{config.n_outputs} output(s); a density-ratio model has "
                                     "'density_ratio' and 1")
        if config.n_features_in != self.n_features_in_ or config.kernel != kernel_spec(self.kernel, self.kernel_params):
            raise _bad_config(where, f"has n_features_in={config.n_features_in!r} and "
                                     f"kernel={config.kernel!r}; the model has "
                                     f"{self.n_features_in_} and {kernel_spec(self.kernel, self.kernel_params)!r}")
        if not isinstance(config.bandwidth, (int, float)) \
                or not MIN_BANDWIDTH <= config.bandwidth <= MAX_BANDWIDTH:
            raise _bad_config(where, f"has bandwidth={config.bandwidth!r}; it must be a "
                                     "positive finite number in "
                                     f"[{MIN_BANDWIDTH:g}, {MAX_BANDWIDTH:g}]")
        for name in ("q_weight",):
            value = getattr(config, name)
            if not isinstance(value, (int, float)) or not (0 < value < math.inf):
                raise _bad_config(where, f"has {name}={value!r}; it must be a positive "
                                         "finite number")

    def _restore_fitted(self, arrays: dict, meta: dict, where: str) -> None:
        super()._restore_fitted(arrays, meta, where)
        divergence = meta.get("divergence")
        self.divergence_ = None if divergence is None else float(divergence)


def _bad_config(where: str, what: str) -> ModelFormatError:
    return ModelFormatError(f"{where}: the metadata's fitted.config {what}; re-save the model "
                            "or restore it from a backup.")
