"""Predictions of a DSG model on a chunk, block group by block group, and the two small
helpers the chunk steps share: the standardization folded into the blocks and the feature
map of a configuration.

No Dask here.
"""

from __future__ import annotations

import functools

import numpy as np

from ooc_kernels.families.dsg.kernels_threads import predict
from ooc_kernels.features.blocks import stacked_block_params
from ooc_kernels.features.cache import default_cache
from ooc_kernels.features.maps import FeatureMap, get_feature_map

# Block parameters generated at once when predicting (bounds a prediction's extra memory).
_PREDICT_GROUP_BYTES = 32 * 2**20


@functools.lru_cache(maxsize=64)
def _affine(config):
    """``(shift, scale)`` of the standardized input, or None (cached per config)."""
    if config.x_shift is None:
        return None
    return np.asarray(config.x_shift, dtype=np.float64), np.asarray(config.x_scale,
                                                                   dtype=np.float64)


def feature_map(config) -> FeatureMap:
    """The feature map of ``config`` (:func:`ooc_kernels.features.maps.get_feature_map`)."""
    return get_feature_map(config.kernel)


def _predict_chunk(config, coefs: np.ndarray, n_used: int,
                   X: np.ndarray, mapped: bool = False) -> np.ndarray:
    """Decision values of rows ``X``; ``mapped``: ``X`` holds the rows the blocks read
    already (``FeatureMap.map_rows``: ``psi(X)`` for hierarchical features)."""
    dtype = np.dtype(config.dtype)
    X = np.ascontiguousarray(X, dtype=dtype)
    F = np.zeros((X.shape[0], config.n_outputs), dtype=dtype)
    if n_used == 0 or X.shape[0] == 0:
        return F
    fmap = feature_map(config)
    if not mapped:
        X = fmap.map_rows(X, _affine(config), dtype)
    per_block = X.shape[1] * config.block_size * dtype.itemsize
    group = max(1, _PREDICT_GROUP_BYTES // max(per_block, 1))
    scale = fmap.feature_scale(config.block_size)
    cache = default_cache()
    for lo in range(0, n_used, group):
        ids = np.arange(lo, min(lo + group, n_used))
        W, phase = stacked_block_params(config.feature_seed, ids, config.n_features_in,
                                        config.block_size, config.bandwidth, dtype,
                                        cache=cache, affine=_affine(config), kernel=fmap)
        coef = np.ascontiguousarray(coefs[ids], dtype=dtype)
        F += predict(X, W, phase, coef, scale, fmap.nonlinearity)
    return F
