"""What the PKAWV estimators take from a sample of rows before training: the shifts and
scales of the inputs and targets, and the bandwidth trials.

Both estimators read the data of their first ``fit`` or ``partial_fit`` call once in a
set-up pass (``_setup_pass``, the same whatever the chunking): ``ProjectedKernelRidge``
takes the moments of all the rows and a uniform draw of :data:`SETUP_ROWS` of them,
``OnlineKernelRidge`` the ranges of the inputs and the moments of the target (and with
``bandwidth="auto"`` the same draw: both run :func:`bandwidth_trials` on it).  The
statistics stay fixed for the model's life
(every later ``partial_fit`` call, every continuation).  The model then sees
``(X - x_shift) / x_scale`` and ``(y - y_shift) / y_scale``, chunk by chunk
(:func:`scaled_data`: a lazy map of the chunks, no copy of the data set), and predicts
``f(x) * y_scale + y_shift`` in the original units.

Examples
--------
>>> import numpy as np
>>> shift, scale = moments(np.array([[1.0, 5.0], [3.0, 5.0]]))
>>> shift.tolist(), scale.tolist()            # a constant column keeps a scale of 1
([2.0, 5.0], [1.0, 1.0])
>>> unit_range(np.array([[0.0, 5.0], [10.0, 5.0]]))[1].tolist()
[5.0, 1.0]
"""

from __future__ import annotations

import numpy as np

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels._moments import weighted_moments
from ooc_kernels.features.bandwidth import median_heuristic

__all__ = ["SETUP_ROWS", "TRIAL_ROWS", "BANDWIDTH_MULTIPLES", "moments", "unit_range",
           "scale_rows", "scaled_data", "loo_errors", "bandwidth_trials",
           "median_bandwidth", "ALPHAS"]

#: Rows drawn for the statistics, the bandwidth and the Taylor centre.
SETUP_ROWS = 2000
#: Rows of the setup sample that the bandwidth trials fit (their first ones: a uniform draw).
TRIAL_ROWS = 1000
#: ``bandwidth="auto"`` tries these multiples of the median pairwise distance (in the units
#: the model sees), as the DSG estimators' trials do.
BANDWIDTH_MULTIPLES = (0.125, 0.25, 0.5, 1.0, 2.0)
#: ``alpha="auto"`` tries these values of ``alpha`` (for the whole data: the trials, on
#: ``m`` of the ``n`` rows, use ``alpha * m / n``).
ALPHAS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)


def moments(values, weights=None) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, standard deviation)`` of ``values`` along axis 0, rows weighted by
    ``weights`` (None: unweighted), as the library's standardizations compute them
    (:func:`~ooc_kernels._moments.weighted_moments`: finite for every finite column, huge
    or tiny values included); a standard deviation that is 0 or not finite is 1 (a
    constant column or target is only shifted)."""
    values = np.asarray(values, dtype=np.float64)   # the setup rows (SETUP_ROWS at most)
    if not len(values):
        return np.zeros(values.shape[1:]), np.ones(values.shape[1:])
    mean, sd = weighted_moments(values, weights)
    return (np.asarray(mean, dtype=np.float64),
            np.asarray(np.where(np.isfinite(sd) & (sd > 0), sd, 1.0), dtype=np.float64))


def unit_range(values) -> tuple[np.ndarray, np.ndarray]:
    """``(mid, half width)`` of every column of ``values``: ``(X - mid) / half`` maps the
    columns' range onto ``[-1, 1]`` (a constant column: shifted to 0, half width 1)."""
    values = np.asarray(values, dtype=np.float64)
    lo, hi = values.min(axis=0), values.max(axis=0)
    mid = lo / 2 + hi / 2
    half = hi / 2 - lo / 2
    return mid, np.where(np.isfinite(half) & (half > 0), half, 1.0)


def scale_rows(X, shift, scale) -> np.ndarray:
    """``(X - shift) / scale`` in float64 (one chunk or tile; ``shift`` None: ``X``)."""
    X = np.asarray(X, dtype=np.float64)
    return X if shift is None else (X - shift) / scale


def _scale_targets(y, shift: float, scale: float) -> np.ndarray:
    y = np.asarray(y)
    if y.dtype.kind not in "fiub":
        return y   # not numbers: the chunk step names them
    return (y.astype(np.float64) - shift) / scale


def scaled_data(data, x_shift, x_scale, y_shift: float, y_scale: float):
    """``data`` with ``X`` and ``y`` as the model sees them, mapped chunk by chunk (lazy:
    nothing is read here); ``x_shift`` None leaves ``X`` as it is, ``y_shift = 0`` and
    ``y_scale = 1`` leave ``y``."""
    changed = {}
    if x_shift is not None:
        changed["X"] = data.X.map_blocks(scale_rows, x_shift, x_scale, dtype=np.float64)
    if (y_shift, y_scale) != (0.0, 1.0) and data.y is not None:
        changed["y"] = data.y.map_blocks(_scale_targets, y_shift, y_scale, dtype=np.float64)
    if not changed:
        return data
    identities = {k: v for k, v in data.identities.items() if k not in changed}
    return data.replace(variables=dict(data.variables, **changed), identities=identities)


def median_bandwidth(rows: np.ndarray, weights: np.ndarray, seed: int) -> float:
    """The median pairwise distance of ``rows`` weighted by ``weights`` (numbers of copies),
    1.0 when it is not positive (fewer than two distinct rows): the centre of the
    bandwidth trials."""
    if len(rows) < 2 or not (rows != rows[0]).any():
        return 1.0
    unit = bool(np.all(weights == 1.0))   # the plain median: no pair weights to sort
    return float(median_heuristic(rows, 1.0, random_state=seed % 2**32,
                                  sample_weight=None if unit else weights)) or 1.0


