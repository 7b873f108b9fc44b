"""The numerical layer of DSPDC: kernels against their twins, the plain-NumPy reference, the
definitions (Fenchel-Young, optimality of the proxes), scikit-learn, and the theorems' rates.

``docs/algorithms/dspdc_math.md`` lists the conventions and the misprints of the paper that
these tests decide.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import brentq, minimize_scalar
from scipy.stats import chisquare

from ooc_kernels._jit.losses import dual_prox, loss_conjugate, loss_derivative, loss_value
from ooc_kernels.families.dspdc.kernels import (
    dspdc_dense_iterations,
    dspdc_dense_iterations_ref,
    dspdc_factorized_iterations,
    dspdc_factorized_iterations_ref,
    primal_prox,
    primal_prox_ref,
)
from ooc_kernels.families.dspdc.kernels_objective import (
    chunk_objective_terms,
    chunk_objective_terms_factorized,
    chunk_objective_terms_factorized_ref,
    chunk_objective_terms_ref,
    objective_from_terms,
    objective_from_terms_ref,
    reg_conjugate,
    reg_conjugate_ref,
    reg_value,
    reg_value_ref,
)
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dspdc.kernels import (
    sample_without_replacement,
    sample_without_replacement_ref,
)
from ooc_kernels.families.dspdc.lambda_stats import (
    chunk_lambda_stats,
    combine_lambda_stats,
    factorized_chunk_lambda_stats,
    lambda_from_stats,
    lambda_value,
    lambda_value_factorized,
    spectral_norm_sq,
    spectral_norm_sq_factorized,
)
from ooc_kernels.families.dspdc.params import (
    dspdc_parameters,
    gap_bound,
    gap_constant,
    loss_gamma,
    loss_id,
    rate_constant,
    regularizer_weights,
)
from ooc_kernels.losses import LOSS_LOGISTIC, LOSS_SMOOTHED_HINGE, LOSS_SQUARED
from ooc_kernels.losses.reference import (
    dual_prox_ref,
    loss_conjugate_ref,
    loss_derivative_ref,
    loss_value_ref,
)
from ooc_kernels.families.dspdc.in_memory.paper import (
    dspdc_factorized_reference,
    dspdc_reference,
    dspdc_uniforms,
    dual_value,
    duality_gap,
    floyd_subset,
    primal_value,
)

LOSSES = [(LOSS_SQUARED, "squared"), (LOSS_SMOOTHED_HINGE, "smoothed_hinge"),
          (LOSS_LOGISTIC, "logistic")]
REGS = {"l2": (0.0, 0.1), "enet": (0.03, 0.1)}
TWIN = {"rtol": 1e-12, "atol": 1e-13}


def _labels(rng, loss, scores):
    if loss == 0:
        return scores + 0.3 * rng.normal(size=scores.shape)
    lab = np.sign(scores + 0.5 * rng.normal(size=scores.shape))
    return np.where(lab == 0.0, 1.0, lab)


def _problem(loss, n, p, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, p))
    b = _labels(rng, loss, A @ rng.normal(size=p))
    return A.astype(dtype), b


def _factors(loss, n, p, d, seed=0):
    rng = np.random.default_rng(seed)
    U = rng.normal(size=(n, d))
    V = rng.normal(size=(d, p)) / math.sqrt(d)
    b = _labels(rng, loss, U @ (V @ rng.normal(size=p)))
    return U, V, b


def _params(A, m, q, loss, lam2, mode="gap", Lambda="upper_bound"):
    n, p = A.shape
    L = lambda_value(np.asarray(A, dtype=np.float64), m, q, Lambda)
    return dspdc_parameters(n, p, m, q, L, lam2, loss_gamma(loss), mode=mode)


def _run_kernel(A, b, prm, loss, lam1, lam2, n_iter, seed, *, every=None, n_total=None):
    """Dense kernel from zeros; returns (x, y, [(t, x, y) every ``every`` iterations])."""
    n, p = A.shape
    ru, cu = dspdc_uniforms(seed, n_iter, prm.m, prm.q)
    y, x, xbar, z = np.zeros(n), np.zeros(p), np.zeros(p), np.zeros(p)
    every = every or n_iter
    log = []
    for s in range(0, n_iter, every):
        dspdc_dense_iterations(A, b, y, x, xbar, z, n if n_total is None else n_total,
                               ru[s:s + every], cu[s:s + every], prm.m, prm.q, prm.theta,
                               prm.tau, prm.sigma, loss, lam1, lam2)
        log.append((min(s + every, n_iter), x.copy(), y.copy()))
    return x, y, log


# --------------------------------------------------------------------------------------
# scalar kernels against their twins
# --------------------------------------------------------------------------------------

def _scalar_inputs(rng, loss, size=400):
    z = np.concatenate([rng.normal(scale=3.0, size=size), [0.0, 1.0, -1.0, 0.5, 40.0, -800.0]])
    b = rng.choice([-1.0, 1.0], size=z.size) if loss else rng.normal(size=z.size)
    return z, b


@pytest.mark.parametrize("loss, name", LOSSES)
def test_loss_scalars_equal_their_twins(loss, name):
    rng = np.random.default_rng(loss)
    z, b = _scalar_inputs(rng, loss)
    for kern, ref in [(loss_value, loss_value_ref), (loss_derivative, loss_derivative_ref)]:
        got = np.array([kern(loss, zi, bi) for zi, bi in zip(z, b)])
        np.testing.assert_allclose(got, ref(loss, z, b), **TWIN)
    # conjugate: inside the domain (w = b beta in [-1, 0], boundaries included) and outside
    w = np.concatenate([-rng.random(300), [0.0, -1.0, 0.3, -1.5]])
    beta = w * b[:w.size] if loss else rng.normal(scale=3, size=w.size)
    got = np.array([loss_conjugate(loss, be, bi) for be, bi in zip(beta, b)])
    want = loss_conjugate_ref(loss, beta, b[:w.size])
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    np.testing.assert_allclose(got[np.isfinite(got)], want[np.isfinite(want)], **TWIN)
    if loss:
        assert np.isinf(got[-2:]).all() and np.isfinite(got[:-2]).all()


@pytest.mark.parametrize("loss, name", LOSSES)
def test_dual_prox_equals_its_twin(loss, name):
    rng = np.random.default_rng(10 + loss)
    k = 300
    c = rng.normal(scale=5.0, size=k)
    b = rng.choice([-1.0, 1.0], size=k) if loss else rng.normal(size=k)
    y = (-b * rng.random(k)) if loss else rng.normal(size=k)
    y[:20] = 0.0  # the usual start, on the boundary of the margin losses' domain
    for sigma, n in [(0.01, 1.0), (1.0, 50.0), (30.0, 3.0), (1e-4, 1e5)]:
        got = np.array([dual_prox(loss, ci, yi, bi, sigma, n) for ci, yi, bi in zip(c, y, b)])
        np.testing.assert_allclose(got, dual_prox_ref(loss, c, y, b, sigma, n), **TWIN)


def test_regularizer_scalars_equal_their_twins():
    rng = np.random.default_rng(3)
    v = np.concatenate([rng.normal(scale=2.0, size=200), [0.0, 0.05, -0.05, 0.2]])
    for tau, lam1, lam2 in [(0.5, 0.0, 0.1), (2.0, 0.1, 0.3), (0.01, 5.0, 1.0)]:
        np.testing.assert_allclose([primal_prox(vi, tau, lam1, lam2) for vi in v],
                                   primal_prox_ref(v, tau, lam1, lam2), **TWIN)
        np.testing.assert_allclose([reg_value(vi, lam1, lam2) for vi in v],
                                   reg_value_ref(v, lam1, lam2), **TWIN)
        np.testing.assert_allclose([reg_conjugate(vi, lam1, lam2) for vi in v],
                                   reg_conjugate_ref(v, lam1, lam2), **TWIN)


def test_unknown_loss_id_is_rejected():
    with pytest.raises(ValidationError, match="unknown loss_id; valid ids are 0"):
        loss_value(99, 0.0, 1.0)
    with pytest.raises(ValidationError, match="unknown loss_id; valid ids are 0"):
        dual_prox(3, 0.0, 0.0, 1.0, 1.0, 1.0)
    with pytest.raises(ValidationError, match="unknown loss_id 99; valid ids are 0"):
        loss_value_ref(99, 0.0, 1.0)


# --------------------------------------------------------------------------------------
# the definitions: Fenchel-Young, conjugates, proxes
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("loss, name", LOSSES)
def test_fenchel_young_equality_for_the_losses(loss, name):
    z = np.concatenate([np.linspace(-8.0, 8.0, 321), [0.0, 1.0, -1.0, 1e-9]])
    for b in ([-1.0, 1.0] if loss else [-1.3, 0.0, 2.5]):
        for zi in z:
            d = loss_derivative(loss, zi, b)
            lhs = loss_value(loss, zi, b) + loss_conjugate(loss, d, b)
            assert lhs == pytest.approx(zi * d, abs=1e-12 * (1.0 + abs(zi * d) + abs(zi)))


@pytest.mark.parametrize("loss, name", LOSSES)
def test_conjugate_is_the_numerical_sup(loss, name):
    for b in ([-1.0, 1.0] if loss else [-0.7, 1.9]):
        betas = b * np.linspace(-0.97, -0.03, 17) if loss else np.linspace(-4.0, 4.0, 17)
        for beta in betas:
            res = minimize_scalar(lambda zz: -(beta * zz - loss_value(loss, zz, b)),
                                  bracket=(-30.0, 0.0, 30.0), method="brent",
                                  options={"xtol": 1e-12})
            assert loss_conjugate(loss, beta, b) == pytest.approx(-res.fun, abs=1e-10)
        if loss:
            # outside [-1, 0] the sup is +inf: beta z - phi(z) grows without bound
            for w in (0.2, -1.2):
                beta = b * w
                far = max(beta * zz - loss_value(loss, zz, b) for zz in (-1e4, 1e4))
                assert far > 100.0
                assert loss_conjugate(loss, beta, b) == np.inf
            # at the boundary the sup is the limit: 0 at w = 0; -1/2 (hinge), 0 (logistic) at -1
            assert loss_conjugate(loss, 0.0, b) == 0.0
            assert loss_conjugate(loss, -b, b) == (-0.5 if loss == LOSS_SMOOTHED_HINGE else 0.0)


def test_fenchel_young_and_conjugate_of_the_regularizer():
    for lam1, lam2 in [(0.0, 0.5), (0.3, 0.2)]:
        for x in np.linspace(-3.0, 3.0, 61):
            subgrads = [lam2 * x + lam1 * np.sign(x)] if x != 0.0 else \
                [-lam1, -0.5 * lam1, 0.0, lam1]
            for s in subgrads:
                assert reg_value(x, lam1, lam2) + reg_conjugate(s, lam1, lam2) == \
                    pytest.approx(x * s, abs=1e-13)
        for w in np.linspace(-2.0, 2.0, 41):
            res = minimize_scalar(lambda a: -(w * a - reg_value(a, lam1, lam2)),
                                  bracket=(-50.0, 0.0, 50.0), method="brent",
                                  options={"xtol": 1e-12})
            assert reg_conjugate(w, lam1, lam2) == pytest.approx(-res.fun, abs=1e-10)


def _dual_objective(loss, beta, c, y, b, sigma, n):
    return c * beta / n - loss_conjugate(loss, beta, b) / n - (beta - y) ** 2 / (2 * sigma)


def _dual_derivative(loss, beta, c, y, b, sigma, n):
    """``d/dbeta`` of the dual step objective (``phi*'`` written out by hand) and the size of
    its terms."""
    if loss == LOSS_LOGISTIC:
        w = b * beta
        conj_prime = b * (math.log1p(w) - math.log(-w))
    else:
        conj_prime = beta + b
    terms = (c / n, -conj_prime / n, -(beta - y) / sigma)
    return sum(terms), sum(abs(t) for t in terms)


@pytest.mark.parametrize("loss, name", LOSSES)
def test_dual_prox_is_optimal(loss, name):
    rng = np.random.default_rng(20 + loss)
    clipped = {0.0: 0, -1.0: 0}
    for _ in range(400):
        c = rng.normal(scale=3.0)
        b = rng.choice([-1.0, 1.0]) if loss else rng.normal()
        y = -b * rng.random() if loss else rng.normal()
        sigma = 10 ** rng.uniform(-1, 1)
        n = 10 ** rng.uniform(0, 2)
        beta = dual_prox(loss, c, y, b, sigma, n)
        h = _dual_objective(loss, beta, c, y, b, sigma, n)
        for delta in (1e-6, 1e-4, 1e-2, 0.3):
            for cand in (beta - delta, beta + delta):
                assert h >= _dual_objective(loss, cand, c, y, b, sigma, n) - 1e-13 * (1 + abs(h))
        w = b * beta
        if loss == LOSS_LOGISTIC:
            assert -1.0 < w < 0.0
            # the root of the optimality condition, found independently (Brent on w)
            f = lambda ww: (b * c / n - (math.log1p(ww) - math.log(-ww)) / n  # noqa: E731
                            - (ww - b * y) / sigma)
            w_star = brentq(f, -1.0 + 1e-16, -1e-300, xtol=1e-300, rtol=1e-15, maxiter=500)
            assert w == pytest.approx(w_star, rel=1e-11, abs=1e-15)
        if loss == LOSS_SMOOTHED_HINGE and w in clipped:
            clipped[w] += 1
            # KKT on the interval: the objective increases outwards at the active bound
            slope, scale = _dual_derivative(loss, beta, c, y, b, sigma, n)
            assert (b * slope >= -1e-14 * scale) if w == 0.0 else (b * slope <= 1e-14 * scale)
        else:
            slope, scale = _dual_derivative(loss, beta, c, y, b, sigma, n)
            assert abs(slope) <= 1e-12 * scale
    if loss == LOSS_SMOOTHED_HINGE:
        assert clipped[0.0] > 10 and clipped[-1.0] > 10  # both bounds were exercised


def test_logistic_dual_prox_stays_strictly_inside_in_extreme_cases():
    for c, y, b, sigma, n in [(1e4, 0.0, 1.0, 1e3, 1.0), (-1e4, 0.0, 1.0, 1e3, 1.0),
                              (0.0, -1.0, 1.0, 1e-8, 1e6), (0.0, 0.0, -1.0, 1e-8, 1e6),
                              (800.0, -0.5, -1.0, 1e5, 1.0), (3.0, 0.4, 1.0, 1.0, 1.0)]:
        w = b * dual_prox(2, c, y, b, sigma, n)
        assert -1.0 < w < 0.0
        assert np.isfinite(loss_conjugate(2, b * w, b))


def _logistic_root(c, y, b, sigma, n):
    """The logistic dual step's root ``w = b beta`` by Brent on ``w`` (None where it lies
    beyond the floats the solve keeps), and its ``t = log((1 + w) / (-w))``."""
    def f(ww):
        return b * c / n - (math.log1p(ww) - math.log(-ww)) / n - (ww - b * y) / sigma

    lo, hi = -1.0 + 2.0 ** -52, -1e-300
    if f(lo) * f(hi) > 0.0:
        return None, None
    w = brentq(f, lo, hi, xtol=1e-300, rtol=1e-15, maxiter=2000)
    return w, math.log1p(w) - math.log(-w)


def test_logistic_dual_prox_reaches_the_root_from_any_start():
    """From the current dual, from 0 and from duals next to the ends of the domain, with
    wide brackets (``n / sigma`` up to ``1e14``) and large margins: ``t`` within the
    solve's tolerance ``1e-13 max(1, |t|)`` of the root.  The first case is one where
    Newton steps cycle across the root inside the bracket for all 200 iterations."""
    cases = [(6.617036438502039, 0.0, -1.0, 1.0, 50.0),
             (2.9829508982305493, 2.198457111931394e-121, -1.0, 1.0, 5e4)]
    rng = np.random.default_rng(7)
    for sigma, n in [(0.01, 1.0), (1.0, 50.0), (30.0, 3.0), (1.0, 5e4), (1e-8, 1e6)]:
        for scale in (0.1, 3.0, 50.0):
            for _ in range(12):
                b = float(rng.choice([-1.0, 1.0]))
                u = rng.random()
                y = -b * (u if u < 0.6 else (0.0 if u < 0.8 else 1.0 - 10 ** rng.uniform(-16, -1)))
                cases.append((float(rng.normal(scale=scale)), y, b, sigma, n))
    checked = 0
    for c, y, b, sigma, n in cases:
        w_star, t = _logistic_root(c, y, b, sigma, n)
        if w_star is None:
            continue
        w = b * dual_prox(LOSS_LOGISTIC, c, y, b, sigma, n)
        # |dt| <= 1e-13 max(1, |t|) moves w by that times 1 + w, relative; plus rounding
        allowed = 1e-13 * max(1.0, abs(t)) * (1.0 + w_star) + 4e-16 * (1.0 + abs(t))
        assert abs(w - w_star) <= allowed * abs(w_star), (c, y, b, sigma, n, w, w_star)
        checked += 1
    assert checked > 0.9 * len(cases)


def test_logistic_dual_prox_from_next_to_the_root_ends_on_it():
    """A current dual next to the step's root (a later epoch's dual steps: ``c b`` within
    1e-6 .. 1e-2 of the dual's ``t``, so that ``G`` there is that small): the first step
    is the third-order one, and the solve ends on the root to its tolerance (Brent's
    root), in the kernel and in its NumPy twin."""
    rng = np.random.default_rng(11)
    cases = []
    for sigma, n in [(0.01, 1.0), (1.0, 50.0), (30.0, 3.0), (1.0, 5e4), (1e-3, 1e5)]:
        for _ in range(40):
            b = float(rng.choice([-1.0, 1.0]))
            t0 = float(rng.normal(scale=4.0))   # the current dual's t: b y = -sigmoid(-t0)
            y = -b / (1.0 + math.exp(t0))
            c = b * (t0 + rng.choice([-1.0, 1.0]) * 10 ** rng.uniform(-6, -2)
                     * max(1.0, abs(t0)))
            w_star, t = _logistic_root(c, y, b, sigma, n)
            if w_star is not None:
                cases.append((c, y, b, sigma, n, w_star, t))
    assert len(cases) > 150
    c, y, b, sigma, n, w_star, t = (np.array(v) for v in zip(*cases))
    for k in range(len(cases)):
        w = b[k] * dual_prox(LOSS_LOGISTIC, c[k], y[k], b[k], sigma[k], n[k])
        twin = b[k] * dual_prox_ref(LOSS_LOGISTIC, c[k:k + 1], y[k:k + 1], b[k:k + 1],
                                    sigma[k], n[k])[0]
        allowed = 1e-13 * max(1.0, abs(t[k])) * (1.0 + w_star[k]) + 4e-16 * (1.0 + abs(t[k]))
        for got in (w, twin):
            assert abs(got - w_star[k]) <= allowed * abs(w_star[k]), (cases[k], got)
        assert twin == pytest.approx(w, rel=1e-14)

def test_primal_prox_is_optimal():
    rng = np.random.default_rng(4)
    for _ in range(300):
        v = rng.normal(scale=2.0)
        tau = 10 ** rng.uniform(-2, 1)
        lam1 = rng.choice([0.0, 10 ** rng.uniform(-2, 0)])
        lam2 = 10 ** rng.uniform(-2, 0)
        a = primal_prox(v, tau, lam1, lam2)

        def obj(t):
            return lam1 * abs(t) + lam2 * t * t / 2 + (t - v) ** 2 / (2 * tau)

        if a != 0.0:  # 0 = (a - v)/tau + lam2 a + lam1 sign(a)
            assert (a - v) / tau + lam2 * a + lam1 * np.sign(a) == pytest.approx(
                0.0, abs=1e-12 * (1 + abs(v) / tau))
        else:  # 0 in -v/tau + lam1 [-1, 1]
            assert abs(v) / tau <= lam1 * (1 + 1e-12)
        # the prox shrinks towards 0, so the minimizer lies in [-|v|, |v|]
        res = minimize_scalar(obj, bounds=(-abs(v) - 1.0, abs(v) + 1.0), method="bounded",
                              options={"xatol": 1e-12})
        assert obj(a) <= res.fun + 1e-12
        assert a == pytest.approx(res.x, abs=1e-5)


# --------------------------------------------------------------------------------------
# the sampler
# --------------------------------------------------------------------------------------

def test_sampler_equals_twin_and_reference_and_cleans_up():
    rng = np.random.default_rng(5)
    for n, m in [(1, 1), (5, 5), (10, 3), (100, 1), (100, 60), (1000, 17)]:
        marks = np.zeros(n, dtype=bool)
        out = np.full(m + 2, -7, dtype=np.int64)
        for _ in range(50):
            u = rng.random(m)
            u[: m // 3] = 1.0 - 2.0 ** -53  # the largest uniform below 1
            sample_without_replacement(n, m, u, marks, out)
            got = out[:m].copy()
            assert not marks.any()
            assert (out[m:] == -7).all()
            assert len(set(got.tolist())) == m and got.min() >= 0 and got.max() < n
            np.testing.assert_array_equal(got, sample_without_replacement_ref(n, m, u))
            np.testing.assert_array_equal(got, floyd_subset(n, m, u))
            sample_without_replacement(n, m, u, marks, out)  # deterministic
            np.testing.assert_array_equal(out[:m], got)
    with pytest.raises(ValidationError, match="need 0 <= m <= n"):
        sample_without_replacement(3, 4, np.zeros(4), np.zeros(3, bool), np.zeros(4, np.int64))


def test_sampler_draws_every_subset_equally_often():
    n, m, draws = 7, 3, 35_000
    rng = np.random.default_rng(6)
    U = rng.random((draws, m))
    marks = np.zeros(n, dtype=bool)
    out = np.empty(m, dtype=np.int64)
    subsets = {s: 0 for s in itertools.combinations(range(n), m)}
    inclusion = np.zeros(n)
    for u in U:
        sample_without_replacement(n, m, u, marks, out)
        subsets[tuple(sorted(out.tolist()))] += 1
        inclusion[out] += 1
    assert chisquare(list(subsets.values())).pvalue > 1e-4
    prob = m / n
    sd = math.sqrt(prob * (1 - prob) / draws)
    assert np.all(np.abs(inclusion / draws - prob) < 5 * sd)


def test_sampler_inclusion_frequency_on_a_larger_set():
    n, m, draws = 50, 5, 20_000
    U = np.random.default_rng(7).random((draws, m))
    marks = np.zeros(n, dtype=bool)
    out = np.empty(m, dtype=np.int64)
    counts = np.zeros(n)
    for u in U:
        sample_without_replacement(n, m, u, marks, out)
        counts[out] += 1
    prob = m / n
    sd = math.sqrt(prob * (1 - prob) / draws)
    assert np.all(np.abs(counts / draws - prob) < 5 * sd)


# --------------------------------------------------------------------------------------
# iteration kernels: twins, reference, factorized == dense
# --------------------------------------------------------------------------------------

def _state(n, p, seed=0):
    rng = np.random.default_rng(seed)
    # a non-trivial state: x, xbar, z arbitrary (the kernels only add increments to z)
    return (np.zeros(n), rng.normal(size=p), rng.normal(size=p), rng.normal(size=p))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("loss, name", LOSSES)
def test_dense_kernel_equals_its_twin(loss, name, dtype):
    A, b = _problem(loss, 23, 7, seed=1, dtype=dtype)
    for lam1, lam2 in REGS.values():
        for m, q, n_total in [(3, 2, 23), (1, 7, 40), (23, 1, 23)]:
            ru, cu = dspdc_uniforms(m * 10 + q, 60, m, q)
            s1 = _state(23, 7)
            s2 = tuple(a.copy() for a in s1)
            args = (n_total, ru, cu, m, q, 1.7, 0.3, 0.8, loss, lam1, lam2)
            dspdc_dense_iterations(A, b, *s1, *args)
            dspdc_dense_iterations_ref(A, b, *s2, *args)
            for a1, a2 in zip(s1, s2):
                np.testing.assert_allclose(a1, a2, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("loss, name", LOSSES)
def test_factorized_kernel_equals_its_twin(loss, name, dtype):
    U, V, b = _factors(loss, 21, 9, 3, seed=2)
    U, V = U.astype(dtype), V.astype(dtype)
    for lam1, lam2 in REGS.values():
        ru, cu = dspdc_uniforms(3, 60, 4, 2)
        rng = np.random.default_rng(0)
        s1 = (np.zeros(21), np.zeros(9), rng.normal(size=3), rng.normal(size=3),
              rng.normal(size=3))
        s2 = tuple(a.copy() for a in s1)
        args = (30, ru, cu, 4, 2, 2.5, 0.4, 0.6, loss, lam1, lam2)
        dspdc_factorized_iterations(U, V, b, *s1, *args)
        dspdc_factorized_iterations_ref(U, V, b, *s2, *args)
        for a1, a2 in zip(s1, s2):
            np.testing.assert_allclose(a1, a2, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("reg", sorted(REGS))
@pytest.mark.parametrize("loss, name", LOSSES)
def test_dense_kernel_iterates_equal_the_reference(loss, name, reg):
    lam1, lam2 = REGS[reg]
    A, b = _problem(loss, 30, 6, seed=3)
    for m, q in [(3, 2), (1, 1), (30, 6)]:
        prm = _params(A, m, q, loss, lam2)
        x_ref, y_ref = dspdc_reference(A, b, loss=name, lam1=lam1, lam2=lam2, m=m, q=q,
                                       theta=prm.theta, tau=prm.tau, sigma=prm.sigma,
                                       n_iter=150, seed=11)
        x, y, _ = _run_kernel(A, b, prm, loss, lam1, lam2, 150, 11)
        np.testing.assert_allclose(x, x_ref, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(y, y_ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loss, name", LOSSES)
def test_dense_kernel_on_a_chunk_uses_n_total_in_the_proxes(loss, name):
    """The 1/n inside the proxes is n_total; the extrapolation factor is n_rows / m."""
    lam1, lam2 = REGS["enet"]
    A, b = _problem(loss, 20, 5, seed=4)
    ru, cu = dspdc_uniforms(5, 200, 4, 2)
    y, x, xbar, z = np.zeros(20), np.zeros(5), np.zeros(5), np.zeros(5)
    dspdc_dense_iterations(A, b, y, x, xbar, z, 55, ru, cu, 4, 2, 1.5, 0.5, 2.0, loss, lam1,
                           lam2)
    x_ref, y_ref = dspdc_reference(A, b, loss=name, lam1=lam1, lam2=lam2, m=4, q=2,
                                   theta=1.5, tau=0.5, sigma=2.0, n_iter=200, seed=5,
                                   n_total=55)
    np.testing.assert_allclose(x, x_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(y, y_ref, rtol=1e-10, atol=1e-12)
    # and it is not the same as the n_total = n_rows run
    x_20, _ = dspdc_reference(A, b, loss=name, lam1=lam1, lam2=lam2, m=4, q=2, theta=1.5,
                              tau=0.5, sigma=2.0, n_iter=200, seed=5)
    assert np.abs(x_20 - x).max() > 1e-3


def test_kernel_calls_can_be_split():
    A, b = _problem(1, 25, 8, seed=5)
    ru, cu = dspdc_uniforms(8, 300, 3, 3)
    args = (25,)
    s1 = tuple(np.zeros(k) for k in (25, 8, 8, 8))
    dspdc_dense_iterations(A, b, *s1, *args, ru, cu, 3, 3, 2.0, 0.4, 0.9, 1, 0.01, 0.1)
    s2 = tuple(np.zeros(k) for k in (25, 8, 8, 8))
    for lo, hi in [(0, 1), (1, 117), (117, 300)]:
        dspdc_dense_iterations(A, b, *s2, *args, ru[lo:hi], cu[lo:hi], 3, 3, 2.0, 0.4, 0.9, 1,
                               0.01, 0.1)
    for a1, a2 in zip(s1, s2):
        np.testing.assert_array_equal(a1, a2)
    # z is A^T y and xbar differs from x only on the last J (at most q = 3 coordinates)
    np.testing.assert_allclose(s1[3], A.T @ s1[0], atol=1e-12)
    assert np.count_nonzero(s1[2] != s1[1]) <= 3


@pytest.mark.parametrize("reg", sorted(REGS))
@pytest.mark.parametrize("loss, name", LOSSES)
def test_factorized_kernel_equals_algorithm_1_on_the_product(loss, name, reg):
    lam1, lam2 = REGS[reg]
    n, p, d = 30, 12, 3
    U, V, b = _factors(loss, n, p, d, seed=6)
    A = U @ V
    for m, q in [(2, 3), (1, 1)]:
        prm = _params(A, m, q, loss, lam2)
        kw = dict(loss=name, lam1=lam1, lam2=lam2, m=m, q=q, theta=prm.theta, tau=prm.tau,
                  sigma=prm.sigma, n_iter=200, seed=12)
        x_dense, y_dense = dspdc_reference(A, b, **kw)
        x_fact, y_fact = dspdc_factorized_reference(U, V, b, **kw)
        ru, cu = dspdc_uniforms(12, 200, m, q)
        y, x = np.zeros(n), np.zeros(p)
        u, v, vbar = np.zeros(d), np.zeros(d), np.zeros(d)
        dspdc_factorized_iterations(U, V, b, y, x, u, v, vbar, n, ru, cu, m, q, prm.theta,
                                    prm.tau, prm.sigma, loss, lam1, lam2)
        for got in (x, x_fact):
            np.testing.assert_allclose(got, x_dense, rtol=1e-10, atol=1e-11)
        for got in (y, y_fact):
            np.testing.assert_allclose(got, y_dense, rtol=1e-10, atol=1e-11)
        np.testing.assert_allclose(u, U.T @ y, atol=1e-11)
        np.testing.assert_allclose(v, V @ x, atol=1e-11)


@pytest.mark.parametrize("loss, name", LOSSES)
def test_tilted_regularizer_shift(loss, name):
    """``shift`` tilts g_j by ``-shift_j x``: kernels equal their twins and the reference, and
    the fixed point solves the tilted problem."""
    lam1, lam2 = REGS["enet"]
    n, p, d = 24, 6, 3
    U, V, b = _factors(loss, n, p, d, seed=22)
    A = U @ V
    shift = np.random.default_rng(22).normal(scale=0.2, size=p)
    ru, cu = dspdc_uniforms(4, 120, 3, 2)
    args = (n, ru, cu, 3, 2, 2.2, 0.4, 0.7, loss, lam1, lam2, shift)
    s1 = tuple(np.zeros(k) for k in (n, p, p, p))
    s2 = tuple(np.zeros(k) for k in (n, p, p, p))
    dspdc_dense_iterations(A, b, *s1, *args)
    dspdc_dense_iterations_ref(A, b, *s2, *args)
    for a1, a2 in zip(s1, s2):
        np.testing.assert_allclose(a1, a2, rtol=1e-12, atol=1e-12)
    x_ref, y_ref = dspdc_reference(A, b, loss=name, lam1=lam1, lam2=lam2, m=3, q=2, theta=2.2,
                                   tau=0.4, sigma=0.7, n_iter=120, seed=4, shift=shift)
    np.testing.assert_allclose(s1[1], x_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(s1[0], y_ref, rtol=1e-10, atol=1e-12)
    f1 = (np.zeros(n), np.zeros(p), np.zeros(d), np.zeros(d), np.zeros(d))
    f2 = tuple(a.copy() for a in f1)
    dspdc_factorized_iterations(U, V, b, *f1, *args)
    dspdc_factorized_iterations_ref(U, V, b, *f2, *args)
    for a1, a2 in zip(f1, f2):
        np.testing.assert_allclose(a1, a2, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(f1[1], x_ref, rtol=1e-10, atol=1e-11)
    with pytest.raises(ValidationError, match="shift needs one entry per column"):
        dspdc_dense_iterations(A, b, *s1, *args[:-1], np.zeros(p + 1))
    if loss == 0:  # tilted ridge: (1/n) A^T (A x - b) + lam2 x - shift = 0
        prm = _params(A, 3, 2, 0, lam2)
        x, _ = dspdc_reference(A, b, loss=name, lam1=0.0, lam2=lam2, m=3, q=2,
                               theta=prm.theta, tau=prm.tau, sigma=prm.sigma,
                               n_iter=prm.iteration_count(1e-14, 1e3), seed=5, shift=shift)
        grad = A.T @ (A @ x - b) / n + lam2 * x - shift
        assert np.abs(grad).max() < 1e-6


def test_iteration_kernels_reject_bad_arguments():
    A, b = _problem(0, 6, 4)
    y, x, xbar, z = np.zeros(6), np.zeros(4), np.zeros(4), np.zeros(4)
    ru, cu = dspdc_uniforms(0, 3, 2, 2)
    ok = (ru, cu, 2, 2, 1.0, 0.5, 0.5, 0, 0.0, 0.1)
    with pytest.raises(ValidationError, match="n_total .* must be >= the number of rows"):
        dspdc_dense_iterations(A, b, y, x, xbar, z, 5, *ok)
    with pytest.raises(ValidationError, match="need 1 <= m <= number of rows"):
        dspdc_dense_iterations(A, b, y, x, xbar, z, 6, np.zeros((3, 7)), cu, 7, 2, 1.0, 0.5,
                               0.5, 0, 0.0, 0.1)
    with pytest.raises(ValidationError, match=r"row_uniforms must be \(T, m\)"):
        dspdc_dense_iterations(A, b, y, x, xbar, z, 6, ru, cu, 2, 3, 1.0, 0.5, 0.5, 0, 0.0,
                               0.1)
    with pytest.raises(ValidationError, match="x, xbar and z need one entry per column"):
        dspdc_dense_iterations(A, b, y, np.zeros(3), xbar, z, 6, *ok)
    with pytest.raises(ValidationError, match=r"U must be \(n_rows, d\) and V \(d, p\)"):
        dspdc_factorized_iterations(A, np.zeros((3, 4)), b, y, x, np.zeros(4), np.zeros(4),
                                    np.zeros(4), 6, *ok)


# --------------------------------------------------------------------------------------
# objectives and gaps
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("loss, name", LOSSES)
def test_chunk_objective_terms_give_P_and_D(loss, name):
    lam1, lam2 = REGS["enet"]
    A, b = _problem(loss, 40, 6, seed=7)
    rng = np.random.default_rng(8)
    x = rng.normal(size=6)
    y = -b * rng.random(40) if loss else rng.normal(size=40)
    P_ref = primal_value(A, b, x, loss=name, lam1=lam1, lam2=lam2)
    D_ref = dual_value(A, b, y, loss=name, lam1=lam1, lam2=lam2)
    for dtype in (np.float64, np.float32):
        Ad = A.astype(dtype)
        aty, aty_ref = np.zeros(6), np.zeros(6)
        sp = sc = sp_r = sc_r = 0.0
        for lo, hi in [(0, 7), (7, 8), (8, 40)]:
            a, c = chunk_objective_terms(Ad[lo:hi], b[lo:hi], x, y[lo:hi], loss, aty)
            a_r, c_r = chunk_objective_terms_ref(Ad[lo:hi], b[lo:hi], x, y[lo:hi], loss,
                                                 aty_ref)
            sp, sc, sp_r, sc_r = sp + a, sc + c, sp_r + a_r, sc_r + c_r
        np.testing.assert_allclose([sp, sc], [sp_r, sc_r], **TWIN)
        np.testing.assert_allclose(aty, aty_ref, **TWIN)
        P, D = objective_from_terms(sp, sc, x, aty, 40, lam1, lam2)
        np.testing.assert_allclose([P, D], objective_from_terms_ref(sp, sc, x, aty, 40, lam1,
                                                                    lam2), **TWIN)
        if dtype == np.float64:
            assert P == pytest.approx(P_ref, rel=1e-12)
            assert D == pytest.approx(D_ref, rel=1e-12)
    if loss:  # a dual off the domain: D = -inf
        y_bad = y.copy()
        y_bad[3] = 0.5 * b[3]
        sp, sc = chunk_objective_terms(A, b, x, y_bad, loss, np.zeros(6))
        assert sc == np.inf
        assert dual_value(A, b, y_bad, loss=name, lam1=lam1, lam2=lam2) == -np.inf


@pytest.mark.parametrize("loss, name", LOSSES)
def test_factorized_objective_terms(loss, name):
    U, V, b = _factors(loss, 30, 10, 4, seed=9)
    rng = np.random.default_rng(9)
    x = rng.normal(size=10)
    y = -b * rng.random(30) if loss else rng.normal(size=30)
    v = V @ x
    uty, uty_ref = np.zeros(4), np.zeros(4)
    sp, sc = chunk_objective_terms_factorized(U, b, v, y, loss, uty)
    sp_r, sc_r = chunk_objective_terms_factorized_ref(U, b, v, y, loss, uty_ref)
    np.testing.assert_allclose([sp, sc], [sp_r, sc_r], **TWIN)
    np.testing.assert_allclose(uty, uty_ref, **TWIN)
    P, D = objective_from_terms(sp, sc, x, V.T @ uty, 30, 0.02, 0.1)
    A = U @ V
    assert P == pytest.approx(primal_value(A, b, x, loss=name, lam1=0.02, lam2=0.1), rel=1e-12)
    assert D == pytest.approx(dual_value(A, b, y, loss=name, lam1=0.02, lam2=0.1), rel=1e-12)


@pytest.mark.parametrize("reg", sorted(REGS))
@pytest.mark.parametrize("loss, name", LOSSES)
def test_duality_gap_goes_to_zero(loss, name, reg):
    lam1, lam2 = REGS[reg]
    A, b = _problem(loss, 60, 8, seed=10)
    prm = _params(A, 6, 2, loss, lam2)
    n_iter = prm.iteration_count(1e-13, constant=1e3)
    _, _, log = _run_kernel(A, b, prm, loss, lam1, lam2, n_iter, 13,
                            every=max(1, n_iter // 60))
    gaps = [duality_gap(A, b, x, y, loss=name, lam1=lam1, lam2=lam2) for _, x, y in log]
    assert min(gaps) >= -1e-12  # weak duality and dual feasibility at every logged iterate
    assert gaps[-1] < 1e-9
    assert gaps[0] > 1e3 * gaps[-1]


# --------------------------------------------------------------------------------------
# scikit-learn
# --------------------------------------------------------------------------------------

def _converged(A, b, loss, lam1, lam2):
    prm = _params(A, 6, 4, loss, lam2)
    x, y, _ = _run_kernel(A, b, prm, loss, lam1, lam2, prm.iteration_count(1e-14, 1e3), 21)
    name = dict(LOSSES)[loss]
    assert duality_gap(A, b, x, y, loss=name, lam1=lam1, lam2=lam2) < 1e-10
    return x


def test_ridge_matches_scikit_learn():
    from sklearn.linear_model import Ridge

    A, b = _problem(0, 60, 8, seed=14)
    n, lam2 = 60, 0.1
    x = _converged(A, b, 0, 0.0, lam2)
    # scikit-learn minimizes ||b - A w||^2 + alpha ||w||^2 = 2 n P(w) with alpha = n lam2
    w = Ridge(alpha=n * lam2, fit_intercept=False, solver="cholesky").fit(A, b).coef_

    def independent(v):
        return np.sum((A @ v - b) ** 2) / (2 * n) + lam2 / 2 * np.sum(v ** 2)

    P_sk = independent(w)
    for P in (primal_value(A, b, x, loss="squared", lam1=0.0, lam2=lam2), independent(x)):
        assert P == pytest.approx(P_sk, rel=1e-6)
    np.testing.assert_allclose(x, w, rtol=1e-6, atol=1e-7)


def test_elastic_net_matches_scikit_learn():
    from sklearn.linear_model import ElasticNet

    A, b = _problem(0, 60, 8, seed=15)
    n, alpha, l1_ratio = 60, 0.2, 0.4
    lam1, lam2 = regularizer_weights(alpha, l1_ratio)
    x = _converged(A, b, 0, lam1, lam2)
    w = ElasticNet(alpha=alpha, l1_ratio=l1_ratio, fit_intercept=False, tol=1e-14,
                   max_iter=100_000).fit(A, b).coef_

    def independent(v):  # scikit-learn's documented objective
        return (np.sum((b - A @ v) ** 2) / (2 * n) + alpha * l1_ratio * np.abs(v).sum()
                + 0.5 * alpha * (1 - l1_ratio) * np.sum(v ** 2))

    P_sk = independent(w)
    for P in (primal_value(A, b, x, loss="squared", lam1=lam1, lam2=lam2), independent(x)):
        assert P == pytest.approx(P_sk, rel=1e-6)
    np.testing.assert_allclose(x, w, rtol=1e-5, atol=1e-7)


def test_logistic_regression_matches_scikit_learn():
    from sklearn.linear_model import LogisticRegression

    A, b = _problem(2, 60, 8, seed=16)
    n, lam2 = 60, 0.1
    x = _converged(A, b, 2, 0.0, lam2)
    # scikit-learn: ||w||^2 / 2 + C sum_i log(1 + exp(-b_i a_i w)) = P(w) / lam2, C = 1/(n lam2)
    w = LogisticRegression(C=1.0 / (n * lam2), fit_intercept=False, tol=1e-12,
                           max_iter=10_000, solver="newton-cholesky").fit(A, b).coef_.ravel()

    def independent(v):
        return np.mean(np.log1p(np.exp(-b * (A @ v)))) + lam2 / 2 * np.sum(v ** 2)

    P_sk = independent(w)
    for P in (primal_value(A, b, x, loss="logistic", lam1=0.0, lam2=lam2), independent(x)):
        assert P == pytest.approx(P_sk, rel=1e-6)
    np.testing.assert_allclose(x, w, rtol=1e-5, atol=1e-7)


# --------------------------------------------------------------------------------------
# theory: rates, the square-root misprint, Theorem 2
# --------------------------------------------------------------------------------------

def _brute_lambda(A, m, q):
    """``Lambda_{q,m}`` by definition (8): the max over all row and column subsets."""
    best = 0.0
    for I in itertools.combinations(range(A.shape[0]), m):
        for J in itertools.combinations(range(A.shape[1]), q):
            best = max(best, np.linalg.norm(A[np.ix_(I, J)], 2) ** 2)
    return best


def _ridge_12x6():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(12, 6))
    b = A @ rng.normal(size=6) + 0.1 * rng.normal(size=12)
    return A, b


def _mean_log_gap(A, b, prm, lam, seeds):
    n_iter = int(60 * prm.K)
    every = max(1, int(prm.K / 10))
    logs = []
    for seed in seeds:
        _, _, log = _run_kernel(A, b, prm, 0, 0.0, lam, n_iter, seed, every=every)
        gaps = np.array([duality_gap(A, b, x, y, loss=0, lam1=0.0, lam2=lam)
                         for _, x, y in log])
        assert gaps.min() >= -1e-12
        logs.append(np.log(np.maximum(gaps, 1e-300)))
    ts = np.array([t for t, _, _ in log], dtype=float)
    return ts, np.mean(logs, axis=0), logs


def _slope(ts, mean_log):
    """Slope of log(gap) per iteration between 1e-1 and 1e-11 (above the rounding floor)."""
    seg = (mean_log < math.log(1e-1)) & (mean_log > math.log(1e-11))
    assert seg.sum() >= 20
    return np.polyfit(ts[seg], mean_log[seg], 1)[0]


@pytest.mark.parametrize("m, q", [(1, 1), (2, 3), (1, 6), (12, 1)])
def test_gap_rate_is_at_least_theorem_2(m, q):
    A, b = _ridge_12x6()
    lam = 0.1
    L = _brute_lambda(A, m, q)
    prm = dspdc_parameters(12, 6, m, q, L, lam, 1.0, mode="gap")
    ts, mean_log, logs = _mean_log_gap(A, b, prm, lam, range(10))
    slope = _slope(ts, mean_log)
    assert slope <= math.log(1.0 - 1.0 / (2.0 * prm.K))
    # Theorem 2 itself (mean gap over the seeds), where the bound is above the floor
    x_star = np.linalg.solve(A.T @ A + 12 * lam * np.eye(6), A.T @ b)
    y_star = A @ x_star - b
    gap0 = duality_gap(A, b, np.zeros(6), np.zeros(12), loss=0, lam1=0.0, lam2=lam)
    bound = gap_bound(prm, ts, spectral_norm_sq(A), x_star @ x_star, y_star @ y_star, gap0)
    mean_gap = np.mean(np.exp(logs), axis=0)
    above = bound > 1e-12
    assert np.all(mean_gap[above] <= bound[above])


def test_literal_square_root_reading_promises_a_rate_the_method_does_not_reach():
    """(14), (18) and Theorems 1-2 print s = sqrt(Lambda/(lam gamma n) * np/(mq)); the proofs,
    (15)-(16) and Tables 1-2 use s = (np/(mq)) sqrt(Lambda/(n lam gamma)).  The literal K is
    smaller (a faster promised rate); run with the literal parameters (theta from (18) with
    the literal K), the seed-averaged gap decays clearly slower than that promise, and still
    faster than the corrected one."""
    A, b = _ridge_12x6()
    lam, m, q = 0.1, 1, 1
    L = _brute_lambda(A, m, q)
    K = rate_constant(12, 6, m, q, L, lam, 1.0)
    K_lit = rate_constant(12, 6, m, q, L, lam, 1.0, reading="literal")
    assert K_lit < K
    assert K - 12 == pytest.approx((K_lit - 12) * math.sqrt(12 * 6 / (m * q)), rel=1e-12)
    assert dspdc_parameters(12, 6, m, q, L, lam, 1.0).K == pytest.approx(K, rel=1e-15)
    prm_lit = dspdc_parameters(12, 6, m, q, L, lam, 1.0,
                               theta=(6 / q) * (1.0 - 1.0 / (2.0 * K_lit)))
    ts, mean_log, _ = _mean_log_gap(A, b, prm_lit, lam, range(10))
    slope = _slope(ts, mean_log)
    assert slope > 0.6 * math.log(1.0 - 1.0 / (2.0 * K_lit))  # the literal promise fails
    assert slope <= math.log(1.0 - 1.0 / (2.0 * K))


# --------------------------------------------------------------------------------------
# parameter module
# --------------------------------------------------------------------------------------

def test_step_sizes_satisfy_the_conditions_of_theorem_1():
    rng = np.random.default_rng(17)
    cases = [(1000, 10, 1, 10), (10, 1000, 10, 1), (50, 50, 5, 5), (7, 3, 7, 3), (100, 4, 1, 1)]
    cases += [(int(rng.integers(1, 500)), int(rng.integers(1, 500)), 1, 1) for _ in range(20)]
    for n, p, m, q in cases:
        m = min(m, n) if m > 1 else int(rng.integers(1, n + 1))
        q = min(q, p) if q > 1 else int(rng.integers(1, p + 1))
        L, lam, gamma = 10 ** rng.uniform(-2, 3), 10 ** rng.uniform(-6, 1), rng.choice([1, 4])
        for mode in ("gap", "distance"):
            prm = dspdc_parameters(n, p, m, q, L, lam, gamma, mode=mode)
            assert prm.tau * prm.sigma == pytest.approx(n * m * q / (4 * p * L), rel=1e-10)
            lhs = p / (2 * q * lam * prm.tau) + p / q
            rhs = n * n / (2 * m * gamma * prm.sigma) + n / m
            assert lhs == pytest.approx(rhs, rel=1e-10)
            K = max(n / m, p / q) + (n * p) / (m * q) * math.sqrt(L / (n * lam * gamma))
            assert prm.K == pytest.approx(K, rel=1e-12)
            factor = 1.0 if mode == "distance" else 2.0
            assert prm.theta == pytest.approx(p / q - (p / q) / (factor * K), rel=1e-12)
            assert prm.rho == pytest.approx(1 - 1 / (factor * K), rel=1e-12)
            assert prm.theta * q / p == pytest.approx(prm.rho, rel=1e-12)
            assert prm.tau > 0 and prm.sigma > 0


def test_equal_sampling_ratios_give_17():
    for n, p, m, q in [(100, 10, 10, 1), (60, 30, 6, 3), (8, 8, 8, 8)]:
        L, lam, gamma = 3.7, 0.02, 4.0
        prm = dspdc_parameters(n, p, m, q, L, lam, gamma)
        assert prm.tau == pytest.approx(m / 2 * math.sqrt(gamma / (L * n * lam)), rel=1e-12)
        assert prm.sigma == pytest.approx(m / 2 * math.sqrt(n * lam / (L * gamma)), rel=1e-12)


def test_special_cases_of_K():
    n, p, L, lam, gamma = 40, 9, 2.5, 0.01, 1.0
    kappa = L / (lam * gamma)
    # (q, m) = (p, 1): SPDC's n + sqrt(n kappa)
    assert dspdc_parameters(n, p, 1, p, L, lam, gamma).K == pytest.approx(
        n + math.sqrt(n * kappa), rel=1e-12)
    # (q, m) = (1, n): p + p sqrt(Lambda_{1,n} / (n lam gamma))
    assert dspdc_parameters(n, p, n, 1, L, lam, gamma).K == pytest.approx(
        p + p * math.sqrt(L / (n * lam * gamma)), rel=1e-12)
    # (q, m) = (p, n): 1 + ||A|| / sqrt(n lam gamma)
    assert dspdc_parameters(n, p, n, p, L, lam, gamma).K == pytest.approx(
        1 + math.sqrt(L) / math.sqrt(n * lam * gamma), rel=1e-12)


def test_overrides_validation_and_iteration_count():
    prm = dspdc_parameters(50, 10, 5, 2, 3.0, 0.1, 1.0, theta=0.0, tau=0.7, sigma=1.3)
    assert (prm.theta, prm.tau, prm.sigma) == (0.0, 0.7, 1.3)
    assert prm.overridden == ("theta", "tau", "sigma")
    base = dspdc_parameters(50, 10, 5, 2, 3.0, 0.1, 1.0)
    assert prm.K == base.K and base.overridden == ()
    for bad in [dict(tau=0.0), dict(sigma=-1.0), dict(theta=-0.5), dict(tau=float("nan"))]:
        name = next(iter(bad))
        with pytest.raises(ValidationError, match=f"{name} must be finite"):
            dspdc_parameters(50, 10, 5, 2, 3.0, 0.1, 1.0, **bad)
    for args, name in [((50, 10, 51, 2), "m"), ((50, 10, 5, 11), "q"), ((50, 10, 0, 1), "m"),
                       ((0, 10, 1, 1), "n")]:
        with pytest.raises(ValidationError, match=f"^{name} must be in"):
            dspdc_parameters(*args, 3.0, 0.1, 1.0)
    with pytest.raises(ValidationError, match="Lambda must be finite and > 0; got 0.0"):
        dspdc_parameters(50, 10, 5, 2, 0.0, 0.1, 1.0)
    with pytest.raises(ValidationError, match="mode must be 'gap' or 'distance'; got 'fast'"):
        dspdc_parameters(50, 10, 5, 2, 3.0, 0.1, 1.0, mode="fast")
    t = base.iteration_count(1e-8, constant=5.0)
    assert base.rho ** t * 5.0 <= 1e-8 < base.rho ** (t - 1) * 5.0
    assert base.iteration_count(10.0, constant=5.0) == 0


def test_gap_constant():
    n, p, m, q, lam, gamma, a2 = 30, 6, 3, 2, 0.05, 4.0, 17.0
    want = 1 / min(p / q, n / m) + max(a2 / (n * gamma), a2 / (lam * n * n)) / min(
        lam * p / q, gamma / m)
    assert gap_constant(n, p, m, q, lam, gamma, a2) == pytest.approx(want, rel=1e-15)


def test_regularizer_weights():
    assert regularizer_weights(0.2, 0.25) == pytest.approx((0.05, 0.15))
    assert regularizer_weights(1.0) == (0.0, 1.0)
    for alpha, ratio in [(0.3, 1.0), (0.0, 0.5), (-1.0, 0.0)]:
        with pytest.raises(ValidationError, match="l1_ratio < 1|alpha"):
            regularizer_weights(alpha, ratio)
    with pytest.raises(ValidationError, match=r"l1_ratio must lie in \[0, 1\); got 1.5"):
        regularizer_weights(0.3, 1.5)
    assert loss_id("smoothed_hinge") == LOSS_SMOOTHED_HINGE and loss_gamma("logistic") == 4.0
    with pytest.raises(ValidationError, match="unknown DSPDC loss 'hinge'"):
        loss_id("hinge")


def _tiny(seed=18, n=6, p=5):
    return np.random.default_rng(seed).normal(size=(n, p))


def test_lambda_exact_and_bounds_against_brute_force():
    A = _tiny()
    n, p = A.shape
    R2 = (A ** 2).sum(axis=1).max()
    for m in range(1, n + 1):
        for q in range(1, p + 1):
            truth = _brute_lambda(A, m, q)
            ub = lambda_value(A, m, q, "upper_bound")
            ub_spec = lambda_value(A, m, q, "upper_bound", power_iteration=True)
            assert ub >= truth * (1 - 1e-12) and ub_spec >= truth * (1 - 1e-9)
            assert ub_spec <= ub
            assert lambda_value(A, m, q, "heuristic") == pytest.approx(m * q * R2 / p)
            assert lambda_value(A, m, q, 2.5) == 2.5
            tractable = m == 1 or q == 1 or (m, q) == (n, p)
            if tractable:
                assert lambda_value(A, m, q, "exact") == pytest.approx(truth, rel=1e-9)
                assert ub == pytest.approx(truth, rel=1e-9) or (m, q) == (n, p)
            else:
                with pytest.raises(ValidationError, match="upper_bound"):
                    lambda_value(A, m, q, "exact")
    # the closed forms of docs/specs/dspdc.md §1.4
    assert lambda_value(A, 1, 1, "exact") == pytest.approx((A ** 2).max())
    assert lambda_value(A, 1, p, "exact") == pytest.approx(R2)
    assert lambda_value(A, n, 1, "exact") == pytest.approx((A ** 2).sum(axis=0).max())
    assert lambda_value(A, n, p, "exact") == pytest.approx(np.linalg.norm(A, 2) ** 2, rel=1e-9)
    with pytest.raises(ValidationError, match="Lambda must be 'exact'.*got 'largest'"):
        lambda_value(A, 2, 2, "largest")
    with pytest.raises(ValidationError, match="Lambda must be finite and > 0; got -1.0"):
        lambda_value(A, 2, 2, -1.0)


def _assert_same_stats(a, b):
    assert (a.m, a.q, a.n_rows, a.p) == (b.m, b.q, b.n_rows, b.p)
    assert a.max_row_sq == pytest.approx(b.max_row_sq, rel=1e-12)
    np.testing.assert_allclose(a.col_sq, b.col_sq, rtol=1e-12)
    for name in ("max_entry_sq", "row_topq", "col_topm"):
        va, vb = getattr(a, name), getattr(b, name)
        assert (va is None) == (vb is None), name
        if va is not None:
            np.testing.assert_allclose(va, vb, rtol=1e-12, err_msg=name)


def test_stats_merged_over_chunks_equal_the_stats_of_the_whole():
    A = np.random.default_rng(19).normal(size=(23, 7))
    for m, q in [(1, 1), (3, 2), (5, 7), (23, 1), (30, 3)]:
        whole = chunk_lambda_stats(A, m, q)
        cuts = [0, 1, 2, 9, 23]
        parts = [chunk_lambda_stats(A[lo:hi], m, q) for lo, hi in zip(cuts, cuts[1:])]
        _assert_same_stats(combine_lambda_stats(parts), whole)
        _assert_same_stats(combine_lambda_stats(*parts[::-1]), whole)
        _assert_same_stats(combine_lambda_stats(combine_lambda_stats(parts[:2]),
                                                combine_lambda_stats(parts[2:])), whole)
        if m <= 23:
            for mode in ("upper_bound", "heuristic"):
                assert lambda_from_stats(combine_lambda_stats(parts), mode) == pytest.approx(
                    lambda_from_stats(whole, mode), rel=1e-12)
    small = chunk_lambda_stats(A, 3, 2, max_col_top=10)  # per-column top-m dropped
    assert small.col_topm is None
    # fewer statistics, a looser (never tighter) bound
    assert lambda_from_stats(small, "upper_bound") >= lambda_from_stats(
        chunk_lambda_stats(A, 3, 2), "upper_bound")
    with pytest.raises(ValidationError, match="cannot merge statistics gathered for"):
        combine_lambda_stats(chunk_lambda_stats(A, 3, 2), chunk_lambda_stats(A, 2, 2))


def test_factorized_stats_without_forming_A():
    rng = np.random.default_rng(20)
    U = rng.normal(size=(9, 2))
    V = rng.normal(size=(2, 6))
    A = U @ V
    for m, q in [(1, 1), (2, 3), (1, 6), (9, 1), (4, 6)]:
        _assert_same_stats(factorized_chunk_lambda_stats(U, V, m, q, tile_rows=4),
                           chunk_lambda_stats(A, m, q))
        lean = factorized_chunk_lambda_stats(U, V, m, q, entries=False)
        assert lean.max_row_sq == pytest.approx((A ** 2).sum(1).max(), rel=1e-12)
        np.testing.assert_allclose(lean.col_sq, (A ** 2).sum(0), rtol=1e-12)
        truth = _brute_lambda(A, m, q)
        assert lambda_value_factorized(U, V, m, q, entries=False) >= truth * (1 - 1e-12)
        assert lambda_value_factorized(U, V, m, q) >= truth * (1 - 1e-12)
    assert lambda_value_factorized(U, V, 1, 6, "exact", entries=False) == pytest.approx(
        _brute_lambda(A, 1, 6), rel=1e-12)
    assert spectral_norm_sq_factorized(U, V) == pytest.approx(np.linalg.norm(A, 2) ** 2,
                                                              rel=1e-9)


def test_row_top_sums_equal_sorting_and_their_twin():
    """The heap kernel against sorting each row (and the np.partition twin): random rows,
    ties, zeros, q = 1 and q = p."""
    from ooc_kernels.families.dspdc.kernels import row_top_sums, row_top_sums_ref

    rng = np.random.default_rng(3)
    for n, p in [(1, 1), (7, 5), (40, 300), (5, 64)]:
        S = np.square(rng.normal(size=(n, p)))
        S[:, : p // 3] = np.round(S[:, : p // 3])            # ties and zeros
        for q in sorted({q for q in (1, 2, p // 7, p - 1, p) if 1 <= q <= p}):
            brute = np.sort(S, axis=1)[:, ::-1][:, :q].sum(axis=1)
            np.testing.assert_allclose(row_top_sums(S, q), brute, rtol=1e-13)
            np.testing.assert_allclose(row_top_sums_ref(S, q), brute, rtol=1e-13)
    with pytest.raises(ValidationError, match="1 <= q"):
        row_top_sums(np.ones((2, 3)), 4)


def test_lambda_stats_of_rows_whose_squares_overflow_raise_without_a_warning():
    """Entries of 1e200 square to inf: the library's error, and no numpy overflow warning
    before it (pytest turns warnings into errors)."""
    A = np.array([[1e200, 1.0], [2.0, 3.0]])
    with pytest.raises(ValidationError, match="squares that overflow"):
        chunk_lambda_stats(A, m=1, q=1)
