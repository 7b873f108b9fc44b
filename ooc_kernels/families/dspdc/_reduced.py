"""Factorized data ``A = U V`` with every primal coordinate updated (``q = p``) and an l2
regularizer (``l1_ratio = 0``): Algorithm 2 run in the row space of ``V``, ``O(r)`` per
iteration instead of ``O(d p)``.

With ``G = V V^T = Q diag(e) Q^T`` (``r`` positive eigenvalues), the map
``x = V^T Q e^{-1/2} w`` is an isometry from ``R^r`` onto the row space of ``V``, and
``a_i^T x = u_i^T V V^T Q e^{-1/2} w = (u_i^T Q e^{1/2}) w``: the rows ``u_i^T Q e^{1/2}``
(``r`` numbers) see ``w`` as the rows ``a_i`` see ``x``.  When ``q = p`` and ``lam1 = 0``,
each primal step of Algorithm 2 is linear,

    x <- (x - tau (V^T ubar / n - s)) / (1 + tau lam2),

and maps the row space into itself (``V^T ubar`` and the tilt ``s`` of a local problem,
built from ``A^T y = V^T U^T y``, lie in it), while the part of ``x`` orthogonal to it is
only divided by ``1 + tau lam2`` per iteration.  So Algorithm 2 on ``(U, V)`` and the dense
Algorithm 1 on the ``r`` reduced columns, with the same uniforms, the same ``theta``,
``tau``, ``sigma`` and the orthogonal part decayed in closed form, produce the same duals
and the same primal iterates (to rounding): the same method, the same certificate, and no
pass over ``p`` inside the loop.

With an intercept the standardized ``V`` the solver sees carries the shift in its last row,
``[U, c] [[V / s, 0], [-(mean / s) / c, 1]]`` with ``mean = mean(U) V``: outside its last
entry that row is the combination of the rows above with the weights ``-mean(U) / c``, so
``V V^T`` has a condition number growing as the fourth power of ``mean(U)`` against the
spread, and for columns of ``A`` whose mean is large (about ``2e13`` at a mean of 1,000 for
unit spreads) its eigenvectors are lost to rounding and the intercept's direction falls
below :data:`RANK_TOL`.  The basis is taken from the centred factors instead
(:func:`centred_factors`): ``[U - t, c]`` and ``V`` with the shift row cleared,
``t V / s = mean / s`` (``t = mean(U)`` when ``V`` has full row rank), the same products
``a_i`` and the same row space, with the conditioning of ``V / s`` alone.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dspdc._reduced import row_space_basis
>>> V = np.array([[1.0, 0.0, 1.0], [2.0, 0.0, 2.0]])         # rank 1
>>> B, root = row_space_basis(V)
>>> B.shape, bool(np.allclose((V.T @ B).T @ (V.T @ B), np.eye(1)))   # orthonormal x-basis
((2, 1), True)
"""

from __future__ import annotations

import numpy as np

__all__ = ["row_space_basis", "centred_factors", "reduced_applies", "data_boost",
           "ReducedRows"]

#: Eigenvalues of ``V V^T`` below this fraction of the largest are treated as zero.
RANK_TOL = 1e-12
#: The strong convexity the data add may raise the step boost up to this factor times the
#: configuration's ``step_boost`` (:func:`data_boost`).
DATA_BOOST_CAP = 100.0


