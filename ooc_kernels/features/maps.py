"""Feature maps: the one place that says how a kernel becomes random features.

A :class:`FeatureMap` is everything the library needs to know about a kernel ``k``:

* its ``name`` (the estimators' ``kernel`` option, the first item of every block cache key);
* its frequency sampler (``writer``), addressed by ``(seed, block_id)``: block ``j`` of a
  model with feature seed ``s`` is a pure function of ``(s, j)`` and the parameters;
* its nonlinearity (``nonlinearity``, an id of :data:`ooc_kernels._jit.rff.NONLINEARITIES`
  that the numba kernels dispatch on) and the normalisation ``feature_scale(r)`` of a block
  of ``r`` features, so that ``z(x) = feature_scale(r) * f(x @ W + phase)``;
* its input scale: the parameter ``bandwidth`` becomes a per-input vector of shape
  ``(d,)`` (:meth:`FeatureMap.input_scale`; an isotropic bandwidth is the same value in
  every coordinate) by which row ``i`` of ``W`` is divided, next to the standardization's
  ``x_scale``;
* the exact kernel it approximates, ``exact(X, Y, bandwidth, dtype)``, used where the
  setup needs the kernel itself (the step size, the GCV bandwidth, the curvature) and by
  the tests that check the features by Monte Carlo.

The kernels (``families/dsg/kernels*.py``), the block cache (:mod:`ooc_kernels.features.blocks`),
the DSG setup rules and the saved models all take the map from :func:`get_feature_map`.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.features.maps import get_feature_map, available_kernels
>>> available_kernels()
['rbf']
>>> rbf = get_feature_map("rbf")
>>> rbf.input_scale(2.0, 3).tolist()
[2.0, 2.0, 2.0]
>>> W, phase = rbf.block(seed=1, block_id=0, n_features_in=3, block_size=4, bandwidth=2.0)
>>> W.shape, phase.shape
((3, 4), (4,))
>>> get_feature_map("laplace")
Traceback (most recent call last):
...
ooc_kernels.exceptions.ValidationError: unknown kernel 'laplace'; the registered kernels are ['rbf']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ooc_kernels._jit.rff import COS_AFFINE, NONLINEARITIES
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.features import rbf

__all__ = ["FEATURE_MAPS", "GAUSSIAN", "FeatureMap", "available_kernels", "get_feature_map"]


@dataclass(frozen=True)
class FeatureMap:
    """The spec of one kernel's random features.

    Parameters
    ----------
    name : str
        The kernel's name (``kernel=`` of the estimators, saved with a model).
    description : str
        The kernel's formula, for messages and docs.
    nonlinearity : int
        An id of :data:`ooc_kernels._jit.rff.NONLINEARITIES`.
    writer : callable
        ``writer(seed, n_features_in, block_size, input_scale, dtype, affine)`` returns an
        object with ``write(block_id, W_out, phase_out)`` (fills ``W`` (d, r) and ``phase``
        (r,) of block ``block_id`` in ``dtype``; ``input_scale`` is the ``(d,)`` vector of
        :meth:`input_scale`), ``block_nbytes`` and ``scratch_nbytes``, like
        :class:`ooc_kernels.features.rbf.BlockWriter`.
    exact : callable
        ``exact(X, Y, bandwidth, dtype)``: the exact Gram matrix ``k(x_i, y_j)`` of a few
        rows.
    feature_scale : callable
        ``feature_scale(block_size)``: the normalisation of a block.
    params : tuple of str
        The map's parameters, as the fields of ``DSGConfig`` that hold them.
    """

    name: str
    description: str
    nonlinearity: int
    writer: Callable
    exact: Callable
    feature_scale: Callable[[int], float]
    params: tuple[str, ...] = ("bandwidth",)

    def __post_init__(self):
        if self.nonlinearity not in NONLINEARITIES.values():
            raise ValidationError(
                f"feature map {self.name!r} has nonlinearity id {self.nonlinearity!r}; the "
                f"numba kernels know {NONLINEARITIES} (add a branch in "
                "ooc_kernels/_jit/rff.py::features_inplace first)"
            )

    def input_scale(self, bandwidth, n_features_in: int) -> np.ndarray:
        """The per-input scale vector ``(d,)`` by which row ``i`` of ``W`` is divided.

        Examples
        --------
        >>> from ooc_kernels.features.maps import GAUSSIAN
        >>> GAUSSIAN.input_scale(0.5, 2).tolist()
        [0.5, 0.5]
        """
        return rbf._check_input_scale(bandwidth, int(n_features_in))

    def make_writer(self, seed, n_features_in, block_size, bandwidth, dtype=np.float64,
                    affine=None):
        """A writer of this map's blocks (see ``writer`` above).

        Examples
        --------
        >>> import numpy as np
        >>> from ooc_kernels.features.maps import GAUSSIAN
        >>> w = GAUSSIAN.make_writer(3, 2, 4, 1.0)
        >>> W, phase = np.empty((2, 4)), np.empty(4)
        >>> w.write(0, W, phase)
        >>> bool(np.array_equal(W, GAUSSIAN.block(3, 0, 2, 4, 1.0)[0]))
        True
        """
        d = int(n_features_in)
        return self.writer(seed, d, block_size, self.input_scale(bandwidth, d), dtype,
                           affine)

    def block(self, seed, block_id, n_features_in, block_size, bandwidth,
              dtype=np.float64):
        """``(W, phase)`` of block ``block_id`` of the model with seed ``seed``.

        Examples
        --------
        >>> from ooc_kernels.features.maps import GAUSSIAN
        >>> from ooc_kernels.features.rbf import block_params
        >>> import numpy as np
        >>> W, b = GAUSSIAN.block(5, 2, 3, 4, 1.5)
        >>> bool(np.array_equal(W, block_params(5, 2, 3, 4, 1.5)[0]))
        True
        """
        w = self.make_writer(seed, n_features_in, block_size, bandwidth, dtype)
        W = np.empty((w.d, w.r), dtype=w.dtype)
        phase = np.empty(w.r, dtype=w.dtype)
        w.write(rbf._check_uint64(block_id, "block_id"), W, phase)
        return W, phase

    def key(self, seed, block_id, n_features_in, block_size, bandwidth, dtype) -> tuple:
        """Cache key of a block: the map's name and everything that determines the block.

        Examples
        --------
        >>> import numpy as np
        >>> from ooc_kernels.features.maps import GAUSSIAN
        >>> GAUSSIAN.key(1, 2, 3, 4, 0.5, np.float32)
        ('rbf', 1, 2, 3, 4, 0.5, '<f4')
        """
        return (self.name, int(seed), int(block_id), int(n_features_in), int(block_size),
                float(bandwidth), np.dtype(dtype).str)

    def gram(self, X, Y, bandwidth, dtype=np.float64) -> np.ndarray:
        """The exact kernel matrix ``k(x_i, y_j)`` of a few rows.

        Examples
        --------
        >>> import numpy as np
        >>> from ooc_kernels.features.maps import GAUSSIAN
        >>> GAUSSIAN.gram(np.zeros((1, 2)), np.ones((1, 2)), 1.0).round(4).tolist()
        [[0.3679]]
        """
        return self.exact(X, Y, bandwidth, dtype)


def _gaussian_writer(seed, n_features_in, block_size, input_scale, dtype, affine):
    return rbf.BlockWriter(seed, n_features_in, block_size, input_scale, dtype, affine)


#: The Gaussian RBF kernel ``exp(-||x - x'||^2 / (2 bandwidth^2))``: frequencies
#: ``N(0, bandwidth^-2 I)`` and uniform phases (:mod:`ooc_kernels.features.rbf`), features
#: ``sqrt(2 / r) cos(x @ W + phase)``.
GAUSSIAN = FeatureMap(
    name="rbf",
    description="Gaussian RBF kernel exp(-||x - x'||^2 / (2 bandwidth^2))",
    nonlinearity=COS_AFFINE,
    writer=_gaussian_writer,
    exact=rbf.rbf_kernel,
    feature_scale=rbf.feature_scale,
)

#: Every registered feature map by name (the estimators' ``kernel`` options).
FEATURE_MAPS: dict[str, FeatureMap] = {GAUSSIAN.name: GAUSSIAN}


def available_kernels() -> list[str]:
    """Names of the registered feature maps.

    Examples
    --------
    >>> from ooc_kernels.features.maps import available_kernels
    >>> "rbf" in available_kernels()
    True
    """
    return sorted(FEATURE_MAPS)


def get_feature_map(kernel) -> FeatureMap:
    """The feature map of ``kernel`` (a registered name, or a :class:`FeatureMap`).

    Examples
    --------
    >>> from ooc_kernels.features.maps import get_feature_map, GAUSSIAN
    >>> get_feature_map("rbf") is GAUSSIAN, get_feature_map(GAUSSIAN) is GAUSSIAN
    (True, True)
    """
    if isinstance(kernel, FeatureMap):
        return kernel
    fmap = FEATURE_MAPS.get(kernel) if isinstance(kernel, str) else None
    if fmap is None:
        raise ValidationError(
            f"unknown kernel {kernel!r}; the registered kernels are {available_kernels()}"
        )
    return fmap
