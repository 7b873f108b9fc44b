"""The engine + DSG solver against the paper's sequential Algorithms 1-2 and closed form.

With batch 1, block 1 and K = 1, fitting through the chunk engine must reproduce
Algorithm 1 of Dai et al. (2014) run sample by sample (docs/specs/dsg.md §2.1-2.3), to 1e-10 in
float64, and the coefficients must equal the closed form a_t^i l'_i phi_i(x_i) (Eq. 7).
The references below are written from the paper, not from the library's kernels; they use
the library only to regenerate omega_i from seed i (whose distribution is checked by Monte
Carlo in test_features.py).
"""

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.features.rbf import block_params


#: The paper's setting: gamma_t = eta0 / (t + t0), raw features, float64.  These tests use
#: step sizes outside the theorems' range on purpose (the algorithm is the same); the
#: StepSizeWarning that says so is expected.
pytestmark = pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")
LITERAL = dict(learning_rate="inverse", standardize=False, dtype="float64")


def _lprime(loss, u, y):
    if loss == "squared":
        return u - y
    if loss == "logistic":  # y in {-1, +1}
        return -y / (1.0 + np.exp(y * u))
    if loss == "hinge":
        return -y if y * u < 1 else 0.0
    raise AssertionError(loss)


def algorithm1(X, y, *, loss, seed, bandwidth, n_steps, eta0, t0, nu):
    """Literal Algorithm 1 (+ Algorithm 2 for f(x_i)) with gamma_i = eta0 / (i + t0)."""
    n, d = X.shape
    omegas, phases, alphas, lprimes, phis = [], [], [], [], []

    def phi(i, x):  # phi_{omega_i}(x) = sqrt(2) cos(omega_i^T x + b_i)
        return np.sqrt(2.0) * np.cos(x @ omegas[i] + phases[i])

    def predict(x, upto):  # Algorithm 2
        return sum(alphas[j] * phi(j, x) for j in range(upto))

    for i in range(n_steps):            # paper's i = 1..t is i + 1 here
        x_i, y_i = X[i % n], y[i % n]    # no shuffling: samples visited in order
        W, b = block_params(seed, i, d, 1, bandwidth, np.float64)
        omegas.append(W[:, 0]); phases.append(b[0])
        f = predict(x_i, i)
        gamma = eta0 / (i + 1 + t0)
        lp = _lprime(loss, f, y_i)
        alphas.append(-gamma * lp * phi(i, x_i))
        for j in range(i):
            alphas[j] *= (1.0 - gamma * nu)
        lprimes.append(lp); phis.append(phi(i, x_i))
    return np.array(alphas), np.array(lprimes), np.array(phis), predict


def _data(n=24, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sign(X[:, 0] * X[:, 1] + 0.1)
    return X, y


@pytest.mark.parametrize("loss", ["logistic", "hinge"])
@pytest.mark.parametrize("chunk_size", [24, 7])
def test_classifier_reproduces_algorithm1(loss, chunk_size):
    X, y = _data()
    n_epochs, n = 2, len(X)
    kw = dict(eta0=2.0, t0=3.0)
    nu = 0.05
    clf = ok.DSGClassifier(**LITERAL, loss=loss, bandwidth=1.3, alpha=nu, n_features=64, block_size=1,
                           batch_size=1, max_iter=n_epochs, tol=None, shuffle=False,
                           chunk_size=chunk_size, chunks_per_round=1, random_state=5,
                           scheduler="sync", **kw).fit(X, y)
    alphas, lps, phis, predict = algorithm1(X, y, loss=loss, seed=clf.feature_seed_,
                                            bandwidth=1.3, n_steps=n_epochs * n, nu=nu, **kw)
    coef = clf.coef_[:, 0, 0]
    assert coef.shape == alphas.shape
    np.testing.assert_allclose(coef, alphas, rtol=0, atol=1e-10)
    X_test = np.random.default_rng(1).normal(size=(5, 3))
    expected = np.array([predict(x, len(alphas)) for x in X_test])
    np.testing.assert_allclose(clf.decision_function(X_test), expected, rtol=0, atol=1e-10)


def test_regressor_matches_closed_form_eq7():
    X, _ = _data(n=20)
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1]
    eta0, t0, nu, n_steps = 1.5, 2.0, 0.3, 40
    reg = ok.DSGRegressor(**LITERAL, bandwidth=0.9, alpha=nu, n_features=64, block_size=1, batch_size=1,
                          max_iter=2, tol=None, shuffle=False, eta0=eta0, t0=t0, random_state=11,
                          scheduler="sync").fit(X, y)
    alphas, lps, phis, _ = algorithm1(X, y, loss="squared", seed=reg.feature_seed_,
                                      bandwidth=0.9, n_steps=n_steps, eta0=eta0, t0=t0,
                                      nu=nu)
    gammas = eta0 / (np.arange(1, n_steps + 1) + t0)
    # a_t^i = -gamma_i prod_{j=i+1}^t (1 - gamma_j nu)
    a = np.array([-gammas[i] * np.prod(1.0 - gammas[i + 1:] * nu) for i in range(n_steps)])
    closed = a * lps * phis
    np.testing.assert_allclose(reg.coef_[:, 0, 0], closed, rtol=0, atol=1e-10)
    np.testing.assert_allclose(alphas, closed, rtol=0, atol=1e-10)


