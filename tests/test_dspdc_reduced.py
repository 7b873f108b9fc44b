"""Factorized data with q = p and an l2 regularizer: the tasks run Algorithm 2 in the row
space of V (``families/dspdc/_reduced.py``); the iterates must be Algorithm 2's, checked
against the plain-NumPy oracle that runs Algorithm 1 on the materialized rows."""

from __future__ import annotations

import numpy as np
import pytest

from ooc_kernels.families.dspdc._reduced import ReducedRows, reduced_applies, row_space_basis
from ooc_kernels.families.dspdc.estimators import STEP_BOOST


def _case(loss, x0_seed=None, weighted=False, seed=0, lam2=0.05):
    import shutil
    import tempfile
    import weakref
    from dataclasses import replace

    from ooc_kernels.families._spec import AlgorithmCase
    from ooc_kernels.families.dspdc.solver import LOSSES, DSPDCAlgorithm, DSPDCConfig, \
        augment_V, init_state

    rng = np.random.default_rng(seed)
    sizes, d, p = (12, 12, 7), 3, 8
    U, V = rng.normal(size=(sum(sizes), d)), rng.normal(size=(d, p))
    z = U @ V @ rng.normal(size=p)
    classes = None if loss == "squared" else ("a", "b")
    y = z + 0.1 * rng.normal(size=len(z)) if classes is None else np.where(z > 0, "b", "a")
    folder = tempfile.mkdtemp(prefix="ooc-dspdc-test-")
    extra = {}
    if weighted:
        sw = rng.integers(0, 4, size=len(z)).astype(float)
        extra = {"weighted": True, "weight_scale": len(z) / sw.sum()}
    config = DSPDCConfig(loss_id=LOSSES[loss], n_samples=sum(sizes), n_features=p + 1,
                         lam1=0.0, lam2=lam2, Lambda=60.0, m=2, q=p + 1, local_passes=1.5,
                         classes=classes, factorized=True, intercept_scaling=0.7,
                         work_store=folder + "/work", step_boost=3.0, **extra)
    algorithm = DSPDCAlgorithm(config, V=augment_V(V, config))
    weakref.finalize(algorithm, shutil.rmtree, folder, ignore_errors=True)
    bounds = np.cumsum((0,) + sizes)
    chunks = [{"U": U[a:b], "y": y[a:b]} for a, b in zip(bounds[:-1], bounds[1:])]
    dims = {"U": ("sample", "rank"), "y": ("sample",), "V": ("rank", "feature")}
    if weighted:
        for chunk, a, b in zip(chunks, bounds[:-1], bounds[1:]):
            chunk["sample_weight"] = sw[a:b]
        dims["sample_weight"] = ("sample",)
    state = init_state(config, 3, rank=d + 1)
    if x0_seed is not None:       # a start with a part outside the row space of V
        state = replace(state, x=np.random.default_rng(x0_seed).normal(size=p + 1))
    return AlgorithmCase(algorithm=algorithm, state=state, chunks=chunks, dims=dims,
                         seed=seed + 2, whole={"V": V})


@pytest.mark.parametrize("loss, x0, weighted, lam2", [
    ("squared", None, False, 0.05),        # the data's boost below its cap
    ("squared", 1, True, 1e-5),            # capped at 100 times step_boost
    ("logistic", 1, False, 0.05),
    ("smoothed_hinge", 2, True, 0.05)])
def test_row_space_rounds_equal_the_oracle_over_two_epochs(loss, x0, weighted, lam2):
    from ooc_kernels.families.dspdc.reference import sequential_dspdc
    from ooc_kernels.families.dspdc.solver import state_arrays
    from ooc_kernels.testing._algorithms import _run

    case = _case(loss, x0, weighted, lam2=lam2)
    assert reduced_applies(case.algorithm.config)
    engine = _run(case, k=1, scheduler="sync", n_epochs=2)
    oracle = sequential_dspdc(case, n_epochs=2)
    got, want = state_arrays(engine), state_arrays(oracle)
    assert float(np.abs(want["w"]).max()) > 0
    for name in want:
        np.testing.assert_allclose(np.asarray(got[name], dtype=float),
                                   np.asarray(want[name], dtype=float), rtol=1e-9,
                                   atol=1e-12, err_msg=name)


def test_reduced_rows_are_an_isometry_of_the_row_space():
    rng = np.random.default_rng(3)
    U = rng.normal(size=(9, 4))
    V = rng.normal(size=(4, 30))
    V[3] = V[0] - 2 * V[1]                       # rank 3
    red = ReducedRows(U, V)
    assert red.rows.shape == (9, 3)
    x = rng.normal(size=30)
    w, perp = red.split(x)
    np.testing.assert_allclose(V @ perp, 0, atol=1e-10)          # outside the row space
    np.testing.assert_allclose(red.join(w, perp, 1.0), x, atol=1e-12)
    np.testing.assert_allclose(red.rows @ w, U @ V @ x, rtol=1e-10)   # a_i^T x
    np.testing.assert_allclose(w @ w, x @ x - perp @ perp, rtol=1e-10)
    B, R = row_space_basis(V)
    np.testing.assert_allclose(B.T @ (V @ V.T) @ B, np.eye(3), atol=1e-10)


def test_l1_or_sampled_columns_keep_algorithm_2():
    from types import SimpleNamespace

    cfg = SimpleNamespace(factorized=True, q=10, n_features=10, lam1=0.0)
    assert reduced_applies(cfg)
    assert not reduced_applies(SimpleNamespace(**{**vars(cfg), "lam1": 1e-3}))
    assert not reduced_applies(SimpleNamespace(**{**vars(cfg), "q": 9}))
    assert not reduced_applies(SimpleNamespace(**{**vars(cfg), "factorized": False}))


def test_published_steps_are_those_the_tasks_ran_with():
    """A factorized ridge fit publishes the data's boost: tau_ is the theorems' tau for
    ``boost * alpha`` with the boost written out here from the rows' smallest curvature."""
    from ooc_kernels.families.dspdc.params import dspdc_parameters

    import ooc_kernels as ok

    rng = np.random.default_rng(0)
    n, d, p, alpha = 400, 3, 60, 1e-3
    U, V = rng.normal(size=(n, d)), rng.normal(size=(d, p))
    y = U @ V @ rng.normal(size=p) + rng.normal(size=n)
    est = ok.DSPDCRegressor(alpha=alpha, fit_intercept=False, standardize=False,
                            max_iter=1, tol=None, scheduler="sync", random_state=0,
                            progress=False).fit(ok.Factorized(U, V), y)
    A = U @ V
    mu = np.sort(np.linalg.eigvalsh(A.T @ A / n))[::-1][d - 1]
    first = STEP_BOOST["squared"]                   # the squared loss's first boost
    boost = max(first, min((alpha + mu) / alpha, 100.0 * first))
    assert boost > first
    want = dspdc_parameters(n, p, 1, p, est.Lambda_, boost * alpha, 1.0)
    np.testing.assert_allclose([est.theta_[0], est.tau_[0], est.sigma_[0]],
                               [want.theta, want.tau, want.sigma], rtol=1e-9)
