"""DSPDC fits: private, locked work stores; the published step parameters are those the
tasks use; a fit stopped before ``tol`` warns; regression targets that are not numbers."""

from __future__ import annotations

import threading
import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import ooc_kernels as ok
from ooc_kernels.exceptions import (
    CheckpointInUseError,
    ForeignPathError,
    InvalidDataError,
)

FAST = dict(scheduler="sync", random_state=0, progress=False)


def _binary_problem(n=240, p=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    return X, np.where(X @ rng.normal(size=p) + 0.5 * rng.normal(size=n) > 0, 1, 0)


def _lazy(X, y, rows=40):
    return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows)


# --------------------------------------------------------------------------- work stores
def test_concurrent_fits_with_one_work_dir_and_seed_equal_their_solo_fits(tmp_path):
    """Two fits at once with the same work_dir and random_state (as GridSearchCV runs its
    candidates) each get the model of the same fit run alone, and leave nothing behind."""
    X, y = _binary_problem()
    Xd, yd = _lazy(X, y)
    work = tmp_path / "work"
    work.mkdir()
    params = dict(max_iter=6, tol=None, shuffle_chunks=1, work_dir=str(work), **FAST)
    alphas = (0.02, 0.3)
    solo = [ok.DSPDCClassifier(alpha=a, **params).fit(Xd, yd).coef_ for a in alphas]
    results, errors = {}, []
    barrier = threading.Barrier(len(alphas))

    def run(alpha):
        try:
            barrier.wait(timeout=60)
            results[alpha] = ok.DSPDCClassifier(alpha=alpha, **params).fit(Xd, yd).coef_
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    for _ in range(2):
        threads = [threading.Thread(target=run, args=(a,)) for a in alphas]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert not errors, errors
        for alpha, ref in zip(alphas, solo):
            assert np.array_equal(results[alpha], ref), (alpha, results[alpha] - ref)
    assert list(work.iterdir()) == []            # every private store was removed


def test_a_checkpoint_in_use_is_refused_and_left_intact(tmp_path, monkeypatch):
    """While a fit writes a checkpoint, a second fit on the same path (fresh or resumed) is
    refused with CheckpointInUseError before it writes anything; the first fit's model and
    checkpoint are those of a fit that ran alone."""
    from ooc_kernels.estimators._checkpointing import CheckpointWriter

    X, y = _binary_problem()
    Xd, yd = _lazy(X, y)
    params = dict(alpha=0.05, max_iter=3, tol=None, shuffle_chunks=1, **FAST)
    reference = ok.DSPDCClassifier(**params).fit(Xd, yd)
    ck = tmp_path / "ck.zarr"
    real = CheckpointWriter.__call__
    inside, release = threading.Event(), threading.Event()
    owner = {}

    def call(self, state, info):
        real(self, state, info)
        if threading.current_thread() is owner.get("thread"):
            inside.set()
            release.wait(timeout=120)

    monkeypatch.setattr(CheckpointWriter, "__call__", call)
    first = {}

    def run():
        try:
            first["model"] = ok.DSPDCClassifier(**params).fit(Xd, yd, checkpoint=ck)
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            first["error"] = exc

    thread = threading.Thread(target=run)
    owner["thread"] = thread
    thread.start()
    try:
        assert inside.wait(timeout=120), first
        before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
        for resume in (False, True):
            with pytest.raises(CheckpointInUseError,
                               match=r"checkpoint .*ck\.zarr.* is in use by another fit"):
                ok.DSPDCClassifier(**params).fit(Xd, yd, checkpoint=ck, resume=resume)
        assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    finally:
        release.set()
        thread.join(timeout=300)
    assert "error" not in first, first.get("error")
    assert np.array_equal(first["model"].coef_, reference.coef_)
    # the checkpoint is free again: a resume from its end keeps the model
    monkeypatch.setattr(CheckpointWriter, "__call__", real)
    again = ok.DSPDCClassifier(**params).fit(Xd, yd, checkpoint=ck, resume=True)
    assert np.array_equal(again.coef_, reference.coef_)


