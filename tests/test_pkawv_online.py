"""OnlineKernelRidge (Kernel-AWV and PKAWV) against the paper's closed forms and direct solves.

Oracles: :mod:`ooc_kernels.families.pkawv.reference` (every round solved directly, no
incremental update), scikit-learn's exact ``KernelRidge``, NumPy's Cholesky factor, the
regret bounds of Proposition 1 and Theorem 4 and the KORS guarantee of Proposition 5
(checks C1, C2, C5, C7, C8 of the specification).
"""

import functools
import math

import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge

import ooc_kernels as ok
from ooc_kernels.exceptions import InvalidParameterError, ValidationError
from ooc_kernels.families.pkawv import reference as ref
from ooc_kernels.families.pkawv import solver
from ooc_kernels.families.pkawv.kernels_block import linear_online_blocked
from ooc_kernels.families.pkawv.kernels_online import (
    chol_add_column,
    chol_add_column_augmented,
    chol_downdate,
    chol_update,
    linear_online,
    row_uniform,
    row_uniforms_ref,
)
from ooc_kernels.families.pkawv.taylor import TaylorBasis
from tests._interrupt import _interrupt_after, _Stop

BASES = ("taylor", "nystrom", "nystrom-fixed", "exact")


def _data(n=60, d=2, seed=0, noise=0.1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    y = np.clip(np.sin(3 * X[:, 0]) * np.cos(2 * X[:, -1]) + noise * rng.normal(size=n), -1, 1)
    return X, y


def _model(basis, **kw):
    params = dict(degree=6, alpha=0.5, bandwidth=1.0, chunk_size=17, scheduler="sync",
                  random_state=0)
    params.update(kw)
    return ok.OnlineKernelRidge(basis, **params)


def _whiten(D, sigma, X):
    """``K(X, D) K_DD^(+1/2)`` from an eigendecomposition (the fixed Nystrom embedding)."""
    w, U = np.linalg.eigh(ref.gaussian_kernel(D, D, sigma))
    keep = w > 1e-10 * w.max()
    return ref.gaussian_kernel(X, D, sigma) @ U[:, keep] / np.sqrt(w[keep])


# --------------------------------------------------------------- each basis against its oracle
@pytest.mark.parametrize("mode", ["awv", "krr"])
@pytest.mark.parametrize("basis", BASES)
def test_online_predictions_equal_the_direct_solves(basis, mode):
    X, y = _data()
    model = _model(basis, mode=mode, n_components=20).fit(X, y)
    if basis == "taylor":
        expected = ref.linear_awv(TaylorBasis(2, 6, 1.0).transform_ref(X), y, 0.5, mode)
    elif basis == "exact":
        expected = ref.kernel_awv(X, y, 0.5, 1.0, mode)
    elif basis == "nystrom-fixed":
        D = model.dictionary_
        assert D.shape == (20, 2) and all((X == row).all(axis=1).any() for row in D)
        expected = ref.linear_awv(_whiten(D, 1.0, X), y, 0.5, mode)
    else:
        u = row_uniforms_ref(model._cfg.seed, np.arange(len(y)))
        flags, _, weights = ref.kors(X, u, 1.0, 1.0, 0.5, 1.0)
        np.testing.assert_array_equal(model.dictionary_indices_, np.flatnonzero(flags))
        np.testing.assert_allclose(model.kors_weights_, weights[flags], rtol=1e-12)
        assert 3 <= flags.sum() < len(y)           # a real subsample
        expected = ref.nystrom_awv(X, y, flags, 0.5, 1.0, mode)
    np.testing.assert_allclose(model.online_predictions_, expected, rtol=1e-9, atol=1e-10)
    losses = (y - expected) ** 2
    assert model.cumulative_loss_ == pytest.approx(losses.sum(), rel=1e-9)
    ends = np.minimum(np.arange(17, 60 + 17, 17), 60)
    np.testing.assert_allclose(model.loss_history_[:, 0], ends)
    np.testing.assert_allclose(model.loss_history_[:, 1], np.cumsum(losses)[ends - 1],
                               rtol=1e-9)
    np.testing.assert_allclose(model.loss_history_[:, 2], np.cumsum(losses)[ends - 1] / ends,
                               rtol=1e-9)


@pytest.mark.parametrize("mode", ["awv", "krr"])
@pytest.mark.parametrize("basis", BASES)
def test_predict_is_the_forecast_of_the_next_row(basis, mode):
    X, y = _data(n=50)
    model = _model(basis, mode=mode, n_components=15, beta=0.3).partial_fit(X[:40], y[:40])
    pred = model.predict(X[40:])
    for i in range(40, 50):  # a copy that takes row i as the next row of its stream
        nxt = _model(basis, mode=mode, n_components=15, beta=0.3)
        nxt._validate_params()
        nxt.__dict__.update({k: v for k, v in model.__dict__.items() if k.endswith("_")
                             or k.startswith("_")})
        if basis == "nystrom":  # a row that would join the dictionary changes the basis
            u = row_uniform(model._cfg.seed, 40)
            flags, probs, _ = ref.kors(np.vstack([X[:40], X[i]]),
                                       row_uniforms_ref(model._cfg.seed, np.arange(41)),
                                       1.0, 0.3, 0.5, 1.0)
            if flags[-1]:
                continue
            assert u >= probs[-1]
        nxt.partial_fit(X[i:i + 1], y[i:i + 1])
        assert pred[i - 40] == pytest.approx(nxt.online_predictions_[0], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("mode", ["awv", "krr"])
@pytest.mark.parametrize("block", [1, 5, 32, 64])
def test_blocked_kernel_equals_the_row_by_row_kernel(block, mode):
    X, y = _data(n=203, d=3, seed=7)  # 203 rows: the last block is ragged for every size
    Phi = TaylorBasis(3, 4, 0.8).transform_ref(X)  # r = 35
    r, alpha = Phi.shape[1], 0.3
    states = [(np.eye(r) / alpha, np.zeros(r), np.zeros(r)) for _ in range(2)]
    row = linear_online(Phi, y, *states[0], mode == "awv")
    blocked = linear_online_blocked(Phi, y, *states[1], mode == "awv", block)
    np.testing.assert_allclose(blocked, row, rtol=1e-10, atol=1e-10)
    for a, b in zip(states[1], states[0]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
    # and both against the direct solves and the direct inverse
    np.testing.assert_allclose(blocked, ref.linear_awv(Phi, y, alpha, mode), atol=1e-9)
    np.testing.assert_allclose(states[1][0], np.linalg.inv(Phi.T @ Phi + alpha * np.eye(r)),
                               atol=1e-10)
    np.testing.assert_allclose(states[1][2], states[1][0] @ (Phi.T @ y), atol=1e-10)


@pytest.mark.parametrize("mode", ["awv", "krr"])
def test_blocked_kernel_across_chunk_boundaries(mode):
    X, y = _data(n=150, d=2, seed=8)
    Phi = TaylorBasis(2, 5, 1.0).transform_ref(X)
    r = Phi.shape[1]
    Ainv, b, w = np.eye(r), np.zeros(r), np.zeros(r)
    row = linear_online(Phi, y, Ainv.copy(), b.copy(), w.copy(), mode == "awv")
    parts = []
    for lo, hi in [(0, 7), (7, 40), (40, 41), (41, 109), (109, 150)]:
        parts.append(linear_online_blocked(Phi[lo:hi], y[lo:hi], Ainv, b, w, mode == "awv",
                                           16))
    np.testing.assert_allclose(np.concatenate(parts), row, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(Ainv, np.linalg.inv(Phi.T @ Phi + np.eye(r)), atol=1e-10)


def test_row_uniforms_twin_and_distribution():
    rows = np.arange(20000)
    u = row_uniforms_ref(7, rows)
    np.testing.assert_array_equal(u[:50], [row_uniform(7, t) for t in range(50)])
    assert (u >= 0).all() and (u < 1).all()
    assert abs(u.mean() - 0.5) < 0.01 and abs((u < 0.1).mean() - 0.1) < 0.01
    assert not np.array_equal(u[:50], row_uniforms_ref(8, rows[:50]))


# ------------------------------------------------------------------------- C1: exact regret
def _bound_terms(X, y, alpha, sigma):
    K = ref.gaussian_kernel(X, X, sigma)
    return K, float(np.sum(y ** 2 * ref.leverage_terms(K, alpha))), ref.log_det(K, alpha)


@functools.lru_cache(maxsize=None)
def _adversary(n, d, alpha, sigma, B=1.0, n_candidates=20, seed=0):
    """Greedy: among random candidates, the ``x`` whose Kernel-AWV forecast is largest in
    absolute value, then ``y = -B sign(y_hat)``: the loss forced at each round is maximal.
    (The forecast of a candidate ``x`` is ``lambda k^T G Y / (1 + lambda - k^T G k)``, ``G =
    (K + lambda I)^(-1)`` on the rows so far.)"""
    rng = np.random.default_rng(seed)
    X, y = np.zeros((0, d)), np.zeros(0)
    for _ in range(n):
        C = rng.uniform(-1, 1, size=(n_candidates, d))
        if len(y):
            G = np.linalg.inv(ref.gaussian_kernel(X, X, sigma) + alpha * np.eye(len(y)))
            k = ref.gaussian_kernel(C, X, sigma)
            f = alpha * (k @ G @ y) / (1 + alpha - np.einsum("ij,jk,ik->i", k, G, k))
        else:
            f = np.zeros(n_candidates)
        best = int(np.argmax(np.abs(f)))
        X, y = np.vstack([X, C[best]]), np.append(y, -B if f[best] > 0 else B)
    return X, y


def test_c1_sup_regret_identity_against_exact_kernel_ridge():
    """``min_f sum (y - f(x))^2 + lambda ||f||^2 = lambda Y^T (K + lambda I)^(-1) Y``."""
    X, y = _data(n=80)
    alpha, sigma = 0.5, 1.0
    krr = KernelRidge(alpha=alpha, kernel="rbf", gamma=1 / (2 * sigma ** 2)).fit(X, y)
    K = ref.gaussian_kernel(X, X, sigma)
    a = krr.dual_coef_
    best = np.sum((y - K @ a) ** 2) + alpha * a @ K @ a
    pred = _model("exact", alpha=alpha).fit(X, y).online_predictions_
    assert ref.sup_regret(pred, y, K, alpha) == pytest.approx(
        np.sum((y - pred) ** 2) - best, rel=1e-10)
    # and no f beats the supremum: random f in the span of the data
    rng = np.random.default_rng(1)
    for _ in range(20):
        c = rng.normal(size=len(y))
        value = np.sum((y - pred) ** 2) - np.sum((y - K @ c) ** 2) - alpha * c @ K @ c
        assert value <= ref.sup_regret(pred, y, K, alpha) + 1e-9


@pytest.mark.parametrize("sequence", ["random", "adversarial"])
def test_c1_kernel_awv_regret_bound(sequence):
    alpha, sigma = 0.5, 1.0
    if sequence == "random":
        X, y = _data(n=200)
    else:
        X, y = _adversary(60, 2, alpha, sigma)
    pred = _model("exact", alpha=alpha, chunk_size=23).fit(X, y).online_predictions_
    K, leverage_bound, logdet = _bound_terms(X, y, alpha, sigma)
    lhs = ref.sup_regret(pred, y, K, alpha)
    B = np.abs(y).max()
    assert lhs <= leverage_bound + 1e-9 <= B ** 2 * logdet + 1e-9
    if sequence == "adversarial":  # the adversary forces a loss of at least B^2 a round
        assert np.all((y[1:] - pred[1:]) ** 2 >= 1.0 - 1e-12)
        assert lhs > 0.5 * leverage_bound


# ------------------------------------------------------------------ C2: Taylor, Theorem 4's M
@pytest.mark.parametrize("sequence", ["random", "adversarial"])
def test_c2_taylor_with_theorem_4_degree_within_three_halves_of_the_bound(sequence):
    alpha, sigma = 0.5, 1.0
    X, y = _data(n=200) if sequence == "random" else _adversary(60, 2, alpha, sigma)
    model = _model("taylor", degree="auto", alpha=alpha, n_components=2000).fit(X, y)
    R = np.linalg.norm(X, axis=1).max()
    assert model.degree_ == math.ceil(max(8 * R ** 2 / sigma ** 2,
                                          2 * math.log(len(y) / min(alpha, 1))))
    assert model.n_components_ == math.comb(model.degree_ + 2, 2)
    K, _, logdet = _bound_terms(X, y, alpha, sigma)
    lhs = ref.sup_regret(model.online_predictions_, y, K, alpha)
    assert lhs <= 1.5 * np.abs(y).max() ** 2 * logdet
    exact = ref.kernel_awv(X, y, alpha, sigma)
    np.testing.assert_allclose(model.online_predictions_, exact, atol=1e-6)


def test_auto_degree_is_capped_by_the_feature_budget():
    X, y = _data(n=100, d=5)
    model = _model("taylor", degree="auto", n_components=50).fit(X, y)
    assert model.degree_ == 2 and model.n_components_ == 21   # C(7, 2) <= 50 < C(8, 3)


# ------------------------------------------------ C7: large M and the full dictionary are exact
@pytest.mark.parametrize("mode", ["awv", "krr"])
def test_c7_large_degree_and_full_dictionary_reproduce_kernel_awv(mode):
    X, y = _data(n=40, d=2, seed=3)
    sigma = 0.5
    exact = ref.kernel_awv(X, y, 1.0, sigma, mode)
    taylor = _model("taylor", degree=60, bandwidth=sigma, alpha=1.0, mode=mode,
                    n_components=2000).fit(X, y)
    np.testing.assert_allclose(taylor.online_predictions_, exact, rtol=0, atol=1e-8)
    full = _model("nystrom", beta=1e9, bandwidth=sigma, alpha=1.0, mode=mode).fit(X, y)
    assert full.n_components_ == 40                      # every row joined the dictionary
    np.testing.assert_allclose(full.online_predictions_, exact, rtol=0, atol=1e-8)


# --------------------------------------------- C8: the Cholesky-updated solver, the direct solve
def test_c8_cholesky_updates_match_numpy():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(7, 7))
    H = A @ A.T + np.eye(7)
    R = np.linalg.cholesky(H).T.copy()
    x = rng.normal(size=7)
    chol_update(R, x.copy(), 7)
    np.testing.assert_allclose(R.T @ R, H + np.outer(x, x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(R, np.linalg.cholesky(H + np.outer(x, x)).T, atol=1e-12)
    assert chol_downdate(R, x.copy(), 7)
    np.testing.assert_allclose(R, np.linalg.cholesky(H).T, atol=1e-11)
    assert not chol_downdate(R.copy(), 10 * np.ones(7), 7)  # not positive definite
    c, d = rng.normal(size=7), 50.0
    big = np.block([[H, c[:, None]], [c[None, :], np.array([[d]])]])
    R1, R2 = np.zeros((8, 8)), np.zeros((8, 8))
    R1[:7, :7] = R2[:7, :7] = np.linalg.cholesky(H).T
    sq = chol_add_column(R1, c, d, 7)
    assert sq == pytest.approx(d - c @ np.linalg.solve(H, c), rel=1e-12)
    assert chol_add_column_augmented(R2, c, d, 7)          # the paper's u u^T - v v^T
    np.testing.assert_allclose(R1, np.linalg.cholesky(big).T, atol=1e-12)
    np.testing.assert_allclose(R2, R1, atol=1e-10)


@pytest.mark.parametrize("mode", ["awv", "krr"])
def test_c8_nystrom_state_equals_the_direct_solve(mode):
    X, y = _data(n=70, seed=5)
    model = _model("nystrom", mode=mode, beta=2.0).fit(X, y)
    s = model._state
    idx = s["basis_idx"]
    assert 5 < len(idx) < 70
    K = ref.gaussian_kernel(X, X, 1.0)
    KtI = K[:, idx]                                          # every row is in H at the end
    H = KtI.T @ KtI + 0.5 * K[np.ix_(idx, idx)]
    np.testing.assert_allclose(s["R"].T @ s["R"], H, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(s["kty"], KtI.T @ y, rtol=1e-10, atol=1e-12)
    direct = KtI @ np.linalg.solve(H, KtI.T @ y)            # the fitted values
    chol = KtI @ np.linalg.solve(s["R"], np.linalg.solve(s["R"].T, s["kty"]))
    np.testing.assert_allclose(chol, direct, rtol=1e-9, atol=1e-10)
    w = s["kors_w"]
    Minv = np.linalg.inv(K[np.ix_(s["kors_idx"], s["kors_idx"])] * np.sqrt(np.outer(w, w))
                         + np.eye(len(w)))
    np.testing.assert_allclose(s["Minv"], Minv, rtol=1e-9, atol=1e-11)


# ---------------------------------------------------------- C5: KORS residual and dictionary
def test_c5_kors_residual_below_mu_and_dictionary_within_the_bound():
    """Proposition 5 (beta = 12 log(n / delta), epsilon = 1/2): with probability 1 - delta
    the residual stays below mu at every t and the dictionary below 9 d_eff(mu) log(2n /
    delta)^2.  With the experiments' beta = 1 (no guarantee) the dictionary is a real
    subsample whose residual stays of the order of mu."""
    n, delta, mu = 80, 0.1, 1.0
    beta = 12 * math.log(n / delta)
    ok_seeds = 0
    for seed in range(10):
        X, y = _data(n=n, d=2, seed=seed)
        K = ref.gaussian_kernel(X, X, 0.5)
        bound = 9 * ref.effective_dimension(K, mu) * math.log(2 * n / delta) ** 2
        residuals, sizes = {}, {}
        for b in (beta, 1.0):
            model = _model("nystrom", bandwidth=0.5, mu=mu, beta=b, alpha=1.0,
                           random_state=seed, chunk_size=40).fit(X, y)
            idx = model._state["kors_idx"]
            residuals[b] = max(ref.nystrom_residual(K[:t, :t], idx[idx < t])
                               for t in range(4, n + 1, 4))
            sizes[b] = len(idx)
        ok_seeds += residuals[beta] <= mu and sizes[beta] <= bound
        assert sizes[1.0] < n / 2
        assert residuals[1.0] <= 1.5 * mu
    assert ok_seeds >= 9


def test_kors_probabilities_are_the_weighted_leverage_scores():
    """With beta = 1 the dictionary is a subsample; its draws are the reference's."""
    X, y = _data(n=90, seed=2)
    model = _model("nystrom", beta=1.0, mu=0.5, epsilon=0.5, random_state=3).fit(X, y)
    u = row_uniforms_ref(model._cfg.seed, np.arange(90))
    flags, probs, weights = ref.kors(X, u, 0.5, 1.0, 0.5, 1.0)
    np.testing.assert_array_equal(model._state["kors_idx"], np.flatnonzero(flags))
    assert 0 < flags.sum() < 90 and 0 < probs.min() < 1 and probs.max() <= 1
    np.testing.assert_allclose(model._state["kors_w"], 1 / probs[flags], rtol=1e-12)


# ----------------------------------------------------------------------------- streaming
@pytest.mark.parametrize("basis", BASES)
def test_many_chunks_equal_one_pass_over_the_concatenated_data(basis):
    X, y = _data(n=90, seed=4)
    one = _model(basis, chunk_size=90, n_components=25).fit(X, y)
    stream = _model(basis, chunk_size=100, n_components=25)
    parts = []
    for lo, hi in [(0, 25), (25, 31), (31, 32), (32, 70), (70, 90)]:
        stream.partial_fit(X[lo:hi], y[lo:hi])
        parts.append(stream.online_predictions_)
    assert stream.loss_history_.shape == (5, 3) and one.loss_history_.shape == (1, 3)
    if basis == "nystrom-fixed":  # the dictionary is drawn from the first call's rows
        assert all((X[:25] == row).all(axis=1).any() for row in stream.dictionary_)
        one = _model(basis, chunk_size=90, n_components=25)
        one._validate_params()
        one.__dict__.update({k: v for k, v in stream.__dict__.items()
                             if k.endswith("_") or k.startswith("_")})
        one._state = solver.initial_state(stream._cfg, stream.n_components_)
        one.partial_fit(X, y)
    np.testing.assert_allclose(np.concatenate(parts), one.online_predictions_, rtol=1e-12,
                               atol=1e-14)
    for k, v in one._fitted_arrays().items():
        if k != "loss_history":
            np.testing.assert_allclose(stream._fitted_arrays()[k], v, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(stream.loss_history_[-1], one.loss_history_[-1], rtol=1e-12)


@pytest.mark.parametrize("basis", ["taylor", "nystrom"])
def test_checkpoint_resumes_mid_stream_bit_for_bit(basis, tmp_path, monkeypatch):
    X, y = _data(n=85)
    whole = _model(basis).fit(X, y)
    _interrupt_after(monkeypatch, 2)
    with pytest.raises(_Stop, match="simulated crash"):
        _model(basis).fit(X, y, checkpoint=tmp_path / "ck")
    monkeypatch.undo()
    resumed = _model(basis).fit(X, y, checkpoint=tmp_path / "ck", resume=True)
    for k, v in whole._fitted_arrays().items():
        np.testing.assert_array_equal(resumed._fitted_arrays()[k], v)
    np.testing.assert_array_equal(resumed.online_predictions_, whole.online_predictions_[34:])


@pytest.mark.parametrize("mode", ["awv", "krr"])
def test_blocked_estimator_matches_the_direct_solves_and_resumes_bit_for_bit(
        mode, tmp_path, monkeypatch):
    X, y = _data(n=85)
    # r = 55 >= BLOCK_MIN_COMPONENTS: the blocked kernel, a full and a ragged block a chunk
    kw = dict(degree=9, mode=mode, chunk_size=40)
    whole = _model("taylor", **kw).fit(X, y)
    assert whole.n_components_ >= solver.BLOCK_MIN_COMPONENTS
    Phi = TaylorBasis(2, 9, 1.0).transform_ref(X)
    np.testing.assert_allclose(whole.online_predictions_, ref.linear_awv(Phi, y, 0.5, mode),
                               atol=1e-9)
    _interrupt_after(monkeypatch, 2)
    with pytest.raises(_Stop, match="simulated crash"):
        _model("taylor", **kw).fit(X, y, checkpoint=tmp_path / "ck")
    monkeypatch.undo()
    resumed = _model("taylor", **kw).fit(X, y, checkpoint=tmp_path / "ck", resume=True)
    for k, v in whole._fitted_arrays().items():
        np.testing.assert_array_equal(resumed._fitted_arrays()[k], v)
    np.testing.assert_array_equal(resumed.online_predictions_, whole.online_predictions_[80:])


@pytest.mark.parametrize("basis", BASES)
def test_save_load_and_continue(basis, tmp_path):
    X, y = _data(n=60)
    model = _model(basis, n_components=20, mode="krr").partial_fit(X[:40], y[:40])
    model.save(tmp_path / "m")
    loaded = ok.load(tmp_path / "m")
    np.testing.assert_array_equal(loaded.predict(X[40:]), model.predict(X[40:]))
    model.partial_fit(X[40:], y[40:])
    loaded.partial_fit(X[40:], y[40:])
    np.testing.assert_array_equal(loaded.online_predictions_, model.online_predictions_)
    np.testing.assert_array_equal(loaded.loss_history_, model.loss_history_)


def test_lazy_input_streams_like_memory():
    da = pytest.importorskip("dask.array")
    X, y = _data(n=60)
    eager = _model("taylor").fit(X, y)
    lazy = _model("taylor").fit(da.from_array(X, chunks=(17, 2)), da.from_array(y, chunks=17))
    np.testing.assert_array_equal(lazy.online_predictions_, eager.online_predictions_)
    out = lazy.predict(da.from_array(X, chunks=(17, 2)))
    assert isinstance(out, da.Array)
    np.testing.assert_allclose(out.compute(), eager.predict(X), rtol=1e-13)


# ------------------------------------------------------------------------------ bad input
def test_growing_states_refuse_long_streams(monkeypatch):
    X, y = _data(n=30)
    monkeypatch.setattr(solver, "EXACT_MAX_ROWS", 20)
    with pytest.raises(ValidationError, match=r"basis='exact' keeps every row seen .* at "
                                              r"most 20 rows, but this stream reaches 30"):
        _model("exact").fit(X, y)
    model = _model("exact").partial_fit(X[:15], y[:15])
    with pytest.raises(ValidationError, match=r"at most 20 rows, but this stream reaches 30"):
        model.partial_fit(X[15:], y[15:])           # refused before any row is consumed
    assert model.n_samples_seen_ == 15
    monkeypatch.setattr(solver, "NYSTROM_MAX_ROWS", 10)
    with pytest.raises(ValidationError, match=r"basis='nystrom' .* at most 10 rows, but "
                                              r"this stream reaches 30; use basis='taylor'"):
        _model("nystrom").fit(X, y)


def test_bad_parameters_are_refused():
    X, y = _data(n=30)
    with pytest.raises(InvalidParameterError, match=r"'basis' parameter .* Got 'rff'"):
        _model("rff").fit(X, y)
    with pytest.raises(InvalidParameterError, match=r"'mode' parameter .* Got 'ridge'"):
        _model("taylor", mode="ridge").fit(X, y)
    with pytest.raises(ValidationError, match=r"degree=9 in 8 dimensions gives 24310 Taylor "
                                              r"features .* lower the degree"):
        _model("taylor", degree=9, n_components=100).fit(np.zeros((5, 8)), np.zeros(5))
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'shuffle'"):
        _model("taylor", shuffle=True)               # a stream has no order parameters


def test_defaults_learn_a_scaled_stream():
    """Default-constructed, on inputs in [-1, 1]^9: Theorem 4's degree capped by the
    500-feature budget (M = 3, 220 features); over the second half of the stream its
    forecasts lose less than half of online linear ridge's (AWV on the raw inputs, solved
    directly) and a tenth of the constant forecast 0's."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(3000, 9))
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.5 * X[:, 2] * X[:, 3] \
        + 0.1 * rng.normal(size=3000)
    model = ok.OnlineKernelRidge(progress=False).fit(X, y)
    assert model.degree_ == 3 and model.n_components_ == 220
    linear = ref.linear_awv(np.column_stack([X, np.ones(len(y))]), y, 1.0)
    late = slice(1500, None)
    loss = np.mean((y[late] - model.online_predictions_[late]) ** 2)
    assert loss < 0.5 * np.mean((y[late] - linear[late]) ** 2)
    assert loss < 0.1 * np.mean(y[late] ** 2)
