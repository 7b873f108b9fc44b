"""DSPDC's rounds written out sequentially in plain NumPy: the oracle of the contract suite.

One round per chunk, in storage order (``K = 1``), for ``n_epochs`` passes.  Everything that
defines the rounds is written here again from ``docs/specs/dspdc.md`` and
``docs/algorithms/dspdc_rounds.md``, none of it taken from the chunk algorithm: the labels
``b_i`` (``+1`` for the second class), the rows ``a_i`` (with the intercept column; ``U V``
for factorized data), the round's subproblem and the state.  With ``K = 1`` the round on
chunk ``k`` is block coordinate ascent of the dual ``D(y)`` over the duals of that chunk,
the others fixed.  Writing ``r = sum_{j != k} A_j^T y_j`` (from the oracle's own duals),
the round solves::

    max_beta -g*(-(r + A_k^T beta) / n) - (1/n) sum_{i in k} phi_i*(beta_i)
    = max_beta min_a g(a) + (r + A_k^T beta)^T a / n - (1/n) sum_{i in k} phi_i*(beta_i)

which, multiplied by ``n / n_k``, is a saddle-point problem of the paper's form on the
``n_k`` rows of the chunk: the regularizer ``(n / n_k) g(a) + r^T a / n_k`` (strong
convexity ``(n / n_k) lam2``), the coupling ``(1/n_k) beta^T A_k a`` and the losses
``(1/n_k) sum phi_i*``.  Algorithm 1 runs on it literally (``ybar`` and ``A_k^T ybar`` formed
in full at every iteration, the dual step by a closed form or a root finder, the primal step
as the exact minimizer of its one-dimensional problem) from the carried primal and the
chunk's duals, for ``ceil(local_passes n_k / m)`` iterations.  The state is then recomputed
from the duals: ``w = sum_k A_k^T y_k`` (``U_k^T y_k`` for factorized data) and
``sum_i phi_i*(y_i)``.

A weighted problem (``sample_weight`` in the chunks, ``class_weight`` and ``weight_scale`` in
the configuration) is ``(1/n) sum_i w_i phi_i(a_i^T x) + g(x)``; the oracle solves it
literally as the unweighted problem on the rows ``sqrt(w_i) a_i`` with the losses
``psi_i(z) = w_i phi_i(z / sqrt(w_i))``, whose conjugates are ``w_i phi_i*(beta / sqrt(w_i))``
and whose dual step is ``sqrt(w_i)`` times the step of ``phi_i`` at
``(c / sqrt(w_i), beta / sqrt(w_i))`` (a row of weight 0 keeps ``beta_i = 0``).

Shared with :class:`~ooc_kernels.families.dspdc.solver.DSPDCAlgorithm`, and tested on their own:
the sampler of ``I`` and ``J`` (``tests/test_jit_kernels.py``), the uniforms of a task
(``tests/test_dspdc.py``) and the step parameters of the theorems for given ``(n, p, m, q,
Lambda, lambda, gamma)`` (``tests/test_dspdc_math.py``).

Examples
--------
>>> from ooc_kernels.families.dspdc.solver import make_case
>>> from ooc_kernels.families.dspdc.reference import sequential_dspdc
>>> state = sequential_dspdc(make_case(0))
>>> state.n_rounds, bool(state.conj_sum < 0)
(4, True)
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from scipy.optimize import brentq

from ooc_kernels.losses import loss_by_id

__all__ = ["sequential_dspdc", "dual_argmax"]

#: ``gamma``: the strong convexity of ``phi*`` (``phi`` is ``1/gamma``-smooth), per loss
#: (``docs/specs/dspdc.md`` §7.2).
_GAMMA = {"squared": 1.0, "smoothed_hinge": 1.0, "logistic": 4.0}


def _pass_gain() -> float:
    """The share of the round's dual rise below which a pass is the last (the rule's
    constant, not its code)."""
    from ooc_kernels.families.dspdc import _pass_rule

    return _pass_rule.PASS_GAIN


def _conj(loss: str, beta: np.ndarray, b: np.ndarray) -> np.ndarray:
    """phi*(beta) written from the table of ``docs/specs/dspdc.md`` §7.2."""
    if loss == "squared":
        return 0.5 * beta ** 2 + b * beta
    s = np.clip(b * beta, -1.0, 0.0)
    if loss == "smoothed_hinge":
        return b * beta + 0.5 * beta ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(-s > 0, -s * np.log(-s), 0.0) + np.where(1 + s > 0,
                                                                 (1 + s) * np.log1p(s), 0.0)


def dual_argmax(loss: str, c: float, y: float, b: float, sigma: float, n: float) -> float:
    """argmax_beta (1/n) c beta - (1/n) phi*(beta) - (beta - y)^2 / (2 sigma), for the loss
    named ``loss`` (``"squared"``, ``"smoothed_hinge"`` or ``"logistic"``)."""
    if loss in ("squared", "smoothed_hinge"):   # phi*(beta) = beta^2 / 2 + b beta: concave
        hat = (sigma * (c - b) + n * y) / (sigma + n)
        return hat if loss == "squared" else b * float(np.clip(b * hat, -1.0, 0.0))

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


def _weighted_argmax(loss, c, y, b, sigma, n, s):
    """The dual step of ``psi(z) = s^2 phi(z / s)`` (``s = sqrt(w)``): ``psi*(beta) =
    s^2 phi*(beta / s)``, so ``beta = s argmax_t (1/n) (c / s) t - (1/n) phi*(t)
    - (t - y / s)^2 / (2 sigma)``; ``s = 0``: ``psi* `` is the indicator of 0."""
    if s == 0.0:
        return 0.0
    return s * dual_argmax(loss, c / s, y / s, b, sigma, n)


def _local_solve(A, b, y0, x, c, lam1, lam2, r, m, q, theta, tau, sigma, row_u, col_u,
                 loss, s, abar=None):
    """Algorithm 1 on the chunk's saddle problem: regularizer ``c g(a) + r^T a / n_k``;
    ``A`` holds the scaled rows ``s_i a_i`` and ``s`` the scales.  ``abar``: the
    extrapolated primal to go on from (updated in place; None: ``x``, a new start)."""
    from ooc_kernels.families.dspdc.kernels import sample_without_replacement_ref

    n_k, p = A.shape
    beta, a = y0.copy(), x.copy()
    abar = x.copy() if abar is None else abar
    for t in range(len(row_u)):
        I = sample_without_replacement_ref(n_k, m, row_u[t])
        J = sample_without_replacement_ref(p, q, col_u[t])
        y_prev = beta.copy()
        for i in I:
            beta[i] = _weighted_argmax(loss, float(A[i] @ abar), y_prev[i], b[i], sigma,
                                       n_k, s[i])
        ybar = y_prev + (n_k / m) * (beta - y_prev)
        g = A.T @ ybar
        a_prev = a.copy()
        for j in J:
            # argmin_u c lam1 |u| + c lam2 / 2 u^2 + r_j u / n_k
            #          + (u - (a_j - tau g_j / n_k))^2 / (2 tau)
            v = a[j] - tau * (g[j] + r[j]) / n_k
            a[j] = np.sign(v) * max(abs(v) - tau * c * lam1, 0.0) / (1 + tau * c * lam2)
        abar[:] = a_prev + (theta + 1) * (a - a_prev)
    return beta, a, len(row_u) * m


def _block_dual(loss, A, b, s, beta, r, n, lam1, lam2) -> float:
    """The dual objective of the round's problem as a function of the chunk's duals
    ``beta`` (module docstring): ``-g*(-(r + A_k^T beta) / n) - (1/n) sum psi_i*(beta_i)``,
    with ``g*(v) = sum_j max(|v_j| - lam1, 0)^2 / (2 lam2)`` and ``psi* = s^2 phi*(beta / s)``
    (0 where ``s = 0``)."""
    v = -(r + A.T @ beta) / n
    live = s > 0
    conj = np.sum(s[live] ** 2 * _conj(loss, beta[live] / s[live], b[live]))
    return float(-np.sum(np.maximum(np.abs(v) - lam1, 0.0) ** 2) / (2 * lam2) - conj / n)


def _passes(cfg, n_k, m):
    """``(T_min, T_max, per_pass)``: the iterations a task always runs, the most it may run
    (``max_local_passes``; ``T_min`` when there is none) and the iterations of a pass."""
    t_min = max(1, math.ceil(cfg.local_passes * n_k / m))
    most = getattr(cfg, "max_local_passes", None)
    if most is None or most <= cfg.local_passes:
        return t_min, t_min, max(1, math.ceil(n_k / m))
    return t_min, max(t_min, math.ceil(most * n_k / m)), max(1, math.ceil(n_k / m))


def _rows(cfg, chunk, V):
    """``(rows, A_k)``: the chunk's stored rows (``X``, or ``U``) with the intercept column,
    and the rows of ``A`` they stand for."""
    # one chunk of the reference's small in-memory case, never a dataset
    rows = np.asarray(chunk["U"] if cfg.factorized else chunk["X"], dtype=np.float64)
    if cfg.intercept_scaling:
        rows = np.hstack([rows, np.full((len(rows), 1), float(cfg.intercept_scaling))])
    return rows, (rows @ V if cfg.factorized else rows)


def _scales(cfg, chunk, b) -> np.ndarray:
    """``sqrt(w_i)`` of the chunk's rows (ones for an unweighted problem)."""
    if not getattr(cfg, "weighted", False):
        return np.ones(len(b))
    w = np.asarray(chunk.get("sample_weight", np.ones(len(b))), dtype=np.float64)
    if cfg.class_weight is not None:
        w = w * np.array([cfg.class_weight[1] if v > 0 else cfg.class_weight[0] for v in b])
    return np.sqrt(w * cfg.weight_scale)


