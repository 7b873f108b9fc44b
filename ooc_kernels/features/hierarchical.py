"""Hierarchical features ``phi(psi(x))``: the outer kernel of the table on a fixed random
feature map of the inputs, ``k(x, y) = k_outer(psi(x), psi(y))``.

``kernel="hierarchical"`` with ``kernel_params``:

* ``inner`` (default ``"arccos(order=1)"``): a row of the table (not a sum of rows with other
  features, not a hierarchical kernel), whose ``inner_features`` (default 256) random features
  of the inputs divided by ``inner_bandwidth`` (default 1.0) are ``psi``:
  ``psi(x) = feature_scale(D) f(x @ V + c)``, ``(V, c)`` block 0 of the inner map with seed
  ``inner_seed`` (default 0; kept with the model, so ``psi`` is the same at every fit step,
  at prediction and after loading);
* ``outer`` (default ``"rbf"``): the row whose random features are computed on ``psi(x)``,
  at the estimator's ``bandwidth`` (one number: the outer kernel's width on ``psi``).

``psi`` is a row transform: each chunk becomes ``psi(X)`` (``(n, D)``, tile by tile in numba,
:func:`ooc_kernels._jit.hierarchical.inner_rows`) before the outer blocks ``(D, r)`` are
applied; the standardization of the inputs is folded into ``(V, c)``.  For a fixed ``psi``
the outer features are unbiased for ``k_outer(psi(x), psi(y))``, the exact form of the row;
as ``D`` grows, ``||psi(x) - psi(y)||^2`` tends to ``k_in(x, x) + k_in(y, y) - 2 k_in(x, y)``
and the kernel to the outer kernel of that distance (the compositional kernel).

Examples
--------
>>> import numpy as np
>>> import ooc_kernels as ok
>>> k = ok.features.kernel_function("hierarchical", inner="rbf", inner_features=4096,
...                                 bandwidth=1.0)
>>> X = np.array([[0.0, 0.0], [1.0, 0.0]])
>>> limit = np.exp(-(1 - np.exp(-0.5)))       # rbf of the limiting distance 2 - 2 k_in
>>> bool(abs(k(X, X)[0, 1] - limit) < 0.02)
True
"""

from __future__ import annotations

import dataclasses
import functools
from numbers import Integral, Real

import numpy as np

from ooc_kernels._jit.hierarchical import inner_rows
from ooc_kernels._jit.rff import RELU, RELU_SQUARED, STEP
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.features import rbf
from ooc_kernels.features.maps import FEATURE_MAPS, FeatureMap, KernelParam, get_feature_map

__all__ = ["hierarchical_kernel", "hierarchical_map", "inner_map", "psi"]

#: The inner nonlinearities whose features are never negative (the arc-cosine rows), the
#: only inner maps an additive outer kernel (non-negative inputs) accepts.
_NONNEGATIVE = (STEP, RELU, RELU_SQUARED)

#: The rows that cannot be the inner or outer map.
_NOT_NESTED = ("hierarchical",)


def _row(role):
    def check(value):
        if not isinstance(value, str) or value.split("(")[0] not in FEATURE_MAPS or \
                value.split("(")[0] in _NOT_NESTED:
            raise ValidationError(
                f"{role} must be the name of a kernel of the table other than "
                f"{list(_NOT_NESTED)}, e.g. 'rbf' or 'arccos(order=1)'; got {value!r}")
        fmap = get_feature_map(value)
        if fmap.rows is not None:
            raise ValidationError(f"{role}={value!r} transforms its rows itself; use a row "
                                  "of the table without a row transform")
        if role == "inner" and isinstance(fmap.nonlinearity, tuple):
            raise ValidationError(f"inner={value!r} mixes nonlinearities; use a single row "
                                  "(or a sum of shift-invariant rows) as the inner map")
        return fmap.name
    check.__name__ = f"check_{role}"
    return check


def _positive_int(name):
    def check(value):
        if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
            raise ValidationError(f"{name} must be a positive integer; got {value!r}")
        return int(value)
    check.__name__ = f"check_{name}"
    return check


def _seed(value):
    if isinstance(value, bool) or not isinstance(value, Integral) or \
            not 0 <= value < 2**64:
        raise ValidationError(f"inner_seed must be an integer in [0, 2**64); got {value!r}")
    return int(value)


def _positive_float(value):
    if isinstance(value, bool) or not isinstance(value, Real) or \
            not (np.isfinite(value) and value > 0):
        raise ValidationError(f"inner_bandwidth must be a positive finite number; got "
                              f"{value!r}")
    return float(value)


def inner_map(inner, inner_features):
    """The inner feature map and its block scale (``feature_scale(D)``)."""
    fmap = get_feature_map(inner)
    return fmap, fmap.feature_scale(inner_features)


