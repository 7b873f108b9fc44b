"""Kernels of the table whose features are not ``sqrt(2) cos(w^T x + b)`` of one
projection: the polynomial kernel (random Maclaurin products of projections) and the
additive kernels of histograms (one sampled input coordinate per feature).

Their features still come out of one block ``(W (d, r), phase (r,))`` and one call of
:func:`ooc_kernels._jit.rff.features_inplace` on ``P = x @ W`` (the nonlinearity reads
several columns of ``P``), so the DSG kernels, the block cache and the saved models treat
them as every other map.

Polynomial ``(x.y / bw^2 + c)^p``, ``p`` in {2, 3, 4} (random Maclaurin, Kar and Karnick):
    the kernel is ``(x~ . y~)^p`` with ``x~ = [x / bw, sqrt(c)]``, whose Maclaurin series has
    the single term of degree ``p``, so every feature has degree ``p``:
    ``z_k(x) = prod_{i<p} (w_{(k+i) mod r} . x~)`` with Rademacher ``w`` (the extra coordinate's
    sign times ``sqrt(c)`` is the phase).  Factors of one feature are distinct columns, hence
    independent, so ``E[z_k(x) z_k(y)] = (x~ . y~)^p`` exactly; neighbouring features share
    columns (the block estimate stays unbiased; blocks are independent).  Scale ``sqrt(1 / r)``.
    Words: ``dr`` signs of ``W`` (C order), then ``r`` signs of the phases; a sign is the top
    bit of a raw word.

Additive kernels ``k(x, y) = sum_j kappa(x_j, y_j)`` of non-negative inputs:
    ``kappa(x, y) = sqrt(x y) K(log x - log y)`` with ``K`` the Fourier transform of a
    density ``mu`` (Vedaldi and Zisserman).  Feature pair ``k`` samples a coordinate ``j``
    uniformly and ``w ~ mu``; columns ``2k, 2k+1`` of ``W`` are ``d e_j / bw`` and
    ``d w e_j / bw``, so the nonlinearity reads ``a = d x_j / bw`` and ``w = P_{2k+1} / a``
    and writes ``sqrt(a) (cos(w log a), sin(w log a))`` (0 where ``a <= 0``; the ``log d``
    in both points cancels).  Averaged over ``j``: ``d (1 / d) sum_j sqrt(x_j y_j) E cos(w
    (log x_j - log y_j)) = k(x, y)``.  Scale ``sqrt(2 / r)``, ``r`` even.  ``mu``:
    ``sech(pi w)`` for chi-squared ``2 x y / (x + y)``; Cauchy(0, 1/2) for the intersection
    ``min(x, y)``; ``sech(pi w) / (log 2 (1 + 4 w^2))`` for Jensen-Shannon (by rejection from
    ``sech``).  Hellinger ``sqrt(x y)`` (``K = 1``): one column per feature, ``d e_j / bw``,
    and the nonlinearity ``sqrt(max(P, 0))``, scale ``sqrt(1 / r)``.  Words: ``r`` (or
    ``r / 2``) coordinates ``floor(d u)``, then the frequencies (inverse CDF, one word each;
    Jensen-Shannon: pairs of words, a proposal and its acceptance, until every pair has one).

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.features.structured import chi2_kernel, poly_kernel
>>> chi2_kernel(np.array([[1.0, 0.0]]), np.array([[3.0, 2.0]]), 1.0).tolist()
[[1.5]]
>>> poly_kernel(np.array([[1.0, 2.0]]), np.array([[3.0, 1.0]]), 1.0, degree=2, coef0=1.0).tolist()
[[36.0]]
"""

from __future__ import annotations

import math

import numpy as np

from ooc_kernels.exceptions import InvalidDataError, ValidationError
from ooc_kernels.features.rbf import _check_dtype, _raw_words
from ooc_kernels.features.spectral import _open_unit, _scaled

