"""Row permutation in place: mixing the rows of a task's input without a second copy.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels._jit.rows import permute_rows_inplace
>>> X = np.arange(8.0).reshape(4, 2)
>>> permute_rows_inplace(X, np.array([2, 0, 3, 1]))
>>> X[:, 0].tolist()                    # row i is the old row order[i]
[4.0, 0.0, 6.0, 2.0]
"""

from __future__ import annotations

import numpy as np

from ooc_kernels._jit._cache import njit
from ooc_kernels.exceptions import ValidationError

__all__ = ["permute_rows_inplace", "permute_rows_ref"]


@njit(cache=True, nogil=True)
def permute_rows_inplace(X, order):
    """Reorder the rows of ``X`` in place so that row ``i`` becomes the old row ``order[i]``.

    Parameters
    ----------
    X : ndarray (n, d), C-contiguous
    order : ndarray (n,) of int64
        A permutation of ``0 .. n-1``.

    Notes
    -----
    Follows the cycles of the permutation with one row of scratch and a visited mask:
    ``O(n d)`` moves and ``O(n + d)`` extra memory, against ``O(n d)`` for ``X[order]``.
    Twin: :func:`permute_rows_ref`.
    """
    n = X.shape[0]
    if order.shape[0] != n:
        raise ValidationError("permute_rows_inplace: order must have one entry per row")
    seen = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        k = order[i]
        if k < 0 or k >= n or seen[k]:
            raise ValidationError("permute_rows_inplace: order is not a permutation")
        seen[k] = True
    seen[:] = False
    tmp = np.empty(X.shape[1], dtype=X.dtype)
    for start in range(n):
        if seen[start] or order[start] == start:
            seen[start] = True
            continue
        tmp[:] = X[start]
        j = start
        while True:
            seen[j] = True
            k = order[j]
            if k == start:
                X[j] = tmp
                break
            X[j] = X[k]
            j = k


def permute_rows_ref(X, order):
    """Numpy twin of :func:`permute_rows_inplace` (returns a new array)."""
    return np.asarray(X)[np.asarray(order)]  # tests only
