"""The elastic net in the space of the coefficients: coordinate descent on ``Q = H + lam2 I``.

For the squared loss the primal objective of the solver's problem depends on the rows only
through ``H = A^T W A / n``, ``c = A^T W b / n`` and ``b^T W b / n``::

    P(x) = 1/2 x^T H x - c^T x + b^T W b / (2 n) + lam1 |x|_1 + lam2/2 |x|^2,

so with ``H`` and ``c`` known (:mod:`~ooc_kernels.families.dspdc._memory_start`) the
elastic net is a ``p x p`` problem.  :func:`gram_elastic_net` minimizes
``1/2 x^T Q x - c^T x + lam1 |x|_1`` (``Q = H + lam2 I``) by cyclic coordinate descent,
keeping ``Q x`` up to date (``p`` products per coordinate, no pass over the rows), until a
sweep moves no coordinate by more than ``tol`` times the largest, or ``max_sweeps`` sweeps;
:func:`gram_elastic_net_ref` is its NumPy twin (the same operations in the same order).

Examples
--------
>>> import numpy as np
>>> Q, c = np.array([[2.0, 0.5], [0.5, 1.0]]), np.array([1.0, -0.1])
>>> x = np.zeros(2)
>>> gram_elastic_net(Q, c, 0.2, x, 100, 1e-15)          # sweeps run
18
>>> x.round(8).tolist()              # optimal: Q x - c + 0.2 sign(x) = 0 (both nonzero)
[0.42857143, -0.11428571]
>>> bool(np.all(np.abs(Q @ x - c + 0.2 * np.sign(x)) < 1e-12))
True
>>> x_ref = np.zeros(2)
>>> gram_elastic_net_ref(Q, c, 0.2, x_ref, 100, 1e-15), np.array_equal(x, x_ref)
(18, True)
"""

from __future__ import annotations

import numpy as np

from ooc_kernels._jit._cache import njit

__all__ = ["gram_elastic_net", "gram_elastic_net_ref"]


@njit(cache=True, nogil=True)
def gram_elastic_net(Q, c, lam1, x, max_sweeps, tol):
    """Minimize ``1/2 x^T Q x - c^T x + lam1 |x|_1`` by cyclic coordinate descent from
    ``x`` (updated in place); ``Q`` symmetric with a positive diagonal.  Returns the sweeps
    run."""
    p = Q.shape[0]
    g = np.zeros(p)                       # Q x
    for j in range(p):
        for k in range(p):
            g[k] += Q[k, j] * x[j]
    for sweep in range(max_sweeps):
        change, size = 0.0, 0.0
        for j in range(p):
            old = x[j]
            r = c[j] - g[j] + Q[j, j] * old
            if r > lam1:
                new = (r - lam1) / Q[j, j]
            elif r < -lam1:
                new = (r + lam1) / Q[j, j]
            else:
                new = 0.0
            d = new - old
            if d != 0.0:
                for k in range(p):
                    g[k] += Q[k, j] * d
                x[j] = new
            change = max(change, abs(d))
            size = max(size, abs(new))
        if change <= tol * size:
            return sweep + 1
    return max_sweeps


def gram_elastic_net_ref(Q, c, lam1, x, max_sweeps, tol):
    """NumPy twin of :func:`gram_elastic_net`."""
    p = Q.shape[0]
    g = np.zeros(p)
    for j in range(p):
        g += Q[:, j] * x[j]
    for sweep in range(max_sweeps):
        change, size = 0.0, 0.0
        for j in range(p):
            old = x[j]
            r = c[j] - g[j] + Q[j, j] * old
            new = np.sign(r) * max(abs(r) - lam1, 0.0) / Q[j, j]
            d = new - old
            if d != 0.0:
                g += Q[:, j] * d
                x[j] = new
            change = max(change, abs(d))
            size = max(size, abs(new))
        if change <= tol * size:
            return sweep + 1
    return max_sweeps
