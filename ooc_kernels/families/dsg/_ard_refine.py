"""``bandwidth="auto"``'s check of the per-input widths its quick search proposed.

The quick search (:func:`~ooc_kernels.families.dsg._ard.auto_ard`) can push inputs that
carry signal to very wide widths and leave inputs without signal narrow, and its
leave-one-out comparison with one width cannot tell when one width is itself near chance
(many inputs, few of them informative).  After per-input widths were taken,
:func:`refine_widths` checks them on the comparison's rows with exact leave-one-out scores
of kernel ridge regression (:func:`loo_fit`):

1. *screening*: the score statistic ``n R^2`` of the regression of the targets (or of
   leave-one-out residuals, below) on ``x_j``, ``x_j^2``, ``x_j^3`` and ``x_j^4``
   (:data:`REFINE_DEGREE`; standardized, each orthogonal to the lower powers), summed over
   the target's columns (:func:`residual_statistics`), is chi-squared with ``4 c`` degrees
   of freedom when they do not depend on ``x_j``; an input is *relevant* when the targets'
   statistic exceeds the Bonferroni level :data:`REFINE_LEVEL` / ``d``;
2. *screened widths*: when some but not all inputs are relevant, the widths 1 on the
   relevant inputs and :data:`~ooc_kernels.features.ard.ARD_MAX_RATIO` on the others
   replace the search's when their leave-one-out score is higher;
3. *forward check*: with the *reference width* the median of the narrow inputs' widths
   (those within :data:`REFINE_WIDE` of the narrowest), every input wider than
   :data:`REFINE_WIDE` times the reference is a candidate; the candidate whose statistic of
   the current leave-one-out residuals is largest, if above the Bonferroni level over the
   candidates, is brought back to the reference width (the squared distances updated by
   that input's term only) and kept when the score rises by more than
   :data:`REFINE_GAIN`; the residuals and statistics are then recomputed.  The check stops
   after :data:`REFINE_PATIENCE` rejections in a row, :data:`REFINE_MAX_CHECKS` checks, or
   when no candidate's statistic is significant.

When the search's widths were not taken, :func:`check_widths` tries the screened widths
(when some but not all inputs are relevant) and takes them when they score more than
:data:`REFINE_SCREEN_MARGIN` above one width: the quick search can miss the inputs that
carry no signal (Friedman #1, whose inputs 5-9 are noise: on 3 of 24 fits of 10,000 rows,
2 of 3 of 2,000 rows) and then scores no better than one width, which says nothing of the
screened widths.  The margin is wider than the decision's because the screening chose the
widths on the rows that score them: on the quickstart's deformed digits they score 0.006 to
0.026 above one width with 11 or 12 of 64 pixels switched off, and fits of 200,000 rows
lose 0.003 to 0.004 of test accuracy with them.  The cost is one or two leave-one-out fits
(0.02 to 0.04 CPU seconds each on 500 rows of 8 to 784 inputs) and one more per candidate
checked; nothing but the screening statistic when every input, or none, is relevant.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> Z = rng.normal(size=(400, 6))
>>> t = np.where((Z[:, :2] ** 2).sum(axis=1) > 1.4, 1.0, -1.0)[:, None]
>>> shape = np.array([1.0, 1e3, 1e3, 1e3, 1e3, 1e3])     # input 1 switched off
>>> new, score = refine_widths(Z, t, np.ones(400), shape, classification=True)
>>> bool(new[1] < 2 * new[0] and new[2:].min() > 100 * new[0])
True
"""

from __future__ import annotations

import numpy as np
from scipy.stats import chi2

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels.features.ard import ARD_MAX_RATIO, LOO_MULTIPLES, loo_at

__all__ = ["REFINE_WIDE", "REFINE_LEVEL", "REFINE_GAIN", "REFINE_PATIENCE",
           "REFINE_MAX_CHECKS", "REFINE_DEGREE", "REFINE_SCREEN_MARGIN", "loo_fit",
           "residual_statistics",
           "refine_widths", "screened_widths", "check_widths"]

#: An input is narrow when its width is within this factor of the narrowest, a candidate
#: when it is more than this factor above the narrow inputs' median width.
REFINE_WIDE = 4.0
#: Family-wise level of the residual screening (Bonferroni over the candidates).
REFINE_LEVEL = 0.01
#: A candidate is kept when the leave-one-out score rises by more than this.
REFINE_GAIN = 0.01
#: Rejections in a row that end the check.
REFINE_PATIENCE = 2
#: Most candidates checked.
REFINE_MAX_CHECKS = 12
#: Highest power of an input in the screening statistic (:func:`residual_statistics`):
#: ``x_j`` and ``x_j^2`` alone miss an even effect with two minima over the input's range
#: (``cos(2 x) / 2`` on ``[-3, 3]``: statistic 0.4 to 11 on 500 rows, level 12.0;
#: ``docs/benchmarks.md``, "An even effect in the screening").
REFINE_DEGREE = 4
#: When per-input widths are not taken, the screened widths replace one width when their
#: leave-one-out score is more than this above one width's (or the decision's margin, if
#: larger).
REFINE_SCREEN_MARGIN = 0.05


