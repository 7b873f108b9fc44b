"""The duality gap of a DSPDC fit: evaluated every ``gap_every`` epochs, the stop on
``tol``, and the adaptive steps' shrink when the gap stalls.

:class:`DualityGapReport` is a base of the DSPDC estimators
(:mod:`ooc_kernels.families.dspdc.estimators`): the engine's ``_epoch_report`` and
``_stop_holds`` hooks, and the primal value of an iterate from a pass of its own.
"""

from __future__ import annotations

import time

import dask
import numpy as np

from ooc_kernels.exceptions import DivergenceError
from ooc_kernels.families.dspdc._chunk_tasks import _delayed_weights, _sum_loss_chunk
from ooc_kernels.families.dspdc._step_rule import (check_certifiable, gap_stalled,
                                                   judged_entries, predicted_rate)
from ooc_kernels.parallel.cluster import compute

__all__ = ["DualityGapReport"]


class DualityGapReport:
    """The duality gap's evaluation, stop rule and step shrink of a DSPDC fit."""

    def _primal_value(self, state, data, sched) -> float:
        from ooc_kernels.families.dspdc._scaling import raw_x
        from ooc_kernels.families.dspdc.kernels_objective import reg_value_ref

        cfg = self._config
        if getattr(self, "_direct_rows", None) is not None:   # one product with the rows held
            with np.errstate(over="ignore", invalid="ignore"):
                return float(self._direct_rows.primal_loss(cfg, state.x) / cfg.n_samples
                             + np.sum(reg_value_ref(state.x, cfg.lam1, cfg.lam2)))
        factorized = cfg.factorized
        chunks = data.delayed_chunks()
        V = None if not factorized else self._V
        sws = chunks.get("sample_weight", [None] * data.n_chunks)
        weighting = {"weighted": cfg.weighted, "class_weight": cfg.class_weight,
                     "weight_scale": cfg.weight_scale, "classes": cfg.classes}
        x_raw = raw_x(cfg, state.x)   # the margins of the standardized rows, on raw rows
        parts = [dask.delayed(_sum_loss_chunk, pure=True)(
            rows, yk, V, x_raw, cfg.loss_id, cfg.classes, cfg.intercept_scaling,
            _delayed_weights(weighting, sw, yk), cfg.y_shift)
            for rows, yk, sw in zip(chunks["U" if factorized else "X"], chunks["y"], sws)]
        total = compute(dask.delayed(sum)(parts), scheduler=sched)[0]   # bounded waits
        with np.errstate(over="ignore", invalid="ignore"):
            return float(total / cfg.n_samples
                         + np.sum(reg_value_ref(state.x, cfg.lam1, cfg.lam2)))

    def _epoch_report(self, state, epoch, data, sched):
        """The duality gap of the epoch's start (the previous epoch's end), from the losses
        the epoch's tasks summed at that iterate: no pass of its own.  A fit stops on it
        and returns that iterate, whose gap is the certificate.  At the last epoch (or
        ``max_time``) the final iterate gets the primal pass of its own."""
        cfg = self._config
        elapsed = time.perf_counter() - self._fit_start
        timed_out = self.max_time is not None and elapsed >= self.max_time
        last = epoch + 1 >= self.max_iter
        report, rel = {}, None
        start = state.epoch_start
        primal = state.start_primal_value(cfg) if (epoch >= 1 or cfg.start_x is not None) \
            and epoch % self.gap_every == 0 else None
        if primal is not None:      # the iterate of epoch - 1, against the best duals known
            report, rel = self._record_gap(start, primal, epoch - 1, later=state)
            if self.tol is not None and rel <= self.tol:
                self._certified = start
                return report, f"tol: relative duality gap {rel:.3g} <= tol={self.tol}"
        tail = state.tail_gap(cfg, self._augmented_V()) if self.tol is not None else None
        if tail is not None and tail[2] <= self.tol:   # the tail of an epoch of two rounds
            report, rel = self._record_gap(tail[0], tail[1], epoch, later=state, judged=False)
            self._certified = tail[0]
            return report, f"tol: relative duality gap {rel:.3g} <= tol={self.tol}"
        finite = np.all(np.isfinite(state.x)) and np.isfinite(state.conj_sum)
        if timed_out or last or not finite:   # the final iterate: a pass of its own (which
            report, rel = self._record_gap(   # reports a divergence with the steps' values)
                state, self._primal_value(state, data, sched), epoch)
            if self.tol is not None and rel <= self.tol:
                return report, f"tol: relative duality gap {rel:.3g} <= tol={self.tol}"
        if timed_out:
            return report, f"max_time: {elapsed:.3g} s >= max_time={self.max_time}"
        return report, None

    def _stop_holds(self, reason: str) -> bool:
        """Whether a checkpoint written when its fit stopped is final for this fit: a stop
        at ``max_time`` never is (the limit is on one call's time: a resumed fit has its
        own), a stop on the gap for a ``tol`` that the certified gap (the last of
        ``gap_history_``) also meets; with a smaller ``tol``, or none, the fit goes on."""
        if reason.startswith("max_time"):
            return False
        if not reason.startswith("tol") or not self.gap_history_:
            return True
        return self.tol is not None and self.gap_history_[-1]["relative_gap"] <= self.tol

    def _record_gap(self, state, primal: float, epoch: int, later=None, judged=True):
        """Record the duality gap of ``state`` (the iterate after ``epoch``) in
        ``gap_history_``, and shrink the adaptive steps when the gap stalled under the steps
        running now; return ``(the figures for history_, the relative gap)``.  ``later``:
        a later state whose duals bound ``P*`` too (the larger ``D`` is used); not ``judged``:
        not an evaluation for the step rule (an epoch's tail)."""
        cfg = self._config
        with np.errstate(over="ignore", invalid="ignore"):
            dual = state.best_dual_value(cfg, self._augmented_V(), later)
        if not (np.isfinite(primal) and np.isfinite(dual)):
            raise DivergenceError(
                f"DSPDC diverged: after epoch {epoch} the primal value is {primal:.6g} and "
                f"the dual value {dual:.6g} (Lambda={cfg.Lambda:.6g}, theta, tau, sigma = "
                f"{self.theta}, {self.tau}, {self.sigma}); leave theta, tau and sigma to the "
                "theorems (None) or give Lambda a larger value."
            )
        check_certifiable(primal, state.x, epoch)   # not losses in the subnormal range
        gap = primal - dual
        rel = gap / max(abs(primal), np.finfo(float).tiny)
        entry = {"iterations": int(state.n_iter),
                 "passes": state.n_dual_updates / cfg.n_samples,
                 "seconds": time.perf_counter() - self._fit_start, "primal": primal,
                 "dual": dual, "gap": gap, "relative_gap": rel,
                 "step_boost": float(state.step_boost if state.n_rounds else cfg.step_boost),
                 "mean_lambda": bool(cfg.mean_lambda),
                 "rate": None if cfg.theta is not None else predicted_rate(
                     cfg.n_samples, cfg.n_features, cfg.m, cfg.q, cfg.mode, (later or state).local_steps)}
        self.gap_history_ = list(self.gap_history_) + [entry]
        self.duality_gap_ = gap
        if later is None or not judged:   # the final iterate's own evaluation, or a tail
            self._final_gaps = [*self._final_gaps, len(self.gap_history_) - 1]
        elif (cfg.step_boost > 1.0 or cfg.mean_lambda) and entry["step_boost"] == cfg.step_boost \
                and gap_stalled(judged_entries(self.gap_history_, self._final_gaps)):
            self._shrink_steps()   # the gap stopped falling: steps closer to the theorems'
        return {"gap_epoch": int(epoch), "primal": primal, "dual": dual,
                "relative_gap": rel}, rel

    def _shrink_steps(self) -> None:
        """Divide ``step_boost`` by 10 (at least 1) for the next rounds; once it is 1, turn
        ``mean_lambda`` off (the theorems' steps)."""
        import dataclasses

        cfg = self._config
        if cfg.step_boost > 1.0:
            self._config = dataclasses.replace(cfg, step_boost=max(1.0, cfg.step_boost / 10.0))
        else:
            self._config = dataclasses.replace(cfg, mean_lambda=False)
        if getattr(self, "_algorithm", None) is not None:
            self._algorithm.config = self._config
