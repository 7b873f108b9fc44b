"""Seed-addressed frequency samplers and exact forms of the kernels of the table
(:mod:`ooc_kernels.features.maps`) other than the Gaussian (:mod:`ooc_kernels.features.rbf`).

Every kernel here is ``k(x, x') = E_w[z_w(x) z_w(x')]`` for features
``z_w(x) = sqrt(2) f(w^T x + b)`` with frequencies ``w`` drawn per kernel:

* ``laplacian``: ``exp(-||x - x'||_1)``; ``w`` i.i.d. standard Cauchy; ``f = cos``,
  ``b ~ U[0, 2 pi)``;
* ``cauchy``: ``prod_i 1 / (1 + (x_i - x'_i)^2)``; ``w`` i.i.d. Laplace(0, 1); ``f = cos``;
* ``matern``: Matern of smoothness ``nu`` in {1/2, 3/2, 5/2}, length scale 1; ``w``
  multivariate Student-t with ``2 nu`` degrees of freedom; ``f = cos``;
* ``arccos``: ``||x||^n ||x'||^n J_n(theta) / pi`` (Cho and Saul); ``w ~ N(0, I)``;
  ``f(p) = Theta(p) p^n``, ``b = 0``.

A ``bandwidth`` (a number or one value per input coordinate) divides the inputs:
``k_bw(x, x') = k(x / bw, x' / bw)``; the samplers divide row ``i`` of ``W`` by ``bw[i]``.

Block ``j`` of a model with feature seed ``s`` is a pure function of ``(s, j)``: it is drawn
from the raw 64-bit words of ``numpy.random.Philox(key=[s, j])``, as the Gaussian blocks are
(:mod:`ooc_kernels.features.rbf`).  Words map to the open interval by
``u = ((w >> 11) + 1/2) 2^-53`` (never 0 nor 1, so the inverse CDFs stay finite); normals
are the Box-Muller normals of :func:`ooc_kernels.features.rbf.philox_normals`.  Layout of a
block of ``r`` features on ``d`` inputs (C order, row ``i`` of ``W`` is input ``i``):

* ``laplacian``: words ``0 .. dr-1`` give ``W = tan(pi (u - 1/2))``, the next ``r`` the
  phases ``2 pi u``;
* ``cauchy``: words ``0 .. dr-1`` give ``W = -sign(u - 1/2) log(1 - 2 |u - 1/2|)``, the
  next ``r`` the phases;
* ``matern``: with ``k = 2 nu``, ``dr + kr`` normals ``g`` (Box-Muller over the first
  ``2 ceil((dr + kr) / 2)`` words): ``W = g[:dr] sqrt(k / c)`` where ``c_j`` is the sum of
  squares of normals ``dr + kj .. dr + kj + k - 1`` (a chi-squared with ``k`` degrees of
  freedom, one per column), then ``r`` words of phases;
* ``arccos``: ``W`` = the first ``dr`` normals, phases 0.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.features.spectral import laplacian_kernel, laplacian_block
>>> laplacian_kernel(np.zeros((1, 2)), np.ones((1, 2)), 1.0).round(4).tolist()
[[0.1353]]
>>> W, b = laplacian_block(3, 0, n_features_in=2, block_size=4, input_scale=np.ones(2))
>>> W.shape, b.shape
((2, 4), (4,))
"""

from __future__ import annotations

import math

import numpy as np

from ooc_kernels.exceptions import ValidationError
from ooc_kernels.features.rbf import (
    _TWO_PI,
    _box_muller,
    _check_dtype,
    _check_input_scale,
    _check_positive_int,
    _check_uint64,
    _raw_words,
    _to_unit,
)

__all__ = ["ARCCOS_ORDERS", "MATERN_NUS", "SpectralWriter", "arccos_block", "arccos_kernel",
           "cauchy_block", "cauchy_kernel", "laplacian_block", "laplacian_kernel",
           "matern_block", "matern_kernel"]

#: The Matern smoothness values with a closed form and a Student-t sampler.
MATERN_NUS = (0.5, 1.5, 2.5)
#: The arc-cosine orders (Cho and Saul's ``n``).
ARCCOS_ORDERS = (0, 1, 2)


def _open_unit(words: np.ndarray) -> np.ndarray:
    """``((w >> 11) + 1/2) 2^-53``: uniforms on the open interval ``(0, 1)``."""
    return ((words >> np.uint64(11)).astype(np.float64) + 0.5) * (2.0**-53)


def _phases(words: np.ndarray) -> np.ndarray:
    return _TWO_PI * _to_unit(words)


def _iid_block(seed, block_id, d, r, input_scale, inverse_cdf):
    """``W`` of i.i.d. entries ``inverse_cdf(u)`` from words ``0 .. dr-1`` (divided by the
    input scale per row), phases from the next ``r`` words."""
    words = _raw_words(seed, block_id, d * r + r)
    W = inverse_cdf(_open_unit(words[:d * r])).reshape(d, r)
    return W / input_scale[:, None], _phases(words[d * r:])


