"""Stopping like scikit-learn's SGD: per-epoch history, ``tol`` and ``n_iter_no_change``,
early stopping on held-out chunks.

After every epoch the :class:`EpochMonitor` records the epoch's training loss (the
progressive-validation loss: each row's loss at the prediction its own step used, as
Vowpal Wabbit reports it), the validation score when early stopping is on, and the time.
Then, exactly as scikit-learn's ``SGDClassifier`` decides:

* without early stopping, an epoch "does not improve" when its loss is above
  ``best_loss - tol``;
* with early stopping, when its validation score is below ``best_score + tol``;

and the fit stops after ``n_iter_no_change`` such epochs in a row (``tol=None``: never, the
fit runs ``max_iter`` epochs), once it has taken ``min_steps`` steps (0 unless a family
sets it: the one-class machine's 200).  Within a family's ``overshoot_steps`` (the DSG
estimators: the steps above the stable step), an epoch whose training loss rises above the
best by more than the tolerance is neither: the steps overshoot and the loss oscillates.

A ``fit`` with ``tol`` set that runs all its ``max_iter`` epochs without the rule ending it
has not converged: :meth:`EpochMonitor.warn_unconverged` emits scikit-learn's
``ConvergenceWarning`` then, as ``SGDClassifier`` does (the estimator base calls it at the end
of every ``fit``, never of ``partial_fit``; ``docs/defaults.md``, "Stopping").

A family may give the training-loss rule a ``loss_scale``: the tolerance then grows with the
loss above it, ``tol * max(1, best_loss / loss_scale)`` (the DSG classifier's 0.1: ``tol``
absolute up to a loss of 0.1, ``10 * tol`` of the loss above).  On a problem whose loss is
mostly irreducible noise (a high best loss) the per-epoch gains that remain once the test
accuracy has levelled off are a fixed share of the loss, not a fixed amount
(``docs/defaults.md``, "Stopping").  The monitor's state is part of checkpoints and saved models,
so a resumed fit stops where an uninterrupted one does: besides the history and the counters
it holds ``epoch_start``, the running ``(loss_sum, weight_sum)`` totals of the training loss
when the current epoch began, so an epoch interrupted half way is scored on all its rows
once resumed, not only on the rows after the interruption.

Examples
--------
>>> from ooc_kernels.estimators._stopping import EpochMonitor
>>> mon = EpochMonitor(tol=0.01, n_iter_no_change=2, early_stopping=False)
>>> [mon.end_epoch(e, loss, None, 0.0) for e, loss in enumerate([1.0, 0.5, 0.499, 0.498])]
[False, False, False, True]
>>> mon.stop_reason
'the training loss improved by less than tol=0.01 for n_iter_no_change=2 epochs'

With ``loss_scale=0.1`` a best loss of 0.5 needs a gain of ``0.01 * 0.5 / 0.1 = 0.05``:

>>> mon = EpochMonitor(tol=0.01, n_iter_no_change=2, early_stopping=False, loss_scale=0.1)
>>> [mon.end_epoch(e, loss, None, 0.0) for e, loss in enumerate([1.0, 0.5, 0.46, 0.42])]
[False, False, False, True]
>>> print(mon.stop_reason)  # doctest: +NORMALIZE_WHITESPACE
the training loss improved by less than 0.046 (tol=0.01 times the best loss 0.46 over
loss_scale=0.1) for n_iter_no_change=2 epochs
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from dataclasses import dataclass, field

from sklearn.exceptions import ConvergenceWarning

__all__ = ["EpochMonitor", "TOL_LOSS_SCALE", "TOL_DOC", "LOSS_SCALED_TOL_DOC",
           "max_iter_reason"]

#: The classifier's ``loss_scale``: ``tol`` is absolute up to a training loss of 0.1 and
#: ``10 * tol`` of the loss above it (``docs/defaults.md``, "Stopping").
TOL_LOSS_SCALE = 0.1

#: The ``tol`` entry of the shared stopping parameters' numpydoc (replaced by
#: :data:`LOSS_SCALED_TOL_DOC` in the docstring of an estimator with a ``loss_scale``).
TOL_DOC = """    tol : float or None, default=1e-3
        Stop when an epoch's loss (progressive-validation loss, or minus the validation
        score with ``early_stopping``) improves by less than ``tol`` on the best so far, for
        ``n_iter_no_change`` epochs in a row.  None: always run ``max_iter`` epochs.  A fit
        with a ``tol`` that reaches ``max_iter`` emits scikit-learn's ``ConvergenceWarning``.