def _labels(cfg, y) -> np.ndarray:
    y = np.asarray(y).reshape(-1)
    if cfg.classes is None:
        return y.astype(np.float64)
    return np.array([1.0 if v == cfg.classes[1] else -1.0 for v in y.tolist()])


def sequential_dspdc(case, n_epochs: int = 1):
    """The state after ``n_epochs`` passes over ``case.chunks`` with one chunk per round,
    in storage order (round ``r`` of every epoch is chunk ``r``)."""
    from ooc_kernels.families.dspdc._local import task_uniforms
    from ooc_kernels.families.dspdc.params import dspdc_parameters

    alg, state = case.algorithm, case.state
    cfg = alg.config
    loss = loss_by_id(cfg.loss_id).name   # the table names the id; the formulas are here
    if state.n_rounds or np.any(state.w) or state.conj_sum:
        raise ValueError("the sequential reference starts from the initial state (all duals "
                         "zero): pass a case whose state is init_state(...).")
    V = None
    if cfg.factorized:
        V = np.asarray(alg.V, dtype=np.float64)   # already carries the intercept's row
    # one in-memory chunk of the contract's small case each (the oracle never sees a store)
    data = []
    for chunk in case.chunks:
        rows, A = _rows(cfg, chunk, V)
        b = _labels(cfg, chunk["y"])
        s = _scales(cfg, chunk, b)
        data.append((s[:, None] * rows, s[:, None] * A, b, s))
    n, p = sum(len(b) for _, _, b, _ in data), cfg.n_features
    duals = [np.zeros(len(b)) for _, _, b, _ in data]
    x = np.array(state.x, dtype=np.float64)
    n_iter, n_updates, versions = state.n_iter, state.n_dual_updates, state.versions
    for epoch in range(n_epochs):
        for k, (rows, A, b, s) in enumerate(data):
            n_k = len(b)
            r = sum(data[j][1].T @ duals[j] for j in range(len(data)) if j != k) \
                + np.zeros(p)
            c = n / n_k
            m = min(cfg.m, n_k)
            boost = getattr(cfg, "step_boost", 1.0)
            if (cfg.factorized and loss == "squared" and cfg.lam1 == 0 and cfg.q >= p
                    and boost > 1):
                # the data's strong convexity in the row space of V: the r-th largest
                # eigenvalue of A_k^T A_k / n_k, r = rank V; the boost it allows, capped at
                # 100 times the configured one
                rank = np.linalg.matrix_rank(V)
                mu = max(float(np.linalg.eigvalsh(A.T @ A / n_k)[::-1][rank - 1]), 0.0)
                lam_k = c * cfg.lam2
                boost = max(boost, min((lam_k + mu) / lam_k, 100.0 * boost))
            Lam = cfg.Lambda
            if getattr(cfg, "mean_lambda", False) and cfg.x_scale is not None:
                # the mean ||A_I^J||_F^2 of standardized rows: 1 per column, c^2 the intercept's
                cols = len(cfg.x_scale) if cfg.x_spread is None else cfg.x_spread
                Lam = min(Lam, m * cfg.q / p * (cols + cfg.intercept_scaling ** 2))
            if cfg.Lambda <= n_k * c * cfg.lam2 * _GAMMA[loss]:   # no boost: kappa/n <= 1
                boost, Lam = 1.0, cfg.Lambda
            par = dspdc_parameters(n_k, p, m, cfg.q, Lam, c * cfg.lam2 * boost,
                                   _GAMMA[loss], mode=cfg.mode, theta=cfg.theta,
                                   tau=cfg.tau, sigma=cfg.sigma)
            t_min, t_max, per_pass = _passes(cfg, n_k, m)
            row_u, col_u = task_uniforms(replace(cfg, local_passes=cfg.max_local_passes)
                                         if t_max > t_min else cfg,
                                         case.seed, epoch, k, k, n_k, m)
            assert len(row_u) == t_max, "the task's uniforms are one pair per iteration"
            # the first t_min iterations, then pass by pass while the pass raised the
            # round's dual by more than PASS_GAIN of its rise since the round started
            first = previous = _block_dual(loss, A, b, s, duals[k], r, n, cfg.lam1, cfg.lam2)
            bounds = [t_min] + list(range(t_min + per_pass, t_max, per_pass)) + [t_max]
            if t_min - per_pass > 0 and t_max > t_min:
                bounds = [t_min - per_pass] + bounds
            abar, T, y_k = x.copy(), 0, duals[k]
            for stop in bounds:
                if stop <= T:
                    continue
                y_k, x, updates = _local_solve(
                    A, b, y_k, x, c, cfg.lam1, cfg.lam2, r, m, cfg.q, par.theta, par.tau,
                    par.sigma, row_u[T:stop], col_u[T:stop], loss, s, abar)
                T, n_updates = stop, n_updates + updates
                if t_max == t_min or T >= t_max:
                    break
                dual = _block_dual(loss, A, b, s, y_k, r, n, cfg.lam1, cfg.lam2)
                if T >= t_min and not dual - previous > _pass_gain() * (dual - first):
                    break
                previous = dual
            duals[k] = y_k
            n_iter += T
            versions = versions.updated([k], (epoch, k))
    w = sum(rows.T @ y for (rows, _, _, _), y in zip(data, duals))
    conj_sum = 0.0
    for (_, _, b, s), beta in zip(data, duals):   # psi*(beta) = s^2 phi*(beta / s)
        live = s > 0
        conj_sum += float(np.sum(s[live] ** 2 * _conj(loss, beta[live] / s[live],
                                                      b[live])))
    return replace(state, x=x, w=np.asarray(w, dtype=np.float64), conj_sum=conj_sum,
                   versions=versions, n_iter=n_iter, n_dual_updates=n_updates,
                   n_rounds=state.n_rounds + n_epochs * len(data))
