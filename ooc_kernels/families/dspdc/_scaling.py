"""The standardization of the DSPDC estimators: column moments from one streaming pass, and
the rows of the problem the solver sees.

With ``standardize=True`` the estimators solve the problem on the columns

    a'_j = (a_j - shift_j) / scale_j

(``shift`` the weighted column means when ``fit_intercept``, else 0; ``scale`` the weighted
standard deviations about ``shift``, 1 for a constant column), so that the regularizer
``alpha * (l1_ratio |x'| + (1 - l1_ratio) / 2 x'^2)`` applies to the coefficients of the
standardized columns, as ``make_pipeline(StandardScaler(), model)`` and glmnet's
``standardize=TRUE`` do.  The model reported is a function of the raw columns:
``coef_ = x' / scale`` and ``intercept_ = c x'_0 - shift . coef_`` (``c`` the
``intercept_scaling``).  The rows are transformed one chunk at a time (:func:`model_rows`);
for factorized data ``A = U V`` the transform folds into ``V`` (:func:`model_V`): the
scale divides its columns and the shift enters through the intercept's column, so the
product keeps its rank.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dspdc._scaling import chunk_moments, combine_moments
>>> X = np.array([[1.0, 10.0], [3.0, 10.0], [5.0, 10.0]])
>>> W, mean, m2 = combine_moments(chunk_moments(X[:1], None), chunk_moments(X[1:], None))
>>> float(W), mean.tolist(), (m2 / W).tolist()        # the variances, the last constant
(3.0, [3.0, 10.0], [2.6666666666666665, 0.0])
"""

from __future__ import annotations

import numpy as np

from ooc_kernels.exceptions import InvalidDataError

__all__ = ["chunk_moments", "combine_moments", "standardization", "model_rows", "model_V",
           "raw_coefficients", "raw_x"]


def chunk_moments(rows, weights, V=None):
    """``(W, mean, M2)`` of one chunk's columns: the weight sum, the weighted column means
    and the weighted sums of squares about them (``M2`` the diagonal, shape ``(p,)``).  For
    factorized rows ``U`` with ``V`` given, the moments of ``U`` (``M2`` the scatter
    matrix ``(d, d)``), from which those of ``A = U V`` follow (:func:`standardization`)."""
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    if (len(rows) if w is None else float(w.sum())) <= 0:
        k = np.shape(rows)[1]
        return 0.0, np.zeros(k), np.zeros((k, k) if V is not None else k)
    # about the first row (the shifted-data algorithm): a constant column has the mean of
    # its value exactly and no spread, which a weighted sum of the values would round
    if V is None:   # two reads of the chunk in numba, no temporaries
        from ooc_kernels.families.dspdc.kernels_scaling import column_moments

        W, mean, m2 = column_moments(np.asarray(rows), w)   # rows: one chunk
        _check_spread_underflow(rows, w, W, m2)
        return W, mean, m2
    rows = np.asarray(rows, dtype=np.float64)   # one chunk of U
    w = np.ones(len(rows)) if w is None else w
    W = float(w.sum())
    first = rows[0]
    mean = first + w @ (rows - first) / W
    centred = rows - mean
    return W, mean, (w[:, None] * centred).T @ centred


#: The smallest spread (standard deviation) of a column that standardization takes: below
#: it the squares of the values about their mean are subnormal in float64 (about 2.2e-308)
#: or 0, their digits lost, a varying column read as a constant.
MIN_SPREAD = 1e-152


def _underflow_error(j: int, spread: float) -> InvalidDataError:
    return InvalidDataError(
        f"column {j} of X varies, but its spread (about {spread:.3g}) is below {MIN_SPREAD:g}: "
        "the squares of its values about their mean underflow float64, so it cannot be "
        "standardized (it would be taken for a constant and dropped); rescale that column "
        "(for instance multiply it by 1e150): standardization makes the model independent of "
        "the column's unit, only its coefficient changes by the same factor"
    )


