"""The step sizes, regularization and averaging a DSG fit uses, resolved from the data.

Theory (``specs/dsg.md`` 6.2): with ``gamma_t = theta / t``, Theorems 4-5 give the O(1/t)
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

The stable first step.  A step moves the model by ``-(gamma / b) sum_i l'_i k(x_i, .)``
over a batch of ``b`` rows; on the batch's own predictions that is ``gamma`` times the
batch kernel matrix over ``b``, whose largest eigenvalue is about ``kbar + 1 / b`` (``kbar``:
the kernel's mean value between two different rows, 1 on the diagonal).  Gradient steps on
a loss of curvature ``L`` are stable below ``2 / (L lambda_max)``, so the first step is
``1 / (L (kbar + 1 / b))``, half that bound: ``L`` is 1 for the squared and hinge losses,
1/4 for the logistic and 1/2 for the softmax.  ``kbar`` is measured on the rows sampled for
the bandwidth.  Row weights (``sample_weight`` times ``class_weight``) scale the gradient, so
the kernel term is multiplied by their mean and the ``1 / b`` term by their largest value
on the sample.

When the whole training set is one batch (one chunk of at most ``batch_size`` rows), the
batch matrix is known exactly: ``D^1/2 K D^1/2 / W`` for row weights ``D = diag(w)`` with sum
``W``, and :func:`batch_eigenvalue` replaces the estimate ``kbar + 1 / b`` by its largest
eigenvalue.

``alpha="auto"`` is ``1 / n`` for ``n`` training rows (the kernel ridge scaling of
``lambda ~ 1 / n``, and the scale at which the regularization no longer dominates the data
term).  With row weights it is one over their sum (estimated as ``n`` times their mean on
the sampled rows): a row of weight 3 counts as three rows.

Examples
--------
>>> from ooc_kernels.estimators._dsg_schedule import stable_step, theory_range
>>> round(stable_step(loss="logistic", kbar=0.1, batch_size=256), 3)
38.496
>>> theory_range(1.5), theory_range(3.0), theory_range(0.5)
(True, True, False)
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels.exceptions import StepSizeWarning, ValidationError

__all__ = ["Schedule", "resolve_schedule", "stable_step", "theory_range", "mean_kernel",
           "batch_eigenvalue", "top_eigenvalue", "CURVATURE", "KERNEL_PAIRS",
           "CURVATURE_ROWS"]

#: Upper bound of the loss's second derivative in the decision value (hinge: not smooth,
#: taken as 1).
CURVATURE = {"squared": 1.0, "hinge": 1.0, "logistic": 0.25, "softmax": 0.5}


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


#: Random pairs of rows that :func:`mean_kernel` averages over (standard error of the mean
#: below 0.004, whatever the sample).
KERNEL_PAIRS = 16_384


def mean_kernel(sample: np.ndarray, bandwidth: float, *, seed: int = 0) -> float:
    """Mean Gaussian-kernel value between two different rows of ``sample``.

    Estimated on :data:`KERNEL_PAIRS` random pairs of distinct rows (all pairs when there
    are fewer), taken a block at a time: the temporaries stay under 1 MiB whatever the number
    of rows and columns.
    """
    sample = np.asarray(sample)
    n = len(sample)
    if n < 2:
        return 0.0
    if n * (n - 1) // 2 <= KERNEL_PAIRS:
        first, second = np.triu_indices(n, k=1)
    else:
        rng = np.random.default_rng(seed)
        first = rng.integers(n, size=KERNEL_PAIRS)
        second = rng.integers(n - 1, size=KERNEL_PAIRS)
        second += second >= first  # a different row
    step = max(1, 2**17 // max(1, sample.shape[1]))  # pairs per block: < 1 MiB of float64
    total = 0.0
    for lo in range(0, len(first), step):
        diff = sample[first[lo:lo + step]].astype(np.float64) \
            - sample[second[lo:lo + step]]
        d2 = np.einsum("ij,ij->i", diff, diff)
        total += float(np.exp(-d2 / (2.0 * bandwidth ** 2)).sum())
    return total / len(first)


def batch_eigenvalue(gram: np.ndarray, weights: np.ndarray) -> float:
    """Largest eigenvalue of ``D^1/2 K D^1/2 / sum(w)``: the batch matrix of a step over all
    the rows (weights relative, see :mod:`ooc_kernels.solvers.dsg`).

    Examples
    --------
    >>> K = np.array([[1.0, 0.5], [0.5, 1.0]])
    >>> batch_eigenvalue(K, np.array([1.0, 1.0]))    # eigenvalues 1.5 and 0.5, over 2
    0.75
    """
    w = np.asarray(weights, dtype=np.float64)
    root = np.sqrt(w)
    with single_threaded_blas():
        top = np.linalg.eigvalsh(root[:, None] * np.asarray(gram) * root[None, :])[-1]
    return float(top) / float(w.sum())


#: Rows of the sample on which :func:`top_eigenvalue` estimates the kernel operator's largest
#: eigenvalue (a Gram matrix of 8 MB; the estimate's error shrinks like one over the root).
CURVATURE_ROWS = 1000


def top_eigenvalue(gram: np.ndarray, weights: np.ndarray, *, tol: float = 1e-6,
                   max_iter: int = 500) -> float:
    """Largest eigenvalue of ``D^1/2 K D^1/2 / sum(w)`` by power iteration.

    The same matrix as :func:`batch_eigenvalue`, for samples too large for a full
    eigendecomposition.  A Gaussian Gram matrix has positive entries, so its top
    eigenvector is positive (Perron-Frobenius) and the iteration starts from
    ``sqrt(w)``, close to it; it stops when the Rayleigh quotient changes by less than
    ``tol`` relatively.

    Examples
    --------
    >>> K = np.array([[1.0, 0.5], [0.5, 1.0]])
    >>> round(top_eigenvalue(K, np.array([1.0, 1.0])), 6)     # as batch_eigenvalue
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