def row_space_basis(V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(B, R)`` with ``B = Q e^{-1/2}`` (``d x r``: ``x = V^T B w``) and
    ``R = Q e^{1/2}`` (``d x r``: the reduced rows are ``U R``), from the eigenvalues
    ``e > RANK_TOL max(e)`` of ``V V^T``."""
    V = np.asarray(V, dtype=np.float64)
    e, Q = np.linalg.eigh(V @ V.T)
    keep = e > RANK_TOL * max(float(e[-1]), 0.0)
    if not keep.any():            # V = 0: every row is 0, one dummy direction keeps shapes
        keep = np.zeros_like(keep)
        keep[-1] = True
        e = np.ones_like(e)
    Q, e = Q[:, keep], e[keep]
    return Q / np.sqrt(e), Q * np.sqrt(e)


def centred_factors(rows: np.ndarray, V: np.ndarray,
                    intercept_scaling: float) -> tuple[np.ndarray, np.ndarray]:
    """``(rows', V')`` with ``rows' V' = rows V`` and the intercept's row of ``V'`` zero
    outside the intercept's column: the shift moved from ``V`` into the rows.

    With the intercept's column ``c`` last in ``rows`` and the shift row ``h`` (the last row
    of ``V`` without its last entry), ``t`` solves ``t V_top = -c h`` (least squares:
    ``V_top`` is ``V`` without its last row and column), ``rows' = [U - t, c]`` and ``V'``
    is ``V`` with ``h`` set to 0.  ``V' = T^{-1} V`` for the invertible ``T = [[I, 0],
    [-t / c, 1]]``, so ``V'`` has the row space of ``V``.  Without an intercept
    (``intercept_scaling == 0``) or a shift (``h == 0``) the arguments are returned as they
    are.

    Parameters
    ----------
    rows : ndarray (n_k, d + 1)
        ``[U, c]``: a task's ``U`` and the intercept's constant column.
    V : ndarray (d + 1, p + 1)
        The augmented, standardized ``V`` (:func:`~ooc_kernels.families.dspdc._scaling.
        model_V`).
    intercept_scaling : float
        ``c``; 0 without an intercept.

    Returns
    -------
    rows', V' : ndarray
        float64, of the shapes of ``rows`` and ``V``.

    Examples
    --------
    >>> import numpy as np
    >>> U = np.array([[1000.0, 1001.0], [1002.0, 999.0], [1001.0, 1003.0]])
    >>> V = np.array([[1.0, 2.0, 0.0], [0.5, -1.0, 0.0], [0.0, 0.0, 1.0]])
    >>> V[2, :2] = -U.mean(0) @ V[:2, :2]                  # the shift row, c = 1
    >>> rows = np.column_stack([U, np.ones(3)])
    >>> rows2, V2 = centred_factors(rows, V, 1.0)
    >>> bool(np.allclose(rows2 @ V2, rows @ V)), V2[2].tolist()   # the same products
    (True, [0.0, 0.0, 1.0])
    >>> bool(np.allclose(rows2[:, :2], U - U.mean(0)))            # V has full row rank
    True
    """
    rows = np.asarray(rows, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    if not intercept_scaling or not np.any(V[-1, :-1]):
        return rows, V
    t = np.linalg.lstsq(V[:-1, :-1].T, -float(intercept_scaling) * V[-1, :-1], rcond=None)[0]
    cleared = V.copy()
    cleared[-1, :-1] = 0.0
    return rows - np.append(t, 0.0), cleared     # c - 0 is c: the intercept's column as is


def reduced_applies(config) -> bool:
    """Whether a task of this configuration runs in the row space of ``V``: factorized
    data, every primal coordinate per iteration (``q = p``) and no l1 part."""
    return bool(config.factorized and int(config.q) >= int(config.n_features)
                and config.lam1 == 0.0)


def data_boost(step_boost: float, lam_local: float, mu: float) -> float:
    """The step boost of a squared-loss task whose local problem is ``lam_local +
    mu``-strongly convex (``mu`` the smallest eigenvalue of ``U_k^T W U_k / n_k`` in the
    row space: the data's own strong convexity, Wang and Xiao 2017):
    ``max(step_boost, min((lam_local + mu) / lam_local, DATA_BOOST_CAP * step_boost))``,
    and ``step_boost`` itself once the stall rule has brought it to 1 (the theorems' steps).

    >>> data_boost(30.0, 1e-3, 0.099), data_boost(30.0, 1e-3, 10.0)   # (1e-3 + mu) / 1e-3
    (100.0, 3000.0)
    >>> data_boost(30.0, 1e-3, 0.0), data_boost(1.0, 1e-3, 10.0)      # no gain; theorems' steps
    (30.0, 1.0)
    """
    if step_boost <= 1.0:
        return step_boost
    return max(step_boost, min((lam_local + max(mu, 0.0)) / lam_local,
                               DATA_BOOST_CAP * step_boost))


class ReducedRows:
    """One task's change of variables: its rows ``U_k R``, and the maps of its primal
    iterate into and out of the reduced space.

    Parameters
    ----------
    rows : ndarray (n_k, d)
        The task's ``U`` (with the intercept column when there is one).
    V : ndarray (d, p)
        The augmented, standardized ``V`` of the problem the solver sees.
    intercept_scaling : float, default 0
        The intercept's constant ``c`` (the last column of ``rows``), 0 without one.  With
        one, the basis is taken from the centred factors (:func:`centred_factors`), which
        leave the products ``a_i`` and the row space as they are.
    """

    def __init__(self, rows: np.ndarray, V: np.ndarray, intercept_scaling: float = 0.0):
        self.V = V
        rows, V = centred_factors(rows, V, intercept_scaling)
        self.B, R = row_space_basis(V)
        self.rows = np.ascontiguousarray(rows @ R)
        self._VB = V.T @ self.B                                    # (p, r), orthonormal

    def smallest_curvature(self, weights) -> float:
        """The smallest eigenvalue of ``U_k^T W U_k / n_k`` in the row space of ``V``."""
        R = self.rows if weights is None else np.sqrt(weights)[:, None] * self.rows
        return float(np.linalg.eigvalsh(R.T @ R / len(R))[0])

    def split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(w, x_perp)``: ``x = V^T B w + x_perp`` with ``x_perp`` orthogonal to the row
        space of ``V``."""
        w = self._VB.T @ x
        return np.ascontiguousarray(w), x - self._VB @ w

    def project(self, s: np.ndarray) -> np.ndarray:
        """The reduced tilt ``(V^T B)^T s`` of a tilt ``s`` in the row space."""
        return np.ascontiguousarray(self._VB.T @ s)

    def join(self, w: np.ndarray, x_perp: np.ndarray, decay: float) -> np.ndarray:
        """``V^T B w + decay x_perp``."""
        return self._VB @ w + decay * x_perp
