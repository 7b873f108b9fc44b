"""The task of DSPDC's in-memory rounds with one dual and every primal coordinate per
iteration (``m = 1``, ``q = p``: the defaults): its data held once, two numba calls per task.

:mod:`ooc_kernels.families.dspdc._direct` runs the rounds of a fit on data held in memory in
the calling thread.  With :class:`MemoryTasks` a round's task does not gather its group's
rows, read or write a duals store, or make NumPy passes of its own: the solver's rows of the
whole data are one array, the duals, labels and row weights one vector each, and a task is

1. its rows' indices (``row_map``, chunk after chunk in the group's order) and its step
   parameters (those of :meth:`~ooc_kernels.families.dspdc.solver.DSPDCAlgorithm.chunk_step`);
2. the iterations on ``A[row_map]`` in place (the all-columns kernel of
   :mod:`ooc_kernels.families.dspdc.kernels` with ``row_map``: the same uniforms, the same
   operations as on the gathered rows);
3. one pass over its rows (:func:`~ooc_kernels.families.dspdc.kernels_memory.task_sweep`):
   the change of each chunk's ``A_c^T (w * y_c)``, the epoch start's losses (the lagged
   gap) and the change of ``sum_i w_i phi_i*(y_i)`` (the conjugates of every row are kept
   with the duals, so only the changed duals' are evaluated).

With its rows in a permutation and one pass (``permuted_rows``, ``local_passes = 1``: every
row visited once), steps 2 and 3 are one numba call
(:func:`~ooc_kernels.families.dspdc.kernels_memory.visits_once`): the sweep's sums are
added at each row's visit, and the rows are read once per epoch instead of twice.  There the
logistic loss's dual step also gives the conjugate at the new dual and its
``t = log((1 + b y) / (-b y))``, kept for every row (:attr:`MemoryTasks.tdual`), so that the
row's next step starts from it without a logarithm (the same root to the step's tolerance;
the iterates agree with the non-fused kernel's to rounding).

``A_k^T (w * y_k)`` of a task is the sum of its chunks' products, kept up to date from the
sweeps, not a product of its own.  The out-of-core task computes these sums with BLAS
products and NumPy reductions over its gathered rows, so the iterates of the two paths agree
to rounding, not bit for bit (``tests/test_dspdc_in_memory_fused.py`` bounds the
difference).  The duality gap stays the stopping rule: its primal value is the losses
summed by the sweeps, its dual value the state's.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.dspdc.solver import DSPDCConfig
>>> cfg = DSPDCConfig(loss_id=0, n_samples=4, n_features=2, lam1=0.0, lam2=0.1, Lambda=1.0,
...                   q=2)
>>> fused_applies(cfg), fused_applies(DSPDCConfig(**{**cfg.__dict__, "q": 1}))
(True, False)
"""

from __future__ import annotations

import math

import numpy as np

from ooc_kernels.families.dspdc._local import (
    encode_labels,
    local_problem,
    local_step_parameters,
    row_weights,
    task_uniform_blocks,
)
from ooc_kernels.losses import LOSS_LOGISTIC as LOGISTIC
from ooc_kernels.losses import LOSS_SQUARED as SQUARED

__all__ = ["MemoryTasks", "fused_applies"]


def fused_applies(config) -> bool:
    """Whether a dense configuration's tasks run fused: one dual (``m = 1``) and every
    primal coordinate (``q = p``) per iteration."""
    return (not config.factorized and int(config.m) == 1
            and int(config.q) >= int(config.n_features))


