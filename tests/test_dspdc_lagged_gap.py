"""The duality gap that stops a DSPDC fit is the gap of the model it returns.

The tasks of an epoch sum the losses of their rows at the epoch's first iterate, so the
gap of the previous epoch's end is known without a pass of its own; a fit that stops on it
returns that iterate.  Each test recomputes ``P(coef_)`` on the raw rows and ``D(y)`` from
the duals left in the work store, in plain NumPy, and compares them with the certificate
the fit reported.  The dual value of the certificate is the larger of ``D`` at the returned
duals and at the duals of the epoch that computed the gap (both bound ``P*`` from below);
the last test checks every gap against the exact optimum of a small problem."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import ooc_kernels as ok
from ooc_kernels._chunk_store import ChunkStore


def _phi(loss, z, b):
    if loss == "squared":
        return 0.5 * (z - b) ** 2
    if loss == "logistic":
        return np.logaddexp(0.0, -b * z)
    m = b * z                                   # smoothed hinge, eq. (3) of the paper
    return np.where(m >= 1, 0.0, np.where(m <= 0, 0.5 - m, 0.5 * (1 - m) ** 2))


def _phi_conj(loss, u, b):
    if loss == "squared":
        return 0.5 * u ** 2 + u * b
    s = -u * b
    if loss == "logistic":
        with np.errstate(divide="ignore", invalid="ignore"):
            ent = np.where(s > 0, s * np.log(s), 0.0) + np.where(s < 1, (1 - s) * np.log1p(-s),
                                                                  0.0)
        return ent
    return -s + 0.5 * s ** 2


def _certificate(est, A, y, sw, chunk):
    """``(P, D)`` of the returned model in NumPy: ``P`` from ``coef_`` and ``intercept_`` on
    the raw rows ``A``, ``D`` from the duals of the returned state in the work store."""
    cfg, state = est._config, est._state
    n = len(y)
    loss = {0: "squared", 2: "logistic", 4: "smoothed_hinge"}[cfg.loss_id]
    b = y.astype(float) if cfg.classes is None else np.where(y == cfg.classes[1], 1.0, -1.0)
    w = np.ones(n) if sw is None else sw * n / sw.sum()
    if cfg.class_weight is not None:
        w = w * np.where(b > 0, cfg.class_weight[1], cfg.class_weight[0])
        w = w * n / w.sum()
    x = state.x                                         # the standardized problem's x
    lam1, lam2 = cfg.lam1, cfg.lam2
    g = lam1 * np.abs(x).sum() + 0.5 * lam2 * x @ x
    primal = float(np.sum(w * _phi(loss, A @ est.coef_ + est.intercept_, b)) / n + g)
    store = ChunkStore(cfg.work_store)
    duals = np.concatenate([store.read("y", c, state.versions[c], n_rows=len(y[s:s + chunk]))
                            for c, s in enumerate(range(0, n, chunk))])
    rows = (A - np.asarray(cfg.x_shift)) / np.asarray(cfg.x_scale)
    rows = np.hstack([rows, np.full((n, 1), cfg.intercept_scaling)])
    v = -(rows.T @ (w * duals)) / n
    gstar = np.sum(np.maximum(np.abs(v) - lam1, 0.0) ** 2 / (2 * lam2))
    dual = float(-gstar - np.sum(w * _phi_conj(loss, duals, b)) / n)
    return primal, dual


def _problem(kind, rng, n=600, p=6):
    A = rng.normal(size=(n, p)) * np.array([1.0, 10.0, 0.1, 1.0, 3.0, 1.0]) + 2.0
    z = (A - A.mean(0)) @ rng.normal(size=p) / A.std(0).mean()
    if kind == "regression":
        return A, z + 0.3 * rng.normal(size=n)
    return A, np.where(z + 0.5 * rng.normal(size=n) > 0, "yes", "no")


CASES = {
    "ridge": ("regression", dict(alpha=0.05), False, False),
    "elastic net, weighted": ("regression", dict(alpha=0.05, l1_ratio=0.5), True, False),
    "logistic": ("classification", dict(alpha=0.05), False, False),
    "smoothed hinge, class weights": (
        "classification", dict(alpha=0.1, loss="smoothed_hinge", class_weight="balanced"),
        True, False),
    "ridge, factorized": ("regression", dict(alpha=0.05), False, True),
    "logistic elastic net, factorized, weighted": (
        "classification", dict(alpha=0.05, l1_ratio=0.3), True, True),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_certified_gap_is_the_gap_of_the_returned_model(name, tmp_path, monkeypatch):
    from ooc_kernels.families.dspdc.solver import DSPDCAlgorithm

    # every task iterates, so that the later duals are those at the end of the last epoch
    # (the task that completes a certified start skips its iterations: checked against
    # this in tests/test_dspdc_pass_rule.py)
    monkeypatch.setattr(DSPDCAlgorithm, "certifies_start", lambda *args: False)
    # the in-memory fit below without the squared loss's line of duals (in memory only):
    # the rounds of the checkpointed, out-of-core fit
    from ooc_kernels.families.dspdc import _memory_task

    monkeypatch.setattr(_memory_task.MemoryTasks, "_line_start", lambda *args: None)
    from ooc_kernels.families.dspdc import _squared_start

    # and from the zero start, as the checkpointed fit (NumPy input out of core: no start)
    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    kind, params, weighted, factorized = CASES[name]
    rng = np.random.default_rng(len(name))
    chunk = 150
    if factorized:
        U, V = rng.normal(size=(600, 3)), rng.normal(size=(3, 6))
        A = U @ V
        y = (A @ rng.normal(size=6) + 0.3 * rng.normal(size=600) if kind == "regression"
             else np.where(A @ rng.normal(size=6) > 0, "yes", "no"))
        X = ok.Factorized(U, V)
    else:
        X, y = A, y = _problem(kind, rng)
    sw = rng.integers(0, 4, size=len(y)).astype(float) if weighted else None
    Est = ok.DSPDCRegressor if kind == "regression" else ok.DSPDCClassifier
    est = Est(chunk_size=chunk, random_state=0, tol=1e-5, max_iter=40, progress=False,
              sampling="permutation", **params)   # "auto": none with a checkpoint
    est.fit(X, y, sample_weight=sw, checkpoint=tmp_path / "ck.zarr", checkpoint_every=10**6)
    assert est.stop_reason_.startswith("tol:")
    assert est.n_iter_ < 40                          # stopped on the lagged certificate
    last = est.gap_history_[-1]
    assert last["relative_gap"] <= 1e-5
    assert last["passes"] == est._state.n_dual_updates / len(y)
    primal, dual = _certificate(est, A, y, sw, chunk)
    assert primal == pytest.approx(last["primal"], rel=1e-11, abs=1e-13)
    # the dual value is the better of the returned duals' and those at the end of the
    # last epoch run (the same path stopped there: its last entry is that state's own D)
    end = Est(chunk_size=chunk, random_state=0, tol=None, max_iter=est.n_iter_,
              progress=False, sampling="permutation", shuffle_chunks=est.shuffle_chunks_,
              **params).fit(X, y, sample_weight=sw)
    assert last["dual"] == pytest.approx(max(dual, end.gap_history_[-1]["dual"]), rel=1e-11,
                                         abs=1e-13)
    assert primal - last["dual"] <= 1e-5 * abs(primal) * (1 + 1e-6)


def test_a_fit_that_runs_out_of_epochs_certifies_its_last_iterate(tmp_path, monkeypatch):
    """At ``max_iter`` the last iterate gets a pass of its own: the gap reported (and
    warned about) is the returned model's.  From the zero start (Newton's start out of
    core certifies this problem at once)."""
    from ooc_kernels.families.dspdc import _squared_start

    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    rng = np.random.default_rng(3)
    A, y = _problem("classification", rng)
    est = ok.DSPDCClassifier(alpha=1e-3, chunk_size=150, random_state=0, tol=1e-12,
                             max_iter=4, progress=False)
    with pytest.warns(ConvergenceWarning, match="before converging"):
        est.fit(A, y, checkpoint=tmp_path / "ck.zarr", checkpoint_every=10**6)
    assert est.stop_reason_.startswith("max_iter") and est.n_iter_ == 4
    last = est.gap_history_[-1]
    assert last["passes"] == pytest.approx(4.0)
    primal, dual = _certificate(est, A, y, None, 150)
    assert primal == pytest.approx(last["primal"], rel=1e-11)
    assert dual == pytest.approx(last["dual"], rel=1e-11)


def test_the_lagged_gap_matches_a_separate_pass_at_every_epoch(tmp_path, monkeypatch):
    """``gap_history_`` of a fit with ``tol=None`` has one entry per epoch end: the one of
    epoch ``e`` (computed by epoch ``e + 1``'s tasks) equals a fit stopped at ``max_iter =
    e + 1``, whose last entry is a pass of its own.  From the zero start (the squared
    loss's start adds the start's own entry: tests/test_dspdc_memory_start.py)."""
    from ooc_kernels.families.dspdc import _squared_start

    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    rng = np.random.default_rng(4)
    A, y = _problem("regression", rng)
    params = dict(alpha=1e-3, chunk_size=150, random_state=0, tol=None, progress=False)
    whole = ok.DSPDCRegressor(max_iter=5, **params).fit(A, y)
    assert [e["passes"] for e in whole.gap_history_] == pytest.approx([1, 2, 3, 4, 5])
    for e in (1, 3):
        short = ok.DSPDCRegressor(max_iter=e, **params).fit(A, y)
        after = ok.DSPDCRegressor(max_iter=e + 1, **params).fit(A, y)
        mine, theirs = whole.gap_history_[e - 1], short.gap_history_[-1]
        # the duals of epoch e or of epoch e + 1, whichever give the larger D
        assert mine["dual"] == max(theirs["dual"], after.gap_history_[-1]["dual"])
        assert mine["primal"] == pytest.approx(theirs["primal"], rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert whole.stop_reason_.startswith("max_iter")


def test_a_fit_resumed_within_the_certifying_epoch_stops_where_the_uninterrupted_one_does(
        tmp_path, monkeypatch):
    """The checkpoint written inside the epoch whose tasks compute the certificate keeps the
    epoch's start (its iterate and duals' versions) and the partial sum of the losses: the
    resumed fit certifies and returns the same iterate, bit for bit.  From the zero start
    (Newton's start out of core certifies this problem at once)."""
    import dask.array as da

    from ooc_kernels.estimators._checkpointing import CheckpointWriter
    from ooc_kernels.families.dspdc import _squared_start

    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)

    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 6))
    y = np.where(X @ rng.normal(size=6) + 0.5 * rng.normal(size=240) > 0, "yes", "no")
    Xd, yd = da.from_array(X, chunks=(40, 6)), da.from_array(y, chunks=40)
    params = dict(alpha=0.1, max_iter=20, tol=1e-2, shuffle_chunks=1, scheduler="sync",
                  random_state=0, progress=False, sampling="uniform")   # 5 epochs
    reference = ok.DSPDCClassifier(**params).fit(Xd, yd)
    assert reference.stop_reason_.startswith("tol:") and reference.n_iter_ == 5
    real = CheckpointWriter.__call__
    rounds = {"n": 0}

    class Stop(Exception):
        pass

    def call(self, state, info):
        real(self, state, info)
        rounds["n"] += 1
        if rounds["n"] == 29:     # 6 rounds per epoch: checkpoint at round 28 of the last
            raise Stop("killed after round 29")

    monkeypatch.setattr(CheckpointWriter, "__call__", call)
    ck = tmp_path / "ck.zarr"
    with pytest.raises(Stop, match="killed after round 29"):
        ok.DSPDCClassifier(**params).fit(Xd, yd, checkpoint=ck, checkpoint_every=4)
    monkeypatch.setattr(CheckpointWriter, "__call__", real)
    resumed = ok.DSPDCClassifier(**params).fit(Xd, yd, checkpoint=ck, checkpoint_every=4,
                                              resume=True)
    assert resumed.n_iter_ == 5 and resumed.stop_reason_ == reference.stop_reason_
    assert np.array_equal(resumed.coef_, reference.coef_)
    assert resumed.intercept_ == reference.intercept_
    assert resumed.gap_history_[-1]["primal"] == reference.gap_history_[-1]["primal"]
    assert resumed.gap_history_[-1]["dual"] == reference.gap_history_[-1]["dual"]


