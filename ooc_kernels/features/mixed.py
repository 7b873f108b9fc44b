"""Sums of any kernels of the table, as concatenated feature maps: ``kernel="sum"`` with terms
that are not all shift-invariant (``"0.5*rbf+0.5*poly@2"``, ``"0.7*laplacian+0.3*arccos"``).

The features of ``k = sum_t w_t k_t(x / m_t, y / m_t)`` are the concatenation
``[sqrt(w_1) z_1(x), ..., sqrt(w_T) z_T(x)]`` of the terms' own feature maps, whose inner
product estimates ``sum_t w_t k_t`` (the paper's multiple-kernel map).  Every block of ``r``
columns holds each term's share of them, fixed by the weights: term ``t`` owns the columns
``[stop(t - 1), stop(t))`` with ``stop(t) = floor(r F_t + 1/2)``, ``F_t`` the cumulative share
``(w_1 + ... + w_t) / sum(w)``; they are a block of ``r_t`` features of the term's own map,
scaled by ``sqrt(c_t w_t / r_t)`` (``c_t = 2`` for the rows with ``sqrt(2 / r)``, 1 for the
polynomial and Hellinger rows), through its own nonlinearity.  The map's ``nonlinearity`` is
the layout of :mod:`ooc_kernels._jit.segments` (one numba call applies every term's
nonlinearity) and its ``feature_scale`` is 1: the layout carries each term's scale.

Block ``j`` with seed ``s``: term ``t``'s columns are block ``j`` of the term's map with the
term seed ``s_t`` (the first raw word of ``numpy.random.Philox(key=[s, 2^64 - 1 - t])``, so
the terms draw from independent streams) at ``r_t`` features and bandwidth times ``m_t``.

A sum of shift-invariant terms only keeps the layout of :mod:`ooc_kernels.features.sums`
(each column drawn from one term): saved models of such sums are unchanged.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.features.maps import get_feature_map
>>> fmap = get_feature_map("sum(terms='0.5*rbf@1.0+0.5*poly(degree=2,coef0=1.0)@2.0')")
>>> fmap.nonlinearity
(2.0, 0.0, 0.5, 0.5, 2.0, 5.0, 1.0, 0.5, 1.0)
>>> W, phase = fmap.block(seed=3, block_id=0, n_features_in=2, block_size=8, bandwidth=1.0)
>>> bool(np.array_equal(np.abs(W[:, 4:]), np.full((2, 4), 0.5)))   # poly signs / (1 * 2)
True
"""

from __future__ import annotations

import math

import numpy as np

from ooc_kernels._jit.coupled import LOG_POLAR, POLY2, POLY4
from ooc_kernels._jit.segments import LAYOUT_FIELDS
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.features import rbf
from ooc_kernels.features.maps import _spectral_map, get_feature_map

__all__ = ["mixed_block", "mixed_layout", "mixed_sum_map", "term_seed"]


def _terms(parsed):
    """``[(weight, FeatureMap, multiplier), ...]`` of parsed terms."""
    return [(w, get_feature_map(spec), m) for w, spec, m in parsed]


def mixed_layout(parsed) -> tuple:
    """The layout tuple (:mod:`ooc_kernels._jit.segments`) of a sum, given as its parsed
    terms ``((weight, kernel spec, multiplier), ...)``
    (:func:`ooc_kernels.features.sums.parse_terms`).

    Examples
    --------
    >>> from ooc_kernels.features.mixed import mixed_layout
    >>> mixed_layout([(1.0, "laplacian", 1.0), (3.0, "arccos(order=1)", 1.0)])
    (2.0, 1.0, 0.25, 1.0, 2.0, 3.0, 1.0, 3.0, 2.0)
    """
    parsed = _terms(parsed)
    total = sum(w for w, _, _ in parsed)
    layout, cumulative = [float(len(parsed))], 0.0
    for t, (w, fmap, _) in enumerate(parsed):
        cumulative += w
        c = round(fmap.feature_scale(1) ** 2)  # r feature_scale(r)^2: 2 or 1
        end = 1.0 if t == len(parsed) - 1 else cumulative / total
        layout += [float(fmap.nonlinearity), end, float(w), float(c)]
    return tuple(layout)


