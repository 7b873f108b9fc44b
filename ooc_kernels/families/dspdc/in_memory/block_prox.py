"""Block proximal maps and conjugates for block DSPDC (``docs/specs/dspdc.md`` §4.1-4.3, 7.3).

Block DSPDC (:mod:`ooc_kernels.families.dspdc.in_memory.blocks`) calls two kinds of objects:

* a **regularizer block** ``g_j`` on one primal block ``x_j`` (a flat vector; a ``d x d``
  matrix block is its row-major ``ravel``), with ``strong_convexity``, ``value(x)``,
  ``prox(v, tau) = argmin_a g_j(a) + ||a - v||^2 / (2 tau)`` and the conjugate
  ``conjugate(w) = sup_a <w, a> - g_j(a)``;
* a **loss** over the dual coordinates, with ``gamma`` (``phi*`` is ``gamma``-strongly
  convex), ``value(z, rows)`` (``sum phi_r(z_r)``), ``conjugate(beta, rows)`` and
  ``prox_conjugate(v, eta, rows) = argmin_beta eta sum phi_r*(beta_r) + ||beta - v||^2 / 2``,
  where ``rows`` are the dual coordinates the values belong to (their labels).

:class:`L2Block` is ``lam/2 ||x||^2``; :class:`PSDBlock` is
``lam/2 ||X - C||_F^2 + <L, X> + indicator(X PSD)`` (``C = 0, L = 0``: the matrix risk block
of (30); the MT-LMNN blocks of (35) set ``L = C_j / n`` and, for the shared block,
``C = I``); :class:`SeparableLoss` is a coordinate-wise DSPDC loss (squared, smoothed hinge,
logistic) through the NumPy twins of :mod:`ooc_kernels.families.dspdc.kernels`.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dspdc.in_memory.block_prox import PSDBlock, psd_projection
>>> psd_projection(np.array([[1.0, 2.0], [0.0, 1.0]])).round(3).tolist()   # sym: eig 2, 0
[[1.0, 1.0], [1.0, 1.0]]
>>> g = PSDBlock(lam=1.0, d=2)
>>> g.prox(np.array([1.0, 0.0, 0.0, -1.0]), tau=1.0).tolist()      # (diag(1, 0)) / 2
[0.5, 0.0, 0.0, 0.0]
"""

from __future__ import annotations

import math

import numpy as np

from ooc_kernels.losses import loss_by_id
from ooc_kernels.losses.reference import dual_prox_ref, loss_conjugate_ref, loss_value_ref
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dspdc.params import loss_gamma, loss_id

__all__ = ["sym", "psd_projection", "L2Block", "PSDBlock", "SeparableLoss"]

#: Relative tolerance under which a matrix counts as symmetric PSD in :meth:`PSDBlock.value`
#: (the projections themselves are exactly symmetric; eigenvalues of ``-1e-16`` remain).
PSD_RTOL = 1e-9


def _positive(name, value):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValidationError(f"{name} must be a real number; got {value!r}") from None
    if not (math.isfinite(v) and v > 0.0):
        raise ValidationError(f"{name} must be finite and > 0; got {value!r}")
    return v


def sym(M):
    """The symmetric part ``(M + M^T) / 2`` of a square matrix.

    Parameters
    ----------
    M : array_like (d, d)

    Returns
    -------
    ndarray (d, d)

    Examples
    --------
    >>> sym([[0.0, 2.0], [0.0, 0.0]]).tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    """
    M = np.asarray(M, dtype=np.float64)
    return 0.5 * (M + M.T)


