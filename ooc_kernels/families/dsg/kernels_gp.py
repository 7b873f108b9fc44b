"""The doubly stochastic update of the GP variance operator (Dai et al. 2014, Eq. 18 and
Appendix D), with mini-batches and feature blocks, in numba, and its plain-NumPy twin.

The operator ``A = C (C + sigma^2 / n I)^{-1}`` is held as ``A(u, v) = z(u)^T theta
z'(v)``: ``z`` the features of the omega stream and ``z'`` those of the independent omega'
stream, ``n_blocks`` blocks of ``block_size`` features each, every block scaled so that it
estimates the kernel alone (``z_j(u) . z_j(v) ~ k(u, v)``).  ``theta`` is ``(D, D)``,
``D = n_blocks * block_size``; block ``(i, j)`` is zero unless ``i <= j``.

A step on a batch of ``b`` rows ``x_m`` with step size ``gamma`` and ``c = 1 - gamma
shrink`` (``shrink = sigma^2 / n``):

* growth (``n_open < n_blocks``; ``t = n_open``, ``a = t * block_size``): the new column
  block ``theta[:a, t] = -(gamma / b) sum_m (theta[:a, :a] z'_{<t}(x_m)) z'_t(x_m)^T`` from
  the *pre-decay* ``theta`` (Eq. 18 applies ``A_t C_t`` to the undecayed ``A_t``), the new
  diagonal block ``theta[t, t] = (gamma / b) sum_m z_t(x_m) z'_t(x_m)^T``, then
  ``theta[:a, :a] *= c``;
* full (all blocks open, ``B = n_blocks``): the kernel is estimated with every block,
  ``k(u, x) ~ (1 / B) z(u) . z(x)``, so ``theta <- c theta - (gamma / b) sum_m
  ((1 / B) theta z'(x_m) - (1 / B^2) z(x_m)) z'(x_m)^T``.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dsg.kernels_gp import operator_steps, operator_steps_ref
>>> rng = np.random.default_rng(0)
>>> Z, Zp = rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
>>> gammas = np.array([0.5, 0.4, 0.3])
>>> a, b = np.zeros((4, 4)), np.zeros((4, 4))
>>> operator_steps(a, Z, Zp, gammas, 0.1, 0, 2, 2)
2
>>> operator_steps_ref(b, Z, Zp, gammas, 0.1, 0, 2, 2)
2
>>> bool(np.allclose(a, b))
True
"""

from __future__ import annotations

import numpy as np

from ooc_kernels._jit._cache import njit

__all__ = ["operator_steps", "operator_steps_ref"]


@njit(cache=True, nogil=True)
def operator_steps(theta, Z, Zp, gammas, shrink, n_open, block_size, batch_size):
    """Steps of Eq. 18 over the rows of ``Z`` and ``Zp`` in order, in place on ``theta``.

    Parameters
    ----------
    theta : ndarray (D, D), float64, C-contiguous
    Z, Zp : ndarray (n, D), float64, C-contiguous
        The omega and omega' features of the rows (every block, each scaled to estimate
        the kernel alone).
    gammas : ndarray (ceil(n / batch_size),), float64
        The step size of each step.
    shrink : float
        ``sigma^2 / n``: the factor of the decay ``1 - gamma * shrink``.
    n_open : int
        Blocks open before the first step.
    block_size, batch_size : int

    Returns
    -------
    int
        Blocks open after the last step.
    """
    n, D = Z.shape
    r = block_size
    n_blocks = D // r
    s = 0
    for lo in range(0, n, batch_size):
        hi = min(n, lo + batch_size)
        b = hi - lo
        gamma = gammas[s]
        s += 1
        c = 1.0 - gamma * shrink
        if n_open < n_blocks:
            a = n_open * r
            zt = np.ascontiguousarray(Z[lo:hi, a:a + r])
            zpt = np.ascontiguousarray(Zp[lo:hi, a:a + r])
            theta[a:a + r, a:a + r] = (gamma / b) * np.dot(zt.T.copy(), zpt)
            if a > 0:
                old = np.ascontiguousarray(theta[:a, :a])
                zp_old = np.ascontiguousarray(Zp[lo:hi, :a])
                P = np.dot(old, zp_old.T.copy())  # (a, b), pre-decay
                theta[:a, a:a + r] = (-gamma / b) * np.dot(P, zpt)
                theta[:a, :a] = c * old
            n_open += 1
        else:
            zb = np.ascontiguousarray(Z[lo:hi])
            zpb = np.ascontiguousarray(Zp[lo:hi])
            P = np.dot(theta, zpb.T.copy())  # (D, b)
            R = np.ascontiguousarray(P * (1.0 / n_blocks)
                                     - zb.T * (1.0 / (n_blocks * n_blocks)))
            G = np.dot(R, zpb)
            for i in range(D):
                for j in range(D):
                    theta[i, j] = c * theta[i, j] - (gamma / b) * G[i, j]
    return n_open


def operator_steps_ref(theta, Z, Zp, gammas, shrink, n_open, block_size, batch_size):
    """Plain-NumPy twin of :func:`operator_steps`: the same steps, row by row in the
    blocks' sums (``sum_m``), in place on ``theta``; returns the blocks open after.

    Examples
    --------
    >>> import numpy as np
    >>> theta = np.zeros((2, 2))
    >>> operator_steps_ref(theta, np.ones((1, 2)), np.ones((1, 2)), np.array([0.5]),
    ...                    0.0, 0, 1, 1)
    1
    >>> theta.tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    n, D = Z.shape
    r = block_size
    n_blocks = D // r
    for s, lo in enumerate(range(0, n, batch_size)):
        rows = range(lo, min(n, lo + batch_size))
        b = len(rows)
        gamma = float(gammas[s])
        c = 1.0 - gamma * shrink
        if n_open < n_blocks:
            a = n_open * r
            pre = theta[:a, :a].copy()
            diag = np.zeros((r, r))
            col = np.zeros((a, r))
            for m in rows:
                diag += np.outer(Z[m, a:a + r], Zp[m, a:a + r])
                col += np.outer(pre @ Zp[m, :a], Zp[m, a:a + r])
            theta[a:a + r, a:a + r] = gamma / b * diag
            theta[:a, a:a + r] = -gamma / b * col
            theta[:a, :a] = c * pre
            n_open += 1
        else:
            grad = np.zeros((D, D))
            for m in rows:
                grad += np.outer(theta @ Zp[m] / n_blocks - Z[m] / n_blocks ** 2, Zp[m])
            theta[:] = c * theta - gamma / b * grad
    return n_open
