"""Plain-NumPy references of the online kernel ridge forecasters: the oracles of the kernels.

Everything here is written from the paper's formulas by direct solves (no incremental
update), so it checks the numba kernels' rank-one updates rather than repeating them:

* :func:`kernel_awv`: Kernel-AWV, ``y_hat_t = k_t^T (K_tt + lambda I)^(-1) Y_bar_t`` with
  ``Y_bar_t = (y_1, ..., y_{t-1}, 0)`` (the current point enters with target 0), and the
  KRR forecaster ``k(x_{<t}, x_t)^T (K_{t-1} + lambda I)^(-1) Y_{t-1}``;
* :func:`linear_awv`: the same forecasters on a finite feature map ``Phi`` (PKAWV with a
  fixed basis);
* :func:`nystrom_awv`: PKAWV on a growing Nystrom dictionary, ``alpha_t = (K_tI^T K_tI +
  lambda K_II)^+ K_tI^T Y_bar_t``;
* :func:`kors`: KORS, the dictionary's approximate ridge-leverage-score sampling;
* :func:`sup_regret`, :func:`log_det`, :func:`effective_dimension`,
  :func:`leverage_terms`, :func:`nystrom_residual`: the quantities of the regret bounds.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.pkawv.reference import kernel_awv, gaussian_kernel, sup_regret
>>> rng = np.random.default_rng(0)
>>> X = rng.uniform(-1, 1, (20, 2)); y = np.sin(3 * X[:, 0])
>>> pred = kernel_awv(X, y, alpha=1.0, bandwidth=1.0)
>>> float(pred[0])                        # nothing seen yet: the forecast is 0
0.0
>>> K = gaussian_kernel(X, X, 1.0)
>>> bool(sup_regret(pred, y, K, 1.0) <= log_det(K, 1.0) * np.max(y ** 2))
True
"""

from __future__ import annotations

import numpy as np

__all__ = ["effective_dimension", "gaussian_kernel", "kernel_awv", "kors", "leverage_terms",
           "linear_awv", "log_det", "nystrom_awv", "nystrom_residual", "sup_regret"]


def gaussian_kernel(X, Z, bandwidth: float) -> np.ndarray:
    """``exp(-||x - z||^2 / (2 sigma^2))`` for every pair of rows."""
    X, Z = np.asarray(X, dtype=np.float64), np.asarray(Z, dtype=np.float64)
    sq = np.sum((X[:, None, :] - Z[None, :, :]) ** 2, axis=2)
    return np.exp(-sq / (2.0 * bandwidth ** 2))


def kernel_awv(X, y, alpha: float, bandwidth: float, mode: str = "awv") -> np.ndarray:
    """The online predictions of Kernel-AWV (``mode="awv"``) or online KRR (``"krr"``)."""
    K = gaussian_kernel(X, X, bandwidth)
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    out = np.zeros(n)
    for t in range(n):
        if mode == "awv":
            ybar = np.concatenate([y[:t], [0.0]])
            out[t] = K[t, :t + 1] @ np.linalg.solve(K[:t + 1, :t + 1] + alpha * np.eye(t + 1),
                                                    ybar)
        elif t > 0:
            out[t] = K[t, :t] @ np.linalg.solve(K[:t, :t] + alpha * np.eye(t), y[:t])
    return out


