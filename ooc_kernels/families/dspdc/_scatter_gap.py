"""The squared loss's certificate from the set-up's scatter: one read of the store.

Out of core the set-up's read gathers the scatter of ``[X, b]``
(:mod:`~ooc_kernels.families.dspdc._squared_start`) and the fit starts from the solution
``x_0`` of the standardized problem with the duals ``y_i = a_i^T x_0 - b_i`` optimal for it.
Every term of the duality gap at that start is a function of ``G = A^T W A``, ``c = A^T W
b``, ``b^T W b`` and ``x_0``::

    n P = 1/2 (x_0^T G x_0 - 2 c^T x_0 + b^T W b) + n g(x_0)          (the losses' sum L)
    n D = -sum_i w_i phi*(y_i) - n g*(-A^T W y / n),
          sum_i w_i phi*(y_i) = 1/2 (x_0^T G x_0 - b^T W b),  A^T W y = G x_0 - c,

(``g*`` coordinate-wise: ``max(|u| - lam1, 0)^2 / (2 lam2)``).  The fit's state already holds
the dual side (``start_w``, ``start_conj``); :func:`scatter_gap` adds ``L`` and a bound
``E`` on the floating-point error of ``n (P - D)`` computed this way: the scatter's own
rounding and the cancellation of ``x^T G x - 2 c^T x + b^T W b`` when the residuals are
small against ``b``.  With ``M = [A, b]^T W [A, b]`` (``G``, ``c``, ``b^T W b``), ``d_j =
sqrt(M_jj)`` and ``r_j`` the root of the weighted sum of squares of the numbers the
scatter was computed from (column ``j`` before centring, in ``A``'s units), each computed
entry is taken within

    |dM_jk| <= gamma (d_j d_k + r_j d_k + d_j r_k) + gamma^2 r_j r_k,
    gamma = 2 (n_c + 2 K + p + 4) eps,

``n_c`` the most rows of a chunk and ``K`` the chunks.  A chunk's scatter is a dot product
of ``n_c`` centred rows (within ``n_c eps d_j d_k``, and its centring ``eps`` of each value:
``eps r_j d_k``), about its mean, a sum of ``n_c`` numbers within ``delta_c <= n_c eps r_jc
/ sqrt(W_c)``.  The scatter about a mean off by ``delta_c`` is the exact one plus ``W_c
delta_c^2`` (second order), and the merge (Chan et al.'s update, ``K`` steps of relative
rounding ``eps``) adds the chunks' means' scatter as if they were exact: it misses ``W_c
delta_c (mu_c - s)`` per chunk, which over the chunks is at most ``n_c eps r_j d_k``
(Cauchy-Schwarz: ``sum_c sqrt(W_c) |mu_c - s| r_c <= d r``).  A quadratic form ``v^T M v``
is then within ``gamma (D_v^2 + 2 R_v D_v) + gamma^2 R_v^2`` (``D_v = sum_j |v_j| d_j``,
``R_v = sum_j |v_j| r_j``) of the exact one, plus ``(p + 3) eps D_v^2`` for its own
evaluation; ``L`` is ``v = [x_0, -1]``, the conjugates' sum ``[x_0, 0]`` and ``[0, 1]``, and
an entry of ``G x_0 - c`` (row ``j`` of ``M`` times ``v``) enters ``n g*`` through its slope
``|x_j'| = max(|u_j| - lam1, 0) / lam2`` and its curvature ``1 / (n lam2)``.  The penalty's
and the final sums' rounding add ``(p + 8) eps`` times their magnitudes.

The start certifies ``tol`` at the set-up when ``n (P - D) + E <= tol n |P|``
(:func:`setup_runner`, with the data's chunks): the fit then ends after the set-up's read,
with the attributes of a fit whose first epoch's first task certified the start
(``n_iter_ = 1``, one entry of ``gap_history_``, the model ``x_0``, a checkpoint at the start
whose chunks' duals are at their initial version).  Otherwise, or where ``E`` is not small
against ``tol n |P|`` (tiny ``tol``, or residuals small against ``b``), the first epoch's
first task sums the losses over the rows and checks the start there.

The logistic loss's start out of core ends its fits the same way
(:mod:`~ooc_kernels.families.dspdc._ooc_newton`): the last of Newton's passes over the rows
sums the losses at the start row by row, as the first epoch's tasks would, so that sum
certifies the start with the state's duals (:func:`certified_loss`, no bound to add) and the
fit ends after the set-up's reads.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dspdc._squared_start import chunk_scatter, squared_start
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(500, 3)); b = X @ [1.0, -2.0, 0.5] + rng.normal(size=500)
>>> scatter = chunk_scatter(X, b, None)
>>> start = squared_start(scatter, {}, 0.0, 0.1, 500, lam1=0.05)
>>> L, bound = scatter_gap(scatter, {}, 0.0, start["start_x"], 0.05, 0.1, 500)
>>> x = np.asarray(start["start_x"])
>>> bool(np.isclose(L, 0.5 * np.sum((X @ x - b) ** 2), rtol=1e-12)), 0 < bound < 1e-9 * L
(True, True)
"""

