"""Random Fourier feature evaluation: ``scale * cos(X @ W + phase)``.

The cosine is the costly non-GEMM part of every DSG step, so float32 arrays use a
branch-free polynomial that LLVM vectorises (AVX2/AVX-512): range reduction
``t = x - 2 pi round(x / 2 pi)`` with a three-term Cody-Waite split of ``2 pi``, then a
degree-12 even minimax polynomial on ``[-pi, pi]`` (approximation error 1.1e-8; with float32
rounding the absolute error is below 1e-6 for ``|x| <= 1e3``, see the tests).  Float64 arrays
use ``np.cos`` (libm), the accurate reference path.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels._jit.rff import rff_transform, rff_transform_ref
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(5, 3)); W = rng.normal(size=(3, 4)); b = rng.uniform(0, 6.28, 4)
>>> Z = rff_transform(X, W, b, 0.5)
>>> Z.shape, bool(np.allclose(Z, rff_transform_ref(X, W, b, 0.5)))
((5, 4), True)
"""

from __future__ import annotations

import math

import numpy as np

from numba.core import types
from numba.extending import overload

from ooc_kernels._jit._cache import njit
from ooc_kernels._jit.coupled import COUPLED, POLY2, SQRT, coupled_inplace, coupled_inplace_ref
from ooc_kernels._jit.segments import (
    n_segments,
    segment_kind,
    segment_multiplier,
    segment_start,
    segment_stop,
)
from ooc_kernels.exceptions import ValidationError

__all__ = ["COS_AFFINE", "COS_WIDE", "NONLINEARITIES", "RELU", "RELU_SQUARED", "STEP",
           "cos_affine_inplace", "cos_affine_inplace_ref", "features_inplace",
           "features_inplace_ref", "rff_transform", "rff_transform_ref"]

#: Id of the nonlinearity ``scale * cos(P + phase)`` (random Fourier features).
COS_AFFINE = 0
#: Id of ``scale * cos(P + phase)`` with libm's full range reduction in every dtype: for
#: heavy-tailed frequencies (Cauchy, Student-t), whose phases can exceed the float32
#: polynomial's range.
COS_WIDE = 1
#: Id of ``scale * Theta(P + phase)`` (1 where positive, else 0): arc-cosine order 0.
STEP = 2
#: Id of ``scale * max(P + phase, 0)``: arc-cosine order 1.
RELU = 3
#: Id of ``scale * max(P + phase, 0)^2``: arc-cosine order 2.
RELU_SQUARED = 4
#: Every nonlinearity the kernels apply to ``X @ W``, by name: a feature map
#: (:mod:`ooc_kernels.features.maps`) names its nonlinearity by one of these ids, and
#: :func:`features_inplace` dispatches on it.
NONLINEARITIES = {"cos_affine": COS_AFFINE, "cos_wide": COS_WIDE, "step": STEP,
                  "relu": RELU, "relu_squared": RELU_SQUARED, **COUPLED}

# 2 pi = _C1 + _C2 + _C3 (Cody-Waite): _C1 has 9 significant bits so k * _C1 is exact.
_INV_2PI = np.float32(1.0 / (2.0 * math.pi))
_C1 = np.float32(6.28125)
_C2 = np.float32(0.0019353071693331003)
_C3 = np.float32(1.0253131677018246e-11)
# cos(t) ~ sum_k P_k t^(2k) on [-pi, pi] (near-minimax, max error 1.1e-8)
_P0 = np.float32(0.9999999891435573)
_P1 = np.float32(-0.49999989182862675)
_P2 = np.float32(0.04166649019355003)
_P3 = np.float32(-0.001388780782799181)
_P4 = np.float32(2.47699662363288e-05)
_P5 = np.float32(-2.707977544078033e-07)
_P6 = np.float32(1.724760612109577e-09)
_HALF = np.float32(0.5)


