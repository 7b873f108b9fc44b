"""The target standardization of the robust regression losses (huber, epsilon-insensitive,
quantile): the median and a robust spread instead of the mean and standard deviation.

A robust loss is picked for targets with outliers, and the mean and the standard deviation
of such targets are set by the outliers: 1% of the targets off by 1,000 move the mean by
several units of the clean signal and inflate the standard deviation a hundredfold, so the
model fits a signal squeezed to a hundredth of a standard unit around a shifted centre,
``epsilon`` (in those units) is wider than the whole signal, and the set-up's kernel ridge
(the width and ``alpha`` by leave-one-out or GCV) is led by the outliers' squared errors.
For these losses the fit therefore centres the targets on their (weighted) median, divides
them by :data:`MAD_TO_SD` times their median absolute deviation (the standard deviation for
normal targets, a spread no outlier fraction below one half can blow up), and ranks the
set-up's kernel ridge on the standardized targets clipped to ``+-``:data:`TARGET_CLIP`.

Examples
--------
>>> import numpy as np
>>> y = np.array([0.0, 1.0, 2.0, 3.0, 1000.0])
>>> shift, scale = robust_target_moments(y)
>>> shift, round(scale, 4)
(2.0, 1.4826)
>>> clip_targets(np.array([-10.0, 0.5, 10.0]), "huber").tolist()
[-1.35, 0.5, 1.35]
>>> clip_targets(np.array([-10.0, 0.5, 10.0]), "squared").tolist()
[-10.0, 0.5, 10.0]
"""

from __future__ import annotations

import numpy as np

from ooc_kernels._moments import weighted_median, weighted_moments

__all__ = ["ROBUST_LOSSES", "MAD_TO_SD", "TARGET_CLIP", "robust_target_moments",
           "target_moments", "clip_targets"]

#: The regression losses with a bounded derivative, chosen for targets with outliers.
ROBUST_LOSSES = ("huber", "epsilon_insensitive", "quantile")

#: The median absolute deviation of a normal sample times this is its standard deviation
#: (``1 / Phi^-1(3/4)``).
MAD_TO_SD = 1.482602218505602

#: The standardized targets of the set-up's kernel ridge and of the per-input width screen
#: (widths and ``alpha``) are clipped to ``+-TARGET_CLIP`` for a robust loss: Huber's
#: constant 1.35 (scikit-learn's ``HuberRegressor(epsilon=1.35)``, 95% efficiency on normal
#: targets), so that those least-squares scores weigh every row as Huber's estimator does:
#: a target beyond 1.35 robust standard deviations counts as one at 1.35.  A clip at 3
#: standard deviations makes 5% of targets replaced by ``6 + 3 N(0, 1)`` mostly a fixed +3,
#: which masks an input with a weak even effect on 2 of 12 samples of 8,000 rows (one
#: switches it off, one keeps a common width for every input; ``benchmarks/
#: dsg_screen_even.py``, ``docs/benchmarks.md``, "The robust set-up's target clip").
TARGET_CLIP = 1.35


def robust_target_moments(y: np.ndarray, weights=None) -> tuple[float, float]:
    """``(median, MAD_TO_SD * median absolute deviation)`` of the targets ``y``, rows
    weighted by ``weights`` (None: unweighted).

    When more than half of the targets are equal (no spread around the median), the
    standard deviation is the scale, and 1 when that is 0 too.
    """
    y = np.asarray(y, dtype=np.float64)
    shift = weighted_median(y, weights)
    with np.errstate(over="ignore", invalid="ignore"):
        scale = MAD_TO_SD * weighted_median(np.abs(y - shift), weights)
    if not (np.isfinite(scale) and scale > 0):
        scale = float(weighted_moments(y, weights)[1])
    return shift, scale if np.isfinite(scale) and scale > 0 else 1.0


def target_moments(loss: str, y: np.ndarray, weights=None) -> tuple[float, float]:
    """The shift and scale of a regression target for a fit with ``loss``: robust for
    :data:`ROBUST_LOSSES`, the mean and the standard deviation (1 for constant targets)
    otherwise."""
    if loss in ROBUST_LOSSES:
        return robust_target_moments(y, weights)
    mean, sd = weighted_moments(np.asarray(y, dtype=np.float64), weights)
    return float(mean), float(sd) if sd > 0 else 1.0


def clip_targets(t: np.ndarray, loss: str) -> np.ndarray:
    """Standardized regression targets ``t`` as the set-up's kernel ridge ranks them:
    clipped to ``+-TARGET_CLIP`` for :data:`ROBUST_LOSSES`, unchanged otherwise."""
    return np.clip(t, -TARGET_CLIP, TARGET_CLIP) if loss in ROBUST_LOSSES else t
