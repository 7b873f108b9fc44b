"""Seed-addressable random Fourier feature blocks for the Gaussian RBF kernel.

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
>>> from ooc_kernels.features.rbf import block_params, rff_map, rbf_kernel
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

import hashlib

import math
from numbers import Integral, Real

import numpy as np

from ooc_kernels.exceptions import ValidationError
from ooc_kernels.features.cache import BlockCache

__all__ = [
    "BlockSource",
    "BlockWriter",
    "block_cache_key",
    "block_params",
    "feature_scale",
    "philox_normals",
    "philox_uniforms",
    "rbf_kernel",
    "rff_map",
    "stacked_block_params",
]

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
    return bw


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
    :func:`block_params` (and to its ``affine`` form in :func:`stacked_block_params`).

    The Box-Muller transform runs over pieces of ``_PIECE_WORDS`` raw words with reused
    scratch arrays (the same numpy operations on the same contiguous inputs as the
    one-shot formula, so the same bits), so generating a block allocates no ``O(d r)``
    float64 temporaries besides one float64 block kept for the division by the bandwidth
    (and the ``shift @ W`` of the affine form).

    Parameters
    ----------
    seed : int
    n_features_in, block_size, bandwidth, dtype
        As in :func:`block_params`.
    affine : tuple (shift, scale) of ndarray (d,), optional
        As in :func:`stacked_block_params`.

    Attributes
    ----------
    scratch_nbytes : int
        Bytes of the scratch arrays this writer holds (one float64 block plus the pieces).

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
        self.bandwidth = _check_bandwidth(bandwidth)
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
        flat /= self.bandwidth
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


def block_cache_key(seed, block_id, n_features_in, block_size, bandwidth, dtype) -> tuple:
    """Cache key of a block: everything that determines it.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.rbf import block_cache_key
    >>> block_cache_key(1, 2, 3, 4, 0.5, np.float32)
    ('rbf', 1, 2, 3, 4, 0.5, '<f4')
    """
    return (
        "rbf",
        int(seed),
        int(block_id),
        int(n_features_in),
        int(block_size),
        float(bandwidth),
        np.dtype(dtype).str,
    )


def _affine_block(params, affine, dt):
    """``(W / scale, phase - shift @ (W / scale))``: the block of the standardized input."""
    shift, scale = affine
    W = np.asarray(params[0], dtype=np.float64) / scale[:, None]
    phase = np.asarray(params[1], dtype=np.float64) - shift @ W
    return np.ascontiguousarray(W, dtype=dt), np.ascontiguousarray(phase, dtype=dt)


def _affine_tag(affine) -> tuple:
    """The part of a cache key that names the affine map (empty without one)."""
    if affine is None:
        return ()
    return (hashlib.sha1(affine[0].tobytes() + affine[1].tobytes()).hexdigest(),)


class BlockSource:
    """The feature blocks of one model, served tile by tile into caller-owned arrays.

    A block is taken from ``cache`` when it is held there; otherwise it is generated by a
    :class:`BlockWriter`.  Blocks with ids below ``cache_below`` (see :meth:`fill`) are
    stored in the cache after generation; the others are written straight into the tile and
    never stored, so that a scan over more blocks than the cache holds does not evict the
    blocks it keeps (a least-recently-used cache misses every block of a cyclic scan larger
    than itself).

    Parameters
    ----------
    seed, n_features_in, block_size, bandwidth, dtype, affine
        As in :func:`stacked_block_params`.
    cache : BlockCache, optional

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.rbf import BlockSource, stacked_block_params
    >>> from ooc_kernels.features.cache import BlockCache
    >>> cache = BlockCache(1 << 20)
    >>> source = BlockSource(3, 4, 8, 1.0, np.float32, cache=cache)
    >>> W, b = np.empty((2, 4, 8), np.float32), np.empty((2, 8), np.float32)
    >>> source.fill(5, W, b, cache_below=6)          # blocks 5 and 6; only 5 is cached
    >>> W2, b2 = stacked_block_params(3, [5, 6], 4, 8, 1.0, np.float32)
    >>> bool(np.array_equal(W, W2) and np.array_equal(b, b2)), len(cache)
    (True, 1)
    """

    def __init__(self, seed, n_features_in, block_size, bandwidth, dtype=np.float64,
                 cache: BlockCache | None = None, affine=None):
        self.writer = BlockWriter(seed, n_features_in, block_size, bandwidth, dtype, affine)
        self.cache = cache
        w = self.writer
        self._key = block_cache_key(w.seed, 0, w.d, w.r, w.bandwidth, w.dtype)
        self._tag = _affine_tag(w.affine)

    @property
    def block_nbytes(self) -> int:
        """Bytes of one block's parameters."""
        return self.writer.block_nbytes

    def key(self, block_id) -> tuple:
        """The cache key of block ``block_id`` (the key :func:`stacked_block_params` uses)."""
        k = self._key
        return k[:2] + (int(block_id),) + k[3:] + self._tag

    def fill(self, start, W_out, phase_out, cache_below=0) -> None:
        """Write blocks ``start .. start + t - 1`` into ``W_out`` (t, d, r) and
        ``phase_out`` (t, r); blocks with ids below ``cache_below`` are cached."""
        w = self.writer
        for i in range(W_out.shape[0]):
            bid = int(start) + i
            if self.cache is None:
                w.write(bid, W_out[i], phase_out[i])
                continue
            key = self.key(bid)
            if bid < cache_below:
                def make(bid=bid):
                    Wb = np.empty((w.d, w.r), dtype=w.dtype)
                    pb = np.empty(w.r, dtype=w.dtype)
                    w.write(bid, Wb, pb)
                    return Wb, pb
                params = self.cache.get_or_create(key, make)
            else:
                params = self.cache.get(key)
                if params is None:
                    w.write(bid, W_out[i], phase_out[i])
                    continue
            W_out[i] = params[0]
            phase_out[i] = params[1]


