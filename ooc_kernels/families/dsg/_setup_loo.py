"""``bandwidth="auto"`` on at most 50,000 rows: the width, the scaling and ``alpha`` chosen
by exact leave-one-out predictions of kernel ridge regression, without trial fits.

The trials of :mod:`~ooc_kernels.families.dsg._bandwidth` (eight short fits of 2,048
features on about 2,250 sampled rows) cost 2 to 3.5 CPU seconds whatever the data size: on
a few thousand or tens of thousands of rows more than the fit itself.  Up to
:data:`~ooc_kernels.families.dsg._large_data.LARGE_DATA_ROWS` rows the same choices are
made here:

1. :data:`LOO_ROWS` of the sampled rows of positive weight are drawn (with the seed); when
   a class is rare, every sampled row of it and the rest from the other classes, each class
   weighing the same in the model scored and in its score
   (:mod:`~ooc_kernels.families.dsg._rare_class`);
2. for a candidate multiple ``m`` of the median pairwise distance (that of the whole
   sample as the scaling sees it) the kernel is the one the fit's model has: the Gram
   matrix of the fit's own first :data:`LOO_FEATURES` random features
   (:func:`random_feature_gram`), not the exact kernel, because a width narrower than the
   features can represent collapses (digits: 0.125 times the median scores 0.15 with the
   features, 0.96 with the exact kernel);
3. with ``M = D^1/2 K D^1/2`` (``D``: the rows' weights, sample times class weight, scaled
   to mean 1) and a ridge :data:`LOO_RIDGE` times the fit's ``alpha`` per row, one Cholesky
   factorization per ``alpha`` gives every row's exact leave-one-out prediction
   (:func:`loo_predictions`), scored as the trials score their validation rows
   (:func:`~ooc_kernels.families.dsg._bandwidth.score`: weighted accuracy, ``R^2``, or one
   minus the ratio of the fit's loss to the mean's);
4. the candidates are scanned from 1 and 0.5 towards the better side until the score curve
   turns (:func:`scan_candidates`: 3 of the 5 on digits and on the 10-input problem), and
   the trials' rules pick, but for the width's tie: the best multiple (per-input
   scaling, the fit's ``alpha``; :data:`WIDTH_TIE`), then at that multiple one common scale (``standardize="auto"``,
   spreads differing by more than a factor 2) and ``alpha / 10`` (``alpha="auto"``),
   taken only when more than ``TIE`` above it.

The targets are those of :func:`~ooc_kernels.families.dsg._bandwidth.gcv_targets` (+-1 per
class, or the standardized regression target).  Above ``LARGE_DATA_ROWS`` rows the trials
run instead: their cost is small next to the fit's, and the many-row rules
(:mod:`~ooc_kernels.families.dsg._large_data`) read their score curve.

Examples
--------
>>> from ooc_kernels.families.dsg._setup_loo import loo_predictions
>>> rng = np.random.default_rng(0)
>>> Z = rng.normal(size=(50, 2))
>>> K = np.exp(-((Z[:, None] - Z[None]) ** 2).sum(-1) / 2)
>>> t = np.sin(Z[:, :1])
>>> loo = loo_predictions(K, t, np.ones(50), ridge=0.1)
>>> keep = np.arange(1, 50)                       # refit without row 0
>>> beta = np.linalg.solve(K[np.ix_(keep, keep)] + 0.1 * np.eye(49), t[keep])
>>> bool(np.isclose(loo[0, 0], K[0, keep] @ beta[:, 0]))
True
"""

from __future__ import annotations

import numpy as np

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels.families.dsg._bandwidth import (CANDIDATES, TIE, _standardized,
                                                 class_row_weights, gcv_targets, score)
from ooc_kernels.families.dsg import _large_data
from ooc_kernels.families.dsg._rare_class import scored_rows
from ooc_kernels.families.dsg._robust_targets import clip_targets
from ooc_kernels.features.ard import solve_spd
from ooc_kernels.features.bandwidth import median_heuristic
from ooc_kernels.features.maps import get_feature_map
from ooc_kernels.losses import loss_by_id

