"""The solver's rows in one pass: a chunk's columns standardized into float64, then the
intercept's constant column (:func:`~ooc_kernels.families.dspdc._scaling.model_rows`).

NumPy builds them in two passes over the output (``np.subtract`` of the shift, converting
the chunk's float32 values on the way, then ``np.divide`` by the scale in place);
:func:`standardize_rows` reads each value once and writes each row once.  The operations
are the same, in the same order, in float64 (``(float64(a_ij) - shift_j) / scale_j``), so
the rows are NumPy's bit for bit; :func:`standardize_rows_ref` is the NumPy twin.

Examples
--------
>>> import numpy as np
>>> rows = np.array([[1.0, 4.0], [3.0, 8.0]], dtype=np.float32)
>>> shift, scale = np.array([2.0, 6.0]), np.array([1.0, 2.0])
>>> standardize_rows(rows, shift, scale, 1.0).tolist()
[[-1.0, -1.0, 1.0], [1.0, 1.0, 1.0]]
>>> np.array_equal(standardize_rows(rows, shift, scale, 0.0),
...                standardize_rows_ref(rows, shift, scale, 0.0))
True
"""

from __future__ import annotations

import numpy as np

from ooc_kernels._jit._cache import njit

__all__ = ["standardize_rows", "standardize_rows_ref"]


@njit(cache=True, nogil=True)
def _standardize_into(rows, shift, scale, intercept, with_intercept, out):
    n, p = rows.shape
    for i in range(n):
        for j in range(p):
            out[i, j] = (np.float64(rows[i, j]) - shift[j]) / scale[j]
        if with_intercept:
            out[i, p] = intercept


def standardize_rows(rows: np.ndarray, shift: np.ndarray, scale: np.ndarray,
                     intercept_scaling: float) -> np.ndarray:
    """``(rows - shift) / scale`` as a new C-ordered float64 array, with a last column of
    ``intercept_scaling`` when it is not 0.

    Parameters
    ----------
    rows : ndarray (n, p), float32 or float64, C-ordered
    shift, scale : ndarray (p,), float64
    intercept_scaling : float
    """
    n, p = rows.shape
    extra = 1 if intercept_scaling else 0
    out = np.empty((n, p + extra))
    _standardize_into(rows, np.ascontiguousarray(shift, dtype=np.float64),
                      np.ascontiguousarray(scale, dtype=np.float64),
                      float(intercept_scaling), bool(extra), out)
    return out


def standardize_rows_ref(rows, shift, scale, intercept_scaling: float) -> np.ndarray:
    """NumPy twin of :func:`standardize_rows`: the subtraction, then the division in
    place, then the constant column."""
    rows = np.asarray(rows)
    n, p = rows.shape
    out = np.empty((n, p + (1 if intercept_scaling else 0)))
    body = out[:, :p]
    np.subtract(rows, np.asarray(shift), out=body)
    np.divide(body, np.asarray(scale), out=body)
    if intercept_scaling:
        out[:, p] = intercept_scaling
    return out