def stacked_block_params(
    seed, block_ids, n_features_in, block_size, bandwidth, dtype=np.float64,
    cache: BlockCache | None = None, affine=None,
):
    """Stack the parameters of several blocks (ids may repeat).

    Parameters
    ----------
    seed : int
    block_ids : array_like of int, shape (m,)
    n_features_in, block_size, bandwidth, dtype
        As in :func:`block_params`.
    cache : BlockCache, optional
        When given, blocks are looked up there first and stored after generation.
    affine : tuple (shift, scale) of ndarray (d,), optional
        Features of the standardized input ``(x - shift) / scale``, folded into the block:
        ``W / scale`` and ``phase - shift @ (W / scale)`` (computed in float64), so
        ``cos(x @ W' + phase') == cos(((x - shift) / scale) @ W + phase)``.

    Returns
    -------
    W : ndarray of shape (m, d, r), C-contiguous
    phase : ndarray of shape (m, r), C-contiguous

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.rbf import stacked_block_params, block_params
    >>> from ooc_kernels.features.cache import BlockCache
    >>> W, b = stacked_block_params(1, [4, 2, 4], 3, 5, 1.0, np.float32, cache=BlockCache(1 << 20))
    >>> W.shape, b.shape, W.dtype
    ((3, 3, 5), (3, 5), dtype('float32'))
    >>> bool(np.array_equal(W[1], block_params(1, 2, 3, 5, 1.0, np.float32)[0]))
    True
    """
    seed = _check_uint64(seed, "seed")
    d = _check_positive_int(n_features_in, "n_features_in")
    r = _check_positive_int(block_size, "block_size")
    bw = _check_bandwidth(bandwidth)
    dt = _check_dtype(dtype)
    ids = np.asarray(block_ids)
    if ids.ndim != 1:
        raise ValidationError(f"block_ids must be a 1-D array of integers; got shape {ids.shape}")
    if ids.size and not np.issubdtype(ids.dtype, np.integer):
        raise ValidationError(f"block_ids must be integers; got dtype {ids.dtype}")
    m = ids.shape[0]
    W = np.empty((m, d, r), dtype=dt)
    phase = np.empty((m, r), dtype=dt)
    local: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    if affine is not None:
        affine = tuple(np.asarray(a, dtype=np.float64).reshape(d) for a in affine)
    tag = _affine_tag(affine)

    def make(bid):
        params = _generate_block(seed, bid, d, r, bw, dt)
        return params if affine is None else _affine_block(params, affine, dt)

    for i, raw_id in enumerate(ids.tolist()):
        bid = _check_uint64(raw_id, "block_id")
        params = local.get(bid)
        if params is None:
            if cache is not None:
                key = block_cache_key(seed, bid, d, r, bw, dt) + tag
                params = cache.get_or_create(key, lambda bid=bid: make(bid))
            else:
                params = make(bid)
            local[bid] = params
        W[i] = params[0]
        phase[i] = params[1]
    return W, phase


def rbf_kernel(X, Y, bandwidth):
    """Exact Gaussian Gram matrix ``exp(-||x_i - y_j||^2 / (2 sigma^2))`` (float64).

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.rbf import rbf_kernel
    >>> K = rbf_kernel(np.array([[0.0], [1.0]]), np.array([[0.0]]), 1.0)
    >>> np.round(K.ravel(), 4).tolist()
    [1.0, 0.6065]
    """
    bw = _check_bandwidth(bandwidth)
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))  # small: exact Gram matrix, tests
    Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))  # small: exact Gram matrix, tests
    if X.shape[1] != Y.shape[1]:
        raise ValidationError(f"X and Y must have the same number of columns; got {X.shape[1]} and {Y.shape[1]}")
    sq = (X * X).sum(1)[:, None] + (Y * Y).sum(1)[None, :] - 2.0 * (X @ Y.T)
    np.maximum(sq, 0.0, out=sq)
    return np.exp(-sq / (2.0 * bw * bw))


def rff_map(X, seed, block_ids, bandwidth, block_size, dtype=None):
    """Full random-feature matrix ``Z`` of shape ``(n, m * r)`` (small data, tests).

    Columns ``j*r .. (j+1)*r - 1`` are block ``block_ids[j]`` scaled by ``sqrt(2 / r)``
    exactly as the DSG model uses them, so a model with coefficients ``coef`` of shape
    ``(m, r, C)`` predicts ``Z @ coef.reshape(m * r, C)``.  Each block alone estimates the
    kernel, so ``Z @ Z.T / m`` is the ``m * r``-feature estimate of the RBF Gram matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.rbf import rff_map
    >>> rff_map(np.zeros((2, 3)), 0, [0, 1], 1.0, 4).shape
    (2, 8)
    """
    X = np.asarray(X)  # small: the full feature matrix of a few rows (tests, examples)
    if X.ndim != 2:
        raise ValidationError(f"X must be 2-D (n_samples, n_features); got shape {X.shape}")
    dt = _check_dtype(dtype if dtype is not None else (X.dtype if X.dtype in _ALLOWED_DTYPES else np.float64))
    X = np.ascontiguousarray(X, dtype=dt)
    ids = np.atleast_1d(np.asarray(block_ids))
    W, phase = stacked_block_params(seed, ids, X.shape[1], block_size, bandwidth, dt)
    scale = feature_scale(block_size)
    m, r = phase.shape
    Z = np.empty((X.shape[0], m * r), dtype=dt)
    for j in range(m):
        Z[:, j * r : (j + 1) * r] = scale * np.cos(X @ W[j] + phase[j])
    return Z