def loo_fit(squared, targets, weights, *, classification: bool, multiples=LOO_MULTIPLES):
    """``(score, residuals)``: the best leave-one-out score of exact Gaussian kernel ridge
    regression on rows of pairwise squared distances ``squared``, over widths ``multiples``
    times their median pairwise distance, and the leave-one-out residuals
    ``t_i - f_(-i)(x_i)`` at the best width.

    The same computation as :func:`~ooc_kernels.features.ard.loo_score` (row weights scaled
    to mean 1, ``M = D^1/2 K D^1/2``, a ridge of 1, one Cholesky factorization per width),
    from the squared distances instead of the rows.

    Examples
    --------
    >>> from scipy.spatial.distance import pdist, squareform
    >>> from ooc_kernels.features.ard import loo_score
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.normal(size=(100, 2))
    >>> t = np.where(Z[:, :1] * Z[:, 1:] > 0, 1.0, -1.0)
    >>> s, r = loo_fit(squareform(pdist(Z) ** 2), t, np.ones(100), classification=True)
    >>> s == loo_score(Z, t, np.ones(100), classification=True), r.shape
    (True, (100, 1))
    """
    T = np.asarray(targets, dtype=np.float64).reshape(len(squared), -1)
    w = np.asarray(weights, dtype=np.float64)
    w = w / w.mean()
    upper = np.triu_indices(len(squared), 1)
    median = float(np.median(np.sqrt(squared[upper])))
    if not median > 0:
        median = 1.0
    best, best_residual = -np.inf, None
    with single_threaded_blas():  # a few hundred rows: threads only spin on busy cores
        for multiple in multiples:
            score, residual = loo_at(squared, median, T, w, classification=classification,
                                     multiple=multiple)
            if score > best:
                best, best_residual = score, residual
    return best, best_residual


def residual_statistics(Z, residual, weights) -> np.ndarray:
    """The score statistic ``n R^2`` of every column of ``Z`` for ``residual`` (shape
    ``(d,)``): the weighted regression of each residual column on the powers ``z_j``,
    ``z_j^2``, ... of ``z_j`` up to :data:`REFINE_DEGREE` (standardized, each orthogonal to
    the lower ones), ``R^2`` summed over the columns; chi-squared with
    :data:`REFINE_DEGREE` degrees of freedom per column when the residuals do not depend on
    ``z_j``.  A power that the lower ones fit to within 1e-8 of its spread (an input of 2
    values: ``z^2``) adds nothing.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.normal(size=(500, 3))
    >>> stat = residual_statistics(Z, Z[:, 2:] ** 2 + 0.1 * rng.normal(size=(500, 1)),
    ...                            np.ones(500))
    >>> bool(stat[2] > 400 and stat[:2].max() < 20)
    True
    """
    w = np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    n = len(w)
    R = np.asarray(residual, dtype=np.float64).reshape(n, -1)
    R = R - w @ R
    scale = np.sqrt(w @ R ** 2)
    R = R / np.where(scale > 0, scale, 1.0)

    def centred(A):
        A = A - w @ A
        return A, np.sqrt(w @ A ** 2)

    first, spread = centred(np.asarray(Z, dtype=np.float64))
    first = first / np.where(spread > 0, spread, np.inf)
    power, basis, total = np.ones_like(first), [], np.zeros(first.shape[1])
    for _ in range(REFINE_DEGREE):
        power = power * first
        column, spread = centred(power)
        for lower in basis:        # Gram-Schmidt against the lower powers
            column = column - lower * (w @ (column * lower))
        norm = np.sqrt(w @ column ** 2)
        keep = norm > 1e-8 * spread
        column = np.where(keep, column / np.where(keep, norm, 1.0), 0.0)
        basis.append(column)
        # weighted correlations of every (input power, residual column) pair
        total += (((w[:, None] * column).T @ R) ** 2).sum(axis=1)
    return n * total


def refine_widths(Z, targets, weights, shape, *, classification: bool, score=None):
    """``(widths, score)``: ``shape``, or the screened widths when they score higher, with
    the wide inputs that raise the leave-one-out score brought back to the narrow inputs'
    width (see the module docstring), normalized to a geometric mean of 1, and its
    leave-one-out score.

    Parameters
    ----------
    Z : ndarray of shape (n, d)
        The comparison's rows (standardized).
    targets : ndarray of shape (n, c)
        +-1 per class, or a standardized regression target.
    weights : ndarray of shape (n,)
        Positive row weights.
    shape : ndarray of shape (d,)
        The per-input widths taken.
    classification : bool
        Whether the score is the leave-one-out accuracy (else ``R^2``).
    score : float or None
        The leave-one-out score of ``shape`` on these rows when known
        (:func:`~ooc_kernels.features.ard.loo_score`): its leave-one-out fit is then
        computed only when the screened widths do not replace it.
    """
    Z = np.asarray(Z, dtype=np.float64)
    shape = np.asarray(shape, dtype=np.float64).copy()
    T = np.asarray(targets, dtype=np.float64).reshape(len(Z), -1)
    squared = residual = None
    if score is None:
        squared = _squared_distances(Z / shape)
        score, residual = loo_fit(squared, T, weights, classification=classification)
    screened = screened_widths(Z, T, weights)
    if screened is not None:
        screened_squared = _squared_distances(Z / screened)
        screened_score, screened_residual = loo_fit(screened_squared, T, weights,
                                                    classification=classification)
        if screened_score > score:
            shape, squared = screened, screened_squared
            score, residual = screened_score, screened_residual
    if squared is None:
        squared = _squared_distances(Z / shape)
        score, residual = loo_fit(squared, T, weights, classification=classification)
    return _forward_check(Z, T, weights, shape, squared, score, residual,
                          classification=classification)


