"""Per-input bandwidths of the DSG estimators: ``bandwidth`` as an array, or ``"ard"``.

A per-input bandwidth ``s`` (shape ``(d,)``, in the units the model sees: standardized with
``standardize``) makes the kernel ``exp(-sum_i (x_i - x'_i)^2 / (2 s_i^2))``.  It is the
isotropic kernel of width 1 on the rows ``x / s``, and that is how a fit runs it: ``s`` is
folded into the standardization (``x_scale * s``, :func:`fold_scales`), so the random
features stay the seed-addressed blocks of the isotropic map (the scale divides the sampled
directions ``W``, as the standardization's scale does), and every setup rule (step size,
curvature, the trials of the overall width) sees the rescaled rows.

``bandwidth="ard"`` chooses ``s`` in two stages on the rows sampled at setup:

1. the *relative* widths, by :func:`ooc_kernels.features.ard.ard_scales` (gradient steps
   on the log-widths of a held-out ridge error with random features, on up to
   :data:`ARD_ROWS` of the sampled rows), normalized to a geometric mean of 1;
2. the *overall* width, by the rule of ``bandwidth="auto"`` (generalized cross-validation
   on data sets of at most 1,000 rows, leave-one-out scores up to 50,000,
   :mod:`~ooc_kernels.families.dsg._setup_loo`, short trial fits of the solver above) on
   the rows rescaled by stage 1.

Examples
--------
>>> from ooc_kernels.families.dsg._ard import bandwidth_mode
>>> [bandwidth_mode(b) for b in ("auto", "ard", "median", 0.5, [1.0, 2.0])]
['auto', 'ard', 'median', 'number', 'array']
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from numbers import Real

import numpy as np

from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dsg._ard_refine import check_widths
from ooc_kernels.features.ard import ard_scales, check_bandwidth_vector, loo_score
from ooc_kernels.features.bandwidth import median_heuristic

__all__ = ["ARD_ROWS", "AUTO_ARD_ROWS", "AUTO_ARD_COMPONENTS", "AUTO_ARD_STEPS", "AUTO_ARD_LEARNING_RATE",
           "AUTO_ARD_PATIENCE",
           "AUTO_DECISION_ROWS", "AUTO_MIN_ROWS", "AUTO_MARGIN", "auto_ard", "bandwidth_mode", "check_bandwidth_param", "per_input_shape",
           "fold_scales", "published_bandwidth"]

#: Sampled rows the ARD search uses (2/3 fit its ridge models, 1/3 validate them).
ARD_ROWS = 1500
#: ``bandwidth="auto"``: rows of its quick ARD search, random features of the search's
#: ridge models, the search's steps, Adam step and patience.
AUTO_ARD_ROWS = 1000
AUTO_ARD_COMPONENTS = 256
AUTO_ARD_STEPS = 30
AUTO_ARD_LEARNING_RATE = 0.3
AUTO_ARD_PATIENCE = 5
#: ``bandwidth="auto"``: rows of the leave-one-out comparison (sampled rows the search did
#: not use first), and the fewest sampled rows with which ARD is considered at all.
AUTO_DECISION_ROWS = 500
AUTO_MIN_ROWS = 200
#: ``bandwidth="auto"`` takes ARD's widths when their leave-one-out score is more than this
#: above one width's.
AUTO_MARGIN = 0.015


def bandwidth_mode(bandwidth) -> str:
    """``"auto"``, ``"ard"``, ``"median"``, ``"number"`` or ``"array"``.

    Examples
    --------
    >>> bandwidth_mode(np.ones(3))
    'array'
    """
    if isinstance(bandwidth, str):
        return bandwidth
    if isinstance(bandwidth, Real) or np.ndim(bandwidth) == 0:
        return "number"
    return "array"


def check_bandwidth_param(bandwidth) -> None:
    """Refuse an array ``bandwidth`` that is not a vector of positive finite numbers, before
    any data is read (its length is checked against the data at ``fit``).

    Examples
    --------
    >>> check_bandwidth_param([[1.0, 2.0]])
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.ValidationError: bandwidth has shape (1, 2); pass one positive width per input, shape (n_features_in,), or a number.
    """
    if bandwidth_mode(bandwidth) != "array":
        return
    s = np.asarray(bandwidth, dtype=object)
    if s.ndim != 1:
        raise ValidationError(
            f"bandwidth has shape {s.shape}; pass one positive width per input, shape "
            "(n_features_in,), or a number.")
    check_bandwidth_vector(bandwidth, len(s))


def fold_scales(config, shape: np.ndarray):
    """``config`` with the per-input widths ``shape`` folded into its standardization: the
    model sees ``(x - x_shift) / (x_scale * shape)``.

    Examples
    --------
    >>> from ooc_kernels.families.dsg.solver import DSGConfig
    >>> c = DSGConfig(loss_id=0, target="regression", n_outputs=1, n_features_in=2,
    ...               block_size=4, n_blocks=1, bandwidth=1.0, feature_seed=0, alpha=0.1,
    ...               batch_size=4, learning_rate="constant", eta0=0.1, t0=0.0,
    ...               dtype="float64")
    >>> fold_scales(c, np.array([2.0, 0.5])).x_scale
    (2.0, 0.5)
    """
    d = config.n_features_in
    shift = np.zeros(d) if config.x_shift is None else np.asarray(config.x_shift)
    scale = np.ones(d) if config.x_scale is None else np.asarray(config.x_scale)
    return replace(config, x_shift=tuple(float(v) for v in shift),
                   x_scale=tuple(float(v) for v in scale * shape))


def auto_ard(seen: np.ndarray, targets, weights, *, seed: int, classification: bool,
             threads: int = 1):
    """``bandwidth="auto"``'s choice between one width and per-input widths: ``(relative
    widths or None, scores)``.

    A quick ARD search (:data:`AUTO_ARD_ROWS` rows, at most :data:`AUTO_ARD_STEPS` Adam
    steps of :data:`AUTO_ARD_LEARNING_RATE`, stopped after :data:`AUTO_ARD_PATIENCE` steps
    without progress) proposes relative widths; exact kernel ridge regression then scores one width and the proposed widths by
    their leave-one-out score (:func:`~ooc_kernels.features.ard.loo_score`, each at its best
    of 4 overall widths) on up to :data:`AUTO_DECISION_ROWS` rows, those the search did not
    use first.  The widths are taken only when they score more than :data:`AUTO_MARGIN`
    above one width; they are then checked
    (:func:`~ooc_kernels.families.dsg._ard_refine.check_widths`: screened widths when
    they score higher, wide inputs that raise the score brought back; when they are not
    taken, the screened widths when they score more than
    :data:`~ooc_kernels.families.dsg._ard_refine.REFINE_SCREEN_MARGIN` above one width)
    and are the fit's relative widths (no further search).  The
    search's ridge models have :data:`AUTO_ARD_COMPONENTS` random features (128 halve the
    search's cost on 64 inputs, but took one width on one of two seeds of the 10-input
    problem with 5 noise inputs, where 256 take per-input widths).  Nothing is searched with fewer than 2 inputs or fewer than
    :data:`AUTO_MIN_ROWS` rows of positive weight.  With ``threads`` above 1 the one
    width's score is computed on a second thread while the search runs (the same scores).

    Returns
    -------
    shape : ndarray of shape (d,) or None
        Relative widths of geometric mean 1, or None (one width).
    scores : dict
        ``{"one width": score, "per-input": score}`` (empty when nothing was compared).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(800, 4))
    >>> t = np.where(np.sin(2 * X[:, :1]) > 0, 1.0, -1.0)   # only input 0 matters
    >>> shape, scores = auto_ard(X, t, np.ones(800), seed=0, classification=True)
    >>> bool(shape[1:].min() > 5 * shape[0]), scores["per-input"] > scores["one width"]
    (True, True)
    """
    w = np.asarray(weights, dtype=np.float64)
    rows = np.flatnonzero(w > 0)
    if seen.shape[1] < 2 or len(rows) < AUTO_MIN_ROWS:
        return None, {}
    rng = np.random.default_rng(seed % 2**63)
    rows = rows[rng.permutation(len(rows))]
    search = np.sort(rows[:AUTO_ARD_ROWS])
    # the comparison's rows: those the search did not see first, then its own
    decision = np.sort(np.concatenate([rows[AUTO_ARD_ROWS:], rows[:AUTO_ARD_ROWS]])
                       [:AUTO_DECISION_ROWS])
    targets = np.asarray(targets, dtype=np.float64).reshape(len(seen), -1)
    Z, T, wd = seen[decision], targets[decision], w[decision]
    pool = ThreadPoolExecutor(max_workers=1) if int(threads) > 1 else None
    one = None if pool is None else pool.submit(loo_score, Z, T, wd,
                                                classification=classification)
    try:
        start = median_heuristic(seen[search], 1.0, sample_weight=w[search])
        scales = ard_scales(seen[search], targets[search], w[search], start=start,
                            seed=int(rng.integers(2**62)), steps=AUTO_ARD_STEPS,
                            n_components=AUTO_ARD_COMPONENTS,
                            learning_rate=AUTO_ARD_LEARNING_RATE, patience=AUTO_ARD_PATIENCE)
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    shape = scales / np.exp(np.mean(np.log(scales)))
    scores = {"one width": loo_score(Z, T, wd, classification=classification)
              if one is None else one.result(),
              "per-input": loo_score(Z / shape, T, wd, classification=classification)}
    taken = scores["per-input"] > scores["one width"] + AUTO_MARGIN
    shape = check_widths(Z, T, wd, shape if taken else None, scores, margin=AUTO_MARGIN,
                         classification=classification)
    return shape, scores


def per_input_shape(bandwidth, seen: np.ndarray, targets, weights, *, seed: int,
                    kernel="rbf", classification: bool = True, threads: int = 1):
    """The per-input widths of ``bandwidth`` (an array: checked against ``seen``'s columns;
    ``"ard"``: relative widths of geometric mean 1 chosen on the sampled rows; ``"auto"``:
    the quick search's widths when :func:`auto_ard`, with the Gaussian kernel, takes them),
    or None for an isotropic bandwidth.

    ``"auto"`` runs no full search: the widths that won the leave-one-out comparison are the
    ones the fit uses (the full search, on more rows with more steps, costs 1.5 to 2 CPU
    seconds more; ``docs/benchmarks.md``, "A set-up without trial fits").

    Parameters
    ----------
    bandwidth
        The estimator's ``bandwidth``.
    seen : ndarray of shape (n, d)
        The sampled rows as the model sees them (standardized).
    targets : ndarray of shape (n, c)
        Least-squares targets of the rows
        (:func:`~ooc_kernels.families.dsg._bandwidth.gcv_targets`).
    weights : ndarray of shape (n,)
        The rows' weights.
    seed : int
        Seed of the subsample and of the search.
    kernel : str
        The fit's kernel (:func:`~ooc_kernels.features.maps.kernel_spec`): ``"auto"``
        considers per-input widths for ``"rbf"`` only (the kernel ARD's criteria model).
    classification : bool
        Whether ``targets`` are +-1 per class (``"auto"``'s comparison then scores
        accuracy) or a regression target (``R^2``).
    threads : int
        Threads ``"auto"``'s decision may use (:func:`auto_ard`; the same choice for any).

    Examples
    --------
    >>> per_input_shape(0.5, np.zeros((3, 2)), None, None, seed=0) is None
    True
    >>> per_input_shape([1.0, 2.0, 3.0], np.zeros((3, 2)), None, None, seed=0)
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.ValidationError: bandwidth has shape (3,), the data has 2 input features; pass one positive width per input, shape (2,), or a number.
    """
    mode = bandwidth_mode(bandwidth)
    if mode == "array":
        return check_bandwidth_vector(bandwidth, seen.shape[1])
    if mode == "auto":
        if kernel != "rbf" or targets is None:
            return None
        return auto_ard(seen, targets, weights, seed=seed, classification=classification,
                        threads=threads)[0]
    if mode != "ard":
        return None
    w = np.asarray(weights, dtype=np.float64)
    rows = np.flatnonzero(w > 0)
    rng = np.random.default_rng(seed % 2**63)
    if len(rows) > ARD_ROWS:
        rows = np.sort(rng.choice(rows, ARD_ROWS, replace=False))
    start = median_heuristic(seen[rows], 1.0, sample_weight=w[rows])
    scales = ard_scales(seen[rows], np.asarray(targets)[rows], w[rows], start=start,
                        seed=int(rng.integers(2**62)))
    return scales / np.exp(np.mean(np.log(scales)))


def published_bandwidth(config):
    """What ``bandwidth_`` shows: the per-input widths when the fit had them, else the
    isotropic width."""
    widths = getattr(config, "input_bandwidths", None)
    return config.bandwidth if widths is None else np.asarray(widths, dtype=np.float64)