def test_a_new_fit_on_a_checkpoint_keeps_the_old_duals_until_its_own_checkpoint(tmp_path,
                                                                                monkeypatch):
    """A fresh fit on an existing checkpoint path that fails before writing its first
    checkpoint leaves the old checkpoint resumable (its duals untouched)."""
    from ooc_kernels.estimators._checkpointing import CheckpointWriter

    X, y = _binary_problem()
    Xd, yd = _lazy(X, y)
    params = dict(alpha=0.05, max_iter=3, tol=None, shuffle_chunks=1, **FAST)
    reference = ok.DSPDCClassifier(**params).fit(Xd, yd)
    ck = tmp_path / "ck.zarr"
    short = dict(params, max_iter=2)
    ok.DSPDCClassifier(**short).fit(Xd, yd, checkpoint=ck)

    class Stop(Exception):
        pass

    def fail(self, state, info):
        raise Stop("stopped before the first checkpoint")

    monkeypatch.setattr(CheckpointWriter, "__call__", fail)
    with pytest.raises(Stop, match="before the first checkpoint"):
        ok.DSPDCClassifier(**dict(params, alpha=0.5)).fit(Xd, yd, checkpoint=ck)
    monkeypatch.undo()
    resumed = ok.DSPDCClassifier(**params).fit(Xd, yd, checkpoint=ck, resume=True)
    assert np.array_equal(resumed.coef_, reference.coef_)
    stores = [p for p in (tmp_path / "ck.zarr.work").iterdir() if p.is_dir()]
    assert len(stores) == 1                       # the failed fit's store was removed


def test_a_checkpoint_work_folder_that_is_not_the_librarys_is_never_touched(tmp_path):
    X, y = _binary_problem(n=80)
    ck = tmp_path / "ck.zarr"
    folder = tmp_path / "ck.zarr.work"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(ForeignPathError, match=r"ck\.zarr\.work.*not a work folder"):
        ok.DSPDCClassifier(max_iter=2, tol=None, **FAST).fit(X, y, checkpoint=ck)
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]
    assert (folder / "notes.txt").read_text() == "mine"
    assert not ck.exists()



@pytest.mark.parametrize("below", [False, True])
def test_a_work_dir_that_is_a_file_is_refused_and_kept(tmp_path, below):
    """``work_dir`` naming a file (or a folder under a file) is the library's
    ``ForeignPathError`` naming the path, and the file is left as it was."""
    X, y = _binary_problem(n=80)
    afile = tmp_path / "notes.txt"
    afile.write_text("mine")
    work = afile / "work" if below else afile
    with pytest.raises(ForeignPathError, match=r"work_dir '.*notes\.txt.*' .*not a folder"):
        ok.DSPDCClassifier(max_iter=2, tol=None, work_dir=str(work), **FAST).fit(*_lazy(X, y))
    assert afile.read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]

# --------------------------------------------------------------------------- parameters
def test_published_step_parameters_are_those_the_tasks_use(monkeypatch, tmp_path):
    """theta_, tau_, sigma_ list the parameters the kernels received, one entry per local
    problem (rows, tasks in its round), recorded by spying on the kernel itself."""
    from ooc_kernels.families.dspdc import kernels as kern

    used = set()
    real = kern.dspdc_dense_iterations

    def spy(rows, b, y, a, abar, z, n_k, row_u, col_u, m, q, theta, tau, sigma, *rest):
        used.add((int(n_k), float(theta), float(tau), float(sigma)))
        return real(rows, b, y, a, abar, z, n_k, row_u, col_u, m, q, theta, tau, sigma,
                    *rest)

    monkeypatch.setattr(kern, "dspdc_dense_iterations", spy)
    X, y = _binary_problem(n=250)       # chunks of 40 rows and one of 10
    Xd, yd = _lazy(X, y)
    est = ok.DSPDCClassifier(alpha=0.05, max_iter=2, tol=None, chunks_per_round=2,
                             shuffle_chunks=1, **FAST).fit(Xd, yd)
    published = {(int(r), float(t), float(u), float(s)) for r, t, u, s in
                 zip(est.local_rows_, est.theta_, est.tau_, est.sigma_)}
    assert published == used
    assert len(used) > 1                # the short chunk and the lone last task differ
    assert sorted(set(est.local_tasks_.tolist())) == [1, 2]
    # a saved and loaded model publishes the same values
    est.save(tmp_path / "model.zarr")
    loaded = ok.load(tmp_path / "model.zarr")
    for name in ("theta_", "tau_", "sigma_", "local_rows_", "local_tasks_"):
        assert np.array_equal(getattr(loaded, name), getattr(est, name)), name