def test_integer_theta_nu_wipes_early_coefficients():
    """Lemma 8 (docs/specs/dsg.md §6.2, §10): with gamma_t = theta/t and theta*nu = 2,
    a_t^i = 0 for i < 2.

    The factor (1 - gamma_2 nu) = 1 - (4/2)(0.5) = 0 at step 2 wipes coefficient 1 only.
    """
    X, _ = _data(n=12)
    y = X[:, 0]
    reg = ok.DSGRegressor(**LITERAL, bandwidth=1.0, alpha=0.5, n_features=32, block_size=1,
                          batch_size=1, max_iter=1, tol=None, shuffle=False, eta0=4.0, t0=0.0,
                          random_state=0, scheduler="sync").fit(X, y)
    coef = reg.coef_[:, 0, 0]
    assert coef[0] == 0.0            # (1 - gamma_2 nu) = 1 - (4/2)(0.5) = 0
    assert np.all(coef[1:] != 0.0)


def test_past_the_feature_budget_every_coefficient_is_updated():
    """Batch 1, block 1, K = 1, n_features = 10 < steps: Algorithm 1 for the first 10 steps,
    then each step uses all 10 features: alpha_j <- (1 - g nu) alpha_j - g/10 l' phi_j(x)."""
    X, _ = _data(n=15)
    y = np.cos(X[:, 0]) - X[:, 2]
    eta0, t0, nu, m, n_steps = 1.2, 1.0, 0.05, 10, 30
    reg = ok.DSGRegressor(**LITERAL, bandwidth=1.1, alpha=nu, n_features=m, block_size=1, batch_size=1,
                          max_iter=2, tol=None, shuffle=False, eta0=eta0, t0=t0, chunk_size=4,
                          random_state=2, scheduler="sync").fit(X, y)
    alphas, _, _, _ = algorithm1(X, y, loss="squared", seed=reg.feature_seed_, bandwidth=1.1,
                                 n_steps=m, eta0=eta0, t0=t0, nu=nu)
    Wb = [block_params(reg.feature_seed_, j, 3, 1, 1.1, np.float64) for j in range(m)]
    for i in range(m, n_steps):
        x, target = X[i % len(X)], y[i % len(X)]
        phi = np.array([np.sqrt(2.0) * np.cos(x @ W[:, 0] + b[0]) for W, b in Wb])
        gamma = eta0 / (i + 1 + t0)
        alphas = (1.0 - gamma * nu) * alphas - gamma / m * (phi @ alphas - target) * phi
    np.testing.assert_allclose(reg.coef_[:, 0, 0], alphas, rtol=0, atol=1e-10)
    assert reg.n_blocks_seen_ == m and reg.t_ == n_steps and reg.n_iter_ == 2
