"""The DSG algorithm written out sequentially in plain NumPy: the oracle of the contract suite.

Mini-batch Algorithm 1 of Dai et al. (2014) with feature blocks (``docs/specs/dsg.md`` §2.1-2.4)
while blocks remain, then the full phase (every step uses all blocks and updates every
coefficient), over the rows of the given chunks in storage order (batches restart at each
chunk, the step counter does not), each row's gradient weighted by its sample weight, the
iterates averaged from step ``config.average`` on (Polyak-Ruppert: the mean of the models
after the averaged steps), the progressive loss summed.  Every prediction is recomputed from all open blocks,
the features are regenerated from their seeds, nothing is shared with the numba kernels or
the chunk algorithm: one pass of :class:`~ooc_kernels.families.dsg.solver.DSGAlgorithm` through the
engine with ``K = 1`` and no shuffling must give the same state (to rounding).

With ``config.update`` ``"uniform"`` (UDSG) or ``"check"`` (CDSG) the growth steps are
those of Li and Poczos as ``docs/algorithms/dsg_old_coords.md`` defines them for blocks:
UDSG's odd steps open a block and its even steps update the block
``floor(u * n_open)``, ``u = default_rng([feature_seed, t]).random()``; CDSG solves the
expected-descent inequality of every open block and updates the one with the largest
admissible step when it exceeds the schedule's (capped at twice it), else opens a block.

Examples
--------
>>> from ooc_kernels.families.dsg.solver import make_case
>>> from ooc_kernels.families.dsg.reference import sequential_dsg
>>> case = make_case(0)
>>> state = sequential_dsg(case.algorithm.config, case.state, case.chunks)
>>> state.n_iter, state.n_blocks_seen
(24, 8)
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

__all__ = ["sequential_dsg"]


def _loss(loss_id: int):
    from ooc_kernels.losses import available_losses, get_loss

    for name in available_losses():
        if get_loss(name).loss_id == loss_id:
            return get_loss(name)
    raise KeyError(loss_id)  # pragma: no cover - configs hold registered ids


def _targets(config, y) -> np.ndarray:
    """``y`` as the loss expects it: real columns, +-1 columns or one-hot rows."""
    y = np.asarray(y)
    if config.target == "regression":
        return ((y.astype(np.float64) - config.y_shift) / config.y_scale).reshape(-1, 1)
    index = np.array([list(config.classes).index(v) for v in y.tolist()])
    if config.target == "binary":
        return np.where(index == 1, 1.0, -1.0).reshape(-1, 1)
    onehot = np.eye(len(config.classes))[index]
    return onehot if config.target == "softmax" else 2.0 * onehot - 1.0


def block_features(config):
    """``z(j, X)``: the features of block ``j`` at the (standardized) rows ``X``, in
    float64, regenerated from the configuration's seed with the feature map's NumPy code
    (the sequential references of every DSG machine share it; the numba kernels do not).
    """
    from ooc_kernels._jit.rff import features_inplace_ref
    from ooc_kernels.features.maps import get_feature_map

    fmap = get_feature_map(config.kernel)
    r = config.block_size
    scale = fmap.feature_scale(r)
    params = [fmap.block(config.feature_seed, j, config.n_features_in, r,
                         config.bandwidth, np.float64) for j in range(config.n_blocks)]

    def z(j, X):
        W, phase = params[j]
        P = fmap.map_rows(X, None, np.float64) @ W  # psi(X) for hierarchical features
        features_inplace_ref(fmap.nonlinearity, P, phase, scale)
        return P

    return z


def sequential_dsg(config, state, chunks):
    """Run the DSG steps over ``chunks`` (dicts with ``X``, ``y``) from ``state``.

    Returns the state after the pass (float64), of the same type as ``state``.
    """
    loss = _loss(config.loss_id).with_param(config.loss_param)
    r, m, b = config.block_size, config.n_blocks, config.batch_size
    z = block_features(config)

    coef = np.array(state.coef, dtype=np.float64, copy=True)
    beta = None if state.beta is None else np.array(state.beta, dtype=np.float64, copy=True)
    avg = None if state.avg is None else np.array(state.avg, dtype=np.float64, copy=True)
    t, seen, n_seen = state.n_iter, state.n_blocks_seen, state.n_samples_seen
    n_avg, loss_sum, loss_weight = state.n_avg, state.loss_sum, state.loss_weight
    for chunk in chunks:
        # one in-memory chunk of the contract's small case (the oracle never sees a store)
        X = np.asarray(chunk["X"], dtype=np.float64)
        if config.x_shift is not None:  # the model sees the standardized input
            X = (X - np.asarray(config.x_shift)) / np.asarray(config.x_scale)
        Y = _targets(config, chunk["y"])
        # the same small chunk's weights (one value per row of X)
        w = np.asarray(chunk.get("sample_weight", np.ones(len(X))), dtype=np.float64)
        for lo in range(0, len(X), b):
            Xb, Yb, wb = X[lo:lo + b], Y[lo:lo + b], w[lo:lo + b]
            nb = len(Xb)
            t += 1
            gamma = config.eta0 if config.learning_rate == "constant" \
                else config.eta0 / (t + config.t0)
            f = sum((z(j, Xb) @ coef[j] for j in range(min(seen, m))),
                    np.zeros((nb, config.n_outputs)))
            G = loss.gradient(f, Yb) * wb[:, None]
            loss_sum += float(np.sum(wb * loss.value(f, Yb)))
            loss_weight += float(np.sum(wb))
            k, step = seen, gamma  # the block the growth step updates, and its step
            if seen < m and config.update == "uniform" and t % 2 == 0 and seen > 0:
                u = np.random.default_rng([int(config.feature_seed), t]).random()
                k = min(int(u * seen), seen - 1)
            elif seen < m and config.update == "check":
                k, step = _check(beta[:seen], G, gamma, seen)
            if seen < m:          # growth: a new block (or an old one), all decayed
                coef[:seen] *= 1.0 - step * config.alpha
                coef[k] += -(step / nb) * z(k, Xb).T @ G
                if beta is not None:
                    beta[:seen] *= 1.0 - step * config.alpha
                    beta[k] += -step * G.mean(axis=0)
                seen += k == seen
            else:                 # full phase: every block, the kernel averaged over m
                coef = np.stack([(1.0 - gamma * config.alpha) * coef[j]
                                 - gamma / (nb * m) * z(j, Xb).T @ G for j in range(m)])
            if config.average and t >= config.average:   # the model after this step
                n_avg += 1
                if avg is not None:
                    avg = avg + (coef - avg) / n_avg
        n_seen += len(X)
    return replace(state, coef=coef, avg=avg, n_avg=n_avg, n_iter=t, n_blocks_seen=seen,
                   n_samples_seen=n_seen, loss_sum=loss_sum, loss_weight=loss_weight,
                   beta=beta)


def _check(beta, G, gamma, seen):
    """CDSG's choice for the batch derivatives ``G``: ``(block, step)``, the next block
    ``seen`` with ``gamma`` unless an open block admits a larger step.  Block ``j`` admits
    the ``eta`` of ``2 ||b + eta g||^2 + 2 eta^2 s2 <= ||b||^2 + gamma^2 ||g||^2`` (``b =
    beta_j``, ``g`` the batch mean of ``G``, ``s2`` the mean squared norm of its rows over
    the batch size); its step is the magnitude of the smaller root when negative."""
    g = G.mean(axis=0)
    s2 = float(np.sum(G * G)) / len(G) ** 2
    best, best_step = seen, gamma
    for j in range(seen):
        a2, a1 = 2.0 * (g @ g + s2), 4.0 * (beta[j] @ g)
        a0 = beta[j] @ beta[j] - gamma ** 2 * (g @ g)
        disc = a1 * a1 - 4.0 * a2 * a0
        if a2 > 0.0 and disc >= 0.0:
            root = (-a1 - np.sqrt(disc)) / (2.0 * a2)
            if -root > best_step:
                best, best_step = j, -root
    return best, min(best_step, 2.0 * gamma) if best < seen else gamma
