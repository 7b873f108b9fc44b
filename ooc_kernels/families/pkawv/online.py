"""The online kernel ridge regressor (Kernel-AWV and its projections, PKAWV).

Examples
--------
>>> import numpy as np
>>> import ooc_kernels as ok
>>> rng = np.random.default_rng(0)
>>> X = rng.uniform(-1, 1, size=(400, 2)); y = np.sin(3 * X[:, 0]) * X[:, 1]
>>> model = ok.OnlineKernelRidge(degree=8, chunk_size=100, scheduler="sync")
>>> model = model.fit(X, y)
>>> model.n_components_, model.n_samples_seen_
(45, 400)
>>> bool(model.average_loss_ < np.mean(y ** 2))      # the forecasts beat predicting 0
True
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import dask
import numpy as np
from sklearn.base import RegressorMixin

from ooc_kernels._capabilities import Capabilities
from ooc_kernels._seeds import derive_seed
from ooc_kernels.estimators._constraints import Interval, StrOptions
from ooc_kernels.estimators._registry import register_estimator
from ooc_kernels.estimators.base import (
    BASE_PARAMS_DOC,
    SEQUENTIAL_CONSTRAINTS,
    ChunkedEstimator,
    ChunkedRegressorMixin,
)
from ooc_kernels._memory import physical_memory, size_text
from ooc_kernels.exceptions import (
    DivergenceError, ModelFormatError, ModelTooLargeError, ValidationError,
)
from ooc_kernels.features.rbf import MAX_BANDWIDTH, MIN_BANDWIDTH
from ooc_kernels.families.pkawv._setup import (
    BANDWIDTH_MULTIPLES, SETUP_ROWS, TRIAL_ROWS, bandwidth_trials, median_bandwidth, scale_rows, scaled_data,
    unit_range,
)
from ooc_kernels.families.pkawv._setup_pass import setup_pass
from ooc_kernels.families.pkawv.solver import (
    BASES,
    OnlineAlgorithm,
    OnlineConfig,
    check_rows,
    initial_state,
    make_basis,
)
from ooc_kernels.families.pkawv.taylor import auto_degree, check_alpha, n_components
from ooc_kernels.parallel.cluster import compute

__all__ = ["OnlineKernelRidge"]

_STATE = {
    "taylor": ("Ainv", "b", "w"),
    "nystrom-fixed": ("Ainv", "b", "w"),
    "exact": ("X_seen", "y_seen", "G"),
    "nystrom": ("X_seen", "y_seen", "kors_idx", "kors_w", "Minv", "basis_idx", "KtI", "R",
                "kty"),
}
_INT_ARRAYS = ("kors_idx", "basis_idx")
# the shared parameters, without the three of the parallel rounds
_SHARED_DOC = "    max_iter : int, default=1\n        Passes over the data in :meth:`fit` " \
    "(the online protocol is one pass; a second pass\n        sees every row again as new " \
    "rows).\n" + BASE_PARAMS_DOC[BASE_PARAMS_DOC.index("    chunk_size :"):
                                 BASE_PARAMS_DOC.index("    shuffle :")] + \
    BASE_PARAMS_DOC[BASE_PARAMS_DOC.index("    on_invalid :"):]


#: ``r x r`` float64 matrices a fit of a finite basis holds at once: the state's inverse
#: ``A^-1`` and the copy a chunk's update writes.
STATE_COPIES = 2


def check_state_memory(est, r: int, *, degree: int | None = None,
                       limit: int | None = None) -> None:
    """Refuse, before anything is allocated, a finite basis of ``r`` features whose state
    (:data:`STATE_COPIES` matrices of ``r x r`` float64) needs more than the machine's
    physical memory (``limit``: that, by default).

    Raises
    ------
    ModelTooLargeError
        Naming ``n_components`` (and the Taylor ``degree``), the bytes the state needs, the
        memory there is and the most features that fit.

    Examples
    --------
    >>> est = OnlineKernelRidge(n_components=300_000)
    >>> check_state_memory(est, 1000, limit=2**30)
    >>> check_state_memory(est, 300_000, limit=2**30)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.ModelTooLargeError: n_components=300000 gives a state of 1.3 TiB ...
    """
    limit = physical_memory() if limit is None else limit
    need = STATE_COPIES * 8 * int(r) ** 2
    if limit is None or need <= limit:
        return
    fits = math.isqrt(max(limit, 0) // (STATE_COPIES * 8))
    lower = "n_components" if est.basis != "taylor" or est.degree == "auto" else \
        f"degree={degree} (or n_components)"
    raise ModelTooLargeError(
        f"n_components={est.n_components} gives a state of {size_text(need)} "
        f"(basis={est.basis!r}: {r} features"
        + ("" if degree is None else f" of degree {degree}")
        + f", {STATE_COPIES} matrices of {r} x {r} float64); this machine has "
        f"{size_text(limit)} of memory, so the fit cannot run. Lower {lower} (at most "
        f"{fits} features fit; the default is 500).")


def _taylor_auto_degree(n: int, d: int, alpha: float, bandwidth: float, budget: int,
                        radius) -> int:
    """Theorem 4's degree for ``n`` rows of norm at most ``radius()`` (called only when
    needed), capped at the largest degree with at most ``budget`` features.

    A radius whose term ``8 R^2 / sigma^2`` passes the cap (``inf`` included: rows whose
    norm overflows float64) gives the cap, without squaring it.

    >>> _taylor_auto_degree(60, 3, 1.0, 1.0, 500, lambda: float("inf"))
    12
    """
    cap = 0
    while n_components(d, cap + 1) <= budget:
        cap += 1
    if auto_degree(n, alpha, 0.0, bandwidth) >= cap:  # the budget binds whatever R is
        return cap
    R = radius()
    if R > bandwidth * math.sqrt(cap / 8.0):  # 8 R^2 / sigma^2 > cap
        return cap
    return min(cap, auto_degree(n, alpha, R, bandwidth))


def _chunk_radius(X, y, chunk: int, skip: bool) -> float:
    """The largest Euclidean norm of the rows of one chunk that the fit reads.

    With ``skip`` (``on_invalid="skip"``) the rows with NaN or inf in ``X`` or in a numeric
    ``y`` are left out, as the fit leaves them out; otherwise a NaN or inf in ``X`` is the
    :class:`~ooc_kernels.exceptions.InvalidDataError` naming its chunk and row.  A row
    whose squared norm overflows float64 (finite values beyond about 1e154) gets its norm
    from its values divided by their largest magnitude (``inf`` only past float64's range).

    >>> _chunk_radius(np.array([[3.0, 4.0], [1e300, 1e300]]), None, 0, False)
    1.4142135623730952e+300
    """
    from ooc_kernels._checks import check_finite

    X = np.asarray(X, dtype=np.float64)  # one chunk
    if skip:
        keep = np.isfinite(X).all(axis=1)
        if y is not None and np.asarray(y).dtype.kind in "fc":
            keep &= np.isfinite(np.asarray(y))
        X = X[keep]
    else:
        check_finite(X, "X", chunk)
    if not len(X):
        return 0.0
    with np.errstate(over="ignore"):
        norms = np.sqrt((X * X).sum(axis=1))
    over = ~np.isfinite(norms)
    if over.any():
        rows = X[over]
        big = np.abs(rows).max(axis=1)
        with np.errstate(over="ignore"):
            norms[over] = big * np.sqrt(((rows / big[:, None]) ** 2).sum(axis=1))
    return float(norms.max())


def _predict_block(X, payload):
    """Each row's forecast as the next row of the stream (``awv``: ``f / (1 + q)``), in the
    targets' units."""
    kind, basis, M, coef, extra = payload
    X = scale_rows(X, extra["x_shift"], extra["x_scale"])
    if kind == "linear":
        F = basis.transform(X)
    else:  # kernel values against the stored rows, by matrix products
        from ooc_kernels.families.pkawv.nystrom_fixed import gaussian_cross_kernel

        F = gaussian_cross_kernel(X, basis, extra["bandwidth"]) if len(basis) else \
            np.zeros((len(X), 0))
    f = F @ coef
    if extra["mode"] == "awv" and F.shape[1]:
        q = np.sum((F @ M) * F, axis=1)
        if kind == "exact":  # phi^T A^(-1) phi = (k(x, x) - k^T G k) / lambda
            q = (1.0 - q) / extra["alpha"]
        f = f / (1.0 + q)
    return (f * extra["y_scale"] + extra["y_shift"])[:, None]


_SCALING = ("x_shift", "x_scale", "y_shift", "y_scale")


def _restore_scaling(arrays: dict, d: int, where: str) -> tuple:
    """The saved ``(x_shift, x_scale, y_shift, y_scale)``: each pair both or neither (a
    missing pair: the raw values), finite, the scales positive."""
    out = [None, None, 0.0, 1.0]
    for i, (shift, scale, shape) in enumerate((("x_shift", "x_scale", (d,)),
                                               ("y_shift", "y_scale", ()))):
        if (shift in arrays) != (scale in arrays):
            raise ModelFormatError(
                f"{where}: a model has both or neither of the arrays {shift!r} and "
                f"{scale!r}, found {sorted(k for k in arrays if k in _SCALING)}; re-save "
                "the model.")
        if shift not in arrays:
            continue
        a, b = (np.asarray(arrays[k], dtype=np.float64) for k in (shift, scale))
        if a.shape != shape or b.shape != shape or not np.isfinite(a).all() or \
                not (np.isfinite(b) & (b > 0)).all():
            raise ModelFormatError(
                f"{where}: {shift} and {scale} have shapes {a.shape} and {b.shape} (or "
                f"values that are not finite, or a scale that is not positive); a model of "
                f"{d} features needs finite values of shape {shape}, positive scales; "
                "re-save the model.")
        out[2 * i:2 * i + 2] = (a, b) if shape else (float(a), float(b))
    return tuple(out)


@register_estimator
class OnlineKernelRidge(ChunkedRegressorMixin, RegressorMixin, ChunkedEstimator):
    __doc__ = f"""Online kernel ridge regression with a Gaussian kernel (Kernel-AWV and
    PKAWV, Jezequel, Gaillard and Rudi 2019), streamed over chunks.

    The rows are visited once, in storage order; for each row ``x_t`` the learner forecasts
    ``y_hat_t``, then sees ``y_t`` and updates.  In ``mode="awv"`` the forecast minimizes::

        sum_{{s<t}} (y_s - f(x_s))^2 + alpha ||f||^2 + f(x_t)^2

    over ``f`` in the approximation space (the current point enters the covariance with
    target 0, which gives the regret bound ``alpha ||f||^2 + B^2 log det(I + K / alpha)``
    against every ``f`` of the RKHS on any sequence, adversarial ones included); in
    ``mode="krr"`` without the last term (online kernel ridge, the usual choice for i.i.d.
    data).  The kernel is ``exp(-||x - x'||^2 / (2 bandwidth^2))``.  See
    ``docs/machines/online_kernel_ridge.md``.

    Parameters
    ----------
    basis : {{"taylor", "nystrom", "nystrom-fixed", "exact"}}, default="taylor"
        The approximation space.  ``"taylor"``: the Gaussian kernel's Taylor basis, all
        ``C(M + d, M)`` multi-indices of degree at most ``M``; ``O(r^2)`` a row, a state of
        ``r x r``.  ``"nystrom"``: a Nystrom dictionary grown online by KORS (``mu``,
        ``beta``, ``epsilon``); keeps every row seen (at most
        :data:`~ooc_kernels.families.pkawv.solver.NYSTROM_MAX_ROWS`).
        ``"nystrom-fixed"``: ``n_components`` rows drawn uniformly from the first data
        before the stream starts.  ``"exact"``: Kernel-AWV itself, ``O(t^2)`` a row, at most
        :data:`~ooc_kernels.families.pkawv.solver.EXACT_MAX_ROWS` rows.
    degree : int or "auto", default="auto"
        ``M`` of the Taylor basis.  ``"auto"``: Theorem 4's ``ceil(max(8 R^2 /
        bandwidth^2, 2 log(n / min(alpha, 1))))`` for the ``n`` rows of the first ``fit``
        or ``partial_fit`` call and ``R`` their largest norm (one pass over them, only when
        the budget below does not decide), capped at the largest ``M`` with at most
        ``n_components`` features.
    bandwidth : float or "auto", default="auto"
        ``sigma`` of the Gaussian kernel, in the units the model sees (see
        ``standardize``).  ``"auto"``: of 0.125, 0.25, 0.5, 1 and 2 times the median
        pairwise distance of 2000 rows drawn uniformly in the set-up pass of the first
        ``fit`` or ``partial_fit`` call, and the paper's sigma of 1, the width whose ridge
        regression on the learner's own features (the Taylor basis of the degree
        ``degree`` gives at that width, the fixed Nystrom dictionary's first
        ``n_components`` of the rows, or the exact kernel for ``"nystrom"`` and
        ``"exact"``), with ``alpha`` scaled to the rows, has the smallest exact
        leave-one-out error on 1000 of those rows: the trials of
        :class:`~ooc_kernels.ProjectedKernelRidge`'s ``bandwidth="auto"``, which with the
        same ``random_state`` and rows in the same units takes the same width unless
        sigma = 1 scores better.  A Taylor width whose degree gives a state beyond the
        machine's memory is not tried.  The scores are ``bandwidth_scores_``; the width
        stays fixed for the rest of the stream.  A number: that width; ``1.0`` is the
        paper's sigma, for a few inputs in ``[-1, 1]`` (with many inputs the kernel
        between two rows is near 0 at that width, and the learner forecasts about the
        mean).  The value used is ``bandwidth_``.
    standardize : bool or "auto", default="auto"
        How the model sees the inputs and targets, decided once from all the finite rows
        of the first ``fit`` or ``partial_fit`` call's data, read in a set-up pass (the
        same whatever the chunking; rows of later calls are mapped with the same numbers,
        and may fall a little outside ``[-1, 1]``).  ``True``: every input mapped onto
        ``[-1, 1]`` by its smallest and largest values (the paper's scaling, which
        ``bandwidth=1`` and the Taylor basis assume), and the targets centred and scaled to
        unit variance (the forecaster's shrinkage goes towards their mean instead of 0);
        forecasts, ``online_predictions_`` and the losses are in the original units.
        ``"auto"``: the inputs mapped only when an input value lies outside ``[-1, 1]``,
        the targets only when a target does; data already scaled as the paper assumes
        runs the paper's algorithm unchanged.  ``False``: the raw values.  The numbers
        used are ``x_shift_``, ``x_scale_``, ``y_shift_``, ``y_scale_``.
    alpha : float, default=1.0
        The ridge ``lambda``, above ``1 / finfo(float64).max`` (about ``5.56e-309``, so
        that ``1 / alpha`` is finite; a smaller one is refused with a ``ValidationError``).
        A fit whose forecasts or state overflow (``A^-1`` starts at ``I / alpha``)
        raises a ``DivergenceError``: raise ``alpha``.
    mode : {{"awv", "krr"}}, default="awv"
        Whether the current point enters the covariance before the forecast.
    n_components : int, default=500
        ``"taylor"`` with ``degree="auto"``: the most features; ``"nystrom-fixed"``: the
        size of the dictionary.
    mu : float, default=1.0
        KORS's regularization (``basis="nystrom"``): the dictionary keeps the projection
        residual ``||(I - P) C^(1/2)||^2`` below about ``mu``.
    beta : float, default=1.0
        KORS's oversampling (``basis="nystrom"``): a row joins with probability ``min(beta
        tau_t, 1)``, ``tau_t`` its approximate ridge leverage score; the guarantee needs
        ``beta = 12 log(n / delta)``, the paper's experiments use 1.
    epsilon : float, default=0.5
        KORS's accuracy (``basis="nystrom"``): the score is inflated by ``1 + epsilon``.
{_SHARED_DOC}
    Attributes
    ----------
    n_components_ : int
        Features of the basis (``"taylor"``, ``"nystrom-fixed"``), the dictionary's size
        (``"nystrom"``), the rows seen (``"exact"``).
    degree_ : int
        ``M`` (``basis="taylor"``).
    bandwidth_ : float
        ``sigma`` of the kernel, in the units the model sees (``bandwidth``, or the choice
        of ``bandwidth="auto"``).
    bandwidth_scores_ : dict or None
        With ``bandwidth="auto"``: ``{{multiple of the median distance: leave-one-out
        R^2}}`` of the trials (None otherwise, and after :func:`ooc_kernels.load`).
    n_samples_seen_ : int
        Rows consumed since the model started.
    n_samples_skipped_ : int
        Rows left out by ``on_invalid="skip"`` in the last pass over the data (the last
        epoch of ``fit``, the data of the last ``partial_fit`` call), each counted once.
    cumulative_loss_, average_loss_ : float
        Sum and mean of the squared errors ``(y_t - y_hat_t)^2`` of the online forecasts.
    loss_history_ : ndarray of shape (n_chunks_seen, 3)
        After each chunk: rows seen, cumulative loss, average loss.
    online_predictions_ : ndarray of shape (n_rows,)
        The online forecasts ``y_hat_t`` of the rows of the last ``fit`` or
        ``partial_fit`` call, in order (each made before its row's target was seen).
    dictionary_ : ndarray of shape (m, n_features)
        The Nystrom dictionary (``"nystrom"``, ``"nystrom-fixed"``).
    dictionary_indices_ : ndarray of shape (m,)
        Their row numbers in the stream (``"nystrom"``).
    kors_weights_ : ndarray of shape (m_kors,)
        KORS's weights ``1 / p`` of its dictionary (``"nystrom"``; its dictionary may hold
        rows that the basis leaves out because they are in its span to working precision).
    x_shift_, x_scale_ : ndarray of shape (n_features_in,) or None
        The model sees ``(X - x_shift_) / x_scale_`` (None: the raw inputs).
    y_shift_, y_scale_ : float
        The model learns ``(y - y_shift_) / y_scale_`` (0.0 and 1.0: the raw targets).
    n_features_in_ : int
    feature_coords_ : ndarray of shape (n_features_in,)
        The labels of the feature coordinate of an xarray ``fit`` input (a DataArray's
        second dimension, a Dataset's ``X`` variable's), when it has them; a later input
        with labels must have these in this order (``X.sel({{dim: model.feature_coords_}})``
        selects them), one without labels is read by position.  Not set otherwise.
    n_iter_ : int
        Passes done.

    Examples
    --------
    >>> import numpy as np
    >>> import ooc_kernels as ok
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(300, 2)); y = np.cos(2 * X[:, 0])
    >>> model = ok.OnlineKernelRidge(degree=6, scheduler="sync")
    >>> for lo in range(0, 300, 100):                 # a stream of three chunks
    ...     model = model.partial_fit(X[lo:lo + 100], y[lo:lo + 100])
    >>> model.loss_history_.shape
    (3, 3)
    >>> bool(model.loss_history_[-1, 2] < model.loss_history_[0, 2])  # it learns
    True
    >>> model.x_shift_ is None, model.y_shift_     # already in [-1, 1]: as they are
    (True, 0.0)
    """

    capabilities = Capabilities(execution="sequential", task="regression", tol=False,
                                partial_fit=True)
    _parameter_constraints = {
        **SEQUENTIAL_CONSTRAINTS,
        "basis": [StrOptions(set(BASES))],
        "degree": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "bandwidth": [Interval(Real, MIN_BANDWIDTH, MAX_BANDWIDTH, closed="both"),
                      StrOptions({"auto"})],
        "standardize": ["boolean", StrOptions({"auto"})],
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "mode": [StrOptions({"awv", "krr"})],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "mu": [Interval(Real, 0, None, closed="neither")],
        "beta": [Interval(Real, 0, None, closed="neither")],
        "epsilon": [Interval(Real, 0, None, closed="left")],
    }
    _saved_arrays = {"n_seen": True, "n_skipped": False, "loss_sum": True,
                     "loss_history": True, "dictionary": False, "x_shift": False,
                     "x_scale": False, "y_shift": False, "y_scale": False,
                     **{name: False for names in _STATE.values() for name in names}}
    _test_params = {"chunk_size": 40, "degree": 4}

    def __init__(self, basis="taylor", *, degree="auto", bandwidth="auto", standardize="auto",
                 alpha=1.0, mode="awv", n_components=500, mu=1.0, beta=1.0, epsilon=0.5,
                 max_iter=1,
                 chunk_size=10_000, on_invalid="error", random_state=None, scheduler=None,
                 progress=None):
        self.basis = basis
        self.degree = degree
        self.bandwidth = bandwidth
        self.standardize = standardize
        self.alpha = alpha
        self.mode = mode
        self.n_components = n_components
        self.mu = mu
        self.beta = beta
        self.epsilon = epsilon
        self.max_iter = max_iter
        self.chunk_size = chunk_size
        self.on_invalid = on_invalid
        self.random_state = random_state
        self.scheduler = scheduler
        self.progress = progress

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y=None, *, checkpoint=None, checkpoint_every=1, resume=False):
        """Stream the whole dataset, chunk after chunk in storage order (``max_iter``
        passes), from a new model.  Every row counts once: there is no ``sample_weight``.

        Parameters
        ----------
        X : array-like, Dask array, DataFrame, xarray Dataset or Intake reader
            Read chunk by chunk, never as a whole.
        y : array-like or Dask array of shape (n_samples,), optional with a Dataset.
        checkpoint, checkpoint_every, resume
            As in every estimator of the library: a checkpoint after any chunk resumes the
            stream at the next chunk, bit for bit.

        Returns
        -------
        self
        """
        return super().fit(X, y, checkpoint=checkpoint, checkpoint_every=checkpoint_every,
                           resume=resume)

    def partial_fit(self, X, y=None):
        """Consume the rows of ``X`` in order (predict, then update), continuing the stream.

        ``online_predictions_`` holds their online forecasts afterwards, and
        ``loss_history_`` one line per chunk consumed.

        Returns
        -------
        self
        """
        return super().partial_fit(X, y)

    def _run(self, data, sched, **kwargs):
        self._online_parts = []
        epoch, done = kwargs["start"]  # refuse a stream too long for the basis before any work
        rows = data.n_samples * (kwargs["end_epoch"] - epoch) - sum(data.X.chunks[0][:done])
        check_rows(self._cfg, int(self._state["n_seen"]), rows)
        super()._run(data, sched, **kwargs)

    def _after_round(self, state, info) -> None:
        self._online_parts.append(state["last_pred"])
        # a tiny alpha makes A^-1 = I / alpha huge: the rank-one updates then overflow
        if not (np.isfinite(state["loss_sum"])
                and all(np.isfinite(state[k]).all() for k in _STATE[self._cfg.basis])):
            raise DivergenceError(
                f"the online fit produced non-finite forecasts or coefficients in epoch "
                f"{info.epoch}, round {info.round} with alpha={float(self.alpha)!r} (the "
                "updates start from A^-1 = I / alpha, and rounding grows with 1 / alpha); "
                "raise alpha.")

    def _config(self, degree: int, dictionary=None) -> OnlineConfig:
        return OnlineConfig(basis=self.basis, mode=self.mode, alpha=float(self.alpha),
                            bandwidth=float(self.bandwidth_), n_features=self.n_features_in_,
                            degree=int(degree), dictionary=dictionary, mu=float(self.mu),
                            beta=float(self.beta), epsilon=float(self.epsilon),
                            seed=derive_seed(self.random_seed_, 11))

    def _setup_stats(self, data, sched):
        """The set-up pass (:func:`~ooc_kernels.families.pkawv._setup_pass.setup_pass`),
        when ``standardize`` or ``bandwidth="auto"`` needs it (else None): the ranges of the
        inputs and the moments of the target over all the finite rows, and with
        ``bandwidth="auto"`` :data:`~ooc_kernels.families.pkawv._setup.SETUP_ROWS` rows
        drawn uniformly (the draw of :class:`~ooc_kernels.ProjectedKernelRidge` with the
        same ``random_state``); the same whatever the chunking."""
        auto = self.bandwidth == "auto"
        if self.standardize is False and not auto:
            return None
        return setup_pass(data, n_rows=SETUP_ROWS if auto else 0,
                          seed=derive_seed(self.random_seed_, 3), scheduler=sched)

    def _scaling(self, stats) -> tuple:
        """``(x_shift, x_scale, y_shift, y_scale)`` (``standardize``) from the set-up
        pass's ranges of the inputs and moments of the target."""
        if self.standardize is False or stats.weight_sum == 0:
            return None, None, 0.0, 1.0
        force = self.standardize is True
        x_shift = x_scale = None
        y_shift, y_scale = 0.0, 1.0
        if force or max(np.abs(stats.x_min).max(), np.abs(stats.x_max).max()) > 1.0:
            x_shift, x_scale = unit_range(np.stack([stats.x_min, stats.x_max]))
        if force or stats.y_max_abs > 1.0:
            y_shift, y_scale = stats.y_mean, stats.y_sd
        return x_shift, x_scale, y_shift, y_scale

    def _auto_bandwidth(self, stats, n: int, degree_for) -> float:
        """``bandwidth="auto"``: the trials of
        :func:`~ooc_kernels.families.pkawv._setup.bandwidth_trials` on the set-up pass's
        rows in the units the model sees, the features those of the learner's basis at
        each width (``degree_for(sigma)``: the Taylor degree), ``alpha`` scaled to the
        trial's ``m`` of the ``n`` rows; sets ``bandwidth_scores_``."""
        from ooc_kernels.families.pkawv.nystrom_fixed import FixedNystromBasis
        from ooc_kernels.families.pkawv.taylor import TaylorBasis

        rows = scale_rows(stats.rows, self.x_shift_, self.x_scale_)
        y = (stats.y - self.y_shift_) / self.y_scale_
        median = median_bandwidth(rows, np.ones(len(rows)),
                                  derive_seed(self.random_seed_, 4))
        if len(rows) < 2:
            return median
        d = rows.shape[1]

        def features(sigma, trial_rows):
            if self.basis == "taylor":
                degree = degree_for(sigma)
                try:   # a width whose state would not fit is not tried (scored -inf)
                    check_state_memory(self, n_components(d, degree), degree=degree)
                except ModelTooLargeError as exc:
                    raise ValueError(str(exc)) from exc
                return TaylorBasis(d, degree, sigma).transform(trial_rows)
            keep = len(trial_rows) if self.basis != "nystrom-fixed" else self.n_components
            return FixedNystromBasis(trial_rows[:keep], sigma).transform(trial_rows)

        m = min(len(rows), TRIAL_ROWS)
        share = m / max(n, m)   # alpha on the trial's m of the n rows
        paper = 1.0 / median    # the paper's sigma = 1 is one of the widths tried
        multiples = tuple(sorted({*BANDWIDTH_MULTIPLES, paper}))
        best, _, self.bandwidth_scores_ = bandwidth_trials(
            rows, y, None, median, [float(self.alpha) * share], features, multiples)
        return 1.0 if best == paper * median else float(best)

    def _engine_data(self, data):
        """The data as the model sees it (``standardize``), chunk by chunk (lazy)."""
        return scaled_data(data, self.x_shift_, self.x_scale_, self.y_shift_, self.y_scale_)

    def _initialize(self, data, sched, classes=None) -> None:
        check_alpha(self.alpha)   # before the set-up pass: 1 / alpha must be finite
        d = data.n_features
        stats = self._setup_stats(data, sched)
        self.x_shift_, self.x_scale_, self.y_shift_, self.y_scale_ = \
            self._scaling(stats)
        data = self._engine_data(data)
        found = []

        def radius():  # one pass over X, a float per chunk, at most once
            if not found:
                skip = self.on_invalid == "skip"
                xs = data.X.to_delayed().ravel()
                ys = [None] * len(xs) if data.y is None else data.y.to_delayed().ravel()
                parts = [dask.delayed(_chunk_radius)(x, y, k, skip)
                         for k, (x, y) in enumerate(zip(xs, ys))]
                found.append(max(compute(*parts, scheduler=sched), default=0.0))
            return found[0]

        def degree_for(sigma):
            if self.degree != "auto":
                return int(self.degree)
            return _taylor_auto_degree(data.n_samples, d, float(self.alpha), sigma,
                                       self.n_components, radius)

        self.bandwidth_scores_ = None
        self.bandwidth_ = float(self.bandwidth) if self.bandwidth != "auto" else \
            self._auto_bandwidth(stats, data.n_samples, degree_for)
        degree, dictionary = 0, None
        if self.basis == "taylor":
            degree = degree_for(self.bandwidth_)
            if n_components(d, degree) <= 4 * self.n_components or self.degree == "auto":
                check_state_memory(self, n_components(d, degree), degree=degree)
            else:
                raise ValidationError(
                    f"degree={degree} in {d} dimensions gives {n_components(d, degree)} "
                    f"Taylor features (state {n_components(d, degree)}^2 numbers, that many "
                    f"operations a row), more than 4 times n_components={self.n_components};"
                    " lower the degree or raise n_components.")
        elif self.basis == "nystrom-fixed":
            from ooc_kernels.families.pkawv.nystrom_fixed import sample_dictionary

            check_state_memory(self, min(int(self.n_components), data.n_samples))
            dictionary = sample_dictionary(data.X, self.n_components,
                                           seed=derive_seed(self.random_seed_, 12) % 2**63,
                                           scheduler=sched, on_invalid=self.on_invalid)
        self._cfg = self._config(degree, dictionary)
        self._algorithm = OnlineAlgorithm(self._cfg)
        self._state = initial_state(self._cfg, self._algorithm.n_components)

    def _make_algorithm(self):
        return self._algorithm


    def _training_loss(self, state):
        return float(state["loss_sum"]), float(state["n_seen"])

    def _publish(self) -> None:
        s = self._state
        n = int(s["n_seen"])
        self.n_samples_seen_ = n
        self.n_samples_skipped_ = int(s.get("n_skipped", 0))
        square = self.y_scale_ ** 2   # the losses and forecasts in the targets' units
        self.cumulative_loss_ = float(s["loss_sum"]) * square
        self.average_loss_ = self.cumulative_loss_ / n if n else float("nan")
        hist = np.asarray(s["loss_history"], dtype=np.float64).reshape(-1, 2) * [1, square]
        self.loss_history_ = np.column_stack([hist, hist[:, 1] / np.maximum(hist[:, 0], 1)])
        parts = getattr(self, "_online_parts", None)
        self.online_predictions_ = np.concatenate(parts) * self.y_scale_ + self.y_shift_ \
            if parts else np.zeros(0)
        basis = self._cfg.basis
        if basis in ("taylor", "nystrom-fixed"):
            self.n_components_ = self._algorithm.n_components
        elif basis == "exact":
            self.n_components_ = n
        else:
            self.n_components_ = len(s["basis_idx"])
            self.dictionary_ = s["X_seen"][s["basis_idx"]]
            self.dictionary_indices_ = s["basis_idx"].copy()
            self.kors_weights_ = s["kors_w"].copy()
        if basis == "taylor":
            self.degree_ = self._cfg.degree
        if basis == "nystrom-fixed":
            self.dictionary_ = self._cfg.dictionary

    # ------------------------------------------------------------------ prediction
    @property
    def _n_outputs(self):
        return 1

    _predict_block = staticmethod(_predict_block)

    def _predict_payload(self):
        cfg, s = self._cfg, self._state
        extra = {"mode": cfg.mode, "alpha": cfg.alpha, "bandwidth": cfg.bandwidth,
                 "x_shift": self.x_shift_, "x_scale": self.x_scale_,
                 "y_shift": self.y_shift_, "y_scale": self.y_scale_}
        if cfg.basis in ("taylor", "nystrom-fixed"):
            return "linear", make_basis(cfg), s["Ainv"], s["w"], extra
        if cfg.basis == "exact":
            return "exact", s["X_seen"], s["G"], s["G"] @ s["y_seen"], extra
        mb = len(s["basis_idx"])
        if mb == 0:
            return "kernel", s["X_seen"][:0], np.zeros((0, 0)), np.zeros(0), extra
        Rinv = np.linalg.inv(s["R"])  # the basis is small: H^(-1) = R^(-1) R^(-T)
        Hinv = Rinv @ Rinv.T
        return "kernel", s["X_seen"][s["basis_idx"]], Hinv, Hinv @ s["kty"], extra

    # ------------------------------------------------------------------ persistence
    def _fitted_arrays(self) -> dict:
        s = self._state
        out = {k: np.asarray(s[k]) for k in ("n_seen", "loss_sum", "loss_history")}
        out["n_skipped"] = np.asarray(s.get("n_skipped", 0), dtype=np.int64)
        out.update({k: np.asarray(s[k]) for k in _STATE[self._cfg.basis]})
        if self._cfg.basis == "nystrom-fixed":
            out["dictionary"] = np.asarray(self._cfg.dictionary)
        if self.x_shift_ is not None:
            out.update(x_shift=self.x_shift_, x_scale=self.x_scale_)
        if (self.y_shift_, self.y_scale_) != (0.0, 1.0):
            out.update(y_shift=np.float64(self.y_shift_), y_scale=np.float64(self.y_scale_))
        return out

    def _fitted_meta(self) -> dict:
        return {"basis": self._cfg.basis, "degree": self._cfg.degree,
                "bandwidth": self._cfg.bandwidth}

    def _restore_fitted(self, arrays: dict, meta: dict, where: str) -> None:
        # a model saved without its width has the number of its ``bandwidth`` parameter
        bandwidth = meta.get("bandwidth", self.bandwidth)
        if not {"basis", "degree"} <= set(meta) <= {"basis", "degree", "bandwidth"} \
                or meta["basis"] != self.basis \
                or not isinstance(meta["degree"], int) or meta["degree"] < 0 \
                or isinstance(bandwidth, bool) or not isinstance(bandwidth, (int, float)) \
                or not MIN_BANDWIDTH <= bandwidth <= MAX_BANDWIDTH:
            raise ModelFormatError(
                f"{where}: the fitted metadata must be {{'basis': {self.basis!r}, 'degree': "
                f"an integer >= 0, 'bandwidth': a number in [{MIN_BANDWIDTH}, "
                f"{MAX_BANDWIDTH}]}}, found {meta!r}; re-save the model.")
        needed = {"n_seen", "loss_sum", "loss_history", *_STATE[self.basis]}
        if self.basis == "nystrom-fixed":
            needed.add("dictionary")
        scaling = _restore_scaling(arrays, self.n_features_in_, where)
        arrays = {k: v for k, v in arrays.items() if k not in _SCALING}
        if set(arrays) - {"n_skipped"} != needed:  # n_skipped: absent before it was kept
            raise ModelFormatError(
                f"{where}: a model of basis {self.basis!r} has the arrays {sorted(needed)}, "
                f"found {sorted(arrays)}; re-save the model.")
        state = {}
        for k, v in arrays.items():
            v = np.asarray(v)
            state[k] = v.astype(np.int64) if k in _INT_ARRAYS or k == "n_seen" else \
                v.astype(np.float64)
        state["n_seen"] = np.int64(state["n_seen"])
        state["n_skipped"] = np.int64(state.get("n_skipped", 0))
        state["loss_sum"] = np.float64(state["loss_sum"])
        dictionary = state.pop("dictionary", None)
        self.x_shift_, self.x_scale_, self.y_shift_, self.y_scale_ = scaling
        self.bandwidth_, self.bandwidth_scores_ = float(bandwidth), None
        self._cfg = self._config(meta["degree"], dictionary)
        self._algorithm = OnlineAlgorithm(self._cfg)
        self._state = state
        self._online_parts = []
        self._publish()