def _check_spread_underflow(rows, w, W: float, m2: np.ndarray) -> None:
    """Refuse a column of one chunk whose sum of squares is below the spread
    :data:`MIN_SPREAD` while its values (on the rows of positive weight) are not all equal;
    constant columns (rare) are the only ones read again."""
    small = np.flatnonzero(m2 < MIN_SPREAD ** 2 * W)
    if small.size == 0:
        return
    sub = np.asarray(rows)[:, small]   # one chunk's nearly constant columns
    if w is not None:
        sub = sub[np.asarray(w) > 0]
    if len(sub) == 0:
        return
    varies = sub.max(axis=0) != sub.min(axis=0)
    if varies.any():
        k = int(np.flatnonzero(varies)[0])
        raise _underflow_error(int(small[k]), float(sub[:, k].max()) - float(sub[:, k].min()))


def combine_moments(*parts):
    """The moments of the union of the chunks of ``parts`` (Chan et al.'s pairwise update:
    no cancellation for columns whose mean is large against their spread)."""
    W, mean, m2 = parts[0]
    mean, m2 = np.array(mean, dtype=np.float64), np.array(m2, dtype=np.float64)
    apart = np.zeros(mean.shape)     # the largest gap between the chunks' means
    for Wb, mean_b, m2_b in parts[1:]:
        if Wb <= 0:
            continue
        total = W + Wb
        delta = np.asarray(mean_b) - mean
        if W > 0:
            apart = np.maximum(apart, np.abs(delta))
        with np.errstate(under="ignore"):
            outer = np.outer(delta, delta) if m2.ndim == 2 else delta ** 2
        m2 = m2 + np.asarray(m2_b) + outer * (W * Wb / total)
        mean = mean + delta * (Wb / total)
        W = total
    if m2.ndim == 1:   # chunks apart by less than the smallest spread: their squares underflow
        low = np.flatnonzero((apart > 0) & (m2 < MIN_SPREAD ** 2 * W))
        if low.size:
            raise _underflow_error(int(low[0]), float(apart[low[0]]))
    return W, mean, m2


def _check_finite_moments(mean, var, name: str) -> None:
    """Refuse a column whose merged moments are not finite: finite values whose squares
    overflow float64 (beyond about 1e154) give a sum of squares of inf, or NaN, which would
    divide the column by infinity (every value 0) or leave it unscaled."""
    bad = np.flatnonzero(~(np.isfinite(mean) & np.isfinite(var)))
    if bad.size:
        j = int(bad[0])
        raise InvalidDataError(
            f"column {j} of {name} has a mean {float(mean[j])!r} and a variance "
            f"{float(var[j])!r}: its values (beyond about 1e154) have squares that overflow "
            "float64, so it cannot be standardized; rescale that column (for instance "
            f"divide it by 1e150): standardization makes the model independent of the "
            "column's unit, only its coefficient changes by the same factor"
            + (f" ({bad.size} columns overflow: {bad[:10].tolist()})" if bad.size > 1 else ""))


def standardization(moments, center: bool, V=None) -> dict:
    """``{"x_shift": ..., "x_scale": ...}`` of the configuration from the merged moments:
    the means (``center``) or zeros, and the standard deviations about them (the root mean
    squares when not centred); a column with no spread keeps the scale 1, and
    ``"x_spread"`` counts the others (the standardized columns of mean square 1).  For
    factorized
    data (``V`` given, the moments those of ``U``) the moments of ``A = U V``'s columns."""
    W, mean, m2 = moments
    W = max(float(W), np.finfo(float).tiny)
    if V is not None:
        V = np.asarray(V, dtype=np.float64)
        mean_a = mean @ V
        var = np.einsum("ij,ik,kj->j", V, m2 / W, V)
    else:
        mean_a, var = np.asarray(mean), np.asarray(m2) / W
    _check_finite_moments(mean_a, var, "X" if V is None else "A = U V")
    var = np.maximum(var, 0.0)
    if center:
        shift = mean_a
    else:
        shift = np.zeros_like(mean_a)
        var = var + mean_a ** 2
    scale = np.sqrt(var)
    tiny = np.finfo(float).eps * np.abs(mean_a)   # relative: small units keep their scale
    spread = scale > tiny
    scale[~spread] = 1.0   # constant columns: left as they are
    return {"x_shift": tuple(float(v) for v in shift),
            "x_scale": tuple(float(v) for v in scale),
            "x_spread": int(np.count_nonzero(spread))}


