"""The DSG density-ratio estimator written out in plain NumPy: the oracle of its tests and
of the contract suite.

Algorithm 1 of Dai et al. (2014) for Nguyen, Wainwright and Jordan's objective (Eq. 8, KL
case) ``R(f) = E_q[e^f] - E_p[f] + alpha/2 ||f||^2``, both terms every step: step ``s``
reads the next ``batch_size`` rows ``x`` of the numerator sample ``p`` and the rows ``y``
of the denominator sample ``q`` up to the same fraction of the chunk's ``q`` rows, and its
gradient is

    ``(1 / n_s) [ sum_x -z(x) + (n_p / n_q) sum_y e^{f(y)} z(y) ]``

(``n_s`` the step's ``p`` rows, ``n_p / n_q`` the samples' sizes, ``config.q_weight``): one
new block per step while blocks remain (older ones decayed by ``1 - gamma alpha``), then
every block updated with the kernel averaged over all of them.  Chunk ``c`` of ``X_p`` is
paired with chunk ``c`` of ``X_q``; the step counter runs on across chunks.  Every
prediction is recomputed from all open blocks and the features regenerated from their
seeds: nothing is shared with the numba kernels or the chunk algorithm, and one pass of
:class:`~ooc_kernels.families.dsg._ratio_solver.RatioAlgorithm` through the engine with
``K = 1`` and no shuffling must give the same state (to rounding).

Examples
--------
>>> from ooc_kernels.families.dsg._ratio_solver import make_case
>>> from ooc_kernels.families.dsg.reference_density_ratio import sequential_ratio
>>> case = make_case(0)
>>> state = sequential_ratio(case.algorithm.config, case.state, case.chunks)
>>> state.n_iter, state.n_blocks_seen
(14, 6)
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

__all__ = ["sequential_ratio"]


def sequential_ratio(config, state, chunks):
    """Run the density-ratio steps over ``chunks`` (dicts with ``X_p`` and ``X_q``) from
    ``state`` (a ``DSGState``).

    Returns the state after the pass (float64): the coefficients, the step counter, the
    blocks opened, the rows read (both samples) and the progressive loss (``-f`` per ``p``
    row plus ``(n_p / n_q) e^f`` per ``q`` row, over the ``p`` rows).
    """
    from ooc_kernels.families.dsg.reference import block_features

    r, m, b, alpha = config.block_size, config.n_blocks, config.batch_size, config.alpha
    c = float(config.q_weight)
    z = block_features(config)

    def standardized(X):
        X = np.asarray(X, dtype=np.float64)  # one in-memory chunk of a small test case
        if config.x_shift is None:
            return X
        return (X - np.asarray(config.x_shift)) / np.asarray(config.x_scale)

    coef = np.array(state.coef[:, :, 0], dtype=np.float64, copy=True)
    t, seen, n_seen = state.n_iter, state.n_blocks_seen, state.n_samples_seen
    loss_sum, loss_weight = state.loss_sum, state.loss_weight
    for chunk in chunks:
        Xp, Xq = standardized(chunk["X_p"]), standardized(chunk["X_q"])
        n_p, n_q = len(Xp), len(Xq)
        for lo in range(0, n_p, b):
            hi = min(lo + b, n_p)
            xp, xq = Xp[lo:hi], Xq[(n_q * lo) // n_p:(n_q * hi) // n_p]
            t += 1
            gamma = config.eta0 if config.learning_rate == "constant" \
                else config.eta0 / (t + config.t0)
            opened = range(min(seen, m))
            fp = sum((z(j, xp) @ coef[j] for j in opened), np.zeros(len(xp)))
            fq = sum((z(j, xq) @ coef[j] for j in opened), np.zeros(len(xq)))
            loss_sum += float(c * np.exp(fq).sum() - fp.sum())
            loss_weight += float(len(xp))

            def grad(j):
                return (-z(j, xp).sum(axis=0) + c * (np.exp(fq) @ z(j, xq))) / len(xp)

            if seen < m:  # growth: a new block, older ones decayed
                coef[:seen] *= 1.0 - gamma * alpha
                coef[seen] = -gamma * grad(seen)
                seen += 1
            else:         # full phase: every block, the kernel averaged over m
                coef = np.stack([coef[j] * (1.0 - gamma * alpha) - gamma * grad(j) / m
                                 for j in range(m)])
        n_seen += n_p + n_q
    return replace(state, coef=coef[:, :, None], n_iter=t, n_blocks_seen=seen,
                   n_samples_seen=n_seen, loss_sum=loss_sum, loss_weight=loss_weight)