__all__ = ["LOO_ROWS", "LOO_FEATURES", "LOO_RIDGE", "WIDTH_TIE", "SCAN_START", "LOO_MIN_ROWS", "use_loo_setup", "loo_predictions",
           "random_feature_gram", "scan_candidates", "select_setup_loo", "SetupLOOAhead"]

#: Sampled rows of the leave-one-out scores (one ``LOO_ROWS``-square eigendecomposition per
#: scaling and width).
LOO_ROWS = 500
#: Random features of the model whose leave-one-out predictions are scored (the fit's first
#: blocks).
LOO_FEATURES = 2048
#: The ridge of the scored models, in units of the kernel on rows of weight 1: ``alpha``
#: is ``LOO_RIDGE`` times the fit's (``alpha="auto"``: ``LOO_RIDGE / n`` on the ``n`` rows
#: scored).  The fit's stochastic steps with their finite budget regularize more than
#: ``alpha`` alone: at 10 the scores rank the widths and ``alpha / 10`` as the trial fits
#: of the solver did on the defaults suite (``docs/defaults.md``, "Bandwidth"), at 1 they
#: prefer widths and ``alpha`` values the fit then does worse with.
LOO_RIDGE = 10.0
#: The width is the best-scoring multiple (ties within this go to the wider one).  Not
#: the trials' ``TIE``: the leave-one-out scores favour wide kernels more than the solver
#: does (on 1,500 rows of deformed digits 0.5 and 1 times the median scored 0.878 and
#: 0.876, the trials preferred 0.5, and the fit with 1 scores 0.900 against 0.953).
WIDTH_TIE = 0.0
#: The scan's first candidate (then its narrower neighbour).
SCAN_START = 1.0
#: The fewest sampled rows of positive weight the leave-one-out choice runs on.
LOO_MIN_ROWS = 50


def use_loo_setup(n_rows: int, n_positive: int) -> bool:
    """Whether a fit on ``n_rows`` rows, ``n_positive`` of the sampled rows with positive
    weight, chooses its setup by leave-one-out (:func:`select_setup_loo`): at most
    :data:`~ooc_kernels.families.dsg._large_data.LARGE_DATA_ROWS` rows (above, the trials
    run: the many-row rules read their score curve).

    Examples
    --------
    >>> use_loo_setup(20_000, 3000), use_loo_setup(300_000, 3000), use_loo_setup(5000, 10)
    (True, False, False)
    """
    return int(n_rows) <= _large_data.LARGE_DATA_ROWS and int(n_positive) >= LOO_MIN_ROWS


def loo_predictions(M: np.ndarray, targets: np.ndarray, weights: np.ndarray, *,
                    ridge: float) -> np.ndarray:
    """Exact leave-one-out predictions of weighted kernel ridge regression, from the
    weighted kernel matrix ``M = D^1/2 K D^1/2`` (``D = diag(weights)``).

    Kernel ridge regression minimizing ``sum_i w_i (t_i - f(x_i))^2 + ridge ||f||^2``,
    refitted without row ``i``, predicts ``t_i - (B D^1/2 t)_i / (w_i^1/2 B_ii)`` there,
    with ``B = (M + ridge I)^-1`` (one Cholesky factorization, two triangular solves and the
    factor's triangular inverse for ``diag(B)``:
    :func:`~ooc_kernels.features.ard.solve_spd`).

    Parameters
    ----------
    M : ndarray of shape (n, n)
    targets : ndarray of shape (n, c)
    weights : ndarray of shape (n,)
        Positive.
    ridge : float
        Positive.

    Returns
    -------
    ndarray of shape (n, c)
    """
    A = np.array(M, dtype=np.float64, order="F")
    A[np.diag_indices_from(A)] += ridge
    root = np.sqrt(weights)
    U = root[:, None] * targets
    solved = solve_spd(A, U)
    if solved is None:  # not positive definite in floating point: the spectrum, clipped at 0
        lam, Q = np.linalg.eigh(np.asarray(M, dtype=np.float64))
        B = (Q / (np.clip(lam, 0.0, None) + ridge)) @ Q.T
        solved = B @ U, np.diag(B)
    BU, diag = solved
    return targets - BU / (root * diag)[:, None]