def loo_errors(Phi: np.ndarray, y: np.ndarray, weights, alphas) -> np.ndarray:
    """The exact leave-one-out error of ridge regression on the features ``Phi``,
    ``min_w sum_i s_i (y_i - w . phi_i)^2 + alpha ||w||^2``, at every ``alpha`` of
    ``alphas``: ``sum_i s_i (y_i - f_-i(x_i))^2 / S``, ``f_-i`` the ridge refitted with
    ``u_i = min(s_i, 1)`` of row ``i``'s weight left out, ``S = sum_i s_i``.  With unit
    weights that is each row left out; an integer weight counts exactly as that many copies
    of its row (one copy is left out at a time).  From one eigendecomposition of ``B^T B``
    (``r x r``) or ``B B^T`` (``m x m``), the smaller (``B`` the rows ``sqrt(s_i) phi_i``):
    with ``H`` the hat matrix of ``B``, ``(y_i - f_-i(x_i)) = r_i / (1 - u_i H_ii / s_i)``
    (Sherman-Morrison), ``r_i`` the residual of the fit on all the rows.

    Not generalized cross-validation, which replaces every ``H_ii`` by their mean: on a few
    dozen rows with some far from the rest (statsmodels' ``statecrime``, 38 training rows)
    it takes a ridge that interpolates, and the model scores R^2 -3.8 on held-out rows.

    >>> rng = np.random.default_rng(0)
    >>> for r in (3, 40):                         # the primal and the dual forms
    ...     Phi, y = rng.normal(size=(30, r)), rng.normal(size=30)
    ...     refit = [Phi[i] @ np.linalg.solve(np.delete(Phi, i, 0).T @ np.delete(Phi, i, 0)
    ...                                       + 0.5 * np.eye(r), np.delete(Phi, i, 0).T
    ...                                       @ np.delete(y, i)) for i in range(30)]
    ...     direct = np.mean((y - np.array(refit)) ** 2)
    ...     w = np.arange(1.0, 31.0) % 3 + 1                   # weights 1, 2, 3 ...
    ...     copies = np.repeat(np.arange(30), w.astype(int))
    ...     repeated = loo_errors(Phi[copies], y[copies], None, [0.5])
    ...     print(bool(np.isclose(loo_errors(Phi, y, None, [0.5])[0], direct)),
    ...           bool(np.allclose(loo_errors(Phi, y, w, [0.5]), repeated)))
    True True
    True True
    """
    s = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=np.float64)
    root = np.sqrt(s)
    B, z = Phi * root[:, None], y * root
    m, r = B.shape
    # the share of a row's weight left out: all of it up to 1, one copy above
    share = np.divide(np.minimum(s, 1.0), s, out=np.ones_like(s), where=s > 0)
    with single_threaded_blas():
        if r <= m:
            e, V = np.linalg.eigh(B.T @ B)
            U = B @ V          # (m, r): columns sqrt(e_j) u_j
            c = V.T @ (B.T @ z)
        else:
            e, U = np.linalg.eigh(B @ B.T)
            c = U.T @ z
    e = np.clip(e, 0.0, None)
    U2 = U ** 2
    total = float(np.sum(s))
    out = []
    for alpha in alphas:
        if r <= m:
            residual = z - U @ (c / (e + alpha))
            left = 1.0 - share * (U2 @ (1.0 / (e + alpha)))
        else:
            # in the eigenbasis of B B^T: z - H z = U (alpha / (e + alpha)) U^T z and
            # 1 - H_ii = sum_j U_ij^2 alpha / (e_j + alpha) (alpha cancels in the ratio)
            kept = 1.0 / (e + alpha)
            residual = U @ (kept * c)
            left = (1.0 - share) / alpha + share * (U2 @ kept)
        ratio = residual / np.maximum(left, 1e-300)
        out.append(float(np.sum(ratio ** 2) / total))
    return np.array(out)


def bandwidth_trials(rows, y, weights, median: float, alphas, features,
                     multiples=BANDWIDTH_MULTIPLES):
    """``(bandwidth, alpha, {multiple: score})``: of the ``multiples`` of ``median`` (by
    default :data:`BANDWIDTH_MULTIPLES`) and the ``alphas``, the pair whose model has the
    smallest exact leave-one-out error (:func:`loo_errors`) on the first
    :data:`TRIAL_ROWS` of ``rows`` (``features(sigma, rows)``: the features the fit would
    use at width ``sigma``); a score is ``1 - error / variance`` of the targets, a
    multiple's the best of its alphas.  Ties go to the wider kernel, then the larger
    alpha.  A trial whose solve fails scores ``-inf``."""
    rows, y = rows[:TRIAL_ROWS], np.asarray(y, dtype=np.float64)[:TRIAL_ROWS]
    w = None if weights is None else np.asarray(weights, dtype=np.float64)[:TRIAL_ROWS]
    var = float(np.average((y - np.average(y, weights=w)) ** 2, weights=w)) or 1.0
    alphas = [float(a) for a in alphas]
    table = {}
    for mult in multiples:
        try:
            mse = loo_errors(features(mult * median, rows), y, w, alphas)
        except (np.linalg.LinAlgError, ValueError):
            mse = np.full(len(alphas), np.inf)
        for alpha, err in zip(alphas, mse):
            table[mult, alpha] = float(1.0 - err / var) if np.isfinite(err) else -np.inf
    best = max(table, key=lambda k: (table[k], k))
    scores = {mult: max(table[mult, a] for a in alphas) for mult in multiples}
    return best[0] * median, best[1], scores
