"""DSPDC parameters: the losses, the regularizer, step sizes, extrapolation and rates.

``docs/specs/dspdc.md`` §2.2, 2.3, 5.2 and 7.1.  With ``Lambda >= Lambda_{q,m} = max over |I| = m,
|J| = q of ||A_I^J||_2^2`` the parameters of Theorem 1 ("distance") or Theorem 2 ("gap") are

* ``r_n = n/m``, ``r_p = p/q``, ``s = (n p / (m q)) sqrt(Lambda / (n lam gamma))`` (the square
  root placed as in the paper's proofs, **not** as printed in (14)/(18): see
  :func:`rate_constant`), ``S = sqrt((r_n - r_p)^2 + 4 s^2)``, ``K = max(r_n, r_p) + s``;
* ``tau = (p / (q lam)) / ((r_n - r_p) + S)`` (15),
  ``sigma = (n^2 / (m gamma)) / ((r_p - r_n) + S)`` (16), so that
  ``tau sigma = n m q / (4 p Lambda)``;
* ``theta = r_p (1 - 1/K)`` (14, distance, rate ``1 - 1/K``) or ``r_p (1 - 1/(2K))``
  (18, gap, rate ``1 - 1/(2K)``).

``Lambda`` is computed in one pass over chunks of rows by
:mod:`ooc_kernels.families.dspdc.lambda_stats`.

Examples
--------
>>> from ooc_kernels.families.dspdc.params import dspdc_parameters
>>> prm = dspdc_parameters(3, 2, 1, 1, 9.0, lam=0.1, gamma=1.0, mode="gap")
>>> round(prm.tau * prm.sigma, 12) == round(3 * 1 * 1 / (4 * 2 * 9.0), 12)
True
>>> round(prm.K, 4), round(prm.theta, 4)
(35.8634, 1.9721)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ooc_kernels.exceptions import ValidationError
from ooc_kernels.losses import get_loss, loss_by_id, losses_for

__all__ = [
    "LOSSES", "LOSS_GAMMA", "loss_id", "loss_gamma", "regularizer_weights",
    "DSPDCParameters", "dspdc_parameters", "rate_constant",
    "gap_constant", "gap_bound",
]

#: DSPDC loss names and their ids in the loss table (:mod:`ooc_kernels.losses`).
LOSSES = {name: get_loss(name).loss_id for name in losses_for("dspdc")}
#: ``gamma`` per loss name: ``phi`` is ``1/gamma``-smooth (logistic is 1/4-smooth).
LOSS_GAMMA = {name: get_loss(name).gamma for name in LOSSES}


def loss_id(loss) -> int:
    """The loss-table id of a DSPDC loss given by name or id.

    Parameters
    ----------
    loss : str or int
        A name of :data:`LOSSES` (``"squared"``, ``"logistic"``, ``"smoothed_hinge"``) or
        its id.

    Returns
    -------
    int

    Raises
    ------
    ValidationError
        A loss that DSPDC does not offer.

    Examples
    --------
    >>> loss_id("logistic"), loss_id("smoothed_hinge"), loss_id(0)
    (2, 4, 0)
    """
    if isinstance(loss, str):
        if loss not in LOSSES:
            raise ValidationError(f"unknown DSPDC loss {loss!r}; valid names are "
                                  f"{sorted(LOSSES)}")
        return LOSSES[loss]
    # LOSSES.values(): the three loss ids of a small dict, no data
    if isinstance(loss, (int, np.integer)) and not isinstance(loss, bool) and \
            int(loss) in LOSSES.values():
        return int(loss)
    raise ValidationError(f"unknown DSPDC loss {loss!r}; pass a name in {sorted(LOSSES)} "
                          f"or an id in {sorted(LOSSES.values())}")


def loss_gamma(loss) -> float:
    """``gamma`` of a loss (by name or id): ``phi*`` is ``gamma``-strongly convex.

    Parameters
    ----------
    loss : str or int

    Returns
    -------
    float

    Examples
    --------
    >>> loss_gamma("squared"), loss_gamma(2)
    (1.0, 4.0)
    """
    return loss_by_id(loss_id(loss)).gamma


def regularizer_weights(alpha, l1_ratio=0.0):
    """``(lam1, lam2)`` of ``g_j(x) = alpha (l1_ratio |x| + (1 - l1_ratio) x^2 / 2)``.

    This is scikit-learn's ElasticNet parameterisation: ``lam1 = alpha l1_ratio`` and
    ``lam2 = alpha (1 - l1_ratio)``; DSPDC needs ``g`` strongly convex, ``lam2 > 0``.

    Parameters
    ----------
    alpha : float
        Overall regularization strength, ``> 0``.
    l1_ratio : float
        In ``[0, 1)``.

    Returns
    -------
    lam1, lam2 : float

    Raises
    ------
    ValidationError
        When ``lam2 <= 0`` (``alpha <= 0`` or ``l1_ratio >= 1``) or a value is not finite.

    Examples
    --------
    >>> regularizer_weights(0.1, 0.5)
    (0.05, 0.05)
    """
    try:
        alpha_f = float(alpha)
        ratio = float(l1_ratio)
    except (TypeError, ValueError):
        raise ValidationError(f"alpha and l1_ratio must be real numbers; got alpha={alpha!r}, "
                              f"l1_ratio={l1_ratio!r}") from None
    if not (math.isfinite(alpha_f) and math.isfinite(ratio)):
        raise ValidationError(f"alpha and l1_ratio must be finite; got alpha={alpha!r}, "
                              f"l1_ratio={l1_ratio!r}")
    if not 0.0 <= ratio <= 1.0:
        raise ValidationError(f"l1_ratio must lie in [0, 1); got {l1_ratio!r}")
    lam1 = alpha_f * ratio
    lam2 = alpha_f * (1.0 - ratio)
    if not lam2 > 0.0:
        raise ValidationError(
            f"DSPDC needs a strongly convex regularizer: lam2 = alpha * (1 - l1_ratio) = "
            f"{lam2!r} (alpha={alpha!r}, l1_ratio={l1_ratio!r}) must be > 0; use alpha > 0 "
            "and l1_ratio < 1 (a pure lasso, l1_ratio = 1, is not supported)")
    if lam1 < 0.0:
        raise ValidationError(f"alpha must be > 0; got {alpha!r}")
    return lam1, lam2


# --------------------------------------------------------------------------------------
# argument checks
# --------------------------------------------------------------------------------------

def _as_int(name, value, lo, hi=None):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValidationError(f"{name} must be an integer; got {value!r}")
    value = int(value)
    if value < lo or (hi is not None and value > hi):
        rng = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise ValidationError(f"{name} must be in {rng}; got {value}")
    return value


def _positive(name, value, *, allow_zero=False):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValidationError(f"{name} must be a real number; got {value!r}") from None
    if not math.isfinite(v) or v < 0.0 or (v == 0.0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValidationError(f"{name} must be finite and {bound}; got {value!r}")
    return v


# --------------------------------------------------------------------------------------
# step sizes, extrapolation and rates
# --------------------------------------------------------------------------------------

def _sizes(n, p, m, q):
    n = _as_int("n", n, 1)
    p = _as_int("p", p, 1)
    m = _as_int("m", m, 1, n)
    q = _as_int("q", q, 1, p)
    return n, p, m, q


def rate_constant(n, p, m, q, Lambda, lam, gamma, *, reading="corrected"):
    """``K = max(n/m, p/q) + s``; the rates are ``1 - 1/K`` (Theorem 1) and ``1 - 1/(2K)``.

    Parameters
    ----------
    n, p, m, q : int
    Lambda, lam, gamma : float
        ``Lambda >= Lambda_{q,m}``, strong convexity of ``g`` and of ``phi*``.
    reading : {"corrected", "literal"}
        ``"corrected"`` (used everywhere): ``s = (n p/(m q)) sqrt(Lambda/(n lam gamma))``,
        the form of the proofs (59)-(61), of (15)-(16), of the special cases and of
        Tables 1-2.  ``"literal"``: ``s = sqrt(Lambda/(lam gamma n) n p/(m q))`` as printed
        in (14), (18) and Theorems 1-2; it is smaller by ``sqrt(n p/(m q))`` and
        promises rates the method does not reach (``tests/test_dspdc_math.py``).

    Returns
    -------
    float

    Examples
    --------
    >>> rate_constant(4, 2, 1, 1, 1.0, 1.0, 1.0), rate_constant(4, 2, 1, 1, 1.0, 1.0, 1.0,
    ...                                                            reading="literal")
    (8.0, 5.414213562373095)
    """
    n, p, m, q = _sizes(n, p, m, q)
    Lambda = _positive("Lambda", Lambda)
    lam = _positive("lam", lam)
    gamma = _positive("gamma", gamma)
    if reading == "corrected":
        s = (n * p) / (m * q) * math.sqrt(Lambda / (n * lam * gamma))
    elif reading == "literal":
        s = math.sqrt(Lambda / (lam * gamma * n) * (n * p) / (m * q))
    else:
        raise ValidationError(f"reading must be 'corrected' or 'literal'; got {reading!r}")
    return max(n / m, p / q) + s


@dataclass(frozen=True)
class DSPDCParameters:
    """Parameters of DSPDC and their theoretical rates (see :func:`dspdc_parameters`).

    Attributes
    ----------
    n, p, m, q : int
    Lambda, lam, gamma : float
    mode : str
        ``"gap"`` (Theorem 2) or ``"distance"`` (Theorem 1).
    theta, tau, sigma : float
        The parameters to run with (overrides included).
    K : float
        ``max(n/m, p/q) + s``.
    s : float
        ``(n p/(m q)) sqrt(Lambda/(n lam gamma))``.
    rho : float
        The contraction of the chosen mode: ``1 - 1/K`` or ``1 - 1/(2K)``.
    rho_distance, rho_gap : float
        Both contractions.
    overridden : tuple of str
        Names of the parameters given by the caller (the theorems then no longer apply).
    """

    n: int
    p: int
    m: int
    q: int
    Lambda: float
    lam: float
    gamma: float
    mode: str
    theta: float
    tau: float
    sigma: float
    K: float
    s: float
    rho: float
    rho_distance: float
    rho_gap: float
    overridden: tuple = ()

    def iteration_count(self, eps, constant=1.0):
        """Smallest ``t`` with ``rho^t * constant <= eps`` (about ``K log(constant / eps)``,
        ``2 K`` in gap mode).

        Parameters
        ----------
        eps : float
            Target (distance or gap), ``> 0``.
        constant : float
            The bound at ``t = 0`` (e.g. ``gap_constant * Delta_0`` for the gap).

        Returns
        -------
        int

        Examples
        --------
        >>> dspdc_parameters(2, 2, 2, 2, 1.0, 1.0, 1.0).iteration_count(1e-6)   # rho = 0.7071
        40
        """
        eps = _positive("eps", eps)
        constant = _positive("constant", constant)
        if constant <= eps:
            return 0
        return int(math.ceil(math.log(constant / eps) / -math.log(self.rho)))


def dspdc_parameters(n, p, m, q, Lambda, lam, gamma, mode="gap", theta=None, tau=None,
                     sigma=None):
    """``(theta, tau, sigma)`` of Theorem 1 or 2 with the corrected square root.

    Parameters
    ----------
    n, p : int
        Samples (dual coordinates) and features (primal coordinates).
    m, q : int
        Dual and primal coordinates sampled per iteration.
    Lambda : float
        ``>= Lambda_{q,m}`` for the theorems (see :func:`lambda_from_stats`).
    lam : float
        Strong convexity of every ``g_j`` (``lam2``).
    gamma : float
        Strong convexity of every ``phi_i*`` (:func:`loss_gamma`).
    mode : {"gap", "distance"}
        ``theta`` from (18) (rate ``1 - 1/(2K)`` of the gap) or (14) (rate ``1 - 1/K`` of
        the distance to the saddle point).
    theta, tau, sigma : float, optional
        Manual overrides (``tau, sigma > 0``, ``theta >= 0``).

    Returns
    -------
    DSPDCParameters

    Examples
    --------
    >>> prm = dspdc_parameters(100, 10, 10, 1, 4.0, 0.1, 1.0, mode="distance")
    >>> round(prm.tau, 6), round(prm.sigma, 6)                       # (17): q/p = m/n
    (0.790569, 7.905694)
    """
    n, p, m, q = _sizes(n, p, m, q)
    Lambda = _positive("Lambda", Lambda)
    lam = _positive("lam", lam)
    gamma = _positive("gamma", gamma)
    if mode not in ("gap", "distance"):
        raise ValidationError(f"mode must be 'gap' or 'distance'; got {mode!r}")
    rn, rp = n / m, p / q
    s = (n * p) / (m * q) * math.sqrt(Lambda / (n * lam * gamma))
    S = math.sqrt((rn - rp) ** 2 + 4.0 * s * s)
    K = max(rn, rp) + s
    # (15), (16); both denominators are > 0 since S > |rn - rp|.  The forms below avoid the
    # cancellation of (rn - rp) + S when rn - rp << 0 (multiply by the conjugate).
    den_tau = (rn - rp) + S if rn >= rp else 4.0 * s * s / (S - (rn - rp))
    den_sigma = (rp - rn) + S if rp >= rn else 4.0 * s * s / (S - (rp - rn))
    tau_v = (p / (q * lam)) / den_tau
    sigma_v = (n * n / (m * gamma)) / den_sigma
    theta_v = rp * (1.0 - 1.0 / K) if mode == "distance" else rp * (1.0 - 1.0 / (2.0 * K))
    overridden = []
    if theta is not None:
        theta_v = _positive("theta", theta, allow_zero=True)
        overridden.append("theta")
    if tau is not None:
        tau_v = _positive("tau", tau)
        overridden.append("tau")
    if sigma is not None:
        sigma_v = _positive("sigma", sigma)
        overridden.append("sigma")
    rho_d = 1.0 - 1.0 / K
    rho_g = 1.0 - 1.0 / (2.0 * K)
    return DSPDCParameters(n, p, m, q, Lambda, lam, gamma, mode, theta_v, tau_v, sigma_v, K, s,
                           rho_d if mode == "distance" else rho_g, rho_d, rho_g,
                           tuple(overridden))


def gap_constant(n, p, m, q, lam, gamma, spectral_norm_sq):
    """``C_gap`` of Theorem 2.

    ``1 / min(p/q, n/m) + max(||A||^2/(n gamma), ||A||^2/(lam n^2)) / min(lam p/q, gamma/m)``.

    Parameters
    ----------
    n, p, m, q : int
    lam, gamma : float
    spectral_norm_sq : float
        ``||A||_2^2``.

    Returns
    -------
    float

    Examples
    --------
    >>> gap_constant(4, 2, 1, 1, 1.0, 1.0, 8.0)           # 1/2 + max(2, 0.5) / min(2, 1)
    2.5
    """
    n, p, m, q = _sizes(n, p, m, q)
    lam = _positive("lam", lam)
    gamma = _positive("gamma", gamma)
    a2 = _positive("spectral_norm_sq", spectral_norm_sq, allow_zero=True)
    return 1.0 / min(p / q, n / m) + max(a2 / (n * gamma), a2 / (lam * n * n)) / min(
        lam * p / q, gamma / m)


def gap_bound(params, t, spectral_norm_sq, x_dist0_sq, y_dist0_sq, gap0):
    """The right-hand side of Theorem 2, ``rho_gap^t C_gap Delta_0``.

    ``Delta_0 = (p/(2 q tau) + p lam/(2 q)) ||x0 - x*||^2 + (n/(2 m sigma) + gamma/(2 m))
    ||y0 - y*||^2 + max(p/q, n/m) (P(x0) - D(y0))``.

    Parameters
    ----------
    params : DSPDCParameters
    t : int or array_like
        Iteration count(s).
    spectral_norm_sq : float
    x_dist0_sq, y_dist0_sq : float
        ``||x0 - x*||^2`` and ``||y0 - y*||^2``.
    gap0 : float
        ``P(x0) - D(y0)``.

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> prm = dspdc_parameters(4, 2, 1, 1, 1.0, 1.0, 1.0)
    >>> float(gap_bound(prm, 0, 8.0, 0.0, 0.0, 1.0))      # C_gap * max(2, 4) * gap0
    10.0
    """
    P = params
    delta0 = ((P.p / (2 * P.q * P.tau) + P.p * P.lam / (2 * P.q)) * x_dist0_sq
              + (P.n / (2 * P.m * P.sigma) + P.gamma / (2 * P.m)) * y_dist0_sq
              + max(P.p / P.q, P.n / P.m) * gap0)
    C = gap_constant(P.n, P.p, P.m, P.q, P.lam, P.gamma, spectral_norm_sq)
    return P.rho_gap ** np.asarray(t, dtype=np.float64) * C * delta0

