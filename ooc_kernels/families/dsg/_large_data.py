"""Defaults for many rows: what the bandwidth trials' sample of a few thousand rows cannot see.

The trials (:mod:`ooc_kernels.families.dsg._bandwidth`) fit 2,048 features on about 2,250
sampled rows.  On a data set of many more rows two things change that they cannot measure:
the model can hold more features than the default 4,096 and still have rows enough to fit
them (random-feature kernel ridge regression keeps the exact kernel machine's rate with
about ``sqrt(n)`` features: Rudi & Rosasco 2017), and a narrower kernel, which those
features can represent, pays once the rows fill it in.  So, above :data:`LARGE_DATA_ROWS`
rows:

* ``n_features="auto"`` is :data:`BASE_FEATURES` times ``sqrt(n / LARGE_DATA_ROWS)``
  (rounded down to whole blocks), at most :data:`MAX_AUTO_FEATURES`;
  :data:`BASE_FEATURES` up to :data:`LARGE_DATA_ROWS` rows;
* with ``bandwidth="auto"``, when the trials' next narrower candidate scored above their
  next wider one (the score curve leans to the narrow side), the width is the chosen
  multiple over ``sqrt(2)``: halfway, on the log scale, to that narrower candidate;
* with ``alpha="auto"``, ``alpha / 10`` is kept unless the trials score it more than
  :data:`~ooc_kernels.families.dsg._bandwidth.TIE` below ``alpha`` (ties go to the lighter
  regularization, which more rows support);
* with ``average="auto"`` and the logistic or softmax loss, the model predicts with the mean
  of the iterates from epoch :data:`AVERAGE_FROM_EPOCH` + 1 on (suffix averaging: Rakhlin,
  Shamir and Sridharan 2012): on many rows the last iterate's test accuracy moves from
  epoch to epoch by up to about half a percent once the training loss levels off, and the
  stopping rule, which watches the loss, can end a fit on a low epoch.

``docs/defaults.md`` ("Many rows") gives the measurements behind each rule.

Examples
--------
>>> auto_n_features(20_000, 256), auto_n_features(100_000, 256), auto_n_features(300_000, 256)
(4096, 5632, 9984)
>>> auto_n_features(10_000_000, 256), auto_n_features(300_000, 100)
(16384, 10000)
"""

from __future__ import annotations

import math

__all__ = ["LARGE_DATA_ROWS", "BASE_FEATURES", "MAX_AUTO_FEATURES", "AVERAGE_FROM_EPOCH",
           "auto_n_features", "large_data_multiple", "large_data_alpha_factor",
           "large_data_average"]

#: Rows above which the rules of this module apply.
LARGE_DATA_ROWS = 50_000
#: ``n_features="auto"`` up to :data:`LARGE_DATA_ROWS` rows.
BASE_FEATURES = 4096
#: The most features ``n_features="auto"`` gives.
MAX_AUTO_FEATURES = 16_384
#: Epochs after which ``average="auto"`` averages the iterates on many rows.
AVERAGE_FROM_EPOCH = 8
#: The losses whose iterates :func:`large_data_average` averages on many rows.
SUFFIX_AVERAGED_LOSSES = frozenset({"logistic", "softmax"})


def auto_n_features(n_rows: int, block_size: int) -> int:
    """``n_features="auto"`` for ``n_rows`` training rows: :data:`BASE_FEATURES` times
    ``sqrt(max(1, n_rows / LARGE_DATA_ROWS))``, at most :data:`MAX_AUTO_FEATURES`, rounded
    down to a multiple of ``block_size`` (at least one block)."""
    block = int(block_size)
    grow = math.sqrt(max(1.0, int(n_rows) / LARGE_DATA_ROWS))
    target = min(float(MAX_AUTO_FEATURES), BASE_FEATURES * grow)
    return max(block, int(target) // block * block)


def large_data_multiple(scores: dict, multiple: float, *, n_rows: int) -> float:
    """The multiple of the median distance the fit uses, given the trials' ``scores``
    (``{multiple: score}``) and the ``multiple`` they chose: ``multiple / sqrt(2)`` when the
    data has more than :data:`LARGE_DATA_ROWS` rows and the next smaller candidate scored
    above the next larger one (a candidate at the end of the range counts as scoring
    nothing beyond it);
    ``multiple`` otherwise.

    Examples
    --------
    >>> scores = {0.125: 0.11, 0.25: 0.32, 0.5: 0.40, 1.0: 0.24, 2.0: 0.15}
    >>> round(large_data_multiple(scores, 0.5, n_rows=300_000), 4)
    0.3536
    >>> large_data_multiple(scores, 0.5, n_rows=50_000)
    0.5
    """
    if int(n_rows) <= LARGE_DATA_ROWS:
        return multiple
    keys = sorted(scores)
    at = keys.index(multiple)
    narrower = scores[keys[at - 1]] if at > 0 else -math.inf
    wider = scores[keys[at + 1]] if at + 1 < len(keys) else -math.inf
    return multiple / math.sqrt(2.0) if narrower > wider else multiple


def large_data_alpha_factor(setup_scores: dict | None, factor: float, *, scaling: str,
                            n_rows: int, tie: float) -> float:
    """The ``alpha`` factor of a fit on ``n_rows`` rows: on more than
    :data:`LARGE_DATA_ROWS` rows, ``0.1`` when the trials scored ``alpha / 10`` no more than
    ``tie`` below ``alpha`` with the chosen ``scaling`` (``"per-input"`` or ``"common"``,
    the keys of ``setup_scores``); the trials' ``factor`` otherwise.

    Examples
    --------
    >>> scores = {("per-input", 1.0): 0.397, ("per-input", 0.1): 0.396}
    >>> large_data_alpha_factor(scores, 1.0, scaling="per-input", n_rows=300_000, tie=0.005)
    0.1
    >>> large_data_alpha_factor(scores, 1.0, scaling="per-input", n_rows=20_000, tie=0.005)
    1.0
    """
    if int(n_rows) <= LARGE_DATA_ROWS or factor != 1.0 or not setup_scores:
        return factor
    base, light = setup_scores.get((scaling, 1.0)), setup_scores.get((scaling, 0.1))
    if base is None or light is None:
        return factor
    return 0.1 if light >= base - tie else factor


def large_data_average(average, n_rows: int, *, loss: str):
    """``average`` for a fit with the many-row rules (``n_features="auto"``) on ``n_rows``
    rows: with ``"auto"``, more than :data:`LARGE_DATA_ROWS` rows and a loss of
    :data:`SUFFIX_AVERAGED_LOSSES`, the samples of :data:`AVERAGE_FROM_EPOCH` epochs (an
    ``int`` for ``average``: the mean starts with the step whose batch holds the next
    sample); ``average`` otherwise.

    Examples
    --------
    >>> large_data_average("auto", 300_000, loss="softmax")
    2400000
    >>> large_data_average("auto", 50_000, loss="softmax")
    'auto'
    >>> large_data_average(False, 300_000, loss="logistic")
    False
    >>> large_data_average("auto", 300_000, loss="squared")
    'auto'
    """
    many = int(n_rows) > LARGE_DATA_ROWS and loss in SUFFIX_AVERAGED_LOSSES
    if isinstance(average, str) and average == "auto" and many:
        return AVERAGE_FROM_EPOCH * int(n_rows)
    return average
