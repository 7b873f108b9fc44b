"""The gap of an epoch's tail: in an epoch of two rounds of one task each, the state after
the first round is certified at the epoch's end from the losses the two tasks sum on the
rows they read anyway (the first at its final iterate, the second at its start), so a fit
can stop an epoch earlier.  The certificate must be the duality gap of the user's problem:
checked against the closed-form ridge optimum and scipy's logistic optimum, against the
states of a fit that never certifies a tail, and across a checkpoint taken between the two
rounds."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
from scipy.optimize import minimize

import ooc_kernels as ok
from ooc_kernels.families.dspdc.solver import DSPDCAlgorithm, DSPDCState

@pytest.fixture(autouse=True)
def _zero_start(monkeypatch):
    """The rounds from the zero start: the squared loss's start (``_squared_start``) would
    certify these problems at the set-up, with no round to certify a tail."""
    from ooc_kernels.families.dspdc import _squared_start

    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)


def _problem(loss, n=1200, p=6, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, p)) * np.array([1.0, 3.0, 0.3, 1.0, 2.0, 1.0])
    z = A @ rng.normal(size=p) + 0.3 * rng.normal(size=n)
    y = z if loss == "squared" else np.where(z > 0, 1, -1)
    return A, y, (da.from_array(A, chunks=(100, p)), da.from_array(y, chunks=100))


def _estimator(loss, **kw):
    """Raw columns, no intercept: the solver's ``x`` is ``coef_`` and ``P`` is the user's."""
    params = {**dict(alpha=1e-2, standardize=False, fit_intercept=False, tol=1e-6,
                     max_iter=40, shuffle_chunks=6, scheduler="sync", random_state=0,
                     progress=False), **kw}
    if loss == "squared":
        return ok.DSPDCRegressor(**params)
    return ok.DSPDCClassifier(**params)


def _primal(loss, alpha, A, y, x):
    z = A @ x
    data = np.sum((z - y) ** 2) / 2 if loss == "squared" else np.sum(np.logaddexp(0, -y * z))
    return data / len(y) + alpha / 2 * x @ x


def _optimum(loss, alpha, A, y):
    n, p = A.shape
    if loss == "squared":
        x = np.linalg.solve(A.T @ A / n + alpha * np.eye(p), A.T @ y / n)
    else:
        def grad(x):
            s = -y / (1 + np.exp(y * (A @ x)))
            return A.T @ s / n + alpha * x
        x = minimize(lambda x: _primal(loss, alpha, A, y, x), np.zeros(p), jac=grad,
                     method="L-BFGS-B", options={"gtol": 1e-13, "ftol": 1e-16,
                                                 "maxiter": 10_000}).x
    return _primal(loss, alpha, A, y, x)


def _without_tails(monkeypatch):
    monkeypatch.setattr(DSPDCState, "tail_primal_value", lambda self, config: None)
    monkeypatch.setattr(DSPDCAlgorithm, "certifies_tail", lambda *a: False)


@pytest.mark.parametrize("loss, alpha, seed, tol, skips", [
    ("squared", 1e-2, 0, 1e-4, False), ("squared", 1e-1, 3, 1e-4, True),
    ("logistic", 1e-1, 0, 1e-6, True)])
def test_the_tail_certifies_the_users_problem(loss, alpha, seed, tol, skips, monkeypatch):
    """Two rounds an epoch (12 chunks, groups of 6 drawn anew): the fit stops on the tail
    of an epoch; the returned model is the state after the first round of that epoch (as
    the fit that never certifies a tail computed it), the recorded primal is ``P(coef_)``
    of the user's problem, the dual is below its optimum ``P*``, so ``P(coef_) - P* <= gap
    <= tol |P|``.  Where the tail's own duals certify it (``skips``), the second round's
    task runs no iterations, and the fit without tails, whose second round ran them,
    certifies the epoch's start with those later duals at the same epoch; else only the
    duals after the second round's iterations certify the tail, and the fit without tails
    takes one more epoch."""
    A, y, lazy = _problem(loss, seed=seed)
    kw = dict(alpha=alpha, tol=tol, random_state=seed)
    said = []
    real = DSPDCAlgorithm.certifies_tail

    def recording(self, state, tail_loss, n_k):
        said.append(real(self, state, tail_loss, n_k))
        return said[-1]

    with monkeypatch.context() as m:
        m.setattr(DSPDCAlgorithm, "certifies_tail", recording)
        fit = _estimator(loss, **kw).fit(*lazy)
    states = {}
    real_apply = DSPDCAlgorithm.apply

    def apply(self, state, delta, info=None):
        new = real_apply(self, state, delta, info)
        states[(info.epoch, info.round)] = new
        return new

    with monkeypatch.context() as m:
        _without_tails(m)
        m.setattr(DSPDCAlgorithm, "apply", apply)
        late = _estimator(loss, **kw).fit(*lazy)
    assert fit.stop_reason_.startswith("tol:") and late.stop_reason_.startswith("tol:")
    assert fit.n_iter_ + (0 if skips else 1) == late.n_iter_
    assert said.count(True) == int(skips) and said[-1] == skips
    tail = states[(fit.n_iter_ - 1, 0)]
    np.testing.assert_array_equal(fit.coef_, tail.x)
    last = fit.gap_history_[-1]
    assert last["iterations"] == tail.n_iter
    assert states[(fit.n_iter_ - 1, 1)].n_iter > tail.n_iter   # the fit without tails
    assert fit._final_gaps[-1] == len(fit.gap_history_) - 1     # not judged by the steps
    p_star = _optimum(loss, alpha, A, y)
    primal = _primal(loss, alpha, A, y, fit.coef_)
    assert last["primal"] == pytest.approx(primal, rel=1e-12)
    assert last["dual"] <= p_star * (1 + 1e-12)
    assert 0.0 <= primal - p_star <= last["gap"] * (1 + 1e-9) + 1e-15
    assert last["relative_gap"] <= tol
    # every epoch start before it, as the fit without tails recorded it
    assert [h["primal"] for h in fit.gap_history_[:-1]] == \
        [h["primal"] for h in late.gap_history_[:len(fit.gap_history_) - 1]]


@pytest.mark.parametrize("killed_after", ["first round", "stopping round"])
def test_a_fit_resumed_between_the_tails_rounds_stops_on_it(tmp_path, monkeypatch,
                                                           killed_after):
    """A checkpoint written after the first round of the certifying epoch keeps the losses
    that round summed at its iterate, and the one written after the round that stopped the
    fit (before the fit's last checkpoint) holds the certified tail: the resumed fit stops
    on the same tail with the same gap, bit for bit."""
    from ooc_kernels.estimators._checkpointing import CheckpointWriter

    _, _, lazy = _problem("squared", n=600, seed=0)
    kw = dict(shuffle_chunks=3, tol=1e-5)
    whole = _estimator("squared", **kw).fit(*lazy)
    assert whole.stop_reason_.startswith("tol:")
    assert whole._final_gaps[-1] == len(whole.gap_history_) - 1      # stopped on a tail
    stop_after = 2 * (whole.n_iter_ - 1) + 1      # the first round of the last epoch
    if killed_after == "stopping round":
        stop_after += 1
    real, rounds = CheckpointWriter.__call__, {"n": 0}

    def call(self, state, info):
        real(self, state, info)
        rounds["n"] += 1
        if rounds["n"] == stop_after:
            raise KeyboardInterrupt(f"killed after round {stop_after}")

    ck = tmp_path / "ck.zarr"
    with monkeypatch.context() as m:
        m.setattr(CheckpointWriter, "__call__", call)
        with pytest.raises(KeyboardInterrupt, match="killed after round"):
            _estimator("squared", **kw).fit(*lazy, checkpoint=ck)
    resumed = _estimator("squared", **kw).fit(*lazy, checkpoint=ck, resume=True)
    assert resumed.n_iter_ == whole.n_iter_ and resumed.stop_reason_ == whole.stop_reason_
    np.testing.assert_array_equal(resumed.coef_, whole.coef_)
    assert resumed.gap_history_[-1]["primal"] == whole.gap_history_[-1]["primal"]
    assert resumed.gap_history_[-1]["dual"] == whole.gap_history_[-1]["dual"]
