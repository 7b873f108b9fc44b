"""DSGOneClassSVM's mini-batch: the fit equals the plain-NumPy steps, and one pass of the
defaults agrees with the exact one-class SVM.

* A fit with batches of 64 on the random basis (chunks that are not a multiple of it, so
  every chunk ends on a short batch; growth and full phase) stores the coefficients and
  ``tau`` of :func:`~ooc_kernels.families.dsg.reference_one_class.sequential_one_class`,
  the steps written out in NumPy, to 1e-10.
* One pass of the defaults over 2,000 rows takes enough steps for its decision function to
  correlate with scikit-learn's exact ``OneClassSVM`` above 0.99 (a batch of 256 rows takes
  8 steps per pass there and reaches 0.978 to 0.984 on these seeds).
* On a small data set (a few steps an epoch) the default stopping rule ends a fit only
  after ``MIN_STEPS_BEFORE_TOL`` steps, when it agrees with the exact machine.

The ``"auto"`` rules themselves: tests/test_dsg_one_class_auto.py.
"""

import numpy as np
import pytest
from sklearn.svm import OneClassSVM

import ooc_kernels as ok
from ooc_kernels.families.dsg.one_class import MIN_STEPS_BEFORE_TOL
from ooc_kernels.families.dsg.one_class_solver import init_one_class_state
from ooc_kernels.families.dsg.reference_one_class import sequential_one_class

pytestmark = pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")
FAST = dict(scheduler="sync", progress=False)


def _mixture(n, rng):
    """Three Gaussian blobs (sd 0.6) at (-2, -2), (2, 2) and (2, -2)."""
    centers = np.array([[-2.0, -2.0], [2.0, 2.0], [2.0, -2.0]])
    return centers[rng.integers(0, 3, n)] + 0.6 * rng.normal(size=(n, 2))


def test_batch_of_64_fit_equals_the_numpy_steps():
    # the batch "auto" takes from 12,800 rows on, on the random basis
    batch = 64
    rng = np.random.default_rng(5)
    X = _mixture(600, rng) @ np.array([[1.0, 0.2, -0.3], [0.1, 1.0, 0.4]])
    chunk = 100          # batches of 64 and 36 per chunk: 12 steps, 3 growing, 9 full
    det = ok.DSGOneClassSVM(nu=0.3, n_features=3 * 256, dtype="float64", max_iter=1,
                            tol=None, shuffle=False, chunks_per_round=1, chunk_size=chunk,
                            offset="paper", random_state=0, basis="random",
                            batch_size=batch, **FAST).fit(X)
    config = det._config
    assert config.batch_size == batch and config.n_blocks == 3
    chunks = [{"X": X[a:a + chunk]} for a in range(0, len(X), chunk)]
    want = sequential_one_class(config, init_one_class_state(config), chunks)
    assert want.n_iter == det.t_ == 12 and want.n_blocks_seen == 3
    assert (want.coef != 0).all(axis=1).all()          # every block open, full phase ran
    np.testing.assert_allclose(det.coef_, want.coef, rtol=1e-10, atol=1e-12)
    assert det.tau_ == pytest.approx(want.tau, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_default_pass_agrees_with_the_exact_one_class_svm(seed):
    rng = np.random.default_rng(1)
    X, Xt = _mixture(2000, rng), rng.uniform(-6, 6, size=(1000, 2))
    det = ok.DSGOneClassSVM(nu=0.5, max_iter=1, tol=None, random_state=seed, **FAST).fit(X)
    mean, sd = X.mean(0), X.std(0)
    exact = OneClassSVM(nu=0.5, gamma=0.5 / det.bandwidth_ ** 2).fit((X - mean) / sd)
    corr = np.corrcoef(exact.decision_function((Xt - mean) / sd),
                       det.decision_function(Xt))[0, 1]
    assert corr > 0.99, corr


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_default_stopping_takes_enough_steps_on_a_small_data_set(seed):
    # 150 rows in batches of 64 are 3 steps an epoch: the stopping rule alone ended these
    # fits after 9 to 13 epochs (27 to 39 steps), at a correlation of 0.964 to 0.985 with
    # the exact machine for nu = 0.1; after MIN_STEPS_BEFORE_TOL steps it is 0.997 or more
    rng = np.random.default_rng(3)
    X, Xt = _mixture(150, rng), rng.uniform(-6, 6, size=(1000, 2))
    det = ok.DSGOneClassSVM(nu=0.1, random_state=seed, basis="random", batch_size=64,
                            **FAST).fit(X)
    assert MIN_STEPS_BEFORE_TOL <= det.t_ < MIN_STEPS_BEFORE_TOL + 3
    assert "n_iter_no_change=2" in det.stop_reason_
    assert [h["steps"] for h in det.history_][-2] < MIN_STEPS_BEFORE_TOL
    mean, sd = X.mean(0), X.std(0)
    exact = OneClassSVM(nu=0.1, gamma=0.5 / det.bandwidth_ ** 2).fit((X - mean) / sd)
    corr = np.corrcoef(exact.decision_function((Xt - mean) / sd),
                       det.decision_function(Xt))[0, 1]
    assert corr > 0.99, corr
