"""Novelty detection with doubly stochastic functional gradients (a one-class SVM), out of
core.

The estimator solves scikit-learn's one-class SVM problem (``OneClassSVM``,
``SGDOneClassSVM``) with the kernel machine's random features regenerated from seeds:
``min_{f, tau} E_x[max(0, tau - f(x))] + nu/2 ||f||^2 - nu tau``, the objective of Dai et
al. (2014, section 4) and, multiplied by ``nu``, libsvm's ``1/2 ||w||^2 - rho + 1/(nu n)
sum_i xi_i``.  The chunk algorithm is :mod:`ooc_kernels.families.dsg.one_class_solver`.

Examples
--------
>>> import numpy as np
>>> import ooc_kernels as ok
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(600, 2))
>>> det = ok.DSGOneClassSVM(nu=0.1, random_state=0, scheduler="sync").fit(X)
>>> det.predict([[0.0, 0.0], [6.0, 6.0]]).tolist()
[1, -1]
"""

from __future__ import annotations

from dataclasses import replace
from numbers import Integral, Real

import dask
import dask.array as da
import numpy as np
from sklearn.base import OutlierMixin
from sklearn.utils.validation import check_is_fitted

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels._capabilities import Capabilities
from ooc_kernels._seeds import derive_seed
from ooc_kernels.data.inputs import wrap_prediction
from ooc_kernels.estimators._constraints import Interval, StrOptions
from ooc_kernels.estimators._registry import register_estimator
from ooc_kernels.estimators.base import BASE_PARAMS_DOC
from ooc_kernels.exceptions import DivergenceError, ModelFormatError, ValidationError
from ooc_kernels.families.dsg._bandwidth import _standardized
from ooc_kernels.families.dsg._common import (KERNEL_PARAMS_DOC, check_bandwidth_sample,
                                               finite_sample_rows, with_run_settings)
from ooc_kernels.families.dsg._memory import check_fit_memory
from ooc_kernels.families.dsg._schedule import growth_step_eigenvalue, resolve_schedule
from ooc_kernels.families.dsg._setup_sample import check_sampled_weights
from ooc_kernels.families.dsg.one_class_basis import (check_basis, draw_nystroem_basis,
                                                      restore_basis, saved_basis)
from ooc_kernels.families.dsg.one_class_defaults import (MIN_STEPS_BEFORE_TOL, resolve_basis,
                                                         resolve_batch_size,
                                                         resolve_n_features)
from ooc_kernels.families.dsg.estimators import _DSG_CONSTRAINTS, _DSGEstimator
from ooc_kernels.families.dsg.one_class_solver import (OneClassAlgorithm, OneClassState,
                                                       fixed_scores, init_one_class_state,
                                                       stacked_feature_bytes)
from ooc_kernels.families.dsg.solver import DSGConfig, _affine, predict_chunk
from ooc_kernels.features.bandwidth import median_heuristic
from ooc_kernels.features.rbf import MAX_BANDWIDTH, MIN_BANDWIDTH
from ooc_kernels.features.cache import default_cache
from ooc_kernels.features.maps import kernel_spec
from ooc_kernels.losses import get_loss
from ooc_kernels.parallel.chunked import ChunkedData
from ooc_kernels.parallel.cluster import compute
from ooc_kernels.parallel.sampling import sample_rows

__all__ = ["DSGOneClassSVM", "nu_quantile"]

#: The loss id a one-class configuration records: the hinge's, whose derivative at
#: ``u = f - tau + 1``, ``y = 1`` is the one-class loss's (-1 where ``f < tau``, else 0).
_LOSS_ID = get_loss("hinge").loss_id
#: Rows sampled for the standardization, the bandwidth and the first step.
_SAMPLE_ROWS = 2000

_CONSTRAINTS = {k: v for k, v in _DSG_CONSTRAINTS.items()
                if k not in ("alpha", "average", "early_stopping", "validation_fraction",
                             "bandwidth")}
