"""DSPDC written out from the paper in plain NumPy: the oracle the numba kernels are tested on.

Algorithm 1 of Yu, Lin, Yang (``docs/specs/dspdc.md`` §2.1) on an in-memory ``A``, forming
``ybar`` and ``xbar`` explicitly as vectors (``O(n + p)`` per iteration: readability first),
with the losses, conjugates and proxes written again from their definitions (the
logistic dual step by bisection in ``w = b beta``, not by the kernels' Newton on another
variable), and nothing imported from :mod:`ooc_kernels._jit`.

The random stream (shared with the kernels so that iterates can be compared):
:func:`dspdc_uniforms` draws ``np.random.default_rng(seed).random((n_iter, m + q))``; row
``t`` holds iteration ``t``'s ``m`` row uniforms, then its ``q`` column uniforms.  A subset is
drawn from uniforms by Robert Floyd's algorithm: for ``k = 0 .. m-1`` and
``j = n - m + k``, ``t = min(floor(u_k (j + 1)), j)``; take ``t`` unless already taken, else
``j``.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dspdc.in_memory.paper import dspdc_reference, duality_gap
>>> rng = np.random.default_rng(0)
>>> A = rng.normal(size=(20, 4)); b = np.sign(A @ np.ones(4))
>>> x, y = dspdc_reference(A, b, loss="logistic", lam1=0.0, lam2=0.1, m=2, q=2, theta=1.97,
...                        tau=0.33, sigma=1.15, n_iter=3000, seed=0)
>>> duality_gap(A, b, x, y, loss="logistic", lam1=0.0, lam2=0.1) < 1e-9
True
"""

from __future__ import annotations

import numpy as np

from ooc_kernels.exceptions import ValidationError

__all__ = ["dspdc_uniforms", "floyd_subset", "dspdc_reference", "dspdc_factorized_reference",
           "primal_value", "dual_value", "duality_gap"]

_NAMES = {"squared": "squared", 0: "squared", "smoothed_hinge": "smoothed_hinge",
          1: "smoothed_hinge", "logistic": "logistic", 2: "logistic"}


def _loss_name(loss):
    key = int(loss) if isinstance(loss, (int, np.integer)) and not isinstance(loss, bool) \
        else loss
    try:
        return _NAMES[key]
    except (KeyError, TypeError):
        raise ValidationError(f"unknown DSPDC loss {loss!r}; use 'squared', 'smoothed_hinge', "
                              "'logistic' (or 0, 1, 2)") from None


def _labels(loss, b):
    b = np.asarray(b, dtype=np.float64)
    if loss != "squared" and not np.all(np.abs(b) == 1.0):
        raise ValidationError(f"the {loss} loss needs labels in {{-1, +1}}; got values "
                              f"{np.unique(b)[:5].tolist()}")
    return b


