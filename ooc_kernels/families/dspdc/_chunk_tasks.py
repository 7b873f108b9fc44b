"""The per-chunk tasks of the DSPDC estimators: what one Dask task computes on one chunk.

Each function reads one chunk of rows (and its labels and weights) and returns a few
numbers: the summed loss of the primal value, the class sums of the weights, the row
weights, the statistics of ``Lambda`` and a chunk of decision values of factorized data.
The estimators (:mod:`ooc_kernels.families.dspdc.estimators`) build their task graphs from
them.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dspdc._chunk_tasks import _sum_loss_chunk
>>> rows = np.array([[1.0], [2.0]]); x = np.array([1.0])
>>> _sum_loss_chunk(rows, np.array([0.0, 0.0]), None, x, 0, None, 0.0)   # (1 + 4) / 2
2.5
"""

from __future__ import annotations

import dask
import numpy as np

from ooc_kernels._checks import check_finite
from ooc_kernels.exceptions import InvalidDataError
from ooc_kernels.losses.reference import loss_value_ref


def _finite_rows(rows, origin):
    """``rows`` as read, refused with the error of :func:`~ooc_kernels._checks.check_finite`
    (the chunk, the row and the feature, as the DSG solvers name them) when they hold NaN or
    inf; ``origin``: ``(variable, chunk index)``, or None for rows checked already."""
    if origin is not None:
        check_finite(rows, *origin)
    return rows


def _sum_loss_chunk(rows, y, V, x, loss_id, classes, intercept, weights=None,
                    y_shift=0.0):
    """``sum_i w_i phi_i(a_i^T x)`` over one chunk (dense rows, or ``U`` with ``V``;
    ``weights`` None: every ``w_i = 1``; regression: the targets ``y - y_shift``)."""
    rows = np.asarray(rows, dtype=np.float64)
    y = np.asarray(y).reshape(-1)
    b = y.astype(np.float64) - y_shift if classes is None else np.where(
        y == classes[1], 1.0, -1.0)
    with np.errstate(over="ignore", invalid="ignore"):  # a diverged x: inf, checked after
        z = rows @ (V @ x[:V.shape[1]]) if V is not None else rows @ x[:rows.shape[1]]
        if intercept:
            z = z + intercept * x[-1]
        values = loss_value_ref(loss_id, z, b)
        if weights is not None:
            values = np.where(weights > 0, weights * values, 0.0)
        return float(np.sum(values))


def _weight_sums(sample_weight, y, positive, chunk: int) -> np.ndarray:
    """``(sum of sample_weight over the rows of the other class, over the rows of class
    positive)`` of one chunk (regression, ``positive`` None: the whole sum first).

    Raises
    ------
    InvalidDataError
        A weight that is negative or not finite (named by chunk and row).
    """
    y = np.asarray(y).reshape(-1)
    if sample_weight is None:
        w = np.ones(len(y))
    else:
        w = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
        bad = ~(np.isfinite(w) & (w >= 0))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise InvalidDataError(
                f"sample_weight {float(w[row])!r} in chunk {chunk}, row {row} is not a finite "
                "number >= 0; fix or drop that weight."
            )
    with np.errstate(over="ignore"):  # a sum of inf is refused, naming the weights' scale
        if positive is None:
            return np.array([w.sum(), 0.0])
        is_pos = y == positive
        return np.array([w[~is_pos].sum(), w[is_pos].sum()])


def _summed_weights(parts) -> np.ndarray:
    """The chunks' :func:`_weight_sums` added up (an overflow is inf, refused by the fit's
    weighting as weights whose sum overflows)."""
    with np.errstate(over="ignore"):
        return sum(parts)


def _chunk_weights(weighting: dict, sample_weight, y):
    """The row weights ``w_i`` of one chunk
    (:func:`~ooc_kernels.families.dspdc._local.row_weights`), or None when unweighted."""
    from types import SimpleNamespace

    from ooc_kernels.families.dspdc._local import row_weights

    if not weighting.get("weighted"):
        return None
    y = np.asarray(y).reshape(-1)
    classes = weighting.get("classes")
    b = np.zeros(len(y)) if classes is None else np.where(y == classes[1], 1.0, -1.0)
    cfg = SimpleNamespace(weighted=True, class_weight=weighting.get("class_weight"),
                          weight_scale=weighting["weight_scale"])
    return row_weights(cfg, sample_weight, b, (0,), (len(y),))


def _delayed_weights(weighting: dict, sample_weight, y):
    """:func:`_chunk_weights` of one chunk as a Dask task (None when unweighted)."""
    if not weighting.get("weighted"):
        return None
    return dask.delayed(_chunk_weights, pure=True)(weighting, sample_weight, y)


def _factorized_block(u, w, intercept):
    return (np.asarray(u, dtype=np.float64) @ w + intercept)[:, None]


def _is_lazy(U) -> bool:
    from ooc_kernels.data.inputs import is_lazy_input

    return is_lazy_input(U)


def _lambda_stats(rows, V, m, q, scaling, factorized, weights=None, shift=None, scale=None,
                  origin=None):
    """Per-chunk statistics of ``Lambda_{q,m}`` of the rows the solver sees (standardized
    with ``shift`` and ``scale`` when given, with the intercept column, if any), times
    ``sqrt(w_i)`` for a weighted problem; the rows are checked for NaN/inf first when
    ``origin`` is given (:func:`_finite_rows`)."""
    rows = _finite_rows(rows, origin)
    from ooc_kernels.families.dspdc._scaling import model_rows, model_V
    from ooc_kernels.families.dspdc.lambda_stats import (
        chunk_lambda_stats,
        factorized_chunk_lambda_stats,
    )
    from ooc_kernels.families.dspdc.solver import DSPDCConfig

    cfg = DSPDCConfig(loss_id=0, n_samples=1, n_features=1, lam1=0.0, lam2=1.0, Lambda=1.0,
                      intercept_scaling=scaling, factorized=factorized,
                      x_shift=shift, x_scale=scale)
    rows = model_rows(cfg, rows)
    if weights is not None:
        rows = np.sqrt(np.asarray(weights, dtype=np.float64))[:, None] * rows
    if factorized:
        V = model_V(V, cfg)
        return factorized_chunk_lambda_stats(rows, V, m, min(q, V.shape[1]))
    return chunk_lambda_stats(rows, m, min(q, rows.shape[1]))


def _moments_chunk(rows, V, weights=None, origin=None):
    """The column moments of one chunk (:func:`~ooc_kernels.families.dspdc._scaling.
    chunk_moments`) under the fit's row weights; the rows are checked for NaN/inf first
    when ``origin`` is given (:func:`_finite_rows`)."""
    from ooc_kernels.families.dspdc._scaling import chunk_moments

    return chunk_moments(_finite_rows(rows, origin), weights, V)
