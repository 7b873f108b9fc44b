"""The pieces of a DSPDC round shared by the chunk algorithm and its sequential reference:
labels, a chunk's subproblem, its step parameters and its uniforms
(``docs/algorithms/dspdc_rounds.md``).

Examples
--------
With one chunk holding all the rows, the subproblem is the problem itself (no tilt):

>>> import numpy as np
>>> from types import SimpleNamespace
>>> from ooc_kernels.families.dspdc._local import local_problem
>>> cfg = SimpleNamespace(n_samples=10, lam1=0.01, lam2=0.1)
>>> aty = np.array([1.0, -2.0])
>>> lam1, lam2, shift = local_problem(cfg, aty, aty, n_k=10, k=1)
>>> lam1, lam2, bool(np.all(shift == 0))
(0.01, 0.1, True)
"""

from __future__ import annotations

import math

import numpy as np

from ooc_kernels._seeds import task_rng
from ooc_kernels.exceptions import InvalidDataError

__all__ = ["PERMUTED_BLOCKS", "PERMUTED_ROWS", "UNIFORM_BLOCK", "encode_labels",
           "local_problem", "local_regularization", "local_parameters",
           "local_step_parameters", "permuted_rows", "row_weights", "steps_lambda",
           "task_uniform_blocks", "task_uniforms"]

#: Uniforms drawn at a time by a task (8 MiB of float64): a task's memory for its random
#: numbers stays bounded whatever its number of iterations, rows or columns.
UNIFORM_BLOCK = 1 << 20

#: A permutation of a task's rows (:func:`permuted_rows`) orders blocks of at most this many
#: consecutive rows, and at least :data:`PERMUTED_BLOCKS` blocks.
PERMUTED_ROWS = 64
PERMUTED_BLOCKS = 1024
#: The largest regression target in magnitude: beyond it the squared loss's squares (about
#: ``4 * MAX_TARGET ** 2`` per row) come near float64's largest value.
MAX_TARGET = 1e150


def encode_labels(config, y: np.ndarray, chunks: tuple[int, ...],
                  sizes: tuple[int, ...]) -> np.ndarray:
    """``b``: the targets as float64 less ``config.y_shift`` (regression) or ``-1 / +1``
    (classification).

    Raises
    ------
    InvalidDataError
        A regression target that is not a number, not finite or beyond :data:`MAX_TARGET`
        in magnitude, or a label outside the two classes; the message names the value, its
        chunk and its row.
    """
    y = np.asarray(y).reshape(-1)

    def location(row: int) -> str:
        ends = np.cumsum(sizes)
        k = int(np.searchsorted(ends, row, side="right"))
        return f"chunk {chunks[k]}, row {row - (int(ends[k - 1]) if k else 0)}"

    if config.classes is None:
        try:
            b = y.astype(np.float64)
        except (TypeError, ValueError):
            row = next(i for i, v in enumerate(y.tolist()) if not _is_number(v))
            raise InvalidDataError(
                f"y holds values that are not numbers (dtype {y.dtype}, e.g. {y[row]!r} in "
                f"{location(row)}); a regressor needs numeric targets: convert them, e.g. "
                "y.astype('float32'), or use a classifier for labels."
            ) from None
        bad = ~np.isfinite(b)
        huge = ~bad & (np.abs(b) > MAX_TARGET)
        if huge.any() and not bad.any():
            row = int(np.flatnonzero(huge)[0])
            raise InvalidDataError(
                f"target {float(b[row])!r} in {location(row)} is beyond {MAX_TARGET:.0e} in "
                "magnitude: the squared loss of such targets overflows float64. Rescale y "
                "(for instance y / 1e150) and the predictions back."
            )
        if getattr(config, "y_shift", 0.0) and not bad.any():
            b = b - config.y_shift   # centred on their weighted mean (DSPDCConfig.y_shift)
    else:
        neg, pos = config.classes
        b = np.where(y == pos, 1.0, -1.0)
        bad = (y != pos) & (y != neg)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        what = ("is not finite" if config.classes is None
                else f"is not one of the two classes {list(config.classes)}")
        raise InvalidDataError(
            f"target {y[row]!r} in {location(row)} {what}. Drop or fix "
            "that row" + ("." if config.classes is None else
                          ", or fit on data with exactly two classes.")
        )
    return b


