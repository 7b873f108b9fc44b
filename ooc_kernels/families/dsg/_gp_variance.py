"""The predictive variance of :class:`~ooc_kernels.families.dsg.gaussian_process.DSGGaussianProcessRegressor`.

Two estimators of ``k(x, x) - k_*^T (K + sigma^2 I)^{-1} k_*``, both from one streaming pass
over the chunks (the estimator's finishing step) and both holding a ``D x D`` matrix,
``D = n_variance_features``: model-sized, whatever the number of rows.

``"features"``
    ``sigma^2 phi(x)^T (Phi^T Phi + sigma^2 I)^{-1} phi(x)`` on ``D`` random features
    ``phi`` (``phi(x) . phi(x') ~ k(x, x')``): the exact posterior variance of the GP whose
    kernel is the random-feature estimate.  The pass reduces ``Phi^T Phi`` over the chunks
    (a tree sum, the chunks in parallel); the factor ``L L^T = Phi^T Phi + sigma^2 I`` is
    kept.
``"operator"``
    The paper's approach 1 (section 4.2): ``A = C (C + sigma^2 / n I)^{-1}`` by the doubly
    stochastic update Eq. 18 with two independent feature streams omega and omega'
    (:mod:`ooc_kernels.families.dsg.kernels_gp`), the same step sizes as the mean, as many
    epochs as the mean's fit ran, chunks in storage order (one at a time);
    ``var(x) ~ k(x, x) - A(x, x)``.

Either is clipped at 0 (the operator estimate can fall below it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import dask
import numpy as np
from scipy.linalg import cho_factor, solve_triangular

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels._jit.rff import features_inplace
from ooc_kernels._progress import logger
from ooc_kernels._seeds import task_rng
from ooc_kernels.exceptions import ModelTooLargeError
from ooc_kernels.families.dsg._memory import _size, physical_memory
from ooc_kernels.families.dsg.kernels_gp import operator_steps
from ooc_kernels.features.blocks import stacked_block_params
from ooc_kernels.features.cache import default_cache
from ooc_kernels.features.maps import get_feature_map
from ooc_kernels.parallel.cluster import compute

__all__ = ["VarianceConfig", "VARIANCE_MODES", "variance_memory", "check_variance_memory",
           "variance_features", "FeatureStatistics", "statistics_pass", "gram_factor",
           "gram_pass", "operator_pass", "mean_std_block"]

VARIANCE_MODES = ("features", "operator")

#: Rows whose features are computed at once in a pass (bounds its memory: ``2 * D`` float64
#: values per row).
SLAB_ROWS = 2048

#: ``D x D`` float64 matrices a fit holds at once: the pass's sum (or ``theta``), a task's
#: partial sum (a step's products), the factor.
MATRIX_COPIES = 3


@dataclass(frozen=True)
class VarianceConfig:
    """What the variance pass and prediction need (small, picklable)."""

    mode: str
    noise: float  # sigma^2, in the units of the model's targets
    n_samples: int
    n_blocks: int
    block_size: int
    seed: int  # omega stream
    seed_prime: int  # omega' stream ("operator")
    n_features_in: int
    bandwidth: float
    kernel: str = "rbf"
    x_shift: tuple | None = None
    x_scale: tuple | None = None
    batch_size: int = 256
    on_invalid: str = "error"
    y_shift: float = 0.0  # the model's targets are (y - y_shift) / y_scale
    y_scale: float = 1.0

    @property
    def n_features(self) -> int:
        return self.n_blocks * self.block_size

    @property
    def shrink(self) -> float:
        """``sigma^2 / n``: the regularization of Eq. 18 (and of the mean)."""
        return self.noise / max(self.n_samples, 1)


def variance_memory(n_variance_features: int) -> int:
    """Bytes of the ``D x D`` matrices a fit holds at once.

    Examples
    --------
    >>> variance_memory(1024) // 2**20
    24
    """
    return MATRIX_COPIES * 8 * int(n_variance_features) ** 2


def check_variance_memory(n_variance_features: int, limit: int | None = None) -> None:
    """Refuse, before any work, a variance matrix larger than the machine's memory.

    Raises
    ------
    ModelTooLargeError
        Naming ``n_variance_features``, the bytes it needs and what fits.
    """
    limit = physical_memory() if limit is None else limit
    need = variance_memory(n_variance_features)
    if limit is None or need <= limit:
        return
    fits = int(math.isqrt(max(limit, 0) // (MATRIX_COPIES * 8)))
    raise ModelTooLargeError(
        f"n_variance_features={n_variance_features} needs {_size(need)} for the variance "
        f"statistics ({MATRIX_COPIES} matrices of {n_variance_features} x "
        f"{n_variance_features} float64); this machine has {_size(limit)} of memory. Lower "
        f"n_variance_features (at most about {fits} fits; the default is 1024).")


def variance_features(config: VarianceConfig, X: np.ndarray, seed: int) -> np.ndarray:
    """The ``(n, D)`` float64 features of stream ``seed``, each block scaled to estimate
    the kernel alone (``Z_j Z_j^T ~ K``), of the standardized rows."""
    fmap = get_feature_map(config.kernel)
    affine = None if config.x_shift is None else (
        np.asarray(config.x_shift, dtype=np.float64), np.asarray(config.x_scale,
                                                                dtype=np.float64))
    X = fmap.map_rows(X, affine, np.float64)  # psi(X) for hierarchical features
    W, phase = stacked_block_params(seed, np.arange(config.n_blocks), config.n_features_in,
                                    config.block_size, config.bandwidth, np.float64,
                                    cache=default_cache(), affine=affine, kernel=fmap)
    scale = fmap.feature_scale(config.block_size)
    r = config.block_size
    Z = np.empty((X.shape[0], config.n_features))
    for j in range(config.n_blocks):
        P = X @ W[j]
        features_inplace(fmap.nonlinearity, P, phase[j], scale)
        Z[:, j * r:(j + 1) * r] = P
    return Z


def _valid_rows(config: VarianceConfig, X, y=None) -> np.ndarray:
    """The rows the fit trained on: every row, or the finite ones with ``on_invalid="skip"``
    (the rounds already refused non-finite rows otherwise)."""
    X = np.asarray(X, dtype=np.float64)
    if config.on_invalid != "skip":
        return X
    keep = np.isfinite(X).all(axis=1)
    if y is not None:
        keep &= np.isfinite(np.asarray(y, dtype=np.float64))
    return X[keep]


def _valid_pairs(config: VarianceConfig, X, y) -> tuple[np.ndarray, np.ndarray]:
    """The rows the fit trained on and their targets in the model's units."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if config.on_invalid == "skip":
        keep = np.isfinite(X).all(axis=1) & np.isfinite(y)
        X, y = X[keep], y[keep]
    return X, (y - config.y_shift) / config.y_scale