def test_a_damaged_saved_epoch_start_is_refused_with_the_reason():
    """The epoch start of a checkpoint: missing arrays, arrays shaped unlike the state's or
    unknown counters are a ModelFormatError, not a state built from them."""
    from ooc_kernels.exceptions import ModelFormatError
    from ooc_kernels.families.dspdc._saved import _restored_start

    arrays = {"x": np.zeros(3), "w": np.zeros(3), "versions": np.zeros((2, 2), np.int64)}
    arrays.update({f"start_{k}": v.copy() for k, v in arrays.items()})
    counters = {"conj_sum": 0.5, "n_iter": 4, "n_dual_updates": 4, "n_rounds": 2,
                "step_boost": 30.0}
    start = _restored_start(arrays, {"epoch_start": counters}, "m")
    assert start.n_iter == 4 and start.step_boost == 30.0 and start.x.shape == (3,)
    assert _restored_start(arrays, {}, "m") is None
    with pytest.raises(ModelFormatError, match=r"m: the metadata has an epoch_start but"):
        _restored_start({"x": arrays["x"]}, {"epoch_start": counters}, "m")
    with pytest.raises(ModelFormatError, match=r"unknown entries \['evil'\]"):
        _restored_start(arrays, {"epoch_start": {**counters, "evil": 1}}, "m")
    with pytest.raises(ModelFormatError, match=r"shaped unlike x, w and versions"):
        _restored_start({**arrays, "start_x": np.zeros(4)}, {"epoch_start": counters}, "m")


