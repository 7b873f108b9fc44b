"""The adaptive weight of a ``K > 1`` DSG round, ``x' = x + w (S - x)``, replayed in NumPy:
``w = min(1, max(1/K, (1 + max(|e|, rho)) / (K (1 - e))))`` with ``e`` the product of one
task's step factors ``1 - gamma_t (lambda + alpha)`` and ``rho`` the contraction floor
(``docs/algorithms/dsg_rounds.md``; ``rho = 0`` by default).  While a task's steps remove
the top direction (``e`` near 0) the round adds ``(1 + rho) / K`` of the summed increments."""

from dataclasses import replace

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dsg.solver import ROUND_CONTRACTION, DSGAlgorithm
from ooc_kernels.parallel.engine import RoundInfo

pytestmark = pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")

PARAMS = dict(bandwidth=1.0, n_features=256, block_size=8, batch_size=5, random_state=0,
              scheduler="sync", chunk_size=20, dtype="float64", max_iter=1, tol=None)


def _rule(gammas, curvature, alpha, k, rho):
    """The weight, one step factor at a time (no vectorized product)."""
    e = 1.0
    for g in gammas:
        e *= 1.0 - g * (curvature + alpha)
    if e >= 1.0:
        return 1.0
    w = (1.0 + max(abs(e), rho)) / (k * (1.0 - e))
    return min(1.0, max(1.0 / k, w))


def _fitted(**params):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    return ok.DSGRegressor(**PARAMS, **params).fit(X, np.sin(X[:, 0]))


