"""Passes per read from a task's own progress: the rule of ``local_passes="auto"`` out of core.

A task that has read its rows runs at least ``local_passes`` passes over their duals and, when
the configuration sets ``max_local_passes``, keeps passing over the rows in memory while the
passes still pay, at most ``max_local_passes`` passes in all.  The referee is the dual value
of the task's own subproblem (``docs/algorithms/dspdc_rounds.md``), which the task computes
from its duals and ``A_k^T (w * y_k)`` without touching the rows:

    D_k(y) = -(1/n_k) sum_{i in k} w_i phi_i*(y_i) - sum_j g'_j*(-(A_k^T (w * y))_j / n_k)

with ``g'_j(a) = lam1' |a| + lam2' / 2 a^2 - s_j a`` the task's tilted regularizer, so
``g'_j*(v) = g_j*(v + s_j)``.  After every pass from pass ``local_passes`` on, the task stops
when the last pass raised ``D_k`` by at most :data:`PASS_GAIN` of the rise since the task
started (or did not raise it: the boosted steps are not monotone), or when the next pass would
go beyond ``max_local_passes``.  A task converging geometrically by ``r`` per pass gains
``r^(j-1) (1 - r) / (1 - r^j)`` of its rise in pass ``j``: the rule stops once that is small,
that is once the task's subproblem is nearly solved and further passes would only polish a
subproblem that the next round changes.

Only the task's duals and a ``p``-vector enter the rule, so the passes a task runs depend on
its rows, the state it starts from and its random stream: a fit stays deterministic for a
given ``random_state`` and number of tasks, and what the certificate certifies does not
change (the gap is computed from the state as with a fixed number of passes).

Examples
--------
>>> import numpy as np
>>> d = [0.0, 5.0, 7.5, 8.75, 8.76]     # the dual after 0, 1, 2, 3, 4 passes
>>> [stop_after(d[j], d[j - 1], d[0]) for j in range(2, 5)]
[False, False, True]
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["AUTO_MAX_LOCAL_PASSES", "AUTO_RULE_LOSSES", "PASS_GAIN", "local_dual_value",
           "pass_checkpoints", "stop_after"]

#: The most passes per read that ``local_passes="auto"`` runs (out of core, where it takes
#: ``local_passes_ = 3`` passes at least).
AUTO_MAX_LOCAL_PASSES = 10.0
#: A pass that raised the task's dual by at most this share of its rise so far is the last.
PASS_GAIN = 0.02
#: The losses for which ``local_passes="auto"`` runs the rule (elsewhere 3 passes per read):
#: the squared loss, where the epoch it saves costs fewer CPU seconds than its extra passes.
#: A logistic pass (Newton's method for every dual step) costs about 2.5 times a squared one,
#: and on the peer table's problems the rule took as many CPU seconds to ``1e-4`` as 3
#: passes and 25 % more to ``1e-6`` (docs/benchmarks.md, "DSPDC out of core: passes per
#: read from the task's progress"); the smoothed hinge was not measured.
AUTO_RULE_LOSSES = ("squared",)


def stop_after(dual: float, previous: float, first: float, gain: float | None = None) -> bool:
    """Whether a task stops after a pass that took its dual value from ``previous`` to
    ``dual`` (``first``: the value when the task started): the pass raised it by at most
    ``gain`` (default :data:`PASS_GAIN`) times the rise since the start, or the values are
    not finite."""
    gain = PASS_GAIN if gain is None else gain
    if not (np.isfinite(dual) and np.isfinite(previous) and np.isfinite(first)):
        return True
    return dual - previous <= gain * (dual - first)


def pass_checkpoints(local_passes: float, max_local_passes: float | None, n_k: int,
                     m: int) -> tuple[int, list[int]]:
    """``(T_max, checkpoints)``: the most iterations the task may run, and the iteration
    counts after which the rule is asked whether to stop (the first ``T_min = ceil(
    local_passes n_k / m)`` iterations always run; then one pass, ``ceil(n_k / m)``
    iterations, at a time).  The count one pass before ``T_min`` is listed too (when there
    is one), since the first decision needs the dual one pass earlier; no checkpoint when
    ``max_local_passes`` is None or not above ``local_passes``.

    >>> pass_checkpoints(3.0, 5.0, 10, 1)
    (50, [20, 30, 40])
    >>> pass_checkpoints(3.0, None, 10, 1)
    (30, [])
    """
    t_min = max(1, math.ceil(local_passes * n_k / m))
    if max_local_passes is None or max_local_passes <= local_passes:
        return t_min, []
    t_max = max(t_min, math.ceil(max_local_passes * n_k / m))
    per_pass = max(1, math.ceil(n_k / m))
    points = [t for t in (t_min - per_pass,) if t > 0]
    t = t_min
    while t < t_max:
        points.append(t)
        t += per_pass
    return t_max, points


def local_dual_value(loss_id: int, y: np.ndarray, b: np.ndarray, weights, aty_k: np.ndarray,
                     lam1: float, lam2: float, shift: np.ndarray, n_k: int) -> float:
    """``D_k(y)`` of a task's subproblem (module docstring): ``aty_k`` is
    ``A_k^T (w * y)`` (the kernels' running ``z``), ``lam1``, ``lam2`` and ``shift`` the
    task's tilted regularizer (:func:`~ooc_kernels.families.dspdc._local.local_problem`).

    Examples
    --------
    Ridge on one row ``a = 1`` with label 2, ``lam2 = 1``: ``D(y) = -(y^2/2 + 2y) - y^2/2``,
    largest at ``y = -1``, where it equals the primal optimum ``P(1) = 1``:

    >>> local_dual_value(0, np.array([-1.0]), np.array([2.0]), None, np.array([-1.0]),
    ...                  0.0, 1.0, np.zeros(1), 1)
    1.0
    """
    from ooc_kernels.families.dspdc.kernels_objective import reg_conjugate_ref
    from ooc_kernels.losses.reference import loss_conjugate_ref

    with np.errstate(over="ignore", invalid="ignore"):
        conj = loss_conjugate_ref(loss_id, y, b)
        if weights is not None:
            conj = np.where(weights > 0, weights * conj, 0.0)
        v = -np.asarray(aty_k, dtype=np.float64) / n_k + shift
        return float(-np.sum(conj) / n_k - np.sum(reg_conjugate_ref(v, lam1, lam2)))
