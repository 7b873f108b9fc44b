"""The starts in memory: the squared loss's ridge solution from one product of the rows
held, and the logistic loss's Newton solution
(:mod:`~ooc_kernels.families.dspdc._logistic_start`).

Out of core the set-up's read gathers the scatter of ``[X, b]`` chunk by chunk and the fit
starts from the ridge solution of the standardized problem and the duals optimal for it
(:mod:`~ooc_kernels.families.dspdc._squared_start`).  In memory the solver's rows ``A``
(standardized, with the intercept's column) are built once per fit
(:class:`~ooc_kernels.families.dspdc._direct.MemoryRows`), so the same start costs one BLAS
product of those rows, ``A^T W A`` (a symmetric rank-``n`` update), and ``A^T W b``:
:func:`memory_start` hands them to
:func:`~ooc_kernels.families.dspdc._squared_start.squared_start` as the scatter of
``[A, b]`` about the origin (no shift, no scale, the intercept's column among the rows), which
gives ``x_0 = (A^T W A / n + lam2 I)^{-1} A^T W b / n``.  With an l1 part (``l1_ratio >
0``) the squared loss's objective still depends on the rows only through that matrix, so
the elastic net itself is solved in the ``p``-space from ``x_0`` by coordinate descent on
``A^T W A / n + lam2 I`` (:func:`~ooc_kernels.families.dspdc.kernels_start.gram_elastic_net`,
at most :data:`~ooc_kernels.families.dspdc._squared_start.MAX_SWEEPS` sweeps of ``p^2``
products, no pass over the rows; the out-of-core start runs the same descent), and the fit
starts from its solution instead.

:func:`start_in_memory` then starts the fit there: the configuration's ``start_x``, the
state at ``x_0``, and the fused tasks' duals ``y_i = a_i^T x_0 - b_i`` with their conjugates
and the chunks' ``A_c^T (w y_c)`` computed from the rows (so the state's ``w`` and ``sum_i
w_i phi*(y_i)`` are the sums the tasks keep, not the scatter's).  Other in-memory tasks
(``m > 1`` or ``q < p``) take a chunk's initial duals from ``start_x`` as out of core.

The binary logistic loss with an l2 part and no l1 part starts likewise from Newton's
solution of the standardized problem on the rows held
(:func:`~ooc_kernels.families.dspdc._logistic_start.logistic_newton`, to the fit's ``tol``;
on wide rows, fewer rows than columns, its steps solved in the ``n``-space:
:mod:`~ooc_kernels.families.dspdc._wide_newton`),
with the duals ``y_i = phi_i'(a_i^T x_0)`` (:func:`logistic_memory_start`, and for the
fused tasks ``MemoryTasks.start_at``).

Where the squared loss's start applies: the squared loss with an l2 part (``alpha * (1 -
l1_ratio) > 0``), dense rows of at most
:data:`~ooc_kernels.families.dspdc._squared_start.START_MAX_FEATURES` solver columns (the
logistic loss's start has the same limit, and that switch turns both off).  The first task
checks the start's certificate before it iterates (``DSPDCAlgorithm.certifies_start``): with
``x_0`` the solution to rounding (or, for the logistic loss, within ``tol``), the fit ends
there after summing the losses of its rows once.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> A, b = rng.normal(size=(200, 4)), rng.normal(size=200)
>>> start = memory_start(A, b, None, 0.1)
>>> exact = np.linalg.solve(A.T @ A / 200 + 0.1 * np.eye(4), A.T @ b / 200)
>>> bool(np.allclose(start["start_x"], exact, rtol=1e-12, atol=1e-14))
True
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ooc_kernels.families.dspdc._squared_start import MAX_SWEEPS, SWEEP_TOL
from ooc_kernels.losses import LOSS_LOGISTIC

__all__ = ["MAX_SWEEPS", "SWEEP_TOL", "held_rows", "logistic_memory_start", "memory_start",
           "memory_start_applies", "start_in_memory"]



def held_rows(estimator, data):
    """The in-memory rows of ``estimator``'s fit on ``data``
    (:class:`~ooc_kernels.families.dspdc._direct.MemoryRows`), its configuration and state
    started where :func:`memory_start_applies` (:func:`start_in_memory`)."""
    from ooc_kernels.families.dspdc import _memory_inputs
    from ooc_kernels.families.dspdc._direct import MemoryRows

    rows = MemoryRows(estimator._config, data,
                      _memory_inputs.fit_memory_chunks(estimator, data))
    start_in_memory(estimator, rows)
    return rows


def memory_start_applies(config) -> bool:
    """Whether a fit of ``config`` on rows held in memory starts from the solution of a
    simpler problem: the start's rule
    (:func:`~ooc_kernels.families.dspdc._start_rule.start_kind`), the ridge or elastic
    net's solution for the squared loss, Newton's for the logistic loss."""
    from ooc_kernels.families.dspdc._start_rule import start_kind

    return start_kind(int(config.loss_id), float(config.lam1), float(config.lam2),
                      int(config.n_features), bool(config.factorized),
                      n=int(config.n_samples)) is not None


def memory_start(rows: np.ndarray, b: np.ndarray, weights, lam2: float,
                 lam1: float = 0.0) -> dict:
    """The start fields (``start_x``, ``start_w``, ``start_conj``) of the solver's rows
    ``rows`` (``(n, p)`` float64), their targets ``b`` and row weights (None: ones), from
    ``A^T W A``, ``A^T W b`` and ``b^T W b``: the ridge solution, or with ``lam1 > 0`` the
    elastic net's from it (both by
    :func:`~ooc_kernels.families.dspdc._squared_start.squared_start`, as out of core);
    empty (the zero start) when a value is not finite."""
    from ooc_kernels.families.dspdc._squared_start import squared_start

    n, p = rows.shape
    M = np.empty((p + 1, p + 1))
    with np.errstate(all="ignore"):           # huge values: inf, and no start
        wb = b if weights is None else weights * b
        M[:p, :p] = rows.T @ rows if weights is None else rows.T @ (weights[:, None] * rows)
        M[:p, p] = M[p, :p] = rows.T @ wb
        M[p, p] = float(b @ wb)
    W = float(n) if weights is None else float(weights.sum())
    return squared_start((W, np.zeros(p + 1), M), {}, 0.0, lam2, n, lam1)


def logistic_memory_start(rows: np.ndarray, b: np.ndarray, weights, lam2: float,
                          tol) -> dict:
    """The start fields of the logistic loss (``start_x``, ``start_w``, ``start_conj``) on
    the solver's rows ``rows``, labels ``b`` (``-1 / +1``) and row weights (None: ones):
    Newton's ``x_0`` (:func:`~ooc_kernels.families.dspdc._wide_newton.newton_solution`
    to the fit's ``tol``), the duals ``y = phi'(A x_0)``, ``A^T (w y)`` and ``sum_i w_i
    phi*(y_i)`` over the rows of weight ``> 0``; empty (the zero start) when a value is not
    finite."""
    from ooc_kernels.families.dspdc._logistic_start import logistic_duals
    from ooc_kernels.families.dspdc._wide_newton import newton_solution
    from ooc_kernels.families.dspdc.kernels_memory import row_conjugates

    z = np.empty(len(b))
    x0, _ = newton_solution(rows, b, weights, lam2, tol, margins=z)
    if x0 is None:
        return {}
    y = logistic_duals(z, b)                       # z = A x_0 from Newton's last pass
    conj = np.empty(len(y))
    row_conjugates(y, b, LOSS_LOGISTIC, conj)
    wy = y if weights is None else weights * y
    if weights is not None:
        conj = np.where(weights > 0.0, weights * conj, 0.0)
    w0, total = wy @ rows, float(conj.sum())
    if not (np.all(np.isfinite(w0)) and np.isfinite(total)):
        return {}
    return {"start_x": tuple(float(v) for v in x0), "start_w": tuple(float(v) for v in w0),
            "start_conj": total}


def start_in_memory(estimator, rows) -> None:
    """Start ``estimator``'s in-memory fit (its ``_config`` and ``_state``) and its rows'
    fused tasks (``rows``: :class:`~ooc_kernels.families.dspdc._direct.MemoryRows`) from
    :func:`memory_start` where :func:`memory_start_applies`; else leave them at zero."""
    from ooc_kernels.families.dspdc._local import encode_labels, row_weights
    from ooc_kernels.families.dspdc.solver import init_state

    cfg = estimator._config
    if not memory_start_applies(cfg):
        return
    fused = rows.fused
    if fused is not None:
        b, weights = fused.b, fused.weights
    else:
        labels, parts = [], []
        for k, block in enumerate(rows.blocks):
            yk = encode_labels(cfg, rows.variables["y"][k], (k,), (len(block),))
            sw = rows.variables.get("sample_weight")
            labels.append(yk)
            parts.append(row_weights(cfg, None if sw is None else sw[k], yk, (k,),
                                     (len(block),)))
        b = np.concatenate(labels).astype(np.float64)
        weights = None if parts[0] is None else np.concatenate(parts)
    tol = getattr(estimator, "tol", None)
    margins = None
    if int(cfg.loss_id) == LOSS_LOGISTIC and fused is not None:   # the sums from the tasks
        from ooc_kernels.families.dspdc._wide_newton import newton_solution

        margins = np.empty(len(b))                 # A x_0 from Newton's last pass
        x0, _ = newton_solution(rows.rows, b, weights, float(cfg.lam2), tol, margins=margins)
        start = {} if x0 is None else {"start_x": tuple(float(v) for v in x0)}
    elif int(cfg.loss_id) == LOSS_LOGISTIC:
        start = logistic_memory_start(rows.rows, b, weights, float(cfg.lam2), tol)
    else:
        start = memory_start(rows.rows, b, weights, float(cfg.lam2), float(cfg.lam1))
    if not start:
        return
    if fused is not None:     # the tasks' duals, conjugates and products at the start
        start.update(fused.start_at(np.asarray(start["start_x"], dtype=np.float64),
                                    int(cfg.loss_id), margins=margins))
    estimator._config = dataclasses.replace(cfg, **start)
    estimator._state = init_state(estimator._config, len(rows.blocks))