__all__ = ["ADDITIVE_KERNELS", "POLY_DEGREES", "additive_block", "centered_input_message",
           "check_nonnegative_rows", "chi2_kernel", "hellinger_block", "hellinger_kernel",
           "intersection_kernel", "js_kernel", "negative_input_message", "nonnegative_block",
           "poly_block", "poly_kernel"]

#: The polynomial degrees with a nonlinearity of their own.
POLY_DEGREES = (2, 3, 4)


def _signs(words: np.ndarray) -> np.ndarray:
    return np.where(words >> np.uint64(63), -1.0, 1.0)


def poly_block(seed, block_id, n_features_in, block_size, input_scale, degree, coef0):
    """Float64 ``(W, phase)`` of a block of the polynomial kernel: Rademacher ``W`` divided
    by the input scale, phases ``sqrt(coef0)`` times Rademacher signs.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.structured import poly_block
    >>> W, b = poly_block(0, 0, 2, 3, np.ones(2), degree=2, coef0=4.0)
    >>> sorted(set(np.abs(W).ravel().tolist())), sorted(set(np.abs(b).tolist()))
    ([1.0], [2.0])
    """
    d, r = n_features_in, block_size
    if r < degree:
        raise ValidationError(f"the polynomial kernel of degree {degree} needs blocks of at "
                              f"least {degree} features (one per factor); got block_size={r}")
    words = _raw_words(seed, block_id, d * r + r)
    W = _signs(words[:d * r]).reshape(d, r)
    return W / input_scale[:, None], math.sqrt(coef0) * _signs(words[d * r:])


def _coordinates(words, d):
    return np.minimum((_to_unit_closed(words) * d).astype(np.int64), d - 1)


def _to_unit_closed(words):
    return (words >> np.uint64(11)).astype(np.float64) * (2.0**-53)


def _sech_draws(u):
    """Inverse CDF of the density ``sech(pi w)``."""
    return np.log(np.tan(0.5 * np.pi * u)) / np.pi


def _frequencies(kernel, seed, block_id, skip, m):
    """``m`` frequencies of the additive ``kernel`` from the words after the first ``skip``."""
    if kernel == "intersection":
        u = _open_unit(_raw_words(seed, block_id, skip + m)[skip:])
        return 0.5 * np.tan(np.pi * (u - 0.5))
    if kernel == "chi2":
        return _sech_draws(_open_unit(_raw_words(seed, block_id, skip + m)[skip:]))
    # Jensen-Shannon: sech proposals accepted with probability 1 / (1 + 4 w^2)
    out = np.empty(0)
    n_words = 2 * m + 16
    while True:
        u = _open_unit(_raw_words(seed, block_id, skip + n_words)[skip:])
        w = _sech_draws(u[0::2])
        out = w[u[1::2] < 1.0 / (1.0 + 4.0 * w * w)]
        if out.size >= m:
            return out[:m]
        n_words *= 2  # the same words again, and more: deterministic in (seed, block_id)


def additive_block(seed, block_id, n_features_in, block_size, input_scale, kernel):
    """Float64 ``(W, phase)`` of a block of the additive ``kernel`` (``"chi2"``,
    ``"intersection"`` or ``"js"``): ``r / 2`` pairs of columns ``(d e_j, d w e_j) / bw``.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.structured import additive_block
    >>> W, b = additive_block(0, 0, 3, 4, np.ones(3), "chi2")
    >>> (W != 0).sum(axis=0).tolist(), b.tolist()
    ([1, 1, 1, 1], [0.0, 0.0, 0.0, 0.0])
    """
    d, r = n_features_in, block_size
    if r % 2:
        raise ValidationError(f"the {kernel} kernel's features come in (cos, sin) pairs: "
                              f"block_size must be even; got {r}")
    m = r // 2
    j = _coordinates(_raw_words(seed, block_id, m), d)
    w = _frequencies(kernel, seed, block_id, m, m)
    W = np.zeros((d, r))
    W[j, 2 * np.arange(m)] = d
    W[j, 2 * np.arange(m) + 1] = d * w
    return W / input_scale[:, None], np.zeros(r)


