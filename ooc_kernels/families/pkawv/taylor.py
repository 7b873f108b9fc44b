"""The Taylor basis of the Gaussian kernel: a fixed, data-independent finite feature map.

For ``k(x, x') = exp(-||x - x'||^2 / (2 sigma^2))`` on ``R^d`` the functions::

    g_k(x) = prod_i x_i^{k_i} / (sigma^{|k|} sqrt(prod_i k_i!)) * exp(-||x||^2 / (2 sigma^2)),

``k`` in ``N^d``, are an orthonormal basis of the RKHS, and ``k(x, x') = sum_k g_k(x)
g_k(x')``.  :class:`TaylorBasis` keeps the multi-indices of total degree ``|k| <= M``:
``C(M + d, M)`` features whose Gram matrix ``Phi Phi^T`` differs from the kernel matrix by
at most ``(R / sigma)^(2M + 2) / (M + 1)!`` entrywise when ``||x|| <= R``
(:func:`truncation_bound`).  Because the basis is orthonormal, the projected online ridge on
it is plain linear ridge on these features, with no ``Q^(-1/2)`` whitening.

``ordered_tuples=True`` builds the features the way the paper's printed code does, one per
ordered ``k``-tuple of coordinates (``sum_k d^k`` features): the same Gram matrix, hence the
same predictions, at a cost growing like ``d^M``.  It exists to check that equivalence.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.pkawv.taylor import TaylorBasis
>>> basis = TaylorBasis(n_features_in=18, degree=2, bandwidth=4.0)
>>> basis.n_components                      # C(20, 2), the 190 features quoted for SUSY
190
>>> X = np.random.default_rng(0).uniform(-1, 1, size=(3, 18))
>>> basis.transform(X).shape
(3, 190)
"""

from __future__ import annotations

import itertools
import math
import numbers

import numpy as np

from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.pkawv.kernels_taylor import taylor_features, taylor_features_ref

#: The most features a basis may have (``C(M + d, M)``; 2,000,000 features are 16 MB a row
#: of state already, and the online state is ``r x r``).
MAX_COMPONENTS = 2_000_000

__all__ = ["MAX_COMPONENTS", "TaylorBasis", "auto_degree", "check_alpha", "multi_indices", "n_components",
           "truncation_bound"]


def _check_int(name: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValidationError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _check_positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
            math.isfinite(value) and value > 0):
        raise ValidationError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def check_alpha(alpha) -> float:
    """``alpha`` as a float, refused (:class:`ValidationError`) unless it is finite and
    above ``1 / finfo(float64).max`` (about ``5.56e-309``): the online learners start from
    ``A^-1 = I / alpha`` and :func:`auto_degree` takes ``log(n / alpha)``, both infinite
    below it."""
    alpha = _check_positive("alpha", alpha)
    if not math.isfinite(1.0 / alpha):
        raise ValidationError(
            f"alpha must be above 1 / the largest float64 "
            f"({1.0 / np.finfo(np.float64).max:.3g}) so that 1 / alpha is finite, got "
            f"alpha={alpha!r}; raise alpha.")
    return alpha


def n_components(d: int, degree: int, ordered_tuples: bool = False) -> int:
    """The number of Taylor features: ``C(M + d, M)``, or ``sum_{k<=M} d^k`` for ordered tuples.

    Examples
    --------
    >>> n_components(18, 2), n_components(18, 2, ordered_tuples=True)
    (190, 343)
    """
    d = _check_int("n_features_in", d, 1)
    degree = _check_int("degree", degree, 0)
    if ordered_tuples:
        return sum(d ** k for k in range(degree + 1))
    return math.comb(degree + d, degree)


