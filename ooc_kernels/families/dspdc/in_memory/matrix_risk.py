"""Multiple-matrix risk minimization (30)/(31) by block DSPDC (``docs/specs/dspdc.md`` §4.2).

::

    min_{X_1..X_p PSD}  (1/n) sum_i phi_i(sum_j <D_i^j, X_j>) + (lam/2) sum_j ||X_j||_F^2

is the block problem of :mod:`ooc_kernels.families.dspdc.in_memory.blocks` with one dual coordinate
per sample (``m_i = 1``), ``p`` primal blocks of size ``d^2`` (``x_j = vec(X_j)``, row-major),
``A_i^j = vec(D_i^j)^T`` (``A`` is ``D`` reshaped to ``(n, p d^2)``, no copy) and
``g_j = lam/2 ||X||_F^2 + indicator(PSD)``
(:class:`~ooc_kernels.families.dspdc.in_memory.block_prox.PSDBlock`: one ``eigh`` per sampled block).  The
``D_i^j`` need not be symmetric: the prox symmetrizes, and ``<D, X> = <sym(D), X>`` for a
symmetric ``X``.

Examples
--------
>>> from ooc_kernels.data.matrix_data import matrix_risk
>>> from ooc_kernels.families.dspdc.in_memory.matrix_risk import matrix_risk_dspdc
>>> D, b = matrix_risk(30, 3, 4, seed=0)
>>> X, res = matrix_risk_dspdc(D, b, lam=0.1, m=3, q=1, tol=1e-9, seed=0)
>>> X.shape, res.converged
((3, 4, 4), True)
"""

from __future__ import annotations

import numpy as np

from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dspdc.in_memory.block_prox import PSDBlock, SeparableLoss
from ooc_kernels.families.dspdc.in_memory.blocks import block_dspdc

__all__ = ["matrix_risk_dspdc"]


def matrix_risk_dspdc(D, b, lam=0.01, *, m=1, q=1, loss="smoothed_hinge", Lambda="upper_bound",
                      **kwargs):
    """Solve (30) by block DSPDC; the iterates stay symmetric PSD.

    Parameters
    ----------
    D : array_like (n, p, d, d)
        ``D[i, j]`` is ``D_i^j``.
    b : array_like (n,)
        Labels (``+-1`` for the margin losses).
    lam : float
        The Frobenius weight (the paper's 6.2 uses 0.01).
    m, q : int
        Samples and matrices updated per iteration (6.2: ``(5, 50), (50, 5), (20, 20)``).
    loss : {"smoothed_hinge", "squared", "logistic"}
    Lambda : str or float
        As :func:`ooc_kernels.families.dspdc.in_memory.blocks.block_lambda`.
    **kwargs
        Passed to :func:`ooc_kernels.families.dspdc.in_memory.blocks.block_dspdc` (``tol``,
        ``max_iter``, ``check_every``, ``max_time``, ``seed``, ``mode``, ``x0``, ``y0`` ...).

    Returns
    -------
    X : ndarray (p, d, d)
        The last primal iterate, symmetric PSD.
    result : BlockDSPDCResult
        Gap history, duals, parameters.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> D = rng.normal(size=(20, 2, 3, 3)); b = np.sign(np.trace(D, axis1=2, axis2=3).sum(1))
    >>> X, res = matrix_risk_dspdc(D, b, lam=0.5, m=20, q=2, tol=1e-10)
    >>> bool(np.linalg.eigvalsh(X).min() > -1e-12), res.gap <= 1e-10
    (True, True)
    """
    D = np.asarray(D, dtype=np.float64)
    if D.ndim != 4 or D.shape[2] != D.shape[3]:
        raise ValidationError(f"D must have shape (n, p, d, d); got {D.shape}")
    n, p, d, _ = D.shape
    b = np.asarray(b, dtype=np.float64).ravel()
    if b.size != n:
        raise ValidationError(f"b must hold one label per sample: n = {n}; got {b.size}")
    A = D.reshape(n, p * d * d)
    res = block_dspdc(A, SeparableLoss(loss, b), PSDBlock(lam, d), col_blocks=[d * d] * p,
                      m=m, q=q, Lambda=Lambda, **kwargs)
    return res.x.reshape(p, d, d).copy(), res