def random_feature_gram(fmap, Z: np.ndarray, bandwidth: float, *, feature_seed: int,
                        block_size: int, n_blocks: int) -> np.ndarray:
    """``Phi Phi^T / n_blocks`` of the rows ``Z`` (as the model sees them) with the fit's
    first ``n_blocks`` blocks of random features (those of ``feature_seed``, at width
    ``bandwidth``): the kernel the fit's model actually has, each block an unbiased
    estimate of the exact kernel ``fmap.gram``.

    Examples
    --------
    >>> from ooc_kernels.features.maps import get_feature_map
    >>> fmap = get_feature_map("rbf")
    >>> Z = np.random.default_rng(0).normal(size=(5, 3))
    >>> G = random_feature_gram(fmap, Z, 2.0, feature_seed=1, block_size=512, n_blocks=8)
    >>> bool(np.abs(G - fmap.gram(Z, Z, 2.0)).max() < 0.05)
    True
    """
    from ooc_kernels._jit.rff import features_inplace_ref

    X = fmap.map_rows(np.asarray(Z, dtype=np.float64), None, np.float64)
    blocks = [fmap.block(feature_seed, j, X.shape[1], block_size, bandwidth)
              for j in range(int(n_blocks))]
    W = np.concatenate([b[0] for b in blocks], axis=1)
    phase = np.concatenate([b[1] for b in blocks])
    # float32 features: the Gram matrix only ranks candidates, and the products and
    # cosines cost half
    P = (X @ W).astype(np.float32)
    phase = phase.astype(np.float32)
    r = W.shape[1] // max(int(n_blocks), 1)
    for j in range(int(n_blocks)):  # block by block: a mixed map lays out each block
        cols = slice(j * r, (j + 1) * r)
        features_inplace_ref(fmap.nonlinearity, P[:, cols], phase[cols],
                             fmap.feature_scale(block_size))
    return (P @ P.T).astype(np.float64) / max(int(n_blocks), 1)


def scan_candidates(score_of, tie: float = TIE) -> dict:
    """``{multiple: score_of(multiple)}`` for the candidates of
    :data:`~ooc_kernels.families.dsg._bandwidth.CANDIDATES` a scan needs to apply the
    rule "the largest multiple within ``tie`` of the best", the score curve taken to have
    one peak: :data:`SCAN_START` and its narrower neighbour, then narrower while the
    narrowest scored is the best, then wider while the widest scored is within ``tie`` of
    the best.

    Examples
    --------
    >>> curve = {0.125: 0.2, 0.25: 0.8, 0.5: 0.95, 1.0: 0.93, 2.0: 0.8}
    >>> sorted(scan_candidates(curve.get))        # 2.0 and 0.125 are not needed
    [0.25, 0.5, 1.0]
    >>> curve = {0.125: 0.2, 0.25: 0.8, 0.5: 0.95, 1.0: 0.948, 2.0: 0.946}
    >>> sorted(scan_candidates(curve.get))        # 2.0 may win the tie
    [0.25, 0.5, 1.0, 2.0]
    """
    keys = sorted(CANDIDATES)
    at = keys.index(SCAN_START)
    scores = {m: score_of(m) for m in keys[max(at - 1, 0):at + 1]}
    while min(scores) != keys[0] and scores[min(scores)] >= max(scores.values()):
        narrower = keys[keys.index(min(scores)) - 1]
        scores[narrower] = score_of(narrower)
    while max(scores) != keys[-1] and scores[max(scores)] >= max(scores.values()) - tie:
        wider = keys[keys.index(max(scores)) + 1]
        scores[wider] = score_of(wider)
    return {m: scores[m] for m in sorted(scores)}


