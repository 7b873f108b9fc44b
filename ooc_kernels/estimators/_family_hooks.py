"""The hooks a family's estimator implements, with their defaults.

:class:`FamilyHooks` is a base of :class:`~ooc_kernels.estimators.base.ChunkedEstimator`:
the hooks its fit and prediction paths call (see the module docstring of
:mod:`ooc_kernels.estimators.base` for what each is for).  The required ones raise
``NotImplementedError`` naming the family that lacks them; the optional ones do nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ooc_kernels.exceptions import OocKernelsError

if TYPE_CHECKING:
    from ooc_kernels.parallel.chunked import ChunkedData

__all__ = ["FamilyHooks"]


class FamilyHooks:
    """Default hooks of a family's estimator (see :mod:`ooc_kernels.estimators.base`)."""

    # The hooks below have no default: every family defines them (the contract suite,
    # tests/test_contract.py, fits every registered estimator through them).
    def _initialize(self, data: ChunkedData, sched, classes=None) -> None:
        """Resolve the data-dependent settings and set ``self._state``."""
        raise NotImplementedError(f"{type(self).__name__} must define _initialize")

    def _make_algorithm(self):
        """The family's registered algorithm for ``self._state``'s configuration."""
        raise NotImplementedError(f"{type(self).__name__} must define _make_algorithm")

    def _after_round(self, state, info) -> None:
        """Called after every round (families check their state here)."""

    def _publish(self) -> None:
        """Set the public fitted attributes from ``self._state``."""

    def _training_loss(self, state) -> tuple[float, float] | None:
        """Running ``(loss_sum, weight_sum)`` of the progressive training loss, if any."""
        return None

    def _history_extra(self, state) -> dict:
        """More per-epoch figures for ``history_`` (families override)."""
        return {}

    def _epoch_report(self, state, epoch: int, data: ChunkedData, sched
                      ) -> tuple[dict, str | None]:
        """Figures of the epoch that need the data, and a stop reason (or None)."""
        return {}, None

    def _epoch_ended(self, state, monitor) -> None:
        """Called at the end of every epoch, once ``monitor`` (the
        :class:`~ooc_kernels.estimators._stopping.EpochMonitor`) has scored it and before
        the epoch's checkpoint: a family may change its configuration here, for the next
        epoch's tasks and the checkpoint."""

    def _on_checkpoint(self, state) -> None:
        """Called after a checkpoint of ``state`` was written."""

    def _finish(self, state, data: ChunkedData, sched):
        """The finished state from the rounds' last one (families that declare
        ``capabilities.finishing``): e.g. a solve from the statistics the rounds reduced.
        Run once per ``fit``, after the last round (also when the fit resumed from a
        checkpoint), and after ``partial_fit`` when ``_finish_after_partial_fit``."""
        # Only reached by a family that declares ``capabilities.finishing`` without the
        # step itself (the contract suite's capabilities check names such a class too).
        raise OocKernelsError(
            f"{type(self).__name__} declares capabilities.finishing, so it must define "
            "_finish(state, data, sched)")

    @property
    def _n_outputs(self) -> int:
        """Columns of the decision function."""
        raise NotImplementedError(f"{type(self).__name__} must define _n_outputs")

    @staticmethod
    def _predict_block(X, payload):
        """Decision values of one chunk ``X`` from ``payload`` (pure: runs on workers)."""
        raise NotImplementedError("a ChunkedEstimator family must define _predict_block")

    def _predict_payload(self):
        """What :meth:`_predict_block` needs, shipped once per prediction graph."""
        raise NotImplementedError(f"{type(self).__name__} must define _predict_payload")

    @property
    def _predict_dtype(self) -> np.dtype:
        return np.dtype(np.float64)
