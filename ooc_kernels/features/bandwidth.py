"""The median trick for the Gaussian kernel bandwidth.

``sigma = multiplier * median{ ||x_i - x_j||_2 : i < j }`` over a random subsample of at most
``max_points`` rows (DSG paper §7; multipliers used there: 0.1, 1 and 4).  ``sigma`` is the
bandwidth of ``k(x, x') = exp(-||x - x'||^2 / (2 sigma^2))``, the library's convention
(the authors' MATLAB code plugs the median into ``exp(-||x - x'||^2 / sigma^2)`` instead;
multiply by ``1 / sqrt(2)`` to reproduce it).

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.features.bandwidth import median_heuristic
>>> median_heuristic(np.array([[0.0], [1.0], [3.0]]))     # distances 1, 2, 3
2.0
>>> median_heuristic(np.array([[0.0], [0.0], [0.0], [0.0], [2.0]]))  # six 0s, four 2s
2.0

Row weights count as repeated rows: a row of weight 3 is three copies of it (three pairs at
distance 0 among them), so the same points give the same bandwidth weighted or repeated:

>>> median_heuristic(np.array([[0.0], [1.0], [3.0]]), sample_weight=[1, 3, 1])
1.0
>>> median_heuristic(np.array([[0.0], [1.0], [1.0], [1.0], [3.0]]))
1.0
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from scipy.spatial.distance import pdist

from ooc_kernels._moments import weighted_median
from ooc_kernels.exceptions import ValidationError

__all__ = ["median_heuristic"]


def median_heuristic(sample, multiplier=1.0, *, max_points=2000, random_state=None,
                     sample_weight=None) -> float:
    """Median-trick bandwidth ``multiplier * median pairwise distance``.

    Parameters
    ----------
    sample : array_like of shape (n, d)
        Data points (a chunk or a sample of the training set).  Must be finite.
    multiplier : float, default 1.0
        Positive factor ``c`` in ``sigma = c * median``.
    max_points : int, default 2000
        When ``n > max_points``, a uniform subsample of ``max_points`` distinct rows is used
        (``max_points * (max_points - 1) / 2`` pairs).
    random_state : None, int or numpy.random.Generator
        Seed of the subsample (ignored when ``n <= max_points``).
    sample_weight : array_like of shape (n,), optional
        Non-negative row weights, read as numbers of copies: the pair ``(i, j)`` counts
        ``w_i w_j`` times and the copies of row ``i`` add ``max(w_i (w_i - 1) / 2, 0)`` pairs
        at distance 0.  With integer weights the result is exactly that of the rows repeated
        ``w_i`` times (rows of weight 0 are left out).

    Returns
    -------
    float
        The bandwidth ``sigma`` of ``exp(-||x - x'||^2 / (2 sigma^2))``.

    Raises
    ------
    ValidationError
        Fewer than 2 points, non-finite values, or a non-positive multiplier.

    Notes
    -----
    When more than half of the sampled pairs are identical points (duplicated rows, a
    dataset with few distinct values), the median is 0 and would give a degenerate kernel;
    the median of the non-zero distances is used instead.  When every sampled point is the
    same, any bandwidth gives the same kernel on the sample, and ``multiplier * 1.0`` is
    returned (scikit-learn's ``gamma="scale"`` falls back to 1 the same way).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 10))
    >>> s = median_heuristic(X, multiplier=1.0, max_points=200, random_state=0)
    >>> bool(3.5 < s < 5.0)      # about sqrt(2 * 10)
    True
    """
    X = np.asarray(sample)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise ValidationError(f"sample must be 2-D (n_samples, n_features); got shape {X.shape}")
    if not np.issubdtype(X.dtype, np.number) or np.iscomplexobj(X):
        raise ValidationError(f"sample must hold real numbers; got dtype {X.dtype}")
    if (
        isinstance(multiplier, bool)
        or not isinstance(multiplier, (Real, np.floating, np.integer))
        or not np.isfinite(multiplier)
        or multiplier <= 0
    ):
        raise ValidationError(f"multiplier must be a positive finite number; got {multiplier!r}")
    if isinstance(max_points, bool) or not isinstance(max_points, (int, np.integer)) or max_points < 2:
        raise ValidationError(f"max_points must be an integer >= 2; got {max_points!r}")
    n = X.shape[0]
    w = None
    if sample_weight is not None:
        w = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
        if w.shape != (n,) or not np.isfinite(w).all() or (w < 0).any():
            raise ValidationError(
                f"sample_weight must hold {n} finite non-negative numbers, one per row; got "
                f"shape {w.shape}" + ("" if w.shape != (n,) else
                                      f" with min {w.min()!r}"))
        keep = w > 0
        X, w = X[keep], w[keep]
        n = X.shape[0]
        if (w == 1.0).all():  # one copy of every row: the plain median (a partition, not a
            w = None          # sort of the n(n-1)/2 distances), the same value
    if n < 2 and (w is None or w.sum() <= 1):
        raise ValidationError(
            f"the median heuristic needs at least 2 points; got {n}. Pass more data or give "
            "the bandwidth explicitly"
        )
    if n > max_points:
        rng = np.random.default_rng(random_state)
        idx = np.sort(rng.choice(n, size=int(max_points), replace=False))
        X = X[idx]
        w = None if w is None else w[idx]
    X = np.asarray(X, dtype=np.float64)  # a small sample (at most max_points rows)
    if not np.isfinite(X).all():
        raise ValidationError("sample contains NaN or inf; clean the data before the median heuristic")
    # pdist computes each distance directly (no n x n Gram matrix): memory is the n(n-1)/2
    # distances only, and the median partitions them in place.
    dist = pdist(X)
    if w is None:
        med = float(np.median(dist))
        if med == 0.0:  # mostly duplicated points: the median of the distinct pairs
            nonzero = dist[dist > 0]
            med = float(np.median(nonzero, overwrite_input=True)) if nonzero.size else 1.0
        return float(multiplier) * med
    first, second = np.triu_indices(len(w), k=1)
    pair_w = w[first] * w[second]
    copies = float(np.maximum(w * (w - 1.0) / 2.0, 0.0).sum())  # pairs of copies: distance 0
    med = weighted_median(np.append(dist, 0.0), np.append(pair_w, copies))
    if med == 0.0:
        nonzero = dist > 0
        med = weighted_median(dist[nonzero], pair_w[nonzero]) if nonzero.any() else 1.0
    return float(multiplier) * med

