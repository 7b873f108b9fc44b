"""The step sizes, regularization and averaging a DSG fit uses, resolved from the data.

Theory (``docs/specs/dsg.md`` §6.2): with ``gamma_t = theta / t``, Theorems 4-5 give the O(1/t)
rate when ``theta * nu`` lies in ``(1, 2)`` or is a positive integer, and Corollary 13 bounds
the averaged iterate with ``theta * nu = 1`` (``nu`` is ``alpha``).  The schedules:

``"optimal"`` (default)
    ``gamma_t = theta / (t + t0)`` with ``theta = 1 / alpha`` (``theta * nu = 1``, inside
    both ranges), and ``t0`` chosen so that the first step is ``eta0`` (``"auto"``: the
    largest stable step, below).  scikit-learn's SGD "optimal" schedule is the same idea.
``"inverse"``
    ``gamma_t = eta0 / (t + t0)``: ``theta = eta0``; a :class:`StepSizeWarning` says so when
    ``eta0 * alpha`` is outside the theorems' range.  ``t0="auto"`` puts the first step at
    the stable step.
``"constant"``
    ``gamma_t = eta0`` (``"auto"``: the stable step).

The stable first step.  A growth step over a batch of ``nb`` rows opens one block of ``r``
random features, ``z(x) = sqrt(2 / r) cos(W^T x + phase)``, with coefficient ``-(gamma /
nb) Z^T D l'`` (``Z``: the batch's ``nb x r`` features, ``D``: the relative row weights,
sample times class weights scaled to mean 1).  On the batch's own predictions that is
``-gamma A l'`` with ``A = Z Z^T D / nb``: not the batch's kernel matrix, only an estimate
of it from ``r`` features.  Its largest eigenvalue is far above the kernel matrix's when
the bandwidth is narrow: with the kernel near 0 between different rows, the entries of
``Z`` are nearly independent with variance ``1 / r`` and the top eigenvalue is about
``(1 / sqrt(nb) + 1 / sqrt(r))^2`` (Marchenko-Pastur), four times ``1 / nb`` at
``nb = r``.  Gradient steps on a loss of curvature ``L`` are stable below
``2 / (L lambda_max)``, so the first step is ``1 / (L lambda_max(A))``, half that bound:
``L`` is 1 for the squared and hinge losses, 1/4 for the logistic and 1/2 for the softmax.
:func:`growth_step_eigenvalue` measures ``lambda_max(A)`` on the operators the fit's first
growth steps apply: the fit's own first :data:`STEP_DRAWS` feature blocks, each on a batch
of ``batch_size`` rows drawn from the sampled rows (all of them when they are one batch),
and keeps the largest.  The full phase, which estimates the kernel with every block, has
a smaller top eigenvalue, so the step stays stable there.

``average="auto"`` predicts with the averaged iterate (Polyak-Ruppert, the setting of
Corollary 13) for the losses of :data:`AVERAGED_LOSSES` when an epoch holds more than one
mini-batch step, and with the last iterate for the others (and for data of one batch).  A
fit with a stopping rule starts that mean one epoch after the first epoch the rule counts
as no gain (:mod:`ooc_kernels.families.dsg._average_start`); the schedule resolved here
averages from the first step (the bandwidth trials, ``partial_fit``, ``tol=None``).  The
theory of Dai et al. (Assumption B, ``docs/specs/dsg.md`` §6.1) needs a Lipschitz derivative;
the epsilon-insensitive and quantile losses have none (their derivative jumps by 1 at the
kink, whatever the residual), and huber's gradient on an outlier stays at ``epsilon``
however far the outlier is.  With steps of ``theta / (t + t0)``, ``t0`` large, a fit of a
few epochs takes nearly constant steps, so the last iterate of these losses keeps a noise
of order ``gamma_t`` times the gradient bound; the averaged iterate removes it.  Measured
(``docs/machines/regression.md``, ``benchmarks/dsg_loss_defaults.py``): on corrupted
labels the last iterate of epsilon-insensitive was worse than the squared loss on one
seed out of five (mean squared error 1.04), the averaged one's worst seed had 0.018.  The
hinge and the smooth losses keep the last iterate: there averaging measured mixed.

Small data: the first step of a bounded-derivative loss.  On a data set of at most
:data:`SMALL_DATA_ROWS` rows and more than one batch, ``learning_rate="optimal"`` with
``eta0="auto"`` and a loss of :data:`BOUNDED_LOSSES` starts at :data:`SMALL_DATA_STEP_FACTOR`
times the stable step (:func:`small_data_step_factor`).  The stable step is a bound for the
quadratic model of the loss; a loss whose derivative is bounded (``|l'| <= 1`` per output)
cannot diverge at any step with ``gamma_t alpha < 1``: every step shrinks the coefficients by
``1 - gamma_t alpha`` and adds at most ``gamma_t`` times a bounded gradient, so the model
stays within ``G / alpha`` (the argument of Pegasos, whose steps are ``1 / (alpha t)`` from
``t = 1``).  With the stable step, ``t0 = theta / eta0 - 1`` is about 1,300 steps on
scikit-learn's digits, more than the few hundred steps such a fit takes: its steps stay
nearly constant and the ``1 / t`` decay the theorems rely on never starts.  Sixteen times the
stable step puts ``t0`` near 80 steps: digits then stops after 15 to 19 epochs instead of
56, at a lower training loss and a higher test accuracy (``docs/defaults.md``, "Small data").
``t0`` is kept at least the number of growth steps (``n_features / block_size``), so that the
blocks they open get steps within a factor 2 of each other: on scikit-learn's breast cancer
data (426 rows, ``theta = 426``) 16 stable steps would give ``t0`` below 1, the first blocks
would dominate, and two seeds in six lost test accuracy (0.014 and 0.007).
Losses with an unbounded derivative (squared, squared hinge) keep the stable step, and so
does a data set of one batch (every step a full gradient step on every row).

``alpha="auto"`` is ``1 / n`` for ``n`` training rows (the kernel ridge scaling of
``lambda ~ 1 / n``, and the scale at which the regularization no longer dominates the data
term).  With row weights it is one over their sum (estimated as ``n`` times their mean on
the sampled rows): a row of weight 3 counts as three rows.

Examples
--------
>>> from ooc_kernels.families.dsg._schedule import stable_step, theory_range
>>> stable_step(loss="logistic", eigenvalue=0.1)
40.0
>>> theory_range(1.5), theory_range(3.0), theory_range(0.5)
(True, True, False)
>>> resolve_average("auto", "quantile"), resolve_average("auto", "squared")
(True, False)
>>> resolve_average("auto", "quantile", steps_per_epoch=1)
False
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels._threads import map_in_order
from ooc_kernels.exceptions import StepSizeWarning, ValidationError
from ooc_kernels.losses import get_loss, losses_for

__all__ = ["Schedule", "resolve_schedule", "resolve_average", "AVERAGED_LOSSES",
           "BOUNDED_LOSSES", "SMALL_DATA_ROWS", "SMALL_DATA_STEP_FACTOR",
           "small_data_step_factor", "ONE_BATCH_STEPS", "ONE_BATCH_MIN_SIZE", "ONE_BATCH_MIN_ROWS",
           "robust_batch_size",
           "stable_step", "theory_range",
           "growth_step_eigenvalue", "top_eigenvalue", "curvature_estimate", "CURVATURE", "STEP_DRAWS",
           "CURVATURE_ROWS"]

#: Upper bound of the loss's second derivative in the decision value, per loss of the family
#: (the loss table's ``curvature``; hinge: not smooth, taken as 1).
CURVATURE = {name: get_loss(name).curvature for name in losses_for("dsg")}


#: The losses that ``average="auto"`` averages (see the module docstring).
AVERAGED_LOSSES = frozenset({"huber", "epsilon_insensitive", "quantile"})


#: Losses whose derivative in the decision value is bounded by 1 per output (logistic:
#: ``|sigmoid(u) - y| <= 1``; softmax: ``|p - Y|`` per class), for
#: :func:`small_data_step_factor`.
BOUNDED_LOSSES = frozenset({"logistic", "softmax"})
#: Data sets of at most this many rows are "small" for :func:`small_data_step_factor`.
SMALL_DATA_ROWS = 5000
#: The first step of a small data set's bounded-derivative fit, in stable steps.
SMALL_DATA_STEP_FACTOR = 16.0


def small_data_step_factor(*, loss: str, n_rows: int, batch_size: int, learning_rate: str,
                           eta0) -> float:
    """The multiple of the stable step that ``learning_rate="optimal"`` starts at (see the
    module docstring): :data:`SMALL_DATA_STEP_FACTOR` for a loss of :data:`BOUNDED_LOSSES`
    on more than one batch and at most :data:`SMALL_DATA_ROWS` rows with ``eta0="auto"``;
    1 otherwise.

    Examples
    --------
    >>> small_data_step_factor(loss="softmax", n_rows=1347, batch_size=256,
    ...                        learning_rate="optimal", eta0="auto")
    16.0
    >>> small_data_step_factor(loss="softmax", n_rows=5001, batch_size=256,
    ...                        learning_rate="optimal", eta0="auto")
    1.0
    >>> small_data_step_factor(loss="squared", n_rows=1347, batch_size=256,
    ...                        learning_rate="optimal", eta0="auto")
    1.0
    """
    small = int(batch_size) < int(n_rows) <= SMALL_DATA_ROWS
    if small and loss in BOUNDED_LOSSES and learning_rate == "optimal" and eta0 == "auto":
        return SMALL_DATA_STEP_FACTOR
    return 1.0


#: Steps per epoch of a robust loss's fit on a data set of at most one batch of rows.
ONE_BATCH_STEPS = 8
#: The smallest batch :func:`robust_batch_size` takes.
ONE_BATCH_MIN_SIZE = 16
#: Data sets of fewer rows keep one batch in :func:`robust_batch_size`.
ONE_BATCH_MIN_ROWS = 64


def robust_batch_size(*, loss: str, n_rows: int, batch_size: int) -> int:
    """The batch size of a fit: for a loss of :data:`AVERAGED_LOSSES` on
    :data:`ONE_BATCH_MIN_ROWS` to ``batch_size`` rows, ``ceil(n_rows / ONE_BATCH_STEPS)``
    rows (at least :data:`ONE_BATCH_MIN_SIZE`), else ``batch_size``.

    One batch of every row makes each epoch one full subgradient step, and the stopping
    rule counts epochs: the epsilon-insensitive fit of statsmodels' ``macrodata`` (152
    rows) stopped after 8 to 10 steps at training R^2 0.66 to 0.77 (held out 0.577 / 0.723
    / 0.742; with 8 steps an epoch 0.969 / 0.975 / 0.987).  The squared and the
    classifiers' losses keep one batch: their full gradient steps at the stable step
    converge.  So do data sets of fewer than :data:`ONE_BATCH_MIN_ROWS` rows: a full step
    counts an integer sample weight exactly as that many copies of its row (scikit-learn's
    ``check_sample_weight_equivalence_on_dense_data``, a few dozen rows), and on
    statsmodels' ``statecrime`` (38 rows) batches of 16 scored lower.

    Examples
    --------
    >>> robust_batch_size(loss="quantile", n_rows=152, batch_size=256)
    19
    >>> robust_batch_size(loss="quantile", n_rows=100, batch_size=256)
    16
    >>> robust_batch_size(loss="quantile", n_rows=63, batch_size=256)
    256
    >>> robust_batch_size(loss="squared", n_rows=152, batch_size=256)
    256
    >>> robust_batch_size(loss="huber", n_rows=300, batch_size=256)
    256
    """
    n_rows, batch_size = int(n_rows), int(batch_size)
    if loss not in AVERAGED_LOSSES or not ONE_BATCH_MIN_ROWS <= n_rows <= batch_size:
        return batch_size
    return max(-(-n_rows // ONE_BATCH_STEPS), ONE_BATCH_MIN_SIZE)


def resolve_average(average, loss: str, steps_per_epoch: int | None = None):
    """``average`` with ``"auto"`` resolved for ``loss``: True for the losses of
    :data:`AVERAGED_LOSSES` when an epoch holds more than one mini-batch step (or when the
    number of steps is not given), False otherwise; any other value is returned as it is.

    With one step per epoch every step sees every row: the steps are full (sub)gradient
    steps whose iterates still improve when the fit stops, and their mean trails the last
    one (scikit-learn's ``check_regressors_train``, 200 rows and one batch: R^2 0.53
    averaged against 0.70 for the last iterate with the quantile loss)."""
    if isinstance(average, str) and average == "auto":
        many_steps = steps_per_epoch is None or steps_per_epoch > 1
        return loss in AVERAGED_LOSSES and many_steps
    return average


@dataclass(frozen=True)
class Schedule:
    """A resolved schedule: ``gamma_t = eta0 / (t + t0)`` or ``eta0``, and ``alpha``."""

    learning_rate: str  # "inverse" or "constant" (what the solver runs)
    eta0: float
    t0: float
    alpha: float
    first_step: float
    average: int  # global step from which iterates are averaged (0: none)


def theory_range(theta_nu: float) -> bool:
    """Whether ``theta * nu`` is in ``(1, 2)`` or a positive integer (Theorems 4-5)."""
    if 1.0 < theta_nu < 2.0:
        return True
    nearest = round(theta_nu)
    return nearest >= 1 and abs(theta_nu - nearest) <= 1e-9 * max(1.0, abs(theta_nu))


#: Growth steps (feature blocks, each with its own batch of rows) on which
#: :func:`growth_step_eigenvalue` measures the step's operator.
STEP_DRAWS = 8


def growth_step_eigenvalue(rows: np.ndarray, weights: np.ndarray, *, bandwidth: float,
                           feature_seed: int, block_size: int, batch_size: int,
                           draws: int = STEP_DRAWS, seed: int = 0,
                           kernel="rbf", threads: int | None = None) -> float:
    """Largest eigenvalue of the operator ``A = Z Z^T D / nb`` of a growth step (see the
    module docstring), the largest over the fit's first ``draws`` feature blocks.

    Block ``j`` (``j < draws``) is the block the fit's step ``j`` opens (frequencies and
    phases from ``(feature_seed, j)``); its batch is ``batch_size`` rows of ``rows`` drawn
    without replacement (``seed``), or all of them when there are no more.  The eigenvalue
    is that of the ``min(nb, r)``-sized Gram matrix of ``D^1/2 Z`` (same nonzero spectrum):
    at most ``nb x r`` features and one small symmetric eigendecomposition per block.

    Parameters
    ----------
    rows : ndarray of shape (n, d)
        Sampled rows as the model sees them (standardized).
    weights : ndarray of shape (n,)
        Relative row weights (sample times class weights, mean 1).
    bandwidth : float
    feature_seed : int
        The fit's feature seed (:class:`~ooc_kernels.families.dsg.solver.DSGConfig`).
    block_size, batch_size : int
    draws : int
    seed : int
        Seed of the batches.
    kernel : str or FeatureMap
        The fit's feature map (:mod:`ooc_kernels.features.maps`); ``bandwidth`` is its
        parameter.
    threads : int, optional
        Threads the draws share (default: the enclosing
        :func:`~ooc_kernels._threads.kernel_threads` block's count, 1 outside one).  Each
        draw's eigenvalue is computed alone, from batches drawn in order beforehand, and the
        largest is taken: the same value for any thread count.

    Returns
    -------
    float
        1 when no row has a positive weight: the value for the widest kernel, where every
        row's features agree (``A`` is then about the all-ones matrix over ``nb``).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> far = 100.0 * rng.normal(size=(256, 64))    # kernel ~ 0 between different rows
    >>> lam = growth_step_eigenvalue(far, np.ones(256), bandwidth=1.0, feature_seed=1,
    ...                              block_size=256, batch_size=256)
    >>> bool(3.0 < lam * 256 < 4.5)     # about (1/16 + 1/16)^2 = 4 / 256, not 1 / 256
    True
    """
    from ooc_kernels._jit.rff import features_inplace_ref
    from ooc_kernels.features.maps import get_feature_map

    fmap = get_feature_map(kernel)

    X = fmap.map_rows(np.asarray(rows, dtype=np.float64), None, np.float64)  # psi(rows)
    w = np.asarray(weights, dtype=np.float64)
    n = len(X)
    if n == 0 or not (w > 0).any():
        return 1.0
    nb = min(int(batch_size), n)
    scale = fmap.feature_scale(block_size)
    rng = np.random.default_rng(seed % 2**63)
    picks = [np.sort(rng.choice(n, size=nb, replace=False)) if nb < n else np.arange(n)
             for _ in range(int(draws))]

    def draw(j: int) -> float:
        W, phase = fmap.block(feature_seed, j, X.shape[1], block_size, bandwidth)
        P = X[picks[j]] @ W
        features_inplace_ref(fmap.nonlinearity, P, phase, scale)
        Z = np.sqrt(w[picks[j]])[:, None] * P
        gram = Z.T @ Z if Z.shape[1] <= Z.shape[0] else Z @ Z.T
        return float(np.linalg.eigvalsh(gram)[-1]) / nb

    with single_threaded_blas():
        values = map_in_order(draw, range(len(picks)), threads)
    return max([0.0, *values])


#: Rows of the sample on which :func:`top_eigenvalue` estimates the kernel operator's largest
#: eigenvalue (a Gram matrix of 8 MB; the estimate's error shrinks like one over the root).
CURVATURE_ROWS = 1000


def top_eigenvalue(gram: np.ndarray, weights: np.ndarray, *, tol: float = 1e-6,
                   max_iter: int = 500) -> float:
    """Largest eigenvalue of ``D^1/2 K D^1/2 / sum(w)`` by power iteration.

    The kernel operator of the data term's expected Hessian, on samples too large for a
    full eigendecomposition.  A Gaussian Gram matrix has positive entries, so its top
    eigenvector is positive (Perron-Frobenius) and the iteration starts from
    ``sqrt(w)``, close to it; it stops when the Rayleigh quotient changes by less than
    ``tol`` relatively.

    Examples
    --------
    >>> K = np.array([[1.0, 0.5], [0.5, 1.0]])
    >>> round(top_eigenvalue(K, np.array([1.0, 1.0])), 6)     # eigenvalues 1.5 and 0.5, over 2
    0.75
    """
    w = np.asarray(weights, dtype=np.float64)
    total = float(w.sum())
    if len(w) == 0 or not total > 0:
        return 0.0
    root = np.sqrt(w)
    K = np.asarray(gram)                 # float32 or float64: the products keep its dtype
    v = root / np.linalg.norm(root)
    value = 0.0
    with single_threaded_blas():
        for _ in range(max_iter):
            # D^1/2 K D^1/2 v without forming the product
            u = root * (K @ (root * v).astype(K.dtype, copy=False))
            new = float(v @ u)
            norm = float(np.linalg.norm(u))
            if not norm > 0:
                return 0.0
            v = u / norm
            if abs(new - value) <= tol * abs(new):
                value = new
                break
            value = new
    return value / total


def curvature_estimate(loss: str, n_outputs: int, seen: np.ndarray, weights: np.ndarray,
                       bandwidth: float, *, seed: int, kernel="rbf") -> float:
    """Largest eigenvalue of the data term's expected Hessian, ``L`` times that of the
    weighted kernel operator, estimated on up to :data:`CURVATURE_ROWS` sampled rows (drawn
    with ``seed``); it sets how the tasks of a round with ``chunks_per_round > 1`` are
    combined (:meth:`~ooc_kernels.families.dsg.solver.DSGAlgorithm.mixing_weight`).  ``L``
    is the loss's curvature bound, except for the softmax, whose Hessian at the starting
    model (uniform probabilities over ``C`` classes) has largest eigenvalue ``1 / C``.
    Without a sample: ``L`` (``k(x, x) = 1`` bounds the kernel operator).

    Examples
    --------
    >>> seen = np.zeros((4, 2))                  # one point: the kernel operator's is 1
    >>> round(curvature_estimate("logistic", 1, seen, np.ones(4), 1.0, seed=0), 6)
    0.25
    """
    from ooc_kernels.features.maps import get_feature_map

    w = np.asarray(weights, dtype=np.float64)
    curv = 1.0 / n_outputs if loss == "softmax" and n_outputs > 1 else CURVATURE[loss]
    if len(seen) < 2 or not (w > 0).any():
        return float(curv)
    if len(seen) > CURVATURE_ROWS:
        pick = np.random.default_rng(seed).choice(len(seen), CURVATURE_ROWS, replace=False)
        seen, w = seen[np.sort(pick)], w[np.sort(pick)]
    # the Gram matrix in float32 (4 MB at 1,000 rows): the estimate only sets the
    # weight of a round, and the setup stays within a few MB of the chunks
    gram = get_feature_map(kernel).gram(seen, seen, bandwidth, np.float32)
    return float(curv) * top_eigenvalue(gram, w)


def stable_step(*, loss: str, eigenvalue: float) -> float:
    """The first step size ``1 / (L lambda_max)`` for the largest eigenvalue of the step's
    operator (:func:`growth_step_eigenvalue`, see the module docstring)."""
    return 1.0 / (CURVATURE[loss] * eigenvalue)


def resolve_schedule(*, learning_rate: str, eta0, t0, alpha, average, loss: str,
                     eigenvalue: float | None, batch_size: int, n_samples: int,
                     owner: str = "the estimator", step_factor: float = 1.0,
                     min_t0: float = 0.0) -> Schedule:
    """The schedule a fit runs (see the module docstring).

    ``n_samples`` is the sum of the row weights (the number of rows without weights);
    ``eigenvalue`` is the largest eigenvalue of a growth step's operator
    (:func:`growth_step_eigenvalue`), None when no row was sampled (then no "auto" setting
    needs the stable step); ``step_factor`` multiplies the stable step that
    ``learning_rate="optimal"`` starts at with ``eta0="auto"``
    (:func:`small_data_step_factor`); a ``step_factor`` above 1 keeps ``t0 >= min_t0`` (the
    fit's growth steps, so that the blocks they open get steps within a factor 2 of each
    other), and never goes below the stable step.

    Raises
    ------
    ValidationError
        ``learning_rate="optimal"`` with ``alpha=0`` or a numeric ``t0``, or
        ``learning_rate="inverse"`` with ``eta0="auto"``.
    """
    given = alpha
    alpha = 1.0 / max(n_samples, 1e-12) if alpha == "auto" else float(alpha)
    step = None if eigenvalue is None else stable_step(loss=loss, eigenvalue=eigenvalue)
    if learning_rate == "optimal":
        if alpha <= 0 or not math.isfinite(1.0 / alpha):   # a subnormal alpha: 1 / alpha = inf
            auto = (f" (alpha='auto' is 1 / the rows' total weight, {n_samples!r}: rescale "
                    "sample_weight or class_weight)" if given == "auto" else "")
            raise ValidationError(
                f"learning_rate='optimal' sets theta = 1 / alpha, so alpha must be > 0 with "
                f"1 / alpha finite (alpha >= {1.0 / np.finfo(np.float64).max:.3g}), got "
                f"{alpha!r}{auto}; set such an alpha (or 'auto'), or use "
                "learning_rate='inverse' with eta0."
            )
        if t0 != "auto":
            raise ValidationError(
                f"{owner}: with learning_rate='optimal', t0 follows from the first step "
                f"(t0 = 1 / (alpha * eta0) - 1), so it cannot be given (got t0={t0!r}); set "
                "eta0 to the first step you want, or use learning_rate='inverse'."
            )
        theta = 1.0 / alpha
        first = step if eta0 == "auto" else float(eta0)
        if eta0 == "auto" and step_factor > 1:
            first = max(step, min(step * float(step_factor), theta / (1.0 + float(min_t0))))
        t0_value = max(0.0, theta / first - 1.0)
        first = theta / (1.0 + t0_value)  # at most theta (t0 >= 0)
        rate = "inverse"
    elif learning_rate == "inverse":
        if eta0 == "auto":
            raise ValidationError(
                f"{owner}: learning_rate='inverse' needs eta0 = theta, the numerator of "
                "gamma_t = eta0 / (t + t0); give a number (the theory asks eta0 * alpha in "
                "(1, 2) or a positive integer), or use learning_rate='optimal'."
            )
        theta = float(eta0)
        if alpha > 0 and not theory_range(theta * alpha):
            warnings.warn(
                f"eta0 * alpha = {theta * alpha:.6g} (eta0={theta:.6g}, alpha={alpha:.6g}) "
                "is outside (1, 2) and not a positive integer, the range where the "
                "convergence theorems of Dai et al. (2014) hold for gamma_t = eta0 / t; use "
                "learning_rate='optimal' (theta = 1 / alpha) or set eta0 = c / alpha with c "
                "in [1, 2).", StepSizeWarning, stacklevel=4)
        t0_value = max(0.0, theta / step - 1.0) if t0 == "auto" else float(t0)
        first = theta / (1.0 + t0_value)
        rate = "inverse"
    else:  # constant
        theta = step if eta0 == "auto" else float(eta0)
        t0_value, first, rate = 0.0, theta, "constant"
    average = resolve_average(average, loss,
                              steps_per_epoch=math.ceil(n_samples / int(batch_size)))
    if average is True:
        start = 1
    elif average is False or average == 0:
        start = 0
    else:  # from the step whose batch holds sample average + 1
        start = int(average) // int(batch_size) + 1
    return Schedule(learning_rate=rate, eta0=theta, t0=t0_value, alpha=alpha,
                    first_step=first, average=start)

