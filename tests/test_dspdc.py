"""DSPDC estimators: exactness against scikit-learn's solvers, the gap going to zero
with K = 1, 2, 4 chunks per round, out of core equal to in memory, factorized data equal to
its materialized matrix, SIGKILL and resume, and the bad inputs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import dask.array as da
import numpy as np
import pytest
import yaml
from sklearn.linear_model import ElasticNet, LogisticRegression, Ridge

import ooc_kernels as ok
from ooc_kernels.exceptions import InvalidParameterError, SchemaError, ValidationError
from _side_by_side import run_side_by_side

# the raw problem, whose exact solutions the references below compute (the standardized
# problem of the default standardize=True is tested in tests/test_dspdc_scaling.py)
FAST = dict(scheduler="sync", random_state=0, progress=False, standardize=False)


def _ridge_problem(n=300, p=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    return X, X @ rng.normal(size=p) + 0.3 * rng.normal(size=n)


def _binary_problem(n=300, p=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    return X, np.where(X @ rng.normal(size=p) + 0.5 * rng.normal(size=n) > 0, "yes", "no")


def _primal(loss, X, y, coef, alpha, l1_ratio=0.0):
    """P(x) written here from the definitions (not the library's functions)."""
    z = X @ coef
    if loss == "squared":
        data = 0.5 * np.mean((z - y) ** 2)
    else:
        b = np.where(y == np.unique(y)[1], 1.0, -1.0)
        data = np.mean(np.logaddexp(0.0, -b * z))
    return data + alpha * (l1_ratio * np.abs(coef).sum()
                           + 0.5 * (1 - l1_ratio) * coef @ coef)


# --------------------------------------------------------------------------- exactness
@pytest.mark.parametrize("l1_ratio", [0.0, 0.5])
def test_regression_objective_matches_scikit_learn(l1_ratio):
    X, y = _ridge_problem()
    n, alpha = len(X), 0.05
    est = ok.DSPDCRegressor(alpha=alpha, l1_ratio=l1_ratio, fit_intercept=False, tol=1e-10,
                            max_iter=400, **FAST).fit(X, y)
    assert est.stop_reason_.startswith("tol"), est.stop_reason_
    if l1_ratio == 0.0:    # Ridge: ||y - X w||^2 + a ||w||^2 = 2 n P(w) with a = n alpha
        ref = Ridge(alpha=n * alpha, fit_intercept=False).fit(X, y).coef_
    else:                  # ElasticNet minimizes exactly P (with the squared loss / 2)
        ref = ElasticNet(alpha=alpha, l1_ratio=l1_ratio, fit_intercept=False, tol=1e-14,
                         max_iter=100_000).fit(X, y).coef_
    mine, best = (_primal("squared", X, y, c, alpha, l1_ratio) for c in (est.coef_, ref))
    assert abs(mine - best) <= 1e-6 * abs(best)
    # the certificate holds: the reported gap bounds the suboptimality
    assert mine - best <= est.duality_gap_ + 1e-12


def test_logistic_objective_matches_scikit_learn():
    X, y = _binary_problem()
    n, alpha = len(X), 0.02
    est = ok.DSPDCClassifier(alpha=alpha, fit_intercept=False, tol=1e-10, max_iter=400,
                             **FAST).fit(X, y)
    ref = LogisticRegression(C=1.0 / (n * alpha), fit_intercept=False, tol=1e-12,
                             solver="newton-cholesky", max_iter=1000).fit(X, y).coef_[0]
    mine, best = (_primal("logistic", X, y, c, alpha) for c in (est.coef_, ref))
    assert abs(mine - best) <= 1e-6 * abs(best)
    np.testing.assert_allclose(est.predict_proba(X[:5]),
                               LogisticRegression(C=1.0 / (n * alpha), fit_intercept=False,
                                                  tol=1e-12).fit(X, y).predict_proba(X[:5]),
                               atol=1e-4)


# --------------------------------------------------------------------------- rounds
@pytest.mark.parametrize("K", [1, 2, 4])
@pytest.mark.parametrize("kind", ["ridge", "logistic"])
def test_the_gap_goes_to_zero_with_several_chunks_per_round(K, kind, monkeypatch):
    from ooc_kernels.families.dspdc import _squared_start

    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)   # the rounds from zero
    X, y = _ridge_problem(n=480) if kind == "ridge" else _binary_problem(n=480)
    Est = ok.DSPDCRegressor if kind == "ridge" else ok.DSPDCClassifier
    Xd, yd = da.from_array(X, chunks=(60, X.shape[1])), da.from_array(y, chunks=60)
    est = Est(alpha=0.05, chunks_per_round=K, tol=1e-8, max_iter=300, local_passes=1.0,
              **FAST).fit(Xd, yd)
    gaps = [h["gap"] for h in est.gap_history_]
    assert est.stop_reason_.startswith("tol"), (K, est.stop_reason_, gaps[-3:])
    assert min(gaps) >= -1e-12                          # weak duality, always
    assert gaps[-1] < 1e-6 * gaps[0]


