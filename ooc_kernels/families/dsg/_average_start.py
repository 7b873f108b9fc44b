"""Where ``average="auto"`` starts the robust losses' averaged iterate: decided by the fit.

For the losses of :data:`~ooc_kernels.families.dsg._schedule.AVERAGED_LOSSES` (huber,
epsilon-insensitive, quantile) a ``fit`` with a stopping rule (``tol`` not None) starts the
mean of the iterates one epoch after the first epoch that the stopping rule counts as no
gain: when epoch ``e`` is the first epoch whose training loss (or validation score, with
``early_stopping``) the rule of :class:`~ooc_kernels.estimators._stopping.EpochMonitor`
counts towards ``n_iter_no_change``, the mean starts with the first step of epoch
``e + 1`` (global step ``t + 1`` for the ``t`` steps taken by the end of epoch ``e``).
Such fits take nearly constant steps (``t0`` large) and the loss still falls over their
first epochs: a mean from the first step lags the iterate (``docs/benchmarks.md``,
"Suffix averaging").  Until that epoch the model predicts with the last iterate; a fit
that stops at that epoch (``n_iter_no_change=1``), or runs ``max_iter`` epochs without a
no-gain epoch, keeps the last iterate.

While undecided the configuration's ``average`` is :data:`AVERAGE_PENDING`, a step no fit
reaches (the averaged iterate is allocated, nothing is added to it); the decision replaces
it by the start step in the configuration, which checkpoints and saved models carry, so a
resumed fit and a ``warm_start`` continuation average exactly as an uninterrupted fit.
``average_start_`` publishes the start (None while undecided or without averaging).

``partial_fit`` and a fit with ``tol=None`` have no stopping rule: a call that finds the
start undecided starts the mean with its own first step (a new model: from the first step,
as ``average=True``; after a ``fit`` that left it undecided: from the call's first step).

Examples
--------
>>> fit_average(1, average="auto", loss="huber", tol=1e-3) == AVERAGE_PENDING
True
>>> fit_average(1, average=True, loss="huber", tol=1e-3), fit_average(
...     1, average="auto", loss="huber", tol=None)
(1, 1)
"""

from __future__ import annotations

from dataclasses import replace

from ooc_kernels.families.dsg._schedule import AVERAGED_LOSSES

__all__ = ["AVERAGE_PENDING", "AVERAGE_START_DOC", "AverageStartMixin", "fit_average"]

#: ``config.average`` while the fit has not decided where the mean starts: no step reaches it.
AVERAGE_PENDING = 2 ** 62

AVERAGE_START_DOC = """
    average_start_ : int or None
        The step from which the predicting model is the mean of the iterates (1: every
        step); None without averaging, or while ``average="auto"`` with a robust loss has
        not started it: one epoch after the first epoch the stopping rule counts as no
        gain (``partial_fit``, or ``tol=None``: with the first step of the call).
"""


def fit_average(start: int, *, average, loss: str, tol) -> int:
    """``config.average`` of a fit: :data:`AVERAGE_PENDING` for ``average="auto"`` with a
    loss of ``AVERAGED_LOSSES`` that averages (``start`` 1) under a stopping rule (``tol``
    not None), ``start`` (the schedule's first averaged step) otherwise."""
    if (isinstance(average, str) and average == "auto" and loss in AVERAGED_LOSSES
            and start == 1 and tol is not None):
        return AVERAGE_PENDING
    return start


class AverageStartMixin:
    """Decides the undecided averaging start of a fit at the end of its epochs (see the
    module docstring); publishes ``average_start_``."""

    def _pending_average(self) -> bool:
        return self._config.average == AVERAGE_PENDING

    def _start_average(self, step: int) -> None:
        self._config = replace(self._config, average=int(step))
        running = getattr(self, "_running_algorithm", None)
        if running is not None:   # the next epoch's tasks read the algorithm's config
            running.config = replace(running.config, average=int(step))
        self._publish()

    def _make_algorithm(self):
        algorithm = super()._make_algorithm()
        self._running_algorithm = algorithm
        return algorithm

    def _run(self, data, sched, *, stopping: bool = True, **kwargs):
        if self._pending_average() and (not stopping or getattr(self, "tol", None) is None):
            self._start_average(self._state.n_iter + 1)   # no stopping rule: from now on
        try:
            return super()._run(data, sched, stopping=stopping, **kwargs)
        finally:
            self._running_algorithm = None

    def _epoch_ended(self, state, monitor) -> None:
        super()._epoch_ended(state, monitor)
        if self._pending_average() and monitor.no_improve > 0:
            self._start_average(state.n_iter + 1)   # the next epoch's first step

    def _publish(self) -> None:
        super()._publish()
        start = self._config.average
        self.average_start_ = None if start in (0, AVERAGE_PENDING) else int(start)
