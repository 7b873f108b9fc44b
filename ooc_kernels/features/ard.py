"""Automatic relevance determination: one Gaussian kernel width per input dimension.

An isotropic kernel ``exp(-||x - x'||^2 / (2 sigma^2))`` weighs every input alike, and
spends its capacity on inputs that carry no signal.  With one width per input,
``exp(-sum_i (x_i - x'_i)^2 / (2 s_i^2))``, an irrelevant input gets a large ``s_i`` and
drops out of the kernel (MacKay 1994; Neal 1996; Rasmussen & Williams 2006, section 5.1).

:func:`ard_scales` chooses the widths ``s`` on a sample of rows by gradient descent on a
held-out error, the criterion of Bengio (2000) and of gradient-based hyperparameter
selection for kernel ridge regression (Chapelle, Vapnik, Bousquet & Mukherjee 2002):

1. the rows are split into a fitting part (2/3) and a validation part (1/3);
2. ``n_components`` Gaussian random features ``z(x) = sqrt(2 / D) cos((x / s) @ Omega + b)``
   (Rahimi & Recht 2007; ``Omega``, ``b`` fixed for the whole search, so the criterion is a
   smooth deterministic function of ``s``) feed a weighted ridge regression fitted on the
   first part, ``beta = (Z^T D Z / W + lam I)^-1 Z^T D T / W``;
3. the criterion is its weighted mean squared error on the validation part (targets: the
   standardized regression target, or +-1 per class); its gradient with respect to
   ``log s`` and ``log lam`` is exact (:func:`validation_error`), and ``steps`` Adam steps
   (Kingma & Ba 2015) move the log-widths from the best isotropic start.

Cost: about 50 evaluations of the criterion, each a few ``n x D`` cosines and an
``n x D x D`` product, independent of the data set's size; the search computes the
cosines, the sines and their products in float32, of phases reduced to ``[-pi, pi]`` in
float64 (:class:`_Float32Criterion`; a third less CPU time than float64 products).

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.features.ard import ard_scales
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(600, 4))
>>> t = np.sin(2 * X[:, :1])                      # only input 0 matters
>>> s = ard_scales(X, t, np.ones(600), start=2.0, seed=0)
>>> bool(s[1:].min() > 5 * s[0])                  # inputs 1-3 switched off
True
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels._threads import map_in_order
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.features.rbf import MAX_BANDWIDTH, MIN_BANDWIDTH

__all__ = ["ARD_COMPONENTS", "ARD_STEPS", "ARD_LEARNING_RATE", "ARD_MAX_RATIO",
           "ARD_MIN_GAIN", "LOO_MULTIPLES", "ard_scales", "validation_error", "grid_errors",
           "loo_score", "loo_at", "solve_spd",
           "check_bandwidth_vector"]

#: Random features of the ridge model that scores a choice of widths.
ARD_COMPONENTS = 256
#: Adam steps on the log-widths.
ARD_STEPS = 40
#: Adam's step on the log-widths (a width changes by at most about 16% per step).
ARD_LEARNING_RATE = 0.15
#: No width leaves ``[start / ARD_MAX_RATIO, start * ARD_MAX_RATIO]``: an input at the upper
#: end adds at most ``1 / (2 * ARD_MAX_RATIO^2)`` (per unit of squared distance) to the
#: kernel's exponent, which is switched off for standardized inputs.
ARD_MAX_RATIO = 1000.0
#: A step counts as progress (for ``patience``) when it lowers the best error by more than
#: this fraction.
ARD_MIN_GAIN = 1e-3
#: Multiples of the median pairwise distance :func:`loo_score` tries.
LOO_MULTIPLES = (0.25, 0.5, 1.0, 2.0)


def check_bandwidth_vector(bandwidth, n_features_in: int) -> np.ndarray:
    """A per-input bandwidth as a float64 vector of shape ``(n_features_in,)``, or a
    :class:`~ooc_kernels.exceptions.ValidationError` naming what is wrong.

    Examples
    --------
    >>> check_bandwidth_vector([1, 2.5], 2).tolist()
    [1.0, 2.5]
    >>> check_bandwidth_vector([1.0, -2.0], 2)
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.ValidationError: bandwidth[1] = -2.0 is not a positive finite number; every per-input bandwidth must be > 0 and finite (a width of the kernel in that input's units), within [1e-30, 1e+30].
    """
    try:
        s = np.asarray(bandwidth, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValidationError(
            f"bandwidth={bandwidth!r} is neither a number, 'auto', 'ard', 'median' nor an "
            f"array of {n_features_in} positive numbers (one per input)."
        ) from None
    if s.ndim != 1 or s.shape[0] != n_features_in:
        raise ValidationError(
            f"bandwidth has shape {s.shape}, the data has {n_features_in} input features; "
            f"pass one positive width per input, shape ({n_features_in},), or a number."
        )
    bad = np.flatnonzero(~((s >= MIN_BANDWIDTH) & (s <= MAX_BANDWIDTH)))
    if len(bad):
        i = int(bad[0])
        raise ValidationError(
            f"bandwidth[{i}] = {float(s[i])!r} is not a positive finite number; every per-input "
            "bandwidth must be > 0 and finite (a width of the kernel in that input's units), "
            f"within [{MIN_BANDWIDTH:g}, {MAX_BANDWIDTH:g}]."
        )
    return s


def _features(X, log_s, omega, phase, fast_trig=False):
    """``(Z, S, Xs)``: the random features, the matching sines, the rescaled rows.

    ``fast_trig``: the cosines and sines in float32 of the phases reduced to ``[-pi, pi]``
    in float64 (absolute error about 1e-7; NumPy's float32 cosine is vectorized, 20 to 30
    times faster than its float64 one on this project's machines); the features are then
    float64 again."""
    Xs = X / np.exp(log_s)
    U = Xs @ omega + phase
    c = np.sqrt(2.0 / omega.shape[1])
    if not fast_trig:
        return c * np.cos(U), c * np.sin(U), Xs
    turns = np.rint(U * (1.0 / _TWO_PI))
    turns *= _TWO_PI
    U -= turns
    U = U.astype(np.float32)
    return (np.multiply(np.cos(U), c, dtype=np.float64),
            np.multiply(np.sin(U), c, dtype=np.float64), Xs)


_TWO_PI = 2.0 * np.pi


def grid_errors(log_widths, log_lams, parts, omega, phase, *, fast_trig=False,
                float32=False, threads: int | None = 1) -> np.ndarray:
    """:func:`validation_error` without gradient at every pair of an isotropic log-width of
    ``log_widths`` and a log-ridge of ``log_lams``, shape ``(len(log_widths),
    len(log_lams))``: the
    features and ``Z^T D Z`` once per width, one Cholesky factorization per pair (the same
    operations as :func:`validation_error`, with ``fast_trig`` or ``float32`` as there, so
    the same values).  The widths are shared by
    up to ``threads`` threads (None: the enclosing
    :func:`~ooc_kernels._threads.kernel_threads` block's count; the same values on any
    thread count).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> X, T = rng.normal(size=(40, 2)), rng.normal(size=(40, 1))
    >>> parts = (X[:30], T[:30], np.ones(30), X[30:], T[30:], np.ones(10))
    >>> omega, phase = rng.normal(size=(2, 16)), rng.uniform(0, 6.28, 16)
    >>> E = grid_errors([0.0, 1.0], [-2.0, -3.0], parts, omega, phase)
    >>> E.shape, bool(E[1, 0] == validation_error(np.ones(2), -2.0, parts, omega, phase,
    ...                                            gradient=False))
    ((2, 2), True)
    """
    import threading

    Xf, Tf, wf, Xv, Tv, wv = parts
    Wf, Wv = float(wf.sum()), float(wv.sum())
    d = Xf.shape[1]
    own = threading.local()

    def row(log_width):
        log_s = np.full(d, float(log_width))
        if float32:  # arrays of its own on each thread
            criterion = getattr(own, "criterion", None)
            if criterion is None:
                criterion = own.criterion = _Float32Criterion(parts, omega, phase)
            criterion.prepare(log_s)
            return [criterion.error(criterion.solve(log_lam))[0] for log_lam in log_lams]
        Zf, _, _ = _features(Xf, log_s, omega, phase, fast_trig)
        Zv, _, _ = _features(Xv, log_s, omega, phase, fast_trig)
        gram, right = _normal_equations(Zf, Tf, wf, Wf)
        out = []
        for log_lam in log_lams:
            beta = cho_solve(_factor(gram, float(np.exp(log_lam))), right)
            out.append(float(np.sum(wv[:, None] * (Zv @ beta - Tv) ** 2)) / Wv)
        return out

    return np.array(map_in_order(row, log_widths, threads), dtype=np.float64).reshape(
        len(log_widths), len(log_lams))


def _normal_equations(Zf, Tf, wf, Wf):
    """``(Z^T D Z / W, Z^T D T / W)`` of the fitting rows, the first as its upper triangle
    (one symmetric rank-k update: half a general product)."""
    from scipy.linalg import blas

    gram = blas.dsyrk(1.0 / Wf, (np.sqrt(wf)[:, None] * Zf).T, trans=0, lower=0)
    return gram, Zf.T @ (wf[:, None] * Tf) / Wf


def _factor(gram, lam):
    """The Cholesky factor of ``gram + lam I`` (``gram``'s upper triangle is read)."""
    A = gram.copy()
    A[np.diag_indices_from(A)] += lam
    return cho_factor(A, lower=False)


def validation_error(log_s, log_lam, parts, omega, phase, *, gradient=True,
                     fast_trig=False, float32=False):
    """Weighted validation mean squared error of random-feature ridge regression, and its
    gradient with respect to ``log_s`` (shape ``(d,)``) and ``log_lam``.

    Parameters
    ----------
    log_s : ndarray of shape (d,)
        Log-widths.
    log_lam : float
        Log of the ridge ``lam``.
    parts : tuple
        ``(X_fit, T_fit, w_fit, X_val, T_val, w_val)``; ``T`` of shape ``(n, c)``.
    omega : ndarray of shape (d, D)
        Standard normal frequencies.
    phase : ndarray of shape (D,)
        Phases, uniform on ``[0, 2 pi)``.
    gradient : bool
        Whether to return the gradient.
    fast_trig : bool
        Cosines and sines in float32 of the reduced phases (:func:`_features`); the
        error and gradient then agree with the float64 ones to about 1e-6 relative.
    float32 : bool
        The same cosines and sines, and every product of the features (``Z^T D Z``,
        ``Z^T D T``, the predictions and the gradient's) in float32; the phases, the
        factorization and the solves in float64 (:class:`_Float32Criterion`): the search's
        setting.  The error then agrees with the float64 one to about 1e-6 relative, the
        gradient to about 1e-5 of its largest entry.

    Returns
    -------
    error : float
    grad_s : ndarray of shape (d,) (with ``gradient``)
    grad_lam : float (with ``gradient``)

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> X, T = rng.normal(size=(40, 2)), rng.normal(size=(40, 1))
    >>> parts = (X[:30], T[:30], np.ones(30), X[30:], T[30:], np.ones(10))
    >>> omega, phase = rng.normal(size=(2, 16)), rng.uniform(0, 6.28, 16)
    >>> e, gs, gl = validation_error(np.zeros(2), -3.0, parts, omega, phase)
    >>> gs.shape
    (2,)
    """
    if float32:
        return _Float32Criterion(parts, omega, phase)(log_s, log_lam, gradient=gradient)
    Xf, Tf, wf, Xv, Tv, wv = parts
    lam = float(np.exp(log_lam))
    Wf, Wv = float(wf.sum()), float(wv.sum())
    Zf, Sf, Xsf = _features(Xf, log_s, omega, phase, fast_trig)
    Zv, Sv, Xsv = _features(Xv, log_s, omega, phase, fast_trig)
    gram, right = _normal_equations(Zf, Tf, wf, Wf)
    factor = _factor(gram, lam)

    def solve(B):
        return cho_solve(factor, B)

    beta = solve(right)
    R = Zv @ beta - Tv
    error = float(np.sum(wv[:, None] * R ** 2)) / Wv
    if not gradient:
        return error
    DR = wv[:, None] * R
    G_v = 2.0 * DR @ beta.T / Wv                                   # dE / dZ_val
    q = solve(2.0 * Zv.T @ DR / Wv)                                 # A^-1 dE / dbeta
    G_f = wf[:, None] * ((Tf - Zf @ beta) @ q.T - (Zf @ q) @ beta.T) / Wf
    # dZ / dlog s_i = sin(U) * (x_i / s_i) * omega_i (the cosine's sign and the chain rule)
    grad_s = np.sum(Xsf * ((G_f * Sf) @ omega.T), axis=0) \
        + np.sum(Xsv * ((G_v * Sv) @ omega.T), axis=0)
    grad_lam = -lam * float(np.sum(q * beta))
    return error, grad_s, grad_lam


class _Float32Criterion:
    """:func:`validation_error` with ``float32=True`` on fixed ``parts``, ``omega`` and
    ``phase``, called as ``criterion(log_s, log_lam, gradient=True)``.

    Every array of an evaluation that grows with the rows is allocated once, in
    :meth:`__init__` (or at the first gradient), and written in place, so that the
    search's 30 evaluations allocate nothing of that size: arrays of a few hundred
    kilobytes to 1.4 MB (1,000 rows, 256 features) may be mapped from the system afresh
    at every allocation (evaluated alone, with fresh arrays, 1,400 page faults and 2.4
    CPU ms of system time per evaluation).  The phases ``(x / s) @ Omega + b`` are
    computed and reduced to ``[-pi, pi]`` in float64, the cosines, sines and every
    product of them in float32, ``Z^T D Z`` (one symmetric rank-k update) and ``Z^T D T``
    then in float64 for the factorization and the solves.  Not for use by two threads at
    once.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> X, T = rng.normal(size=(40, 2)), rng.normal(size=(40, 1))
    >>> parts = (X[:30], T[:30], np.ones(30), X[30:], T[30:], np.ones(10))
    >>> omega, phase = rng.normal(size=(2, 16)), rng.uniform(0, 6.28, 16)
    >>> criterion = _Float32Criterion(parts, omega, phase)
    >>> e, gs, gl = criterion(np.zeros(2), -3.0)
    >>> bool(abs(e - validation_error(np.zeros(2), -3.0, parts, omega, phase,
    ...                               gradient=False)) < 1e-6 * e)
    True
    """

    def __init__(self, parts, omega, phase):
        Xf, Tf, wf, Xv, Tv, wv = parts
        self.Wf, self.Wv = float(wf.sum()), float(wv.sum())
        self.Xf, self.Xv, self.Tv, self.wv = Xf, Xv, Tv, wv
        self.omega, self.phase = omega, phase
        self.omega_t = np.ascontiguousarray(omega.T, dtype=np.float32)
        self.scale = np.float32(np.sqrt(2.0 / omega.shape[1]))
        self.root_f = np.sqrt(wf).astype(np.float32)[:, None]
        self.root_f64 = np.sqrt(wf)[:, None]
        self.wT_f = (wf[:, None] * Tf).astype(np.float32)
        self.T_f = Tf.astype(np.float32)
        self.w_f = (wf / self.Wf).astype(np.float32)[:, None]
        d, D = omega.shape
        # the phases of both parts in turn: one float64 array and one for their turns
        n = max(len(Xf), len(Xv))
        self.U, self.turns = np.empty((n, D)), np.empty((n, D))
        self.f, self.v = (self._arrays(len(X), d, D) for X in (Xf, Xv))
        # the rank-k update writes the upper triangle only: the lower one stays 0
        self.gram32 = np.zeros((D, D), dtype=np.float32, order="F")
        self.gram = np.empty((D, D), order="F")
        self.A = np.empty((D, D), order="F")
        self.diagonal = np.diag_indices(D)
        self.right = self.factor = self.exact_gram = None

    @staticmethod
    def _arrays(n, d, D):
        """A part's arrays; those only the gradient needs are allocated at its first."""
        from types import SimpleNamespace

        f32 = np.float32
        return SimpleNamespace(n=n, Xs=np.empty((n, d)), U32=np.empty((n, D), f32),
                               Z=np.empty((n, D), f32), H=np.empty((n, D), f32),
                               S=None, Xs32=None, G=None, P=None)

    def _features(self, X, log_s, a, sines):
        np.divide(X, np.exp(log_s), out=a.Xs)
        U, turns = self.U[:a.n], self.turns[:a.n]
        np.matmul(a.Xs, self.omega, out=U)
        U += self.phase
        np.multiply(U, 1.0 / _TWO_PI, out=turns)
        np.rint(turns, out=turns)
        turns *= _TWO_PI
        U -= turns
        a.U32[...] = U
        np.cos(a.U32, out=a.Z)
        a.Z *= self.scale
        if not sines:
            return
        if a.S is None:
            a.S, a.G = np.empty_like(a.Z), np.empty_like(a.Z)
            a.Xs32, a.P = np.empty(a.Xs.shape, np.float32), np.empty(a.Xs.shape, np.float32)
        np.sin(a.U32, out=a.S)
        a.S *= self.scale
        a.Xs32[...] = a.Xs

    def prepare(self, log_s, sines=False):
        """The features at the log-widths ``log_s`` (and their sines, for the gradient) and
        the normal equations' matrix and right-hand side (the upper triangle of
        ``Z^T D Z / W``, and ``Z^T D T / W``)."""
        from scipy.linalg import blas

        self._features(self.Xf, log_s, self.f, sines)
        self._features(self.Xv, log_s, self.v, sines)
        np.multiply(self.f.Z, self.root_f, out=self.f.H)
        gram = blas.ssyrk(1.0 / self.Wf, self.f.H.T, beta=0.0, c=self.gram32, trans=0,
                          lower=0, overwrite_c=1)
        self.gram[...] = gram
        self.exact_gram = None
        self.right = (self.f.Z.T @ self.wT_f).astype(np.float64) / self.Wf

    def solve(self, log_lam):
        """``beta`` at the ridge ``exp(log_lam)`` (the factor is kept for the gradient).

        The float32 rank-k update is the Gram matrix of the features to about 1e-7 of its
        largest eigenvalue, so with a ridge below that a nearly singular ``Z^T D Z`` can
        come out indefinite; the factorization then uses ``Z^T D Z`` formed in float64
        from the same features (positive semidefinite, as with float64 products), the
        same choice whichever ridges were solved before."""
        from scipy.linalg import blas, lapack

        lam = float(np.exp(log_lam))
        for gram in (self.gram, None):
            if gram is None:
                if self.exact_gram is None:
                    Z = self.f.Z.astype(np.float64)
                    Z *= self.root_f64
                    self.exact_gram = blas.dsyrk(1.0 / self.Wf, Z.T, trans=0, lower=0)
                gram = self.exact_gram
            self.A[...] = gram
            self.A[self.diagonal] += lam
            factor, info = lapack.dpotrf(self.A, lower=0, clean=0, overwrite_a=1)
            if info == 0:
                self.factor = factor
                return self._solve(self.right)
        raise np.linalg.LinAlgError(
            f"{info}-th leading minor of the ridge's normal equations is not positive "
            "definite")

    def _solve(self, B):
        from scipy.linalg import lapack

        return lapack.dpotrs(self.factor, B, lower=0)[0]

    def error(self, beta):
        """``(error, R)``: the weighted validation mean squared error and its residuals."""
        R = (self.v.Z @ beta.astype(np.float32)).astype(np.float64) - self.Tv
        return float(np.sum(self.wv[:, None] * R ** 2)) / self.Wv, R

    def __call__(self, log_s, log_lam, *, gradient=True):
        self.prepare(log_s, sines=gradient)
        beta = self.solve(log_lam)
        error, R = self.error(beta)
        if not gradient:
            return error
        f, v, f32 = self.f, self.v, np.float32
        DR = (self.wv[:, None] * R).astype(f32)
        b = beta.astype(f32)
        G_v = np.matmul(DR, b.T, out=v.G)                              # dE / dZ_val
        G_v *= 2.0 / self.Wv
        q = self._solve((2.0 / self.Wv) * (v.Z.T @ DR).astype(np.float64))  # A^-1 dE/dbeta
        qf = q.astype(f32)
        G_f = np.matmul(self.T_f - f.Z @ b, qf.T, out=f.G)
        G_f -= np.matmul(f.Z @ qf, b.T, out=f.H)
        G_f *= self.w_f
        grad_s = np.zeros(len(log_s))
        for a, G in ((f, G_f), (v, G_v)):
            # dZ / dlog s_i = sin(U) (x_i / s_i) omega_i (the cosine's sign, the chain rule)
            G *= a.S
            np.matmul(G, self.omega_t, out=a.P)
            a.P *= a.Xs32
            grad_s += np.sum(a.P, axis=0, dtype=np.float64)
        grad_lam = -float(np.exp(log_lam)) * float(np.sum(q * beta))
        return error, grad_s, grad_lam


def _ard_scales(X, targets, weights, *, start: float, seed: int = 0,
               n_components: int = ARD_COMPONENTS, steps: int = ARD_STEPS,
               learning_rate: float = ARD_LEARNING_RATE, return_history: bool = False,
               patience: int | None = None, threads: int | None = None):
    """The search of :func:`ard_scales`."""
    X = np.asarray(X, dtype=np.float64)  # the setup sample (at most 1,500 rows), already in memory
    T = np.asarray(targets, dtype=np.float64)
    T = T.reshape(len(T), -1)
    w = np.asarray(weights, dtype=np.float64)
    keep = np.flatnonzero(w > 0)
    if len(keep) < 4:
        raise ValidationError(
            f"ARD needs at least 4 rows of positive weight to fit and validate, got "
            f"{len(keep)}; pass a numeric bandwidth or more data."
        )
    if not (np.isfinite(start) and start > 0):
        raise ValidationError(f"ARD start width must be positive and finite, got {start!r}")
    rng = np.random.default_rng(seed % 2**63)
    order = keep[rng.permutation(len(keep))]
    n_fit = (2 * len(order)) // 3
    fit, val = order[:n_fit], order[n_fit:]
    parts = (X[fit], T[fit], w[fit], X[val], T[val], w[val])
    d = X.shape[1]
    omega = rng.standard_normal((d, n_components))
    phase = rng.uniform(0.0, 2.0 * np.pi, n_components)

    # the start: the best isotropic width and ridge of a small grid, by the same criterion
    multiples, lams = (0.25, 0.5, 1.0, 2.0), (1e-2, 1e-3, 1e-4)
    errors = grid_errors([np.log(m * start) for m in multiples], np.log(lams), parts, omega,
                         phase, float32=True, threads=threads)
    i, j = np.unravel_index(int(np.argmin(errors)), errors.shape)
    m, lam = multiples[i], lams[j]
    theta = np.append(np.full(d, np.log(m * start)), np.log(lam))
    low = np.append(np.full(d, np.log(start / ARD_MAX_RATIO)), np.log(1e-8))
    high = np.append(np.full(d, np.log(start * ARD_MAX_RATIO)), np.log(10.0))
    criterion = _Float32Criterion(parts, omega, phase)
    first, second = np.zeros_like(theta), np.zeros_like(theta)
    best, best_theta, history, since = np.inf, theta.copy(), [], 0
    for step in range(1, steps + 1):
        error, g_s, g_lam = criterion(theta[:d], theta[d])
        history.append(error)
        since += 1
        if error < best:
            if error < (1.0 - ARD_MIN_GAIN) * best:
                since = 0
            best, best_theta = error, theta.copy()
        if patience is not None and since > patience:
            break
        g = np.append(g_s, g_lam)
        first = 0.9 * first + 0.1 * g
        second = 0.999 * second + 0.001 * g * g
        update = (first / (1 - 0.9 ** step)) / (np.sqrt(second / (1 - 0.999 ** step)) + 1e-12)
        theta = np.clip(theta - learning_rate * update, low, high)
    error = criterion(theta[:d], theta[d], gradient=False)
    history.append(error)
    if error < best:
        best_theta = theta
    scales = np.exp(best_theta[:d])
    return (scales, history) if return_history else scales


def ard_scales(X, targets, weights, *, start: float, seed: int = 0,
               n_components: int = ARD_COMPONENTS, steps: int = ARD_STEPS,
               learning_rate: float = ARD_LEARNING_RATE, return_history: bool = False,
               patience: int | None = None, threads: int | None = None):
    """Per-input widths chosen by gradient descent on a held-out ridge error (see the module
    docstring).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Rows as the model sees them (standardized), ``n >= 4``.
    targets : ndarray of shape (n,) or (n, c)
        Least-squares targets (a standardized regression target, or +-1 per class).
    weights : ndarray of shape (n,)
        Row weights; rows of weight 0 are left out.
    start : float
        The isotropic width every input starts from (e.g. the median pairwise distance).
    seed : int
        Seed of the split, the random features and nothing else.
    n_components, steps, learning_rate
        See :data:`ARD_COMPONENTS`, :data:`ARD_STEPS`, :data:`ARD_LEARNING_RATE`.
    return_history : bool
        Also return the validation error before every step (and after the last).
    patience : int or None
        Stop early once this many steps in a row have not lowered the best error by more
        than :data:`ARD_MIN_GAIN` (relative); None: all ``steps`` steps.
    threads : int or None
        Threads the isotropic starts share (:func:`grid_errors`; None: the enclosing
        :func:`~ooc_kernels._threads.kernel_threads` block's count, 1 outside one; the
        same widths on any thread count).

    Returns
    -------
    scales : ndarray of shape (d,)
        The widths, within :data:`ARD_MAX_RATIO` of ``start`` either way.
    history : list of float (with ``return_history``)
    """
    with single_threaded_blas():  # small products: threads only spin on busy cores
        return _ard_scales(X, targets, weights, start=start, seed=seed,
                           n_components=n_components, steps=steps,
                           learning_rate=learning_rate, return_history=return_history,
                           patience=patience, threads=threads)


def solve_spd(M: np.ndarray, U: np.ndarray):
    """``(M^-1 U, diag(M^-1))`` of a symmetric positive definite matrix ``M``, or None when
    ``M`` is not positive definite in floating point: one Cholesky factorization
    ``M = L L^T``, two triangular solves, and ``diag(M^-1)`` as the squared column norms of
    ``L^-1`` (one triangular inverse: a third less work than the whole inverse).  What an
    exact leave-one-out prediction needs of kernel ridge regression.

    Examples
    --------
    >>> M = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> X, diag = solve_spd(M, np.array([[1.0], [0.0]]))
    >>> bool(np.allclose(X[:, 0], [2 / 3, -1 / 3])), bool(np.allclose(diag, [2 / 3, 2 / 3]))
    (True, True)
    >>> solve_spd(np.array([[1.0, 2.0], [2.0, 1.0]]), np.ones((2, 1))) is None
    True
    """
    from scipy.linalg import lapack

    L, info = lapack.dpotrf(np.array(M, dtype=np.float64, order="F"), lower=1, clean=1,
                            overwrite_a=1)
    if info != 0:
        return None
    X, info = lapack.dpotrs(L, np.asarray(U, dtype=np.float64), lower=1)
    inverse, info_inv = lapack.dtrtri(L, lower=1, overwrite_c=1)
    if info != 0 or info_inv != 0:
        return None
    return X, np.einsum("ij,ij->j", inverse, inverse)


def loo_at(squared, median: float, T, w, *, classification: bool, multiple: float):
    """``(score, residuals)`` of exact Gaussian kernel ridge regression at the width
    ``multiple * median``, from the rows' pairwise squared distances ``squared`` (shape
    ``(n, n)``), targets ``T`` (shape ``(n, c)``) and row weights ``w`` of mean 1: the
    leave-one-out score of :func:`loo_score` and the residuals ``t_i - f_(-i)(x_i)``.

    Examples
    --------
    >>> from scipy.spatial.distance import pdist, squareform
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.normal(size=(60, 2)); T = np.sign(Z[:, :1])
    >>> score, residual = loo_at(squareform(pdist(Z) ** 2), 1.0, T, np.ones(60),
    ...                          classification=True, multiple=1.0)
    >>> residual.shape, 0.5 < score <= 1.0
    ((60, 1), True)
    """
    root = np.sqrt(w)
    # root_i exp(-d_ij^2 / (2 h^2)) root_j in one array, written in place
    M = np.divide(squared, -(2.0 * (multiple * median) ** 2))
    np.exp(M, out=M)
    M *= root[:, None]
    M *= root[None, :]
    M[np.diag_indices_from(M)] += 1.0
    solved = solve_spd(M, root[:, None] * T)
    if solved is None:
        raise np.linalg.LinAlgError(
            "the kernel matrix plus the ridge is not positive definite in floating point")
    BU, diag = solved
    residual = BU / (root * diag)[:, None]    # t_i - f_(-i)(x_i)
    if classification:
        loo = T - residual
        pred = loo.argmax(axis=1) if T.shape[1] > 1 else loo[:, 0] > 0
        labels = T.argmax(axis=1) if T.shape[1] > 1 else T[:, 0] > 0
        return float(np.average(pred == labels, weights=w)), residual
    mean = np.average(T, axis=0, weights=w)
    total = float(np.sum(w[:, None] * (T - mean) ** 2))
    score = 1.0 - float(np.sum(w[:, None] * residual ** 2)) / total if total > 0 else 0.0
    return score, residual


def loo_score(Z, targets, weights, *, classification: bool,
              multiples=LOO_MULTIPLES, threads: int | None = None) -> float:
    """The best leave-one-out score of exact Gaussian kernel ridge regression on the rows
    ``Z``, over widths ``multiples`` times their median pairwise distance.

    With row weights ``w`` (scaled to mean 1), ``M = D^1/2 K D^1/2`` and ``B = (M + I)^-1``
    (a ridge of 1 in the units of ``K``: ``alpha = 1 / sum(w)``, the fit's ``alpha="auto"``),
    the leave-one-out residual of row ``i`` is ``(B D^1/2 t)_i / (sqrt(w_i) B_ii)`` exactly
    (one Cholesky factorization per width, no refit: :func:`solve_spd`).  The score is the weighted accuracy of
    the leave-one-out predictions (``classification``: the sign of a single column, else the
    largest column) or their weighted ``R^2``.

    Parameters
    ----------
    Z : ndarray of shape (n, d)
        Rows (a few hundred: the cost is ``n^3 / 3`` per width).
    targets : ndarray of shape (n, c)
        +-1 per class, or a standardized regression target.
    weights : ndarray of shape (n,)
        Positive row weights.
    classification : bool
    multiples : tuple of float
    threads : int or None
        Threads the widths share (None: the enclosing
        :func:`~ooc_kernels._threads.kernel_threads` block's count, 1 outside one; each
        scored alone, the best taken in the widths' order: the same score on any thread
        count).

    Returns
    -------
    float

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.normal(size=(200, 2))
    >>> t = np.where(Z[:, :1] * Z[:, 1:] > 0, 1.0, -1.0)     # XOR of the signs
    >>> loo_score(Z, t, np.ones(200), classification=True) > 0.85
    True
    """
    from scipy.spatial.distance import pdist, squareform

    Z = np.asarray(Z, dtype=np.float64)
    T = np.asarray(targets, dtype=np.float64).reshape(len(Z), -1)
    w = np.asarray(weights, dtype=np.float64)
    w = w / w.mean()
    distances = pdist(Z)
    squared = squareform(distances ** 2)
    median = float(np.median(distances))
    if not median > 0:
        median = 1.0

    def score_at(multiple):
        return loo_at(squared, median, T, w, classification=classification,
                      multiple=multiple)[0]

    best = -np.inf
    with single_threaded_blas():  # a few hundred rows: threads only spin on busy cores
        for score in map_in_order(score_at, multiples, threads):
            best = max(best, score)
    return best
