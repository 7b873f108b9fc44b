"""DSGOneClassSVM's default mini-batch: the fit equals the plain-NumPy steps, and one pass
agrees with the exact one-class SVM.

* A fit with the default ``batch_size`` (chunks that are not a multiple of it, so every
  chunk ends on a short batch; growth and full phase) stores the coefficients and ``tau``
  of :func:`~ooc_kernels.families.dsg.reference_one_class.sequential_one_class`, the steps
  written out in NumPy, to 1e-10.
* One pass of the defaults over 2,000 rows takes enough steps for its decision function to
  correlate with scikit-learn's exact ``OneClassSVM`` above 0.99 (the former batch of 256
  rows took 8 steps per pass there and reached 0.978 to 0.984 on these seeds).
"""

import inspect

import numpy as np
import pytest
from sklearn.svm import OneClassSVM

import ooc_kernels as ok
from ooc_kernels.families.dsg.one_class_solver import init_one_class_state
from ooc_kernels.families.dsg.reference_one_class import sequential_one_class

pytestmark = pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")
FAST = dict(scheduler="sync", progress=False)


def _mixture(n, rng):
    """Three Gaussian blobs (sd 0.6) at (-2, -2), (2, 2) and (2, -2)."""
    centers = np.array([[-2.0, -2.0], [2.0, 2.0], [2.0, -2.0]])
    return centers[rng.integers(0, 3, n)] + 0.6 * rng.normal(size=(n, 2))


def test_default_batch_fit_equals_the_numpy_steps():
    batch = inspect.signature(ok.DSGOneClassSVM).parameters["batch_size"].default
    assert batch == 64
    rng = np.random.default_rng(5)
    X = _mixture(600, rng) @ np.array([[1.0, 0.2, -0.3], [0.1, 1.0, 0.4]])
    chunk = 100          # batches of 64 and 36 per chunk: 12 steps, 3 growing, 9 full
    det = ok.DSGOneClassSVM(nu=0.3, n_features=3 * 256, dtype="float64", max_iter=1,
                            tol=None, shuffle=False, chunks_per_round=1, chunk_size=chunk,
                            offset="paper", random_state=0, **FAST).fit(X)
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