def hellinger_block(seed, block_id, n_features_in, block_size, input_scale):
    """Float64 ``(W, phase)`` of a block of the Hellinger kernel: column ``k`` is
    ``d e_j / bw`` for a uniform coordinate ``j``.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.structured import hellinger_block
    >>> W, _ = hellinger_block(0, 0, 2, 5, np.ones(2))
    >>> W.sum(axis=0).tolist()
    [2.0, 2.0, 2.0, 2.0, 2.0]
    """
    d, r = n_features_in, block_size
    j = _coordinates(_raw_words(seed, block_id, r), d)
    W = np.zeros((d, r))
    W[j, np.arange(r)] = d
    return W / input_scale[:, None], np.zeros(r)


# ---------------------------------------------------------------------------------------
# exact kernels
# ---------------------------------------------------------------------------------------
def poly_kernel(X, Y, bandwidth, dtype=np.float64, degree=2, coef0=1.0):
    """Exact polynomial Gram matrix ``(x.y / bw^2 + coef0)^degree`` (``x / bw`` per input
    with one bandwidth per input).

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.structured import poly_kernel
    >>> poly_kernel(np.ones((1, 2)), np.ones((1, 2)), 2.0, degree=3, coef0=0.5).tolist()
    [[1.0]]
    """
    X, Y = _scaled(X, Y, bandwidth)
    return ((X @ Y.T + coef0) ** degree).astype(_check_dtype(dtype))


def _nonnegative(X, Y, bandwidth, name):
    X, Y = np.asarray(X, dtype=np.float64), np.asarray(Y, dtype=np.float64)  # a few rows
    low = min(X.min(initial=0.0), Y.min(initial=0.0))  # as given, before the bandwidth
    if low < 0:
        raise ValidationError(negative_input_message(name, low.item()))
    return _scaled(X, Y, bandwidth)


def negative_input_message(name: str, value, where: str = "", var: str = "X") -> str:
    """The error of an additive kernel given the negative input ``value`` (as the caller
    gave it) of the variable ``var``, found at ``where`` (e.g. ``"chunk 0, row 3, feature
    1"``; empty: not known).

    Examples
    --------
    >>> negative_input_message("chi2", -1.0, "row 0, feature 2")[:71]
    'the chi2 kernel takes non-negative inputs (histograms, counts); X holds'
    """
    at = f" at {where}" if where else ""
    return (f"the {name} kernel takes non-negative inputs (histograms, counts); {var} holds "
            f"the value {value!r}{at}: give it non-negative values, or choose a kernel "
            "defined on any real input (e.g. kernel='rbf')")


def centered_input_message(name: str, standardize="True") -> str:
    """The error of an additive kernel whose model standardizes (centers) its inputs
    (``standardize``: the setting as the message shows it).

    Examples
    --------
    >>> message = centered_input_message("js", "'auto'")
    >>> "standardize='auto' centers the inputs" in message, message.endswith("=False")
    (True, True)
    """
    return (f"the {name} kernel takes non-negative inputs (histograms, counts), and "
            f"standardize={standardize} centers the inputs, which makes some of them "
            "negative: use standardize=False")


def check_nonnegative_rows(X, name: str, chunk=None, var: str = "X") -> None:
    """Raise :class:`~ooc_kernels.exceptions.InvalidDataError` for the first negative value
    of the rows ``X`` (one chunk, or an in-memory input) of the variable ``var``, naming it
    with its row and feature (and ``chunk``, the chunk's index, when given); NaN are left
    to the checks of finite values.

    Examples
    --------
    >>> import numpy as np
    >>> check_nonnegative_rows(np.array([[1.0, 2.0], [0.5, -3.0]]), "chi2", chunk=4)
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.InvalidDataError: the chi2 kernel takes non-negative inputs \
(histograms, counts); X holds the value -3.0 at chunk 4, row 1, feature 1: give it \
non-negative values, or choose a kernel defined on any real input (e.g. kernel='rbf')
    """
    X = np.asarray(X)  # one chunk, or the caller's validated in-memory rows
    negative = X < 0
    if not negative.any():
        return
    row, feature = (int(i) for i in np.argwhere(negative)[0])
    where = ("" if chunk is None else f"chunk {chunk}, ") + f"row {row}, feature {feature}"
    raise InvalidDataError(negative_input_message(name, X[row, feature].item(), where, var))