def psd_projection(M):
    """``Pi_PSD(sym(M))``: the nearest (Frobenius) symmetric PSD matrix to ``sym(M)``.

    One ``numpy.linalg.eigh`` of ``sym(M) = Q diag(w) Q^T``, then ``Q diag(max(w, 0)) Q^T``,
    symmetrized again so that the result is exactly symmetric.  For a symmetric ``X``,
    ``||X - M||_F^2 = ||X - sym(M)||_F^2 + ||M - sym(M)||_F^2``, so this is also the nearest
    PSD matrix to a non-symmetric ``M``.

    Parameters
    ----------
    M : array_like (d, d)

    Returns
    -------
    ndarray (d, d)

    Examples
    --------
    >>> psd_projection([[1.0, 0.0], [0.0, -3.0]]).tolist()
    [[1.0, 0.0], [0.0, 0.0]]
    """
    M = np.asarray(M, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValidationError(f"psd_projection needs a square matrix; got shape {M.shape}")
    w, Q = np.linalg.eigh(sym(M))
    R = (Q * np.maximum(w, 0.0)) @ Q.T
    return 0.5 * (R + R.T)


class L2Block:
    """``g(x) = lam/2 ||x||^2`` on one block.

    Parameters
    ----------
    lam : float
        ``> 0``; the strong-convexity modulus.

    Examples
    --------
    >>> g = L2Block(2.0)
    >>> g.prox(np.array([3.0]), tau=1.0).tolist(), float(g.conjugate(np.array([2.0])))
    ([1.0], 1.0)
    """

    def __init__(self, lam):
        self.lam = _positive("lam", lam)

    @property
    def strong_convexity(self):
        """``lam``."""
        return self.lam

    def value(self, x):
        """``lam/2 ||x||^2``."""
        x = np.asarray(x, dtype=np.float64)
        return 0.5 * self.lam * float(x.ravel() @ x.ravel())

    def prox(self, v, tau):
        """``v / (1 + lam tau)``."""
        return np.asarray(v, dtype=np.float64) / (1.0 + self.lam * tau)

    def conjugate(self, w):
        """``||w||^2 / (2 lam)``."""
        w = np.asarray(w, dtype=np.float64).ravel()
        return float(w @ w) / (2.0 * self.lam)

    def __repr__(self):
        return f"L2Block(lam={self.lam!r})"


class PSDBlock:
    """``g(X) = lam/2 ||X - C||_F^2 + <L, X> + indicator(X symmetric PSD)`` on a ``d x d`` block.

    The block is passed flat (``X.ravel()``, ``d^2`` values).  With ``V`` the ``d x d`` form
    of ``v``:

    * ``prox(v, tau) = Pi_PSD(sym(V + lam tau C - tau L)) / (1 + lam tau)`` (one ``eigh``);
      with ``C = 0, L = 0`` this is ``Pi_PSD(sym(V)) / (1 + lam tau)`` of ``docs/specs/dspdc.md``
      §7.3, and with ``V = X - tau W / n`` it is the (39) update of its §4.3;
    * ``conjugate(w) = ||Pi_+(sym(W - L) + lam C)||_F^2 / (2 lam) - lam/2 ||C||_F^2``.

    Parameters
    ----------
    lam : float
        ``> 0``; the strong-convexity modulus.
    d : int
        Matrix size.
    center : None, "identity" or array_like (d, d), optional
        ``C`` (symmetric); default 0.
    linear : array_like (d, d), optional
        ``L``; default 0.  Only its symmetric part matters on the PSD cone.

    Examples
    --------
    >>> g = PSDBlock(lam=0.5, d=2, center="identity")
    >>> g.value(np.eye(2).ravel())
    0.0
    >>> g.prox(np.eye(2).ravel(), tau=3.0).reshape(2, 2).tolist()    # I is the minimizer
    [[1.0, 0.0], [0.0, 1.0]]
    """

    def __init__(self, lam, d, *, center=None, linear=None):
        self.lam = _positive("lam", lam)
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
            raise ValidationError(f"d must be an integer >= 1; got {d!r}")
        self.d = int(d)
        if isinstance(center, str):
            if center != "identity":
                raise ValidationError(f"center must be None, 'identity' or a {d}x{d} array; "
                                      f"got {center!r}")
            center = np.eye(self.d)
        self.center = self._matrix("center", center)
        if self.center is not None and not np.allclose(self.center, self.center.T, rtol=0.0,
                                                       atol=1e-12):
            raise ValidationError("center must be a symmetric matrix; pass sym(C)")
        self.linear = self._matrix("linear", linear)

    def _matrix(self, name, M):
        if M is None:
            return None
        M = np.asarray(M, dtype=np.float64)
        if M.shape != (self.d, self.d) or not np.all(np.isfinite(M)):
            raise ValidationError(f"{name} must be a finite {self.d}x{self.d} array; got shape "
                                  f"{M.shape}")
        return M

    @property
    def strong_convexity(self):
        """``lam``."""
        return self.lam

    def _square(self, v, what):
        v = np.asarray(v, dtype=np.float64)
        if v.size != self.d * self.d:
            raise ValidationError(f"{what} must hold d^2 = {self.d * self.d} values (a "
                                  f"{self.d}x{self.d} block); got {v.size}")
        return v.reshape(self.d, self.d)

    def value(self, x):
        """``g(X)``; ``inf`` unless ``X`` is symmetric PSD (relative tolerance ``1e-9``)."""
        X = self._square(x, "x")
        scale = max(1.0, float(np.abs(X).max()))
        if np.abs(X - X.T).max() > PSD_RTOL * scale or np.linalg.eigvalsh(sym(X))[0] < \
                -PSD_RTOL * scale:
            return math.inf
        R = X if self.center is None else X - self.center
        val = 0.5 * self.lam * float(np.sum(R * R))
        if self.linear is not None:
            val += float(np.sum(self.linear * X))
        return val

    def prox(self, v, tau):
        """``argmin_{X PSD} g(X) + ||X - V||_F^2 / (2 tau)`` (flat, like ``v``)."""
        tau = _positive("tau", tau)
        M = self._square(v, "v").copy()
        if self.center is not None:
            M += self.lam * tau * self.center
        if self.linear is not None:
            M -= tau * self.linear
        return (psd_projection(M) / (1.0 + self.lam * tau)).ravel()

    def conjugate(self, w):
        """``sup_{X PSD} <W, X> - g(X)``."""
        W = self._square(w, "w")
        G = sym(W if self.linear is None else W - self.linear)
        if self.center is not None:
            G = G + self.lam * self.center
        P = psd_projection(G)
        val = float(np.sum(P * P)) / (2.0 * self.lam)
        if self.center is not None:
            val -= 0.5 * self.lam * float(np.sum(self.center * self.center))
        return val

    def __repr__(self):
        extra = "" if self.center is None else ", center=..."
        extra += "" if self.linear is None else ", linear=..."
        return f"PSDBlock(lam={self.lam!r}, d={self.d}{extra})"


class SeparableLoss:
    """A coordinate-wise DSPDC loss ``phi_r(z) = phi(z; b_r)`` on the dual coordinates.

    Parameters
    ----------
    loss : {"squared", "smoothed_hinge", "logistic"}
        As :func:`ooc_kernels.families.dspdc.params.loss_id`.
    b : array_like (N,)
        One label per dual coordinate (``+-1`` for the margin losses).

    Examples
    --------
    >>> f = SeparableLoss("smoothed_hinge", [1.0, -1.0])
    >>> f.gamma, float(f.value(np.array([2.0, 0.0])))      # 0 + 1/2
    (1.0, 0.5)
    >>> f.prox_conjugate(np.array([-3.0, 0.2]), 1.0).tolist()   # clipped into b beta in [-1, 0]
    [-1.0, 0.6]
    """

    def __init__(self, loss, b):
        self.name = loss if isinstance(loss, str) else None
        self.id = loss_id(loss)
        self.gamma = loss_gamma(loss)
        b = np.asarray(b, dtype=np.float64).ravel()
        if not np.all(np.isfinite(b)):
            raise ValidationError("labels b must be finite")
        if loss_by_id(self.id).target == "binary" and not np.all(np.abs(b) == 1.0):
            raise ValidationError(f"the {loss} loss needs labels in {{-1, +1}}; got values "
                                  f"{np.unique(b)[:5].tolist()}; map them to -1/+1")
        self.b = b

    def _labels(self, rows):
        return self.b if rows is None else self.b[rows]

    def value(self, z, rows=None):
        """``sum_r phi(z_r; b_r)`` over ``rows`` (default: all coordinates)."""
        return float(np.sum(loss_value_ref(self.id, z, self._labels(rows))))

    def conjugate(self, beta, rows=None):
        """``sum_r phi*(beta_r; b_r)`` (``inf`` off the domain)."""
        return float(np.sum(loss_conjugate_ref(self.id, beta, self._labels(rows))))

    def prox_conjugate(self, v, eta, rows=None):
        """``argmin_beta eta sum_r phi*(beta_r; b_r) + ||beta - v||^2 / 2``."""
        # dual_prox_ref(c, y, b, sigma, n) maximizes c beta/n - phi*(beta)/n - (beta-y)^2/(2
        # sigma): with c = 0, y = v, sigma = eta, n = 1 that is this prox
        v = np.asarray(v, dtype=np.float64)
        return dual_prox_ref(self.id, 0.0, v, self._labels(rows), eta, 1.0)

    def __repr__(self):
        return f"SeparableLoss({self.name or self.id!r}, b=<{self.b.size} labels>)"
