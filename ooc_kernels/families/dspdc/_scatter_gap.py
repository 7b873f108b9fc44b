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
    gamma = 2 (n + p + 4) eps:

the dot products of centred columns (``n eps d_j d_k``), the means they are centred with
(a sum of ``n`` numbers: ``n eps r_j / sqrt(W)``, first order against ``d_k``, second order
against itself) and the pairwise merge of the chunks, which adds such terms once per level.
A quadratic form ``v^T M v`` is then within ``gamma (D_v^2 + 2 R_v D_v) + gamma^2 R_v^2``
(``D_v = sum_j |v_j| d_j``, ``R_v = sum_j |v_j| r_j``) of the exact one, plus ``(p + 3) eps
D_v^2`` for its own evaluation; ``L`` is ``v = [x_0, -1]``, the conjugates' sum ``[x_0, 0]``
and ``[0, 1]``, and an entry of ``G x_0 - c`` (row ``j`` of ``M`` times ``v``) enters ``n
g*`` through its slope ``|x_j'| = max(|u_j| - lam1, 0) / lam2`` and its curvature ``1 /
(n lam2)``.  The penalty's and the final sums' rounding add ``(p + 8) eps`` times their
magnitudes.

The start certifies ``tol`` at the set-up when ``n (P - D) + E <= tol n |P|``
(:func:`setup_runner`): the fit then ends after the set-up's read, with the attributes of a
fit whose first epoch's first task certified the start (``n_iter_ = 1``, one entry of
``gap_history_``, the model ``x_0``, a checkpoint at the start whose chunks' duals are at
their initial version).  Otherwise, or where ``E`` is not small against ``tol n |P|`` (tiny
``tol``, or residuals small against ``b``), the first epoch sums the losses over the rows
as before.

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

__all__ = ["scatter_gap", "setup_runner"]

EPS = float(np.finfo(np.float64).eps)


def _form_error(v, d, r, gamma: float, p: int) -> float:
    """The bound on the error of the quadratic form ``v^T M v`` (the module docstring)."""
    D, R = float(np.abs(v) @ d), float(np.abs(v) @ r)
    return gamma * (D * D + 2.0 * R * D) + gamma * gamma * R * R + (p + 3) * EPS * D * D


def scatter_gap(scatter, scaled: dict, scaling: float, x0, lam1: float, lam2: float,
                n: int):
    """``(L, E)``: the losses' sum ``L = 1/2 sum_i w_i (a_i^T x_0 - b_i)^2`` at ``x0`` from
    the merged scatter of ``[X, b]`` (standardized with ``scaled``, the intercept's column
    ``scaling``) and the bound ``E`` on the floating-point error of ``n (P - D)`` computed
    from the scatter (the module docstring); None when a value is not finite."""
    from ooc_kernels.families.dspdc._squared_start import standardized_scatter

    terms = standardized_scatter(scatter, scaled, scaling)
    if terms is None:
        return None
    G, c, bwb, raw = terms
    x = np.asarray(x0, dtype=np.float64)
    p = len(x)
    M = np.empty((p + 1, p + 1))
    M[:p, :p], M[:p, p], M[p, :p], M[p, p] = G, c, c, bwb
    with np.errstate(all="ignore"):
        d = np.sqrt(np.maximum(np.diag(M), 0.0))
        r = np.sqrt(np.maximum(raw, np.diag(M)))
        gamma = 2.0 * (n + p + 4) * EPS
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
    """The rounds' runner of a fit whose start the set-up's scatter certifies: it runs the
    first epoch's rounds without reading the rows (no iterations, the losses ``L`` of
    :func:`scatter_gap`) and ends the fit there.  None (the fit reads the rows) unless this
    fit's set-up gathered the scatter (``estimator._setup_scatter``, taken here), the fit
    starts at its beginning from that start, has a ``tol``, and ``n (P - D) + E <= tol n
    |P|``."""
    import dataclasses

    from ooc_kernels.families.dspdc.solver import _certified

    setup = estimator.__dict__.pop("_setup_scatter", None)
    cfg, state, tol = estimator._config, estimator._state, estimator.tol
    if (setup is None or tol is None or tuple(start) != (0, 0) or cfg.start_x is None
            or setup[1] != cfg.start_x or state.n_rounds or cfg.factorized):
        return None
    scaled = {"x_shift": cfg.x_shift, "x_scale": cfg.x_scale}
    n = int(cfg.n_samples)
    found = scatter_gap(setup[0], scaled, float(cfg.intercept_scaling), cfg.start_x,
                        float(cfg.lam1), float(cfg.lam2), n)
    if found is None:
        return None
    loss, bound = found
    summed = dataclasses.replace(state, epoch_start=state, start_loss=loss, start_rows=n)
    primal = summed.start_primal_value(cfg)
    with np.errstate(over="ignore", invalid="ignore"):
        dual = state.dual_value(cfg)
    if primal is None or not _certified(primal, dual - bound / n, float(tol)):
        return None
    return _runner(loss)


def _runner(loss: float):
    """:func:`~ooc_kernels.parallel.engine.run_rounds`' signature: the first epoch's rounds
    with no reads and no iterations, ``loss`` the start's losses over all the rows."""

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
        if n_epochs < 1:
            return run_rounds(algorithm, state, data, **kwargs)
        cfg = algorithm.config
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
            if end_round(state, info, last=rnd == len(plan) - 1,
                         epoch_callback=epoch_callback, callback=callback):
                return RunResult(state=state, epoch=1, round=0, n_rounds=rnd + 1,
                                 stopped=True)
        return run_rounds(algorithm, state, data, **{**kwargs, "start_epoch": 1,
                                                     "start_round": 0})

    return run