def _exact_optimum(kind, cfg, A, y, w):
    """``P*`` of the standardized (weighted) problem a fit solved, by an exact solver: the
    normal equations (ridge) or L-BFGS to its last digits (logistic)."""
    from scipy.optimize import minimize

    n = len(y)
    rows = (A - np.asarray(cfg.x_shift)) / np.asarray(cfg.x_scale)
    rows = np.hstack([rows, np.full((n, 1), cfg.intercept_scaling)])
    if kind == "regression":
        b = y.astype(float)
        x = np.linalg.solve(rows.T @ (w[:, None] * rows) / n + cfg.lam2 * np.eye(rows.shape[1]),
                            rows.T @ (w * b) / n)
        return float(np.sum(w * 0.5 * (rows @ x - b) ** 2) / n + 0.5 * cfg.lam2 * x @ x)
    b = np.where(y == cfg.classes[1], 1.0, -1.0)

    def f(x):
        z = b * (rows @ x)
        value = np.sum(w * np.logaddexp(0.0, -z)) / n + 0.5 * cfg.lam2 * x @ x
        grad = rows.T @ (w * -b / (1.0 + np.exp(z))) / n + cfg.lam2 * x
        return value, grad

    res = minimize(f, np.zeros(rows.shape[1]), jac=True, method="L-BFGS-B",
                   options={"ftol": 0.0, "gtol": 1e-13, "maxiter": 10_000})
    return float(res.fun)


