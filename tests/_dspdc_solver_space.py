"""A fitted DSPDC estimator's problem in the solver's space, in NumPy: its standardized rows
with the intercept's column and its coefficients there, and the fused tasks' arrays right
after a start in memory (the tests of the fits' starts)."""

from __future__ import annotations

import numpy as np


def solver_rows(est, X):
    """The fit's standardized rows of ``X`` with the intercept's column."""
    cfg = est._config
    A = (X - np.asarray(cfg.x_shift)) / np.asarray(cfg.x_scale)
    if cfg.intercept_scaling:
        A = np.column_stack([A, np.full(len(X), cfg.intercept_scaling)])
    return A


def solver_x(est, y_mean=0.0):
    """The fit's coefficients on :func:`solver_rows` (the intercept's last); ``y_mean``: the
    targets' weighted mean, which a regressor with an intercept fits its targets less and
    its intercept holds (0 for a classifier)."""
    cfg = est._config
    coef = np.ravel(est.coef_)
    x = coef * np.asarray(cfg.x_scale)
    if cfg.intercept_scaling:
        intercept = float(np.ravel(est.intercept_)[0]) - y_mean
        x = np.append(x, (intercept + coef @ np.asarray(cfg.x_shift)) / cfg.intercept_scaling)
    return x


def record_start(monkeypatch) -> list:
    """A list that receives, at every in-memory start of a fit, the fused tasks' duals,
    conjugates, chunk products and kept ``t`` (None without) right after the start, before
    epoch 0, with the estimator's state."""
    from ooc_kernels.families.dspdc import _memory_start

    seen = []
    real = _memory_start.start_in_memory

    def spy(estimator, rows):
        real(estimator, rows)
        f = rows.fused
        seen.append((f.y.copy(), f.conj.copy(), f.products.copy(),
                     None if f.tdual is None else f.tdual.copy(), estimator._state))

    monkeypatch.setattr(_memory_start, "start_in_memory", spy)
    return seen


def round_iterations(monkeypatch) -> list:
    """A list that receives the DSPDC iterations every round of a fit ran (the deltas its
    ``apply`` takes)."""
    from ooc_kernels.families.dspdc.solver import DSPDCAlgorithm

    iterations = []
    apply = DSPDCAlgorithm.apply

    def counted(self, state, delta, info=None):
        iterations.append(delta.n_iter)
        return apply(self, state, delta, info)

    monkeypatch.setattr(DSPDCAlgorithm, "apply", counted)
    return iterations