def multi_indices(d: int, degree: int) -> np.ndarray:
    """Every multi-index ``k`` of ``N^d`` with ``|k| <= degree``, by total degree.

    Within a degree the order is that of
    :func:`itertools.combinations_with_replacement` on the coordinates.

    Returns
    -------
    ndarray of shape (C(degree + d, degree), d), int64

    Examples
    --------
    >>> multi_indices(2, 2).tolist()
    [[0, 0], [1, 0], [0, 1], [2, 0], [1, 1], [0, 2]]
    """
    r = n_components(d, degree)
    if r > MAX_COMPONENTS:
        raise ValidationError(
            f"a Taylor basis of degree {degree} in {d} dimensions has {r} features, more "
            f"than the {MAX_COMPONENTS} allowed; lower the degree")
    out = np.zeros((r, d), dtype=np.int64)
    row = 0
    for j in range(degree + 1):
        for combo in itertools.combinations_with_replacement(range(d), j):
            for i in combo:
                out[row, i] += 1
            row += 1
    return out


_LOG_MAX_FLOAT = math.log(np.finfo(np.float64).max)


def truncation_bound(degree: int, radius: float, bandwidth: float) -> float:
    """Lemma 13's bound ``(R / sigma)^(2M + 2) / (M + 1)!`` on ``|k(x, x') - Phi(x) . Phi(x')|``.

    Holds for every ``x, x'`` of norm at most ``radius``.

    Examples
    --------
    >>> round(truncation_bound(2, 1.0, 1.0), 6)            # 1 / 3!
    0.166667
    """
    degree = _check_int("degree", degree, 0)
    ratio = float(radius) / _check_positive("bandwidth", bandwidth)
    if ratio <= 0:
        return 0.0
    log_bound = (2 * degree + 2) * math.log(ratio) - math.lgamma(degree + 2)
    # a bound above the largest float64 (wide rows over a narrow width) is inf
    return math.exp(log_bound) if log_bound < _LOG_MAX_FLOAT else math.inf


def auto_degree(n: int, alpha: float, radius: float, bandwidth: float) -> int:
    """Theorem 4's degree ``M = ceil(8 R^2 / sigma^2 v 2 log(n / (alpha ^ 1)))``.

    With it the Taylor-projected online ridge keeps the exact learner's regret bound up to
    a factor 3/2.

    Parameters
    ----------
    n : int
        Number of rounds (rows of the stream).
    alpha : float
        The ridge ``lambda``.
    radius : float
        A bound ``R`` on the rows' Euclidean norms.
    bandwidth : float
        The kernel's ``sigma``.

    Examples
    --------
    >>> auto_degree(200, 0.5, 1.0, 1.0)            # 2 log(400) = 11.98 > 8
    12
    >>> auto_degree(200, 0.5, 2.0, 1.0)            # 8 R^2 / sigma^2 = 32 dominates
    32
    """
    n = _check_int("n", n, 1)
    alpha = check_alpha(alpha)
    bandwidth = _check_positive("bandwidth", bandwidth)
    radius = float(radius)
    if not (math.isfinite(radius) and radius >= 0):
        raise ValidationError(f"radius must be a finite number >= 0, got {radius!r}")
    value = max(8.0 * radius ** 2 / bandwidth ** 2, 2.0 * (math.log(n) - math.log(min(alpha, 1.0))))
    return max(int(math.ceil(value - 1e-12)), 0)


