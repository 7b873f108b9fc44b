"""``bandwidth="auto"``: short validation runs on a sample of rows pick the kernel bandwidth.

The best Gaussian bandwidth depends on the problem far more than a rule of thumb can say:
on the library's defaults suite the best multiple of the median pairwise distance (of the
standardized rows) ranged from 0.125 (a 2-D regression with an oscillating target) to 2 (a
small medical regression and classification), and no single multiple came within the
suite's targets on every problem (``docs/benchmarks.md``, "Defaults").  So the default runs
the solver itself, briefly, with every candidate:

1. up to :data:`SAMPLE_ROWS` rows (from up to 8 random chunks, read once) are split into a
   training part (3/4) and a validation part (1/4);
2. for every multiple ``m`` in :data:`CANDIDATES`, a model with bandwidth ``m`` times the
   median pairwise distance of the sample, :data:`TRIAL_FEATURES` random features and the
   fit's loss, schedule rules and averaging runs about :data:`TRIAL_STEPS` mini-batch steps
   on the training part, in memory (no Dask: the solver's own steps); the trials are
   independent, so they run side by side on the cores (:func:`trial_threads`), each on its
   share of them, and every trial's model is the one it has alone (the solver's steps give
   the same model for any thread count): the choice does not depend on the cores;
3. each is scored on the validation part (accuracy; R^2 for the squared loss, and for the
   other regression losses one minus the ratio of the fit's loss to the loss of predicting
   the mean, so that a robust loss is not ranked by squared errors on its outliers;
   weighted by the sample and class weights the fit uses), and the largest multiple whose
   score is within :data:`TIE` of the best wins (ties go to the smoother kernel, which the
   full data can only sharpen).

Small data sets (at most :data:`GCV_MAX_ROWS` rows, all of them read) are different: a
quarter of a few hundred rows is too few to rank the candidates (on 100 rows of a
10-dimensional problem three candidates tied on 25 validation rows and the smoothest, at
chance on the test set, won).  There the rows are few enough for the exact kernel, and
:func:`select_bandwidth_gcv` ranks the candidates by generalized cross-validation of kernel
ridge regression at the fit's ``alpha`` (Golub, Heath & Wahba 1979): every row is used for
fitting and for validating, nothing is random, and weighted rows give exactly what repeated
rows give.  On the 100- to 1000-row problems of ``docs/defaults.md`` it picked the
candidate whose fit scored best on the test set, or one within 0.015 of it.  With
``alpha="auto"``, :func:`select_setup_gcv` then applies the trials' rule for ``alpha /
10`` to the exact leave-one-out predictions of the same regression at the chosen width.

For large data the trials run the stochastic solver, not a closed-form fit, on purpose: a ridge solve on random features ranks
bandwidths differently from stochastic gradients with a finite budget (on the suite it picked
2 for the digits, where the solver's best is 0.5), and the solver's behaviour is what the fit
will have.

Examples
--------
>>> from ooc_kernels.families.dsg._bandwidth import CANDIDATES
>>> CANDIDATES
(0.125, 0.25, 0.5, 1.0, 2.0)
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels._threads import available_threads
from ooc_kernels.features.bandwidth import median_heuristic
from ooc_kernels.features.maps import get_feature_map
from ooc_kernels.losses import LOSS_SQUARED, loss_by_id

__all__ = ["CANDIDATES", "SAMPLE_ROWS", "TRIAL_STEPS", "TRIAL_FEATURES", "TIE",
           "GCV_MAX_ROWS", "ALPHA_FACTORS", "SCALE_SPREAD", "select_bandwidth", "score",
           "class_row_weights",
           "select_scale_and_alpha", "common_scale", "scales_differ", "select_bandwidth_gcv", "select_setup_gcv",
           "gcv_targets",
           "trial_threads"]

#: Multiples of the median pairwise distance tried.
CANDIDATES = (0.125, 0.25, 0.5, 1.0, 2.0)
#: Rows sampled for the trials (training 3/4, validation 1/4).
SAMPLE_ROWS = 3000
#: Mini-batch steps of each trial (rounded up to whole epochs of the training part).
TRIAL_STEPS = 150
#: Random features of a trial model.
TRIAL_FEATURES = 2048
#: Scores within this much of the best count as ties (broken towards the larger bandwidth).
TIE = 0.005
#: ``alpha`` factors the trials try after the bandwidth (``alpha="auto"``).
ALPHA_FACTORS = (1.0, 0.1)
#: Per-input scales differing by more than this factor: one common scale is tried too.
SCALE_SPREAD = 2.0
#: Data sets with at most this many rows choose the bandwidth by generalized
#: cross-validation on all their rows (one ``n x n`` symmetric eigendecomposition per
#: candidate: under a second at 1000 rows).
GCV_MAX_ROWS = 1000


def trial_threads(threads: int | None, n_trials: int) -> tuple[int, int]:
    """``(trials run at once, threads of each)`` for ``n_trials`` trials on ``threads``
    threads in all (``None``: the threads available where the fit's setup runs, as a chunk
    task counts them: a worker's ``nthreads``, the threaded scheduler's pool, else the
    cores of the process).

    Examples
    --------
    >>> trial_threads(2, 5), trial_threads(16, 5), trial_threads(1, 5)
    ((2, 1), (5, 3), (1, 1))
    """
    if threads is None:
        threads, _ = available_threads()
    at_once = max(1, min(int(n_trials), int(threads)))
    return at_once, max(1, int(threads) // at_once)


def gcv_targets(y: np.ndarray, classes) -> np.ndarray:
    """Least-squares targets of the GCV ranking, shape ``(n, n_columns)``: the (standardized)
    regression target, one +-1 column for two classes, one +-1 column per class otherwise.

    Examples
    --------
    >>> gcv_targets(np.array(["a", "b", "a"]), np.array(["a", "b"])).ravel().tolist()
    [-1.0, 1.0, -1.0]
    """
    if classes is None:
        return np.asarray(y, dtype=np.float64).reshape(-1, 1)
    classes = np.asarray(classes)
    if len(classes) == 2:
        return np.where(np.asarray(y) == classes[1], 1.0, -1.0)[:, None]
    return np.where(np.asarray(y)[:, None] == classes[None, :], 1.0, -1.0)


def select_bandwidth_gcv(Z: np.ndarray, targets: np.ndarray, weights: np.ndarray, *,
                         alpha: float, median: float, kernel="rbf") -> tuple[float, dict]:
    """The bandwidth among :data:`CANDIDATES` times ``median`` with the smallest generalized
    cross-validation error of weighted kernel ridge regression, and every candidate's score.

    Kernel ridge regression at the fit's regularization minimizes ``sum_i w_i (t_i -
    f(x_i))^2 / W + alpha ||f||^2`` (``W = sum_i w_i``).  With ``D = diag(w)`` and
    ``S = D^1/2 K D^1/2 (D^1/2 K D^1/2 + alpha W I)^-1`` (one eigendecomposition), the fitted
    values are ``D^-1/2 S D^1/2 t`` and the GCV error is ``(||D^1/2 t - S D^1/2 t||^2 / W) /
    (1 - tr(S) / W)^2``.  Rows repeated ``w_i`` times give the same matrix ``S`` (up to zero
    eigenvalues), the same residuals and the same trace: the choice is the same weighted or
    repeated.

    Parameters
    ----------
    Z : ndarray of shape (n, d)
        The rows as the model sees them (standardized).
    targets : ndarray of shape (n, n_columns)
        From :func:`gcv_targets`.
    weights : ndarray of shape (n,)
        Row weights (sample times class weights), not all zero.
    alpha : float
        The fit's regularization (``alpha=0`` is replaced by a tiny ridge).
    median : float
        The median pairwise distance the candidates multiply.
    kernel : str or FeatureMap
        The fit's feature map (:mod:`ooc_kernels.features.maps`): its exact kernel with
        bandwidth ``multiple * median`` makes ``K``.

    Returns
    -------
    bandwidth : float
        The best candidate; the largest when none scores above 0 (none predicts better
        than the weighted mean of the targets, and the smoothest kernel is the closest to
        that constant).
    scores : dict
        ``{multiple: 1 - GCV error / weighted variance of the targets}`` (a cross-validated
        R^2: higher is better).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.uniform(-3, 3, size=(200, 1))
    >>> t = np.sin(3 * Z) + 0.1 * rng.normal(size=(200, 1))   # a fast-varying target
    >>> bandwidth, scores = select_bandwidth_gcv(Z, t, np.ones(200), alpha=1 / 200, median=2.0)
    >>> bandwidth < 2.0, max(scores.values()) > 0.9
    (True, True)
    """
    bandwidth, scores, _, _ = select_setup_gcv(Z, targets, weights, alpha=alpha,
                                               median=median, kernel=kernel)
    return bandwidth, scores


def select_setup_gcv(Z: np.ndarray, targets: np.ndarray, weights: np.ndarray, *,
                     alpha: float, median: float, kernel="rbf", alpha_factors=(1.0,),
                     scoring=None):
    """:func:`select_bandwidth_gcv`, then at the chosen width the rule of the larger data
    sets' set-up for ``alpha / 10`` (``alpha="auto"``), on the same eigendecomposition.

    Each factor ``f`` of ``alpha_factors`` is scored at ``f * alpha`` as the trials and the
    leave-one-out set-up score their held-out rows (:func:`score`: weighted accuracy,
    ``R^2``, or one minus the ratio of the fit's loss to the mean's), on the exact
    leave-one-out predictions of the kernel ridge regression whose GCV ranked the widths:
    with ``S`` the smoother of the weighted rows, row ``i`` refitted without itself
    predicts ``t_i - (t_i - f_i) / (1 - S_ii)``.  A factor other than 1 is taken only when
    it scores more than :data:`TIE` above ``alpha``; when no width scores above 0 (GCV),
    ``alpha`` is kept.  Not the GCV ``R^2`` itself: on the squared error of +-1 targets
    less shrinkage wins wherever the classes overlap (40 Gaussian classes of 10 rows each:
    ``R^2`` 0.39 at ``alpha``, 0.50 at ``alpha / 10``, and the fit's test accuracy 0.885
    and 0.865; the leave-one-out accuracy 0.863 and 0.825 ranks them as the fit does).

    Parameters
    ----------
    Z, targets, weights, alpha, median, kernel
        As :func:`select_bandwidth_gcv`.
    alpha_factors : tuple of float
        Factors of ``alpha`` tried besides 1.
    scoring : tuple or None
        ``(config, y, sample_weight, classes)`` for :func:`score` (``config``: the fit's,
        its ``y_shift`` and ``y_scale`` undo a regression target's standardization);
        needed when ``alpha_factors`` holds more than 1.

    Returns
    -------
    bandwidth : float
    scores : dict
        ``{multiple: GCV R^2}`` at ``alpha``.
    alpha_factor : float
    setup_scores : dict or None
        ``{("per-input", factor): leave-one-out score}`` at the chosen width (None when
        ``alpha_factors`` holds only 1).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.normal(size=(200, 2))
    >>> angle = np.arctan2(Z[:, 1], Z[:, 0]) + np.pi     # 20 noiseless classes, 10 rows each
    >>> y, classes = (angle * 20 / (2 * np.pi)).astype(int) % 20, np.arange(20)
    >>> scoring = (SimpleNamespace(class_weight=None), y, np.ones(200), classes)
    >>> _, _, factor, setup = select_setup_gcv(
    ...     Z, gcv_targets(y, classes), np.ones(200), alpha=1 / 200, median=1.6,
    ...     alpha_factors=(1.0, 0.1), scoring=scoring)
    >>> factor, setup[("per-input", 0.1)] > setup[("per-input", 1.0)] + TIE
    (0.1, True)
    """
    w = np.asarray(weights, dtype=np.float64)
    total = float(w.sum())
    root = np.sqrt(w)
    targets = np.asarray(targets, dtype=np.float64)
    t = root[:, None] * targets  # D^1/2 t
    mean = np.average(targets, axis=0, weights=w)
    variance = float(np.sum(w[:, None] * (targets - mean) ** 2)) / total
    ridge = max(float(alpha), 1e-12) * total
    fmap = get_feature_map(kernel)
    factors = (1.0, *[f for f in alpha_factors if f != 1.0])
    scores, spectra = {}, {}
    for multiple in CANDIDATES:
        M = root[:, None] * fmap.gram(Z, Z, multiple * median) * root[None, :]
        with single_threaded_blas():  # threads add little at this size, and spin when
            eig, Q = np.linalg.eigh(M)  # the cores are busy (40 s instead of 1)
            proj = Q.T @ t
        eig = np.clip(eig, 0.0, None)
        shrink = eig / (eig + ridge)
        residual = t - Q @ (shrink[:, None] * proj)
        dof = 1.0 - float(shrink.sum()) / total
        gcv = float(np.sum(residual ** 2)) / total / dof ** 2 if dof > 0 else np.inf
        scores[multiple] = 1.0 - gcv / variance if variance > 0 else -gcv
        if len(factors) > 1:
            spectra[multiple] = eig, Q, proj
    best = max(scores.values())
    # no candidate predicts held-out targets better than their weighted mean (extreme
    # weights, pure noise): the smoothest kernel is the closest to that constant
    multiple = max(m for m, score in scores.items() if score == best) if best > 0 \
        else max(CANDIDATES)
    if len(factors) == 1:
        return multiple * median, scores, 1.0, None
    config, y, sample_weight, classes = scoring
    eig, Q, proj = spectra[multiple]
    setup = {}
    for factor in factors:
        shrink = eig / (eig + ridge * factor)
        error = t - Q @ (shrink[:, None] * proj)            # D^1/2 (t - f)
        # a row of integer weight w is w copies of one row: leaving one copy out removes
        # 1/w of its influence (S_ii / w), as leaving out one of w repeated rows does
        leverage = np.clip(1.0 - (Q ** 2) @ shrink / np.maximum(w, 1.0), 1e-12, None)
        # rows of weight 0 have no residual and count for nothing in the score
        held_out = targets - np.divide(error / leverage[:, None], root[:, None],
                                       out=np.zeros_like(error), where=root[:, None] > 0)
        F = held_out * config.y_scale + config.y_shift if classes is None else held_out
        setup[("per-input", factor)] = score(config, F, y, sample_weight, classes)
    top = max(factors, key=lambda f: setup[("per-input", f)])
    factor = top if best > 0 and setup[("per-input", top)] > \
        setup[("per-input", 1.0)] + TIE else 1.0
    return multiple * median, scores, factor, setup


def _trial(config, X, Y, w, Xv, yv, wv, classes, steps: int, seed: int) -> float:
    """Fit ``config`` on ``(X, Y)`` for about ``steps`` steps; score on ``(Xv, yv)``.

    The score weighs every validation row as the fit does (its sample weight times its
    class's weight), so the trials pick what the weighted loss asks for."""
    from ooc_kernels.parallel.engine import RoundInfo
    from ooc_kernels.families.dsg.solver import DSGAlgorithm, init_state, predict_chunk

    alg = DSGAlgorithm(config)
    state = init_state(config)
    n = len(X)
    epochs = max(1, -(-steps * config.batch_size // n))
    batch = {"X": X, "y": Y, "sample_weight": w}
    for epoch in range(epochs):
        info = RoundInfo(epoch=epoch, round=0, groups=((0,),), sizes=((n,),), seed=seed)
        (task,) = alg.make_tasks(state, info)
        state = alg.apply(state, alg.chunk_step(state, batch, task), info)
    return score(config, predict_chunk(config, state, Xv), yv, wv, classes)


def class_row_weights(config, y: np.ndarray, w: np.ndarray, classes) -> np.ndarray:
    """Each row's weight as the fit weighs it: its sample weight ``w`` times its class's
    weight (``config.class_weight``; none for a regressor).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> config = SimpleNamespace(class_weight=(1.0, 3.0))
    >>> class_row_weights(config, np.array(["b", "a"]), np.ones(2), np.array(["a", "b"])).tolist()
    [3.0, 1.0]
    """
    w = np.asarray(w, dtype=np.float64)
    if classes is None or config.class_weight is None:
        return w
    order = np.argsort(classes)  # position of each row's class in ``classes``
    return w * np.asarray(config.class_weight)[order[np.searchsorted(classes[order], y)]]


def score(config, F: np.ndarray, yv: np.ndarray, wv: np.ndarray, classes) -> float:
    """The score of decision values ``F`` (the model's outputs, shape ``(n, n_outputs)``) on
    the rows ``yv`` of sample weights ``wv``: weighted accuracy (class weights applied), or
    for a regressor ``R^2`` (squared loss) or one minus the ratio of the fit's loss to the
    loss of predicting the mean.  Higher is better.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> config = SimpleNamespace(class_weight=None)
    >>> score(config, np.array([[1.0], [-2.0], [0.5], [-1.0]]), np.array([1, 0, 0, 0]),
    ...       np.ones(4), np.array([0, 1]))
    0.75
    """
    if classes is None and config.loss_id != LOSS_SQUARED:  # the fit's loss against the mean's
        loss = loss_by_id(config.loss_id).with_param(config.loss_param)
        z = ((F[:, :1].astype(np.float64) - config.y_shift) / config.y_scale)
        t = ((np.asarray(yv, dtype=np.float64) - config.y_shift) / config.y_scale)[:, None]
        base = float(np.sum(wv * loss.value(np.zeros_like(t), t)))
        return 1.0 - float(np.sum(wv * loss.value(z, t))) / base if base > 0 else 0.0
    if classes is None:  # R^2
        pred = F[:, 0].astype(np.float64)
        # again on the values over the largest where squares overflow or underflow
        big = float(max(np.max(np.abs(yv)), np.max(np.abs(pred))))
        for scale in (1.0, big):
            with np.errstate(over="ignore", invalid="ignore", under="ignore"):
                mean = np.average(yv / scale, weights=wv)
                total = float(np.sum(wv * (yv / scale - mean) ** 2))
                error = float(np.sum(wv * (yv / scale - pred / scale) ** 2))
            if (np.isfinite(total) and np.isfinite(error) and total > np.finfo(float).tiny) \
                    or not (np.isfinite(big) and big > 0):
                break
        return 1.0 - error / total if total > 0 else 0.0
    wv = class_row_weights(config, yv, wv, classes)
    if F.shape[1] == 1:
        labels = classes[(F[:, 0] > 0).astype(np.intp)]
    else:
        labels = classes[np.argmax(F, axis=1)]
    return float(np.average(labels == yv, weights=wv))


def select_bandwidth(base_config, sample: np.ndarray, y: np.ndarray, weights: np.ndarray,
                     *, classes, make_schedule, n_features: int, seed: int,
                     steps: int = TRIAL_STEPS, threads: int | None = None):
    """The bandwidth the trials pick, and the scores of every candidate.

    Parameters
    ----------
    base_config : DSGConfig
        The fit's configuration (loss, classes, standardization ...); the trials replace
        its bandwidth, blocks, batch size and schedule.
    sample, y, weights : ndarray
        The sampled rows, their targets and weights.
    classes : ndarray or None
        The classes (classifiers) for scoring.
    make_schedule : callable
        ``(bandwidth, n_train, batch_size) -> Schedule`` of the trial.
    n_features : int
        The fit's ``n_features`` (a trial uses at most :data:`TRIAL_FEATURES`).
    seed : int
    steps : int
    threads : int or None
        Threads for the trials in all (:func:`trial_threads`; ``None``: every thread
        available).  The scores, and so the choice, are the same for any value.

    Returns
    -------
    bandwidth : float
        The width.
    scores : dict
        ``{multiple: validation score}``.
    """
    # the rows weighted as the fit weighs them (sample times class weight)
    median = median_heuristic(_standardized(base_config, sample), 1.0,
                              random_state=seed % 2**32, sample_weight=class_row_weights(
                                  base_config, y, weights, classes))
    keys = list(CANDIDATES)
    scores = _run_trials([(base_config, m * median, 1.0) for m in keys], sample, y,
                         weights, classes=classes, make_schedule=make_schedule,
                         n_features=n_features, seed=seed, steps=steps, threads=threads)
    scores = dict(zip(keys, scores))
    best = max(scores.values())
    multiple = max(m for m, score in scores.items() if score >= best - TIE)
    return multiple * median, scores


def _split(weights: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The trials' training and validation rows (the same for every trial of a fit)."""
    rng = np.random.default_rng(seed % 2**63)
    # rows of weight 0 carry nothing: they are left out, so that neither part of the split
    # is weightless (a validation part of zero weight cannot be scored)
    kept = np.flatnonzero(np.asarray(weights) > 0)
    order = kept[rng.permutation(len(kept))]
    n_train = max(2, (3 * len(order)) // 4)
    tr, va = order[:n_train], order[n_train:]
    if len(va) == 0:  # two rows or fewer: nothing to validate on
        va = tr
    return tr, va


def _run_trials(trials, sample, y, weights, *, classes, make_schedule, n_features: int,
                seed: int, steps: int, threads: int | None) -> list:
    """The validation score of every trial ``(config, bandwidth, alpha_factor)``: the
    fit's setup with that standardization (``config``), width and ``alpha`` (``"auto"``'s
    value times ``alpha_factor``), on the split of :func:`_split`."""
    tr, va = _split(weights, seed)
    n_train = len(tr)
    block = trials[0][0].block_size
    n_blocks = max(1, min(n_features, TRIAL_FEATURES) // block)
    batch = int(min(trials[0][0].batch_size, max(16, n_train // 8)))
    at_once, each = trial_threads(threads, len(trials))

    def run(trial):
        base, bandwidth, alpha_factor = trial
        schedule = make_schedule(bandwidth, n_train, batch, alpha_factor=alpha_factor,
                                 rows=_standardized(base, sample))
        config = replace(base, bandwidth=bandwidth, n_blocks=n_blocks,
                         batch_size=batch, learning_rate=schedule.learning_rate,
                         eta0=schedule.eta0, t0=schedule.t0, alpha=schedule.alpha,
                         average=schedule.average, shuffle=True, on_invalid="error",
                         n_jobs=each)
        return _trial(config, sample[tr], y[tr], weights[tr], sample[va], y[va],
                      weights[va], classes, steps, seed)

    # every BLAS call of a trial runs under one BLAS thread (its steps, its schedule, its
    # scores); holding the limit here sets it once for all the trials rather than once
    # per step (finding the BLAS libraries costs about 30 ms a time on a busy machine)
    with single_threaded_blas():
        if at_once == 1:
            return [run(t) for t in trials]
        with ThreadPoolExecutor(max_workers=at_once) as pool:
            return list(pool.map(run, trials))


def common_scale(config):
    """``config`` with one scale for every input instead of one per input: the root mean
    square of the per-input standard deviations (the centring is kept), so the kernel
    weighs the inputs by their own spread, as on the raw data.

    Examples
    --------
    >>> from ooc_kernels.families.dsg.solver import DSGConfig
    >>> c = DSGConfig(loss_id=0, target="regression", n_outputs=1, n_features_in=2,
    ...               block_size=4, n_blocks=1, bandwidth=1.0, feature_seed=0, alpha=0.1,
    ...               batch_size=4, learning_rate="constant", eta0=0.1, t0=0.0,
    ...               dtype="float64", x_shift=(0.0, 1.0), x_scale=(1.0, 7.0))
    >>> common_scale(c).x_scale
    (5.0, 5.0)
    """
    scale = np.asarray(config.x_scale, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        value = float(np.sqrt(np.mean(scale ** 2)))
    if not np.isfinite(value) or scale.max() < 1e-140:   # squares that overflow (scales
        # beyond about 1e154) or underflow (below about 1e-154): on the scales over the largest
        value = float(scale.max() * np.sqrt(np.mean((scale / scale.max()) ** 2)))
    return replace(config, x_scale=(value,) * len(scale))


def scales_differ(config) -> bool:
    """Whether the per-input scales of ``config`` differ by more than a factor
    :data:`SCALE_SPREAD` (when they do not, one common scale is nearly the same model).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> scales_differ(SimpleNamespace(x_scale=(1.0, 1.2))), scales_differ(
    ...     SimpleNamespace(x_scale=(1.0, 3.0)))
    (False, True)
    """
    if config.x_scale is None:
        return False
    scale = np.asarray(config.x_scale, dtype=np.float64)
    return bool(scale.max() > SCALE_SPREAD * scale.min())


def select_scale_and_alpha(base_config, common_config, sample, y, weights, *, classes,
                           make_schedule, n_features: int, seed: int, multiple: float,
                           best: float, alpha_factors=(1.0,), steps: int = TRIAL_STEPS,
                           threads: int | None = None):
    """After the bandwidth trials: the standardization and regularization the same trials
    prefer at the chosen ``multiple`` of the median distance.

    The alternatives are one common scale for every input (``common_config``; None: not
    tried) and ``alpha`` times each factor of ``alpha_factors`` besides 1, alone and
    together.  One is taken only when its validation score is more than :data:`TIE` above
    ``best``, the score of the per-input scales at ``alpha`` (the bandwidth trials'
    winner); among those, the best score wins.

    Returns
    -------
    config : DSGConfig
        ``base_config`` or ``common_config``.
    bandwidth : float
        ``multiple`` times the median distance of the rows as ``config`` sees them.
    alpha_factor : float
    scores : dict
        ``{(scaling, alpha_factor): validation score}``, ``scaling`` ``"per-input"`` or
        ``"common"``; the bandwidth trials' winner is ``("per-input", 1.0)``.
    """
    options = [("per-input", base_config)]
    if common_config is not None:
        options.append(("common", common_config))
    row_w = class_row_weights(base_config, y, weights, classes)  # as the fit weighs rows
    trials, keys = [], []
    for name, config in options:
        median = median_heuristic(_standardized(config, sample), 1.0,
                                  random_state=seed % 2**32, sample_weight=row_w)
        for factor in (1.0, *[f for f in alpha_factors if f != 1.0]):
            if (name, factor) != ("per-input", 1.0):
                trials.append((config, multiple * median, factor))
                keys.append((name, factor))
    scores = {("per-input", 1.0): best}
    if trials:
        scores.update(zip(keys, _run_trials(
            trials, sample, y, weights, classes=classes, make_schedule=make_schedule,
            n_features=n_features, seed=seed, steps=steps, threads=threads)))
    top = max(scores, key=lambda k: scores[k])
    if scores[top] <= best + TIE:
        top = ("per-input", 1.0)
    config = dict(options)[top[0]]
    median = median_heuristic(_standardized(config, sample), 1.0,
                              random_state=seed % 2**32, sample_weight=row_w)
    return config, multiple * median, top[1], scores


def _standardized(config, X: np.ndarray) -> np.ndarray:
    """The rows as the model sees them."""
    if config.x_shift is None:
        return np.asarray(X, dtype=np.float64)
    return (np.asarray(X, dtype=np.float64) - np.asarray(config.x_shift)) \
        / np.asarray(config.x_scale)