from __future__ import annotations

import numpy as np

__all__ = ["certified_loss", "scatter_gap", "setup_runner"]

EPS = float(np.finfo(np.float64).eps)


def _form_error(v, d, r, gamma: float, p: int) -> float:
    """The bound on the error of the quadratic form ``v^T M v`` (the module docstring)."""
    D, R = float(np.abs(v) @ d), float(np.abs(v) @ r)
    return gamma * (D * D + 2.0 * R * D) + gamma * gamma * R * R + (p + 3) * EPS * D * D


def scatter_gap(scatter, scaled: dict, scaling: float, x0, lam1: float, lam2: float,
                n: int, chunk_rows: int | None = None, n_chunks: int = 1):
    """``(L, E)``: the losses' sum ``L = 1/2 sum_i w_i (a_i^T x_0 - b_i)^2`` at ``x0`` from
    the merged scatter of ``[X, b]`` (standardized with ``scaled``, the intercept's column
    ``scaling``) of ``n`` rows in ``n_chunks`` chunks of at most ``chunk_rows`` rows (None:
    ``n``), and the bound ``E`` on the floating-point error of ``n (P - D)`` computed from
    the scatter (the module docstring); None when a value is not finite."""
    from ooc_kernels.families.dspdc._squared_start import standardized_scatter

    terms = standardized_scatter(scatter, scaled, scaling)
    if terms is None:
        return None
    G, c, bwb, raw = terms
    x = np.asarray(x0, dtype=np.float64)    # the start's p coefficients
    p = len(x)
    M = np.empty((p + 1, p + 1))
    M[:p, :p], M[:p, p], M[p, :p], M[p, p] = G, c, c, bwb
    with np.errstate(all="ignore"):
        d = np.sqrt(np.maximum(np.diag(M), 0.0))
        r = np.sqrt(np.maximum(raw, np.diag(M)))
        gamma = 2.0 * ((n if chunk_rows is None else chunk_rows) + 2 * n_chunks + p + 4) * EPS
        v = np.append(x, -1.0)
        L = 0.5 * float(v @ M @ v)
        err_loss = 0.5 * _form_error(v, d, r, gamma, p)
        err_conj = 0.5 * (_form_error(np.append(x, 0.0), d, r, gamma, p)
                          + _form_error(np.eye(p + 1)[p], d, r, gamma, p))
        Dv, Rv = float(np.abs(v) @ d), float(np.abs(v) @ r)
        dw = (gamma * (d[:p] * Dv + r[:p] * Dv + d[:p] * Rv) + gamma * gamma * r[:p] * Rv
              + (p + 3) * EPS * d[:p] * Dv)                  # |error| of G x_0 - c
        u = np.abs(G @ x - c) / n
        slope = np.maximum(u - lam1, 0.0) / lam2
        err_gstar = float(np.sum(slope * dw + dw * dw / (2.0 * n * lam2)))
        penalty = n * float(np.sum(0.5 * lam2 * x * x + lam1 * np.abs(x)))
        gstar = n * float(np.sum(np.maximum(u - lam1, 0.0) ** 2 / (2.0 * lam2)))
        conj = 0.5 * abs(float(x @ G @ x)) + 0.5 * abs(bwb)
        err_sums = (p + 8) * EPS * (abs(L) + penalty + gstar + conj)
        bound = err_loss + err_conj + err_gstar + err_sums
    if not (np.isfinite(L) and np.isfinite(bound)):
        return None
    return L, float(bound)


def setup_runner(estimator, start):
    """The rounds' runner of a fit whose set-up summed the losses at its start and that
    starts at its beginning from that start with a ``tol``: the squared loss's scatter
    (``estimator._setup_scatter``, :func:`scatter_gap`) or the logistic loss's losses from
    the last of Newton's passes over the rows (``estimator._setup_losses``,
    :mod:`~ooc_kernels.families.dspdc._ooc_newton`), both taken here.  Where the start's
    gap certifies ``tol`` (:func:`certified_loss`; for the scatter with its bound ``E``,
    the data's chunks) it runs the first epoch's rounds without reading the rows (no
    iterations, those losses) and ends the fit there; else it runs the rounds
    (:func:`~ooc_kernels.parallel.engine.run_rounds`).  None (the usual runner)
    otherwise."""
    scatter = estimator.__dict__.pop("_setup_scatter", None)
    losses = estimator.__dict__.pop("_setup_losses", None)
    setup = scatter if scatter is not None else losses
    cfg, state, tol = estimator._config, estimator._state, estimator.tol
    if (setup is None or tol is None or tuple(start) != (0, 0) or cfg.start_x is None
            or setup[1] != cfg.start_x or state.n_rounds or cfg.factorized):
        return None
    if scatter is not None:
        def found(config, state, tol, data):
            return _setup_loss(config, state, scatter[0], tol, data)
    else:
        def found(config, state, tol, data):
            return certified_loss(config, state, float(losses[0]), 0.0, tol)
    return _runner(found, float(tol), estimator._record_local_problems)


