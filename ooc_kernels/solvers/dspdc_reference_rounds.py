"""DSPDC's rounds written out sequentially in plain NumPy: the oracle of the contract suite.

One round per chunk, in storage order (``K = 1``, so ``sigma' = 1``): the chunk's CoCoA+
subproblem in the paper's form (``docs/algorithms/dspdc_rounds.md``) solved by Algorithm 1
written literally (``ybar`` and ``A^T ybar`` formed in full at every iteration, the dual prox
by its closed form or by a root finder) from the carried primal, the duals kept in a dict,
then ``w``, ``sum phi*`` and the new primal.  Only the sampler, the uniforms and the step parameters are shared with
:class:`~ooc_kernels.solvers.dspdc.DSPDCAlgorithm` (they are tested on their own).

Examples
--------
>>> from ooc_kernels.solvers.dspdc import make_case
>>> from ooc_kernels.solvers.dspdc_reference_rounds import sequential_dspdc
>>> state = sequential_dspdc(make_case(0))
>>> state.n_rounds, bool(state.conj_sum < 0)
(4, True)
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy.optimize import brentq

__all__ = ["sequential_dspdc", "dual_argmax"]


def _conj(loss_id: int, beta: np.ndarray, b: np.ndarray) -> np.ndarray:
    """phi*(beta) written from the table of ``specs/dspdc.md`` 7.2."""
    if loss_id == 0:
        return 0.5 * beta ** 2 + b * beta
    s = np.clip(b * beta, -1.0, 0.0)
    if loss_id == 1:
        return b * beta + 0.5 * beta ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(-s > 0, -s * np.log(-s), 0.0) + np.where(1 + s > 0,
                                                                 (1 + s) * np.log1p(s), 0.0)


def dual_argmax(loss_id: int, c: float, y: float, b: float, sigma: float, n: float) -> float:
    """argmax_beta (1/n) c beta - (1/n) phi*(beta) - (beta - y)^2 / (2 sigma)."""
    if loss_id in (0, 1):   # phi*(beta) = beta^2 / 2 + b beta: a concave quadratic
        hat = (sigma * (c - b) + n * y) / (sigma + n)
        return hat if loss_id == 0 else b * float(np.clip(b * hat, -1.0, 0.0))

    # logistic: in s = b beta in (-1, 0), the derivative (1/n)(c - b log((1+s)/(-s)))
    # - (beta - y)/sigma is decreasing in beta; find its root
    def slope(s):
        beta = b * s
        return c / n - b * np.log((1 + s) / (-s)) / n - (beta - y) / sigma

    lo, hi = -1 + 1e-15, -1e-300
    f_lo, f_hi = slope(lo), slope(hi)
    if np.sign(f_lo) == np.sign(f_hi):        # the root is at the boundary's float limit
        return b * (lo if abs(f_lo) < abs(f_hi) else hi)
    return b * brentq(slope, lo, hi, xtol=1e-300, rtol=1e-15, maxiter=500)


def _local_solve(A, b, y0, x, lam1, lam2, shift, m, q, theta, tau, sigma, row_u, col_u,
                 loss_id):
    from ooc_kernels._jit.dspdc import sample_without_replacement_ref

    n_k, p = A.shape
    beta, a, abar = y0.copy(), x.copy(), x.copy()
    for t in range(len(row_u)):
        I = sample_without_replacement_ref(n_k, m, row_u[t])
        J = sample_without_replacement_ref(p, q, col_u[t])
        y_prev = beta.copy()
        for i in I:
            beta[i] = dual_argmax(loss_id, float(A[i] @ abar), y_prev[i], b[i], sigma, n_k)
        ybar = y_prev + (n_k / m) * (beta - y_prev)
        g = A.T @ ybar
        a_prev = a.copy()
        for j in J:   # argmin lam1|u| + lam2/2 u^2 - shift_j u + (u - v)^2 / (2 tau)
            v = a[j] - tau * g[j] / n_k + tau * shift[j]
            a[j] = np.sign(v) * max(abs(v) - tau * lam1, 0.0) / (1 + tau * lam2)
        abar = a_prev + (theta + 1) * (a - a_prev)
    return beta, a, len(row_u) * m


def sequential_dspdc(case):
    """The state after one pass over ``case.chunks`` with one chunk per round."""
    from ooc_kernels.solvers._dspdc_local import (
        encode_labels,
        local_parameters,
        local_problem,
        task_uniforms,
    )

    alg, state = case.algorithm, case.state
    cfg = alg.config
    duals = {}
    for r, chunk in enumerate(case.chunks):
        # one in-memory chunk of the contract's small case (the oracle never sees a store)
        rows = np.asarray(chunk["U"] if cfg.factorized else chunk["X"], dtype=np.float64)
        A = rows @ alg.V if cfg.factorized else rows
        n_k = len(A)
        b = encode_labels(cfg, chunk["y"], (r,), (n_k,))
        y0 = duals.get(r, np.zeros(n_k))
        aty_k = A.T @ y0
        aty = alg.V.T @ state.w if cfg.factorized else state.w
        lam1, lam2, shift = local_problem(cfg, aty, aty_k, n_k, 1)
        m, theta, tau, sigma = local_parameters(cfg, n_k, lam2)
        row_u, col_u = task_uniforms(cfg, case.seed, 0, r, r, n_k, m)
        beta, a, updates = _local_solve(A, b, y0, state.x, lam1, lam2, shift, m, cfg.q, theta,
                                        tau, sigma, row_u, col_u, cfg.loss_id)
        duals[r] = beta
        dw = rows.T @ (beta - y0)
        state = replace(state, w=state.w + dw, x=a,
                        conj_sum=state.conj_sum + float(np.sum(_conj(cfg.loss_id, beta, b))
                                                        - np.sum(_conj(cfg.loss_id, y0, b))),
                        versions=state.versions.updated([r], (0, r)),
                        n_iter=state.n_iter + len(row_u),
                        n_dual_updates=state.n_dual_updates + updates,
                        n_rounds=state.n_rounds + 1)
    return state
