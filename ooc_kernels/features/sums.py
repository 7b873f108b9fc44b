"""Weighted sums of kernels of the table: ``k = sum_t w_t k_t(x / m_t, y / m_t)``.

``kernel="sum"`` with ``kernel_params={"terms": "0.5*rbf+0.5*matern(nu=0.5)@4"}``: terms
separated by ``+``, each ``weight*kernel`` with an optional ``@m``, a multiplier of the
bandwidth for that term (a multi-scale kernel: ``"0.5*rbf+0.5*rbf@4"``), or the same sum as
kernel objects (:class:`ooc_kernels.features.Kernel`).  A term is any row of the table but a
sum.  A sum whose terms are not all shift-invariant (``"0.5*rbf+0.5*poly@2"``) concatenates
the terms' feature maps, each term holding its weight's share of every block
(:mod:`ooc_kernels.features.mixed`).  A sum of the shift-invariant rows (``rbf``,
``laplacian``, ``cauchy``, ``matern(nu=...)``), whose features are all ``cos(w.x + b)``,
mixes them column by column instead: by Bochner's theorem the sum's spectral measure is the weighted sum
of the terms' measures, so every column of a block takes the frequency and phase of one term,
drawn with probability ``w_t / sum(w)``, and the block's scale is ``sqrt(2 sum(w) / r)``.
Then ``E[z(x) z(y)] = sum_t w_t k_t``, each column unbiased, columns independent.

Block ``j`` with seed ``s``: term ``t``'s own block ``(s, j)`` (its sampler at bandwidth times
``m_t``), and the term of each column from ``r`` uniforms of the Philox stream ``(s, j)`` at
counter ``2^192`` (an independent part of the stream that no term's sampler reaches).

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.features.sums import canonical_terms, sum_kernel
>>> canonical_terms("rbf + 2*laplacian@0.5")
'1.0*rbf@1.0+2.0*laplacian@0.5'
>>> x, y = np.zeros((1, 1)), np.ones((1, 1))
>>> sum_kernel(x, y, 1.0, terms="1.0*rbf@1.0+2.0*laplacian@0.5").round(4).tolist()
[[0.8772]]
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import math

import numpy as np

from ooc_kernels._jit.rff import COS_AFFINE, COS_WIDE
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.features import rbf
from ooc_kernels.features.maps import (
    FEATURE_MAPS,
    FeatureMap,
    KernelParam,
    _items,
    _spectral_map,
    get_feature_map,
    kernel_spec,
)
from ooc_kernels.features.mixed import mixed_sum_map

__all__ = ["NOT_TERMS", "SHIFT_INVARIANT", "canonical_terms", "parse_terms", "sum_block",
           "sum_kernel"]

#: The rows whose sums mix their columns' frequencies (their features are all
#: ``cos(w.x + b)``); a sum with any other term concatenates the terms' maps.
SHIFT_INVARIANT = ("rbf", "laplacian", "cauchy", "matern")
#: The rows of the table that cannot be a term of a sum.
NOT_TERMS = ("sum", "hierarchical")


def _term_rows() -> list[str]:
    return [name for name in sorted(FEATURE_MAPS) if name not in NOT_TERMS]


def _bad(text, why):
    return ValidationError(
        f"terms={text!r} is not a sum of kernels: {why}; write terms as "
        "'weight*kernel[@bandwidth multiplier]' joined by '+', e.g. "
        f"'0.5*rbf+0.5*poly(degree=2)@4', with kernels among {_term_rows()}")


def _split(text: str) -> list[str]:
    """``text`` cut at every ``+`` outside parentheses and exponents (``1e+3``)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        exponent = i >= 2 and text[i - 1] in "eE" and (text[i - 2].isdigit() or
                                                        text[i - 2] == ".")
        if ch == "+" and depth == 0 and not exponent:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


