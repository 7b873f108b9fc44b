"""DSGDensityRatio's default ``tol`` against a ratio known in closed form: a covariate
shift that keeps each row of ``q = N(0, I_5)`` with probability ``s(x) = sigmoid(1.5 x_0)``,
so that ``p / q = s(x) / E_q[s] = 2 s(x)`` (``E_q[s] = 1 / 2`` by symmetry)."""

import numpy as np
import pytest

import ooc_kernels as ok


def _selected(seed, n=2000, d=5):
    """``(X_p, X_q, T, log_ratio)``: the two samples and held-out draws of ``q`` with the
    closed-form ``log(p / q)`` at them."""
    rng = np.random.default_rng(seed)
    X_q = rng.normal(size=(n, d))
    X_p = X_q[rng.random(n) < 1 / (1 + np.exp(-1.5 * X_q[:, 0]))]
    T = rng.normal(size=(4000, d))
    return X_p, X_q, T, np.log(2.0) - np.log1p(np.exp(-1.5 * T[:, 0]))


@pytest.mark.parametrize("seed", [0, 1])
def test_default_fit_is_not_stopped_before_the_ratio_converges(seed):
    """The default fit's log-ratio error against the closed form, on held-out draws of q.

    Stopped on an absolute ``R(f)`` improvement of 1e-3 (about 1 % of ``KL(p || q) = 0.14``
    here) the fits ended after 12 to 16 epochs with RMSE 0.404 to 0.416 (seeds 0-3); with
    1e-4 they run 24 to 36 epochs to 0.380-0.390, and 100 epochs reach 0.365-0.375."""
    X_p, X_q, T, log_ratio = _selected(seed)
    est = ok.DSGDensityRatio(random_state=seed, scheduler="sync", progress=False).fit(X_p, X_q)
    rmse = float(np.sqrt(np.mean((est.decision_function(T) - log_ratio) ** 2)))
    assert rmse < 0.395, (rmse, est.n_iter_)