def dspdc_uniforms(seed, n_iter, m, q):
    """The uniforms of ``n_iter`` iterations: ``(row_uniforms (T, m), col_uniforms (T, q))``.

    Parameters
    ----------
    seed : int or numpy.random.Generator
    n_iter, m, q : int

    Returns
    -------
    row_uniforms, col_uniforms : ndarray

    Examples
    --------
    >>> r, c = dspdc_uniforms(0, 5, 2, 3)
    >>> r.shape, c.shape
    ((5, 2), (5, 3))
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    u = rng.random((int(n_iter), int(m) + int(q)))
    return u[:, :m].copy(), u[:, m:].copy()


def floyd_subset(n, m, uniforms):
    """The ``m``-subset of ``range(n)`` that Robert Floyd's algorithm draws from ``uniforms``.

    Parameters
    ----------
    n, m : int
    uniforms : array_like (m,)
        In ``[0, 1)``.

    Returns
    -------
    ndarray (m,) int64
        In the order of the steps.

    Examples
    --------
    >>> floyd_subset(10, 3, [0.5, 0.99, 0.0]).tolist()
    [4, 8, 0]
    """
    chosen = []
    for k in range(m):
        j = n - m + k
        t = min(int(np.floor(uniforms[k] * (j + 1))), j)
        chosen.append(j if t in chosen else t)
    return np.array(chosen, dtype=np.int64)


# --------------------------------------------------------------------------------------
# losses, conjugates, proxes (from their definitions)
# --------------------------------------------------------------------------------------

def _phi(loss, z, b):
    if loss == "squared":
        return (z - b) ** 2 / 2.0
    if loss == "smoothed_hinge":
        s = b * z
        return np.piecewise(s, [s >= 1.0, s <= 0.0], [0.0, lambda v: 0.5 - v,
                                                      lambda v: (1.0 - v) ** 2 / 2.0])
    return np.logaddexp(0.0, -b * z)


def _phi_conj(loss, beta, b):
    """``phi*(beta)``, ``+inf`` off the domain ``b beta in [-1, 0]`` of the margin losses."""
    if loss == "squared":
        return beta ** 2 / 2.0 + b * beta
    from scipy.special import xlogy

    w = b * beta
    feasible = (w >= -1.0) & (w <= 0.0)
    wc = np.clip(w, -1.0, 0.0)
    if loss == "smoothed_hinge":
        val = wc + wc ** 2 / 2.0
    else:
        val = xlogy(-wc, -wc) + xlogy(1.0 + wc, 1.0 + wc)
    return np.where(feasible, val, np.inf)


def _dual_step(loss, c, y, b, sigma, n):
    """``argmax_beta c beta / n - phi*(beta) / n - (beta - y)^2 / (2 sigma)``, vectorised."""
    if loss in ("squared", "smoothed_hinge"):
        # both conjugates are beta^2/2 + b beta (on b beta in [-1, 0] for the smoothed
        # hinge): setting the derivative c/n - (beta + b)/n - (beta - y)/sigma to zero
        beta = (n * y + sigma * (c - b)) / (n + sigma)
        if loss == "squared":
            return beta
        # a strongly concave 1-D quadratic on an interval: the maximizer is the projection
        return b * np.minimum(np.maximum(b * beta, -1.0), 0.0)
    # logistic: with w = b beta in (-1, 0) the derivative times b is
    # f(w) = b c / n - log((1 + w)/(-w)) / n - (w - b y) / sigma, strictly decreasing from
    # +inf (w -> -1) to -inf (w -> 0): bisection on (-1, 0)
    lo = np.full(np.shape(c), -1.0)
    hi = np.zeros(np.shape(c))
    for _ in range(1100):
        mid = 0.5 * (lo + hi)
        if np.all((mid == lo) | (mid == hi)):  # adjacent floats everywhere
            break
        f = b * c / n - (np.log1p(mid) - np.log(-mid)) / n - (mid - b * y) / sigma
        lo = np.where(f > 0.0, mid, lo)
        hi = np.where(f > 0.0, hi, mid)
    w = 0.5 * (lo + hi)
    w = np.minimum(np.maximum(w, np.nextafter(-1.0, 0.0)), -np.finfo(np.float64).tiny)
    return b * w


def _primal_step(v, tau, lam1, lam2):
    """``argmin_a lam1 |a| + lam2 a^2 / 2 + (a - v)^2 / (2 tau)``, vectorised."""
    # stationarity: (a - v)/tau + lam2 a + lam1 sign(a) = 0 for a != 0; a = 0 iff |v| <= tau lam1
    shrunk = np.where(v > tau * lam1, v - tau * lam1, np.where(v < -tau * lam1, v + tau * lam1,
                                                               0.0))
    return shrunk / (1.0 + tau * lam2)


# --------------------------------------------------------------------------------------
# Algorithm 1
# --------------------------------------------------------------------------------------

def _run(rows_times, cols_times_ybar, n, p, b, *, loss, lam1, lam2, m, q, theta, tau, sigma,
         n_iter, seed, n_total, x0, y0, callback, shift, uniforms=None):
    loss = _loss_name(loss)
    b = _labels(loss, b)
    if not (1 <= m <= n and 1 <= q <= p):
        raise ValidationError(f"need 1 <= m <= n = {n} and 1 <= q <= p = {p}; got m={m}, q={q}")
    N = n if n_total is None else n_total
    if N < n:
        raise ValidationError(f"n_total={n_total} must be >= n = {n}")
    if uniforms is None:
        row_u, col_u = dspdc_uniforms(seed, n_iter, m, q)
    else:  # a given stream (the chunk algorithm's task uniforms)
        row_u, col_u = (np.asarray(u, dtype=np.float64) for u in uniforms)
        if row_u.shape != (n_iter, m) or col_u.shape != (n_iter, q):
            raise ValidationError(
                f"uniforms must have shapes ({n_iter}, {m}) and ({n_iter}, {q}); got "
                f"{row_u.shape} and {col_u.shape}"
            )
    x = np.zeros(p) if x0 is None else np.array(x0, dtype=np.float64)
    y = np.zeros(n) if y0 is None else np.array(y0, dtype=np.float64)
    xbar = x.copy()
    s = np.zeros(p) if shift is None else np.asarray(shift, dtype=np.float64)
    for t in range(n_iter):
        I = floyd_subset(n, m, row_u[t])
        J = floyd_subset(p, q, col_u[t])
        # (10) dual step on I with the previous xbar
        y_new = y.copy()
        y_new[I] = _dual_step(loss, rows_times(I, xbar), y[I], b[I], sigma, N)
        # (11) dual extrapolation (n here is the size of the set I is drawn from)
        ybar = y + (n / m) * (y_new - y)
        # (12) primal step on J with the new ybar
        x_new = x.copy()
        # (the tilt -s_j a of the regularizer moves the prox centre by tau s_j)
        x_new[J] = _primal_step(x[J] - tau * cols_times_ybar(J, ybar) / N + tau * s[J], tau,
                                lam1, lam2)
        # (13) primal extrapolation, over all coordinates
        xbar = x + (theta + 1.0) * (x_new - x)
        x, y = x_new, y_new
        if callback is not None:
            callback(t + 1, x, y)
    return x, y


def dspdc_reference(A, b, *, loss, lam1, lam2, m, q, theta, tau, sigma, n_iter, seed,
                    n_total=None, x0=None, y0=None, callback=None, shift=None,
                    uniforms=None):
    """Algorithm 1 on an in-memory ``A``, literally.

    Parameters
    ----------
    A : array_like (n, p)
    b : array_like (n,)
        Labels (``+-1`` for the margin losses).
    loss : str or int
        ``"squared"`` (0), ``"smoothed_hinge"`` (1) or ``"logistic"`` (2).
    lam1, lam2 : float
        ``g_j(x) = lam2 x^2 / 2 + lam1 |x|``.
    m, q : int
        Dual and primal coordinates per iteration.
    theta, tau, sigma : float
    n_iter : int
    seed : int or numpy.random.Generator
        Source of :func:`dspdc_uniforms`.
    n_total : int, optional
        The ``n`` of the ``1/n`` inside both proxes when ``A`` is one chunk of a larger
        problem (default ``n``); the extrapolation factor stays ``n / m``.
    x0, y0 : array_like, optional
        Starting point (default zeros).
    callback : callable, optional
        ``callback(t, x, y)`` after every iteration ``t = 1 .. n_iter``.
    shift : array_like (p,), optional
        A linear tilt: ``g_j(x) = lam2 x^2 / 2 + lam1 |x| - shift_j x``.
    uniforms : tuple of ndarray, optional
        ``(row_uniforms (n_iter, m), col_uniforms (n_iter, q))`` instead of the stream of
        ``seed`` (to replay the iterations of a task of the chunk algorithm).

    Returns
    -------
    x : ndarray (p,)
    y : ndarray (n,)

    Examples
    --------
    >>> import numpy as np
    >>> A = np.eye(3); b = np.array([1.0, 2.0, 3.0])
    >>> x, y = dspdc_reference(A, b, loss="squared", lam1=0.0, lam2=1.0 / 3, m=3, q=3,
    ...                        theta=0.5, tau=1.0, sigma=1.0, n_iter=200, seed=0)
    >>> np.round(x, 6).tolist()                              # b / (1 + n lam2)
    [0.5, 1.0, 1.5]
    """
    A = np.asarray(A, dtype=np.float64)
    n, p = A.shape
    return _run(lambda I, xbar: A[I] @ xbar, lambda J, ybar: A[:, J].T @ ybar, n, p, b,
                loss=loss, lam1=lam1, lam2=lam2, m=m, q=q, theta=theta, tau=tau, sigma=sigma,
                n_iter=n_iter, seed=seed, n_total=n_total, x0=x0, y0=y0, callback=callback,
                shift=shift, uniforms=uniforms)


def dspdc_factorized_reference(U, V, b, *, loss, lam1, lam2, m, q, theta, tau, sigma, n_iter,
                               seed, n_total=None, x0=None, y0=None, callback=None,
                               shift=None):
    """Algorithm 1 on ``A = U V`` without forming ``A``: ``<A_i, xbar> = U_i (V xbar)`` and
    ``<A^j, ybar> = V^j . (U^T ybar)``, with ``xbar`` and ``ybar`` formed as vectors.

    Parameters
    ----------
    U : array_like (n, d)
    V : array_like (d, p)
    b, loss, lam1, lam2, m, q, theta, tau, sigma, n_iter, seed, n_total, x0, y0, callback, shift
        As :func:`dspdc_reference`.

    Returns
    -------
    x : ndarray (p,)
    y : ndarray (n,)

    Examples
    --------
    >>> import numpy as np
    >>> U = np.ones((4, 1)); V = np.ones((1, 2)); b = np.zeros(4)
    >>> x, y = dspdc_factorized_reference(U, V, b, loss=0, lam1=0.0, lam2=1.0, m=1, q=1,
    ...                                   theta=1.0, tau=0.5, sigma=0.5, n_iter=10, seed=0)
    >>> float(np.abs(x).max()), float(np.abs(y).max())          # already at the optimum 0
    (0.0, 0.0)
    """
    U = np.asarray(U, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    if U.ndim != 2 or V.ndim != 2 or U.shape[1] != V.shape[0]:
        raise ValidationError(f"U must be (n, d) and V (d, p); got {U.shape} and {V.shape}")
    return _run(lambda I, xbar: U[I] @ (V @ xbar), lambda J, ybar: V[:, J].T @ (U.T @ ybar),
                U.shape[0], V.shape[1], b, loss=loss, lam1=lam1, lam2=lam2, m=m, q=q,
                theta=theta, tau=tau, sigma=sigma, n_iter=n_iter, seed=seed, n_total=n_total,
                x0=x0, y0=y0, callback=callback, shift=shift)


# --------------------------------------------------------------------------------------
# objectives
# --------------------------------------------------------------------------------------

def primal_value(A, b, x, *, loss, lam1, lam2):
    """``P(x) = (1/n) sum_i phi_i(a_i^T x) + sum_j (lam2 x_j^2 / 2 + lam1 |x_j|)``.

    Parameters
    ----------
    A : array_like (n, p)
    b : array_like (n,)
    x : array_like (p,)
    loss : str or int
    lam1, lam2 : float

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> primal_value(np.eye(2), np.zeros(2), np.ones(2), loss="squared", lam1=1.0, lam2=0.0)
    2.5
    """
    loss = _loss_name(loss)
    A = np.asarray(A, dtype=np.float64)
    b = _labels(loss, b)
    x = np.asarray(x, dtype=np.float64)
    return float(np.mean(_phi(loss, A @ x, b)) + lam2 / 2.0 * x @ x + lam1 * np.abs(x).sum())


def dual_value(A, b, y, *, loss, lam1, lam2):
    """``D(y) = -g*(-A^T y / n) - (1/n) sum_i phi_i*(y_i)`` (``-inf`` off the domain).

    ``g*(w) = sum_j max(|w_j| - lam1, 0)^2 / (2 lam2)``.

    Parameters
    ----------
    A : array_like (n, p)
    b : array_like (n,)
    y : array_like (n,)
    loss : str or int
    lam1, lam2 : float

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> dual_value(np.eye(2), np.ones(2), -np.ones(2), loss="smoothed_hinge", lam1=0.0,
    ...            lam2=1.0)
    0.25
    """
    loss = _loss_name(loss)
    A = np.asarray(A, dtype=np.float64)
    b = _labels(loss, b)
    y = np.asarray(y, dtype=np.float64)
    n = A.shape[0]
    w = -(A.T @ y) / n
    g_conj = float(np.sum(np.maximum(np.abs(w) - lam1, 0.0) ** 2) / (2.0 * lam2))
    return float(-g_conj - np.mean(_phi_conj(loss, y, b)))


def duality_gap(A, b, x, y, *, loss, lam1, lam2):
    """``P(x) - D(y)`` (``>= 0``; ``inf`` when ``y`` is off the dual domain).

    Parameters
    ----------
    A : array_like (n, p)
    b : array_like (n,)
    x : array_like (p,)
    y : array_like (n,)
    loss : str or int
    lam1, lam2 : float

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> duality_gap(np.eye(2), np.zeros(2), np.zeros(2), np.zeros(2), loss=0, lam1=0.0,
    ...             lam2=1.0)
    0.0
    """
    return (primal_value(A, b, x, loss=loss, lam1=lam1, lam2=lam2)
            - dual_value(A, b, y, loss=loss, lam1=lam1, lam2=lam2))