_CONSTRAINTS.update({
    "nu": [Interval(Real, 0, 1, closed="right")],
    "bandwidth": [Interval(Real, MIN_BANDWIDTH, MAX_BANDWIDTH, closed="both"),
                  StrOptions({"median"})],
    "n_features": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
    "basis": [StrOptions({"auto", "random", "nystroem"})],
    "batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
    "offset": [StrOptions({"quantile", "paper"})],
})
#: Most training rows scored to place the ``nu``-quantile offset (all of them below this;
#: a random share of every chunk above: the quantile's rank error is then about
#: ``sqrt(nu (1 - nu) / _QUANTILE_ROWS)``, 0.0019 for ``nu = 0.1`` and at most 0.0032).
#: The pass costs what scoring that many rows costs: at 100,000 rows it was 38% of a
#: one-pass fit on 140,000 rows in 16-D.
_QUANTILE_ROWS = 25_000


#: Scores are computed for tiles of this many rows (a chunk's last tile padded with zero
#: rows): BLAS then treats every row alike, so a row's score does not depend on how the
#: rows are chunked (a short tail of rows takes other code paths, whose float32 rounding
#: differs in the last bits).
_SCORE_TILE = 64


def _scores(config, state, X, basis=None) -> np.ndarray:
    """``f(x)`` of one chunk's rows, shape (n,), float64 (computed in ``config.dtype`` on
    random features, in float64 on a fixed ``basis``)."""
    X = np.asarray(X)  # one chunk
    n = X.shape[0]
    padded = -(-n // _SCORE_TILE) * _SCORE_TILE
    if padded != n:
        X = np.concatenate([X, np.zeros((padded - n, X.shape[1]), dtype=X.dtype)])
    if basis is not None:
        with single_threaded_blas():
            return fixed_scores(basis, config, state, X)[:n, 0]
    return predict_chunk(config, state, X)[:n, 0].astype(np.float64)


def _score_block(X, payload):
    """``f(x)`` of one chunk, shape (n, 1), float64 (scikit-learn's outlier detectors score
    in float64)."""
    config, state, basis = payload
    return _scores(config, state, X, basis)[:, None]


def _decision_block(X, payload):
    """``f(x) - offset`` of one chunk (the decision function), float64."""
    state = payload[1]
    return _score_block(X, payload) - (state.tau if state.offset is None else state.offset)


def _chunk_scores(X, w, payload, keep, seed, chunk):
    """``(f(x), weights)`` of the finite rows of one chunk, or of a random share ``keep``
    of them (seeded by ``seed`` and the chunk's index), in float64."""
    config, state, basis = payload
    X = np.asarray(X)  # one chunk
    w = np.ones(len(X)) if w is None else np.asarray(w, dtype=np.float64).reshape(-1)
    rows = np.isfinite(X).all(axis=1) & np.isfinite(w)
    if keep < 1.0:
        rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(chunk,)))
        rows &= rng.random(len(X)) < keep
    return _scores(config, state, X[rows], basis), w[rows]


def nu_quantile(scores, weights, nu):
    """The smallest score ``s`` with at least a share ``nu`` of the weight at or below it:
    less than ``nu`` of the weight lies strictly below ``s`` and at least ``nu`` at or below
    it (scikit-learn's two bounds of ``nu`` on the training rows).

    Examples
    --------
    >>> nu_quantile(np.array([3.0, 1.0, 2.0, 4.0]), np.ones(4), 0.5)
    2.0
    >>> nu_quantile(np.array([3.0, 1.0, 2.0, 4.0]), np.ones(4), 0.51)
    3.0
    """
    order = np.argsort(scores, kind="stable")
    cum = np.cumsum(np.asarray(weights, dtype=np.float64)[order])
    # the target share, with float64 rounding of the cumulative sum forgiven
    i = int(np.searchsorted(cum, nu * cum[-1] * (1.0 - 1e-12), side="left"))
    return float(np.asarray(scores)[order][min(i, len(cum) - 1)])


def _inlier_labels(dec):
    """+1 where the decision value is >= 0, -1 elsewhere (scikit-learn's rule)."""
    return np.where(np.asarray(dec) >= 0, 1, -1)


