"""The logistic loss's start out of core: Newton's method in the ``p``-space, one read of the
rows per pass.

Where the rounds do not run in memory
(:func:`~ooc_kernels.families.dspdc._memory_inputs.in_memory_rounds`) and
:func:`~ooc_kernels.families.dspdc._start_rule.start_kind` gives ``"logistic"`` (the binary
logistic loss, an l2 part, no l1 part, dense rows of at most
:data:`~ooc_kernels.families.dspdc._logistic_start.NEWTON_MAX_FEATURES` solver columns, or
up to :data:`~ooc_kernels.families.dspdc._squared_start.START_MAX_FEATURES` where the rows
are at most :data:`~ooc_kernels.families.dspdc._logistic_start.NEWTON_ROWS_PER_COLUMN` per
column), the fit starts from Newton's solution of

    P(x) = 1/n sum_i w_i phi_i(a_i^T x) + lam2 / 2 ||x||^2,   phi_i(z) = log(1 + exp(-b_i z))

computed after the set-up's statistics (the rows ``a_i`` are standardized with its column
moments).  A pass at a point ``x`` reads every chunk once, as the set-up's passes do (the
same chunk tasks, :func:`~ooc_kernels.families.dspdc._memory_inputs.setup_calls`: Dask
tasks with bounded waits on a ``Client``), and each chunk gives its loss sum, ``A_c^T (w_c
phi'(A_c x))``, ``A_c^T (w_c y_c)`` at the clipped duals ``y_c``
(:func:`~ooc_kernels.families.dspdc._logistic_start.logistic_duals`), the sum of their
conjugates and its Hessian sum ``A_c^T diag(w_c phi''(A_c x)) A_c`` (:func:`chunk_sums`);
the chunks' sums are merged in a tree of
:data:`~ooc_kernels.families.dspdc._setup_pass.SCATTER_FAN_IN` (a few ``p x p`` matrices
held at a time) and the ``p x p`` system is solved on the driver.  Each iteration takes the
step ``d = H^{-1} g`` with Armijo's backtracking as in memory
(:func:`~ooc_kernels.families.dspdc._logistic_start.armijo_step`: the largest ``s`` of
``1, 1/2, ...`` that decreases ``P`` by at least ``ARMIJO s g^T d``), one pass per trial
point, and stops once the duality gap ``||g||^2 / (2 lam2)`` is at most ``GAP_FRACTION``
times ``tol`` times ``P(x)``, at the latest after ``MAX_NEWTON`` iterations.  A pass that
Newton's quadratic rate predicts to be the last (``gap^3 / (previous gap)^2`` below
``NO_HESSIAN_BELOW`` times the gap the passes stop at, as in memory) sums no Hessian, which
no step would use; where it is not the last, the next step takes the last Hessian again.
The passes start from Newton's solution on a sample held in memory (:func:`warm_start`):
the whole chunks of :func:`sample_chunks`, read once, with their mean loss, solved by the
in-memory start
(:func:`~ooc_kernels.families.dspdc._logistic_start.logistic_newton`); from there fewer
passes over every row reach the gap (3 instead of 6 on 50,000 x 50 rows in 5 chunks to
``tol = 1e-6``).

The pass at the last point gives the start's fields of the configuration, as the squared
loss's start out of core: ``start_x``, ``start_w = A^T (w y)`` and ``start_conj = sum_i w_i
phi_i*(y_i)`` at the duals ``y_i`` that the chunk tasks take as their initial duals
(:func:`~ooc_kernels.families.dspdc._squared_start.initial_duals`), and its losses' sum
``L = sum_i w_i phi_i(a_i^T x)``: the primal value the fit's first epoch would sum over the
rows at the start, summed row by row the same way.  Where that gap certifies ``tol``
(:func:`~ooc_kernels.families.dspdc._scatter_gap.setup_runner`, with ``L`` from
``estimator._setup_losses``) the fit ends after the set-up's reads, as one certified by the
squared loss's scatter (``n_iter_ = 1``, no iteration, the model ``x_0``); else the first
epoch's first task certifies the start where its gap is within ``tol``.  The start is part
of the configuration a checkpoint records: a resumed fit takes it from there and reads
nothing for it.

Examples
--------
>>> import numpy as np
>>> from types import SimpleNamespace
>>> from sklearn.linear_model import LogisticRegression
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(400, 3)); y = (X @ [1.0, -2.0, 0.5] + rng.normal(size=400) > 0) * 1
>>> cfg = SimpleNamespace(x_shift=None, x_scale=None, factorized=False, intercept_scaling=0.0,
...                       classes=(0, 1))
>>> parts = [(X[:200], y[:200], None), (X[200:], y[200:], None)]
>>> x, fields, passes, loss = newton_passes(cfg, parts, lambda f: f, lambda r: r, 400,
...                                        0.01, 1e-12)
>>> ref = LogisticRegression(C=1 / (0.01 * 400), fit_intercept=False, tol=1e-12).fit(X, y)
>>> bool(np.allclose(x, ref.coef_.ravel(), atol=1e-6))
True
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ooc_kernels.losses import LOSS_LOGISTIC

__all__ = ["SAMPLE_MAX_FRACTION", "SAMPLE_ROWS_PER_COLUMN", "chunk_sums",
           "logistic_start_out_of_core", "newton_passes", "sample_chunks", "warm_start"]

#: Rows per solver column that the warm start of Newton's passes solves on
#: (:func:`sample_chunks`).
SAMPLE_ROWS_PER_COLUMN = 50
#: The largest share of the chunks the warm start reads.
SAMPLE_MAX_FRACTION = 0.25


def chunk_sums(config, rows, y, weights, x: np.ndarray, hessian: bool) -> tuple:
    """``(loss, grad, aty, conj, H)`` of one chunk at ``x``: ``sum_i w_i phi_i(a_i^T x)``,
    ``A^T (w phi'(A x))``, ``A^T (w y)`` at the clipped duals ``y``, ``sum_i w_i phi_i*(y_i)``
    (rows of weight 0 add 0) and ``A^T diag(w phi''(A x)) A`` (None unless ``hessian``); the
    rows ``A`` are the solver's (:func:`~ooc_kernels.families.dspdc._scaling.model_rows`)."""
    from scipy.special import expit

    from ooc_kernels.families.dspdc._logistic_start import logistic_duals
    from ooc_kernels.families.dspdc._scaling import model_rows
    from ooc_kernels.families.dspdc.kernels_memory import margins_loss_sum, row_conjugates

    A = model_rows(config, rows)
    yv = np.asarray(y).reshape(-1)
    b = np.where(yv == config.classes[1], 1.0, -1.0)
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        z = A @ x
        loss = float(margins_loss_sum(z, b, w, LOSS_LOGISTIC))
        s = expit(-b * z)                        # phi'(z) = -b s, phi''(z) = s (1 - s)
        duals = logistic_duals(z, b)
        conj = np.empty(len(b))
        row_conjugates(duals, b, LOSS_LOGISTIC, conj)
        if w is None:
            gy, wy, h = -b * s, duals, s * (1.0 - s)
        else:
            gy, wy, h = -w * b * s, w * duals, w * s * (1.0 - s)
            conj = np.where(w > 0.0, w * conj, 0.0)
        H = (A.T * h) @ A if hessian else None
    return loss, A.T @ gy, A.T @ wy, float(conj.sum()), H


def _merge(*parts) -> tuple:
    """The sum of chunks' :func:`chunk_sums` (a Hessian None when one is)."""
    loss = sum(p[0] for p in parts)
    grad, aty = sum(p[1] for p in parts), sum(p[2] for p in parts)
    conj = sum(p[3] for p in parts)
    H = None if parts[0][4] is None else sum(p[4] for p in parts)
    return loss, grad, aty, conj, H


def newton_passes(config, parts, defer, value, n: int, lam2: float, tol: float,
                  x0: np.ndarray | None = None):
    """``(x, fields, passes, loss)``: Newton's solution from ``x0`` (default ``x = 0``;
    module docstring) on the chunks ``parts`` (``(rows, y, weights)`` each, read by
    ``defer``/``value``), the start fields of the configuration at that ``x`` (empty where a
    value is not finite), the reads of the rows it took and the losses' sum ``sum_i w_i
    phi_i(a_i^T x)`` of its last pass."""
    from ooc_kernels.families.dspdc._logistic_start import (
        GAP_FRACTION, MAX_NEWTON, NO_HESSIAN_BELOW, armijo_step)
    from ooc_kernels.families.dspdc._setup_pass import SCATTER_FAN_IN

    p = int(config.n_features) if hasattr(config, "n_features") else None
    passes = 0

    def read(x, hessian=True):
        nonlocal passes
        sums = [defer(chunk_sums)(config, rows, y, w, x, hessian) for rows, y, w in parts]
        while len(sums) > 1:
            sums = [defer(_merge)(*sums[i:i + SCATTER_FAN_IN])
                    for i in range(0, len(sums), SCATTER_FAN_IN)]
        passes += 1
        loss, grad, aty, conj, H = value(sums[0])
        P = loss / n + 0.5 * lam2 * float(x @ x)
        return P, grad / n + lam2 * x, aty, conj, H, loss

    x = np.zeros(p if p is not None else _columns(config, parts))
    if x0 is not None and np.all(np.isfinite(x0)):
        x = np.array(x0, dtype=np.float64)
    P, g, aty, conj, H, loss = read(x)
    last_gap = np.inf
    for _ in range(MAX_NEWTON):
        if not (np.isfinite(P) and np.all(np.isfinite(g))):
            return x, {}, passes, loss
        gap = float(g @ g) / (2.0 * lam2)
        if gap <= GAP_FRACTION * tol * P:
            break
        M = H / n
        M[np.diag_indices_from(M)] += lam2
        try:
            d = np.linalg.solve(M, g)
        except np.linalg.LinAlgError:
            break
        # a pass that Newton's quadratic rate predicts to be the last (the gap ``gap^3 /
        # last_gap^2`` below NO_HESSIAN_BELOW times the gap the passes stop at) sums no
        # Hessian, which no step would use; where it is not the last, the next step takes
        # the last Hessian again
        hessian = not (gap < last_gap < np.inf and gap ** 3 / last_gap ** 2
                       <= NO_HESSIAN_BELOW * GAP_FRACTION * tol * P)
        last_gap, tried = gap, []

        def value_at(step):
            tried[:] = [read(x - step * d, hessian)]   # the last trial's sums only: the
            return tried[0][0]                         # one a step taken was read at

        step = armijo_step(value_at, P, float(g @ d))
        if step is None:
            break
        x = x - step * d
        P, g, aty, conj, H_step, loss = tried[0]
        H = H if H_step is None else H_step
    if not (np.all(np.isfinite(aty)) and np.isfinite(conj) and np.all(np.isfinite(x))):
        return x, {}, passes, loss
    return x, {"start_x": tuple(float(v) for v in x), "start_w": tuple(float(v) for v in aty),
               "start_conj": float(conj)}, passes, loss


def sample_chunks(n: int, n_chunks: int, p: int) -> list[int]:
    """The chunks whose rows give the warm start of Newton's passes: the fewest that hold
    about :data:`SAMPLE_ROWS_PER_COLUMN` rows per solver column (``n / n_chunks`` rows
    each), spread evenly over the data; none where that takes more than
    :data:`SAMPLE_MAX_FRACTION` of the chunks (the warm start would cost more than the
    passes it saves).

    Examples
    --------
    >>> sample_chunks(50_000, 5, 51), sample_chunks(2_000, 4, 301)
    ([2], [])
    """
    if n_chunks < 2 or n <= 0:
        return []
    per_chunk = n / n_chunks
    m = int(np.ceil(SAMPLE_ROWS_PER_COLUMN * p / per_chunk))
    if m > SAMPLE_MAX_FRACTION * n_chunks:
        return []
    return sorted({int((j + 0.5) * n_chunks / m) for j in range(m)})


def _sample_rows(config, rows, y, weights) -> tuple:
    """One sampled chunk's solver rows (:func:`~ooc_kernels.families.dspdc._scaling.
    model_rows`, float64), labels ``-1 / +1`` and weights (None when none)."""
    from ooc_kernels.families.dspdc._scaling import model_rows

    b = np.where(np.asarray(y).reshape(-1) == config.classes[1], 1.0, -1.0)
    return (np.ascontiguousarray(model_rows(config, rows), dtype=np.float64), b,
            None if weights is None else np.asarray(weights, dtype=np.float64))


def warm_start(config, parts, defer, value, lam2: float, tol: float):
    """Newton's solution on the rows of :func:`sample_chunks` (read once, held in memory,
    the problem with their mean loss, solved to the relative gap ``tol`` by
    :func:`~ooc_kernels.families.dspdc._logistic_start.logistic_newton`), or None where no
    chunks are sampled or a value is not finite: the point the passes over all the rows
    start from.  Only their number of passes depends on it: the passes certify the start on every
    row."""
    from ooc_kernels.families.dspdc._logistic_start import logistic_newton

    chosen = sample_chunks(int(config.n_samples), len(parts), int(config.n_features))
    if not chosen:
        return None
    held = value(tuple(defer(_sample_rows)(config, *parts[k]) for k in chosen))
    A = np.concatenate([h[0] for h in held]) if len(held) > 1 else held[0][0]
    b = np.concatenate([h[1] for h in held])
    w = None if held[0][2] is None else np.concatenate([h[2] for h in held])
    x, _ = logistic_newton(A, b, w, lam2, tol)
    return x


def _columns(config, parts) -> int:
    """The solver's columns of ``parts`` (a configuration without ``n_features``)."""
    rows = parts[0][0]
    return int(rows.shape[1]) + (1 if config.intercept_scaling else 0)


def logistic_start_out_of_core(estimator, config, chunks, ys, row_w, defer, value):
    """``config`` with the logistic loss's start out of core (module docstring) where it
    applies: the loss is the logistic, :func:`~ooc_kernels.families.dspdc._start_rule.
    start_kind` gives ``"logistic"`` out of core and the rounds do not run in memory
    (``estimator._start_in_memory``, which start from Newton's solution on the rows they
    hold); else ``config`` unchanged.  Adds the reads of the rows it took to
    ``estimator._setup_reads`` and records the losses' sum at the start with the start in
    ``estimator._setup_losses`` (the start's certificate at the set-up, module
    docstring)."""
    from ooc_kernels.families.dspdc._logistic_start import DEFAULT_TOL
    from ooc_kernels.families.dspdc._squared_start import START_MAX_FEATURES
    from ooc_kernels.families.dspdc._start_rule import start_kind

    estimator.__dict__.pop("_setup_losses", None)    # another fit's
    p, n = int(config.n_features), int(config.n_samples)
    if (int(config.loss_id) != LOSS_LOGISTIC or getattr(estimator, "_start_in_memory", False)
            or config.start_x is not None or config.classes is None
            or p > START_MAX_FEATURES
            or start_kind(config.loss_id, config.lam1, config.lam2, p, config.factorized,
                          n=n) != "logistic"):
        return config
    tol = getattr(estimator, "tol", None)
    tol = DEFAULT_TOL if tol is None else float(tol)
    parts = list(zip(chunks, ys, row_w))
    x0 = warm_start(config, parts, defer, value, float(config.lam2), tol)
    _, fields, passes, loss = newton_passes(config, parts, defer, value, n,
                                            float(config.lam2), tol, x0=x0)
    estimator._setup_reads = int(getattr(estimator, "_setup_reads", 0)) + passes + (
        x0 is not None)
    if not fields:
        return config
    if np.isfinite(loss):   # the start's certificate at the set-up (_scatter_gap.setup_runner)
        estimator._setup_losses = (float(loss), fields["start_x"])
    return dataclasses.replace(config, **fields)
