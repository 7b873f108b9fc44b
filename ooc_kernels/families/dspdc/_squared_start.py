"""The squared loss's start out of core: the solution of the solver's problem from the
set-up's read.

Out of core a DSPDC fit reads the store once for its set-up (the column moments and
``Lambda``, :mod:`~ooc_kernels.families.dspdc._setup_pass`) and once per epoch.  For the
squared loss with few columns (the start's rule,
:mod:`~ooc_kernels.families.dspdc._start_rule`) the set-up's first read of the rows (a read
of its own where the set-up reads none) also gathers the scatter matrix of the raw columns
and the targets, ``[X, b]^T W [X, b]`` about their means (``(p + 1)^2`` numbers per chunk,
merged by Chan et al.'s pairwise update like the moments), from which the solver's problem
``A`` (standardized or raw columns, with the intercept's column) gives

    H = A^T W A / n,    c = A^T W b / n,    x_0 = (H + lam2 I)^{-1} c

(``lam2`` the l2 part of ``alpha``: the ridge solution).  With an l1 part (``l1_ratio > 0``)
``x_0`` is the elastic net's solution instead, by coordinate descent on ``H + lam2 I`` from
the ridge solution (:func:`~ooc_kernels.families.dspdc.kernels_start.gram_elastic_net`, the
in-memory start's descent, :mod:`~ooc_kernels.families.dspdc._memory_start`).  The fit
starts from ``x_0`` and from the duals
that are optimal for it, ``y_i = phi'(a_i^T x_0) = a_i^T x_0 - b_i``; their sums follow from
the same matrix without a pass:

    A^T W y = n (H x_0 - c),    sum_i w_i phi*(y_i) = n/2 x_0^T H x_0 - 1/2 b^T W b.

A chunk's duals at their initial version are computed by the task that first reads it,
from its rows and ``x_0`` (:func:`initial_duals`), instead of the zeros of other fits.  The
certificate is the duality gap of the user's problem as always; with ``x_0`` the solution,
the gap from the same scatter, with a bound on its rounding, certifies the start at the
set-up, and the fit ends after that one read of the store
(:mod:`~ooc_kernels.families.dspdc._scatter_gap`; else the first epoch's first task
certifies it from the rows).  Only where the
scatter costs little against an epoch: at most :data:`START_MAX_FEATURES` columns
(``n p^2 / 2`` products per read, against ``n p`` per pass of an epoch).

Examples
--------
One chunk holding a small ridge problem: ``x_0`` is the closed-form solution of the
standardized problem.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X, b = rng.normal(size=(200, 3)), rng.normal(size=200)
>>> from ooc_kernels.families.dspdc._scaling import standardization
>>> scatter = chunk_scatter(X, b, None)
>>> scaled = standardization((scatter[0], scatter[1][:3], np.diag(scatter[2])[:3]), True)
>>> start = squared_start(scatter, scaled, 1.0, 0.1, 200)
>>> A = np.column_stack([(X - scaled["x_shift"]) / scaled["x_scale"], np.ones(200)])
>>> exact = np.linalg.solve(A.T @ A / 200 + 0.1 * np.eye(4), A.T @ b / 200)
>>> bool(np.allclose(start["start_x"], exact, rtol=1e-10, atol=1e-12))
True
"""

from __future__ import annotations

import numpy as np

__all__ = ["MAX_SWEEPS", "START_MAX_FEATURES", "SWEEP_TOL", "chunk_scatter", "initial_duals",
           "squared_start", "standardized_scatter"]

#: The most columns of the solver (the intercept's included) for which the set-up gathers
#: the scatter matrix and the fit starts from the solution of the standardized problem (the
#: logistic loss's Newton start has a lower limit of its own,
#: :data:`~ooc_kernels.families.dspdc._logistic_start.NEWTON_MAX_FEATURES`).  At 200 and
#: 400 columns the scatter's ``n p^2 / 2`` products a read still cost less than the 10 to
#: 43 epochs that a fit from zero takes to ``1e-4``; its ``p x p`` matrix is 2 MB here.
START_MAX_FEATURES = 512
#: The most sweeps of the elastic net's coordinate descent on the ``p x p`` matrix (``p^2``
#: products each).
MAX_SWEEPS = 1000
#: The descent stops once a sweep moves no coordinate by more than this times the largest.
SWEEP_TOL = 1e-13


def chunk_scatter(rows, y, weights):
    """``(W, mean, M2)`` of one chunk's ``[X, b]``: the weight sum, the weighted means of the
    columns and the targets, and their weighted scatter matrix about those means
    (``(p + 1, p + 1)``); the moments' form that
    :func:`~ooc_kernels.families.dspdc._scaling.combine_moments` merges.  None when a target
    is not a number: no start, and the rounds name the value
    (:func:`~ooc_kernels.families.dspdc._local.encode_labels`)."""
    try:
        b = np.asarray(y).reshape(-1).astype(np.float64)   # one chunk's targets
    except (TypeError, ValueError):
        return None
    rows = np.asarray(rows)                    # one chunk and its targets, in one array
    Z = np.empty((len(rows), rows.shape[1] + 1))
    Z[:, :-1] = rows
    Z[:, -1] = b
    w = None if weights is None else np.asarray(weights, dtype=np.float64)   # one chunk's
    W = float(len(Z)) if w is None else float(w.sum())
    if W <= 0:
        k = Z.shape[1]
        return 0.0, np.zeros(k), np.zeros((k, k))
    with np.errstate(all="ignore"):   # huge values: inf, and no start (squared_start)
        mean = (Z.sum(axis=0) if w is None else w @ Z) / W
        Z -= mean                              # centred in place
        weighted = Z if w is None else w[:, None] * Z
        return W, mean, weighted.T @ Z