@njit(cache=True, nogil=True, fastmath={"contract"})
def cos_affine_inplace(P, phase, scale):
    """Overwrite ``P`` (n, r), C-contiguous, with ``scale * cos(P + phase)``.

    Float32: vectorised polynomial cosine; float64: ``np.cos``.  Twin:
    :func:`cos_affine_inplace_ref`.
    """
    n, r = P.shape
    if P.itemsize == 4:
        s32 = np.float32(scale)
        for i in range(n):
            row = P[i]
            for k in range(r):
                x = row[k] + phase[k]
                q = np.floor(x * _INV_2PI + _HALF)
                t = x - q * _C1
                t = t - q * _C2
                t = t - q * _C3
                u = t * t
                p = _P6
                p = p * u + _P5
                p = p * u + _P4
                p = p * u + _P3
                p = p * u + _P2
                p = p * u + _P1
                p = p * u + _P0
                row[k] = s32 * p
    else:
        for i in range(n):
            row = P[i]
            for k in range(r):
                row[k] = scale * np.cos(row[k] + phase[k])


def cos_affine_inplace_ref(P, phase, scale):
    """Numpy twin of :func:`cos_affine_inplace` (``np.cos`` in the array's dtype)."""
    P[...] = P.dtype.type(scale) * np.cos(P + phase)


@njit(cache=True, nogil=True)
def _pointwise_inplace(kind, P, phase, scale):
    """``scale * f(P + phase)`` for the ids other than :data:`COS_AFFINE`, computed in
    float64 and stored in ``P``'s dtype.  Twin: :func:`_pointwise_inplace_ref`."""
    n, r = P.shape
    for i in range(n):
        row = P[i]
        for k in range(r):
            x = np.float64(row[k]) + np.float64(phase[k])
            if kind == COS_WIDE:
                v = math.cos(x)
            elif x <= 0.0:
                v = 0.0
            elif kind == STEP:
                v = 1.0
            elif kind == RELU:
                v = x
            else:
                v = x * x
            row[k] = scale * v


def _pointwise_inplace_ref(kind, P, phase, scale):
    """Numpy twin of :func:`_pointwise_inplace`."""
    x = P.astype(np.float64) + phase.astype(np.float64)
    pos = x > 0.0
    v = {COS_WIDE: lambda: np.cos(x), STEP: lambda: pos * 1.0,
         RELU: lambda: np.where(pos, x, 0.0), RELU_SQUARED: lambda: np.where(pos, x * x, 0.0)}
    P[...] = scale * v[kind]()


@njit(cache=True, nogil=True)
def _single_inplace(kind, P, phase, scale):
    """:func:`features_inplace` of one nonlinearity id."""
    if kind == COS_AFFINE:
        cos_affine_inplace(P, phase, scale)
    elif kind == COS_WIDE or kind == STEP or kind == RELU or kind == RELU_SQUARED:
        _pointwise_inplace(kind, P, phase, scale)
    elif POLY2 <= kind <= SQRT:
        coupled_inplace(kind, P, phase, scale)
    else:
        raise ValidationError("features_inplace: unknown nonlinearity id; the ids are "
                              "the values of ooc_kernels._jit.rff.NONLINEARITIES")


@njit(cache=True, nogil=True)
def _segments_inplace(layout, P, phase, scale):
    """:func:`features_inplace` of a layout (:mod:`ooc_kernels._jit.segments`): each term's
    columns through its own nonlinearity and multiplier."""
    r = P.shape[1]
    for t in range(n_segments(layout)):
        lo, hi = segment_start(layout, t, r), segment_stop(layout, t, r)
        if hi > lo:
            _single_inplace(segment_kind(layout, t), P[:, lo:hi], phase[lo:hi],
                            scale * segment_multiplier(layout, t, r))


def _dispatch(kind, P, phase, scale):
    """The dispatch of :func:`features_inplace` on the type of ``kind`` (an id, or a layout
    tuple), as the numba kernels compile it; called from Python it runs the twin."""
    features_inplace_ref(kind, P, phase, scale)


@overload(_dispatch, jit_options={"nogil": True})
def _dispatch_typed(kind, P, phase, scale):
    if isinstance(kind, types.BaseTuple):
        return lambda kind, P, phase, scale: _segments_inplace(kind, P, phase, scale)
    return lambda kind, P, phase, scale: _single_inplace(kind, P, phase, scale)