def row_weights(config, sample_weight, b: np.ndarray, chunks: tuple[int, ...],
                sizes: tuple[int, ...]) -> np.ndarray | None:
    """``w_i`` of the weighted problem ``(1/n) sum_i w_i phi_i(a_i^T x)``, or None when the
    problem is unweighted.

    ``w_i = weight_scale * sample_weight_i * class_weight[b_i]``: the sample weight (1 when
    none is given) times the weight of the row's class (``class_weight[0]`` for ``b = -1``,
    ``class_weight[1]`` for ``b = +1``), times ``config.weight_scale = n / sum_i w_i`` so that
    the weights have mean 1 and ``P`` is the weighted mean of the losses plus ``g``.

    Parameters
    ----------
    config : DSPDCConfig
        ``weighted``, ``class_weight`` and ``weight_scale``.
    sample_weight : array_like (n_rows,) or None
        The rows' sample weights.
    b : ndarray (n_rows,)
        The rows' labels from :func:`encode_labels`.
    chunks, sizes : tuple of int
        The chunks the rows come from and their sizes (named in errors).

    Raises
    ------
    InvalidDataError
        A sample weight that is negative or not finite (the message names its chunk and row).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> cfg = SimpleNamespace(weighted=True, class_weight=(1.0, 3.0), weight_scale=0.5)
    >>> row_weights(cfg, [2.0, 2.0, 0.0], np.array([-1.0, 1.0, 1.0]), (0,), (3,)).tolist()
    [1.0, 3.0, 0.0]
    """
    if not getattr(config, "weighted", False):
        return None
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    if sample_weight is None:
        w = np.ones(len(b))
    else:
        w = np.asarray(sample_weight, dtype=np.float64).reshape(-1).copy()
        bad = ~(np.isfinite(w) & (w >= 0))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            ends = np.cumsum(sizes)
            k = int(np.searchsorted(ends, row, side="right"))
            where = f"chunk {chunks[k]}, row {row - (int(ends[k - 1]) if k else 0)}"
            raise InvalidDataError(
                f"sample_weight {float(w[row])!r} in {where} is not a finite number >= 0; fix or "
                "drop that weight."
            )
    if config.class_weight is not None:
        w *= np.where(b > 0, config.class_weight[1], config.class_weight[0])
    return np.ascontiguousarray(w * config.weight_scale)


def _is_number(value) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def local_regularization(config, n_k: int, k: int) -> tuple[float, float]:
    """``(lam1', lam2') = (n / n_k) (lam1, lam2) / k``: the regularization of the local
    problem of a task with ``n_k`` rows in a round of ``k`` tasks."""
    c = config.n_samples / n_k
    return c * config.lam1 / k, c * config.lam2 / k


def local_problem(config, aty: np.ndarray, aty_k: np.ndarray, n_k: int,
                  k: int) -> tuple[float, float, np.ndarray]:
    """``(lam1', lam2', s)`` of a chunk's subproblem in the paper's form on its ``n_k`` rows:
    the regularizer ``sum_j lam1' |a_j| + lam2'/2 a_j^2 - s_j a_j`` with
    ``lam' = (n / n_k) lam / k`` and ``s = -(n / n_k) (A^T y / k - A_k^T y_k) / n``, for
    ``k`` chunks added in one round (``docs/algorithms/dspdc_rounds.md``).

    ``aty`` is ``A^T y`` of the whole problem, ``aty_k`` the chunk's own part."""
    c = config.n_samples / n_k
    shift = -c * (np.asarray(aty, dtype=np.float64) / k - aty_k) / config.n_samples
    return (*local_regularization(config, n_k, k), shift)


def local_step_parameters(config, n_k: int, k: int):
    """``(m, theta, tau, sigma)`` that a task with ``n_k`` rows in a round of ``k`` tasks
    runs with: those of :func:`local_parameters` for its local strong convexity ``lam2'``.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> cfg = SimpleNamespace(n_samples=100, n_features=3, lam1=0.0, lam2=0.1, Lambda=1.0,
    ...                       m=1, q=3, loss_id=0, mode="gap", theta=None, tau=None,
    ...                       sigma=None)
    >>> local_step_parameters(cfg, 50, 2) == local_parameters(cfg, 50, 0.1)
    True
    """
    return local_parameters(config, n_k, local_regularization(config, n_k, k)[1])


