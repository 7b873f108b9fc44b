"""DSG with old coordinates (Li and Poczos): ``update="new" | "uniform" | "check"``.

Oracles: the NumPy twins of the CDSG kernel and of its test (polynomial roots instead of the
closed form), the sequential reference (``families/dsg/reference.py``, plain NumPy), the
exact empirical kernel ridge regression solution ``c = (K + n lambda I)^-1 y`` for the
convergence rate, the exact Gaussian kernel for the feature scaling, and the affine algebra
of a round (``docs/algorithms/dsg_rounds.md``) recomputed from each task run alone.
"""

from dataclasses import replace

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import ModelFormatError
from ooc_kernels.families.dsg import solver
from ooc_kernels.families.dsg._reuse import uniform_draw, uniform_schedule
from ooc_kernels.families.dsg.kernels import dsg_chunk_update
from ooc_kernels.families.dsg.kernels_reuse import (check_step, check_step_ref,
                                                    dsg_check_update, dsg_check_update_ref)
from ooc_kernels.families.dsg.reference import sequential_dsg
from ooc_kernels.parallel.engine import RoundInfo, run_rounds
from ooc_kernels.testing._algorithms import case_data

pytestmark = pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")
MODES = ("new", "uniform", "check")
PARAMS = (0.05, 4, 0, 0.5, 0.0)  # alpha, batch_size, loss_id (squared), scale, loss_param


# ---------------------------------------------------------------------------- the test
def test_check_step_closed_form_equals_the_roots_of_the_inequality():
    rng = np.random.default_rng(0)
    for trial in range(60):
        C = 1 + trial % 3
        beta = rng.normal(size=(12, C)) * rng.uniform(0.01, 2.0)
        gbar, s2, gamma = rng.normal(size=C), rng.uniform(0, 0.5), rng.uniform(0.01, 1.0)
        best, step = check_step(beta, 12, gbar, s2, gamma)
        best_ref, step_ref = check_step_ref(beta, 12, gbar, s2, gamma)
        assert best == best_ref
        np.testing.assert_allclose(step, step_ref, rtol=1e-9, atol=1e-12)


def test_check_step_prefers_a_block_whose_past_step_the_batch_undoes():
    """C = 1, no variance: a block with beta parallel to g admits eta = -beta / g (the
    first term vanishes), a step beta / g; one with beta = 0 admits at most
    gamma / sqrt(2) < gamma (no old block beats a new one then)."""
    beta = np.array([[0.0], [0.3], [-0.3]])
    best, step = check_step(beta, 3, np.array([1.0]), 0.0, 0.1)
    assert best == 1
    assert step >= 0.3 - 1e-12
    best0, step0 = check_step(np.zeros((3, 1)), 3, np.array([1.0]), 0.0, 0.1)
    np.testing.assert_allclose(step0, 0.1 / np.sqrt(2.0), rtol=1e-12)