@pytest.mark.parametrize("kind, weighted", [("regression", False), ("classification", True)])
def test_every_gap_bounds_the_true_suboptimality(kind, weighted, monkeypatch):
    """Weak duality, checked against the exact optimum: at every epoch the reported dual
    value (the better of two dual points) is at most ``P*`` and the gap at least the true
    suboptimality ``P(x) - P*``; and the later duals do make some gaps smaller than the
    returned duals' own.  From the zero start (ridge's start is its optimum:
    tests/test_dspdc_memory_start.py)."""
    from ooc_kernels.families.dspdc import _squared_start

    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    rng = np.random.default_rng(11)
    A, y = _problem(kind, rng)
    sw = rng.integers(1, 4, size=len(y)).astype(float) if weighted else None
    Est = ok.DSPDCRegressor if kind == "regression" else ok.DSPDCClassifier
    params = dict(alpha=0.1, chunk_size=150, random_state=0, tol=None, progress=False)
    est = Est(max_iter=12, **params).fit(A, y, sample_weight=sw)
    w = np.ones(len(y)) if sw is None else sw * len(y) / sw.sum()
    p_star = _exact_optimum(kind, est._config, A, y, w)
    history = est.gap_history_
    assert len(history) == 12
    for entry in history:
        assert entry["dual"] <= p_star + 1e-12 * abs(p_star)
        assert entry["gap"] >= entry["primal"] - p_star - 1e-12 * abs(p_star)
    assert history[-1]["relative_gap"] < 1e-3        # converged: the bound is not vacuous
    own = [Est(max_iter=e, **params).fit(A, y, sample_weight=sw).gap_history_[-1]["dual"]
           for e in (2, 3)]
    assert [h["dual"] for h in history[1:3]] >= own
    assert any(h["dual"] > d for h, d in zip(history[1:3], own))