# --------------------------------------------------------------------------- convergence
def test_a_fit_stopped_by_max_iter_above_tol_warns_with_the_gap(monkeypatch):
    from ooc_kernels.families.dspdc import _squared_start

    # the zero start: the logistic loss's start in memory (Newton's) certifies tol=1e-12
    # before an iteration (tests/test_dspdc_logistic_start.py), and no warning would be due
    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    X, y = _binary_problem(n=200)
    with pytest.warns(ConvergenceWarning,
                      match=r"max_iter=1 .*relative duality gap .* above tol=1e-12.*max_iter"
                            r".*tol.*alpha, or set standardize=True"):
        est = ok.DSPDCClassifier(alpha=1e-3, max_iter=1, tol=1e-12, standardize=False,
                                 **FAST).fit(X, y)
    assert est.stop_reason_.startswith("max_iter")
    rel = est.gap_history_[-1]["relative_gap"]
    assert rel > 1e-12


def test_a_fit_stopped_by_max_time_above_tol_warns_with_the_gap(monkeypatch):
    from ooc_kernels.families.dspdc import _squared_start

    # the zero start: the logistic loss's start in memory (Newton's) certifies tol=1e-12
    # before an iteration (tests/test_dspdc_logistic_start.py), and no warning would be due
    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    X, y = _binary_problem(n=200)
    with pytest.warns(ConvergenceWarning,
                      match=r"stopped \(.* s >= max_time=1e-06\) after 1 epochs .*"
                            r"relative duality gap \(P - D\) / \|P\| is .* above tol=1e-12"
                            r".*Raise max_iter \(or max_time\), loosen tol, or raise alpha "
                            r"\(.*standardized rows"):
        est = ok.DSPDCClassifier(alpha=1e-3, max_time=1e-6, tol=1e-12, **FAST).fit(X, y)
    assert est.stop_reason_.startswith("max_time") and est.n_iter_ == 1
    assert est.gap_history_[-1]["relative_gap"] > 1e-12


def test_a_converged_fit_and_a_fit_without_tol_do_not_warn():
    X, y = _binary_problem(n=200)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = ok.DSPDCClassifier(alpha=0.1, tol=1e-3, max_iter=200, **FAST).fit(X, y)
        assert est.stop_reason_.startswith("tol")
        ok.DSPDCClassifier(alpha=1e-3, max_iter=1, tol=None, **FAST).fit(X, y)


# --------------------------------------------------------------------------- bad targets
@pytest.mark.parametrize("lazy", [False, True])
def test_regressor_with_string_targets_is_an_invalid_data_error(lazy):
    X, _ = _binary_problem(n=80)
    y = np.array(["a", "b"] * 40)
    if lazy:
        X, y = _lazy(X, y)
    with pytest.raises(InvalidDataError,
                       match=r"y holds values that are not numbers.*dtype <U1.*'a'.*numeric"):
        ok.DSPDCRegressor(max_iter=2, **FAST).fit(X, y)


def test_regressor_with_object_targets_names_the_first_bad_value():
    X, _ = _binary_problem(n=80)
    y = np.arange(80, dtype=float).astype(object)
    y[47] = "oops"
    X, y = _lazy(X, y)                  # read chunk by chunk: the task finds the value
    with pytest.raises(InvalidDataError, match=r"'oops' in chunk 1, row 7.*numeric"):
        ok.DSPDCRegressor(max_iter=2, shuffle_chunks=1, **FAST).fit(X, y)


@pytest.mark.parametrize("entries, match", [
    (None, r"m\.zarr: the metadata has no list of local problems \(got None\)"),
    ([[40, 1, 0.5, 0.1]], r"local problem \[40, 1, 0.5, 0.1\] is not \[rows, tasks"),
    ([[40, 0, 0.5, 0.1, 0.2]], r"positive counts"),
    ([[40, 1, float("nan"), 0.1, 0.2]], r"finite parameters"),
    ([["x" * 500, 1, 0.5, 0.1, 0.2]], r"local problem \['xxxx[x]*\.\.\. is not"),
])
def test_damaged_local_problems_in_a_model_are_a_model_format_error(entries, match):
    from ooc_kernels.families.dspdc.estimators import _local_problems
    from ooc_kernels.exceptions import ModelFormatError

    with pytest.raises(ModelFormatError, match=match):
        _local_problems(entries, "m.zarr")