@register_estimator
class DSGOneClassSVM(OutlierMixin, _DSGEstimator):
    __doc__ = """Novelty detection (one-class SVM) with doubly stochastic functional gradients.

    Minimizes ``E_x[max(0, tau - f(x))] + nu/2 ||f||^2 - nu tau`` over the kernel function
    ``f`` and the offset ``tau`` (Dai et al. 2014, section 4): scikit-learn's
    ``OneClassSVM`` problem (libsvm's, multiplied by ``nu``) with ``nu`` in the same two
    roles, the regularization of ``f`` and the weight of ``-nu tau``.  At the optimum the
    fraction of training rows with ``f(x) < tau`` is at most ``nu`` and the fraction with
    ``f(x) <= tau`` at least ``nu``: ``nu`` is an upper bound on the fraction of training
    outliers (and a lower bound on that of support vectors).  ``decision_function(x) = f(x)
    - tau`` is positive for inliers; ``score_samples(x) = f(x)`` and ``offset_ = tau``, as
    scikit-learn has them.

    Parameters
    ----------
    nu : float in (0, 1], default=0.5
        The one-class ``nu`` of scikit-learn's ``OneClassSVM`` and ``SGDOneClassSVM``: an
        upper bound on the fraction of training rows predicted as outliers, a lower bound
        on the fraction of support vectors.  It is also the RKHS regularization (every step
        multiplies the coefficients by ``1 - gamma_t nu``).
""" + KERNEL_PARAMS_DOC + """    bandwidth : float or "median", default="median"
        Kernel bandwidth sigma of ``exp(-||x - x'||^2 / (2 sigma^2))`` (in the units the
        model sees: standardized with ``standardize``).  ``"median"``:
        ``median_multiplier`` times the median pairwise distance of up to 2000 rows drawn
        from up to 8 random chunks.  (The supervised estimators' ``"auto"``, which scores
        trial fits on held-out labels, has no labels to score here.)
    median_multiplier : float, default=0.5
        Used by ``bandwidth="median"``.  0.5 puts sigma near scikit-learn's
        ``gamma="scale"`` on standardized data (``sigma^2 = d / 2``, where the median
        distance of standardized Gaussian rows is about ``sqrt(2 d)``).
        On clustered data the median distance is one between clusters, and a smaller
        multiplier ranks novelties better (0.25 against 0.5: ROC AUC 0.79 against 0.74 on
        four blobs in 16-D) while on one round cluster it ranks them worse (0.76 against
        0.81); see docs/machines/one_class.md.
    standardize : bool, default=True
        The model sees every feature centred and scaled to unit variance (moments of the
        sampled rows, folded into the random features).
    dtype : {"auto", "float32", "float64"}, default="auto"
        Precision of the random features (the coefficients are float64 either way);
        ``"auto"``: float64 when the data set is one batch, float32 otherwise.
    n_features : int or "auto", default="auto"
        Random features the model may hold (a multiple of ``block_size``), or with
        ``basis="nystroem"`` the number of landmarks (all the rows of a smaller data set).
        ``"auto"``: 256 landmarks on the Nystrom basis, 4,096 random features (rounded down
        to whole blocks) on the random one.  Each task holds the parameters of every block
        stacked, ``n_features * (n_features_in + 1)`` values, which must fit in half the
        feature-cache budget (``OOC_KERNELS_FEATURE_CACHE_MB``, default 256 MiB).
    basis : {"auto", "random", "nystroem"}, default="auto"
        ``"random"``: random features regenerated from seeds, one block opened per step
        while the model grows (any ``kernel``).  ``"nystroem"``: a basis built from the
        data (``kernel="rbf"`` only): ``n_features`` landmarks drawn uniformly among all the
        training rows by ``random_state`` (reading only the chunks that hold one), the
        features ``phi(x) = k(x, L) K_LL^{-1/2}`` (eigenvalues below ``1e-10`` of the
        largest dropped), all of them in the model from the first step, ``coef_`` their
        coefficients (padded with zeros to whole blocks); the landmarks are saved with
        the model (``landmarks_``).  A row costs ``O(n_features n_features_in)`` (its
        kernel values) and a step ``O(batch_size n_features + n_features^2)``, so far
        fewer landmarks than random features are used (256 against 4,096:
        docs/machines/one_class.md, *Feature basis*).  ``"auto"``: ``"nystroem"`` for
        ``kernel="rbf"`` without ``kernel_params``, ``"random"`` for other kernels; with
        the other defaults it ranks novelties as well as scikit-learn's ``Nystroem(256)``
        + ``SGDOneClassSVM`` in less CPU time (docs/defaults.md, *One-class SVM*).
    block_size : int, default=256
        Random features per block (one block per mini-batch step while the model grows).
    batch_size : int or "auto", default="auto"
        Rows per step.  ``"auto"``: a data set of at most 64 rows is one batch (full
        gradient steps); beyond, ``n_rows // 200`` rows, at least 4 and at most 64 (64
        from 12,800 training rows on; ``partial_fit`` counts the rows of its first call).  At most 64, not the supervised machines' 256:
        with steps of ``1 / (nu (t + t0))`` the model is the plain mean of its steps'
        gradients, the first ones (taken while ``tau`` is still far from the
        ``nu``-quantile) included, so a fit needs a few hundred steps (``tol`` ends none
        before 200); on 20,000 rows in 16-D one pass ranks outliers with ROC AUC 0.738
        against 0.733 for batches of 256, at the same CPU time (see
        docs/machines/one_class.md).  Fewer rows than 12,800 take smaller batches, so
        that those 200 steps are about one pass rather than several
        (:mod:`~ooc_kernels.families.dsg.one_class_defaults`).
    learning_rate : {"optimal", "inverse", "constant"}, default="optimal"
        ``"optimal"``: ``gamma_t = theta / (t + t0)`` with ``theta = 1 / nu`` (``theta nu =
        1``) and ``t0`` such that the first step is ``eta0``; ``"inverse"``: ``eta0 / (t +
        t0)``; ``"constant"``: ``eta0``.  See :mod:`ooc_kernels.families.dsg._schedule`.
    eta0 : float or "auto", default="auto"
        The first step (``"auto"``: the largest stable one for the hinge's curvature and
        the data), or ``theta`` with ``"inverse"``.
    t0 : float or "auto", default="auto"
        Offset of ``"inverse"``.
    max_iter : int, default=1000
        Most passes over the data.
    offset : {"quantile", "paper"}, default="quantile"
        The offset ``tau`` the fitted model decides with (``offset_``).  ``"quantile"``:
        after the last epoch, one pass over the training rows places it at the ``nu``-
        quantile of their scores ``f(x)`` (weighted by ``sample_weight``; all rows up to
        25,000, a random share of every chunk beyond), so that at most a share ``nu`` of
        the training rows is predicted as outliers and at least ``nu`` lies on or below the
        boundary, whatever epoch the stopping rule ends on.  ``"paper"``: the paper's
        ``tau``, updated by the steps, as it stands after the last one (it reaches the
        quantile only as the steps converge: a fit stopped by ``tol`` misses ``nu`` by up
        to a few hundredths).  The steps use the paper's ``tau`` either way (``tau_``).
    tol : float or None, default=1e-3
        Stop when an epoch's progressive one-class loss (``max(0, tau - f(x)) - nu tau``
        per row, at the model each row's step started from) improves by less than ``tol``
        on the best so far for ``n_iter_no_change`` epochs in a row, once the fit has
        taken at least 200 steps (``MIN_STEPS_BEFORE_TOL``: on small data sets, whose
        epochs are a few steps, the ranking needs that many); None: run ``max_iter``
        epochs.
    n_iter_no_change : int, default=2
        Epochs without improvement before ``tol`` stops the fit.  2, not the supervised
        machines' 5: on many rows one epoch has converged the ranking, and 5 more epochs
        cost time for nothing (7 epochs and 10.4 s against 4 and 6.4 s for 140,000 rows
        in 16-D, the same ROC AUC to 1e-4).
    warm_start : bool, default=False
    verbose : int, default=0
""" + BASE_PARAMS_DOC + """
    Attributes
    ----------
    offset_ : float
        ``decision_function = score_samples - offset_``: the ``nu``-quantile of the
        training scores (``offset="quantile"``) or ``tau_`` (``offset="paper"``).
    tau_ : float
        The paper's offset as the steps left it.
    coef_ : ndarray of shape (n_blocks_used, block_size, 1)
    bandwidth_, dtype_, feature_seed_, eta0_, t0_ : as in :class:`DSGRegressor`
    alpha_ : float
        The RKHS regularization used, ``nu``.
    landmarks_ : ndarray of shape (n_landmarks, n_features_in) or None
        With ``basis="nystroem"``: the landmarks, in the units the model sees (standardized
        with ``standardize``); None with ``basis="random"``.
    n_iter_, t_, history_, stop_reason_, n_blocks_seen_, n_samples_seen_,
    n_samples_skipped_, n_features_in_, shuffle_chunks_, feature_coords_ : as in
        :class:`DSGRegressor`

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels import DSGOneClassSVM
    >>> rng = np.random.default_rng(1)
    >>> X = rng.normal(size=(500, 2))
    >>> det = DSGOneClassSVM(nu=0.2, random_state=0, scheduler="sync").fit(X)
    >>> bool(np.allclose(det.decision_function(X), det.score_samples(X) - det.offset_))
    True
    """

    _parameter_constraints = _CONSTRAINTS
    capabilities = Capabilities(execution="rounds", inputs="unsupervised", task="novelty",
                                partial_fit=True, tol=True, finishing=True)
    #: ``partial_fit`` places the quantile offset on the rows it was given.
    _finish_after_partial_fit = True
    _saved_arrays = {"coef": True, "landmarks": False}
    #: The loss of the table the configuration records (not a parameter): the one-class
    #: loss ``max(0, tau - f)`` is the hinge at ``u = f - tau + 1``, ``y = +1``.
    loss = "hinge"

    def __init__(self, nu=0.5, *, kernel="rbf", kernel_params=None, bandwidth="median", median_multiplier=0.5,
                 standardize=True, dtype="auto", n_features="auto", basis="auto",
                 block_size=256,
                 batch_size="auto", learning_rate="optimal", eta0="auto", t0="auto",
                 offset="quantile", max_iter=1000, tol=1e-3, n_iter_no_change=2,
                 warm_start=False, verbose=0,
                 chunks_per_round="auto", chunk_size=10_000, shuffle=True, shuffle_chunks="auto",
                 on_invalid="error", random_state=None, scheduler=None, progress=None):
        self.nu = nu
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.bandwidth = bandwidth
        self.median_multiplier = median_multiplier
        self.standardize = standardize
        self.dtype = dtype
        self.n_features = n_features
        self.basis = basis
        self.block_size = block_size
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.t0 = t0
        self.offset = offset
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
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

    # ------------------------------------------------------------------ model setup
    def _check_params(self) -> None:
        super()._check_params()
        check_basis(self)

    def _resolved(self, n_rows: int) -> tuple[str, int, int]:
        """``(basis, n_features, batch_size)`` with ``"auto"`` resolved for the kernel and
        ``n_rows`` training rows (:mod:`~ooc_kernels.families.dsg.one_class_defaults`)."""
        basis = resolve_basis(self.basis, self.kernel, self.kernel_params)
        return (basis, resolve_n_features(self.n_features, basis, self.block_size),
                resolve_batch_size(self.batch_size, n_rows))

    def _resolve_dtype(self, data) -> str:
        """``dtype`` resolved: ``"auto"`` is float64 when the data set is one batch (one
        chunk of at most the resolved ``batch_size`` rows), float32 otherwise."""
        if self.dtype != "auto":
            return self.dtype
        batch = self._resolved(data.n_samples)[2]
        return "float64" if data.n_chunks == 1 and data.n_samples <= batch else "float32"

    def _target_spec(self, loss, n_classes):
        return "novelty", 1, _LOSS_ID

    def _sample(self, data: ChunkedData, sched):
        """Rows (and their weights) from up to 8 random chunks, or every row of a data set
        of at most ``_SAMPLE_ROWS`` rows."""
        n_rows, max_chunks = _SAMPLE_ROWS, 8
        if data.n_samples <= _SAMPLE_ROWS:
            n_rows, max_chunks = data.n_samples, data.n_chunks
        kw = dict(n_rows=n_rows, max_chunks=max_chunks, seed=derive_seed(self.random_seed_, 3),
                  scheduler=sched)
        weighted = "sample_weight" in data
        rows, chunk_of, row_of = sample_rows(
            data, return_index=True, var=("X", "sample_weight") if weighted else ("X",), **kw)
        sample = rows[0]   # the rows and their weights in one computation: one round trip
        # the sampled rows' weights, already read with them
        w = np.asarray(rows[1], dtype=np.float64) if weighted else np.ones(len(sample))
        check_sampled_weights(self, data, w, every_row=data.n_samples <= _SAMPLE_ROWS)
        keep = finite_sample_rows(sample, None, chunk_of, row_of, self.on_invalid)
        return (sample, w) if keep is None else (sample[keep], w[keep])

    def _initialize(self, data: ChunkedData, sched, classes=None) -> None:
        basis, n_features, batch_size = self._resolved(data.n_samples)
        sampled = self._needs_sample(data)
        if sampled:
            sample, w = self._sample(data, sched)
        else:  # every setting given: nothing is read before the fit's own tasks
            sample, w = np.empty((0, data.n_features)), np.empty(0)
        check_bandwidth_sample(self.bandwidth, len(sample))
        positive = w[w > 0]
        mean_w = float(w.mean()) if len(positive) else 1.0
        nu = float(self.nu)
        base = DSGConfig(
            loss_id=_LOSS_ID, target="novelty", n_outputs=1,
            n_features_in=data.n_features, block_size=self.block_size,
            n_blocks=n_features // self.block_size, bandwidth=1.0,
            feature_seed=derive_seed(self.random_seed_, 1), alpha=nu,
            batch_size=batch_size, learning_rate="constant", eta0=1.0, t0=0.0,
            dtype=self._resolve_dtype(data), shuffle=bool(self.shuffle),
            on_invalid=self.on_invalid, weight_scale=1.0 / mean_w,
            feature_budget=default_cache().max_bytes, kernel=kernel_spec(self.kernel, self.kernel_params),
            **self._standardization(sample, None, "novelty", w))
        seen = _standardized(base, sample)
        if self.bandwidth == "median":
            # unit weights: the plain median (a partition) is the weighted one, exactly
            bandwidth = median_heuristic(seen, self.median_multiplier,
                                         random_state=derive_seed(self.random_seed_, 4)
                                         % 2**32,
                                         sample_weight=None if (w == 1).all() else w)
        else:
            bandwidth = float(self.bandwidth)
        eigenvalue = growth_step_eigenvalue(
            seen, w / mean_w, bandwidth=bandwidth, feature_seed=base.feature_seed,
            block_size=self.block_size, batch_size=batch_size,
            seed=derive_seed(self.random_seed_, 7), kernel=kernel_spec(self.kernel, self.kernel_params)) if sampled else None
        plan = resolve_schedule(learning_rate=self.learning_rate, eta0=self.eta0, t0=self.t0,
                                alpha=nu, average=False, loss="hinge", eigenvalue=eigenvalue,
                                batch_size=batch_size,
                                n_samples=data.n_samples * mean_w,
                                owner=type(self).__name__)
        self._config = replace(base, bandwidth=bandwidth, learning_rate=plan.learning_rate,
                               eta0=plan.eta0, t0=plan.t0,
                               curvature=self._curvature("hinge", 1, seen, w, bandwidth))
        self._basis = None
        if basis == "nystroem":
            self._basis = draw_nystroem_basis(
                data["X"], n_features, seed=derive_seed(self.random_seed_, 13),
                scheduler=sched, on_invalid=self.on_invalid, affine=_affine(base),
                bandwidth=bandwidth)
            self._config = replace(self._config, n_blocks=-(
                -self._basis.n_components // self.block_size))
        need, budget = stacked_feature_bytes(self._config), self._config.feature_budget
        if 2 * need > budget:
            per_block = need // self._config.n_blocks
            fits = max(1, budget // 2 // per_block) * self.block_size
            raise ValidationError(
                f"n_features={n_features} with {data.n_features} input features needs "
                f"{need / 2**20:.1f} MiB of stacked feature parameters per task, more than "
                f"half the feature-cache budget ({budget / 2**20:.0f} MiB); lower n_features "
                f"(at most {fits} fits) or raise OOC_KERNELS_FEATURE_CACHE_MB.")
        check_fit_memory(self, n_outputs=1, n_features_in=data.n_features,
                         n_samples=data.n_samples, average=False, n_features=n_features,
                         batch_size=batch_size)
        self._state = init_one_class_state(self._config)
        self._publish()

    def _min_tol_steps(self) -> int:
        return MIN_STEPS_BEFORE_TOL   # the ranking's steps (MIN_STEPS_BEFORE_TOL's comment)

    def _make_algorithm(self) -> OneClassAlgorithm:
        return OneClassAlgorithm(with_run_settings(self, self._config),
                                 basis=getattr(self, "_basis", None))

    def _after_round(self, state, info) -> None:
        super()._after_round(state, info)
        if not np.isfinite(state.tau):
            raise DivergenceError(
                f"the fit produced a non-finite offset tau in epoch {info.epoch}, round "
                f"{info.round}; lower eta0, raise t0, or keep standardize=True.")

    def _finish(self, state: OneClassState, data: ChunkedData, sched) -> OneClassState:
        """The decision offset: the ``nu``-quantile of the training scores (one pass over
        the rows, at most :data:`_QUANTILE_ROWS` of them scored), or the paper's ``tau``."""
        if self.offset == "paper":
            return replace(state, offset=None)
        X = data["X"]
        blocks = X.rechunk({1: -1}).to_delayed().ravel()
        weights = data["sample_weight"].to_delayed().ravel() if "sample_weight" in data \
            else [None] * len(blocks)
        keep = min(1.0, _QUANTILE_ROWS / max(int(X.shape[0]), 1))
        seed = derive_seed(self.random_seed_, 11)
        payload = dask.delayed((self._config, state, getattr(self, "_basis", None)),
                               traverse=False)
        parts = [dask.delayed(_chunk_scores)(x, w, payload, keep, seed, i)
                 for i, (x, w) in enumerate(zip(blocks, weights))]
        # the driving process holds one BLAS thread for the pass, as the engine does for the
        # epochs: a limit entered inside a worker thread does not reach OpenBLAS, whose
        # threads then spin against the tasks' on shared cores (10 times slower)
        with single_threaded_blas():
            pieces = compute(*parts, scheduler=sched)
        scores = np.concatenate([p[0] for p in pieces])
        w = np.concatenate([p[1] for p in pieces])
        if not len(scores) or not w.sum() > 0:  # nothing to place it on: the paper's tau
            return replace(state, offset=None)
        return replace(state, offset=nu_quantile(scores, w, float(self.nu)))

    def _publish(self) -> None:
        super()._publish()
        # a state restored by the DSG base is a DSGState until _restore_fitted adds tau
        self.tau_ = float(getattr(self._state, "tau", 0.0))
        offset = getattr(self._state, "offset", None)
        self.offset_ = self.tau_ if offset is None else float(offset)
        basis = getattr(self, "_basis", None)
        self.landmarks_ = None if basis is None else basis.dictionary.copy()

    # ------------------------------------------------------------------ outputs
    def _outputs(self, X, block):
        check_is_fitted(self, "_state")
        config, state = self._predict_payload()
        return self._chunk_outputs(X, block, (config, state, getattr(self, "_basis", None)),
                                   1, np.float64)[:, 0]

    def _decision_1d(self, X):
        return self._outputs(X, _decision_block)

    def decision_function(self, X):
        """``f(x) - offset_``: positive for inliers, negative for outliers; shape
        (n_samples,), float64; NumPy in, NumPy out; lazy in, lazy out."""
        return wrap_prediction(X, self._decision_1d(X))

    def score_samples(self, X):
        """``f(x)``, the kernel function without the offset (higher: more normal)."""
        return wrap_prediction(X, self._outputs(X, _score_block))

    def predict(self, X):
        """+1 for inliers (``decision_function >= 0``), -1 for outliers."""
        dec = self._decision_1d(X)
        if isinstance(dec, da.Array):
            labels = dec.map_blocks(_inlier_labels, dtype=np.int64)
        else:
            labels = _inlier_labels(dec)
        return wrap_prediction(X, labels)

    # ------------------------------------------------------------------ persistence
    def _fitted_arrays(self) -> dict:
        arrays = super()._fitted_arrays()
        if getattr(self, "_basis", None) is not None:
            arrays.update(saved_basis(self._basis)[0])
        return arrays

    def _fitted_meta(self) -> dict:
        meta = super()._fitted_meta()
        if getattr(self, "_basis", None) is not None:
            meta["basis"] = saved_basis(self._basis)[1]
        meta["state"]["tau"] = float(self._state.tau)
        offset = self._state.offset
        meta["state"]["offset"] = None if offset is None else float(offset)
        return meta

    def _restore_fitted(self, arrays: dict, meta: dict, where: str) -> None:
        state = dict(meta["state"])
        tau = state.pop("tau", None)
        offset = state.pop("offset", None)
        for name, value, optional in (("tau", tau, False), ("offset", offset, True)):
            if optional and value is None:
                continue
            if not isinstance(value, (int, float)) or isinstance(value, bool) \
                    or not np.isfinite(value):
                raise ModelFormatError(
                    f"{where}: the metadata's fitted.state has {name}={value!r}; it must be a "
                    f"finite number{' or null' if optional else ''} (an offset). Re-save the "
                    "model or restore it from a backup.")
        super()._restore_fitted(arrays, {**meta, "state": state}, where)
        self._basis = restore_basis(arrays, meta.get("basis"), self._config, where)
        basis = resolve_basis(self.basis, self.kernel, self.kernel_params)
        if self._basis is None and self.basis == "auto" and basis == "nystroem":
            # a model saved before ``basis`` existed (no such parameter): random features
            self.basis = basis = "random"
        if (self._basis is not None) != (basis == "nystroem"):
            raise ModelFormatError(
                f"{where}: the model has basis={self.basis!r} but "
                f"{'landmarks' if self._basis is not None else 'no landmarks'}; re-save the "
                "model or restore it from a backup.")
        s = self._state
        self._state = OneClassState(coef=s.coef, n_iter=s.n_iter,
                                    n_blocks_seen=s.n_blocks_seen,
                                    n_samples_seen=s.n_samples_seen,
                                    n_samples_skipped=s.n_samples_skipped,
                                    loss_sum=s.loss_sum, loss_weight=s.loss_weight,
                                    tau=float(tau),
                                    offset=None if offset is None else float(offset))
        self._publish()

    def _check_saved_config(self, config: DSGConfig, where: str) -> None:
        super()._check_saved_config(config, where)
        nu = float(self.nu)
        if config.alpha != nu or config.average:
            raise ModelFormatError(
                f"{where}: the metadata's fitted.config has alpha={config.alpha!r} and "
                f"average={config.average!r}; a DSGOneClassSVM with nu={nu!r} has alpha = "
                f"nu = {nu!r} and average = 0. Re-save the model or restore it from a backup.")

    @classmethod
    def _upgrade_saved(cls, meta: dict, version: int) -> dict:
        if version == 1:
            raise ModelFormatError(
                "model format 1 holds DSG classifiers and regressors only, not "
                "DSGOneClassSVM: the file's format_version was edited; re-save the model or "
                "restore it from a backup.")
        return meta
