"""Kernels and their random feature maps (a table of feature maps, seed-addressable blocks),
feature cache, bandwidth.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.features import block_params, feature_scale, median_heuristic
>>> W, b = block_params(seed=0, block_id=0, n_features_in=4, block_size=8, bandwidth=1.0)
>>> W.shape, b.shape, feature_scale(8)
((4, 8), (8,), 0.5)
"""

from ooc_kernels.features.bandwidth import median_heuristic
from ooc_kernels.features.blocks import (
    BlockSource,
    block_cache_key,
    rff_map,
    stacked_block_params,
)
from ooc_kernels.features.cache import BlockCache, default_cache, set_cache_budget
from ooc_kernels.features.maps import (
    FEATURE_MAPS,
    FeatureMap,
    available_kernels,
    get_feature_map,
    kernel_function,
    kernel_settings,
    kernel_spec,
)
from ooc_kernels.features.rbf import (
    block_params,
    feature_scale,
    philox_normals,
    philox_uniforms,
    rbf_kernel,
)
from ooc_kernels.features import sums  # registers the "sum" row of the table  # noqa: E402
from ooc_kernels.features import hierarchical  # registers its row  # noqa: E402,F401
from ooc_kernels.features.objects import Kernel  # noqa: E402

__all__ = [
    "FEATURE_MAPS",
    "BlockCache",
    "BlockSource",
    "FeatureMap",
    "Kernel",
    "available_kernels",
    "get_feature_map",
    "kernel_function",
    "kernel_settings",
    "kernel_spec",
    "block_cache_key",
    "block_params",
    "default_cache",
    "feature_scale",
    "median_heuristic",
    "philox_normals",
    "philox_uniforms",
    "rbf_kernel",
    "rff_map",
    "set_cache_budget",
    "stacked_block_params",
]
