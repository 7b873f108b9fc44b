"""Passes per read from a task's progress (``families/dspdc/_pass_rule.py``).

The rule against its definition written out, the rounds that run it against the NumPy oracle
that replays it in its own formulation of the round's dual (``reference.py``), and the fits
of ``local_passes="auto"`` out of core: the certificate against the exact optimum,
determinism for a given ``random_state`` and a resumed fit against the uninterrupted one.
"""

from dataclasses import replace

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.families.dspdc import _pass_rule
from ooc_kernels.families.dspdc._pass_rule import local_dual_value, pass_checkpoints, \
    stop_after


def test_stop_after_is_the_share_of_the_rise():
    g = _pass_rule.PASS_GAIN
    # the last pass gained just above / just below the share g of the rise since the start
    first, previous = 0.0, 9.0
    rise_above = 9.0 + 1.01 * g * 9.0 / (1 - 1.01 * g)    # gain share just above g
    rise_below = 9.0 + 0.99 * g * 9.0 / (1 - 0.99 * g)
    assert not stop_after(rise_above, previous, first)
    assert stop_after(rise_below, previous, first)
    assert stop_after(8.0, previous, first)                 # the dual fell
    assert stop_after(np.nan, previous, first)
    assert stop_after(5.0, 5.0, 5.0)        # no rise at all: 0 is at most g times 0


def test_pass_checkpoints():
    # 3 passes at least, at most 6, 10 rows, one dual per iteration
    assert pass_checkpoints(3.0, 6.0, 10, 1) == (60, [20, 30, 40, 50])
    assert pass_checkpoints(1.0, 3.0, 9, 2) == (14, [5, 10])
    assert pass_checkpoints(3.0, 3.0, 10, 1) == (30, [])
    assert pass_checkpoints(3.0, None, 10, 1) == (30, [])


def test_local_dual_value_is_the_dual_written_out():
    """One task holding all the rows (no tilt): the weighted ridge / logistic dual written
    out, and at the ridge optimum (closed form) the primal optimum (strong duality)."""
    rng = np.random.default_rng(0)
    n, p, lam = 40, 5, 0.3
    A = rng.normal(size=(n, p))
    b = rng.normal(size=n)
    w = rng.uniform(0.5, 2.0, size=n)
    y = rng.normal(size=n)
    want = -np.sum(w * (0.5 * y ** 2 + b * y)) / n - np.sum((A.T @ (w * y) / n) ** 2) / (2 * lam)
    got = local_dual_value(0, y, b, w, A.T @ (w * y), 0.0, lam, np.zeros(p), n)
    assert got == pytest.approx(want, rel=1e-12)
    bl = np.where(b > 0, 1.0, -1.0)
    yl = -bl * rng.uniform(0.1, 0.9, size=n)               # inside the domain: b y in (-1, 0)
    s = -bl * yl
    conj = s * np.log(s) + (1 - s) * np.log(1 - s)
    want = -np.sum(conj) / n - np.sum(np.maximum(np.abs(A.T @ yl / n) - 0.01, 0) ** 2) / (2 * lam)
    got = local_dual_value(2, yl, bl, None, A.T @ yl, 0.01, lam, np.zeros(p), n)
    assert got == pytest.approx(want, rel=1e-12)
    # ridge optimum: x* = (A^T A / n + lam I)^-1 A^T b / n, y* = A x* - b
    x = np.linalg.solve(A.T @ A / n + lam * np.eye(p), A.T @ b / n)
    primal = np.sum((A @ x - b) ** 2) / (2 * n) + lam / 2 * x @ x
    ys = A @ x - b
    assert local_dual_value(0, ys, b, None, A.T @ ys, 0.0, lam, np.zeros(p), n) == \
        pytest.approx(primal, rel=1e-10)


def _with_rule(case, local, most):
    alg = case.algorithm
    alg.config = replace(alg.config, local_passes=local, max_local_passes=most)
    return case


@pytest.mark.parametrize("weighted", [False, True])
def test_rounds_with_the_rule_equal_the_oracle(weighted):
    """The engine's rounds (K = 1, storage order, two epochs) with the rule against the
    oracle that replays it (its own dual of the round's problem, its own passes)."""
    from ooc_kernels.families.dspdc.reference import sequential_dspdc
    from ooc_kernels.families.dspdc.solver import make_case, state_arrays
    from ooc_kernels.testing._algorithms import _run

    case = _with_rule(make_case(0, weighted=weighted), 1.0, 8.0)
    engine = _run(case, k=1, scheduler="sync", n_epochs=2)
    oracle = sequential_dspdc(case, n_epochs=2)
    got, want = state_arrays(engine), state_arrays(oracle)
    n = case.algorithm.config.n_samples
    iters = int(want["n_iter"])
    # the rule chose more than the least and fewer than the most passes
    assert 2 * n / 3 < iters * 3 and iters < 2 * 8 * n / 3
    for name in want:
        np.testing.assert_allclose(np.asarray(got[name], dtype=float),
                                   np.asarray(want[name], dtype=float), rtol=1e-9,
                                   atol=1e-12, err_msg=name)


def _lazy_ridge(n=1200, p=6, seed=0):
    import dask.array as da

    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, p)) * np.array([1.0, 3.0, 0.3, 1.0, 2.0, 1.0])
    y = A @ rng.normal(size=p) + 0.3 * rng.normal(size=n)
    return A, y, (da.from_array(A, chunks=(100, p)), da.from_array(y, chunks=100))