def _kernel_case(seed=0, n=40, d=3, r=4, C=2, n_old=3, n_new=10, beta_scale=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Y = rng.normal(size=(n, C))
    W = rng.normal(size=(n_old + n_new, d, r))
    ph = rng.uniform(0, 2 * np.pi, (n_old + n_new, r))
    beta = np.zeros((n_old + n_new, C))
    beta[:n_old] = rng.normal(size=(n_old, C)) * beta_scale
    F = rng.normal(size=(n, C)) * 0.1
    m = -(-n // PARAMS[1])
    steps = (np.full(m, 0.8), np.arange(m) % 2 == 0)
    return X, Y, rng.uniform(0.5, 1.5, n), F, W, ph, beta, n_old, steps


@pytest.mark.parametrize("stop", [False, True])
def test_check_kernel_equals_its_numpy_twin(stop):
    X, Y, sw, F, W, ph, beta, n_old, steps = _kernel_case(seed=1, n_new=10 if not stop else 3)
    got = dsg_check_update(X, Y, sw, F.copy(), W, ph, beta, n_old, steps, PARAMS,
                           (2.0, stop))
    ref = dsg_check_update_ref(X, Y, sw, F, W, ph, beta, n_old, steps, PARAMS, (2.0, stop))
    slots = got[1]
    assert (slots < n_old).any() and (slots >= n_old).any()   # both branches ran
    if stop:  # the last new slot opened: the growth ends there
        assert got[0] < len(steps[0]) and slots[-1] == len(W) - 1
    assert got[0] == ref[0]
    np.testing.assert_array_equal(slots, ref[1])
    for a, b in zip(got[2:], ref[2:]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_check_kernel_while_no_block_passes_is_dsg():
    """While no old block passes the test (here: the old blocks' beta are zero, and the
    new blocks' until they do), CDSG's steps are DSG's steps (T8)."""
    X, Y, sw, F, W, ph, beta, n_old, steps = _kernel_case(beta_scale=0.0, n_old=2)
    slots = dsg_check_update(X, Y, sw, F.copy(), W, ph, beta, n_old, steps, PARAMS,
                             (2.0, False))[1]
    k = int(np.flatnonzero(slots != n_old + np.arange(len(slots)))[0])
    assert k >= 3                                 # the prefix of new blocks
    rows, prefix = k * PARAMS[1], (steps[0][:k], steps[1][:k])
    got = dsg_check_update(X[:rows], Y[:rows], sw[:rows], F[:rows].copy(), W, ph, beta,
                           n_old, prefix, PARAMS, (2.0, False))
    ref = dsg_chunk_update(X[:rows], Y[:rows], sw[:rows], F[:rows].copy(),
                           W[n_old:n_old + k], ph[n_old:n_old + k], prefix, PARAMS)
    np.testing.assert_array_equal(got[1], n_old + np.arange(k))
    np.testing.assert_allclose(got[2], ref[0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got[6], ref[2], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose([got[4], got[7], got[8], got[9], got[10]],
                               [ref[1], ref[3], ref[4], ref[5], ref[6]], rtol=1e-12)


# ------------------------------------------------------------------- engine = reference
def _softmax_case(update, seed=0):
    """Three classes (beta has three outputs), weights, averaging, float64; 30 steps an
    epoch, 36 blocks of 4 features that fill within three epochs, so both phases run."""
    from ooc_kernels.families._spec import AlgorithmCase
    from ooc_kernels.losses import get_loss

    rng = np.random.default_rng(seed)
    sizes = (24, 24, 24, 17)
    X = rng.normal(size=(sum(sizes), 2))
    y = np.argmax(X @ rng.normal(size=(2, 3)) + 0.3 * rng.normal(size=(len(X), 3)), axis=1)
    config = solver.DSGConfig(
        loss_id=get_loss("softmax").loss_id, target="softmax", n_outputs=3,
        n_features_in=2, block_size=4, n_blocks=36, bandwidth=0.8, feature_seed=seed + 5,
        alpha=0.02, batch_size=3, learning_rate="inverse", eta0=6.0, t0=0.0,
        dtype="float64", classes=(0, 1, 2), shuffle=False, average=4, update=update)
    w = rng.uniform(0.5, 1.5, size=len(X))
    bounds = np.cumsum((0,) + sizes)
    chunks = [{"X": X[a:b], "y": y[a:b], "sample_weight": w[a:b]}
              for a, b in zip(bounds[:-1], bounds[1:])]
    return AlgorithmCase(algorithm=solver.DSGAlgorithm(config), state=solver.init_state(config),
                         chunks=chunks, dims={"X": ("sample", "feature"), "y": ("sample",),
                                              "sample_weight": ("sample",)}, seed=seed)


@pytest.mark.parametrize("update", MODES)
def test_engine_with_one_task_per_round_equals_the_sequential_reference(update):
    case = _softmax_case(update)
    state, ref = case.state, case.state
    seen = []
    for _ in range(3):
        state = run_rounds(case.algorithm, state, case_data(case), n_epochs=1,
                           chunks_per_round=1, seed=case.seed, shuffle=False,
                           shuffle_chunks=1, scheduler="sync").state
        ref = sequential_dsg(case.algorithm.config, ref, case.chunks)
        seen.append((state.n_iter, state.n_blocks_seen))
        for name, value in solver.state_arrays(ref).items():
            np.testing.assert_allclose(solver.state_arrays(state)[name], value, rtol=1e-10,
                                       atol=1e-10 * max(1.0, np.abs(value).max()),
                                       err_msg=name)
    (t1, blocks1), _, (t3, blocks3) = seen
    assert blocks3 == 36 and t3 == 3 * t1 == 90   # the budget filled
    if update == "new":
        assert blocks1 == t1
    elif update == "uniform":
        assert blocks1 == -(-t1 // 2)             # odd steps open a block (T6)
    else:
        assert blocks1 < t1                        # old blocks passed the test
    assert (state.beta is not None) == (update == "check")


# ----------------------------------------------------------------------- UDSG's draws
def test_uniform_schedule_and_draws():
    kinds = uniform_schedule(0, 10, 0, 100)
    assert kinds.tolist() == [True, False] * 5
    assert uniform_schedule(0, 10, 0, 3).tolist() == [True, False, True, False, True]
    counts = np.bincount([uniform_draw(11, t, 7) for t in range(1, 14001)], minlength=7)
    # multinomial, 2000 expected per block, standard deviation about 41
    assert np.abs(counts - 2000).max() < 5 * 41, counts


# ------------------------------------------------------------------- rounds with K > 1
@pytest.mark.parametrize("update", MODES)
def test_a_round_composes_the_tasks_run_alone(update):
    """K = 3: the next model and beta are ``x + w (S - x)``, ``S`` the tasks' local runs
    composed as affine maps ``x -> x d_k + B_k`` (``d_k`` the product of the task's own
    step factors, CDSG's included), each run computed alone from the round's state with
    the step range and block ids the round gave it."""
    case = _softmax_case(update)
    alg = case.algorithm
    state = alg.apply(case.state, alg.chunk_step(case.state, case.chunks[0], solver.DSGTask(
        chunk=0, epoch=0, round=0, seed=0, block_start=0, t_start=0)))
    info = RoundInfo(epoch=0, round=1, groups=((1,), (2,), (3,)),
                     sizes=((24,), (24,), (17,)), seed=0)
    tasks = alg.make_tasks(state, info)
    batches = case.chunks[1:]
    alone = [alg.chunk_step(state, b, replace(t, n_tasks=1, mix=1.0))
             for b, t in zip(batches, tasks)]
    assert all(a.dense is None for a in alone)            # growth steps only
    combined = alg.chunk_step(state, batches[0], tasks[0])
    for batch, t in zip(batches[1:], tasks[1:]):
        combined = alg.combine(combined, alg.chunk_step(state, batch, t))
    got = alg.apply(state, combined, info)
    w = tasks[0].mix
    for name in ("coef",) + (("beta",) if update == "check" else ()):
        x = getattr(state, name)
        S = x
        for a, t in zip(alone, tasks):
            local = getattr(alg.apply(state, a, info), name)
            d = a.beta_decay if name == "beta" else a.decay
            S = S * d + (local - x * d)
        np.testing.assert_allclose(getattr(got, name), x + w * (S - x), rtol=1e-12,
                                   atol=1e-14)
    if update == "check":
        assert any(len(set(a.block_ids.tolist())) < len(a.block_ids) or
                   (a.block_ids < state.n_blocks_seen).any() for a in alone)
    if update == "uniform":  # the ids reserved are the ids opened: no gap in the table
        opened = sorted({int(i) for a in alone for i in a.block_ids
                         if i >= state.n_blocks_seen})
        assert opened == list(range(state.n_blocks_seen, got.n_blocks_seen))


# ----------------------------------------------------------------------- the estimators
def _regression(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, np.sin(2 * X[:, 0]) + 0.3 * X[:, 1]


@pytest.mark.parametrize("update", MODES)
def test_budget_stops_the_growth(update):
    X, y = _regression()
    reg = ok.DSGRegressor(update=update, n_features=256, block_size=16, batch_size=10,
                          max_iter=3, tol=None, random_state=0, scheduler="sync",
                          progress=False).fit(X, y)
    assert reg.n_blocks_seen_ == 16 and reg.coef_.shape[0] == 16
    assert reg.score(X, y) > 0.9


def test_unknown_update_is_refused():
    X, y = _regression(20)
    with pytest.raises(ok.exceptions.InvalidParameterError,
                       match=r"'update' parameter of DSGRegressor must be a str among "
                             r"\{'check', 'new', 'uniform'\}\. Got 'first' instead"):
        ok.DSGRegressor(update="first").fit(X, y)


def test_check_model_saved_and_loaded_with_beta(tmp_path):
    X, y = _regression()
    params = dict(update="check", n_features=4096, block_size=16, batch_size=10,
                  max_iter=1, tol=None, random_state=0, scheduler="sync", progress=False)
    reg = ok.DSGRegressor(**params).fit(X, y)
    assert np.abs(reg._state.beta).max() > 0
    path = tmp_path / "m.ooc"
    reg.save(path)
    back = ok.load(path)
    np.testing.assert_array_equal(back._state.beta, reg._state.beta)
    np.testing.assert_array_equal(back.predict(X), reg.predict(X))
    reg.partial_fit(X, y)
    back.partial_fit(X, y)                        # the test reads beta: same next steps
    np.testing.assert_array_equal(back._state.coef, reg._state.coef)
    arrays, meta = reg._fitted_arrays(), reg._fitted_meta()
    del arrays["beta"]
    fresh = ok.DSGRegressor(**params)
    fresh.n_features_in_ = reg.n_features_in_
    with pytest.raises(ModelFormatError, match=r"update='check' needs the array beta of "
                                               r"shape \(256, 1\); the file has none"):
        fresh._restore_fitted(arrays, meta, "m.ooc")


def test_a_model_saved_before_update_existed_loads_as_dsg():
    """A configuration without ``update`` and no ``beta`` array (what the previous version
    wrote) restores as ``update="new"`` with the same predictions."""
    X, y = _regression()
    params = dict(n_features=256, block_size=16, batch_size=10, max_iter=1, tol=None,
                  random_state=0, scheduler="sync", progress=False)
    reg = ok.DSGRegressor(**params).fit(X, y)
    arrays, meta = reg._fitted_arrays(), reg._fitted_meta()
    meta["config"].pop("update")
    old = ok.DSGRegressor(**params)
    old.n_features_in_ = reg.n_features_in_
    old._restore_fitted(arrays, meta, "old.ooc")
    assert old._config.update == "new" and old._state.beta is None
    np.testing.assert_array_equal(old._state.coef, reg._state.coef)


@pytest.mark.slow
@pytest.mark.parametrize("update", ["uniform", "check"])
def test_interrupted_fit_resumes_bit_for_bit(update, monkeypatch):
    """The contract suite's resume check with the mode on and a budget the fit never fills
    (every step a growth step)."""
    from ooc_kernels.testing._estimators import check_estimator_resume, check_estimator_save_load

    monkeypatch.setattr(ok.DSGRegressor, "_test_params",
                        dict(ok.DSGRegressor._test_params, update=update, n_features=16384))
    check_estimator_resume(ok.DSGRegressor)
    check_estimator_save_load(ok.DSGRegressor)


# ------------------------------------------------------------------------- fidelity
def test_features_estimate_the_kernel_not_twice_it():
    """The feature scaling of the reuse steps: an old block's kernel estimate
    ``z_k(x) . z_k(x')`` averages to the Gaussian kernel (the paper's printed
    ``sqrt(2) [cos, sin]`` would give twice it)."""
    from ooc_kernels.features.blocks import stacked_block_params
    from ooc_kernels.features.maps import get_feature_map
    from ooc_kernels.families.dsg.kernels import _features_ref

    fmap = get_feature_map("rbf")
    rng = np.random.default_rng(1)
    x = rng.normal(size=(6, 3)) * 0.7
    r, n_blocks = 16, 800
    W, ph = stacked_block_params(3, np.arange(n_blocks), 3, r, 1.2, np.float64, kernel=fmap)
    est = np.mean([_features_ref(x, W[j], ph[j], fmap.feature_scale(r))
                   @ _features_ref(x, W[j], ph[j], fmap.feature_scale(r)).T
                   for j in range(n_blocks)], axis=0)
    exact = np.exp(-((x[:, None] - x[None]) ** 2).sum(-1) / (2 * 1.2 ** 2))
    assert np.abs(est - exact).max() < 0.03     # standard error about 0.006


def _krr_errors(update, seed, n=256, lam=0.05, epochs=6, B=4, r=16):
    from ooc_kernels.data.generators import generate_chunk

    c = generate_chunk("synthetic_krr_2d", 0, n, random_state=seed)
    X, y = c["X"].astype(np.float64), c["y"].astype(np.float64)
    K = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 2.0)
    f_star = K @ np.linalg.solve(K + n * lam * np.eye(n), y)   # exact empirical KRR
    # the solution with the paper's printed feature scaling, E[phi . phi'] = 2 k
    f_twice = 2 * K @ np.linalg.solve(2 * K + n * lam * np.eye(n), y)
    reg = ok.DSGRegressor(update=update, standardize=False, bandwidth=1.0, alpha=lam,
                          learning_rate="inverse", eta0=1.0 / lam, t0=20.0, dtype="float64",
                          n_features=r * epochs * n // B, block_size=r, batch_size=B,
                          average=False, max_iter=1, tol=None, warm_start=True, chunk_size=n,
                          random_state=seed, scheduler="sync", progress=False)
    ts, errs = [], []
    for _ in range(epochs):
        reg.fit(X, y)
        ts.append(reg.t_)
        errs.append(np.mean((reg.predict(X) - f_star) ** 2))
    return np.array(ts), np.array(errs), float(np.mean((f_twice - f_star) ** 2))


@pytest.mark.slow
@pytest.mark.parametrize("update", MODES)
def test_krr_error_decays_as_one_over_t(update):
    """||f_t - f*||^2 on the training rows against the exact empirical KRR solution, with
    gamma_t = theta / (t + 20), theta lambda = 1 (the theorems' range): the log-log slope,
    averaged over 3 seeds, is -1 +- 0.25 (the paper's O(1/t) for DSG, UDSG and CDSG), and
    the last iterate is nearer f* than the KRR solution of twice the kernel (what the
    paper's printed feature scaling converges to) is: features scaled by sqrt(2) give
    slopes of -0.68 to -0.74 here and a last error 1.6 times that distance."""
    runs = [_krr_errors(update, seed) for seed in range(3)]
    ts = runs[0][0]
    errors = np.mean([e for _, e, _ in runs], axis=0)
    slope = np.polyfit(np.log(ts), np.log(errors), 1)[0]
    assert -1.25 <= slope <= -0.75, slope
    assert errors[-1] < np.mean([far for _, _, far in runs]), errors[-1]


def test_a_warm_start_continues_in_the_mode_set_since():
    X, y = _regression()
    params = dict(n_features=4096, block_size=16, batch_size=10, max_iter=1, tol=None,
                  warm_start=True, random_state=0, scheduler="sync", progress=False)
    runs = {}
    for update in MODES:
        reg = ok.DSGRegressor(**params).fit(X, y)            # one epoch of DSG
        reg.set_params(update=update).fit(X, y)              # then one in the new mode
        runs[update] = reg
        assert reg._config.update == update
        assert (reg._state.beta is not None) == (update == "check")
    assert runs["uniform"].n_blocks_seen_ < runs["new"].n_blocks_seen_
    assert runs["check"].n_blocks_seen_ < runs["new"].n_blocks_seen_
