"""Hot path of DSG with old coordinates checked (CDSG, Li and Poczos): the growth steps.

A CDSG step either opens a new feature block (DSG's step) or updates an old block when the
expected-descent test says the old block can take a larger step than a fresh one
(``docs/algorithms/dsg_old_coords.md``).  The test reads one vector per block,
``beta_j`` (``n_outputs`` values: the block's coefficient without its feature factor), and
the batch's loss derivatives; with the step size ``gamma`` of the step,
``g = mean_i sw_i l'(f(x_i), y_i)`` (a vector over the outputs) and
``s^2 = mean_i ||sw_i l'_i||^2 / nb`` (the variance term), block ``j`` admits the
coefficients ``eta`` with::

    2 ||beta_j + eta g||^2 + 2 eta^2 s^2 <= ||beta_j||^2 + gamma^2 ||g||^2

whose most negative root ``eta_-`` gives the step ``|eta_-|``.  The block with the largest
step is updated when that step exceeds ``gamma`` (capped at ``cap * gamma``); otherwise the
next new block opens.  The step's coefficient increment is ``-(step / nb) z_k(X_B)^T G``
and every coefficient and every ``beta`` decays by ``1 - step * alpha``: the step chosen is
the one used, in the increment and in the decay.

Conventions (``params``, ``steps``, the feature scale, the running predictions ``F``,
float64 coefficients) are those of :mod:`ooc_kernels.families.dsg.kernels`.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dsg.kernels_reuse import dsg_check_update
>>> rng = np.random.default_rng(0)
>>> n, d, r, b = 12, 3, 4, 4                          # 3 steps
>>> X = rng.normal(size=(n, d)); Y = rng.normal(size=(n, 1))
>>> W = rng.normal(size=(4, d, r)); ph = rng.uniform(0, 2 * np.pi, (4, r))
>>> beta = np.array([[0.3], [0.0], [0.0], [0.0]])     # one old block, three new slots
>>> steps = (np.full(3, 0.5), np.zeros(3, dtype=bool))
>>> out = dsg_check_update(X, Y, np.ones(n), np.zeros((n, 1)), W, ph, beta, 1, steps,
...                        (0.1, b, 0, 0.5 ** 0.5, 0.0), (2.0, False))
>>> n_done, slots = out[0], out[1]
>>> n_done, slots.shape
(3, (3,))
"""

from __future__ import annotations

import math

import numpy as np

from ooc_kernels._jit._cache import njit
from ooc_kernels._jit.losses import loss_grad_value
from ooc_kernels._jit.rff import COS_AFFINE, features_inplace
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.losses.reference import loss_grad_value_ref
from ooc_kernels.families.dsg.kernels import _features_ref, _tile_rows

__all__ = ["check_step", "check_step_ref", "dsg_check_update", "dsg_check_update_ref"]


@njit(cache=True, nogil=True)
def check_step(beta, n_visible, gbar, s2, gamma):
    """The expected-descent test over the visible blocks.

    Parameters
    ----------
    beta : ndarray (n_slots, C) float64
        ``beta_j`` of every block slot; slots ``0 .. n_visible - 1`` are candidates.
    n_visible : int
    gbar : ndarray (C,) float64
        Batch mean of the weighted loss derivatives.
    s2 : float
        The variance term ``s^2``.
    gamma : float
        The step a new block would take.

    Returns
    -------
    best : int
        The slot with the largest admissible step (the first on ties), -1 when none.
    step : float
        Its step ``|eta_-|`` (0 when none).

    Examples
    --------
    >>> import numpy as np
    >>> check_step(np.array([[1.0]]), 1, np.array([1.0]), 0.0, 0.1)[0]
    0
    """
    C = gbar.shape[0]
    gg = 0.0
    for c in range(C):
        gg += gbar[c] * gbar[c]
    a = gg + s2
    best = -1
    best_step = 0.0
    if not a > 0.0:
        return best, best_step
    for j in range(n_visible):
        bg = 0.0
        bb = 0.0
        for c in range(C):
            bg += beta[j, c] * gbar[c]
            bb += beta[j, c] * beta[j, c]
        disc = bg * bg - 0.5 * a * (bb - gamma * gamma * gg)
        if disc < 0.0:
            continue
        eta = (-bg - math.sqrt(disc)) / a
        if eta < 0.0 and -eta > best_step:
            best = j
            best_step = -eta
    return best, best_step


