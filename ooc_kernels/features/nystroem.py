"""Nystrom features of a fixed set of landmarks for the Gaussian kernel:
``phi(x) = k_m(x) U_r S_r^{-1/2}``.

``k_m(x) = (k(l_j, x))_{j <= m}`` are the kernel values against the landmarks ``l_j`` and
``K_mm = U S U^T`` is the eigendecomposition of the landmarks' Gram matrix; ``U_r, S_r``
keep the eigenvalues above ``rcond * max(S)`` (landmarks that repeat or nearly repeat make
``K_mm`` rank-deficient: the directions below the floor are dropped instead of being
inverted).  Whatever the floor, ``phi(x)^T phi(x') = k_m(x)^T K_mm^+ k_m(x')`` with the
pseudo-inverse at that floor: the Nystrom approximation of the kernel, exact when ``x`` or
``x'`` is a landmark.  ``U_r S_r^{-1/2}`` differs from the symmetric whitening
``K_mm^{-1/2}`` by the rotation ``U_r``, which changes neither the Gram matrix of the
features nor any linear model's predictions on them, and has ``r <= m`` columns only.

The kernel is the Gaussian ``k(x, x') = exp(-||x - x'||^2 / (2 sigma^2))``.  The landmarks
are drawn out of core by :func:`ooc_kernels.parallel.sampling.sample_dictionary`.

Cost: building the basis is one ``m x m`` eigendecomposition (``O(m^3)``); the map of
``n`` rows in ``d`` dimensions is two matrix products, ``O(n m (d + r))`` flops, in
float64 through BLAS.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.features.nystroem import FixedNystromBasis
>>> X = np.random.default_rng(0).uniform(-1, 1, size=(6, 2))
>>> basis = FixedNystromBasis(X, bandwidth=1.0)
>>> Phi = basis.transform(X)
>>> Phi.shape
(6, 6)
>>> from ooc_kernels.features.rbf import rbf_kernel
>>> bool(np.allclose(Phi @ Phi.T, rbf_kernel(X, X, 1.0)))   # exact on the landmarks
True
"""

from __future__ import annotations

from numbers import Real

import numpy as np

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels.exceptions import InvalidDataError, ValidationError
from ooc_kernels.features.rbf import rbf_kernel

__all__ = ["FixedNystromBasis", "RCOND", "TILE_ROWS", "gaussian_cross_kernel"]

#: Eigenvalues of ``K_mm`` at or below ``RCOND * max eigenvalue`` are dropped: the
#: eigenvalues of a Gram matrix are computed to about ``m * eps * max eigenvalue``, so
#: directions below ``1e-10`` of the largest carry no information, only rounding.
RCOND = 1e-10

#: Rows of ``X`` whose kernel values against the landmarks are computed at once.
TILE_ROWS = 4096


def gaussian_cross_kernel(X, D, bandwidth: float) -> np.ndarray:
    """``exp(-||x_i - d_j||^2 / (2 sigma^2))`` for every row of ``X`` and of ``D``, in
    float64, by matrix products (``||x||^2 + ||d||^2 - 2 x.d``, clipped at 0).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    D : ndarray of shape (m, d)
    bandwidth : float
        ``sigma``.

    Returns
    -------
    ndarray of shape (n, m)

    Examples
    --------
    >>> import numpy as np
    >>> K = gaussian_cross_kernel(np.array([[0.0], [1.0]]), np.array([[0.0]]), 1.0)
    >>> np.round(K.ravel(), 4).tolist()
    [1.0, 0.6065]
    """
    X = np.asarray(X, dtype=np.float64)  # one tile of a chunk, or the dictionary
    D = np.asarray(D, dtype=np.float64)  # the dictionary
    sq = np.einsum("ij,ij->i", X, X)[:, None] + np.einsum("ij,ij->i", D, D)[None, :]
    sq -= 2.0 * (X @ D.T)
    np.maximum(sq, 0.0, out=sq)
    sq *= -0.5 / (bandwidth * bandwidth)
    return np.exp(sq, out=sq)


