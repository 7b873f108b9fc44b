"""Nonlinearities that read several columns of ``P = X @ W`` per feature (the polynomial
and additive kernels of :mod:`ooc_kernels.features.structured`), dispatched by
:func:`ooc_kernels._jit.rff.features_inplace`.

* ``POLY2``, ``POLY3``, ``POLY4``: ``scale * prod_{i<p} (P + phase)[(k + i) mod r]``;
* ``LOG_POLAR``: columns ``2k, 2k+1`` hold ``a`` and ``w a``; they become
  ``scale * sqrt(a) (cos(w log a), sin(w log a))`` (0 where ``a <= 0``; an unpaired last
  column becomes 0);
* ``SQRT``: ``scale * sqrt(max(P + phase, 0))``.

All computed in float64 and stored in ``P``'s dtype.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels._jit.coupled import POLY2, coupled_inplace
>>> P = np.array([[1.0, 2.0, 3.0]])
>>> coupled_inplace(POLY2, P, np.zeros(3), 1.0)
>>> P.tolist()
[[2.0, 6.0, 3.0]]
"""

from __future__ import annotations

import math

import numpy as np

from ooc_kernels._jit._cache import njit

__all__ = ["COUPLED", "LOG_POLAR", "POLY2", "POLY3", "POLY4", "SQRT", "coupled_inplace",
           "coupled_inplace_ref"]

POLY2 = 5
POLY3 = 6
POLY4 = 7
LOG_POLAR = 8
SQRT = 9
#: The ids of this module, by name.
COUPLED = {"poly2": POLY2, "poly3": POLY3, "poly4": POLY4, "log_polar": LOG_POLAR,
           "sqrt": SQRT}


@njit(cache=True, nogil=True)
def coupled_inplace(kind, P, phase, scale):
    """Overwrite ``P`` (n, r) with the features of the coupled nonlinearity ``kind``.

    Twin: :func:`coupled_inplace_ref`.
    """
    n, r = P.shape
    buf = np.empty(r)
    for i in range(n):
        row = P[i]
        for k in range(r):
            buf[k] = np.float64(row[k]) + np.float64(phase[k])
        if kind == SQRT:
            for k in range(r):
                row[k] = scale * math.sqrt(buf[k]) if buf[k] > 0.0 else 0.0
        elif kind == LOG_POLAR:
            for k in range(0, r - 1, 2):
                a = buf[k]
                if a > 0.0:
                    t = (buf[k + 1] / a) * math.log(a)
                    m = scale * math.sqrt(a)
                    row[k] = m * math.cos(t)
                    row[k + 1] = m * math.sin(t)
                else:
                    row[k] = 0.0
                    row[k + 1] = 0.0
            if r % 2:
                row[r - 1] = 0.0
        else:
            degree = kind - POLY2 + 2
            for k in range(r):
                v = scale
                for j in range(degree):
                    v *= buf[(k + j) % r]
                row[k] = v


def coupled_inplace_ref(kind, P, phase, scale):
    """Numpy twin of :func:`coupled_inplace`."""
    x = P.astype(np.float64) + phase.astype(np.float64)
    if kind == SQRT:
        P[...] = scale * np.sqrt(np.maximum(x, 0.0))
        return
    if kind == LOG_POLAR:
        m2 = x.shape[1] // 2
        a, b = x[:, 0:2 * m2:2], x[:, 1:2 * m2:2]
        pos = a > 0
        safe = np.where(pos, a, 1.0)
        t = b / safe * np.log(safe)
        m = np.where(pos, scale * np.sqrt(safe), 0.0)
        P[:, 0:2 * m2:2] = m * np.cos(t)
        P[:, 1:2 * m2:2] = m * np.sin(t)
        P[:, 2 * m2:] = 0.0  # an unpaired last column
        return
    degree = kind - POLY2 + 2
    out = np.full(x.shape, float(scale))
    for j in range(degree):
        out *= np.roll(x, -j, axis=1)
    P[...] = out