def certified_loss(config, state, loss: float, bound: float, tol: float):
    """``loss`` (the losses' sum ``L`` at ``state.x``, the start) where the start's gap,
    ``P`` from ``L`` and ``D`` from the state's duals, less ``bound / n`` on ``D`` (a bound
    on the error of ``n (P - D)``), certifies ``tol``; else None."""
    import dataclasses

    from ooc_kernels.families.dspdc.solver import _certified

    n = int(config.n_samples)
    summed = dataclasses.replace(state, epoch_start=state, start_loss=loss, start_rows=n)
    primal = summed.start_primal_value(config)
    with np.errstate(over="ignore", invalid="ignore"):
        dual = state.dual_value(config)
    if primal is None or not _certified(primal, dual - bound / n, tol):
        return None
    return loss


def _setup_loss(config, state, scatter, tol: float, data):
    """The start's losses ``L`` when the scatter's gap and its bound certify ``tol``, else
    None."""
    n = int(config.n_samples)
    scaled = {"x_shift": config.x_shift, "x_scale": config.x_scale, "y_shift": config.y_shift}
    found = scatter_gap(scatter, scaled, float(config.intercept_scaling), config.start_x,
                        float(config.lam1), float(config.lam2), n,
                        chunk_rows=max(data.chunk_sizes), n_chunks=int(data.n_chunks))
    if found is None:
        return None
    return certified_loss(config, state, *found, tol)


def _runner(found, tol: float, record):
    """:func:`~ooc_kernels.parallel.engine.run_rounds`' signature: where ``found(config,
    state, tol, data)`` gives the start's certified losses, the first epoch's rounds with no
    reads and no iterations.  The rounds before the last only ``record`` their tasks' steps
    (the estimator's ``_record_local_problems``): no checkpoint is written inside that
    epoch, whose partial sums would hold the set-up's losses of rows that no task
    summed."""

    def run(algorithm, state, data, *, n_epochs, chunks_per_round, seed, shuffle,
            shuffle_chunks, callback=None, epoch_callback=None, **engine):
        from ooc_kernels.families.dspdc._local import local_step_parameters
        from ooc_kernels.families.dspdc.solver import DSPDCDelta
        from ooc_kernels.parallel.engine import (RunResult, end_round, make_round_info,
                                                 run_rounds)
        from ooc_kernels.parallel.plan import plan_epoch

        kwargs = dict(n_epochs=n_epochs, chunks_per_round=chunks_per_round, seed=seed,
                      shuffle=shuffle, shuffle_chunks=shuffle_chunks, callback=callback,
                      epoch_callback=epoch_callback, **engine)
        cfg = algorithm.config
        loss = found(cfg, state, tol, data) if n_epochs >= 1 else None
        if loss is None:
            return run_rounds(algorithm, state, data, **kwargs)
        plan = plan_epoch(data.n_chunks, chunks_per_round=chunks_per_round, seed=seed,
                          epoch=0, shuffle=shuffle, shuffle_chunks=shuffle_chunks)
        zero = np.zeros_like(state.x)
        for rnd in range(len(plan)):
            info = make_round_info(plan, 0, rnd, sizes=data.chunk_sizes, seed=seed)
            k = len(info.groups)
            steps = tuple((n_k, k, *(float(v) for v in local_step_parameters(cfg, n_k, k)[1:]))
                          for n_k in (sum(s) for s in info.sizes) if n_k)
            delta = DSPDCDelta(dw=zero, x_sum=zero, steps=steps,
                               start_loss=loss if rnd == 0 else 0.0,
                               start_rows=int(cfg.n_samples) if rnd == 0 else 0)
            state = algorithm.apply(state, delta, info)
            if rnd < len(plan) - 1:
                record(info, state)
            elif end_round(state, info, last=True, epoch_callback=epoch_callback,
                           callback=callback):
                return RunResult(state=state, epoch=1, round=0, n_rounds=rnd + 1,
                                 stopped=True)
        return run_rounds(algorithm, state, data, **{**kwargs, "start_epoch": 1,
                                                     "start_round": 0})

    return run