def local_parameters(config, n_k: int, lam_local: float):
    """``(m, theta, tau, sigma)`` of a local problem with ``n_k`` rows and strong convexity
    ``lam_local``: the theorems' parameters for ``step_boost * lam_local`` (the
    configuration's ``step_boost``, 1 when it has none: the theorems' safe steps).  The
    boost applies only where the coupling dominates, ``Lambda > n_k lam_local gamma``
    (``kappa / n > 1``); otherwise the theorems' steps already take about ``n_k / m``
    iterations per e-fold and a boost only slows them.  Where it applies, ``Lambda`` is
    that of :func:`steps_lambda` (the mean block norm under ``config.mean_lambda``)."""
    from ooc_kernels.families.dspdc.params import dspdc_parameters, loss_gamma

    m = min(config.m, n_k)
    boost = float(getattr(config, "step_boost", 1.0))
    Lambda = steps_lambda(config, m)
    if config.Lambda <= n_k * lam_local * loss_gamma(config.loss_id):
        boost, Lambda = 1.0, float(config.Lambda)
    lam_steps = lam_local * boost
    par = dspdc_parameters(n_k, config.n_features, m, config.q, Lambda, lam_steps,
                           loss_gamma(config.loss_id), mode=config.mode, theta=config.theta,
                           tau=config.tau, sigma=config.sigma)
    return m, par.theta, par.tau, par.sigma


def steps_lambda(config, m: int) -> float:
    """The ``Lambda`` that the step sizes of a task sampling ``m`` rows use: ``Lambda``
    itself (the theorems' steps), or, while the adaptive steps run with
    ``config.mean_lambda`` on standardized columns, the smaller of ``Lambda`` and the mean of
    ``||A_I^J||_F^2`` over the uniformly sampled blocks, ``(m q / p) (p_A + c^2)``: a
    standardized column has mean square 1 (0 for a column without spread, not counted:
    ``config.x_spread``), so the mean squared norm of a row is ``p_A + c^2`` (``p_A``
    columns of ``A`` with a spread, the intercept's column of value ``c``), with or without
    weights (they have mean 1).  ``Lambda`` of the
    theorems is the worst block's norm (``max_i ||a_i||^2`` for ``m = 1``, ``q = p``); the
    rate of the primal-dual coordinate method with rows sampled by their norms is set by
    the mean instead (Zhang and Xiao 2017; Chambolle et al. 2018), and the adaptive steps
    take that constant with uniform sampling, referred to the certified gap
    (docs/dspdc.md, "Adaptive steps").

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> cfg = SimpleNamespace(Lambda=40.0, mean_lambda=True, x_scale=(1.0,) * 9,
    ...                       intercept_scaling=1.0, q=10, n_features=10)
    >>> steps_lambda(cfg, 1), steps_lambda(SimpleNamespace(**{**vars(cfg), "x_scale": None}), 1)
    (10.0, 40.0)
    """
    Lambda = float(config.Lambda)
    x_scale = getattr(config, "x_scale", None)
    if not getattr(config, "mean_lambda", False) or x_scale is None:
        return Lambda
    c = float(config.intercept_scaling)
    spread = getattr(config, "x_spread", None)
    columns = len(x_scale) if spread is None else int(spread)
    return min(Lambda, m * config.q / config.n_features * (columns + c * c))