def _forward_check(Z, T, weights, shape, squared, score, residual, *, classification):
    """Step 3 of the module docstring from widths ``shape`` of squared distances
    ``squared``, leave-one-out score ``score`` and residuals ``residual``."""
    narrowest = float(shape.min())
    reference = float(np.median(shape[shape <= REFINE_WIDE * narrowest]))
    candidates = np.flatnonzero(shape > REFINE_WIDE * reference)
    if len(candidates) == 0:
        return shape / np.exp(np.mean(np.log(shape))), score
    threshold = float(chi2.isf(REFINE_LEVEL / len(candidates), REFINE_DEGREE * T.shape[1]))
    open_ = np.ones(len(candidates), dtype=bool)
    stats = residual_statistics(Z[:, candidates], residual, weights)
    misses = checks = 0
    while misses < REFINE_PATIENCE and checks < REFINE_MAX_CHECKS:
        ranked = np.where(open_, stats, -np.inf)
        k = int(np.argmax(ranked))
        if not ranked[k] > threshold:
            break
        open_[k] = False
        checks += 1
        j = int(candidates[k])
        column = Z[:, j]
        term = (column[:, None] - column[None, :]) ** 2
        trial = squared + term * (1.0 / reference ** 2 - 1.0 / shape[j] ** 2)
        trial_score, trial_residual = loo_fit(trial, T, weights,
                                              classification=classification)
        if trial_score > score + REFINE_GAIN:
            shape[j], squared, score, residual = reference, trial, trial_score, trial_residual
            stats = residual_statistics(Z[:, candidates], residual, weights)
            misses = 0
        else:
            misses += 1
    return shape / np.exp(np.mean(np.log(shape))), score


def screened_widths(Z, targets, weights):
    """The screened widths of ``Z``'s columns (1 on the inputs whose targets' statistic,
    :func:`residual_statistics`, exceeds the Bonferroni level :data:`REFINE_LEVEL` / d,
    :data:`~ooc_kernels.features.ard.ARD_MAX_RATIO` on the others), or None when no input
    or every input is relevant.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.normal(size=(300, 4))
    >>> screened_widths(Z, Z[:, 1:2] ** 2, np.ones(300)).tolist()
    [1000.0, 1.0, 1000.0, 1000.0]
    """
    T = np.asarray(targets, dtype=np.float64).reshape(len(Z), -1)
    d = Z.shape[1]
    relevant = residual_statistics(Z, T, weights) \
        > float(chi2.isf(REFINE_LEVEL / d, REFINE_DEGREE * T.shape[1]))
    if not 0 < relevant.sum() < d:
        return None
    return np.where(relevant, 1.0, ARD_MAX_RATIO)


def check_widths(Z, targets, weights, shape, scores: dict, *, classification: bool,
                 margin: float):
    """The last step of :func:`~ooc_kernels.families.dsg._ard.auto_ard`: the relative widths
    a fit uses, or None (one width).

    ``shape`` (the proposed widths when taken, else None) and ``scores`` (``"one width"``
    and ``"per-input"``, leave-one-out scores on the rows ``Z``) are the decision's.  Widths
    taken are checked by :func:`refine_widths` (``scores["refined"]``).  When they are not
    taken, the screened widths (:func:`screened_widths`, ``scores["screened"]``; none when
    every input or none is relevant) are taken when they score more than
    :data:`REFINE_SCREEN_MARGIN` (or ``margin``, if larger) above one width, then checked
    forward as :func:`refine_widths` does.
    """
    T = np.asarray(targets, dtype=np.float64).reshape(len(Z), -1)
    if shape is not None:
        shape, scores["refined"] = refine_widths(Z, T, weights, shape,
                                                 score=scores["per-input"],
                                                 classification=classification)
        return shape
    screened = screened_widths(Z, T, weights)
    if screened is None:
        return None
    squared = _squared_distances(Z / screened)
    score, residual = loo_fit(squared, T, weights, classification=classification)
    scores["screened"] = score
    if not score > scores["one width"] + max(margin, REFINE_SCREEN_MARGIN):
        return None
    shape, scores["refined"] = _forward_check(Z, T, weights, screened, squared, score,
                                              residual, classification=classification)
    return shape


def _squared_distances(X):
    """Pairwise squared Euclidean distances of the rows of ``X`` (shape ``(n, n)``, zero
    diagonal)."""
    from scipy.spatial.distance import pdist, squareform

    return squareform(pdist(X) ** 2)