@njit(cache=True, nogil=True)
def features_inplace(kind, P, phase, scale):
    """Overwrite ``P = X @ W`` (n, r) with the features of nonlinearity ``kind``.

    ``kind`` is an id of :data:`NONLINEARITIES`, or the layout tuple of a block that mixes
    them (:mod:`ooc_kernels._jit.segments`); an id without a branch here raises (there is
    no default branch).  Twin: :func:`features_inplace_ref`.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels._jit.rff import COS_AFFINE, features_inplace
    >>> P = np.zeros((1, 2))
    >>> features_inplace(COS_AFFINE, P, np.array([0.0, np.pi]), 2.0)
    >>> P.round(6).tolist()
    [[2.0, -2.0]]
    """
    _dispatch(kind, P, phase, scale)


def features_inplace_ref(kind, P, phase, scale):
    """Numpy twin of :func:`features_inplace`.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels._jit.rff import features_inplace_ref
    >>> features_inplace_ref(99, np.zeros((1, 1)), np.zeros(1), 1.0)
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.ValidationError: unknown nonlinearity id 99; the ids are {'cos_affine': 0, 'cos_wide': 1, 'step': 2, 'relu': 3, 'relu_squared': 4, 'poly2': 5, 'poly3': 6, 'poly4': 7, 'log_polar': 8, 'sqrt': 9}
    """
    if isinstance(kind, tuple):  # a layout: the terms' columns, each with its multiplier
        r, stop = P.shape[1], 0
        for t in range(int(kind[0])):
            sub, end, weight, c = kind[1 + 4 * t:5 + 4 * t]
            start, stop = stop, int(math.floor(r * end + 0.5))
            if stop > start:
                features_inplace_ref(int(sub), P[:, start:stop], phase[start:stop],
                                     scale * math.sqrt(c * weight / (stop - start)))
        return
    if kind == COS_AFFINE:
        cos_affine_inplace_ref(P, phase, scale)
    elif kind in (COS_WIDE, STEP, RELU, RELU_SQUARED):
        _pointwise_inplace_ref(kind, P, phase, scale)
    elif kind in COUPLED.values():
        coupled_inplace_ref(kind, P, phase, scale)
    else:
        raise ValidationError(f"unknown nonlinearity id {kind!r}; the ids are {NONLINEARITIES}")


@njit(cache=True, nogil=True)
def rff_transform(X, W, phase, scale):
    """Random features ``scale * cos(X @ W + phase)``.

    Parameters
    ----------
    X : ndarray (n, d), C-contiguous, float32 or float64
    W : ndarray (d, r), C-contiguous, same dtype
    phase : ndarray (r,), same dtype
    scale : float
        Usually ``sqrt(2 / r)`` (:func:`ooc_kernels.features.rbf.feature_scale`).

    Returns
    -------
    Z : ndarray (n, r) in X's dtype

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels._jit.rff import rff_transform
    >>> Z = rff_transform(np.zeros((2, 3)), np.ones((3, 2)), np.zeros(2), 2.0)
    >>> Z.tolist()
    [[2.0, 2.0], [2.0, 2.0]]
    """
    n = X.shape[0]
    r = W.shape[1]
    if W.shape[0] != X.shape[1] or phase.shape[0] != r:
        raise ValidationError("rff_transform: shapes of X (n, d), W (d, r) and phase (r,) do not agree")
    Z = np.empty((n, r), dtype=X.dtype)
    if n == 0 or r == 0:
        return Z
    # row tiles of ~2 MiB so the cosine pass reads the GEMM output from cache
    tile = max(64, (1 << 21) // (r * X.itemsize))
    for start in range(0, n, tile):
        stop = min(start + tile, n)
        Zt = Z[start:stop]
        np.dot(X[start:stop], W, Zt)
        cos_affine_inplace(Zt, phase, scale)
    return Z


def rff_transform_ref(X, W, phase, scale):
    """Numpy twin of :func:`rff_transform`: ``scale * np.cos(X @ W + phase)`` in X's dtype."""
    X = np.asarray(X)  # one chunk (reference twin, tests only)
    return (X.dtype.type(scale) * np.cos(X @ W + phase)).astype(X.dtype, copy=False)