"""

#: The ``tol`` entry of an estimator whose loss rule has the ``loss_scale`` 0.1.
LOSS_SCALED_TOL_DOC = """    tol : float or None, default=1e-3
        Stop when an epoch's progressive-validation loss improves on the best so far by
        less than ``tol * max(1, best_loss / 0.1)`` (``tol`` up to a loss of 0.1, ``10 *
        tol`` of the loss above: on a noisy problem the gains left once the test accuracy
        has levelled off are a share of the loss), or with ``early_stopping`` when the
        validation score improves by less than ``tol``, for ``n_iter_no_change`` epochs in
        a row; ``stop_reason_`` gives the tolerance that ended the fit.  None: always run
        ``max_iter`` epochs.  A fit with a ``tol`` that reaches ``max_iter`` emits
        scikit-learn's ``ConvergenceWarning``.
"""


@dataclass
class EpochMonitor:
    """Per-epoch history and the stopping rule (see the module docstring)."""

    tol: float | None
    n_iter_no_change: int
    early_stopping: bool
    history: list[dict] = field(default_factory=list)
    best: float = math.inf
    no_improve: int = 0
    stop_reason: str | None = None
    #: Running ``(loss_sum, weight_sum)`` of the training loss when the current epoch began
    #: (None for families without a training loss).
    epoch_start: list[float] | None = None
    #: The training-loss rule's tolerance is ``tol * max(1, best / loss_scale)`` (None:
    #: ``tol``); the held-out score of ``early_stopping`` always uses ``tol``.
    loss_scale: float | None = None
    #: The rule ends a fit only once it has taken this many steps (the ``steps`` figure of
    #: the epoch's history; a family sets it from its configuration, it is not saved).
    min_steps: int = 0
    #: Until the fit has taken this many steps, an epoch whose training loss rises above
    #: the best by more than the tolerance (steps known to overshoot: the loss oscillates)
    #: is not one without improvement (a family sets it from its configuration, it is not
    #: saved; ``early_stopping``'s held-out score does not use it).
    overshoot_steps: int = 0

    def end_epoch(self, epoch: int, loss: float | None, score: float | None,
                  seconds: float, **extra) -> bool:
        """Record epoch ``epoch``; True when the fit should stop now."""
        entry = {"epoch": int(epoch), "loss": _plain(loss), "seconds": round(seconds, 6)}
        if self.early_stopping:
            entry["validation_score"] = _plain(score)
        entry.update({k: _plain(v) for k, v in extra.items()})
        self.history.append(entry)
        if self.tol is None:
            return False
        value = (-score if score is not None else math.inf) if self.early_stopping \
            else (loss if loss is not None else math.inf)
        tol, before = self.tolerance(), self.best
        steps = extra.get("steps")
        overshoot = (not self.early_stopping and steps is not None
                     and int(steps) < self.overshoot_steps and value > before + tol)
        if overshoot:
            pass             # the steps still overshoot: neither a gain nor a plateau
        elif value > before - tol:
            self.no_improve += 1
        else:
            self.no_improve = 0
        self.best = min(self.best, value)
        if self.no_improve >= self.n_iter_no_change and (
                steps is None or int(steps) >= self.min_steps):
            self.stop_reason = (f"the {self._what()} improved by less than "
                                f"{self._tol_text(tol, before)} for "
                                f"n_iter_no_change={self.n_iter_no_change} epochs")
            return True
        return False

    def _what(self) -> str:
        return "validation score" if self.early_stopping else "training loss"

    def _tol_text(self, tol: float, before: float) -> str:
        """``tol``, or the scaled tolerance ``tol`` with where it comes from."""
        return f"tol={self.tol}" if tol == self.tol else (
            f"{tol:.3g} (tol={self.tol} times the best loss {before:.4g} over "
            f"loss_scale={self.loss_scale})")

    def warn_unconverged(self, estimator) -> None:
        """scikit-learn's :class:`~sklearn.exceptions.ConvergenceWarning` when
        ``estimator``'s fit ran all its ``max_iter`` epochs without the rule ending it.

        The rule of scikit-learn's ``SGDClassifier``: a fit with ``tol`` set (not None)
        that stops at ``max_iter`` (its ``stop_reason_`` is :func:`max_iter_reason`) has
        not converged; with ``tol=None`` the fit is meant to run ``max_iter`` epochs and
        nothing is said.  The message names the estimator, ``max_iter``, the last epoch's
        change of the training loss (or of the validation score with ``early_stopping``)
        against the tolerance, and the fixes.
        """
        reason = getattr(estimator, "stop_reason_", None)
        if self.tol is None or not isinstance(reason, str) or \
                not reason.startswith(_MAX_ITER_PREFIX):
            return
        name, max_iter = type(estimator).__name__, getattr(estimator, "max_iter", None)
        warnings.warn(
            f"Maximum number of iteration reached before convergence: {name} ran "
            f"max_iter={max_iter} epochs and {self.last_change()}. Consider increasing "
            "max_iter to improve the fit, or set tol=None to run exactly max_iter epochs "
            "(no stopping rule, no warning).", ConvergenceWarning, stacklevel=_user_level())

    def last_change(self) -> str:
        """The last epoch of :attr:`history` against the stopping rule, in words."""
        key = "validation_score" if self.early_stopping else "loss"
        sign = -1.0 if self.early_stopping else 1.0   # the rule minimizes sign * value
        values = [math.inf if e.get(key) is None else sign * float(e[key])
                  for e in self.history]
        what = self._what()
        if not values:
            return f"no epoch's {what} was recorded"
        last, before = values[-1], min(values[:-1], default=math.inf)
        if not math.isfinite(before):
            return (f"the rule compares an epoch's {what} with the best before it, which "
                    f"{'the first epoch' if len(values) == 1 else 'this fit'} did not have")
        tol = self.tol if self.loss_scale is None or self.early_stopping else \
            self.tol * max(1.0, before / self.loss_scale)
        gain = before - last
        text = (f"the last epoch {'improved' if gain >= 0 else 'worsened'} the {what} by "
                f"{abs(gain):.3g} on the best before it "
                f"({sign * before:.6g} -> {sign * last:.6g}), against "
                f"{self._tol_text(tol, before)}; {self.no_improve} epoch(s) in a row "
                f"improved by less, of the n_iter_no_change={self.n_iter_no_change} that "
                "end the fit")
        steps = self.history[-1].get("steps")
        if self.min_steps and steps is not None and int(steps) < self.min_steps:
            text += (f", and the rule ends a fit only after {self.min_steps} steps "
                     f"(this one took {int(steps)})")
        return text

    def tolerance(self) -> float:
        """The gain on the best value so far that the next epoch must make to count as an
        improvement: ``tol``, or ``tol * max(1, best / loss_scale)`` on the training loss
        with a ``loss_scale``."""
        if self.loss_scale is None or self.early_stopping or not math.isfinite(self.best):
            return self.tol
        return self.tol * max(1.0, self.best / self.loss_scale)

    def to_json(self) -> dict:
        return {"history": self.history, "best": _plain(self.best),
                "no_improve": self.no_improve, "stop_reason": self.stop_reason,
                "epoch_start": self.epoch_start}

    def restore(self, saved: dict | None) -> EpochMonitor:
        """Continue from :meth:`to_json` (a checkpoint or a saved model)."""
        if saved:
            self.history = list(saved.get("history") or [])
            best = saved.get("best")
            self.best = math.inf if best is None else float(best)
            self.no_improve = int(saved.get("no_improve", 0))
            self.stop_reason = saved.get("stop_reason")
            start = saved.get("epoch_start")
            self.epoch_start = None if start is None else [float(v) for v in start]
        return self

    def begin_epoch(self, totals) -> None:
        """Record the running ``(loss_sum, weight_sum)`` totals at the start of an epoch
        (``None`` for families without a training loss)."""
        self.epoch_start = None if totals is None else [float(v) for v in totals]


_MAX_ITER_PREFIX = "max_iter="


def max_iter_reason(end_epoch: int) -> str:
    """``stop_reason_`` of a fit that ran all its epochs (up to epoch ``end_epoch``)."""
    return f"{_MAX_ITER_PREFIX}{end_epoch} epochs reached"


def _user_level() -> int:
    """The ``stacklevel`` (for a warning of the function that calls this) of the first
    frame outside the package: the warning points at the user's line."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def _plain(value):
    """JSON-safe floats (inf as None)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None
