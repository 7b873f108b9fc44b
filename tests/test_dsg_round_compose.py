"""A ``K > 1`` DSG round with regularization (``alpha > 0``) and averaging, against the
composition written in ``docs/algorithms/dsg_rounds.md``: task ``k``'s local run is the
affine map ``x -> x d_k + B_k`` (computed here from the task run alone), the round's
composed run is ``S = (((x d_0 + B_0) d_1 + B_1) d_2 + B_2)``, its iterates ``s_j`` are the
partial compositions, and the next model and averaged iterate are
``x + w (S - x)`` and the mean of the earlier iterates and the ``x + w (s_j - x)``.  With
``alpha = 0`` every ``d_k`` is 1 and the order of the composition cannot be seen; here it
can."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.families.dsg.solver import DSGAlgorithm
from ooc_kernels.parallel.engine import RoundInfo

pytestmark = pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")

ALPHA = 0.05


def _weight(gamma, curvature, alpha, k):
    """The round's weight for one-step tasks (docs/algorithms/dsg_rounds.md, rho = 0)."""
    e = 1.0 - gamma * (curvature + alpha)
    if e >= 1.0:
        return 1.0
    return min(1.0, max(1.0 / k, (1.0 + abs(e)) / (k * (1.0 - e))))


@pytest.mark.parametrize("step", [0.3, 0.9])
def test_a_regularized_averaged_round_is_the_documented_composition(step):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(75, 3))
    y = np.sin(X[:, 0])
    reg = ok.DSGRegressor(bandwidth=1.0, n_features=256, block_size=8, batch_size=5,
                          random_state=0, scheduler="sync", chunk_size=20, dtype="float64",
                          max_iter=1, tol=None, alpha=ALPHA, learning_rate="constant",
                          eta0=0.1, average=True).fit(X[:60], y[:60])
    cfg = reg._config
    assert cfg.alpha == ALPHA and cfg.average == 1
    gamma = step / cfg.curvature
    cfg = replace(cfg, eta0=gamma)
    alg, state = DSGAlgorithm(cfg), reg._state
    x, k0 = state.coef, state.n_avg
    assert k0 == 12 and state.avg is not None           # 60 rows in batches of 5
    info = RoundInfo(epoch=1, round=0, groups=((0,), (1,), (2,)),
                     sizes=((5,), (5,), (5,)), seed=reg._data_seed)
    tasks = alg.make_tasks(state, info)
    batches = [{"X": X[a:a + 5], "y": y[a:a + 5]} for a in (60, 65, 70)]
    d = 1.0 - gamma * ALPHA                             # one step of each task
    alone = [alg.apply(state, alg.chunk_step(state, b, replace(t, n_tasks=1, mix=1.0)),
                       info).coef for b, t in zip(batches, tasks)]
    increments = [local - x * d for local in alone]     # B_k
    iterates, s = [], x
    for B in increments:                                # the composition, in task order
        s = s * d + B
        iterates.append(s)
    w = _weight(gamma, cfg.curvature, ALPHA, 3)
    combined = alg.chunk_step(state, batches[0], tasks[0])
    for b, t in zip(batches[1:], tasks[1:]):
        combined = alg.combine(combined, alg.chunk_step(state, b, t))
    got = alg.apply(state, combined, info)
    np.testing.assert_allclose(got.coef, x + w * (iterates[-1] - x), rtol=1e-12,
                               atol=1e-15)
    expected_avg = (state.avg * k0 + sum(x + w * (s - x) for s in iterates)) / (k0 + 3)
    np.testing.assert_allclose(got.avg, expected_avg, rtol=1e-12, atol=1e-15)
    assert got.n_avg == k0 + 3