class TaylorBasis:
    """The Gaussian kernel's Taylor basis ``{g_k : |k| <= degree}`` as a feature map.

    Parameters
    ----------
    n_features_in : int
        Dimension ``d`` of the inputs.
    degree : int
        Largest total degree ``M``.
    bandwidth : float
        The kernel's ``sigma``.
    ordered_tuples : bool, default False
        Build one feature per ordered tuple of coordinates (``sum_k d^k`` features, as the
        paper's printed code does) instead of one per multi-index: the Gram matrix is the
        same, the cost is not.

    Attributes
    ----------
    n_components : int
        ``C(degree + d, degree)`` (or ``sum_k d^k`` with ``ordered_tuples``).
    indices_ : ndarray of shape (n_components, d)
        The multi-indices, by total degree (multi-index mode only).

    Examples
    --------
    >>> import numpy as np
    >>> basis = TaylorBasis(2, degree=20, bandwidth=1.0)
    >>> X = np.array([[0.3, -0.2], [0.1, 0.5]])
    >>> Phi = basis.transform(X)
    >>> exact = np.exp(-np.sum((X[0] - X[1]) ** 2) / 2)
    >>> bool(abs(Phi[0] @ Phi[1] - exact) < 1e-14)
    True
    """

    def __init__(self, n_features_in: int, degree: int, bandwidth: float,
                 ordered_tuples: bool = False):
        self.n_features_in = _check_int("n_features_in", n_features_in, 1)
        self.degree = _check_int("degree", degree, 0)
        self.bandwidth = _check_positive("bandwidth", bandwidth)
        self.ordered_tuples = bool(ordered_tuples)
        self.n_components = n_components(self.n_features_in, self.degree, self.ordered_tuples)
        if self.n_components > MAX_COMPONENTS:
            raise ValidationError(
                f"a Taylor basis of degree {self.degree} in {self.n_features_in} dimensions "
                f"has {self.n_components} features, more than the {MAX_COMPONENTS} allowed; "
                "lower the degree")
        if not self.ordered_tuples:
            self.indices_ = multi_indices(self.n_features_in, self.degree)
            self._parent, self._var, self._div = _parents(self.indices_)

    def _check_X(self, X) -> np.ndarray:
        X = np.ascontiguousarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features_in:
            raise ValidationError(
                f"X must have shape (n_samples, {self.n_features_in}), got {X.shape}")
        return X

    def transform(self, X) -> np.ndarray:
        """The features of the rows of ``X``: an array of shape (n, n_components), float64."""
        X = self._check_X(X)
        if self.ordered_tuples:
            return _ordered_tuple_features(X, self.degree, self.bandwidth)
        return taylor_features(X, self._parent, self._var, self._div, self.bandwidth)

    def transform_ref(self, X) -> np.ndarray:
        """:meth:`transform` in plain NumPy (the multi-index features from their formula)."""
        X = self._check_X(X)
        if self.ordered_tuples:
            return _ordered_tuple_features(X, self.degree, self.bandwidth)
        k = self.indices_
        norm = np.sqrt(np.prod([[math.factorial(int(v)) for v in row] for row in k], axis=1))
        mono = np.prod((X[:, None, :] / self.bandwidth) ** k[None, :, :], axis=2)
        return mono / norm * np.exp(-0.5 * np.sum(X * X, axis=1) / self.bandwidth ** 2)[:, None]

    def __repr__(self) -> str:
        return (f"TaylorBasis(n_features_in={self.n_features_in}, degree={self.degree}, "
                f"bandwidth={self.bandwidth!r}"
                + (", ordered_tuples=True)" if self.ordered_tuples else ")"))


def _parents(k: np.ndarray):
    """Each multi-index's parent ``k - e_i`` (``i`` its first non-zero coordinate)."""
    position = {tuple(row): j for j, row in enumerate(k.tolist())}
    r = k.shape[0]
    parent = np.full(r, -1, dtype=np.int64)
    var = np.full(r, -1, dtype=np.int64)
    div = np.ones(r)
    for j in range(1, r):
        row = k[j].copy()
        i = int(np.flatnonzero(row)[0])
        div[j] = math.sqrt(row[i])
        row[i] -= 1
        parent[j] = position[tuple(row.tolist())]
        var[j] = i
    return parent, var, div


def _ordered_tuple_features(X: np.ndarray, degree: int, bandwidth: float) -> np.ndarray:
    """The paper's printed construction: all ``d^k`` ordered ``k``-tuples, ``k <= degree``."""
    n = X.shape[0]
    blocks = [np.ones((n, 1))]
    mono = np.ones((n, 1))
    for k in range(1, degree + 1):
        mono = (mono[:, :, None] * X[:, None, :]).reshape(n, -1)
        blocks.append(mono / (bandwidth ** k * math.sqrt(math.factorial(k))))
    out = np.concatenate(blocks, axis=1)
    return out * np.exp(-0.5 * np.sum(X * X, axis=1) / bandwidth ** 2)[:, None]


# The twin is re-exported for the tests that compare the kernel with it.
taylor_features_ref = taylor_features_ref
