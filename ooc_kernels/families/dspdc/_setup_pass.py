"""The set-up of a DSPDC fit: ``local_passes="auto"``, and the column moments and ``Lambda``
from one read of the data where that gives the same ``Lambda`` as two.

``Lambda`` is a statistic of the rows the solver sees, standardized with the column moments
of the whole data, so in general it needs a second pass after the moments' pass.  With one
dual and every primal coordinate per iteration (``m = 1``, ``q = p``: the defaults) and a
string ``Lambda`` mode, ``Lambda`` is a function of one number only, the largest squared
norm of a standardized row ``R^2 = max_i w_i ||a'_i||^2`` (``Lambda_{p,1} = R^2``: the
``"exact"`` and ``"upper_bound"`` values, and the ``"heuristic"`` ``m q R^2 / p``).  One
pass then gathers, per chunk, the column moments and the rows that can hold that maximum:

* a chunk standardizes its rows with its own moments (``shift_k``, ``scale_k``) and keeps
  the ``T`` rows of the largest weighted squared norms ``h_i = w_i ||(a_i - shift_k) /
  scale_k||^2``, with ``tau_k``, the largest ``h_i`` of the rows it drops, and its largest
  weight ``w_k``;
* with the final ``shift`` and ``scale`` (the merged moments), a dropped row has
  ``w_i ||(a_i - shift) / scale||^2 <= rho_k (sqrt(tau_k) + sqrt(w_k) delta_k)^2``, where
  ``rho_k = max_j (scale_kj / scale_j)^2`` and ``delta_k = ||(shift - shift_k) / scale_k||``
  (the triangle inequality in the norm scaled by ``scale_k``), plus ``w_k c^2`` for the
  intercept's column of value ``c``;
* the kept rows are standardized with the final moments exactly as the second pass would
  (the same functions, row by row), and if the largest of them exceeds every chunk's bound,
  it is ``R^2``, the value of the second pass.  Otherwise (a chunk whose moments are far
  from the whole data's), the second pass runs as before.

Other ``m`` and ``q`` (their ``Lambda`` depends on more of the rows than one maximum),
factorized data and ``Lambda`` given as a number keep the passes they need: the moments'
pass and, for a string ``Lambda``, the statistics' pass.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dspdc._setup_pass import candidate_rows, lambda_from_candidates
>>> from ooc_kernels.families.dspdc._scaling import combine_moments, standardization
>>> rng = np.random.default_rng(0); X = rng.normal(size=(300, 4))
>>> parts = [candidate_rows(X[:150], None, True, 8), candidate_rows(X[150:], None, True, 8)]
>>> scaled = standardization(combine_moments(*[m for m, _ in parts]), center=True)
>>> R2 = lambda_from_candidates([c for _, c in parts], scaled, 1.0, 1, 5, 5, "exact")
>>> A = np.hstack([(X - scaled["x_shift"]) / scaled["x_scale"], np.ones((300, 1))])
>>> bool(R2 == (A ** 2).sum(axis=1).max())
True
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["AUTO_LOCAL_PASSES", "rows_in_memory", "resolve_local_passes",
           "resolve_max_local_passes", "resolve_permuted_rows", "candidate_rows",
           "lambda_from_candidates", "setup_statistics", "target_mean", "target_shift",
           "centres_targets"]

#: Passes over a task's duals per read of its rows that ``local_passes="auto"`` takes out of
#: core when a task's group draws its rows from several chunks, new every epoch: the best of
#: 1 to 4 on the peer table's stores (``benchmarks/dspdc_reads.py``, docs/benchmarks.md).
AUTO_LOCAL_PASSES = 3.0
#: Most rows a chunk keeps for the one-read ``Lambda``; fewer when the store has many chunks.
KEEP_ROWS = 256
#: Fewest rows a chunk keeps: below it (many chunks of wide rows) the second pass runs.
MIN_KEEP_ROWS = 16
#: The fewest iterations an epoch of ``local_passes="auto"`` runs where one task holds all
#: the rows: a problem of fewer rows takes more passes per epoch.  With one iteration per
#: epoch (1 to 3 rows) the extrapolation restarts and the adaptive steps are judged after
#: every iteration, and the defaults ended 100 epochs at relative gaps of 0.14 to 12; any
#: minimum from 32 to 1,024 iterations per epoch certified every one of them at ``1e-6``
#: (docs/benchmarks.md, "DSPDC on small real data").
MIN_EPOCH_ITERATIONS = 128
#: The chunks' scatter matrices (``(p + 1)^2`` numbers each) are merged in a tree of this
#: fan-in, so that the set-up holds a few of them at a time, whatever the chunks.
SCATTER_FAN_IN = 8

#: Values (float64) that all the chunks' kept rows may hold together: 32 MiB.
KEEP_VALUES = 1 << 22


def rows_in_memory(X) -> bool:
    """Whether a fit's rows ``X`` are held in memory (NumPy, pandas, lists and other
    array-likes, or a :class:`~ooc_kernels.data.factorized.Factorized` whose ``U`` is), not
    read from a store or a lazy collection (Dask, xarray, an Intake reader).

    >>> import dask.array as da
    >>> rows_in_memory(np.zeros((3, 2))), rows_in_memory([[0.0, 1.0]])
    (True, True)
    >>> rows_in_memory(da.zeros((3, 2)))
    False
    """
    from ooc_kernels.data.factorized import Factorized
    from ooc_kernels.data.inputs import is_lazy_input

    rows = X.U if isinstance(X, Factorized) else X
    # an Intake reader answers any attribute (``reader.shape`` is a new reader of a method
    # call), so it is told apart by its ``read`` alone, as ``as_chunked`` reads it
    reader = callable(getattr(rows, "read", None)) and not isinstance(rows, np.ndarray)
    return not (is_lazy_input(rows) or reader)


def resolve_local_passes(estimator, data) -> float:
    """The ``local_passes`` a fit runs with (its ``local_passes_``): the parameter when it is a
    number; for ``"auto"``, :data:`AUTO_LOCAL_PASSES` when the input is read from a store or
    a lazy collection (not held in memory) and either one group holds all the chunks (one
    task per epoch on the whole problem) or a task's group holds several chunks drawn anew
    every epoch (``shuffle=True``, more than one group per epoch, ``shuffle_chunks_ > 1``);
    else 1.  In memory an epoch costs its iterations, not a read, and a task that keeps the
    same part of the rows every epoch converges slower with more passes over them
    (docs/benchmarks.md, "A task that keeps one fixed chunk").  Where one task holds all
    the rows, an epoch runs at least :data:`MIN_EPOCH_ITERATIONS` iterations: ``"auto"``
    takes at least ``ceil(MIN_EPOCH_ITERATIONS m / n)`` passes, so that a problem of a few
    rows is not one with a restart of the extrapolation and a judgement of the steps after
    every iteration (docs/dspdc.md, "Parameters of the method").

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> est = SimpleNamespace(local_passes="auto", _rows_in_memory=True, m=1,
    ...                       _tasks_per_round=1, shuffle=True,
    ...                       _resolve_shuffle_chunks=lambda data: data.n_chunks)
    >>> [resolve_local_passes(est, SimpleNamespace(n_chunks=1, n_samples=n))
    ...  for n in (1, 3, 100, 128, 5000)]
    [128.0, 43.0, 2.0, 1.0, 1.0]
    """
    from ooc_kernels.parallel.plan import plan_epoch

    if not isinstance(estimator.local_passes, str):
        return float(estimator.local_passes)
    shuffle_chunks = estimator._resolve_shuffle_chunks(data)
    rounds = plan_epoch(data.n_chunks, chunks_per_round=estimator._tasks_per_round, seed=0,
                        epoch=0, shuffle=False, shuffle_chunks=shuffle_chunks)
    groups = [group for r in rounds for group in r]
    whole = len(groups) == 1
    redrawn = bool(estimator.shuffle) and len(groups) > 1 \
        and max(len(group) for group in groups) > 1
    if getattr(estimator, "_rows_in_memory", False):
        passes = 1.0
    else:
        passes = AUTO_LOCAL_PASSES if whole or redrawn else 1.0
    if whole:
        n = int(data.n_samples)
        least = math.ceil(MIN_EPOCH_ITERATIONS * min(int(estimator.m), n) / n)
        passes = max(passes, float(least))
    return passes


def resolve_max_local_passes(estimator, local_passes: float) -> float | None:
    """The ``max_local_passes`` of a fit's configuration: for ``local_passes="auto"`` that
    resolved to :data:`AUTO_LOCAL_PASSES` (out of core, one group or groups drawn anew) and a
    loss of :data:`~ooc_kernels.families.dspdc._pass_rule.AUTO_RULE_LOSSES` (the squared
    loss), :data:`~ooc_kernels.families.dspdc._pass_rule.AUTO_MAX_LOCAL_PASSES`: a task runs
    3 passes per read and more while they still raise its subproblem's dual value
    (:mod:`ooc_kernels.families.dspdc._pass_rule`); else None (``local_passes`` passes)."""
    from ooc_kernels.families.dspdc import _pass_rule

    if estimator.local_passes == "auto" and local_passes == AUTO_LOCAL_PASSES \
            and estimator.loss in _pass_rule.AUTO_RULE_LOSSES:
        return _pass_rule.AUTO_MAX_LOCAL_PASSES
    return None


def resolve_permuted_rows(estimator) -> bool:
    """Whether the fit's tasks visit their rows in random permutations
    (``DSPDCConfig.permuted_rows``): ``sampling="permutation"``, or ``"auto"`` with ``m = 1``
    wherever the rows are, held in memory or read from a store or a lazy collection (with
    the pass rule of ``local_passes="auto"``, one permutation per pass: the rule decides at
    whole passes).  Out of core, on the peer table's 50,000 x 50 stores, the permutations
    reach a certified ``1e-4`` in 3 epochs where independent draws take 3 to 4, with
    fewer passes (docs/benchmarks.md, "DSPDC out of core: rows in permutations").  A
    checkpoint resumes with the sampling its fit ran (its configuration holds it).

    Raises
    ------
    ValidationError
        ``sampling="permutation"`` with ``m > 1`` (a permutation orders single rows).

    >>> from types import SimpleNamespace
    >>> resolve_permuted_rows(SimpleNamespace(sampling="auto", m=1, _rows_in_memory=False,
    ...                                       _checkpoint_path="fit.ckpt"))
    True
    """
    from ooc_kernels.exceptions import ValidationError

    if estimator.sampling == "permutation" and int(estimator.m) != 1:
        raise ValidationError(
            f"sampling='permutation' visits one row per iteration, but m={estimator.m}: "
            "set m=1, or sampling='uniform' (or 'auto') to sample m rows at random.")
    return estimator.sampling == "permutation" or (estimator.sampling == "auto"
                                                   and int(estimator.m) == 1)


def candidate_rows(rows, weights, center: bool, keep: int, origin=None):
    """One chunk's column moments (:func:`~ooc_kernels.families.dspdc._scaling.chunk_moments`)
    and the rows that may hold the largest standardized norm: ``(moments, candidates)``,
    ``candidates`` a dict (the ``keep`` rows, their weights, the chunk's shift and scale,
    ``tau`` and the largest weight), or None when a norm is not finite.  With ``origin``
    (``(variable, chunk index)``) the rows are checked for NaN/inf first, the error naming
    the chunk and the row."""
    from ooc_kernels.families.dspdc._chunk_tasks import _finite_rows
    from ooc_kernels.families.dspdc._scaling import chunk_moments, standardization
    from ooc_kernels.families.dspdc.kernels_scaling import standardized_norms

    raw = _finite_rows(np.asarray(rows), origin)  # one chunk of the rows (a task reads no more)
    moments = chunk_moments(raw, weights, None)
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    own = standardization(moments, center=center)
    shift, scale = np.asarray(own["x_shift"]), np.asarray(own["x_scale"])
    h = standardized_norms(raw, w, shift, scale)
    if not np.all(np.isfinite(h)):
        return moments, None
    n = len(h)
    if n > keep:
        idx = np.argpartition(h, n - keep)
        kept, dropped = np.sort(idx[n - keep:]), idx[:n - keep]
        tau = float(h[dropped].max())
    else:
        kept, tau = np.arange(n), -np.inf
    return moments, {"rows": np.ascontiguousarray(raw[kept]),
                     "weights": None if w is None else w[kept].copy(),
                     "shift": shift, "scale": scale, "tau": tau,
                     "wmax": 1.0 if w is None else float(w.max(initial=0.0))}


def _combine(*parts):
    """The merged moments of the chunks and the list of their candidates."""
    from ooc_kernels.families.dspdc._scaling import combine_moments

    return combine_moments(*[m for m, _ in parts]), [c for _, c in parts]


def _merge_scatters(*parts):
    """The merged scatter of ``parts`` (None when one of them is None)."""
    from ooc_kernels.families.dspdc._scaling import combine_moments

    if any(part is None for part in parts):
        return None
    with np.errstate(all="ignore"):   # huge targets: inf, and no start (squared_start)
        return combine_moments(*parts)


def target_mean(y, weights):
    """``(W, mean)`` of one chunk's targets under its row weights (``weights`` None: 1), or
    None when a target is not a finite number: then there is no shift, and the rounds name
    the value (:func:`~ooc_kernels.families.dspdc._local.encode_labels`)."""
    try:
        b = np.asarray(y).reshape(-1).astype(np.float64)   # one chunk's targets
    except (TypeError, ValueError):
        return None
    w = np.ones(len(b)) if weights is None else np.asarray(weights, dtype=np.float64)
    W = float(w.sum())
    if not np.all(np.isfinite(b)):
        return None
    if W <= 0:
        return 0.0, 0.0
    with np.errstate(over="ignore", invalid="ignore"):   # about the first: exact constants
        return W, float(b[0] + w @ (b - b[0]) / W)


def target_shift(*parts) -> float:
    """The weighted mean of the targets from the chunks' :func:`target_mean` (merged in
    order as Chan et al.'s update merges means), or 0 when a chunk has none or the mean is
    not finite."""
    W, mean = 0.0, 0.0
    for part in parts:
        if part is None:
            return 0.0
        Wb, mean_b = part
        if Wb > 0:
            W += Wb
            mean += (mean_b - mean) * (Wb / W)
    return float(mean) if W > 0 and np.isfinite(mean) else 0.0


def centres_targets(estimator, scaling: float) -> bool:
    """Whether the fit centres the targets on their weighted mean (``y_shift``): the
    squared loss with an intercept (``scaling > 0``) absorbs the shift."""
    return getattr(estimator, "loss", None) == "squared" and bool(scaling)


def _combine_all(n_parts: int, *items):
    """:func:`_combine` of the first ``n_parts`` items, and the scatter after them: the
    chunks' scatters merged into one (:func:`_merge_scatters`), or None (none gathered, or a
    chunk has none)."""
    moments, candidates = _combine(*items[:n_parts])
    rest = items[n_parts:]
    return moments, candidates, _merge_scatters(*rest) if len(rest) > 1 else (
        rest[0] if rest else None)


def lambda_from_candidates(candidates, scaled: dict, scaling: float, m: int, q: int, p: int,
                           mode: str) -> float | None:
    """``Lambda`` (``m = 1``, ``q = p``, ``p`` the solver's columns) from the chunks'
    candidates under the final standardization ``scaled``, or None when a chunk's bound
    does not exclude its dropped rows (then the statistics' pass decides)."""
    from ooc_kernels.families.dspdc._scaling import model_rows
    from ooc_kernels.families.dspdc.solver import DSPDCConfig

    if m != 1 or q < p or any(c is None for c in candidates):
        return None
    shift, scale = np.asarray(scaled["x_shift"]), np.asarray(scaled["x_scale"])
    cfg = DSPDCConfig(loss_id=0, n_samples=1, n_features=1, lam1=0.0, lam2=1.0, Lambda=1.0,
                      intercept_scaling=scaling, factorized=False,
                      x_shift=scaled["x_shift"], x_scale=scaled["x_scale"])
    best = 0.0
    for c in candidates:   # the kept rows as the statistics' pass computes them
        if not len(c["rows"]):
            continue
        rows = model_rows(cfg, c["rows"])
        if c["weights"] is not None:
            rows = np.sqrt(c["weights"])[:, None] * rows
        best = max(best, float(np.square(rows, dtype=np.float64).sum(axis=1).max()))
    for c in candidates:   # what a dropped row can reach under the final moments
        if c["tau"] == -np.inf:
            continue
        rho = float(np.max((c["scale"] / scale) ** 2))
        delta = float(np.sqrt(np.sum(((shift - c["shift"]) / c["scale"]) ** 2)))
        bound = rho * (np.sqrt(c["tau"]) + np.sqrt(c["wmax"]) * delta) ** 2 \
            + c["wmax"] * scaling ** 2
        if not bound * (1.0 + 1e-6) < best:
            return None
    if not np.isfinite(best):
        return None
    return m * q * best / p if mode == "heuristic" else best


def setup_statistics(estimator, chunks, row_w, defer, value, *, V, n_features: int, m: int,
                     q: int, scaling: float, factorized: bool,
                     ys=None, check: str | None = None) -> tuple[dict, float, int]:
    """``(scaled, Lambda, reads)``: the standardization fields of the configuration, the
    ``Lambda`` of the steps and the passes over the rows that gave them (0, 1 or 2).
    ``chunks``: the rows (``X`` or ``U``) chunk by chunk, of ``n_features`` columns (those of
    ``A``); ``row_w``: their row weights
    (None entries when unweighted); ``defer``/``value`` as in
    :func:`~ooc_kernels.families.dspdc._memory_inputs.setup_calls`.  ``ys``: the targets
    chunk by chunk; where :func:`~ooc_kernels.families.dspdc._start_rule.start_applies`,
    the set-up's first read of the rows (the one read, the moments' or ``Lambda``'s; a read
    of its own where the set-up makes none) also gathers their scatter with the rows,
    ``scaled`` holds the start from the solution of the problem
    (:mod:`~ooc_kernels.families.dspdc._squared_start`) and ``estimator._setup_scatter``
    the scatter, for the start's certificate
    (:mod:`~ooc_kernels.families.dspdc._scatter_gap`).  ``check``: the name of rows not
    checked for NaN/inf yet (a lazy ``X``), which the first pass's chunk tasks check as
    they read them, naming the chunk and the row (no read of its own); None when checked
    already.  Where the fit centres the targets (:func:`centres_targets`), ``scaled`` holds
    their weighted mean ``y_shift``, from the same read as the rows (the mean of the start's
    scatter where it gathers one; its own read of ``ys`` where the rows are not read)."""
    from ooc_kernels.families.dspdc._chunk_tasks import _lambda_stats, _moments_chunk
    from ooc_kernels.families.dspdc._scaling import combine_moments, standardization
    from ooc_kernels.families.dspdc._squared_start import chunk_scatter, squared_start
    from ooc_kernels.families.dspdc._start_rule import start_applies
    from ooc_kernels.families.dspdc.lambda_stats import combine_lambda_stats, \
        lambda_from_stats

    p = n_features + (1 if scaling else 0)
    center = bool(estimator.fit_intercept)
    keep = min(KEEP_ROWS, KEEP_VALUES // max(1, len(chunks) * n_features))
    one_read = (estimator.standardize and isinstance(estimator.Lambda, str) and not factorized
                and m == 1 and q >= p and keep >= MIN_KEEP_ROWS)
    start = ys is not None and start_applies(estimator, p, factorized)
    centred = ys is not None and centres_targets(estimator, scaling)
    # the targets' weighted mean: read with the rows' first pass (no read of its own); the
    # scatter of [X, y] gathered for the start holds it
    targets = [defer(target_mean)(yk, rw) for yk, rw in zip(ys, row_w)] \
        if centred and not start else []
    scatters = [defer(chunk_scatter)(c, yk, rw)       # with the first read of each chunk
                for c, yk, rw in zip(chunks, ys, row_w)] if start else []
    while len(scatters) > 1:   # merged in a tree: a few chunks' p x p matrices at a time
        scatters = [defer(_merge_scatters)(*scatters[i:i + SCATTER_FAN_IN])
                    for i in range(0, len(scatters), SCATTER_FAN_IN)]
    shift, gathered = {}, {}

    def read(result):
        """``value(result)``; the first also gives the targets' shift (``shift``) and the
        scatter (``gathered``)."""
        extra = [defer(target_shift)(*targets)] if targets else []
        if not extra and not scatters:
            return value(result)
        out, *got = value((result, *extra, *scatters))
        if targets:
            shift["y_shift"] = got.pop(0)
        if scatters:
            gathered["scatter"] = got.pop(0)
        targets.clear()
        scatters.clear()
        return out

    def done(scaled, Lambda, reads):
        if targets or scatters:   # no pass over the rows: a read of the targets (and rows)
            reads += 1 if scatters else 0
            read(None)
        scaled = {**scaled, **shift}
        scatter = gathered.get("scatter")
        if start and centred:   # the scatter's mean of the targets
            scaled["y_shift"] = target_shift(None if scatter is None else (1.0, scatter[1][-1]))
        if scatter is not None:
            scaled.update(squared_start(scatter, scaled, scaling, estimator.alpha * (
                1.0 - estimator.l1_ratio), int(round(scatter[0])),
                estimator.alpha * estimator.l1_ratio))
            # the start's certificate from the same scatter (_scatter_gap.setup_runner)
            estimator._setup_scatter = (scatter, scaled.get("start_x"))
        return scaled, float(Lambda), reads

    scaled, reads = {}, 0
    origins = [None if check is None else (check, k) for k in range(len(chunks))]
    if one_read:   # the moments and the rows that may hold the largest norm
        parts = [defer(candidate_rows)(c, rw, center, keep, origin)
                 for c, rw, origin in zip(chunks, row_w, origins)]
        moments, candidates, _ = read(defer(_combine_all)(len(parts), *parts))
        scaled, reads = standardization(moments, center=center), 1
        Lambda = lambda_from_candidates(candidates, scaled, scaling, m, q, p, estimator.Lambda)
        if Lambda is not None:
            return done(scaled, Lambda, reads)
    elif estimator.standardize:   # one streaming pass: the column moments
        parts = [defer(_moments_chunk)(c, V, rw, origin)
                 for c, rw, origin in zip(chunks, row_w, origins)]
        moments = read(defer(combine_moments)(*parts))
        scaled, reads = standardization(moments, center=center, V=V), 1
    if not isinstance(estimator.Lambda, str):
        return done(scaled, estimator.Lambda, reads)
    if reads:   # checked by the pass that read them
        origins = [None] * len(chunks)
    stats = [defer(_lambda_stats)(c, V, m, q, scaling, factorized, rw, scaled.get("x_shift"),
                                  scaled.get("x_scale"), origin)
             for c, rw, origin in zip(chunks, row_w, origins)]
    merged = read(defer(combine_lambda_stats)(*stats))
    return done(scaled, lambda_from_stats(merged, estimator.Lambda), reads + 1)