def test_out_of_core_equals_in_memory_bit_for_bit():
    """The same chunks as NumPy (cut by chunk_size) and as a Dask array: identical models
    (at the same local passes: ``"auto"`` takes 3 for the Dask array)."""
    X, y = _binary_problem(n=240)
    params = dict(alpha=0.05, chunk_size=40, max_iter=5, tol=None, chunks_per_round=2,
                  local_passes=1.0, sampling="permutation")   # "auto": by input
    memory = ok.DSPDCClassifier(**params, **FAST).fit(X, y)
    lazy = ok.DSPDCClassifier(**params, **FAST).fit(
        da.from_array(X, chunks=(40, 6)), da.from_array(y, chunks=40))
    assert np.array_equal(memory.coef_, lazy.coef_)
    assert memory.intercept_ == lazy.intercept_


@pytest.mark.parametrize("sampling", ["uniform", "permutation"])
def test_one_chunk_k1_is_algorithm_1_of_the_paper(sampling, monkeypatch):
    """One chunk and K = 1: a round is n/m iterations of Algorithm 1 on the whole problem
    (the local problem has no tilt), continuing from the previous round's iterates; checked
    against the independent in-memory reference, round by round, with the rows drawn
    independently or visited in a random permutation per round (without the in-memory
    tasks' line of duals for the squared loss, which is not part of Algorithm 1:
    tests/test_dspdc_squared_line.py)."""
    from ooc_kernels._seeds import task_rng
    from ooc_kernels.families.dspdc import _memory_task

    monkeypatch.setattr(_memory_task.MemoryTasks, "_line_start", lambda *args: None)
    from ooc_kernels.families.dspdc import _squared_start

    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)   # from x = 0, y = 0
    from ooc_kernels.families.dspdc.params import dspdc_parameters
    from ooc_kernels.families.dspdc.in_memory.paper import dspdc_reference

    X, y = _ridge_problem(n=120, p=4)
    est = ok.DSPDCRegressor(alpha=0.1, fit_intercept=False, max_iter=3, tol=None,
                            shuffle=False, steps="theorem", sampling=sampling,
                            local_passes=1, **FAST).fit(X, y)
    n, p = X.shape
    par = dspdc_parameters(n, p, 1, p, est.Lambda_, 0.1, 1.0, mode="gap")
    x, yy = np.zeros(p), np.zeros(n)
    seed = est._data_seed
    for epoch in range(3):
        rng = task_rng(seed, epoch, 0, 0)
        if sampling == "uniform":
            row_u = rng.random((n, 1))
        else:                        # row pi_t at iteration t: u in [pi_t, pi_t + 1) / n
            row_u = ((rng.permutation(n) + 0.5) / n)[:, None]
        col_u = rng.random((n, p))
        x, yy = dspdc_reference(X, y, loss="squared", lam1=0.0, lam2=0.1, m=1, q=p,
                                theta=par.theta, tau=par.tau, sigma=par.sigma, n_iter=n,
                                seed=0, x0=x, y0=yy, uniforms=(row_u, col_u))
    np.testing.assert_allclose(est.coef_, x, rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------- factorized
def test_factorized_fit_equals_the_materialized_matrix(tmp_path, monkeypatch):
    from ooc_kernels.families.dspdc import _squared_start

    # both from the zero start (factorized rows have no squared loss's start)
    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    rng = np.random.default_rng(1)
    U, V = rng.normal(size=(200, 3)), rng.normal(size=(3, 8))
    A = U @ V
    y = A @ rng.normal(size=8) + 0.1 * rng.normal(size=200)
    params = dict(alpha=0.1, q=8, max_iter=4, tol=None, chunk_size=50, **FAST)
    fact = ok.DSPDCRegressor(**params).fit(ok.Factorized(U, V), y)
    dense = ok.DSPDCRegressor(**params).fit(A, y)
    np.testing.assert_allclose(fact.coef_, dense.coef_, rtol=1e-9, atol=1e-11)
    # predictions from (U, V) without forming A, and from dense rows, agree
    np.testing.assert_allclose(fact.predict(ok.Factorized(U[:7], V)), dense.predict(A[:7]),
                               rtol=1e-9)
    np.testing.assert_allclose(fact.predict(A[:7]), dense.predict(A[:7]), rtol=1e-9)


def test_factorized_store_from_the_generator_fits_to_a_small_gap(tmp_path):
    import xarray as xr

    path = ok.make_dataset("sparse_recovery", tmp_path / "sr.zarr", 400, chunk_size=100,
                           n_features=30, rank=8, progress=False)
    ds = xr.open_zarr(path)
    clf = ok.DSPDCClassifier(loss="smoothed_hinge", alpha=0.1, l1_ratio=0.1, tol=1e-4,
                             max_iter=200, chunks_per_round=2, **FAST).fit(ds)
    assert clf.stop_reason_.startswith("tol"), clf.stop_reason_
    # scikit-learn has no smoothed hinge: compare with the fit on the materialized A = U V
    A = ds["U"].values @ ds["V"].values
    dense = ok.DSPDCClassifier(loss="smoothed_hinge", alpha=0.1, l1_ratio=0.1, tol=1e-4,
                               max_iter=200, chunks_per_round=2, **FAST).fit(A, ds["y"].values)
    assert abs(clf.duality_gap_) <= 1e-4 * abs(clf.gap_history_[-1]["primal"])
    primal_dense = dense.gap_history_[-1]["primal"]
    assert abs(clf.gap_history_[-1]["primal"] - primal_dense) <= 2e-4 * primal_dense
    assert clf.score(ds) == pytest.approx(dense.score(A, ds["y"].values), abs=0.02)


# --------------------------------------------------------------------------- bad input
def test_bad_inputs_are_clear_library_errors():
    X, y = _binary_problem(n=60)
    y3 = y.copy()
    y3[:5] = "maybe"
    with pytest.raises(ValidationError, match=r"Only binary classification.*y has 3 classes"):
        ok.DSPDCClassifier(**FAST).fit(X, y3)
    with pytest.raises(InvalidParameterError, match="alpha"):
        ok.DSPDCRegressor(alpha=0.0, **FAST).fit(X, X[:, 0])
    with pytest.raises(InvalidParameterError, match=r"l1_ratio.*\[0.0, 1.0\)\. Got 1.0"):
        ok.DSPDCRegressor(alpha=1.0, l1_ratio=1.0, **FAST).fit(X, X[:, 0])   # pure l1
    rng = np.random.default_rng(0)
    U, V = rng.normal(size=(60, 3)), rng.normal(size=(4, 6))
    with pytest.raises(SchemaError, match="rank"):
        ok.DSPDCRegressor(**FAST).fit(ok.Factorized(U, V), X[:, 0])
    Ud = da.from_array(U, chunks=(20, 1))
    with pytest.raises(SchemaError, match=r"rechunk"):
        ok.DSPDCRegressor(**FAST).fit(ok.Factorized(Ud, V[:3]), X[:, 0])
    Vbad = V[:3].copy()
    Vbad[1, 2] = np.nan
    with pytest.raises(ValidationError, match="NaN|nan|finite"):
        ok.DSPDCRegressor(**FAST).fit(ok.Factorized(U, Vbad), X[:, 0])
    Ubad = U.copy()
    Ubad[7, 1] = np.inf
    with pytest.raises(ValidationError, match="row 7"):
        ok.DSPDCRegressor(**FAST).fit(ok.Factorized(Ubad, V[:3]), X[:, 0])
    with pytest.raises(ValidationError, match=r"sample_weight must have shape \(60,\)"):
        ok.DSPDCRegressor(**FAST).fit(X, X[:, 0], sample_weight=np.ones(59))
    assert not hasattr(ok.DSPDCRegressor(), "partial_fit")


# --------------------------------------------------------------------------- SIGKILL
def _pipeline(tmp_path, out):
    spec = {
        "name": "dspdc-killme",
        "data": {"catalog": "cat.yaml", "train": "nb",
                 "generate": {"nb": {"generator": "nonlinear_binary", "n_samples": 20_000,
                                     "chunk_size": 1000, "params": {"n_features": 20}}}},
        "model": {"estimator": "DSPDCClassifier",
                  "params": {"alpha": 1e-3, "max_iter": 8, "tol": None, "random_state": 3,
                             "local_passes": 2.0}},
        "fit": {"checkpoint_every": 1},
        "evaluate": {"predictions": False},
        "save": {"output_dir": out},
    }
    path = tmp_path / f"{out}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.slow
def test_sigkill_then_resume_gives_the_uninterrupted_dspdc_model(tmp_path):
    from ooc_kernels.data.catalog import register_dataset
    from ooc_kernels.parallel.checkpoint import read_checkpoint

    register_dataset(tmp_path / "cat.yaml", "nb", tmp_path / "nb.zarr")
    cmd = [sys.executable, "-m", "ooc_kernels.cli", "run", "--quiet", "--scheduler", "sync"]
    env = dict(os.environ, OOC_KERNELS_PROGRESS="0")
    proc = subprocess.Popen(cmd + [str(_pipeline(tmp_path, "killed"))], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ck = tmp_path / "killed" / "checkpoint.zarr"
    deadline = time.time() + 240
    while time.time() < deadline:
        try:
            found = read_checkpoint(ck)
        except Exception:  # noqa: BLE001 - being swapped in right now
            found = None
        if found is not None and found.meta["position"]["epoch"] >= 2:
            break
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    assert not (tmp_path / "killed" / "model.zarr").exists()
    # the resumed and the uninterrupted runs side by side (the data is there: neither
    # writes it; each writes its own output folder)
    again, straight = run_side_by_side([cmd + [str(_pipeline(tmp_path, "killed"))],
                                        cmd + [str(_pipeline(tmp_path, "straight"))]], env)
    assert again.returncode == 0, again.stderr
    assert straight.returncode == 0, straight.stderr
    resumed = ok.load(tmp_path / "killed" / "model.zarr")
    reference = ok.load(tmp_path / "straight" / "model.zarr")
    assert np.array_equal(resumed.coef_, reference.coef_)
    assert resumed.intercept_ == reference.intercept_


def test_resume_with_sparse_checkpoints_keeps_the_duals_the_checkpoint_needs(tmp_path,
                                                                             monkeypatch):
    """Checkpoints every 4 rounds: the rounds after a checkpoint rewrite the duals of their
    chunks, and pruning must keep the versions the checkpoint points to; an interruption
    3 rounds after a checkpoint resumes to the uninterrupted model."""
    from ooc_kernels.estimators._checkpointing import CheckpointWriter

    X, y = _binary_problem(n=480)
    Xd, yd = da.from_array(X, chunks=(40, 6)), da.from_array(y, chunks=40)
    params = dict(alpha=0.05, max_iter=3, tol=None, shuffle_chunks=1, **FAST)
    reference = ok.DSPDCClassifier(**params).fit(Xd, yd)
    real = CheckpointWriter.__call__
    rounds = {"n": 0}

    class Stop(Exception):
        pass

    def call(self, state, info):
        real(self, state, info)
        rounds["n"] += 1
        if rounds["n"] == 19:          # 12 rounds per epoch: checkpoint at 16, stop at 19
            raise Stop("killed after round 19")

    monkeypatch.setattr(CheckpointWriter, "__call__", call)
    ck = tmp_path / "ck.zarr"
    with pytest.raises(Stop, match="killed after round 19"):
        ok.DSPDCClassifier(**params).fit(Xd, yd, checkpoint=ck, checkpoint_every=4)
    monkeypatch.setattr(CheckpointWriter, "__call__", real)
    resumed = ok.DSPDCClassifier(**params).fit(Xd, yd, checkpoint=ck, checkpoint_every=4,
                                              resume=True)
    assert np.array_equal(resumed.coef_, reference.coef_)
    assert (tmp_path / "ck.zarr.work").is_dir()             # the work store beside it


@pytest.mark.parametrize("est, available", [
    (ok.DSPDCClassifier(loss="smoothed_hinge"), "'logistic'"),
    (ok.DSGClassifier(loss="hinge"), "'logistic' or 'softmax'"),
])
def test_predict_proba_exists_only_for_losses_with_probabilities(est, available):
    """One rule for every family (the classifier mixin): no attribute, and a reason."""
    assert not hasattr(est, "predict_proba") and not hasattr(est, "predict_log_proba")
    with pytest.raises(AttributeError) as info:
        est.predict_proba
    reason = str(info.value.__cause__)
    assert f"loss={est.loss!r}" in reason and f"use loss={available}" in reason
    assert hasattr(est.set_params(loss="logistic"), "predict_proba")


def test_step_overrides_that_diverge_stop_with_a_divergence_error():
    """theta, tau, sigma far above the theorems': the fit stops with the library's error
    naming the values and the fix, not with an overflow from NumPy."""
    from ooc_kernels.exceptions import DivergenceError

    X, _ = _ridge_problem(n=200, p=5)
    with pytest.raises(DivergenceError, match=r"diverged.*50.0, 1000.0, 1000.0.*theorems"):
        ok.DSPDCRegressor(theta=50.0, tau=1e3, sigma=1e3, max_iter=30, tol=None,
                          **FAST).fit(X, X[:, 0])


# --------------------------------------------------------------------------- uniforms
@pytest.mark.parametrize("q, p", [(3, 40), (40, 40)])
def test_task_uniforms_come_in_bounded_blocks(monkeypatch, q, p):
    """A task draws its uniforms in blocks of at most UNIFORM_BLOCK values, rows first then
    columns; with q = p no column uniform is drawn (zeros: J = 0 .. p-1)."""
    from types import SimpleNamespace

    from ooc_kernels._seeds import task_rng
    from ooc_kernels.families.dspdc import _local as local

    monkeypatch.setattr(local, "UNIFORM_BLOCK", 50)
    cfg = SimpleNamespace(local_passes=2.0, q=q, n_features=p)
    n_k, m = 101, 4
    blocks = list(local.task_uniform_blocks(cfg, 3, 1, 2, 5, n_k, m))
    T = -(-2 * n_k // m)
    assert sum(len(r) for r, _ in blocks) == T and len(blocks) > 1
    rng = task_rng(3, 1, 2, 5)
    for rows, cols in blocks:
        assert rows.shape[1] == m and cols.shape == (len(rows), q)
        assert rows.size + (0 if q == p else cols.size) <= 50
        np.testing.assert_array_equal(rows, rng.random(rows.shape))
        if q == p:
            assert not cols.any()
        else:
            np.testing.assert_array_equal(cols, rng.random(cols.shape))


def test_iterations_in_blocks_equal_the_sequential_reference(monkeypatch):
    """With one iteration per block, the chunk algorithm (one kernel call per block) still
    equals the sequential reference (one loop over the concatenated uniforms)."""
    from ooc_kernels.families.dspdc import _local as local
    from ooc_kernels.families import get_solver
    from ooc_kernels.testing._algorithms import check_algorithm_reference

    monkeypatch.setattr(local, "UNIFORM_BLOCK", 1)
    check_algorithm_reference(get_solver("dspdc"))


# --------------------------------------------------------------------------- the oracle
def _factorized_case(seed=0):
    """A factorized smoothed-hinge case with an intercept column (3 chunks, q < p)."""
    import shutil
    import tempfile
    import weakref

    from ooc_kernels.families._spec import AlgorithmCase
    from ooc_kernels.families.dspdc.solver import LOSSES, DSPDCAlgorithm, DSPDCConfig, augment_V, \
        init_state

    rng = np.random.default_rng(seed)
    sizes, d, p = (12, 12, 7), 3, 5
    U, V = rng.normal(size=(sum(sizes), d)), rng.normal(size=(d, p))
    y = np.where(U @ V @ rng.normal(size=p) > 0, "b", "a")
    folder = tempfile.mkdtemp(prefix="ooc-dspdc-test-")
    config = DSPDCConfig(loss_id=LOSSES["smoothed_hinge"], n_samples=sum(sizes),
                         n_features=p + 1, lam1=1e-2, lam2=0.1, Lambda=40.0, m=2, q=3,
                         local_passes=1.5, classes=("a", "b"), factorized=True,
                         intercept_scaling=0.7, work_store=folder + "/work")
    algorithm = DSPDCAlgorithm(config, V=augment_V(V, config))
    weakref.finalize(algorithm, shutil.rmtree, folder, ignore_errors=True)
    bounds = np.cumsum((0,) + sizes)
    chunks = [{"U": U[a:b], "y": y[a:b]} for a, b in zip(bounds[:-1], bounds[1:])]
    return AlgorithmCase(algorithm=algorithm, state=init_state(config, 3, rank=d + 1),
                         chunks=chunks, dims={"U": ("sample", "rank"), "y": ("sample",),
                                              "V": ("rank", "feature")},
                         seed=seed + 2, whole={"V": V})


@pytest.mark.parametrize("which", ["contract", "factorized"])
def test_rounds_equal_the_oracle_over_two_epochs(which):
    """Two passes, so that every round after the first pass starts from nonzero duals of
    its own chunk and of the others: the engine (K = 1, storage order) against the oracle
    that writes the chunk's subproblem itself (``families/dspdc/reference.py``)."""
    from ooc_kernels.families.dspdc.solver import make_case, state_arrays
    from ooc_kernels.families.dspdc.reference import sequential_dspdc
    from ooc_kernels.testing._algorithms import _run

    case = make_case(0) if which == "contract" else _factorized_case()
    engine = _run(case, k=1, scheduler="sync", n_epochs=2)
    oracle = sequential_dspdc(case, n_epochs=2)
    got, want = state_arrays(engine), state_arrays(oracle)
    assert float(np.abs(want["w"]).max()) > 0 and int(want["n_rounds"]) == 2 * len(case.chunks)
    for name in want:
        np.testing.assert_allclose(np.asarray(got[name], dtype=float),
                                   np.asarray(want[name], dtype=float), rtol=1e-9,
                                   atol=1e-12, err_msg=name)


def test_the_oracle_is_not_the_algorithm():
    """The oracle imports none of the chunk algorithm's subproblem or label code."""
    import ast
    import inspect

    from ooc_kernels.families.dspdc import reference as dspdc_reference_rounds

    imported = {alias.name for node in ast.walk(ast.parse(inspect.getsource(
        dspdc_reference_rounds))) if isinstance(node, ast.ImportFrom)
        for alias in node.names}
    assert not imported & {"local_problem", "local_parameters", "local_step_parameters",
                           "local_regularization", "encode_labels"}, imported