def psi(X, affine, dtype, inner, inner_features, inner_bandwidth, inner_seed):
    """``psi(X)`` of rows ``X`` (n, d) in ``dtype``: ``(n, inner_features)``, C-contiguous.

    ``affine`` (``(shift, scale)`` or None): the standardization, folded into the inner block.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.hierarchical import psi
    >>> P = psi(np.ones((2, 3)), None, np.float64, "arccos(order=1)", 8, 1.0, 0)
    >>> P.shape, bool((P >= 0).all())
    ((2, 8), True)
    """
    dt = rbf._check_dtype(dtype)
    X = np.ascontiguousarray(X, dtype=dt)
    if X.ndim != 2:
        raise ValidationError(f"X must be 2-D (n_samples, n_features); got shape {X.shape}")
    fmap, scale = inner_map(inner, inner_features)
    V = np.empty((X.shape[1], inner_features), dtype=dt)
    c = np.empty(inner_features, dtype=dt)
    fmap.make_writer(inner_seed, X.shape[1], inner_features, inner_bandwidth, dt,
                     affine).write(0, V, c)
    out = np.empty((X.shape[0], inner_features), dtype=dt)
    inner_rows(X, V, c, scale, fmap.nonlinearity, out)
    return out


def _outer_bandwidth(bandwidth):
    if np.ndim(bandwidth) != 0:
        scale = np.asarray(bandwidth, dtype=np.float64).ravel()
        if scale.size == 0 or np.ptp(scale) != 0:
            raise ValidationError(
                "the hierarchical kernel takes one bandwidth (the outer kernel's width on "
                f"psi(x)); got one per input, {scale.tolist()!r}: give a number, and the "
                "inputs' scale as kernel_params={'inner_bandwidth': ...}")
        return float(scale[0])
    return rbf._check_bandwidth(bandwidth)


def hierarchical_kernel(X, Y, bandwidth, dtype=np.float64, *, inner, inner_features,
                        inner_bandwidth, inner_seed, outer):
    """Exact Gram matrix ``k_outer(psi(x_i), psi(y_j))`` at the outer ``bandwidth`` for the
    fixed ``psi`` of ``inner_seed``.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.hierarchical import hierarchical_kernel
    >>> G = hierarchical_kernel(np.zeros((1, 2)), np.zeros((1, 2)), 1.0, inner="rbf",
    ...                         inner_features=16, inner_bandwidth=1.0, inner_seed=0,
    ...                         outer="rbf")
    >>> G.tolist()
    [[1.0]]
    """
    args = (None, np.float64, inner, inner_features, inner_bandwidth, inner_seed)
    return get_feature_map(outer).gram(psi(X, *args), psi(Y, *args),
                                       _outer_bandwidth(bandwidth), dtype)


def hierarchical_map(inner, inner_features, inner_bandwidth, inner_seed, outer):
    """The :class:`~ooc_kernels.features.maps.FeatureMap` of one setting of the row."""
    out_map = get_feature_map(outer)
    if out_map.nonnegative_inputs and get_feature_map(inner).nonlinearity not in _NONNEGATIVE:
        raise ValidationError(
            f"outer={outer!r} takes non-negative inputs (it is an additive kernel of "
            f"histograms), but the inner map {inner!r} has features of both signs "
            "(standardize does not change that: psi(x) is the outer kernel's input); use an "
            "inner map with non-negative features, inner='arccos(order=0)', "
            "'arccos(order=1)' or 'arccos(order=2)', or a shift-invariant outer kernel such "
            "as outer='rbf'")
    params = dict(inner=inner, inner_features=inner_features,
                  inner_bandwidth=inner_bandwidth, inner_seed=inner_seed)

    def writer(seed, d, r, input_scale, dtype, affine):
        # the affine map (standardization) is folded into psi's inner block, not here
        bw = _outer_bandwidth(input_scale)
        return out_map.writer(seed, inner_features, r,
                              np.full(inner_features, bw), dtype, None)

    def rows(X, affine, dtype):
        return psi(X, affine, dtype, **params)

    name = "hierarchical(" + ",".join(
        f"{k}={v!r}" for k, v in {**params, "outer": outer}.items()) + ")"
    return FeatureMap(
        name=name, description=f"{outer} kernel on {inner_features} {inner} features of "
        f"x / {inner_bandwidth} (inner seed {inner_seed})", nonlinearity=out_map.nonlinearity,
        writer=writer, exact=functools.partial(hierarchical_kernel, **params, outer=outer),
        feature_scale=out_map.feature_scale, nonnegative_inputs=False, rows=rows,
        row_dim=inner_features)


def _hierarchical_row() -> FeatureMap:
    params = (KernelParam("inner", None, "arccos(order=1)", check=_row("inner"),
                          examples=("rbf",)),
              KernelParam("inner_features", None, 256, check=_positive_int("inner_features")),
              KernelParam("inner_bandwidth", None, 1.0, check=_positive_float),
              KernelParam("inner_seed", None, 0, check=_seed),
              KernelParam("outer", None, "rbf", check=_row("outer")))
    default = hierarchical_map(*(p.default for p in params))
    return dataclasses.replace(default, name="hierarchical", kernel_params=params,
                               bind=functools.lru_cache(maxsize=None)(
                                   lambda **kw: hierarchical_map(**kw)))


FEATURE_MAPS["hierarchical"] = _hierarchical_row()  # its maps are rows of the table