def stable_step(*, loss: str, kbar: float, batch_size: int, weight_mean: float = 1.0,
                weight_max: float = 1.0) -> float:
    """The first step size ``1 / (L (kbar + 1 / b))`` (see the module docstring).

    With row weights ``w`` (sample times class weights) the batch matrix is ``W^1/2 K W^1/2
    / b``: its off-diagonal mass scales with the mean weight and its diagonal with the
    largest, so the step is ``1 / (L (mean(w) kbar + max(w) / b))``.
    """
    return 1.0 / (CURVATURE[loss] * (weight_mean * kbar + weight_max / batch_size))


def resolve_schedule(*, learning_rate: str, eta0, t0, alpha, average, loss: str,
                     kbar: float | None, batch_size: int, n_samples: int,
                     weights: tuple[float, float] = (1.0, 1.0),
                     eigenvalue: float | None = None,
                     owner: str = "the estimator") -> Schedule:
    """The schedule a fit runs (see the module docstring).

    ``n_samples`` is the sum of the row weights (the number of rows without weights);
    ``eigenvalue``, when given, is the exact largest eigenvalue of the batch matrix
    (:func:`batch_eigenvalue`) and replaces the estimate from ``kbar``.

    Raises
    ------
    ValidationError
        ``learning_rate="optimal"`` with ``alpha=0`` or a numeric ``t0``, or
        ``learning_rate="inverse"`` with ``eta0="auto"``.
    """
    alpha = 1.0 / max(n_samples, 1e-12) if alpha == "auto" else float(alpha)
    # kbar is None when nothing was sampled: then no "auto" setting needs the stable step
    if eigenvalue is not None:
        step = 1.0 / (CURVATURE[loss] * eigenvalue)
    else:
        step = None if kbar is None else stable_step(
            loss=loss, kbar=kbar, batch_size=batch_size, weight_mean=weights[0],
            weight_max=weights[1])
    if learning_rate == "optimal":
        if alpha <= 0:
            raise ValidationError(
                f"learning_rate='optimal' sets theta = 1 / alpha, so alpha must be > 0, got "
                f"{alpha!r}; set alpha > 0 (or 'auto'), or use learning_rate='inverse' with "
                "eta0."
            )
        if t0 != "auto":
            raise ValidationError(
                f"{owner}: with learning_rate='optimal', t0 follows from the first step "
                f"(t0 = 1 / (alpha * eta0) - 1), so it cannot be given (got t0={t0!r}); set "
                "eta0 to the first step you want, or use learning_rate='inverse'."
            )
        theta = 1.0 / alpha
        first = step if eta0 == "auto" else float(eta0)
        t0_value = max(0.0, theta / first - 1.0)
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
    if average is True:
        start = 1
    elif average is False or average == 0:
        start = 0
    else:  # a number of samples seen before averaging starts
        start = int(average) // int(batch_size) + 1
    return Schedule(learning_rate=rate, eta0=theta, t0=t0_value, alpha=alpha,
                    first_step=first, average=start)

