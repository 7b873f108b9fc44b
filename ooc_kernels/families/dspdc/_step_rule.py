"""The referee of DSPDC's adaptive steps: when the duality gap says that the steps running
now are too large, and the rate that the theorems promise for them (docs/dspdc.md,
"Adaptive steps").

The adaptive steps are the theorems' steps for a strong convexity ``step_boost`` times the
regularizer's, with ``Lambda`` the mean block norm while ``mean_lambda`` holds
(:func:`~ooc_kernels.families.dspdc._local.local_parameters`).  After every gap evaluation
:func:`gap_stalled` decides whether they go one step towards the theorems' (``step_boost``
divided by 10, down to 1, then ``mean_lambda`` off).

Examples
--------
>>> from ooc_kernels.families.dspdc._step_rule import predicted_rate
>>> round(predicted_rate(n=100, p=5, m=1, q=5, mode="gap", steps=((100, 1, 0.999, 0.1, 0.1),)), 4)
0.1001
"""

from __future__ import annotations

import math

import numpy as np

from ooc_kernels.exceptions import InvalidDataError

__all__ = ["STALL_PATIENCE", "RATE_FRACTION", "RATE_WINDOW", "MIN_PRIMAL", "gap_stalled",
           "predicted_rate", "judged_entries", "final_entries", "check_certifiable"]

#: The smallest positive primal value whose duality gap a fit trusts: below it the terms of
#: the losses are subnormal in float64 (about 2.2e-308) or 0, and the gap is rounding.
MIN_PRIMAL = 1e-305


def check_certifiable(primal: float, x, epoch: int) -> None:
    """Refuse to certify an iterate whose primal value is below :data:`MIN_PRIMAL` (or 0 at
    a nonzero ``x``): the losses of the targets underflow float64 (every target below about
    1e-150), so a gap of 0 or rounding would certify any model.

    >>> check_certifiable(0.0, [0.0, 0.0], 3)      # all targets 0: x = 0 is exact
    >>> check_certifiable(1e-320, [1e-160], 3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.InvalidDataError: after epoch 3 the primal value is 9.99989e-321, ...
    """
    if abs(primal) >= MIN_PRIMAL or (primal == 0.0 and not np.any(np.asarray(x) != 0)):
        return
    raise InvalidDataError(
        f"after epoch {epoch} the primal value is {primal:.6g}, below {MIN_PRIMAL:g}: the "
        "losses of the targets (every one below about 1e-150) underflow float64, so the "
        "duality gap cannot certify a model; rescale y (for instance multiply it by 1e150) "
        "and the predictions back."
    )

#: Gap evaluations without progress after which adaptive steps shrink.
STALL_PATIENCE = 3
#: Adaptive steps shrink when the gap fell by less than this fraction of the e-folds that
#: the theorems promise for them (where that promise is about the gap: one task, all rows).
RATE_FRACTION = 0.75
#: E-folds of promised progress over which the rate test judges the gap.
RATE_WINDOW = 1.0


def predicted_rate(n: int, p: int, m: int, q: int, mode: str, steps) -> float | None:
    """E-folds of the duality gap per pass over the duals that Theorem 2 promises for the
    steps of ``steps`` (a round's ``((n_k, k, theta, tau, sigma), ...)``) if the problem is
    as strongly convex as they assume: ``(n / m) (1 - theta / r_p)``, with ``r_p = p / q``
    and ``1 - theta / r_p = 1 / (2 K)`` (``"gap"``; ``1 / K`` for ``"distance"``, whose
    gap rate is ``1 - 1 / (2 K)`` all the same).  None unless the round was one task holding
    all ``n`` rows (Algorithm 1: the theorem is about the gap itself; with several tasks the
    rounds' sum converges slower than any one local problem)."""
    if len(steps) != 1 or steps[0][0] != n or steps[0][1] != 1:
        return None
    theta = float(steps[0][2])
    rho = 1.0 - theta * q / p
    if mode == "distance":
        rho /= 2.0
    if not 0.0 < rho < 1.0:
        return None
    return n / min(m, n) * -math.log1p(-rho)