def check_step_ref(beta, n_visible, gbar, s2, gamma):
    """NumPy twin of :func:`check_step`: solves the quadratic inequality of every block with
    ``numpy.roots`` (no closed form) and keeps its smaller real root."""
    gbar = np.asarray(gbar, dtype=np.float64)
    best, best_step = -1, 0.0
    for j in range(int(n_visible)):
        bj = np.asarray(beta[j], dtype=np.float64)
        # 2 ||b + eta g||^2 + 2 eta^2 s2 - ||b||^2 - gamma^2 ||g||^2 <= 0, in eta
        coeffs = [2.0 * (gbar @ gbar + s2), 4.0 * (bj @ gbar),
                  2.0 * (bj @ bj) - (bj @ bj) - gamma ** 2 * (gbar @ gbar)]
        if not coeffs[0] > 0.0:
            continue
        disc = coeffs[1] ** 2 - 4.0 * coeffs[0] * coeffs[2]
        if disc < 0.0:
            continue
        low = min(np.roots(coeffs).real)
        if low < 0.0 and -low > best_step:
            best, best_step = j, -low
    return best, best_step


@njit(cache=True, nogil=True)
def dsg_check_update(X, Y, sw, F, W, phase, beta, n_old, steps, params, check,
                     kind=COS_AFFINE):
    """Run the CDSG growth steps of one chunk.

    Parameters
    ----------
    X, Y, sw, F
        As in :func:`~ooc_kernels.families.dsg.kernels.dsg_chunk_update` (``F``: the
        predictions of the model before the chunk, **overwritten** with the progressive
        ones).  ``ceil(n / batch_size)`` steps at most.
    W : ndarray (n_slots, d, r), phase : ndarray (n_slots, r)
        The blocks a step may use: slots ``0 .. n_old - 1`` the model's open blocks, then
        the new blocks in the order they open.
    beta : ndarray (n_slots, C) float64
        ``beta`` of the open blocks (rows ``n_old ..`` are not read).  Not modified.
    n_old : int
    steps, params
        As in :func:`~ooc_kernels.families.dsg.kernels.dsg_chunk_update`.
    check : tuple (cap, stop_when_full)
        ``cap``: an old block's step is at most ``cap * gamma``.  ``stop_when_full``: the
        last new slot is the model's last block; the steps stop once it opens (the model
        then holds its budget).

    Returns
    -------
    n_done : int
        Steps run (all of them, or up to the one that opened the last slot).
    slots : ndarray (n_done,) int64
        The slot each step updated.
    incs : ndarray (n_done, r, C) float64
        Each step's coefficient increment, decayed by the later steps of the chunk.
    beta_incs : ndarray (n_done, C) float64
        Each step's ``beta`` increment, decayed alike.
    decay : float
        The product of the steps' factors ``1 - step * alpha`` (older coefficients and
        ``beta`` are multiplied by it).
    factors : ndarray (n_done,) float64
    avg_new, avg_old, n_avg, loss_sum, weight_sum
        As in :func:`~ooc_kernels.families.dsg.kernels.dsg_chunk_update`, per step.

    Notes
    -----
    Twin: :func:`dsg_check_update_ref`.
    """
    gammas, averaged = steps
    alpha, batch_size, loss_id, scale, loss_param = params
    cap, stop_when_full = check
    n, d = X.shape
    C = Y.shape[1]
    n_slots = W.shape[0]
    r = W.shape[2]
    b = batch_size
    if b < 1:
        raise ValidationError("dsg_check_update: batch_size must be >= 1")
    m = (n + b - 1) // b
    if W.shape[1] != d or phase.shape[0] != n_slots or phase.shape[1] != r:
        raise ValidationError("dsg_check_update: W must be (n_slots, d, r) and phase "
                              "(n_slots, r)")
    if beta.shape[0] != n_slots or beta.shape[1] != C or n_old < 0 or n_old > n_slots:
        raise ValidationError("dsg_check_update: beta must be (n_slots, C), 0 <= n_old <= "
                              "n_slots")
    if Y.shape[0] != n or F.shape[0] != n or F.shape[1] != C or sw.shape[0] != n:
        raise ValidationError("dsg_check_update: X (n, d), Y (n, C), sw (n,) and F (n, C) "
                              "must agree")
    if gammas.shape[0] != m or averaged.shape[0] != m:
        raise ValidationError("dsg_check_update: gammas and averaged need one entry per "
                              "step")
    n_new = n_slots - n_old
    work = np.zeros((n_slots, C), dtype=np.float64)
    for j in range(n_old):
        for c in range(C):
            work[j, c] = beta[j, c]
    slots = np.zeros(m, dtype=np.int64)
    incs = np.zeros((m, r, C), dtype=np.float64)
    beta_incs = np.zeros((m, C), dtype=np.float64)
    factors = np.ones(m, dtype=np.float64)
    decay = 1.0
    loss_sum = 0.0
    weight_sum = 0.0
    n_done = 0
    opened = 0
    tile = min(_tile_rows(r, X.itemsize), max(n, 1))
    Zb = np.empty((min(b, max(n, 1)), r), dtype=X.dtype)
    G = np.empty((min(b, max(n, 1)), C), dtype=X.dtype)
    Zt_buf = np.empty((tile, r), dtype=X.dtype)
    acc = np.empty((tile, C), dtype=X.dtype)
    delta = np.empty((r, C), dtype=X.dtype)
    dcoef = np.empty((r, C), dtype=X.dtype)
    gbar = np.empty(C, dtype=np.float64)
    for s in range(m):
        lo = s * b
        hi = min(lo + b, n)
        nb = hi - lo
        Gs = G[:nb]
        loss_sum += loss_grad_value(loss_id, F[lo:hi], Y[lo:hi], sw[lo:hi], Gs, loss_param)
        for i in range(lo, hi):
            weight_sum += sw[i]
        second = 0.0
        for c in range(C):
            gbar[c] = 0.0
        for i in range(nb):
            for c in range(C):
                v = np.float64(Gs[i, c])
                gbar[c] += v
                second += v * v
        for c in range(C):
            gbar[c] /= nb
        s2 = second / nb / nb
        gamma = gammas[s]
        best, best_step = check_step(work, n_old + opened, gbar, s2, gamma)
        new = False
        if best >= 0 and (best_step > gamma or opened == n_new):
            blk = best
            step = min(best_step, cap * gamma)
        elif opened < n_new:
            blk = n_old + opened
            opened += 1
            step = gamma
            new = True
        else:  # no admissible old block and no new slot: a plain step on the newest block
            blk = n_old + opened - 1
            step = gamma
        if blk < 0:
            raise ValidationError("dsg_check_update: no block to update (no slots)")
        slots[s] = blk
        Zs = Zb[:nb]
        np.dot(X[lo:hi], W[blk], Zs)
        features_inplace(kind, Zs, phase[blk], scale)
        np.dot(Zs.T, Gs, delta)
        factor = 1.0 - step * alpha
        factors[s] = factor
        decay *= factor
        coeff = -step / nb
        for k in range(r):
            for c in range(C):
                v = coeff * delta[k, c]
                incs[s, k, c] = v
                dcoef[k, c] = v
        for j in range(n_old + opened):
            for c in range(C):
                work[j, c] *= factor
        for c in range(C):
            v = -step * gbar[c]
            beta_incs[s, c] = v
            work[blk, c] += v
        for start in range(hi, n, tile):
            stop = min(start + tile, n)
            k = stop - start
            Zt = Zt_buf[:k]
            At = acc[:k]
            np.dot(X[start:stop], W[blk], Zt)
            features_inplace(kind, Zt, phase[blk], scale)
            np.dot(Zt, dcoef, At)
            for i in range(k):
                for c in range(C):
                    F[start + i, c] = F[start + i, c] * factor + At[i, c]
        n_done = s + 1
        if stop_when_full and new and opened == n_new:
            break
    n_avg = 0
    for s in range(n_done):
        if averaged[s]:
            n_avg += 1
    avg_new = np.zeros((n_done if n_avg else 0, r, C), dtype=np.float64)
    suffix = 1.0
    running = 0.0
    avg_old = 0.0
    for s in range(n_done - 1, -1, -1):
        nxt = factors[s + 1] if s + 1 < n_done else 0.0
        weight = (1.0 if averaged[s] else 0.0) + nxt * running
        running = weight
        if n_avg:
            for k in range(r):
                for c in range(C):
                    avg_new[s, k, c] = incs[s, k, c] * weight
        if suffix != 1.0:
            for k in range(r):
                for c in range(C):
                    incs[s, k, c] *= suffix
            for c in range(C):
                beta_incs[s, c] *= suffix
        suffix *= factors[s]
    if n_avg:
        avg_old = factors[0] * running
    return (n_done, slots[:n_done].copy(), incs[:n_done].copy(), beta_incs[:n_done].copy(),
            decay, factors[:n_done].copy(), avg_new, avg_old, n_avg, loss_sum, weight_sum)


