"""The posterior mean and the noise of
:class:`~ooc_kernels.families.dsg.gaussian_process.DSGGaussianProcessRegressor` from the
reduced statistics of one pass (:class:`~ooc_kernels.families.dsg._gp_variance.FeatureStatistics`).

On ``D`` random features ``phi`` (``phi(x) . phi(x') ~ k(x, x')``) the GP is the Bayesian
linear model ``y = Phi w + eps``, ``w ~ N(0, I_D)``, ``eps ~ N(0, noise I_n)``.  Everything
below needs only ``G = Phi^T Phi``, ``b = Phi^T y``, ``y^T y`` and ``n``, whatever the number
of rows.

* **Mean** (``mean="features"``): ``w = (G + noise I)^{-1} b``, the exact posterior mean of
  that model, ``f(x) = phi(x) . w``.
* **Noise** (``noise="auto"``): the ``noise`` of :data:`NOISE_GRID` (times the targets'
  mean square ``y^T y / n``) that maximizes the log marginal likelihood

  ``log p(y) = -1/2 [(y^T y - b^T A^{-1} b) / noise + (n - D) log(noise) + log det A
  + n log(2 pi)]``, ``A = G + noise I``

  (Woodbury and the determinant lemma applied to ``N(y; 0, Phi Phi^T + noise I_n)``).  One
  eigendecomposition of ``G`` makes every grid point ``O(D)``.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dsg._gp_variance import FeatureStatistics
>>> rng = np.random.default_rng(0)
>>> Phi = rng.normal(size=(500, 20)) / np.sqrt(20)
>>> y = Phi @ rng.normal(size=20) + np.sqrt(0.05) * rng.normal(size=500)
>>> stats = FeatureStatistics(Phi.T @ Phi, Phi.T @ y, float(y @ y), 500)
>>> noise = select_noise(stats)
>>> bool(0.035 < noise < 0.07)
True
>>> w = features_mean(stats, noise)
>>> bool(np.allclose(w, np.linalg.solve(Phi.T @ Phi + noise * np.eye(20), Phi.T @ y)))
True
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import cho_solve, eigh

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels.exceptions import ValidationError

__all__ = ["NOISE_GRID", "noise_grid", "log_marginal_likelihood", "select_noise",
           "features_mean"]

#: Candidate noise variances relative to the targets' mean square (1 for standardized
#: targets): 91 points, 12% apart, from 1e-4 to 10^0.5.
NOISE_GRID = 10.0 ** np.linspace(-4.0, 0.5, 91)


def noise_grid(stats) -> np.ndarray:
    """:data:`NOISE_GRID` in the units of the model's targets (times ``y^T y / n``)."""
    if stats.n < 1:
        raise ValidationError(
            "noise='auto' is chosen from the training rows, and the fit has none (every "
            "row was skipped as invalid); pass rows with finite values or a numeric noise.")
    scale = stats.yy / stats.n
    return NOISE_GRID * (scale if scale > 0 else 1.0)


def log_marginal_likelihood(stats, noises) -> np.ndarray:
    """``log p(y)`` of the random-feature model at each noise variance of ``noises``."""
    noises = np.asarray(noises, dtype=np.float64)
    with single_threaded_blas():  # threads fighting over shared cores cost 20x here
        lam, Q = eigh(np.asarray(stats.gram, dtype=np.float64), driver="evd",
                      check_finite=True)
    lam = np.maximum(lam, 0.0)  # a Gram matrix: rounding makes tiny ones negative
    c2 = np.square(Q.T @ np.asarray(stats.rhs, dtype=np.float64))
    n, D = stats.n, lam.shape[0]
    out = np.empty(noises.shape)
    for i, s in enumerate(noises.ravel()):
        quad = (stats.yy - float(np.sum(c2 / (lam + s)))) / s
        out.flat[i] = -0.5 * (quad + (n - D) * math.log(s) + float(np.sum(np.log(lam + s)))
                              + n * math.log(2 * math.pi))
    return out


def select_noise(stats) -> float:
    """The noise variance of :func:`noise_grid` with the largest marginal likelihood."""
    grid = noise_grid(stats)
    return float(grid[int(np.argmax(log_marginal_likelihood(stats, grid)))])


def features_mean(stats, noise: float, factor: np.ndarray | None = None) -> np.ndarray:
    """``w = (Phi^T Phi + noise I)^{-1} Phi^T y``, through the Cholesky ``factor`` (lower)
    of ``Phi^T Phi + noise I`` when given."""
    if factor is None:
        from ooc_kernels.families.dsg._gp_variance import gram_factor

        factor = gram_factor(stats, noise)
    return cho_solve((factor, True), np.asarray(stats.rhs, dtype=np.float64),
                     check_finite=False)