def _term_spec(name: str, spec: str) -> str:
    """The full spec of a term written with some of its parameters (``poly(degree=3)``)."""
    if "(" not in spec or not spec.endswith(")"):
        return kernel_spec(name) if spec == name else spec
    params = {}
    for item in filter(None, _items(spec[len(name) + 1:-1])):
        key, _, value = item.partition("=")
        try:
            params[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise ValidationError(f"{item!r} of {spec!r} is not key=value with a Python "
                                  "literal value") from None
    return kernel_spec(name, params)


def parse_terms(text) -> list[tuple[float, str, float]]:
    """``[(weight, kernel spec, bandwidth multiplier), ...]`` of a ``terms`` string.

    Examples
    --------
    >>> from ooc_kernels.features.sums import parse_terms
    >>> parse_terms("0.3*rbf+0.7*matern(nu=2.5)@2")
    [(0.3, 'rbf', 1.0), (0.7, 'matern(nu=2.5)', 2.0)]
    """
    if not isinstance(text, str) or not text.strip():
        raise _bad(text, "it must be a non-empty string")
    terms = []
    for part in _split(text.replace(" ", "")):
        weight, star, rest = part.partition("*")
        if not star:
            weight, rest = "1", part
        spec, at, mult = rest.partition("@")
        try:
            w, m = float(weight), float(mult) if at else 1.0
        except ValueError:
            raise _bad(text, f"{part!r} has a weight or multiplier that is not a number") \
                from None
        if not (math.isfinite(w) and w > 0 and math.isfinite(m) and m > 0):
            raise _bad(text, f"{part!r} needs a positive weight and multiplier")
        name = spec.split("(")[0]
        if name not in FEATURE_MAPS or name in NOT_TERMS:
            raise _bad(text, f"{spec!r} is not a kernel of the table that a sum holds")
        try:
            fmap = get_feature_map(_term_spec(name, spec))
        except ValidationError as exc:
            raise _bad(text, str(exc)) from None
        terms.append((w, fmap.name, m))
    return terms


def canonical_terms(text) -> str:
    """The ``terms`` string with every weight, kernel parameter and multiplier spelled out
    (the form saved with a model).

    Examples
    --------
    >>> from ooc_kernels.features.sums import canonical_terms
    >>> canonical_terms("rbf+matern@3")
    '1.0*rbf@1.0+1.0*matern(nu=1.5)@3.0'
    """
    return "+".join(f"{w!r}*{spec}@{m!r}" for w, spec, m in parse_terms(text))


def sum_block(seed, block_id, n_features_in, block_size, input_scale, terms):
    """Float64 ``(W, phase)`` of a block of the sum ``terms`` (a canonical string).

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.sums import sum_block
    >>> from ooc_kernels.features.maps import get_feature_map
    >>> W, b = sum_block(1, 2, 3, 8, np.ones(3), "1.0*rbf@1.0")      # one term: its block
    >>> bool(np.array_equal(W, get_feature_map("rbf").block(1, 2, 3, 8, 1.0)[0]))
    True
    """
    d, r = n_features_in, block_size
    parsed = parse_terms(terms)
    weights = np.array([w for w, _, _ in parsed])
    bitgen = np.random.Philox(key=np.array([seed, block_id], dtype=np.uint64),
                              counter=np.array([0, 0, 0, 1], dtype=np.uint64))
    u = (bitgen.random_raw(r) >> np.uint64(11)).astype(np.float64) * (2.0**-53)
    which = np.searchsorted(np.cumsum(weights) / weights.sum(), u, side="right")
    which = np.minimum(which, len(parsed) - 1)
    W = np.empty((d, r))
    phase = np.empty(r)
    Wt, pt = np.empty((d, r)), np.empty(r)
    for t, (_, spec, m) in enumerate(parsed):
        cols = which == t
        if not cols.any():
            continue
        get_feature_map(spec).make_writer(seed, d, r, input_scale * m).write(block_id, Wt, pt)
        W[:, cols] = Wt[:, cols]
        phase[cols] = pt[cols]
    return W, phase


def sum_kernel(X, Y, bandwidth, dtype=np.float64, terms="1.0*rbf@1.0"):
    """Exact Gram matrix of the sum: ``sum_t w_t k_t(X, Y)`` at bandwidth times ``m_t``.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.sums import sum_kernel
    >>> sum_kernel(np.zeros((1, 2)), np.zeros((1, 2)), 1.0, terms="0.2*rbf+0.3*cauchy").tolist()
    [[0.5]]
    """
    G = 0.0
    for w, spec, m in parse_terms(terms):
        G = G + w * get_feature_map(spec).gram(X, Y, np.multiply(bandwidth, m), np.float64)
    return np.asarray(G).astype(np.dtype(dtype))


def _weighted_sum(terms: str) -> FeatureMap:
    """The map of a sum: columns mixed across shift-invariant terms, or the terms' maps
    concatenated (:mod:`ooc_kernels.features.mixed`)."""
    parsed = parse_terms(terms)
    if any(spec.split("(")[0] not in SHIFT_INVARIANT for _, spec, _ in parsed):
        return mixed_sum_map(terms, parsed, sum_kernel)
    wide = any(get_feature_map(spec).nonlinearity == COS_WIDE for _, spec, _ in parsed)
    total = sum(w for w, _, _ in parsed)
    return _spectral_map(
        f"sum(terms={terms!r})", f"weighted sum of kernels {terms}",
        COS_WIDE if wide else COS_AFFINE, sum_block, sum_kernel,
        sampler_params={"terms": terms}, exact_params={"terms": terms},
        feature_scale=lambda r: math.sqrt(2.0 * total / rbf._check_positive_int(
            r, "block_size")))


def _sum_row() -> FeatureMap:
    param = KernelParam("terms", None, canonical_terms("0.5*rbf+0.5*laplacian"),
                        check=canonical_terms,
                        examples=(canonical_terms("0.7*rbf+0.3*poly@2"),
                                  canonical_terms("0.5*laplacian+0.5*arccos@2")))
    return dataclasses.replace(_weighted_sum(param.default), name="sum",
                               kernel_params=(param,),
                               bind=functools.lru_cache(maxsize=None)(
                                   lambda terms: _weighted_sum(terms)))


FEATURE_MAPS["sum"] = _sum_row()  # its terms are rows of the table, looked up by name