def dsg_check_update_ref(X, Y, sw, F, W, phase, beta, n_old, steps, params, check,
                         kind=COS_AFFINE):
    """NumPy twin of :func:`dsg_check_update`, written literally: the model (the increments
    of every step so far) and every ``beta`` are decayed explicitly at every step, each
    batch's prediction is recomputed from them, and the test is :func:`check_step_ref`.
    ``F`` is not modified.  Tests only."""
    gammas, averaged = steps
    alpha, batch_size, loss_id, scale, loss_param = params
    cap, stop_when_full = check
    X = np.asarray(X)  # one chunk (reference twin, tests only)
    dt = X.dtype
    n, b = X.shape[0], int(batch_size)
    n_slots, r, C = W.shape[0], W.shape[2], Y.shape[1]
    n_new = n_slots - n_old
    F_start = np.array(F, dtype=dt, copy=True)
    betas = np.zeros((n_slots, C))
    betas[:n_old] = beta[:n_old]
    incs, binc, slots, factors = [], [], [], []
    sums, decay, avg_old, n_avg = [], 1.0, 0.0, 0
    loss_sum = weight_sum = 0.0
    opened = 0
    for s in range(math.ceil(n / b)):
        rows = slice(s * b, min((s + 1) * b, n))
        nb = rows.stop - rows.start
        pred = F_start[rows] * dt.type(decay)
        for slot, inc in zip(slots, incs):
            pred = pred + _features_ref(X[rows], W[slot], phase[slot], scale, kind) @ \
                inc.astype(dt)
        grad, value = loss_grad_value_ref(loss_id, pred, Y[rows], sw[rows], loss_param)
        loss_sum += value
        weight_sum += float(np.sum(sw[rows]))
        g = grad.astype(np.float64)
        gbar = g.mean(axis=0)
        s2 = float(np.sum(g * g)) / nb / nb
        best, best_step = check_step_ref(betas, n_old + opened, gbar, s2, gammas[s])
        new = False
        if best >= 0 and (best_step > gammas[s] or opened == n_new):
            blk, step = best, min(best_step, cap * gammas[s])
        elif opened < n_new:
            blk, step, new = n_old + opened, gammas[s], True
            opened += 1
        else:
            blk, step = n_old + opened - 1, gammas[s]
        Z = _features_ref(X[rows], W[blk], phase[blk], scale, kind)
        factor = 1.0 - step * alpha
        incs = [c * factor for c in incs]
        binc = [v * factor for v in binc]
        betas[:n_old + opened] *= factor
        decay *= factor
        incs.append(-(step / nb) * (Z.T @ grad.astype(dt)).astype(np.float64))
        binc.append(-step * gbar)
        betas[blk] += binc[-1]
        slots.append(blk)
        factors.append(factor)
        sums.append(np.zeros((r, C)))
        if averaged[s]:
            n_avg += 1
            avg_old += decay
            sums = [acc + c for acc, c in zip(sums, incs)]
        if stop_when_full and new and opened == n_new:
            break
    n_done = len(slots)
    avg_new = np.stack(sums) if n_avg else np.zeros((0, r, C))
    return (n_done, np.asarray(slots, dtype=np.int64),
            np.stack(incs) if incs else np.zeros((0, r, C)),
            np.stack(binc) if binc else np.zeros((0, C)), decay, np.asarray(factors),
            avg_new, avg_old, n_avg, loss_sum, weight_sum)
