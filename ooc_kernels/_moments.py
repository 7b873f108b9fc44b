"""Column moments of the rows a fit standardizes with: finite for every finite column;
and the library's one weighted median.

Shared by the families that standardize their inputs and targets (the DSG estimators,
the PKAWV estimators) and by the median heuristic of the bandwidth.

Examples
--------
>>> import numpy as np
>>> weighted_moments(np.array([[1.0, 0.0], [3.0, 0.0]]), np.array([1.0, 3.0]))
(array([2.5, 0. ]), array([0.8660254, 0.       ]))
"""

from __future__ import annotations

import numpy as np

__all__ = ["TINY_VALUES", "weighted_median", "weighted_moments"]


#: The magnitude below which a column's squares lose precision in float64 (subnormal below
#: about 2.2e-308): :func:`weighted_moments` computes such a column on its values scaled up.
TINY_VALUES = 1e-140


def weighted_moments(values, weights=None):
    """``(mean, std)`` of ``values`` along its first axis, rows weighted by ``weights``
    (None: unweighted): the standardization of a fit's inputs and regression target.

    A column whose sums overflow (finite values beyond about 1e154, whose squares do not
    fit a float64), or whose values are all below :data:`TINY_VALUES` in magnitude (their
    squares underflow to subnormals or 0, a spread read as none), gets the moments of its
    values divided by their largest magnitude, multiplied back, so every finite column has
    finite moments and a column that is not constant a spread; the other columns the
    plain formula's, bit for bit.

    Examples
    --------
    >>> weighted_moments(np.array([[1.0, 0.0], [3.0, 0.0]]))
    (array([2., 0.]), array([1., 0.]))
    >>> [float(v[0]) for v in weighted_moments(np.array([[1e300], [-1e300]]))]
    [0.0, 1e+300]
    """
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        mean = np.average(values, axis=0, weights=weights)
        sd = np.sqrt(np.average((values - mean) ** 2, axis=0, weights=weights))
        big = np.max(np.abs(values), axis=0)
        plain = np.isfinite(mean) & np.isfinite(sd) & ~((big > 0) & (big < TINY_VALUES))
        if np.all(plain):
            return mean, sd
        big = np.where(np.isfinite(big) & (big > 0), big, 1.0)
        scaled = values / big
        mean_s = np.average(scaled, axis=0, weights=weights)
        sd_s = np.sqrt(np.average((scaled - mean_s) ** 2, axis=0, weights=weights))
        return np.where(plain, mean, mean_s * big), np.where(plain, sd, sd_s * big)


def weighted_median(values, weights=None) -> float:
    """The median of the 1-d ``values``, value ``i`` counted ``weights[i]`` times (None:
    each once): :func:`numpy.median` of the values repeated, for integer weights (the mean
    of the two middle values when the total weight is even, the middle one when it is
    odd); for other non-negative weights, the same rule on the cumulative weight.  So unit
    weights give the unweighted median, and a weight of 2 is a repeated row.

    Parameters
    ----------
    values : ndarray of shape (n,)
    weights : ndarray of shape (n,) or None
        Non-negative, with a positive sum.

    Returns
    -------
    float

    Examples
    --------
    >>> weighted_median(np.array([3.0, 1.0, 2.0]), np.array([1.0, 2.0, 1.0]))  # 1 1 2 3
    1.5
    >>> weighted_median(np.array([3.0, 1.0, 2.0]), np.array([1.0, 1.0, 1.0]))  # 1 2 3
    2.0
    """
    values = np.asarray(values, dtype=np.float64)
    if weights is None:
        return float(np.median(values))
    order = np.argsort(values, kind="stable")
    values, cum = values[order], np.cumsum(np.asarray(weights, dtype=np.float64)[order])
    half = cum[-1] / 2.0
    last = len(values) - 1
    lower = values[min(np.searchsorted(cum, half, side="left"), last)]
    upper = values[min(np.searchsorted(cum, half, side="right"), last)]
    return float((lower + upper) / 2.0)