def select_setup_loo(base_config, common_config, sample, y, weights, *, classes,
                     alpha: float | None, alpha_factors=(1.0,), seed: int, kernel="rbf"):
    """The setup ``bandwidth="auto"`` takes from leave-one-out scores (module docstring).

    Parameters
    ----------
    base_config : DSGConfig
        The fit's configuration (per-input scaling, any per-input widths folded in).
    common_config : DSGConfig or None
        The same with one common scale (None: not considered).
    sample, y, weights : ndarray
        The sampled rows, their targets and their sample weights (class weights are applied
        from the configuration, as the fit applies them).
    classes : ndarray or None
    alpha : float or None
        The fit's ``alpha`` (per unit of row weight, the weights scaled to mean 1); None:
        ``alpha="auto"``, ``1 / n`` on the ``n`` rows scored, as the trials take it on theirs.
    alpha_factors : tuple of float
        Factors of ``alpha`` tried besides 1.
    seed : int
    kernel : str or FeatureMap
        The fit's feature map; its exact kernel makes ``K``.

    Returns
    -------
    config : DSGConfig
        ``base_config`` or ``common_config``.
    bandwidth : float
        The chosen multiple times the median pairwise distance of the sampled rows as
        ``config`` sees them.
    alpha_factor : float
    bandwidth_scores : dict
        ``{multiple: score}`` (per-input scaling, the fit's ``alpha``).
    setup_scores : dict or None
        ``{(scaling, alpha_factor): score}`` at the chosen multiple (None when there was
        nothing but the per-input scaling at the fit's ``alpha`` to try).
    """
    w_all = class_row_weights(base_config, y, weights, classes)
    # a rare class: all its sampled rows, each class weighing the same (_rare_class)
    rows, factors = scored_rows(y, w_all, classes, LOO_ROWS,
                                np.random.default_rng(seed % 2**63))
    sample_w = np.asarray(weights)[rows] * (1.0 if factors is None else factors)
    w = w_all[rows] * (1.0 if factors is None else factors)
    w = w / w.mean()
    yr = np.asarray(y)[rows]
    if classes is None:
        t = (np.asarray(yr, dtype=np.float64) - base_config.y_shift) / base_config.y_scale
        T = gcv_targets(clip_targets(t, loss_by_id(base_config.loss_id).name), None)
    else:
        T = gcv_targets(yr, classes)
    # the objective sum_i w_i (t_i - f(x_i))^2 / W + alpha ||f||^2 (W = sum(w) = rows)
    ridge = LOO_RIDGE * (1.0 if alpha is None else max(float(alpha) * len(rows), 1e-12))
    factors = (1.0, *[f for f in alpha_factors if f != 1.0])
    fmap = get_feature_map(kernel)
    n_blocks = max(1, min(base_config.n_blocks, LOO_FEATURES // base_config.block_size))
    options = [("per-input", base_config)]
    if common_config is not None:
        options.append(("common", common_config))
    medians = {name: median_heuristic(_standardized(config, sample), 1.0,
                                      random_state=seed % 2**32, sample_weight=w_all)
               for name, config in options}

    def scores_at(config, bandwidth, factors_):
        Z = _standardized(config, sample[rows])
        root = np.sqrt(w)
        gram = random_feature_gram(fmap, Z, bandwidth, feature_seed=config.feature_seed,
                                   block_size=config.block_size, n_blocks=n_blocks)
        M = root[:, None] * gram * root[None, :]
        out = {}
        for factor in factors_:
            pred = loo_predictions(M, T, w, ridge=ridge * factor)
            F = pred * config.y_scale + config.y_shift if classes is None else pred
            out[factor] = score(config, F, yr, sample_w, classes)
        return out

    with single_threaded_blas():  # a few hundred rows: threads only spin on busy cores
        curve = {}
        bandwidth_scores = scan_candidates(lambda m: curve.setdefault(m, scores_at(
            base_config, m * medians["per-input"], factors))[1.0], tie=WIDTH_TIE)
        best = max(bandwidth_scores.values())
        multiple = max(m for m, v in bandwidth_scores.items() if v >= best - WIDTH_TIE)
        if len(options) == 1 and len(factors) == 1:
            return base_config, multiple * medians["per-input"], 1.0, bandwidth_scores, None
        setup = {("per-input", f): v for f, v in curve[multiple].items()}
        if common_config is not None:
            setup.update({("common", f): v for f, v in scores_at(
                common_config, multiple * medians["common"], factors).items()})
    top = max(setup, key=lambda k: setup[k])
    if setup[top] <= bandwidth_scores[multiple] + TIE:
        top = ("per-input", 1.0)
    config = dict(options)[top[0]]
    return config, multiple * medians[top[0]], top[1], bandwidth_scores, setup


class SetupLOOAhead:
    """:func:`select_setup_loo` started on a thread of its own for the configurations it
    will most likely get, while the caller decides them (``bandwidth="auto"``: the
    per-input width decision, :func:`~ooc_kernels.families.dsg._ard.auto_ard`, which keeps
    one width on most problems).

    :meth:`result` returns the early run's answer when it is asked for the same
    configurations, else runs :func:`select_setup_loo` for the ones asked: the answer is
    the same either way, and with ``threads=1`` nothing runs early.  ``then`` (a function
    of the answer) runs on the same thread as soon as the early answer is known (the
    estimators: the step size's and the curvature's eigenvalues); :attr:`then_value` is
    its value when :meth:`result` returned the early answer, else None (nothing of a
    discarded early run reaches the caller: ``then`` must compute, not warn or log).

    Examples
    --------
    >>> from ooc_kernels.families.dsg.solver import DSGConfig
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
    >>> config = DSGConfig(loss_id=1, target="binary", n_outputs=1, n_features_in=2,
    ...                    block_size=256, n_blocks=8, bandwidth=1.0, feature_seed=0,
    ...                    alpha=0.0, batch_size=64, learning_rate="constant", eta0=1.0,
    ...                    t0=0.0, dtype="float64", classes=(0, 1))
    >>> kw = dict(classes=np.array([0, 1]), alpha=None, seed=0)
    >>> ahead = SetupLOOAhead(2, config, None, X, y, np.ones(300), then=lambda a: a[1], **kw)
    >>> early = ahead.result(config, None)
    >>> early[1:4] == select_setup_loo(config, None, X, y, np.ones(300), **kw)[1:4]
    True
    >>> ahead.then_value == early[1]
    True
    """

    def __init__(self, threads: int, base_config, common_config, *args, then=None,
                 **kwargs):
        self._configs = (base_config, common_config)
        self._args, self._kwargs = args, kwargs
        self._pool = self._future = None
        self.then_value = None
        if int(threads) > 1:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(max_workers=1)
            self._future = self._pool.submit(self._run, then)

    def _run(self, then):
        """The early run and ``then`` of its answer (unless the answer is no longer
        wanted), on the pool's thread."""
        answer = select_setup_loo(*self._configs, *self._args, **self._kwargs)
        return answer, None if then is None or self._discarded else then(answer)

    _discarded = False

    def result(self, base_config, common_config):
        """:func:`select_setup_loo` for these configurations (the early run's answer when
        they are the ones it ran with; else the scan runs at once, beside the rest of the
        early run, whose ``then`` is skipped, and the early run has ended when the answer
        is returned)."""
        pool, self._pool = self._pool, None
        if pool is None:
            return select_setup_loo(base_config, common_config, *self._args, **self._kwargs)
        wanted = (base_config, common_config) == self._configs
        self._discarded = not wanted
        if wanted:
            pool.shutdown(wait=True)
            answer, self.then_value = self._future.result()
            return answer
        try:
            return select_setup_loo(base_config, common_config, *self._args, **self._kwargs)
        finally:
            pool.shutdown(wait=True)  # no thread of the set-up outlives it

    def close(self) -> None:
        """Discard the early run (its ``then`` is skipped unless it already started) and
        wait for it to end: what a caller that will not ask :meth:`result` calls (a set-up
        that failed or was interrupted), so no thread of the set-up outlives it and none
        holds the BLAS limit after the fit has ended.  Nothing happens after
        :meth:`result` or with ``threads=1``."""
        pool, self._pool = self._pool, None
        if pool is not None:
            self._discarded = True
            pool.shutdown(wait=True)
