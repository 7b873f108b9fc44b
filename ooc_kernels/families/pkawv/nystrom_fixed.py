"""The Nystrom embedding of a dictionary chosen beforehand: ``phi(x) = K_mm^{-1/2} k_m(x)``.

With the span of ``k(d_1, .), ..., k(d_m, .)`` as the approximation space (the paper's
"beforehand features", the fixed-embedding algorithm of its Appendix H.1 with
``g_j = k(d_j, .)`` and ``Q = K_mm``), the learner is linear ridge on

    ``phi(x) = S_r^{-1/2} U_r^T k_m(x)``,  ``k_m(x) = (k(d_j, x))_{j <= m}``,

where ``K_mm = U S U^T`` is the eigendecomposition of the dictionary's Gram matrix and
``U_r, S_r`` keep the eigenvalues above ``rcond * max(S)`` (a dictionary with repeated or
nearly repeated points has a rank-deficient ``K_mm``: the directions below the floor are
dropped instead of being inverted).  Whatever the floor, ``phi(x)^T phi(x') = k_m(x)^T
K_mm^+ k_m(x')`` with the pseudo-inverse at that floor: the Nystrom approximation of the
kernel, so ridge regression on ``phi`` is kernel ridge regression restricted to the span of
the dictionary, and with every training row in the dictionary it is exact kernel ridge
regression.  ``S_r^{-1/2} U_r^T`` differs from the symmetric ``K_mm^{-1/2}`` of the paper's
eq. (37) by the rotation ``U_r``, which changes neither the Gram matrix of the features nor
any ridge prediction, and has ``r <= m`` columns only.

The kernel is the Gaussian ``k(x, x') = exp(-||x - x'||^2 / (2 sigma^2))``.

:func:`sample_dictionary` chooses the dictionary out of core: ``m`` rows drawn uniformly
without replacement among all the rows of a chunked array, reading only the chunks that
hold a chosen row, one task each, each returning its few rows.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.pkawv.nystrom_fixed import FixedNystromBasis
>>> X = np.random.default_rng(0).uniform(-1, 1, size=(6, 2))
>>> basis = FixedNystromBasis(X, bandwidth=1.0)
>>> Phi = basis.transform(X)
>>> Phi.shape
(6, 6)
>>> from ooc_kernels.features.rbf import rbf_kernel
>>> bool(np.allclose(Phi @ Phi.T, rbf_kernel(X, X, 1.0)))   # exact on the dictionary
True
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import dask
import numpy as np

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels.exceptions import InvalidDataError, ValidationError
from ooc_kernels.features.rbf import rbf_kernel
from ooc_kernels.parallel.scheduler import local_scheduler

__all__ = ["FixedNystromBasis", "RCOND", "gaussian_cross_kernel", "sample_dictionary"]

#: Eigenvalues of ``K_mm`` at or below ``RCOND * max eigenvalue`` are dropped: the
#: eigenvalues of a Gram matrix are computed to about ``m * eps * max eigenvalue``, so
#: directions below ``1e-10`` of the largest carry no information, only rounding.
RCOND = 1e-10

#: Rows of ``X`` whose kernel values against the dictionary are computed at once.
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


def _take(block, rows):
    return np.asarray(block)[rows]  # one chunk in, a few of its rows out


def sample_dictionary(X, n_components: int, *, seed: int, scheduler: Any = None,
                      on_invalid: str = "error") -> np.ndarray:
    """``min(n_components, n)`` rows of ``X`` drawn uniformly without replacement, in
    storage order, reading only the chunks that hold a drawn row.

    Parameters
    ----------
    X : dask.array.Array or ndarray of shape (n, d)
        Chunked along the rows (a NumPy array is one chunk).
    n_components : int
        Rows to draw (all rows when ``n <= n_components``).
    seed : int
        Seed of the draw (the same seed draws the same rows whatever the chunking).
    scheduler : optional
        Where the chunk tasks run (see :func:`~ooc_kernels.parallel.scheduler.local_scheduler`).
    on_invalid : {"error", "skip"}, default="error"
        A drawn row with NaN or inf raises (``"error"``) or is left out (``"skip"``: the
        dictionary has fewer rows).

    Returns
    -------
    ndarray of shape (min(n_components, n), d), float64

    Raises
    ------
    ValidationError
        ``X`` has no rows, ``n_components`` is not a positive integer, or every drawn row
        was left out.
    InvalidDataError
        A drawn row has NaN or inf (with ``on_invalid="error"``).

    Examples
    --------
    >>> import dask.array as da
    >>> X = da.arange(40.0, chunks=8).reshape(20, 2)
    >>> D = sample_dictionary(X, 5, seed=0, scheduler="sync")
    >>> D.shape, bool((D[:, 1] - D[:, 0] == 1).all())
    ((5, 2), True)
    """
    if isinstance(n_components, bool) or not isinstance(n_components, Integral) \
            or n_components < 1:
        raise ValidationError(
            f"n_components must be a positive integer, got {n_components!r}.")
    n = int(X.shape[0])
    if n == 0:
        raise ValidationError("cannot draw a Nystrom dictionary from data with no rows; "
                              "pass a non-empty X.")
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(0x4E59,)))
    rows = np.arange(n) if n <= n_components else \
        np.sort(rng.choice(n, size=int(n_components), replace=False))
    if isinstance(X, np.ndarray):
        D = np.asarray(X[rows], dtype=np.float64)
    else:
        starts = np.concatenate([[0], np.cumsum(X.chunks[0])])
        chunk_of = np.searchsorted(starts, rows, side="right") - 1
        blocks = X.to_delayed(optimize_graph=True).ravel()
        used = np.unique(chunk_of)
        parts = [dask.delayed(_take)(blocks[c], rows[chunk_of == c] - starts[c])
                 for c in used]
        D = np.concatenate(dask.compute(*parts, scheduler=local_scheduler(scheduler)))
        D = np.asarray(D, dtype=np.float64)
    finite = np.isfinite(D).all(axis=1)
    if on_invalid == "skip":
        D = D[finite]
        if not len(D):
            raise ValidationError(
                f"every one of the {len(rows)} rows drawn for the Nystrom dictionary has NaN "
                "or inf; give X finite rows.")
    elif not finite.all():
        raise InvalidDataError(
            f"row {int(rows[np.flatnonzero(~finite)[0]])} of X (drawn for the Nystrom "
            "dictionary) has NaN or inf; remove or impute the non-finite rows, or set "
            "on_invalid='skip'.")
    return D
