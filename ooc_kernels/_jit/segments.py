"""Blocks whose columns mix nonlinearities: the layout of a sum of kernels of the table whose
terms have different features (``0.5*rbf+0.5*poly``), read by
:func:`ooc_kernels._jit.rff.features_inplace`.

A *layout* is a flat tuple of floats, the ``nonlinearity`` of such a feature map in place
of a single id: ``(T, kind_0, end_0, weight_0, c_0, ..., kind_{T-1}, end_{T-1},
weight_{T-1}, c_{T-1})``.  Term ``t`` owns the contiguous columns ``[stop(t - 1), stop(t))``
of a block of ``r`` columns, with ``stop(t) = floor(r end_t + 1/2)`` (``end_t`` the
cumulative share of the weights, ``end_{T-1} = 1``), so every block holds each term's share of
its columns, fixed by the weights.  Its columns are the term's own features
``f_t(x @ W + phase)`` (nonlinearity id ``kind_t``) times ``sqrt(c_t weight_t / r_t)``, where
``r_t`` is the term's column count and ``c_t`` its features' ``r feature_scale(r)^2`` (2 for
the cosine, step and rectified rows, 1 for the polynomial and Hellinger rows): the
concatenation ``[sqrt(w_1) z_1, ..., sqrt(w_T) z_T]`` of the terms' maps, whose inner
products estimate ``sum_t w_t k_t``.  A term's columns are a block of its own, so the
polynomial factors and the additive ``(cos, sin)`` pairs wrap inside them.

Examples
--------
>>> from ooc_kernels._jit.segments import segment_stop, segment_multiplier
>>> layout = (2.0, 0.0, 0.25, 0.5, 2.0, 5.0, 1.0, 1.5, 1.0)   # rbf 1/4 of the columns, poly2
>>> [segment_stop(layout, t, 16) for t in range(2)]
[4, 16]
>>> round(segment_multiplier(layout, 0, 16), 6)     # sqrt(2 * 0.5 / 4)
0.5
"""

from __future__ import annotations

import math

from ooc_kernels._jit._cache import njit

__all__ = ["LAYOUT_FIELDS", "n_segments", "segment_kind", "segment_multiplier",
           "segment_start", "segment_stop"]

#: Floats per term in a layout, after its leading term count.
LAYOUT_FIELDS = 4


@njit(cache=True, nogil=True)
def n_segments(layout):
    """The number of terms ``T`` of a layout."""
    return int(layout[0])


@njit(cache=True, nogil=True)
def segment_kind(layout, t):
    """The nonlinearity id of term ``t``."""
    return int(layout[1 + LAYOUT_FIELDS * t])


@njit(cache=True, nogil=True)
def segment_stop(layout, t, r):
    """One past the last column of term ``t`` in a block of ``r`` columns."""
    return int(math.floor(r * layout[2 + LAYOUT_FIELDS * t] + 0.5))


@njit(cache=True, nogil=True)
def segment_start(layout, t, r):
    """The first column of term ``t`` in a block of ``r`` columns."""
    return 0 if t == 0 else segment_stop(layout, t - 1, r)


@njit(cache=True, nogil=True)
def segment_multiplier(layout, t, r):
    """``sqrt(c_t weight_t / r_t)``: the scale of term ``t``'s columns (0 for a term without
    columns)."""
    width = segment_stop(layout, t, r) - segment_start(layout, t, r)
    if width <= 0:
        return 0.0
    base = 1 + LAYOUT_FIELDS * t
    return math.sqrt(layout[base + 3] * layout[base + 2] / width)