def gap_stalled(history, patience=STALL_PATIENCE) -> bool:
    """Whether the duality gap stopped falling under the current steps.  Among the
    evaluations run with the last entry's ``step_boost`` and ``mean_lambda``: the last gap
    is 10 times the smallest before it (divergence); or none of the last ``patience`` went
    below the smallest gap before them; or the relative gap is still at least 1 (no better
    than the certificate of the zero model) and did not halve over the last ``patience``
    evaluations; or, where the entries carry the ``rate`` the theorems promise for their
    steps (:func:`predicted_rate`), the smallest gap fell by less than
    :data:`RATE_FRACTION` of the e-folds promised over the last ``patience`` evaluations
    (the steps assume more strong convexity than the problem has near its solution: Wang
    and Xiao 2017 adapt their estimate on the same test).  One noisy evaluation does not
    count.

    Examples
    --------
    >>> def run(*gaps):
    ...     return [{"gap": g, "relative_gap": g, "step_boost": 30.0} for g in gaps]
    >>> gap_stalled(run(0.9, 0.5, 0.6, 0.55, 0.7)), gap_stalled(run(0.9, 0.5, 0.6))
    (True, False)
    >>> gap_stalled(run(0.9, 0.5, 6.0)), gap_stalled(run(90, 80, 70, 60)), gap_stalled(run(90, 40, 20, 9))
    (True, True, False)
    >>> slow = [{**e, "passes": i, "rate": 1.0} for i, e in enumerate(run(0.9, 0.8, 0.7, 0.6))]
    >>> gap_stalled(slow), gap_stalled([{**e, "rate": 0.1} for e in slow])
    (True, False)
    """
    steps = (history[-1]["step_boost"], history[-1].get("mean_lambda", False))
    run = []
    for entry in reversed(history):
        if (entry.get("step_boost"), entry.get("mean_lambda", False)) != steps:
            break
        run.append(entry)
    run.reverse()
    gaps = [e["gap"] for e in run]
    if len(gaps) < 2:
        return False
    if gaps[-1] > 10.0 * min(gaps[:-1]):
        return True
    if all(e.get("rate") is not None for e in run[1:]):
        return _slower_than_promised(run, patience)
    if len(gaps) <= patience:
        return False
    if min(gaps[-patience:]) >= min(gaps[:-patience]):
        return True
    return run[-1]["relative_gap"] >= 1.0 and gaps[-1] > 0.5 * gaps[-1 - patience]


def _slower_than_promised(run, patience: int) -> bool:
    """The rate test of :func:`gap_stalled` on a run of evaluations with the same steps and
    a promised ``rate``: over the shortest tail of at least ``patience`` evaluations whose
    promise adds up to :data:`RATE_WINDOW` e-folds (so that the noise of one evaluation
    cannot decide), did the smallest gap fall by less than :data:`RATE_FRACTION` of the
    promise?  False while the run is shorter than that."""
    promised = 0.0
    for j in range(len(run) - 1, 0, -1):
        promised += run[j]["rate"] * (run[j]["passes"] - run[j - 1]["passes"])
        if len(run) - j >= patience and promised >= RATE_WINDOW:
            start, best = run[j - 1]["gap"], min(e["gap"] for e in run[j:])
            if not (start > 0 and best > 0):
                return best >= start
            return math.log(start / best) < RATE_FRACTION * promised
    return False


def judged_entries(history, final) -> list:
    """The evaluations of ``history`` that :func:`gap_stalled` judges: all but those at the
    indices ``final``, the final iterates' own evaluations (a fit's last epoch, or
    ``max_time``).  A fit that runs on from that iterate (resumed from the checkpoint of a
    fit with a smaller ``max_iter``) evaluates it again one epoch later, as the fit that
    never stopped there does, so the steps it runs are those of the fit that never stopped.

    >>> judged_entries([{"gap": 3.0}, {"gap": 2.0}, {"gap": 1.0}], [1])
    [{'gap': 3.0}, {'gap': 1.0}]
    """
    skip = set(final)
    return [entry for i, entry in enumerate(history) if i not in skip]


def final_entries(value, n_entries: int, where: str) -> list:
    """The indices of the final iterates' own evaluations among a saved fit's
    ``n_entries`` gap evaluations (its metadata's ``final_gaps``; absent: none), checked.

    >>> final_entries([2], 3, "model.zarr"), final_entries(None, 3, "model.zarr")
    ([2], [])
    >>> final_entries([3], 3, "model.zarr")
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.ModelFormatError: model.zarr: final_gaps [3] is not a list of distinct indices of the 3 gap evaluations; the model file is damaged.
    """
    from ooc_kernels.exceptions import ModelFormatError

    if value is None:
        return []
    if not (isinstance(value, list) and len(set(value)) == len(value) and all(
            isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n_entries
            for i in value)):
        raise ModelFormatError(
            f"{where}: final_gaps {str(value)[:80]} is not a list of distinct indices of the "
            f"{n_entries} gap evaluations; the model file is damaged.")
    return list(value)
