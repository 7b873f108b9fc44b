"""Which start a DSPDC fit takes: one rule for every input and every path.

A fit starts from the solution of a simpler problem where that solution is cheap and its
conditions on the problem hold, whatever the input (NumPy, pandas, Dask, Zarr, xarray) and
whatever ``chunks_per_round``:

* the squared loss (ridge, the elastic net) on dense rows of at most
  :data:`~ooc_kernels.families.dspdc._squared_start.START_MAX_FEATURES` solver columns (the
  intercept's included): the solution of the problem from the scatter matrix of ``[A, b]``
  (:mod:`~ooc_kernels.families.dspdc._squared_start`);
* the binary logistic loss with no l1 part on dense rows of at most
  :data:`~ooc_kernels.families.dspdc._logistic_start.NEWTON_MAX_FEATURES` solver columns,
  and above that up to the same limit of solver columns as the squared loss where the rows
  held in memory are at most
  :data:`~ooc_kernels.families.dspdc._logistic_start.NEWTON_ROWS_PER_COLUMN` times the
  columns (:func:`~ooc_kernels.families.dspdc._logistic_start.newton_applies`): Newton's
  solution (:mod:`~ooc_kernels.families.dspdc._logistic_start`), computed by rounds that
  run in memory from the rows they hold, and out of core (``n`` the rows of the data) by
  passes that read the rows chunk by chunk, one per Newton step
  (:mod:`~ooc_kernels.families.dspdc._ooc_newton`);
* the same logistic start in memory on wide rows, fewer rows than columns (at most
  :data:`~ooc_kernels.families.dspdc._wide_newton.WIDE_MAX_ROWS` of them), at any number of
  columns: Newton's steps solved in the ``n``-space
  (:mod:`~ooc_kernels.families.dspdc._wide_newton`).

:func:`start_kind` is the rule.  Which path computes the squared loss's start follows from
where the rounds run
(:func:`~ooc_kernels.families.dspdc._memory_inputs.in_memory_rounds`): the in-memory rounds
from the rows they hold (:mod:`~ooc_kernels.families.dspdc._memory_start`), every other fit
from the scatter its set-up gathers (:func:`start_applies`; in a read the set-up makes
anyway, the column moments' or ``Lambda``'s, or one read of its own where it makes none).

Examples
--------
>>> from ooc_kernels.losses import LOSS_LOGISTIC, LOSS_SQUARED
>>> start_kind(LOSS_SQUARED, 0.0, 0.1, 51, False), start_kind(LOSS_LOGISTIC, 0.0, 0.1, 51, False)
('squared', 'logistic')
>>> start_kind(LOSS_LOGISTIC, 0.01, 0.1, 51, False), start_kind(LOSS_SQUARED, 0.0, 0.1, 600, False)
(None, None)
>>> start_kind(LOSS_LOGISTIC, 0.0, 0.1, 1001, False, n=200), start_kind(LOSS_LOGISTIC, 0.0, 0.1, 1001, False)
('logistic', None)
>>> start_kind(LOSS_LOGISTIC, 0.0, 0.1, 301, False, n=2000), start_kind(LOSS_LOGISTIC, 0.0, 0.1, 301, False, n=20000)
('logistic', None)
"""

from __future__ import annotations

from ooc_kernels.losses import LOSS_LOGISTIC, LOSS_SQUARED

__all__ = ["start_applies", "start_kind"]


def start_kind(loss_id: int, lam1: float, lam2: float, p: int, factorized: bool,
               n: int | None = None) -> str | None:
    """``"squared"``, ``"logistic"`` or None: the start a fit of the loss ``loss_id`` with
    the penalties ``lam1``, ``lam2`` on ``p`` solver columns (the intercept's included)
    takes; ``factorized`` rows take none.  ``n``: the fit's rows (None: the rule of ``p``
    alone; the out-of-core start, :mod:`~ooc_kernels.families.dspdc._ooc_newton`, passes
    them and takes the start only up to
    :data:`~ooc_kernels.families.dspdc._squared_start.START_MAX_FEATURES` columns), where
    the logistic loss also starts from Newton's solution on wide rows
    (:func:`~ooc_kernels.families.dspdc._wide_newton.wide_applies`: fewer rows than
    columns, whatever their number) and on rows few per column above
    :data:`~ooc_kernels.families.dspdc._logistic_start.NEWTON_MAX_FEATURES` columns
    (:func:`~ooc_kernels.families.dspdc._logistic_start.newton_applies`).  The input's type
    and ``chunks_per_round`` do not enter."""
    from ooc_kernels.families.dspdc import _logistic_start, _squared_start
    from ooc_kernels.families.dspdc._wide_newton import wide_applies

    if factorized or not float(lam2) > 0.0:
        return None
    loss = int(loss_id)
    logistic = loss == LOSS_LOGISTIC and float(lam1) == 0.0
    if logistic and n is not None and wide_applies(n, p):
        return "logistic"                     # Newton in the n-space, at any p
    if p > _squared_start.START_MAX_FEATURES:
        return None                           # every start's limit but the wide rows'
    if loss == LOSS_SQUARED:
        return "squared"
    if logistic and _logistic_start.newton_applies(n, p):
        return "logistic"                     # Newton in the p-space
    return None


def start_applies(estimator, p: int, factorized: bool) -> bool:
    """Whether the set-up of ``estimator``'s fit on ``p`` solver columns gathers the scatter
    and starts the fit from the solution of the squared loss's problem
    (:mod:`~ooc_kernels.families.dspdc._squared_start`): where :func:`start_kind` gives
    ``"squared"``, unless the rounds run in memory (``estimator._start_in_memory``,
    :func:`~ooc_kernels.families.dspdc._memory_inputs.in_memory_rounds`), which compute the
    same start from the rows they hold."""
    from ooc_kernels.losses import get_loss

    loss = getattr(estimator, "loss", None)
    if loss != "squared" or getattr(estimator, "_start_in_memory", False):
        return False
    alpha, l1_ratio = float(estimator.alpha), float(estimator.l1_ratio)
    return start_kind(get_loss(loss).loss_id, alpha * l1_ratio, alpha * (1.0 - l1_ratio), p,
                      factorized) == "squared"