def nonnegative_block(block, name: str, var: str = "X", block_info=None):
    """``block`` (one chunk of the lazy variable ``var``, through ``map_blocks``)
    unchanged, after :func:`check_nonnegative_rows` named its chunk."""
    chunk = "?" if not block_info else block_info[0]["chunk-location"][0]
    check_nonnegative_rows(block, name, chunk, var)
    return block


def _pairwise_sum(X, Y, kappa):
    G = np.zeros((len(X), len(Y)))
    for i in range(X.shape[1]):
        G += kappa(X[:, i, None], Y[None, :, i])
    return G


def chi2_kernel(X, Y, bandwidth, dtype=np.float64):
    """Exact additive chi-squared Gram matrix ``sum_i 2 x_i y_i / (x_i + y_i)`` (0 where
    ``x_i + y_i = 0``) of non-negative inputs divided by ``bandwidth``.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.structured import chi2_kernel
    >>> chi2_kernel(np.array([[2.0]]), np.array([[2.0]]), 1.0).tolist()
    [[2.0]]
    """
    X, Y = _nonnegative(X, Y, bandwidth, "chi2")

    def kappa(a, b):
        s = a + b
        return np.where(s > 0, 2.0 * a * b / np.where(s > 0, s, 1.0), 0.0)

    return _pairwise_sum(X, Y, kappa).astype(_check_dtype(dtype))


def intersection_kernel(X, Y, bandwidth, dtype=np.float64):
    """Exact histogram-intersection Gram matrix ``sum_i min(x_i, y_i)``.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.structured import intersection_kernel
    >>> intersection_kernel(np.array([[1.0, 3.0]]), np.array([[2.0, 1.0]]), 1.0).tolist()
    [[2.0]]
    """
    X, Y = _nonnegative(X, Y, bandwidth, "intersection")
    return _pairwise_sum(X, Y, np.minimum).astype(_check_dtype(dtype))


def js_kernel(X, Y, bandwidth, dtype=np.float64):
    """Exact Jensen-Shannon Gram matrix ``sum_i x_i/2 log2((x_i + y_i) / x_i) + y_i/2
    log2((x_i + y_i) / y_i)`` (a term with ``x_i = 0`` is 0).

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.structured import js_kernel
    >>> js_kernel(np.array([[1.0]]), np.array([[1.0]]), 1.0).tolist()
    [[1.0]]
    """
    X, Y = _nonnegative(X, Y, bandwidth, "js")

    def half(a, s):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(a > 0, 0.5 * a * np.log2(s / np.where(a > 0, a, 1.0)), 0.0)

    return _pairwise_sum(X, Y, lambda a, b: half(a, a + b) + half(b, a + b)).astype(
        _check_dtype(dtype))


def hellinger_kernel(X, Y, bandwidth, dtype=np.float64):
    """Exact Hellinger Gram matrix ``sum_i sqrt(x_i y_i)``.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.structured import hellinger_kernel
    >>> hellinger_kernel(np.array([[4.0, 1.0]]), np.array([[1.0, 9.0]]), 1.0).tolist()
    [[5.0]]
    """
    X, Y = _nonnegative(X, Y, bandwidth, "hellinger")
    return (np.sqrt(X) @ np.sqrt(Y).T).astype(_check_dtype(dtype))


#: The additive kernels with a (cos, sin) pair map, by name: their exact form.
ADDITIVE_KERNELS = {"chi2": chi2_kernel, "intersection": intersection_kernel,
                    "js": js_kernel}
