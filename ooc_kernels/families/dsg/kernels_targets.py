"""A classifier's labels as the numba losses take them, in one pass over a task's rows.

:func:`class_targets` finds each label among the sorted classes by binary search and writes
its row of targets: ``+1`` / ``-1`` for two classes (``classes[1]`` is ``+1``), one-hot rows
for ``softmax`` (0 / 1) and ``ovr`` (-1 / +1).  It stops at the first label that is not one of
the classes and returns its row, so that the caller can name it.  Twin:
:func:`class_targets_ref` (NumPy's ``searchsorted``).

Examples
--------
>>> import numpy as np
>>> out = np.empty((4, 1), dtype=np.float32)
>>> class_targets(np.array([3, 7, 7, 3]), np.array([3, 7]), BINARY, out), out[:, 0].tolist()
(-1, [-1.0, 1.0, 1.0, -1.0])
>>> class_targets(np.array([3, 5]), np.array([3, 7]), BINARY, out)  # 5: not a class
1
"""

from __future__ import annotations

import numpy as np

from ooc_kernels._jit._cache import njit

__all__ = ["BINARY", "OVR", "SOFTMAX", "TARGET_CODES", "class_targets", "class_targets_ref"]

#: How a target kind writes its rows: one ``+-1`` column, one-hot 0 / 1, one-hot -1 / +1.
BINARY, SOFTMAX, OVR = 0, 1, 2
#: The codes of the classifiers' ``DSGConfig.target`` values.
TARGET_CODES = {"binary": BINARY, "softmax": SOFTMAX, "ovr": OVR}


@njit(cache=True, nogil=True)
def class_targets(y, classes, kind, out):
    """Write the targets of labels ``y`` (n,) into ``out`` (n, 1) for :data:`BINARY`, else
    (n, len(classes)); ``classes`` sorted, distinct, of ``y``'s dtype.

    Returns -1, or the first row whose label is not one of ``classes`` (a NaN never is);
    ``out``'s rows from there on are not written.
    """
    n = y.shape[0]
    k = classes.shape[0]
    off = -1.0 if kind == OVR else 0.0
    for i in range(n):
        v = y[i]
        lo = 0
        hi = k
        while lo < hi:  # the first class not below v
            mid = (lo + hi) // 2
            if classes[mid] < v:
                lo = mid + 1
            else:
                hi = mid
        if lo == k or classes[lo] != v:
            return i
        if kind == BINARY:
            out[i, 0] = 1.0 if lo == 1 else -1.0
        else:
            for c in range(k):
                out[i, c] = off
            out[i, lo] = 1.0
    return -1


def class_targets_ref(y, classes, kind, out):
    """NumPy twin of :func:`class_targets`."""
    idx = np.clip(np.searchsorted(classes, y), 0, len(classes) - 1)
    bad = np.flatnonzero(classes[idx] != y)
    stop = int(bad[0]) if len(bad) else len(y)
    if kind == BINARY:
        out[:stop, 0] = np.where(idx[:stop] == 1, 1.0, -1.0)
    else:
        out[:stop] = -1.0 if kind == OVR else 0.0
        out[np.arange(stop), idx[:stop]] = 1.0
    return stop if len(bad) else -1
