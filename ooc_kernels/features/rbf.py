"""The Gaussian RBF kernel and its seed-addressable random Fourier frequencies.

This module is the Gaussian entry of the feature-map table
(:data:`ooc_kernels.features.maps.FEATURE_MAPS`): its frequency sampler
(:class:`BlockWriter`, :func:`block_params`), its normalisation (:func:`feature_scale`) and
its exact kernel (:func:`rbf_kernel`).  Blocks of any map, cached and standardized, come
from :mod:`ooc_kernels.features.blocks`.

Conventions (pinned; see ``docs/algorithms/dsg_kernels.md``)
-------------------------------------------------------------
* Kernel: ``k(x, x') = exp(-||x - x'||^2 / (2 sigma^2))``; ``bandwidth`` is ``sigma``.
* A block has ``r = block_size`` features ``z(x) = sqrt(2/r) cos(W^T x + b)`` with
  ``W`` of shape ``(d, r)``, columns ``omega_k ~ N(0, sigma^-2 I_d)``, and phases
  ``b_k ~ U[0, 2 pi)``.  ``sum_k z_k(x) z_k(x')`` is an unbiased estimate of ``k(x, x')``.
* Block ``j`` of a model with feature seed ``s`` depends on ``(s, j)`` only.  It is drawn from
  the raw 64-bit output of ``numpy.random.Philox(key=[s, j])`` (``s`` is key word 0, ``j``
  key word 1, counter starting at 0), never through ``numpy.random.Generator`` methods,
  whose algorithms may change between numpy versions:

  1. ``u(w) = (w >> 11) * 2**-53`` maps a raw word to ``[0, 1)``.
  2. ``P = ceil(d r / 2)`` Box-Muller pairs use words ``0 .. 2P-1``: for pair ``i``,
     ``rho = sqrt(-2 log(1 - u(w[2i])))`` (``1 - u`` lies in ``(0, 1]``, which guards
     ``log 0``), ``theta = 2 pi u(w[2i+1])``, normals ``n[2i] = rho cos theta`` and
     ``n[2i+1] = rho sin theta``.  The first ``d r`` normals fill ``W`` in C order (row
     ``i`` is input coordinate ``i``) and are divided by ``sigma``.
  3. The next ``r`` words give the phases ``b_k = 2 pi u(w[2P + k])``.

  Everything is computed in float64 and cast to the requested dtype at the end.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.features.rbf import block_params, rbf_kernel
>>> from ooc_kernels.features.blocks import rff_map
>>> W, b = block_params(seed=7, block_id=3, n_features_in=2, block_size=4, bandwidth=1.5)
>>> W.shape, b.shape, W.flags.c_contiguous
((2, 4), (4,), True)
>>> X = np.array([[0.0, 0.0], [0.3, -0.2]])
>>> Z = rff_map(X, seed=0, block_ids=np.arange(256), bandwidth=1.0, block_size=64)
>>> K_hat = Z @ Z.T / 256                      # average of 256 block estimates
>>> bool(abs(K_hat[0, 1] - rbf_kernel(X, X, 1.0)[0, 1]) < 0.02)
True
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from ooc_kernels.exceptions import ValidationError

__all__ = [
    "MAX_BANDWIDTH",
    "MIN_BANDWIDTH",
    "BlockWriter",
    "block_params",
    "feature_scale",
    "philox_normals",
    "philox_uniforms",
    "rbf_kernel",
]

#: The widths a Gaussian kernel accepts: ``sigma^2``, ``1 / (2 sigma^2)`` (the Gram exponent)
#: and the frequencies ``omega / sigma`` of a float32 feature block stay finite and non-zero
#: inside this range; a width outside it is refused with a ValidationError instead of an
#: overflow.  (A width is in the units of the inputs the kernel sees: standardized, by
#: default, where useful widths lie near 1.)
MIN_BANDWIDTH = 1e-30
MAX_BANDWIDTH = 1e30

_TWO_PI = 2.0 * math.pi
_U64_MAX = 2**64 - 1
_ALLOWED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


# ---------------------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------------------
def _check_uint64(value, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Integral, np.integer)):
        raise ValidationError(
            f"{name} must be an integer in [0, 2**64); got {value!r} of type {type(value).__name__}"
        )
    value = int(value)
    if not 0 <= value <= _U64_MAX:
        raise ValidationError(f"{name} must be an integer in [0, 2**64); got {value}")
    return value


def _check_positive_int(value, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Integral, np.integer)):
        raise ValidationError(f"{name} must be a positive integer; got {value!r}")
    value = int(value)
    if value < 1:
        raise ValidationError(f"{name} must be a positive integer; got {value}")
    return value


def _check_bandwidth(bandwidth) -> float:
    if isinstance(bandwidth, (bool, np.bool_)) or not isinstance(bandwidth, (Real, np.floating, np.integer)):
        raise ValidationError(
            f"bandwidth must be a positive finite number (sigma in exp(-||x-x'||^2 / (2 sigma^2))); "
            f"got {bandwidth!r}"
        )
    bw = float(bandwidth)
    if not (math.isfinite(bw) and bw > 0):
        raise ValidationError(
            f"bandwidth must be a positive finite number (sigma in exp(-||x-x'||^2 / (2 sigma^2))); "
            f"got {bandwidth!r}"
        )
    if not MIN_BANDWIDTH <= bw <= MAX_BANDWIDTH:
        raise ValidationError(
            f"bandwidth={bandwidth!r} is outside [{MIN_BANDWIDTH:g}, {MAX_BANDWIDTH:g}], where "
            "sigma^2 and 1 / (2 sigma^2) stay finite; rescale the inputs (standardize=True) "
            "and pass a width in their units."
        )
    return bw


def _check_input_scale(bandwidth, d: int) -> np.ndarray:
    """The per-input scale vector ``(d,)`` of a bandwidth (a number: the same in every
    input coordinate; an array: one positive finite value per coordinate)."""
    if np.ndim(bandwidth) == 0:
        return np.full(d, _check_bandwidth(bandwidth))
    scale = np.asarray(bandwidth, dtype=np.float64)
    if scale.shape != (d,) or not (np.isfinite(scale).all() and (scale > 0).all()):
        raise ValidationError(
            f"bandwidth must be a positive finite number or {d} of them (one per input "
            f"coordinate); got an array of shape {scale.shape} with values {scale.tolist()!r}"
        )
    return scale


def _check_dtype(dtype) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise ValidationError(f"dtype must be float32 or float64; got {dtype!r}") from None
    if dt not in _ALLOWED_DTYPES:
        raise ValidationError(f"dtype must be float32 or float64; got {dt}")
    return dt


# ---------------------------------------------------------------------------------------
# raw counter-based stream
# ---------------------------------------------------------------------------------------
def _raw_words(seed: int, block_id: int, n_words: int) -> np.ndarray:
    bitgen = np.random.Philox(key=np.array([seed, block_id], dtype=np.uint64))
    return bitgen.random_raw(n_words)


def _to_unit(words: np.ndarray) -> np.ndarray:
    """``(w >> 11) * 2**-53`` in float64: 53 random bits, values in ``[0, 1)``."""
    return (words >> np.uint64(11)).astype(np.float64) * (2.0**-53)


def _box_muller(words: np.ndarray, n: int) -> np.ndarray:
    """First ``n`` normals from ``2 * ceil(n / 2)`` raw words (pairs ``(w[2i], w[2i+1])``)."""
    u = _to_unit(words)
    rho = np.sqrt(-2.0 * np.log1p(-u[0::2]))  # log(1 - u), 1 - u in (0, 1]
    theta = _TWO_PI * u[1::2]
    out = np.empty(2 * rho.shape[0], dtype=np.float64)
    out[0::2] = rho * np.cos(theta)
    out[1::2] = rho * np.sin(theta)
    return out[:n]


def philox_normals(seed: int, block_id: int, n: int) -> np.ndarray:
    """The first ``n`` standard normals of the stream ``(seed, block_id)`` (float64).

    These are exactly the (unscaled) weights that :func:`block_params` uses, in C order.

    Examples
    --------
    >>> from ooc_kernels.features.rbf import philox_normals
    >>> z = philox_normals(0, 0, 100_000)
    >>> bool(abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02)
    True
    """
    seed = _check_uint64(seed, "seed")
    block_id = _check_uint64(block_id, "block_id")
    n = int(n)
    n_pairs = (n + 1) // 2
    return _box_muller(_raw_words(seed, block_id, 2 * n_pairs), n)


def philox_uniforms(seed: int, block_id: int, n: int, skip: int = 0) -> np.ndarray:
    """Uniforms on ``[0, 1)`` from raw words ``skip .. skip + n - 1`` of stream ``(seed, block_id)``.

    Examples
    --------
    >>> from ooc_kernels.features.rbf import philox_uniforms
    >>> u = philox_uniforms(1, 2, 5)
    >>> bool(((u >= 0) & (u < 1)).all())
    True
    """
    seed = _check_uint64(seed, "seed")
    block_id = _check_uint64(block_id, "block_id")
    words = _raw_words(seed, block_id, int(skip) + int(n))[int(skip):]
    return _to_unit(words)


#: Raw words turned into normals at once by :class:`BlockWriter` (even).  Generating a block
#: in pieces keeps its float64 temporaries in cache and off fresh pages: 2^14 words (128 KiB
#: per float64 temporary) measured 1.5-3x faster than whole-block numpy temporaries on the
#: 2-core development VM, where page faults on fresh allocations dominate.
_PIECE_WORDS = 1 << 14


class BlockWriter:
    """Generate feature blocks of one model into caller-owned arrays, bit-identical to
    :func:`block_params` (and to its ``affine`` form in
    :func:`ooc_kernels.features.blocks.stacked_block_params`).

    The Box-Muller transform runs over pieces of ``_PIECE_WORDS`` raw words with reused
    scratch arrays (the same numpy operations on the same contiguous inputs as the
    one-shot formula, so the same bits), so generating a block allocates no ``O(d r)``
    float64 temporaries besides one float64 block kept for the division by the bandwidth
    (and the ``shift @ W`` of the affine form).

    Parameters
    ----------
    seed : int
    n_features_in, block_size, dtype
        As in :func:`block_params`.
    bandwidth : float or ndarray of shape (d,)
        The input scale: row ``i`` of ``W`` (input coordinate ``i``) is divided by
        ``bandwidth[i]``; a number is the same bandwidth in every coordinate (the isotropic
        kernel of :func:`block_params`, bit for bit).
    affine : tuple (shift, scale) of ndarray (d,), optional
        As in :func:`ooc_kernels.features.blocks.stacked_block_params`.

    Attributes
    ----------
    scratch_nbytes : int
        Bytes of the scratch arrays this writer holds (one float64 block plus the pieces).
    input_scale : ndarray of shape (d,), float64
        The bandwidth of every input coordinate.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.rbf import BlockWriter, block_params
    >>> writer = BlockWriter(7, 3, 5, 1.5, np.float32)
    >>> W, b = np.empty((3, 5), np.float32), np.empty(5, np.float32)
    >>> writer.write(2, W, b)
    >>> W2, b2 = block_params(7, 2, 3, 5, 1.5, np.float32)
    >>> bool(np.array_equal(W, W2) and np.array_equal(b, b2))
    True
    """

    def __init__(self, seed, n_features_in, block_size, bandwidth, dtype=np.float64,
                 affine=None):
        self.seed = _check_uint64(seed, "seed")
        self.d = d = _check_positive_int(n_features_in, "n_features_in")
        self.r = r = _check_positive_int(block_size, "block_size")
        self.input_scale = _check_input_scale(bandwidth, d)
        self.dtype = _check_dtype(dtype)
        if affine is not None:
            affine = tuple(np.asarray(a, dtype=np.float64).reshape(d) for a in affine)
        self.affine = affine
        n = d * r
        self._n_pairs = (n + 1) // 2
        piece = min(_PIECE_WORDS, 2 * self._n_pairs)
        half = piece // 2
        self._u = np.empty(piece)
        self._a = np.empty(half)
        self._b = np.empty(half)
        self._c = np.empty(half)
        self._W64 = np.empty(2 * self._n_pairs)
        self.scratch_nbytes = int(self._u.nbytes + 3 * self._a.nbytes + self._W64.nbytes
                                  + piece * 8)  # + the raw words of one piece

    @property
    def block_nbytes(self) -> int:
        """Bytes of one block's parameters (``W`` and ``phase``) in the writer's dtype."""
        return (self.d + 1) * self.r * self.dtype.itemsize

    def write(self, block_id, W_out, phase_out) -> None:
        """Write block ``block_id`` into ``W_out`` (d, r) and ``phase_out`` (r,)."""
        d, r = self.d, self.r
        n = d * r
        bitgen = np.random.Philox(key=np.array([self.seed, int(block_id)], dtype=np.uint64))
        W64 = self._W64
        total = 2 * self._n_pairs
        done = 0
        shift = np.uint64(11)
        while done < total:
            k = min(self._u.shape[0], total - done)
            words = bitgen.random_raw(k)
            np.right_shift(words, shift, out=words)
            u = self._u[:k]
            u[...] = words  # uint64 -> float64, as .astype(np.float64)
            u *= 2.0**-53
            h = k // 2
            a, b, c = self._a[:h], self._b[:h], self._c[:h]
            np.negative(u[0::2], out=a)
            np.log1p(a, out=a)
            np.multiply(-2.0, a, out=a)
            np.sqrt(a, out=a)  # rho
            np.multiply(_TWO_PI, u[1::2], out=b)  # theta
            np.cos(b, out=c)
            np.multiply(a, c, out=W64[done:done + k:2])
            np.sin(b, out=c)
            np.multiply(a, c, out=W64[done + 1:done + k:2])
            done += k
        flat = W64[:n]
        flat.reshape(d, r)[...] /= self.input_scale[:, None]  # row i: input coordinate i
        phase64 = _TWO_PI * _to_unit(bitgen.random_raw(r))
        W_out[...] = flat.reshape(d, r)
        phase_out[...] = phase64
        if self.affine is not None:  # as _affine_block: from the parameters in the dtype
            shift_, scale = self.affine
            Wa = flat.reshape(d, r)
            Wa[...] = W_out
            Wa /= scale[:, None]
            phase_out[...] = np.asarray(phase_out, dtype=np.float64) - shift_ @ Wa
            W_out[...] = Wa


def _generate_block(seed: int, block_id: int, d: int, r: int, bw: float, dt: np.dtype):
    W = np.empty((d, r), dtype=dt)
    phase = np.empty(r, dtype=dt)
    BlockWriter(seed, d, r, bw, dt).write(block_id, W, phase)
    return W, phase


def _generate_block_ref(seed: int, block_id: int, d: int, r: int, bw: float, dt: np.dtype):
    """The one-shot formula of the module docstring (the twin of :class:`BlockWriter`)."""
    n = d * r
    n_pairs = (n + 1) // 2
    words = _raw_words(seed, block_id, 2 * n_pairs + r)
    normals = _box_muller(words[: 2 * n_pairs], n)
    W64 = (normals / bw).reshape(d, r)
    phase64 = _TWO_PI * _to_unit(words[2 * n_pairs :])
    W = np.ascontiguousarray(W64, dtype=dt)
    phase = np.ascontiguousarray(phase64, dtype=dt)
    return W, phase


# ---------------------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------------------
def feature_scale(block_size: int) -> float:
    """Normalisation ``sqrt(2 / r)`` of a block of ``r`` features.

    Examples
    --------
    >>> from ooc_kernels.features.rbf import feature_scale
    >>> feature_scale(1) == 2 ** 0.5, feature_scale(8)
    (True, 0.5)
    """
    r = _check_positive_int(block_size, "block_size")
    return math.sqrt(2.0 / r)


def block_params(seed, block_id, n_features_in, block_size, bandwidth, dtype=np.float64):
    """Frequencies and phases of feature block ``block_id`` of the model with seed ``seed``.

    Parameters
    ----------
    seed, block_id : int
        Integers in ``[0, 2**64)``; together they are the 128-bit Philox key.
    n_features_in : int
        Input dimension ``d``.
    block_size : int
        Number of features ``r`` in the block.
    bandwidth : float
        ``sigma`` of the Gaussian kernel ``exp(-||x - x'||^2 / (2 sigma^2))``.
    dtype : {np.float64, np.float32}
        Output dtype (generation is always float64, then cast).

    Returns
    -------
    W : ndarray of shape (d, r), C-contiguous
        Columns ``omega_k ~ N(0, sigma^-2 I_d)``.
    phase : ndarray of shape (r,)
        ``b_k ~ U[0, 2 pi)``.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.rbf import block_params
    >>> W1, b1 = block_params(5, 0, 3, 2, 1.0)
    >>> W2, b2 = block_params(5, 0, 3, 2, 1.0)
    >>> bool(np.array_equal(W1, W2) and np.array_equal(b1, b2))
    True
    >>> W3, _ = block_params(5, 0, 3, 2, 2.0)      # bandwidth only rescales
    >>> bool(np.allclose(W3 * 2.0, W1))
    True
    """
    seed = _check_uint64(seed, "seed")
    block_id = _check_uint64(block_id, "block_id")
    d = _check_positive_int(n_features_in, "n_features_in")
    r = _check_positive_int(block_size, "block_size")
    bw = _check_bandwidth(bandwidth)
    dt = _check_dtype(dtype)
    return _generate_block(seed, block_id, d, r, bw, dt)


def rbf_kernel(X, Y, bandwidth, dtype=np.float64):
    """Exact Gaussian Gram matrix ``exp(-||x_i - y_j||^2 / (2 sigma^2))``.

    Computed in float64 by tiles of ``_GRAM_TILE_ROWS`` rows of ``X`` and stored in
    ``dtype``: the memory is the ``(n, m)`` result plus one tile.  For a few hundred or
    thousand sampled rows (setup rules, tests), never a whole data set.

    Parameters
    ----------
    X : array_like of shape (n, d)
    Y : array_like of shape (m, d)
    bandwidth : float
        ``sigma``.
    dtype : {np.float64, np.float32}
        Dtype of the result.

    Returns
    -------
    ndarray of shape (n, m)

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.rbf import rbf_kernel
    >>> K = rbf_kernel(np.array([[0.0], [1.0]]), np.array([[0.0]]), 1.0)
    >>> np.round(K.ravel(), 4).tolist()
    [1.0, 0.6065]
    """
    from scipy.spatial.distance import cdist

    bw = _check_bandwidth(bandwidth)
    dt = _check_dtype(dtype)
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))  # small: sampled rows, tests
    Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))  # small: sampled rows, tests
    if X.shape[1] != Y.shape[1]:
        raise ValidationError(f"X and Y must have the same number of columns; got {X.shape[1]} and {Y.shape[1]}")
    G = np.empty((len(X), len(Y)), dtype=dt)
    scale = -1.0 / (2.0 * bw ** 2)
    for start in range(0, len(X), _GRAM_TILE_ROWS):
        tile = cdist(X[start:start + _GRAM_TILE_ROWS], Y, "sqeuclidean")
        tile *= scale
        G[start:start + len(tile)] = np.exp(tile, out=tile)
    return G


#: Rows of the Gram matrix computed at once by :func:`rbf_kernel`.
_GRAM_TILE_ROWS = 128
