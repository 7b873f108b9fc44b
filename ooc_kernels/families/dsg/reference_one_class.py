"""The one-class DSG machine written out in plain NumPy: the oracles of its tests and of the
contract suite.

:func:`paper_one_class` is the paper's novelty detection (Dai et al. 2014, section 4;
``docs/specs/dsg.md`` §3.1) literally: one row and one random feature per step, ``f(x_i)`` by
Algorithm 2,

* ``alpha_i = gamma_i phi_i(x_i)`` if ``f(x_i) < tau_{i-1}`` else 0,
* ``tau_i = tau_{i-1} - gamma_i (1 - nu)`` if ``f(x_i) < tau_{i-1}`` else ``tau_{i-1} +
  gamma_i nu``,
* every older ``alpha_j`` multiplied by ``1 - gamma_i nu``.

:func:`sequential_one_class` is the same update with mini-batches, feature blocks, row
weights, the full phase (every block updated once all are open, the kernel averaged over
them) and the standardized input, over the rows of the given chunks in storage order
(batches restart at each chunk, the step counter does not).  With one row and one feature
per step and no full phase it is :func:`paper_one_class`.  Every prediction is recomputed
from all open blocks, the features are regenerated from their seeds, nothing is shared
with the numba kernels or the chunk algorithm: one pass of
:class:`~ooc_kernels.families.dsg.one_class_solver.OneClassAlgorithm` through the engine
with ``K = 1`` and no shuffling must give the same state (to rounding).

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dsg.reference_one_class import paper_one_class
>>> X = np.random.default_rng(0).normal(size=(5, 2))
>>> alphas, tau = paper_one_class(X, seed=3, bandwidth=1.0, n_steps=2, eta0=1.0, t0=1.0,
...                               nu=0.5)
>>> # step 1: f = tau = 0, not novel, tau = 0 + nu / 2; step 2: f = 0 < tau, novel,
>>> # tau = 0.25 - (1 - nu) / 3
>>> float(alphas[0]), bool(alphas[1] != 0), round(tau, 6)
(0.0, True, 0.083333)
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

__all__ = ["paper_one_class", "sequential_one_class"]


def paper_one_class(X, *, seed, bandwidth, n_steps, eta0, t0, nu):
    """The paper's novelty detection over the rows of ``X`` in order (cycling), one row and
    one Gaussian random feature ``phi_i(x) = sqrt(2) cos(omega_i . x + b_i)`` per step,
    ``gamma_i = eta0 / (i + t0)`` (1-based ``i``), ``tau_0 = 0``.

    Returns ``(alphas, tau)``: the ``n_steps`` coefficients and the final offset.
    """
    from ooc_kernels.features.rbf import block_params

    X = np.asarray(X, dtype=np.float64)  # the caller's few in-memory rows (a replay oracle)
    d = X.shape[1]
    omegas, phases, alphas, tau = [], [], [], 0.0

    def phi(i, x):
        return np.sqrt(2.0) * np.cos(x @ omegas[i] + phases[i])

    for i in range(n_steps):
        x_i = X[i % len(X)]
        W, b = block_params(seed, i, d, 1, bandwidth, np.float64)
        omegas.append(W[:, 0])
        phases.append(b[0])
        f = sum(alphas[j] * phi(j, x_i) for j in range(i))
        gamma = eta0 / (i + 1 + t0)
        novel = f < tau
        for j in range(i):
            alphas[j] *= 1.0 - gamma * nu
        alphas.append(gamma * phi(i, x_i) if novel else 0.0)
        tau = tau - gamma * (1.0 - nu) if novel else tau + gamma * nu
    return np.array(alphas), tau


def sequential_one_class(config, state, chunks):
    """Run the one-class steps over ``chunks`` (dicts with ``X`` and optionally
    ``sample_weight``) from ``state`` (a ``OneClassState``); ``config.alpha`` is ``nu`` in
    both roles.

    Returns the state after the pass (float64), of the same type as ``state``.
    """
    from ooc_kernels.families.dsg.reference import block_features

    r, m, b, nu = config.block_size, config.n_blocks, config.batch_size, config.alpha
    z = block_features(config)

    coef = np.array(state.coef[:, :, 0], dtype=np.float64, copy=True)
    tau = float(state.tau)
    t, seen, n_seen = state.n_iter, state.n_blocks_seen, state.n_samples_seen
    loss_sum, loss_weight = state.loss_sum, state.loss_weight
    for chunk in chunks:
        # one in-memory chunk of a small test case (the oracle never sees a store)
        X = np.asarray(chunk["X"], dtype=np.float64)
        if config.x_shift is not None:  # the model sees the standardized input
            X = (X - np.asarray(config.x_shift)) / np.asarray(config.x_scale)
        # the same small chunk's weights (one value per row of X)
        w = np.asarray(chunk.get("sample_weight", np.ones(len(X))), dtype=np.float64)
        w = w * config.weight_scale
        for lo in range(0, len(X), b):
            Xb, wb = X[lo:lo + b], w[lo:lo + b]
            nb = len(Xb)
            t += 1
            gamma = config.eta0 if config.learning_rate == "constant" \
                else config.eta0 / (t + config.t0)
            f = sum((z(j, Xb) @ coef[j] for j in range(min(seen, m))), np.zeros(nb))
            novel = f < tau
            loss_sum += float(np.sum(wb * (np.maximum(0.0, tau - f) - nu * tau)))
            loss_weight += float(np.sum(wb))
            g = np.where(novel, wb, 0.0)      # minus the hinge's derivative, weighted
            if seen < m:          # growth: a new block, older ones decayed
                coef[:seen] *= 1.0 - gamma * nu
                coef[seen] = (gamma / nb) * (g @ z(seen, Xb))
                seen += 1
            else:                 # full phase: every block, the kernel averaged over m
                coef = np.stack([(1.0 - gamma * nu) * coef[j]
                                 + gamma / (nb * m) * (g @ z(j, Xb)) for j in range(m)])
            tau -= gamma * (float(g.sum()) / nb - nu)
        n_seen += len(X)
    return replace(state, coef=coef[:, :, None], tau=tau, n_iter=t, n_blocks_seen=seen,
                   n_samples_seen=n_seen, loss_sum=loss_sum, loss_weight=loss_weight)
