"""DSPDC and its two baselines of the paper's Section 6, in memory, with timed gap histories.

The experiments of Yu, Lin and Yang (``docs/specs/dspdc.md`` §6) compare DSPDC with two
methods only:

* **SPDC** (Zhang & Xiao, "Stochastic primal-dual coordinate method for regularized
  empirical risk minimization", ICML 2015 / JMLR 2017): :func:`spdc`, which is DSPDC with
  every primal coordinate updated in every iteration (``q = p``; the paper's Section 4.1:
  "SPDC is the special case q = p"), with the DSPDC step sizes of Theorem 2 at ``q = p``
  (``docs/specs/dspdc.md`` §7.5: the SPDC paper scales its dual prox without the ``1/n``; the
  parameters here are the DSPDC theorems' at ``q = p``).
* **SDCA** (Shalev-Shwartz & Zhang, "Accelerated proximal stochastic dual coordinate ascent
  for regularized loss minimization", 2013, the prox-SDCA procedure for ``l1 + l2``):
  :func:`sdca`, mini-batch with the same ``m``, keeping ``x = grad g*(-A^T y / n)``
  (:mod:`ooc_kernels.families.dspdc.in_memory.kernels_sdca`).

:func:`dspdc_solve` runs DSPDC itself (Algorithm 1 on a dense ``A``, Algorithm 2 on
factorized ``A = U V``) through the kernels of :mod:`ooc_kernels.families.dspdc.kernels`.  All three take a
dense ``A`` or anything with attributes ``U`` and ``V`` (``ok.Factorized(U, V)``), use the
losses and proxes of :mod:`ooc_kernels.families.dspdc.kernels`, and return a :class:`BaselineResult`
whose ``history`` has one entry per evaluation: ``iterations``, ``passes`` (dual coordinates
updated / ``n``), ``seconds`` (solver time only: the evaluations of ``P`` and ``D`` are not
counted, ``docs/specs/dspdc.md`` §8, pitfall 13), ``primal``, ``dual`` and ``gap``.

``P`` and ``D`` are :func:`ooc_kernels.families.dspdc.in_memory.paper.primal_value` and
:func:`~ooc_kernels.families.dspdc.in_memory.paper.dual_value` for a dense ``A`` and the streaming
terms of :mod:`ooc_kernels.families.dspdc.kernels` for factorized data (:func:`objective_values`).

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dspdc.in_memory.baselines import dspdc_solve, sdca, spdc
>>> rng = np.random.default_rng(0)
>>> A = rng.normal(size=(200, 10)); b = np.sign(A @ np.ones(10) + rng.normal(size=200))
>>> kw = dict(loss="smoothed_hinge", lam1=1e-3, lam2=1e-2, tol=1e-9, max_epochs=200)
>>> [r.history[-1]["gap"] <= 1e-9 for r in (dspdc_solve(A, b, q=5, **kw), spdc(A, b, **kw),
...                                        sdca(A, b, **kw))]
[True, True, True]
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ooc_kernels.exceptions import DivergenceError, ValidationError
from ooc_kernels.families.dspdc.lambda_stats import lambda_value, lambda_value_factorized
from ooc_kernels.families.dspdc.params import LOSSES, dspdc_parameters, loss_gamma, loss_id
from ooc_kernels.families.dspdc.in_memory.paper import dual_value, primal_value

__all__ = ["BaselineResult", "objective_values", "dspdc_solve", "spdc", "sdca"]


@dataclass
class BaselineResult:
    """The outcome of :func:`dspdc_solve`, :func:`spdc` or :func:`sdca`.

    Attributes
    ----------
    method : str
        ``"dspdc"``, ``"spdc"`` or ``"sdca"``.
    x : ndarray (p,)
        The last primal iterate.
    y : ndarray (n,)
        The last dual iterate.
    history : list of dict
        ``iterations``, ``passes``, ``seconds``, ``primal``, ``dual``, ``gap`` per evaluation
        (the first one at iteration 0).
    n_iter : int
        Iterations run.
    params : dict
        The step parameters used (``m``, ``q``, ``Lambda``, ``theta``, ``tau``, ``sigma`` for
        DSPDC and SPDC; ``m``, ``nu`` for SDCA).
    stop_reason : str
        ``"tol"``, ``"max_epochs"`` or ``"max_seconds"``.
    """

    method: str
    x: np.ndarray
    y: np.ndarray
    history: list = field(default_factory=list)
    n_iter: int = 0
    params: dict = field(default_factory=dict)
    stop_reason: str = ""


def _data(A):
    """``("dense", A, None)`` or ``("factorized", U, V)``, float64 and C-contiguous."""
    if hasattr(A, "U") and hasattr(A, "V"):
        U = np.ascontiguousarray(A.U, dtype=np.float64)
        V = np.ascontiguousarray(A.V, dtype=np.float64)
        if U.ndim != 2 or V.ndim != 2 or U.shape[1] != V.shape[0]:
            raise ValidationError(f"U must be (n, d) and V (d, p); got {U.shape} and {V.shape}")
        return "factorized", U, V
    A = np.ascontiguousarray(A, dtype=np.float64)
    if A.ndim != 2:
        raise ValidationError(f"A must be a 2-D array (n, p); got shape {A.shape}")
    return "dense", A, None


def _shape(kind, M, V):
    return (M.shape[0], M.shape[1] if kind == "dense" else V.shape[1])


def _loss_name(loss):
    lid = loss_id(loss)
    return next(k for k, v in LOSSES.items() if v == lid)


def _labels(loss, b, n):
    b = np.ascontiguousarray(b, dtype=np.float64)
    if b.shape != (n,):
        raise ValidationError(f"b must have one label per row ({n}); got shape {b.shape}")
    if loss != "squared" and not np.all(np.abs(b) == 1.0):
        raise ValidationError(f"the {loss} loss needs labels in {{-1, +1}}; got values "
                              f"{np.unique(b)[:5].tolist()}")
    if not np.all(np.isfinite(b)):
        raise ValidationError("b contains NaN or inf")
    return b


def _regularizer(lam1, lam2):
    lam1, lam2 = float(lam1), float(lam2)
    if not (lam2 > 0.0 and lam1 >= 0.0 and math.isfinite(lam1) and math.isfinite(lam2)):
        raise ValidationError(f"need lam2 > 0 (strongly convex g) and lam1 >= 0; got "
                              f"lam1={lam1!r}, lam2={lam2!r}")
    return lam1, lam2


def objective_values(A, b, x, y, *, loss, lam1, lam2):
    """``(P(x), D(y))`` of the paper's problem (``docs/specs/dspdc.md`` §1.1, 1.3).

    Parameters
    ----------
    A : array_like (n, p), or an object with attributes ``U`` (n, d) and ``V`` (d, p)
    b : array_like (n,)
    x : array_like (p,)
    y : array_like (n,)
    loss : {"squared", "smoothed_hinge", "logistic"}
    lam1, lam2 : float
        ``g_j(x) = lam2 / 2 x^2 + lam1 |x|``.

    Returns
    -------
    primal, dual : float
        ``primal - dual >= 0`` is the duality gap (``dual = -inf`` off the dual domain).

    Examples
    --------
    >>> import numpy as np
    >>> objective_values(np.eye(2), np.zeros(2), np.ones(2), np.full(2, 0.5), loss="squared",
    ...                  lam1=0.0, lam2=1.0)
    (1.5, -0.1875)
    """
    kind, M, V = _data(A)
    if kind == "dense":
        return (primal_value(M, b, x, loss=loss, lam1=lam1, lam2=lam2),
                dual_value(M, b, y, loss=loss, lam1=lam1, lam2=lam2))
    from ooc_kernels.families.dspdc.kernels_objective import (chunk_objective_terms_factorized,
                                                                objective_from_terms)

    x = np.ascontiguousarray(x, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    uty = np.zeros(V.shape[0])
    b = np.ascontiguousarray(b, dtype=np.float64)
    sum_phi, sum_conj = chunk_objective_terms_factorized(M, b, V @ x, y, loss_id(loss), uty)
    primal, dual = objective_from_terms(sum_phi, sum_conj, x, V.T @ uty, M.shape[0],
                                        float(lam1), float(lam2))
    return float(primal), float(dual)


def _monitor(method, kind, M, V, b, loss, lam1, lam2, step, x, y, *, n, m, max_epochs, tol,
             max_seconds, eval_every, params):
    """Run ``step(T)`` in blocks of ``eval_every`` epochs, evaluating ``P`` and ``D`` between
    blocks with the clock stopped."""
    data = M if kind == "dense" else _Factors(M, V)
    block = max(1, int(math.ceil(float(eval_every) * n / m)))
    total = int(math.ceil(float(max_epochs) * n / m))
    history, seconds, done = [], 0.0, 0
    step(0)                         # compiles the kernels (cached on disk) before the clock
    reason = f"max_epochs: {max_epochs} epochs"
    while True:
        with np.errstate(over="ignore", invalid="ignore"):   # a divergence is raised below
            primal, dual = objective_values(data, b, x, y, loss=loss, lam1=lam1, lam2=lam2)
        history.append({"iterations": done, "passes": done * m / n, "seconds": seconds,
                        "primal": primal, "dual": dual, "gap": primal - dual})
        if not (np.isfinite(primal) and np.all(np.isfinite(x))):
            raise DivergenceError(
                f"{method} diverged after {done} iterations: P = {primal!r}; the step "
                f"parameters {params} are too large for this data (leave theta, tau and "
                "sigma to the theorems)")
        if tol is not None and primal - dual <= tol:
            reason = f"tol: gap {primal - dual:.3g} <= {tol}"
            break
        if done >= total:
            break
        if max_seconds is not None and seconds >= max_seconds:
            reason = f"max_seconds: {seconds:.3g} s >= {max_seconds}"
            break
        t = min(block, total - done)
        start = time.perf_counter()
        step(t)
        seconds += time.perf_counter() - start
        done += t
    return BaselineResult(method=method, x=x, y=y, history=history, n_iter=done,
                          params=params, stop_reason=reason)


class _Factors:
    __slots__ = ("U", "V")

    def __init__(self, U, V):
        self.U, self.V = U, V


def _check_run(max_epochs, eval_every, tol, max_seconds):
    if not (max_epochs > 0 and eval_every > 0):
        raise ValidationError(f"max_epochs and eval_every must be > 0; got {max_epochs!r}, "
                              f"{eval_every!r}")
    if tol is not None and not tol >= 0:
        raise ValidationError(f"tol must be >= 0 or None; got {tol!r}")
    if max_seconds is not None and not max_seconds > 0:
        raise ValidationError(f"max_seconds must be > 0 or None; got {max_seconds!r}")


def _dspdc(method, A, b, *, loss, lam1, lam2, m, q, Lambda, mode, theta, tau, sigma,
           max_epochs, tol, max_seconds, eval_every, seed, full_primal):
    from ooc_kernels.families.dspdc import kernels as kern

    kind, M, V = _data(A)
    n, p = _shape(kind, M, V)
    loss = _loss_name(loss)
    lid = loss_id(loss)
    b = _labels(loss, b, n)
    lam1, lam2 = _regularizer(lam1, lam2)
    _check_run(max_epochs, eval_every, tol, max_seconds)
    m = int(m)
    q = p if q is None else int(q)
    if not (1 <= m <= n and 1 <= q <= p):
        raise ValidationError(f"need 1 <= m <= n = {n} and 1 <= q <= p = {p}; got m={m}, q={q}")
    if isinstance(Lambda, str):
        Lam = (lambda_value(M, m, q, Lambda) if kind == "dense"
               else lambda_value_factorized(M, V, m, q, Lambda))
    else:
        Lam = float(Lambda)
    prm = dspdc_parameters(n, p, m, q, Lam, lam2, loss_gamma(loss), mode=mode, theta=theta,
                           tau=tau, sigma=sigma)
    rng = np.random.default_rng(seed)
    x, y = np.zeros(p), np.zeros(n)
    if kind == "dense":
        xbar, z = np.zeros(p), np.zeros(p)
    else:
        u, v, vbar = np.zeros(V.shape[0]), np.zeros(V.shape[0]), np.zeros(V.shape[0])
    # SPDC: J = [p] every iteration; zero uniforms make Floyd's sampler return 0, 1, .., p-1
    zeros = np.zeros((0, q))

    def step(T):
        nonlocal zeros
        if full_primal:
            row_u = rng.random((T, m))
            if zeros.shape[0] < T:
                zeros = np.zeros((T, q))
            col_u = zeros[:T]
        else:
            uni = rng.random((T, m + q))     # the stream of dspdc_reference.dspdc_uniforms
            row_u, col_u = np.ascontiguousarray(uni[:, :m]), np.ascontiguousarray(uni[:, m:])
        if kind == "dense":
            kern.dspdc_dense_iterations(M, b, y, x, xbar, z, n, row_u, col_u, m, q, prm.theta,
                                        prm.tau, prm.sigma, lid, lam1, lam2)
        else:
            kern.dspdc_factorized_iterations(M, V, b, y, x, u, v, vbar, n, row_u, col_u, m, q,
                                             prm.theta, prm.tau, prm.sigma, lid, lam1, lam2)

    params = {"m": m, "q": q, "Lambda": Lam, "theta": prm.theta, "tau": prm.tau,
              "sigma": prm.sigma, "K": prm.K, "mode": prm.mode}
    return _monitor(method, kind, M, V, b, loss, lam1, lam2, step, x, y, n=n, m=m,
                    max_epochs=max_epochs, tol=tol, max_seconds=max_seconds,
                    eval_every=eval_every, params=params)


def dspdc_solve(A, b, *, loss, lam1, lam2, m=1, q=None, Lambda="upper_bound", mode="gap",
                theta=None, tau=None, sigma=None, max_epochs=50, tol=None, max_seconds=None,
                eval_every=1.0, seed=0):
    """DSPDC (Algorithm 1, or Algorithm 2 for factorized data) with a timed gap history.

    Parameters
    ----------
    A : array_like (n, p), or an object with attributes ``U`` (n, d) and ``V`` (d, p)
        ``ok.Factorized(U, V)`` runs Algorithm 2 (``O(d (m + q))`` per iteration).
    b : array_like (n,)
        Targets, or labels ``+-1`` for the margin losses.
    loss : {"squared", "smoothed_hinge", "logistic"}
    lam1, lam2 : float
        ``g_j(x) = lam2 / 2 x^2 + lam1 |x|``, ``lam2 > 0``.
    m, q : int
        Dual and primal coordinates per iteration (``q=None``: all ``p``).
    Lambda : float or {"exact", "upper_bound", "heuristic"}, default="upper_bound"
        The scale constant (:func:`~ooc_kernels.families.dspdc.lambda_stats.lambda_value`).
    mode : {"gap", "distance"}, default="gap"
        ``theta`` of Theorem 2 or Theorem 1.
    theta, tau, sigma : float or None
        Manual overrides.
    max_epochs : float, default=50
        At most ``max_epochs * n / m`` iterations (passes over the duals).
    tol : float or None, default=None
        Stop when the duality gap ``P - D`` (absolute) is at most ``tol``.
    max_seconds : float or None, default=None
        Stop after this much solver time (checked at every evaluation).
    eval_every : float, default=1.0
        Epochs between evaluations of ``P`` and ``D`` (not timed).
    seed : int or None, default=0
        Seeds ``numpy.random.default_rng``, the source of the sampled coordinates.

    Returns
    -------
    BaselineResult

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> U, V = rng.normal(size=(300, 3)), rng.normal(size=(3, 40))
    >>> b = np.sign(U @ V @ rng.normal(size=40))
    >>> class F:                                  # anything with U and V, e.g. ok.Factorized
    ...     pass
    >>> F.U, F.V = U, V
    >>> res = dspdc_solve(F, b, loss="logistic", lam1=0.0, lam2=0.05, q=4, tol=1e-6,
    ...                   max_epochs=300)
    >>> res.stop_reason[:4], sorted(res.history[0])
    ('tol:', ['dual', 'gap', 'iterations', 'passes', 'primal', 'seconds'])
    """
    return _dspdc("dspdc", A, b, loss=loss, lam1=lam1, lam2=lam2, m=m, q=q, Lambda=Lambda,
                  mode=mode, theta=theta, tau=tau, sigma=sigma, max_epochs=max_epochs,
                  tol=tol, max_seconds=max_seconds, eval_every=eval_every, seed=seed,
                  full_primal=False)


def spdc(A, b, *, loss, lam1, lam2, m=1, Lambda="upper_bound", mode="gap", theta=None,
         tau=None, sigma=None, max_epochs=50, tol=None, max_seconds=None, eval_every=1.0,
         seed=0):
    """SPDC (Zhang & Xiao 2015) as DSPDC with ``q = p``: every primal coordinate each iteration.

    The same iterations as :func:`dspdc_solve` with ``q = p``: the only ``p``-subset is
    ``[p]``, so instead of drawing it, the primal coordinates are visited in the order
    ``0 .. p-1`` (zero uniforms for Robert Floyd's sampler), and only the ``m`` row uniforms
    of each iteration come from the random stream (``default_rng(seed).random((T, m))``).
    The step parameters are those of the DSPDC theorems at ``q = p``.

    Parameters
    ----------
    A, b, loss, lam1, lam2, m, Lambda, mode, theta, tau, sigma
        As :func:`dspdc_solve`.
    max_epochs : float, default=50
        At most ``max_epochs * n / m`` iterations (passes over the duals).
    tol : float or None, default=None
        Stop when the duality gap ``P - D`` (absolute) is at most ``tol``.
    max_seconds : float or None, default=None
        Stop after this much solver time (checked at every evaluation).
    eval_every : float, default=1.0
        Epochs between evaluations of ``P`` and ``D`` (not timed).
    seed : int or None, default=0
        Seeds ``numpy.random.default_rng``, the source of the sampled coordinates.

    Returns
    -------
    BaselineResult

    Examples
    --------
    >>> import numpy as np
    >>> A = np.eye(3); b = np.array([1.0, 2.0, 3.0])
    >>> res = spdc(A, b, loss="squared", lam1=0.0, lam2=1 / 3, tol=1e-16, max_epochs=2000)
    >>> np.round(res.x, 6).tolist(), res.params["q"]            # b / (1 + n lam2)
    ([0.5, 1.0, 1.5], 3)
    """
    return _dspdc("spdc", A, b, loss=loss, lam1=lam1, lam2=lam2, m=m, q=None, Lambda=Lambda,
                  mode=mode, theta=theta, tau=tau, sigma=sigma, max_epochs=max_epochs,
                  tol=tol, max_seconds=max_seconds, eval_every=eval_every, seed=seed,
                  full_primal=True)


def sdca(A, b, *, loss, lam1, lam2, m=1, nu=None, max_epochs=50, tol=None, max_seconds=None,
         eval_every=1.0, seed=0):
    """Mini-batch proximal SDCA (Shalev-Shwartz & Zhang 2013) with a timed gap history.

    Each iteration updates ``m`` dual coordinates with the same primal ``x = grad g*(-A^T y
    / n)`` by the prox-SDCA step (Option I: the exact maximizer of the dual increase's lower
    bound) ``y_i <- argmax (1/n) <a_i, x> beta - (1/n) phi_i*(beta) - (nu ||a_i||^2 /
    (2 lam2 n^2)) (beta - y_i)^2``, i.e. the DSPDC dual step with ``sigma_i = lam2 n^2 / (nu
    ||a_i||^2)`` (closed form for the squared loss and the smoothed hinge, safeguarded Newton
    steps for the logistic loss); see :mod:`ooc_kernels.families.dspdc.in_memory.kernels_sdca`.

    Parameters
    ----------
    A, b, loss, lam1, lam2
        As :func:`dspdc_solve`.
    m : int, default=1
        Dual coordinates per iteration.
    nu : float or None, default=None
        Mini-batch safety factor of the quadratic term; None: ``m`` (every mini-batch step
        increases ``D``, by Cauchy-Schwarz ``||A_I^T dy||^2 <= m sum_i ||a_i||^2 dy_i^2``).
    max_epochs : float, default=50
        At most ``max_epochs * n / m`` iterations (passes over the duals).
    tol : float or None, default=None
        Stop when the duality gap ``P - D`` (absolute) is at most ``tol``.
    max_seconds : float or None, default=None
        Stop after this much solver time (checked at every evaluation).
    eval_every : float, default=1.0
        Epochs between evaluations of ``P`` and ``D`` (not timed).
    seed : int or None, default=0
        Seeds ``numpy.random.default_rng``, the source of the sampled coordinates.

    Returns
    -------
    BaselineResult

    Examples
    --------
    >>> import numpy as np
    >>> A = np.eye(3); b = np.array([1.0, 2.0, 3.0])
    >>> res = sdca(A, b, loss="squared", lam1=0.0, lam2=1 / 3, tol=1e-14, max_epochs=100)
    >>> np.round(res.x, 6).tolist()                              # b / (1 + n lam2)
    [0.5, 1.0, 1.5]
    """
    from ooc_kernels.families.dspdc.in_memory import kernels_sdca as kern

    kind, M, V = _data(A)
    n, p = _shape(kind, M, V)
    loss = _loss_name(loss)
    lid = loss_id(loss)
    b = _labels(loss, b, n)
    lam1, lam2 = _regularizer(lam1, lam2)
    _check_run(max_epochs, eval_every, tol, max_seconds)
    m = int(m)
    if not 1 <= m <= n:
        raise ValidationError(f"need 1 <= m <= n = {n}; got m={m}")
    nu = float(m if nu is None else nu)
    if not nu > 0:
        raise ValidationError(f"nu must be > 0; got {nu!r}")
    sq = (np.einsum("ij,ij->i", M, M) if kind == "dense"
          else np.einsum("ij,ij->i", M @ (V @ V.T), M))
    # a zero row is decoupled from x: any finite large step solves its 1-D problem
    sigmas = np.where(sq > 0.0, lam2 * float(n) ** 2 / (nu * np.where(sq > 0.0, sq, 1.0)),
                      1e300)
    sigmas = np.minimum(sigmas, 1e300)
    rng = np.random.default_rng(seed)
    x, y = np.zeros(p), np.zeros(n)
    if kind == "dense":
        w = np.zeros(p)
    else:
        u, v = np.zeros(V.shape[0]), np.zeros(V.shape[0])

    def step(T):
        row_u = rng.random((T, m))
        if kind == "dense":
            kern.sdca_dense_iterations(M, b, y, x, w, n, row_u, m, lid, lam1, lam2, sigmas)
        else:
            kern.sdca_factorized_iterations(M, V, b, y, x, u, v, n, row_u, m, lid, lam1, lam2,
                                            sigmas)

    return _monitor("sdca", kind, M, V, b, loss, lam1, lam2, step, x, y, n=n, m=m,
                    max_epochs=max_epochs, tol=tol, max_seconds=max_seconds,
                    eval_every=eval_every, params={"m": m, "nu": nu})