def _gram_block(X, y, config: VarianceConfig) -> np.ndarray:
    """The statistics of one chunk packed in one ``(D + 1, D + 1)`` array: ``Phi^T Phi``
    (``phi = z / sqrt(n_blocks)``) in the top left block, ``Phi^T y`` in the last column,
    ``y^T y`` in the corner and the row count in the last row's first entry (``y`` the
    model's targets).  Packing keeps the tree reduction a plain sum."""
    X, y = _valid_pairs(config, X, y)
    D = config.n_features
    S = np.zeros((D + 1, D + 1))
    with single_threaded_blas():
        for lo in range(0, X.shape[0], SLAB_ROWS):
            Z = variance_features(config, X[lo:lo + SLAB_ROWS], config.seed)
            S[:D, :D] += Z.T @ Z
            S[:D, D] += Z.T @ y[lo:lo + SLAB_ROWS]
    S[:D, :D] /= config.n_blocks
    S[:D, D] /= math.sqrt(config.n_blocks)
    S[D, D] = float(y @ y)
    S[D, 0] = float(X.shape[0])
    return S


def _chunks(data):
    """The delayed ``(X, y)`` chunk pairs of ``data`` (``X`` whole along the features)."""
    X = data.X.rechunk({1: -1}).to_delayed().ravel()
    return list(zip(X, data.y.to_delayed().ravel()))


@dataclass(frozen=True)
class FeatureStatistics:
    """The training rows reduced on ``D`` random features: ``gram = Phi^T Phi``, ``rhs =
    Phi^T y``, ``yy = y^T y`` and ``n`` rows (``y``: the model's targets)."""

    gram: np.ndarray
    rhs: np.ndarray
    yy: float
    n: int


def statistics_pass(config: VarianceConfig, data, sched) -> FeatureStatistics:
    """:class:`FeatureStatistics` of ``data`` in one parallel pass, the chunks' statistics
    summed in a balanced binary tree (at most a few ``D x D`` partial sums in memory at
    once; no row is kept)."""
    payload = dask.delayed(config, traverse=False)
    parts = [dask.delayed(_gram_block)(xc, yc, payload) for xc, yc in _chunks(data)]
    while len(parts) > 1:
        parts = [dask.delayed(np.add)(parts[i], parts[i + 1]) if i + 1 < len(parts)
                 else parts[i] for i in range(0, len(parts), 2)]
    (S,) = compute(parts[0], scheduler=sched)
    S = np.asarray(S, dtype=np.float64)
    D = config.n_features
    return FeatureStatistics(gram=np.array(S[:D, :D]), rhs=np.array(S[:D, D]),
                             yy=float(S[D, D]), n=int(round(S[D, 0])))