def model_rows(config, rows, out: np.ndarray | None = None) -> np.ndarray:
    """The rows of the problem the solver sees, float64: dense rows standardized (when the
    configuration has a scale), then the intercept's constant column; factorized rows ``U``
    only get the intercept's column (their standardization is in :func:`model_V`).
    ``out``: a C-ordered float64 array of their shape to write them into (returned)."""
    rows = np.asarray(rows)
    standardize = config.x_scale is not None and not config.factorized
    if not (standardize or config.intercept_scaling):
        if out is None:
            return np.ascontiguousarray(rows, dtype=np.float64)
        out[...] = rows
        return out
    n, p = rows.shape
    if standardize and rows.dtype in _kernel_dtypes() and rows.flags.c_contiguous:
        from ooc_kernels.families.dspdc.kernels_scaling import standardize_rows

        return standardize_rows(rows, np.asarray(config.x_shift),
                                np.asarray(config.x_scale), config.intercept_scaling, out=out)
    # one float64 array written once: the columns (standardized in place), then the constant
    if out is None:
        out = np.empty((n, p + (1 if config.intercept_scaling else 0)))
    body = out[:, :p]
    if standardize:
        np.subtract(rows, np.asarray(config.x_shift), out=body)
        np.divide(body, np.asarray(config.x_scale), out=body)
    else:
        body[...] = rows
    if config.intercept_scaling:
        out[:, p] = config.intercept_scaling
    return out


def _kernel_dtypes() -> tuple:
    """The chunk dtypes of the one-pass kernel (C-ordered float32 and float64 chunks,
    :mod:`~ooc_kernels.families.dspdc.kernels_scaling`; the others go through NumPy)."""
    return (np.dtype(np.float32), np.dtype(np.float64))


def model_V(V, config) -> np.ndarray:
    """``V`` of the problem the solver sees: columns divided by the scale, and with an
    intercept, the row and column of the constant, whose row carries the shift:
    ``[U, c] [[V / s, 0], [-(shift / s) / c, 1]] = [(U V - shift) / s, c]``."""
    V = np.asarray(V, dtype=np.float64)
    if config.x_scale is not None:
        V = V / np.asarray(config.x_scale)
    if not config.intercept_scaling:
        return np.ascontiguousarray(V)
    d, p = V.shape
    out = np.zeros((d + 1, p + 1))
    out[:d, :p] = V
    if config.x_scale is not None:
        out[d, :p] = -np.asarray(config.x_shift) / np.asarray(config.x_scale) \
            / config.intercept_scaling
    out[d, p] = 1.0
    return out


def raw_coefficients(config, x) -> tuple[np.ndarray, float]:
    """``(coef_, intercept_)`` on the raw columns from the solver's ``x``: the solver's
    margins on the raw rows (:func:`raw_x`), plus the targets' shift
    (``config.y_shift``: the solver fits ``y - y_shift``)."""
    coef, intercept = _raw_margins(config, x)
    return coef, intercept + float(getattr(config, "y_shift", 0.0))


def _raw_margins(config, x) -> tuple[np.ndarray, float]:
    """``(coef, intercept)`` with ``a'_i . x = a_i . coef + intercept`` on raw rows ``a_i``."""
    x = np.asarray(x, dtype=np.float64)
    coef = x[:-1] if config.intercept_scaling else x
    intercept = float(x[-1] * config.intercept_scaling) if config.intercept_scaling else 0.0
    if config.x_scale is not None:
        coef = coef / np.asarray(config.x_scale)
        intercept -= float(np.asarray(config.x_shift) @ coef)
    return coef.copy(), intercept


def raw_x(config, x) -> np.ndarray:
    """``x`` of the same margins on the raw rows (with the intercept's column): the solver's
    margins ``a'_i . x`` equal ``a_i . raw_x`` (the loss terms of the primal value, against
    the targets less ``config.y_shift``)."""
    if config.x_scale is None:
        return np.asarray(x, dtype=np.float64)
    coef, intercept = _raw_margins(config, x)
    if not config.intercept_scaling:
        return coef
    return np.append(coef, intercept / config.intercept_scaling)