class FixedNystromBasis:
    """Nystrom features of a fixed dictionary for the Gaussian kernel (module docstring).

    Parameters
    ----------
    dictionary : array_like of shape (m, d)
        The points ``d_j`` (finite; rows may repeat: the floor drops the directions they
        duplicate).
    bandwidth : float
        ``sigma`` of ``exp(-||x - x'||^2 / (2 sigma^2))``.
    rcond : float, default=RCOND
        Eigenvalues of ``K_mm`` at or below ``rcond`` times the largest are dropped.

    Attributes
    ----------
    dictionary : ndarray of shape (m, d)
    components : ndarray of shape (m, n_components)
        ``U_r S_r^{-1/2}``: ``transform(X) = K(X, D) @ components``.
    eigenvalues : ndarray of shape (n_components,)
        The kept eigenvalues ``S_r`` of ``K_mm``, decreasing.
    n_components : int
        ``r``, the rank of ``K_mm`` at the floor (``<= m``).
    n_features_in : int
    """

    def __init__(self, dictionary, bandwidth: float, rcond: float = RCOND):
        D = np.array(dictionary, dtype=np.float64, ndmin=2, copy=True)  # m rows: small
        if D.ndim != 2 or D.shape[0] < 1 or D.shape[1] < 1:
            raise ValidationError(
                f"the Nystrom dictionary must be a non-empty 2-D array of points, got shape "
                f"{D.shape}; pass an (m, d) array with m >= 1.")
        bad = np.flatnonzero(~np.isfinite(D).all(axis=1))
        if bad.size:
            raise InvalidDataError(
                f"the Nystrom dictionary has NaN or inf in row {int(bad[0])} (of "
                f"{bad.size} such rows); pass finite points.")
        if isinstance(bandwidth, bool) or not isinstance(bandwidth, Real) \
                or not np.isfinite(bandwidth) or bandwidth <= 0:
            raise ValidationError(
                f"bandwidth must be a positive finite number (sigma in exp(-||x-x'||^2 / "
                f"(2 sigma^2))), got {bandwidth!r}.")
        if isinstance(rcond, bool) or not isinstance(rcond, Real) or not 0 <= rcond < 1:
            raise ValidationError(f"rcond must be a number in [0, 1), got {rcond!r}.")
        self.dictionary = D
        self.bandwidth = float(bandwidth)
        self.rcond = float(rcond)
        with single_threaded_blas():   # the same basis wherever it is built
            s, U = np.linalg.eigh(rbf_kernel(D, D, self.bandwidth))
        order = np.argsort(s)[::-1]
        s, U = s[order], U[:, order]
        keep = s > self.rcond * s[0]
        self.eigenvalues = s[keep]
        self.components = U[:, keep] / np.sqrt(s[keep])

    @property
    def n_components(self) -> int:
        return int(self.components.shape[1])

    @property
    def n_features_in(self) -> int:
        return int(self.dictionary.shape[1])

    def transform(self, X) -> np.ndarray:
        """``phi(X) = K(X, D) U_r S_r^{-1/2}``, shape (n, n_components), float64, by tiles
        of :data:`TILE_ROWS` rows (memory: the result plus one ``(TILE_ROWS, m)`` tile)."""
        X = np.asarray(X)  # one chunk
        if X.ndim != 2 or X.shape[1] != self.n_features_in:
            raise ValidationError(
                f"X has shape {X.shape}, but the Nystrom dictionary has "
                f"{self.n_features_in} features; pass rows of {self.n_features_in} columns.")
        out = np.empty((X.shape[0], self.n_components))
        for lo in range(0, X.shape[0], TILE_ROWS):
            tile = gaussian_cross_kernel(X[lo:lo + TILE_ROWS], self.dictionary,
                                         self.bandwidth)
            np.matmul(tile, self.components, out=out[lo:lo + TILE_ROWS])
        return out

    def __repr__(self) -> str:
        return (f"FixedNystromBasis(m={self.dictionary.shape[0]}, "
                f"n_components={self.n_components}, bandwidth={self.bandwidth:.6g})")