def test_auto_out_of_core_certifies_the_users_problem(monkeypatch):
    """Ridge on raw columns without an intercept, out of core (12 chunks, groups of 3 drawn
    anew), from the zero start (the squared loss's start would certify it at the set-up):
    the rule runs more than 3 passes per read, and the certified gap bounds the distance to
    the closed-form optimum of the user's problem."""
    from ooc_kernels.families.dspdc import _squared_start

    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    A, y, lazy = _lazy_ridge()
    n, alpha = len(y), 1e-2
    reg = ok.DSPDCRegressor(alpha=alpha, standardize=False, fit_intercept=False, tol=1e-9,
                            max_iter=60, shuffle_chunks=3, scheduler="sync", random_state=0,
                            progress=False).fit(*lazy)
    assert reg.stop_reason_.startswith("tol:")
    assert (reg.local_passes_, reg.max_local_passes_) == (3.0, _pass_rule.AUTO_MAX_LOCAL_PASSES)
    last = reg.gap_history_[-1]
    epochs = len(reg.gap_history_)                    # the certified iterate's epochs
    assert 3.0 * epochs < last["passes"] < _pass_rule.AUTO_MAX_LOCAL_PASSES * epochs

    def P(x):
        return np.sum((A @ x - y) ** 2) / (2 * n) + alpha / 2 * x @ x

    x_star = np.linalg.solve(A.T @ A / n + alpha * np.eye(A.shape[1]), A.T @ y / n)
    assert last["primal"] == pytest.approx(P(reg.coef_), rel=1e-12)
    assert 0.0 <= P(reg.coef_) - P(x_star) <= last["gap"] * (1 + 1e-9) + 1e-15
    assert last["gap"] <= 1e-9 * abs(last["primal"])


def test_auto_out_of_core_is_deterministic():
    """The passes a task runs depend on its rows, its state and its stream only: the fit
    on one thread and on a pool of threads, bit for bit."""
    _, _, lazy = _lazy_ridge(seed=1)
    kw = dict(alpha=1e-3, tol=1e-7, max_iter=30, shuffle_chunks=3, random_state=5,
              progress=False)
    fits = [ok.DSPDCRegressor(scheduler=s, **kw).fit(*lazy) for s in ("sync", "threads")]
    for other in fits[1:]:
        np.testing.assert_array_equal(other.coef_, fits[0].coef_)
        assert [h["passes"] for h in other.gap_history_] == \
            [h["passes"] for h in fits[0].gap_history_]


@pytest.mark.parametrize("shuffle_chunks", [3, 12])
def test_the_certifying_round_runs_no_iterations(shuffle_chunks, monkeypatch):
    """The task that completes the losses of a certified epoch start runs none of its
    iterations (the fit stops and returns that start): the same model, gaps and stop as the
    fit whose tasks all iterate, and the check said yes once, in the last epoch (groups of 3
    chunks drawn anew).  With one group of all 12 chunks the only duals the task has are the
    start's own, which do not certify it: the check says no and the task iterates."""
    from ooc_kernels.families.dspdc import _squared_start
    from ooc_kernels.families.dspdc.solver import DSPDCAlgorithm

    # from the zero start (the ridge start is certified in the first epoch)
    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    _, _, lazy = _lazy_ridge(seed=2)
    kw = dict(alpha=1e-3, tol=1e-6, max_iter=40, shuffle_chunks=shuffle_chunks,
              scheduler="sync", random_state=1, progress=False)
    real, said = DSPDCAlgorithm.certifies_start, []

    def recording(self, state, task, start_loss, n_k):
        yes = real(self, state, task, start_loss, n_k)
        said.append((task.write[0], yes))
        return yes

    monkeypatch.setattr(DSPDCAlgorithm, "certifies_start", recording)
    skipped = ok.DSPDCRegressor(**kw).fit(*lazy)
    assert [e for e, yes in said if yes] == ([skipped.n_iter_ - 1] if shuffle_chunks < 12
                                             else [])
    monkeypatch.setattr(DSPDCAlgorithm, "certifies_start", lambda *a: False)
    full = ok.DSPDCRegressor(**kw).fit(*lazy)
    assert skipped.stop_reason_.startswith("tol:") and full.stop_reason_.startswith("tol:")
    assert skipped.n_iter_ == full.n_iter_
    np.testing.assert_array_equal(skipped.coef_, full.coef_)
    assert skipped.gap_history_[:-1] == [{**h, "seconds": s["seconds"]} for h, s in
                                          zip(full.gap_history_[:-1], skipped.gap_history_)]
    last, last_full = skipped.gap_history_[-1], full.gap_history_[-1]
    assert last["primal"] == last_full["primal"]
    # the later duals are those before the skipped task's iterations: no better than the
    # full fit's, and still within tol
    assert last["dual"] <= last_full["dual"]
    assert last["relative_gap"] <= 1e-6


@pytest.mark.parametrize("max_block", [1, 7, 10, 1000])
def test_blocks_of_a_pass_draw_the_same_row_uniforms(max_block):
    """With every column updated (``q = n_features``), the blocks the pass rule draws one
    pass at a time split the stream of one draw: the same uniforms in the same order."""
    from types import SimpleNamespace

    from ooc_kernels.families.dspdc._local import task_uniform_blocks

    cfg = SimpleNamespace(local_passes=10.0, q=5, n_features=5)
    whole = [r for r, _ in task_uniform_blocks(cfg, 3, 1, 2, 0, 30, 1)]
    split = [r for r, _ in task_uniform_blocks(cfg, 3, 1, 2, 0, 30, 1, max_block=max_block)]
    assert all(len(r) <= max_block for r in split)
    np.testing.assert_array_equal(np.concatenate(split), np.concatenate(whole))