def task_uniform_blocks(config, seed: int, epoch: int, round_: int, chunk: int, n_k: int,
                        m: int, *, columns: bool = True, out: np.ndarray | None = None,
                        max_block: int | None = None):
    """Yield ``(row_uniforms (t, m), col_uniforms (t, q))`` blocks of the uniforms that draw
    ``I`` and ``J`` of every local iteration of the task whose first chunk is ``chunk``.

    The task runs ``T = ceil(local_passes n_k / m)`` iterations from its own stream
    (:func:`ooc_kernels._seeds.task_rng`), drawn in blocks of at most :data:`UNIFORM_BLOCK`
    values: in each block the ``(t, m)`` row uniforms first, then the ``(t, q)`` column
    uniforms.  With ``q = n_features`` every iteration updates every coordinate, so no
    column uniform is drawn: the block holds zeros, which the dense kernel does not even read
    (Floyd's sampler lists ``0, 1, .., q - 1`` whatever the uniforms, so the kernel takes
    every coordinate without sampling).  Running the kernels block after block gives
    the iterates of one call on the concatenated blocks.

    ``columns=False`` yields None instead of that block of zeros (for a caller that runs
    the all-columns kernel directly), and ``out`` (float64, C-ordered, at least
    ``(min(T, block), m)``) receives the row uniforms instead of a new array per block:
    the same stream, the same values.  ``max_block`` caps the iterations of a block where
    no column uniform is drawn (``q = n_features``: the blocks then split one stream of row
    uniforms, the same values whatever their size), so that a task that may stop early
    draws one block at a time (the pass rule: one pass per block).

    With ``config.permuted_rows`` and ``m = 1`` the rows are visited in random
    permutations instead of drawn independently (random reshuffling): every ``n_k``
    iterations are a new permutation ``pi`` of the task's rows (:func:`permuted_rows`:
    blocks of consecutive rows in a random order), and the row uniform of iteration ``t``
    is ``(pi_t + 1/2) / n_k``, which the samplers map to row ``pi_t`` (``floor(u n_k)``).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> cfg = SimpleNamespace(local_passes=1.0, q=2, n_features=5)
    >>> [(r.shape, c.shape) for r, c in task_uniform_blocks(cfg, 0, 0, 0, 0, 12, 3)]
    [((4, 3), (4, 2))]
    """
    T = max(1, math.ceil(config.local_passes * n_k / m))
    q = int(config.q)
    full = q >= int(config.n_features)
    block = max(1, UNIFORM_BLOCK // (m + (0 if full else q)))
    if full and max_block is not None:
        block = min(block, max(1, int(max_block)))
    rng = task_rng(seed, epoch, round_, chunk)
    zeros = np.zeros((min(block, T), q)) if full and columns else None
    order = None
    if m == 1 and getattr(config, "permuted_rows", False):
        order = permuted_rows(rng, n_k, T)
    done = 0
    while done < T:
        t = min(block, T - done)
        if order is not None:
            rows = np.empty((t, 1)) if out is None else out[:t]
            np.add(order[done:done + t, None], 0.5, out=rows)
            rows /= n_k
        else:
            rows = rng.random((t, m)) if out is None else rng.random((t, m), out=out[:t])
        yield rows, ((zeros[:t] if columns else None) if full else rng.random((t, q)))
        done += t


def permuted_rows(rng, n_k: int, T: int) -> np.ndarray:
    """The rows of ``T`` iterations that visit ``n_k`` rows in random permutations: one
    new permutation of ``0 .. n_k - 1`` from ``rng`` per ``n_k`` iterations (the last one
    cut at ``T``), as int64.

    A permutation orders blocks of ``s = min(PERMUTED_ROWS, max(1, n_k // PERMUTED_BLOCKS))``
    consecutive rows (``rng.permutation`` of the ``ceil(n_k / s)`` blocks, each block's
    rows in order, the last block short when ``s`` does not divide ``n_k``): rows read in
    runs of up to 64 from memory rather than one at a time at random, which takes a
    quarter less CPU per epoch on the peer table's 50,000 x 51 rows with the same passes
    to the certified gap (``docs/benchmarks.md``).  Below 2,048 rows (data held in the
    caches) ``s = 1``: a permutation of the rows themselves.

    >>> rows = permuted_rows(np.random.default_rng(0), 4, 10)
    >>> sorted(rows[:4].tolist()), sorted(rows[4:8].tolist()), len(rows)
    ([0, 1, 2, 3], [0, 1, 2, 3], 10)
    >>> permuted_rows(np.random.default_rng(0), 4100, 4100)[:6].tolist()   # s = 4
    [4096, 4097, 4098, 4099, 2152, 2153]
    """
    size = min(PERMUTED_ROWS, max(1, n_k // PERMUTED_BLOCKS))
    n_blocks = -(-n_k // size)
    within = np.arange(size, dtype=np.int64)
    order = np.empty(T, dtype=np.int64)
    for start in range(0, T, n_k):
        stop = min(start + n_k, T)
        if size == 1:
            rows = rng.permutation(n_k)
        else:
            rows = (rng.permutation(n_blocks)[:, None] * size + within).ravel()
            rows = rows[rows < n_k]        # the last block's rows past n_k
        order[start:stop] = rows[:stop - start]
    return order


def task_uniforms(config, seed: int, epoch: int, round_: int, chunk: int, n_k: int,
                  m: int) -> tuple[np.ndarray, np.ndarray]:
    """All the blocks of :func:`task_uniform_blocks` concatenated, ``(T, m)`` and ``(T, q)``
    (for the small cases of the sequential reference)."""
    blocks = list(task_uniform_blocks(config, seed, epoch, round_, chunk, n_k, m))
    return (np.concatenate([r for r, _ in blocks]), np.concatenate([c for _, c in blocks]))
