"""The solver's rows in one pass: a chunk's columns standardized into float64, then the
intercept's constant column (:func:`~ooc_kernels.families.dspdc._scaling.model_rows`); and
the set-up's statistics of a chunk without temporaries: its column moments
(:func:`column_moments`) and the squared norms of its standardized rows
(:func:`standardized_norms`).

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

The moments and the norms sum in row order (the twins: BLAS products and NumPy's pairwise
sums), so they agree with their twins to rounding, not bit for bit:

>>> W, mean, m2 = column_moments(rows, None)
>>> W, mean.tolist(), m2.tolist()
(2.0, [2.0, 6.0], [2.0, 8.0])
>>> standardized_norms(rows, None, shift, scale).tolist()
[2.0, 2.0]
"""

from __future__ import annotations

import numpy as np

from ooc_kernels._jit._cache import njit

__all__ = ["column_moments", "column_moments_ref", "standardize_rows", "standardize_rows_ref",
           "standardized_norms", "standardized_norms_ref"]


@njit(cache=True, nogil=True)
def _standardize_into(rows, shift, scale, intercept, with_intercept, out):
    n, p = rows.shape
    for i in range(n):
        for j in range(p):
            out[i, j] = (np.float64(rows[i, j]) - shift[j]) / scale[j]
        if with_intercept:
            out[i, p] = intercept


def standardize_rows(rows: np.ndarray, shift: np.ndarray, scale: np.ndarray,
                     intercept_scaling: float, out: np.ndarray | None = None) -> np.ndarray:
    """``(rows - shift) / scale`` as a C-ordered float64 array, with a last column of
    ``intercept_scaling`` when it is not 0.

    Parameters
    ----------
    rows : ndarray (n, p), float32 or float64, C-ordered
    shift, scale : ndarray (p,), float64
    intercept_scaling : float
    out : ndarray (n, p or p + 1), float64, optional
        Written and returned (C-ordered rows, such as a slice of rows of a larger array);
        default: a new array.
    """
    n, p = rows.shape
    extra = 1 if intercept_scaling else 0
    if out is None:
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


def _kernel_rows(rows) -> bool:
    """Whether the kernels take ``rows`` as they are (C-ordered float32 or float64)."""
    return (isinstance(rows, np.ndarray) and rows.ndim == 2 and rows.flags.c_contiguous
            and rows.dtype in (np.float32, np.float64))


def _weights(weights):
    return None if weights is None else np.ascontiguousarray(weights, dtype=np.float64)


@njit(cache=True, nogil=True)
def _moments_into(rows, w, W, mean, m2):
    n, p = rows.shape
    for i in range(n):           # about the first row: the shifted-data algorithm
        wi = 1.0 if w is None else w[i]
        for j in range(p):
            mean[j] += wi * (np.float64(rows[i, j]) - np.float64(rows[0, j]))
    for j in range(p):
        mean[j] = np.float64(rows[0, j]) + mean[j] / W
    for i in range(n):
        wi = 1.0 if w is None else w[i]
        for j in range(p):
            d = np.float64(rows[i, j]) - mean[j]
            m2[j] += wi * (d * d)


def column_moments(rows, weights):
    """``(W, mean, M2)`` of a chunk's columns in two reads of the chunk (no temporaries):
    the weight sum, the weighted column means (about the first row) and the weighted sums
    of squares about them, for ``W > 0``; the other layouts and dtypes go through the
    twin.

    Parameters
    ----------
    rows : ndarray (n, p), n >= 1
    weights : ndarray (n,) or None
    """
    w = _weights(weights)
    W = float(rows.shape[0] if w is None else w.sum())
    if not _kernel_rows(rows):
        return column_moments_ref(rows, w)
    p = rows.shape[1]
    mean, m2 = np.zeros(p), np.zeros(p)
    _moments_into(rows, w, W, mean, m2)
    return W, mean, m2


def column_moments_ref(rows, weights):
    """NumPy twin of :func:`column_moments` (BLAS products over the chunk's float64
    rows)."""
    rows = np.asarray(rows, dtype=np.float64)   # one chunk
    w = np.ones(len(rows)) if weights is None else np.asarray(weights, dtype=np.float64)
    W = float(len(rows) if weights is None else w.sum())
    first = rows[0]
    mean = first + w @ (rows - first) / W
    return W, mean, w @ (rows - mean) ** 2


@njit(cache=True, nogil=True)
def _norms_into(rows, w, shift, scale, out):
    n, p = rows.shape
    inv = 1.0 / scale                # a product per value instead of a division
    for i in range(n):
        s = 0.0
        for j in range(p):
            v = (np.float64(rows[i, j]) - shift[j]) * inv[j]
            s += v * v
        out[i] = s if w is None else w[i] * s


def standardized_norms(rows, weights, shift, scale) -> np.ndarray:
    """``w_i ||(a_i - shift) / scale||^2`` of every row of a chunk (``w_i = 1`` without
    ``weights``), in one read (multiplied by ``1 / scale``: equal to the twin's divisions
    to rounding); the other layouts and dtypes go through the twin."""
    if not _kernel_rows(rows):
        return standardized_norms_ref(rows, weights, shift, scale)
    out = np.empty(rows.shape[0])
    _norms_into(rows, _weights(weights), np.ascontiguousarray(shift, dtype=np.float64),
                np.ascontiguousarray(scale, dtype=np.float64), out)
    return out


def standardized_norms_ref(rows, weights, shift, scale) -> np.ndarray:
    """NumPy twin of :func:`standardized_norms`."""
    rows = np.asarray(rows, dtype=np.float64)   # one chunk
    h = np.square((rows - np.asarray(shift)) / np.asarray(scale)).sum(axis=1)
    return h if weights is None else np.asarray(weights, dtype=np.float64) * h