@pytest.mark.parametrize("eta0, t0, rows, k", [
    (0.3, 0.0, 5, 4),       # one small step per task: e = 0.7, adding is safe (w = 1)
    (1.0, 0.0, 5, 4),       # gamma lambda = 1: e = 0, w = 1.5 / 4
    (1.0, 0.0, 20, 8),      # four steps removing the top direction: w = 1.5 / 8
    (1.8, 0.0, 5, 2),       # overshoot: e = -0.8, w = 1.8 / (2 * 1.8) = 1 / 2
    (40.0, 30.0, 15, 3),    # inverse schedule over three steps
])
def test_the_weight_is_the_rule_replayed_in_numpy(eta0, t0, rows, k):
    reg = _fitted(learning_rate="inverse" if t0 else "constant", eta0=1.0, t0=1.0)
    cfg = reg._config
    cfg = replace(cfg, eta0=eta0 / cfg.curvature, t0=t0,
                  learning_rate="inverse" if t0 else "constant")
    state = reg._state
    info = RoundInfo(epoch=1, round=0, groups=tuple((i,) for i in range(k)),
                     sizes=((rows,),) * k, seed=0)
    m = -(-rows // cfg.batch_size)
    t = state.n_iter + 1 + np.arange(m)
    gammas = [cfg.eta0 / (s + cfg.t0) if t0 else cfg.eta0 for s in t]
    for rho in (ROUND_CONTRACTION, 0.5, 0.75):
        alg = DSGAlgorithm(cfg, contraction=rho)
        expected = _rule(gammas, cfg.curvature, cfg.alpha, k, rho)
        assert alg.mixing_weight(state, info) == pytest.approx(expected, rel=1e-12)
        assert [task.mix for task in alg.make_tasks(state, info)] == \
            [pytest.approx(expected, rel=1e-12)] * k
    if eta0 == 1.0:  # e = 0 (alpha = 0): a floor adds (1 + rho) / K, the default 1 / K
        cfg = replace(cfg, alpha=0.0)
        w = DSGAlgorithm(cfg, contraction=0.5).mixing_weight(state, info)
        assert w == pytest.approx(1.5 / k, rel=1e-12)
        assert DSGAlgorithm(cfg).mixing_weight(state, info) == pytest.approx(1.0 / k,
                                                                            rel=1e-12)


@pytest.mark.parametrize("rho", [ROUND_CONTRACTION, 0.5])
def test_every_direction_of_the_quadratic_model_contracts_by_the_floor_or_more(rho):
    """On a quadratic with eigenvalues up to ``lambda`` (the config's curvature), the
    round's residual factor along direction ``i`` is ``1 - w K (1 - e_i)``; with the rule's
    ``w`` it is at most ``max(|e_i|, rho)`` in absolute value, for every ``i``, wherever
    ``e_i`` decreases with the eigenvalue: tasks of two steps with ``gamma lambda <= 1``,
    and of one step up to ``gamma lambda < 2``.  (With several steps of
    ``gamma lambda > 1`` a middle eigenvalue has ``e_i = 0`` below the top's ``e > 0``, and
    the top direction no longer binds.)"""
    reg = _fitted(learning_rate="constant", eta0=1.0)
    lam = reg._config.curvature
    spectrum = lam * np.geomspace(1e-4, 1.0, 50)
    for k in (2, 4, 8, 16):
        for step, steps in ((0.2, 2), (0.7, 2), (1.0, 2), (1.0, 1), (1.3, 1), (1.9, 1)):
            cfg = replace(reg._config, eta0=step / lam, alpha=0.0)
            info = RoundInfo(epoch=1, round=0, groups=tuple((i,) for i in range(k)),
                             sizes=((5 * steps,),) * k, seed=0)
            w = DSGAlgorithm(cfg, contraction=rho).mixing_weight(reg._state, info)
            e_i = (1.0 - cfg.eta0 * spectrum) ** steps
            residual = np.abs(1.0 - w * k * (1.0 - e_i))
            allowed = np.maximum(np.abs(e_i), rho)
            assert (residual <= allowed + 1e-12).all(), (k, step)
            if w > 1.0 / k:  # the floor binds: the slow directions gain w K over averaging
                slow = 1.0 - e_i[0]
                assert 1.0 - residual[0] == pytest.approx(w * k * slow, rel=1e-9)


def test_a_round_is_x_plus_the_replayed_weight_times_the_composed_runs():
    """K = 3 one-step tasks with ``gamma lambda = 1`` (``e = 0``) and a floor of 0.5: the
    next model is ``x + w (S - x)`` with ``w = 1.5 / 3`` from the replay, ``S`` the three
    local runs (each computed alone from the round's state) composed."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(75, 3))
    y = np.sin(X[:, 0])
    reg = ok.DSGRegressor(**dict(PARAMS, alpha=0.0, learning_rate="constant",
                                 eta0=0.1)).fit(X[:60], y[:60])
    cfg = replace(reg._config, eta0=1.0 / reg._config.curvature)
    alg, state = DSGAlgorithm(cfg, contraction=0.5), reg._state
    info = RoundInfo(epoch=1, round=0, groups=((0,), (1,), (2,)),
                     sizes=((5,), (5,), (5,)), seed=reg._data_seed)
    tasks = alg.make_tasks(state, info)
    batches = [{"X": X[a:a + 5], "y": y[a:a + 5]} for a in (60, 65, 70)]
    alone = [alg.apply(state, alg.chunk_step(state, b, replace(t, n_tasks=1, mix=1.0)),
                       info).coef for b, t in zip(batches, tasks)]
    combined = alg.chunk_step(state, batches[0], tasks[0])
    for b, t in zip(batches[1:], tasks[1:]):
        combined = alg.combine(combined, alg.chunk_step(state, b, t))
    got = alg.apply(state, combined, info).coef
    x = state.coef
    S = x + sum(local - x for local in alone)     # alpha = 0: no decay between tasks
    w = _rule([cfg.eta0], cfg.curvature, 0.0, 3, 0.5)
    assert w == pytest.approx(0.5)
    np.testing.assert_allclose(got, x + w * (S - x), rtol=1e-12, atol=1e-15)


def test_a_contraction_outside_0_1_is_refused():
    reg = _fitted(learning_rate="constant", eta0=1.0)
    with pytest.raises(ValidationError, match=r"contraction must be in \[0, 1\), got 1.0"):
        DSGAlgorithm(reg._config, contraction=1.0)