class MemoryTasks:
    """The tasks of a fit's in-memory rounds on the solver's rows of the whole data.

    Parameters
    ----------
    config : DSPDCConfig
        Labels and row weights are encoded once with it (:func:`encode_labels`,
        :func:`row_weights`, chunk by chunk, so their errors name the chunk and row).
    rows : ndarray (n, p) float64, C-ordered
        The solver's rows (standardized, with the intercept's column), chunk after chunk.
    sizes : tuple of int
        The chunks' numbers of rows.
    variables : dict
        ``y`` and (optionally) ``sample_weight``: one array per chunk.
    """

    def __init__(self, config, rows: np.ndarray, sizes, variables: dict):
        self.rows = rows
        self.sizes = tuple(int(s) for s in sizes)
        self.starts = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)
        n, p = rows.shape
        labels, weights = [], []
        for k, size in enumerate(self.sizes):
            b = encode_labels(config, variables["y"][k], (k,), (size,))
            labels.append(b)
            sw = variables.get("sample_weight")
            weights.append(row_weights(config, None if sw is None else sw[k], b, (k,),
                                       (size,)))
        self.b = np.ascontiguousarray(np.concatenate(labels), dtype=np.float64)
        self.weights = None if weights[0] is None else np.concatenate(weights)
        self.y = np.zeros(n)                      # the duals of every row
        from ooc_kernels.families.dspdc.kernels_memory import row_conjugates

        self.conj = np.empty(n)                   # phi_i*(y_i) of every row, kept with y
        row_conjugates(self.y, self.b, int(config.loss_id), self.conj)
        #: The logistic dual steps' t = log((1 + b y) / (-b y)) of every row, kept with y
        #: by the fused visits (NaN: unknown), so that a step need not take its log.
        self.tdual = np.full(n, np.nan) if int(config.loss_id) == LOGISTIC else None
        self.products = np.zeros((len(self.sizes), p))   # A_c^T (w * y_c) of every chunk
        self._index = np.arange(n, dtype=np.int64)
        self._row_map = np.empty(n, dtype=np.int64)
        self._y_old = np.empty(n)
        self._uniforms = np.empty((0, 1))
        self._dw = np.empty((0, p))
        self._dline: np.ndarray | None = None        # the squared loss's line (_line_start)
        self._dwline = np.empty((0, p + 2))
        self._start_loss = None     # (x_0, its losses' sum) of start_at

    def primal_loss(self, config, x: np.ndarray) -> float:
        """``sum_i w_i phi_i(a_i^T x)`` over every row, in one numba pass."""
        from ooc_kernels.families.dspdc.kernels_memory import rows_loss_sum

        return float(rows_loss_sum(self.rows, self.b, self.weights,
                                   np.ascontiguousarray(x, dtype=np.float64),
                                   int(config.loss_id)))

    def start_at(self, x0: np.ndarray, loss_id: int = SQUARED, margins=None) -> dict:
        """Set the duals to those optimal for ``x0``, ``y_i = phi_i'(a_i^T x_0)`` (the
        squared loss: ``a_i^T x_0 - b_i``; the logistic loss:
        :func:`~ooc_kernels.families.dspdc._logistic_start.logistic_duals`, their ``t``
        marked unknown), with their conjugates and every chunk's ``A_c^T (w y_c)``; return
        the state's ``start_w`` and ``start_conj``, their sums (the starts in memory,
        :mod:`~ooc_kernels.families.dspdc._memory_start`).  ``margins``: ``A x_0`` where the
        start has it (Newton's last pass), else a product of the rows."""
        from ooc_kernels.families.dspdc.kernels_memory import margins_loss_sum, row_conjugates

        if margins is None:
            np.matmul(self.rows, x0, out=self.y)
        else:
            self.y[:] = margins
        # the start's losses from the same products, for the first task's certificate
        self._start_loss = (np.array(x0, dtype=np.float64),
                            float(margins_loss_sum(self.y, self.b, self.weights, int(loss_id))))
        if int(loss_id) == LOGISTIC:
            from ooc_kernels.families.dspdc._logistic_start import logistic_duals

            self.y[:] = logistic_duals(self.y, self.b)
            if self.tdual is not None:
                self.tdual[:] = np.nan
        else:
            self.y -= self.b
        row_conjugates(self.y, self.b, int(loss_id), self.conj)
        wy = self.y if self.weights is None else self.weights * self.y
        for c in range(len(self.sizes)):
            lo, hi = self.starts[c], self.starts[c + 1]
            np.matmul(wy[lo:hi], self.rows[lo:hi], out=self.products[c])
        conj = self.conj if self.weights is None else np.where(self.weights > 0.0,
                                                                self.weights * self.conj, 0.0)
        return {"start_w": tuple(float(v) for v in self.products.sum(axis=0)),
                "start_conj": float(conj.sum())}

    def run(self, config, state, task, certify=None):
        """The task's :class:`~ooc_kernels.families.dspdc.solver.DSPDCDelta`: the same
        fields as :meth:`~ooc_kernels.families.dspdc.solver.DSPDCAlgorithm.chunk_step`
        returns (the duals are updated here, in :attr:`y`).

        ``certify``: :meth:`~ooc_kernels.families.dspdc.solver.DSPDCAlgorithm.certifies_start`;
        the first task of a fit from the squared loss's start that holds every row sums the
        start's losses before it iterates, and runs no iterations when they certify it."""
        from ooc_kernels.families.dspdc.kernels import _all_columns_one_row
        from ooc_kernels.families.dspdc.kernels_memory import task_sweep, visits_once
        from ooc_kernels.families.dspdc.solver import DSPDCDelta

        group = task.chunks
        n_k = int(sum(task.sizes))
        if n_k == 0:
            return DSPDCDelta(dw=np.zeros_like(state.w), x_sum=np.zeros_like(state.x))
        row_map, seg_ends = self._task_rows(group, n_k)
        epoch, round_ = task.write
        x0 = state.x if round_ == 0 else getattr(state.epoch_start, "x", None)
        certified, summed = self._start_certified(config, state, task, n_k, certify)
        if certified:
            return self._no_iterations(config, state, task, n_k, summed)
        with_loss = x0 is not None and summed is None     # else summed before
        aty_k = self.products[group[0]].copy()
        for c in group[1:]:
            aty_k += self.products[c]
        lam1, lam2, shift = local_problem(config, state.w, aty_k, n_k, task.sigma_prime)
        m, theta, tau, sigma = local_step_parameters(config, n_k, task.sigma_prime)
        # rows in a permutation, one pass: each row visited once, the sweep at its visit
        once = bool(getattr(config, "permuted_rows", False)) and \
            math.ceil(config.local_passes * n_k) == n_k
        y_old = self._y_old[:n_k]
        if not once:
            np.take(self.y, row_map, out=y_old)
        a = np.array(state.x, dtype=np.float64)
        abar, z = a.copy(), aty_k
        if len(self._dw) < len(group):
            self._dw = np.empty((len(group), self.rows.shape[1]))
        dw_parts = self._dw[:len(group)]
        start = a if x0 is None else np.ascontiguousarray(x0, dtype=np.float64)
        if once:
            dw_parts[:] = 0.0
            segment = np.repeat(np.arange(len(group), dtype=np.int64),
                                np.diff(seg_ends, prepend=0))
        xd = self._line_start(config, state, n_k, once, len(group))
        dwline = self._dwline[:len(group)] if xd is not None else None
        T, start_loss, dconj = 0, 0.0, 0.0
        for row_u, _ in task_uniform_blocks(config, task.seed, epoch, round_, group[0], n_k,
                                            m, columns=False, out=self._uniform_buffer(
                                                config, n_k, m)):
            T += len(row_u)
            if once:
                loss, change = visits_once(
                    self.rows, self.b, self.y, a, abar, z, n_k, row_u, theta, tau, sigma,
                    config.loss_id, lam1, lam2, shift, self.weights, row_map, segment,
                    start, with_loss, dw_parts, self.conj, self.tdual, xd,
                    self._dline if xd is not None else None, dwline)
                start_loss, dconj = start_loss + loss, dconj + change
            else:
                _all_columns_one_row(self.rows, self.b, self.y, a, abar, z,
                                     n_k, row_u, theta, tau, sigma,
                                     config.loss_id, lam1, lam2, shift, self.weights,
                                     row_map)
                if self.tdual is not None:      # these duals' t are not kept
                    self.tdual[row_map] = np.nan
        if not once:
            start_loss, dconj = task_sweep(
                self.rows, row_map, seg_ends, self.b, self.y, y_old, self.weights, start,
                with_loss, config.loss_id, dw_parts, self.conj)
        if xd is not None:      # the duals to the line's best point (squared loss)
            dconj += self._line_jump(config, state, dw_parts, dwline, dconj)
        if summed is not None:      # the start's losses, summed before the iterations
            start_loss = summed
        dw = dw_parts[0].copy()
        for s, c in enumerate(group):
            self.products[c] += dw_parts[s]
            if s:
                dw += dw_parts[s]
        return DSPDCDelta(dw=dw, x_sum=a, n_tasks=1, dconj=float(dconj), n_iter=T,
                          n_dual_updates=T * m, chunks=group,
                          steps=((n_k, task.sigma_prime, float(theta), float(tau),
                                  float(sigma)),),
                          start_loss=float(start_loss),
                          start_rows=0 if x0 is None else n_k)

    def _start_certified(self, config, state, task, n_k: int, certify):
        """For the first task of a fit from the squared loss's start (``start_x``) that
        holds every row: ``(whether the start's losses certify it (certify), their sum)``;
        ``(False, None)`` for other tasks (their iterations sum the losses)."""
        if certify is None or config.start_x is None or tuple(task.write) != (0, 0) \
                or n_k != len(self.b):
            return False, None
        kept = self._start_loss      # summed by start_at at the same x: no second pass
        loss = kept[1] if kept is not None and np.array_equal(kept[0], state.x) \
            else self.primal_loss(config, state.x)
        return bool(certify(state, task, loss, n_k)), loss

    def _no_iterations(self, config, state, task, n_k: int, loss: float):
        """The delta of a task that certified the start: no iterations, the start's losses."""
        from ooc_kernels.families.dspdc._local import local_step_parameters
        from ooc_kernels.families.dspdc.solver import DSPDCDelta

        _, theta, tau, sigma = local_step_parameters(config, n_k, task.sigma_prime)
        return DSPDCDelta(dw=np.zeros_like(state.w), x_sum=np.array(state.x, dtype=np.float64),
                          n_tasks=1, chunks=task.chunks,
                          steps=((n_k, task.sigma_prime, float(theta), float(tau),
                                  float(sigma)),),
                          start_loss=loss, start_rows=n_k)

    def _line_start(self, config, state, n_k: int, once: bool, n_seg: int):
        """The primal point ``x_D`` of the task's starting duals when the task moves its
        duals along the squared loss's line (:mod:`~ooc_kernels.families.dspdc._line_dual`):
        ridge (the squared loss with an l2 part and no l1 part), and a task that visits
        every row of the problem once; else None.  The elastic net is left out: on the peer
        table's problem the line took its fits from 7 to 6 epochs to ``1e-4`` and from 10
        to 8 to ``1e-6``, but its cost per epoch (the dot product, the sums and the
        conjugate's breakpoints) made them 1 to 8 % slower to ``1e-4`` and no faster to
        ``1e-6`` (docs/benchmarks.md)."""
        from ooc_kernels.families.dspdc._line_dual import duals_primal

        if not (once and int(config.loss_id) == SQUARED and n_k == int(config.n_samples)
                and float(config.lam2) > 0.0 and float(config.lam1) == 0.0):
            return None
        if self._dline is None:
            self._dline = np.empty(n_k)
        if len(self._dwline) < n_seg:
            self._dwline = np.empty((n_seg, self.rows.shape[1] + 2))
        self._dwline[:n_seg] = 0.0
        return duals_primal(state.w, n_k, float(config.lam1), float(config.lam2))

    def _line_jump(self, config, state, dw_parts, dwline, dconj: float) -> float:
        """Move every dual to the best point of the line ``y + t d`` (``d``: the visits'
        :attr:`_dline`) when it raises the dual objective: the duals, their conjugates and
        ``dw_parts`` (the chunks' ``A_c^T (w dy)``) updated; return the change of
        ``sum_i w_i phi_i*(y_i)``."""
        from ooc_kernels.families.dspdc._line_dual import line_dual_value
        from ooc_kernels.families.dspdc.kernels_memory import move_duals

        p = dw_parts.shape[1]
        sums = dwline.sum(axis=0)       # A^T (w d), sum w (y + b) d, sum w d^2
        _, t = line_dual_value(state.w + dw_parts.sum(axis=0), sums[:p],
                               state.conj_sum + dconj, float(sums[p]), float(sums[p + 1]),
                               int(config.n_samples), float(config.lam1), float(config.lam2))
        if t == 0.0:
            return 0.0
        dw_parts += t * dwline[:, :p]
        return float(move_duals(self.y, self.b, self._dline, self.weights, t,
                                int(config.loss_id), self.conj))

    def _task_rows(self, group, n_k: int):
        """The group's row indices (chunk after chunk) in a buffer kept for the fit, and the
        end of each chunk among them."""
        row_map = self._row_map[:n_k]
        ends = np.empty(len(group), dtype=np.int64)
        pos = 0
        for s, c in enumerate(group):
            lo, hi = self.starts[c], self.starts[c + 1]
            row_map[pos:pos + hi - lo] = self._index[lo:hi]
            pos += hi - lo
            ends[s] = pos
        return row_map, ends

    def _uniform_buffer(self, config, n_k: int, m: int) -> np.ndarray:
        """A buffer for the row uniforms of a task of ``n_k`` rows, kept for the fit."""
        from ooc_kernels.families.dspdc._local import UNIFORM_BLOCK

        need = min(max(1, math.ceil(config.local_passes * n_k / m)),
                   max(1, UNIFORM_BLOCK // m))
        if self._uniforms.shape[0] < need or self._uniforms.shape[1] != m:
            self._uniforms = np.empty((need, m))
        return self._uniforms