def term_seed(seed, t) -> int:
    """The seed of term ``t``'s blocks in a model with feature seed ``seed``.

    Examples
    --------
    >>> from ooc_kernels.features.mixed import term_seed
    >>> term_seed(5, 0) != term_seed(5, 1) != 5
    True
    """
    key = np.array([seed, 2**64 - 1 - t], dtype=np.uint64)
    return int(np.random.Philox(key=key).random_raw(1)[0])


def _min_columns(fmap) -> tuple[int, bool]:
    """The fewest columns a term's block may have, and whether their count must be even."""
    kind = fmap.nonlinearity
    if POLY2 <= kind <= POLY4:
        return kind - POLY2 + 2, False
    if kind == LOG_POLAR:
        return 2, True
    return 1, False


def mixed_block(seed, block_id, n_features_in, block_size, input_scale, parsed):
    """Float64 ``(W, phase)`` of a block of the sum of the parsed terms ``parsed``: term
    ``t``'s columns are block ``block_id`` of its map with seed :func:`term_seed`.

    Raises
    ------
    ValidationError
        When ``block_size`` leaves a term fewer columns than its features need.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.mixed import mixed_block, term_seed
    >>> from ooc_kernels.features.maps import get_feature_map
    >>> W, b = mixed_block(1, 2, 3, 8, np.ones(3), [(1.0, "rbf", 1.0),
    ...                                             (1.0, "arccos(order=1)", 2.0)])
    >>> W_rbf, _ = get_feature_map("rbf").block(term_seed(1, 0), 2, 3, 4, 1.0)
    >>> bool(np.array_equal(W[:, :4], W_rbf))
    True
    >>> mixed_block(1, 2, 3, 4, np.ones(3), [(1.0, "rbf", 1.0),
    ...                                      (1.0, "poly(degree=3,coef0=1.0)", 1.0)])
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.ValidationError: block_size=4 gives the term 'poly(degree=3,coef0=1.0)' of the sum 2 columns of every block (its weight's share); its features need at least 3; raise block_size or the term's weight
    """
    d, r = n_features_in, block_size
    layout = mixed_layout(parsed)
    W = np.empty((d, r))
    phase = np.empty(r)
    stop = 0
    for t, (_, fmap, m) in enumerate(_terms(parsed)):
        start = stop
        stop = int(math.floor(r * layout[2 + LAYOUT_FIELDS * t] + 0.5))
        least, even = _min_columns(fmap)
        if stop - start < least or (even and (stop - start) % 2):
            need = f"an even number, at least {least}" if even else f"at least {least}"
            raise ValidationError(
                f"block_size={r} gives the term {fmap.name!r} of the sum {stop - start} "
                f"columns of every block (its weight's share); its features need {need}; "
                "raise block_size or the term's weight")
        fmap.make_writer(term_seed(seed, t), d, stop - start, input_scale * m).write(
            block_id, W[:, start:stop], phase[start:stop])
    return W, phase


def mixed_sum_map(terms, parsed, exact):
    """The :class:`~ooc_kernels.features.maps.FeatureMap` of a sum with terms that are not
    all shift-invariant (``terms``: its canonical string, ``parsed``: its parsed terms,
    ``exact``: the exact form ``exact(X, Y, bandwidth, dtype, terms=...)``)."""
    parsed = tuple(parsed)

    def unit(block_size):
        rbf._check_positive_int(block_size, "block_size")
        return 1.0

    return _spectral_map(
        f"sum(terms={terms!r})", f"weighted sum of kernels {terms} (concatenated features)",
        mixed_layout(parsed), mixed_block, exact, sampler_params={"parsed": parsed},
        exact_params={"terms": terms}, feature_scale=unit,
        nonnegative=any(f.nonnegative_inputs for _, f, _ in _terms(parsed)))