def laplacian_block(seed, block_id, n_features_in, block_size, input_scale):
    """Float64 ``(W, phase)`` of a block of the Laplacian kernel (Cauchy frequencies).

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.spectral import laplacian_block
    >>> W, _ = laplacian_block(0, 0, 1, 20_000, np.ones(1))
    >>> bool(abs(np.median(np.abs(W)) - 1.0) < 0.05)   # |Cauchy| has median 1
    True
    """
    return _iid_block(seed, block_id, n_features_in, block_size, input_scale,
                      lambda u: np.tan(np.pi * (u - 0.5)))


def cauchy_block(seed, block_id, n_features_in, block_size, input_scale):
    """Float64 ``(W, phase)`` of a block of the Cauchy kernel (Laplace(0, 1) frequencies).

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.spectral import cauchy_block
    >>> W, _ = cauchy_block(0, 0, 1, 20_000, np.ones(1))
    >>> bool(abs(np.mean(np.abs(W)) - 1.0) < 0.05)     # |Laplace(0, 1)| has mean 1
    True
    """
    def inverse_cdf(u):
        c = u - 0.5
        return -np.sign(c) * np.log1p(-2.0 * np.abs(c))

    return _iid_block(seed, block_id, n_features_in, block_size, input_scale, inverse_cdf)


def matern_block(seed, block_id, n_features_in, block_size, input_scale, nu):
    """Float64 ``(W, phase)`` of a block of the Matern kernel (Student-t frequencies with
    ``2 nu`` degrees of freedom, scaled by ``1 / length scale``).

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.spectral import matern_block
    >>> W, _ = matern_block(0, 0, 1, 40_000, np.ones(1), 2.5)
    >>> bool(abs(W.var() - 5 / 3) < 0.1)            # t_5 has variance 5 / 3
    True
    """
    d, r = n_features_in, block_size
    k = int(round(2 * nu))
    n = d * r + k * r
    n_pairs = (n + 1) // 2
    words = _raw_words(seed, block_id, 2 * n_pairs + r)
    g = _box_muller(words[:2 * n_pairs], n)
    chi2 = (g[d * r:].reshape(r, k) ** 2).sum(axis=1)
    W = g[:d * r].reshape(d, r) * np.sqrt(k / chi2)[None, :]
    return W / input_scale[:, None], _phases(words[2 * n_pairs:])


def arccos_block(seed, block_id, n_features_in, block_size, input_scale):
    """Float64 ``(W, phase)`` of a block of the arc-cosine kernels: ``W ~ N(0, I)`` divided
    by the input scale, zero phases.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.spectral import arccos_block
    >>> from ooc_kernels.features.rbf import philox_normals
    >>> W, b = arccos_block(1, 2, 3, 4, np.ones(3))
    >>> bool(np.array_equal(W.ravel(), philox_normals(1, 2, 12))), b.tolist()
    (True, [0.0, 0.0, 0.0, 0.0])
    """
    d, r = n_features_in, block_size
    n = d * r
    words = _raw_words(seed, block_id, 2 * ((n + 1) // 2))
    W = _box_muller(words, n).reshape(d, r)
    return W / input_scale[:, None], np.zeros(r)


class SpectralWriter:
    """Writes the blocks of one model of a sampler of this module into caller-owned arrays
    (the ``writer`` of a :class:`~ooc_kernels.features.maps.FeatureMap`).

    Parameters
    ----------
    sampler : callable
        ``sampler(seed, block_id, d, r, input_scale) -> (W, phase)`` in float64.
    seed, n_features_in, block_size, input_scale, dtype, affine
        As in :class:`ooc_kernels.features.rbf.BlockWriter`.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.spectral import SpectralWriter, cauchy_block
    >>> w = SpectralWriter(cauchy_block, 4, 2, 3, np.ones(2), np.float32)
    >>> W, b = np.empty((2, 3), np.float32), np.empty(3, np.float32)
    >>> w.write(7, W, b)
    >>> bool(np.array_equal(W, cauchy_block(4, 7, 2, 3, np.ones(2))[0].astype(np.float32)))
    True
    """

    def __init__(self, sampler, seed, n_features_in, block_size, input_scale,
                 dtype=np.float64, affine=None):
        self.sampler = sampler
        self.seed = _check_uint64(seed, "seed")
        self.d = d = _check_positive_int(n_features_in, "n_features_in")
        self.r = _check_positive_int(block_size, "block_size")
        self.input_scale = _check_input_scale(input_scale, d)
        self.dtype = _check_dtype(dtype)
        if affine is not None:
            affine = tuple(np.asarray(a, dtype=np.float64).reshape(d) for a in affine)
        self.affine = affine
        self.scratch_nbytes = int(3 * (d + 2) * self.r * 8)

    @property
    def block_nbytes(self) -> int:
        """Bytes of one block's parameters (``W`` and ``phase``) in the writer's dtype."""
        return (self.d + 1) * self.r * self.dtype.itemsize

    def write(self, block_id, W_out, phase_out) -> None:
        """Write block ``block_id`` into ``W_out`` (d, r) and ``phase_out`` (r,)."""
        W, phase = self.sampler(self.seed, _check_uint64(block_id, "block_id"), self.d,
                                self.r, self.input_scale)
        W_out[...] = W
        phase_out[...] = phase
        if self.affine is not None:  # as blocks._affine_block: from the cast parameters
            shift, scale = self.affine
            Wa = np.asarray(W_out, dtype=np.float64) / scale[:, None]
            phase_out[...] = np.asarray(phase_out, dtype=np.float64) - shift @ Wa
            W_out[...] = Wa


# ---------------------------------------------------------------------------------------
# exact kernels
# ---------------------------------------------------------------------------------------
def _scaled(X, Y, bandwidth):
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))  # small: sampled rows, tests
    Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))  # small: sampled rows, tests
    if X.shape[1] != Y.shape[1]:
        raise ValidationError(f"X and Y must have the same number of columns; got "
                              f"{X.shape[1]} and {Y.shape[1]}")
    s = _check_input_scale(bandwidth, X.shape[1])
    return X / s, Y / s