def standardized_scatter(scatter, scaled: dict, scaling: float):
    """``(G, c, bwb, raw)`` of the merged scatter of ``[X, y]`` under the standardization
    ``scaled`` (``x_shift``, ``x_scale``; empty: none), the targets ``b = y - y_shift``
    (``scaled["y_shift"]``, 0 when absent) and the intercept's column
    ``scaling`` (0: none): ``G = A^T W A``, ``c = A^T W b``, ``bwb = b^T W b`` and ``raw``,
    the weighted sums of squares of the numbers the scatter was computed from, in the units
    of ``A``'s columns and then ``b`` (``sum_i w_i (X_ij / scale_j)^2``, the intercept's
    ``scaling^2 W``, ``sum_i w_i b_i^2``: the magnitudes of the scatter's rounding errors,
    :mod:`~ooc_kernels.families.dspdc._scatter_gap`); None when a value is not finite."""
    W, mean, M2 = scatter
    # the merged scatter: p + 1 means and a (p + 1, p + 1) matrix, not rows
    mean, M2 = np.asarray(mean, dtype=np.float64), np.asarray(M2, dtype=np.float64)
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(M2))):
        return None
    p = len(mean) - 1
    shift = np.asarray(scaled.get("x_shift") or np.zeros(p), dtype=np.float64)
    scale = np.asarray(scaled.get("x_scale") or np.ones(p), dtype=np.float64)
    with np.errstate(all="ignore"):
        e = (mean[:p] - shift) / scale          # the standardized columns' weighted means
        mb = mean[p] - float(scaled.get("y_shift", 0.0))   # the targets' less y_shift
        G = M2[:p, :p] / np.outer(scale, scale) + W * np.outer(e, e)
        c = M2[:p, p] / scale + W * e * mb
        raw = np.append((np.diag(M2)[:p] + W * mean[:p] ** 2) / scale ** 2,
                        M2[p, p] + W * mean[p] ** 2)
        if scaling:
            G = np.block([[G, (scaling * W * e)[:, None]],
                          [scaling * W * e[None, :], np.array([[scaling ** 2 * W]])]])
            c = np.append(c, scaling * W * mb)
            raw = np.insert(raw, p, scaling ** 2 * W)
        bwb = M2[p, p] + W * mb ** 2
    if not (np.all(np.isfinite(G)) and np.all(np.isfinite(c)) and np.all(np.isfinite(raw))):
        return None
    return G, c, float(bwb), raw


def squared_start(scatter, scaled: dict, scaling: float, lam2: float, n: int,
                  lam1: float = 0.0) -> dict:
    """The configuration's start fields (``start_x``, ``start_w``, ``start_conj``: ``x_0``,
    ``A^T W y`` and ``sum_i w_i phi*(y_i)`` of the module docstring) from the merged
    scatter of ``[X, b]`` and the standardization ``scaled`` (``x_shift``, ``x_scale``),
    ``scaling`` the intercept's column (0: none), ``n`` the rows: the ridge solution, or with
    ``lam1 > 0`` the elastic net's, by coordinate descent on ``G / n + lam2 I`` from the
    ridge solution (:func:`~ooc_kernels.families.dspdc.kernels_start.gram_elastic_net`);
    empty (the zero start) when a value is not finite."""
    from ooc_kernels.families.dspdc.kernels_start import gram_elastic_net

    terms = standardized_scatter(scatter, scaled, scaling)
    if terms is None:
        return {}
    G, c, bwb, _ = terms
    with np.errstate(all="ignore"):
        Q = G / n + lam2 * np.eye(len(c))
        try:
            x0 = np.linalg.solve(Q, c / n)
        except np.linalg.LinAlgError:
            return {}
        if lam1 > 0.0 and np.all(np.isfinite(x0)):   # the elastic net from the ridge's
            gram_elastic_net(Q, c / n, float(lam1), x0, MAX_SWEEPS, SWEEP_TOL)
        w0 = G @ x0 - c
        conj = 0.5 * float(x0 @ G @ x0) - 0.5 * float(bwb)
    if not (np.all(np.isfinite(x0)) and np.all(np.isfinite(w0)) and np.isfinite(conj)):
        return {}
    return {"start_x": tuple(float(v) for v in x0), "start_w": tuple(float(v) for v in w0),
            "start_conj": conj}


def initial_duals(config, rows: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The duals of rows whose chunk is at its initial version: under a start
    (``config.start_x``) those optimal for ``x_0``, ``a_i^T x_0 - b_i`` (the squared loss)
    or ``phi_i'(a_i^T x_0)`` (the logistic loss's start in memory,
    :mod:`~ooc_kernels.families.dspdc._logistic_start`), else zeros."""
    from ooc_kernels.losses import LOSS_LOGISTIC

    if config.start_x is None:
        return np.zeros(len(rows))
    z = rows @ np.asarray(config.start_x, dtype=np.float64)   # rows: one task's chunks
    if int(config.loss_id) == LOSS_LOGISTIC:
        from ooc_kernels.families.dspdc._logistic_start import logistic_duals

        return logistic_duals(z, b)
    return z - b
