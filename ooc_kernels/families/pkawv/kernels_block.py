"""Blocked predict-then-update on a fixed finite basis: the rows of a block at BLAS-3 speed.

:func:`~ooc_kernels.families.pkawv.kernels_online.linear_online` visits the rows one at a
time: a product with the ``r x r`` inverse and a rank-one update per row, ``4 r^2`` flops
run as scalar loops.  :func:`linear_online_blocked` gives the same predictions and the same
final state (equal in exact arithmetic) with the work on ``A^(-1)`` done in matrix
products over blocks of ``B`` rows.  For a block with features ``V`` (``B x r``) and the
state ``A0^(-1)``, ``b0``, ``w0 = A0^(-1) b0`` before it:

* ``U = A0^(-1) V^T`` (``r x B``; stored transposed, ``U^T = V A0^(-1)`` as ``A0^(-1)`` is
  symmetric) and ``C = V A0^(-1) V^T = U^T V^T`` (``B x B``), two matrix products;
* within the block, the inverse after rows ``0..i`` is ``A0^(-1) - U K_i U^T`` and the
  weights are ``w0 + U omega_i``: the row-by-row Sherman-Morrison recursion runs on the
  coordinates ``K`` (``B x B``) and ``omega`` (``B``) only (:func:`block_recursion`,
  ``O(B^3)`` a block): with ``s = e_i - K_{i-1} C e_i`` (so that ``A_{i-1}^(-1) v_i = U
  s``), ``K_i = K_{i-1} + s s^T / (1 + v_i^T U s)``, and ``g = U^T b`` carried along for
  the ``u^T b`` of the weight update;
* after the block, ``A^(-1) <- A0^(-1) - U K U^T``, ``w <- w0 + U omega`` and ``b <- b0 +
  V^T y``: two more matrix products.

The blocks are the consecutive runs of ``block`` rows from the first row of ``Phi`` (the
last one shorter): the partition depends on row positions only, so a chunk's result is the
same on every run.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.pkawv.kernels_block import linear_online_blocked
>>> from ooc_kernels.families.pkawv.reference import linear_awv
>>> rng = np.random.default_rng(0)
>>> Phi = rng.normal(size=(7, 3)); y = rng.normal(size=7)
>>> Ainv, b, w = np.eye(3), np.zeros(3), np.zeros(3)        # lambda = 1
>>> pred = linear_online_blocked(Phi, y, Ainv, b, w, True, 3)
>>> bool(np.allclose(pred, linear_awv(Phi, y, 1.0, "awv")))
True
"""

from __future__ import annotations

import numpy as np

from ooc_kernels._jit._cache import njit

__all__ = ["block_recursion", "linear_online_blocked"]


@njit(nogil=True)
def block_recursion(C, p0, y, K, omega, pred, awv):
    """The row-by-row recursion of one block in its ``B``-dimensional coordinates.

    ``C = V A0^(-1) V^T`` (symmetric: only its rows are read), ``p0 = V w0`` (the block's
    predictions by the weights before it); ``K`` (``B x B``) and ``omega`` (``B``) start at
    zero and end as the block's coordinates of the inverse and weight updates; ``pred``
    receives the predictions.
    """
    n = C.shape[0]
    g = p0.copy()
    s = np.empty(n)
    for i in range(n):
        if not awv:
            acc = p0[i]
            for j in range(i):
                acc += C[i, j] * omega[j]
            pred[i] = acc
        for j in range(i):
            acc = 0.0
            for q in range(i):
                acc += K[j, q] * C[i, q]
            s[j] = -acc
        s[i] = 1.0
        den = 1.0
        sg = 0.0
        for j in range(i + 1):
            den += C[i, j] * s[j]
            sg += s[j] * g[j]
        for j in range(i + 1):
            sj = s[j] / den
            for q in range(i + 1):
                K[j, q] += sj * s[q]
            omega[j] -= sj * sg
        if awv:
            acc = p0[i]
            for j in range(i + 1):
                acc += C[i, j] * omega[j]
            pred[i] = acc
        yi = y[i]
        for j in range(n):
            g[j] += yi * C[i, j]
        for j in range(i + 1):
            omega[j] += yi * s[j] / den


@njit(nogil=True)
def linear_online_blocked(Phi, y, Ainv, b, w, awv, block):
    """Online AWV / ridge on the features ``Phi`` in blocks of ``block`` rows; ``Ainv``,
    ``b`` and ``w`` are updated in place and the online predictions returned.

    The same predictions and state as
    :func:`~ooc_kernels.families.pkawv.kernels_online.linear_online` (its twin, row by row)
    up to rounding.  The matrix products call BLAS: run it under
    :func:`~ooc_kernels._blas.single_threaded_blas` for results that do not depend on the
    BLAS thread count.
    """
    n = Phi.shape[0]
    pred = np.empty(n)
    for start in range(0, n, block):
        stop = min(n, start + block)
        V = Phi[start:stop]
        yb = y[start:stop]
        m = stop - start
        Ut = V @ Ainv                      # U^T, m x r
        C = Ut @ V.T
        K = np.zeros((m, m))
        omega = np.zeros(m)
        block_recursion(C, V @ w, yb, K, omega, pred[start:stop], awv)
        Ainv -= Ut.T @ (K @ Ut)
        w += Ut.T @ omega
        b += V.T @ yb
    return pred
