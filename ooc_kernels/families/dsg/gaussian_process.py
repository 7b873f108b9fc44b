"""Gaussian-process regression out of core: the posterior mean and the predictive standard
deviation from one streaming pass on random features, or the mean by doubly stochastic
functional gradients (Dai et al. 2014, section 4 and Appendix D).

Model: ``y = f(x) + eps``, ``eps ~ N(0, noise)``, ``f ~ GP(0, k)``.  The posterior at ``x``
has mean ``k_*^T (K + noise I)^{-1} y`` and variance ``k(x, x) - k_*^T (K + noise
I)^{-1} k_*``.

* **Mean.**  ``mean="features"`` (the default): the exact posterior mean on
  ``n_variance_features`` random features, ``phi(x)^T (Phi^T Phi + noise I)^{-1} Phi^T y``,
  from the statistics of the variance's pass (:mod:`ooc_kernels.families.dsg._gp_mean`); no
  DSG epoch runs.  ``mean="dsg"``: kernel ridge regression by DSG (the rounds of
  :class:`~ooc_kernels.families.dsg.estimators.DSGRegressor`, squared loss) on the averaged
  objective ``(1/n) sum_i (f(x_i) - y_i)^2 / 2 + nu / 2 ||f||^2``, whose minimizer is
  ``k_*^T (K + n nu I)^{-1} y``: matching the GP needs ``nu = noise / n``.  The paper prints
  ``nu = 2 sigma^2``, which is right only for the un-averaged loss; ``alpha_`` is
  ``noise / n`` here (``n``: the training rows, known from the chunk sizes before any row is
  read).
* **Noise.**  A number, or ``"auto"``: the grid value that maximizes the log marginal
  likelihood of the random-feature model on every training row, from the same statistics.
* **Variance.**  :mod:`ooc_kernels.families.dsg._gp_variance`: ``variance="features"``
  (exact on ``n_variance_features`` random features, from ``Phi^T Phi`` reduced over the
  chunks) or ``variance="operator"`` (the paper's Eq. 18 with two feature streams).

Examples
--------
>>> import numpy as np
>>> import ooc_kernels as ok
>>> rng = np.random.default_rng(0)
>>> X = rng.uniform(-3, 3, size=(300, 1))
>>> y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=300)
>>> gp = ok.DSGGaussianProcessRegressor(random_state=0, scheduler="sync").fit(X, y)
>>> mean, std = gp.predict([[0.0], [9.0]], return_std=True)
>>> bool(abs(mean[0]) < 0.2 and std[0] < std[1])    # far from the data: more uncertain
True
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ooc_kernels._capabilities import Capabilities
from ooc_kernels._seeds import derive_seed
from ooc_kernels.data.inputs import wrap_prediction
from ooc_kernels.estimators._constraints import Interval, StrOptions
from ooc_kernels.estimators._registry import register_estimator
from ooc_kernels.estimators.base import ChunkedRegressorMixin
from ooc_kernels.exceptions import ModelFormatError, OocKernelsWarning, ValidationError
from ooc_kernels.families.dsg._common import check_whole_blocks
from ooc_kernels.families.dsg._gp_mean import features_mean, select_noise
from ooc_kernels.families.dsg._gp_unused import unused_message, unused_params
from ooc_kernels.families.dsg._gp_variance import (VARIANCE_MODES, VarianceConfig,
                                                   check_variance_memory, gram_factor,
                                                   mean_std_block, operator_pass,
                                                   statistics_pass)
from ooc_kernels.families.dsg._estimator_docs import _ATTRIBUTES_DOC, _PARAMS_DOC
from ooc_kernels.families.dsg.estimators import _DSG_CONSTRAINTS, _DSGEstimator
from ooc_kernels.families.dsg.solver import DSGState, step_sizes
from ooc_kernels.losses import get_loss

__all__ = ["DSGGaussianProcessRegressor"]

MEAN_MODES = ("features", "dsg")
#: The noise the ``bandwidth="auto"`` selection assumes when ``noise="auto"`` (the noise is
#: chosen afterwards, on the chosen bandwidth's features).
SETUP_NOISE = 0.1

_GP_CONSTRAINTS = {k: v for k, v in _DSG_CONSTRAINTS.items() if k != "alpha"}
_GP_CONSTRAINTS.update({
    "noise": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
    "mean": [StrOptions(set(MEAN_MODES))],
    "variance": [StrOptions(set(VARIANCE_MODES))],
    "n_variance_features": [Interval(Integral, 1, None, closed="left")],
})

# the shared DSG documentation, without alpha (here: noise / n_samples)
_ALPHA_DOC = _PARAMS_DOC[_PARAMS_DOC.index("    alpha : "):_PARAMS_DOC.index("    n_features : ")]
_GP_PARAMS_DOC = _PARAMS_DOC.replace(_ALPHA_DOC, "").replace(
    'average : bool, int or "auto", default="auto"', "average : bool, int or \"auto\", "
    "default=True")


@register_estimator
class DSGGaussianProcessRegressor(ChunkedRegressorMixin, RegressorMixin, _DSGEstimator):
    __doc__ = """Gaussian-process regression out of core: posterior mean and predictive
    standard deviation from one streaming pass on random features (or the mean by doubly
    stochastic gradients).

    ``predict(X, return_std=True)`` returns the posterior mean and standard deviation of
    the latent ``f`` (without the noise), as scikit-learn's ``GaussianProcessRegressor``
    with ``kernel=RBF(bandwidth)``, ``alpha=noise``, ``normalize_y=True`` (with
    ``standardize``) and ``optimizer=None`` does; ``docs/machines/gaussian_process.md``
    measures how close.

    Parameters
    ----------
    noise : float or "auto", default="auto"
        The noise variance ``sigma^2`` (a variance, not a standard deviation), as
        scikit-learn's ``alpha`` of ``GaussianProcessRegressor``; in the units of the
        standardized targets with ``standardize=True`` (0.1: a tenth of the targets'
        variance is noise), of the targets otherwise.  ``"auto"`` (``mean="features"``
        only): the value of a grid of 91 (1e-4 to 3.2 times the targets' mean square) that
        maximizes the log marginal likelihood of the random-feature model on every
        training row, from the statistics of the one pass
        (:mod:`ooc_kernels.families.dsg._gp_mean`); ``noise_`` holds it.  The mean's
        regularization is ``alpha_ = noise / n_samples``.
    mean : {"features", "dsg"}, default="features"
        How the posterior mean is computed.  ``"features"``: exactly, on the
        ``n_variance_features`` random features of the variance, ``phi(x)^T (Phi^T Phi +
        noise I)^{-1} Phi^T y`` from ``Phi^T Phi`` and ``Phi^T y`` summed over the chunks in
        the variance's pass: one pass over the data, no DSG epoch.  ``"dsg"``: the paper's
        doubly stochastic functional gradient (kernel ridge regression with ``alpha =
        noise / n_samples``, the rounds of ``DSGRegressor``), up to ``max_iter`` epochs,
        then the variance's pass.  The parameters of the DSG iteration (``dtype``,
        ``n_features``, ``batch_size``, ``learning_rate``, ``eta0``, ``t0``, ``average``,
        ``max_iter``, ``tol``, ``n_iter_no_change``, ``early_stopping``,
        ``validation_fraction``, ``chunks_per_round``, ``shuffle``, ``shuffle_chunks``)
        apply to ``mean="dsg"``; with ``mean="features"`` only where the fit still runs
        DSG: ``variance="operator"`` takes its step sizes from ``learning_rate``, ``eta0``,
        ``t0`` and ``batch_size`` and runs ``max_iter`` passes; ``bandwidth="auto"`` or
        ``"ard"`` on more than 1000 rows ranks the widths on ``n_features`` random
        features, and on more than 50,000 rows by short DSG trial fits with ``dtype``,
        ``n_features``, ``batch_size``, ``learning_rate``, ``eta0``, ``t0`` and
        ``average``.  A ``mean="features"`` fit warns (``OocKernelsWarning``) naming those
        set away from their defaults that have no effect on it
        (:mod:`ooc_kernels.families.dsg._gp_unused`).  ``warm_start`` applies to both: a
        new fit keeps the set-up (bandwidth, standardization) of the last.  ``docs/machines/gaussian_process.md``
        compares the two at equal time.
    variance : {"features", "operator"}, default="features"
        How the predictive variance is estimated
        (:mod:`ooc_kernels.families.dsg._gp_variance`): ``"features"``, the exact GP
        variance on ``n_variance_features`` random features, from ``Phi^T Phi`` summed
        over the chunks; ``"operator"``, the paper's doubly stochastic update of the
        operator ``A = C (C + noise / n I)^{-1}`` (Eq. 18), several times less accurate at
        equal time (``docs/machines/gaussian_process.md``).  Either is clipped at 0.
    n_variance_features : int, default=1024
        Random features of the variance, and of the mean with ``mean="features"`` (a
        multiple of ``block_size``): the statistics are an ``n_variance_features`` squared matrix (8 MiB at 1024), however
        many rows the data has; the pass costs ``n_variance_features^2`` operations a row.
    """ + _GP_PARAMS_DOC + """
    Attributes
    ----------""" + _ATTRIBUTES_DOC + """
    noise_ : float
        The noise variance in the model's (standardized) units (with ``noise="auto"``: the
        one chosen).
    n_iter_ : int
        With ``mean="features"``: 1, the one pass over the data (``history_`` is empty: no
        DSG epoch ran); with ``mean="dsg"``: the DSG epochs.
    variance_matrix_ : ndarray of shape (n_variance_features, n_variance_features)
        ``"features"``: the lower factor ``L`` of ``Phi^T Phi + noise I``; ``"operator"``:
        ``theta`` of ``A(u, v) = z(u)^T theta z'(v)``.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels import DSGGaussianProcessRegressor
    >>> X = np.linspace(-3, 3, 200)[:, None]
    >>> gp = DSGGaussianProcessRegressor(random_state=0, scheduler="sync").fit(X, np.sin(X[:, 0]))
    >>> mean, std = gp.predict(X[:3], return_std=True)
    >>> mean.shape, std.shape
    ((3,), (3,))
    """

    _parameter_constraints = _GP_CONSTRAINTS
    _saved_arrays = {"coef": True, "avg": False, "variance_matrix": False}
    # The contract suite runs the DSG mean: its rounds are what the resume and finishing
    # checks interrupt (mean="features" runs none); scikit-learn's checks run the defaults,
    # and tests/test_dsg_gaussian_process.py checks mean="features" on schedulers, chunkings,
    # lazy input and saving.
    _test_params = dict(mean="dsg", noise=0.1, n_features=256, block_size=32, batch_size=8,
                        max_iter=2, tol=None,
                        n_variance_features=64)
    capabilities = Capabilities(execution="rounds", inputs="supervised", task="regression",
                                partial_fit=False, tol=True, probabilistic=True,
                                finishing=True)
    #: The loss of the mean (kernel ridge regression).
    loss = "squared"

    def __init__(self, noise="auto", *, mean="features", variance="features",
                 n_variance_features=1024,
                 kernel="rbf", kernel_params=None, bandwidth="auto", median_multiplier=1.0,
                 standardize=True,
                 dtype="auto", n_features=4096, block_size=256, batch_size=256,
                 learning_rate="optimal", eta0="auto", t0="auto", average=True,
                 max_iter=1000, tol=1e-3, n_iter_no_change=5, early_stopping=False,
                 validation_fraction=0.1, warm_start=False, verbose=0, chunks_per_round="auto",
                 chunk_size=10_000, shuffle=True, shuffle_chunks="auto", on_invalid="error",
                 random_state=None, scheduler=None, progress=None):
        self.noise = noise
        self.mean = mean
        self.variance = variance
        self.n_variance_features = n_variance_features
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.bandwidth = bandwidth
        self.median_multiplier = median_multiplier
        self.standardize = standardize
        self.dtype = dtype
        self.n_features = n_features
        self.block_size = block_size
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.t0 = t0
        self.average = average
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.warm_start = warm_start
        self.verbose = verbose
        self.chunks_per_round = chunks_per_round
        self.chunk_size = chunk_size
        self.shuffle = shuffle
        self.shuffle_chunks = shuffle_chunks
        self.on_invalid = on_invalid
        self.random_state = random_state
        self.scheduler = scheduler
        self.progress = progress

    # ------------------------------------------------------------------ setup
    @property
    def alpha(self) -> float:
        """The mean's regularization ``nu = noise / n_samples``, read by the DSG setup while
        a fit is being set up (``n_samples``: its training rows); there is no ``alpha``
        parameter (``alpha_`` is the fitted value)."""
        n_rows = getattr(self, "_setup_rows", None)
        if n_rows is None:
            raise AttributeError(
                "DSGGaussianProcessRegressor has no alpha parameter: the mean's "
                "regularization is noise / n_samples (alpha_ after fit); set noise.")
        noise = SETUP_NOISE if self.noise == "auto" else float(self.noise)
        return noise / max(int(n_rows), 1)

    def _target_spec(self, loss, n_classes):
        return "regression", 1, get_loss("squared").loss_id

    def _partial_fit_available(self) -> bool:
        raise AttributeError(
            "DSGGaussianProcessRegressor has no partial_fit: the posterior depends on every "
            "training row at once (the mean's regularization noise / n and the variance "
            "statistics), so fit it on the whole data set.")

    def _check_params(self) -> None:
        super()._check_params()
        check_whole_blocks("n_variance_features", self.n_variance_features, self.block_size,
                           "the variance features come in whole blocks")
        check_variance_memory(self.n_variance_features)
        if self.noise == "auto" and self.mean == "dsg":
            raise ValidationError(
                "noise='auto' is chosen from the statistics of the one pass of "
                "mean='features' (the DSG mean needs its noise before its first epoch); "
                "with mean='dsg' pass a number, e.g. the noise_ of a mean='features' fit.")

    def _features_mean(self) -> bool:
        return self.mean == "features"

    def _holds_out_validation(self) -> bool:
        # mean="features" has no epochs to stop early: every row is used, and in-memory
        # input keeps its chunk_size chunks
        return not self._features_mean() and super()._holds_out_validation()

    def _run(self, data, sched, *, start, end_epoch, **kwargs):
        """The engine's rounds (``mean="dsg"``), or none (``mean="features"``: the finishing
        pass computes the mean), then the finishing pass; with ``mean="features"``, a
        :class:`~ooc_kernels.exceptions.OocKernelsWarning` names the DSG parameters set
        away from their defaults that have no effect on this fit
        (:mod:`ooc_kernels.families.dsg._gp_unused`)."""
        if self._features_mean():
            end_epoch = start[0]
            unused = unused_params(self, n_samples=data.n_samples,
                                   chunk_sizes=data.chunk_sizes)
            if unused:
                warnings.warn(unused_message(self, unused), OocKernelsWarning, stacklevel=4)
        super()._run(data, sched, start=start, end_epoch=end_epoch, **kwargs)

    def fit(self, X, y=None, *, checkpoint=None, checkpoint_every=1, resume=False):
        """Fit the posterior mean and the variance, out of core: one pass over the data
        with ``mean="features"`` (``variance="operator"``: ``max_iter`` more); with
        ``mean="dsg"``, up to ``max_iter`` DSG passes, then the variance's pass
        (``variance="operator"``: as many passes as the mean took).

        Parameters
        ----------
        X, y, checkpoint, checkpoint_every, resume
            As in :meth:`ooc_kernels.DSGRegressor.fit` (no ``sample_weight``: every row is
            one observation of the GP, as in scikit-learn's ``GaussianProcessRegressor``).

        Returns
        -------
        self
        """
        return super().fit(X, y, checkpoint=checkpoint, checkpoint_every=checkpoint_every,
                           resume=resume)

    def _initialize(self, data, sched, classes=None) -> None:
        if "sample_weight" in data:
            raise ValidationError(
                "the data has a sample_weight variable; DSGGaussianProcessRegressor takes "
                "every row as one observation (no weights). Drop the variable.")
        self._n_train = data.n_samples
        self._variance = None
        self._setup_rows = data.n_samples
        try:
            super()._initialize(data, sched, classes=classes)
        finally:
            del self._setup_rows

    def _variance_config(self, n_samples: int, noise: float) -> VarianceConfig:
        cfg = self._config
        return VarianceConfig(
            mode=self.variance, noise=float(noise), n_samples=int(n_samples),
            n_blocks=self.n_variance_features // self.block_size, block_size=self.block_size,
            seed=derive_seed(self.random_seed_, 11), seed_prime=derive_seed(self.random_seed_, 12),
            n_features_in=cfg.n_features_in, bandwidth=cfg.bandwidth, kernel=cfg.kernel,
            x_shift=cfg.x_shift, x_scale=cfg.x_scale, batch_size=cfg.batch_size,
            on_invalid=self.on_invalid, y_shift=float(cfg.y_shift), y_scale=float(cfg.y_scale))

    def _finish(self, state, data, sched):
        """One pass over ``data`` reduces ``Phi^T Phi``, ``Phi^T y`` and ``y^T y``: the
        noise (``"auto"``), the mean (``mean="features"``) and the variance
        (``"features"``) follow from them; ``variance="operator"`` runs its own passes
        (as many as the DSG mean ran, ``max_iter`` with ``mean="features"``)."""
        features = self._features_mean()
        noise = SETUP_NOISE if self.noise == "auto" else float(self.noise)
        vconfig = self._variance_config(data.n_samples, noise)
        stats = None
        if features or vconfig.mode == "features":
            stats = statistics_pass(vconfig, data, sched)
            if self.noise == "auto":
                vconfig = dataclasses.replace(vconfig, noise=select_noise(stats))
            factor = gram_factor(stats, vconfig.noise)
        if vconfig.mode == "features":
            matrix = factor
        else:
            config = self._config
            matrix = operator_pass(vconfig, data, sched,
                                   gammas_of=lambda t: step_sizes(config, t),
                                   n_epochs=int(self.max_iter) if features
                                   else max(1, int(self.n_iter_)),
                                   seed=derive_seed(self.random_seed_, 13))
        self._variance = (vconfig, matrix)
        if not features:
            return state
        # the mean as a DSG model on the variance's features: f(x) = z(x) . w / sqrt(B)
        B, r = vconfig.n_blocks, vconfig.block_size
        w = features_mean(stats, vconfig.noise, factor)
        self._config = dataclasses.replace(
            self._config, feature_seed=vconfig.seed, n_blocks=B, dtype="float64",
            alpha=vconfig.noise / max(int(data.n_samples), 1))
        return DSGState(coef=(w / math.sqrt(B)).reshape(B, r, 1), n_blocks_seen=B,
                        n_samples_seen=stats.n,
                        n_samples_skipped=int(data.n_samples) - stats.n)

    def _publish(self) -> None:
        super()._publish()
        variance = getattr(self, "_variance", None)
        self.noise_ = float(variance[0].noise) if variance is not None else (
            None if self.noise == "auto" else float(self.noise))
        if variance is not None:
            self.variance_matrix_ = variance[1]
        if self._features_mean():  # n_iter_: the one pass over the data, no DSG epoch
            self.n_iter_ = 1
            self.stop_reason_ = ("mean='features': the exact mean on the random features, "
                                 "from one pass (no epochs)")

    # ------------------------------------------------------------------ prediction
    def predict(self, X, return_std=False):
        """The posterior mean, and with ``return_std`` its standard deviation (of the
        latent ``f``, in the targets' units), lazy for lazy input.

        Parameters
        ----------
        X : array-like, Dask array, xarray object or Intake reader of shape (n_samples, n_features)
        return_std : bool, default=False

        Returns
        -------
        mean : ndarray or Dask array of shape (n_samples,)
        std : ndarray or Dask array of shape (n_samples,), with ``return_std``
        """
        check_is_fitted(self, "_state")
        if not return_std:
            return super().predict(X)
        if getattr(self, "_variance", None) is None:
            raise ValidationError(
                "this model has no variance statistics (a fit stopped before its finishing "
                "pass); fit again (or resume from the checkpoint) to predict return_std.")
        vconfig, matrix = self._variance
        out = self._chunk_outputs(X, mean_std_block,
                                  (self._config, self._state, vconfig, matrix), 2)
        return wrap_prediction(X, out[:, 0]), wrap_prediction(X, out[:, 1])

    # ------------------------------------------------------------------ persistence
    def _fitted_arrays(self) -> dict:
        arrays = super()._fitted_arrays()
        if getattr(self, "_variance", None) is not None:
            arrays["variance_matrix"] = np.asarray(self._variance[1], dtype=np.float64)
        return arrays

    def _fitted_meta(self) -> dict:
        meta = super()._fitted_meta()
        variance = getattr(self, "_variance", None)
        if variance is not None:
            vc = dataclasses.asdict(variance[0])
            vc["seed"], vc["seed_prime"] = str(vc["seed"]), str(vc["seed_prime"])
            meta["variance"] = vc
        meta["n_train"] = int(self._n_train)
        return meta

    def _restore_fitted(self, arrays: dict, meta: dict, where: str) -> None:
        self._n_train = int(meta.get("n_train", 1))
        super()._restore_fitted(arrays, meta, where)
        self._variance = None
        vc, matrix = meta.get("variance"), arrays.get("variance_matrix")
        if vc is None and matrix is None:
            return
        if vc is None or matrix is None:
            raise ModelFormatError(
                f"{where}: the model has only one of the variance metadata and the "
                "variance_matrix array; re-save the model or restore it from a backup.")
        try:
            vc = dict(vc)
            vc["seed"], vc["seed_prime"] = int(vc["seed"]), int(vc["seed_prime"])
            for key in ("x_shift", "x_scale"):
                vc[key] = None if vc.get(key) is None else tuple(vc[key])
            vconfig = VarianceConfig(**vc)
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFormatError(f"{where}: the variance metadata cannot be read ({exc}); "
                                   "re-save the model or restore it from a backup.") from exc
        D = vconfig.n_features
        if vconfig.mode not in VARIANCE_MODES or not (
                isinstance(vconfig.noise, (int, float)) and 0 < vconfig.noise < math.inf):
            raise ModelFormatError(
                f"{where}: the variance metadata has mode={vconfig.mode!r} and noise="
                f"{vconfig.noise!r}; the mode must be one of {VARIANCE_MODES} and the noise "
                "a positive finite number. Re-save the model.")
        if np.shape(matrix) != (D, D):
            raise ModelFormatError(
                f"{where}: variance_matrix has shape {np.shape(matrix)}, the metadata says "
                f"{(D, D)}.")
        self._variance = (vconfig, np.asarray(matrix, dtype=np.float64))
        self._publish()