def laplacian_kernel(X, Y, bandwidth, dtype=np.float64):
    """Exact Laplacian Gram matrix ``exp(-sum_i |x_i - y_i| / bandwidth_i)``.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.spectral import laplacian_kernel
    >>> laplacian_kernel(np.array([[0.0, 0.0]]), np.array([[1.0, -1.0]]), 2.0).round(4).tolist()
    [[0.3679]]
    """
    from scipy.spatial.distance import cdist

    X, Y = _scaled(X, Y, bandwidth)
    return np.exp(-cdist(X, Y, "cityblock")).astype(_check_dtype(dtype))


def cauchy_kernel(X, Y, bandwidth, dtype=np.float64):
    """Exact Cauchy Gram matrix ``prod_i 1 / (1 + (x_i - y_i)^2 / bandwidth_i^2)``.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.spectral import cauchy_kernel
    >>> cauchy_kernel(np.array([[0.0, 0.0]]), np.array([[1.0, 2.0]]), 1.0).round(4).tolist()
    [[0.1]]
    """
    X, Y = _scaled(X, Y, bandwidth)
    G = np.ones((len(X), len(Y)))
    for i in range(X.shape[1]):
        G /= 1.0 + (X[:, i, None] - Y[None, :, i]) ** 2
    return G.astype(_check_dtype(dtype))


def matern_kernel(X, Y, bandwidth, dtype=np.float64, nu=1.5):
    """Exact Matern Gram matrix of smoothness ``nu`` (1/2, 3/2 or 5/2) and length scale
    ``bandwidth``: with ``t = sqrt(2 nu) ||x - y|| / l``, ``exp(-t)``, ``(1 + t) exp(-t)``,
    ``(1 + t + t^2 / 3) exp(-t)``.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.spectral import matern_kernel
    >>> matern_kernel(np.zeros((1, 1)), np.ones((1, 1)), 1.0, nu=0.5).round(4).tolist()
    [[0.3679]]
    """
    from scipy.spatial.distance import cdist

    if nu not in MATERN_NUS:
        raise ValidationError(f"nu must be one of {list(MATERN_NUS)}; got {nu!r}")
    X, Y = _scaled(X, Y, bandwidth)
    t = math.sqrt(2.0 * nu) * cdist(X, Y, "euclidean")
    poly = {0.5: 1.0, 1.5: 1.0 + t, 2.5: 1.0 + t + t * t / 3.0}[nu]
    return (poly * np.exp(-t)).astype(_check_dtype(dtype))


def arccos_kernel(X, Y, bandwidth, dtype=np.float64, order=1):
    """Exact arc-cosine Gram matrix of order ``n`` (Cho and Saul):
    ``||x||^n ||y||^n J_n(theta) / pi`` on the inputs divided by ``bandwidth``, with
    ``J_0 = pi - theta``, ``J_1 = sin theta + (pi - theta) cos theta``,
    ``J_2 = 3 sin theta cos theta + (pi - theta)(1 + 2 cos^2 theta)``; 0 where a row is 0.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.spectral import arccos_kernel
    >>> x = np.array([[1.0, 0.0]]); y = np.array([[0.0, 2.0]])
    >>> arccos_kernel(x, y, 1.0, order=0).tolist(), arccos_kernel(x, x, 1.0, order=1).tolist()
    ([[0.5]], [[1.0]])
    """
    if order not in ARCCOS_ORDERS:
        raise ValidationError(f"order must be one of {list(ARCCOS_ORDERS)}; got {order!r}")
    X, Y = _scaled(X, Y, bandwidth)
    nx, ny = np.linalg.norm(X, axis=1), np.linalg.norm(Y, axis=1)
    outer = nx[:, None] * ny[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(outer > 0, (X @ Y.T) / outer, 0.0)
    c = np.clip(c, -1.0, 1.0)
    theta = np.arccos(c)
    s = np.sqrt(np.maximum(1.0 - c * c, 0.0))
    J = {0: np.pi - theta, 1: s + (np.pi - theta) * c,
         2: 3.0 * s * c + (np.pi - theta) * (1.0 + 2.0 * c * c)}[order]
    G = outer ** order * J / np.pi
    return np.where(outer > 0, G, 0.0).astype(_check_dtype(dtype))