def linear_awv(Phi, y, alpha: float, mode: str = "awv") -> np.ndarray:
    """The online predictions of AWV / online ridge on the features ``Phi`` (n, r)."""
    Phi = np.asarray(Phi, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, r = Phi.shape
    out = np.zeros(n)
    for t in range(n):
        rows = Phi[:t + 1] if mode == "awv" else Phi[:t]
        w = np.linalg.solve(rows.T @ rows + alpha * np.eye(r), Phi[:t].T @ y[:t])
        out[t] = Phi[t] @ w
    return out


def nystrom_awv(X, y, in_dictionary, alpha: float, bandwidth: float,
                mode: str = "awv") -> np.ndarray:
    """PKAWV's online predictions on the Nystrom dictionary grown by the flags ``in_dictionary``.

    Row ``t`` joins the dictionary before its prediction when ``in_dictionary[t]``; the
    coefficients are the direct (pseudo-inverse) solve of ``(K_tI^T K_tI + lambda K_II)
    alpha = K_tI^T Y_bar_t`` over the rows in the covariance (rows ``<= t`` in ``"awv"``
    mode, ``< t`` in ``"krr"`` mode); an empty dictionary predicts 0.
    """
    K = gaussian_kernel(X, X, bandwidth)
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    out = np.zeros(n)
    idx: list[int] = []
    for t in range(n):
        if in_dictionary[t]:
            idx.append(t)
        if not idx:
            continue
        rows = t + 1 if mode == "awv" else t
        KtI = K[:rows][:, idx]
        H = KtI.T @ KtI + alpha * K[np.ix_(idx, idx)]
        a = np.linalg.pinv(H) @ (K[:t][:, idx].T @ y[:t])
        out[t] = K[t, idx] @ a
    return out


def kors(X, uniforms, mu: float, beta: float, epsilon: float, bandwidth: float):
    """KORS by direct solves: the inclusion flags, probabilities and weights of every row.

    Row ``t``'s score is ``tau_t = (1 + epsilon) / mu (k(x_t, x_t) - k_bar^T (S K S + mu
    I)^(-1) k_bar)`` over the dictionary plus ``x_t`` (weight 1), where ``S`` scales a
    dictionary point ``j`` by ``sqrt(w_j)``, ``w_j = 1 / p_j``; ``p_t = min(max(beta tau_t,
    0), 1)`` and the row joins when ``uniforms[t] < p_t``.

    Returns
    -------
    flags : ndarray of bool, probs : ndarray, weights : ndarray (0 where not kept)
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    flags = np.zeros(n, dtype=bool)
    probs = np.zeros(n)
    weights = np.zeros(n)
    idx: list[int] = []
    for t in range(n):
        cand = idx + [t]
        s = np.sqrt(np.append(weights[idx], 1.0))
        Kc = gaussian_kernel(X[cand], X[cand], bandwidth) * s[:, None] * s[None, :]
        kbar = Kc[:, -1]
        tau = (1.0 + epsilon) / mu * (Kc[-1, -1] - kbar @ np.linalg.solve(
            Kc + mu * np.eye(len(cand)), kbar))
        probs[t] = min(max(beta * tau, 0.0), 1.0)
        if uniforms[t] < probs[t]:
            flags[t] = True
            weights[t] = 1.0 / probs[t]
            idx.append(t)
    return flags, probs, weights


def sup_regret(pred, y, K, alpha: float) -> float:
    """``sup_f [R_n(f) - lambda ||f||^2] = sum_t (y_t - y_hat_t)^2 - lambda Y^T (K + lambda I)^(-1) Y``."""
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    return float(np.sum((y - pred) ** 2)
                 - alpha * y @ np.linalg.solve(K + alpha * np.eye(n), y))


def leverage_terms(K, alpha: float) -> np.ndarray:
    """``<A_t^(-1) phi_t, phi_t> = (k_tt - k_t^T (K_tt + lambda I)^(-1) k_t) / lambda``, each t."""
    n = K.shape[0]
    out = np.empty(n)
    for t in range(n):
        k = K[:t + 1, t]
        out[t] = (K[t, t] - k @ np.linalg.solve(K[:t + 1, :t + 1] + alpha * np.eye(t + 1), k)) \
            / alpha
    return out


def log_det(K, alpha: float) -> float:
    """``log det(I + K / lambda) = sum_j log(1 + lambda_j(K) / lambda)``."""
    eig = np.clip(np.linalg.eigvalsh(K), 0.0, None)
    return float(np.sum(np.log1p(eig / alpha)))


def effective_dimension(K, alpha: float) -> float:
    """``d_eff(lambda) = Tr(K (K + lambda I)^(-1))``."""
    eig = np.clip(np.linalg.eigvalsh(K), 0.0, None)
    return float(np.sum(eig / (eig + alpha)))


def nystrom_residual(K, idx) -> float:
    """``||(I - P) C^(1/2)||^2 = lambda_max(K - K_nI K_II^+ K_In)`` for the dictionary ``idx``."""
    idx = list(idx)
    if not idx:
        return float(np.linalg.eigvalsh(K)[-1])
    KnI = K[:, idx]
    E = K - KnI @ np.linalg.pinv(K[np.ix_(idx, idx)], hermitian=True) @ KnI.T
    return float(np.linalg.eigvalsh((E + E.T) / 2)[-1])