def gram_factor(stats: FeatureStatistics, noise: float) -> np.ndarray:
    """``L`` (lower) with ``L L^T = Phi^T Phi + noise I``."""
    G = np.array(stats.gram, dtype=np.float64)
    G[np.diag_indices(G.shape[0])] += noise
    with single_threaded_blas():  # threads fighting over shared cores cost 20x here
        L, _ = cho_factor(G, lower=True, check_finite=True)
    return np.tril(L)


def gram_pass(config: VarianceConfig, data, sched) -> np.ndarray:
    """``L`` (lower) with ``L L^T = Phi^T Phi + sigma^2 I`` from one pass
    (:func:`statistics_pass`)."""
    return gram_factor(statistics_pass(config, data, sched), config.noise)


def operator_pass(config: VarianceConfig, data, sched, *, gammas_of, n_epochs: int,
                  seed: int) -> np.ndarray:
    """``theta`` of Eq. 18 after ``n_epochs`` passes over the chunks in storage order
    (each chunk's rows in a random order drawn from ``(seed, epoch, chunk)``); step ``t``
    (1-based, counted over the passes) has step size ``gammas_of(t)``."""
    D, r = config.n_features, config.block_size
    theta = np.zeros((D, D))
    n_open, t = 0, 0
    chunks = _chunks(data)
    for epoch in range(n_epochs):
        for c, (xc, yc) in enumerate(chunks):
            X, y = compute(xc, yc, scheduler=sched)
            X = _valid_rows(config, X, y)
            X = X[task_rng(seed, epoch, 0, c).permutation(X.shape[0])]
            slab = max(1, SLAB_ROWS // config.batch_size) * config.batch_size
            with single_threaded_blas():
                for lo in range(0, X.shape[0], slab):
                    rows = X[lo:lo + slab]
                    m = -(-rows.shape[0] // config.batch_size)
                    gammas = np.ascontiguousarray(gammas_of(t + 1 + np.arange(m)),
                                                  dtype=np.float64)
                    n_open = operator_steps(theta, variance_features(config, rows, config.seed),
                                            variance_features(config, rows, config.seed_prime),
                                            gammas, config.shrink, n_open, r,
                                            config.batch_size)
                    t += m
        logger.info("DSGGaussianProcessRegressor: variance operator, pass %d of %d done",
                    epoch + 1, n_epochs)
    return theta


def _kernel_diag(config: VarianceConfig, X: np.ndarray) -> np.ndarray:
    """``k(x, x)`` of each row (the exact kernel, a few rows at a time)."""
    fmap = get_feature_map(config.kernel)
    Xs = X if config.x_shift is None else (X - np.asarray(config.x_shift)) / np.asarray(
        config.x_scale)
    out = np.empty(X.shape[0])
    for lo in range(0, X.shape[0], 256):
        part = Xs[lo:lo + 256]
        out[lo:lo + 256] = np.diag(fmap.gram(part, part, config.bandwidth, np.float64))
    return out


def latent_variance(config: VarianceConfig, matrix: np.ndarray, X: np.ndarray) -> np.ndarray:
    """The posterior variance of ``f`` at the rows of ``X`` (model units), clipped at 0."""
    X = np.asarray(X, dtype=np.float64)
    with single_threaded_blas():
        if config.mode == "features":
            phi = variance_features(config, X, config.seed) / math.sqrt(config.n_blocks)
            v = solve_triangular(matrix, phi.T, lower=True, check_finite=False)
            var = config.noise * np.einsum("ij,ij->j", v, v)
        else:
            Z = variance_features(config, X, config.seed)
            Zp = variance_features(config, X, config.seed_prime)
            var = _kernel_diag(config, X) - np.einsum("ij,ij->i", Z @ matrix, Zp)
    return np.maximum(var, 0.0)


def mean_std_block(X, payload) -> np.ndarray:
    """``(n, 2)``: the posterior mean and standard deviation of one chunk (original units)."""
    from ooc_kernels.families.dsg.solver import predict_chunk

    config, state, vconfig, matrix = payload
    mean = np.asarray(predict_chunk(config, state, X), dtype=np.float64)[:, 0]
    std = np.sqrt(latent_variance(vconfig, matrix, X)) * float(config.y_scale)
    return np.column_stack([mean, std])
