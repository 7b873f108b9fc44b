"""Projected kernel ridge regression, out of core: ``Phi^T Phi`` and ``Phi^T y`` reduced
across chunks, then one exact solve.

:class:`ProjectedKernelRidge` fits the batch form of the paper's projected forecaster (its
"Projected-KRR" of the i.i.d. experiments): with a finite feature map ``phi`` whose inner
products approximate the Gaussian kernel,

    ``w = argmin_w  sum_i s_i (y_i - w . phi(x_i))^2 + alpha ||w||^2``
    ``  = (Phi^T S Phi + alpha I)^{-1} Phi^T S y``,

``s_i`` the sample weights (1 by default).  ``alpha`` is the paper's ``lambda`` on the sum
of the squared errors, as in scikit-learn's ``KernelRidge``.  Every chunk task computes its
rows' features by tiles and returns its share of ``Phi^T S Phi`` (``r x r``) and ``Phi^T S
y`` (``r``); the engine sums the shares of a round in its fixed tree and adds them to the
state; the finishing step solves the ``r x r`` system once, by Cholesky.  The sums do not
depend on the order of the rows, so any number of chunks, any ``chunks_per_round`` and any
scheduler give the same model up to the rounding of the sums (bit for bit for a given
``chunks_per_round``).  The set-up statistics (the standardization, the Taylor centre, the
rows of the bandwidth trials) come from a set-up pass that does not depend on the chunking
either (:mod:`~ooc_kernels.families.pkawv._setup_pass`).

The bases (``basis``):

``"taylor"``
    The Gaussian kernel's Taylor basis of degree ``M``
    (:class:`~ooc_kernels.families.pkawv.taylor.TaylorBasis`, ``C(M + d, M)`` features,
    orthonormal in the RKHS), expanded around ``center_``.
``"nystrom-fixed"``
    The Nystrom embedding of ``n_components`` rows drawn uniformly from the training data
    before the statistics pass
    (:class:`~ooc_kernels.families.pkawv.nystrom_fixed.FixedNystromBasis`).

Examples
--------
>>> import numpy as np
>>> import ooc_kernels as ok
>>> rng = np.random.default_rng(0)
>>> X = rng.uniform(-1, 1, size=(500, 2))
>>> y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2
>>> model = ok.ProjectedKernelRidge(degree=4, scheduler="sync").fit(X, y)
>>> model.n_components_                                    # C(4 + 2, 4)
15
>>> bool(model.score(X, y) > 0.99)
True
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.linalg
from sklearn.base import RegressorMixin

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels._capabilities import Capabilities
from ooc_kernels._seeds import derive_seed
from ooc_kernels.estimators._constraints import Interval, StrOptions
from ooc_kernels.estimators._registry import register_estimator
from ooc_kernels.estimators.base import (
    BASE_CONSTRAINTS,
    BASE_PARAMS_DOC,
    ChunkedEstimator,
    ChunkedRegressorMixin,
)
from ooc_kernels.exceptions import InvalidDataError, ModelFormatError, ValidationError
from ooc_kernels.families.pkawv._setup import (ALPHAS, SETUP_ROWS, TRIAL_ROWS,
                                                bandwidth_trials, median_bandwidth,
                                                scale_rows, scaled_data)
from ooc_kernels.families.pkawv._setup_pass import setup_pass
from ooc_kernels.families.pkawv.nystrom_fixed import FixedNystromBasis, sample_dictionary
from ooc_kernels.families.pkawv.taylor import TaylorBasis
from ooc_kernels.families.pkawv.taylor import n_components as taylor_size
from ooc_kernels.families.pkawv.taylor import truncation_bound
from ooc_kernels.features.rbf import MAX_BANDWIDTH, MIN_BANDWIDTH

__all__ = ["ProjectedKernelRidge", "CenteredBasis", "basis_statistics", "MAX_COMPONENTS"]

#: The most features a model may have: the statistics are an ``r x r`` float64 matrix per
#: task of a round (10,000 features: 800 MB each).
MAX_COMPONENTS = 10_000
#: Rows whose features are computed at once in a chunk task.
TILE_ROWS = 4096
#: ``degree="auto"`` stops at the first degree whose truncation bound is at most this.
TAYLOR_TOL = 1e-6
_STATS = ("gram", "rhs", "n_rows", "weight_sum", "n_skipped")


class CenteredBasis:
    """A feature map applied to ``X - center`` (the Taylor basis expanded around
    ``center``: the Gaussian kernel is translation invariant, so the kernel it approximates
    is the same; the truncation error shrinks with the rows' distance to the centre)."""

    def __init__(self, basis, center):
        self.basis = basis
        self.center = np.asarray(center, dtype=np.float64)

    @property
    def n_components(self) -> int:
        return self.basis.n_components

    def transform(self, X) -> np.ndarray:
        return self.basis.transform(np.asarray(X, dtype=np.float64) - self.center)


def basis_statistics(basis, X, y, sample_weight=None) -> tuple[np.ndarray, np.ndarray]:
    """``(Phi^T S Phi, Phi^T S y)`` of the rows of ``X``, float64, the features computed by
    tiles of :data:`TILE_ROWS` rows (memory: one tile's features).

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.families.pkawv.taylor import TaylorBasis
    >>> basis = TaylorBasis(1, degree=1, bandwidth=1.0)
    >>> G, b = basis_statistics(basis, np.zeros((3, 1)), np.ones(3))
    >>> G.tolist(), b.tolist()                    # phi(0) = (1, 0)
    ([[3.0, 0.0], [0.0, 0.0]], [3.0, 0.0])
    """
    r = basis.n_components
    gram, rhs = np.zeros((r, r)), np.zeros(r)
    for lo in range(0, len(X), TILE_ROWS):
        phi = basis.transform(X[lo:lo + TILE_ROWS])
        t = np.asarray(y[lo:lo + TILE_ROWS], dtype=np.float64)
        if sample_weight is not None:
            w = np.asarray(sample_weight[lo:lo + TILE_ROWS], dtype=np.float64)
            wphi = phi * w[:, None]
            gram += wphi.T @ phi
            rhs += wphi.T @ t
        else:
            gram += phi.T @ phi
            rhs += phi.T @ t
    return gram, rhs


class ProjectedRidgeAlgorithm:
    """The engine's four methods: each task returns its chunks' statistics, ``combine`` and
    ``apply`` add them."""

    def __init__(self, basis, on_invalid: str = "error"):
        self.basis = basis
        self.on_invalid = on_invalid

    def make_tasks(self, state, info):
        return list(info.groups)

    def chunk_step(self, state, batch, task):
        X = np.asarray(batch["X"], dtype=np.float64)  # one group of chunks
        y = np.asarray(batch["y"], dtype=np.float64)
        w = batch.get("sample_weight")
        w = None if w is None else np.asarray(w, dtype=np.float64)
        finite = np.isfinite(X).all(axis=1) & np.isfinite(y)
        if w is not None:
            finite &= np.isfinite(w)
        skipped = int(len(X) - finite.sum())
        if skipped and self.on_invalid == "error":
            row = int(np.flatnonzero(~finite)[0])
            raise InvalidDataError(
                f"row {row} of the group of chunks {list(task)} has NaN or inf in X, y or "
                "sample_weight; remove or impute it, or set on_invalid='skip' to leave such "
                "rows out.")
        if skipped:
            X, y = X[finite], y[finite]
            w = None if w is None else w[finite]
        gram, rhs = basis_statistics(self.basis, X, y, w)
        return {"gram": gram, "rhs": rhs, "n_rows": np.float64(len(X)),
                "weight_sum": np.float64(len(X) if w is None else w.sum()),
                "n_skipped": np.float64(skipped)}

    def combine(self, a, b):
        return {k: a[k] + b[k] for k in _STATS}

    def apply(self, state, delta, info):
        return {**state, **{k: state[k] + delta[k] for k in _STATS}}


def _predict_rows(X, payload):
    basis, coef, x_shift, x_scale, y_shift, y_scale = payload
    X = np.asarray(X, dtype=np.float64)  # one chunk in, its predictions out
    out = np.empty((len(X), 1))
    for lo in range(0, len(X), TILE_ROWS):
        rows = scale_rows(X[lo:lo + TILE_ROWS], x_shift, x_scale)
        out[lo:lo + TILE_ROWS, 0] = basis.transform(rows) @ coef
    if (y_shift, y_scale) != (0.0, 1.0):
        out = out * y_scale + y_shift
    return out


_PARAMS_DOC = """
    basis : {"taylor", "nystrom-fixed"}, default="taylor"
        The feature map: the Gaussian kernel's Taylor basis of degree ``degree``
        (``C(degree + d, degree)`` features), or the Nystrom embedding of ``n_components``
        training rows drawn uniformly before the statistics pass.
    degree : int or "auto", default="auto"
        ``M``, the Taylor basis' largest total degree (``basis="taylor"``).  ``"auto"``:
        the smallest ``M`` whose truncation bound ``(R / sigma)^(2M + 2) / (M + 1)!`` is at
        most ``1e-6`` (``R`` the largest distance of the rows drawn at setup to the
        expansion's centre, in the units the model sees), and at most the largest ``M``
        with ``n_components`` features (``C(M + d, M)``), but at least 1: 2 for ``d = 18``
        (190 features), 3 for ``d = 10``, 4 for ``d = 8``.  The value used is
        ``degree_``.
    n_components : int, default=1000
        Rows of the Nystrom dictionary (``basis="nystrom-fixed"``; all the rows when there
        are fewer; the features are the dictionary's Gram matrix' eigendirections above
        ``1e-10`` of its largest eigenvalue, ``n_components_`` of them), and the most
        features of the Taylor basis with ``degree="auto"``.
    bandwidth : float, "auto" or "median", default="auto"
        ``sigma`` of ``k(x, x') = exp(-||x - x'||^2 / (2 sigma^2))``, in the units the
        model sees (standardized with ``standardize``).  ``"median"``: the median pairwise
        distance of 2000 rows drawn uniformly among all the rows at setup, the pairs
        weighted by the rows' sample weights (1.0 when fewer than two distinct rows are drawn).
        ``"auto"``: of 0.125, 0.25, 0.5, 1 and 2 times that median, the width whose model
        (the same basis, its own ``degree="auto"``, ``alpha`` scaled to the rows; with
        ``alpha="auto"`` the best of its alphas) has the smallest exact leave-one-out
        error on 1000 of those rows (in closed form, no extra pass; an integer weight
        counts as that many copies of its row, one left out at a time); the scores are
        ``bandwidth_scores_``.  The value used is ``bandwidth_``.
    alpha : float or "auto", default="auto"
        ``lambda``, the ridge on ``sum_i s_i (y_i - f(x_i))^2`` (not divided by the number
        of rows, as in scikit-learn's ``KernelRidge`` and in the paper).  ``"auto"``: of
        ``1e-4, 1e-3, ..., 100``, the value of the smallest exact leave-one-out error
        on the rows of the bandwidth trials (jointly with the width when
        ``bandwidth="auto"``, at the width given otherwise; on those ``m`` of the ``n``
        rows the trials use ``alpha * m / n``); 1.0 when fewer than two rows are drawn.
        A continuation with ``"auto"`` keeps ``alpha_``.  The value used is ``alpha_``.
    standardize : bool, default=True
        The model sees every input centred and scaled to unit variance, and learns the
        targets centred and scaled to unit variance (means and standard deviations of all
        the rows, from a set-up pass over the data, weighted by their sample weights; a
        constant input or target keeps a scale of 1), and predicts in the original units; the Gaussian kernel then
        weighs the inputs alike whatever their units, and ``alpha`` shrinks towards the
        targets' mean instead of 0.  The statistics are fixed by the first ``fit`` or
        ``partial_fit`` call (``x_shift_``, ``x_scale_``, ``y_shift_``, ``y_scale_``) and
        applied chunk by chunk, without a copy of the data.  ``False``: the raw inputs and
        targets (the paper's setting, for inputs scaled to ``[-1, 1]``).
    center : bool, default=True
        With ``standardize=False``: expand the Taylor basis around the (weighted) mean of
        all the rows, from the set-up pass (``center_``) instead of the origin: the same kernel, a
        smaller truncation error for data away from the origin.  ``False``: around the
        origin, as the paper (for data scaled to ``[-1, 1]``).  Standardized inputs have
        their mean at the origin, so with ``standardize=True`` the expansion is around
        the origin of the standardized inputs (the rows' mean) either way.
    max_iter : int, default=1
        Passes over the data.  Every pass adds its rows' statistics, as every
        :meth:`partial_fit` call adds its batch's: a second pass over the same rows counts
        them twice (the model of rows repeated, i.e. ``alpha`` halved).  One pass is the
        exact solution.  A stream of :meth:`partial_fit` calls equals one fit of the
        concatenation only when the first call takes nothing from its rows (``"taylor"``,
        ``standardize=False``, ``center=False``, numbers for ``bandwidth`` and ``alpha``,
        an integer ``degree``); otherwise the first call's rows fix the standardization,
        the centre, the width, ``alpha``, the degree and the Nystrom dictionary, and the
        stream is the exact solve of all the rows with those.
""" + BASE_PARAMS_DOC.replace(
    'chunks_per_round : int or "auto", default="auto"',
    'chunks_per_round : int or "auto", default=4').replace(
    "shuffle : bool, default=True", "shuffle : bool, default=False")


@register_estimator
class ProjectedKernelRidge(ChunkedRegressorMixin, RegressorMixin, ChunkedEstimator):
    __doc__ = """Kernel ridge regression projected on a finite basis, out of core: one pass
    of parallel rounds reducing ``Phi^T Phi`` and ``Phi^T y``, then one exact solve.

    See :mod:`ooc_kernels.families.pkawv.batch` and ``docs/machines/projected_kernel_ridge.md``.

    Parameters
    ----------""" + _PARAMS_DOC + """
    Attributes
    ----------
    coef_ : ndarray of shape (r,)
        ``w``: predictions are ``phi(x) . w`` (``r`` is ``n_components_``).
    basis_ : TaylorBasis, CenteredBasis or FixedNystromBasis
        The feature map ``phi``.
    n_components_ : int
        Features of the basis.
    degree_ : int or None
        The Taylor degree used (None for the Nystrom basis).
    bandwidth_ : float
        ``sigma``, in the units the model sees.
    alpha_ : float
        ``lambda`` of the solve (``alpha``, or the choice of ``alpha="auto"``).
    bandwidth_scores_ : dict or None
        With ``bandwidth="auto"``: ``{multiple of the median distance: generalized
        cross-validation R^2}`` of the trials (None otherwise, and after :func:`ooc_kernels.load`).
    x_shift_, x_scale_ : ndarray of shape (n_features_in,) or None
        The model sees ``(X - x_shift_) / x_scale_`` (None with ``standardize=False``).
    y_shift_, y_scale_ : float
        The model learns ``(y - y_shift_) / y_scale_`` and predicts ``f(x) * y_scale_ +
        y_shift_`` (0.0 and 1.0 with ``standardize=False``).
    center_ : ndarray of shape (n_features_in,) or None
        The Taylor expansion's centre, with ``standardize=False`` (None for the origin,
        for standardized inputs and for the Nystrom basis).
    dictionary_ : ndarray of shape (m, n_features_in) or None
        The Nystrom dictionary, in the units the model sees (None for the Taylor basis).
    n_samples_seen_, n_samples_skipped_ : int
        Rows added to the statistics, and rows left out by ``on_invalid="skip"``.
    n_iter_ : int
    n_features_in_ : int
    feature_coords_ : ndarray of shape (n_features_in,)
        The labels of the feature coordinate of an xarray ``fit`` input (a DataArray's
        second dimension, a Dataset's ``X`` variable's), when it has them; a later input
        with labels must have these in this order (``X.sel({dim: model.feature_coords_})``
        selects them), one without labels is read by position.  Not set otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> import ooc_kernels as ok
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(300, 3))
    >>> y = X[:, 0] * X[:, 1]
    >>> model = ok.ProjectedKernelRidge(basis="nystrom-fixed", n_components=100,
    ...                                 random_state=0, scheduler="sync").fit(X, y)
    >>> bool(model.n_components_ <= 100), bool(model.score(X, y) > 0.9)
    (True, True)
    >>> shifted = ok.ProjectedKernelRidge(basis="nystrom-fixed", n_components=100,
    ...                                   random_state=0, scheduler="sync").fit(X, y + 1e4)
    >>> bool(np.allclose(shifted.predict(X) - 1e4, model.predict(X)))  # original units
    True
    """

    capabilities = Capabilities(execution="rounds", inputs="supervised", task="regression",
                                partial_fit=True, tol=False, finishing=True)
    _parameter_constraints = {
        **BASE_CONSTRAINTS,
        "basis": [StrOptions({"taylor", "nystrom-fixed"})],
        "degree": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "n_components": [Interval(Integral, 1, MAX_COMPONENTS, closed="both")],
        "bandwidth": [Interval(Real, MIN_BANDWIDTH, MAX_BANDWIDTH, closed="both"),
                      StrOptions({"median", "auto"})],
        "alpha": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "standardize": ["boolean"],
        "center": ["boolean"],
    }
    _saved_arrays = {"gram": True, "rhs": True, "n_rows": True, "weight_sum": True,
                     "n_skipped": True, "coef": True, "center": False, "dictionary": False,
                     "x_shift": False, "x_scale": False, "y_shift": False, "y_scale": False}
    _finish_after_partial_fit = True
    #: The statistics do not depend on ``alpha``: a continuation solves with the new one.
    _switchable_params = frozenset({"alpha"})
    _test_params = dict(chunks_per_round=2, degree=2)

    def __init__(self, basis="taylor", *, degree="auto", n_components=1000,
                 bandwidth="auto",
                 alpha="auto", standardize=True, center=True, max_iter=1, chunks_per_round=4,
                 chunk_size=10_000,
                 shuffle=False, shuffle_chunks="auto", on_invalid="error", random_state=None,
                 scheduler=None, progress=None):
        self.basis = basis
        self.degree = degree
        self.n_components = n_components
        self.bandwidth = bandwidth
        self.alpha = alpha
        self.standardize = standardize
        self.center = center
        self.max_iter = max_iter
        self.chunks_per_round = chunks_per_round
        self.chunk_size = chunk_size
        self.shuffle = shuffle
        self.shuffle_chunks = shuffle_chunks
        self.on_invalid = on_invalid
        self.random_state = random_state
        self.scheduler = scheduler
        self.progress = progress

    # ------------------------------------------------------------------ fit
    def _setup_rows(self, data, sched):
        """The set-up pass (:func:`~ooc_kernels.families.pkawv._setup_pass.setup_pass`):
        the exact moments of the rows and :data:`SETUP_ROWS` of them drawn uniformly, with
        their targets and sample weights, the same whatever the chunking."""
        return setup_pass(data, n_rows=SETUP_ROWS, seed=derive_seed(self.random_seed_, 3),
                          scheduler=sched)

    def _initialize(self, data, sched, classes=None) -> None:
        d = data.n_features
        taylor = self.basis == "taylor"
        if taylor and self.degree != "auto" and taylor_size(d, self.degree) > MAX_COMPONENTS:
            r = taylor_size(d, self.degree)
            raise ValidationError(
                f"the Taylor basis of degree {self.degree} in {d} dimensions has {r} "
                f"features, more than the {MAX_COMPONENTS} whose {r} x {r} statistics a "
                "task may hold; lower degree, or use basis='nystrom-fixed' with "
                "n_components <= 10000.")
        needs_rows = self.standardize or isinstance(self.bandwidth, str) or \
            self.alpha == "auto" or (taylor and (self.center or self.degree == "auto"))
        stats = self._setup_rows(data, sched) if needs_rows else None
        rows, y, weights = (stats.rows, stats.y, stats.weights) if needs_rows else \
            (np.zeros((0, d)), np.zeros(0), np.ones(0))
        unit = None if len(weights) == 0 or np.all(weights == weights[0]) else weights
        x_shift = x_scale = None
        y_shift, y_scale = 0.0, 1.0
        if self.standardize and len(rows):
            x_shift, x_scale = stats.x_mean, stats.x_sd
            y_shift, y_scale = stats.y_mean, stats.y_sd
            rows = (rows - x_shift) / x_scale
        self._set_scaling(x_shift, x_scale, y_shift, y_scale)
        center = None
        if taylor and self.center and not self.standardize:
            center = stats.x_mean
        offsets = rows - (0.0 if center is None else center)

        def degree_for(sigma):
            return self.degree if self.degree != "auto" else \
                _auto_degree(offsets, sigma, self.n_components)

        self.bandwidth_scores_ = None
        auto_alpha = self.alpha == "auto"
        alpha = 1.0 if auto_alpha else float(self.alpha)
        if isinstance(self.bandwidth, str):
            bandwidth = median_bandwidth(rows, weights, derive_seed(self.random_seed_, 4))
        else:
            bandwidth = float(self.bandwidth)
        if (self.bandwidth == "auto" or auto_alpha) and len(rows) >= 2:
            def features(sigma, trial_rows):
                if taylor:
                    return TaylorBasis(d, degree_for(sigma), sigma).transform(trial_rows)
                return FixedNystromBasis(trial_rows[:self.n_components],
                                         sigma).transform(trial_rows)

            m = min(len(rows), TRIAL_ROWS)
            share = m / max(data.n_samples, m)   # alpha on the trial's m of the n rows
            candidates = ALPHAS if auto_alpha else (alpha,)
            scaled = [a * share for a in candidates]
            bandwidth, chosen, scores = bandwidth_trials(
                offsets, (y - y_shift) / y_scale, unit, bandwidth, scaled, features,
                **({} if self.bandwidth == "auto" else {"multiples": (1.0,)}))
            alpha = candidates[scaled.index(chosen)]
            if self.bandwidth == "auto":
                self.bandwidth_scores_ = scores
        self.alpha_ = alpha
        degree = degree_for(bandwidth) if taylor else None
        dictionary = None
        if self.basis == "nystrom-fixed":
            dictionary = sample_dictionary(self._engine_data(data).X, self.n_components,
                                           seed=derive_seed(self.random_seed_, 5),
                                           scheduler=sched, on_invalid=self.on_invalid)
        self._build(d, bandwidth, center, dictionary, degree)
        r = self.basis_.n_components
        self._state = {"gram": np.zeros((r, r)), "rhs": np.zeros(r), "n_rows": np.float64(0),
                       "weight_sum": np.float64(0), "n_skipped": np.float64(0),
                       "coef": np.zeros(r)}
        self._publish()

    def _set_scaling(self, x_shift, x_scale, y_shift: float, y_scale: float) -> None:
        self.x_shift_, self.x_scale_ = x_shift, x_scale
        self.y_shift_, self.y_scale_ = float(y_shift), float(y_scale)

    def _engine_data(self, data):
        """The data as the model sees it: standardized chunk by chunk (lazy)."""
        return scaled_data(data, self.x_shift_, self.x_scale_, self.y_shift_, self.y_scale_)

    def _build(self, d: int, bandwidth: float, center, dictionary, degree) -> None:
        self.bandwidth_ = bandwidth
        self.degree_ = degree
        self.center_ = None if center is None else np.asarray(center, dtype=np.float64)
        self.dictionary_ = dictionary
        if dictionary is not None:
            self.basis_ = FixedNystromBasis(dictionary, bandwidth)
        else:
            taylor = TaylorBasis(d, degree, bandwidth)
            self.basis_ = taylor if center is None else CenteredBasis(taylor, center)

    def _make_algorithm(self) -> ProjectedRidgeAlgorithm:
        return ProjectedRidgeAlgorithm(self.basis_, self.on_invalid)

    def _finish(self, state, data, sched):
        """``coef = (Phi^T S Phi + alpha I)^{-1} Phi^T S y`` by Cholesky."""
        if state["n_rows"] == 0:
            raise ValidationError(
                f"{type(self).__name__} read no valid row ({int(state['n_skipped'])} were "
                "left out as non-finite); give it rows with finite X, y and sample_weight.")
        if state["weight_sum"] == 0:
            raise ValidationError(
                f"sample_weight is 0 for every row read ({int(state['n_rows'])} rows), so "
                "there is nothing to learn from; give some rows a positive weight.")
        if self.alpha != "auto":
            self.alpha_ = float(self.alpha)
        # "auto": a solve that is not numerically positive definite (features nearly
        # collinear against a tiny ridge) moves on to the next larger alpha of the grid
        tries = [self.alpha_] + ([a for a in ALPHAS if a > self.alpha_]
                                 if self.alpha == "auto" else [])
        for alpha in tries:
            try:
                with single_threaded_blas():   # the same coefficients wherever it runs
                    a = state["gram"] + alpha * np.eye(len(state["rhs"]))
                    coef = scipy.linalg.cho_solve(scipy.linalg.cho_factor(a), state["rhs"])
                break
            except np.linalg.LinAlgError as exc:
                error = exc
        else:
            raise ValidationError(
                f"Phi^T Phi + alpha I is not numerically positive definite with alpha="
                f"{tries[-1]!r} ({error}); raise alpha.") from error
        self.alpha_ = alpha
        return {**state, "coef": coef}

    def _publish(self) -> None:
        state = self._state
        self.coef_ = state["coef"]
        self.n_components_ = int(len(state["rhs"]))
        self.n_samples_seen_ = int(state["n_rows"])
        self.n_samples_skipped_ = int(state["n_skipped"])

    # ------------------------------------------------------------------ prediction
    @property
    def _n_outputs(self) -> int:
        return 1

    @staticmethod
    def _predict_block(X, payload):
        return _predict_rows(X, payload)

    def _predict_payload(self):
        return (self.basis_, self.coef_, self.x_shift_, self.x_scale_, self.y_shift_,
                self.y_scale_)

    # ------------------------------------------------------------------ persistence
    def _fitted_arrays(self) -> dict:
        out = {k: np.asarray(self._state[k], dtype=np.float64) for k in (*_STATS, "coef")}
        if self.center_ is not None:
            out["center"] = self.center_
        if self.dictionary_ is not None:
            out["dictionary"] = self.dictionary_
        if self.standardize:
            out.update(x_shift=self.x_shift_, x_scale=self.x_scale_,
                       y_shift=np.float64(self.y_shift_), y_scale=np.float64(self.y_scale_))
        return out

    def _fitted_meta(self) -> dict:
        return {"bandwidth": self.bandwidth_, "degree": self.degree_, "alpha": self.alpha_}

    def _restore_fitted(self, arrays: dict, meta: dict, where: str) -> None:
        bandwidth, degree = meta.get("bandwidth"), meta.get("degree")
        # a file without "alpha" holds a model solved with its numeric alpha parameter
        alpha = meta.get("alpha", None if self.alpha == "auto" else self.alpha)
        nystrom = self.basis == "nystrom-fixed"
        degree_ok = degree is None if nystrom else (
            isinstance(degree, int) and not isinstance(degree, bool) and degree >= 0 and
            taylor_size(self.n_features_in_, degree) <= MAX_COMPONENTS)
        alpha_ok = isinstance(alpha, (int, float)) and not isinstance(alpha, bool) and \
            np.isfinite(alpha) and alpha > 0
        if not {"bandwidth", "degree"} <= set(meta) <= {"bandwidth", "degree", "alpha"} \
                or isinstance(bandwidth, bool) or not isinstance(bandwidth, (int, float)) \
                or not MIN_BANDWIDTH <= bandwidth <= MAX_BANDWIDTH \
                or not degree_ok or not alpha_ok:
            raise ModelFormatError(
                f"{where}: the fitted metadata must be {{'bandwidth': a number in "
                f"[{MIN_BANDWIDTH:g}, {MAX_BANDWIDTH:g}], "
                "'degree': the Taylor degree (None for the Nystrom basis), 'alpha': the "
                "positive alpha of the solve}, got "
                f"{meta!r}; re-save the model or restore it from a backup.")
        self.alpha_ = float(alpha)
        d = self.n_features_in_
        scaling = _restore_scaling(self, arrays, d, where)
        needed = "dictionary" if nystrom else (
            "center" if self.center and not self.standardize else None)
        extra = {"dictionary", "center"} - {needed}
        if (needed is not None and needed not in arrays) or extra & set(arrays):
            raise ModelFormatError(
                f"{where}: a model with basis={self.basis!r}, center={self.center!r} and "
                f"standardize={self.standardize!r} has "
                f"the array {needed!r} and not {sorted(extra)}; got {sorted(arrays)}.")
        center = arrays.get("center")
        dictionary = arrays.get("dictionary")
        for name, value, shape in (("center", center, (d,)),
                                   ("dictionary", dictionary, (None, d))):
            if value is not None and (value.ndim != len(shape) or value.shape[-1] != d
                                      or not np.isfinite(value).all()):
                raise ModelFormatError(
                    f"{where}: {name} has shape {value.shape} (or non-finite values); a "
                    f"model of {d} features needs finite values of shape "
                    f"{'(m, %d)' % d if name == 'dictionary' else (d,)}.")
        self._set_scaling(*scaling)
        self.bandwidth_scores_ = None
        self._build(d, float(bandwidth), center, dictionary, degree)
        r = self.basis_.n_components
        state = {k: np.asarray(arrays[k], dtype=np.float64) for k in (*_STATS, "coef")}
        shapes = {"gram": (r, r), "rhs": (r,), "coef": (r,), "n_rows": (),
                  "weight_sum": (), "n_skipped": ()}
        for name, shape in shapes.items():
            if state[name].shape != shape:
                raise ModelFormatError(
                    f"{where}: {name} has shape {state[name].shape}; the basis has {r} "
                    f"features, so it must have shape {shape}.")
        state.update({k: np.float64(state[k]) for k in ("n_rows", "weight_sum", "n_skipped")})
        self._state = state
        self._publish()


_SCALING = ("x_shift", "x_scale", "y_shift", "y_scale")


def _restore_scaling(est, arrays: dict, d: int, where: str) -> tuple:
    """The saved ``(x_shift, x_scale, y_shift, y_scale)`` of a model, checked: all four
    arrays with ``standardize=True``; none otherwise (a file without them holds a model of
    the raw values, whose ``standardize`` is then False)."""
    found = [k for k in _SCALING if k in arrays]
    if not found and est.standardize:
        est.standardize = False
    if len(found) != (4 if est.standardize else 0):
        raise ModelFormatError(
            f"{where}: a model with standardize={est.standardize!r} has "
            f"{'all' if est.standardize else 'none'} of the arrays {list(_SCALING)}; found "
            f"{found}; re-save the model or restore it from a backup.")
    if not found:
        return None, None, 0.0, 1.0
    values = {k: np.asarray(arrays[k], dtype=np.float64) for k in _SCALING}
    for k, shape in zip(_SCALING, ((d,), (d,), (), ())):
        v = values[k]
        if v.shape != shape or not np.isfinite(v).all() or \
                (k.endswith("scale") and not (v > 0).all()):
            raise ModelFormatError(
                f"{where}: {k} has shape {v.shape} (or values that are not finite, or a "
                f"scale that is not positive); a model of {d} features needs finite values "
                f"of shape {shape}{', positive' if k.endswith('scale') else ''}.")
    return (values["x_shift"], values["x_scale"], float(values["y_shift"]),
            float(values["y_scale"]))


def _auto_degree(offsets: np.ndarray, bandwidth: float, budget: int) -> int:
    """The smallest degree whose truncation bound at the largest row norm of ``offsets``
    is at most :data:`TAYLOR_TOL`, capped at the largest degree with ``budget`` features,
    and at least 1."""
    d = offsets.shape[1]
    radius = float(np.sqrt((offsets ** 2).sum(axis=1)).max()) if len(offsets) else 0.0
    degree = 1
    while taylor_size(d, degree + 1) <= budget and \
            truncation_bound(degree, radius, bandwidth) > TAYLOR_TOL:
        degree += 1
    return degree


def _state_arrays(state) -> dict:
    """The arrays of a state (the contract suite compares them)."""
    return {k: np.asarray(state[k]) for k in _STATS}


def _make_case(seed: int, shuffle: bool = False):
    """Three chunks of weighted rows, one row with NaN (``on_invalid="skip"``), on a Taylor
    basis of degree 3 in 2 dimensions (10 features)."""
    from ooc_kernels.families import AlgorithmCase

    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(30, 2))
    X[13, 1] = np.nan
    y = np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=30)
    w = rng.uniform(0.5, 2.0, size=30)
    basis = TaylorBasis(2, degree=3, bandwidth=1.0)
    state = {"gram": np.zeros((basis.n_components, basis.n_components)),
             "rhs": np.zeros(basis.n_components), "n_rows": np.float64(0),
             "weight_sum": np.float64(0), "n_skipped": np.float64(0)}
    chunks = [{"X": X[i:i + 10], "y": y[i:i + 10], "sample_weight": w[i:i + 10]}
              for i in range(0, 30, 10)]
    return AlgorithmCase(algorithm=ProjectedRidgeAlgorithm(basis, on_invalid="skip"),
                         state=state, chunks=chunks,
                         dims={"X": ("sample", "feature"), "y": ("sample",),
                               "sample_weight": ("sample",)}, seed=seed)


def _reference(case) -> dict:
    """The statistics of all the finite rows at once, the features by the basis' plain
    NumPy formula (:meth:`TaylorBasis.transform_ref`)."""
    X = np.concatenate([c["X"] for c in case.chunks])
    y = np.concatenate([c["y"] for c in case.chunks])
    w = np.concatenate([c["sample_weight"] for c in case.chunks])
    keep = np.isfinite(X).all(axis=1) & np.isfinite(y) & np.isfinite(w)
    Phi = case.algorithm.basis.transform_ref(X[keep])
    return {"gram": (Phi * w[keep, None]).T @ Phi, "rhs": Phi.T @ (w[keep] * y[keep]),
            "n_rows": np.float64(keep.sum()), "weight_sum": np.float64(w[keep].sum()),
            "n_skipped": np.float64((~keep).sum())}


def _register_solver() -> None:
    from ooc_kernels.families import SolverSpec, register_solver

    register_solver(SolverSpec(
        name="pkawv-batch", algorithm=ProjectedRidgeAlgorithm, state_arrays=_state_arrays,
        make_case=_make_case, reference=_reference, execution="rounds",
        description="projected kernel ridge: Phi^T S Phi and Phi^T S y summed over the "
                    "chunks"))


_register_solver()
