"""The inner feature map of a hierarchical kernel, ``psi(X) = scale * f(X @ V + c)``, a row
transform applied to each chunk before the outer kernel's features
(:mod:`ooc_kernels.features.hierarchical`).

Computed tile by tile into a caller-owned ``(n, D)`` array, so the memory is the output and
one tile of ``X``; the nonlinearity is :func:`ooc_kernels._jit.rff.features_inplace` of the
inner map.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels._jit.hierarchical import inner_rows, inner_rows_ref
>>> from ooc_kernels._jit.rff import RELU
>>> rng = np.random.default_rng(0)
>>> X, V, c = rng.normal(size=(5, 3)), rng.normal(size=(3, 4)), np.zeros(4)
>>> out = np.empty((5, 4))
>>> inner_rows(X, V, c, 0.5, RELU, out)
>>> bool(np.allclose(out, inner_rows_ref(X, V, c, 0.5, RELU)))
True
"""

from __future__ import annotations

import numpy as np

from ooc_kernels._jit._cache import njit
from ooc_kernels._jit.rff import features_inplace, features_inplace_ref
from ooc_kernels.exceptions import ValidationError

__all__ = ["inner_rows", "inner_rows_ref"]

#: Bytes of one tile of the output (the GEMM's result, read again by the nonlinearity).
_TILE_BYTES = 1 << 21


@njit(cache=True, nogil=True)
def inner_rows(X, V, c, scale, kind, out):
    """Write ``scale * f(X @ V + c)`` (nonlinearity ``kind``) into ``out`` (n, D).

    Parameters
    ----------
    X : ndarray (n, d), C-contiguous, float32 or float64
    V : ndarray (d, D), C-contiguous, X's dtype
    c : ndarray (D,), X's dtype
    scale : float
    kind : int
        A nonlinearity id of :data:`ooc_kernels._jit.rff.NONLINEARITIES`.
    out : ndarray (n, D), C-contiguous, X's dtype

    Twin: :func:`inner_rows_ref`.
    """
    n, D = out.shape
    if X.shape[0] != n or V.shape[0] != X.shape[1] or V.shape[1] != D or c.shape[0] != D:
        raise ValidationError("inner_rows: shapes of X (n, d), V (d, D), c (D,) and out "
                              "(n, D) do not agree")
    if n == 0 or D == 0:
        return
    tile = max(16, _TILE_BYTES // (D * X.itemsize))
    for start in range(0, n, tile):
        stop = min(start + tile, n)
        Ot = out[start:stop]
        np.dot(X[start:stop], V, Ot)
        features_inplace(kind, Ot, c, scale)


def inner_rows_ref(X, V, c, scale, kind):
    """NumPy twin of :func:`inner_rows`: the whole ``(n, D)`` result at once."""
    P = np.asarray(X) @ V  # one chunk (reference twin, tests only)
    features_inplace_ref(kind, P, c, scale)
    return P
