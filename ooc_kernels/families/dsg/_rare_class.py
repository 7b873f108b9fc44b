"""The rows the leave-one-out set-up scores when a class is rare.

The leave-one-out set-up (:mod:`~ooc_kernels.families.dsg._setup_loo`) scores accuracy on
:data:`~ooc_kernels.families.dsg._setup_loo.LOO_ROWS` rows drawn from the sample.  A
class of 1% of the rows has about 5 of them: a candidate that predicts none of it scores
the share of the other classes, every candidate but the narrowest ties, and the widest
width wins the tie (``docs/defaults.md``, "A rare class").  When a class is rare
(:func:`rare_classes`) and the sample holds at least :data:`RARE_MIN_ROWS` of its rows,
the scored rows hold every sampled row of the rare classes and
rows drawn at random from the others, and each class weighs the same in the scores, as
under ``class_weight="balanced"`` (:func:`scored_rows`): the candidates are ranked by
how well they separate the classes, which a balanced score sees; the fit keeps its own
(unweighted) loss.

Examples
--------
>>> import numpy as np
>>> y = np.array([0] * 990 + [1] * 10)
>>> rare_classes(y, np.ones(1000), np.array([0, 1]), 500).tolist()
[1]
>>> rare_classes(np.arange(1000) % 20, np.ones(1000), np.arange(20), 500).tolist()
[]
"""

from __future__ import annotations

import numpy as np

__all__ = ["RARE_ROWS", "RARE_SHARE", "RARE_MIN_ROWS", "rare_classes", "scored_rows"]

#: A class is rare when fewer than this many of the scored rows are expected to hold it
#: (its share of the sampled rows' weight times the rows scored) ...
RARE_ROWS = 25
#: ... and its share is below this fraction of an equal share (``1 / n_classes``): a
#: minority, not one of many equal classes.
RARE_SHARE = 0.2
#: The fewest sampled rows of every rare class for the balanced score: on fewer it ranks
#: the candidates by one or two rows (a narrow width that predicts the class on a sixth of
#: the rows and catches its one row outscores every other), and the uniform draw and
#: accuracy are kept.
RARE_MIN_ROWS = 10


def rare_classes(y: np.ndarray, weights: np.ndarray, classes, n_scored: int) -> np.ndarray:
    """The classes of ``classes`` that are rare among the rows ``y`` of weights
    ``weights`` (the fit's row weights) when ``n_scored`` of them are scored: a share of
    the weight below ``RARE_ROWS / n_scored`` and below ``RARE_SHARE / len(classes)``;
    none for a regressor (``classes`` None)."""
    if classes is None:
        return np.array([], dtype=np.asarray(y).dtype)
    classes = np.asarray(classes)
    w = np.asarray(weights, dtype=np.float64)
    total = float(w.sum())
    if total <= 0:
        return classes[:0]
    share = np.array([float(w[np.asarray(y) == c].sum()) / total for c in classes])
    rare = (share * int(n_scored) < RARE_ROWS) & (share < RARE_SHARE / len(classes))
    return classes[rare]


def scored_rows(y: np.ndarray, weights: np.ndarray, classes, n_scored: int,
                rng: np.random.Generator):
    """``(rows, factors)``: the positions of the rows scored (sorted) and each one's
    factor on its weight, or ``factors`` None when no class is rare (then the rows are
    ``n_scored`` of those of positive weight, drawn with ``rng`` as the set-up draws them).

    When a class is rare (:func:`rare_classes`) and every rare class has at least
    :data:`RARE_MIN_ROWS` rows of positive weight, every row of a rare class is kept, the
    rest of the ``n_scored`` rows are drawn with ``rng`` from the other classes, and the
    factors make each class's rows weigh the same in all (the weight of each class in the
    rows kept is scaled to the same share of their total).

    Examples
    --------
    >>> y = np.array([0] * 990 + [1] * 10)
    >>> rows, factors = scored_rows(y, np.ones(1000), np.array([0, 1]), 100,
    ...                             np.random.default_rng(0))
    >>> (len(rows), int((y[rows] == 1).sum()), round(float(factors[y[rows] == 1].sum()), 6),
    ...  round(float(factors[y[rows] == 0].sum()), 6))
    (100, 10, 50.0, 50.0)
    """
    w = np.asarray(weights, dtype=np.float64)
    y = np.asarray(y)
    kept = np.flatnonzero(w > 0)
    rare = rare_classes(y[kept], w[kept], classes, n_scored)
    if len(rare) == 0 or min(int(np.sum(y[kept] == c)) for c in rare) < RARE_MIN_ROWS:
        return np.sort(kept[rng.permutation(len(kept))[:n_scored]]), None
    is_rare = np.isin(y[kept], rare)
    others = kept[~is_rare]
    n_others = max(0, int(n_scored) - int(is_rare.sum()))
    rows = np.sort(np.concatenate([kept[is_rare],
                                   others[rng.permutation(len(others))[:n_others]]]))
    present = [c for c in np.asarray(classes) if np.any(y[rows] == c)]
    wr = w[rows]
    factors = np.ones(len(rows))
    for c in present:
        mask = y[rows] == c
        factors[mask] = float(wr.sum()) / (len(present) * float(wr[mask].sum()))
    return rows, factors
